"""Hidden checks for exercise 06: which support condition each part of the k3 identity needs.

Answers (documented in the notebook): ``support_needed`` (requirement -> "q<<p" / "p<<q" / "both" /
"neither"), ``k3_identity_needs`` (same options), ``smoothing_recovers_support`` (bool),
``weight_mean_example_1`` (a number) and ``kl_example_2`` (a number, possibly ``math.inf``). Numbers
pass within a relative 1e-5 plus 1e-9 absolute; an infinite answer must be exactly ``inf``.
The key is :mod:`autograder.exercises.06_k3_support.key`; Part B's counterexamples are each student's
(``course.variants.family_06_k3_support``), and their slips are recomputed from them. Giving a fact the other fact's condition, no
condition, or the identity less than both is the central mistake (:data:`CENTRAL`): the notebook earns at
most a third.
"""

from __future__ import annotations

from autograder.checks.authoring import (
    Central, ExerciseCheck, Group, Misconception, Verdict, boolean, choice, entry, exercise_stem, number_case, same,
    shared     as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

SWAPPED_SUPPORT = Misconception(
    "swapped-support",
    "The two conditions are swapped: ask where each quantity is evaluated. log r is only ever computed at "
    "points q samples, while E_q[p/q] can only add up the mass of p that lies where q samples.")
ONE_CONDITION = Misconception(
    "one-condition-enough",
    "The identity uses two facts about r on q's samples (a finite log r, and weights that average to "
    "one), and each of them rests on a different support condition.")
SMOOTHING = Misconception(
    "smoothing-fixes-support",
    "Adding a small epsilon makes every number finite, but it changes the distributions and so the quantity "
    "being estimated; the missing support is still missing.")
ASSUMED_IDENTITY = Misconception(
    "assumed-identity",
    "E_q[p/q] = 1 is exactly what fails here: an average over q's samples can only see p's mass at points q "
    "can produce.")
MISSED_MASS = Misconception(
    "reported-missed-mass",
    "That is the part of p that q never samples, the mass E_q[p/q] misses, not the value of E_q[p/q] itself.")
NO_CONDITION = Misconception(
    "needs-no-condition",
    "Neither fact holds for every pair of distributions: log r is -infinity at a point q samples where "
    "p = 0, and E_q[p/q] falls short of one when p has mass where q is zero (Part B has one example of each).")
STRONGER_THAN_NEEDED = Misconception(
    "stronger-than-needed",
    "\"both\" does guarantee this fact, but the question asks for the weakest condition that does: one of the "
    "two support conditions is enough for each fact on its own.")
NEGATIVE_INFINITE_KL = _shared.KL_NEGATED
WRONG_DIRECTION = _shared.KL_DIRECTION
DROPPED_TERM = Misconception(
    "dropped-infinite-term",
    "A point where q > 0 but p = 0 contributes q log(q / 0) = +infinity; only points with q = 0 may be "
    "dropped (0 log 0 = 0).")

SUPPORT_MISTAKES = {
    "finite_log_ratio": {"p<<q": SWAPPED_SUPPORT, "neither": NO_CONDITION, "both": STRONGER_THAN_NEEDED},
    "weights_average_to_one": {"q<<p": SWAPPED_SUPPORT, "neither": NO_CONDITION, "both": STRONGER_THAN_NEEDED},
}



# --------------------------------------------------------------------------- numbers written as text

NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT


def _support_case(requirement: str):
    def judge(answer) -> Verdict:
        what = f"support_needed[{requirement!r}]"
        got = choice(entry(answer, requirement, "support_needed"), key.SUPPORT_OPTIONS, what)
        return same(got, key.SUPPORT_NEEDED[requirement], what, SUPPORT_MISTAKES[requirement])

    return value_case(f"support condition for {requirement}", "conditions", "support_needed", judge)


def _k3(answer) -> Verdict:
    got = choice(answer, key.SUPPORT_OPTIONS, "k3_identity_needs")
    return same(got, key.K3_IDENTITY_NEEDS, "k3_identity_needs", {"q<<p": ONE_CONDITION, "p<<q": ONE_CONDITION,
                                                              "neither": NO_CONDITION})


def _smoothing(answer) -> Verdict:
    what = "smoothing_recovers_support"
    return same(boolean(answer, what), key.SMOOTHING_RECOVERS_SUPPORT, what, {True: SMOOTHING})


def slips(parameters) -> dict:
    """``answer name -> ((value, misconception), ...)``: what each classic slip of Part B gives for one
    variant's counterexamples."""
    found = key.example_values(parameters)
    return {
        "weight_mean_example_1": ((1.0, ASSUMED_IDENTITY), (found["missed_mass_1"], MISSED_MASS)),
        "kl_example_2": ((found["kl_2_other_direction"], WRONG_DIRECTION),
                         (found["kl_2_dropped_term"], DROPPED_TERM), (-found["kl_2"], NEGATIVE_INFINITE_KL)),
    }


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their two counterexamples)."""
    answers = key.answers(variant.parameters)
    wrong = slips(variant.parameters)
    return [
        _support_case("finite_log_ratio"),
        _support_case("weights_average_to_one"),
        value_case("support the k3 identity needs", "conditions", "k3_identity_needs", _k3),
        value_case("does smoothing recover support", "conditions", "smoothing_recovers_support", _smoothing),
        number_case("E_q[p/q] in the first counterexample", "counterexamples", "weight_mean_example_1",
                    answers["weight_mean_example_1"], wrong["weight_mean_example_1"]),
        # The one numeric answer that may be infinite: q puts mass where p has none.
        number_case("D_KL(q || p) in the second counterexample", "counterexamples", "kl_example_2",
                    answers["kl_example_2"], wrong["kl_example_2"], allow_infinite=True),
    ]


#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "which support condition each fact needs, and that the identity needs both",
    {SWAPPED_SUPPORT.key, ONE_CONDITION.key, NO_CONDITION.key},
    ("support condition for finite_log_ratio", "support condition for weights_average_to_one",
     "support the k3 identity needs"))

CHECK = ExerciseCheck(
    STEM,
    [Group("conditions", 1, "Which support condition each requirement needs"),
     Group("counterexamples", 1, "The two counterexamples, computed")],
    build_cases,
    CENTRAL,
)
