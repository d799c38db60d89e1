"""Self-study mode: full local checks with feedback, hints, and worked solutions revealed after a try.

In a self-study notebook each check cell calls :func:`check` (every public and hidden case of that
part, run in this kernel, with feedback and the points) and the last cell calls :func:`reveal`,
which offers hints at once and the worked solution only after the learner has tried. A *try* is one
attempt at the notebook: the first check run on answers that differ both from the template (a stub
that still raises ``NotImplementedError``, variables still ``None``) and from the answers of the try
before. Running the other check cells, or the whole notebook again, on the same answers scores them
without counting another try; nbgrader's Validate (its own kernel) counts none. Progress is kept in
``selfstudy-progress.json`` beside the notebooks (a plain, visible file: one entry per notebook with
the number of tries and the best score of each part), so a restarted kernel remembers; :func:`progress`
prints it as a table. A learner who insists can reveal the solution before trying: the button asks for
one confirmation, and ``reveal(stem, force=True)`` skips it.
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


def record_try(stem: str, group_results, path: Path = PROGRESS_FILE, answers: str | None = None) -> dict:
    """Record the scores of ``group_results`` for ``stem``; count a try unless ``answers`` were seen last time.

    ``group_results`` are :class:`autograder.checks._core.GroupResult` objects; ``answers`` is the
    fingerprint of the notebook's answers (:func:`answers_fingerprint`); ``None`` always counts.
    Per part the best and the last score out of that part's points are kept. Returns the notebook's
    updated entry. A disk that refuses the write never fails the check (the entry is still returned).
    """
    progress = _load_progress(path)
    entry = _entry(progress, stem)
    if answers is None or entry.get("answers") != answers:
        entry["tries"] += 1
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


def answers_fingerprint(stem: str, namespace: dict) -> str:
    """A digest of every answer the notebook ``stem`` asks for, as ``namespace`` holds it now.

    The same answers give the same digest in any check cell, in a rerun and after a kernel restart;
    changing any answer of the notebook changes it.
    """
    targets = sorted({call.target for case in plan(stem, None) for call in case.calls})
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
    cases = plan(stem, groups)
    outcomes = perform_cases(cases, namespace)
    with raised_messages_quoted():  # the learner's own machine: the error's text helps, and hides nothing
        result = judge(stem, outcomes, groups)
    answered = any(_answered(call, outcomes.get(case.name, ())[i:i + 1], namespace)
                   for case in cases for i, call in enumerate(case.calls))
    feedback = result.groups[0].feedback() if group is not None else result.feedback()
    if _validating():
        # Validate judges a cell by its errors and stderr: a part that loses points writes its feedback
        # there, so "Success" means every case passed; and Validate's own run is nobody's try.
        full = all(g.points_earned >= g.points_available for g in result.groups)
        print(feedback, file=sys.stdout if full else sys.stderr)
        return
    print(feedback)
    if answered:
        record_try(stem, result.groups, answers=answers_fingerprint(stem, namespace))
        _notify(stem)
    else:
        print("\n(Not counted as a try: the answers are still the template's. Fill them in, then run this cell again.)")


# --------------------------------------------------------------------------- worked solutions


def load_solution(stem: str, parameters=None) -> dict:
    """The hints, worked solution and key idea of ``stem``, parsed from ``autograder/exercises/<stem>/solution.md``.

    The file has three level-2 sections: ``## Hints`` (one ``### Hint`` subsection each),
    ``## Worked solution`` and ``## Remember``. Where the exercise's numbers vary, its ``{{ name }}``
    values are those of ``parameters`` (variant 0's, the example numbers, when None).
    """
    if stem not in CHECKS:
        raise KeyError(f"unknown exercise {stem!r}")
    from autograder.exercises import solution_path
    from autograder.variants import fill
    text = fill(solution_path(stem).read_text(encoding="utf-8"), stem, parameters)
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
    been tried, otherwise the first request asks for confirmation and the second one opens it.
    ``listeners`` are called whenever a check of this notebook records a try.
    """

    def __init__(self, stem: str, progress_path: Path = PROGRESS_FILE):
        self.stem = stem
        self.material = load_solution(stem)
        self.progress_path = progress_path
        self.hints_shown = 0
        self.awaiting_confirmation = False
        self.solution_shown = False
        self.listeners: list = []
        _LIVE.setdefault(stem, weakref.WeakSet()).add(self)

    @property
    def tries(self) -> int:
        return tries(self.stem, self.progress_path)

    def next_hint(self) -> str | None:
        if self.hints_shown >= len(self.material["hints"]):
            return None
        self.hints_shown += 1
        return self.material["hints"][self.hints_shown - 1]

    def request_solution(self) -> str:
        """``"shown"``, or ``"confirm"`` when the learner has not tried yet and must confirm once."""
        if self.solution_shown:
            return "shown"
        if self.tries > 0 or self.awaiting_confirmation:
            self.solution_shown = True
            self.awaiting_confirmation = False
            return "shown"
        self.awaiting_confirmation = True
        return "confirm"

    def status(self) -> str:
        """One sentence on where the learner stands (plain text, shown above the panel's output)."""
        if self.solution_shown:
            return "The worked solution is shown below."
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
# white on #0b5394 is 7.9:1, #1a1a1a on #e8e8e8 is 14:1. Code in the worked solution scrolls sideways
# instead of wrapping mid-word (JupyterLab's output areas break ``pre`` text anywhere), inside the
# panel, with a scrollbar drawn even where the system's scrollbars are overlays that show only while
# scrolling (macOS): a #595959 thumb on a #e8e8e8 track (5.9:1).
_PANEL_CSS = """<style>
.selfstudy-panel .selfstudy-output pre { overflow-x: auto; max-width: 100%; box-sizing: border-box; }
.selfstudy-panel .selfstudy-output pre::-webkit-scrollbar { height: 10px; }
.selfstudy-panel .selfstudy-output pre::-webkit-scrollbar-track { background: #e8e8e8; }
.selfstudy-panel .selfstudy-output pre::-webkit-scrollbar-thumb { background: #595959; border-radius: 5px; }
@supports not selector(::-webkit-scrollbar) {
  .selfstudy-panel .selfstudy-output pre { scrollbar-color: #595959 #e8e8e8; } }
.selfstudy-panel .selfstudy-output pre, .selfstudy-panel .selfstudy-output pre * {
  white-space: pre !important; word-break: normal !important; overflow-wrap: normal !important; }
.selfstudy-panel .selfstudy-solution { border-top: 2px solid #595959; margin-top: 0.75em; padding-top: 0.5em; }
.selfstudy-panel .selfstudy-status { color: #1a1a1a; }
</style>"""

_PRIMARY = {"button_color": "#0b5394", "text_color": "#ffffff"}
_SECONDARY = {"button_color": "#e8e8e8", "text_color": "#1a1a1a"}


def _status_html(text: str) -> str:
    import html

    return f'<div role="status" aria-live="polite">{html.escape(text)}</div>'


def _reveal_view(state: Reveal, Markdown, display):
    import ipywidgets as widgets

    hint_button = widgets.Button(description="Show a hint", icon="lightbulb-o", tooltip="Show the next hint",
                                 layout=widgets.Layout(width="auto"), style=_SECONDARY)
    solution_button = widgets.Button(description="Reveal the worked solution", icon="eye",
                                     tooltip="Reveal the worked solution", layout=widgets.Layout(width="auto"),
                                     style=_PRIMARY)
    status = widgets.HTML(_status_html(state.status()))
    hints_output = widgets.Output()
    solution_output = widgets.Output()
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
        status.value = _status_html(state.status())
        if not state.solution_shown and not state.awaiting_confirmation:
            solution_button.description = "Reveal the worked solution"
            solution_button.tooltip = "Reveal the worked solution"
            solution_button.style.button_color = _PRIMARY["button_color"]
            solution_button.style.text_color = _PRIMARY["text_color"]
        elif state.awaiting_confirmation and state.tries:
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
            display(Markdown("### Worked solution\n\n" + state.solution_markdown()))

    state.listeners.append(refresh)
    hint_button.on_click(on_hint)
    solution_button.on_click(on_solution)
    panel = widgets.VBox([widgets.HTML(_PANEL_CSS), widgets.HBox([hint_button, solution_button]), status,
                          hints_output, solution_output])
    panel.add_class("selfstudy-panel")
    panel._reveal_state = state  # for tests and curious learners
    panel._reveal_button = solution_button
    return panel


__all__ = ["Reveal", "answers_fingerprint", "check", "has_attempted", "load_solution", "progress", "record_try", "reveal", "tries"]
