"""Answer key for exercise 11: the estimators k1, k2, k3 at r = 2 and r = 1/2, and their signs."""

from autograder.reference import kl_estimators_at_ratio

#: The ratios r = p(x) / q(x) the notebook asks about, keyed by the answer's name.
RATIOS = {"k_at_2": 2.0, "k_at_half": 0.5}
ESTIMATORS = ("k1", "k2", "k3")

#: ``ANSWERS[name][estimator]``: the value at that ratio.
ANSWERS = {name: {k: float(v) for k, v in kl_estimators_at_ratio(ratio).items()} for name, ratio in RATIOS.items()}

#: Estimators whose value is negative at one of the two ratios and positive at the other.
CHANGES_SIGN = frozenset(
    k for k in ESTIMATORS if min(ANSWERS[n][k] for n in RATIOS) < 0 < max(ANSWERS[n][k] for n in RATIOS))
#: Estimators that are never negative (for every r > 0, not just these two: k2 is a square, k3 = u - 1 - log u).
NEVER_NEGATIVE = frozenset(("k2", "k3"))

if CHANGES_SIGN != frozenset(ESTIMATORS) - NEVER_NEGATIVE:
    raise RuntimeError("the reference's estimator values disagree with the seed's sign facts")
