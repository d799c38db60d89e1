"""The roster: who each nbgrader student is in the LMS. Three formats, read by one function.

* **The kit's own** (a header with ``nbgrader_id``): the columns of :data:`KIT_COLUMNS`.
* **Canvas's gradebook export, as downloaded** (Grades > Export > CSV): ``Student`` (or
  ``LastName, FirstName``), ``ID``, ``SIS User ID``, ``SIS Login ID``, optionally ``Integration ID`` and
  ``Root Account``, ``Section``, then one ``Title (id)`` column per assignment, with a ``Points
  Possible`` row (and a ``Manual Posting`` row) before the students. Its assignment columns tell the
  export which Canvas assignments exist and their points.
* **Moodle's grade export** (Grades > Export > Plain text file): ``First name``, ``Last name``, ``ID
  number``, ``Institution``, ``Department``, ``Email address`` (the site's
  ``grade_export_userprofilefields``; ``Username`` when the site adds it), then the grade items.

Which column holds the nbgrader student id is ``nbgrader_id`` for the kit's format; for an LMS export
it is named by ``c.LmsExport.roster_id_column`` (Canvas's default: ``SIS Login ID``, the campus login a
hub usually uses; Moodle's: ``Username`` when the export has it). Ids are linked after NFC
normalisation and without regard to case (JupyterHub lower-cases user names; an LMS may not).
Every value is kept as the LMS wrote it: that is what its importer compares.

The reader is bounded (size, rows) and refuses anything it cannot read with a message that names the
file, the line and what was expected.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from pathlib import Path

from autograder.limits import LMS_ROSTER_BYTES, LMS_ROSTER_ROWS
from .cells import key, nfc

#: Columns of the kit's roster format (``nbgrader_id`` is required).
KIT_COLUMNS = ("nbgrader_id", "name", "canvas_id", "sis_user_id", "sis_login_id", "root_account", "section",
               "email", "username", "idnumber")
#: Canvas's student columns, as its gradebook export and importer name them.
CANVAS_ID_COLUMNS = {"ID": "canvas_id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id",
                     "Root Account": "root_account", "Section": "section"}
#: Moodle's user columns, as its grade export names them (English language pack).
MOODLE_COLUMNS = {"Email address": "email", "Username": "username", "ID number": "idnumber"}
_TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z", re.DOTALL)  # Canvas's Assignment.title_and_id


@dataclasses.dataclass(frozen=True)
class RosterEntry:
    """One LMS account: the value linked to an nbgrader id, and the ids the LMS importers match by."""

    link: str
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    root_account: str = ""
    section: str = ""
    email: str = ""
    username: str = ""
    idnumber: str = ""
    line: int = 0


@dataclasses.dataclass(frozen=True)
class CanvasColumn:
    """An assignment column of Canvas's own export: its header, title, Canvas id and points."""

    header: str
    title: str
    canvas_id: str
    points: float | None


@dataclasses.dataclass(frozen=True)
class Roster:
    """A roster read and checked: its format, the linking column, the accounts, and what it told us."""

    path: Path
    kind: str  # "kit" | "canvas" | "moodle"
    link_column: str
    entries: tuple[RosterEntry, ...]
    unlinked: tuple[str, ...] = ()  # names of LMS rows with no value in the linking column
    canvas_columns: tuple[CanvasColumn, ...] = ()

    def by_link(self) -> dict:
        """``{key(link): entry}``: how nbgrader ids find their account (NFC, case-folded)."""
        return {key(entry.link): entry for entry in self.entries}

    def has(self, field: str) -> bool:
        return any(getattr(entry, field) for entry in self.entries)


def read_roster(path: str | Path, link_column: str = "") -> Roster:
    """Read the roster at ``path`` in any of the three formats; raise ``ValueError`` naming what is wrong."""
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise ValueError(f"roster {path}: the file is empty; expected a header line")
    header = [nfc(cell) for cell in rows[0]]
    if "nbgrader_id" in header:
        return _kit(path, header, rows[1:], link_column or "nbgrader_id")
    if header and ("Student" in header[0] or header[:2] == ["LastName", "FirstName"]) and "ID" in header:
        return _canvas(path, header, rows[1:], link_column or "SIS Login ID")
    if "Email address" in header and ("First name" in header or "Last name" in header):
        return _moodle(path, header, rows[1:], link_column or ("Username" if "Username" in header else ""))
    raise ValueError(
        f"roster {path}: the header must name a 'nbgrader_id' column (the kit's format: "
        f"{', '.join(KIT_COLUMNS)}), or be Canvas's gradebook export (Student, ID, SIS User ID, SIS Login ID, "
        f"Section, ...) or Moodle's grade export (First name, Last name, ..., Email address); got {header}")


