"""Exercise 01 (stop reasons): correct answers earn full marks, each classic mistake is named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "01_stop_reasons"
NAMES = ("stop_flags", "possible_reasons_at_47", "possible_reasons_at_64", "validator_should_reject_both_flags",
         "fixed_budget_flags")

CANONICAL = """
stop_flags = {
    "response_1": {"stop_reason": "eos", "terminated": True, "truncated": False},
    "response_2": {"stop_reason": "length", "terminated": False, "truncated": True},
}
possible_reasons_at_47 = {"eos", "stop_string", "timeout", "abort"}
possible_reasons_at_64 = {"eos", "length", "stop_string", "timeout", "abort"}
validator_should_reject_both_flags = False
fixed_budget_flags = {"terminated": True, "truncated": False}
"""

CORRECT = {
    "canonical": CANONICAL,
    "built from the reference's vocabulary with dataclass-like dicts": """
from dataclasses import asdict, dataclass

@dataclass
class Flags:
    stop_reason: str
    terminated: bool
    truncated: bool

stop_flags = {"response_1": asdict(Flags("EOS", True, False)), "response_2": asdict(Flags(" length ", False, True))}
possible_reasons_at_47 = ["abort", "timeout", "stop-string", "eos"]
possible_reasons_at_64 = ("EOS", "Length", "stop string", "timeout", "abort", "eos")
validator_should_reject_both_flags = np.False_
fixed_budget_flags = {"truncated": 0, "terminated": 1}
""",
    "extra fields and printing": CANONICAL + """
stop_flags["response_1"]["tokens"] = 47
stop_flags["response_2"]["tokens"] = 64
print(stop_flags)
possible_reasons_at_64 = frozenset(possible_reasons_at_64)
validator_should_reject_both_flags = "no"
""",
}

WRONG = [
    ("budget treated as the task's end",
     CANONICAL + 'stop_flags["response_2"].update(terminated=True, truncated=False)', "budget-as-terminal"),
    ("budget sets both flags", CANONICAL + 'stop_flags["response_2"].update(terminated=True)', "budget-as-terminal"),
    ("eos treated as a cut", CANONICAL + 'stop_flags["response_1"].update(terminated=False, truncated=True)',
     "eos-as-truncation"),
    ("47 tokens means eos", CANONICAL + 'possible_reasons_at_47 = {"eos"}', "length-reveals-cause"),
    ("64 tokens means the budget", CANONICAL + 'possible_reasons_at_64 = {"length"}', "length-reveals-cause"),
    ("64 tokens cannot be eos", CANONICAL + 'possible_reasons_at_64 = {"length", "stop_string", "timeout", "abort"}',
     "length-reveals-cause"),
    ("budget at 47 tokens", CANONICAL + 'possible_reasons_at_47 = {"eos", "length", "stop_string", "timeout", "abort"}',
     "budget-below-limit"),
    ("both flags forbidden", CANONICAL + "validator_should_reject_both_flags = True", "flags-exclusive"),
    ("flags read off the reason name", CANONICAL + 'fixed_budget_flags = {"terminated": False, "truncated": True}',
     "flags-from-reason-name"),
    # Every rule the text states (RULES.md lists them with their cases).
    ("eos read as a stop string", CANONICAL + 'stop_flags["response_1"]["stop_reason"] = "stop_string"',
     "eos-as-stop-string"),
    ("a 47-token response read as the budget", CANONICAL + 'stop_flags["response_1"]["stop_reason"] = "length"',
     "reason-not-the-mechanism"),
    ("the budget read as a timeout", CANONICAL + 'stop_flags["response_2"]["stop_reason"] = "timeout"',
     "reason-not-the-mechanism"),
    ("eos ends with no flag", CANONICAL + 'stop_flags["response_1"].update(terminated=False)', "ended-without-flag"),
    ("budget ends with no flag", CANONICAL + 'stop_flags["response_2"].update(truncated=False)', "ended-without-flag"),
    ("fixed budget still truncated", CANONICAL + 'fixed_budget_flags = {"terminated": True, "truncated": True}',
     "budget-still-truncates"),
    ("fixed budget with no flag", CANONICAL + 'fixed_budget_flags = {"terminated": False, "truncated": False}',
     "ended-without-flag"),
    ("a reason outside the table", CANONICAL + 'stop_flags["response_2"]["stop_reason"] = "max_new_tokens"', None,
     "response_2: raw stop reason"),
    ("a flag left out", CANONICAL + 'del stop_flags["response_1"]["truncated"]', None,
     "response_1: terminated and truncated"),
    ("a flag as a string that is no boolean", CANONICAL + 'stop_flags["response_2"]["truncated"] = "cut"', None,
     "response_2: terminated and truncated"),
    ("one reason as a bare string", CANONICAL + 'possible_reasons_at_47 = "eos"', None,
     "which raw reasons can end a 47-token response"),
    ("a fixed-budget flag left out", CANONICAL + 'fixed_budget_flags = {"terminated": True}', None,
     "the same raw reason under another contract"),
]

WRONG_BY_LABEL = {label: source for label, source, *_ in WRONG}


def test_key_follows_the_reference_contract():
    from autograder.exercises import load_key
    key = load_key('01_stop_reasons')
    from autograder.reference import EOS_IS_TERMINAL

    assert key.STOP_FLAGS["response_1"] == EOS_IS_TERMINAL.map("eos")
    assert (key.STOP_FLAGS["response_2"].terminated, key.STOP_FLAGS["response_2"].truncated) == (False, True)
    assert (key.FIXED_BUDGET_FLAGS.terminated, key.FIXED_BUDGET_FLAGS.truncated) == (True, False)


class TestStopReasons(ConceptCheckTests):
    stem = STEM
    central_mistakes = ("budget treated as the task's end", "budget sets both flags", "eos treated as a cut",
                        "eos ends with no flag", "budget ends with no flag")
    groups = ("flags", "causes")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


def test_the_fixed_budget_mistakes_do_not_cap_the_notebook():
    """Only Part A's flags carry the central idea: a wrong fixed-budget reading costs its own case."""
    result = support.result_of(STEM, CANONICAL + 'fixed_budget_flags = {"terminated": False, "truncated": False}')
    assert result.points_earned == 2 - 0.25 and not any(group.capped for group in result.groups), result.feedback()


def test_a_reason_outside_the_table_is_refused_by_name():
    result = support.result_of(STEM, CANONICAL + 'stop_flags["response_2"]["stop_reason"] = "max_new_tokens"')
    failed = [case for case in result.cases if not case.passed]
    assert len(failed) == 1 and "'max_new_tokens' is not an option" in failed[0].message


def _open_check(cell_id: str) -> str:
    return next(cell.source for cell in support.source_notebook(STEM).cells if cell.id == cell_id)


@pytest.mark.parametrize("label", ["eos ends with no flag", "budget ends with no flag"])
def test_the_open_check_catches_an_ended_response_without_a_flag(label):
    namespace = support.namespace_from(dict(WRONG_BY_LABEL)[label])
    with pytest.raises(AssertionError, match="has ended, so one flag must say how"):
        exec(_open_check("check-flags"), namespace)


def test_the_open_check_catches_a_length_read_as_a_cause():
    namespace = support.namespace_from(CANONICAL + 'possible_reasons_at_64 = {"length"}')
    with pytest.raises(AssertionError, match="not tied to a token count"):
        exec(_open_check("check-causes"), namespace)
