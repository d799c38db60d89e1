"""The check cells of a self-study notebook (:func:`check`) and the progress table (:func:`progress`).

A check runs every public and hidden case of a part (or of the whole notebook) in this kernel, prints
the feedback, and records a try in the progress file (:mod:`autograder.selfstudy.progress_file`) when
the answers are the learner's own and differ from the last try's (:func:`answers_fingerprint`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import types
from pathlib import Path

from autograder.channel import Raised
from autograder.checks import CHECKS, judge, plan
from autograder.checks._core import perform_cases
from autograder.checks._judge import raised_messages_quoted

from .practice import RERUN, answers_at_draw, current_id, current_parameters, current_variant, numbers_tries
from .progress_file import PROGRESS_FILE, entry_of, load_progress, notify_panels, record_try


def progress(stem: str | None = None, path: Path = PROGRESS_FILE) -> None:
    """Print your progress: per notebook tried, the tries and the best score of each part, in the
    notebook's order, with the notebook's autograded total (written answers are not scored here)."""
    data = load_progress(path)
    stems = [stem] if stem is not None else sorted(s for s in data if isinstance(s, str))
    tried = [name for name in stems if entry_of(data, name)["tries"]]
    if not tried:
        print("No tries recorded yet: answer a part, then run its check cell.")
        return
    for name in tried:
        entry = entry_of(data, name)
        check_ = CHECKS.get(name)
        groups = [(g.name, g.title, g.points) for g in check_.groups] if check_ is not None else [
            (key, part.get("title", key) if isinstance(part, dict) else key, _number(part, "points"))
            for key, part in entry["parts"].items()]
        best_total = sum(_number(entry["parts"].get(key), "best") for key, _, _ in groups)
        total = sum(float(points) for _, _, points in groups)
        count = entry["tries"]
        print(f"{_heading(name)}: {count} {'try' if count == 1 else 'tries'}, "
              f"best {_fmt(best_total)} / {_fmt(total)} autograded points")
        drawn = current_id(name, path)
        if drawn is not None:
            on = numbers_tries(name, path)
            print(f"  on new numbers {drawn} ({on} {'try' if on == 1 else 'tries'} on them)")
        for number, (key, title, points) in enumerate(groups, 1):
            part = entry["parts"].get(key)
            score = (f"best {_fmt(_number(part, 'best'))} / {_fmt(points)}" if isinstance(part, dict)
                     else f"not checked yet (0 / {_fmt(points)})")
            print(f"  {number}. {title}: {score}")


def _heading(stem: str) -> str:
    """``"Exercise 15 (stable log softmax)"`` for ``"15_stable_log_softmax"``."""
    number, _, slug = stem.partition("_")
    return f"Exercise {number} ({slug.replace('_', ' ')})" if number.isdigit() and slug else stem


def _number(part, key: str) -> float:
    try:
        return float(part.get(key, 0.0)) if isinstance(part, dict) else 0.0
    except (TypeError, ValueError):
        return 0.0


def _fmt(value) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return "?"


# --------------------------------------------------------------------------- checks


def _is_template_value(value) -> bool:
    """A value as the template leaves it: ``None``, or containers holding nothing but ``None``."""
    if value is None:
        return True
    if isinstance(value, dict):
        return all(_is_template_value(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_is_template_value(v) for v in value)
    return False


def _answered(call, outcomes: tuple, namespace: dict) -> bool:
    """Whether ``call`` met an answer the learner wrote (not a missing name, a stub, or a template value)."""
    if call.target not in namespace:
        return False
    if call.read_only:
        return not _is_template_value(namespace[call.target])
    return not any(isinstance(o, Raised) and o.is_a("NotImplementedError") for o in outcomes)


#: How deep nested containers and code are followed (an answer nested deeper is not a plausible one).
_FINGERPRINT_DEPTH = 20


def _fingerprint(value, digest, depth: int = 0, seen: set | None = None) -> None:
    """Feed ``digest`` with what an answer *is*: a function's code (not its cell's file name, which
    changes with every kernel) and the code of the notebook's functions it calls, an array's dtype,
    shape and bytes, containers element by element."""
    seen = set() if seen is None else seen
    if depth > _FINGERPRINT_DEPTH:
        digest.update(b"<deep>")
        return
    if isinstance(value, types.FunctionType):
        if id(value) in seen:  # recursion, or a helper already counted
            digest.update(b"<seen>")
            return
        seen.add(id(value))
        digest.update(b"function")
        for part in (value.__code__, value.__defaults__, value.__kwdefaults__):
            _fingerprint(part, digest, depth + 1, seen)
        for name in value.__code__.co_names:  # a helper the learner edited changes the answer too
            helper = value.__globals__.get(name)
            if isinstance(helper, types.FunctionType):
                _fingerprint(helper, digest, depth + 1, seen)
    elif isinstance(value, types.CodeType):
        digest.update(value.co_code + repr((value.co_names, value.co_varnames, value.co_freevars)).encode())
        for const in value.co_consts:
            _fingerprint(const, digest, depth + 1, seen)
    elif isinstance(value, dict):
        digest.update(b"dict%d" % len(value))
        for key in sorted(value, key=repr):
            _fingerprint(key, digest, depth + 1, seen)
            _fingerprint(value[key], digest, depth + 1, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        digest.update(type(value).__name__.encode() + b"%d" % len(value))
        for item in (sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value):
            _fingerprint(item, digest, depth + 1, seen)
    else:
        import numpy as np
        if isinstance(value, np.ndarray):
            digest.update(repr((value.dtype.str, value.shape)).encode())
            digest.update(np.ascontiguousarray(value).tobytes() if value.dtype != object else repr(value).encode())
        else:
            try:
                digest.update(type(value).__qualname__.encode() + repr(value).encode())
            except Exception:  # an object whose repr fails is fingerprinted by its type alone
                digest.update(type(value).__qualname__.encode())


def answers_fingerprint(stem: str, namespace: dict, groups=None) -> str:
    """A digest of every answer the notebook ``stem`` asks for (or the parts ``groups`` read), as
    ``namespace`` holds it now.

    The same answers give the same digest in any check cell, in a rerun and after a kernel restart;
    changing any answer of the notebook (of those parts) changes it.
    """
    check_ = CHECKS[stem]
    targets = sorted({call.target for case in check_.cases(groups) for call in case.calls}
                     if groups is not None else {call.target for case in plan(stem, None) for call in case.calls})
    digest = hashlib.sha256()
    for target in targets:
        digest.update(target.encode() + b"=")
        _fingerprint(namespace.get(target, "<not defined>"), digest)
    return digest.hexdigest()


def _validating() -> bool:
    """True inside nbgrader's Validate, which runs the notebook in a kernel of its own."""
    return os.environ.get("NBGRADER_EXECUTION") == "validate"


