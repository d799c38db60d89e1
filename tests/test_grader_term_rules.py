"""What ``autograder grade`` owes an nbgrader term: timestamps, late penalties, files nbgrader needs
later, regrades that follow every input, and a command line with clear errors and exit statuses.

All on the toy course (seconds per run); the whole term with real users is ``tests/test_term.py``.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import toy
from autograder.grading import batch, state
from autograder.grading.batch import Options, run
from autograder.grading.timestamps import parse_timestamp, read_timestamp

BIN = str(Path(sys.executable).parent)


@pytest.fixture
def course(tmp_path):
    return toy.copy_course(toy.template(), tmp_path / "course")


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _grade(course, **kw):
    report = course / "report.jsonl"
    status = run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False, **kw))
    return status, _rows(report)


def _score(rows, student, grade_id="test_double"):
    (row,) = [r for r in rows if r["student"] == student and r["grade_id"] == grade_id]
    return row["score"]


# --- timestamps --------------------------------------------------------------------------------

def test_parse_timestamp_matches_nbgrader():
    from nbgrader.utils import parse_utc
    for text in ["2026-11-30 20:41:32.123456 UTC", "2026-11-30 22:00:00 +0100", "2026-11-30T20:41:32",
                 "2026-11-30 20:41:32.5 America/New_York"]:
        assert parse_timestamp(text) == parse_utc(text)


@pytest.mark.parametrize("content", [
    b"my dog ate my homework", b"\xff\xfe\x00garbage", b"/etc/passwd", b"2026-11-30 12:00:00 /etc/passwd",
    b"2026-11-30 12:00:00 ../../../etc/localtime", b"9" * 5000, b"2026-13-45 99:99:99", b"[" * 900,
])
def test_unusable_timestamp_is_missing_with_a_reason(tmp_path, content):
    (tmp_path / "timestamp.txt").write_bytes(content)
    got = read_timestamp(tmp_path)
    assert got.value is None and "timestamp.txt" in got.problem and "treated as missing" in got.problem


def test_timestamp_that_is_a_link_or_a_folder_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("2026-11-30 12:00:00 UTC")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "timestamp.txt").symlink_to(target)
    assert read_timestamp(tmp_path / "a").problem.endswith("it is a symbolic link (not followed); treated as missing")
    (tmp_path / "b" / "timestamp.txt").mkdir(parents=True)
    assert "not a regular file" in read_timestamp(tmp_path / "b").problem
    assert read_timestamp(tmp_path / "c") == read_timestamp(tmp_path / "c")  # absent: no problem
    assert read_timestamp(tmp_path / "c").problem is None


def test_hostile_timestamps_do_not_stop_the_batch(course, capsys):
    hostile = {"words": b"handed in on time, promise", "bytes": b"\xff\xfe\xfa", "path": b"/etc/shadow",
               "zone": b"2026-11-30 12:00:00 /dev/zero"}
    for student, content in hostile.items():
        folder = toy.submit(course, student, toy.honest_answers()).parent
        (folder / "timestamp.txt").write_bytes(content)
    folder = toy.submit(course, "linked", toy.honest_answers()).parent
    (folder / "timestamp.txt").symlink_to("/etc/hostname")
    toy.submit(course, "plain", toy.honest_answers())
    status, rows = _grade(course)
    assert status == batch.EXIT_OK
    err = capsys.readouterr().err
    for student in [*hostile, "linked"]:
        assert _score(rows, student) == 2.0  # graded like everyone else
        (problem,) = [r for r in rows if r["student"] == student and r["status"] == "bad_timestamp"]
        assert "treated as missing" in problem["feedback"] and problem["notebook"] == "timestamp.txt"
        assert f"submitted/{student}/toy/timestamp.txt" in err
        # autograded/ gets the file as it is (release_feedback only logs it), never what a link points to
        carried = (course / "autograded" / student / "toy" / "timestamp.txt").read_bytes()
        assert carried == (b"" if student == "linked" else hostile[student])
    assert _score(rows, "plain") == 2.0
    assert not [r for r in rows if r["student"] == "plain" and r["status"] == "bad_timestamp"]


def test_nbgrader_autograde_reads_timestamps_the_same_way(tmp_path, caplog):
    """nbgrader 0.9.6 crashes on an unparseable timestamp (CourseDirectory.fail does not exist)."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.grading import nbgrader_bridge
    import nbgrader.apps.api
    import nbgrader.apps.autogradeapp
    import nbgrader.converters
    original = CourseDirectory.get_existing_timestamp
    modules = (nbgrader.apps.api, nbgrader.apps.autogradeapp, nbgrader.converters)
    converters = [module.Autograde for module in modules]
    try:
        nbgrader_bridge.install(Config())
        (tmp_path / "timestamp.txt").write_text("yesterday-ish")
        assert CourseDirectory().get_existing_timestamp(str(tmp_path)) is None
        (tmp_path / "timestamp.txt").write_text("2026-11-30 12:00:00 UTC")
        assert CourseDirectory().get_existing_timestamp(str(tmp_path)) == datetime.datetime(2026, 11, 30, 12)
    finally:
        CourseDirectory.get_existing_timestamp = original
        for module, converter in zip(modules, converters):
            module.Autograde = converter


