"""Every open check that fails says in a sentence what failed and for which input (issue 35).

Each check cell (``check-...``) of every notebook, both assignments and any notebook added later, is
run against every wrong answer of its exercise's corpus (the ``wrong`` answers of
``tests/test_checks_exNN_*.py``, written as a student fills the answer cells) in a namespace made as
the notebook makes it (setup, numbers, the answer, the other locked cells). Whatever stops a check
cell must be one of the course's sentences: an error IPython shows through ``_render_traceback_``
(:mod:`course._sentence`), whose first line is a sentence and whose lines name no file of NumPy or of
the course package. A bare ``AssertionError``, an empty message, NumPy's ``assert_allclose``, or an
error raised by the check cell's own code (a ``TypeError`` on a junk answer) fails this test.
"""

from __future__ import annotations

import importlib
import os
import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import check_support as support

ROOT = Path(__file__).resolve().parents[1]


def _corpus_modules() -> list:
    return sorted(path.stem for path in (ROOT / "tests").glob("test_checks_ex*.py"))


def corpora() -> dict:
    """``stem -> {label: answer source}`` of every exercise's wrong answers."""
    found = {}
    for name in _corpus_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, support.CheckTests) and getattr(value, "stem", None) \
                    and isinstance(getattr(value, "wrong", None), dict):
                found.setdefault(value.stem, {}).update(
                    {label: entry[0] for label, entry in value.wrong.items() if isinstance(entry[0], str)})
    return found


CORPORA = corpora()
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _library_paths() -> tuple:
    import course
    return (os.path.dirname(os.path.abspath(np.__file__)), os.path.dirname(os.path.abspath(course.__file__)))


class CheckCellWarning(Exception):
    """Stands for a warning a check cell's own code raised (it has no sentence of ours)."""


def _is_demonstration(source: str) -> bool:
    """A check cell that only prints what the student's functions give (it judges nothing)."""
    return not re.search(r"\b(require\w*|fail|not_the_example|numbers_of)\(", source)


def _runs(stem: str, answer: str, demonstrations: bool = True):
    """Run the notebook as a student would with ``answer`` in its answer cells; yield ``(check cell id,
    exception or None)`` for each check cell (``demonstrations``: also those that only print, as Run All
    reaches them: when every open check before them passed)."""
    notebook = support.source_notebook(stem)
    namespace = support.namespace_from("")
    answered = stopped = False
    with support.example_numbers():
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or meta.get("grade") or "widget" in cell.metadata.get("tags", []):
                continue
            if meta.get("solution") and cell.id != "student-id":
                if not answered:
                    exec(compile(textwrap.dedent(answer), "<answer>", "exec"), namespace)
                    answered = True
                continue
            if cell.id.startswith("check"):
                if _is_demonstration(cell.source) and (not demonstrations or stopped):
                    continue
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
                    except Exception as error:  # noqa: BLE001 - what the student would see is judged below
                        stopped = True
                        outcome = error
                    else:
                        outcome = None
                # A warning the check cell's own code raises (NumPy's overflow on a junk answer) is
                # printed above the sentence, in the notebook and in Validate: none may come from it.
                own = [w for w in caught if str(w.filename).startswith("<cell check")]
                if own:
                    outcome = CheckCellWarning(f"the check cell's own code warned: {own[0].category.__name__}: "
                                               f"{own[0].message} (line {own[0].lineno})")
                yield cell.id, outcome
            else:
                exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)


def problem(error: BaseException) -> str | None:
    """Why what a student sees for ``error`` is not a sentence (None when it is one)."""
    render = getattr(error, "_render_traceback_", None)
    if render is None:
        frames = []
        tb = error.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        return (f"a raw {type(error).__name__} ({str(error)[:120]!r}), innermost frame in "
                f"{frames[-1] if frames else '?'}")
    lines = ANSI.sub("", "\n".join(render())).splitlines()
    if not lines or len(lines[0].split(":", 1)[-1].split()) < 3:
        return f"an empty or short message: {lines[:1]}"
    if type(error) is AssertionError:
        return "a bare AssertionError"
    inside = [line for line in lines if any(path in line for path in _library_paths())]
    if inside:
        return f"a traceback through NumPy or the course package: {inside[0][:160]}"
    return None


@pytest.mark.parametrize("stem", sorted(CORPORA))
def test_every_failing_open_check_says_a_sentence(stem):
    bad, failed = [], 0
    for label, answer in sorted(CORPORA[stem].items()):
        for cell, error in _runs(stem, answer):
            if error is None:
                continue
            failed += 1
            why = problem(error)
            if why is not None:
                bad.append(f"{cell} on {label!r}: {why}")
    assert not bad, "\n".join(bad)


def test_every_exercise_with_a_notebook_has_a_corpus():
    """The corpora cover every notebook (29 and 30 join when their test files do)."""
    from autograder.assignment import ASSIGNMENTS, notebook_stems
    stems = {stem for assignment in ASSIGNMENTS for stem in notebook_stems(assignment=assignment)}
    assert stems <= set(CORPORA), sorted(stems - set(CORPORA))


