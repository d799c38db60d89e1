"""Grades into Canvas and Moodle through the real ``nbgrader export`` command, and the roster reader.

``nbgrader export --exporter autograder.lms.CanvasExport|MoodleExport`` (nbgrader 0.9.6:
``nbgrader/apps/exportapp.py`` gives the plugin ``--to``, ``--assignment`` and ``--student`` as
``ExportPlugin`` traits, and itself as the plugin's parent, with its ``coursedir``) must run the README's
lines as written, export only the assignments with collected submissions unless ``--assignment`` names
them, refuse (exit 1, nothing written) while a collected submission has no final grade, and honour
``c.LmsExport`` settings from ``nbgrader_config.py`` and the command line. What the LMSs then do with
the files is ``tests/test_lms_import.py``'s subject.

The roster may be the kit's CSV, Canvas's gradebook export or Moodle's grade export, as downloaded.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config, Configurable

from autograder.lms import CanvasExport, ExportRefused, read_roster
from lms_support import CLASS, Student, build_gradebook, canvas_course, moodle_site, read_csv

#: a class where module6_further has no submission yet
SMALL = [Student("ada", "Ada", "Lovelace", {"module6": (75.5, 8.0, 0.0)}),
         Student("ben", "Ben", "Okafor", {"module6": (62.25, 8.0, 10.0)}),
         next(s for s in CLASS if s.id == "nos")]
ROSTER = """nbgrader_id,name,canvas_id,sis_user_id,sis_login_id,section,email
ada,"Lovelace, Ada",101,S-101,ada,Section A,ada@uni.example
ben,"Okafor, Ben",102,S-102,ben,Section B,ben@uni.example
nos,"Sub, No",108,S-108,nos,Section B,nos@uni.example
dee,"Dee, Dee",109,S-109,dee,Section B,dee@uni.example
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    url = build_gradebook(root / "gradebook.db", SMALL)
    (root / "roster.csv").write_text(ROSTER)
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""
        c = get_config()
        c.CourseDirectory.db_url = {url!r}
        c.CourseDirectory.root = {str(root)!r}
        c.LmsExport.roster = "roster.csv"
    """))
    return root


def _nbgrader(course, command: list) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([sys.executable, "-m", *command], cwd=course, text=True, capture_output=True,
                          timeout=300, env=env)


def readme_lines() -> list:
    """The commands of the README's LMS block, as written there."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- lms-export")
    fence = text.index("```bash", start) + len("```bash")
    return [line.strip() for line in text[fence:text.index("```", fence)].splitlines() if line.strip()]


def test_the_readme_commands_run_verbatim(course):
    lines = readme_lines()
    assert [shlex.split(line)[:4] for line in lines] == [
        ["nbgrader", "export", "--exporter", "autograder.lms.CanvasExport"],
        ["nbgrader", "export", "--exporter", "autograder.lms.MoodleExport"]]
    for line in lines:
        proc = _nbgrader(course, shlex.split(line))
        assert proc.returncode == 0, (line, proc.stderr)
        # Who is left out for having no submission is said where the command runs, not only in the preview.
        assert "2 student(s) left out, no submission" in proc.stderr and ": dee, nos" in proc.stderr, proc.stderr
    canvas = read_csv(course / "canvas-module6.csv")
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "module6"]
    assert {row[1]: row[5] for row in canvas[2:]} == {"101": "83.5%", "102": "60.25%"}  # nos, dee: left out
    moodle = read_csv(course / "moodle-module6.csv")
    assert [row[:2] for row in moodle] == [["Email address", "module6"], ["ada@uni.example", "83.5"],
                                           ["ben@uni.example", "60.25"]]
    for name in ("canvas-module6.csv", "moodle-module6.csv"):
        assert (course / f"{name}.preview.txt").exists() and (course / f"{name}.unmatched.csv").exists()


def test_a_collected_submission_not_yet_graded_refuses_the_export(course):
    """Collected (``submitted/ada/module6_further/``) makes module6_further one to export by default, and
    its missing grade a reason to refuse: exit 1, the list on stderr, nothing written."""
    (course / "submitted" / "ada" / "module6_further").mkdir(parents=True)
    try:
        proc = _nbgrader(course, ["nbgrader", "export", "--exporter", "autograder.lms.MoodleExport",
                                  "--to", "refused-{assignment}.csv", "--LmsExport.missing=zero"])
    finally:
        (course / "submitted" / "ada" / "module6_further").rmdir()
    assert proc.returncode == 1
    assert "refused, nothing written" in proc.stderr and "ada: collected, not autograded yet" in proc.stderr
    assert not list(course.glob("refused*"))


