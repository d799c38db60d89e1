"""Issue 33, F7, and issue 32, item 5, through every door: a refusal changes nothing on disk or in the gradebook.

After the grading host graded (``autograder grade``) and a written answer was graded by hand,
``nbgrader autograde --force`` and formgrader's Autograde button, run in a pod-like server
(``deploy/hub/podlike.py``: bubblewrap cannot run), refuse with the one sentence and change nothing:
every file of ``autograded/`` and ``feedback/`` (state files included) and every gradebook row are
byte-identical afterwards. A notebook on which the grader itself fails removes nothing (nbgrader's
converter removed the student's whole autograded folder), and one that trips Python's own limits in
the trusted process (the ``RecursionError`` case) is refused as that notebook's status while the run
goes on and exits 0, through every door. Helpers: ``tests/doors_support.py``.
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


# --------------------------------------------------------------------------- F7: a refusal changes nothing

@pytest.mark.skipif(not doors.pod_available(), reason="bubblewrap or podlike.py's seccomp filter does not run here")
def test_the_pod_servers_refusal_changes_nothing_after_the_grading_host_graded(graded):
    course = graded
    before = doors.snapshot(course)
    assert (course / "autograded" / "ann" / "toy" / ".autograder-state.json").is_file()
    # --force: nbgrader's converter removed the autograded folder first (without it, it did when the
    # submission was newer); either way the refusal now comes before anything is read or written.
    proc = doors.nbgrader(course, "--force", pod=True)
    assert proc.returncode != 0, proc.stdout
    assert proc.stdout.count(REFUSAL) == 1 and "Traceback" not in proc.stdout, proc.stdout[-3000:]
    assert "Removing" not in proc.stdout, proc.stdout[-3000:]
    assert doors.snapshot(course) == before
    # formgrader's Autograde button in the pod server, on a graded student and on one not yet graded.
    toy.submit(course, "cid", toy.honest_answers())
    before = doors.snapshot(course)
    results = doors.button(course, "ann", "cid", pod=True)
    for student, result in results.items():
        assert not result["success"] and REFUSAL in result["error"], (student, result)
    assert doors.snapshot(course) == before
    assert not (course / "autograded" / "cid").exists()
    assert doors.grade(course, "ann", "explain_why") == (None, 0.5, False)


def test_a_notebook_the_grader_fails_on_removes_nothing_through_nbgrader(graded):
    """nbgrader's converter removed a student's whole autograded folder when a step raised."""
    course = graded
    # bob hands in again (so his notebook is graded again), and the grader fails on it.
    toy.submit(course, "bob", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    files, rows = doors.snapshot(course)
    proc = doors.nbgrader(course, DOORS_FAIL_FOR="bob")
    assert proc.returncode != 0 and "bob/90_toy could not be graded" in proc.stdout, proc.stdout[-3000:]
    assert "Removing" not in proc.stdout
    assert doors.snapshot(course) == (files, rows)  # ann unchanged (skipped), bob's earlier grade kept whole


@pytest.mark.parametrize("door", ["autograder", "button"])
def test_pythons_own_limits_in_the_trusted_process_refuse_that_notebook_only(graded, door):
    """The RecursionError case: reported for that notebook (rejected, zero), the run goes on and exits 0.
    (``nbgrader autograde`` runs the button's converter: its log line is the same.)"""
    course = graded
    toy.submit(course, "bob", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    ann = {path: data for path, data in doors.files(course).items() if "/ann/" in path}
    hook = {"DOORS_RECURSE_FOR": "bob"}
    if door == "autograder":
        report = course / "report.jsonl"
        proc = doors.autograder(course, "--report", str(report), **hook)
        assert proc.returncode == 0, proc.stdout
        rows = [json.loads(line) for line in report.read_text().splitlines() if '"bob"' in line]
        assert {row["status"] for row in rows} == {"rejected"}, rows
        assert all("too complex for the grader to read (RecursionError)" in row["feedback"] for row in rows)
    else:
        result = doors.button(course, "bob", **hook)["bob"]
        assert result["success"], result
        assert "bob/90_toy: rejected: not run: the submission is too complex for the grader" in result["log"], result
    assert doors.grade(course, "bob", "test_double")[0] == 0.0
    assert {path: data for path, data in doors.files(course).items() if "/ann/" in path} == ann
    assert (course / "autograded" / "bob" / "toy" / f"{STEM}.ipynb").is_file()


