"""Answer key for exercise 09: sequence log-probability, mean NLL and perplexity of three tokens, then four.

The numbers vary per student (``course.variants.family_09_sequence_ppl``): :func:`answers` computes any
variant's key from the reference; the module constants are variant 0's (the seed's).
"""

import numpy as np

from autograder.reference import masked_sequence_metrics
from course.variants.family_09_sequence_ppl import FAMILY

#: Variant 0: probabilities of the three active response tokens.
TOKEN_PROBABILITIES = tuple(FAMILY.seed["p"])
#: Variant 0: the fourth token that is added afterwards.
FOURTH_PROBABILITY = float(FAMILY.seed["p4"])


def _metrics(probabilities):
    logprobs = np.log(np.asarray([probabilities], dtype=np.float64))
    return masked_sequence_metrics(logprobs, np.ones(logprobs.shape, dtype=bool))


def answers(parameters) -> dict:
    """Natural-log answers for one variant's ``parameters`` (``p``: three probabilities, ``p4``), keyed
    by the names the notebook asks for."""
    three = tuple(float(p) for p in parameters["p"])
    three_metrics = _metrics(three)
    four_metrics = _metrics(three + (float(parameters["p4"]),))
    return {
        "sequence_logprob": float(three_metrics.sum_logprob[0]),
        "mean_nll": float(three_metrics.mean_nll[0]),
        "perplexity": float(three_metrics.perplexity[0]),
        "sequence_logprob_4": float(four_metrics.sum_logprob[0]),
        "perplexity_4": float(four_metrics.perplexity[0]),
    }


#: Variant 0's answers.
ANSWERS = answers(FAMILY.seed)
