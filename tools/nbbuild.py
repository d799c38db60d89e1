"""Small constructors for nbgrader source cells, so every notebook has the same metadata shapes.

Used by throwaway scripts that write or rewrite `source/module6/*.ipynb`; the notebooks themselves
stay the source of truth. Cell ids are given by the caller (stable, meaningful, `[a-zA-Z0-9-_]`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

SCHEMA = 3


def _meta(grade: bool, solution: bool, locked: bool, grade_id: str, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _text(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def md(cell_id: str, text: str, *, locked: bool = True):
    """A read-only markdown cell."""
    cell = nbformat.v4.new_markdown_cell(_text(text), id=cell_id)
    if locked:
        cell.metadata.update(_meta(False, False, True, cell_id))
    return cell


def code(cell_id: str, source: str, *, locked: bool = True, tags: tuple = ()):
    """A read-only code cell (setup, public checks)."""
    cell = nbformat.v4.new_code_cell(_text(source), id=cell_id)
    if locked:
        cell.metadata.update(_meta(False, False, True, cell_id))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def widget(cell_id: str, source: str):
    """A read-only code cell that shows a widget (tagged so the batch grader skips it)."""
    return code(cell_id, source, tags=("widget",))


def answer(cell_id: str, grade_id: str, source: str):
    """An autograded answer cell; wrap the solution in ### BEGIN SOLUTION / ### END SOLUTION."""
    cell = nbformat.v4.new_code_cell(_text(source), id=cell_id)
    cell.metadata.update(_meta(False, True, False, grade_id))
    return cell


def tests(cell_id: str, stem: str, group: str, points: float, docstring: str):
    """A hidden test cell for one check group (grade id ``test_<group>``)."""
    source = (f'"""{docstring}"""\n'
              "### BEGIN HIDDEN TESTS\n"
              "from autograder.checks import grade\n"
              f'grade("{stem}", "{group}", globals())\n'
              "### END HIDDEN TESTS")
    cell = nbformat.v4.new_code_cell(source, id=cell_id)
    cell.metadata.update(_meta(True, False, True, f"test_{group}", points))
    return cell


def manual(cell_id: str, grade_id: str, points: float, solution: str):
    """A manually graded markdown answer; ``solution`` goes between BEGIN/END SOLUTION markers."""
    source = "### BEGIN SOLUTION\n" + _text(solution) + "\n### END SOLUTION"
    cell = nbformat.v4.new_markdown_cell(source, id=cell_id)
    cell.metadata.update(_meta(True, True, False, grade_id, points))
    return cell


from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID  # noqa: E402  (the notebook cell's one home)


def identity_cells(stem: str) -> list:
    """The two cells at the top of a notebook whose numbers vary per student: the id a laptop student
    types (an answer cell, so the grader sees what was typed) and the locked cell that shows whose
    numbers the notebook holds, and the numbers (``numbers``)."""
    typed = nbformat.v4.new_code_cell(STUDENT_ID_CELL, id="student-id")
    typed.metadata.update(_meta(False, True, False, STUDENT_ID_GRADE_ID))
    shown = code("your-numbers", f'''
        from course.variants import your_numbers
        # Whose numbers this notebook holds, and the numbers; it stops here, saying why, if no id is known.
        numbers = your_numbers("{stem}", STUDENT_ID)
        numbers
        ''')
    return [typed, shown]


def write(path: str | Path, cells: list) -> None:
    """Write a clean notebook: no outputs, no execution counts, Python 3 kernel metadata."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    nbformat.write(nb, str(path))
