"""Hidden checks for exercise 11: k1, k2 and k3 at a ratio r and at 1/r, and which of them changes sign.

The ratio varies per student (``course.variants.family_11_k_estimators``; r = 2 for the seed): the key,
every slip's value and the case names ("k1 at r = 2") follow the student's ratio.

``k_at_2`` and ``k_at_half`` are dicts ``{"k1": ..., "k2": ..., "k3": ...}`` (nats, at least 6
significant digits); ``changes_sign`` and ``never_negative`` are sets of estimator names.
"""

from __future__ import annotations

import dataclasses
import math

from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Group, Misconception, Reject, Verdict, choice_set, exercise_stem, field, number,
    numeric_judge, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

K1_SIGN = _shared.K1_SIGN
INVERTED = _shared.RATIO_INVERTED
K2_HALF = _shared.K2_HALF
K3_LOG_SIGN = Misconception(
    "k3-log-sign",
    "k3 subtracts the log-ratio: (r - 1) - log r.")
LOG_BASE = _shared.LOG_BASE
K3_SIGN = Misconception(
    "k3-can-be-negative",
    "k3 = (r - 1) - log r never goes below zero, because log r <= r - 1 for every r > 0.")
K2_SIGN = Misconception(
    "k2-can-be-negative",
    "k2 = (log r)^2 / 2 is half a square, so it cannot be negative.")
DICT_FORM = Misconception(
    "estimators-dict-form",
    'Each of k_at_2 and k_at_half is a dict with all three keys "k1", "k2" and "k3", as in the template, '
    "each holding one number.")
ESTIMATOR_NAMES = Misconception(
    "estimator-names",
    'Name the estimators as the task does, "k1", "k2" and "k3", in a set such as {"k2"}.')
# Named by the shared number judge (listed here for the catalogue).
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT
K1_NEVER_NEGATIVE = Misconception(
    "k1-never-negative",
    "k1 = -log r is negative whenever r > 1: one sample's estimate can fall below zero although the KL "
    "it estimates cannot.")


def _form(error: Reject, mistake: Misconception) -> Reject:
    """A form rejection named as the stated rule it breaks (a blank stays "not implemented")."""
    if error.message.startswith("not implemented"):
        return error
    return Reject(f"{error.message}. {mistake.sentence}", mistake.key)


def _recipes(log=math.log):
    """Each estimator's formula, optionally with another logarithm."""
    return {"k1": lambda r: -log(r), "k2": lambda r: log(r) ** 2 / 2, "k3": lambda r: (r - 1) - log(r)}


def value_slips(ratio: float, estimator: str) -> list:
    """``[(slip value, misconception), ...]`` of one estimator at one ratio, recomputed from the ratio."""
    wrong = [(_recipes(log)[estimator](ratio), LOG_BASE) for log in (math.log2, math.log10)]
    wrong += {
        "k1": [(math.log(ratio), K1_SIGN)],
        "k2": [(math.log(ratio) ** 2, K2_HALF)],
        "k3": [((1 / ratio - 1) + math.log(ratio), INVERTED), ((ratio - 1) + math.log(ratio), K3_LOG_SIGN),
               (math.log(ratio) - (ratio - 1), K3_SIGN)],
    }[estimator]
    return wrong


def _value_case(name: str, label: str, ratio: float, estimator: str, expected: float) -> Case:
    wrong = value_slips(ratio, estimator)

    def judge(values) -> Verdict:
        if not isinstance(values, dict):
            raise Reject(DICT_FORM.sentence, DICT_FORM.key)
        what = f'`{name}["{estimator}"]`'
        try:
            item = field(values, estimator, f"`{name}`")
        except Reject as error:
            raise _form(error, DICT_FORM) from None
        return numeric_judge(lambda entry: number(entry, what), expected, what, wrong)(item)

    return value_case(f"{estimator} at {label}", "values", name, judge)


def _set_case(case_name: str, name: str, expected: frozenset, mistakes: dict) -> Case:
    def judge(answer) -> Verdict:
        try:
            chosen = choice_set(answer, key.ESTIMATORS, f"`{name}`", lone_choice=True)
        except Reject as error:
            raise _form(error, ESTIMATOR_NAMES) from None
        if chosen == expected:
            return PASS
        for estimator, mistake in mistakes.items():
            if (estimator in chosen) != (estimator in expected):
                return Verdict(False, mistake.sentence, mistake.key)
        return Verdict(False, f"`{name}` is not the right set of estimators")

    return value_case(case_name, "signs", name, judge)


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters["r"]``: their ratio above 1)."""
    parameters = variant.parameters
    answers, labels = key.answers(parameters), key.labels(parameters)
    cases = [_value_case(name, labels[name], ratio, estimator, answers[name][estimator])
             for name, ratio in key.ratios(parameters).items() for estimator in key.ESTIMATORS]
    cases.append(_set_case("the estimator that changes sign", "changes_sign", frozenset(answers["changes_sign"]),
                           {"k3": K3_SIGN, "k2": K2_SIGN, "k1": K1_NEVER_NEGATIVE}))
    cases.append(_set_case("the estimators that stay non-negative", "never_negative",
                           frozenset(answers["never_negative"]), {"k1": K1_NEVER_NEGATIVE, "k3": K3_SIGN, "k2": K2_SIGN}))
    return cases


def central_for(parameters) -> Central:
    """The central idea with the case names of one variant (the ratios are in the names)."""
    labels = key.labels(parameters)
    return dataclasses.replace(CENTRAL, cases=(f"k1 at {labels['k_at_2']}", f"k1 at {labels['k_at_half']}",
                                               f"k3 at {labels['k_at_2']}"))


class _RatioCheck(ExerciseCheck):
    """A check whose case names carry the student's ratios ("k1 at r = 3.45"), so that the feedback
    names the student's own numbers: a bound variant gets the central idea with its own case names
    (the frame's :class:`Central` names cases, and ``ExerciseCheck.at`` shares the unbound one)."""

    def at(self, variant) -> ExerciseCheck:
        bound = super().at(variant)
        if bound is not self:
            bound.central = central_for(variant.parameters)
        return bound


#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the log-ratio (log r = log p - log q, k1 = -log r)",
    {"k1-sign", "ratio-inverted"},
    ("k1 at r = 2", "k1 at r = 1/2", "k3 at r = 2"))

CHECK = _RatioCheck(
    STEM,
    [Group("values", 2, "k1, k2 and k3 at the ratio r and at 1/r"),
     Group("signs", 1, "Which estimator changes sign, which stay non-negative")],
    build_cases,
    CENTRAL,
)
