"""The report's statuses are one enumeration, and every reader of a report knows each of them."""

from __future__ import annotations

import json

from autograder import results
from autograder.feedback.page import STATUS_WORDS
from autograder.results import NOT_GRADED, Status


def _row(student, status, grade_id="test_a", score=0.0):
    return {"student": student, "notebook": "15_x", "grade_id": grade_id, "score": score, "max_score": 2.0,
            "status": status, "feedback": "", "misconceptions": []}


def test_statuses_travel_as_their_plain_values():
    assert json.loads(json.dumps({"status": Status.GRADER_ERROR})) == {"status": "grader_error"}
    assert Status("rejected") is Status.REJECTED and Status.MISSING == "missing"


def test_the_student_page_words_every_status():
    assert set(STATUS_WORDS) == set(Status)
    assert all(word and word not in {status.value for status in Status} - {"graded"} for word in STATUS_WORDS.values())


def test_the_summary_counts_every_status_in_one_column():
    rows = [_row("a", Status.GRADED, score=2.0), _row("b", Status.NEEDS_MANUAL_GRADE, score=None),
            _row("c", Status.TIMEOUT), _row("d", Status.ERROR), _row("e", Status.MISSING)]
    rows += [_row(f"n{i}", status, grade_id=None) for i, status in enumerate(sorted(NOT_GRADED))]
    rows.append({**_row("f", Status.BAD_TIMESTAMP, grade_id=None), "notebook": "timestamp.txt",
                 "feedback": "timestamp.txt holds no date"})
    text = results.summary(rows, graded=5, skipped=0, failures=0, seconds=1.0)
    line = next(line for line in text.splitlines() if line.startswith("15_x"))
    students, mean, manual, errors, timeouts, missing = line.split()[1:]
    assert (students, manual, errors, timeouts, missing) == (str(len(rows) - 1), "1", str(1 + len(NOT_GRADED)),
                                                             "1", "1")
    assert "f: timestamp.txt holds no date" in text
