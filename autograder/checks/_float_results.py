"""Judging float arrays returned by the coding exercises (15-19).

The general helpers of :mod:`autograder.checks._judge` reject NaN and infinities before any
comparison. The coding exercises need one more step: an output that overflowed is the signature of
a classic mistake (no max shift, a product of probabilities), so non-finite values are named as
that mistake where the case's input is one that overflows a naive formula.

Single precision is treated in one of two ways, as each exercise's task states:

* the log-probability exercises (15-17, :func:`judge_floats`) accept a ``float32`` answer to a
  ``float32`` input at float32 precision: keeping the input's dtype, as SciPy and PyTorch do, is a
  correct choice; only a float64 input demands the float64 tolerance that the seed asks for;
* the KL and sampling exercises (18-19) ask for float64 results, and :func:`float32_output` names a
  single-precision answer that is right only to single precision.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from autograder.checks._core import PASS, Reject, Verdict
from autograder.checks._judge import Misconception, close, float_array, mistake_outputs, not_correct

#: The seed's accuracy (1e-12), with room for another valid summation order.
RTOL, ATOL = 1e-10, 1e-12

#: A float32 computation of a float32 input: a few float32 ulps (eps = 1.2e-7) of values of order 10.
F32_RTOL, F32_ATOL = 1e-5, 1e-5
#: A float64 result rounded to single precision on the way out (probabilities and KLs of order 1).
ROUNDED_RTOL, ROUNDED_ATOL = 1e-5, 1e-7

FLOAT32_OUTPUT = Misconception(
    "float32-output",
    "The result is float32, which keeps only about 7 significant digits: compute and return float64.")
FLOAT32_ARITHMETIC = Misconception(
    "float32-arithmetic",
    "The values are right to only about 7 significant digits: part of the computation ran in float32 "
    "(an input or an intermediate cast to np.float32). Convert the input with np.asarray(x, dtype=np.float64) "
    "and keep every step in float64.")
CLIPPED_LOG = Misconception(
    "clipped-log",
    "Probabilities were clipped, or given a small epsilon, before the log (np.log(np.clip(p, eps, 1)) or "
    "np.log(p + eps)): that changes the log of every tiny probability, and log-probabilities far below "
    "log(eps) are legitimate. Stay in log space: log p = z - max - log(sum(exp(z - max))).")
LOG_OF_SOFTMAX = Misconception(
    "log-of-softmax",
    "A result came out infinite or NaN although every logit is finite: a probability underflowed to 0 "
    "(a logit about 745 or more below its row's maximum) and then went through a log, as in "
    "np.log(softmax(z)) or scipy's rel_entr on probabilities. Its log-probability is finite: compute "
    "log p = z - max - log(sum(exp(z - max))) and work with logs throughout.")

#: Epsilons students use to "protect" a log: clipping below or adding them changes tiny probabilities.
CLIP_EPSILONS = (1e-6, 1e-8, 1e-9, 1e-10, 1e-12, 1e-15, 1e-16, 1e-20, 1e-30, 1e-300,
                 float(np.finfo(np.float64).eps), float(np.finfo(np.float64).tiny))

_isfinite = np.isfinite
_isnan = np.isnan
_any = np.any
_float32 = np.dtype(np.float32)


def log_softmax(z: np.ndarray, axis: int | None = -1) -> np.ndarray:
    """The textbook max-shifted log-softmax of trusted float64 input along ``axis`` (``None``: the whole
    array), for computing what a mistake outputs; expected values come from :mod:`autograder.reference`."""
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _indistinct(wrong_output: Any, expected: np.ndarray) -> bool:
    try:
        return close(wrong_output, expected, rtol=1e-8, atol=1e-10)
    except (ValueError, TypeError):
        return False


def clipped_logs(log_p: np.ndarray) -> list:
    """What ``log(clip(p, eps, 1))`` and ``log(p + eps)`` give for true log-probabilities ``log_p``, one
    array per epsilon of :data:`CLIP_EPSILONS` that changes something (trusted process)."""
    log_p = np.asarray(log_p, dtype=np.float64)
    outputs = []
    with np.errstate(all="ignore"):
        p = np.exp(log_p)
        for eps in CLIP_EPSILONS:
            for candidate in (np.log(np.clip(p, eps, 1.0)), np.log(p + eps)):
                if np.all(np.isfinite(candidate)) and not close(candidate, log_p, rtol=1e-8, atol=1e-10):
                    outputs.append(candidate)
    return outputs


def float32_atol(input_scale: float = 1.0) -> float:
    """How far a float32 computation may land from the truth when its inputs are of size ``input_scale``
    (logits of order 1e3 are rounded to float32 steps of 6e-5): for NAMING a float32 slip only, never
    for passing an answer."""
    return max(F32_ATOL, 8 * float(np.finfo(np.float32).eps) * float(input_scale))


def float32_arithmetic(value: Any, actual: np.ndarray, expected: Any, *, atol: float = F32_ATOL) -> Verdict | None:
    """Name a float64 answer that is right only to single precision (float32 inside the function)."""
    expected = np.asarray(expected, dtype=np.float64)
    if (isinstance(value, np.ndarray) and value.dtype == np.float64 and actual.shape == expected.shape
            and close(actual, expected, rtol=F32_RTOL, atol=atol)):
        return Verdict(False, FLOAT32_ARITHMETIC.sentence, FLOAT32_ARITHMETIC.key)
    return None


def is_float32(value: Any) -> bool:
    """True when the decoded value is a float32 array (the channel keeps array dtypes exactly)."""
    return isinstance(value, np.ndarray) and value.dtype == _float32


def _below_float64(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype.itemsize < 8


def float32_output(value: Any, actual: np.ndarray, expected: Any) -> Verdict | None:
    """Where float64 is asked for: name a float32 (or float16) answer that is right to single precision.

    ``value`` is the decoded answer (its dtype is kept by the channel), ``actual`` the same as float64.
    Returns ``None`` when that is not what went wrong.
    """
    if _below_float64(value) and close(actual, expected, rtol=ROUNDED_RTOL, atol=ROUNDED_ATOL):
        return Verdict(False, FLOAT32_OUTPUT.sentence, FLOAT32_OUTPUT.key)
    return None


def finite_floats(value: Any, what: str, *, shape: Sequence[int],
                  overflow: Misconception | None = None) -> np.ndarray:
    """A finite float64 array of ``shape``; NaN or infinities are named as ``overflow`` when it is given
    (the case's input overflows a naive ``exp``), else rejected as such."""
    try:
        return float_array(value, what, shape=shape)
    except Reject as rejection:
        if overflow is not None and ("NaN" in rejection.message or "infinite" in rejection.message):
            raise overflow.reject() from None
        raise


def judge_floats(value: Any, expected: Any, what: str, *, wrong: Iterable[tuple] = (),
                 overflow: Misconception | None = None, float32_input: bool = False,
                 float64: bool = False, float32_work: bool = False, rtol: float = RTOL,
                 atol: float = ATOL, input_scale: float = 1.0) -> Verdict:
    """PASS when ``value`` matches ``expected``; otherwise name the mistake it matches, if any.

    Parameters
    ----------
    value : decoded return value
        Checked for type (numbers only) before any conversion.
    expected : array_like
        The reference's output, computed in the trusted process.
    what : str
        How the feedback calls this value ("the log-probabilities").
    wrong : iterable of (array_like, Misconception), or a function returning them
        Outputs of classic mistakes on the same input; matched with a looser tolerance. A function is
        called only when the answer is not right (see :func:`autograder.checks._judge.mistake_outputs`).
    overflow : Misconception, optional
        Named when the answer holds NaN or infinities where the expected values are finite
        and no listed mistake matched (the usual symptom of exponentiating unshifted values).
    float32_input : bool
        The case's input was float32: a float32 answer is accepted at float32 precision.
    float32_work : bool
        With ``float32_input``, also accept a float64 answer that is right only to float32 precision:
        the task allows working a float32 input in float32 and returning either precision (17).
    float64 : bool
        The task asks for float64 results: a float32 answer is named as such (see :func:`float32_output`).
        Ignored where ``float32_input`` accepts a float32 answer.
    input_scale : float
        The size of the case's inputs: a float32 slip is recognised (named, never passed) within the
        error float32 makes on inputs that large (:func:`float32_atol`).
    """
    expected = np.asarray(expected, dtype=np.float64)
    actual = float_array(value, what, finite=False, allow_nan=True)
    if close(actual, expected, rtol=rtol, atol=atol):
        if float64 and not float32_input and _below_float64(value):
            return Verdict(False, FLOAT32_OUTPUT.sentence, FLOAT32_OUTPUT.key)
        return PASS
    if float32_input and (is_float32(value) or float32_work) and close(actual, expected, rtol=F32_RTOL,
                                                                    atol=F32_ATOL):
        return PASS  # float32 arithmetic on a float32 input (returned as float64 too where float32_work)
    for wrong_output, misconception in mistake_outputs(wrong)():
        if _indistinct(wrong_output, expected):
            continue  # this input cannot tell the mistake from the right answer: never name it here
        if close(actual, wrong_output, rtol=max(rtol, 1e-8), atol=max(atol, 1e-10)):
            return Verdict(False, misconception.sentence, misconception.key)
    slip = float32_atol(input_scale)
    if _below_float64(value) and close(actual, expected, rtol=F32_RTOL, atol=slip):
        return Verdict(False, FLOAT32_OUTPUT.sentence, FLOAT32_OUTPUT.key)
    arithmetic = float32_arithmetic(value, actual, expected, atol=slip)
    if arithmetic is not None:
        return arithmetic
    if actual.shape != expected.shape:
        return Verdict(False, f"{what} has the wrong shape")  # never the answer's shape: it could encode numbers
    surprising = ~_isfinite(actual) & _isfinite(expected)
    if _any(surprising):
        if overflow is not None:
            return Verdict(False, overflow.sentence, overflow.key)
        kind = "NaN" if _any(_isnan(actual[surprising])) else "an infinite value"
        return Verdict(False, f"{what} contains {kind}")
    return Verdict(False, not_correct(what))


__all__ = ["ATOL", "CLIPPED_LOG", "CLIP_EPSILONS", "F32_ATOL", "F32_RTOL", "FLOAT32_ARITHMETIC", "FLOAT32_OUTPUT",
           "LOG_OF_SOFTMAX", "clipped_logs", "float32_arithmetic", "float32_atol", "ROUNDED_ATOL", "ROUNDED_RTOL", "RTOL",
           "finite_floats", "float32_output", "is_float32", "judge_floats", "log_softmax"]
