"""What the notebooks' open checks ("Check that it does" cells) use to say what failed, in a sentence.

An open check that fails raises :class:`OpenCheckFailed` (an ``AssertionError``) whose message says
what failed and for which input; IPython shows that sentence alone (see :mod:`course._sentence`), in
the notebook and in nbgrader's Validate, never a traceback through NumPy's or this package's code.

* :func:`require` -- a condition and the sentence to say when it does not hold;
* :func:`require_close`, :func:`require_equal` -- an array (or number) against the open check's own
  expected value (the open checks' inputs and values are public: they are printed in the cell);
* :func:`numbers_of` -- an answer read as an array of numbers, or a sentence saying it is not one;
* :func:`call` -- the student's function called on the open check's input: when it raises, the error
  keeps its type, and IPython shows first which call raised, with which input, then the student's
  own lines (the frames of this package and of NumPy left out);
* :func:`not_the_example` -- answers computed from the worked example's numbers (variant 0, the
  numbers the task text shows) in a notebook that holds a student's own numbers are named as such.

Nothing here knows a student's answer: the only answers it holds are the worked example's
(:mod:`course.variants.worked_example`), which the course notes publish and which no student with an
id is graded on. Standard library and NumPy only (the open checks run in the student's kernel).
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import types
from typing import Any, Callable, Mapping

import numpy as np

from course._sentence import Sentence, rendered
from course.answers import as_number


class OpenCheckFailed(Sentence, AssertionError):
    """An open check failed; the message says what failed and for which input."""

    label = "Open check failed"


def fail(message: str):
    """Raise :class:`OpenCheckFailed` with ``message`` (the context of whatever was being handled is
    left out: the sentence is the whole story)."""
    raise OpenCheckFailed(message) from None


def require(condition, message: str) -> None:
    """Nothing when ``condition`` holds; else :class:`OpenCheckFailed` with ``message``.

    A condition that has no single truth value (an array of several comparisons, an object whose
    ``__bool__`` raises) does not hold."""
    try:
        holds = bool(condition)
    except Exception:  # noqa: BLE001 - "the truth value of an array is ambiguous" is not the student's sentence
        holds = False
    if not holds:
        fail(message)


# --------------------------------------------------------------------------- showing values


def shown(value: Any, limit: int = 240) -> str:
    """``value`` as a student reads it in a message: arrays as lists (a few entries of large ones)."""
    try:
        if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and value and
                                             all(isinstance(v, (int, float, np.number, list, tuple, np.ndarray))
                                                 for v in value)):
            array = np.asarray(value)
            if array.dtype.kind in "biuf" and array.size <= 24:
                text = repr(array.tolist())  # as the student would type it
            elif array.dtype.kind in "biuf":
                text = np.array2string(array, precision=6, separator=", ", threshold=24, edgeitems=3,
                                       max_line_width=10_000, suppress_small=False)
                text = " ".join(text.split()).replace("[ ", "[")
            else:
                text = repr(value)
        else:
            text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[:limit - 5] + " ...]"


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------- comparing with the open check's values


def numbers_of(value: Any, what: str, *, shape: tuple | None = None) -> np.ndarray:
    """``value`` as a float64 array, or :class:`OpenCheckFailed` saying that ``what`` is not numbers
    (or, with ``shape``, not of that shape)."""
    if isinstance(value, (str, bytes, dict, set, frozenset)) or value is None:
        fail(f"{what} should be numbers, got {_kind(value)}")
    try:
        with np.errstate(all="ignore"):
            array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        fail(f"{what} should be numbers, got {_kind(value)}")
    except Exception:  # noqa: BLE001 - an object that breaks on conversion is still not numbers
        fail(f"{what} should be numbers, got {_kind(value)}")
    if shape is not None and array.shape != tuple(shape):
        fail(f"{what} should have shape {tuple(shape)}, got shape {array.shape}")
    return array


def array_of(value: Any, what: str) -> np.ndarray:
    """``np.asarray(value)`` (its own dtype), or :class:`OpenCheckFailed` saying ``what`` is not an array."""
    try:
        return np.asarray(value)
    except Exception:  # noqa: BLE001 - a ragged list, an object that refuses
        fail(f"{what} should be an array, got {_kind(value)}")


def require_close(got: Any, expected: Any, what: str, *, rtol: float = 1e-12, atol: float = 0.0) -> None:
    """``got`` equals ``expected`` (an array or a number) within ``atol + rtol * |expected|``, entry by
    entry, with the same shape; else a sentence naming ``what`` (the call and its input) and both values."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = numbers_of(got, what)
    if actual.shape != expected.shape:
        fail(f"{what}: expected shape {expected.shape}, got shape {actual.shape}")
    with np.errstate(all="ignore"):
        finite = np.isfinite(expected)
        same = (np.array_equal(np.isfinite(actual), finite)
                and np.array_equal(actual[~finite], expected[~finite], equal_nan=True)
                and bool(np.all(np.abs(actual[finite] - expected[finite]) <= atol + rtol * np.abs(expected[finite]))))
    if not same:
        fail(f"{what}: expected {shown(expected)}, got {shown(actual)}")