def correct_corpora() -> dict:
    """``stem -> {label: answer source}`` of every exercise's correct answers."""
    found = {}
    for name in _corpus_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, support.CheckTests) and getattr(value, "stem", None) \
                    and isinstance(getattr(value, "correct", None), dict):
                found.setdefault(value.stem, {}).update(
                    {label: source for label, source in value.correct.items() if isinstance(source, str)})
    return found


CORRECT = correct_corpora()


#: The coding exercises (answers are functions): their open checks compare with values, so every
#: correct answer must pass them. (The concept exercises' open checks are stricter about forms than
#: the grader, for instance NumPy booleans or words for True/False: another matter than their sentences.)
CODING = sorted(stem for stem in CORRECT if int(stem[:2]) >= 15)


@pytest.mark.parametrize("stem", CODING)
def test_every_correct_answer_passes_every_open_check(stem):
    """The sentences are not a check that always fails: every correct answer of a coding exercise's corpus
    passes its open checks (one that uses a package the grader lacks is stopped by check_imports)."""
    from course.grading_environment import UnavailableImportError

    failed = [f"{cell} on {label!r}: {type(error).__name__}: {error}"
              for label, answer in sorted(CORRECT[stem].items())
              for cell, error in _runs(stem, answer, demonstrations=False)
              if error is not None and not isinstance(error, UnavailableImportError)]
    assert not failed, "\n".join(failed)


def _first_failure(stem: str, label: str, cell_id: str) -> BaseException:
    (error,) = [error for cell, error in _runs(stem, CORPORA[stem][label]) if cell == cell_id]
    assert error is not None, (stem, label, cell_id)
    return error


def test_issue_35s_offenders_now_say_what_failed_and_for_which_input():
    from course.open_checks import OpenCheckFailed

    # 15: a maximum over the whole array underflows the row far below it; the sentence no longer blames an overflow alone.
    error = _first_failure("15_stable_log_softmax", "global_max_shift", "check-stable-log-softmax")
    assert isinstance(error, OpenCheckFailed) and "underflowed to 0" in str(error)
    assert str(error).startswith("stable_log_softmax(logits, axis=-1) for logits = [[1000, 1001, 999]")
    # 18: NumPy's assert_allclose traceback; now the call, its input and both values.
    error = _first_failure("18_kl_estimators", "float32_results", "check-kl-estimators")
    assert isinstance(error, OpenCheckFailed) and "for log_q = [-0.4, -1.2], log_p = [-0.5, -0.7]" in str(error)
    # 24: no message at all.
    error = _first_failure("24_labels_and_shifting", "positions_unshifted", "check-labels")
    assert isinstance(error, OpenCheckFailed) and str(error).startswith("loss_positions(labels) for labels = ")
    # 25: seven significand bits failed at logprobs_at_precision; the rounding function itself is named now.
    error = _first_failure("25_logprob_precision", "seven_bits", "check-precision")
    assert isinstance(error, OpenCheckFailed) and str(error).startswith("round_to_bfloat16(x) for x = ")


def test_an_error_raised_by_the_students_function_names_the_call_and_shows_only_their_lines():
    """call(): the error keeps its type; IPython shows the sentence, then the student's own frames."""
    namespace = support.namespace_from('''
def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits)
    return z - np.log(np.exp(z).sum(axis=5))
''')
    cell = next(c.source for c in support.source_notebook("15_stable_log_softmax").cells
                if c.id == "check-stable-log-softmax")
    with pytest.raises(Exception) as raised:
        exec(compile(cell, "<cell check>", "exec"), namespace)
    assert type(raised.value).__name__ == "AxisError"  # NumPy's own error, unchanged
    shown = ANSI.sub("", "\n".join(raised.value._render_traceback_()))
    assert " ".join(shown.split()).startswith(
        "Open check stopped: stable_log_softmax(logits=[[1000.0, 1001.0, 999.0], [-1000.0, -999.0, -1001.0]], "
        "axis=-1) raised AxisError (axis 5 is out of bounds for array of dimension 2), on the open check's input.")
    assert 'File "<answer>", line 6, in stable_log_softmax' in shown  # the student's line, nothing below it
    assert not any(path in shown for path in _library_paths())


def test_a_stub_that_is_not_written_yet_is_said_so():
    namespace = support.namespace_from("def stable_log_softmax(logits, axis=-1):\n    raise NotImplementedError()\n")
    cell = next(c.source for c in support.source_notebook("15_stable_log_softmax").cells
                if c.id == "check-stable-log-softmax")
    with pytest.raises(NotImplementedError) as raised:  # still what stops Run All at an unanswered notebook
        exec(compile(cell, "<cell check>", "exec"), namespace)
    shown = ANSI.sub("", "\n".join(raised.value._render_traceback_()))
    assert shown.startswith("Open check stopped: stable_log_softmax is not written yet (it raised NotImplementedError)")
