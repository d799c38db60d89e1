"""Issue 33, F9: grading the same unchanged work through the other door changes nothing.

``autograder grade`` and nbgrader's door (``nbgrader autograde``, formgrader's Autograde button) share
one state file per student (``autograder/grading/state.py``): whichever door graded a notebook, the
other skips it while nothing it depends on changed ("unchanged"), in both orders, and changes no file
and no gradebook row (no "needs manual grade" reset). A real regrade (an answer changed, or
``--force``) keeps the manual grade, and "graded by hand" where the answer a person graded did not
change; a changed written answer is marked for review, as nbgrader marks it. Helpers:
``tests/doors_support.py``.
"""

from __future__ import annotations

import json

import pytest

import doors_support as doors
from doors_support import graded, host_graded  # noqa: F401 - fixtures
from hostile import toy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

STEM = toy.STEM
STUDENTS, REFUSAL = doors.STUDENTS, doors.REFUSAL


# --------------------------------------------------------------------------- F9: one "unchanged" for both doors

def test_nbgrader_and_the_button_skip_what_autograder_grade_graded(graded):
    course = graded
    before = doors.snapshot(course)
    proc = doors.nbgrader(course)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("unchanged since it was graded") == len(STUDENTS), proc.stdout[-3000:]
    assert "graded in the sandbox" not in proc.stdout
    assert doors.snapshot(course) == before
    results = doors.button(course)  # nbgrader's API asks for force: the digest decides all the same
    assert all(result["success"] and "unchanged since it was graded" in result["log"] for result in results.values())
    assert doors.snapshot(course) == before
    assert doors.grade(course, "ann", "explain_why") == (None, 0.5, False)


def test_autograder_grade_skips_what_the_button_graded(tmp_path):
    course = doors.course(tmp_path)
    results = doors.button(course)
    assert all(result["success"] for result in results.values()), results
    state = json.loads((course / "autograded" / "ann" / "toy" / ".autograder-state.json").read_text())
    assert set(state) == {STEM} and state[STEM]["digest"] and state[STEM]["cells"]
    doors.grade_by_hand(course, "ann")
    before = doors.snapshot(course)
    proc = doors.autograder(course)
    assert proc.returncode == 0, proc.stdout
    assert f"graded 0 notebooks ({len(STUDENTS)} unchanged, skipped; 0 failed)" in proc.stdout, proc.stdout
    assert doors.snapshot(course) == before
    assert doors.grade(course, "ann", "explain_why") == (None, 0.5, False)


@pytest.mark.parametrize("first,second", [("autograder", "nbgrader"), ("nbgrader", "autograder")])
def test_a_real_regrade_keeps_manual_grades_where_the_answer_is_unchanged(graded, tmp_path, first, second):
    if first == "autograder":
        course = graded  # autograder grade, then ann's written answer graded by hand
    else:
        course = doors.course(tmp_path / "fresh")
        assert doors.nbgrader(course).returncode == 0
        doors.grade_by_hand(course, "ann")
    door = {"autograder": lambda *args: doors.autograder(course, *args), "nbgrader": lambda *args: doors.nbgrader(course, *args)}
    if first == "autograder":
        # A forced regrade of unchanged work grades again and changes no row.
        rows = doors.rows(course)
        assert door[second]("--force").returncode == 0
        assert doors.rows(course) == rows
    # ann changes a code answer, not her written one: graded again, the hand grade stays as it was.
    toy.submit(course, "ann", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    assert door[second]().returncode == 0
    assert doors.grade(course, "ann", "test_answer")[0] == 0.0
    assert doors.grade(course, "ann", "explain_why") == (None, 0.5, False)
    # Now her written answer changes: a person has to look again (nbgrader's rule); the score stays.
    toy.submit(course, "ann", {**toy.honest_answers("Because it scales linearly."), "answer_value": "ANSWER = 41\n"})
    assert door[first]().returncode == 0
    assert doors.grade(course, "ann", "explain_why") == (None, 0.5, True)
    assert doors.grade(course, "bob", "test_double")[0] == 2.0