def require_equal(got: Any, expected: Any, what: str) -> None:
    """``got`` holds exactly ``expected`` (booleans, integers), with the same shape; else a sentence."""
    expected = np.asarray(expected)
    actual = array_of(got, what)
    if actual.shape != expected.shape:
        fail(f"{what}: expected shape {expected.shape}, got shape {actual.shape}")
    try:
        same = bool(np.array_equal(actual, expected))
    except Exception:  # noqa: BLE001
        same = False
    if not same:
        fail(f"{what}: expected {shown(expected)}, got {shown(actual)}")


def require_keys(value: Any, keys, what: str) -> None:
    """``value`` is a dict with exactly ``keys``; else a sentence naming the keys it lacks or has extra."""
    keys = set(keys)
    if not isinstance(value, Mapping):
        fail(f"{what} should be a dict with the keys {sorted(keys)}, got {_kind(value)}")
    have = set(value)
    if have != keys:
        missing, extra = sorted(keys - have, key=str), sorted(have - keys, key=str)
        parts = ([f"lacks {missing}"] if missing else []) + ([f"has extra keys {extra}"] if extra else [])
        fail(f"{what} should have exactly the keys {sorted(keys)}: it " + " and ".join(parts))


# --------------------------------------------------------------------------- calling the student's function

