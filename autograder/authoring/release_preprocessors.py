"""nbgrader preprocessors that make released notebooks behave in JupyterLab as a student expects.

``QuietReleasedTests``: released hidden-test cells that run quietly.

nbgrader releases a hidden test cell as what is left outside ``### BEGIN/END HIDDEN TESTS``: here its
one-line docstring. Run in JupyterLab (or by Validate), such a cell echoes the docstring as ``Out[n]``,
which reads like a passing result. This preprocessor, placed in ``GenerateAssignment.preprocessors``
right after nbgrader's ``ClearHiddenTests`` (and so before the release checksums are computed), adds a
comment saying when the hidden tests run and a ``pass`` statement, so the cell shows nothing.
Grading is unaffected: nbgrader and the batch grader put the full test cell back from the source.

``TypedIdCell``: the cell where a laptop student types their id is released as it is (nbgrader would
turn it into a stub), so a notebook whose numbers vary shows them as soon as the id is typed.

``KernelLanguageInfo``: a notebook that does not open already modified. When a kernel starts,
JupyterLab writes the kernel's ``language_info`` into the notebook's metadata, and a notebook whose
stored ``language_info`` differs (nbformat keeps only ``{"name": "python"}``) is marked as modified
at once, so closing an untouched notebook asks to save it. The release stores what ipykernel reports
for the Python that builds it (the course's reference interpreter, the one ``make lab`` uses); under
another Python version JupyterLab still updates the version, as it does for any notebook.
"""

from __future__ import annotations

import ast
import json

import nbformat

from nbgrader import utils
from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor

#: What a released hidden-test cell says below its docstring.
NOTE = "# The hidden tests of this part run when your notebook is graded; here this cell does nothing."

#: A released solution region of a kit notebook becomes this stub; the message says what to do with it (the
#: checks recognise NotImplementedError as "not attempted yet").
CODE_STUB = ("# YOUR CODE HERE\n"
             'raise NotImplementedError("Replace this line with your code, then run the check cell below.")')
#: A released written answer of a kit notebook.
TEXT_STUB = "YOUR ANSWER HERE: replace this line with your answer (a few sentences)."


def is_kit_notebook(resources) -> bool:
    """Whether the notebook being released belongs to one of the kit's assignments (``ASSIGNMENTS``).

    In someone else's course every kit step leaves the other assignments' notebooks as nbgrader makes them.
    """
    from autograder.assignment import ASSIGNMENTS

    return (resources or {}).get("nbgrader", {}).get("assignment") in ASSIGNMENTS


class KitClearSolutions(ClearSolutions):
    """nbgrader's ``ClearSolutions``, with the kit's stubs for the kit's notebooks only.

    The course's own ``c.ClearSolutions`` settings (its ``code_stub`` and ``text_stub``) apply to its other
    assignments, whose releases stay as nbgrader makes them.
    """

    def preprocess(self, nb, resources):
        if not is_kit_notebook(resources):
            return super().preprocess(nb, resources)
        saved = self.code_stub, self.text_stub, self.enforce_metadata
        self.code_stub = {**saved[0], "python": CODE_STUB}
        self.text_stub, self.enforce_metadata = TEXT_STUB, True
        try:
            return super().preprocess(nb, resources)
        finally:
            self.code_stub, self.text_stub, self.enforce_metadata = saved


def _only_a_docstring(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str))


class TypedIdCell(NbGraderPreprocessor):
    """Release the cell where a laptop student types their id as it is, not as a stub.

    It is a solution cell (so the grader sees what was typed: ``autograder.variants.typed_id``), and
    nbgrader's ``ClearSolutions`` replaces a solution cell without markers by its code stub; placed
    right after it, this puts the cell's one text (:data:`course.variants.STUDENT_ID_CELL`) back."""

    def preprocess(self, nb, resources):
        return super().preprocess(nb, resources) if is_kit_notebook(resources) else (nb, resources)

    def preprocess_cell(self, cell, resources, index):
        from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID
        meta = cell.metadata.get("nbgrader") or {}
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            cell.source = STUDENT_ID_CELL
        return cell, resources


class QuietReleasedTests(NbGraderPreprocessor):
    """Make a released test cell that holds only its docstring print nothing when it runs."""

    def preprocess(self, nb, resources):
        return super().preprocess(nb, resources) if is_kit_notebook(resources) else (nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and _only_a_docstring(cell.source):
            cell.source = f"{cell.source.rstrip()}\n{NOTE}\npass"
        return cell, resources


def kernel_language_info() -> dict:
    """The ``language_info`` that ipykernel's Python kernel reports here (as JupyterLab stores it)."""
    from ipykernel.ipkernel import IPythonKernel

    return json.loads(json.dumps(IPythonKernel.language_info))


class KernelLanguageInfo(NbGraderPreprocessor):
    """Store the kernel's ``language_info`` in the notebook, so JupyterLab has nothing to change on open."""

    def preprocess(self, nb, resources):
        if is_kit_notebook(resources) and nb.metadata.get("kernelspec", {}).get("language", "python") == "python":
            nb.metadata["language_info"] = nbformat.from_dict(kernel_language_info())
        return nb, resources


def release_steps() -> list:
    """``GenerateAssignment.preprocessors`` of a course with the kit: nbgrader's defaults plus the kit's steps.

    :class:`QuietReleasedTests` right after nbgrader's ``ClearHiddenTests`` (before the release checksums
    are computed), :class:`TypedIdCell` right after ``ClearSolutions``, :class:`KernelLanguageInfo` last, and
    nbgrader's ``ClearSolutions`` as :class:`KitClearSolutions` (the kit's stubs for the kit's notebooks).
    Every kit step does nothing to a notebook of an assignment that is not the kit's.
    """
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    steps = list(GenerateAssignment.class_traits()["preprocessors"].default())
    steps.insert(steps.index(ClearHiddenTests) + 1, QuietReleasedTests)
    steps.insert(steps.index(ClearSolutions) + 1, TypedIdCell)
    steps.append(KernelLanguageInfo)
    # The kit's stubs for the kit's notebooks; the course's own c.ClearSolutions for its other assignments.
    return [KitClearSolutions if step is ClearSolutions else step for step in steps]


__all__ = ["CODE_STUB", "NOTE", "TEXT_STUB", "KitClearSolutions", "KernelLanguageInfo", "is_kit_notebook",
           "QuietReleasedTests", "TypedIdCell", "kernel_language_info", "release_steps"]
