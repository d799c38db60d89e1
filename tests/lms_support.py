"""A class in an nbgrader gradebook for the LMS export tests, built with nbgrader's Python API (no notebooks).

``module6`` has 100 points (an autograded cell of 90, a written answer of 10, graded by hand);
``module6_further`` has 80 (autograded only). Each student's submissions are ``(auto, written, penalty)``.
Also here: the fake Canvas course and Moodle site the class is enrolled in (``tests/lms_fake.py``).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import re
import warnings
from pathlib import Path

import nbgrader
import nbgrader.api
from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

import lms_fake as fake

CELLS = {"module6": {"auto": 90.0, "written": 10.0}, "module6_further": {"auto": 80.0}}
NFD_JOSE = "jose\u0301"  # the gradebook's id, decomposed (as a macOS file system spells it)
NFC_JOSE = "jos\u00e9"  # the LMS's, precomposed
FORMULA_ID = '=HYPERLINK("http://evil.example","x")'


@dataclasses.dataclass(frozen=True)
class Student:
    id: str
    first: str
    last: str
    subs: dict  # assignment -> (auto, written or None, penalty)


CLASS = [
    Student("ada", "Ada", "Lovelace", {"module6": (75.5, 8.0, 0.0), "module6_further": (72.0, None, 0.0)}),
    Student("ben", "Ben", "Okafor", {"module6": (62.25, 8.0, 10.0)}),  # late: 60.25
    Student("cai", "Cai", "Chen", {"module6": (5.0, 0.0, 10.0), "module6_further": (12.0, None, 0.0)}),  # 0
    Student("kim1", "Kim", "Lee", {"module6": (36.0, 4.0, 0.0)}),  # three students named Kim Lee
    Student("kim2", "Kim", "Lee", {"module6": (82.0, 8.0, 0.0), "module6_further": (80.0, None, 0.0)}),
    Student("kim3", "Kim", "Lee", {"module6": (90.0, 10.0, 0.0), "module6_further": (40.0, None, 0.0)}),  # no LMS
    Student("frm", '=HYPERLINK("http://evil.example","Ada")', "", {"module6": (45.0, 5.0, 0.0)}),
    Student(NFD_JOSE, "José", "Díaz", {"module6": (63.0, 7.0, 0.0)}),
    Student("nos", "No", "Sub", {}),  # no submission at all
    Student("Eve", "Eve", "Smith", {"module6": (70.0, 7.0, 0.0)}),  # the LMS says "eve"
    Student("twin1", "Tam", "Win", {"module6": (55.0, 6.0, 0.0)}),  # twin1 and twin2 share an email
    Student("twin2", "Tim", "Win", {"module6": (56.0, 6.0, 0.0)}),
    Student("zed", "Zed", "Nobody", {"module6": (45.0, 5.0, 0.0)}),  # not in any roster
    Student(FORMULA_ID, "Eve", "L", {"module6": (9.0, 1.0, 0.0)}),  # an invented id, not in any roster
]


def alembic_head() -> str:
    """nbgrader's newest gradebook schema revision, read from its migration scripts.

    ``Gradebook`` stamps a new database with ``alembic heads``, a subprocess that took 20 s on a loaded
    2-core machine; the head is the one revision no other script names as its ``down_revision``.
    """
    versions = Path(nbgrader.__file__).parent / "alembic" / "versions"
    revisions, parents = set(), set()
    for script in versions.glob("*.py"):
        text = script.read_text()
        revisions.add(re.search(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M).group(1))
        parents.update(re.findall(r"^down_revision\s*=\s*['\"](\w+)['\"]", text, re.M))
    (head,) = revisions - parents
    return head


@contextlib.contextmanager
def _stamped_without_subprocess():
    original = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = alembic_head
    try:
        yield
    finally:
        nbgrader.api.get_alembic_version = original


def build_gradebook(path: Path, students=CLASS) -> str:
    """Create the gradebook at ``path`` with every grade final (see :func:`mark_pending`)."""
    with _stamped_without_subprocess(), warnings.catch_warnings():
        # nbgrader 0.9.6's add_submission triggers SQLAlchemy autoflush warnings; the rows are stored
        warnings.simplefilter("ignore", SAWarning)
        return _build(path, students)


def _build(path: Path, students) -> str:
    url = f"sqlite:///{path}"
    with Gradebook(url) as gb:
        for name, cells in CELLS.items():
            gb.add_assignment(name)
            gb.update_or_create_notebook("nb", name)
            for cell, points in cells.items():
                gb.update_or_create_grade_cell(cell, "nb", name, max_score=points,
                                               cell_type="markdown" if cell == "written" else "code")
        for student in students:
            gb.add_student(student.id, first_name=student.first, last_name=student.last,
                           email=f"{student.id}@gradebook.example")
            for name, (auto, written, penalty) in student.subs.items():
                notebook = gb.add_submission(name, student.id).notebooks[0]
                for grade in notebook.grades:
                    if grade.name == "auto":
                        grade.auto_score, grade.needs_manual_grade = auto, False
                    else:
                        grade.manual_score, grade.needs_manual_grade = written, False
                notebook.late_submission_penalty = penalty
                gb.db.commit()
    return url


def mark_pending(url: str, pairs) -> None:
    """Make each (student, assignment)'s written answer wait for its manual grade again."""
    with Gradebook(url) as gb:
        for student, assignment in pairs:
            grade = gb.find_grade("written", "nb", assignment, student)
            grade.manual_score, grade.needs_manual_grade = None, True
        gb.db.commit()


