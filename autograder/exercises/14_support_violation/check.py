"""Hidden checks for exercise 14: off-policy ratios when the behaviour policy never takes an action.

Answers: ``ratios_work`` (True/False), ``problem_action`` (the action's number, counted from 1 as
in the notebook's table; a one-element set is read the same way) and ``remedies`` (a set of names
from the notebook's list). Each offered remedy is one case; the four that do not help weigh as much
together as the two that add information, and count only once at least one remedy is chosen.
``restrict_target`` is accepted chosen or not (it changes the question rather than adding data; see the
key), so it has no case of its own. ``problem_action`` may be an integral float (3.0 is "the number 3").
The policies are each student's (``course.variants.family_14_support_violation``): which action the
behaviour policy misses varies, so the diagnosis is graded against the student's own table.

The central idea is the support condition: saying that ordinary ratios work, or choosing a numerical
trick on the ratio (clipping, an epsilon denominator) as a remedy, caps both parts at a third.
"""

from __future__ import annotations

from autograder.channel import SetData
from autograder.checks._concept_answers import boolean, choice_set, int_set, value_case
from autograder.checks._core import PASS, Case, Central, ExerciseCheck, Group, Reject, Verdict
from autograder.checks._judge import Misconception
from autograder.checks import _misconceptions as _shared
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
SUPPORTED_ACTION = Misconception(
    "supported-action",
    "The behaviour policy takes that action (mu(a) > 0), so its ratio is finite and mu's data shows it: "
    "the trouble is an action the target can take but the behaviour policy never does.")
FLAG_FORM = Misconception(
    "ratios-work-not-boolean",
    "ratios_work is True or False (a bool), not a string or a number.")
ACTION_FORM = Misconception(
    "action-number-form",
    "problem_action is the action's number from the table, a whole number such as 1.")
REMEDY_NAMES = Misconception(
    "remedy-names",
    "Choose remedies by their names in REMEDY_CHOICES, in a set such as {\"more_samples\"} (case and "
    "separators do not matter).")
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT
DATA_FIX_LEFT_OUT = Misconception(
    "data-fix-left-out",
    "A remedy that works was left out: a behaviour policy that sometimes takes the missing action puts it "
    "into the data, which is what the ratios lack.")
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


def _form(error: Reject, mistake: Misconception) -> Reject:
    """A form rejection named as the stated rule it breaks (a blank stays "not implemented")."""
    if error.message.startswith("not implemented"):
        return error
    return Reject(f"{error.message}. {mistake.sentence}", mistake.key)


def _ratios_case(ratios_work: bool) -> Case:
    def judge(answer) -> Verdict:
        # Only True or False: the template asks for a boolean, and 0 or "False" is not one.
        try:
            flag = boolean(answer, "`ratios_work`", strict=True)
        except Reject as error:
            raise _form(error, FLAG_FORM) from None
        if flag == ratios_work:
            return PASS
        return Verdict(False, RATIOS_DEFINED.sentence, RATIOS_DEFINED.key)

    return value_case("do ordinary ratios work?", "diagnosis", "ratios_work", judge)


def _action_case(behaviour: tuple, problem: frozenset) -> Case:
    def judge(value) -> Verdict:
        if isinstance(value, str):
            raise Reject(NUMBER_AS_TEXT.sentence, NUMBER_AS_TEXT.key)
        if isinstance(value, float) and value.is_integer():  # "the number 3" may be written 3.0
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            chosen = frozenset((value,))
        elif isinstance(value, (SetData, list, tuple)):
            try:
                chosen = int_set(value, "`problem_action`")
            except Reject as error:
                raise _form(error, ACTION_FORM) from None
        else:
            raise Reject(ACTION_FORM.sentence, ACTION_FORM.key)
        if chosen == problem:
            return PASS
        if chosen == frozenset(action - 1 for action in problem):
            return Verdict(False, NUMBERING.sentence, NUMBERING.key)
        if chosen and all(1 <= action <= len(behaviour) and behaviour[action - 1] > 0 for action in chosen):
            return Verdict(False, SUPPORTED_ACTION.sentence, SUPPORTED_ACTION.key)
        return Verdict(False, "`problem_action` is not the action that breaks the ratios")

    return value_case("the action that breaks the ratios", "diagnosis", "problem_action", judge)


def _remedy_case(option: str) -> Case:
    good = option in key.GOOD_REMEDIES
    bad_count = len(key.REMEDY_CHOICES) - len(key.GOOD_REMEDIES) - len(key.EITHER_WAY_REMEDIES)
    weight = 1.0 if good else len(key.GOOD_REMEDIES) / bad_count

    def judge(answer) -> Verdict:
        try:
            chosen = choice_set(answer, key.REMEDY_CHOICES, "`remedies`", lone_choice=True)
        except Reject as error:
            raise _form(error, REMEDY_NAMES) from None
        if good:
            if option in chosen:
                return PASS
            return Verdict(False, f"reconsider {option}: {HINTS[option]}", DATA_FIX_LEFT_OUT.key)
        if option in chosen:
            return Verdict(False, MISTAKES[option].sentence, MISTAKES[option].key)
        if not chosen & (key.GOOD_REMEDIES | key.EITHER_WAY_REMEDIES):
            return Verdict(False, "leaving an option out only counts once you choose a remedy that works")
        return PASS

    return value_case(f"decision on {option}", "remedies", "remedies", judge, weight=weight)


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their mu and pi); the remedies are the
    same for every variant."""
    parameters = variant.parameters
    answers = key.answers(parameters)
    return [_ratios_case(answers["ratios_work"]),
            _action_case(tuple(float(m) for m in parameters["mu"]), key.problem_actions(parameters))] + [
        _remedy_case(option) for option in key.REMEDY_CHOICES if option not in key.EITHER_WAY_REMEDIES]


#: The exercise's central idea: ratios need mu > 0 wherever pi > 0, and no numerical trick on the
#: ratio recovers an action mu never takes.
CENTRAL = Central(
    "the support condition (mu(a) > 0 wherever pi(a) > 0; no trick on the ratio recovers a missing action)",
    {RATIOS_DEFINED.key, MISTAKES["clip_ratio"].key, MISTAKES["epsilon_denominator"].key},
    ("do ordinary ratios work?", "decision on clip_ratio", "decision on epsilon_denominator"))

CHECK = ExerciseCheck(
    STEM,
    [Group("diagnosis", 1, "Whether ordinary ratios work, and which action breaks them"),
     Group("remedies", 1, "What can be changed in data collection or in the target policy")],
    build_cases,
    CENTRAL,
)
