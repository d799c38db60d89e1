"""Hidden checks for exercise 14: off-policy ratios when the behaviour policy never takes an action.

Answers: ``ratios_work`` (True/False), ``problem_action`` (the action's number, counted from 1 as
in the notebook's table; a one-element set is read the same way) and ``remedies`` (a set of names
from the notebook's list). Each offered remedy is one case; the four that do not help weigh as much
together as the two that add information, and count only once at least one remedy is chosen.
``restrict_target`` is accepted chosen or not (it changes the question rather than adding data; see the
key), so it has no case of its own.
"""

from __future__ import annotations

from autograder.channel import SetData
from autograder.checks._concept_answers import boolean, choice_set, int_set, value_case
from autograder.checks._core import PASS, Case, ExerciseCheck, Group, Reject, Verdict
from autograder.checks._judge import Misconception
from . import key

STEM = "14_support_violation"

RATIOS_DEFINED = Misconception(
    "ratios-defined",
    "Ordinary ratios need mu(a) > 0 wherever pi(a) > 0: otherwise a ratio divides by zero and mu's data "
    "never shows that action at all.")
NUMBERING = Misconception(
    "action-numbering",
    "Actions are numbered 1, 2, 3 here, as in the table: look for the action the target can take but "
    "the behaviour policy never does.")
MISTAKES = {
    "clip_ratio": Misconception(
        "clipping-creates-no-data",
        "Clipping changes a number but adds no sample of the missing action: its share of the expectation "
        "stays unseen."),
    "more_samples": Misconception(
        "more-samples-same-policy",
        "More samples from the same behaviour policy still never contain an action it gives probability 0."),
    "epsilon_denominator": Misconception(
        "epsilon-denominator",
        "A tiny epsilon in the denominator does not make the behaviour policy take the action: the data still "
        "holds none of it."),
    "skip_action": Misconception(
        "drop-unsupported-term",
        "Skipping the action quietly estimates a different quantity: the target's mass on that action is "
        "simply missing from the estimate."),
}
HINTS = {
    "full_support_behaviour": "what if every action had a positive probability of being collected?",
    "more_exploration": "what would make the missing action appear in the data at all?",
}


def _ratios_case() -> Case:
    def judge(answer) -> Verdict:
        # Only True or False: the template asks for a boolean, and 0 or "False" is not one.
        if boolean(answer, "`ratios_work`", strict=True) == key.RATIOS_WORK:
            return PASS
        return Verdict(False, RATIOS_DEFINED.sentence, RATIOS_DEFINED.key)

    return value_case("do ordinary ratios work?", "diagnosis", "ratios_work", judge)


def _action_case() -> Case:
    def judge(value) -> Verdict:
        if isinstance(value, int) and not isinstance(value, bool):
            chosen = frozenset((value,))
        elif isinstance(value, (SetData, list, tuple)):
            chosen = int_set(value, "`problem_action`")
        else:
            raise Reject("`problem_action` should be a whole number: the action's number in the table")
        if chosen == key.PROBLEM_ACTIONS:
            return PASS
        if chosen == frozenset(action - 1 for action in key.PROBLEM_ACTIONS):
            return Verdict(False, NUMBERING.sentence, NUMBERING.key)
        return Verdict(False, "`problem_action` is not the action that breaks the ratios")

    return value_case("the action that breaks the ratios", "diagnosis", "problem_action", judge)


def _remedy_case(option: str) -> Case:
    good = option in key.GOOD_REMEDIES
    bad_count = len(key.REMEDY_CHOICES) - len(key.GOOD_REMEDIES) - len(key.EITHER_WAY_REMEDIES)
    weight = 1.0 if good else len(key.GOOD_REMEDIES) / bad_count

    def judge(answer) -> Verdict:
        chosen = choice_set(answer, key.REMEDY_CHOICES, "`remedies`", lone_choice=True)
        if good:
            return PASS if option in chosen else Verdict(False, f"reconsider {option}: {HINTS[option]}")
        if option in chosen:
            return Verdict(False, MISTAKES[option].sentence, MISTAKES[option].key)
        if not chosen & (key.GOOD_REMEDIES | key.EITHER_WAY_REMEDIES):
            return Verdict(False, "leaving an option out only counts once you choose a remedy that works")
        return PASS

    return value_case(f"decision on {option}", "remedies", "remedies", judge, weight=weight)


def build_cases() -> list:
    return [_ratios_case(), _action_case()] + [_remedy_case(option) for option in key.REMEDY_CHOICES
                                                   if option not in key.EITHER_WAY_REMEDIES]


CHECK = ExerciseCheck(
    STEM,
    [Group("diagnosis", 1, "Whether ordinary ratios work, and which action breaks them"),
     Group("remedies", 1, "What can be changed in data collection or in the target policy")],
    build_cases,
)