# --- late penalties and the files nbgrader needs later ------------------------------------------

def _stamp(folder: Path, when: datetime.datetime):
    (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    (folder / "submission_secret.txt").write_text("s" * 128)


def _set_due(course: Path, due: datetime.datetime):
    from nbgrader.api import Gradebook
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        gb.update_or_create_assignment("toy", duedate=due)


def _penalties(course: Path) -> dict:
    from nbgrader.api import Gradebook
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        return {s.student.id: (s.notebooks[0].late_submission_penalty, s.notebooks[0].score)
                for s in gb.assignment_submissions("toy")}


@pytest.mark.parametrize("policy", ["zero", "none"])
def test_late_penalty_as_nbgraders_plugin(course, policy, capsys):
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"c.LateSubmissionPlugin.penalty_method = {policy!r}\n")
    due = datetime.datetime(2026, 11, 30, 12, 0)
    _set_due(course, due)
    _stamp(toy.submit(course, "early", toy.honest_answers()).parent, due - datetime.timedelta(minutes=1))
    _stamp(toy.submit(course, "late", toy.honest_answers()).parent, due + datetime.timedelta(seconds=1))
    status, rows = _grade(course)
    assert status == batch.EXIT_OK
    penalties = _penalties(course)
    assert penalties["early"] == (None, 3.0)  # 2 + 1 autograded points, written answer not graded yet
    if policy == "zero":
        assert penalties["late"] == (3.0, 3.0)
        assert "late submitted toy late: late penalty 3 points" in capsys.readouterr().err
    else:
        assert penalties["late"] == (None, 3.0)
    # nbgrader's release_feedback needs both files beside the autograded notebooks.
    for student in ("early", "late"):
        for name in ("timestamp.txt", "submission_secret.txt"):
            assert (course / "autograded" / student / "toy" / name).read_bytes() == \
                (course / "submitted" / student / "toy" / name).read_bytes()
    # An unchanged rerun keeps the penalty; a later due date (a deadline extension) lifts it.
    _set_due(course, due + datetime.timedelta(days=1))
    status, _ = _grade(course)
    assert "unchanged" in capsys.readouterr().out
    assert _penalties(course)["late"] == (None, 3.0)


# --- regrades follow every input ---------------------------------------------------------------

def _copy_packages(tmp_path: Path) -> list:
    """Copies of the two packages' fingerprinted files, so the test can change them."""
    roots = state._package_roots()
    copies = [tmp_path / "pkg" / "autograder", tmp_path / "pkg" / "course"]
    for root, copy in zip(roots, copies):
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return copies


def test_every_input_of_a_score_triggers_a_regrade(course, tmp_path, monkeypatch, capsys):
    copies = _copy_packages(tmp_path)
    # The fingerprint every door's "unchanged" uses (autograder/grading/state.py).
    monkeypatch.setattr(state, "_package_roots", lambda: copies)
    toy.submit(course, "ann", toy.honest_answers())
    _grade(course)
    capsys.readouterr()
    _grade(course)
    assert "graded 0 notebooks (1 unchanged" in capsys.readouterr().out
    package, student_package = copies
    key = sorted(package.glob("exercises/*/key.py"))[0]
    changes = {
        "answer key": lambda: key.write_text(key.read_text() + "\n# corrected\n"),
        "check": lambda: (package / "checks" / "_judge.py").write_text(
            (package / "checks" / "_judge.py").read_text() + "\n"),
        "reference": lambda: (package / "reference" / "kl.py").write_text(
            (package / "reference" / "kl.py").read_text() + "\n"),
        "exercise data file": lambda: (key.parent / "cases.json").write_text("[]"),
        "grader": lambda: (package / "grading" / "worker.py").write_text(
            (package / "grading" / "worker.py").read_text() + "\n"),
        "student package": lambda: (student_package / "__init__.py").write_text(
            (student_package / "__init__.py").read_text() + "\n"),
        "config": lambda: (course / "nbgrader_config.py").write_text(
            (course / "nbgrader_config.py").read_text() + "c.Execute.timeout = 21\n"),
        "source notebook": lambda: (course / "source" / "toy" / "90_toy.ipynb").write_text(
            (course / "source" / "toy" / "90_toy.ipynb").read_text().replace("Double things.", "Double it.")),
        "grader version": lambda: monkeypatch.setattr(
            state, "_versions", lambda real=state._versions: {**real(), "module6-instructor": "9.9.9"}),
    }
    for what, change in changes.items():
        change()
        _grade(course)
        assert "graded 1 notebooks (0 unchanged" in capsys.readouterr().out, what
        _grade(course)
        assert "graded 0 notebooks (1 unchanged" in capsys.readouterr().out, what
    # What never affects a score does not: a rubric.
    rubric = sorted(package.glob("exercises/*/rubric.md"))[0]
    rubric.write_text(rubric.read_text() + "\nA note for graders.\n")
    _grade(course)
    assert "graded 0 notebooks (1 unchanged" in capsys.readouterr().out


