"""The validation gate (``autograder.checks._core.Gate``): bad-input points count only for a function
that accepts valid input.

A toy exercise with two functions (``double`` and ``halve``), each with ordinary cases, an open check
and bad-input cases, is graded the way every caller grades (the whole check, and one hidden cell at a
time as nbgrader runs them, through ``planned_cases``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.channel import Call
from autograder.checks._core import (
    Case, ExerciseCheck, Gate, Group, PASS, Reject, Verdict, coding_groups, judge_cases, perform_cases,
)
from autograder.checks._judge import error_case, value_of


def _value_case(name, group, target, x, expected):
    def judge(outcomes):
        value = value_of(outcomes[0], target)
        if isinstance(value, float) and math.isclose(value, -expected):
            raise Reject(f"`{target}` has the wrong sign", "sign-flipped")  # a mistake the check names
        if not isinstance(value, float) or not math.isclose(value, expected):
            raise Reject(f"`{target}` is not correct for this input")
        return PASS

    return Case(name, group, (Call(target, (x,)),), judge)


def _cases():
    return [
        _value_case("open: double 1", "public", "double", 1.0, 2.0),
        _value_case("double 3", "values", "double", 3.0, 6.0),
        _value_case("double -2.5", "values", "double", -2.5, -5.0),
        _value_case("halve 3", "values", "halve", 3.0, 1.5),
        _value_case("halve 10", "values", "halve", 10.0, 5.0),
        error_case("double NaN", "double", (float("nan"),), "NaN", "x"),
        error_case("double inf", "double", (float("inf"),), "inf", "x"),
        error_case("halve NaN", "halve", (float("nan"),), "NaN", "x"),
    ]


GROUPS = coding_groups(1, Group("values", 2, "values"), validation=(3, "Rejects non-finite x"))


def _check(**gate):
    return ExerciseCheck("99_toy", GROUPS, _cases, gate=Gate(**gate) if gate else None)


GATE = dict(groups=("validation",), cases=("double 3", "halve 3"))

CORRECT = """
def _checked(x):
    if not math.isfinite(x):
        raise ValueError("x must be finite")
    return float(x)
def double(x):
    return 2 * _checked(x)
def halve(x):
    return _checked(x) / 2
"""
RAISE_ALL = """
def double(x):
    raise ValueError("invalid input")
def halve(x):
    raise ValueError("invalid input")
"""
OPEN_CHECK_PLUS_RAISE = """
def double(x):
    if x == 1.0:
        return 2.0
    raise ValueError("unsupported input")
def halve(x):
    raise ValueError("unsupported input")
"""
HALVE_RAISES = CORRECT + """
def halve(x):
    raise ValueError("invalid input")
"""
WRONG_VALUES = """
def _checked(x):
    if not math.isfinite(x):
        raise ValueError("x must be finite")
    return float(x)
def double(x):
    return 3 * _checked(x)
def halve(x):
    return _checked(x) / 3
