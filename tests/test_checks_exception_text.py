"""Graded feedback never quotes the text of an exception an answer raises.

An outside tester read every hidden input of a notebook by raising ``ValueError(repr(input))`` and
reading the feedback, then hard-coded the answers at full marks. Graded feedback (the hidden test cell's
``grade``, the batch grader's ``judge``) names the exception's type only; self-study quotes the text.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.checks import CHECKS, grade, run_check

MARK = "EXFILTRATED"


def _exfiltrating(*args, **kwargs):
    raise ValueError(MARK + repr([np.asarray(a).tolist() if isinstance(a, (list, np.ndarray)) else a
                                  for a in args]) + repr(kwargs))


@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_graded_feedback_does_not_quote_the_error_text(stem, capsys):
    """Every function and value a notebook's cases call raises text holding its inputs: none is shown."""
    calls = [call for case in CHECKS[stem].cases() for call in case.calls]
    namespace = {call.target: _exfiltrating for call in calls}
    result = run_check(stem, namespace)
    assert MARK not in result.feedback()
    if any(not call.read_only for call in calls):  # concept notebooks read values: nothing is called
        assert any("does not quote the error's text" in case.message for case in result.cases if not case.passed)
    for group in CHECKS[stem].groups:
        grade(stem, group.name, namespace)
        assert MARK not in capsys.readouterr().out


def _shape_encoding(*args, **kwargs):
    return np.empty((0, 123456, 7890))  # an empty array whose shape spells two numbers


def _zero_division(*args, **kwargs):
    raise ZeroDivisionError  # one class among the ~50 builtins an answer could pick by its input


@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_graded_feedback_names_neither_the_answers_shape_nor_its_exception_class(stem):
    """The shape an answer returns and the builtin class it raises are its own choice, so both could
    carry a hidden input: graded feedback says "the wrong shape" and "an exception" instead."""
    calls = [call for case in CHECKS[stem].cases() for call in case.calls]
    for answer, leak in ((_shape_encoding, "123456"), (_zero_division, "ZeroDivisionError")):
        result = run_check(stem, {call.target: answer for call in calls})
        assert leak not in result.feedback() and "7890" not in result.feedback()
        assert not all(case.passed for case in result.cases)