# --- the command line --------------------------------------------------------------------------

def _cli(*args, cwd, extra_path: Path | None = None):
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(cwd)}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_version():
    from importlib import metadata
    proc = _cli("--version", cwd=Path.cwd())
    assert proc.returncode == 0 and proc.stdout.strip() == \
        f"autograder (module6-instructor) {metadata.version('module6-instructor')}"


def test_one_line_errors_and_no_gradebook_created(tmp_path, course):
    def error(proc):
        assert proc.returncode == 2, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("autograder: error: "), proc.stderr
        assert "Traceback" not in proc.stderr
        return lines[0]

    (tmp_path / "elsewhere").mkdir()
    assert "not a course directory" in error(_cli("grade", "toy", cwd=tmp_path / "elsewhere"))
    assert "not a directory" in error(_cli("grade", "toy", "--course-dir", str(tmp_path / "nope"), cwd=tmp_path))
    assert "--jobs must be at least 1" in error(_cli("grade", "toy", "--jobs", "0", cwd=course))
    assert "--timeout must be a positive" in error(_cli("grade", "toy", "--timeout", "-1", cwd=course))
    assert "no assignment 'nope' in this course" in error(_cli("grade", "nope", cwd=course))

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copyfile(course / "nbgrader_config.py", bare / "nbgrader_config.py")
    line = error(_cli("grade", "toy", cwd=bare))
    assert "no gradebook at" in line and "nbgrader generate_assignment ASSIGNMENT --force" in line
    assert not (bare / "gradebook.db").exists()

    # A PostgreSQL gradebook whose driver is missing, or whose server does not answer.
    blocked = tmp_path / "blocked"
    (blocked / "psycopg2").mkdir(parents=True)
    (blocked / "psycopg2" / "__init__.py").write_text("raise ImportError('No module named psycopg2')\n")
    (blocked / "distributed").mkdir()
    (blocked / "distributed" / "__init__.py").write_text("raise ImportError('No module named distributed')\n")
    pg = tmp_path / "pg"
    pg.mkdir()
    (pg / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text()
                                           + "c.CourseDirectory.db_url = 'postgresql+psycopg2://who:secret@127.0.0.1:1/x'\n")
    line = error(_cli("grade", "toy", cwd=pg, extra_path=blocked))
    assert "driver is missing" in line and "module6-instructor[postgres]" in line and "secret" not in line
    line = error(_cli("grade", "toy", cwd=pg))
    assert "cannot reach the gradebook at postgresql+psycopg2://who:***@127.0.0.1:1/x" in line

    line = error(_cli("grade", "toy", "--dask", "tcp://127.0.0.1:1", cwd=course, extra_path=blocked))
    assert "pip install 'module6-instructor[dask]'" in line


def test_exit_status_is_documented():
    proc = _cli("grade", "--help", cwd=Path.cwd())
    assert proc.returncode == 0
    for status in ("0  every notebook was graded", "2  nothing was graded", "3  the batch ran but some"):
        assert status in proc.stdout


def test_one_command_for_every_tool():
    for tool, marker in (("release", "--check"), ("selfstudy", "output folder"), ("demo", "--grader")):
        proc = _cli(tool, "--help", cwd=Path.cwd())
        assert proc.returncode == 0 and marker in proc.stdout, (tool, proc.stdout, proc.stderr)
    listed = _cli("--help", cwd=Path.cwd()).stdout
    assert all(name in listed for name in ("grade", "release", "selfstudy", "demo"))
