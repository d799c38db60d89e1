"""The kit's collect (autograder/grading/exchange.py) against the exchange attacks of issue 32.

Owners are real: the inbox entries are owned by accounts every Linux system has (``daemon``, ``bin``,
``sys``), which stand for students of that name, so the test needs root (chown) but makes no account.
Each attack is one inbox entry next to honest ones; the honest ones are always collected.
"""

from __future__ import annotations

import os
import shutil
import pwd
import stat
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.grading import receipts
from autograder.grading.exchange import KitCollect, KitReleaseAssignment

COURSE = "c1"
ASSIGNMENT = "ps1"
ANN, BEN, CAI = "daemon", "bin", "sys"  # three students, each a system account that owns their entries

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="entries owned by other accounts need root (chown)")


def _uid(name: str) -> int:
    return pwd.getpwnam(name).pw_uid


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> Path:
    """One gradebook with the assignment and the three students (made once: nbgrader's migrations are slow)."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}", COURSE) as gb:
        gb.add_assignment(ASSIGNMENT)
        for student in (ANN, BEN, CAI):
            gb.add_student(student)
    return path


@pytest.fixture
def course(tmp_path, gradebook):
    root, exchange = tmp_path / "course", tmp_path / "exchange"
    root.mkdir()
    (exchange / COURSE / "inbound").mkdir(parents=True)
    shutil.copyfile(gradebook, root / "gradebook.db")
    return root, exchange


def _config(root: Path, exchange: Path, **collect) -> Config:
    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = COURSE
    c.CourseDirectory.assignment_id = ASSIGNMENT
    c.Exchange.root = str(exchange)
    for key, value in collect.items():
        setattr(c.KitCollect, key, value)
    return c


def collect(root: Path, exchange: Path, **options) -> KitCollect:
    c = _config(root, exchange, **options)
    coursedir = CourseDirectory(config=c)
    app = KitCollect(coursedir=coursedir, authenticator=Authenticator(config=c), config=c)
    app.start()
    return app


def submit(exchange: Path, owner: str, name: str, text: str = "honest", *, files=None) -> Path:
    """An inbox entry ``name`` owned by ``owner`` holding ``work.ipynb`` (``text``) and ``files``."""
    entry = exchange / COURSE / "inbound" / name
    entry.mkdir()
    (entry / "work.ipynb").write_text(text)
    (entry / "timestamp.txt").write_text(name.split("+")[2] if name.count("+") >= 2 else "")
    for relative, content in (files or {}).items():
        (entry / relative).parent.mkdir(parents=True, exist_ok=True)
        (entry / relative).write_text(content)
    for path in [entry, *entry.rglob("*")]:
        os.chown(path, _uid(owner), -1, follow_symlinks=False)
    return entry


def collected(root: Path, student: str) -> str | None:
    path = root / "submitted" / student / ASSIGNMENT / "work.ipynb"
    return path.read_text() if path.is_file() else None


def reasons(app: KitCollect) -> dict:
    return {refused.entry: refused.reason for refused in app.refused}


def test_an_honest_class_is_collected_with_receipts(course):
    root, exchange = course
    for student in (ANN, BEN):
        submit(exchange, student, f"{student}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+abc{student}")
    app = collect(root, exchange)
    assert app.refused == []
    assert collected(root, ANN) == collected(root, BEN) == "honest"
    assert receipts.read_receipt(root / "submitted" / ANN / ASSIGNMENT) is not None


def test_a_submission_in_a_classmates_name_is_refused_and_the_classmates_own_is_collected(course):
    """`nbgrader submit --student bin` run by daemon: its entry is owned by daemon."""
    root, exchange = course
    submit(exchange, BEN, f"{BEN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+real")
    forged = f"{BEN}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+forged"
    submit(exchange, ANN, forged, "forged")
    app = collect(root, exchange)
    assert collected(root, BEN) == "honest"
    assert "owned by the account daemon, not by bin" in reasons(app)[forged]


def test_a_claimed_time_in_2099_never_beats_the_received_time(course):
    root, exchange = course
    older = submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+old", "first")
    time.sleep(0.05)
    submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+new", "second")
    assert os.lstat(older).st_ctime < time.time()
    app = collect(root, exchange)
    assert app.refused == [] and collected(root, ANN) == "second"


def test_a_malformed_entry_is_reported_and_the_rest_of_the_class_is_collected(course):
    root, exchange = course
    bad_time = f"{ANN}+{ASSIGNMENT}+not a time+x"
    submit(exchange, ANN, bad_time)
    submit(exchange, BEN, f"{BEN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+ok")
    short = exchange / COURSE / "inbound" / f"{CAI}+{ASSIGNMENT}"
    short.mkdir()
    app = collect(root, exchange)
    assert collected(root, BEN) == "honest" and collected(root, ANN) is None
    assert "not a time" in reasons(app)[bad_time]
    assert "is not <student>+<assignment>" in reasons(app)[short.name]
    listed = (root / "reports" / f"collect-{ASSIGNMENT}.csv").read_text()
    assert bad_time in listed and short.name in listed and "not a time" in listed


@pytest.mark.parametrize("student", ["<img src=x onerror=alert(1)>", "=HYPERLINK(1)", "..", "a b", "ann\u0301"])
def test_an_id_of_unsafe_form_is_refused(course, student):
    root, exchange = course
    entry = exchange / COURSE / "inbound" / f"{student}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+x"
    entry.mkdir()
    app = collect(root, exchange, check_owner=False)
    assert list(reasons(app)) == [entry.name]
    assert not (root / "submitted").exists() or not any((root / "submitted").iterdir())


def test_an_id_not_in_the_gradebook_is_reported_not_made_a_student(course):
    root, exchange = course
    entry = submit(exchange, ANN, f"mallory+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+x")
    app = collect(root, exchange, check_owner=False)
    assert "mallory is not a student of this course's gradebook" in reasons(app)[entry.name]
    assert not (root / "submitted" / "mallory").exists()
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        assert {s.id for s in gb.students} == {ANN, BEN, CAI}


@pytest.mark.parametrize("kind", ["symlink", "fifo", "foreign-file"])
def test_a_link_a_fifo_or_a_classmates_file_inside_a_submission_refuses_it_whole(course, tmp_path, kind):
    root, exchange = course
    secret = tmp_path / "instructor-only.txt"
    secret.write_text("the answer key")
    entry = submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+x")
    if kind == "symlink":
        os.symlink(secret, entry / "key.ipynb")
        os.chown(entry / "key.ipynb", _uid(ANN), -1, follow_symlinks=False)
    elif kind == "fifo":
        os.mkfifo(entry / "pipe.ipynb")
        os.chown(entry / "pipe.ipynb", _uid(ANN), -1)
    else:
        (entry / "planted.ipynb").write_text("planted")
        os.chown(entry / "planted.ipynb", _uid(BEN), -1)
    app = collect(root, exchange)
    assert collected(root, ANN) is None
    assert list(reasons(app)) == [entry.name]
    assert "the answer key" not in "".join(p.read_text() for p in root.rglob("*") if p.is_file() and p.suffix != ".db")


def test_a_refused_update_leaves_the_collected_submission_as_it_was(course):
    root, exchange = course
    submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+a", "first")
    collect(root, exchange)
    before = {p.relative_to(root): p.read_bytes() for p in (root / "submitted").rglob("*") if p.is_file()}
    time.sleep(0.05)
    newer = submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2026-12-01 11:00:00.000000 UTC+b", "second")
    os.symlink("/etc/hostname", newer / "link.ipynb")
    os.chown(newer / "link.ipynb", _uid(ANN), -1, follow_symlinks=False)
    app = collect(root, exchange, update=True)
    assert newer.name in reasons(app)
    after = {p.relative_to(root): p.read_bytes() for p in (root / "submitted").rglob("*") if p.is_file()}
    assert after == before


def test_update_takes_a_newer_submission_by_received_time(course):
    root, exchange = course
    submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+a", "first")
    collect(root, exchange)
    time.sleep(0.05)
    submit(exchange, ANN, f"{ANN}+{ASSIGNMENT}+2020-01-01 00:00:00.000000 UTC+b", "second")  # claims to be older
    assert collected(root, ANN) == "first"
    collect(root, exchange)  # without --update nothing changes, as in nbgrader
    assert collected(root, ANN) == "first"
    collect(root, exchange, update=True)
    assert collected(root, ANN) == "second"


def test_release_makes_the_inbox_sticky(tmp_path, gradebook):
    root, exchange = tmp_path / "course", tmp_path / "exchange"
    (root / "release" / ASSIGNMENT).mkdir(parents=True)
    (root / "release" / ASSIGNMENT / "work.ipynb").write_text("{}")
    exchange.mkdir()
    exchange.chmod(0o1777)
    shutil.copyfile(gradebook, root / "gradebook.db")
    c = _config(root, exchange)
    KitReleaseAssignment(coursedir=CourseDirectory(config=c), authenticator=Authenticator(config=c), config=c).start()
    mode = os.stat(exchange / COURSE / "inbound").st_mode
    assert stat.S_IMODE(mode) == 0o3733  # nbgrader's 2733 (write-only for others, setgid) plus sticky
    assert stat.S_IMODE(os.stat(exchange).st_mode) == 0o1777  # nbgrader's release keeps the sticky root

