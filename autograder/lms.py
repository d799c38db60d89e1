"""Grades into the learning management system: ``nbgrader export`` plugins for Canvas and Moodle.

``nbgrader export --exporter autograder.lms.CanvasExport --to canvas.csv`` (or ``MoodleExport``) writes
one row per student and one column per assignment, with the score nbgrader's own CSV export gives
(the total after the late penalty, never below zero; a student with no submission scores 0). The
LMS's identities come from a roster the instructor provides (``c.LmsExport.roster = "roster.csv"``):

=================  ==========================================================================
roster column      meaning
=================  ==========================================================================
``nbgrader_id``    the student id in nbgrader's gradebook (the hub or exchange user name); required
``name``           the name the LMS shows (Canvas's "Student"; default: the gradebook's name)
``canvas_id``      Canvas's numeric user id (its gradebook export's "ID" column)
``sis_user_id``    Canvas's "SIS User ID"
``sis_login_id``   Canvas's "SIS Login ID"
``section``        Canvas's "Section"
``email``          Moodle's "Email address", the identifier its CSV grade import matches users by
=================  ==========================================================================

A student is never dropped: a gradebook student missing from the roster is written with the LMS
columns empty (the LMS's import lists such a row as unmatched), a roster student missing from the
gradebook is written with zero scores, and both lists are logged. Columns follow the formats'
documentation: Canvas's gradebook import (the columns of its own gradebook export: Student, ID,
SIS User ID, SIS Login ID, Section, then one column per assignment, with a "Points Possible" row
first), and Moodle's CSV grade import (an identifier column, then one grade column per grade item,
mapped to items in its import form).
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Dict, Unicode

#: Roster columns the exports read (``nbgrader_id`` is required).
ROSTER_COLUMNS = ("nbgrader_id", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "email")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTIFIER = "Email address"


@dataclasses.dataclass(frozen=True)
class StudentRow:
    """One student's line: identity from the roster (or the gradebook) and a score per assignment."""

    nbgrader_id: str
    identity: dict
    scores: dict  # assignment name -> score after the late penalty
    in_roster: bool
    in_gradebook: bool


def read_roster(path: str | Path) -> dict:
    """The roster as ``{nbgrader_id: {column: value}}``; raises ``ValueError`` naming what is wrong."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in (reader.fieldnames or [])]
        if "nbgrader_id" not in header:
            raise ValueError(f"roster {path}: the header must name a 'nbgrader_id' column "
                             f"(got {header}); other known columns: {', '.join(ROSTER_COLUMNS[1:])}")
        unknown = sorted(set(header) - set(ROSTER_COLUMNS))
        if unknown:
            raise ValueError(f"roster {path}: unknown column(s) {unknown}; known: {', '.join(ROSTER_COLUMNS)}")
        roster: dict = {}
        for number, row in enumerate(reader, start=2):
            row = {key.strip(): (value or "").strip() for key, value in row.items() if key is not None}
            student = row.get("nbgrader_id", "")
            if not student:
                raise ValueError(f"roster {path}, line {number}: empty nbgrader_id")
            if student in roster:
                raise ValueError(f"roster {path}, line {number}: nbgrader_id {student!r} appears twice")
            roster[student] = row
    return roster


def _score(gradebook: Gradebook, assignment: str, student: str) -> float:
    """The score nbgrader's CSV export gives: total minus the late penalty, never below zero; 0 if missing."""
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return 0.0
    return max(0.0, float(submission.score) - float(submission.late_submission_penalty or 0.0))


