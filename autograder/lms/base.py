"""The shared part of the Canvas and Moodle exports: the settings, the plan, the refusals, the files.

``export`` reads as its stages: settings checked, roster read, assignments chosen, people linked, ids
checked (the LMS's part), grades read, pending grades refused, one :class:`~.plan.FilePlan` per
assignment, then the files. Every check runs before the first file is written: a refusal writes
nothing, and changes nothing already there.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Bool, Dict, Enum, List, Unicode

from .preview import render as render_preview, unmatched_csv
from .cells import clean_text, formula_like, has_control, number
from .gradebook import Grade, grades, requested, select_assignments
from .plan import ExportRefused, FilePlan, Identity, Line, Person, link, output_path
from .roster import Roster, read_roster


class LmsExport(ExportPlugin):
    """Grades into an LMS's CSV import, exactly as the gradebook says, or not at all."""

    roster = Unicode(
        "", help="The roster: the kit's CSV (nbgrader_id, name, canvas_id, sis_user_id, sis_login_id, root_account, "
                 "section, email, username, idnumber), or the LMS's own gradebook export as downloaded "
                 "(Canvas's CSV, Moodle's plain-text export). Required. A relative path is read from the course "
                 "directory.").tag(config=True)
    roster_id_column = Unicode(
        "", help="The roster column that holds nbgrader's student ids (default: 'nbgrader_id'; in Canvas's "
                 "export 'SIS Login ID'; in Moodle's 'Username' when it has one). Compared after Unicode NFC "
                 "normalisation and without regard to case.").tag(config=True)
    assignments = List(
        Unicode(), help="The assignments to export when --assignment does not name them (default: those with a "
                        "submission in the gradebook or a collected one in submitted/). --assignment wins."
    ).tag(config=True)
    assignment_columns = Dict(
        help="Column header per assignment (e.g. {'module6': 'Module 6 (1234)'}, Canvas's 'Name (ID)' form, to "
             "update an existing Canvas assignment). Default: the assignment's own column in the roster's Canvas "
             "export when it has exactly one with that title, else the assignment's name.").tag(config=True)
    points = Dict(
        help="Each assignment's points in the LMS (e.g. {'module6': 10}). Canvas: the points a new assignment "
             "gets, and with percent = False the scale scores are written on. Moodle: the maximum grade of the "
             "grade item the column is mapped to (default 100, a new grade item's maximum).").tag(config=True)
    percent = Bool(
        True, help="Write scores as percentages of nbgrader's maximum: Canvas reads '87.5%' and scales it to the "
                   "assignment's own points, whatever they are; Moodle (which reads no '%') gets the number on a "
                   "0-100 scale, a new grade item's. False: raw points, scaled to c.LmsExport.points.").tag(config=True)
    missing = Enum(
        ["leave", "zero", "excuse"], default_value="leave",
        help="A student with no submission: 'leave' (left out of the file: the LMS keeps what it has), 'zero' "
             "(0), 'excuse' (Canvas's EX; Moodle's CSV import has no excused grade).").tag(config=True)
    allow_pending = Bool(
        False, help="Export partial totals while grades still need a manual grade (the file name gets "
                    "'.partial'); by default the export refuses and lists them.").tag(config=True)
    dry_run = Bool(
        False, help="Write only the preview (<file>.preview.txt) and the unmatched list, not the grade file."
    ).tag(config=True)

    #: the LMS's name in messages, and the file written when --to is not given
    lms = "LMS"
    default_to = "lms-{assignment}.csv"

    # ---- the LMS's part -------------------------------------------------------------------------
    def check_lms_settings(self) -> None:
        """Refuse settings this LMS's importer cannot honour."""

    def identities(self, people: list, roster: Roster) -> dict:
        """``{nbgrader id: Identity or refusal sentence}`` for the linked people."""
        raise NotImplementedError

    def column(self, assignment: str, max_score: float, roster: Roster) -> dict:
        """``header``, ``scale`` (sentence), ``points_possible`` and what :meth:`score_cell` needs."""
        raise NotImplementedError

    def score_cell(self, grade: Grade, column: dict) -> tuple:
        """``(cell, note)`` for a score (``cell`` None: left out, ``note`` says why)."""
        raise NotImplementedError

    def excused_cell(self) -> str:
        raise NotImplementedError

    def write_csv(self, plan: FilePlan, handle) -> None:
        raise NotImplementedError

    def settings_text(self, roster: Roster) -> list:
        """Lines of the preview's head that say how this export was set up."""
        kinds = {"kit": "the kit's format", "canvas": "Canvas's gradebook export", "moodle": "Moodle's grade export"}
        missing = {"leave": "leave (left out of the file: the LMS keeps what it has)", "zero": "zero (0)",
                   "excuse": "excuse (EX)"}
        return [f"Roster: {roster.path} ({kinds[roster.kind]}; nbgrader ids in {roster.link_column!r})",
                f"Missing submission: {missing[self.missing]}"]

    # ---- the stages -----------------------------------------------------------------------------
    def export(self, gradebook: Gradebook) -> None:
        try:
            plans, roster = self.plan(gradebook)
        except ValueError as err:  # ExportRefused, or a setting or roster that cannot be read
            message = f"{self.lms} export refused, nothing written: {err}"
            fail = getattr(self.parent, "fail", None)
            if callable(fail):
                fail(message)  # nbgrader's app: logs the error, exits 1
            raise ExportRefused(message) from None
        self.write(plans, roster)

    def plan(self, gradebook: Gradebook) -> tuple:
        """Every file's plan, or :class:`ExportRefused` / ``ValueError`` naming what is wrong."""
        self.check_settings()
        roster = self.load_roster()
        submitted = self.submitted_root()
        # --assignment (nbgrader's ExportPlugin.assignment) first, then this plugin's own setting
        names = requested(self.assignment) or requested(self.assignments)
        chosen, skipped = select_assignments(gradebook, names, submitted)
        for name in skipped:
            self.log.info("%s: no collected submissions, not exported (name it with --assignment=%s to "
                          "export it anyway)", name, name)
        if not chosen:
            raise ExportRefused("no assignment in the gradebook has a submission yet; name one with --assignment")
        self.check_assignment_settings([a.name for a in gradebook.assignments])
        people = link(list(gradebook.students), roster, requested(self.student))
        identities = self.identities(people, roster)
        ids = {person.nbgrader_id for person in people}
        table = {name: grades(gradebook, name, ids, submitted) for name in chosen}
        self.refuse_pending(people, identities, table)
        several = len(chosen) > 1
        maxima = {a.name: float(a.max_score) for a in gradebook.assignments}
        plans = [self.file_plan(name, maxima[name], table[name], people, identities, roster, several)
                 for name in chosen]
        for plan in plans:
            if plan.path.resolve() == roster.path.resolve():
                raise ValueError(f"--to {self.to!r} would overwrite the roster {roster.path}; choose another file")
        return plans, roster

    def check_settings(self) -> None:
        if not self.roster:
            raise ValueError("no roster: set c.LmsExport.roster in nbgrader_config.py to the LMS's gradebook "
                             "export as downloaded (or the kit's roster CSV); the LMS can only match a row by "
                             "the ids it lists")
        for name, value in self.points.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"c.LmsExport.points[{name!r}] = {value!r}: expected the assignment's points in "
                                 "the LMS, a number > 0")
        for name, header in self.assignment_columns.items():
            header = str(header)
            if not clean_text(header) or formula_like(header) or has_control(header):
                raise ValueError(f"c.LmsExport.assignment_columns[{name!r}] = {header!r}: expected a column header "
                                 "that does not start with = + - @ (a spreadsheet formula) and holds no control "
                                 "characters")
        self.check_lms_settings()

    def check_assignment_settings(self, known: list) -> None:
        for setting, mapping in (("points", self.points), ("assignment_columns", self.assignment_columns)):
            unknown = sorted(set(map(str, mapping)) - set(known))
            if unknown:
                raise ValueError(f"c.LmsExport.{setting} names {', '.join(map(repr, unknown))}, not in the "
                                 f"gradebook (it has: {', '.join(known)})")

    def course_root(self) -> Path | None:
        coursedir = getattr(self.parent, "coursedir", None)
        return Path(coursedir.root) if coursedir is not None else None

    def submitted_root(self) -> Path | None:
        coursedir = getattr(self.parent, "coursedir", None)
        if coursedir is None:
            return None
        return Path(coursedir.root) / coursedir.submitted_directory

    def load_roster(self) -> Roster:
        path = Path(self.roster).expanduser()
        root = self.course_root()
        if not path.is_absolute() and root is not None:
            path = root / path  # as nbgrader_config.py is: relative to the course directory
        return read_roster(path, self.roster_id_column)

    def refuse_pending(self, people: list, identities: dict, table: dict) -> None:
        """Refuse, listing them, grades not final for students whose row would be written."""
        if self.allow_pending:
            return
        lines = []
        for assignment, by_student in table.items():
            for person in people:
                grade = by_student[person.nbgrader_id]
                if not isinstance(identities.get(person.nbgrader_id), Identity):
                    continue
                if grade.status == "pending":
                    lines.append(f"  {assignment}  {person.nbgrader_id}: needs a manual grade in "
                                 f"{'; '.join(grade.pending)}")
                elif grade.status == "ungraded":
                    lines.append(f"  {assignment}  {person.nbgrader_id}: collected, not autograded yet")
        if lines:
            raise ExportRefused(
                f"{len(lines)} grade(s) are not final: grade them (formgrader's Manual Grading, or autograde "
                "the collected submissions), or export partial totals with --LmsExport.allow_pending=True "
                "(the file name then says .partial):\n" + "\n".join(lines))

    def file_plan(self, assignment: str, max_score: float, by_student: dict, people: list, identities: dict,
                  roster: Roster, several: bool) -> FilePlan:
        column = self.column(assignment, max_score, roster)
        lines = [self.line(person, by_student[person.nbgrader_id], identities.get(person.nbgrader_id), column)
                 for person in people]
        partial = any(line.value is not None and line.grade.status == "pending" for line in lines)
        path = output_path(self.to, self.default_to, assignment, several, partial)
        warnings = list(column.get("warnings", []))
        if roster.unlinked:
            warnings.append(f"{len(roster.unlinked)} roster row(s) have no {roster.link_column!r} and are not "
                            f"linked to nbgrader: {', '.join(roster.unlinked)}")
        for line in lines:
            if line.value is None and not line.unmatched and line.grade.status in ("graded", "pending"):
                warnings.append(f"{line.person.nbgrader_id} left out: {line.note}")
        for status, why in (("missing", "no submission: the LMS keeps what it has (c.LmsExport.missing = 'zero' or "
                                         "'excuse' writes them)"),
                            ("ungraded", "collected, not autograded yet")):
            left = [line.person.nbgrader_id for line in lines
                    if line.value is None and not line.unmatched and line.grade.status == status]
            if left:
                warnings.append(f"{len(left)} student(s) left out, {why}: {', '.join(left)}")
        if partial:
            warnings.append("PARTIAL totals: some written grades still need a manual grade (see the notes)")
        if not any(line.value is not None for line in lines):
            warnings.append("no grade to write: the file has its header only")
        return FilePlan(assignment, column["header"], path, column["scale"], lines, warnings, partial,
                        column.get("points_possible"))

    def line(self, person: Person, grade: Grade, identity, column: dict) -> Line:
        if not isinstance(identity, Identity):
            return Line(person, grade, None, None, identity or person.refusal, unmatched=True)
        if grade.status in ("graded", "pending"):
            cell, note = self.score_cell(grade, column)
            if cell is not None and grade.status == "pending":
                note = (f"PARTIAL: {len(grade.pending)} grade(s) still need a manual grade "
                        f"({'; '.join(grade.pending)})")
            return Line(person, grade, cell, identity if cell is not None else None, note)
        if grade.status == "ungraded":
            return Line(person, grade, None, None, "collected, not autograded yet: no total to write")
        if self.missing == "zero":
            return Line(person, grade, "0", identity, "no submission: 0 (c.LmsExport.missing = 'zero')")
        if self.missing == "excuse":
            return Line(person, grade, self.excused_cell(), identity,
                        "no submission: excused (c.LmsExport.missing = 'excuse')")
        return Line(person, grade, None, None, "no submission: left out (c.LmsExport.missing = 'leave')")

    def write(self, plans: list, roster: Roster) -> None:
        settings = self.settings_text(roster)
        for plan in plans:
            status = (f"DRY RUN: {plan.path} was not written (c.LmsExport.dry_run = True)" if self.dry_run else
                      f"written; upload {plan.path} in {self.lms} ({self.upload_hint})")
            _atomic_write(Path(f"{plan.path}.preview.txt"), render_preview(plan, self.lms, settings, status))
            _atomic_write(Path(f"{plan.path}.unmatched.csv"), unmatched_csv(plan), bom=True)
            if not self.dry_run:
                _atomic_write(plan.path, None, bom=True, writer=lambda handle, plan=plan: self.write_csv(plan, handle))
            self.report(plan)

    upload_hint = ""

    def report(self, plan: FilePlan) -> None:
        """The command's log: what was written, who was left out, every warning."""
        verb = "Would write" if self.dry_run else "Wrote"
        self.log.info("%s %s: %s (%d grade(s)); preview: %s.preview.txt", verb, self.lms, plan.path,
                      len(plan.written), plan.path)
        unmatched = [line for line in plan.lines if line.unmatched]
        if unmatched:
            self.log.warning("%s: %d student(s) left out because %s cannot match them by an id (listed in "
                             "%s.unmatched.csv):\n%s", plan.assignment, len(unmatched), self.lms, plan.path,
                             "\n".join(f"  {line.person.nbgrader_id}: {line.note}" for line in unmatched))
        for warning in plan.warnings:
            self.log.warning("%s: %s", plan.assignment, warning)


def _atomic_write(path: Path, text: str | None, bom: bool = False, writer=None) -> None:
    """Write ``path`` whole or not at all (a temporary file in the same folder, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as handle:
            if writer is not None:
                writer(handle)
            else:
                handle.write(text)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["LmsExport", "ExportRefused", "number"]
