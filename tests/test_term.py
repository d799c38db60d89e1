"""A whole nbgrader term, end to end, with real Unix users and a real exchange directory.

The instructor (root, in a scratch copy of the course) releases the assignment; three students,
each a Unix user created here with a home of their own, fetch it, do it and submit it with nbgrader
(one after the due date); the instructor collects, grades with ``autograder grade``, grades again
with plain ``nbgrader autograde`` and with formgrader's Autograde button (a real Jupyter server, its
HTTP API), and gets the same gradebook rows and the same autograded notebooks each time; grades a
written answer by hand through formgrader's API; generates and releases the feedback, which the
students fetch and read (no hidden test code in it); and exports the grades with nbgrader's late
penalty ("zero") applied.

Creating users needs root: the test skips without it, but fails under ``CI=true`` (``.ci/run`` runs
as root).
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.scratch_course import ASSIGNMENT, COURSE_ID, make_course_copy, run_nbgrader
from autograder.demo.simulate import Profile, submission
from autograder.insight.results import load_rows
from conftest import with_lazy_imports

# One term at a time, on the worker that runs nbgrader (the module fixture must not run on two workers).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

STEM = "09_sequence_ppl"  # code answers, hidden tests and a written (manually graded) answer
BIN = str(Path(sys.executable).parent)
STUDENT_PYTHON: list = []  # set once the first student exists
COMMENT = "A person read this: the denominator is the point."


def _need_root():
    if os.geteuid() == 0 and shutil.which("useradd") and shutil.which("runuser"):
        return
    reason = "the term test creates Unix users: it needs root, useradd and runuser"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: .ci/run runs as root)")
    pytest.skip(reason)


class Users:
    """Unix users made for this test (unique names), removed at the end."""

    def __init__(self):
        self.made: list = []
        self.tag = secrets.token_hex(3)

    def add(self, role: str) -> tuple:
        name = f"m6{role}{self.tag}"
        home = Path(tempfile.mkdtemp(prefix=f"module6-home-{role}-"))
        subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
                       check=True, capture_output=True)
        self.made.append(name)
        record = pwd.getpwnam(name)
        os.chown(home, record.pw_uid, record.pw_gid)
        home.chmod(0o700)
        return name, home

    def remove(self):
        for name in self.made:
            home = Path(pwd.getpwnam(name).pw_dir)
            subprocess.run(["userdel", name], check=False, capture_output=True)
            shutil.rmtree(home, ignore_errors=True)


def _student_env(user: str, home: Path) -> dict:
    import sysconfig

    # The test's interpreter may live where other users cannot go (a pyenv under /root): students run
    # an interpreter of the same version with the environment's packages on their path instead.
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
            "PYTHONPATH": with_lazy_imports(os.pathsep.join(paths))}


#: The hub's student environment (deploy/hub/localhub.py's ENVS): outside any checkout, so students can run
#: it even where ``make hub`` (or the hub test, meanwhile) has closed this checkout to other accounts.
HUB_STUDENT_ENV = Path(os.environ.get("MODULE6_HUB_ENVS", "/opt/module6-hub/envs")) / "student"


def student_python(user: str, home: Path) -> str:
    """An interpreter the student ``user`` can run that imports nbgrader: the hub's student environment
    when it is built, else this environment's packages on an interpreter of the same version."""
    if (HUB_STUDENT_ENV / ".stamp").is_file():
        return str(HUB_STUDENT_ENV / "bin" / "python")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in dict.fromkeys(candidates):
        if not os.path.exists(candidate):
            continue
        probe = subprocess.run([shutil.which("runuser"), "-u", user, "--", candidate, "-c", "import nbgrader"],
                               cwd=home, env=_student_env(user, home), capture_output=True, timeout=120)
        if probe.returncode == 0:
            return candidate
    pytest.fail(f"no Python {version} that the student user can run imports nbgrader (tried {candidates})")


