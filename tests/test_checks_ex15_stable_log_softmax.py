"""The hidden checks of exercise 15 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.channel import Call, Raised
from autograder.checks import CHECKS, run_check
from course import reference

STEM = "15_stable_log_softmax"
NOTEBOOK = Path(__file__).resolve().parents[1] / "source" / "module6" / f"{STEM}.ipynb"

# Input checks shared by the answers below (each answer is a complete cell's worth of code).
CHECKED = """
import numpy as np

def _checked(logits, axis):
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.size == 0:
        raise ValueError("logits must be a non-empty array")
    if not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite")
    if not isinstance(axis, int):
        raise TypeError("axis must be an integer")
    if not -z.ndim <= axis < z.ndim:
        raise ValueError("axis out of range")
    return z, axis % z.ndim
"""


def answer(body: str, signature: str = "logits, axis=-1") -> str:
    """A complete answer: the shared input checks, then ``body`` as the function's body."""
    return CHECKED + f"\ndef stable_log_softmax({signature}):\n" + textwrap.indent(textwrap.dedent(body), "    ")


CORRECT = {
    "vectorised": answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """),
    "max_plus_logsumexp": answer("""
        z, axis = _checked(logits, axis)
        m = z.max(axis=axis, keepdims=True)
        return z - (m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True)))
    """),
    "log1p_of_the_others": answer("""
        z, axis = _checked(logits, axis)
        top = np.expand_dims(np.argmax(z, axis=axis), axis)
        shifted = z - np.take_along_axis(z, top, axis=axis)
        terms = np.exp(shifted)
        np.put_along_axis(terms, top, 0.0, axis=axis)
        return shifted - np.log1p(terms.sum(axis=axis, keepdims=True))
    """),
    "python_loops_over_moved_axis": answer("""
        import math
        z, axis = _checked(logits, axis)
        moved = np.moveaxis(z, axis, -1)
        out = np.empty_like(moved)
        for index in np.ndindex(moved.shape[:-1]):
            row = [float(v) for v in moved[index]]
            m = max(row)
            total = 0.0
            for v in reversed(row):  # another summation order
                total += math.exp(v - m)
            out[index] = [v - m - math.log(total) for v in row]
        return np.moveaxis(out, -1, axis)
    """),
    "returns_nested_lists": answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max(axis=axis, keepdims=True)
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).tolist()
    """),
    "keeps_float32": answer("""
        dtype = np.float32 if getattr(logits, "dtype", None) == np.float32 else np.float64
        z, axis = _checked(logits, axis)
        z = z.astype(dtype)
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """),
    "prints_and_warns": answer("""
        import warnings
        z, axis = _checked(logits, axis)
        print("normalising along axis", axis)
        warnings.warn("just saying hello")
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """),
    "extra_keyword_with_default": answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max(axis=axis, keepdims=True)
        result = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        return result / temperature if temperature != 1.0 else result
    """, signature="logits, axis=-1, *, temperature=1.0"),
    "mutates_its_input": answer("""
        z, axis = _checked(logits, axis)
        if isinstance(logits, np.ndarray) and logits.dtype == np.float64:
            z = logits
        z -= z.max(axis=axis, keepdims=True)
        z -= np.log(np.exp(z).sum(axis=axis, keepdims=True))
        return z
    """),
}

# Each mistake keeps the input checks, so the points it loses are the mistake's own.
WRONG = {
    "no_max_shift": (answer("""
        z, axis = _checked(logits, axis)
        return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    """), "no-max-shift"),
    "no_max_shift_divide_first": (answer("""
        z, axis = _checked(logits, axis)
        e = np.exp(z)
        return np.log(e / e.sum(axis=axis, keepdims=True))
    """), "no-max-shift"),
    "shift_by_mean": (answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.mean(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """), "no-max-shift"),
    "log_of_stable_softmax": (answer("""
        z, axis = _checked(logits, axis)
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return np.log(e / e.sum(axis=axis, keepdims=True))
    """), "log-of-softmax"),
    "returns_softmax": (answer("""
        z, axis = _checked(logits, axis)
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    """), "returned-softmax"),
    "ignores_axis": (answer("""
        z, _ = _checked(logits, axis)
        shifted = z - z.max(axis=-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    """), "axis-ignored"),
    "always_axis_zero": (answer("""
        z, _ = _checked(logits, axis)
        shifted = z - z.max(axis=0, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=0, keepdims=True))
    """), "wrong-axis"),
    "whole_array": (answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max()
        return shifted - np.log(np.exp(shifted).sum())
    """), "wrong-axis"),
    "only_subtracts_max": (answer("""
        z, axis = _checked(logits, axis)
        return z - z.max(axis=axis, keepdims=True)
    """), "missing-log-normaliser"),
    "max_not_restored": (answer("""
        z, axis = _checked(logits, axis)
        m = z.max(axis=axis, keepdims=True)
        return z - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))
    """), "max-not-restored"),
    "negative_log_probs": (answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max(axis=axis, keepdims=True)
        return np.log(np.exp(shifted).sum(axis=axis, keepdims=True)) - shifted
    """), "negated-log-probs"),
    "does_not_reject_nan_or_inf": ("""
import numpy as np
def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits, dtype=np.float64)
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
""", "silent-bad-input"),
}

