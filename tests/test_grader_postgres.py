"""The gradebook on PostgreSQL (nbgrader's ``db_url``): a real server, a fresh database per run.

The server URL comes from ``MODULE6_PG_URL`` (``.ci/run`` starts Debian's PostgreSQL and exports it,
e.g. ``postgresql://grader:grader@localhost:5432/postgres``). Without it the test is skipped
locally and FAILS in CI (``CI=true``).
"""

from __future__ import annotations

import json

import pytest

from hostile import toy
from pg_support import fresh_database
from autograder.grading.batch import Options, run

pytestmark = pytest.mark.postgres


@pytest.fixture
def database():
    url, drop = fresh_database("module6_grader")
    try:
        yield url
    finally:
        drop()


def test_grades_land_in_postgres(database, tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    # The toy course, but with its gradebook on the server.
    config = toy.CONFIG + f"c.CourseDirectory.db_url = {database!r}\n"
    toy.CONFIG, saved = config, toy.CONFIG
    try:
        toy.build_course(course)
    finally:
        toy.CONFIG = saved
    toy.register()
    toy.submit(course, "ann", toy.honest_answers())
    toy.submit(course, "bob", {"double": "def double(x):\n    return x", "answer_value": "ANSWER = 42"})
    report = course / "report.jsonl"
    assert run(Options("toy", course_dir=str(course), jobs=2, report=str(report), progress=False)) == 0
    assert not (course / "gradebook.db").exists()
    from nbgrader.api import Gradebook
    with Gradebook(database, "toy-course") as gb:
        assert gb.find_submission_notebook("90_toy", "toy", "ann").code_score == 3.0
        assert gb.find_submission_notebook("90_toy", "toy", "bob").code_score == 1.0
        assert {s.id for s in gb.students} == {"ann", "bob"}
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    assert sum(r["score"] or 0 for r in rows if r["student"] == "bob") == 1.0
