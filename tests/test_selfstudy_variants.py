"""Self-study practice with new numbers (issue 25): every exercise whose numbers vary.

The self-study notebook starts on the example numbers without asking for an id; after a first try
"new numbers" draws a practice variant, kept in the progress file; the local checks and the worked
solution follow it, and a reopened notebook keeps it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder import selfstudy
from autograder.assignment import assignment_of, release_dir
from autograder.authoring import selfstudy_build as build
from autograder.checks import CHECKS, run_check
from autograder.exercises import load_key
from autograder.selfstudy import practice
from autograder.exercises import worked_values
from autograder.variants import variant_for
from course import variants

ROOT = Path(__file__).resolve().parents[1]
STEMS = sorted(variants.families())


@pytest.fixture
def progress(tmp_path, monkeypatch):
    """A fresh folder and a fresh kernel: no progress file, no numbers shown yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.setattr(practice, "_SHOWN", {})
    monkeypatch.setattr(practice, "_LAST_STEM", [])
    return tmp_path / "selfstudy-progress.json"


def _selfstudy_notebook(stem: str):
    release = release_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb"
    return build.convert(nbformat.read(release, as_version=4), stem)


def _given_cells(stem: str) -> tuple:
    """The self-study notebook's own code around the answers: (setup, numbers and data cells, open checks),
    told apart by the release's nbgrader metadata (the self-study flavour drops it)."""
    release = release_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb"
    kinds = {cell.get("id"): cell.metadata.get("nbgrader", {}) for cell in nbformat.read(release, as_version=4).cells}
    given, open_checks = [], []
    for cell in _selfstudy_notebook(stem).cells:
        meta = kinds.get(cell.get("id"), {})
        if (cell.cell_type != "code" or meta.get("solution") or meta.get("grade")
                or "widget" in cell.metadata.get("tags", []) or cell.get("id", "").startswith("selfstudy-")):
            continue
        (open_checks if cell.get("id", "").startswith("check") else given).append(cell.source)
    assert any("practice_numbers(" in source for source in given), f"{stem}: no numbers cell"
    return given, open_checks


def _numbers_cell_namespace(stem: str) -> dict:
    """The self-study notebook's given cells run (its numbers cell among them), as a learner's kernel holds them."""
    namespace = {"__name__": "__main__"}
    for source in _given_cells(stem)[0]:
        exec(compile(source, f"<{stem} given cell>", "exec"), namespace)
    return namespace


def _answers(stem: str, practice_id: str | None) -> dict:
    return dict(load_key(stem).answers(variants.parameters(stem, practice_id)))


def _check(stem: str, namespace: dict, capsys) -> str:
    selfstudy.check(stem, None, namespace)
    return capsys.readouterr().out


def _full(stem: str) -> str:
    return f"{stem}: {CHECKS[stem].points:g} / {CHECKS[stem].points:g} points"


@pytest.mark.parametrize("stem", STEMS)
def test_the_notebook_starts_on_the_example_numbers_without_an_id(stem, progress, monkeypatch):
    nb = _selfstudy_notebook(stem)
    ids = [cell.get("id") for cell in nb.cells]
    assert "student-id" not in ids and "STUDENT_ID" not in "\n".join(c.source for c in nb.cells)
    assert ids.index("selfstudy-numbers-note") + 1 == ids.index("your-numbers")
    # Neither the hub's sign-in nor the absence of any id matters here: nothing is submitted.
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    numbers = _numbers_cell_namespace(stem)["numbers"]
    assert dict(numbers) == dict(variants.families()[stem].seed)
    assert "Example numbers" in repr(numbers)


@pytest.mark.parametrize("stem", STEMS)
def test_new_numbers_change_the_numbers_the_checks_and_the_worked_solution(stem, progress, capsys):
    namespace = _numbers_cell_namespace(stem)
    numbers = namespace["numbers"]
    selfstudy.new_numbers()  # before a try: refused, nothing changes
    assert "after your first try" in capsys.readouterr().out and not progress.exists()
    example = _answers(stem, None)
    assert _full(stem) in _check(stem, {**namespace, **example}, capsys)

    seed_solution = selfstudy.load_solution(stem)["solution"]
    selfstudy.new_numbers()
    shown = capsys.readouterr().out
    drawn = practice.current_id(stem)
    assert drawn == "practice-1" and f"New numbers ({drawn})" in shown and "Run Selected Cell and All Below" in shown
    new = variants.parameters(stem, drawn)
    assert new != dict(variants.families()[stem].seed)
    assert dict(numbers) == new and drawn in repr(numbers), "the numbers cell's object follows the draw"

    # The check follows: variant 0's answers now lose points (saying their cells did not run again),
    # the new variant's earn them all.
    out = _check(stem, {**namespace, **example}, capsys)
    assert _full(stem) not in out and "FAIL" in out and "answers you had when the new numbers were drawn" in out
    assert _full(stem) in _check(stem, {**namespace, **_answers(stem, drawn)}, capsys)
    assert run_check(stem, {**namespace, **_answers(stem, drawn)}, variant=variant_for(stem, drawn)).points_earned \
        == CHECKS[stem].points
    # A kernel whose `numbers` still hold the old numbers is told so (the check grades the current ones).
    stale = variants.Numbers(stem, variants.Identity(None, "none"), variants.parameters(stem, None), [])
    assert "not this notebook's current numbers" in _check(stem, {**namespace, **example, "numbers": stale}, capsys)

    # The worked solution follows: its values are the new variant's.
    solution = selfstudy.load_solution(stem, new)["solution"]
    assert solution == selfstudy.Reveal(stem, progress).material["solution"]
    from autograder.exercises import solution_path
    from autograder.exercises import _PLACEHOLDER
    worked = _PLACEHOLDER.findall(solution_path(stem).read_text(encoding="utf-8").split("## Worked solution")[1])
    values, example_values = worked_values(stem, new), worked_values(stem, None)
    if any(values[name] != example_values[name] for name in worked):
        assert solution != seed_solution
    for name in worked:
        assert values[name] in solution, (name, values[name])


