"""Hidden checks for exercise 05: a negative sampled log-ratio is not a negative KL.

Answers (documented in the notebook): ``exact_kl_can_be_negative`` and
``sampled_log_ratio_can_be_negative`` (bools), ``average_under`` (which distribution), and the numbers
``log_ratio_action_1`` and ``exact_kl``. Numbers pass within a relative 1e-5 (six significant digits)
plus 1e-9 absolute. The key is :mod:`autograder.exercises.05_negative_kl.key`; the two policies are
each student's (``course.variants.family_05_negative_kl``), and every slip's value is recomputed from them.
"""

from __future__ import annotations

import math

from autograder.checks.authoring import (
    Central, ExerciseCheck, Group, Misconception, Verdict, boolean, choice, compare_numbers, exercise_stem, number,
    same, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

NEGATIVE_KL = Misconception(
    "negative-kl",
    "Exact KL is an expectation of the log-ratio under the first policy, and that expectation is never "
    "below zero (Gibbs' inequality), whatever individual actions do.")
SAMPLE_IS_KL = Misconception(
    "sample-is-kl",
    "One action's log-ratio is just one term: it is negative whenever the reference gives that action more "
    "probability than the policy does. Only the average is constrained.")
WRONG_DISTRIBUTION = Misconception(
    "wrong-sampling-distribution",
    "D_KL(pi || pi_ref) weights each action's log-ratio by how often pi itself picks it; averaging under "
    "the reference gives minus the other KL, which is never positive.")
UNIFORM_AVERAGE = Misconception(
    "uniform-average",
    "A plain mean over actions treats rare and common actions alike; KL weights each log-ratio by the "
    "probability of the distribution the actions are drawn from.")
REVERSED_KL = _shared.KL_DIRECTION
FLIPPED_RATIO = _shared.RATIO_INVERTED
WRONG_LOG_BASE = _shared.LOG_BASE
TOO_FEW_DIGITS = _shared.TOO_FEW_DIGITS


def _rounded_too_early(actual: float, target: float) -> bool:
    """``actual`` has at most 5 significant digits and is ``target`` rounded or cut to that many."""
    if not math.isfinite(actual) or actual == 0 or target == 0:
        return False
    for digits in range(1, 6):
        if float(f"{actual:.{digits}g}") == actual:
            unit = 10.0 ** (math.floor(math.log10(abs(target))) - digits + 1)
            return abs(actual - target) < unit * (1 + 1e-9)
    return False


def _number_case(case_name: str, name: str, expected: float, wrong: tuple, *, never_negative: bool = False):
    """A number within the notebook's 6 significant digits; a known wrong value (also rounded early), a
    right one rounded early, or (``never_negative``) any negative value is named."""
    what = f"`{name}`"

    def judge(answer) -> Verdict:
        value = number(answer, what)
        verdict = compare_numbers(value, expected, what, wrong)
        if verdict.passed or verdict.misconception:
            return verdict
        for target, mistake in ((expected, TOO_FEW_DIGITS), *wrong):
            if _rounded_too_early(value, target):
                return Verdict(False, mistake.sentence, mistake.key)
        if never_negative and value < 0:
            return Verdict(False, NEGATIVE_KL.sentence, NEGATIVE_KL.key)
        return verdict

    return value_case(case_name, "kl_vs_sample", name, judge)


def _bool_case(name: str, truth: bool, mistake: Misconception):
    def judge(answer) -> Verdict:
        return same(boolean(answer, name), truth, name, {not truth: mistake})

    return value_case(name.replace("_", " "), "kl_vs_sample", name, judge)


def _average(answer) -> Verdict:
    got = choice(answer, key.AVERAGE_OPTIONS, "average_under")
    return same(got, key.AVERAGE_UNDER, "average_under", {"pi_ref": WRONG_DISTRIBUTION, "uniform": UNIFORM_AVERAGE})


def slips(parameters) -> dict:
    """``answer name -> ((value, misconception), ...)``: what each classic slip gives for one variant's
    numbers (the family turns down draws where two of them, or one and the answer, come close)."""
    found = key.values(parameters)
    return {
        "log_ratio_action_1": (
            (-found.log_ratio, FLIPPED_RATIO),
            *((found.log_ratio / math.log(base), WRONG_LOG_BASE) for base in key.OTHER_LOG_BASES),
        ),
        "exact_kl": (
            (found.average_under_reference, WRONG_DISTRIBUTION),
            (found.uniform_average, UNIFORM_AVERAGE),
            (found.reversed_kl, REVERSED_KL),
            (found.log_ratio, SAMPLE_IS_KL),
            *((found.exact_kl / math.log(base), WRONG_LOG_BASE) for base in key.OTHER_LOG_BASES),
        ),
    }


#: How far apart (relative) the key and every slip of one answer must be, in every variant.
SEPARATION = 1e-3


def lesson_holds(parameters) -> bool:
    """Whether a variant keeps the lesson: the reference favours the sampled action 1 and action 2, the
    policy favours action 0 (two negative terms in a positive KL), both wrong averages are negative
    (the cap's premise), and within each answer the key and its slips are pairwise more than
    :data:`SEPARATION` apart."""
    pi, ref = tuple(parameters["pi"]), tuple(parameters["pi_ref"])
    if int(parameters["sampled_action"]) != 1 or not (pi[0] > ref[0] and pi[1] < ref[1] and pi[2] < ref[2]):
        return False
    found = key.values(parameters)
    if not (found.uniform_average < 0 and found.average_under_reference < 0 and found.log_ratio < 0 < found.exact_kl):
        return False
    right = key.answers(parameters)
    for name, wrong in slips(parameters).items():
        numbers = [right[name]] + [value for value, _ in wrong]
        if any(abs(a - b) <= SEPARATION * max(abs(a), abs(b)) for i, a in enumerate(numbers) for b in numbers[i + 1:]):
            return False
    return True


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their two policies)."""
    answers = key.answers(variant.parameters)
    wrong = slips(variant.parameters)
    return [
        _bool_case("exact_kl_can_be_negative", key.EXACT_KL_CAN_BE_NEGATIVE, NEGATIVE_KL),
        _bool_case("sampled_log_ratio_can_be_negative", key.SAMPLED_LOG_RATIO_CAN_BE_NEGATIVE, SAMPLE_IS_KL),
        value_case("the distribution to average under", "kl_vs_sample", "average_under", _average),
        _number_case("log-ratio of the sampled action", "log_ratio_action_1", answers["log_ratio_action_1"],
                     wrong["log_ratio_action_1"]),
        _number_case("exact KL of the two policies", "exact_kl", answers["exact_kl"], wrong["exact_kl"],
                     never_negative=True),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points. An exact_kl
#: that averages under the reference or uniformly is negative in every variant (the family holds it), so
#: it too lets the exact KL go negative (the task says so); those two choices of ``average_under`` alone
#: do not cap.
CENTRAL = Central(
    "the difference between the exact KL (never negative) and one sampled log-ratio",
    {"negative-kl", "sample-is-kl", "wrong-sampling-distribution", "uniform-average"},
    ("exact kl can be negative", "sampled log ratio can be negative", "exact KL of the two policies"))

CHECK = ExerciseCheck(
    STEM,
    [Group("kl_vs_sample", 1, "Exact KL versus one sampled log-ratio")],
    build_cases,
    CENTRAL,
)
