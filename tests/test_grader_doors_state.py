"""Issue 33, F7 and F9: the doors share what they graded, and a refusal changes nothing.

One toy course with nbgrader's door installed (``nbgrader_bridge.install``), graded through
``autograder grade`` (the grading host), ``nbgrader autograde`` and formgrader's Autograde button
(``NbGraderAPI.autograde``, which always asks for ``force``):

* F7: after the grading host graded and a written answer was graded by hand, ``nbgrader autograde``
  (with and without ``--force``) and the button, run in a pod-like server (``deploy/hub/podlike.py``:
  bubblewrap cannot run), refuse with the one sentence and change nothing: every file of
  ``autograded/`` and ``feedback/`` (state files included) and every gradebook row are byte-identical
  afterwards. A notebook on which the grader itself fails, or which trips Python's own limits in the
  trusted process, removes nothing either, through either door.
* F9: the same unchanged work graded through the other door, in both orders, is not graded again and
  changes nothing ("needs manual grade" included); a real regrade keeps the manual grade, and
  "graded by hand" where the graded answer did not change.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import toy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

TESTS = Path(__file__).resolve().parent
PODLIKE = TESTS.parent / "deploy" / "hub" / "podlike.py"
STEM = toy.STEM

CONFIG = f"""
import os, sys
sys.path.insert(0, {str(TESTS)!r})
from hostile import toy as _toy
_toy.register()
from autograder.grading import nbgrader_bridge
nbgrader_bridge.install(c)
# Test hooks (never set outside these tests): the grader itself fails, or Python's recursion limit
# trips in the trusted process, on the submissions of the students named.
_fail, _recurse = os.environ.get("DOORS_FAIL_FOR", "").split(), os.environ.get("DOORS_RECURSE_FOR", "").split()
if _fail or _recurse:
    from autograder.grading import worker as _worker
    _grade, _extract = _worker._grade, _worker.extract
    def _failing(task):
        if task["student"] in _fail:
            raise OSError("the grader failed (a test hook)")
        _worker._current = task["student"]
        return _grade(task)
    def _recursing(source, submitted):
        if getattr(_worker, "_current", None) in _recurse and submitted is not None:
            raise RecursionError("maximum recursion depth exceeded (a test hook)")
        return _extract(source, submitted)
    _worker._grade, _worker.extract = _failing, _recursing
