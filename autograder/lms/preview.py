"""The reports beside each grade file: the preview (``<file>.preview.txt``) and the unmatched list
(``<file>.unmatched.csv``).

The preview says, per student, which id the LMS will match, the value written and why, every student
left out and why, and every warning: what to read before uploading. The unmatched list is the
students the LMS could not match by an id (not in the roster, no usable id, an id shared with
another account), as a spreadsheet.
"""

from __future__ import annotations

import csv
import io

from .cells import nfc, number, spreadsheet_text
from .plan import FilePlan, Line


def nbgrader_text(line: Line) -> str:
    """What the gradebook says, in a few characters (``83.5/100``, ``pending``, ``no submission``)."""
    grade = line.grade
    if grade.status == "missing":
        return "no submission"
    if grade.status == "ungraded":
        return "collected, not graded"
    text = f"{number(grade.score)}/{number(grade.max_score)}"
    if grade.penalty:
        text += f" (late -{number(grade.penalty)})"
    if grade.status == "pending":
        text += " pending"
    return text


def _table(rows: list) -> list:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def render(plan: FilePlan, lms: str, settings: list, status: str) -> str:
    """The preview's text."""
    out = [f"{lms} grade import for {plan.assignment}: {plan.path}", f"Status: {status}",
           f"Column: {plan.header!r}", f"Scale: {plan.scale}", *settings,
           f"Students the LMS cannot match: {plan.path}.unmatched.csv", ""]
    written = plan.written
    out.append(f"Written ({len(written)}): the LMS sets these grades")
    if written:
        out += _table([("nbgrader id", "name", "matched by", "nbgrader", "written", "note")] +
                      [(nfc(line.person.nbgrader_id), line.person.name, line.identity.matched_by,
                        nbgrader_text(line), line.value, line.note) for line in written])
    left = [line for line in plan.lines if line.value is None]
    out += ["", f"Left out ({len(left)}): the LMS keeps whatever grade it has for them"]
    if left:
        out += _table([("nbgrader id", "name", "nbgrader", "why")] +
                      [(nfc(line.person.nbgrader_id), line.person.name, nbgrader_text(line), line.note) for line in left])
    out += ["", f"Warnings ({len(plan.warnings)})"]
    out += [f"  - {warning}" for warning in plan.warnings]
    return "\n".join(out) + "\n"


def unmatched_csv(plan: FilePlan) -> str:
    """The students the LMS could not match by an id, as CSV text (every cell spreadsheet-safe)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["nbgrader_id", "name", "email", "nbgrader", "reason"])
    for line in plan.lines:
        if line.unmatched:
            email = line.person.entry.email if line.person.entry else ""
            writer.writerow([spreadsheet_text(cell) for cell in
                             (line.person.nbgrader_id, line.person.name, email, nbgrader_text(line), line.note)])
    return buffer.getvalue()
