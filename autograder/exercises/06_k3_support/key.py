"""Answer key for exercise 06: the two support conditions behind the k3 estimator, and two counterexamples.

Notation (public, as in the notebook): ``"q<<p"`` means q(x) > 0 implies p(x) > 0 (p covers every
point q can sample); ``"p<<q"`` means p(x) > 0 implies q(x) > 0. Samples are drawn from q, r = p/q.
The counterexample numbers come from ``autograder.reference``.
"""

import math

from autograder.reference import importance_weight_mean, kl_divergence

SUPPORT_OPTIONS = ("q<<p", "p<<q", "both", "neither")

#: log r finite wherever q samples needs p > 0 there (q << p); E_q[p/q] = 1 needs p's mass inside
#: q's support (p << q).
SUPPORT_NEEDED = {"finite_log_ratio": "q<<p", "weights_average_to_one": "p<<q"}
#: The finite, unbiased k3 identity in its discrete form needs both: common positive support.
K3_IDENTITY_NEEDS = "both"
#: Smoothing changes the estimand; it does not recover missing support.
SMOOTHING_RECOVERS_SUPPORT = False

#: Counterexample 1: q = (1, 0), p = (0.8, 0.2): q never samples the second point.
EXAMPLE_1 = {"q": (1.0, 0.0), "p": (0.8, 0.2)}
WEIGHT_MEAN_1 = float(importance_weight_mean(EXAMPLE_1["p"], EXAMPLE_1["q"]))   # E_q[p/q] = 0.8
MISSED_MASS_1 = 1.0 - WEIGHT_MEAN_1                                              # 0.2, the unseen mass

#: Counterexample 2: q = (0.8, 0.2), p = (1, 0): q samples a point where p is zero.
EXAMPLE_2 = {"q": (0.8, 0.2), "p": (1.0, 0.0)}
KL_2 = float(kl_divergence(EXAMPLE_2["q"], EXAMPLE_2["p"]))                       # D_KL(q || p) = inf
KL_2_OTHER_DIRECTION = float(kl_divergence(EXAMPLE_2["p"], EXAMPLE_2["q"]))       # D_KL(p || q) = -log 0.8
#: What skipping the infinite term gives: only the first point's term, 0.8 log(0.8 / 1).
KL_2_DROPPED_TERM = EXAMPLE_2["q"][0] * math.log(EXAMPLE_2["q"][0] / EXAMPLE_2["p"][0])

if not (set(SUPPORT_NEEDED.values()) | {K3_IDENTITY_NEEDS}) <= set(SUPPORT_OPTIONS):
    raise RuntimeError("answers must be among the offered options")
