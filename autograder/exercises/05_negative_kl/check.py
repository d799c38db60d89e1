"""Hidden checks for exercise 05: a negative sampled log-ratio is not a negative KL.

Answers (documented in the notebook): ``exact_kl_can_be_negative`` and
``sampled_log_ratio_can_be_negative`` (bools), ``average_under`` (which distribution), and the numbers
``log_ratio_action_1`` and ``exact_kl``. Numbers pass within a relative 1e-5 (six significant digits)
plus 1e-9 absolute. The key is :mod:`autograder.exercises.05_negative_kl.key`.
"""

from __future__ import annotations

from autograder.checks._concept_answers import boolean, choice, number_case, same, value_case
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
        number_case("log-ratio of the sampled action", "kl_vs_sample", "log_ratio_action_1", key.LOG_RATIO,
                    [(-key.LOG_RATIO, FLIPPED_RATIO)]),
        number_case("exact KL of the two policies", "kl_vs_sample", "exact_kl", key.EXACT_KL, [
            (key.AVERAGE_UNDER_REFERENCE, WRONG_DISTRIBUTION),
            (key.UNIFORM_AVERAGE, UNIFORM_AVERAGE),
            (key.REVERSED_KL, REVERSED_KL),
            (key.LOG_RATIO, SAMPLE_IS_KL),
        ]),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the difference between the exact KL (never negative) and one sampled log-ratio",
    {"negative-kl", "sample-is-kl"},
    ("exact kl can be negative", "sampled log ratio can be negative", "exact KL of the two policies"))

CHECK = ExerciseCheck(
    STEM,
    [Group("kl_vs_sample", 1, "Exact KL versus one sampled log-ratio")],
    build_cases,
    CENTRAL,
)
