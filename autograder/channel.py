"""The narrow channel between student code and the judge: plain data as JSON and ``.npy`` bytes.

A check never compares a student's object directly. The student side calls the function (or reads a
variable), turns the outcome into bytes with :func:`encode_outcome`, and the judging side rebuilds
plain data with :func:`decode_outcome`. Nothing survives the trip but numbers, strings, containers
and exception names: objects with a custom ``__eq__``, ndarray subclasses, generators and lazy
proxies arrive as their data or as :class:`Unreadable`, never as live objects.

This module imports only the standard library and NumPy, and it never unpickles: the batch grader
copies it into the sandbox as the harness' codec.
"""

from __future__ import annotations

import base64
import dataclasses
import decimal
import fractions
import io
import json
import math
from typing import Any

import numpy as np

# Bounds that keep a hostile return value from costing the judge memory or time.
MAX_ARRAY_BYTES = 64 * 1024 * 1024
MAX_ITEMS = 10_000
MAX_DEPTH = 6
MAX_STRING = 100_000
MAX_MESSAGE = 2_000
#: What the judge rebuilds from one outcome at most: array elements plus every other decoded value.
#: An ``|S0`` array of shape (6e8,) has 0 bytes but 6e8 elements (and ``.tolist()`` makes them all).
MAX_DECODED_ELEMENTS = 4_000_000

# Sentinels that keep plain JSON floats honest (json would otherwise write NaN, which is not JSON).
_FLOAT_TAGS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class EncodingError(Exception):
    """A value that cannot travel through the channel (the judge scores it as unreadable)."""


@dataclasses.dataclass(frozen=True)
class ObjectData:
    """The public fields of an object that is not plain data (for example a student's dataclass)."""

    type_name: str
    fields: dict


@dataclasses.dataclass(frozen=True)
class Returned:
    """The call returned ``value`` (already rebuilt as plain data)."""

    value: Any
    stdout: str = ""
    stderr: str = ""
    warnings: tuple = ()


@dataclasses.dataclass(frozen=True)
class Raised:
    """The call raised an exception of class ``type_name``; ``classes`` names it and all its bases."""

    type_name: str
    classes: tuple
    message: str
    stdout: str = ""
    stderr: str = ""
    warnings: tuple = ()

    def is_a(self, *names: str) -> bool:
        """True when the exception is (a subclass of) one of the named builtin classes."""
        return any(name in self.classes for name in names)


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """No usable outcome: the value could not be encoded, the name is missing, or time ran out.

    ``undefined`` is the name asked for when it is not defined at all (the fact, beside the sentence)."""

    reason: str
    stdout: str = ""
    stderr: str = ""
    warnings: tuple = ()
    undefined: str = ""


# --------------------------------------------------------------------------- encoding


def _encode_array(value: np.ndarray) -> dict:
    if value.dtype.hasobject:
        # Object arrays are containers in disguise: send their items one by one.
        if value.size > MAX_ITEMS:
            raise EncodingError(f"an object array with {value.size} items is too large")
        return {"t": "objarray", "shape": list(value.shape),
                "items": [_encode(item, 1) for item in value.ravel(order="C").tolist()]}
    if value.dtype.kind not in "biufcUSM m" or value.dtype.fields is not None:
        raise EncodingError(f"arrays of dtype {value.dtype} are not supported")
    if value.nbytes > MAX_ARRAY_BYTES:
        raise EncodingError(f"an array of {value.nbytes} bytes is too large")
    plain = np.array(value, copy=True, subok=False, order="C")
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, plain, allow_pickle=False)
    return {"t": "ndarray", "npy": base64.b64encode(buffer.getvalue()).decode("ascii")}


def _encode_float(value: float) -> dict:
    if math.isnan(value):
        return {"t": "float", "v": "nan"}
    if math.isinf(value):
        return {"t": "float", "v": "inf" if value > 0 else "-inf"}
    return {"t": "float", "v": float.hex(value)}