def as_student(user: str, home: Path, exchange: Path, *args: str) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` as the student ``user`` in their home (nbgrader reads USER for the exchange)."""
    env = _student_env(user, home)
    if STUDENT_PYTHON[0].startswith(str(HUB_STUDENT_ENV)):
        env.pop("PYTHONPATH")
    proc = subprocess.run([shutil.which("runuser"), "-u", user, "--", STUDENT_PYTHON[0], "-m", "nbgrader", *args,
                           f"--course={COURSE_ID}", f"--Exchange.root={exchange}"],
                          cwd=home, env=env, text=True, capture_output=True, timeout=300)
    assert proc.returncode == 0, f"{user}: nbgrader {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
    return proc


def snapshot(course: Path) -> dict:
    """Everything the gradebook says about the submissions: each grade, each notebook's penalty."""
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), COURSE_ID) as gb:
        for record in gb.assignment_submissions(ASSIGNMENT):
            for notebook in record.notebooks:
                key = (record.student.id, notebook.name)
                found[key] = {
                    "late_penalty": notebook.late_submission_penalty,
                    "grades": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade) for g in notebook.grades},
                    "timestamp": str(record.timestamp),
                }
    return found


def autograded_files(course: Path) -> dict:
    root = course / "autograded"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


class Formgrader:
    """A Jupyter server with nbgrader's formgrader in the course directory, driven over HTTP."""

    def __init__(self, course: Path, log: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.token = secrets.token_hex(16)
        env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
        env.pop("JUPYTER_CONFIG_DIR", None)
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "server", "--allow-root", "--no-browser", f"--port={self.port}",
             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={course}"],
            cwd=course, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                assert self.call("GET", "/formgrader/api/status")["status"] is True
                return
            except (OSError, ValueError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("formgrader did not start:\n" + log.read_text()[-3000:])
                time.sleep(0.5)

    def call(self, method: str, path: str, body=None, timeout: float = 600):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode())

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    _need_root()
    users = Users()
    exchange = Path(tempfile.mkdtemp(prefix="module6-exchange-"))
    exchange.chmod(0o777)
    base = tmp_path_factory.mktemp("term")
    try:
        yield _run_term(base, exchange, users)
    finally:
        users.remove()
        shutil.rmtree(exchange, ignore_errors=True)


def _run_term(base: Path, exchange: Path, users: Users) -> dict:
    course = make_course_copy(base / "course", stems=[STEM])
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"\n# The term test's exchange and late policy\nc.Exchange.root = {str(exchange)!r}\n"
                     "c.LateSubmissionPlugin.penalty_method = 'zero'\n")
    run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    run_nbgrader(course, "release_assignment", ASSIGNMENT)

    # Students: fetch, work, submit. ann and ben on time; cat after the due date.
    profiles = {"ann": "solutions", "ben": "untouched", "cat": "solutions"}
    students = {}
    for role in profiles:
        students[role] = users.add(role)
    STUDENT_PYTHON[:] = [student_python(*students["ann"])]
    for role, (user, home) in students.items():
        as_student(user, home, exchange, "fetch_assignment", ASSIGNMENT)
        assert (home / ASSIGNMENT / f"{STEM}.ipynb").is_file()
    record = pwd.getpwnam
    for role, (user, home) in students.items():
        nb = submission(STEM, course, Profile.parse(profiles[role]), user)
        target = home / ASSIGNMENT / f"{STEM}.ipynb"
        nbformat.write(nb, str(target))
        os.chown(target, record(user).pw_uid, record(user).pw_gid)
    for role in ("ann", "ben"):
        as_student(*students[role], exchange, "submit", ASSIGNMENT)
    from nbgrader.api import Gradebook
    due = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), COURSE_ID) as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=due)
    time.sleep(1.5)
    as_student(*students["cat"], exchange, "submit", ASSIGNMENT)
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), COURSE_ID) as gb:
        for user, _ in students.values():  # the course's collect takes submissions of gradebook students only
            gb.update_or_create_student(user)
    run_nbgrader(course, "collect", ASSIGNMENT)
    ids = {role: user for role, (user, _) in students.items()}
    for user in ids.values():
        assert (course / "submitted" / user / ASSIGNMENT / "timestamp.txt").is_file()

    # 1. autograder grade
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    ours = subprocess.run([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--no-progress", "--jobs", "2"],
                          cwd=course, env=env, text=True, capture_output=True, timeout=900)
    after_ours = snapshot(course), autograded_files(course)
    report_rows = {"ours": load_rows(course, ASSIGNMENT)}  # what `autograder report` reads
    # 2. plain nbgrader autograde
    theirs = run_nbgrader(course, "autograde", ASSIGNMENT, "--force", check=False, timeout=900)
    after_theirs = snapshot(course), autograded_files(course)
    report_rows["theirs"] = load_rows(course, ASSIGNMENT)
    # 3. formgrader's Autograde button, then a written answer graded by hand
    server = Formgrader(course, base / "formgrader.log")
    try:
        button = server.call("POST", f"/formgrader/api/submission/{ASSIGNMENT}/{ids['ann']}/autograde", body={})
        after_button = snapshot(course), autograded_files(course)
        report_rows["button"] = load_rows(course, ASSIGNMENT)
        manual = _grade_written_answer(server, ids["ann"])
    finally:
        server.close()
    after_manual = snapshot(course)

    # As the README says, without --force: the pages are made from the gradebook every time.
    run_nbgrader(course, "generate_feedback", ASSIGNMENT)
    run_nbgrader(course, "release_feedback", ASSIGNMENT)
    feedback = {}
    for role, (user, home) in students.items():
        as_student(user, home, exchange, "fetch_feedback", ASSIGNMENT)
        pages = sorted((home / ASSIGNMENT / "feedback").rglob(f"{STEM}.html"))
        feedback[role] = pages[-1].read_text(encoding="utf-8") if pages else None
    run_nbgrader(course, "export", "--to", str(course / "grades.csv"))
    with (course / "grades.csv").open() as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle)}
    return {"course": course, "ids": ids, "ours": ours, "theirs": theirs, "button": button,
            "after_ours": after_ours, "after_theirs": after_theirs, "after_button": after_button,
            "report_rows": report_rows,
            "manual": manual, "after_manual": after_manual, "feedback": feedback, "grades": grades,
            "due": due}


def _grade_written_answer(server: Formgrader, student: str) -> dict:
    """Give full marks to ``student``'s written answer through formgrader's API, as its page does."""
    (record,) = [n for n in server.call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{STEM}")
                 if n["student"] == student]
    grades = server.call("GET", f"/formgrader/api/grades?submission_id={record['id']}")
    (written,) = [g for g in grades if g["name"].startswith("explain_")]
    assert written["needs_manual_grade"] and written["auto_score"] is None
    updated = server.call("PUT", f"/formgrader/api/grade/{written['id']}",
                          body={"manual_score": written["max_score"], "extra_credit": None})
    (comment,) = [c for c in server.call("GET", f"/formgrader/api/comments?submission_id={record['id']}")
                  if c["name"] == written["name"]]
    server.call("PUT", f"/formgrader/api/comment/{comment['id']}", body={"manual_comment": COMMENT})
    return {"name": written["name"], "max_score": written["max_score"], "updated": updated}


def test_every_grading_entry_point_gives_the_same_rows(term):
    assert term["ours"].returncode == 0, term["ours"].stdout + term["ours"].stderr
    assert term["theirs"].ok, term["theirs"].output[-4000:]
    assert term["button"]["success"], term["button"]
    rows, files = term["after_ours"]
    assert set(rows) == {(user, STEM) for user in term["ids"].values()}
    assert term["after_theirs"] == (rows, files)
    assert term["after_button"] == (rows, files)
    # nbgrader's own path really ran the sandboxed grader, not a kernel.
    assert "graded in the sandbox" in term["theirs"].output
    assert "Executing notebook with kernel" not in term["theirs"].output


def test_the_class_report_reads_every_door_alike(term):
    # `autograder report` reads the gradebook and autograded/: the same rows after each door.
    rows = term["report_rows"]
    assert rows["ours"] and rows["theirs"] == rows["ours"] and rows["button"] == rows["ours"]
    assert {r["student"] for r in rows["ours"]} == set(term["ids"].values())


def test_scores_late_penalty_and_files(term):
    rows, files = term["after_ours"]
    ids = term["ids"]
    auto = {role: sum(g[0] or 0 for g in rows[(user, STEM)]["grades"].values()) for role, user in ids.items()}
    assert auto["ann"] == auto["cat"] > 0 and auto["ben"] == 0
    assert rows[(ids["cat"], STEM)]["late_penalty"] == auto["cat"]  # "zero": the penalty is the score
    assert rows[(ids["ann"], STEM)]["late_penalty"] is None
    assert rows[(ids["ben"], STEM)]["late_penalty"] is None
    assert "late" in term["ours"].stderr and ids["cat"] in term["ours"].stderr
    for user in ids.values():
        for name in ("timestamp.txt", "submission_secret.txt"):
            assert files[f"{user}/{ASSIGNMENT}/{name}"] == \
                (term["course"] / "submitted" / user / ASSIGNMENT / name).read_bytes()


def test_manual_grade_through_formgrader(term):
    manual, ann = term["manual"], term["ids"]["ann"]
    assert manual["updated"]["manual_score"] == manual["max_score"] > 0
    grade = term["after_manual"][(ann, STEM)]["grades"][manual["name"]]
    assert grade == (None, manual["max_score"], False)


def test_students_fetch_feedback_without_hidden_tests(term):
    source = nbformat.read(str(term["course"] / "source" / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    hidden = []
    for cell in source.cells:
        text = cell.source
        while "### BEGIN HIDDEN TESTS" in text:
            start = text.index("### BEGIN HIDDEN TESTS") + len("### BEGIN HIDDEN TESTS")
            end = text.index("### END HIDDEN TESTS", start)
            hidden.extend(line.strip() for line in text[start:end].splitlines() if line.strip())
            text = text[end:].replace("### END HIDDEN TESTS", "", 1)
    assert hidden
    import html
    for role, page in term["feedback"].items():
        assert page is not None, f"{role} got no feedback"
        text = html.unescape(page)
        assert "BEGIN HIDDEN TESTS" not in text
        for line in hidden:
            assert line not in text, (role, line)
    # What a test cell may show is there: its one-line docstring.
    from autograder.grading.submission import test_docstring
    tests = [c for c in source.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert tests
    for cell in tests:
        shown = test_docstring(cell.source).strip('"')
        assert shown and shown in html.unescape(term["feedback"]["ann"])


def test_the_fetched_feedback_holds_the_comment_and_the_current_total(term):
    import html
    rows, _ = term["after_ours"]
    ann = term["ids"]["ann"]
    total = sum(g[0] or 0 for g in rows[(ann, STEM)]["grades"].values()) + term["manual"]["max_score"]
    page = html.unescape(term["feedback"]["ann"])
    assert COMMENT in page and f"{STEM} (Score: {float(round(total, 2))} / " in page  # nbgrader's own heading
    assert COMMENT not in html.unescape(term["feedback"]["ben"])


def test_export_applies_the_late_penalty(term):
    grades, ids, manual = term["grades"], term["ids"], term["manual"]
    rows, _ = term["after_ours"]
    auto_ann = sum(g[0] or 0 for g in rows[(ids["ann"], STEM)]["grades"].values())
    assert float(grades[ids["ann"]]["score"]) == pytest.approx(auto_ann + manual["max_score"])
    assert float(grades[ids["ann"]]["late_submission_penalty"]) == 0
    assert float(grades[ids["cat"]]["score"]) == 0  # late, with the "zero" policy
    assert float(grades[ids["cat"]]["late_submission_penalty"]) > 0
    assert float(grades[ids["ben"]]["score"]) == 0
