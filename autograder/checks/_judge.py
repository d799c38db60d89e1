"""Helpers that judges use to read decoded outcomes defensively and compare them.

Everything here works on the plain data rebuilt by :mod:`autograder.channel` (never on a student's
live object), and the NumPy functions used for comparing are bound when this module is imported,
in the trusted process. A helper that finds the answer unusable raises :class:`Reject` with a message
for the student; the check framework turns it into a failed case.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from autograder.channel import Call, ObjectData, Raised, RecordTuple, Returned, SetData, Unreadable
from autograder.checks._core import GRADED_IMPORTS, PASS, Case, Reject, Verdict

_array = np.array
_isfinite = np.isfinite
_isnan = np.isnan
_abs = np.abs
_all = np.all
_any = np.any
_equal = np.array_equal
_maximum = np.maximum
_ndarray = np.ndarray


@dataclasses.dataclass(frozen=True)
class Misconception:
    """A classic mistake, recognised by its output; ``sentence`` teaches without revealing data."""

    key: str
    sentence: str

    def reject(self) -> Reject:
        return Reject(self.sentence, self.key)


# Whether feedback may quote the text of an exception the answer raised. Graded feedback never does: a
# student can put the hidden input into the text (raise ValueError(repr(x))), read it in the feedback
# and hard-code the answer before resubmitting. The self-study checks run on the learner's own machine,
# next to the reference, so they quote it (a NameError's text is the quickest help there is).
_QUOTE_RAISED_MESSAGES = contextvars.ContextVar("quote_raised_messages", default=False)


@contextlib.contextmanager
def raised_messages_quoted():
    """Within this block, feedback quotes the text of exceptions answers raise (self-study only)."""
    token = _QUOTE_RAISED_MESSAGES.set(True)
    try:
        yield
    finally:
        _QUOTE_RAISED_MESSAGES.reset(token)


#: The exception classes graded feedback names. Any other class is "an exception": an answer that picks
#: the class it raises from the hidden input (ZeroDivisionError, KeyError, ... among ~50 builtins) would
#: read bits of that input back from the feedback. These few are the ones the tasks ask for (or the stub).
NAMED_EXCEPTIONS = ("ValueError", "TypeError", "NotImplementedError", "ImportError")
OTHER_EXCEPTION = "an exception"


def exception_name(outcome: Raised) -> str:
    """How feedback names ``outcome``'s exception: its class in self-study, else one of
    :data:`NAMED_EXCEPTIONS` or :data:`OTHER_EXCEPTION`."""
    if _QUOTE_RAISED_MESSAGES.get() or outcome.type_name in NAMED_EXCEPTIONS:
        return outcome.type_name
    return OTHER_EXCEPTION


def value_of(outcome: Any, what: str = "your function") -> Any:
    """The returned value, or :class:`Reject` with what went wrong instead.

    The exception's text is quoted only inside :func:`raised_messages_quoted`; graded feedback names the
    exception's type (one of a few, see :func:`exception_name`) and says where to read its text.
    """
    if isinstance(outcome, Returned):
        return outcome.value
    if isinstance(outcome, Raised):
        if outcome.is_a("ModuleNotFoundError") and not _QUOTE_RAISED_MESSAGES.get():
            # The module's name is the exception's text, which this call's input could have chosen.
            raise Reject(f"{what} raised ModuleNotFoundError: it imports a module that is not available when "
                         f"your work is graded (answers may import only {GRADED_IMPORTS})")
        if _QUOTE_RAISED_MESSAGES.get():
            message = f": {outcome.message}" if outcome.message else ""
            raise Reject(f"{what} raised {outcome.type_name}{message}")
        raise Reject(f"{what} raised {exception_name(outcome)} (graded feedback does not quote the error's text, "
                     "which could carry the hidden input: call your function on a similar input in the "
                     "notebook to read it)")
    if isinstance(outcome, Unreadable):
        raise Reject(f"{what}: {outcome.reason}")
    raise Reject(f"{what}: no result")


def _plural(what: str) -> bool:
    """Whether feedback's name for a value ("the log-probabilities", "the loss", "mean_nll") is plural:
    its last word ends in a plural s. A code name (``mean_nll``, `top_k`) is one thing."""
    words = what.split()
    last = words[-1].strip(".,;:") if words else ""
    if not last or "_" in last or "`" in last:
        return False
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


def not_correct(what: str, where: str = "for this input") -> str:
    """"<what> is/are not correct <where>", the verb agreeing with ``what`` ("the weights are ...")."""
    return f"{what} {'are' if _plural(what) else 'is'} not correct {where}".rstrip()


def _numeric_leaves_ok(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, _ndarray):
        return value.dtype.kind in "biuf"
    if isinstance(value, (list, tuple)) and not isinstance(value, SetData):
        return all(_numeric_leaves_ok(item, depth + 1) for item in value)
    return False


def float_array(value: Any, what: str = "the result", *, shape: Sequence[int] | None = None,
                finite: bool = True, allow_nan: bool = False) -> np.ndarray:
    """Convert a returned value to a float64 array after checking its type; reject anything else.

    Accepts arrays of any real dtype, nested lists/tuples of numbers and scalars. ``finite`` rejects
    NaN and infinities (``allow_nan`` keeps NaN but still rejects infinities when ``finite``).
    """
    if isinstance(value, ObjectData):
        raise Reject(f"{what} should be an array of numbers, not a {value.type_name} object")
    if not _numeric_leaves_ok(value):
        raise Reject(f"{what} should be an array of numbers, not {_kind(value)}")
    try:
        array = _array(value, dtype=np.float64)
    except (ValueError, TypeError):
        raise Reject(f"{what} should be a rectangular array of numbers") from None
    if shape is not None and tuple(array.shape) != tuple(shape):
        # The shape is the answer's choice: quoting it would carry any numbers it encodes (np.empty((0, a, b))).
        raise Reject(f"{what} has the wrong shape")
    if _any(_isnan(array)) and not allow_nan:
        raise Reject(f"{what} contains NaN")
    if finite and _any(~_isfinite(array) & ~_isnan(array)):
        raise Reject(f"{what} contains an infinite value")
    return array


def bool_array(value: Any, what: str = "the mask", *, shape: Sequence[int] | None = None) -> np.ndarray:
    """A boolean array: accepts bool arrays or 0/1 numbers (the seed compares with ``np.array_equal``)."""
    array = float_array(value, what, shape=shape)
    if not _all((array == 0) | (array == 1)):
        raise Reject(f"{what} should contain only True/False (or 0/1)")
    return array.astype(bool)


def _bool_leaves(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, _ndarray):
        return value.dtype == np.bool_
    if isinstance(value, (list, tuple)) and not isinstance(value, SetData):
        return all(_bool_leaves(item, depth + 1) for item in value)
    return False


def strict_bool_array(value: Any, what: str = "the mask", *, shape: Sequence[int] | None = None,
                      numbers: Misconception | None = None) -> np.ndarray:
    """A boolean array where the task asks for booleans: a bool array or nested lists of ``bool``.

    0/1 numbers are read as values first (so a wrong mask is still named by its mistake), then, if
    right, rejected with ``numbers`` (a misconception saying why numbers are not booleans)."""
    array = bool_array(value, what, shape=shape)
    if not _bool_leaves(value):
        if numbers is not None:
            raise numbers.reject()
        raise Reject(f"{what} should hold booleans (True/False), not numbers")
    return array


def scalar(value: Any, what: str = "the value", *, finite: bool = True) -> float:
    """A single real number (a 0-d or one-element array is accepted too)."""
    array = float_array(value, what, finite=finite)
    if array.size != 1:
        raise Reject(f"{what} should be a single number, not several values")
    return float(array.reshape(()))


def field(value: Any, name: str, what: str = "the result") -> Any:
    """A field of a returned object (dataclass, namedtuple, plain object) or mapping."""
    if isinstance(value, ObjectData):
        if name not in value.fields:
            raise Reject(f"{what} has no field {name!r}")
        return value.fields[name]
    if isinstance(value, RecordTuple) and name in value.field_names:
        return value.field(name)
    if isinstance(value, dict):
        if name not in value:
            raise Reject(f"{what} has no key {name!r}")
        return value[name]
    raise Reject(f"{what} should be an object with a {name!r} field, not {_kind(value)}")


def close(actual: np.ndarray, expected: Any, *, rtol: float = 1e-10, atol: float = 1e-12) -> bool:
    """Same shape, same non-finite entries, finite entries within ``atol + rtol * |expected|``."""
    expected = _array(expected, dtype=np.float64)
    actual = _array(actual, dtype=np.float64)
    if actual.shape != expected.shape:
        return False
    finite_a, finite_e = _isfinite(actual), _isfinite(expected)
    if not _equal(finite_a, finite_e):
        return False
    if not _equal(actual[~finite_e], expected[~finite_e], equal_nan=True):
        return False
    diff = _abs(actual[finite_e] - expected[finite_e])
    return bool(_all(diff <= atol + rtol * _abs(expected[finite_e])))


def mistake_outputs(wrong) -> Callable[[], list]:
    """``wrong`` (``(output, Misconception)`` pairs, or a function returning them) as a function giving
    the list: a function is called once, when a wrong answer first needs the mistakes' outputs (each
    student's cases are built per notebook, and a right answer never needs them)."""
    if not callable(wrong):
        fixed = list(wrong)
        return lambda: fixed
    return functools.lru_cache(maxsize=1)(lambda: list(wrong()))


