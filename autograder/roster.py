"""The class roster into nbgrader's gradebook: ids checked, names as formgrader shows them.

The roster is the CSV the LMS exports read (``c.LmsExport.roster``; columns ``nbgrader_id``, ``name``,
``email``, ...: :mod:`autograder.lms`, whose :func:`~autograder.lms.read_roster` reads it here too).
``autograder roster [ROSTER.csv]`` puts every student of it into the gradebook
(:func:`apply`), so that

* formgrader lists them by name (it shows the gradebook's ``Student.last_name, first_name``, and
  "None, None" for a student created by collect or autograde, who has only an id);
* the gradebook holds the class before the first submission is collected (a submission under an id
  the gradebook does not know is a stranger, not a student);
* every id is checked where it enters (:func:`autograder.student_ids.check_student_id`), and so is
  every name and e-mail address (student-controlled text in an LMS: no markup, no control
  characters, no spreadsheet formula start, since ``nbgrader export`` writes names into a CSV).

A roster with any bad row changes nothing: every problem is listed and the gradebook is left as it
was. Students of the gradebook missing from the roster are left as they are (and listed); a roster
row with an empty ``name`` or ``email`` keeps the gradebook's. All changes are one transaction.

Names: nbgrader keeps a first and a last name; the roster has one ``name``. ``"Lovelace, Ada"``
(Canvas's sortable form: family name, comma, given names) is split at the comma; otherwise the last
word is the last name (``"Ada King Lovelace"`` -> ``Ada King`` / ``Lovelace``), and a single word is a
last name with an empty first name. Write the comma form where that guess would be wrong.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from pathlib import Path

from autograder.limits import ROSTER_FIELD_CHARS
from autograder.student_ids import check_student_id

#: Problems listed at most in one error (the rest are counted).
SHOWN_PROBLEMS = 20


class RosterError(ValueError):
    """The roster cannot be used; the message lists what is wrong (nothing was changed)."""


@dataclasses.dataclass(frozen=True)
class RosterStudent:
    """One roster row as the gradebook stores it; None means "the roster does not say"."""

    id: str
    first_name: str | None
    last_name: str | None
    email: str | None


@dataclasses.dataclass(frozen=True)
class Applied:
    """What :func:`apply` did (or, with ``dry_run``, would do)."""

    added: tuple  # ids new to the gradebook
    updated: tuple  # ids whose name or e-mail changed
    unchanged: tuple
    not_in_roster: tuple  # gradebook students the roster does not list (left as they are)


def split_name(name: str) -> tuple:
    """``(first_name, last_name)`` of a roster ``name`` (see the module docstring).

    >>> split_name("Lovelace, Ada"), split_name("Ada King Lovelace"), split_name("Hypatia")
    (('Ada', 'Lovelace'), ('Ada King', 'Lovelace'), ('', 'Hypatia'))
    """
    if "," in name:
        last, first = name.split(",", 1)
        return " ".join(first.split()), " ".join(last.split())
    words = name.split()
    return " ".join(words[:-1]), (words[-1] if words else "")


def text_problem(value: str) -> str | None:
    """What makes ``value`` unfit as a name or e-mail shown in formgrader and written to CSV, or None."""
    if len(value) > ROSTER_FIELD_CHARS.value:
        return f"is {len(value)} characters long, more than the gradebook's {ROSTER_FIELD_CHARS.value}"
    for char in value:
        if unicodedata.category(char)[0] == "C":
            return f"holds the control character U+{ord(char):04X}"
        if char in "<>":
            return f"holds {char!r}, which HTML reads as markup"
    if value[:1] in ("=", "+", "-", "@"):
        return f"starts with {value[0]!r}, which a spreadsheet reads as a formula"
    return None


def _email_problem(value: str) -> str | None:
    problem = text_problem(value)
    if problem is None and (any(char.isspace() or char in "\"'`&" for char in value) or value.count("@") != 1):
        problem = "is not an e-mail address (one '@', no spaces or quotes)"
    return problem


def read(path: str | Path, link_column: str = "") -> list:
    """The roster at ``path`` as :class:`RosterStudent` rows; :class:`RosterError` listing every bad row.

    ``link_column``: the column of an LMS's own export that holds nbgrader ids (``c.LmsExport.roster_id_column``).
    """
    from autograder.lms import read_roster

    if not Path(path).exists():
        raise RosterError(f"roster {path}: no such file")
    try:
        roster = read_roster(path, link_column)
    except FileNotFoundError:
        raise RosterError(f"roster {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"roster {path} could not be read: {error}") from None
    except ValueError as error:  # read_roster names the file and the problem
        raise RosterError(str(error)) from None
    students, problems = [], []
    for number, entry in enumerate(roster.entries, start=1):
        student = entry.link
        where = f"roster {path}, student {number}"
        try:
            check_student_id(student, f"{where}: {roster.link_column}")
        except ValueError as error:
            problems.append(str(error))
            continue
        name, email = entry.name, entry.email
        for label, value, check in (("name", name, text_problem), ("email", email, _email_problem)):
            problem = check(value) if value else None
            if problem is not None:
                problems.append(f"{where} ({student}): {label} {value[:60]!r} {problem}")
        first, last = split_name(name) if name else (None, None)
        students.append(RosterStudent(student, first, last, email or None))
    if problems:
        more = len(problems) - SHOWN_PROBLEMS
        raise RosterError(f"roster {path}: {len(problems)} problem(s), nothing was changed:\n  "
                          + "\n  ".join(problems[:SHOWN_PROBLEMS]) + (f"\n  ... and {more} more" if more > 0 else ""))
    if not students:
        raise RosterError(f"roster {path} lists no student")
    return students


def apply(gradebook, students: list, *, dry_run: bool = False) -> Applied:
    """Add or update ``students`` (:func:`read`'s rows) in nbgrader's ``gradebook``, in one transaction.

    A field the roster leaves empty (None) keeps the gradebook's value.
    """
    from nbgrader.api import Student

    session = gradebook.db
    known = {record.id: record for record in session.query(Student)}
    added, updated, unchanged = [], [], []
    try:
        for row in students:
            wanted = {field: getattr(row, field) for field in ("first_name", "last_name", "email")
                      if getattr(row, field) is not None}
            record = known.get(row.id)
            if record is None:
                added.append(row.id)
                if not dry_run:
                    session.add(Student(id=row.id, **wanted))
            elif any(getattr(record, field) != value for field, value in wanted.items()):
                updated.append(row.id)
                if not dry_run:
                    for field, value in wanted.items():
                        setattr(record, field, value)
            else:
                unchanged.append(row.id)
        if dry_run:
            session.rollback()
        else:
            session.commit()
    except BaseException:
        session.rollback()
        raise
    listed = {row.id for row in students}
    return Applied(tuple(added), tuple(updated), tuple(unchanged), tuple(sorted(set(known) - listed)))


def configured_roster(config, root: str | Path) -> Path | None:
    """``c.LmsExport.roster`` of an nbgrader configuration, relative to the course root; None when unset."""
    value = config.LmsExport.roster if "LmsExport" in config and "roster" in config.LmsExport else ""
    if not value:
        return None
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else Path(root) / path


__all__ = ["Applied", "RosterError", "RosterStudent", "apply", "configured_roster", "read", "split_name",
           "text_problem"]