class _App(Configurable):
    """What ``nbgrader export`` gives its plugin as parent: the course directory."""

    def __init__(self, root, **kwargs):
        super().__init__(**kwargs)
        self.coursedir = CourseDirectory(root=str(root))


def test_by_default_only_assignments_with_submissions_are_exported(course, tmp_path):
    config = Config()
    config.LmsExport.roster = str(course / "roster.csv")
    config.LmsExport.missing = "zero"
    plugin = CanvasExport(parent=_App(course), config=config)
    plugin.to = str(tmp_path / "canvas-{assignment}.csv")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        plugin.export(gb)
    assert (tmp_path / "canvas-module6.csv").exists() and not list(tmp_path.glob("*further*"))
    rows = read_csv(tmp_path / "canvas-module6.csv")
    assert {row[1]: row[5] for row in rows[2:]} == {"101": "83.5%", "102": "60.25%", "108": "0", "109": "0"}
    # named, it is exported even without submissions (every student missing: zero here)
    plugin.assignment = ["[module6,module6_further]"]  # nbgrader's documented list form
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        plugin.export(gb)
    further = read_csv(tmp_path / "canvas-module6_further.csv")
    assert further[1][5] == "80" and {row[5] for row in further[2:]} == {"0"}
    plugin.assignment = ["module7"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb, pytest.raises(ExportRefused, match="module7"):
        plugin.export(gb)


# ---- the roster ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("name,email\nada,a@x\n", "nbgrader_id"),
    ("nbgrader_id,colour\nada,red\n", "unknown column"),
    ("nbgrader_id,name\nada,A\nada,B\n", "appears twice"),
    ("nbgrader_id,name\nada,A\nAda,B\n", "appears twice"),  # ids are compared without regard to case
    ("nbgrader_id,name\njos\u00e9,A\njose\u0301,B\n", "appears twice"),  # ... and after NFC
    ("nbgrader_id,name\n,A\n", "empty nbgrader_id"),
])
def test_a_bad_roster_is_refused_with_the_line_and_the_column(tmp_path, text, message):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_roster(path)


def test_canvas_own_export_is_a_roster(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes(canvas_course().export_csv())
    roster = read_roster(path)
    assert roster.kind == "canvas" and roster.link_column == "SIS Login ID"
    ada = roster.by_link()["ada"]
    assert (ada.name, ada.canvas_id, ada.sis_user_id, ada.section) == ("Lovelace, Ada", "101", "S-101", "Section A")
    assert roster.by_link()["frm"].name == '=HYPERLINK("http://evil.example","Ada")'  # Canvas's ="..." undone
    (column,) = roster.canvas_columns
    assert (column.header, column.title, column.canvas_id, column.points) == ("module6 (201)", "module6", "201", 10.0)
    # Canvas can export with semicolons (a user's setting): read the same way
    semicolons = tmp_path / "semi.csv"
    semicolons.write_text("Student;ID;SIS User ID;SIS Login ID;Section;module6 (201)\n"
                          "    Points Possible;;;;;10\n\"Lovelace, Ada\";101;S-101;ada;A;8\n")
    assert read_roster(semicolons).by_link()["ada"].canvas_id == "101"
    with pytest.raises(ValueError, match="roster_id_column = 'Login'"):
        read_roster(path, "Login")


def test_moodle_own_export_is_a_roster(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes(moodle_site().export_csv(with_username=True))
    roster = read_roster(path)
    assert roster.kind == "moodle" and roster.link_column == "Username"
    eve = roster.by_link()["eve"]
    assert (eve.email, eve.idnumber, eve.name) == ("Eve.Smith@Uni.example", "S-110", "Eve Smith")
    path.write_bytes(moodle_site().export_csv(with_username=False))
    with pytest.raises(ValueError, match="roster_id_column"):
        read_roster(path)
    assert read_roster(path, "ID number").by_link()["s-110"].email == "Eve.Smith@Uni.example"
    # two accounts sharing an email cannot be told apart by it: linking by email is refused
    with pytest.raises(ValueError, match="'Twin@Uni.example' appears twice"):
        read_roster(path, "Email address")


# ---- the kit's own doctests ---------------------------------------------------------------------

@pytest.mark.parametrize("module", ["cells", "roster", "gradebook", "plan", "canvas", "moodle", "base", "preview"])
def test_lms_package_doctests(module):
    """``autograder/lms/`` is outside the suite's doctest paths (``autograder/reference``): run them here."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"autograder.lms.{module}"))
    assert result.failed == 0
