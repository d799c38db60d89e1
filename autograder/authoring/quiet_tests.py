"""Released hidden-test cells that run quietly: ``QuietReleasedTests``, an nbgrader preprocessor.

nbgrader releases a hidden test cell as what is left outside ``### BEGIN/END HIDDEN TESTS``: here its
one-line docstring. Run in JupyterLab (or by Validate), such a cell echoes the docstring as ``Out[n]``,
which reads like a passing result. This preprocessor, placed in ``GenerateAssignment.preprocessors``
right after nbgrader's ``ClearHiddenTests`` (and so before the release checksums are computed), adds a
comment saying when the hidden tests run and a ``pass`` statement, so the cell shows nothing.
Grading is unaffected: nbgrader and the batch grader put the full test cell back from the source.
"""

from __future__ import annotations

import ast

from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

#: What a released hidden-test cell says below its docstring.
NOTE = "# The hidden tests of this part run when your notebook is graded; here this cell does nothing."


def _only_a_docstring(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str))


class QuietReleasedTests(NbGraderPreprocessor):
    """Make a released test cell that holds only its docstring print nothing when it runs."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and _only_a_docstring(cell.source):
            cell.source = f"{cell.source.rstrip()}\n{NOTE}\npass"
        return cell, resources


__all__ = ["NOTE", "QuietReleasedTests"]
