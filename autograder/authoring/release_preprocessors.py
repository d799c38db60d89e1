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

``CourseTermCell``: the course and term enter the released numbers. Right after ``TypedIdCell`` (before
nbgrader's ``ComputeChecksums`` and ``SaveCells``, so the locked cell's checksum and the gradebook's stored
cell are those of the released text), it writes the course id and ``c.Module6.term``
(:func:`autograder.course_settings.configured_course_term`) into the numbers cell's
``your_numbers("<stem>", STUDENT_ID, course="...", term="...")`` and records them in the notebook's metadata,
where the grader reads them (:func:`autograder.course_settings.released_course_term`). It refuses, before
nbgrader removes or writes anything, to release an assignment whose ``release/<assignment>`` already
records another context: one term's numbers never change after release.

Every step here is the kit's and changes only the notebooks of its assignments
(:data:`autograder.assignment.ASSIGNMENTS`): the course's other assignments are released exactly as
nbgrader releases them. :func:`release_steps` is ``GenerateAssignment.preprocessors``: nbgrader 0.9.6's
default list with these steps in their places.

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
import re

import nbformat

from nbgrader import utils
from nbgrader.converters.base import NbGraderException
from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor

from autograder.assignment import ASSIGNMENTS

#: What a released hidden-test cell says below its docstring.
NOTE = "# The hidden tests of this part run when your notebook is graded; here this cell does nothing."


def _only_a_docstring(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str))


def kit_notebook(resources) -> bool:
    """Whether the notebook being released belongs to one of the kit's assignments (nbgrader puts the
    assignment's name in ``resources["nbgrader"]["assignment"]``)."""
    info = resources.get("nbgrader") if isinstance(resources, dict) else None
    return isinstance(info, dict) and info.get("assignment") in ASSIGNMENTS


class KitStep(NbGraderPreprocessor):
    """A release step that changes the kit's notebooks only: any other assignment's passes through untouched."""

    def preprocess(self, nb, resources):
        if not kit_notebook(resources):
            return nb, resources
        return self.preprocess_kit(nb, resources)

    def preprocess_kit(self, nb, resources):
        return super().preprocess(nb, resources)


class TypedIdCell(KitStep):
    """Release the cell where a laptop student types their id as it is, not as a stub.

    It is a solution cell (so the grader sees what was typed: ``autograder.variants.typed_id``), and
    nbgrader's ``ClearSolutions`` replaces a solution cell without markers by its code stub; placed
    right after it, this puts the cell's one text (:data:`course.variants.STUDENT_ID_CELL`) back."""

    def preprocess_cell(self, cell, resources, index):
        from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID
        meta = cell.metadata.get("nbgrader") or {}
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            cell.source = STUDENT_ID_CELL
        return cell, resources


class QuietReleasedTests(KitStep):
    """Make a released test cell that holds only its docstring print nothing when it runs."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and _only_a_docstring(cell.source):
            cell.source = f"{cell.source.rstrip()}\n{NOTE}\npass"
        return cell, resources


def kernel_language_info() -> dict:
    """The ``language_info`` that ipykernel's Python kernel reports here (as JupyterLab stores it)."""
    from ipykernel.ipkernel import IPythonKernel

    return json.loads(json.dumps(IPythonKernel.language_info))


class KernelLanguageInfo(KitStep):
    """Store the kernel's ``language_info`` in the notebook, so JupyterLab has nothing to change on open."""

    def preprocess_kit(self, nb, resources):
        if nb.metadata.get("kernelspec", {}).get("language", "python") == "python":
            nb.metadata["language_info"] = nbformat.from_dict(kernel_language_info())
        return nb, resources


def _converter(step):
    """The nbgrader converter a release step was registered by (its exporter's parent), or None."""
    exporter = getattr(step, "parent", None)
    converter = getattr(exporter, "parent", None)
    return converter if getattr(converter, "coursedir", None) is not None else None


def _assignments_to_convert(converter) -> list:
    """The assignment names ``converter`` (nbgrader's ``GenerateAssignment``, after ``init_notebooks``) is
    about to release, read as nbgrader's ``BaseConverter.convert_notebooks`` reads them."""
    pattern = converter._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
    found = []
    for key in getattr(converter, "assignments", {}) or {}:
        match = re.match(pattern, key)
        if match:
            found.append(match.group("assignment_id"))
    return found


def refusal_text(assignment: str, folder, notebook: str, released, configured) -> str:
    """Why ``assignment`` is not released again with context ``configured`` (``folder``'s ``notebook``
    records ``released``): what each side says and what to do."""
    head = (f"refusing to generate {assignment!r} with course {configured.course!r} and term {configured.term!r}: "
            f"its release in {folder} ({notebook})")
    if released.empty:
        # A release made before course and term entered the draws: no config can say "neither" again when the
        # course has an id, so the way back is to keep that release.
        return (f"{head} was made before the course and term entered the students' numbers (an earlier version "
                "of the kit), and its students' numbers follow their ids alone. Nothing was changed. Keep that "
                "release: grading reads its numbers from it. To release this assignment with numbers of this course "
                f"and term instead, and only if no student has received it yet, remove {folder} first.")
    return (f"{head} was made with course {released.course!r} and term {released.term!r}, and the students' "
            "numbers follow that (one term's numbers never change after release). Nothing was changed. Set "
            f"c.CourseDirectory.course_id = {released.course!r} and c.Module6.term = {released.term!r} back in "
            "nbgrader_config.py to generate this term's assignment again; a new term with new numbers starts in a "
            "new course directory (nbgrader: one course directory per course and term), or, only if no student has "
            f"received it yet, after removing {folder}.")


