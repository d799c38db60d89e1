"""Grades into Canvas and Moodle: the export plugins against the formats' documented columns.

Canvas's gradebook import reads the columns its own gradebook export writes (Student, ID, SIS User ID,
SIS Login ID, Section, then one column per assignment, the second row holding "Points Possible");
Moodle's CSV grade import matches users by an identifier column (here "Email address") and maps the
other columns to grade items. Scores must be nbgrader's own export's (total minus late penalty, at
least 0; no submission is 0), and no student may be dropped.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap

import pytest
from nbgrader.api import Gradebook

from autograder.lms import CANVAS_COLUMNS, MOODLE_IDENTIFIER, read_roster

ASSIGNMENTS = {"module6": 100.0, "module6_further": 40.0}
# student -> assignment -> (auto score, late penalty); a missing assignment means no submission
SCORES = {
    "ada": {"module6": (83.5, 0.0), "module6_further": (40.0, 0.0)},
    "ben": {"module6": (70.25, 10.0)},  # late: 60.25
    "cai": {"module6": (5.0, 10.0), "module6_further": (12.0, 0.0)},  # penalty larger than the score: 0
    "zed": {"module6": (50.0, 0.0)},  # not in the roster: written, never dropped
}
ROSTER = """nbgrader_id,name,canvas_id,sis_user_id,sis_login_id,section,email
ada,"Lovelace, Ada",101,S-101,ada@uni.example,Section A,ada@uni.example
ben,"Okafor, Ben",102,S-102,ben@uni.example,Section B,ben@uni.example
cai,"Chen, Cai",103,S-103,cai@uni.example,Section A,cai@uni.example
dee,"Dee, Dee",104,S-104,dee@uni.example,Section B,dee@uni.example
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    # nbgrader runs its `alembic` helper, beside this Python, when it creates a gradebook
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(url) as gb:
        for name, points in ASSIGNMENTS.items():
            gb.add_assignment(name)
            gb.update_or_create_notebook("nb", name)
            gb.update_or_create_grade_cell("points", "nb", name, max_score=points, cell_type="code")
        for student, taken in SCORES.items():
            gb.add_student(student, first_name=student.title(), last_name="Student", email=f"{student}@gb.example")
            for name, (score, penalty) in taken.items():
                submission = gb.add_submission(name, student)
                notebook = submission.notebooks[0]
                notebook.grades[0].auto_score = score
                notebook.late_submission_penalty = penalty
                gb.db.commit()
    (root / "roster.csv").write_text(ROSTER)
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""
        c = get_config()
        c.CourseDirectory.db_url = {url!r}
        c.CourseDirectory.root = {str(root)!r}
        c.LmsExport.roster = {str(root / 'roster.csv')!r}
    """))
    return root


def _export(course, exporter: str, to: str) -> list:
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--exporter", exporter, "--to", to],
                          cwd=course, text=True, capture_output=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    with (course / to).open(newline="") as handle:
        return list(csv.reader(handle)), proc.stderr


def _nbgrader_scores(course) -> dict:
    rows, _ = _export(course, "nbgrader.plugins.CsvExportPlugin", "nbgrader.csv")
    header = rows[0]
    return {(r[header.index("student_id")], r[header.index("assignment")]): float(r[header.index("score")])
            for r in rows[1:]}


@pytest.fixture(scope="module")
def exports(course):
    canvas, canvas_log = _export(course, "autograder.lms.CanvasExport", "canvas.csv")
    moodle, moodle_log = _export(course, "autograder.lms.MoodleExport", "moodle.csv")
    return {"canvas": canvas, "moodle": moodle, "log": canvas_log + moodle_log, "nbgrader": _nbgrader_scores(course)}


def test_canvas_file_has_canvas_columns_points_possible_and_nbgraders_scores(exports):
    rows = exports["canvas"]
    assert tuple(rows[0][:5]) == CANVAS_COLUMNS
    assert rows[0][5:] == list(ASSIGNMENTS)
    assert rows[1][0].strip() == "Points Possible" and rows[1][5:] == ["100", "40"]
    by_name = {row[0]: row for row in rows[2:]}
    assert by_name["Lovelace, Ada"][1:5] == ["101", "S-101", "ada@uni.example", "Section A"]
    ids = {"Lovelace, Ada": "ada", "Okafor, Ben": "ben", "Chen, Cai": "cai", "Zed Student": "zed"}
    for name, student in ids.items():
        for column, assignment in enumerate(ASSIGNMENTS, start=5):
            assert float(by_name[name][column]) == exports["nbgrader"][(student, assignment)], (name, assignment)
    assert by_name["Okafor, Ben"][5:] == ["60.25", "0"]  # late penalty applied; no submission is 0
    assert by_name["Chen, Cai"][5] == "0"  # a penalty never takes a score below 0


def test_no_student_is_dropped(exports):
    canvas = {row[0]: row for row in exports["canvas"][2:]}
    # in the gradebook, not in the roster: written with empty LMS columns, and named in the log
    assert canvas["Zed Student"][1:5] == ["", "", "", ""] and "zed" in exports["log"]
    # in the roster, not in the gradebook: written with zero scores, and named in the log
    assert canvas["Dee, Dee"][5:] == ["0", "0"] and "dee" in exports["log"]
    assert len(exports["canvas"]) == 2 + 5 and len(exports["moodle"]) == 1 + 5


def test_moodle_file_identifies_users_by_email_with_one_column_per_grade_item(exports):
    rows = exports["moodle"]
    assert rows[0] == [MOODLE_IDENTIFIER, *ASSIGNMENTS]
    by_email = {row[0]: row[1:] for row in rows[1:]}
    assert by_email["ada@uni.example"] == ["83.5", "40"]
    assert by_email["zed@gb.example"] == ["50", "0"]  # the gradebook's email when the roster has none
    assert by_email["dee@uni.example"] == ["0", "0"]


@pytest.mark.parametrize("text, message", [
    ("name,email\nada,a@x\n", "nbgrader_id"),
    ("nbgrader_id,colour\nada,red\n", "unknown column"),
    ("nbgrader_id,name\nada,A\nada,B\n", "appears twice"),
    ("nbgrader_id,name\n,A\n", "empty nbgrader_id"),
])
def test_a_bad_roster_is_refused_with_the_line_and_the_column(tmp_path, text, message):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_roster(path)
