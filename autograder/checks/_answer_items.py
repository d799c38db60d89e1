"""Readers for concept answers: Python literals that a student binds to a documented name.

A concept exercise asks for plain values (``stop_flags = {...}``, ``reasons = {"mask", ...}``), read
with :meth:`Call.value` and rebuilt by the channel as plain data. The readers below turn one item of
such an answer into a canonical Python value or raise :class:`Reject` with a message that says what
form was expected, never what the right answer is.

A notebook's answer cell starts with a template whose blanks are ``None``; a blank that is still
``None`` is reported as "not implemented yet", like an untouched code stub.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from autograder.channel import Call, ObjectData, SetData, Unreadable
from autograder.checks._core import PASS, Case, Reject, Verdict
from autograder.checks._judge import Misconception, value_of

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


def blank(what: str) -> Reject:
    """The rejection for a blank (``None``) that the student has not filled in yet."""
    return Reject(f"not implemented yet: {what} is still None; replace it with your answer")


def read(outcome: Any, name: str) -> Any:
    """The value bound to ``name``; a missing name or an unreadable value is rejected with the reason."""
    if isinstance(outcome, Unreadable) and outcome.reason.startswith("no variable named"):
        raise Reject(f"not implemented yet: `{name}` is not defined; fill in the answer cell and run it")
    value = value_of(outcome, f"`{name}`")
    if value is None:
        raise blank(f"`{name}`")
    return value


def entry(mapping: Any, key: str, what: str) -> Any:
    """``mapping[key]`` from a dict answer; a missing key is rejected by name."""
    if isinstance(mapping, ObjectData) or not isinstance(mapping, dict):
        raise Reject(f"{what} should be a dict (as in the template), not {_kind(mapping)}")
    if key not in mapping:
        raise Reject(f"{what} has no key {key!r}: keep the keys of the template")
    return mapping[key]


def boolean(value: Any, what: str) -> bool:
    """``True``/``False``; 0/1 and the words true/false/yes/no are read as what they plainly mean."""
    if value is None:
        raise blank(what)
    if isinstance(value, bool):
        return value
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
    found = lookup.get(_normalise(value))
    if found is None:
        raise Reject(f"{what} should be one of {_listing(options)}; {_short(value)!r} is not an option")
    return found


def choice_set(value: Any, options: Iterable[str], what: str) -> frozenset:
    """A set (or list/tuple) of options; returns the canonical options as a frozenset."""
    if value is None:
        raise blank(what)
    if isinstance(value, str):
        raise Reject(f"{what} should be a set of option strings such as {{'a', 'b'}}, not a single string")
    if isinstance(value, dict) or isinstance(value, ObjectData) or not isinstance(value, (list, tuple)):
        raise Reject(f"{what} should be a set of option strings, not {_kind(value)}")
    return frozenset(choice(item, options, f"each item of {what}") for item in value)


def number(value: Any, what: str, *, allow_infinite: bool = True) -> float:
    """A real number (int, float, NumPy scalar or one-element array); NaN and strings are rejected."""
    if value is None:
        raise blank(what)
    if isinstance(value, bool):
        raise Reject(f"{what} should be a number, not True/False")
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf" or value.size != 1:
            raise Reject(f"{what} should be a single number")
        value = value.reshape(()).item()
    if isinstance(value, str):
        raise Reject(f"{what} should be a number (or an expression such as math.log(0.5)), not a string")
    if not isinstance(value, (int, float)):
        raise Reject(f"{what} should be a number, not {_kind(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise Reject(f"{what} is far too large") from None
    if math.isnan(result):
        raise Reject(f"{what} is NaN")
    if math.isinf(result) and not allow_infinite:
        raise Reject(f"{what} should be finite")
    return result


def integer(value: Any, what: str) -> int:
    """An integer (Python or NumPy, or a float with an integral value); ``True``/``False`` are rejected."""
    if value is None:
        raise blank(what)
    if isinstance(value, bool):
        raise Reject(f"{what} should be an integer, not True/False")
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.size == 1:
        value = int(value.reshape(()).item())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise Reject(f"{what} should be an integer, not {_kind(value)}")
    return value


def sequence(value: Any, what: str, *, length: int | None = None) -> list:
    """A list or tuple (a 1-D array is accepted too), optionally of a given length."""
    if value is None:
        raise blank(what)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, (str, dict, SetData, ObjectData)) or not isinstance(value, (list, tuple)):
        raise Reject(f"{what} should be a list or tuple, not {_kind(value)}")
    if length is not None and len(value) != length:
        raise Reject(f"{what} should have {length} items, not {len(value)}")
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


def near(actual: float, expected: float, what: str, *, rtol: float, atol: float = 1e-12,
         wrong: Iterable[tuple] = ()) -> Verdict:
    """PASS when ``actual`` is within ``atol + rtol * |expected|`` (infinities must match exactly)."""
    if _near(actual, expected, rtol, atol):
        return PASS
    for wrong_value, misconception in wrong:
        if _near(actual, wrong_value, rtol, atol):
            return Verdict(False, misconception.sentence, misconception.key)
    return Verdict(False, f"{what} is not correct (to the precision asked for)")


def _near(actual: float, expected: float, rtol: float, atol: float) -> bool:
    if math.isinf(expected) or math.isinf(actual):
        return actual == expected
    return abs(actual - expected) <= atol + rtol * abs(expected)


# --------------------------------------------------------------------------- cases


def value_case(name: str, group: str, variable: str, judge: Callable[[Any], Verdict], *,
               weight: float = 1.0) -> Case:
    """A case that reads the value bound to ``variable`` and hands it to ``judge``.

    ``judge`` receives the decoded value (``None`` already reported as not implemented) and returns a
    :class:`Verdict` or raises :class:`Reject`.
    """

    def run(outcomes: tuple) -> Verdict:
        return judge(read(outcomes[0], variable))

    return Case(name, group, (Call.value(variable),), run, weight)


__all__ = ["blank", "boolean", "choice", "choice_set", "entry", "int_tuple", "integer", "near",
           "number", "read", "same", "sequence", "value_case"]
