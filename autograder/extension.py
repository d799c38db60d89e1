"""``autograder extension``: give (or take back) one student's extension, in nbgrader's own gradebook.

nbgrader keeps an extension on the student's submission record (``SubmittedAssignment.extension``, a
time added to ``Assignment.duedate``; ``SubmittedAssignment.total_seconds_late`` counts from the sum),
and every late penalty is computed from that: ``nbgrader autograde`` (and formgrader's Autograde
button) through ``AssignLatePenalties``, ``autograder grade`` through the same plugin for every
submission, changed or not. nbgrader 0.9.6 has no command and formgrader no field to set it, so
:func:`give` does it through nbgrader's API, on the gradebook of the course's configuration (whatever
``c.CourseDirectory.db_url`` says, read as every ``autograder`` command reads it), and then applies
the late penalty of each of the submission's notebooks again with the course's
``LateSubmissionPlugin`` (:meth:`autograder.grading.gradebook.GradebookWriter.assign_late_penalty`,
the function ``autograder grade`` uses), all in one transaction: ``nbgrader export`` and formgrader
show the new total at once, and the feedback pages after the next ``nbgrader generate_feedback``.

An extension given before the student submits is kept on an empty submission record (nbgrader has
nowhere else to keep it); collect and grading fill that record in when the work arrives. Times are
UTC unless they name a zone or an offset, as for ``nbgrader db assignment add --duedate``
(:func:`nbgrader.utils.parse_utc`), except that an offset written after a space (``+0100``) is an
hour, where nbgrader 0.9.6 reads it as 100 seconds.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
import warnings

from autograder.limits import EXTENSION_DAYS
from autograder.student_ids import check_student_id

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}")
UNTIL_FORMS = "2026-12-20 17:00 (UTC), 2026-12-20 17:00 Europe/Berlin or 2026-12-20T17:00+01:00"


class ExtensionError(ValueError):
    """Bad arguments or a course state that rules the extension out; nothing was changed."""


@dataclasses.dataclass(frozen=True)
class Deadline:
    """One student's deadline for one assignment, after :func:`give` (times naive UTC, as nbgrader keeps them)."""

    assignment: str
    student: str
    due: datetime.datetime | None  # the assignment's due date
    extension: datetime.timedelta | None
    submitted: datetime.datetime | None  # the submission's time, None when nothing was submitted yet
    #: notebook -> (penalty before, penalty after), for the notebooks of a graded submission
    penalties: dict
    changed: bool
    record_created: bool = False  # an empty submission record now holds the extension
    graded: bool = False  # some notebook of the submission has a score

    @property
    def effective(self) -> datetime.datetime | None:
        """The time the student's work counts as on time until (due date plus extension)."""
        if self.due is None:
            return None
        return self.due + self.extension if self.extension is not None else self.due


def parse_until(text: str) -> datetime.datetime:
    """``--until``'s time as naive UTC; :class:`ExtensionError` unless it is a date and time nbgrader reads.

    >>> parse_until("2026-12-20 17:00"), parse_until("2026-12-20 17:00 Europe/Berlin")
    (datetime.datetime(2026, 12, 20, 17, 0), datetime.datetime(2026, 12, 20, 16, 0))
    >>> parse_until("2026-12-20 17:00 +0100") == parse_until("2026-12-20T17:00+01:00")
    True
    """
    import dateutil.parser
    import dateutil.tz
    from nbgrader.utils import parse_utc

    what = f"--until {text!r} is not a date and time: write it as {UNTIL_FORMS}"
    if not isinstance(text, str) or len(text) > 80 or not _TIME.match(text.strip()):
        raise ExtensionError(what)
    text = text.strip()
    parts = text.split(" ")
    try:
        if len(parts) == 3:  # "DATE TIME ZONE"
            zone = parts[2]
            if re.fullmatch(r"[+-]\d{2}:?\d{2}", zone):
                # An offset, read as hours and minutes: nbgrader 0.9.6's parse_utc would take "+0100" as 100
                # *seconds* (it hands the number to dateutil as a tzinfos offset in seconds).
                return parse_utc(dateutil.parser.parse(text))
            if re.fullmatch(r"[+-]?\d+", zone):
                raise ExtensionError(f"--until {text!r}: write the offset as +HHMM or +HH:MM (such as +0100)")
            if dateutil.tz.gettz(zone) is None:  # parse_utc would silently read the time as UTC
                raise ExtensionError(f"--until {text!r}: {zone!r} is not a time zone (use a name such as "
                                     "Europe/Berlin, or an offset such as +0100)")
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError) as error:
        if isinstance(error, ExtensionError):
            raise
        raise ExtensionError(what) from None


def _extension(due, *, until: datetime.datetime | None, days: float | None) -> datetime.timedelta:
    if days is not None:
        if not (isinstance(days, (int, float)) and math.isfinite(days) and 0 < days <= EXTENSION_DAYS.value):
            raise ExtensionError(f"--days should be a number of days above 0 and at most {EXTENSION_DAYS.value}, not {days!r}")
        return datetime.timedelta(days=days)
    if until <= due:
        raise ExtensionError(f"--until {_shown(until)} is not after the due date {_shown(due)}: an extension "
                             "moves the deadline later (use --remove to take an extension back)")
    return until - due


