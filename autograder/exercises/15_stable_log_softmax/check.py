"""Hidden checks for exercise 15: ``stable_log_softmax(logits, axis=-1)``.

Expected values come from :mod:`autograder.reference`, computed in the trusted process. Tolerances
(``rtol=1e-10, atol=1e-12``) accept the textbook ``(z - m) - log(sum(exp(z - m)))`` as well as the
reference's ``log1p`` form; both are far inside them for logits of order 1e3 (the seed's scale, not
more). A float32 answer to a float32 input is accepted at float32 precision.
"""

from __future__ import annotations

import functools

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    CLIPPED_LOG, LOG_OF_SOFTMAX, Case, Central, ExerciseCheck, Gate, Group, Misconception, clipped_logs, coding_groups,
    error_case, exercise_stem, judge_floats, log_softmax, mistake_outputs, shared as _shared, value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)
TARGET = "stable_log_softmax"

GROUPS = coding_groups(
    (2, "The notebook's open check: two rows of logits of order 1e3"),
    Group("shapes_axes", 3, "Random logits of 1 to 3 dimensions, normalised along each requested axis"),
    Group("numerics", 2, "Stays finite and exact for logits of order 1e3, whatever their sign and spread"),
    validation=(2, "Rejects NaN, infinities, empty or 0-d logits and a bad axis"),
)

# ----------------------------------------------------------------------------- misconceptions

NO_MAX_SHIFT = _shared.NO_MAX_SHIFT
RETURNED_SOFTMAX = Misconception(
    "returned-softmax",
    "These are probabilities (a softmax), not log-probabilities: the result should be <= 0 with "
    "exp(result) summing to one.")
AXIS_IGNORED = Misconception(
    "axis-ignored",
    "The result is normalised along the last axis although another axis was requested: pass `axis` to "
    "every reduction (max and sum) and keep its dimension (keepdims=True).")
WRONG_AXIS = Misconception(
    "wrong-axis",
    "The result is normalised over the wrong axis (or over the whole array): every reduction must run "
    "along `axis` only, with keepdims=True so that it broadcasts back.")
NO_NORMALISER = Misconception(
    "missing-log-normaliser",
    "Only the maximum was subtracted: log-softmax also subtracts the log of the normaliser, "
    "log(sum(exp(z - max))), so that the probabilities sum to one.")
MAX_NOT_RESTORED = Misconception(
    "max-not-restored",
    "The result is off by the maximum: log(sum(exp(z))) = max + log(sum(exp(z - max))), so subtract "
    "the maximum from z as well as the shifted log-sum.")
GLOBAL_MAX = Misconception(
    "global-max-shift",
    "One maximum was taken over the whole array instead of one per slice along `axis`: in a row whose "
    "logits lie far below the largest logit of the array (near -1000 when another row is near +1000), every "
    "exp(z - max) underflows to 0, and the log of that zero sum gives inf or NaN. Take the maximum along "
    "`axis` with keepdims=True, so that every slice keeps one exponent of exactly 0.")
NEGATED = _shared.NEGATED
LIST_NOT_ARRAY = _shared.LIST_NOT_ARRAY


