"""Hidden checks for exercise 09: sequence log-probability, mean NLL and perplexity, by hand.

Answers are numbers bound to documented names (natural logarithms, at least 6 significant digits).
Each classic slip is recognised by recomputing its value from the seed's probabilities here.
"""

from __future__ import annotations

import math

from autograder.checks.authoring import (
    Central, ExerciseCheck, Group, Misconception, exercise_stem, number_case, shared as _shared,
)
from . import key

STEM = exercise_stem(__name__)

LOG10 = _shared.LOG_BASE_10
LOG2 = Misconception(
    "log-base-2",
    "This matches base-2 logarithms: log-probabilities, NLL and perplexity here use the natural log "
    "(np.log), and perplexity is exp of the mean NLL.")
PRODUCT = Misconception(
    "product-not-log",
    "That is the probability of the sequence; its log-probability is the sum of the tokens' "
    "log-probabilities (the log of the product).")
SIGN = Misconception(
    "sign-flipped",
    "Check the sign: a log-probability is never positive, a negative log-likelihood never negative, and "
    "perplexity is at least 1.")
NO_MEAN = Misconception(
    "sum-not-mean",
    "The mean NLL divides the summed negative log-probability by the number of active tokens, and "
    "perplexity exponentiates that per-token mean, not the total.")
ARITHMETIC_MEAN = Misconception(
    "arithmetic-mean",
    "Perplexity is one over the geometric mean of the token probabilities (exp of the mean NLL), not "
    "one over their arithmetic mean.")
ADDED_PROBABILITY = Misconception(
    "added-probability-not-log",
    "A token enters the sum through its log-probability: a probability of 1 contributes log 1 = 0, "
    "not 1.")
PPL_UNCHANGED = Misconception(
    "ppl-unchanged-by-certain-token",
    "A certain token adds nothing to the sum but one more to the token count, so the mean NLL shrinks "
    "and perplexity changes: PPL depends on which tokens the mask counts.")



# The shared mistakes of numeric answers, named by the shared number judge (listed here for the catalogue).
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT


def _sums(probabilities, log):
    return sum(log(p) for p in probabilities)


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their probabilities)."""
    parameters = variant.parameters
    three = tuple(float(p) for p in parameters["p"])
    fourth = float(parameters["p4"])
    four = three + (fourth,)
    answers = key.answers(parameters)
    total = _sums(three, math.log)  # the same with or without the certain token
    total10, total2 = _sums(three, math.log10), _sums(three, math.log2)
    n3, n4 = len(three), len(four)
    product = math.prod(three)
    return [
        number_case("sequence log-probability of the three tokens", "three_tokens", "sequence_logprob",
                    answers["sequence_logprob"],
                    [(total10, LOG10), (total2, LOG2), (product, PRODUCT), (-total, SIGN)]),
        number_case("mean negative log-probability of the three tokens", "three_tokens", "mean_nll",
                    answers["mean_nll"],
                    [(-total10 / n3, LOG10), (-total2 / n3, LOG2), (total / n3, SIGN), (-total, NO_MEAN)]),
        number_case("perplexity of the three tokens", "three_tokens", "perplexity", answers["perplexity"],
                    [(math.exp(-total10 / n3), LOG10), (math.exp(-total2 / n3), LOG2),
                     (math.exp(total / n3), SIGN), (1 / product, NO_MEAN), (n3 / sum(three), ARITHMETIC_MEAN)]),
        number_case("sequence log-probability with the fourth token", "fourth_token", "sequence_logprob_4",
                    answers["sequence_logprob_4"],
                    [(total + fourth, ADDED_PROBABILITY), (total10, LOG10), (total2, LOG2),
                     (product, PRODUCT), (-total, SIGN)]),
        number_case("perplexity with the fourth token", "fourth_token", "perplexity_4", answers["perplexity_4"],
                    [(answers["perplexity"], PPL_UNCHANGED),
                     (math.exp(-(total + fourth) / n4), ADDED_PROBABILITY),
                     (math.exp(-total10 / n4), LOG10), (math.exp(-total2 / n4), LOG2),
                     (math.exp(total / n4), SIGN), (1 / product, NO_MEAN), (n4 / sum(four), ARITHMETIC_MEAN)]),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "perplexity as the exponential of the mean negative log-probability",
    {"sum-not-mean", "arithmetic-mean"},
    ("mean negative log-probability of the three tokens", "perplexity of the three tokens"))

CHECK = ExerciseCheck(
    STEM,
    [Group("three_tokens", 1.5, "Sequence log-probability, mean NLL and perplexity of three tokens"),
     Group("fourth_token", 1, "What a fourth token of probability 1 changes")],
    build_cases,
    CENTRAL,
)
