"""The hostile corpus: every submission is graded as if its wrong answers were simply wrong.

One batch grades all of them next to two honest students (process pool, 2 workers); the honest
students keep full marks, the course files stay as they were and nothing outlives the batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
from pathlib import Path

import pytest

from hostile import corpus, toy
from autograder.grading.batch import Options, run

ROOT = Path(__file__).resolve().parents[1]


def _hashes(paths):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _marker_processes(marker: str) -> list:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = toy.copy_course(toy.template(), tmp_path_factory.mktemp("hostile") / "course")
    site = sysconfig.get_paths()["purelib"]
    for student, answers, _ in corpus.CORPUS:
        filled = {key: value.replace("{course}", str(course)).replace("{root}", str(ROOT)).replace("{site}", site)
                  for key, value in answers.items()}
        toy.submit(course, student, filled)
    toy.submit(course, "honest", toy.honest_answers())
    toy.submit(course, "zz_honest", toy.honest_answers())
    watched = [course / "source" / "toy" / "90_toy.ipynb", *sorted((course / "submitted").rglob("*.ipynb")),
               *sorted((ROOT / "autograder" / "grading").glob("*.py")), Path(site) / "numpy" / "__init__.py"]
    before = _hashes(watched)
    report = course / "report.jsonl"
    status = run(Options(assignment="toy", course_dir=str(course), jobs=2, timeout=6, report=str(report),
                         progress=False))
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    return {"course": course, "status": status, "rows": rows, "before": before, "after": _hashes(watched)}


def _score(rows, student, grade_id):
    (row,) = [r for r in rows if r["student"] == student and r["grade_id"] == grade_id]
    return row


def test_batch_runs(graded):
    assert graded["status"] == 0


@pytest.mark.parametrize("student,answers,expected", corpus.CORPUS, ids=[entry[0] for entry in corpus.CORPUS])
def test_hostile_submission_scores_as_plainly_wrong(graded, student, answers, expected):
    for grade_id, score in expected.items():
        row = _score(graded["rows"], student, grade_id)
        assert row["score"] == score, (student, row)


def test_honest_neighbours_keep_full_marks(graded):
    for student in ("honest", "zz_honest"):
        assert _score(graded["rows"], student, "test_double")["score"] == 2.0
        assert _score(graded["rows"], student, "test_answer")["score"] == 1.0
        assert _score(graded["rows"], student, "explain_why")["status"] == "needs_manual_grade"


def test_timeouts_and_crashes_are_reported(graded):
    assert _score(graded["rows"], "loop_ignores_sigint", "test_double")["status"] == "timeout"
    assert _score(graded["rows"], "exits", "test_answer")["status"] == "error"
    # The zygote is the sandbox's PID 1: a notebook cannot kill it, so its other answers are graded.
    assert _score(graded["rows"], "kills_the_zygote", "test_answer")["status"] == "graded"


def test_course_files_untouched(graded):
    assert graded["before"] == graded["after"]


def test_nothing_outlives_grading(graded):
    assert _marker_processes("987654") == []


def test_feedback_never_shows_hidden_tests(graded):
    course = graded["course"]
    produced = list((course / "feedback").rglob("*.html")) + list((course / "autograded").rglob("*.ipynb"))
    assert len(produced) == 2 * (len(corpus.CORPUS) + 2)
    for path in produced:
        text = path.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "grade(\"90_toy\"" not in text, path


def test_gradebook_matches_report(graded):
    from nbgrader.api import Gradebook
    url = "sqlite:///" + str(graded["course"] / "gradebook.db")
    with Gradebook(url) as gb:
        for row in graded["rows"]:
            grade = gb.find_grade(row["grade_id"], row["notebook"], "toy", row["student"])
            assert grade.auto_score == row["score"], row


def test_the_json_depth_guard_is_linear_on_escaped_quotes():
    """An unterminated string of escaped quotes made the old guard (a regular expression) backtrack
    quadratically before any time limit applied: 32 kB took 33 s, so this 1 MB file would have taken
    hours. Now it is one pass, and strings and escapes are read as JSON reads them."""
    import json

    from autograder.grading.intake import json_depth as _json_depth
    assert _json_depth(b'{"cells": [], "x": "' + b'\\"' * 500_000) == 2
    cases = {b"": 0, b"[]": 1, b"[[1, [2]]]": 3, b'{"a": "[[[["}': 1, b'{"a": "x\\\\", "b": [[1]]}': 3,
             b'{"a": "\\"[[["}': 1, b"]]][": 0}
    assert {raw: _json_depth(raw) for raw in cases} == cases
    nested = {"a": [[[["\\[\"{", {"b": "]]"}]]]]}
    assert _json_depth(json.dumps(nested).encode()) == 6


def test_nbgrader_side_never_opens_a_submission():
    """Under `nbgrader autograde`, nbconvert's exporter is handed each submitted notebook first: it must
    not open it at all (a FIFO blocked it forever; 200,000 cells were parsed and validated whole)."""
    import io

    import nbformat

    from autograder.grading.nbgrader_bridge import _PLACEHOLDER_KEY, SubmissionExporter

    class Untouchable(io.StringIO):
        def read(self, size=-1):
            raise AssertionError("the exporter read the submitted file")

    exporter = SubmissionExporter()
    body, resources = exporter.from_filename("/nonexistent/submitted/ann/toy/90_toy.ipynb", {})
    nb = nbformat.reads(body, as_version=4)
    assert nb.cells == [] and nb.metadata[_PLACEHOLDER_KEY] is True
    assert resources["metadata"]["name"] == "90_toy"
    body, _ = exporter.from_file(Untouchable())
    assert nbformat.reads(body, as_version=4).cells == []
