"""Judging answers that return dicts of float arrays (the second assignment, exercises 21-24), or one array.

Several answers there return a dict of named float64 arrays (``{"engine": ..., "trainer": ...}``,
``{"k1": ..., "k2": ..., "k3": ...}``); each case judges one key, so one wrong key costs only its cases.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from autograder.checks._core import PASS, Reject, Verdict
from autograder.checks._float_results import (
    ATOL, F32_ATOL, F32_RTOL, FLOAT32_ARITHMETIC, RTOL, float32_output,
)
from autograder.checks._judge import Misconception, close, field, float_array, mistake_outputs, not_correct, value_of



def key_difference(missing: list, others: int) -> str:
    """How a dict's keys differ from the expected ones, in fixed words ("; some are missing; it has other keys").

    Neither which keys are missing nor how many others there are: the answer chooses both, so either
    could count out a hidden input."""
    parts = []
    if missing:
        parts.append("some are missing")
    if others:
        parts.append("it has other keys")
    return "".join(f"; {part}" for part in parts)

def _verdict(raw, actual: np.ndarray, expected: np.ndarray, wrong, what: str, *, rtol: float,
             atol: float) -> Verdict:
    """The verdict on ``actual`` (read from the returned ``raw``, already of the expected shape): close to
    ``expected``, a float32 answer (named as such), one of the ``wrong()`` outputs (its misconception, at
    a tolerance no tighter than 1e-8 / 1e-10) or plainly not correct. ``wrong``: see :func:`autograder.checks._judge.mistake_outputs`."""
    if close(actual, expected, rtol=rtol, atol=atol):
        return PASS
    rounded = float32_output(raw, actual, expected)
    if rounded is not None:
        return rounded
    for output, misconception in wrong():
        if close(actual, output, rtol=max(rtol, 1e-8), atol=max(atol, 1e-10)):
            return Verdict(False, misconception.sentence, misconception.key)
    if close(actual, expected, rtol=F32_RTOL, atol=F32_ATOL):
        # float64 (or a Python float) right only to single precision: float32 inside the function
        return Verdict(False, FLOAT32_ARITHMETIC.sentence, FLOAT32_ARITHMETIC.key)
    return Verdict(False, not_correct(what))


def judge_key(function: str, key: str, expected_all: dict, keys: Iterable[str], *, wrong: Iterable = (),
              rtol: float = RTOL, atol: float = ATOL, exact: bool = False):
    """A judge for ``function``'s returned dict at ``key``: float64 values of the expected shape, close
    to ``expected_all[key]``; ``wrong`` holds ``(output, Misconception)`` pairs for this key, computed in
    the trusted process (or is a function returning them, called only for a wrong answer).

    Every one of ``keys`` must be there. ``exact`` also fails a dict with keys of its own: the rule
    "exactly the keys" is graded once, in the open checks' cases, so that an extra key costs what it
    costs in exercise 18 and not every value case of the notebook."""
    expected = np.asarray(expected_all[key], dtype=np.float64)
    keys = sorted(keys)
    wrong = mistake_outputs(wrong)

    def judge(outcomes):
        value = value_of(outcomes[0], function)
        if not isinstance(value, dict):
            raise Reject(f"{function} should return a dict with the keys {keys}")
        got = sorted(map(str, value))
        missing = [name for name in keys if name not in got]
        if (exact and got != keys) or missing:
            # The keys the answer chose are counted, never quoted: they could spell a hidden input.
            raise Reject(f"{function} should return a dict with {'exactly ' if exact else ''}the keys {keys}"
                         + key_difference(missing, len([name for name in got if name not in keys])))
        raw = field(value, key, "the returned dict")
        actual = float_array(raw, f"{key!r}", shape=expected.shape)
        return _verdict(raw, actual, expected, wrong, f"{key!r}", rtol=rtol, atol=atol)

    return judge


def judge_array(function: str, expected, what: str, *, wrong: Iterable = (), rtol: float = RTOL,
                atol: float = ATOL):
    """A judge for a single returned float array (or number) close to ``expected``."""
    expected = np.asarray(expected, dtype=np.float64)
    wrong = mistake_outputs(wrong)

    def judge(outcomes):
        value = value_of(outcomes[0], function)
        actual = float_array(value, what)
        if actual.shape != expected.shape and not (expected.shape == () and actual.size == 1):
            raise Reject(f"{what} has the wrong shape")  # never the answer's shape: it could encode numbers
        return _verdict(value, actual.reshape(expected.shape), expected, wrong, what, rtol=rtol, atol=atol)

    return judge


def overflow_named(judge, misconception: Misconception):
    """Wrap ``judge`` for a case of two calls: a large-logit input, then the same input shifted by a
    constant (which leaves the expected value unchanged). When the first fails but the shifted one
    passes, the answer breaks on large logits only: name ``misconception`` (the missing max shift),
    whether the overflow surfaced as inf/NaN or as the answer's own ValueError on its NaN values."""

    def run(outcome) -> Verdict:
        try:
            return judge((outcome,))
        except Reject as rejection:
            return Verdict(False, rejection.message, rejection.misconception)

    def wrapped(outcomes):
        verdict = run(outcomes[0])
        if verdict.passed or verdict.misconception is not None:
            return verdict
        if run(outcomes[1]).passed:
            return Verdict(False, misconception.sentence, misconception.key)
        return verdict

    return wrapped
