"""The texts of a call's outcome in the grader's words, before the judge may quote them.

An outcome comes back from the notebook process, which is student code: it can write any bytes as
its reply (or patch the encoder that writes them). The judge quotes some texts of an outcome in
feedback: the class of an exception (``raised ValueError``), the class of a returned object (``not a
Rollout object``) and why a value could not be read (``Unreadable.reason``). Each of those is a
string the notebook chose, so a class made on the fly as ``type(repr(x), (Exception,), {})`` or a
forged reason would carry a hidden input verbatim into the feedback.

:func:`trusted_outcome` keeps such a text only when the grader could have written it with nothing
of the student's in it: one of a few builtin exception names (any other class, builtin or not, would
let an answer pick among ~50 names by the hidden input, so it becomes "an exception"), a reason from the channel's own list
(the call's target checked against the call the grader made); anything else becomes a fixed phrase.
The exception's message is left for the judge, which never quotes it in graded feedback (it only
tests whether it mentions a name, see ``_judge.value_of``).
"""

from __future__ import annotations

import builtins
import dataclasses
import re

from autograder.channel import ObjectData, Raised, RecordTuple, Returned, SetData, Unreadable
from autograder.limits import CALL_SECONDS

#: What any exception outside :data:`_SHOWN_EXCEPTIONS` is called in feedback.
OTHER_EXCEPTION = "an exception"
OWN_OBJECT = "user-defined"  # "... not a user-defined object"
#: Why a value could not be read, when the reason the notebook sent is not one the grader knows.
UNKNOWN_REASON = "the returned value could not be read back (return arrays, numbers or a result object)"

_BUILTIN_EXCEPTIONS = frozenset(name for name, value in vars(builtins).items()
                                if isinstance(value, type) and issubclass(value, BaseException))
#: The builtin classes whose names feedback may show: the ones tasks ask for, the stub's, and the
#: unavailable-module errors (which get their own sentence, see ``_judge.value_of``).
_SHOWN_EXCEPTIONS = frozenset({"ValueError", "TypeError", "NotImplementedError", "ModuleNotFoundError",
                               "ImportError"}) & _BUILTIN_EXCEPTIONS
#: Reasons the channel writes with nothing of the student's in them (``autograder/channel.py``).
_FIXED_REASONS = frozenset({
    "the value is nested too deeply", "the string is too long", "the object has too many fields",
    "the value refers to itself", "unsupported array format", "malformed message", "array too large",
    "the answer holds too many values to read back", "the answer is too large to read back",
})
#: Reasons with a number or a name in them: kept as the phrase on the right (the number dropped).
_REASON_FORMS = (
    (re.compile(r"(an object array with|an array of|a container with|a mapping with) \d+ "),
     "the returned value is too large"),
    (re.compile(r"arrays of dtype .* are (not supported|not accepted)"),
     "the returned array has a dtype that is not accepted"),
    (re.compile(r"mapping keys must be strings or integers"),
     "the returned mapping has keys that are not strings or integers"),
    (re.compile(r"is not data \(return arrays"),
     "the returned value is not data (return arrays, numbers or a result object)"),
    (re.compile(r"exposes no data fields"), "the returned object exposes no data fields"),
    (re.compile(r"^reading the returned value raised "), "reading the returned value raised an exception"),
    (re.compile(r"^the call failed \("), "the call failed"),
)


def trusted_reason(reason: str, call: dict | None, limits: dict | None = None) -> str:
    """``reason`` when the grader could have written it for ``call`` (its JSON form), else a fixed phrase."""
    reason = str(reason)
    if reason in _FIXED_REASONS:
        return reason
    target = str((call or {}).get("target", ""))
    what = "variable" if (call or {}).get("read_only") else "function"
    if reason == f"no {what} named {target!r} is defined: run the cell that defines it":
        return reason  # the concept checks read "no variable named ..." as "not answered yet"
    if reason == f"{target!r} is not a function":
        return reason
    if reason.startswith("the call did not finish within"):
        seconds = float((limits or {}).get("call_seconds", CALL_SECONDS.value))
        return f"the call did not finish within {seconds:g} s"
    for pattern, phrase in _REASON_FORMS:
        if pattern.search(reason):
            return phrase
    return UNKNOWN_REASON


def _trusted_value(value, depth: int = 0):
    """``value`` with the class name of every returned object replaced (the fields kept)."""
    if depth > 40:
        return value
    if isinstance(value, ObjectData):
        return ObjectData(OWN_OBJECT, {name: _trusted_value(item, depth + 1) for name, item in value.fields.items()})
    if isinstance(value, RecordTuple):
        rebuilt = RecordTuple(_trusted_value(item, depth + 1) for item in value)
        rebuilt.field_names = value.field_names
        return rebuilt
    if isinstance(value, SetData):
        return SetData(_trusted_value(item, depth + 1) for item in value)
    if isinstance(value, list):
        return [_trusted_value(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_trusted_value(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return {key: _trusted_value(item, depth + 1) for key, item in value.items()}
    return value


def _contains_object(value, depth: int = 0) -> bool:
    if depth > 40:
        return False
    if isinstance(value, ObjectData):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_object(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return any(_contains_object(item, depth + 1) for item in value.values())
    return False


def trusted_outcome(outcome, call: dict | None = None, limits: dict | None = None):
    """``outcome`` with every text the judge may quote in the grader's words (see the module docstring)."""
    if isinstance(outcome, Raised):
        name = outcome.type_name if outcome.type_name in _SHOWN_EXCEPTIONS else OTHER_EXCEPTION
        return dataclasses.replace(outcome, type_name=name)
    if isinstance(outcome, Unreadable):
        return dataclasses.replace(outcome, reason=trusted_reason(outcome.reason, call, limits))
    if isinstance(outcome, Returned) and _contains_object(outcome.value):
        return dataclasses.replace(outcome, value=_trusted_value(outcome.value))
    return outcome


__all__ = ["OTHER_EXCEPTION", "OWN_OBJECT", "UNKNOWN_REASON", "trusted_outcome", "trusted_reason"]
