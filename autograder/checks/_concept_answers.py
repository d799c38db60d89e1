"""Reading and judging concept answers: plain values a student binds to documented names.

The concept exercises (01-14) ask for numbers, small tables, choices, sets and True/False rather than
functions. A case asks for a value with :meth:`Call.value` (see :func:`value_case`); the readers below
check an item's form before converting anything and return a canonical Python value, or raise
:class:`Reject` with a message that says what form was expected, never what the right answer is.

Every answer cell starts with a template whose blanks are ``None``; a blank that is still ``None``,
or a name that is not defined at all, is reported as "not implemented yet", like an untouched stub.

Choices ignore case, spaces, ``_`` and ``-`` (``"Hidden state"`` is ``"hidden_state"``). Numbers
pass within ``NUMBER_RTOL`` relative (the notebooks ask for at least 6 significant digits, and a
6-digit rounding is off by at most 5e-6 relative) plus ``NUMBER_ATOL`` absolute (for answers that
are exactly zero); an infinite answer must match exactly.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from autograder.channel import Call, ObjectData, SetData, Unreadable
from autograder.checks._core import PASS, Case, Reject, Verdict
import autograder.checks._misconceptions as shared
from autograder.checks._judge import Misconception, close, float_array, scalar, value_of

#: Relative tolerance for numeric answers: accepts any rounding to 6 significant digits.
NUMBER_RTOL = 1e-5
#: Absolute tolerance for numeric answers whose exact value is zero.
NUMBER_ATOL = 1e-9

_SEPARATORS = re.compile(r"[\s_\-]+")
_TRUE_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def _kind(value: Any) -> str:
    if isinstance(value, ObjectData):
        return f"a {value.type_name} object"
    if isinstance(value, SetData):
        return "a set"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------- reading the answer


def blank(what: str) -> Reject:
    """The rejection for a blank (``None``) that the student has not filled in yet."""
    return Reject(f"not implemented yet: {what} is still None; replace it with your answer")


def read(outcome: Any, name: str) -> Any:
    """The value bound to ``name``; a missing name, an unreadable value or ``None`` is rejected."""
    if isinstance(outcome, Unreadable) and outcome.reason.startswith("no variable named"):
        raise Reject(f"not implemented yet: `{name}` is not defined; write your answer in its cell and run that cell")
    value = value_of(outcome, f"`{name}`")
    if value is None:
        raise blank(f"`{name}`")
    return value


def value_case(case_name: str, group: str, variable: str, judge: Callable[[Any], Verdict], *,
               weight: float = 1.0) -> Case:
    """A case that reads the value bound to ``variable`` and hands it to ``judge``.

    ``judge`` receives the decoded value (``None`` already reported as not implemented) and returns a
    :class:`Verdict` or raises :class:`Reject`.
    """

    def run(outcomes: tuple) -> Verdict:
        return judge(read(outcomes[0], variable))

    return Case(case_name, group, (Call.value(variable),), run, weight)


def entry(mapping: Any, key: str, what: str) -> Any:
    """``mapping[key]`` from a dict answer; a missing key is rejected by name."""
    if isinstance(mapping, ObjectData) or not isinstance(mapping, dict):
        raise Reject(f"{what} should be a dict (as in the template), not {_kind(mapping)}")
    if key not in mapping:
        raise Reject(f"{what} has no key {key!r}: keep the keys of the template")
    return mapping[key]


# --------------------------------------------------------------------------- items


def boolean(value: Any, what: str, *, strict: bool = False) -> bool:
    """``True``/``False``; unless ``strict``, 0/1 and the words true/false/yes/no mean what they say."""
    if value is None:
        raise blank(what)
    if isinstance(value, bool):
        return value
    if not strict:
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS:
            return _TRUE_WORDS[value.strip().lower()]
    raise Reject(f"{what} should be True or False, not {_kind(value)}")


def _normalise(text: str) -> str:
    return _SEPARATORS.sub("", text.strip().lower())


def choice(value: Any, options: Iterable[str], what: str) -> str:
    """One of ``options`` (case, spaces, ``_`` and ``-`` ignored); returns the canonical option."""
    if value is None:
        raise blank(what)
    options = list(options)
    if not isinstance(value, str):
        raise Reject(f"{what} should be one of the strings {_listing(options)}, not {_kind(value)}")
    lookup = {_normalise(option): option for option in options}
    if len(lookup) != len(options):  # a key error, not a student's: two options would read the same
        raise RuntimeError(f"options {options} are not distinct once case and separators are ignored")
    found = lookup.get(_normalise(value))
    if found is None:
        raise Reject(f"{what} should be one of {_listing(options)}; {_short(value)!r} is not an option")
    return found


def choice_set(value: Any, options: Iterable[str], what: str, *, lone_choice: bool = False) -> frozenset:
    """A set (or list, tuple, 1-D array) of options; returns the canonical options as a frozenset.

    A single string is refused (it is not read as a set of letters) unless ``lone_choice``, where it
    counts as a set of one.
    """
    if value is None:
        raise blank(what)
    if isinstance(value, str):
        if not lone_choice:
            raise Reject(f"{what} should be a set of option strings such as {{'a', 'b'}}, not a single string")
        value = [value]
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (dict, ObjectData)) or not isinstance(value, (list, tuple)):
        raise Reject(f"{what} should be a set of option strings, not {_kind(value)}")
    return frozenset(choice(item, options, f"each item of {what}") for item in value)


def _is_bool_like(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, np.ndarray) and value.dtype.kind == "b":
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_bool_like(item) for item in value)
    return False


def number(value: Any, what: str, *, allow_infinite: bool = False) -> float:
    """A single real number (int, float, 0-d or one-element array or list; a NumPy scalar, ``Fraction`` or
    ``Decimal`` arrives from the channel as the int or float it is worth); NaN, text and True/False are
    refused, and infinities too unless ``allow_infinite``."""
    if value is None:
        raise blank(what)
    if isinstance(value, str):
        raise Reject(f"{what} should be a number (or an expression such as math.log(0.5)), not a string")
    if _is_bool_like(value):
        raise Reject(f"{what} should be a number, not True/False")
    if isinstance(value, SetData) or not isinstance(value, (int, float, np.ndarray, list, tuple)):
        raise Reject(f"{what} should be a number, not {_kind(value)}")
    try:
        return scalar(value, what, finite=not allow_infinite)
    except OverflowError:
        raise Reject(f"{what} is far too large") from None


def numbers(value: Any, what: str, shape: Sequence[int]) -> np.ndarray:
    """A finite float64 array of the given shape, from an array or nested lists/tuples of numbers."""
    if value is None:
        raise blank(what)
    if isinstance(value, str):
        raise Reject(f"{what} should hold numbers, not a string")
    if _is_bool_like(value):
        raise Reject(f"{what} should hold numbers, not True/False")
    try:
        return float_array(value, what, shape=shape)
    except OverflowError:
        raise Reject(f"{what} holds a number that is far too large") from None


def integer(value: Any, what: str) -> int:
    """An integer (Python or NumPy, a one-element array, or a float with an integral value, such as
    ``Fraction(3)`` or ``Decimal("3")`` arrive); ``True``/``False`` are refused."""
    if value is None:
        raise blank(what)
    if isinstance(value, bool):
        raise Reject(f"{what} should be an integer, not True/False")
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.size == 1:
        value = value.reshape(()).item()  # a NumPy scalar or 0-d array is the number it holds
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise Reject(f"{what} should be an integer, not {_kind(value)}")
    return value


def int_set(value: Any, what: str) -> frozenset:
    """A set (or list, tuple, 1-D array) of ints such as token ids; floats and True/False are refused."""
    if value is None:
        raise blank(what)
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (dict, ObjectData)) or not isinstance(value, (list, tuple)):
        raise Reject(f"{what} should be a set (or list) of integers")
    if any(isinstance(item, bool) or not isinstance(item, int) for item in value):
        raise Reject(f"{what} should contain whole numbers (ints)")
    return frozenset(value)


def sequence(value: Any, what: str, *, length: int | None = None) -> list:
    """A list or tuple (a 1-D array is accepted too), optionally of a given length."""
    if value is None:
        raise blank(what)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, (str, dict, SetData, ObjectData)) or not isinstance(value, (list, tuple)):
        raise Reject(f"{what} should be a list or tuple, not {_kind(value)}")
    if length is not None and len(value) != length:
        raise Reject(f"{what} should have {length} items")  # not how many it has: the answer's choice
    return list(value)


def int_tuple(value: Any, what: str) -> tuple:
    """A shape-like tuple of integers (list and 1-D integer array accepted)."""
    return tuple(integer(item, f"each entry of {what}") for item in sequence(value, what))


def _listing(options: list) -> str:
    return ", ".join(repr(option) for option in options)


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------- comparing


def same(actual: Any, expected: Any, what: str, wrong: Mapping[Any, Misconception] | Iterable = ()) -> Verdict:
    """PASS when ``actual == expected`` (canonical values); otherwise a misconception whose answer it is."""
    if actual == expected:
        return PASS
    pairs = wrong.items() if isinstance(wrong, Mapping) else wrong
    for wrong_answer, misconception in pairs:
        if actual == wrong_answer:
            return Verdict(False, misconception.sentence, misconception.key)
    return Verdict(False, f"{what} is not correct")


def number_matches(actual: Any, expected: Any) -> bool:
    """Within the documented tolerance for numeric answers (infinities must match exactly)."""
    return close(actual, expected, rtol=NUMBER_RTOL, atol=NUMBER_ATOL)


def compare_numbers(actual: Any, expected: Any, what: str, wrong: Iterable[tuple] = ()) -> Verdict:
    """PASS within tolerance; else the first misconception whose value matches; else a plain failure."""
    if number_matches(actual, expected):
        return PASS
    for wrong_value, misconception in wrong:
        if number_matches(actual, wrong_value):
            return Verdict(False, misconception.sentence, misconception.key)
    return Verdict(False, f"{what} does not match the expected answer (to 6 significant digits)")


def has_text(value: Any) -> bool:
    """Whether a number, or an entry of a list or tuple of numbers, was written as text in quotes."""
    if isinstance(value, str):
        return True
    return isinstance(value, (list, tuple)) and any(has_text(item) for item in value)


def numeric_judge(read: Callable[[Any], Any], expected: Any, what: str,
                  wrong: Iterable[tuple] = ()) -> Callable[[Any], Verdict]:
    """A judge for a number (or small table of numbers) read by ``read``.

    PASS within the documented tolerance; else the misconception whose value it matches; a number
    written as text and a right value rounded too early (1-5 significant digits, where the task asks for
    6 or an expression) are named with the shared sentences, wherever they show.
    """
    wrong = tuple(wrong)

    def judge(value: Any) -> Verdict:
        if has_text(value):
            raise Reject(shared.NUMBER_AS_TEXT.sentence, shared.NUMBER_AS_TEXT.key)
        got = read(value)
        verdict = compare_numbers(got, expected, what, wrong)
        if not verdict.passed and verdict.misconception is None and shared.rounded_too_early(got, expected):
            return Verdict(False, shared.TOO_FEW_DIGITS.sentence, shared.TOO_FEW_DIGITS.key)
        return verdict

    return judge


def number_case(case_name: str, group: str, name: str, expected: float,
                wrong: Iterable[tuple[float, Misconception]] = (), *, allow_infinite: bool = False,
                weight: float = 1.0) -> Case:
    """A case that reads the number bound to ``name`` and judges it with :func:`numeric_judge`."""
    what = f"`{name}`"
    return value_case(case_name, group, name, numeric_judge(
        lambda value: number(value, what, allow_infinite=allow_infinite), expected, what, wrong), weight=weight)


def array_case(case_name: str, group: str, name: str, expected: np.ndarray,
               wrong: Iterable[tuple[np.ndarray, Misconception]] = (), weight: float = 1.0) -> Case:
    """A case that reads a small table of numbers bound to ``name`` (same shape as ``expected``)."""
    what = f"`{name}`"
    expected = np.asarray(expected, dtype=np.float64)
    return value_case(case_name, group, name, numeric_judge(
        lambda value: numbers(value, what, expected.shape), expected, what, wrong), weight=weight)


__all__ = ["NUMBER_ATOL", "NUMBER_RTOL", "array_case", "blank", "boolean", "choice", "choice_set",
           "compare_numbers", "entry", "has_text", "int_set", "int_tuple", "integer", "number", "number_case",
           "number_matches", "numbers", "numeric_judge", "read", "same", "sequence", "value_case"]