# Hostile answers and the groups in which they must earn nothing.
ADVERSARIAL = {
    "object_with_lying_eq": ("""
import numpy as np
class Anything:
    shape = (2, 3)
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(self.shape)
def stable_log_softmax(logits, axis=-1): return Anything()
""", ("public", "shapes_axes", "numerics")),
    "ndarray_subclass_lying_eq": ("""
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def __sub__(self, other): return np.zeros(self.shape)
    def __abs__(self): return np.zeros(self.shape)
def stable_log_softmax(logits, axis=-1): return np.full(np.shape(logits), -0.5).view(Liar)
""", ("public", "shapes_axes", "numerics")),
    "nan_everywhere": ("""
import numpy as np
def stable_log_softmax(logits, axis=-1): return np.full(np.shape(logits), np.nan)
""", ("public", "shapes_axes", "numerics")),
    "generator": ("""
def stable_log_softmax(logits, axis=-1): return (0.0 for _ in range(3))
""", ("public", "shapes_axes", "numerics", "validation")),
    "wrong_shape_keepdims_lost": ("""
import numpy as np
def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("bad")
    shifted = z - z.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)))[None]
""", ("public", "shapes_axes", "numerics")),
    "huge_array": ("""
import numpy as np
def stable_log_softmax(logits, axis=-1): return np.zeros(10_000_000)
""", ("public", "shapes_axes", "numerics", "validation")),
    "raises_everything": ("""
def stable_log_softmax(logits, axis=-1): raise SystemExit(3)
""", ("public", "shapes_axes", "numerics", "validation")),
    "strings_and_sets": ("""
def stable_log_softmax(logits, axis=-1): return {"-0.4", "-1.4"}
""", ("public", "shapes_axes", "numerics")),
}


def namespace_of(source: str) -> dict:
    namespace: dict = {}
    exec(compile(textwrap.dedent(source), "<answer>", "exec"), namespace)
    return namespace


def group_points(result) -> dict:
    return {group.name: (group.points_earned, group.points_available) for group in result.groups}


def test_groups_and_points():
    check = CHECKS[STEM]
    assert [group.name for group in check.groups] == ["public", "shapes_axes", "numerics", "validation"]
    assert check.points == 9  # plus the 1-point explanation in the notebook


