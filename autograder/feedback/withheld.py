"""What a student sees of their code's outputs: only what ran before the first hidden test.

A hidden test cell calls the student's functions on hidden inputs. Code that runs after that call
(an extra cell, the next answer, a duplicate answer placed later, a demonstration cell calling a
function that remembers its arguments) can hold those inputs, and anything it prints, plots,
displays, raises or writes to a file it then prints could carry them. No filter of that output can
tell an honest print from a disguised one, so the rule is by position: the outputs of every code
cell after the first hidden test cell are dropped, whatever they hold, and every channel (the
autograded notebook, ``nbgrader generate_feedback``'s page, the grader's own page) applies the same
rule. The rule is also unconditional on what the cells did: no "output withheld" mark that appears
only when a cell printed (that mark would be a bit per cell).

The grader writes the autograded notebook with this rule already applied
(:func:`autograder.grading.worker.grade_notebook`); both feedback pages apply it again to whatever
notebook they are given, so an autograded notebook from elsewhere cannot bring outputs back.
"""

from __future__ import annotations

#: The rule in one sentence, as both feedback pages print it.
RULE = ("Outputs are shown only for cells that ran before the first hidden test: whatever your code printed, "
        "plotted, displayed, raised or wrote during or after the hidden tests is not shown, so that no hidden "
        "test input can come back through it.")


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_hidden_test(cell) -> bool:
    """A test cell: a locked grade cell of code that is not an answer (the grader fills its outputs)."""
    meta = _nbgrader(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def first_hidden_test(nb) -> int | None:
    """Index of the first hidden test cell of ``nb``, or None when it has none."""
    return next((index for index, cell in enumerate(nb.cells) if is_hidden_test(cell)), None)


def after_hidden_tests(nb) -> list:
    """Indices of the code cells whose outputs are dropped: every non-test code cell after the first test."""
    first = first_hidden_test(nb)
    if first is None:
        return []
    return [index for index, cell in enumerate(nb.cells)
            if index > first and cell.get("cell_type") == "code" and not is_hidden_test(cell)]


def withhold_after_hidden_tests(nb) -> list:
    """Drop (in place) the outputs of the cells of :func:`after_hidden_tests`; return their indices."""
    indices = after_hidden_tests(nb)
    for index in indices:
        cell = nb.cells[index]
        cell["outputs"] = []
        cell["execution_count"] = None
    return indices


__all__ = ["RULE", "after_hidden_tests", "first_hidden_test", "is_hidden_test", "withhold_after_hidden_tests"]
