"""Answer key for exercise 12: the top-p nucleus of a sorted four-token distribution at 0.80 and 0.81."""

import numpy as np

from autograder.reference import top_p_distribution

#: The base distribution over token ids 0..3 (already sorted, largest first).
PROBABILITIES = (0.50, 0.30, 0.15, 0.05)
#: Threshold per answer suffix: ``kept_080`` / ``nucleus_080`` answer top_p = 0.80.
THRESHOLDS = {"080": 0.80, "081": 0.81}

# The reference works from logits; log(p) has exactly the softmax p.
_NUCLEI = {suffix: top_p_distribution(np.log(np.asarray(PROBABILITIES, dtype=np.float64)), top_p)
           for suffix, top_p in THRESHOLDS.items()}

#: ``NUCLEUS[suffix]``: the renormalised distribution over all four ids (zeros outside the nucleus).
NUCLEUS = {suffix: np.asarray(dist, dtype=np.float64) for suffix, dist in _NUCLEI.items()}
#: ``KEPT[suffix]``: the 0-based ids inside the nucleus.
KEPT = {suffix: frozenset(int(i) for i in np.flatnonzero(dist)) for suffix, dist in NUCLEUS.items()}