"""

API = """
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
coursedir = CourseDirectory(config=config)
coursedir.root = os.getcwd()
api = NbGraderAPI(coursedir, config=config)
print(json.dumps({student: api.autograde("toy", student) for student in sys.argv[1:]}))
"""

STUDENTS = ("ann", "bob")
REFUSAL = "grade on a grading host where bubblewrap works"


def _course(tmp_path: Path) -> Path:
    course = toy.copy_course(toy.template(), tmp_path / "course")
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text() + CONFIG)
    for student in STUDENTS:
        toy.submit(course, student, toy.honest_answers())
        (course / "submitted" / student / "toy" / "timestamp.txt").write_text("2030-01-01 00:00:00.000000 UTC\n")
    return course


def _env(**extra) -> dict:
    env = toy.nbgrader_env()
    env.pop("JUPYTER_CONFIG_DIR", None)
    env.update(extra)
    return env


def _run(course: Path, *args: str, pod: bool = False, **extra) -> subprocess.CompletedProcess:
    command = [sys.executable, *args]
    if pod:
        command = [sys.executable, str(PODLIKE), "--", *command]
    return subprocess.run(command, cwd=course, env=_env(**extra), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600)


def _autograder(course: Path, *args: str, **extra) -> subprocess.CompletedProcess:
    return _run(course, "-m", "autograder", "grade", "toy", "--jobs", "1", "--no-progress", *args, **extra)


def _nbgrader(course: Path, *args: str, **extra) -> subprocess.CompletedProcess:
    return _run(course, "-m", "nbgrader", "autograde", "toy", *args, **extra)


def _button(course: Path, *students: str, **extra) -> dict:
    proc = _run(course, "-c", API, *(students or STUDENTS), **extra)
    assert proc.returncode == 0, proc.stdout
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(course: Path) -> dict:
    """Every file of ``autograded/`` and ``feedback/`` (state files included), by path, as bytes."""
    return {path.relative_to(course).as_posix(): path.read_bytes()
            for folder in ("autograded", "feedback") for path in sorted((course / folder).rglob("*"))
            if path.is_file()}


def _rows(course: Path) -> dict:
    """Every row of every table of the gradebook, in a stable order."""
    with sqlite3.connect(course / "gradebook.db") as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {table: sorted(map(repr, db.execute(f'SELECT * FROM "{table}"').fetchall())) for table in tables}


def _grade_by_hand(course: Path, student: str, score: float = 0.5) -> None:
    """What formgrader's grading view does when a person scores a written answer (nbgrader==0.9.6
    ``server_extensions/formgrader/apihandlers.py``, ``GradeHandler.put``), and a comment."""
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        grade = gb.find_grade("explain_why", STEM, "toy", student)
        grade.manual_score = score
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.find_comment("explain_why", STEM, "toy", student).manual_comment = "Clear and right."
        gb.db.commit()


def _grade(course: Path, student: str, grade_id: str) -> tuple:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        grade = gb.find_grade(grade_id, STEM, "toy", student)
        return grade.auto_score, grade.manual_score, grade.needs_manual_grade


def _snapshot(course: Path) -> tuple:
    return _files(course), _rows(course)


@pytest.fixture(scope="module")
def host_graded(tmp_path_factory) -> Path:
    """The class graded by the grading host (``autograder grade``), ann's written answer then graded by
    hand: each test works on a copy (the state files hold digests of contents, never paths)."""
    course = _course(tmp_path_factory.mktemp("host"))
    proc = _autograder(course)
    assert proc.returncode == 0, proc.stdout
    _grade_by_hand(course, "ann")
    return course


@pytest.fixture
def graded(host_graded, tmp_path) -> Path:
    import shutil
    return Path(shutil.copytree(host_graded, tmp_path / "course", symlinks=True))


# --------------------------------------------------------------------------- F7: a refusal changes nothing

def _pod_available() -> bool:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return False
    probe = "from autograder.grading.sandbox import _probe_bubblewrap; print(_probe_bubblewrap()[0] is not None)"
    outside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return outside.stdout.strip() == "True"


@pytest.mark.skipif(not _pod_available(), reason="bubblewrap or podlike.py's seccomp filter does not run here")
def test_the_pod_servers_refusal_changes_nothing_after_the_grading_host_graded(graded):
    course = graded
    before = _snapshot(course)
    assert (course / "autograded" / "ann" / "toy" / ".autograder-state.json").is_file()
    for args in (("--force",), ()):
        proc = _nbgrader(course, *args, pod=True)
        assert proc.returncode != 0, proc.stdout
        assert proc.stdout.count(REFUSAL) == 1 and "Traceback" not in proc.stdout, proc.stdout[-3000:]
        assert "Removing" not in proc.stdout, proc.stdout[-3000:]
        assert _snapshot(course) == before, args
    # formgrader's Autograde button in the pod server, on a graded student and on one not yet graded.
    toy.submit(course, "cid", toy.honest_answers())
    before = _snapshot(course)
    results = _button(course, "ann", "cid", pod=True)
    for student, result in results.items():
        assert not result["success"] and REFUSAL in result["error"], (student, result)
    assert _snapshot(course) == before
    assert not (course / "autograded" / "cid").exists()
    assert _grade(course, "ann", "explain_why") == (None, 0.5, False)


def test_a_notebook_the_grader_fails_on_removes_nothing_through_nbgrader(graded):
    """nbgrader's converter removed a student's whole autograded folder when a step raised."""
    course = graded
    # bob hands in again (so his notebook is graded again), and the grader fails on it.
    toy.submit(course, "bob", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    files, rows = _snapshot(course)
    proc = _nbgrader(course, DOORS_FAIL_FOR="bob")
    assert proc.returncode != 0 and "bob/90_toy could not be graded" in proc.stdout, proc.stdout[-3000:]
    assert "Removing" not in proc.stdout
    assert _snapshot(course) == (files, rows)  # ann unchanged (skipped), bob's earlier grade kept whole


@pytest.mark.parametrize("door", ["autograder", "button"])
def test_pythons_own_limits_in_the_trusted_process_refuse_that_notebook_only(graded, door):
    """The RecursionError case: reported for that notebook (rejected, zero), the run goes on and exits 0.
    (``nbgrader autograde`` runs the button's converter: its log line is the same.)"""
    course = graded
    toy.submit(course, "bob", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    ann = {path: data for path, data in _files(course).items() if "/ann/" in path}
    hook = {"DOORS_RECURSE_FOR": "bob"}
    if door == "autograder":
        report = course / "report.jsonl"
        proc = _autograder(course, "--report", str(report), **hook)
        assert proc.returncode == 0, proc.stdout
        rows = [json.loads(line) for line in report.read_text().splitlines() if '"bob"' in line]
        assert {row["status"] for row in rows} == {"rejected"}, rows
        assert all("too complex for the grader to read (RecursionError)" in row["feedback"] for row in rows)
    else:
        result = _button(course, "bob", **hook)["bob"]
        assert result["success"], result
        assert "bob/90_toy: rejected: not run: the submission is too complex for the grader" in result["log"], result
    assert _grade(course, "bob", "test_double")[0] == 0.0
    assert {path: data for path, data in _files(course).items() if "/ann/" in path} == ann
    assert (course / "autograded" / "bob" / "toy" / f"{STEM}.ipynb").is_file()


# --------------------------------------------------------------------------- F9: one "unchanged" for both doors

def test_nbgrader_and_the_button_skip_what_autograder_grade_graded(graded):
    course = graded
    before = _snapshot(course)
    proc = _nbgrader(course)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("unchanged since it was graded") == len(STUDENTS), proc.stdout[-3000:]
    assert "graded in the sandbox" not in proc.stdout
    assert _snapshot(course) == before
    results = _button(course)  # nbgrader's API asks for force: the digest decides all the same
    assert all(result["success"] and "unchanged since it was graded" in result["log"] for result in results.values())
    assert _snapshot(course) == before
    assert _grade(course, "ann", "explain_why") == (None, 0.5, False)


def test_autograder_grade_skips_what_the_button_graded(tmp_path):
    course = _course(tmp_path)
    results = _button(course)
    assert all(result["success"] for result in results.values()), results
    state = json.loads((course / "autograded" / "ann" / "toy" / ".autograder-state.json").read_text())
    assert set(state) == {STEM} and state[STEM]["digest"] and state[STEM]["cells"]
    _grade_by_hand(course, "ann")
    before = _snapshot(course)
    proc = _autograder(course)
    assert proc.returncode == 0, proc.stdout
    assert f"graded 0 notebooks ({len(STUDENTS)} unchanged, skipped; 0 failed)" in proc.stdout, proc.stdout
    assert _snapshot(course) == before
    assert _grade(course, "ann", "explain_why") == (None, 0.5, False)


@pytest.mark.parametrize("first,second", [("autograder", "nbgrader"), ("nbgrader", "autograder")])
def test_a_real_regrade_keeps_manual_grades_where_the_answer_is_unchanged(graded, tmp_path, first, second):
    if first == "autograder":
        course = graded  # autograder grade, then ann's written answer graded by hand
    else:
        course = _course(tmp_path / "fresh")
        assert _nbgrader(course).returncode == 0
        _grade_by_hand(course, "ann")
    doors = {"autograder": lambda *args: _autograder(course, *args), "nbgrader": lambda *args: _nbgrader(course, *args)}
    if first == "autograder":
        # A forced regrade of unchanged work grades again and changes no row.
        rows = _rows(course)
        assert doors[second]("--force").returncode == 0
        assert _rows(course) == rows
    # ann changes a code answer, not her written one: graded again, the hand grade stays as it was.
    toy.submit(course, "ann", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    assert doors[second]().returncode == 0
    assert _grade(course, "ann", "test_answer")[0] == 0.0
    assert _grade(course, "ann", "explain_why") == (None, 0.5, False)
    # Now her written answer changes: a person has to look again (nbgrader's rule); the score stays.
    toy.submit(course, "ann", {**toy.honest_answers("Because it scales linearly."), "answer_value": "ANSWER = 41\n"})
    assert doors[first]().returncode == 0
    assert _grade(course, "ann", "explain_why") == (None, 0.5, True)
    assert _grade(course, "bob", "test_double")[0] == 2.0
