"""Hidden checks for exercise 01: stop reasons, the terminated/truncated flags and what length hides.

Answers (documented in the notebook): ``stop_flags`` (response -> dict of stop_reason, terminated,
truncated), ``possible_reasons_at_47`` and ``possible_reasons_at_64`` (sets of raw reasons),
``validator_should_reject_both_flags`` (bool) and ``fixed_budget_flags`` (dict of the two flags).
The key is :mod:`autograder.exercises.01_stop_reasons.key`.
Part A's flags are the central idea: a flag mistake there caps both parts at a third (see ``CENTRAL``).
"""

from __future__ import annotations

from autograder.checks.authoring import (
    PASS, Central, ExerciseCheck, Group, Misconception, Verdict, boolean, choice, choice_set, entry, exercise_stem,
    same, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

BUDGET_AS_TERMINAL = Misconception(
    "budget-as-terminal",
    "Running into max_new_tokens is a limit imposed from outside the task: under this contract the "
    "response was cut off, it did not reach the task's natural end.")
EOS_AS_TRUNCATION = Misconception(
    "eos-as-truncation",
    "The model chose to end the response itself, before any outside limit applied: under this contract "
    "that is the task's natural end, and nothing cut it short.")
LENGTH_REVEALS_CAUSE = Misconception(
    "length-reveals-cause",
    "Several different mechanisms can end a response on the same token, so a length alone does not "
    "tell you which one fired: that is why engines report the raw reason.")
BUDGET_BELOW_LIMIT = Misconception(
    "budget-below-limit",
    "The token budget only fires when the response reaches max_new_tokens; a shorter response was "
    "stopped by something else.")
ENDED_WITHOUT_FLAG = Misconception(
    "ended-without-flag",
    "The response has ended, so one of the flags must say how: terminated when the task reached its own "
    "end, truncated when something outside the task cut it off.")
BUDGET_STILL_TRUNCATES = Misconception(
    "budget-still-truncates",
    "When the budget is one of the task's own rules, reaching it is the task's natural end and nothing "
    "outside the task cut the response, so truncated stays False.")
EOS_AS_STOP_STRING = Misconception(
    "eos-as-stop-string",
    "The end-of-sequence token is a token the model sampled, not generated text matching a configured "
    "stop string (vLLM reports both as finish_reason 'stop'; the raw reasons here keep them apart).")
REASON_NOT_THE_MECHANISM = Misconception(
    "reason-not-the-mechanism",
    "The raw reason names the mechanism that ended the response, with the table's meanings: match what "
    "the description says happened, not the response's length or the flags you expect.")
FORBID_BOTH_FLAGS = _shared.FLAGS_EXCLUSIVE
FLAGS_FROM_REASON_NAME = Misconception(
    "flags-from-reason-name",
    "The flags follow from the task's contract, not from the name of the raw reason: in this task the "
    "budget is one of the task's own rules.")


def _flags(answer, response: str, what: str) -> tuple:
    record = entry(answer, response, "stop_flags")
    return (boolean(entry(record, "terminated", what), f"{what}['terminated']"),
            boolean(entry(record, "truncated", what), f"{what}['truncated']"))


def _reason_case(response: str):
    def judge(answer) -> Verdict:
        what = f"stop_flags[{response!r}]['stop_reason']"
        got = choice(entry(entry(answer, response, "stop_flags"), "stop_reason", f"stop_flags[{response!r}]"),
                     key.REASON_OPTIONS, what)
        truth = key.STOP_FLAGS[response].stop_reason
        if got == truth:
            return PASS
        if truth == "eos" and got == "stop_string":
            return Verdict(False, EOS_AS_STOP_STRING.sentence, EOS_AS_STOP_STRING.key)
        return Verdict(False, REASON_NOT_THE_MECHANISM.sentence, REASON_NOT_THE_MECHANISM.key)

    return value_case(f"{response}: raw stop reason", "flags", "stop_flags", judge)


def _flags_case(response: str):
    truth = key.STOP_FLAGS[response]

    def judge(answer) -> Verdict:
        what = f"stop_flags[{response!r}]"
        got = _flags(answer, response, what)
        if got == (truth.terminated, truth.truncated):
            return PASS
        if truth.truncated and got[0]:
            return Verdict(False, BUDGET_AS_TERMINAL.sentence, BUDGET_AS_TERMINAL.key)
        if truth.terminated and got[1]:
            return Verdict(False, EOS_AS_TRUNCATION.sentence, EOS_AS_TRUNCATION.key)
        if not any(got):
            return Verdict(False, ENDED_WITHOUT_FLAG.sentence, ENDED_WITHOUT_FLAG.key)
        return Verdict(False, f"the flags in {what} do not follow from the stated contract")

    return value_case(f"{response}: terminated and truncated", "flags", "stop_flags", judge)


def _reasons_case(tokens: int, truth: frozenset):
    name = f"possible_reasons_at_{tokens}"

    def judge(answer) -> Verdict:
        chosen = choice_set(answer, key.REASON_OPTIONS, name)
        if chosen == truth:
            return PASS
        if chosen - truth:
            return Verdict(False, BUDGET_BELOW_LIMIT.sentence, BUDGET_BELOW_LIMIT.key)
        return Verdict(False, LENGTH_REVEALS_CAUSE.sentence, LENGTH_REVEALS_CAUSE.key)

    return value_case(f"which raw reasons can end a {tokens}-token response", "causes", name, judge)


def _both_flags(answer) -> Verdict:
    what = "validator_should_reject_both_flags"
    return same(boolean(answer, what), key.VALIDATOR_SHOULD_REJECT_BOTH_FLAGS, what, {True: FORBID_BOTH_FLAGS})


def _fixed_budget(answer) -> Verdict:
    truth = key.FIXED_BUDGET_FLAGS
    got = (boolean(entry(answer, "terminated", "fixed_budget_flags"), "fixed_budget_flags['terminated']"),
           boolean(entry(answer, "truncated", "fixed_budget_flags"), "fixed_budget_flags['truncated']"))
    default = key.STOP_FLAGS["response_2"]
    return same(got, (truth.terminated, truth.truncated), "fixed_budget_flags",
                {(default.terminated, default.truncated): FLAGS_FROM_REASON_NAME,
                 (True, True): BUDGET_STILL_TRUNCATES,
                 (False, False): ENDED_WITHOUT_FLAG})


def build_cases() -> list:
    cases = []
    for response in key.RESPONSE_REASONS:
        cases += [_reason_case(response), _flags_case(response)]
    cases += [
        _reasons_case(47, key.POSSIBLE_REASONS_AT_47),
        _reasons_case(64, key.POSSIBLE_REASONS_AT_64),
        value_case("a validator and both flags at once", "causes", "validator_should_reject_both_flags",
                   _both_flags),
        value_case("the same raw reason under another contract", "causes", "fixed_budget_flags", _fixed_budget),
    ]
    return cases


#: The exercise's central idea: reading the flags off the stated contract (EOS ends the task, the budget
#: cuts it). Getting Part A's flags wrong caps every part at a third of its points.
CENTRAL = Central(
    "the mapping from raw reason to flags under the task contract (a model-chosen EOS ends the task, the "
    "budget cuts it)",
    {"budget-as-terminal", "eos-as-truncation", "ended-without-flag"},
    tuple(f"{response}: terminated and truncated" for response in key.RESPONSE_REASONS))

CHECK = ExerciseCheck(
    STEM,
    [Group("flags", 1, "Stop reason and flags of the two responses"),
     Group("causes", 1, "What a length, a validator and another contract can and cannot tell")],
    build_cases,
    CENTRAL,
)