@pytest.mark.parametrize("stem", STEMS)
def test_the_worked_solution_of_new_numbers_earns_every_point_of_them(stem, progress, capsys):
    namespace = _numbers_cell_namespace(stem)
    selfstudy.record_try(stem, run_check(stem, {}).groups, path=progress)
    for _ in range(3):
        selfstudy.new_numbers()
        drawn = practice.current_id(stem)
        for block in re.findall(r"```python\n(.*?)```", selfstudy.Reveal(stem, progress).material["solution"], re.S):
            exec(compile(block, f"<{stem} worked solution for {drawn}>", "exec"), namespace)
        for source in _given_cells(stem)[1]:  # the open checks pass on it too
            exec(compile(source, f"<{stem} open check>", "exec"), namespace)
        assert _full(stem) in _check(stem, namespace, capsys), drawn
    assert practice.current_id(stem) == "practice-3"


def test_reopening_keeps_the_current_numbers(progress, monkeypatch, capsys):
    stem = STEMS[0]
    _numbers_cell_namespace(stem)
    selfstudy.record_try(stem, run_check(stem, {}).groups, path=progress)
    selfstudy.new_numbers(stem)
    selfstudy.new_numbers(stem)
    entry = json.loads(progress.read_text())[stem]
    assert (entry["numbers"], entry["numbers_drawn"], entry["numbers_tries"]) == ("practice-2", 2, 0)
    # A restarted kernel (nothing shown yet) opening the notebook again.
    monkeypatch.setattr(practice, "_SHOWN", {})
    monkeypatch.setattr(practice, "_LAST_STEM", [])
    numbers = _numbers_cell_namespace(stem)["numbers"]
    assert numbers.practice_id == "practice-2" and dict(numbers) == variants.parameters(stem, "practice-2")
    assert _full(stem) in _check(stem, {"numbers": numbers, **_answers(stem, "practice-2")}, capsys)
    assert json.loads(progress.read_text())[stem]["numbers_tries"] == 1
    # A hand-edited id that is no practice id (a classmate's, say) means the example numbers.
    data = json.loads(progress.read_text())
    data[stem]["numbers"] = "ada"
    progress.write_text(json.dumps(data))
    assert practice.current_id(stem) is None and practice.current_parameters(stem) == dict(variants.families()[stem].seed)


def test_the_panels_button_draws_new_numbers_and_gates_their_solution_again(progress, capsys):
    stem = STEMS[0]
    numbers = _numbers_cell_namespace(stem)["numbers"]
    panel = selfstudy.reveal(stem)
    state, button, status = panel._reveal_state, panel._numbers_button, panel.children[2]
    assert button in panel.children[1].children and button.disabled and "after your first try" in button.tooltip
    selfstudy.check(stem, None, {"numbers": numbers, **_answers(stem, None)})
    assert not button.disabled, "a try opens new numbers"
    panel._reveal_button.click()
    assert state.solution_shown

    button.click()
    drawn = practice.current_id(stem)
    assert drawn == "practice-1" and dict(numbers) == variants.parameters(stem, drawn)
    assert state.last_drawn.practice_id == drawn and dict(state.last_drawn.numbers) == dict(numbers)
    assert "selfstudy-drawn-numbers" in panel.children[3]._dom_classes  # shown right under the status
    # The old numbers' solution is gone; the new numbers' opens with one click only after a try on them.
    assert not state.solution_shown and not panel._reveal_button.disabled
    assert "New numbers" in status.value and state.material == selfstudy.load_solution(stem, dict(numbers))
    assert state.request_solution() == "confirm"
    state.awaiting_confirmation = False
    selfstudy.check(stem, None, {"numbers": numbers, **_answers(stem, drawn)})
    assert "tried these numbers 1 time" in status.value
    panel._reveal_button.click()
    assert state.solution_shown
    capsys.readouterr()


def test_an_exercise_that_does_not_vary_offers_no_new_numbers(progress, capsys):
    stem = next(s for s in sorted(CHECKS) if not variants.varies(s))
    panel = selfstudy.reveal(stem)
    assert panel._numbers_button is None and len(panel.children[1].children) == 2
    with pytest.raises(KeyError, match="same numbers for everyone"):
        practice.draw(stem, progress)
