"""Another instructor's nbgrader course, as they had it before Module 6: course ``stat-490``, assignment ``ps1``.

``ps1`` is a plain nbgrader assignment: one autograded answer cell (``square``) and two test cells of
``assert`` statements (the second with hidden tests), graded by nbgrader in a kernel. Its config is the
instructor's own: their course id, their own stubs. Nothing of the kit is in it until a test adds it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

COURSE_ID = "stat-490"
ASSIGNMENT = "ps1"
STEM = "ps1"
#: The instructor's own stubs (the kit must not replace them in ps1's release).
CODE_STUB = "# PS1: write your code here\nraise NotImplementedError()"
TEXT_STUB = "PS1: your answer here"
#: What each student hands in for ``square``, and the points nbgrader gives it (2 + 1).
ANSWERS = {
    "ann": ("def square(x):\n    return x * x\n", 3.0),
    # Passes the open tests (2 points), fails the hidden one (square(0) == 0).
    "bob": ("def square(x):\n    return x * x if x else 1\n", 2.0),
}
HIDDEN_LINE = "assert square(0) == 0, 'the square of zero'"


def config(course_id: str = COURSE_ID, extra: str = "") -> str:
    """The instructor's ``nbgrader_config.py`` (``extra``: their other lines, e.g. an exchange root)."""
    return (f"c = get_config()\n"
            f"c.CourseDirectory.course_id = {course_id!r}\n"
            f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}\n"
            f"c.ClearSolutions.text_stub = {TEXT_STUB!r}\n"
            f"{extra}")


def _meta(cell_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": cell_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def source_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Problem set 1\nWrite `square(x)`.", id="intro",
                                      metadata=_meta("intro", grade=False, solution=False, locked=True)),
        nbformat.v4.new_code_cell("def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
                                  id="square", metadata=_meta("square", grade=False, solution=True, locked=False)),
        nbformat.v4.new_code_cell("assert square(3) == 9\nassert square(-2) == 4", id="test_square",
                                  metadata=_meta("test_square", grade=True, solution=False, locked=True, points=2)),
        nbformat.v4.new_code_cell(f"assert square(1) == 1\n### BEGIN HIDDEN TESTS\n{HIDDEN_LINE}\n"
                                  "### END HIDDEN TESTS", id="test_hidden",
                                  metadata=_meta("test_hidden", grade=True, solution=False, locked=True, points=1)),
    ]
    return nb


def write_course(root: Path, *, extra: str = "") -> Path:
    """The course folder with its config and ``source/ps1/ps1.ipynb`` (nothing generated yet)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(config(extra=extra))
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(source_notebook(), str(root / "source" / ASSIGNMENT / f"{STEM}.ipynb"))
    return root


def answered(released: Path, student: str):
    """The released ``ps1`` notebook with ``student``'s answer typed in."""
    nb = nbformat.read(str(released), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "square":
            cell.source = ANSWERS[student][0]
    return nb
