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


def _decimal(value: float):
    """``value`` as the decimal the question states (0.25, not 0.25000000000000001)."""
    from decimal import Decimal
    return Decimal(repr(float(value)))


def worked(parameters) -> dict:
    """``name -> text`` of the numbers the worked solution (``solution.md``) and the rubric quote for
    one variant: the probabilities as stated, their product exactly (a product of two-decimal numbers
    has at most six decimals, so ``math.log(product)`` in the solution's code is the key to the last
    digit), and the answers rounded as the text shows them."""
    three = tuple(float(p) for p in parameters["p"])
    product = _decimal(three[0]) * _decimal(three[1]) * _decimal(three[2])
    values = answers(parameters)
    mean_nll_4 = -values["sequence_logprob_4"] / 4
    return {
        "p1": f"{three[0]:g}", "p2": f"{three[1]:g}", "p3": f"{three[2]:g}",
        "product": format(product.normalize(), "f"),
        "sequence_logprob": f"{values['sequence_logprob']:.6f}",
        "neg_sequence_logprob": f"{-values['sequence_logprob']:.6f}",
        "mean_nll": f"{values['mean_nll']:.6f}",
        "perplexity": f"{values['perplexity']:.6f}",
        "perplexity_2dp": f"{values['perplexity']:.2f}",
        "perplexity_3dp": f"{values['perplexity']:.3f}",
        "mean_nll_4": f"{mean_nll_4:.6f}",
        "perplexity_4": f"{values['perplexity_4']:.6f}",
        "perplexity_4_3dp": f"{values['perplexity_4']:.3f}",
    }