def _rows(path: Path) -> list:
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ValueError(f"roster {path}: cannot read it ({err.strerror}); set c.LmsExport.roster "
                         "to the roster's path") from None
    if size > LMS_ROSTER_BYTES.value:
        raise ValueError(f"roster {path}: {size} bytes, more than the {LMS_ROSTER_BYTES.value} a roster may have")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"roster {path}: not UTF-8 (byte {err.start}); save it as UTF-8 CSV") from None
    first = text.split("\n", 1)[0]
    # Canvas and Moodle export with the user's separator (comma, semicolon or tab): the header has most
    # fields under the right one.
    delimiter = max(",;\t", key=lambda sep: len(next(csv.reader([first], delimiter=sep), [])))
    rows = []
    for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter):
        if len(rows) > LMS_ROSTER_ROWS.value:
            raise ValueError(f"roster {path}: more than {LMS_ROSTER_ROWS.value} lines")
        rows.append(row)
    return rows


def _cell(row: list, index: int | None) -> str:
    return nfc(row[index]) if index is not None and index < len(row) else ""


def _entries(path: Path, numbered_rows, link_index: int, link_column: str, fields: dict, name_of,
             required: bool) -> tuple:
    """Read ``(line number, row)`` pairs: one entry each, linked through ``link_index``; duplicates refused."""
    entries, unlinked, seen = [], [], {}
    for number, row in numbered_rows:
        if not any(cell.strip() for cell in row):
            continue
        values = {field: _cell(row, index) for field, index in fields.items()}
        link = _cell(row, link_index)
        name = name_of(row)
        if not link:
            if required:
                raise ValueError(f"roster {path}, line {number}: empty {link_column}")
            unlinked.append(name or f"line {number}")
            continue
        if key(link) in seen:
            raise ValueError(f"roster {path}, line {number}: {link_column} {link!r} appears twice "
                             f"(line {seen[key(link)]}; ids are compared without regard to case)")
        seen[key(link)] = number
        entries.append(RosterEntry(link=link, name=name, line=number, **values))
    return tuple(entries), tuple(unlinked)


def _kit(path: Path, header: list, rows: list, link_column: str) -> Roster:
    unknown = sorted(set(header) - set(KIT_COLUMNS))
    if unknown:
        raise ValueError(f"roster {path}: unknown column(s) {unknown}; known: {', '.join(KIT_COLUMNS)}")
    if link_column not in header:
        raise ValueError(f"roster {path}: c.LmsExport.roster_id_column = {link_column!r} is not one of its "
                         f"columns ({', '.join(header)})")
    index = {name: header.index(name) for name in header}
    fields = {field: index.get(field) for field in KIT_COLUMNS[1:]}
    fields.pop("name")
    entries, _ = _entries(path, enumerate(rows, start=2), index[link_column], link_column, fields,
                          lambda row: _cell(row, index.get("name")), required=True)
    return Roster(path, "kit", link_column, entries)


def _canvas(path: Path, header: list, rows: list, link_column: str) -> Roster:
    if link_column not in header:
        raise ValueError(f"roster {path} is Canvas's gradebook export: c.LmsExport.roster_id_column = "
                         f"{link_column!r} is not one of its columns; name the column that holds nbgrader's "
                         f"student ids (one of {', '.join(h for h in header[:8])})")
    index = {name: header.index(name) for name in reversed(header)}
    first_last = header[:2] == ["LastName", "FirstName"]

    def name_of(row: list) -> str:
        if first_last:
            return ", ".join(part for part in (_cell(row, 0), _cell(row, 1)) if part)
        name = _cell(row, 0)
        # Canvas's exporter writes a name starting with "=" as ="name" (GradebookExporter#student_name)
        return name[2:-1] if name.startswith('="') and name.endswith('"') else name

    points_row = None
    students = []
    for number, row in enumerate(rows, start=2):
        first = row[0] if row else ""
        if "Points Possible" in first:
            points_row = row
        elif all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell or "", re.I) for cell in row):
            continue  # the "Manual Posting" row, or a blank line
        else:
            students.append((number, row))
    columns = []
    for position, title in enumerate(header):
        match = _TITLE_AND_ID.match(title)
        if not match:
            continue
        points = None
        if points_row is not None and position < len(points_row):
            try:
                points = float(points_row[position].replace(",", "."))
            except ValueError:
                points = None
        columns.append(CanvasColumn(title, nfc(match.group(1)), match.group(2), points))
    fields = {field: index.get(column) for column, field in CANVAS_ID_COLUMNS.items()}
    entries, unlinked = _entries(path, students, index[link_column], link_column, fields, name_of, required=False)
    return Roster(path, "canvas", link_column, entries, unlinked, tuple(columns))


def _moodle(path: Path, header: list, rows: list, link_column: str) -> Roster:
    if not link_column or link_column not in header:
        raise ValueError(f"roster {path} is Moodle's grade export: set c.LmsExport.roster_id_column to the "
                         f"column that holds nbgrader's student ids (one of: "
                         f"{', '.join(h for h in header if h in MOODLE_COLUMNS or h in ('First name', 'Last name'))})")
    index = {name: header.index(name) for name in reversed(header)}
    fields = {field: index.get(column) for column, field in MOODLE_COLUMNS.items()}

    def name_of(row: list) -> str:
        return " ".join(p for p in (_cell(row, index.get("First name")), _cell(row, index.get("Last name"))) if p)

    entries, unlinked = _entries(path, enumerate(rows, start=2), index[link_column], link_column, fields, name_of,
                                 required=False)
    return Roster(path, "moodle", link_column, entries, unlinked)
