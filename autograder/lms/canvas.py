"""Canvas's gradebook import (Grades > Import), written for the importer's own rules.

Canvas (``app/models/gradebook_importer.rb``, ``GradebookImporter``) reads the header ``Student, ID,
SIS User ID, SIS Login ID, [Root Account,] Section`` and one column per assignment, skips the row whose
first cell holds ``Points Possible`` (a new assignment's points), and matches each row to a student
(``process_student``) by the ``ID`` column, then the SIS User ID, then the SIS Login ID, and failing all
three **by name** (``name`` or ``sortable_name``). So this export:

* writes only students with an id Canvas can match (a numeric ``ID``, SIS ids the importer's
  ``decimal_comma_to_period`` converter leaves unchanged and no spreadsheet would run as a formula);
  the others are left out and listed;
* writes the Student column as ``Last, First (nbgrader: id)``, a name no Canvas account has, so a row
  whose ids no longer match is listed by Canvas as unmatched instead of going to a same-named student;
* refuses students who share an id with another account (Canvas would give both rows to one);
* writes a score only where the kit has one: a student without a grade is left out (a blank cell is a
  change to Canvas and clears the grade it has, Excused included), ``EX`` or ``0`` only where
  ``c.LmsExport.missing`` says so;
* writes percentages by default (``87.5%``, which ``Assignment#interpret_grade`` scales to the
  assignment's own points), so an existing 10-point assignment gets 8.75, not 87.5.
"""

from __future__ import annotations

import collections
import re

from .base import LmsExport
from .cells import formula_like, has_control, nfc, number, spreadsheet_text
from .plan import FilePlan, Identity, Person
from .roster import Roster

#: The student columns Canvas's importer recognises (``GRADEBOOK_IMPORTER_RESERVED_NAMES``).
RESERVED = ("Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section", "Integration ID",
            "Root Account")
#: Column titles Canvas's importer drops as totals (``NON_ASSIGNMENT_COLUMN_HEADERS``, matched anywhere).
NON_ASSIGNMENT = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                            "Override Score|Override Grade|Override Status")
_TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z", re.DOTALL)


def canvas_reads(cell: str) -> str:
    """The cell as Canvas's importer reads it: its ``decimal_comma_to_period`` CSV converter.

    A cell of digits, dots and commas has its last ``.`` or ``,`` made the decimal point and the
    others dropped; anything else is unchanged. An id it would change cannot be matched.

    >>> canvas_reads("87.5%"), canvas_reads("1,5"), canvas_reads("1.234.5"), canvas_reads("S-101")
    ('87.5%', '1.5', '1234.5', 'S-101')
    """
    if re.fullmatch(r"-?[0-9.,]+%?", cell):
        parts = re.split(r"[,.]", cell)
        last = parts.pop()
        return last if not parts else "".join(parts) + "." + last
    return cell


def _sis_problem(label: str, value: str) -> str:
    if has_control(value):
        return f"{label} {value!r} holds a control character"
    if formula_like(value):
        return f"{label} {value!r} starts like a spreadsheet formula (= + - @), so it is not written"
    if canvas_reads(value) != value:
        return f"{label} {value!r} would be read by Canvas as {canvas_reads(value)!r}"
    return ""


