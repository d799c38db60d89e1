"""Issue 38's acceptance test: Module 6 added, from the installed wheel, to a course someone already runs.

The course ``stat-490`` (tests/plain_course.py) has its own course id, exchange root and gradebook (SQLite,
and PostgreSQL through ``MODULE6_PG_URL``), and a plain nbgrader assignment ``ps1`` (``assert`` tests) that
two students (real Unix users, as in tests/test_term.py) fetched, did and submitted through the exchange,
collected and autograded by nbgrader in a kernel. Then, in a fresh virtualenv holding the two wheels
installed NON-editable (tests/dist_support.py; nothing of this checkout is importable there):

1. ``autograder add-to-course COURSE --term 2026-fall``;
2. a short term of ``module6`` through nbgrader's own commands in that environment: generate_assignment,
   release_assignment, fetch and submit as the two students (two notebooks answered each), collect,
   autograde (the sandbox), generate_feedback, release_feedback;
3. ``nbgrader autograde ps1 --force`` again, and ``nbgrader export``: both assignments, every student, ps1's
   grades as before;
4. the kit's commands in the course: ``autograder grade module6``, ``report``, ``similarity``, ``variants``.

The gradebook is SQLite here and PostgreSQL in tests/test_add_to_course_postgres.py (the same tests, a module
of its own so that the two terms run on two workers at once).
"""

from __future__ import annotations

import csv
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

import plain_course
from autograder.demo.simulate import Profile, submission
from pg_support import fresh_database
from tests.dist_support import fresh_venv, shared_wheels
from test_term import Users, _need_root, _student_env, student_python

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]

