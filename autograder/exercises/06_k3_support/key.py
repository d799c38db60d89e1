"""Answer key for exercise 06: the two support conditions behind the k3 estimator, and two counterexamples.

Notation (public, as in the notebook): ``"q<<p"`` means q(x) > 0 implies p(x) > 0 (p covers every
point q can sample); ``"p<<q"`` means p(x) > 0 implies q(x) > 0. Samples are drawn from q, r = p/q.
The counterexample numbers come from ``autograder.reference`` and vary per student
(``course.variants.family_06_k3_support``): :func:`answers` computes any variant's key; the module
constants are variant 0's (the seed's). Part A's conditions are the same for everyone.
"""

import math

from autograder.reference import importance_weight_mean, kl_divergence
from course.variants.family_06_k3_support import FAMILY

SUPPORT_OPTIONS = ("q<<p", "p<<q", "both", "neither")

#: log r finite wherever q samples needs p > 0 there (q << p); E_q[p/q] = 1 needs p's mass inside
#: q's support (p << q).
SUPPORT_NEEDED = {"finite_log_ratio": "q<<p", "weights_average_to_one": "p<<q"}
#: The finite, unbiased k3 identity in its discrete form needs both: common positive support.
K3_IDENTITY_NEEDS = "both"
#: Smoothing changes the estimand; it does not recover missing support.
SMOOTHING_RECOVERS_SUPPORT = False

def example_values(parameters) -> dict:
    """The counterexamples' numbers of one variant (``q1``, ``p1``, ``q2``, ``p2``) from the reference,
    with what the classic mistakes give instead."""
    q1, p1 = tuple(float(v) for v in parameters["q1"]), tuple(float(v) for v in parameters["p1"])
    q2, p2 = tuple(float(v) for v in parameters["q2"]), tuple(float(v) for v in parameters["p2"])
    weight_mean = float(importance_weight_mean(p1, q1))                 # E_q[p/q]: p's mass where q samples
    return {
        "weight_mean_1": weight_mean,
        "missed_mass_1": 1.0 - weight_mean,                             # the mass q never samples
        "kl_2": float(kl_divergence(q2, p2)),                           # D_KL(q || p) = inf
        "kl_2_other_direction": float(kl_divergence(p2, q2)),           # D_KL(p || q) = -log q(0)
        # What skipping the infinite term gives: only the first point's term, q(0) log(q(0) / p(0)).
        "kl_2_dropped_term": q2[0] * math.log(q2[0] / p2[0]),
    }


def answers(parameters) -> dict:
    """The answers of one variant, keyed by the names the notebook's answer cells assign."""
    found = example_values(parameters)
    return {"support_needed": dict(SUPPORT_NEEDED), "k3_identity_needs": K3_IDENTITY_NEEDS,
            "smoothing_recovers_support": SMOOTHING_RECOVERS_SUPPORT,
            "weight_mean_example_1": found["weight_mean_1"], "kl_example_2": found["kl_2"]}


#: Variant 0, counterexample 1: q = (1, 0), p = (0.8, 0.2): q never samples the second point.
EXAMPLE_1 = {"q": tuple(FAMILY.seed["q1"]), "p": tuple(FAMILY.seed["p1"])}
#: Variant 0, counterexample 2: q = (0.8, 0.2), p = (1, 0): q samples a point where p is zero.
EXAMPLE_2 = {"q": tuple(FAMILY.seed["q2"]), "p": tuple(FAMILY.seed["p2"])}
_SEED = example_values(FAMILY.seed)
WEIGHT_MEAN_1 = _SEED["weight_mean_1"]                  # E_q[p/q] = 0.8
MISSED_MASS_1 = _SEED["missed_mass_1"]                  # 0.2, the unseen mass
KL_2 = _SEED["kl_2"]                                    # D_KL(q || p) = inf
KL_2_OTHER_DIRECTION = _SEED["kl_2_other_direction"]    # D_KL(p || q) = -log 0.8
KL_2_DROPPED_TERM = _SEED["kl_2_dropped_term"]          # 0.8 log(0.8 / 1)


def _g(value: float) -> str:
    return f"{value:g}"


def worked(parameters) -> dict:
    """The numbers ``solution.md`` and ``rubric.md`` quote, as text, for one variant."""
    found = example_values(parameters)
    q1, p1, q2, p2 = (tuple(parameters[name]) for name in ("q1", "p1", "q2", "p2"))
    a = p1[0]
    return {
        "q1": "(" + ", ".join(_g(v) for v in q1) + ")", "p1": "(" + ", ".join(_g(v) for v in p1) + ")",
        "q2": "(" + ", ".join(_g(v) for v in q2) + ")", "p2": "(" + ", ".join(_g(v) for v in p2) + ")",
        "weight_mean_1": _g(found["weight_mean_1"]), "missed_mass_1": _g(round(found["missed_mass_1"], 10)),
        "q2_missing": _g(q2[1]),
        "k3_1": f"{-(1 - a) - math.log(a):.6f}", "kl_1": f"{-math.log(a):.6f}",
    }


if not (set(SUPPORT_NEEDED.values()) | {K3_IDENTITY_NEEDS}) <= set(SUPPORT_OPTIONS):
    raise RuntimeError("answers must be among the offered options")
