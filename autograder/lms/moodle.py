"""Moodle's CSV grade import (Grades > Import > CSV file), written for the importer's own rules.

Moodle (``grade/import/csv/classes/load_data.php``, ``gradeimport_csv_load_data``) maps one column to
the user (``map_user_data_with_value``: id, username, ID number or email) and each other column to a
new grade item, an existing one, or an item's feedback. In ``prepare_import_grade_data``:

* a row whose identifier no account has **aborts the whole import** (``check_user_exists``,
  ``usermappingerror``); the lookup (``$DB->get_record('user', ...)``) is site-wide, returns the first
  of several accounts, and compares as the database does (PostgreSQL with case, MySQL without case or
  accents);
* a row whose identifier is empty (PHP's ``empty()``: ``''`` or ``'0'``) is not looked up at all and
  **goes to the previous row's student** (the matched user is reset once, before the loop);
* a grade that is not a number (``unformat_float``, strict) aborts the import; a blank cell or ``-``
  stores "no grade", clearing the one Moodle has; a grade above the item's maximum is cut to it
  (``grade_item::bounded_grade``), one above the site's ``gradepointmax`` (100) aborts the import.

So this export writes only students whose identifier is present, unique (under the loosest database
comparison) and safe in a spreadsheet; writes a number on the grade item's scale (a new item's
maximum is 100) or leaves the student out; never writes a blank; and writes a feedback column saying
what nbgrader recorded.
"""

from __future__ import annotations

import collections
import csv

from traitlets import Bool, Enum, Float

from .base import LmsExport
from .cells import formula_like, has_control, loose_key, nfc, number
from .plan import FilePlan, Identity
from .roster import Roster

#: identifier setting -> (roster field, the column header Moodle's export uses, what Moodle's form calls it)
IDENTIFIERS = {"email": ("email", "Email address", "email address"),
               "username": ("username", "Username", "username"),
               "idnumber": ("idnumber", "ID number", "idnumber")}