#: Two notebooks each student answers: code answers with hidden tests, and a written answer.
STEMS = ("09_sequence_ppl", "15_stable_log_softmax")
PROFILES = {"ann": "solutions", "ben": "untouched"}
TIMES: dict = {}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtualenv with both wheels installed non-editable (and the PostgreSQL driver)."""
    _need_root()
    started = time.perf_counter()
    wheels = shared_wheels(tmp_path_factory)
    python = fresh_venv(tmp_path_factory.mktemp("instructor") / "venv", wheels.student, wheels.instructor,
                        "psycopg2-binary>=2.9")
    TIMES["venv"] = time.perf_counter() - started
    return python


def _database(kind: str):
    """(db_url, cleanup) of a fresh gradebook database of ``kind``."""
    if kind == "sqlite":
        return None, lambda: None
    return fresh_database("module6_course")


class Course:
    """The course directory and how to run commands in it, with the venv's interpreter."""

    def __init__(self, root: Path, python: Path, exchange: Path):
        self.root, self.python, self.exchange = root, python, exchange
        self.log: list = []

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.pop("JUPYTER_CONFIG_DIR", None)
        env["PATH"] = f"{self.python.parent}:{env.get('PATH', '')}"  # nbgrader's alembic, the kernels' python
        env["MPLBACKEND"] = "Agg"
        return env

    def run(self, *args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        proc = subprocess.run([str(self.python), *args], cwd=self.root, env=self.env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        self.log.append((args[:3], round(time.perf_counter() - started, 1), proc.returncode))
        if check:
            assert proc.returncode == 0, f"{' '.join(args)} (exit {proc.returncode}):\n{proc.stdout[-5000:]}"
        return proc

    def nbgrader(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run("-m", "nbgrader", *args, **kw)

    def as_student(self, user: str, home: Path, python: str, *args: str) -> subprocess.CompletedProcess:
        env = _student_env(user, home)
        proc = subprocess.run([shutil.which("runuser"), "-u", user, "--", python, "-m", "nbgrader", *args,
                               f"--course={plain_course.COURSE_ID}", f"--Exchange.root={self.exchange}"],
                              cwd=home, env=env, text=True, capture_output=True, timeout=300)
        assert proc.returncode == 0, f"{user}: nbgrader {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
        return proc

    def export(self, name: str) -> dict:
        self.nbgrader("export", "--to", str(self.root / name))
        with (self.root / name).open() as handle:
            return {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}


def _hand_in(course: Course, students: dict, python: str, assignment: str, write) -> None:
    """Each student fetches ``assignment``, ``write(role, user, folder)`` does their work, they submit it."""
    for role, (user, home) in students.items():
        course.as_student(user, home, python, "fetch_assignment", assignment)
        folder = home / assignment
        write(role, user, folder)
        record = pwd.getpwnam(user)
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, record.pw_uid, record.pw_gid)
        course.as_student(user, home, python, "submit", assignment)


def _ps1_work(course: Course):
    def write(role, user, folder):
        nb = plain_course.answered(folder / "ps1.ipynb", {"ann": "ann", "ben": "bob"}[role])
        nbformat.write(nb, str(folder / "ps1.ipynb"))
    return write


def _module6_work(course: Course):
    def write(role, user, folder):
        # A student hands in the notebooks they did: the others are "not submitted" (scored zero, not run).
        for path in folder.glob("*.ipynb"):
            if path.stem not in STEMS:
                path.unlink()
        for stem in STEMS:
            nb = submission(stem, course.root, Profile.parse(PROFILES[role]), user)
            nbformat.write(nb, str(folder / f"{stem}.ipynb"))
    return write


def ps1_graded_by_nbgrader(course: Course, students: dict, student_py: str) -> dict:
    """The course before Module 6: ps1 released, done, submitted, collected and graded by nbgrader in a
    kernel; its export then (``(assignment, student) -> row``)."""
    course.nbgrader("generate_assignment", "ps1")
    course.nbgrader("release_assignment", "ps1")
    _hand_in(course, students, student_py, "ps1", _ps1_work(course))
    course.nbgrader("collect", "ps1")
    course.nbgrader("autograde", "ps1")
    return course.export("before.csv")


def term_of(kind: str, venv: Path, tmp_path_factory):
    """The whole term in a course whose gradebook is ``kind`` (a generator for a module fixture)."""
    started = time.perf_counter()
    db_url, drop = _database(kind)
    users = Users()
    exchange = Path(tempfile.mkdtemp(prefix="stat490-exchange-"))
    exchange.chmod(0o777)
    try:
        result = _run_term(tmp_path_factory.mktemp(f"stat490-{kind}"), venv, exchange, users, db_url)
        print("\n" + "\n".join(f"  {' '.join(args)}: {seconds} s" for args, seconds, _ in result["course"].log))
        yield result
    finally:
        users.remove()
        shutil.rmtree(exchange, ignore_errors=True)
        drop()
        TIMES[kind] = time.perf_counter() - started
        print(f"\ntest_add_to_course[{kind}]: {TIMES[kind]:.0f} s (venv {TIMES.get('venv', 0):.0f} s)")


@pytest.fixture(scope="module")
def term(venv, tmp_path_factory):
    """SQLite here; tests/test_add_to_course_postgres.py runs the same tests on PostgreSQL (on another worker)."""
    yield from term_of("sqlite", venv, tmp_path_factory)


def _run_term(base: Path, python: Path, exchange: Path, users: Users, db_url: str | None) -> dict:
    extra = f"c.Exchange.root = {str(exchange)!r}\n" + (f"c.CourseDirectory.db_url = {db_url!r}\n" if db_url else "")
    course = Course(plain_course.write_course(base / "stat-490", extra=extra), python, exchange)
    students = {role: users.add(role) for role in PROFILES}
    student_py = student_python(*students["ann"])
    ids = {role: user for role, (user, _) in students.items()}

    before = ps1_graded_by_nbgrader(course, students, student_py)
    config_before = (course.root / "nbgrader_config.py").read_text()

    # Module 6, added from the installed wheel.
    added = course.run("-m", "autograder", "add-to-course", str(course.root), "--term", "2026-fall")
    again = course.run("-m", "autograder", "add-to-course", str(course.root))

    # A short term of module6, through nbgrader's commands.
    course.nbgrader("generate_assignment", "module6")
    course.nbgrader("release_assignment", "module6")
    _hand_in(course, students, student_py, "module6", _module6_work(course))
    course.nbgrader("collect", "module6")
    autograded = course.nbgrader("autograde", "module6")
    course.nbgrader("generate_feedback", "module6")
    course.nbgrader("release_feedback", "module6")
    ps1_again = course.nbgrader("autograde", "ps1", "--force")
    after = course.export("after.csv")

    # The kit's own commands, in the same course.
    kit = {name: course.run("-m", "autograder", *args, check=False) for name, args in {
        # Without --force: what nbgrader's door graded is not graded again (the state both doors share).
        "grade": ("grade", "module6", "--no-progress", "--jobs", "2"),
        "report": ("report", "module6"),
        "similarity": ("similarity", "module6"),
        "variants": ("variants", "module6", "--student", ids["ann"]),
        "grade_ps1": ("grade", "ps1", "--no-progress"),
    }.items()}
    return {"course": course, "ids": ids, "before": before, "after": after, "added": added, "again": again,
            "config_before": config_before, "autograded": autograded, "ps1_again": ps1_again, "kit": kit,
            "exchange": exchange}


def test_add_to_course_from_the_wheel_installs_the_module_and_one_block(term):
    course = term["course"]
    assert "added Module 6 kit" in term["added"].stdout
    assert "nothing to do" in term["again"].stdout
    config = (course.root / "nbgrader_config.py").read_text()
    assert config.startswith(term["config_before"]) and config.count("# >>> Module 6 kit") == 1
    assert 'c.Module6.term = "2026-fall"' in config
    for assignment, count in (("module6", 20), ("module6_further", 10)):
        assert len(list((course.root / "source" / assignment).glob("*.ipynb"))) == count
    assert (course.root / "module6_kit" / "manifest.json").is_file()
    # The venv's autograder is the wheel's, not this checkout's.
    where = course.run("-I", "-c", "import autograder; print(autograder.__file__)").stdout
    assert "site-packages" in where and str(Path(__file__).resolve().parents[1]) not in where


def test_the_module_is_graded_in_the_sandbox_through_nbgrader(term):
    output = term["autograded"].stdout
    for user in term["ids"].values():
        for stem in STEMS:
            assert f"{user}/{stem} graded in the sandbox" in output
    after, ids = term["after"], term["ids"]
    assert float(after[("module6", ids["ann"])]["raw_score"]) > 0
    assert float(after[("module6", ids["ben"])]["raw_score"]) == 0
    # Feedback went out through the course's own exchange, under its own course id.
    released = list((term["exchange"] / plain_course.COURSE_ID / "feedback").rglob("*.html"))
    assert len(released) == len(ids) * len(STEMS), released


def test_ps1_keeps_nbgrader_s_grades_and_export_holds_both_assignments(term):
    before, after, ids = term["before"], term["after"], term["ids"]
    assert {k for k in after if k[0] == "ps1"} == {("ps1", user) for user in ids.values()}
    assert {k for k in after if k[0] == "module6"} == {("module6", user) for user in ids.values()}
    for user in ids.values():
        for field in ("raw_score", "score", "max_score"):
            assert after[("ps1", user)][field] == before[("ps1", user)][field], (user, field)
    assert float(before[("ps1", ids["ann"])]["raw_score"]) == plain_course.ANSWERS["ann"][1]
    assert float(before[("ps1", ids["ben"])]["raw_score"]) == plain_course.ANSWERS["bob"][1]
    assert "graded in the sandbox" not in term["ps1_again"].stdout  # nbgrader's own Autograde, in a kernel


def test_the_kit_s_commands_work_in_the_course(term):
    kit = term["kit"]
    for name in ("grade", "report", "similarity", "variants"):
        assert kit[name].returncode == 0, (name, kit[name].stdout[-3000:])
    assert (term["course"].root / "reports").is_dir()
    assert kit["grade_ps1"].returncode == 2 and "'ps1' is not a Module 6 assignment" in kit["grade_ps1"].stdout
