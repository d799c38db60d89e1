"""Comparing the batch grader with nbgrader: both sides import one frozen copy, and every difference is named.

Regression for the 5/240 mismatches of the 12 x 20 benchmark: its nbgrader phase lasts minutes and
each kernel imported ``autograder.checks`` from the shared working tree as it was when that kernel
started. A refactor caught half written (``_concept_answers`` rewritten, ``ex08`` still importing
a removed name; every hidden test cell imports all checks) made each test cell of those kernels
raise ImportError and score 0, while the batch grader, run afterwards, graded the finished code.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.demo.compare import explain, freeze_code, imported_from
from autograder.results import METADATA_KEY, CaseVerdict, GroupVerdict, verdict_text

ROOT = Path(__file__).resolve().parents[1]


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _stderr(text):
    return nbformat.v4.new_output("stream", name="stderr", text=text)


def _error(ename, evalue):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def _points(value):
    return nbformat.v4.new_output("execute_result", data={"text/plain": repr(value)}, execution_count=1)


def _graded(points, *cases):
    """A test cell's outputs as either grader writes them: the verdict text, then the points carrying
    the record. ``cases``: ``(name, message)``, "" for a passed case."""
    record = GroupVerdict("t", "T", float(points), 3.0, tuple(
        CaseVerdict(name, not message, message=message) for name, message in cases))
    return [_stdout(verdict_text(record) + "\n"),
            nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(points))}, execution_count=1,
                                   metadata={METADATA_KEY: record.to_json()})]


def test_frozen_copy_is_what_a_fresh_python_imports(tmp_path):
    # Kernels and `autograder grade` are fresh Pythons started with this environment.
    env = freeze_code(tmp_path / "code")
    where = imported_from(env, cwd=tmp_path)
    assert where == {"autograder": str(tmp_path / "code" / "autograder"), "course": str(tmp_path / "code" / "course")}
    checks = ROOT / "autograder" / "checks"
    frozen = tmp_path / "code" / "autograder" / "checks"
    names = sorted(path.name for path in checks.glob("*.py"))
    assert names and sorted(path.name for path in frozen.glob("*.py")) == names
    assert not list((tmp_path / "code").rglob("__pycache__"))


def test_frozen_copy_needs_a_new_directory(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "stray.txt").write_text("x")
    with pytest.raises(ValueError, match="dest"):
        freeze_code(tmp_path / "code")


def test_half_written_checks_in_the_kernel_are_nbgrader_side():
    ours = _graded(3, ("a case", ""))
    theirs = [_error("ImportError", "cannot import name 'answer' from 'autograder.checks._concept_answers'")]
    cause, detail = explain(theirs, ours, grader_status="graded")
    assert cause == "nbgrader-error"
    assert "ImportError" in detail and "answer" in detail


@pytest.mark.parametrize("theirs, cause", [
    ([_error("CellTimeoutError", "")], "nbgrader-timeout"),
    (_graded(2, ("big", "the call did not finish within 10 s")), "nbgrader-call-timeout"),
])
def test_timeouts_in_the_kernel_are_reported_as_such(theirs, cause):
    ours = _graded(3, ("big", ""))
    assert explain(theirs, ours, grader_status="graded")[0] == cause


def test_a_failed_nbgrader_run_is_not_graded():
    assert explain(None, [_points(1.0)])[0] == "nbgrader-not-graded"
    assert explain([_points(0.0)], [_points(1.0)], nbgrader_failed=True)[0] == "nbgrader-not-graded"


def test_grader_side_failures_are_named():
    theirs = _graded(3, ("big", ""))
    timed_out = _graded(0, ("big", "the answer could not be run for this case"))
    assert explain(theirs, timed_out, grader_status="timeout")[0] == "grader-timeout"
    call = _graded(2, ("big", "the call did not finish within 10 s"))
    assert explain(theirs, call, grader_status="graded")[0] == "grader-call-timeout"
    assert explain(theirs, None)[0] == "grader-error"


def test_a_clean_disagreement_stays_unexplained_and_names_the_cases():
    theirs = _graded(1.5, ("a", ""), ("b", "wrong"))
    ours = _graded(3, ("a", ""), ("b", ""))
    cause, detail = explain(theirs, ours, grader_status="graded")
    assert cause is None
    assert "nbgrader-only failures ['b: wrong'], grader-only failures []" in detail
    assert "no verdict record" not in detail


def test_stderr_in_the_kernel_is_a_disagreement_not_an_excuse():
    # nbgrader scores a test cell that wrote to stderr 0: the batch grader must match that, so the
    # comparison must not file it under the environment.
    theirs = [_stdout("T: 3 / 3 points\n"), _stderr("RuntimeWarning: overflow\n"), _points(3.0)]
    ours = [_stdout("T: 3 / 3 points\n"), _points(3.0)]
    cause, detail = explain(theirs, ours, grader_status="graded")
    assert cause is None
    assert "stderr" in detail and "overflow" in detail


# --------------------------------------------------------------------------- every status of the report

def test_every_report_status_but_graded_has_a_cause_and_a_sentence():
    from autograder.demo.compare import GRADER_CAUSES, STATUS_CAUSES
    from autograder.results import Status

    assert set(STATUS_CAUSES) == set(Status) - {Status.GRADED}
    assert len(set(STATUS_CAUSES.values())) == len(STATUS_CAUSES)
    assert set(STATUS_CAUSES.values()) <= set(GRADER_CAUSES)
    for status in Status:
        assert status.meaning.strip() and status.meaning[0].islower() and not status.meaning.endswith(".")


_FULL = _graded(3, ("a", ""))
_NOTHING = _graded(0, ("a", "the answer could not be run for this case"))


@pytest.mark.parametrize("status, cause, words", [
    ("timeout", "grader-timeout", "ran out of its time limit"),
    ("error", "grader-error", "did not run"),
    ("grader_error", "grader-sandbox", "sandbox stopped"),
    ("rejected", "grader-rejected", "broke one of the grader's limits"),
    ("symlink", "grader-symlink", "symbolic link"),
    ("missing", "grader-missing", "submitted no such notebook"),
    ("needs_manual_grade", "grader-manual", "waiting for a person"),
    ("bad_timestamp", "grader-bad-timestamp", "timestamp.txt could not be read"),
])
def test_each_grader_status_explains_the_difference_in_a_sentence(status, cause, words):
    got, detail = explain(_FULL, _NOTHING, grader_status=status)
    assert got == cause
    assert f"status is {status!r}" in detail and words in detail


@pytest.mark.parametrize("status", ["rejected", "symlink", "grader_error", "missing"])
def test_a_notebook_the_grader_did_not_write_is_explained_by_its_status(status):
    # Rejected, symbolic-linked or missing notebooks may have no autograded file on the grader's side:
    # the report's status names the reason, not the generic "wrote no autograded notebook".
    cause, detail = explain(_FULL, None, grader_status=status)
    assert cause.startswith("grader-") and cause != "grader-error"
    assert status in detail


def test_graded_is_no_excuse_and_an_unknown_status_is_an_error():
    assert explain(_FULL, _NOTHING, grader_status="graded")[0] is None
    with pytest.raises(ValueError, match="grader_status"):
        explain(_FULL, _NOTHING, grader_status="exploded")


def test_a_notebook_wide_row_gives_every_cell_of_the_notebook_its_status(tmp_path):
    import json

    from autograder.demo.compare import read_statuses, status_of

    report = tmp_path / "report.jsonl"
    rows = [{"student": "a", "notebook": "15_x", "grade_id": None, "status": "symlink"},
            {"student": "b", "notebook": "15_x", "grade_id": "test_public", "status": "timeout"},
            {"student": "b", "notebook": "timestamp.txt", "grade_id": None, "status": "bad_timestamp"}]
    report.write_text("".join(json.dumps(row) + "\n" for row in rows))
    statuses = read_statuses(report)
    assert status_of(statuses, "a", "15_x", "test_public") == "symlink"
    assert status_of(statuses, "b", "15_x", "test_public") == "timeout"
    assert status_of(statuses, "b", "15_x", "test_numerics") is None


def test_the_printed_verdict_is_never_read_back():
    # Only the records count: a cell whose printed text claims a failure or a timed-out call, with no
    # record behind it, names no failure and no call timeout (and says that its record is missing).
    printed = [_stdout("T: 1 / 3 points\n  [FAIL] b: the call did not finish within 10 s\n"), _points(1.0)]
    cause, detail = explain(printed, _graded(3, ("b", "")), grader_status="graded")
    assert cause is None
    assert "nbgrader-only failures [], grader-only failures []" in detail
    assert "no verdict record in nbgrader's test cell" in detail