def check(stem: str, group: str | None = None, namespace: dict | None = None) -> None:
    """Run every case (public and hidden) of one part, or of the whole notebook, and print the feedback.

    Nothing is raised for a wrong answer and nothing is returned (so the cell shows no stray value):
    the printed feedback says what failed, :func:`progress` shows the scores kept. The run counts as a
    try only when at least one answer differs from the template and the notebook's answers differ from
    those of the last try. Under nbgrader's Validate nothing is recorded, and a part that loses points
    prints its feedback to stderr, so Validate reports that cell as failing.
    """
    if namespace is None:
        raise TypeError("pass globals() as namespace so the check can find your answers")
    groups = None if group is None else [group]
    # The numbers this notebook shows now (the example numbers, or new ones drawn for practice).
    variant = current_variant(stem)
    stale = _stale_numbers(stem, namespace)
    cases = plan(stem, groups, variant=variant)
    outcomes = perform_cases(cases, namespace)
    with raised_messages_quoted():  # the learner's own machine: the error's text helps, and hides nothing
        result = judge(stem, outcomes, groups, variant=variant)
        feedback = _feedback(stem, result, outcomes, variant, whole_notebook=group is None)
    answered = any(_answered(call, outcomes.get(case.name, ())[i:i + 1], namespace)
                   for case in cases for i, call in enumerate(case.calls))
    fingerprint = answers_fingerprint(stem, namespace)
    full = all(g.points_earned >= g.points_available for g in result.groups)
    unchanged_since_draw = variant is not None and fingerprint == answers_at_draw(stem)
    if not stale and not full and unchanged_since_draw:
        # The commonest slip after a draw: checking again without running the answer cells again.
        stale = ("Note: these are the answers you had when the new numbers were drawn, and they are graded "
                 "against the new numbers. " + RERUN)
    if stale:
        feedback = stale + "\n\n" + feedback
    if _validating():
        # Validate judges a cell by its errors and stderr: a part that loses points writes its feedback
        # there, so "Success" means every case passed; and Validate's own run is nobody's try.
        print(feedback, file=sys.stdout if full else sys.stderr)
        return
    print(feedback)
    if answered:
        checked = [g.name for g in result.groups]
        # Answers not run again since new numbers were drawn are the last try's: no new try.
        parts = None if unchanged_since_draw else {
            name: answers_fingerprint(stem, namespace, [name]) for name in checked}
        record_try(stem, result.groups, answers=fingerprint, parts=parts)
        notify_panels(stem)
    else:
        print("\n" + NOT_A_TRY)


