"""Answer key for exercise 13: the log-probability correction after top-p truncation, per token and per sequence."""

import math

from autograder.reference import sequence_ratio_error, truncation_log_correction

#: Base mass Z_S of the retained support, the chosen token's base probability, and the sequence length.
SUPPORT_MASS = 0.85
BASE_PROBABILITY = 0.25
POSITIONS = 4

_CORRECTION = float(truncation_log_correction(SUPPORT_MASS))

#: Answers (natural logs), keyed by the names the notebook asks for.
ANSWERS = {
    "p_tilde": math.exp(math.log(BASE_PROBABILITY) + _CORRECTION),
    "log_p_tilde": math.log(BASE_PROBABILITY) + _CORRECTION,
    "log_increase": _CORRECTION,
    "ratio_factor": float(sequence_ratio_error(SUPPORT_MASS, POSITIONS)),
}
