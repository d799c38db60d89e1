"""What the tests of the grading doors share (issue 33 F7 and F9; issue 32 item 5 through every door).

A toy course (``tests/hostile/toy.py``) with nbgrader's door installed (``nbgrader_bridge.install``),
graded through ``autograder grade`` (the grading host), ``nbgrader autograde`` and formgrader's
Autograde button (``NbGraderAPI.autograde``, which always asks for ``force``), each in a subprocess
(optionally under ``deploy/hub/podlike.py``: a pod-like server where bubblewrap cannot run); what
a run changed is read as every file of ``autograded/`` and ``feedback/`` and every gradebook row.
"""

from __future__ import annotations

import json
import platform
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import toy
from run_cache import built_once, writable_copy

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
        if task.student in _fail:
            raise OSError("the grader failed (a test hook)")
        _worker._current = task.student
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


def course(tmp_path: Path) -> Path:
    """The toy course with nbgrader's door installed, ann and bob honest (handed in 2030-01-01)."""
    course = toy.copy_course(toy.template(), tmp_path / "course")
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text() + CONFIG)
    for student in STUDENTS:
        toy.submit(course, student, toy.honest_answers())
        (course / "submitted" / student / "toy" / "timestamp.txt").write_text("2030-01-01 00:00:00.000000 UTC\n")
    return course


def env(**extra) -> dict:
    env = toy.nbgrader_env()
    env.pop("JUPYTER_CONFIG_DIR", None)
    env.update(extra)
    return env


def run(course: Path, *args: str, pod: bool = False, **extra) -> subprocess.CompletedProcess:
    command = [sys.executable, *args]
    if pod:
        command = [sys.executable, str(PODLIKE), "--", *command]
    return subprocess.run(command, cwd=course, env=env(**extra), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600)


def autograder(course: Path, *args: str, **extra) -> subprocess.CompletedProcess:
    return run(course, "-m", "autograder", "grade", "toy", "--jobs", "1", "--no-progress", *args, **extra)


def nbgrader(course: Path, *args: str, **extra) -> subprocess.CompletedProcess:
    return run(course, "-m", "nbgrader", "autograde", "toy", *args, **extra)


def button(course: Path, *students: str, **extra) -> dict:
    proc = run(course, "-c", API, *(students or STUDENTS), **extra)
    assert proc.returncode == 0, proc.stdout
    return json.loads(proc.stdout.strip().splitlines()[-1])


def files(course: Path) -> dict:
    """Every file of ``autograded/`` and ``feedback/`` (state files included), by path, as bytes."""
    return {path.relative_to(course).as_posix(): path.read_bytes()
            for folder in ("autograded", "feedback") for path in sorted((course / folder).rglob("*"))
            if path.is_file()}


def rows(course: Path) -> dict:
    """Every row of every table of the gradebook, in a stable order."""
    with sqlite3.connect(course / "gradebook.db") as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {table: sorted(map(repr, db.execute(f'SELECT * FROM "{table}"').fetchall())) for table in tables}


def grade_by_hand(course: Path, student: str, score: float = 0.5) -> None:
    """What formgrader's grading view does when a person scores a written answer (nbgrader==0.9.6
    ``server_extensions/formgrader/apihandlers.py``, ``GradeHandler.put``), and a comment."""
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        grade = gb.find_grade("explain_why", STEM, "toy", student)
        grade.manual_score = score
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.find_comment("explain_why", STEM, "toy", student).manual_comment = "Clear and right."
        gb.db.commit()


def grade(course: Path, student: str, grade_id: str) -> tuple:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        grade = gb.find_grade(grade_id, STEM, "toy", student)
        return grade.auto_score, grade.manual_score, grade.needs_manual_grade


def snapshot(course: Path) -> tuple:
    return files(course), rows(course)




def pod_available() -> bool:
    """Whether podlike.py's filter runs here and bubblewrap does outside it (the grading host)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return False
    probe = "from autograder.grading.sandbox import _probe_bubblewrap; print(_probe_bubblewrap()[0] is not None)"
    outside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return outside.stdout.strip() == "True"


def graded_by_the_host(folder: Path) -> Path:
    """The class graded by the grading host (``autograder grade``), ann's written answer then graded by
    hand, in ``folder``: tests work on copies (:func:`copy`; the state files hold digests of contents,
    never paths)."""
    made = course(folder)
    proc = autograder(made)
    assert proc.returncode == 0, proc.stdout
    grade_by_hand(made, "ann")
    return made


def copy(graded: Path, folder: Path) -> Path:
    return writable_copy(graded, folder / "course")


# The two fixtures both doors modules use (each module imports them). The host-graded class is built once per
# test run, whichever module (and xdist worker) asks first; every test changes a copy of it.
@pytest.fixture(scope="session")
def host_graded(tmp_path_factory) -> Path:
    """:func:`graded_by_the_host`, once per test run (:func:`run_cache.built_once`); read-only."""
    return built_once(tmp_path_factory, "doors-host-graded", graded_by_the_host) / "course"


@pytest.fixture
def graded(host_graded, tmp_path) -> Path:
    """A copy of the host-graded class for one test to change."""
    return copy(host_graded, tmp_path)
