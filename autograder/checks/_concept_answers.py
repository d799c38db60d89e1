"""Reading and judging concept answers: values bound to documented names in a notebook's answer cells.

The concept exercises ask for numbers, small tables and sets of names rather than functions. A case
asks for the value with :meth:`Call.value`; the helpers here read it from its decoded outcome, check
its form before converting anything, and compare it with the answer key (computed in the trusted
process). A missing name means the answer cell still holds nbgrader's stub, or was never run.

Numbers: the notebooks ask for at least 6 significant digits (or an exact Python expression), so a
number passes within ``NUMBER_RTOL`` relative (a 6-digit rounding is off by at most 5e-6 relative)
plus ``NUMBER_ATOL`` absolute (for answers that are exactly zero).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from autograder.channel import Call, SetData, Unreadable
from autograder.checks._core import PASS, Case, Reject, Verdict
from autograder.checks._judge import Misconception, close, float_array, scalar, value_of

#: Relative tolerance for numeric answers: accepts any rounding to 6 significant digits.
NUMBER_RTOL = 1e-5
#: Absolute tolerance for numeric answers whose exact value is zero.
NUMBER_ATOL = 1e-9


def answer(outcome: Any, name: str) -> Any:
    """The value bound to ``name``; a missing name or a template's ``None`` reads as "not implemented yet"."""
    if isinstance(outcome, Unreadable) and outcome.reason.startswith("no variable named"):
        raise Reject(f"not implemented yet: `{name}` is not defined; replace the `raise NotImplementedError` "
                     "stub in the answer cell with your answer and run that cell")
    value = value_of(outcome, f"`{name}`")
    if value is None:
        raise _blank(name)
    return value


def _blank(name: str) -> Reject:
    # The answer cells' templates bind each answer to None until the student fills it in.
    return Reject(f"not implemented yet: `{name}` is still None; replace it with your answer")


def _is_bool_like(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, np.ndarray) and value.dtype.kind == "b":
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_bool_like(item) for item in value)
    return False


def number(value: Any, name: str) -> float:
    """A single finite real number (int, float, 0-d or one-element array); True/False and text are refused."""
    if value is None:
        raise _blank(name)
    if isinstance(value, str):
        raise Reject(f"`{name}` should be a number (or a Python expression that computes one), not a string")
    if _is_bool_like(value):
        raise Reject(f"`{name}` should be a number, not True/False")
    return scalar(value, f"`{name}`")


def numbers(value: Any, name: str, shape: Sequence[int]) -> np.ndarray:
    """A finite float64 array of the given shape, from an array or nested lists/tuples of numbers."""
    if isinstance(value, str):
        raise Reject(f"`{name}` should hold numbers, not a string")
    if _is_bool_like(value):
        raise Reject(f"`{name}` should hold numbers, not True/False")
    return float_array(value, f"`{name}`", shape=shape)


def flag(value: Any, name: str) -> bool:
    """A yes/no answer: exactly ``True`` or ``False`` (a NumPy bool arrives as a plain bool)."""
    if not isinstance(value, bool):
        raise Reject(f"`{name}` should be True or False")
    return value


def _items(value: Any, name: str, what: str) -> list:
    if isinstance(value, (SetData, list, tuple)):
        return list(value)
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value.tolist()
    raise Reject(f"`{name}` should be a set (or list) of {what}")


def name_set(value: Any, name: str, choices: Iterable[str]) -> frozenset:
    """A set of names chosen from ``choices`` (case and surrounding spaces ignored); a lone name counts too."""
    allowed = tuple(choices)
    items = [value] if isinstance(value, str) else _items(value, name, "names")
    chosen = set()
    for item in items:
        if not isinstance(item, str):
            raise Reject(f"`{name}` should contain names written as strings, e.g. {allowed[0]!r}")
        key = item.strip().lower()
        if key not in allowed:
            raise Reject(f"`{name}` contains {item[:40]!r}, which is not one of the listed choices: "
                         + ", ".join(allowed))
        chosen.add(key)
    return frozenset(chosen)


def int_set(value: Any, name: str) -> frozenset:
    """A set of integers (token ids, action numbers), from a set, list, tuple or integer array."""
    items = _items(value, name, "integers")
    if any(isinstance(item, bool) or not isinstance(item, int) for item in items):
        raise Reject(f"`{name}` should contain whole numbers (ints)")
    return frozenset(items)


def number_matches(actual: Any, expected: Any) -> bool:
    """Within the documented tolerance for numeric answers."""
    return close(actual, expected, rtol=NUMBER_RTOL, atol=NUMBER_ATOL)


def compare_numbers(actual: Any, expected: Any, name: str, wrong: Iterable[tuple] = ()) -> Verdict:
    """PASS within tolerance; else the first misconception whose value matches; else a plain failure."""
    if number_matches(actual, expected):
        return PASS
    for wrong_value, misconception in wrong:
        if number_matches(actual, wrong_value):
            return Verdict(False, misconception.sentence, misconception.key)
    return Verdict(False, f"`{name}` does not match the expected answer (to 6 significant digits)")


def number_case(case_name: str, group: str, name: str, expected: float,
                wrong: Iterable[tuple[float, Misconception]] = (), weight: float = 1.0) -> Case:
    """A case that reads the number bound to ``name`` and compares it with ``expected``."""
    wrong = tuple(wrong)

    def judge(outcomes: tuple) -> Verdict:
        return compare_numbers(number(answer(outcomes[0], name), name), expected, name, wrong)

    return Case(case_name, group, (Call.value(name),), judge, weight)


def array_case(case_name: str, group: str, name: str, expected: np.ndarray,
               wrong: Iterable[tuple[np.ndarray, Misconception]] = (), weight: float = 1.0) -> Case:
    """A case that reads a small table of numbers bound to ``name`` (same shape as ``expected``)."""
    expected = np.asarray(expected, dtype=np.float64)
    wrong = tuple(wrong)

    def judge(outcomes: tuple) -> Verdict:
        got = numbers(answer(outcomes[0], name), name, expected.shape)
        return compare_numbers(got, expected, name, wrong)

    return Case(case_name, group, (Call.value(name),), judge, weight)


__all__ = ["NUMBER_ATOL", "NUMBER_RTOL", "answer", "array_case", "compare_numbers", "flag", "int_set",
           "name_set", "number", "number_case", "number_matches", "numbers"]
