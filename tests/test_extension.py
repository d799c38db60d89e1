"""``autograder extension``: an extension recorded in the course's gradebook is honoured by every door.

On the toy course (seconds): a late submission is penalised without an extension and not with one,
through ``autograder grade``, nbgrader's own Autograde converter (the code of ``nbgrader autograde`` and
formgrader's button) and ``nbgrader export``; taking it back brings the penalty back; bad arguments
change nothing and say what to do.
"""

from __future__ import annotations

import csv
import datetime
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import toy
from autograder import cli
from autograder.grading.batch import Options, run

DUE = datetime.datetime(2026, 11, 30, 12, 0)
FULL = 3.0  # the toy's autograded points; the 'zero' policy takes them all from a late notebook


def _stamp(folder: Path, when: datetime.datetime) -> None:
    (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    (folder / "submission_secret.txt").write_text("s" * 128)


def _hand_in(course: Path, student: str, when: datetime.datetime) -> None:
    _stamp(toy.submit(course, student, toy.honest_answers()).parent, when)


def _gradebook(course: Path, url: str | None = None):
    from nbgrader.api import Gradebook
    return Gradebook(url or "sqlite:///" + str(course / "gradebook.db"), "toy-course")


def _penalties(course: Path, url: str | None = None) -> dict:
    with _gradebook(course, url) as gb:
        return {s.student.id: s.notebooks[0].late_submission_penalty for s in gb.assignment_submissions("toy")}


def _extension(course: Path, student: str):
    with _gradebook(course) as gb:
        return gb.find_submission("toy", student).extension


def _grade(course: Path) -> None:
    assert run(Options("toy", course_dir=str(course), jobs=1, progress=False)) == 0


def _nbgrader_door(course: Path, students) -> None:
    """Grade as ``nbgrader autograde`` and formgrader's button do (nbgrader's Autograde converter, the
    course's config with the bridge), in this process where the toy check is registered."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.grading import nbgrader_bridge

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    nbgrader_bridge.install(config)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config, root=str(course)), config=config)
    for student in students:
        result = api.autograde("toy", student, force=True)
        assert result["success"], result.get("error", "") + result.get("log", "")


def _export(course: Path) -> dict:
    """``nbgrader export`` (its own CSV plugin) run in the course directory: student -> row."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "export"], cwd=course, capture_output=True, text=True,
                          env=toy.nbgrader_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with (course / "grades.csv").open(newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def _cli(capsys, *args) -> tuple:
    status = cli.main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The toy course with a due date, one submission on time and one three hours late, graded once."""
    course = toy.copy_course(toy.template(), tmp_path_factory.mktemp("extension") / "course")
    with (course / "nbgrader_config.py").open("a") as config:
        config.write("c.LateSubmissionPlugin.penalty_method = 'zero'\n")
    with _gradebook(course) as gb:
        gb.update_or_create_assignment("toy", duedate=DUE)
    _hand_in(course, "early", DUE - datetime.timedelta(minutes=5))
    _hand_in(course, "late", DUE + datetime.timedelta(hours=3))
    _grade(course)
    return course


@pytest.fixture
def course(graded, tmp_path):
    toy.register()
    return toy.copy_course(graded, tmp_path / "course")


def test_a_late_submission_is_penalised_without_and_not_with_an_extension_through_every_door(course, capsys):
    assert _penalties(course) == {"early": None, "late": FULL}
    assert float(_export(course)["late"]["late_submission_penalty"]) == FULL

    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--days", "1", "--course-dir", str(course))
    assert status == 0, err
    assert "late (toy): deadline 2026-12-01 12:00:00 UTC = due date 2026-11-30 12:00:00 UTC + extension 1 day" in out
    assert "submitted 2026-11-30 15:00:00 UTC: on time with this deadline" in out
    assert f"late penalty of {toy.STEM}: none (was 3 points)" in out
    assert _extension(course, "late") == datetime.timedelta(days=1)
    # At once, before any regrade: the gradebook's penalty, so nbgrader export's total.
    assert _penalties(course) == {"early": None, "late": None}
    assert float(_export(course)["late"]["late_submission_penalty"]) == 0.0
    _grade(course)  # autograder grade: unchanged submissions, penalties looked at again
    assert _penalties(course) == {"early": None, "late": None}
    _nbgrader_door(course, ["early", "late"])  # nbgrader autograde --force / formgrader's button
    assert _penalties(course) == {"early": None, "late": None}
    assert _extension(course, "late") == datetime.timedelta(days=1)  # a regrade keeps it

    # Taken back: the penalty returns at once and in every door.
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--remove", "--course-dir", str(course))
    assert status == 0, err
    assert "no extension (removed)" in out and f"late penalty of {toy.STEM}: 3 points (was none)" in out
    assert _extension(course, "late") is None and _penalties(course)["late"] == FULL
    assert float(_export(course)["late"]["late_submission_penalty"]) == FULL
    _nbgrader_door(course, ["late"])
    assert _penalties(course)["late"] == FULL
    _grade(course)
    assert _penalties(course)["late"] == FULL


def test_until_reads_times_as_nbgrader_does_and_an_extension_short_of_the_submission_still_penalises(course, capsys):
    # 13:30 in UTC+1 is 12:30 UTC: half an hour after the due date, still before 'late' submitted (15:00).
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--until", "2026-11-30 13:30 +0100",
                            "--course-dir", str(course))
    assert status == 0, err
    assert _extension(course, "late") == datetime.timedelta(minutes=30)
    assert "deadline 2026-11-30 12:30:00 UTC" in out and "late with this deadline" in out
    assert _penalties(course)["late"] == FULL
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--until",
                            "2026-11-30 17:00 Europe/Berlin", "--course-dir", str(course))
    assert status == 0, err
    assert _extension(course, "late") == datetime.timedelta(hours=4)  # 16:00 UTC
    assert _penalties(course)["late"] is None
    # No change asked: the deadline is shown, nothing is written.
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--course-dir", str(course))
    assert status == 0 and "deadline 2026-11-30 16:00:00 UTC" in out and "stored in the gradebook" not in out


def test_an_extension_given_before_the_work_arrives_counts_when_it_is_graded(course, capsys):
    from autograder import roster

    with _gradebook(course) as gb:
        roster.apply(gb, [roster.RosterStudent("absent", "Ada", "Lovelace", None),
                          roster.RosterStudent("slow", "Alan", "Turing", None)])
    status, out, err = _cli(capsys, "extension", "toy", "--student", "absent", "--days", "2", "--course-dir", str(course))
    assert status == 0, err
    assert "no graded submission of absent yet: the extension waits on an empty submission record" in out
    # Both hand in a day late; only the one with the extension is on time.
    _hand_in(course, "absent", DUE + datetime.timedelta(days=1))
    _hand_in(course, "slow", DUE + datetime.timedelta(days=1))
    _grade(course)
    assert _penalties(course)["absent"] is None and _penalties(course)["slow"] == FULL
    assert _extension(course, "absent") == datetime.timedelta(days=2)
    _nbgrader_door(course, ["absent", "slow"])
    assert _penalties(course)["absent"] is None and _penalties(course)["slow"] == FULL


def test_the_gradebook_is_the_one_the_configuration_names(course, tmp_path, capsys, monkeypatch):
    """Whatever c.CourseDirectory.db_url says (here in the instructor's own Jupyter config, as nbgrader reads
    it), the extension is recorded there: the file beside the course is not touched."""
    other = tmp_path / "elsewhere.db"
    shutil.copyfile(course / "gradebook.db", other)
    user = tmp_path / "jupyter"
    user.mkdir()
    (user / "nbgrader_config.py").write_text(f"c.CourseDirectory.db_url = 'sqlite:///{other}'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--days", "1", "--course-dir", str(course))
    assert status == 0, err
    assert _penalties(course, f"sqlite:///{other}")["late"] is None
    assert _penalties(course)["late"] == FULL and _extension(course, "late") is None
    # ... and a --Class.trait=value setting comes last, as for `autograder grade`.
    monkeypatch.delenv("JUPYTER_CONFIG_DIR")
    status, out, err = _cli(capsys, "extension", "toy", "--student", "late", "--remove", "--course-dir", str(course),
                            f"--CourseDirectory.db_url=sqlite:///{other}")
    assert status == 0, err
    assert _penalties(course, f"sqlite:///{other}")["late"] == FULL


@pytest.mark.parametrize("args,words", [
    (["--student", "lat", "--days", "1"], "'lat' is not a student in the gradebook (did you mean 'late'?)"),
    (["--student", "<b>late", "--days", "1"], "reads as markup"),
    (["--student=-late", "--days", "1"], "starts with '-'"),
    (["--student", "late", "--days", "0"], "--days should be a number of days above 0"),
    (["--student", "late", "--days", "-2"], "--days should be a number of days above 0"),
    (["--student", "late", "--days", "nan"], "--days should be a number of days above 0"),
    (["--student", "late", "--days", "1000"], "at most 366"),
    (["--student", "late", "--until", "2026-11-30 11:00"], "is not after the due date 2026-11-30 12:00:00 UTC"),
    (["--student", "late", "--until", "tomorrow"], "is not a date and time"),
    (["--student", "late", "--until", "17:00"], "is not a date and time"),
    (["--student", "late", "--until", "2026-12-01 12:00 Mars/Olympus"], "'Mars/Olympus' is not a time zone"),
])
def test_bad_arguments_change_nothing_and_say_what_to_do(course, capsys, args, words):
    before = (course / "gradebook.db").read_bytes()
    status, out, err = _cli(capsys, "extension", "toy", *args, "--course-dir", str(course))
    assert status == 2 and words in err and err.startswith("autograder: error: "), err
    assert "Traceback" not in err and not out
    assert (course / "gradebook.db").read_bytes() == before


def test_an_assignment_without_due_date_or_unknown_is_refused(course, capsys):
    status, _, err = _cli(capsys, "extension", "nope", "--student", "late", "--days", "1", "--course-dir", str(course))
    assert status == 2 and "assignment 'nope' is not in the gradebook (toy)" in err
    with _gradebook(course) as gb:
        gb.find_assignment("toy").duedate = None
        gb.db.commit()
    status, _, err = _cli(capsys, "extension", "toy", "--student", "late", "--days", "1", "--course-dir", str(course))
    assert status == 2 and "has no due date" in err and "nbgrader db assignment add toy --duedate" in err
    assert _extension(course, "late") is None


def test_one_of_until_days_remove(course):
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "extension", "toy", "--student", "late",
                           "--days", "1", "--remove", "--course-dir", str(course)], capture_output=True, text=True)
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


def test_the_commands_are_in_autograder_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    listed = capsys.readouterr().out
    assert "extension" in listed and "give one student more time" in listed
    assert "roster" in listed and "with names" in listed
    with pytest.raises(SystemExit):
        cli.main(["extension", "--help"])
    helped = capsys.readouterr().out
    assert all(option in helped for option in ("--student", "--until", "--days", "--remove", "Europe/Berlin"))
