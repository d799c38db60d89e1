"""The hidden checks of exercise 15 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import textwrap

import numpy as np

from autograder.channel import Call, Raised
from autograder.checks import CHECKS
from check_support import CodingCheckTests, group_points, result_of

STEM = "15_stable_log_softmax"

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
    "clipped_before_the_log": (answer("""
        z, axis = _checked(logits, axis)
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return np.log(np.clip(e / e.sum(axis=axis, keepdims=True), 1e-12, 1.0))
    """), "clipped-log", "mixed signs spread over 2000"),
    "epsilon_in_the_log": (answer("""
        z, axis = _checked(logits, axis)
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return np.log(e / e.sum(axis=axis, keepdims=True) + 1e-10)
    """), "clipped-log"),
    "float32_arithmetic_inside": (answer("""
        z, axis = _checked(logits, axis)
        z = z.astype(np.float32)
        shifted = z - z.max(axis=axis, keepdims=True)
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(np.float64)
    """), "float32-arithmetic", "1-D logits, default axis"),
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
    # the tester's np.log(softmax(z)) with a per-slice max: where every row peaks at the array's maximum,
    # its infinities come from the log of an underflowed probability, not from a global maximum (issue 22)
    "log_of_softmax_per_slice_max": (answer("""
        z, axis = _checked(logits, axis)
        def softmax(x):
            e = np.exp(x - np.max(x, axis=axis, keepdims=True))
            return e / np.sum(e, axis=axis, keepdims=True)
        return np.log(softmax(z))
    """), "log-of-softmax", "mixed signs spread over 2000"),
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
    # one maximum for the whole array, normalised along the axis: rows near -1000 underflow to a zero sum
    "global_max_shift": (answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max()
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """), "global-max-shift", "the open check's rows near +1000 and -1000 (axis=-1)"),
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


# The task asks for "a float64 array": nested lists lose the case that grades the output type (F-15a).
WRONG["returns_nested_lists"] = (answer("""
        z, axis = _checked(logits, axis)
        shifted = z - z.max(axis=axis, keepdims=True)
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).tolist()
    """), "list-not-array", "nested lists instead of an array, axis=1")

# The task asks for ValueError for bad values; TypeError there is named.
WRONG["type_error_for_non_finite_logits"] = (CORRECT["vectorised"].replace('raise ValueError("logits must be finite")', 'raise TypeError("logits must be finite")'), "value-error-expected", "NaN among the logits")


class TestStableLogSoftmax(CodingCheckTests):
    stem = STEM
    central_mistakes = ('no_max_shift', 'no_max_shift_divide_first', 'clipped_before_the_log', 'global_max_shift',
                        'log_of_softmax_per_slice_max')
    groups = ("public", "shapes_axes", "numerics", "validation")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("stable_log_softmax",)
    quiet_mistakes = ("no_max_shift", "ignores_axis", "max_not_restored")


def test_a_nearly_right_answer_keeps_most_points():
    # Ignoring `axis` only fails the cases that ask for another axis.
    result = result_of(STEM, WRONG["ignores_axis"][0])
    points = group_points(result)
    assert points["public"] == (2, 2) and points["validation"] == (2, 2)
    assert result.points_earned >= 6, result.feedback()


def test_a_float32_answer_to_a_float64_input_is_not_accepted():
    source = answer("""
        z, axis = _checked(logits, axis)
        z = z.astype(np.float32)
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """)
    result = result_of(STEM, source, ["shapes_axes"])
    assert result.points_earned < result.points_available, result.feedback()


def test_validation_inputs_reach_the_student_as_sent():
    # The NaN case really carries a NaN (the channel must not clean it on the way).
    case = next(c for c in CHECKS[STEM].cases(["validation"]) if "NaN" in c.name)
    (call,) = case.calls
    rebuilt = Call.from_json(call.to_json())
    assert np.isnan(rebuilt.args[0]).any()
    assert case.judge((Raised("ValueError", ("ValueError", "Exception"), "bad"),)).passed