def _encode(value: Any, depth: int = 0) -> dict:
    if depth > MAX_DEPTH:
        raise EncodingError("the value is nested too deeply")
    # Exact type checks: a subclass of int/float/str may carry behaviour, so it is rebuilt as its base.
    if value is None:
        return {"t": "none"}
    if isinstance(value, (bool, np.bool_)):
        return {"t": "bool", "v": bool(value)}
    if isinstance(value, (int, np.integer)):
        return {"t": "int", "v": int(value)}
    if isinstance(value, (float, np.floating)):
        return _encode_float(float(value))
    if isinstance(value, (complex, np.complexfloating)):
        return {"t": "complex", "re": _encode_float(value.real), "im": _encode_float(value.imag)}
    if isinstance(value, str):
        text = str.__str__(value)
        if len(text) > MAX_STRING:
            raise EncodingError("the string is too long")
        return {"t": "str", "v": text}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, fractions.Fraction):
        return _encode_fraction(value)
    if isinstance(value, decimal.Decimal):
        return _encode_decimal(value)
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        names = [str(name) for name in type(value)._fields]
        if len(names) == len(value):  # a namedtuple: still a tuple, and its field names travel too
            return {"t": "record", "names": names, "items": [_encode(item, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if len(items) > MAX_ITEMS:
            raise EncodingError(f"a container with {len(items)} items is too large")
        encoded = [_encode(item, depth + 1) for item in items]
        if isinstance(value, (set, frozenset)):
            # A set's iteration order follows the process's string hash seed: in a canonical order
            # instead, the same set is the same text in every process (autograded notebooks, reports).
            keyed = sorted((json.dumps(item, sort_keys=True), index) for index, item in enumerate(encoded))
            return {"t": "set", "items": [encoded[index] for _, index in keyed]}
        return {"t": "tuple" if isinstance(value, tuple) else "list", "items": encoded}
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise EncodingError(f"a mapping with {len(value)} entries is too large")
        pairs = []
        for key, item in dict.items(value):
            if not isinstance(key, (str, int, bool, np.integer, np.bool_)) and key is not None:
                raise EncodingError(f"mapping keys must be strings or integers, not {type(key).__name__}")
            pairs.append([_encode(key, depth + 1), _encode(item, depth + 1)])
        return {"t": "dict", "items": pairs}
    if isinstance(value, np.generic):
        return _encode(value.item(), depth)
    return _encode_object(value, depth)


# Exact numbers are numbers: a ``Fraction`` or ``Decimal`` travels as the int or float it is worth, so
# ``Fraction(4, 5)`` is read as 0.8 wherever a number is asked. Their data is read through the base
# class (the slots of ``Fraction``, ``Decimal.as_tuple``), never through methods a subclass could
# override, and nothing of the object itself survives.
_FRACTION_NUMERATOR = fractions.Fraction.__dict__["_numerator"]
_FRACTION_DENOMINATOR = fractions.Fraction.__dict__["_denominator"]
#: Digits beyond which an exact number is not worth reading (far beyond float64's 17).
MAX_EXACT_DIGITS = 100_000


def _encode_fraction(value: fractions.Fraction) -> dict:
    numerator, denominator = _FRACTION_NUMERATOR.__get__(value), _FRACTION_DENOMINATOR.__get__(value)
    if type(numerator) is not int or type(denominator) is not int or denominator <= 0:
        raise EncodingError("the Fraction does not hold a valid numerator and denominator")
    if max(numerator.bit_length(), denominator.bit_length()) > MAX_EXACT_DIGITS * 4:
        raise EncodingError("the Fraction has too many digits to read")
    if denominator == 1:
        return {"t": "int", "v": numerator}
    try:
        return _encode_float(numerator / denominator)  # int / int rounds correctly, however large both are
    except OverflowError:  # a quotient beyond float64's range is infinite, as float arithmetic would say
        return _encode_float(math.inf if numerator > 0 else -math.inf)


def _encode_decimal(value: decimal.Decimal) -> dict:
    sign, digits, exponent = decimal.Decimal.as_tuple(value)
    if exponent in ("n", "N"):  # quiet and signalling NaN alike
        return _encode_float(math.nan)
    if exponent == "F":
        return _encode_float(-math.inf if sign else math.inf)
    if len(digits) > MAX_EXACT_DIGITS:
        raise EncodingError("the Decimal has too many digits to read")
    text = ("-" if sign else "") + ("".join(str(digit) for digit in digits) or "0") + f"e{exponent}"
    return _encode_float(float(text))  # correctly rounded; beyond the range it is inf or 0.0


def _public_fields(value: Any) -> dict:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    names = getattr(type(value), "_fields", None)  # namedtuple-like
    if isinstance(names, tuple) and all(isinstance(name, str) for name in names):
        return {name: getattr(value, name) for name in names}
    try:
        namespace = object.__getattribute__(value, "__dict__")
    except AttributeError:
        namespace = None
    if isinstance(namespace, dict):
        return {key: item for key, item in dict.items(namespace) if isinstance(key, str) and not key.startswith("_")}
    slots = getattr(type(value), "__slots__", ())
    if isinstance(slots, str):
        slots = (slots,)
    return {name: getattr(value, name) for name in slots if isinstance(name, str) and not name.startswith("_")}


def _encode_object(value: Any, depth: int) -> dict:
    if callable(value) or hasattr(value, "__next__") or hasattr(value, "__await__"):
        raise EncodingError(f"a {type(value).__name__} is not data (return arrays, numbers or a result object)")
    fields = _public_fields(value)
    if not fields:
        raise EncodingError(f"an object of type {type(value).__name__} exposes no data fields")
    if len(fields) > MAX_ITEMS:
        raise EncodingError("the object has too many fields")
    type_name = str(getattr(type(value), "__name__", "object"))[:200]
    return {"t": "object", "type": type_name,
            "fields": [[name, _encode(item, depth + 1)] for name, item in fields.items()]}


def _clip(text: Any) -> str:
    text = text if isinstance(text, str) else repr(text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " [...]"


def encode_value(value: Any) -> dict:
    """Encode plain data (used for call arguments and returned values); raise :class:`EncodingError`."""
    return _encode(value)


def encode_outcome(outcome: Returned | Raised | Unreadable) -> bytes:
    """Serialise an outcome whose ``value`` (for :class:`Returned`) is still a live object.

    Encoding failures become :class:`Unreadable`: the student side never crashes the channel.
    """
    common = {"stdout": _clip(outcome.stdout), "stderr": _clip(outcome.stderr),
              "warnings": [_clip(item) for item in list(outcome.warnings)[:20]]}
    if isinstance(outcome, Returned):
        try:
            payload = {"kind": "returned", "value": _encode(outcome.value)}
        except EncodingError as error:
            payload = {"kind": "unreadable", "reason": _clip(str(error))}
        except RecursionError:
            payload = {"kind": "unreadable", "reason": "the value refers to itself"}
        except Exception as error:  # a hostile property or __len__; the value is simply unusable
            payload = {"kind": "unreadable",
                       "reason": _clip(f"reading the returned value raised {type(error).__name__}")}
    elif isinstance(outcome, Raised):
        payload = {"kind": "raised", "type": _clip(outcome.type_name),
                   "classes": [_clip(name) for name in outcome.classes][:20], "message": _clip(outcome.message)}
    else:
        payload = {"kind": "unreadable", "reason": _clip(outcome.reason), "undefined": _clip(outcome.undefined)}
    payload.update(common)
    return json.dumps(payload, allow_nan=False).encode("utf-8")


# --------------------------------------------------------------------------- decoding


def _decode_float(node: Any) -> float:
    raw = node["v"]
    if raw in _FLOAT_TAGS:
        return _FLOAT_TAGS[raw]
    return float.fromhex(raw)


def _read_npy(raw: bytes, budget: list) -> np.ndarray:
    """An ``.npy`` payload as an array, refused before allocation when its elements exceed the budget."""
    stream = io.BytesIO(raw)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise EncodingError("unsupported array format")
    count = math.prod(int(n) for n in shape)
    if dtype.hasobject or dtype.itemsize == 0 and count:
        raise EncodingError(f"arrays of dtype {dtype} are not accepted")
    _spend(budget, count)
    stream.seek(0)
    return np.asarray(np.lib.format.read_array(stream, allow_pickle=False))


def _spend(budget: list, count: int) -> None:
    budget[0] -= max(1, int(count))
    if budget[0] < 0:
        raise EncodingError("the answer holds too many values to read back")


def _decode(node: Any, depth: int = 0, budget: list | None = None) -> Any:
    if budget is None:
        budget = [MAX_DECODED_ELEMENTS]
    if depth > MAX_DEPTH + 2 or not isinstance(node, dict):
        raise EncodingError("malformed message")
    _spend(budget, 1)
    kind = node.get("t")
    if kind == "none":
        return None
    if kind == "bool":
        return bool(node["v"])
    if kind == "int":
        return int(node["v"])
    if kind == "float":
        return _decode_float(node)
    if kind == "complex":
        return complex(_decode_float(node["re"]), _decode_float(node["im"]))
    if kind == "str":
        return str(node["v"])
    if kind == "ndarray":
        raw = base64.b64decode(node["npy"], validate=True)
        if len(raw) > MAX_ARRAY_BYTES + 4096:
            raise EncodingError("array too large")
        return _read_npy(raw, budget)
    if kind == "objarray":
        items = [_decode(item, depth + 1, budget) for item in node["items"]]
        shape = tuple(int(n) for n in node["shape"])
        if math.prod(shape) != len(items):
            raise EncodingError("malformed message")
        out = np.empty(len(items), dtype=object)
        out[:] = items if items else []
        return out.reshape(shape)
    if kind in ("list", "tuple", "set"):
        items = [_decode(item, depth + 1, budget) for item in node["items"]]
        if kind == "tuple":
            return tuple(items)
        if kind == "set":
            return SetData(items)
        return items
    if kind == "record":
        record = RecordTuple(_decode(item, depth + 1, budget) for item in node["items"])
        record.field_names = tuple(str(name) for name in node["names"])
        return record
    if kind == "dict":
        return {_hashable(_decode(key, depth + 1, budget)): _decode(item, depth + 1, budget)
                for key, item in node["items"]}
    if kind == "object":
        return ObjectData(str(node["type"]), {str(name): _decode(item, depth + 1, budget)
                                              for name, item in node["fields"]})
    raise EncodingError(f"unknown node type {kind!r}")


class SetData(list):
    """A decoded set: a list of its items (items may be unhashable once decoded, e.g. arrays)."""


class RecordTuple(tuple):
    """A decoded namedtuple: a plain tuple that also knows its ``field_names``."""

    field_names: tuple = ()

    def field(self, name: str):
        return self[self.field_names.index(name)]


def _hashable(key: Any) -> Any:
    return key if isinstance(key, (str, int, bool, type(None))) else repr(key)


def decode_value(node: dict) -> Any:
    """Inverse of :func:`encode_value`."""
    return _decode(node)


def decode_outcome(data: bytes, *, max_elements: int = MAX_DECODED_ELEMENTS) -> Returned | Raised | Unreadable:
    """Rebuild an outcome from bytes; a malformed message becomes :class:`Unreadable`, never an exception.

    At most ``max_elements`` values are rebuilt (array elements count one each); beyond, the outcome
    is :class:`Unreadable` before anything large is allocated.
    """
    try:
        payload = json.loads(data.decode("utf-8"))
        # Text is clipped here as the encoder clips it: the bytes may come from a forged frame, and
        # an exception message travels on into every failing case's feedback, the report and the page.
        common = {"stdout": _clip(str(payload.get("stdout", ""))), "stderr": _clip(str(payload.get("stderr", ""))),
                  "warnings": tuple(_clip(str(item)) for item in list(payload.get("warnings", []))[:20])}
        kind = payload["kind"]
        if kind == "returned":
            return Returned(_decode(payload["value"], 0, [int(max_elements)]), **common)
        if kind == "raised":
            return Raised(_clip(str(payload["type"])), tuple(_clip(str(name)) for name in list(payload["classes"])[:20]),
                          _clip(str(payload["message"])), **common)
        return Unreadable(_clip(str(payload["reason"])), undefined=_clip(str(payload.get("undefined", ""))), **common)
    except EncodingError as error:
        return Unreadable(f"the answer could not be read back: {error}")
    except Exception as error:  # the judge must survive any byte string (RecursionError included)
        return Unreadable(f"the answer could not be read back ({type(error).__name__})")


def exception_outcome(error: BaseException, **captured: Any) -> Raised:
    """Describe an exception by names only (the exception object itself never crosses the channel)."""
    mro = tuple(getattr(cls, "__name__", "?") for cls in type(error).__mro__)
    try:
        message = str(error)
    except Exception:
        message = "<the exception's message could not be read>"
    return Raised(mro[0], mro, _clip(message), **captured)


# --------------------------------------------------------------------------- calls


@dataclasses.dataclass(frozen=True)
class Call:
    """A request to the student side: call ``target(*args, **kwargs)``, or read the value bound to it.

    Arguments are plain data; they are encoded once and decoded afresh for every call, so a student
    function that mutates its inputs cannot change what a later case sends.
    """

    target: str
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    read_only: bool = False

    @classmethod
    def value(cls, name: str) -> "Call":
        """Ask for the value bound to ``name`` (concept answers)."""
        return cls(name, read_only=True)

    def to_json(self) -> dict:
        return {"target": self.target, "read_only": self.read_only,
                "args": encode_value(tuple(self.args)), "kwargs": encode_value(dict(self.kwargs))}

    @classmethod
    def from_json(cls, node: dict) -> "Call":
        return cls(str(node["target"]), tuple(decode_value(node["args"])), dict(decode_value(node["kwargs"])),
                   bool(node["read_only"]))


class _Capture(io.StringIO):
    """A bounded text sink: output beyond ``limit`` characters is counted, not stored."""

    def __init__(self, limit: int = MAX_MESSAGE - 64) -> None:  # room for the "more characters" note
        super().__init__()
        self.limit = limit
        self.dropped = 0

    def write(self, text: Any) -> int:
        text = text if isinstance(text, str) else str(text)
        room = self.limit - self.tell()
        if room > 0:
            super().write(text[:room])
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        value = self.getvalue()
        return value + (f" [... {self.dropped} more characters]" if self.dropped else "")


def perform_call(call: Call, namespace: dict, *, timeout: float | None = None) -> bytes:
    """Run ``call`` against ``namespace`` on the student side and return the encoded outcome.

    Output and warnings are captured (a correct function that prints or warns keeps its points);
    any exception, including ``SystemExit`` and ``KeyboardInterrupt``, becomes a :class:`Raised`.
    With ``timeout`` (seconds, main thread only) a call that runs too long becomes :class:`Unreadable`.
    """
    import contextlib
    import signal
    import threading
    import warnings

    out, err = _Capture(), _Capture()
    caught: list = []

    def captured() -> dict:
        return {"stdout": out.text(), "stderr": err.text(),
                "warnings": tuple(_clip(f"{w.category.__name__}: {w.message}") for w in caught[:20])}

    if call.target not in namespace:
        what = "variable" if call.read_only else "function"
        return encode_outcome(Unreadable(f"no {what} named {call.target!r} is defined: run the cell that defines it",
                                         undefined=call.target))
    target = namespace[call.target]
    if call.read_only:
        return encode_outcome(Returned(target))
    if not callable(target):
        return encode_outcome(Unreadable(f"{call.target!r} is not a function"))

    use_alarm = timeout is not None and threading.current_thread() is threading.main_thread()

    class _TimedOut(BaseException):
        pass

    def on_alarm(signum: int, frame: Any) -> None:
        raise _TimedOut()

    previous = signal.signal(signal.SIGALRM, on_alarm) if use_alarm else None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught_now:
            warnings.simplefilter("always")
            caught = caught_now
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                value = target(*call.args, **call.kwargs)
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        return encode_outcome(Returned(value, **captured()))
    except _TimedOut:
        return encode_outcome(Unreadable(f"the call did not finish within {timeout:g} s", **captured()))
    except BaseException as error:  # noqa: BLE001 - student code may raise anything, even SystemExit
        return encode_outcome(exception_outcome(error, **captured()))
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