def wrong_outputs(z: np.ndarray, axis: int) -> list:
    """Outputs of the classic mistakes for ``stable_log_softmax(z, axis)`` (trusted process)."""
    axis = axis % z.ndim
    maximum = z.max(axis=axis, keepdims=True)
    shifted = z - maximum
    terms = np.exp(shifted)
    probabilities = terms / terms.sum(axis=axis, keepdims=True)
    log_sum_shifted = np.log(terms.sum(axis=axis, keepdims=True))
    correct = shifted - log_sum_shifted
    wrong = []
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        raw = np.exp(z)
        raw_sum = raw.sum(axis=axis, keepdims=True)
        wrong.append((np.log(raw / raw_sum), NO_MAX_SHIFT))
        wrong.append((z - np.log(raw_sum), NO_MAX_SHIFT))
        log_of_probabilities = np.log(probabilities)
        if not np.all(np.isfinite(log_of_probabilities)):
            wrong.append((log_of_probabilities, LOG_OF_SOFTMAX))
        # One maximum for the whole array: rows far below it underflow (inf or NaN there). Named only
        # where a global maximum gives an output of its own: when every slice's maximum IS the global
        # one (every row of "mixed signs spread over 2000" peaks at 1000), a global-max answer and a
        # per-slice one agree, and an inf there comes from a log of an underflowed softmax instead.
        if z.ndim > 1 and np.any(maximum != z.max()):
            whole = z - z.max()
            whole_terms = np.exp(whole)
            whole_sum = whole_terms.sum(axis=axis, keepdims=True)
            for output in (whole - np.log(whole_sum), np.log(whole_terms / whole_sum)):
                if not np.array_equal(output, log_of_probabilities, equal_nan=True):
                    wrong.append((output, GLOBAL_MAX))
    wrong += [(clipped, CLIPPED_LOG) for clipped in clipped_logs(correct)]
    wrong.append((probabilities, RETURNED_SOFTMAX))
    for other in range(z.ndim):
        if other != axis:
            wrong.append((log_softmax(z, other), AXIS_IGNORED if other == z.ndim - 1 else WRONG_AXIS))
    if z.ndim > 1:
        wrong.append((log_softmax(z, None), WRONG_AXIS))
    wrong.append((shifted, NO_NORMALISER))
    wrong.append((z - log_sum_shifted, MAX_NOT_RESTORED))
    wrong.append((-correct, NEGATED))
    # An output of zeros (a log-softmax along an axis of length 1, a max shift of equal logits) is also
    # what an answer returning zeros gives: naming a mistake there would blame one it need not have made.
    return [(output, misconception) for output, misconception in wrong if np.any(output != 0)]


_DEFAULT = object()


def _case(name: str, group: str, logits: np.ndarray, axis=_DEFAULT, *, positional: bool = False,
          as_list: bool = False, need_array: bool = False) -> Case:
    """``stable_log_softmax`` on ``logits`` (sent as given, or as nested lists), judged against the reference.

    ``need_array``: the task's "Output. A float64 array" is graded here (one case, so that a list
    costs that case and not every value case)."""
    sent = logits.tolist() if as_list else logits
    if axis is _DEFAULT:
        call, used_axis = Call(TARGET, (sent,)), -1
    elif positional:
        call, used_axis = Call(TARGET, (sent, axis)), axis
    else:
        call, used_axis = Call(TARGET, (sent,), {"axis": axis}), axis
    expected = np.asarray(reference.stable_log_softmax(logits, axis=used_axis), dtype=np.float64)
    wrong = mistake_outputs(functools.partial(wrong_outputs, np.asarray(logits, dtype=np.float64), used_axis))
    float32_input = isinstance(sent, np.ndarray) and sent.dtype == np.float32
    scale = float(np.max(np.abs(logits))) if np.size(logits) else 1.0

    def judge(outcomes):
        value = value_of(outcomes[0], TARGET)
        if need_array and isinstance(value, (list, tuple)):
            raise LIST_NOT_ARRAY.reject()
        return judge_floats(value, expected, "the log-probabilities", wrong=wrong, overflow=NO_MAX_SHIFT,
                            float32_input=float32_input, input_scale=scale)

    return Case(name, group, (call,), judge)


