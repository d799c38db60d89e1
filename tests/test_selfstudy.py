"""Self-study mode: full local checks, progress, gated reveal, and no leak into release/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder import selfstudy
from autograder.checks import CHECKS, run_check
from autograder.authoring import selfstudy_build as build
from autograder.assignment import ASSIGNMENTS, assignment_of, notebook_stems, release_dir, source_dir
from autograder.selfstudy import Reveal

ROOT = Path(__file__).resolve().parents[1]
STEMS = sorted(CHECKS)


@pytest.fixture
def progress(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".selfstudy-progress.json"


def test_every_exercise_has_hints_a_worked_solution_and_an_idea():
    assert STEMS == sorted(stem for assignment in ASSIGNMENTS for stem in notebook_stems(ROOT, assignment))
    for stem in STEMS:
        material = selfstudy.load_solution(stem)
        assert material["hints"], f"{stem}: no hints"
        assert len(material["solution"]) > 200, f"{stem}: the worked solution is too thin"
        assert material["remember"].strip(), f"{stem}: no idea to remember"


def test_reveal_asks_for_confirmation_before_a_first_attempt(progress):
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    assert state.request_solution() == "confirm"
    assert not state.solution_shown
    assert state.request_solution() == "shown"
    assert state.solution_shown


def test_reveal_opens_at_once_after_a_check_ran(progress):
    selfstudy.record_attempt("15_stable_log_softmax", 3.0, 9.0, path=progress)
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    assert state.request_solution() == "shown"
    other = Reveal("16_causal_shift", progress_path=progress)
    assert other.request_solution() == "confirm", "an attempt at one exercise must not open another"


def test_hints_come_one_at_a_time_then_stop(progress):
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    hints = [state.next_hint() for _ in range(len(state.material["hints"]))]
    assert hints == state.material["hints"]
    assert state.next_hint() is None


def test_check_runs_hidden_cases_prints_feedback_and_records_the_attempt(progress, capsys):
    def stable_log_softmax(logits, axis=-1):
        raise NotImplementedError

    earned = selfstudy.check("15_stable_log_softmax", "numerics", {"stable_log_softmax": stable_log_softmax})
    out = capsys.readouterr().out
    assert earned == 0.0
    assert "not implemented" in out
    assert selfstudy.has_attempted("15_stable_log_softmax", progress)
    assert json.loads(progress.read_text())["15_stable_log_softmax"]["attempts"] == 1


def test_check_gives_full_points_to_the_reference(progress, capsys):
    from autograder.reference import stable_log_softmax

    earned = selfstudy.check("15_stable_log_softmax", None, {"stable_log_softmax": stable_log_softmax})
    assert earned == CHECKS["15_stable_log_softmax"].points
    assert "FAIL" not in capsys.readouterr().out


def test_reveal_widget_confirms_then_shows_the_solution(progress):
    panel = selfstudy.reveal("15_stable_log_softmax")
    state = panel._reveal_state
    buttons = panel.children[0].children
    solution_button = buttons[1]
    solution_button.click()
    assert "click again" in panel.children[1].value and not state.solution_shown
    solution_button.click()
    assert state.solution_shown and solution_button.disabled


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_build_turns_hidden_tests_into_local_checks(tmp_path, assignment):
    written = build.build_all(tmp_path / "selfstudy")[assignment]
    release_folder = release_dir(ROOT, assignment)
    assert [p.name for p in written] == sorted(p.name for p in release_folder.glob("*.ipynb"))
    assert all(p.parent == tmp_path / "selfstudy" / assignment for p in written)
    for path in written:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert not any("nbgrader" in cell.metadata for cell in nb.cells), f"{path.name}: nbgrader metadata left"
        release = nbformat.read(release_folder / path.name, as_version=4)
        groups = [c.metadata["nbgrader"]["grade_id"].removeprefix("test_") for c in release.cells
                  if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
        calls = re.findall(r'check\("([^"]+)", "([^"]+)", globals\(\)\)', "\n".join(c.source for c in nb.cells))
        assert calls == [(path.stem, group) for group in groups]
        assert {g.name for g in CHECKS[path.stem].groups} == set(groups)
        assert nb.cells[-1].source.endswith(f'reveal("{path.stem}")')


def _paragraphs(text: str) -> list:
    """Substantive lines of the self-study material (long enough to be a real leak if found)."""
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    return [line for line in lines if len(line) >= 40 and not line.startswith("#")]


def test_no_self_study_material_reaches_the_release():
    released = "\n".join(re.sub(r"\s+", " ", p.read_text(encoding="utf-8"))
                         for p in (ROOT / "release").rglob("*") if p.is_file())
    released = released.replace("\\n", " ")
    from autograder.exercises import solution_path, stems
    for path in [solution_path(stem) for stem in stems()]:
        for line in _paragraphs(path.read_text(encoding="utf-8")):
            assert line not in released, f"{path.name} leaks into release/: {line[:60]!r}"


# --------------------------------------------------------------------------- the worked solutions themselves

def _given_code_cells(stem: str) -> tuple:
    """The notebook's own code a learner runs around the answers: (setup and data cells, open checks)."""
    nb = nbformat.read(source_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb", as_version=4)
    given, open_checks = [], []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("solution") or meta.get("grade"):
            continue
        if "widget" in cell.metadata.get("tags", []):
            continue
        (open_checks if cell.get("id", "").startswith("check") else given).append(cell.source)
    return given, open_checks


def _worked_code(stem: str) -> list:
    return re.findall(r"```python\n(.*?)```", selfstudy.load_solution(stem)["solution"], flags=re.S)


@pytest.mark.parametrize("stem", STEMS)
def test_the_worked_solution_passes_the_open_checks_and_earns_every_autograded_point(stem, capsys):
    given, open_checks = _given_code_cells(stem)
    blocks = _worked_code(stem)
    assert blocks, f"{stem}: the worked solution states no answer as Python code"
    namespace = {"__name__": "__main__"}
    for source in given:
        exec(compile(source, f"<{stem} given cell>", "exec"), namespace)
    for block in blocks:
        exec(compile(block, f"<{stem} worked solution>", "exec"), namespace)
    for source in open_checks:
        exec(compile(source, f"<{stem} open check>", "exec"), namespace)
    result = run_check(stem, namespace)
    assert result.points_earned == CHECKS[stem].points, result.feedback()


def test_each_exercise_offers_two_or_three_hints_and_a_short_idea():
    for stem in STEMS:
        material = selfstudy.load_solution(stem)
        assert 2 <= len(material["hints"]) <= 3, f"{stem}: {len(material['hints'])} hints"
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", material["remember"].strip()) if s]
        assert len(sentences) <= 2, f"{stem}: the idea to remember runs to {len(sentences)} sentences"