def mistakes_later(make: Callable, *args, **kwargs) -> Callable[[], Any]:
    """``make(*args, **kwargs)`` as a function that computes it once, when a wrong answer first asks:
    for mistakes' outputs kept in a dict (one list per field or key), shared by that dict's judges."""
    return functools.lru_cache(maxsize=1)(lambda: make(*args, **kwargs))


def mistakes_part(later: Callable[[], Any], key) -> Callable[[], list]:
    """The ``wrong`` function of one key of a :func:`mistakes_later` dict."""
    return lambda: later()[key]


def expect_close(actual: np.ndarray, expected: Any, what: str = "the result", *, rtol: float = 1e-10,
                 atol: float = 1e-12, wrong: Iterable[tuple] = ()) -> Verdict:
    """PASS when close; otherwise the first misconception whose output matches, else a plain failure.

    ``wrong`` holds ``(output_of_the_mistake, Misconception)`` pairs computed in the trusted process,
    or is a function returning them (see :func:`mistake_outputs`).
    """
    if close(actual, expected, rtol=rtol, atol=atol):
        return PASS
    for wrong_output, misconception in mistake_outputs(wrong)():
        try:
            if close(wrong_output, expected, rtol=1e-8, atol=1e-10):
                continue  # indistinguishable from the right answer on this input: never named here
            if close(actual, wrong_output, rtol=max(rtol, 1e-8), atol=max(atol, 1e-10)):
                return Verdict(False, misconception.sentence, misconception.key)
        except (ValueError, TypeError):
            continue
    return Verdict(False, not_correct(what))