class LmsExport(ExportPlugin):
    """Shared part of the Canvas and Moodle exports: the roster, the rows, the unmatched lists."""

    roster = Unicode("", help="CSV mapping nbgrader student ids to LMS identities "
                              "(columns: " + ", ".join(ROSTER_COLUMNS) + ")").tag(config=True)
    assignment_columns = Dict(help="column header per assignment name (e.g. Canvas's 'Module 6 (1234)' "
                                   "to update an existing Canvas assignment); default: the name").tag(config=True)
    default_to = "grades-lms.csv"

    def rows(self, gradebook: Gradebook) -> tuple[list, list]:
        """The assignments (name, points possible) and one :class:`StudentRow` per student, sorted by id."""
        roster = read_roster(self.roster) if self.roster else {}
        wanted_assignments = {str(a) for a in self.assignment}
        wanted_students = {str(s) for s in self.student}
        assignments = [(a.name, float(a.max_score)) for a in gradebook.assignments
                       if not wanted_assignments or a.name in wanted_assignments]
        known = {s.id: s for s in gradebook.students}
        ids = sorted(set(known) | set(roster))
        rows = []
        for student in ids:
            if wanted_students and student not in wanted_students:
                continue
            record = known.get(student)
            identity = dict(roster.get(student, {}))
            full_name = " ".join(p for p in (record.first_name, record.last_name) if p) if record else ""
            # the roster's word first, then the gradebook's, then the id itself
            identity["name"] = identity.get("name") or full_name or student
            identity["email"] = identity.get("email") or (record.email if record and record.email else "")
            scores = {name: (_score(gradebook, name, student) if record is not None else 0.0)
                      for name, _ in assignments}
            rows.append(StudentRow(student, identity, scores, student in roster, record is not None))
        if self.roster:
            unmatched = [row.nbgrader_id for row in rows if not row.in_roster]
            absent = [row.nbgrader_id for row in rows if not row.in_gradebook]
            if unmatched:
                self.log.warning("Not in the roster %s (written with empty LMS ids, for the LMS to list as "
                                 "unmatched): %s", self.roster, ", ".join(unmatched))
            if absent:
                self.log.warning("In the roster but not in the gradebook (written with zero scores): %s",
                                 ", ".join(absent))
        return assignments, rows

    def header_of(self, assignment: str) -> str:
        return str(self.assignment_columns.get(assignment, assignment))

    def destination(self) -> Path:
        return Path(self.to or self.default_to)


class CanvasExport(LmsExport):
    """Canvas's gradebook CSV: Student, ID, SIS User ID, SIS Login ID, Section, one column per assignment."""

    default_to = "canvas-grades.csv"

    def export(self, gradebook: Gradebook) -> None:
        assignments, rows = self.rows(gradebook)
        dest = self.destination()
        self.log.info("Exporting Canvas grades to %s", dest)
        with dest.open("w", newline="", encoding="utf-8") as handle:
            out = csv.writer(handle)
            out.writerow([*CANVAS_COLUMNS, *(self.header_of(name) for name, _ in assignments)])
            # Canvas's own export puts the points possible in the second row, under the Student column.
            out.writerow(["    Points Possible", "", "", "", "", *(_number(points) for _, points in assignments)])
            for row in rows:
                who = row.identity
                out.writerow([who.get("name", row.nbgrader_id), who.get("canvas_id", ""), who.get("sis_user_id", ""),
                              who.get("sis_login_id", ""), who.get("section", ""),
                              *(_number(row.scores[name]) for name, _ in assignments)])


class MoodleExport(LmsExport):
    """Moodle's CSV grade import: the users' email addresses, then one column per grade item."""

    default_to = "moodle-grades.csv"

    def export(self, gradebook: Gradebook) -> None:
        assignments, rows = self.rows(gradebook)
        dest = self.destination()
        self.log.info("Exporting Moodle grades to %s", dest)
        with dest.open("w", newline="", encoding="utf-8") as handle:
            out = csv.writer(handle)
            out.writerow([MOODLE_IDENTIFIER, *(self.header_of(name) for name, _ in assignments)])
            for row in rows:
                out.writerow([row.identity.get("email", ""), *(_number(row.scores[name]) for name, _ in assignments)])


def _number(value: float) -> str:
    """A score as the LMSs read it: plain decimal, at most two places, no trailing zeros."""
    return f"{round(float(value), 2):.2f}".rstrip("0").rstrip(".")