def _error_case(name: str, logits, problem: str, argument: str = "logits", *, value_error: bool = False,
                **kwargs) -> Case:
    """``value_error``: the task asks for ValueError alone (bad logits); a bad axis may raise either."""
    names = ("ValueError",) if value_error else ("ValueError", "TypeError")
    return error_case(name, TARGET, (logits,), problem, argument, kwargs=kwargs, names=names)


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(1515))
    cases = [
        _case("the open check's rows near +1000 and -1000 (axis=-1)", "public",
              np.array([[1000.0, 1001.0, 999.0], [-1000.0, -999.0, -1001.0]]), -1),
    ]

    def normal(*shape, scale=3.0):
        return rng.normal(scale=scale, size=shape)

    cases += [
        _case("1-D logits, default axis", "shapes_axes", normal(7)),
        _case("1-D logits over 50 tokens, axis=0", "shapes_axes", normal(50), 0),
        _case("2-D logits, axis=0", "shapes_axes", normal(4, 9), 0),
        _case("2-D logits, axis=-2", "shapes_axes", normal(3, 5), -2),
        _case("2-D logits, axis=1 given positionally", "shapes_axes", normal(6, 2), 1, positional=True),
        _case("3-D logits [B, L, V], axis=-1", "shapes_axes", normal(4, 7, 50), -1),
        _case("3-D logits, axis=1", "shapes_axes", normal(2, 5, 11), 1),
        _case("3-D logits, axis=0", "shapes_axes", normal(3, 4, 6), 0),
        _case("3-D logits, axis=-2", "shapes_axes", normal(2, 6, 3), -2),
        _case("3-D logits, axis=2", "shapes_axes", normal(1, 2, 13), 2),
        _case("nested lists instead of an array, axis=1", "shapes_axes", normal(3, 4), 1, as_list=True,
              need_array=True),
        _case("float32 logits [B, L, V]", "shapes_axes", normal(2, 3, 17).astype(np.float32), -1),
        _case("a single token per row", "shapes_axes", normal(3, 1), -1),
    ]

    offsets = np.array([[1000.0], [-1000.0], [500.0]])
    cases += [
        _case("rows near +-1000 normalised along axis 0", "numerics",
              np.array([[1000.0, -1000.0], [1001.0, -999.0], [999.0, -1001.0]]), 0),
        _case("mixed signs spread over 2000", "numerics",
              np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 500.0], [3.0, 1000.0, -999.0]]), -1),
        _case("equal logits of +-1000", "numerics", np.array([[1000.0] * 4, [-1000.0] * 4]), -1),
        _case("[B, L, V] logits near +1000, axis=-1", "numerics", 1000.0 + normal(2, 3, 20, scale=5.0), -1),
        _case("[B, L, V] logits near -1000, axis=1", "numerics", -1000.0 + normal(3, 4, 5, scale=5.0), 1),
        _case("logits uniform in [-1000, 1000]", "numerics", rng.uniform(-1000.0, 1000.0, size=(3, 40)), -1),
        _case("rows with offsets +1000, -1000 and 500", "numerics", offsets + normal(3, 8), -1),
    ]

    good = normal(2, 3)
    with_nan, with_inf, with_neg_inf = good.copy(), good.copy(), good.copy()
    with_nan[1, 1] = np.nan
    with_inf[0, 2] = np.inf
    with_neg_inf[1, 0] = -np.inf
    cases += [
        _error_case("NaN among the logits", with_nan, "logits containing NaN", value_error=True),
        _error_case("+inf among the logits", with_inf, "logits containing +inf", value_error=True),
        _error_case("-inf among the logits", with_neg_inf, "logits containing -inf", value_error=True),
        _error_case("empty logits", np.zeros(0), "empty logits", value_error=True),
        _error_case("a 0-d logit (a plain number)", 2.5, "a single number instead of an array", value_error=True),
        _error_case("axis out of range", good, "axis=2 for 2-D logits", "axis", axis=2),
        _error_case("a non-integer axis", good, "axis=1.5", "axis", axis=1.5),
    ]
    return cases


#: The exercise is a log-softmax that stays exact for logits of order 1e3. An answer that overflows,
#: takes the log of a softmax, clips before the log or does not normalise earns at most a third.
CENTRAL = Central(
    "the stable log-softmax (shift by the maximum, subtract the log-normaliser, stay in log space)",
    {"no-max-shift", "global-max-shift", "log-of-softmax", "clipped-log", "missing-log-normaliser",
     "max-not-restored", "returned-softmax"},
    ("the open check's rows near +1000 and -1000 (axis=-1)", "1-D logits, default axis",
     "mixed signs spread over 2000"))

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
GATE = Gate(groups=("validation",), cases=(
    "1-D logits, default axis",
    "3-D logits [B, L, V], axis=-1",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         cases=(
             '[B, L, V] logits near +1000, axis=-1',
             'rows with offsets +1000, -1000 and 500',)),
)

#: A row of one token has log-probability 0 whatever its logit, which an answer of zeros gives too: that
#: case counts only when the function also gets rows of several tokens right.
CONSTANT_GATES = (
    Gate(groups=("shapes_axes",), needs="attempted", quorum=1, only=("a single token per row",),
         cases=("1-D logits, default axis", "2-D logits, axis=0", "3-D logits [B, L, V], axis=-1"),
         why="a row of one token has log-probability 0 whatever it holds: it counts only when the function "
             "also gets rows of several tokens right"),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES + CONSTANT_GATES)
