"""The export as data, before any file is written: who is who, and what each student's line will say.

:func:`link` joins the gradebook's students and the roster's accounts (NFC, case-folded ids);
:class:`Line` is one student in one assignment's file (the id the LMS will match, the value written,
or why nothing is written), :class:`FilePlan` one file. The writers and the preview read these; no
message text is parsed back.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from pathlib import Path

from .cells import clean_text, key, nfc
from .gradebook import Grade
from .roster import Roster, RosterEntry


class ExportRefused(ValueError):
    """The export cannot be written as the gradebook says (the message lists every reason)."""


@dataclasses.dataclass(frozen=True)
class Person:
    """A student as both sides know them: the nbgrader id, the roster's account, the gradebook's name."""

    nbgrader_id: str
    entry: RosterEntry | None
    in_gradebook: bool
    gradebook_name: str = ""
    refusal: str = ""  # why no LMS account can be linked (empty when it can)

    @property
    def name(self) -> str:
        return clean_text(self.entry.name if self.entry and self.entry.name else
                          self.gradebook_name or self.nbgrader_id)


@dataclasses.dataclass(frozen=True)
class Identity:
    """What the LMS will match a row by: the cells written, and a sentence saying which id matches."""

    cells: dict
    matched_by: str


@dataclasses.dataclass(frozen=True)
class Line:
    """One student in one file: the value written (``None``: left out, the LMS keeps its grade) and why."""

    person: Person
    grade: Grade
    value: str | None
    identity: Identity | None
    note: str
    unmatched: bool = False  # left out because the LMS could not match the student (the side file)


@dataclasses.dataclass
class FilePlan:
    """One assignment's file: where it goes, its column, its scale, its lines and warnings."""

    assignment: str
    header: str
    path: Path
    scale: str  # a sentence: how scores are written
    lines: list
    warnings: list
    partial: bool = False
    points_possible: float | None = None  # Canvas's "Points Possible" row

    @property
    def written(self) -> list:
        return [line for line in self.lines if line.value is not None]


def gradebook_name(student) -> str:
    """The gradebook's name for a student in the form Canvas sorts by (``Last, First``)."""
    return ", ".join(part for part in (student.last_name, student.first_name) if part)


def link(gradebook_students: list, roster: Roster, wanted: list) -> list:
    """Every student on either side, linked by NFC, case-folded id; refusals say why a link cannot be made.

    ``wanted`` (``--student``) restricts both sides. Two gradebook ids equal without regard to case
    cannot be told apart by the roster: both are refused.
    """
    wanted_keys = {key(s) for s in wanted}
    by_link = roster.by_link()
    students = [s for s in gradebook_students if not wanted_keys or key(s.id) in wanted_keys]
    groups = collections.defaultdict(list)
    for student in students:
        groups[key(student.id)].append(student.id)
    people = []
    for student in students:
        name = gradebook_name(student)
        same = groups[key(student.id)]
        if len(same) > 1:
            others = ", ".join(repr(s) for s in same if s != student.id)
            people.append(Person(student.id, None, True, name,
                                 f"its gradebook id differs from {others} only in case or Unicode form: "
                                 "the roster cannot tell them apart"))
            continue
        entry = by_link.get(key(student.id))
        refusal = "" if entry else f"not in the roster (no {roster.link_column} {nfc(student.id)!r})"
        people.append(Person(student.id, entry, True, name, refusal))
    for link_key, entry in by_link.items():
        if link_key not in groups and (not wanted_keys or link_key in wanted_keys):
            people.append(Person(entry.link, entry, False))
    return sorted(people, key=lambda p: (key(p.nbgrader_id), p.nbgrader_id))


def output_path(to: str, default: str, assignment: str, several: bool, partial: bool) -> Path:
    """The file for one assignment: ``--to`` (``{assignment}`` filled in; added before the suffix when
    several assignments share one ``--to``), with ``.partial`` before the suffix for partial totals.

    >>> str(output_path("canvas.csv", "x", "module6", False, False))
    'canvas.csv'
    >>> str(output_path("canvas.csv", "x", "module6", True, True))
    'canvas-module6.partial.csv'
    >>> str(output_path("", "moodle-{assignment}.csv", "module6", False, False))
    'moodle-module6.csv'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", assignment)
    template = to or default
    if "{assignment}" in template:
        path = Path(template.replace("{assignment}", safe))
    elif several:
        base = Path(template)
        path = base.with_name(f"{base.stem}-{safe}{base.suffix or '.csv'}")
    else:
        path = Path(template)
    if partial:
        path = path.with_name(f"{path.stem}.partial{path.suffix or '.csv'}")
    return path