def give(coursedir, assignment: str, student: str, *, until: datetime.datetime | None = None,
         days: float | None = None, remove: bool = False) -> Deadline:
    """Record (or, with ``remove``, delete) ``student``'s extension for ``assignment`` in the course's
    gradebook and apply the late penalties again; with no change asked, only read the deadline.

    ``coursedir`` is nbgrader's ``CourseDirectory`` with the course's configuration
    (:func:`autograder.grading.gradebook.course_directory`).
    """
    from nbgrader.api import MissingEntry

    from autograder.grading.gradebook import GradebookWriter

    if sum(x is not None for x in (until, days)) + bool(remove) > 1:
        raise ExtensionError("give one of --until, --days and --remove")
    try:
        student = check_student_id(student, "--student")
    except ValueError as error:
        raise ExtensionError(str(error)) from None
    asked = until is not None or days is not None or remove
    with GradebookWriter(coursedir, assignment) as writer:
        gb = writer.gradebook
        try:
            due = gb.find_assignment(assignment).duedate
        except MissingEntry:
            names = sorted(a.name for a in gb.assignments)
            raise ExtensionError(f"assignment {assignment!r} is not in the gradebook "
                                 f"({', '.join(names) if names else 'it has no assignment yet'})") from None
        try:
            gb.find_student(student)
        except MissingEntry:
            import difflib
            close = difflib.get_close_matches(student, [s.id for s in gb.students], n=3, cutoff=0.6)
            raise ExtensionError(
                f"--student {student!r} is not a student in the gradebook"
                + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")
                + ": add the class with `autograder roster ROSTER.csv` first") from None
        if (until is not None or days is not None) and due is None:
            raise ExtensionError(
                f"{assignment} has no due date in the gradebook, so nothing is late and an extension would "
                f"change nothing: set one first, e.g. `nbgrader db assignment add {assignment} "
                f"--duedate=\"2026-12-13 17:00 UTC\"`")
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            submission = None
        if not asked or (remove and (submission is None or submission.extension is None)):
            extension = submission.extension if submission is not None else None
            return Deadline(assignment, student, due, extension, submission.timestamp if submission else None,
                            {}, changed=False, graded=_graded(submission))
        extension = None if remove else _extension(due, until=until, days=days)
        created = submission is None
        if created:  # nbgrader keeps an extension only on a submission record: an empty one until work arrives
            with warnings.catch_warnings():
                # nbgrader's own submission setup trips SQLAlchemy's autoflush warnings; they are harmless.
                warnings.simplefilter("ignore")
                submission = gb.update_or_create_submission(assignment, student, extension=extension)
        before = {nb.name: nb.late_submission_penalty for nb in submission.notebooks}
        try:
            submission.extension = extension
            after = {name: writer.assign_late_penalty(student, name, commit=False) for name in before}
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        graded = _graded(submission)
        return Deadline(assignment, student, due, extension, submission.timestamp,
                        {name: (before[name], after[name]) for name in before} if graded else {},
                        changed=True, record_created=created, graded=graded)


def _graded(submission) -> bool:
    """Whether any notebook of ``submission`` (nbgrader's record, or None) holds a score."""
    return submission is not None and any(grade.auto_score is not None or grade.manual_score is not None
                                          for notebook in submission.notebooks for grade in notebook.grades)


def _shown(when: datetime.datetime | None) -> str:
    return "(none)" if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _points(value) -> str:
    return "none" if value is None else f"{value:g} points"


def _duration(delta: datetime.timedelta) -> str:
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes else []
    return " ".join(parts) or f"{seconds} s"


def describe(made: Deadline, *, removed: bool = False, display_zone: str = "UTC") -> str:
    """What :func:`give` did, for the terminal: the effective deadline first."""
    who = f"{made.student} ({made.assignment})"
    lines = []
    if made.due is None:
        lines.append(f"{who}: the assignment has no due date, so nothing is late")
    elif made.extension is None:
        lines.append(f"{who}: no extension{' (removed)' if removed and made.changed else ''}; deadline "
                     f"{_shown(made.due)}, the assignment's due date")
    else:
        lines.append(f"{who}: deadline {_shown(made.effective)} = due date {_shown(made.due)} + extension "
                     f"{_duration(made.extension)}")
    if made.effective is not None and display_zone and display_zone.upper() != "UTC":
        from nbgrader.utils import as_timezone
        local = as_timezone(made.effective, display_zone)
        lines.append(f"  (that is {local.strftime('%Y-%m-%d %H:%M %Z')}, {display_zone}, as formgrader shows times)")
    if not made.graded:
        lines.append(f"  no graded submission of {made.student} yet"
                     + (": the extension waits on an empty submission record in the gradebook (formgrader "
                        "lists it with 0 points until the work is collected and graded)"
                        if made.extension is not None else ""))
    elif made.submitted is None:
        lines.append("  the graded submission has no time, so no late penalty applies to it")
    else:
        late = made.effective is not None and made.submitted > made.effective
        lines.append(f"  submitted {_shown(made.submitted)}: {'late' if late else 'on time'}"
                     + (" with this deadline" if made.extension is not None else ""))
        for name, (before, after) in sorted(made.penalties.items()):
            if before != after:
                lines.append(f"  late penalty of {name}: {_points(after)} (was {_points(before)})")
        if made.changed:
            lines.append("  stored in the gradebook: `nbgrader export` and formgrader show it now, the feedback "
                         "pages after `nbgrader generate_feedback`")
    if not made.changed and removed:
        lines.append("  nothing to remove: no extension was recorded")
    return "\n".join(lines)


__all__ = ["Deadline", "ExtensionError", "describe", "give", "parse_until"]