@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple:
    """Folders whose frames a student never needs to read: this package, NumPy, the standard library and
    site-packages (IPython's own frames)."""
    import sysconfig
    found = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(np.__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            found.add(os.path.realpath(sysconfig.get_paths()[key]))
        except KeyError:  # pragma: no cover
            pass
    return tuple(sorted(found))


def _is_library(filename: str) -> bool:
    if not filename or filename.startswith("<frozen"):
        return True
    path = os.path.realpath(filename)
    return any(path == d or path.startswith(d + os.sep) for d in _library_dirs())


def _student_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The frames of ``tb`` below :func:`call` (what the student's function ran) and outside the
    libraries (the student's own code), as a traceback."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    calls = [n for n, entry in enumerate(entries) if entry.tb_frame.f_code is call.__code__]
    frames = [entry for entry in entries[calls[-1] + 1 if calls else 0:]
              if not _is_library(entry.tb_frame.f_code.co_filename)]
    rebuilt = None
    for entry in reversed(frames):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _described_call(function: Callable, args: tuple, kwargs: dict) -> str:
    name = getattr(function, "__name__", None) or "the function"
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
        parts = [f"{key}={shown(value, 160)}" for key, value in bound.arguments.items()]
    except (TypeError, ValueError):
        parts = [shown(value, 160) for value in args] + [f"{key}={shown(value, 160)}" for key, value in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _render_raised(error: BaseException, sentence: str) -> list:
    """IPython's view of an error the student's function raised: the sentence, then their own lines."""
    more = []
    student = _student_traceback(error.__traceback__)
    if student is not None:
        sentence += " Your code's lines that led there:"
        try:
            from IPython import get_ipython
            shell = get_ipython()
            if shell is not None:
                more = shell.InteractiveTB.structured_traceback(type(error), error, student)
        except Exception:  # noqa: BLE001 - the sentence alone is still the story
            more = []
        if not more:
            import traceback
            more = ["".join(traceback.format_exception(type(error), error, student))]
    return rendered("Open check stopped", sentence, more)


def call(function: Callable, *args, **kwargs):
    """``function(*args, **kwargs)``; when it raises, the error keeps its type, and IPython shows first
    which call raised, with which input, then the lines of the student's code it went through.

    A ``NotImplementedError`` (the release's stub) says that the function is not written yet.
    """
    try:
        return function(*args, **kwargs)
    except Exception as error:
        described = _described_call(function, args, kwargs)
        name = getattr(function, "__name__", None) or "the function"
        if isinstance(error, NotImplementedError):
            sentence = (f"{name} is not written yet (it raised NotImplementedError): write its body in the "
                        "answer cell above, delete the raise line, run that cell, then this one.")
        else:
            text = " ".join(str(error).split())
            text = text if len(text) <= 300 else text[:295] + " ..."
            sentence = (f"{described} raised {type(error).__name__}" + (f" ({text})" if text else "")
                        + ", on the open check's input.")
        try:
            error._render_traceback_ = functools.partial(_render_raised, error, sentence)
        except Exception:  # noqa: BLE001 - an exception that refuses attributes: IPython's usual view
            pass
        raise


# --------------------------------------------------------------------------- the worked example's answers


def _same(answer: Any, example: Any) -> bool:
    """Whether ``answer`` is the example's value (numbers within the grader's 1e-5 relative tolerance)."""
    try:
        if isinstance(example, Mapping):
            return isinstance(answer, Mapping) and set(example) <= set(answer) and all(
                _same(answer[key], example[key]) for key in example)
        if isinstance(example, (set, frozenset)):
            return isinstance(answer, (set, frozenset, list, tuple)) and set(answer) == set(example)
        if isinstance(example, str) or isinstance(example, bool):
            return type(answer) is type(example) and answer == example
        if isinstance(example, tuple):
            if isinstance(answer, (str, bytes, Mapping)) or answer is None:
                return False
            with np.errstate(all="ignore"):
                actual, expected = np.asarray(answer, dtype=np.float64), np.asarray(example, dtype=np.float64)
            return actual.shape == expected.shape and bool(
                np.allclose(actual, expected, rtol=1e-5, atol=1e-9, equal_nan=True))
        value = as_number(answer)
        if value is None:
            return False
        if math.isinf(example) or math.isnan(example):
            return value == example or (math.isnan(value) and math.isnan(example))
        return math.isclose(value, example, rel_tol=1e-5, abs_tol=1e-9)
    except Exception:  # noqa: BLE001 - an answer that breaks a comparison is not the example's
        return False


def _listed(names) -> str:
    names = [f"`{name}`" for name in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def not_the_example(stem: str, namespace: Mapping, *names: str) -> None:
    """:class:`OpenCheckFailed` when every one of ``names`` holds the worked example's answer while the
    notebook holds a student's own numbers (``namespace["numbers"]``), different from the example's in
    the numbers those answers depend on; else nothing.

    Those answers were computed from the numbers the task text shows (variant 0), not the student's:
    they lose the points when graded. A notebook showing the example numbers (self-study's first view)
    is never told so, and an answer that is not yet a value (``None``, a stub) is left to the form checks.
    """
    from course.variants import families
    from course.variants.worked_example import EXAMPLES

    family, examples = families().get(stem), EXAMPLES.get(stem, {})
    unknown = [name for name in names if name not in examples]
    if family is None or unknown or not names:
        raise ValueError(f"not_the_example: {stem!r} has no worked-example answer {unknown or names}")
    numbers = namespace.get("numbers")
    if not isinstance(numbers, Mapping) or set(numbers) != set(family.seed):
        return
    depends = set().union(*(examples[name]["numbers"] for name in names))
    if all(_view(numbers, key) == _view(family.seed, key) for key in depends):
        return  # the example's numbers (or the ones these answers depend on) are this notebook's
    if not all(_same(namespace.get(name), examples[name]["value"]) for name in names):
        return
    theirs = [f"{what} = {value}" for what, value in family.rows(family.seed)]
    mine = [f"{what} = {value}" for what, value in family.rows(dict(numbers))]
    differ = [(a, b) for a, b in zip(theirs, mine) if a != b][:3]
    fail("These are the worked example's numbers, not yours: "
         f"{_listed(names)} {'is' if len(names) == 1 else 'are'} what the task text's example numbers give "
         f"({'; '.join(a for a, _ in differ)}), but this notebook holds your numbers "
         f"({'; '.join(b for _, b in differ)}), and your work is graded with yours. "
         "Work from `numbers`, the table at the top of the notebook.")


def _view(values: Mapping, key: str) -> Any:
    """What an answer depends on: the parameter ``key``, or with ``"name==0"`` which entries of the
    parameter ``name`` are zero (14's answer depends only on which action mu never takes)."""
    if key.endswith("==0"):
        return tuple(value == 0 for value in values[key[:-3]])
    return _plain(values[key])


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


__all__ = ["OpenCheckFailed", "array_of", "call", "fail", "not_the_example", "numbers_of", "require", "require_close",
           "require_equal", "require_keys", "shown"]
