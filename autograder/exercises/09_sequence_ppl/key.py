"""Answer key for exercise 09: sequence log-probability, mean NLL and perplexity of three tokens, then four."""

import numpy as np

from autograder.reference import masked_sequence_metrics

#: Probabilities of the three active response tokens.
TOKEN_PROBABILITIES = (0.5, 0.25, 0.8)
#: The fourth token that is added afterwards.
FOURTH_PROBABILITY = 1.0


def _metrics(probabilities):
    logprobs = np.log(np.asarray([probabilities], dtype=np.float64))
    return masked_sequence_metrics(logprobs, np.ones(logprobs.shape, dtype=bool))


_THREE = _metrics(TOKEN_PROBABILITIES)
_FOUR = _metrics(TOKEN_PROBABILITIES + (FOURTH_PROBABILITY,))

#: Natural-log answers, keyed by the names the notebook asks for.
ANSWERS = {
    "sequence_logprob": float(_THREE.sum_logprob[0]),
    "mean_nll": float(_THREE.mean_nll[0]),
    "perplexity": float(_THREE.perplexity[0]),
    "sequence_logprob_4": float(_FOUR.sum_logprob[0]),
    "mean_nll_4": float(_FOUR.mean_nll[0]),
    "perplexity_4": float(_FOUR.perplexity[0]),
}