import pytest  # noqa: E402

CENTRAL_MISTAKES = ("no_max_shift", "no_max_shift_divide_first", "clipped_before_the_log")


@pytest.mark.parametrize("label", CENTRAL_MISTAKES)
def test_an_unstable_log_softmax_earns_at_most_a_third(label):
    result = result_of(STEM, WRONG[label][0])
    assert result.points_earned <= 3.0, result.feedback()
    for group in result.groups:
        alone = result_of(STEM, WRONG[label][0], [group.name])
        assert alone.points_earned <= group.points_available / 3 + 1e-9, alone.feedback()


def test_float32_arithmetic_is_not_capped():
    result = result_of(STEM, WRONG["float32_arithmetic_inside"][0])
    assert not any(group.capped for group in result.groups), result.feedback()


def test_a_list_instead_of_an_array_loses_the_case_that_grades_the_output_type():
    """F-15a: "Output. A float64 array"; w15r_list returned .tolist() at 9/9."""
    source = CORRECT["vectorised"].replace("return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))",
                                           "return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).tolist()")
    assert ".tolist()" in source
    result = result_of(STEM, source)
    failed = [case for case in result.cases if not case.passed]
    assert [case.name for case in failed] == ["nested lists instead of an array, axis=1"], result.feedback()
    assert failed[0].misconception == "list-not-array"
    assert 8.5 < result.points_earned < 9, result.feedback()


def test_an_answer_of_zeros_is_not_blamed_on_an_axis_or_a_missing_normaliser():
    """The tester's g15_subclass returned zeros and one case called it 'normalised over the wrong axis'."""
    source = CHECKED + "\ndef stable_log_softmax(logits, axis=-1):\n    z, axis = _checked(logits, axis)\n    return np.zeros_like(z)\n"
    result = result_of(STEM, source)
    assert not result.misconceptions, result.feedback()
    assert "the log-probabilities are not correct for this input" in result.feedback()  # number agreement


def test_a_float32_slip_is_named_in_every_case_it_fails():
    """F-prec: no tolerance is loosened, but every failing case says float32 is the cause, including the
    logits of order 1e3, whose float32 rounding (steps of 6e-5) is larger than 7 digits of the result."""
    source = answer("""
        z, axis = _checked(logits, axis)
        z = z.astype(np.float32)
        shifted = z - z.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    """)
    result = result_of(STEM, source)
    failed = [case for case in result.cases if not case.passed]
    assert failed and all(case.misconception == "float32-output" for case in failed), result.feedback()


def test_a_global_maximum_is_blamed_for_the_underflow_it_causes():
    from check_support import result_of

    result = result_of(STEM, WRONG["global_max_shift"][0], ["public"])
    (case,) = result.cases[:1]
    assert case.message == (
        "One maximum was taken over the whole array instead of one per slice along `axis`: in a row whose "
        "logits lie far below the largest logit of the array (near -1000 when another row is near +1000), every "
        "exp(z - max) underflows to 0, and the log of that zero sum gives inf or NaN. Take the maximum along "
        "`axis` with keepdims=True, so that every slice keeps one exponent of exactly 0.")
    assert "exp(1000)" not in case.message


def test_a_log_of_a_softmax_is_not_blamed_on_a_global_maximum():
    """Issue 22: np.log(softmax(z)) with a per-slice max was told "One maximum was taken over the whole
    array" on the case whose rows all peak at the array's maximum, where no global maximum is visible."""
    result = result_of(STEM, WRONG["log_of_softmax_per_slice_max"][0], ["numerics"])
    failed = {case.name: case for case in result.cases if not case.passed}
    assert failed["mixed signs spread over 2000"].misconception == "log-of-softmax", result.feedback()
    assert not any(case.misconception == "global-max-shift" for case in result.cases), result.feedback()
