"""The course's batch grader (``autograder grade module6_further``) on the second assignment, end to end:
release, a simulated class, sandboxed grading, the report and the gradebook."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder.authoring.scratch_course import generate_release, make_course_copy, read_gradebook
from autograder.checks import CHECKS
from autograder.demo.simulate import write_class
from tests.nbrun_support import FURTHER_STEMS

pytestmark = pytest.mark.slow

ASSIGNMENT = "module6_further"
WRONG = ("23_loss_aggregation", "aggregate_loss")  # token_weights stays right (aggregate_loss calls it)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = make_course_copy(tmp_path_factory.mktemp("further") / "course", stems=FURTHER_STEMS)
    generate_release(course, ASSIGNMENT)
    write_class(course, {"sol": "solutions", "stub": "untouched", "wrong": "solutions+wrong:%s:%s" % WRONG}, ASSIGNMENT)
    report = course / "report.jsonl"
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", ASSIGNMENT, "--no-progress", "--jobs", "2",
                           "--report", str(report)], cwd=course, text=True, capture_output=True, timeout=1200)
    rows = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    return {"proc": proc, "rows": rows, "course": course}


def _score(rows, student, stem, grade_id):
    (row,) = [r for r in rows if (r["student"], r["notebook"], r["grade_id"]) == (student, stem, grade_id)]
    return row["score"]


def test_the_cli_grades_the_second_assignment(graded):
    assert graded["proc"].returncode == 0, graded["proc"].stdout[-2000:] + graded["proc"].stderr[-2000:]
    assert {r["notebook"] for r in graded["rows"]} == set(FURTHER_STEMS)


@pytest.mark.parametrize("stem", FURTHER_STEMS)
def test_solutions_earn_every_point_and_stubs_none(graded, stem):
    for group in CHECKS[stem].groups:
        assert _score(graded["rows"], "sol", stem, group.grade_id) == pytest.approx(group.points), group.name
        assert _score(graded["rows"], "stub", stem, group.grade_id) == 0, group.name
    book = read_gradebook(graded["course"], ["sol", "stub"], ASSIGNMENT)
    assert book["sol"][stem].auto_score == pytest.approx(CHECKS[stem].points)
    assert book["stub"][stem].auto_score == 0


def test_one_wrong_function_loses_only_its_groups(graded):
    stem, function = WRONG
    # the groups whose own cases call the function (plan() adds the central and gate cases to every group,
    # but those only cap or gate a group, which this wrong answer must not trigger)
    affected = {g.grade_id for g in CHECKS[stem].groups
                if any(call.target == function for case in CHECKS[stem].cases([g.name]) for call in case.calls)}
    assert affected and affected != {g.grade_id for g in CHECKS[stem].groups}
    lost = 0.0
    for group in CHECKS[stem].groups:
        score = _score(graded["rows"], "wrong", stem, group.grade_id)
        if group.grade_id not in affected:
            assert score == pytest.approx(group.points), group.name
        lost += group.points - score
    assert lost > 0
    others = [s for s in FURTHER_STEMS if s != stem]
    assert all(_score(graded["rows"], "wrong", s, g.grade_id) == pytest.approx(g.points)
               for s in others for g in CHECKS[s].groups)
