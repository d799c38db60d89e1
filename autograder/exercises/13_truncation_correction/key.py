"""Answer key for exercise 13: the log-probability correction after top-p truncation, per token and per sequence.

The numbers vary per student (``course.variants.family_13_truncation_correction``): :func:`answers`
computes any variant's key from the reference; the module constants are variant 0's (the seed's).
"""

import math

from autograder.reference import sequence_ratio_error, truncation_log_correction
from course.variants.family_13_truncation_correction import FAMILY

#: Variant 0: base mass Z_S of the retained support, the chosen token's base probability, and the sequence length.
SUPPORT_MASS = float(FAMILY.seed["z"])
BASE_PROBABILITY = float(FAMILY.seed["p"])
POSITIONS = int(FAMILY.seed["n"])


def answers(parameters) -> dict:
    """Natural-log answers for one variant's ``parameters`` (``z``, ``p``, ``n``), keyed by the names
    the notebook asks for."""
    z, p, n = float(parameters["z"]), float(parameters["p"]), int(parameters["n"])
    correction = float(truncation_log_correction(z))
    return {
        "p_tilde": math.exp(math.log(p) + correction),
        "log_p_tilde": math.log(p) + correction,
        "log_increase": correction,
        "ratio_factor": float(sequence_ratio_error(z, n)),
    }


#: Variant 0's answers (natural logs), keyed by the names the notebook asks for.
ANSWERS = answers(FAMILY.seed)


def worked(parameters) -> dict:
    """The numbers ``solution.md`` and ``rubric.md`` quote, for ``parameters`` (variant 0 reproduces
    the seed's text)."""
    z, p, n = float(parameters["z"]), float(parameters["p"]), int(parameters["n"])
    key = answers(parameters)
    words = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    return {
        "z": f"{z:.2f}", "p": f"{p:g}", "n": str(n), "n_words": words.get(n, str(n)),
        "z_percent": f"{round(z * 100)}",
        "p_tilde": f"{key['p_tilde']:.6f}",
        "log_p": f"{math.log(p):.6f}",
        "log_increase": f"{key['log_increase']:.6f}",
        "log_p_tilde": f"{key['log_p_tilde']:.6f}",
        "n_log_increase": f"{n * key['log_increase']:.6f}",
        "ratio_factor": f"{key['ratio_factor']:.6f}",
        "ratio_factor_3": f"{key['ratio_factor']:.3f}",
        "ratio_factor_2": f"{key['ratio_factor']:.2f}",
        "inverse_factor_3": f"{1 / key['ratio_factor']:.3f}",
        "per_token_3": f"{1 / z:.3f}",
    }
