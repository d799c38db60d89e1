"""The rubric of a written answer, shown to the person grading it and to nobody else.

The grader puts each written answer's rubric (``autograder/exercises/NN_slug/rubric.md``) into the
autograded notebook as a markdown cell right after the answer, so formgrader's grading view shows it
beside the answer it grades (formgrader renders that notebook as it is). The cell carries
:data:`METADATA_KEY` in its metadata and no nbgrader metadata: nbgrader neither grades nor checksums
it. Everything that makes a page for a student drops it: :class:`autograder.feedback.redaction.RedactHiddenTests`
(first step of ``nbgrader generate_feedback``) and :func:`autograder.feedback.page.render`.

The rubric files keep their criteria in a Markdown table (``| points | the answer says |``), but the
cell holds them as a list (:func:`tables_as_lists`): formgrader's ``formgrade`` template (nbgrader
0.9.6) replaces the header of nbconvert's ``classic`` template, and with it the stylesheet that gives
``.rendered_html`` table cells their padding, so a table's cells ran together on its grading page
("pointsthe answer says"). A list reads the same with or without any stylesheet.
"""

from __future__ import annotations

import re

import nbformat

#: Cell metadata key marking a rubric cell; its value is the grade id of the answer it grades.
METADATA_KEY = "module6_rubric"
#: The line that opens every rubric cell, so the instructor never mistakes it for the student's words.
HEADING = "**Rubric for the answer above** (instructors only: never part of a student's feedback)"


#: A Markdown table's delimiter row (``|---|:--:|``).
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _cells(line: str) -> list:
    """The cells of one table row: split at ``|`` not escaped as ``\\|``, which becomes ``|``."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def _as_item(header: list, cells: list) -> str:
    if len(header) == 2 and header[0].strip().lower() == "points":
        points = cells[0].strip()
        unit = "point" if points in ("1", "1.0") else "points"
        return f"- **{points} {unit}** when {header[1].strip()}: {cells[1].strip() if len(cells) > 1 else ''}"
    return "- " + "; ".join(f"**{name}**: {value}" for name, value in zip(header, cells))


def tables_as_lists(text: str) -> str:
    r"""``text`` with each Markdown table written as a list, one item per row.

    >>> print(tables_as_lists("| points | the answer says |\n|---|---|\n| 0.5 | a \\| b |\n| 1 | c |"))
    - **0.5 points** when the answer says: a | b
    - **1 point** when the answer says: c
    """
    lines = text.split("\n")
    out, index = [], 0
    while index < len(lines):
        line = lines[index]
        if (line.lstrip().startswith("|") and index + 1 < len(lines) and _DELIMITER.match(lines[index + 1])):
            header = _cells(line)
            index += 2
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                out.append(_as_item(header, _cells(lines[index])))
                index += 1
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


def rubric_cell(stem: str, grade_id: str, student: str | None = None, course_term=None):
    """The rubric cell for written answer ``grade_id`` of notebook ``stem``, or None when it has no rubric.

    For an exercise whose numbers vary, ``student``'s numbers (in ``course_term``, the released
    :class:`course.variants.CourseTerm`; None: the empty context) head it and its ``{{ name }}`` values are
    theirs (variant 0's when ``student`` is None). The cell never names the student: formgrader's grading
    view hides names ("Submission #3", nbgrader 0.9.6 ``formgrade/formgrade_macros.html.j2``: the name is
    shown only when the grader clicks to show it), and a rubric that said whose numbers they were would
    undo that in every written answer. The numbers alone are what grading needs."""
    from autograder.exercises import fill, rubric_path
    from course import variants as family_registry

    try:
        text = rubric_path(stem).read_text(encoding="utf-8")
    except (FileNotFoundError, KeyError):
        return None
    family = family_registry.families().get(stem)
    if family is not None:
        parameters = family_registry.parameters(stem, student, course_term)
        text = fill(text, stem, parameters)
        who = "this submission" if student else "the example (variant 0)"
        lines = "\n".join(f"- {what}: `{value}`" for what, value in family.rows(parameters))
        text = f"**The numbers of {who}**, which this rubric's values follow:\n\n{lines}\n\n" + text.strip()
    # Its headings go three levels down: in formgrader's view the rubric sits under the notebook's own.
    text = re.sub(r"(?m)^(#{1,3}) ", lambda m: "#" * (len(m.group(1)) + 3) + " ", text.strip())
    text = tables_as_lists(text)  # formgrader's page has no table styles: a list reads the same anywhere
    cell = nbformat.v4.new_markdown_cell(f"{HEADING}\n\n{text}\n", id=f"rubric-{grade_id}")
    cell.metadata[METADATA_KEY] = grade_id
    return cell


def is_rubric_cell(cell) -> bool:
    return METADATA_KEY in (cell.get("metadata") or {})


def without_rubrics(nb):
    """``nb`` with its rubric cells removed (in place; returned for chaining)."""
    nb.cells = [cell for cell in nb.cells if not is_rubric_cell(cell)]
    return nb


__all__ = ["HEADING", "METADATA_KEY", "is_rubric_cell", "rubric_cell", "tables_as_lists", "without_rubrics"]
