"""Graded feedback names a module the grader does not have.

An answer that imports scipy (or anything beyond the standard library, NumPy and the course package)
runs at the desk and fails in the sandbox. The feedback used to say "no function named
'stable_log_softmax' is defined: run the cell that defines it", which hides the cause. The sandbox's
notebook now reports the module a failed import could not find (a structured field of the cell's
reply, never the error text parsed back), and the judge explains every name left undefined by it.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from autograder.channel import Unreadable
from autograder.checks import CHECKS, judge, run_check
from autograder.grading.sandbox import bubblewrap
from autograder.grading.worker import unavailable_modules

ROOT = Path(__file__).resolve().parents[1]
needs_bwrap = pytest.mark.skipif(bubblewrap() is None and os.environ.get("CI", "").lower() != "true",
                                 reason="needs a working bubblewrap")

SCIPY_SENTENCE = (
    "`scipy` is not available when your work is graded (answers may import only the standard library, NumPy "
    "and the course package `course`): a cell stopped where it imports it, so `stable_log_softmax` is not "
    "defined; use the standard library or NumPy instead")

SCIPY_ANSWER = """import numpy as np
from scipy.special import log_softmax

def stable_log_softmax(logits, axis=-1):
    return log_softmax(np.asarray(logits, dtype=float), axis=axis)
"""


@needs_bwrap
def test_a_scipy_answer_is_told_that_scipy_is_not_available():
    """End to end through the batch grader's worker and its sandbox (about 6 s)."""
    from autograder.grading import worker

    stem = "15_stable_log_softmax"
    released = nbformat.read(str(ROOT / "release" / "module6" / f"{stem}.ipynb"), as_version=4)
    for cell in released.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id") == "stable_log_softmax":
            cell.source = SCIPY_ANSWER
    from autograder.grading.task import GradingTask

    out = worker.grade_notebook(GradingTask(
        student="s", assignment="module6", stem=stem, source=(ROOT / "source" / "module6" / f"{stem}.ipynb").read_text(),
        submission=nbformat.writes(released)))
    graded = [row for row in out["rows"] if row["grade_id"].startswith("test_")]
    assert graded and all(row["score"] == 0 for row in graded)
    for row in graded:
        assert SCIPY_SENTENCE in row["feedback"], row["feedback"]
        assert "run the cell that defines it" not in row["feedback"]


@needs_bwrap
def test_the_sandbox_reports_the_module_as_a_field_of_the_cell_reply():
    from autograder.grading.sandbox import Sandbox
    from autograder.grading.task import limits_for

    box = Sandbox(tmp_mb=32)
    try:
        run = box.run([
            {"kind": "exec", "id": "a", "source": "import scipy.special\n"},
            {"kind": "exec", "id": "b", "source": "import numpy, course, fractions\n"},
            # A name that is no module name (the notebook may raise what it likes) is not reported.
            {"kind": "exec", "id": "c", "source": "raise ModuleNotFoundError('x', name='../etc/passwd')\n"},
        ], limits_for(timeout=20))
    finally:
        box.close()
    assert [run.cells[n]["missing_module"] for n in range(3)] == ["scipy", "", ""]
    assert run.cells[1]["status"] == "ok"  # what the rule allows is there


def test_only_cells_before_the_first_call_name_a_module():
    """A cell after a test cell could pick which import fails from what a call saw: it names nothing."""
    steps = [{"kind": "exec"}, {"kind": "exec"}, {"kind": "calls"}, {"kind": "exec"}]
    cells = {0: {"missing_module": "scipy"}, 1: {"missing_module": "scipy"}, 3: {"missing_module": "torch"}}
    assert unavailable_modules(steps, cells) == ("scipy",)
    assert unavailable_modules(steps, {3: {"missing_module": "torch"}}) == ()


def test_every_undefined_name_is_explained_by_the_missing_modules():
    stem = "05_negative_kl"
    cases = CHECKS[stem].planned_cases()
    outcomes = {case.name: tuple(Unreadable(f"no variable named {call.target!r} is defined", undefined=call.target)
                                 for call in case.calls) for case in cases}
    result = judge(stem, outcomes, unavailable=("scipy", "pandas"))
    messages = {case.message for case in result.cases}
    assert all(message.startswith(
        "`scipy` and `pandas` are not available when your work is graded (answers may import only the standard "
        "library, NumPy and the course package `course`): a cell stopped where it imports them, so `")
        for message in messages), messages
    # Without the fact, the old sentence stays (self-study and nbgrader's own kernel know of no failed import).
    plain = judge(stem, outcomes)
    assert not any("not available" in case.message for case in plain.cases)


def test_an_import_inside_the_function_is_named_as_an_unavailable_module_without_the_text():
    source = {"stable_log_softmax": lambda logits, axis=-1: __import__("no_such_module_here")}
    result = run_check("15_stable_log_softmax", source, ["public"])
    (message,) = {case.message for case in result.cases if not case.passed}
    assert message == (
        "stable_log_softmax raised ModuleNotFoundError: it imports a module that is not available when your "
        "work is graded (answers may import only the standard library, NumPy and the course package `course`)")
    assert "no_such_module_here" not in message  # the text could carry the hidden input
