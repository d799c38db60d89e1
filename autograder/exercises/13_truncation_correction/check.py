"""Hidden checks for exercise 13: renormalising after top-p, and what forgetting it does to a ratio.

Answers are numbers bound to documented names (natural logs, at least 6 significant digits).
``ratio_factor`` is asked as the factor by which the behaviour probability of the n tokens exceeds
their base probability, so its reciprocal is recognised as the inverted factor. Each student's
numbers are their variant's (``build_cases(variant)``); every slip's value is recomputed from them.
"""

from __future__ import annotations

import math

from autograder.checks.authoring import (
    Central, ExerciseCheck, Group, Misconception, exercise_stem, number_case, shared as _shared,
)
from . import key

STEM = exercise_stem(__name__)

MULTIPLIED = Misconception(
    "multiplied-by-mass",
    "Renormalising divides by the retained mass Z_S (the kept probabilities must grow to sum to 1); it "
    "does not multiply by it.")
NOT_RENORMALISED = _shared.NO_RENORMALISE
DROPPED_MASS = Misconception(
    "divided-by-dropped-mass",
    "Divide by the mass that was kept, Z_S, not by the mass that was cut away.")
LOG_BASE = _shared.LOG_BASE
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT
SIGN = Misconception(
    "correction-sign",
    "Renormalising over a smaller support raises every kept probability, so the log-probability goes up: "
    "the change is -log Z_S > 0.")
MASS_DIFFERENCE = Misconception(
    "difference-not-log",
    "The change is measured on the log scale: log p_tilde - log p = -log Z_S, not a difference of "
    "probabilities or masses.")
INVERTED = Misconception(
    "factor-inverted",
    "This is the reciprocal: the question asks how many times larger the behaviour probability of the "
    "sequence is than its base probability, which is 1 / Z_S per position.")
NOT_EXPONENTIATED = Misconception(
    "log-not-exponentiated",
    "The per-position log errors add up over the sequence; exponentiate their sum to get a "
    "multiplicative factor on the ratio.")
ONE_POSITION = Misconception(
    "one-position",
    "The error repeats at every one of the positions: the factors multiply, 1 / Z_S for each.")


def _other_bases(recipe) -> list:
    """``recipe(log)`` with base-2 and base-10 logarithms: the natural log is the one asked for."""
    return [(recipe(log), LOG_BASE) for log in (math.log2, math.log10)]


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: ``z``, ``p`` and ``n``)."""
    parameters = variant.parameters
    z, p, n = float(parameters["z"]), float(parameters["p"]), int(parameters["n"])
    answers = key.answers(parameters)
    return [
        number_case("probability after renormalisation", "renormalised", "p_tilde", answers["p_tilde"],
                    [(p * z, MULTIPLIED), (p, NOT_RENORMALISED), (p / (1 - z), DROPPED_MASS)]),
        number_case("log-probability after renormalisation", "renormalised", "log_p_tilde", answers["log_p_tilde"],
                    _other_bases(lambda log: log(p / z))
                    + [(math.log(p * z), MULTIPLIED), (math.log(p), NOT_RENORMALISED),
                       (math.log(p / (1 - z)), DROPPED_MASS)]),
        number_case("increase of the log-probability", "correction", "log_increase", answers["log_increase"],
                    _other_bases(lambda log: -log(z))
                    + [(math.log(z), SIGN), (1 - z, MASS_DIFFERENCE), (p / z - p, MASS_DIFFERENCE)]),
        number_case("sequence ratio factor", "correction", "ratio_factor", answers["ratio_factor"],
                    [(z ** n, INVERTED), (-n * math.log(z), NOT_EXPONENTIATED), (1 / z, ONE_POSITION)]
                    + _other_bases(lambda log: math.exp(-n * log(z)))),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "renormalisation over the kept tokens (divide by their mass Z_S)",
    {"multiplied-by-mass", "no-renormalise", "divided-by-dropped-mass"},
    ("probability after renormalisation", "log-probability after renormalisation"))

CHECK = ExerciseCheck(
    STEM,
    [Group("renormalised", 1, "The chosen token's probability and log-probability after renormalisation"),
     Group("correction", 1, "The log-probability correction and the sequence ratio factor")],
    build_cases,
    CENTRAL,
)