"""


def _namespace(source):
    namespace = {"math": math, "np": np}
    exec(source, namespace)
    return namespace


def _grade(check, source, groups=None):
    namespace = _namespace(source)
    return judge_cases(check, perform_cases(check.planned_cases(groups), namespace), groups)


def _group(result, name):
    return next(group for group in result.groups if group.name == name)


def test_the_correct_answer_keeps_every_point_and_is_not_gated():
    result = _grade(_check(**GATE), CORRECT)
    assert result.points_earned == 6, result.feedback()
    assert not any(group.gated or group.gated_by for group in result.groups)
    assert not any(case.withheld for case in result.cases)


@pytest.mark.parametrize("source", [RAISE_ALL, OPEN_CHECK_PLUS_RAISE], ids=["raise-all", "open-check-plus-raise"])
def test_a_function_that_rejects_valid_input_earns_no_bad_input_points(source):
    ungated = _grade(_check(), source)
    assert _group(ungated, "validation").points_earned == 3  # the hole the gate closes
    result = _grade(_check(**GATE), source)
    validation = _group(result, "validation")
    assert validation.points_earned == 0, result.feedback()
    assert set(validation.gated_by) == {"double", "halve"}
    assert "raised on valid input too" in validation.gated and "counts only when valid input is accepted" in validation.gated
    assert all(case.withheld and not case.passed for case in validation.cases)
    assert "[WITHHELD]" in validation.feedback()
    # The gate's sentence names the hidden valid case, never its input or expected value.
    assert "'double 3'" in validation.gated and "6.0" not in validation.gated


def test_each_hidden_cell_graded_on_its_own_applies_the_same_gate():
    check = _check(**GATE)
    planned = {case.name for case in check.planned_cases(["validation"])}
    assert {"double 3", "halve 3"} <= planned
    assert "double -2.5" not in planned  # only the gate's cases are added
    alone = _grade(check, RAISE_ALL, ["validation"])
    assert alone.points_earned == 0 and alone.groups[0].gated, alone.feedback()
    # A group that is not gated does not run the gate's cases.
    assert {case.name for case in check.planned_cases(["public"])} == {"open: double 1"}


def test_per_function_gate_withholds_only_the_function_that_raised():
    result = _grade(_check(**GATE), HALVE_RAISES)
    validation = _group(result, "validation")
    assert validation.gated_by == ("halve",)
    withheld = {case.name for case in validation.cases if case.withheld}
    assert withheld == {"halve NaN"}
    assert validation.points_earned == 2, result.feedback()
    assert "`halve`" in validation.gated and "`double`" not in validation.gated


def test_a_gate_over_the_whole_group_withholds_every_case():
    result = _grade(_check(**GATE, per_function=False), HALVE_RAISES)
    validation = _group(result, "validation")
    assert validation.points_earned == 0 and all(case.withheld for case in validation.cases), result.feedback()


NAMED_MISTAKE = WRONG_VALUES.replace("3 * _checked(x)", "-2 * _checked(x)").replace("_checked(x) / 3",
                                                                                    "-_checked(x) / 2")


def test_a_named_mistake_does_not_close_the_gate():
    """A wrong value that is a mistake the checks name (a student's, not junk) keeps the bad-input points;
    the value cases grade it."""
    result = _grade(_check(**GATE), NAMED_MISTAKE)
    assert _group(result, "validation").points_earned == 3 and not _group(result, "validation").gated
    assert _group(result, "values").points_earned == 0
    assert "sign-flipped" in result.misconceptions


def test_values_that_are_neither_right_nor_a_named_mistake_close_the_gate():
    """Issue 35: an answer that returns junk on every valid input (as one that hard-codes the open checks
    does elsewhere) earns no bad-input points either, however well it rejects bad input: the bad-input
    gate's twin (``_core.attempt_twin``) asks for one valid input answered right or by a named mistake."""
    from autograder.checks._core import ATTEMPT_REASON

    result = _grade(_check(**GATE), WRONG_VALUES)
    validation = _group(result, "validation")
    assert validation.points_earned == 0 and set(validation.gated_by) == {"double", "halve"}, result.feedback()
    assert ATTEMPT_REASON in validation.gated and "'double 3'" in validation.gated
    assert "6.0" not in validation.gated  # names the hidden case, never its input or expected value
    alone = _grade(_check(**GATE), WRONG_VALUES, ["validation"])  # the hidden cell graded on its own
    assert alone.points_earned == 0
    one_right = WRONG_VALUES.replace("3 * _checked(x)", "2 * _checked(x) if x == 3 else 3 * _checked(x)")
    validation = _group(_grade(_check(**GATE), one_right), "validation")
    assert validation.gated_by == ("halve",) and validation.points_earned == 2  # one right answer opens double's


def test_a_failed_bad_input_case_keeps_its_own_message():
    source = CORRECT + "\ndef halve(x):\n    if x != x:\n        return 0.0\n    raise ValueError('no')\n"
    validation = _group(_grade(_check(**GATE), source), "validation")
    halve_nan = next(case for case in validation.cases if case.name == "halve NaN")
    assert not halve_nan.passed and not halve_nan.withheld and "gate" not in halve_nan.message.lower()


def test_missing_gate_outcomes_close_the_gate():
    check = _check(**GATE)
    outcomes = perform_cases(check.cases(["validation"]), _namespace(CORRECT))
    validation = judge_cases(check, outcomes, ["validation"]).groups[0]
    assert validation.points_earned == 0 and "did not return on valid input" in validation.gated


def test_a_gate_that_cannot_open_is_refused_when_the_cases_are_built():
    with pytest.raises(RuntimeError, match="do not exist"):
        _check(groups=("validation",), cases=("no such case",)).cases()
    with pytest.raises(RuntimeError, match="lie in a gated group"):
        _check(groups=("validation",), cases=("double 3", "halve NaN")).cases()
    with pytest.raises(RuntimeError, match=r"\['halve'\] have no gate case"):
        _check(groups=("validation",), cases=("double 3",)).cases()
    with pytest.raises(KeyError):
        _check(groups=("nowhere",), cases=("double 3",))
    with pytest.raises(ValueError):
        Gate(groups=(), cases=("double 3",))


#: A lookup of the open check behind a rule-free formula: valid input returns (a wrong value), bad input raises.
RULE_FREE = """
def _checked(x):
    if not math.isfinite(x):
        raise ValueError("x must be finite")
    return float(x)
def double(x):
    return 2.0 if x == 1.0 else _checked(x)
def halve(x):
    return _checked(x)
"""
ONE_SLIP = CORRECT + """
def double(x):
    if x == 3.0:
        return 7.0  # one ordinary input answered wrong, the other right
    return 2 * _checked(x)
"""
WORKING = dict(groups=("validation",), cases=("double 3", "double -2.5", "halve 3", "halve 10"), needs="one-passed",
               why="rejecting bad input counts only when some ordinary input is answered right")


def test_a_one_passed_gate_pays_bad_input_only_to_a_function_that_answers_some_input_right():
    """needs="one-passed" (exercises 29 and 30): a rule-free formula behind honest input checks returns on valid
    input, so a "returned" gate pays it for rejecting bad input; this gate does not, and one slip in an otherwise
    working function keeps the points."""
    # The hole this gate was made for, a "returned" gate paying a rule-free formula, is shut by that
    # gate's attempted twin as well (ExerciseCheck makes one for every bad-input gate).
    assert _group(_grade(_check(**GATE), RULE_FREE), "validation").points_earned == 0
    result = _grade(_check(**WORKING), RULE_FREE)
    validation = _group(result, "validation")
    assert validation.points_earned == 0 and set(validation.gated_by) == {"double", "halve"}, result.feedback()
    assert "passed none of the ordinary hidden cases" in validation.gated and "'double 3' first" in validation.gated
    assert "some ordinary input is answered right" in validation.gated and "6.0" not in validation.gated
    alone = _grade(_check(**WORKING), RULE_FREE, ["validation"])  # the hidden cell on its own gates alike
    assert alone.points_earned == 0, alone.feedback()
    slip = _group(_grade(_check(**WORKING), ONE_SLIP), "validation")
    assert slip.points_earned == 3 and not slip.gated
    assert _group(_grade(_check(**WORKING), CORRECT), "validation").points_earned == 3
    assert _group(_grade(_check(**WORKING), RAISE_ALL), "validation").points_earned == 0


def test_a_one_passed_gate_says_why_in_its_own_words():
    with pytest.raises(ValueError, match="why"):
        Gate(cases=("double 3",), needs="one-passed")
    with pytest.raises(ValueError, match="one-passed"):
        Gate(cases=("double 3",), needs="sometimes")
