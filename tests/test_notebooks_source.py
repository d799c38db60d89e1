"""The nbgrader source notebooks: valid, clean, one exercise each, points that add up, tests wired to the checks.

The structural tests read the JSON only; the slow test runs each notebook top to bottom under nbgrader's
Validator (with the course config, so every code cell must run cleanly, not just the test cells).
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID, varies

from autograder.assignment import ASSIGNMENTS, TOTAL_POINTS
from autograder.checks import CHECKS
from tests.nbrun_support import (
    ASSIGNMENT_STEMS, CODING, CONCEPT, FURTHER_STEMS, HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END, STEMS,
    all_present_stems, in_pool, is_answer_cell, is_test_cell, nbgrader_meta, present_stems, read, regions,
    source_path, validate,
)

#: Every source notebook, of every assignment.
PRESENT = all_present_stems()
CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def points(stem: str) -> float:
    return sum(float(nbgrader_meta(c).get("points", 0)) for c in read(source_path(stem)).cells
               if nbgrader_meta(c).get("grade"))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_assignment_holds_its_exercises_in_order(assignment):
    stems = ASSIGNMENT_STEMS[assignment]
    present = present_stems(assignment)
    assert present == sorted(stems), f"missing: {sorted(set(stems) - set(present))}, " \
                                     f"unexpected: {sorted(set(present) - set(stems))}"


def test_the_exercises_are_numbered_in_order_across_assignments():
    stems = [stem for assignment in ASSIGNMENTS for stem in ASSIGNMENT_STEMS[assignment]]
    assert stems == sorted(stems)  # numbered names sort in the seed's order, then the second assignment's
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+", stem) for stem in stems)
    numbers = [int(stem[:2]) for stem in stems]
    assert numbers == list(range(1, len(numbers) + 1)), numbers


def test_points_of_the_second_assignment_add_up():
    assert present_stems("module6_further") == sorted(FURTHER_STEMS)
    assert sum(points(s) for s in FURTHER_STEMS) == pytest.approx(TOTAL_POINTS["module6_further"]) \
        == 10 * len(FURTHER_STEMS) == 100
    assert all(points(s) == pytest.approx(10) for s in FURTHER_STEMS), {s: points(s) for s in FURTHER_STEMS}


def test_points_total_100():
    assert present_stems() == sorted(STEMS), "needs all 20 notebooks"
    assert TOTAL_POINTS["module6"] == 100
    assert sum(points(s) for s in CONCEPT) == pytest.approx(40)
    assert sum(points(s) for s in CODING) == pytest.approx(60)
    assert all(points(s) == pytest.approx(10) for s in CODING), {s: points(s) for s in CODING}


@pytest.mark.parametrize("stem", PRESENT)
def test_valid_notebook_and_nbgrader_metadata(stem):
    from nbgrader.nbgraderformat import MetadataValidator

    nb = read(source_path(stem))
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    ids = [cell.get("id") for cell in nb.cells]
    assert all(isinstance(i, str) and CELL_ID.match(i) for i in ids), ids
    assert len(set(ids)) == len(ids), "cell ids must be unique"
    grade_ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
    assert len(set(grade_ids)) == len(grade_ids), "nbgrader grade ids must be unique"
    assert all(nbgrader_meta(c) for c in nb.cells), "every cell carries nbgrader metadata (locked or answer)"


@pytest.mark.parametrize("stem", PRESENT)
def test_stored_clean(stem):
    raw = json.loads((source_path(stem)).read_text(encoding="utf-8"))
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["id"]
        assert "attachments" not in cell or not cell["attachments"], cell["id"]


@pytest.mark.parametrize("stem", PRESENT)
def test_one_exercise_per_notebook(stem):
    nb = read(source_path(stem))
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.get("id") == "intro"
    assert first.source.startswith(f"# Exercise {stem[:2]}: "), first.source.splitlines()[0]
    titles = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
              if re.match(r"#\s+Exercise\b", line)]
    assert len(titles) == 1, titles
    assert nb.cells[1].get("id") == "setup" and nb.cells[1].cell_type == "code"


@pytest.mark.parametrize("stem", PRESENT)
def test_answer_cells_have_solution_regions(stem):
    for cell in read(source_path(stem)).cells:
        meta = nbgrader_meta(cell)
        if not is_answer_cell(cell):
            assert SOLUTION_BEGIN not in cell.source, cell.id
            continue
        if meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            # The id a laptop student types: one text everywhere, ungraded, with no solution to hide.
            assert cell.source == STUDENT_ID_CELL and not meta.get("grade") and varies(stem), cell.id
            continue
        assert regions(cell.source, SOLUTION_BEGIN, SOLUTION_END), f"{cell.id}: no solution region"
        assert not meta.get("locked"), cell.id
        if cell.cell_type == "markdown":
            assert meta.get("grade") and meta.get("points", 0) > 0, f"{cell.id}: a written answer carries points"
            assert meta["grade_id"].startswith("explain_"), meta["grade_id"]


@pytest.mark.parametrize("stem", PRESENT)
def test_hidden_test_cells_match_the_checks(stem):
    nb = read(source_path(stem))
    check = CHECKS[stem]
    groups = {group.grade_id: group for group in check.groups}
    seen = []
    for cell in nb.cells:
        if not is_test_cell(cell):
            assert HIDDEN_BEGIN not in cell.source, f"{cell.id}: hidden tests outside a test cell"
            continue
        meta = nbgrader_meta(cell)
        grade_id = meta["grade_id"]
        assert grade_id in groups, f"{grade_id}: no group {grade_id[5:]!r} in CHECKS[{stem!r}]"
        group = groups[grade_id]
        assert float(meta["points"]) == pytest.approx(group.points), grade_id
        assert meta.get("locked"), grade_id
        assert cell.source.startswith('"""'), f"{grade_id}: opens with a one-line docstring"
        hidden = regions(cell.source, HIDDEN_BEGIN, HIDDEN_END)
        assert len(hidden) == 1, grade_id
        body = [line.strip() for line in hidden[0].strip().splitlines()]
        assert body == ["from autograder.checks import grade", f'grade("{stem}", "{group.name}", globals())'], body
        seen.append(grade_id)
    assert seen == [group.grade_id for group in check.groups], "one test cell per group, in the groups' order"


@pytest.mark.parametrize("stem", PRESENT)
def test_autograded_points_match_the_checks(stem):
    nb = read(source_path(stem))
    cells = sum(float(nbgrader_meta(c)["points"]) for c in nb.cells if is_test_cell(c))
    assert cells == pytest.approx(CHECKS[stem].points)


def _validate_source(stem):
    return validate(source_path(stem))


@pytest.fixture(scope="module")
def validations():
    return in_pool(_validate_source, PRESENT)


@pytest.mark.slow
@pytest.mark.parametrize("stem", PRESENT)
def test_runs_top_to_bottom_and_validates(stem, validations):
    result = validations[stem]
    details = [(r.get("source", "")[:80], r.get("raw_error", "")[-400:]) for r in result.get("failed", [])]
    assert result == {}, details or result
