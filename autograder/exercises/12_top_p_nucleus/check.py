"""Hidden checks for exercise 12: the top-p nucleus at thresholds 0.80 and 0.81, by hand.

``kept_080`` / ``kept_081`` are sets of 0-based token ids; ``nucleus_080`` / ``nucleus_081`` are the
renormalised distributions over all four ids (at least 6 significant digits). The 0.80 case sits
exactly on the threshold (p0 + p1 = 0.80 in every variant, a float sum one ulp short): the notebook
teaches that case, so only the two-token nucleus is accepted. Each student's distribution is their
variant's (``build_cases(variant)``); every slip's value is recomputed from it.

The central idea is the nucleus itself (the smallest sorted prefix reaching top_p, renormalised): an
answer that drops the threshold token, keeps one too many or does not renormalise in two or more of
its four answers (a rule applied, not a slip in one answer) earns at most a third of the points.
"""

from __future__ import annotations

import numpy as np

from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Group, Misconception, Reject, Verdict, exercise_stem, int_set, number_matches,
    numbers, numeric_judge, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

DROPPED = _shared.TOP_P_DROPS
TOO_MANY = _shared.TOP_P_EXTRA
ONE_BASED = Misconception(
    "one-based-ids",
    "Token ids here start at 0, like array indices: the most likely token is id 0.")
NOT_RENORMALISED = _shared.NO_RENORMALISE
ZEROS_LEFT_OUT = Misconception(
    "zeros-left-out",
    "Give a probability for every one of the four token ids, with 0 for the tokens outside the nucleus.")
IDS_FORM = Misconception(
    "kept-ids-form",
    "The kept tokens are a set of token ids, whole numbers (ints) from 0 to 3, such as {0}.")
# Named by the shared number judge (listed here for the catalogue).
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT


def _form(error: Reject, mistake: Misconception) -> Reject:
    """A form rejection named as the stated rule it breaks (a blank stays "not implemented")."""
    if error.message.startswith("not implemented"):
        return error
    return Reject(f"{error.message}. {mistake.sentence}", mistake.key)


def _nucleus(p: np.ndarray, size: int, normalise: bool = True) -> np.ndarray:
    """The first ``size`` tokens of the sorted distribution ``p``, optionally renormalised."""
    out = np.where(np.arange(p.size) < size, p, 0.0)
    return out / out.sum() if normalise else out


def _kept_case(suffix: str, label: str, expected: frozenset) -> Case:
    name = f"kept_{suffix}"
    size = len(expected)
    mistakes = [(frozenset(range(size - 1)), DROPPED), (frozenset(range(size + 1)), TOO_MANY),
                (frozenset(i + 1 for i in expected), ONE_BASED)]

    def judge(answer) -> Verdict:
        try:
            chosen = int_set(answer, f"`{name}`")
        except Reject as error:
            raise _form(error, IDS_FORM) from None
        if chosen == expected:
            return PASS
        for wrong, mistake in mistakes:
            if chosen == wrong:
                return Verdict(False, mistake.sentence, mistake.key)
        return Verdict(False, f"`{name}` is not the set of token ids inside the nucleus")

    return value_case(f"token ids kept at top_p = {label}", f"threshold_{suffix}", name, judge)


def _nucleus_case(suffix: str, label: str, p: np.ndarray, expected: np.ndarray, size: int) -> Case:
    name = f"nucleus_{suffix}"
    wrong = [(_nucleus(p, size - 1), DROPPED), (_nucleus(p, size + 1), TOO_MANY),
             (_nucleus(p, size, normalise=False), NOT_RENORMALISED)]

    what = f"`{name}`"

    def read(value) -> np.ndarray:
        try:
            return numbers(value, what, expected.shape)
        except Reject as original:
            try:
                any_shape = numbers(value, what, np.shape(np.asarray(value, dtype=object)))
            except (Reject, ValueError, TypeError):
                raise original from None
            if any_shape.shape == expected.shape:  # numbers of the right shape, refused for another reason
                raise original from None
            # A distribution over the kept tokens only: say so rather than just "wrong shape".
            if any_shape.shape == (size,) and number_matches(any_shape, expected[:size]):
                raise ZEROS_LEFT_OUT.reject() from None
            raise _form(original, ZEROS_LEFT_OUT) from None

    judge = numeric_judge(read, expected, what, wrong)

    return value_case(f"renormalised distribution at top_p = {label}", f"threshold_{suffix}", name, judge)


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters["p"]``: their four probabilities)."""
    p = np.asarray(variant.parameters["p"], dtype=np.float64)
    answers = key.answers(variant.parameters)
    cases = []
    for suffix, top_p in key.THRESHOLDS.items():
        label = f"{top_p:.2f}"
        kept = answers[f"kept_{suffix}"]
        cases += [_kept_case(suffix, label, kept),
                  _nucleus_case(suffix, label, p, answers[f"nucleus_{suffix}"], len(kept))]
    return cases


#: The exercise's central idea: the nucleus rule applied wrongly (in two answers or more) caps every part.
CENTRAL = Central(
    "the nucleus (the smallest sorted prefix whose mass reaches top_p, renormalised by that mass)",
    {DROPPED.key, TOO_MANY.key, NOT_RENORMALISED.key},
    ("token ids kept at top_p = 0.80", "renormalised distribution at top_p = 0.80",
     "token ids kept at top_p = 0.81", "renormalised distribution at top_p = 0.81"),
    min_failures=2)

CHECK = ExerciseCheck(
    STEM,
    [Group("threshold_080", 1.5, "The nucleus at top_p = 0.80 (the threshold is reached exactly)"),
     Group("threshold_081", 1.5, "The nucleus at top_p = 0.81")],
    build_cases,
    CENTRAL,
)
