"""Hidden checks for exercise 14: off-policy ratios when the behaviour policy never takes an action.

Answers: ``ratios_work`` (True/False), ``problem_action`` (the action's number, counted from 1 as
in the notebook's table; a one-element set is read the same way), ``ratios`` (pi(a) / mu(a) for the
actions 1, 2, 3, ``math.inf`` where mu(a) = 0), ``ratio_mean`` (E_mu[pi / mu], the target's mass on
the actions mu takes) and ``remedies`` (a set of names from the notebook's list). Each offered remedy is one case; the four that do not help weigh as much
together as the two that add information, and count only once at least one remedy is chosen.
``restrict_target`` is accepted chosen or not (it changes the question rather than adding data; see the
key), so it has no case of its own. ``problem_action`` may be an integral float (3.0 is "the number 3").
The policies are each student's (``course.variants.family_14_support_violation``): which action the
behaviour policy misses varies, so the diagnosis is graded against the student's own table.

The central idea is the support condition: saying that ordinary ratios work, or choosing a numerical
trick on the ratio (clipping, an epsilon denominator) as a remedy, caps both parts at a third.
"""

from __future__ import annotations

import math

from autograder.channel import SetData
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Group, Misconception, Reject, Verdict, boolean, choice_set, exercise_stem,
    has_text, int_set, number, number_case, number_matches, sequence, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

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
MISSING_RATIO_FINITE = Misconception(
    "missing-ratio-finite",
    "Where mu never takes an action that pi takes, its ratio divides pi(a) > 0 by zero: it is infinite "
    "(write math.inf), and no finite number (nor NaN) stands in for it.")
RATIOS_INVERTED = Misconception(
    "ratios-inverted",
    "The importance ratio is target over behaviour, pi(a) / mu(a): it reweights mu's data towards pi.")
RATIO_MEAN_ONE = Misconception(
    "ratio-mean-one",
    "E_mu[pi / mu] = 1 holds only when mu covers every action pi takes: here the sum over mu's actions of "
    "mu(a) pi(a) / mu(a) adds up only the target's mass on those actions.")
MISSED_MASS_AS_MEAN = Misconception(
    "missed-mass-as-mean",
    "That is the target's mass on the action mu never takes, the part the ratios miss; E_mu[pi / mu] is "
    "the rest.")
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


def _ratios_work_case(ratios_work: bool) -> Case:
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


def _ratios_case(expected: tuple, inverted: tuple, missing: int) -> Case:
    """``ratios``: three numbers, the missing action's ``inf``; inverted ratios and a finite number for
    the missing action are named."""
    what = "`ratios`"

    def judge(value) -> Verdict:
        if has_text(value):
            raise Reject(NUMBER_AS_TEXT.sentence, NUMBER_AS_TEXT.key)
        items = sequence(value, what, length=len(expected))
        if isinstance(items[missing], float) and math.isnan(items[missing]):  # "undefined" written as NaN
            return Verdict(False, MISSING_RATIO_FINITE.sentence, MISSING_RATIO_FINITE.key)
        got = [number(item, f"entry {a + 1} of {what} (action {a + 1})", allow_infinite=True)
               for a, item in enumerate(items)]
        if number_matches(got, expected):
            return PASS
        seen = [a for a in range(len(expected)) if a != missing]
        if number_matches([got[a] for a in seen], [inverted[a] for a in seen]):
            return Verdict(False, RATIOS_INVERTED.sentence, RATIOS_INVERTED.key)
        if not math.isinf(got[missing]) or got[missing] < 0:
            return Verdict(False, MISSING_RATIO_FINITE.sentence, MISSING_RATIO_FINITE.key)
        return Verdict(False, f"{what} is not pi(a) / mu(a) of your numbers for every action mu takes "
                              "(to 6 significant digits)")

    return value_case("the three importance ratios", "diagnosis", "ratios", judge)


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


def slips(parameters) -> dict:
    """``answer name -> ((value, misconception), ...)``: the numeric slips of one variant."""
    mu, pi = tuple(float(m) for m in parameters["mu"]), tuple(float(p) for p in parameters["pi"])
    missed = sum(p for m, p in zip(mu, pi) if m == 0)
    return {"ratio_mean": ((1.0, RATIO_MEAN_ONE), (missed, MISSED_MASS_AS_MEAN))}


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their mu and pi); the remedies are the
    same for every variant."""
    parameters = variant.parameters
    answers = key.answers(parameters)
    (missing,) = key.problem_actions(parameters)
    return [_ratios_work_case(answers["ratios_work"]),
            _action_case(tuple(float(m) for m in parameters["mu"]), key.problem_actions(parameters)),
            _ratios_case(answers["ratios"], key.inverted_ratios(parameters), missing - 1),
            number_case("the mean ratio on mu's data, E_mu[pi / mu]", "diagnosis", "ratio_mean",
                        answers["ratio_mean"], slips(parameters)["ratio_mean"])] + [
        _remedy_case(option) for option in key.REMEDY_CHOICES if option not in key.EITHER_WAY_REMEDIES]


#: The exercise's central idea: ratios need mu > 0 wherever pi > 0, and no numerical trick on the
#: ratio recovers an action mu never takes.
CENTRAL = Central(
    "the support condition (mu(a) > 0 wherever pi(a) > 0; no trick on the ratio recovers a missing action)",
    {RATIOS_DEFINED.key, MISTAKES["clip_ratio"].key, MISTAKES["epsilon_denominator"].key},
    ("do ordinary ratios work?", "decision on clip_ratio", "decision on epsilon_denominator"))

CHECK = ExerciseCheck(
    STEM,
    [Group("diagnosis", 1, "Whether ordinary ratios work, which action breaks them, the ratios and their mean"),
     Group("remedies", 1, "What can be changed in data collection or in the target policy")],
    build_cases,
    CENTRAL,
)