VALUE_ERROR_EXPECTED = Misconception(
    "value-error-expected",
    "This input was rejected with TypeError, but the task asks for ValueError here: the argument has an "
    "acceptable type and a bad value (NaN, an infinity, an empty or wrongly shaped array, ...).")


#: An input the task says to reject came back as a result. The verdict's message names the input and the
#: error to raise (it differs per case); this sentence is the key's summary for the class report.
SILENT_BAD_INPUT = Misconception(
    "silent-bad-input",
    "An input the task says to reject was accepted silently: check each argument as the task describes and "
    "raise the error it names.")


def expect_error(outcome: Any, *, names: Sequence[str] = ("ValueError", "TypeError"), problem: str,
                 argument: str | None = None) -> Verdict:
    """PASS when the call raised one of ``names``; ``problem`` describes the bad input in words."""
    if isinstance(outcome, Raised):
        if outcome.is_a(*names):
            return PASS
        if tuple(names) == ("ValueError",) and outcome.is_a("TypeError"):
            return Verdict(False, VALUE_ERROR_EXPECTED.sentence, VALUE_ERROR_EXPECTED.key)
        return Verdict(False, f"{problem}: expected {' or '.join(names)}, got {exception_name(outcome)}")
    if isinstance(outcome, Unreadable):
        return Verdict(False, f"{problem}: {outcome.reason}")
    hint = f" (check `{argument}`)" if argument else ""
    return Verdict(False, f"{problem} was accepted silently{hint}: raise {' or '.join(names)} instead",
                   SILENT_BAD_INPUT.key)


def error_case(name: str, target: str, args: tuple, problem: str, argument: str | None = None, *,
               kwargs: dict | None = None, group: str = "validation",
               names: Sequence[str] = ("ValueError", "TypeError")) -> Case:
    """A case that calls ``target(*args, **kwargs)`` on bad input and passes when it raises one of
    ``names`` (ValueError or TypeError unless the task asks for ValueError alone; see :func:`expect_error`;
    ``problem`` and ``argument`` word the feedback)."""
    names = tuple(names)
    return Case(name, group, (Call(target, args, dict(kwargs or {})),),
                lambda outcomes: expect_error(outcomes[0], names=names, problem=problem, argument=argument))


def _kind(value: Any) -> str:
    if isinstance(value, ObjectData):
        return f"a {value.type_name} object"
    if isinstance(value, SetData):
        return "a set"
    return f"a {type(value).__name__}"


__all__ = ["NAMED_EXCEPTIONS", "OTHER_EXCEPTION", "exception_name", "Misconception", "Reject", "bool_array", "not_correct", "raised_messages_quoted", "strict_bool_array", "close", "error_case", "expect_close", "expect_error", "field",
           "float_array", "scalar", "value_of"]