#: Said when a check met only the template's answers (its stubs, its ``None``s): the kernel cannot tell
#: an answer never written from one written but not run, so the sentence names both.
NOT_A_TRY = ("(Not counted as a try: this kernel still holds the template's answers for this part, a stub "
             "that raises NotImplementedError or values left None. If you have written yours, run their "
             "cells first (Shift+Enter), then this check again.)")


def _feedback(stem: str, result, outcomes: dict, variant, *, whole_notebook: bool) -> str:
    """The printed feedback of ``result``, with the cap (the central idea missing) told where it shows:
    in full in the part whose case shows the central mistake (its [FAIL] line says what it is), and in
    one line naming that case's answer and part elsewhere, instead of the grader's full paragraph, with
    the mistake quoted, in every part whatever answer made it."""
    import dataclasses

    groups = result.groups
    if not any(g.capped for g in groups):
        return result.feedback() if whole_notebook else groups[0].feedback()
    check_ = CHECKS[stem].at(variant)
    central = check_.central
    share = "a third" if abs(central.cap - 1 / 3) < 1e-9 else f"{central.cap:.0%}"
    whole = judge(stem, outcomes, None, variant=variant)  # every part, to find where the mistake shows
    by_name = {case.name: case for case in check_.cases()}
    culprit = next((case for case in whole.cases if case.name in central.cases and not case.passed
                    and case.misconception == groups[0].capped_by), None)
    if culprit is None:  # cannot happen for a capped result; keep the grader's own words then
        return result.feedback() if whole_notebook else groups[0].feedback()
    part = check_.group(culprit.group)
    answer = ", ".join(f"`{target}`" for target in dict.fromkeys(call.target for call in by_name[culprit.name].calls))
    idea = f"the central idea ({central.idea}) is missing"
    lines = [f"{stem}: {result.points_earned:g} / {result.points_available:g} points"] if whole_notebook else []
    for group in groups:
        if group.name == culprit.group:
            text = (f"{idea}, so every part of this notebook earns at most {share} of its points: the "
                    f"[FAIL] line of \"{culprit.name}\" below says where")
        else:
            text = (f"at most {share} of the points, as in every part: the central idea of this notebook is "
                    f"missing in {answer} (the check of \"{part.title}\" says where)")
        lines.append(dataclasses.replace(group, capped=text).feedback())
    return "\n".join(lines)


def _stale_numbers(stem: str, namespace) -> str:
    """A warning when the notebook's ``numbers`` are not the numbers it shows now (a kernel that has not
    run the numbers cell since new numbers were drawn elsewhere), else ``""``."""
    from course.variants import Numbers
    numbers = namespace.get("numbers") if isinstance(namespace, dict) else None
    if not isinstance(numbers, Numbers) or numbers.stem != stem:
        return ""
    if dict(numbers) == current_parameters(stem):
        return ""
    return ("Note: `numbers` in this kernel are not this notebook's current numbers (new numbers were drawn "
            "since the numbers cell ran). These checks grade the current numbers: " + RERUN)