class MoodleExport(LmsExport):
    """Moodle's CSV grade import: an identifier column, one grade column, its feedback column."""

    identifier = Enum(
        list(IDENTIFIERS), default_value="email",
        help="The user field Moodle maps rows by: 'email' (Email address), 'username' (written in lower case, "
             "as Moodle stores user names) or 'idnumber' (ID number). Choose it again in Moodle's import form "
             "('Map from' this column, 'Map to' the same field).").tag(config=True)
    feedback = Bool(True, help="Add a feedback column (what nbgrader recorded: score, maximum, late penalty, "
                               "partial); map it to the item's feedback, or ignore it.").tag(config=True)
    grade_point_max = Float(100.0, help="The site's largest importable grade (Moodle's gradepointmax, 100 unless "
                                        "'unlimitedgrades' is on): a larger scale is refused.").tag(config=True)

    lms = "Moodle"
    default_to = "moodle-{assignment}.csv"

    @property
    def upload_hint(self) -> str:
        field, label, form = IDENTIFIERS[self.identifier]
        return (f"Grades > Import > CSV file; map from {label!r} to the user's {form}, the grade column to a new "
                "or existing grade item, the feedback column to its feedback")

    def check_lms_settings(self) -> None:
        if self.missing == "excuse":
            raise ValueError("c.LmsExport.missing = 'excuse': Moodle's CSV import has no excused grade (any cell "
                             "that is not a number aborts the import); use 'leave' or 'zero'")
        if not self.grade_point_max > 0:
            raise ValueError(f"c.MoodleExport.grade_point_max = {self.grade_point_max}: expected Moodle's "
                             "gradepointmax, a number > 0")

    def _value(self, entry) -> tuple:
        """The identifier to write for an account, and why it cannot be written (empty if it can)."""
        field, label, _ = IDENTIFIERS[self.identifier]
        value = nfc(getattr(entry, field))
        if field == "username":
            value = value.lower()  # Moodle stores user names in lower case
        if not value or value == "0":
            return value, (f"no {label} in the roster" if not value else
                           f"{label} '0' (Moodle skips it, and the row would go to the previous student)")
        if has_control(value) or '"' in value or "\\" in value:
            return value, f"{label} {value!r} holds a quote, backslash or control character"
        if formula_like(value):
            return value, f"{label} {value!r} starts like a spreadsheet formula (= + - @), so it is not written"
        return value, ""

    def identities(self, people: list, roster: Roster) -> dict:
        field, label, _ = IDENTIFIERS[self.identifier]
        holders = collections.defaultdict(list)
        for entry in roster.entries:
            value, _ = self._value(entry)
            if value:
                holders[loose_key(value)].append(entry)
        ids = {}
        for person in people:
            if person.refusal or person.entry is None:
                ids[person.nbgrader_id] = person.refusal
                continue
            value, problem = self._value(person.entry)
            if problem:
                ids[person.nbgrader_id] = problem
                continue
            others = [e for e in holders[loose_key(value)] if e is not person.entry]
            if others:
                names = ", ".join(f"{e.name or e.link} ({e.link}: {getattr(e, field)})" for e in others)
                ids[person.nbgrader_id] = (f"shares its {label} {value!r} with {names}: Moodle would give both "
                                           "rows to the first account it finds")
                continue
            ids[person.nbgrader_id] = Identity({label: value}, f"{label} {value}")
        return ids

    def column(self, assignment: str, max_score: float, roster: Roster) -> dict:
        if max_score <= 0:
            raise ValueError(f"{assignment}: nbgrader's maximum is {max_score}: no scale exists")
        header = nfc(str(self.assignment_columns.get(assignment, assignment)))
        field, label, _ = IDENTIFIERS[self.identifier]
        if formula_like(header) or has_control(header) or header in (label, "Last downloaded from this course"):
            raise ValueError(f"{assignment}: the column header {header!r} cannot be written; set another with "
                             f"c.LmsExport.assignment_columns")
        configured = self.points.get(assignment)
        scale = float(configured) if configured is not None else (100.0 if self.percent else float(max_score))
        if scale > self.grade_point_max:
            raise ValueError(f"{assignment}: a scale of {number(scale)} is above the site's gradepointmax "
                             f"({number(self.grade_point_max)}), and Moodle's import aborts on such grades: set "
                             "c.LmsExport.points (or c.MoodleExport.grade_point_max if the site allows more)")
        warnings = []
        if scale == 100.0:
            warnings.append(f"map the column {header!r} to a new grade item (its maximum is 100) or to an existing "
                            "item whose maximum is 100; for another maximum set c.LmsExport.points")
        else:
            warnings.append(f"map the column {header!r} to an existing grade item whose maximum is {number(scale)} "
                            "(a new grade item's maximum is 100, and Moodle would read these grades out of 100)")
        if self.identifier == "email":
            warnings.append("Moodle looks email addresses up across the whole site and takes the first account; "
                            "PostgreSQL sites compare them with case, MySQL/MariaDB sites without")
        if roster.kind != "moodle":
            warnings.append(f"every {label} must be exactly as Moodle has it, or the whole import stops "
                            "(Moodle's own grade export as the roster guarantees it)")
        scale_text = (f"grades out of {number(scale)} (nbgrader's {number(max_score)} points scaled), "
                      "the grade item's scale")
        return dict(header=header, scale=scale_text, scale_points=scale, warnings=warnings)

    def score_cell(self, grade, column: dict) -> tuple:
        value = grade.score * column["scale_points"] / grade.max_score
        if value > column["scale_points"] + 1e-9:
            return None, (f"{number(value)} is above the grade item's maximum {number(column['scale_points'])} "
                          "(extra credit): Moodle would cut it to the maximum; enter it by hand")
        return number(value), ""

    def excused_cell(self) -> str:  # refused in check_lms_settings
        raise AssertionError("Moodle has no excused grade")

    def write_csv(self, plan: FilePlan, handle) -> None:
        field, label, _ = IDENTIFIERS[self.identifier]
        out = csv.writer(handle)
        out.writerow([label, plan.header, *([f"Feedback for {plan.header}"] if self.feedback else [])])
        for line in plan.written:
            row = [line.identity.cells[label], line.value]
            if self.feedback:
                row.append(_feedback(plan.assignment, line))
            out.writerow(row)

    def settings_text(self, roster: Roster) -> list:
        field, label, form = IDENTIFIERS[self.identifier]
        return [*super().settings_text(roster), f"Identifier: {label} (c.MoodleExport.identifier = "
                                                f"{self.identifier!r}); map it to the user's {form}"]


def _feedback(assignment: str, line) -> str:
    grade = line.grade
    if grade.status == "missing":
        return f"nbgrader {assignment}: no submission"
    text = f"nbgrader {assignment}: {number(grade.score)} of {number(grade.max_score)} points"
    if grade.penalty:
        text += f", after a late penalty of {number(grade.penalty)}"
    if grade.status == "pending":
        text += f"; PARTIAL: {len(grade.pending)} grade(s) still need a manual grade"
    return text