def add_extra_credit(url: str, student: str, assignment: str, points: float) -> None:
    """Give a written answer extra credit (nbgrader's ``Grade.extra_credit``): the total can pass the maximum."""
    with Gradebook(url) as gb:
        gb.find_grade("written", "nb", assignment, student).extra_credit = points
        gb.db.commit()


def expected_score(student: str, assignment: str) -> float | None:
    """The spec's total after the late penalty, never below zero (``None``: no submission)."""
    subs = next(s for s in CLASS if s.id == student).subs
    if assignment not in subs:
        return None
    auto, written, penalty = subs[assignment]
    return max(0.0, auto + (written or 0.0) - penalty)


def nbgrader_scores(url: str, tmp: Path) -> dict:
    """``{(student, assignment): score}`` from nbgrader's own CsvExportPlugin (the total after the penalty).

    That plugin writes its fields unquoted, so a row whose id or name holds a comma falls apart: only
    rows that parse into its eleven columns are returned.
    """
    target = tmp / "nbgrader-grades.csv"
    with Gradebook(url) as gb:
        CsvExportPlugin(to=str(target)).export(gb)
    with target.open(newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    return {(row[header.index("student_id")], row[header.index("assignment")]): float(row[header.index("score")])
            for row in rows[1:] if len(row) == len(header)}


def export(cls, url: str, to: Path, assignments=(), students=(), **settings):
    """Run an exporter in-process as ``nbgrader export`` would; ``settings`` are ``LmsExport`` (or the
    exporter's own) traits. Returns the exporter."""
    config = Config()
    own = {"identifier", "feedback", "grade_point_max"}
    for name, value in settings.items():
        setattr(config[cls.__name__ if name in own else "LmsExport"], name, value)
    plugin = cls(config=config)
    plugin.to = str(to)
    plugin.assignment = list(assignments)
    plugin.student = list(students)
    with Gradebook(url) as gb:
        plugin.export(gb)
    return plugin


def read_csv(path: Path) -> list:
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf"), f"{path} has no UTF-8 byte-order mark"
    return list(csv.reader(data.decode("utf-8-sig").splitlines()))


def canvas_course() -> fake.FakeCanvasCourse:
    S = fake.CanvasStudent
    students = [
        S(101, "Ada Lovelace", "Lovelace, Ada", "S-101", "ada"),
        S(102, "Ben Okafor", "Okafor, Ben", "S-102", "ben"),
        S(103, "Cai Chen", "Chen, Cai", "S-103", "cai"),
        S(104, "Kim Lee", "Lee, Kim", "S-104", "kim1"),
        S(105, "Kim Lee", "Lee, Kim", "S-105", "kim2"),
        S(106, '=HYPERLINK("http://evil.example","Ada")', '=HYPERLINK("http://evil.example","Ada")', "S-106", "frm"),
        S(107, "José Díaz", "Díaz, José", "S-107", NFC_JOSE),
        S(108, "No Sub", "Sub, No", "S-108", "nos"),
        S(109, "Dee Dee", "Dee, Dee", "S-109", "dee"),
        S(110, "Eve Smith", "Smith, Eve", "S-110", "eve"),
        S(111, "Tam Win", "Win, Tam", "S-111", "twin1"),
        S(112, "Tim Win", "Win, Tim", "S-112", "twin2"),
    ]
    existing = {(108, 201): fake.CanvasSubmission(None, excused=True),  # Excused
                (109, 201): fake.CanvasSubmission(7.0),  # a roster-only student's existing score
                (102, 201): fake.CanvasSubmission(5.0),  # overwritten by the kit's 60.25%
                (101, 201): fake.CanvasSubmission(None)}  # a submission record without a grade
    return fake.FakeCanvasCourse(students, [fake.CanvasAssignment(201, "module6", 10.0)], existing)


def moodle_site(database: str = "postgres") -> fake.FakeMoodleSite:
    U = fake.MoodleUser
    users = [
        U(1, "ada", "ada@uni.example", "S-101", "Ada", "Lovelace"),
        U(2, "ben", "ben@uni.example", "S-102", "Ben", "Okafor"),
        U(3, "cai", "cai@uni.example", "S-103", "Cai", "Chen"),
        U(4, "kim1", "kim1@uni.example", "S-104", "Kim", "Lee"),
        U(5, "kim2", "kim2@uni.example", "S-105", "Kim", "Lee"),
        U(6, "frm", "frm@uni.example", "=1+1", '=HYPERLINK("http://evil.example","Ada")', ""),
        U(7, NFC_JOSE, "jose@uni.example", "S-107", "José", "Díaz"),
        U(8, "nos", "nos@uni.example", "S-108", "No", "Sub"),
        U(9, "dee", "dee@uni.example", "S-109", "Dee", "Dee"),
        U(10, "eve", "Eve.Smith@Uni.example", "S-110", "Eve", "Smith"),
        U(11, "twin1", "twin@uni.example", "S-111", "Tam", "Win"),
        U(12, "twin2", "Twin@Uni.example", "S-112", "Tim", "Win"),
    ]
    existing = {(9, 301): 7.0, (8, 301): 9.0, (2, 301): 5.0}
    return fake.FakeMoodleSite(users, [fake.GradeItem(301, "module6", grademax=10.0)], existing, database=database)
