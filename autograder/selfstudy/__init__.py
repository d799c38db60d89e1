"""Self-study mode: full local checks with feedback, hints, and worked solutions revealed after a try.

In a self-study notebook each check cell calls :func:`check` (every public and hidden case of that
group, run in this kernel, with the misconception feedback and the points) and the last cell calls
:func:`reveal`, which offers hints at once and the worked solution only after the learner has run
at least one check of the notebook (recorded in ``.selfstudy-progress.json`` beside the notebook,
so a restarted kernel remembers). A learner who insists can reveal it anyway: the button asks for
one confirmation, and ``reveal(stem, force=True)`` skips it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from autograder.checks import CHECKS, run_check

PROGRESS_FILE = Path(".selfstudy-progress.json")


# --------------------------------------------------------------------------- progress


def _load_progress(path: Path = PROGRESS_FILE) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def record_attempt(stem: str, earned: float, available: float, path: Path = PROGRESS_FILE) -> None:
    """Remember that ``stem`` was checked (best score kept); never fails the check if the disk does."""
    progress = _load_progress(path)
    entry = progress.get(stem, {}) if isinstance(progress.get(stem), dict) else {}
    entry["attempts"] = int(entry.get("attempts", 0)) + 1
    entry["best"] = max(float(entry.get("best", 0.0)), float(earned))
    entry["available"] = float(available)
    progress[stem] = entry
    try:
        path.write_text(json.dumps(progress, indent=1, sort_keys=True), encoding="utf-8")
    except OSError:
        pass


def has_attempted(stem: str, path: Path = PROGRESS_FILE) -> bool:
    """True once any check of ``stem`` has run here."""
    entry = _load_progress(path).get(stem)
    return isinstance(entry, dict) and int(entry.get("attempts", 0)) > 0


# --------------------------------------------------------------------------- checks


def check(stem: str, group: str | None = None, namespace: dict | None = None) -> float:
    """Run every case (public and hidden) of one group, or of the whole notebook, and print the feedback.

    Returns the points earned. Nothing is raised for a wrong answer: the feedback says what failed.
    """
    if namespace is None:
        raise TypeError("pass globals() as namespace so the check can find your answers")
    result = run_check(stem, namespace, None if group is None else [group])
    record_attempt(stem, result.points_earned, result.points_available)
    text = result.groups[0].feedback() if group is not None else result.feedback()
    print(text)
    if result.misconceptions:
        print("\nWhat the failures suggest: " + "; ".join(result.misconceptions))
    return result.points_earned


# --------------------------------------------------------------------------- worked solutions


def load_solution(stem: str) -> dict:
    """The hints, worked solution and key idea of ``stem``, parsed from ``autograder/exercises/<stem>/solution.md``.

    The file has three level-2 sections: ``## Hints`` (one ``### Hint`` subsection each),
    ``## Worked solution`` and ``## Remember``.
    """
    if stem not in CHECKS:
        raise KeyError(f"unknown exercise {stem!r}")
    from autograder.exercises import solution_path
    text = solution_path(stem).read_text(encoding="utf-8")
    sections = {}
    for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M):
        sections[match.group(1).strip().lower()] = match.group(2).strip()
    missing = {"hints", "worked solution", "remember"} - set(sections)
    if missing:
        raise ValueError(f"exercises/{stem}/solution.md lacks section(s) {sorted(missing)}")
    hints = [h.strip() for h in re.split(r"^### .*\n", sections["hints"], flags=re.M) if h.strip()]
    return {"hints": hints, "solution": sections["worked solution"], "remember": sections["remember"]}


class Reveal:
    """The reveal panel's state machine, separate from its view so it can be tested headless.

    States: hints are shown one by one on demand; the solution opens directly once the exercise has
    been attempted, otherwise the first request asks for confirmation and the second one opens it.
    """

    def __init__(self, stem: str, progress_path: Path = PROGRESS_FILE):
        self.stem = stem
        self.material = load_solution(stem)
        self.progress_path = progress_path
        self.hints_shown = 0
        self.awaiting_confirmation = False
        self.solution_shown = False

    def next_hint(self) -> str | None:
        if self.hints_shown >= len(self.material["hints"]):
            return None
        self.hints_shown += 1
        return self.material["hints"][self.hints_shown - 1]

    def request_solution(self) -> str:
        """``"shown"``, or ``"confirm"`` when the learner has not tried yet and must confirm once."""
        if self.solution_shown:
            return "shown"
        if has_attempted(self.stem, self.progress_path) or self.awaiting_confirmation:
            self.solution_shown = True
            self.awaiting_confirmation = False
            return "shown"
        self.awaiting_confirmation = True
        return "confirm"

    def solution_markdown(self) -> str:
        return self.material["solution"] + "\n\n**Remember.** " + self.material["remember"]


def reveal(stem: str, *, force: bool = False):
    """Show the hints and worked-solution panel of ``stem`` (one click once you have run a check).

    With ``force=True`` the worked solution is shown at once, without the panel.
    """
    from IPython.display import Markdown, display

    state = Reveal(stem)
    if force:
        state.awaiting_confirmation = True
        state.request_solution()
        display(Markdown(state.solution_markdown()))
        return None
    return _reveal_view(state, Markdown, display)


def _reveal_view(state: Reveal, Markdown, display):
    import ipywidgets as widgets

    auto = widgets.Layout(width="auto")
    hint_button = widgets.Button(description="Show a hint", icon="lightbulb-o", layout=auto)
    solution_button = widgets.Button(description="Reveal the worked solution", button_style="info", icon="eye",
                                     layout=widgets.Layout(width="auto"))
    status = widgets.HTML("")
    output = widgets.Output()
    hint_button.add_class("selfstudy-hint")
    solution_button.add_class("selfstudy-reveal")
    status.add_class("selfstudy-status")
    output.add_class("selfstudy-output")
    if not state.material["hints"]:
        hint_button.disabled = True

    def on_hint(_):
        hint = state.next_hint()
        if hint is None:
            return
        with output:
            display(Markdown(f"**Hint {state.hints_shown}.** {hint}"))
        if state.hints_shown >= len(state.material["hints"]):
            hint_button.disabled = True
            hint_button.description = "No more hints"

    def on_solution(_):
        outcome = state.request_solution()
        if outcome == "confirm":
            status.value = ("You have not run this notebook's checks yet. Trying first is how the ideas "
                            "stick; click again to reveal anyway.")
            solution_button.description = "Reveal anyway"
            solution_button.button_style = "warning"
            return
        if solution_button.disabled:
            return
        status.value = ""
        solution_button.disabled = True
        solution_button.button_style = ""
        solution_button.description = "Worked solution shown"
        with output:
            display(Markdown(state.solution_markdown()))

    hint_button.on_click(on_hint)
    solution_button.on_click(on_solution)
    panel = widgets.VBox([widgets.HBox([hint_button, solution_button]), status, output])
    panel.add_class("selfstudy-panel")
    panel._reveal_state = state  # for tests and curious learners
    return panel


__all__ = ["Reveal", "check", "has_attempted", "load_solution", "record_attempt", "reveal"]