def test_notebook_totals_ten_points():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    points = [cell.metadata["nbgrader"]["points"] for cell in notebook.cells
              if cell.metadata.get("nbgrader", {}).get("grade")]
    assert sum(points) == 10
    graded_ids = {cell.metadata["nbgrader"]["grade_id"] for cell in notebook.cells
                  if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code"}
    assert graded_ids == {group.grade_id for group in CHECKS[STEM].groups}


def test_the_reference_gets_full_marks():
    result = run_check(STEM, {"stable_log_softmax": reference.stable_log_softmax})
    assert result.points_earned == result.points_available, result.feedback()


def test_validation_cases_are_rejected_by_the_reference_too():
    for case in CHECKS[STEM].cases(["validation"]):
        (call,) = case.calls
        with pytest.raises((ValueError, TypeError)):
            reference.stable_log_softmax(*call.args, **call.kwargs)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_answers_get_full_marks(name):
    result = run_check(STEM, namespace_of(CORRECT[name]))
    assert result.points_earned == result.points_available, result.feedback()
    assert result.misconceptions == ()


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_misconception_loses_points_and_is_named(name):
    source, key = WRONG[name]
    result = run_check(STEM, namespace_of(source))
    assert result.points_earned < result.points_available, result.feedback()
    assert key in result.misconceptions, (key, result.misconceptions, result.feedback())


def test_a_nearly_right_answer_keeps_most_points():
    # Ignoring `axis` only fails the cases that ask for another axis.
    result = run_check(STEM, namespace_of(WRONG["ignores_axis"][0]))
    points = group_points(result)
    assert points["public"] == (2, 2) and points["validation"] == (2, 2)
    assert result.points_earned >= 6, result.feedback()


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_hostile_return_values_earn_nothing_in_the_groups_they_attack(name):
    source, attacked = ADVERSARIAL[name]
    result = run_check(STEM, namespace_of(source))
    points = group_points(result)
    for group in attacked:
        assert points[group][0] == 0, (group, result.feedback())


def test_a_float32_answer_to_a_float64_input_is_not_accepted():
    source = answer("""
        z, axis = _checked(logits, axis)
        z = z.astype(np.float32)
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """)
    result = run_check(STEM, namespace_of(source), ["shapes_axes"])
    assert result.points_earned < result.points_available, result.feedback()


def test_feedback_never_reveals_hidden_inputs():
    for name in ("no_max_shift", "ignores_axis", "max_not_restored"):
        text = run_check(STEM, namespace_of(WRONG[name][0])).feedback()
        assert not re.search(r"\d\.\d{4,}", text), text


def test_validation_inputs_reach_the_student_as_sent():
    # The NaN case really carries a NaN (the channel must not clean it on the way).
    case = next(c for c in CHECKS[STEM].cases(["validation"]) if "NaN" in c.name)
    (call,) = case.calls
    rebuilt = Call.from_json(call.to_json())
    assert np.isnan(rebuilt.args[0]).any()
    assert case.judge((Raised("ValueError", ("ValueError", "Exception"), "bad"),)).passed


# ----------------------------------------------------------------------------- the notebook itself


def notebook_code(stub: bool) -> str:
    """Setup and answer cells of the source notebook; with ``stub`` the solutions become nbgrader stubs."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    parts = []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or "widget" in cell.metadata.get("tags", []):
            continue
        if cell.id.startswith("check") and stub:
            continue
        source = cell.source
        if stub and meta.get("solution"):
            source = re.sub(r"( *)### BEGIN SOLUTION.*?### END SOLUTION",
                            lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()",
                            source, flags=re.S)
        parts.append(source)
    return "\n\n".join(parts)


def test_notebook_solution_gets_full_marks():
    result = run_check(STEM, namespace_of(notebook_code(stub=False)))
    assert result.points_earned == result.points_available == 9, result.feedback()


def test_notebook_stub_gets_zero_with_not_implemented_feedback():
    result = run_check(STEM, namespace_of(notebook_code(stub=True)))
    assert result.points_earned == 0, result.feedback()
    assert "not implemented" in result.feedback()


def test_notebook_is_stored_without_outputs_and_public_cells_import_no_grader():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id
            if not cell.metadata.get("nbgrader", {}).get("grade"):
                assert "autograder" not in cell.source and "course.reference" not in cell.source, cell.id
