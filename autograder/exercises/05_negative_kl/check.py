"""Hidden checks for exercise 05: a negative sampled log-ratio is not a negative KL.

Answers (documented in the notebook): ``exact_kl_can_be_negative`` and
``sampled_log_ratio_can_be_negative`` (bools), ``average_under`` (which distribution), and the numbers
``log_ratio_action_1`` and ``exact_kl``. Numbers pass within a relative 1e-5 (six significant digits)
plus 1e-9 absolute. The key is :mod:`autograder.exercises.05_negative_kl.key`.
"""

from __future__ import annotations

import math

from autograder.checks._concept_answers import boolean, choice, compare_numbers, number, same, value_case
from autograder.checks._core import Central, ExerciseCheck, Group, Verdict
from autograder.checks._judge import Misconception
from autograder.checks import _misconceptions as _shared
from . import key

STEM = "05_negative_kl"

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


def build_cases() -> list:
    return [
        _bool_case("exact_kl_can_be_negative", key.EXACT_KL_CAN_BE_NEGATIVE, NEGATIVE_KL),
        _bool_case("sampled_log_ratio_can_be_negative", key.SAMPLED_LOG_RATIO_CAN_BE_NEGATIVE, SAMPLE_IS_KL),
        value_case("the distribution to average under", "kl_vs_sample", "average_under", _average),
        _number_case("log-ratio of the sampled action", "log_ratio_action_1", key.LOG_RATIO, (
            (-key.LOG_RATIO, FLIPPED_RATIO),
            *((key.LOG_RATIO / math.log(base), WRONG_LOG_BASE) for base in key.OTHER_LOG_BASES),
        )),
        _number_case("exact KL of the two policies", "exact_kl", key.EXACT_KL, (
            (key.AVERAGE_UNDER_REFERENCE, WRONG_DISTRIBUTION),
            (key.UNIFORM_AVERAGE, UNIFORM_AVERAGE),
            (key.REVERSED_KL, REVERSED_KL),
            (key.LOG_RATIO, SAMPLE_IS_KL),
            *((key.EXACT_KL / math.log(base), WRONG_LOG_BASE) for base in key.OTHER_LOG_BASES),
        ), never_negative=True),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points. An exact_kl
#: that averages under the reference or uniformly is negative here, so it too lets the exact KL go
#: negative (the task says so); those two choices of ``average_under`` alone do not cap.
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
