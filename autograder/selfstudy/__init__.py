"""Self-study mode: full local checks with feedback, hints, and worked solutions revealed after a try.

In a self-study notebook each check cell calls :func:`check` (every public and hidden case of that
part, run in this kernel, with feedback and the points) and the last cell calls :func:`reveal`,
which offers hints at once and the worked solution only after the learner has tried. A *try* is one
run through the notebook on answers that differ from the template (a stub that still raises
``NotImplementedError``, variables still ``None``): the parts checked one after the other belong to one
try, and a part checked again with other answers starts the next (see :func:`record_try`). Running
the check cells, or the whole notebook again, on the same answers scores them without counting another
try; nbgrader's Validate (its own kernel) counts none. Progress is kept in
``selfstudy-progress.json`` beside the notebooks (a plain, visible file: one entry per notebook with
the number of tries and the best score of each part), so a restarted kernel remembers; :func:`progress`
prints it as a table. A learner who insists can reveal the solution before trying: the button asks for
one confirmation, and ``reveal(stem, force=True)`` skips it.

An exercise whose numbers vary (a family in :mod:`course.variants`) starts on the example numbers;
after a first try the panel's "New numbers" button, or :func:`new_numbers`, draws a fresh variant
(:mod:`autograder.selfstudy.practice`): from then on the checks grade it and the worked solution is
filled with its values, and the solution of new numbers opens with one click once they were tried.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import types
import weakref
from pathlib import Path

from autograder.channel import Raised, Returned
from autograder.checks import CHECKS, judge, plan
from autograder.checks._core import perform_cases
from autograder.checks._judge import raised_messages_quoted

#: The progress file, relative to the kernel's working directory (JupyterLab starts a notebook's kernel
#: in the notebook's folder, so it sits beside the notebooks). Visible on purpose: learners may read it.
PROGRESS_FILE = Path("selfstudy-progress.json")


# --------------------------------------------------------------------------- progress


def _load_progress(path: Path = PROGRESS_FILE) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _entry(progress: dict, stem: str) -> dict:
    entry = progress.get(stem)
    entry = entry if isinstance(entry, dict) else {}
    parts = entry.get("parts")
    entry["parts"] = parts if isinstance(parts, dict) else {}
    entry["tries"] = int(entry.get("tries", 0)) if str(entry.get("tries", 0)).isdigit() else 0
    return entry


def _new_try(entry: dict, answers: str | None, parts: dict | None) -> bool:
    """Whether a check of these answers starts a new try (see :func:`record_try`)."""
    if answers is None:
        return True
    if parts is None:  # the whole notebook's answers, compared with the last try's
        return entry.get("answers") != answers
    current = entry.get("try_parts")
    if not isinstance(current, dict) or not current:
        return True
    # A part checked again with other answers is another attempt; a part not checked yet in this try
    # joins it (a run through the notebook checks one part after the other, each answer cell changing
    # its own answers just before its check).
    return any(name in current and current[name] != fingerprint for name, fingerprint in parts.items())


def record_try(stem: str, group_results, path: Path = PROGRESS_FILE, answers: str | None = None,
               parts: dict | None = None) -> dict:
    """Record the scores of ``group_results`` for ``stem``; count a try when these answers start one.

    ``group_results`` are :class:`autograder.checks._core.GroupResult` objects; ``answers`` is the
    fingerprint of the notebook's answers (:func:`answers_fingerprint`); ``None`` always counts.
    ``parts`` (``group name -> fingerprint of that part's answers``) makes a try one run through the
    notebook: a part checked for the first time in the current try joins it, and a part checked again
    with answers other than that try's starts a new one; without ``parts`` a try is counted whenever
    ``answers`` differ from the last try's. Per part the best and the last score out of that part's
    points are kept. Returns the notebook's updated entry. A disk that refuses the write never fails
    the check (the entry is still returned).
    """
    progress = _load_progress(path)
    entry = _entry(progress, stem)
    if _new_try(entry, answers, parts):
        entry["tries"] += 1
        entry["try_parts"] = {}
        if entry.get("numbers") is not None:  # a try on drawn numbers (see autograder.selfstudy.practice)
            count = entry.get("numbers_tries", 0)
            entry["numbers_tries"] = (count if isinstance(count, int) and count >= 0 else 0) + 1
    if parts is not None:
        current = entry.get("try_parts")
        entry["try_parts"] = {**(current if isinstance(current, dict) else {}), **parts}
    if answers is not None:
        entry["answers"] = answers
    for group in group_results:
        part = entry["parts"].get(group.name)
        part = part if isinstance(part, dict) else {}
        try:
            best = float(part.get("best", 0.0))
        except (TypeError, ValueError):
            best = 0.0
        entry["parts"][group.name] = {
            "title": group.title,
            "best": max(best, float(group.points_earned)),
            "last": float(group.points_earned),
            "points": float(group.points_available),
        }
    progress[stem] = entry
    try:
        Path(path).write_text(json.dumps(progress, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError:
        pass
    return entry


def tries(stem: str, path: Path = PROGRESS_FILE) -> int:
    """How many tries of ``stem`` were recorded here."""
    return _entry(_load_progress(path), stem)["tries"]


def has_attempted(stem: str, path: Path = PROGRESS_FILE) -> bool:
    """True once a check of ``stem`` has run here on an answer that differs from the template."""
    return tries(stem, path) > 0


def progress(stem: str | None = None, path: Path = PROGRESS_FILE) -> None:
    """Print your progress: per notebook tried, the tries and the best score of each part, in the
    notebook's order, with the notebook's autograded total (written answers are not scored here)."""
    data = _load_progress(path)
    stems = [stem] if stem is not None else sorted(s for s in data if isinstance(s, str))
    tried = [name for name in stems if _entry(data, name)["tries"]]
    if not tried:
        print("No tries recorded yet: answer a part, then run its check cell.")
        return
    for name in tried:
        entry = _entry(data, name)
        check_ = CHECKS.get(name)
        groups = [(g.name, g.title, g.points) for g in check_.groups] if check_ is not None else [
            (key, part.get("title", key) if isinstance(part, dict) else key, _number(part, "points"))
            for key, part in entry["parts"].items()]
        best_total = sum(_number(entry["parts"].get(key), "best") for key, _, _ in groups)
        total = sum(float(points) for _, _, points in groups)
        count = entry["tries"]
        print(f"{_heading(name)}: {count} {'try' if count == 1 else 'tries'}, "
              f"best {_fmt(best_total)} / {_fmt(total)} autograded points")
        drawn = practice.current_id(name, path)
        if drawn is not None:
            on = practice.numbers_tries(name, path)
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
    variant = practice.current_variant(stem)
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
    unchanged_since_draw = variant is not None and fingerprint == practice.answers_at_draw(stem)
    if not stale and not full and unchanged_since_draw:
        # The commonest slip after a draw: checking again without running the answer cells again.
        stale = ("Note: these are the answers you had when the new numbers were drawn, and they are graded "
                 "against the new numbers. " + practice.RERUN)
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
        _notify(stem)
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
    if dict(numbers) == practice.current_parameters(stem):
        return ""
    return ("Note: `numbers` in this kernel are not this notebook's current numbers (new numbers were drawn "
            "since the numbers cell ran). These checks grade the current numbers: " + practice.RERUN)


# --------------------------------------------------------------------------- worked solutions


def load_solution(stem: str, parameters=None) -> dict:
    """The hints, worked solution and key idea of ``stem``, parsed from ``autograder/exercises/<stem>/solution.md``.

    The file has three level-2 sections: ``## Hints`` (one ``### Hint`` subsection each),
    ``## Worked solution`` and ``## Remember``. Its ``{{ name }}`` placeholders are filled with the
    worked values of ``parameters`` (:func:`autograder.exercises.fill`; variant 0's when None).
    """
    if stem not in CHECKS:
        raise KeyError(f"unknown exercise {stem!r}")
    from autograder.exercises import solution_path
    from autograder.exercises import fill
    text = fill(solution_path(stem).read_text(encoding="utf-8"), stem, parameters or None)
    sections = {}
    for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M):
        sections[match.group(1).strip().lower()] = match.group(2).strip()
    missing = {"hints", "worked solution", "remember"} - set(sections)
    if missing:
        raise ValueError(f"exercises/{stem}/solution.md lacks section(s) {sorted(missing)}")
    hints = [h.strip() for h in re.split(r"^### .*\n", sections["hints"], flags=re.M) if h.strip()]
    return {"hints": hints, "solution": sections["worked solution"], "remember": sections["remember"]}


#: Live reveal states by notebook stem, so that a check can refresh panels already on screen.
_LIVE: dict = {}


def _notify(stem: str) -> None:
    for state in list(_LIVE.get(stem, ())):
        for listener in list(state.listeners):
            try:
                listener()
            except Exception:  # a broken panel must never break a check
                pass


class Reveal:
    """The reveal panel's state machine, separate from its view so it can be tested headless.

    States: hints are shown one by one on demand; the solution opens directly once the exercise has
    been tried (on the numbers it shows now), otherwise the first request asks for confirmation and the
    second one opens it. ``listeners`` are called whenever a check of this notebook records a try,
    ``numbers_listeners`` when new numbers were drawn (:func:`new_numbers`).
    """

    def __init__(self, stem: str, progress_path: Path = PROGRESS_FILE):
        self.stem = stem
        self.progress_path = progress_path
        self.practice_id = practice.current_id(stem, progress_path)
        self.material = load_solution(stem, practice.current_parameters(stem, progress_path))
        self.hints_shown = 0
        self.awaiting_confirmation = False
        self.solution_shown = False
        self.listeners: list = []
        self.numbers_listeners: list = []
        self.last_drawn = None  # the panel's last draw of new numbers (a practice.Drawn)
        _LIVE.setdefault(stem, weakref.WeakSet()).add(self)

    @property
    def tries(self) -> int:
        return tries(self.stem, self.progress_path)

    @property
    def numbers_tries(self) -> int:
        """Tries on the numbers shown now (every try while they are the example numbers)."""
        return practice.numbers_tries(self.stem, self.progress_path)

    @property
    def varies(self) -> bool:
        """Whether this notebook offers new numbers."""
        from course.variants import varies
        return varies(self.stem)

    def numbers_changed(self) -> None:
        """New numbers were drawn: their hints and solution replace the old, and the solution is gated
        again on a try (of the new numbers)."""
        self.practice_id = practice.current_id(self.stem, self.progress_path)
        self.material = load_solution(self.stem, practice.current_parameters(self.stem, self.progress_path))
        self.solution_shown = False
        self.awaiting_confirmation = False

    def next_hint(self) -> str | None:
        if self.hints_shown >= len(self.material["hints"]):
            return None
        self.hints_shown += 1
        return self.material["hints"][self.hints_shown - 1]

    def request_solution(self) -> str:
        """``"shown"``, or ``"confirm"`` when the learner has not tried yet and must confirm once."""
        if self.solution_shown:
            return "shown"
        if self.numbers_tries > 0 or self.awaiting_confirmation:
            self.solution_shown = True
            self.awaiting_confirmation = False
            return "shown"
        self.awaiting_confirmation = True
        return "confirm"

    def status(self) -> str:
        """One sentence on where the learner stands (plain text, shown above the panel's output)."""
        if self.solution_shown:
            return "The worked solution is shown below."
        if self.practice_id is not None:  # new numbers: the gate is a try on them
            count = self.numbers_tries
            if count:
                return (f"You have tried these numbers {count} {'time' if count == 1 else 'times'}: "
                        "their worked solution opens with one click.")
            if self.awaiting_confirmation:
                return ("You have not tried these new numbers yet. Trying first is how the ideas stick; "
                        "click again to reveal anyway.")
            return ("New numbers: run the notebook again from the numbers cell and check your answers; "
                    "then their worked solution opens with one click.")
        count = self.tries
        if count:
            return (f"You have tried this notebook {count} {'time' if count == 1 else 'times'}: "
                    "the worked solution opens with one click.")
        if self.awaiting_confirmation:
            return ("You have not tried this notebook's checks on an answer yet. Trying first is how the "
                    "ideas stick; click again to reveal anyway.")
        return "Hints are open now; the worked solution opens with one click after your first try."

    def solution_markdown(self) -> str:
        return self.material["solution"] + "\n\n**Remember.** " + self.material["remember"]


def reveal(stem: str, *, force: bool = False):
    """Show the hints and worked-solution panel of ``stem`` (one click once you have tried).

    With ``force=True`` the panel opens with the worked solution already shown (no confirmation).
    """
    from IPython.display import Markdown, display

    state = Reveal(stem)
    panel = _reveal_view(state, Markdown, display)
    if force:
        state.awaiting_confirmation = True
        panel._reveal_button.click()
    return panel


# Colours chosen for at least 4.5:1 contrast (WCAG 2.1 AA) on the button and against the page:
# white on #0b5394 is 7.9:1, #1a1a1a on #e8e8e8 is 14:1 (Pygments' default style, used for the code,
# keeps 4.5:1 on white since Pygments 2.11).
#
# Code in the worked solution keeps every line in view: a line longer than the panel wraps at a space
# (a word is broken only when nothing else fits), and its continuation is indented six columns past
# the line's own indentation, so it reads as the rest of that line (each source line is a block with a
# hanging indent of its own: :func:`_code_html`). It used to scroll sideways instead, and a long block's
# scrollbar sat below the screen: the lines looked cut at the right edge. The text is the code as it
# is, spaces included, so copying it gives the code.
_PANEL_CSS = """<style>
.selfstudy-panel .selfstudy-code { white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal;
  font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);
  line-height: var(--jp-code-line-height, 1.3077); max-width: 100%; box-sizing: border-box;
  margin: 0.6em 0 1em 0; padding: 4px 0 4px 1em; border-left: 3px solid #e8e8e8; }
.selfstudy-panel .selfstudy-code .selfstudy-line { display: block; min-height: 1.3em; }
.selfstudy-panel .selfstudy-solution { border-top: 2px solid #595959; margin-top: 0.75em; padding-top: 0.5em; }
.selfstudy-panel .selfstudy-status { color: #1a1a1a; }
CODE_COLOURS
</style>"""


def _code_style() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".selfstudy-code")


def _code_html(code: str) -> str:
    """A worked solution's code block as HTML: Pygments' colours, one block per source line with a hanging
    indent of its own (wrapped continuations start six columns past the line's indentation: four would
    align them with the body of a line ending in a colon)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    raw = code.rstrip("\n").split("\n")
    # nowrap: one output line per source line, each with its spans closed (a string over two lines too).
    coloured = highlight(code, PythonLexer(), HtmlFormatter(nowrap=True)).rstrip("\n").split("\n")
    lines = []
    for source, html_line in zip(raw, coloured):
        hang = len(source) - len(source.lstrip(" ")) + 6
        lines.append(f'<span class="selfstudy-line" style="padding-left: {hang}ch; text-indent: -{hang}ch">'
                     f"{html_line}</span>")
    return '<pre class="selfstudy-code">' + "".join(lines) + "</pre>"


def _solution_parts(markdown: str) -> list:
    """``[(kind, text), ...]``: the worked solution's prose (``"markdown"``) and its Python code blocks
    (``"code"``), in order."""
    parts, position = [], 0
    for match in re.finditer(r"^```python\n(.*?)^```[ \t]*$", markdown, flags=re.S | re.M):
        if markdown[position:match.start()].strip():
            parts.append(("markdown", markdown[position:match.start()]))
        parts.append(("code", match.group(1)))
        position = match.end()
    if markdown[position:].strip():
        parts.append(("markdown", markdown[position:]))
    return parts

_PRIMARY = {"button_color": "#0b5394", "text_color": "#ffffff"}
_SECONDARY = {"button_color": "#e8e8e8", "text_color": "#1a1a1a"}


def _status_html(text: str) -> str:
    import html

    return f'<div role="status" aria-live="polite">{html.escape(text)}</div>'


def _reveal_view(state: Reveal, Markdown, display):
    import ipywidgets as widgets
    from IPython.display import HTML

    hint_button = widgets.Button(description="Show a hint", icon="lightbulb-o", tooltip="Show the next hint",
                                 layout=widgets.Layout(width="auto"), style=_SECONDARY)
    solution_button = widgets.Button(description="Reveal the worked solution", icon="eye",
                                     tooltip="Reveal the worked solution", layout=widgets.Layout(width="auto"),
                                     style=_PRIMARY)
    status = widgets.HTML(_status_html(state.status()))
    hints_output = widgets.Output()
    solution_output = widgets.Output()
    # New numbers (exercises whose numbers vary): open after a first try, like the one-click solution.
    numbers_button = widgets.Button(description="New numbers", icon="refresh", layout=widgets.Layout(width="auto"),
                                    style=_SECONDARY)
    numbers_output = widgets.Output()
    numbers_button.add_class("selfstudy-new-numbers")
    numbers_output.add_class("selfstudy-output")
    numbers_output.add_class("selfstudy-drawn-numbers")

    def numbers_gate():
        numbers_button.disabled = not state.tries
        numbers_button.tooltip = ("Draw fresh numbers for this exercise and practise on them" if state.tries
                                  else "New numbers open after your first try")

    numbers_gate()
    hint_button.add_class("selfstudy-hint")
    solution_button.add_class("selfstudy-reveal")
    status.add_class("selfstudy-status")
    hints_output.add_class("selfstudy-output")
    hints_output.add_class("selfstudy-hints")
    solution_output.add_class("selfstudy-output")
    solution_output.add_class("selfstudy-solution")
    solution_output.layout.display = "none"
    if not state.material["hints"]:
        hint_button.disabled = True

    def refresh():
        numbers_gate()
        status.value = _status_html(state.status())
        if not state.solution_shown and not state.awaiting_confirmation:
            solution_button.description = "Reveal the worked solution"
            solution_button.tooltip = "Reveal the worked solution"
            solution_button.style.button_color = _PRIMARY["button_color"]
            solution_button.style.text_color = _PRIMARY["text_color"]
        elif state.awaiting_confirmation and state.numbers_tries:
            # A try arrived while the panel asked for confirmation: no confirmation is needed any more.
            state.awaiting_confirmation = False
            refresh()

    def on_hint(_):
        hint = state.next_hint()
        if hint is None:
            return
        with hints_output:
            if state.hints_shown == 1:
                display(Markdown("### Hints"))
            display(Markdown(f"**Hint {state.hints_shown}.** {hint}"))
        if state.hints_shown >= len(state.material["hints"]):
            hint_button.disabled = True
            hint_button.description = "No more hints"

    def on_solution(_):
        if solution_button.disabled:
            return
        outcome = state.request_solution()
        status.value = _status_html(state.status())
        if outcome == "confirm":
            solution_button.description = "Reveal anyway"
            solution_button.tooltip = "Reveal the worked solution without trying first"
            return
        solution_button.disabled = True
        solution_button.description = "Worked solution shown"
        solution_output.layout.display = None
        with solution_output:
            display(Markdown("### Worked solution"))
            for kind, text in _solution_parts(state.solution_markdown()):
                display(HTML(_code_html(text)) if kind == "code" else Markdown(text))

    def on_new_numbers(_):
        if numbers_button.disabled:
            return
        numbers_output.clear_output()
        try:
            drawn = practice.draw(state.stem, state.progress_path)
        except (practice.NotYet, OSError) as refusal:
            with numbers_output:
                print(refusal)
            return
        state.last_drawn = drawn  # what the panel shows (tests read it: an Output records nothing outside a kernel)
        with numbers_output:
            display(HTML(practice.drawn_html(drawn)))

    def numbers_changed():
        # The old numbers' hints and solution are no longer this notebook's: show the new ones' instead.
        state.numbers_changed()
        shown = state.hints_shown
        state.hints_shown = 0
        hints_output.clear_output()
        for _ in range(shown):
            on_hint(None)
        solution_output.clear_output()
        solution_output.layout.display = "none"
        solution_button.disabled = False
        refresh()

    state.listeners.append(refresh)
    state.numbers_listeners.append(numbers_changed)
    hint_button.on_click(on_hint)
    solution_button.on_click(on_solution)
    numbers_button.on_click(on_new_numbers)
    buttons = [hint_button, solution_button] + ([numbers_button] if state.varies else [])
    drawn = [numbers_output] if state.varies else []  # right under the status: what a click drew
    panel = widgets.VBox([widgets.HTML(_PANEL_CSS.replace("CODE_COLOURS", _code_style())), widgets.HBox(buttons), status] + drawn
                         + [hints_output, solution_output])
    panel.add_class("selfstudy-panel")
    panel._reveal_state = state  # for tests and curious learners
    panel._reveal_button = solution_button
    panel._numbers_button = numbers_button if state.varies else None
    return panel


# Imported last: it builds on the progress file's helpers above.
from autograder.selfstudy import practice  # noqa: E402
from autograder.selfstudy.practice import new_numbers, practice_numbers  # noqa: E402

__all__ = ["Reveal", "answers_fingerprint", "check", "has_attempted", "load_solution", "new_numbers", "practice",
           "practice_numbers", "progress", "record_try", "reveal", "tries"]
