"""Keep hidden test code out of the feedback students receive.

nbgrader 0.9.6 renders feedback from the autograded notebook, whose test cells were restored from the
gradebook with their hidden regions, and prints tracebacks that quote those lines. The preprocessor
here runs first in ``GenerateFeedback`` (see ``nbgrader_config.py``): it cuts every hidden region out
of the test cells and reduces their error outputs to the exception's name, and it drops the
rubric cells the grader put beside each written answer for formgrader (:mod:`autograder.feedback.rubric`).
"""

from __future__ import annotations

from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.feedback.rubric import without_rubrics

#: What a student sees in place of a hidden region.
PLACEHOLDER = "# (hidden tests: not shown in feedback)"
#: What replaces the message and traceback of an error raised in a test cell.
HIDDEN_MESSAGE = "(details not shown: they may quote hidden tests)"


def _is_test_cell(cell) -> bool:
    # Test cells are locked grade cells that are not answers; autograde restores their source from the
    # gradebook, so what is cut here is always the instructor's text, never the student's.
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


class RedactHiddenTests(NbGraderPreprocessor):
    """Replace hidden test regions (and the tracebacks of test cells) with a placeholder."""

    begin_test_delimeter = Unicode("BEGIN HIDDEN TESTS", help="Marks the start of a hidden region").tag(config=True)
    end_test_delimeter = Unicode("END HIDDEN TESTS", help="Marks the end of a hidden region").tag(config=True)

    def redact_source(self, source: str) -> str:
        """``source`` with each hidden region (markers included) replaced by :data:`PLACEHOLDER`.

        An unterminated region hides everything after its start marker.
        """
        kept = []
        hiding = False
        for line in source.split("\n"):
            if not hiding and self.begin_test_delimeter in line:
                hiding = True
                kept.append(line[:len(line) - len(line.lstrip())] + PLACEHOLDER)
            elif hiding:
                if self.end_test_delimeter in line:
                    hiding = False
            else:
                kept.append(line)
        return "\n".join(kept)

    def preprocess(self, nb, resources):
        without_rubrics(nb)  # the rubric is for the person grading, never for the student
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if not _is_test_cell(cell):
            return cell, resources
        cell.source = self.redact_source(cell.source)
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                # A traceback quotes the failing lines of the cell and the message may quote a hidden
                # assertion: only the exception's name is kept (checks report through printed feedback).
                output["evalue"] = HIDDEN_MESSAGE
                output["traceback"] = [f"{output.get('ename', 'Error')}: {HIDDEN_MESSAGE}"]
        return cell, resources


__all__ = ["HIDDEN_MESSAGE", "PLACEHOLDER", "RedactHiddenTests"]
