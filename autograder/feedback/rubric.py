"""The rubric of a written answer, shown to the person grading it and to nobody else.

The grader puts each written answer's rubric (``autograder/exercises/NN_slug/rubric.md``) into the
autograded notebook as a markdown cell right after the answer, so formgrader's grading view shows it
beside the answer it grades (formgrader renders that notebook as it is). The cell carries
:data:`METADATA_KEY` in its metadata and no nbgrader metadata: nbgrader neither grades nor checksums
it. Everything that makes a page for a student drops it: :class:`autograder.feedback.redaction.RedactHiddenTests`
(first step of ``nbgrader generate_feedback``) and :func:`autograder.feedback.page.render`.
"""

from __future__ import annotations

import re

import nbformat

#: Cell metadata key marking a rubric cell; its value is the grade id of the answer it grades.
METADATA_KEY = "module6_rubric"
#: The line that opens every rubric cell, so the instructor never mistakes it for the student's words.
HEADING = "**Rubric for the answer above** (instructors only: never part of a student's feedback)"


def rubric_cell(stem: str, grade_id: str, student: str | None = None):
    """The rubric cell for written answer ``grade_id`` of notebook ``stem``, or None when it has no rubric.

    For an exercise whose numbers vary, ``student``'s numbers head it and its ``{{ name }}`` values are
    theirs (variant 0's when ``student`` is None). The cell never names the student: formgrader's grading
    view hides names ("Submission #3", nbgrader 0.9.6 ``formgrade/formgrade_macros.html.j2``: the name is
    shown only when the grader clicks to show it), and a rubric that said whose numbers they were would
    undo that in every written answer. The numbers alone are what grading needs."""
    from autograder.exercises import rubric_path
    from autograder import variants

    try:
        text = rubric_path(stem).read_text(encoding="utf-8")
    except (FileNotFoundError, KeyError):
        return None
    family = variants.family_registry.families().get(stem)
    if family is not None:
        parameters = variants.family_registry.parameters(stem, student)
        text = variants.fill(text, stem, parameters)
        who = "this submission" if student else "the example (variant 0)"
        lines = "\n".join(f"- {what}: `{value}`" for what, value in family.rows(parameters))
        text = f"**The numbers of {who}**, which this rubric's values follow:\n\n{lines}\n\n" + text.strip()
    # Its headings go three levels down: in formgrader's view the rubric sits under the notebook's own.
    text = re.sub(r"(?m)^(#{1,3}) ", lambda m: "#" * (len(m.group(1)) + 3) + " ", text.strip())
    cell = nbformat.v4.new_markdown_cell(f"{HEADING}\n\n{text}\n", id=f"rubric-{grade_id}")
    cell.metadata[METADATA_KEY] = grade_id
    return cell


def is_rubric_cell(cell) -> bool:
    return METADATA_KEY in (cell.get("metadata") or {})


def without_rubrics(nb):
    """``nb`` with its rubric cells removed (in place; returned for chaining)."""
    nb.cells = [cell for cell in nb.cells if not is_rubric_cell(cell)]
    return nb


__all__ = ["HEADING", "METADATA_KEY", "is_rubric_cell", "rubric_cell", "without_rubrics"]
