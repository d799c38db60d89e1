"""``autograder roster``: the class and its names into the gradebook, every id and name checked first.

Formgrader lists students by the gradebook's ``last_name, first_name`` ("None, None" for a student that
collect or autograde created from an id alone); after the roster it shows the names (its API,
``NbGraderAPI.get_students``, is what ``/formgrader/api/students`` serves; the README term test reads
that page of a running server).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile import toy
from autograder import cli, roster

ROSTER = """nbgrader_id,name,email,section
ann,"Lovelace, Ada",ada@uni.example,A
bob,Alan Mathison Turing,,B
cy,Hypatia,hypatia@uni.example,A
"""


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory):
    """An empty gradebook of nbgrader's own schema, made once (nbgrader runs `alembic` for it, seconds)."""
    import os

    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("roster") / "gradebook.db"
    before = os.environ["PATH"]
    os.environ["PATH"] = toy.nbgrader_env()["PATH"]
    try:
        with Gradebook("sqlite:///" + str(path), "toy-course"):
            pass
    finally:
        os.environ["PATH"] = before
    return path


@pytest.fixture
def course(tmp_path, empty_gradebook):
    """A course directory: its config, an empty gradebook and the roster."""
    import shutil

    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(toy.CONFIG)
    shutil.copyfile(empty_gradebook, course / "gradebook.db")
    (course / "roster.csv").write_text(ROSTER, encoding="utf-8")
    return course


def _students(course: Path) -> dict:
    from nbgrader.api import Gradebook
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        return {s.id: (s.first_name, s.last_name, s.email) for s in gb.students}


def _cli(capsys, *args) -> tuple:
    status = cli.main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_names_are_split_as_formgrader_shows_them():
    assert roster.split_name("Lovelace, Ada") == ("Ada", "Lovelace")
    assert roster.split_name("  van Rossum ,  Guido  ") == ("Guido", "van Rossum")
    assert roster.split_name("Alan Mathison Turing") == ("Alan Mathison", "Turing")
    assert roster.split_name("Hypatia") == ("", "Hypatia")


def test_the_roster_puts_the_class_and_its_names_into_the_gradebook(course, capsys):
    with (course / "nbgrader_config.py").open("a") as config:
        config.write("c.LmsExport.roster = 'roster.csv'\n")
    from nbgrader.api import Gradebook
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        gb.add_student("zed")  # created by an earlier collect: an id, no name
        gb.add_student("bob", first_name="Al", last_name="Turing", email="al@old.example")
    status, out, err = _cli(capsys, "roster", "--course-dir", str(course))  # c.LmsExport.roster by default
    assert status == 0, err
    assert "3 students; 2 were added to the gradebook, 1 updated, 0 unchanged" in out
    assert "not in the roster (left as they are): 'zed'" in out
    assert _students(course) == {
        "ann": ("Ada", "Lovelace", "ada@uni.example"),
        "bob": ("Alan Mathison", "Turing", "al@old.example"),  # an empty e-mail keeps the gradebook's
        "cy": ("", "Hypatia", "hypatia@uni.example"),
        "zed": (None, None, None),
    }
    # What formgrader's /formgrader/api/students serves.
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    api = NbGraderAPI(coursedir=CourseDirectory(root=str(course), course_id="toy-course"))
    listed = {s["id"]: (s["last_name"], s["first_name"]) for s in api.get_students()}
    assert listed["ann"] == ("Lovelace", "Ada") and listed["cy"] == ("Hypatia", "")
    # Again: nothing to do.
    status, out, _ = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course))
    assert status == 0 and "0 were added to the gradebook, 0 updated, 3 unchanged" in out


def test_a_dry_run_changes_nothing(course, capsys):
    before = (course / "gradebook.db").read_bytes()
    status, out, _ = _cli(capsys, "roster", str(course / "roster.csv"), "--dry-run", "--course-dir", str(course))
    assert status == 0 and "3 would be added" in out
    assert (course / "gradebook.db").read_bytes() == before


@pytest.mark.parametrize("row,words", [
    ('<img src=x onerror=alert(1)>,Eve,', "reads as markup"),
    ("eve smith,Eve,", "whitespace"),
    ("../eve,Eve,", "starts with '.'"),
    ("=cmd|' /C calc'!A0,Eve,", "formula"),
    ("-eve,Eve,", "starts with '-'"),
    ("eve,<script>alert(1)</script>,", "name '<script>alert(1)</script>' holds '<'"),
    ("eve,=HYPERLINK(\"http://x\"),", "name '=HYPERLINK(\"http://x\")' starts with '='"),
    ("eve,Eve\x07,", "control character U+0007"),
    ("eve,Eve,eve at uni", "is not an e-mail address"),
    ("eve,Eve,<eve@uni.example>", "holds '<'"),
    ("eve," + "E" * 200 + ",", "more than the gradebook's 128"),
])
def test_one_bad_row_changes_nothing_and_every_problem_is_named(course, capsys, row, words):
    (course / "roster.csv").write_text(ROSTER + row + "\n", encoding="utf-8")
    before = (course / "gradebook.db").read_bytes()
    status, out, err = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course))
    assert status == 2 and words in err and "nothing was changed" in err, err
    assert "student 4" in err and not out
    assert (course / "gradebook.db").read_bytes() == before


def test_all_problems_are_listed_at_once(course):
    bad = "".join(f"bad id {i},X,\n" for i in range(30))
    (course / "roster.csv").write_text(ROSTER + bad, encoding="utf-8")
    with pytest.raises(roster.RosterError) as caught:
        roster.read(course / "roster.csv")
    message = str(caught.value)
    assert "30 problem(s)" in message and "... and 10 more" in message


def test_roster_errors_are_one_line_each(course, capsys):
    status, _, err = _cli(capsys, "roster", "--course-dir", str(course))  # none given, none configured
    assert status == 2 and "c.LmsExport.roster" in err
    status, _, err = _cli(capsys, "roster", str(course / "missing.csv"), "--course-dir", str(course))
    assert status == 2 and "no such file" in err
    (course / "roster.csv").write_text("id,name\nann,Ada\n")
    status, _, err = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course))
    assert status == 2 and "nbgrader_id" in err
    (course / "roster.csv").write_text("nbgrader_id,name\n")
    status, _, err = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course))
    assert status == 2 and "lists no student" in err
    status, _, err = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course / "nowhere"))
    assert status == 2 and "is not a directory" in err
    (course / "gradebook.db").unlink()
    status, _, err = _cli(capsys, "roster", str(course / "roster.csv"), "--course-dir", str(course))
    assert status == 2 and "no gradebook" in err and "nbgrader generate_assignment" in err
    assert not (course / "gradebook.db").exists()  # never created by the roster


def test_the_roster_is_read_relative_to_the_course_directory(course, tmp_path, capsys, monkeypatch):
    with (course / "nbgrader_config.py").open("a") as config:
        config.write("c.LmsExport.roster = 'roster.csv'\n")
    monkeypatch.chdir(tmp_path)
    status, out, err = _cli(capsys, "roster", "--course-dir", str(course))
    assert status == 0, err
    assert set(_students(course)) == {"ann", "bob", "cy"}