class CanvasExport(LmsExport):
    """Canvas's gradebook CSV: Student, ID, SIS User ID, SIS Login ID, [Root Account,] Section, one assignment."""

    lms = "Canvas"
    default_to = "canvas-{assignment}.csv"
    upload_hint = "Grades > Import, then check Canvas's list of changes and unmatched students before saving"

    def identities(self, people: list, roster: Roster) -> dict:
        ids = {}
        owners = collections.defaultdict(list)  # (column, value) -> roster entries holding it
        for entry in roster.entries:
            cells, _ = self._ids(entry)
            for column in ("ID", "SIS User ID", "SIS Login ID"):
                if cells[column]:
                    value = int(cells[column]) if column == "ID" else (cells["Root Account"], cells[column])
                    owners[(column, value)].append(entry)
        for person in people:
            if person.refusal or person.entry is None:
                ids[person.nbgrader_id] = person.refusal
                continue
            cells, problems = self._ids(person.entry)
            shared = []
            for column in ("ID", "SIS User ID", "SIS Login ID"):
                if cells[column]:
                    value = int(cells[column]) if column == "ID" else (cells["Root Account"], cells[column])
                    others = [e for e in owners[(column, value)] if e is not person.entry]
                    if others:
                        shared.append(f"{column} {cells[column]!r} with {', '.join(_who(e) for e in others)}")
            if shared:
                ids[person.nbgrader_id] = ("shares " + "; ".join(shared) +
                                           ": Canvas would give both rows to one account")
                continue
            matched = next((f"{column} {cells[column]}" for column in ("ID", "SIS User ID", "SIS Login ID")
                            if cells[column]), "")
            if not matched:
                ids[person.nbgrader_id] = ("no id Canvas can match by (ID, SIS User ID and SIS Login ID empty or "
                                           "unusable" + (": " + "; ".join(problems) if problems else "") + ")")
                continue
            cells["Student"] = _student_cell(person)
            cells["Section"] = spreadsheet_text(person.entry.section)
            ids[person.nbgrader_id] = Identity(cells, matched + (f" ({'; '.join(problems)})" if problems else ""))
        return ids

    @staticmethod
    def _ids(entry) -> tuple:
        """The id cells to write for an account (unusable ones blank) and why any was dropped."""
        problems = []
        canvas_id = entry.canvas_id
        if canvas_id and not (canvas_id.isascii() and canvas_id.isdigit() and int(canvas_id) > 0):
            problems.append(f"ID {canvas_id!r} is not a Canvas user id (digits)")
            canvas_id = ""
        cells = {"ID": canvas_id}
        for label, value in (("SIS User ID", entry.sis_user_id), ("SIS Login ID", entry.sis_login_id),
                             ("Root Account", entry.root_account)):
            problem = _sis_problem(label, value) if value else ""
            if problem:
                problems.append(problem)
            cells[label] = "" if problem else value
        return cells, problems

    def column(self, assignment: str, max_score: float, roster: Roster) -> dict:
        if max_score <= 0:
            raise ValueError(f"{assignment}: nbgrader's maximum is {max_score}: no percentage or scale exists")
        warnings = []
        header = nfc(str(self.assignment_columns.get(assignment, "")))
        existing = None
        if header:
            match = _TITLE_AND_ID.match(header)
            if match:
                existing = next((c for c in roster.canvas_columns if c.canvas_id == match.group(2)), None)
            else:
                existing = next((c for c in roster.canvas_columns if c.title == header), None)
        else:
            same = [c for c in roster.canvas_columns if c.title == assignment]
            if len(same) > 1:
                raise ValueError(f"{assignment}: the roster's Canvas export has {len(same)} assignments titled "
                                 f"{assignment!r} ({', '.join(c.header for c in same)}): name the one to update "
                                 f"with c.LmsExport.assignment_columns = {{{assignment!r}: '...'}}")
            existing = same[0] if same else None
            header = existing.header if existing else assignment
        _check_header(assignment, header)
        points = self.points.get(assignment)
        known = existing.points if existing else None
        if points is not None and known is not None and abs(float(points) - known) > 1e-9:
            raise ValueError(f"{assignment}: c.LmsExport.points says {points} points, the roster's Canvas export "
                             f"says {number(known)} for {existing.header!r}; correct the setting")
        points = float(points) if points is not None else known
        new = existing is None and roster.kind == "canvas" and not _TITLE_AND_ID.match(header)
        if existing is None and roster.kind != "canvas":
            warnings.append(f"Canvas gives the column {header!r} to an existing assignment of that title (or "
                            "\"Title (id)\"), and creates one if there is none")
        elif new:
            warnings.append(f"Canvas has no assignment {header!r} (per the roster's export): the import creates it")
        if self.percent:
            possible = points if points is not None else max_score
            scale = (f"percentages of nbgrader's {number(max_score)} points (\"87.5%\"), which Canvas scales to "
                     "the assignment's own points" +
                     (f" ({number(known)}, per the roster's export)" if known is not None else
                      f"; a new assignment gets {number(possible)} points"))
            return dict(header=header, scale=scale, points_possible=possible, scale_points=None, warnings=warnings)
        if points is None:
            if not new:
                raise ValueError(f"{assignment}: c.LmsExport.percent = False writes points, and the points of "
                                 f"Canvas's assignment {header!r} are unknown: set c.LmsExport.points = "
                                 f"{{{assignment!r}: N}}, use Canvas's own export as the roster, or keep "
                                 "percent = True")
            points = max_score
        scale = (f"points out of {number(points)} (nbgrader's {number(max_score)} points scaled), "
                 "the Canvas assignment's scale")
        return dict(header=header, scale=scale, points_possible=points, scale_points=points, warnings=warnings)

    def score_cell(self, grade, column: dict) -> tuple:
        if column["scale_points"] is None:
            return number(100.0 * grade.score / grade.max_score) + "%", ""
        return number(grade.score * column["scale_points"] / grade.max_score), ""

    def excused_cell(self) -> str:
        return "EX"

    def write_csv(self, plan: FilePlan, handle) -> None:
        import csv

        root = any(line.identity.cells.get("Root Account") for line in plan.written)
        columns = ["Student", "ID", "SIS User ID", "SIS Login ID", *(["Root Account"] if root else []), "Section"]
        out = csv.writer(handle)
        out.writerow([*columns, plan.header])
        out.writerow(["    Points Possible", *[""] * (len(columns) - 1), number(plan.points_possible)])
        for line in plan.written:
            out.writerow([*(line.identity.cells.get(c, "") for c in columns), line.value])

    def settings_text(self, roster: Roster) -> list:
        return [*super().settings_text(roster),
                "Names: 'Last, First (nbgrader: id)', a name no Canvas account has: a row whose ids do not match is "
                "listed by Canvas as unmatched, never given to a same-named student"]


def _who(entry) -> str:
    return f"{entry.name or entry.link} ({entry.link})"


def _student_cell(person: Person) -> str:
    text = f"{person.name} (nbgrader: {nfc(person.nbgrader_id)})"
    # A first cell containing "Points Possible" is read as the points row (check_for_non_student_row).
    return spreadsheet_text(text.replace("Points Possible", "Points-Possible"))


def _check_header(assignment: str, header: str) -> None:
    problem = ""
    if formula_like(header) or has_control(header):
        problem = "starts like a spreadsheet formula or holds a control character"
    elif header in RESERVED:
        problem = "is one of Canvas's student columns"
    elif NON_ASSIGNMENT.search(header):
        problem = f"contains {NON_ASSIGNMENT.search(header).group(0)!r}, a total Canvas's importer drops"
    elif "Points Possible" in header:
        problem = "contains 'Points Possible'"
    if problem:
        raise ValueError(f"{assignment}: the column header {header!r} {problem}; set another with "
                         f"c.LmsExport.assignment_columns = {{{assignment!r}: '...'}}")