class CourseTermCell(KitStep):
    """Write the course and term into the released numbers cell, and record them in the notebook's metadata.

    ``your_numbers("05_negative_kl", STUDENT_ID)`` is released as ``your_numbers("05_negative_kl",
    STUDENT_ID, course="<course id>", term="<c.Module6.term>")``: a laptop or Colab student's kernel then
    draws the numbers the grader uses, from what the notebook says (nothing secret). Every notebook of
    the assignment records ``{"course": ..., "term": ...}`` in its metadata
    (:data:`autograder.course_settings.METADATA_KEY`), numbers or not, so the grader can check that a
    release folder is one release.

    Constructed by nbgrader's converter just before it converts (``BaseConverter.start`` registers the
    steps after ``init_notebooks`` and before ``convert_notebooks``, which removes an existing release with
    ``--force``): there it compares the configured context with each kit assignment's existing release
    and refuses (``NbGraderException``, logged) before anything is removed or written.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        converter = _converter(self)
        if converter is not None:
            self._refuse_a_changed_context(converter)

    def _context(self):
        from autograder.course_settings import configured_course_term
        converter = _converter(self)
        if converter is not None:
            return configured_course_term(converter.coursedir, self.config)
        from nbgrader.coursedir import CourseDirectory
        return configured_course_term(CourseDirectory(config=self.config), self.config)

    def _refuse_a_changed_context(self, converter) -> None:
        from autograder.course_settings import ReleaseContextError, release_folder, released_contexts
        configured = None
        for assignment in _assignments_to_convert(converter):
            if assignment not in ASSIGNMENTS:
                continue
            configured = configured or self._context()
            folder = release_folder(converter.coursedir, assignment)
            try:
                released = released_contexts(folder)
            except ReleaseContextError as error:
                released, problem = {}, str(error)
            else:
                problem = None
            differing = [(name, ct) for name, ct in released.items() if ct != configured]
            if problem or differing:
                message = (f"refusing to generate {assignment!r}: {problem}" if problem
                           else refusal_text(assignment, folder, differing[0][0], differing[0][1], configured))
                converter.log.error(message)
                raise NbGraderException(message)

    def preprocess_kit(self, nb, resources):
        from autograder.course_settings import METADATA_KEY, is_numbers_cell, released_numbers_source
        context = self._context()
        stem = resources["nbgrader"].get("notebook", "")
        for cell in nb.cells:
            if is_numbers_cell(cell):
                cell.source = released_numbers_source(cell.source, stem, context)
        nb.metadata[METADATA_KEY] = nbformat.from_dict(context.as_dict())
        return nb, resources


#: A released solution region of a kit notebook becomes this stub; the message says what to do with it (the
#: checks recognise NotImplementedError as "not attempted yet").
CODE_STUB = ("# YOUR CODE HERE\n"
             'raise NotImplementedError("Replace this line with your code, then run the check cell below.")')
#: A released written answer of a kit notebook.
TEXT_STUB = "YOUR ANSWER HERE: replace this line with your answer (a few sentences)."


class KitClearSolutions(ClearSolutions):
    """nbgrader's ``ClearSolutions``, with the kit's stubs for the kit's notebooks only.

    The course's own ``c.ClearSolutions`` settings (its ``code_stub`` and ``text_stub``) apply to its other
    assignments, whose releases stay as nbgrader makes them.
    """

    def preprocess(self, nb, resources):
        if not kit_notebook(resources):
            return super().preprocess(nb, resources)
        saved = self.code_stub, self.text_stub, self.enforce_metadata
        self.code_stub = {**saved[0], "python": CODE_STUB}
        self.text_stub, self.enforce_metadata = TEXT_STUB, True
        try:
            return super().preprocess(nb, resources)
        finally:
            self.code_stub, self.text_stub, self.enforce_metadata = saved


def release_steps() -> list:
    """``GenerateAssignment.preprocessors`` for a course with the kit: nbgrader 0.9.6's default list
    (``nbgrader.converters.GenerateAssignment.preprocessors``) with the kit's steps in their places.

    * :class:`QuietReleasedTests` right after ``ClearHiddenTests`` (before the second ``ComputeChecksums``);
    * :class:`TypedIdCell` right after ``ClearSolutions``, then :class:`CourseTermCell`: both before the
      first ``ComputeChecksums`` and ``SaveCells``, so the gradebook stores, and the checksums cover, the
      cells as released;
    * :class:`KernelLanguageInfo` last (metadata only).

    Each is a no-op for an assignment that is not the kit's.
    """
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, ComputeChecksums, SaveCells

    steps = list(GenerateAssignment.class_traits()["preprocessors"].default())
    steps.insert(steps.index(ClearHiddenTests) + 1, QuietReleasedTests)
    steps.insert(steps.index(ClearSolutions) + 1, TypedIdCell)
    steps.insert(steps.index(TypedIdCell) + 1, CourseTermCell)
    assert steps.index(CourseTermCell) < steps.index(ComputeChecksums) < steps.index(SaveCells), steps
    steps.append(KernelLanguageInfo)
    # The kit's stubs for the kit's notebooks; the course's own c.ClearSolutions for its other assignments.
    return [KitClearSolutions if step is ClearSolutions else step for step in steps]


__all__ = ["CODE_STUB", "TEXT_STUB", "KitClearSolutions", "NOTE", "CourseTermCell", "KernelLanguageInfo", "KitStep", "QuietReleasedTests", "TypedIdCell",
           "kernel_language_info", "kit_notebook", "refusal_text", "release_steps"]
