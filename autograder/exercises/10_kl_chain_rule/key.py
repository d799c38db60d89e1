"""Answer key for exercise 10: the KL chain rule on a depth-two tree of two actions per step.

The tree varies per student (``course.variants.family_10_kl_chain_rule``): :func:`answers` computes any
variant's key from the reference; the module constants are variant 0's (the seed's).
"""

import numpy as np

from autograder.reference import kl_chain_rule
from course.variants.family_10_kl_chain_rule import FAMILY

#: Variant 0: first-step distributions p_0 and q_0 over actions 0 and 1.
FIRST_P = tuple(FAMILY.seed["p0"])
FIRST_Q = tuple(FAMILY.seed["q0"])
#: Variant 0: second-step conditionals, ``COND_P[a1][a2] = p(a2 | a1)``.
COND_P = tuple(tuple(row) for row in FAMILY.seed["p_next"])
COND_Q = tuple(tuple(row) for row in FAMILY.seed["q_next"])


def tree(parameters) -> tuple:
    """``(p0, q0, p_next, q_next)`` of a variant as float64 arrays (row ``a1`` of a conditional is
    the distribution of the second action after first action ``a1``)."""
    return tuple(np.asarray(parameters[name], dtype=np.float64) for name in ("p0", "q0", "p_next", "q_next"))


def answers(parameters) -> dict:
    """Answers in nats for one variant's tree, keyed by the names the notebook asks for."""
    p0, q0, p_next, q_next = tree(parameters)
    chain = kl_chain_rule(p0, q0, p_next, q_next)
    return {
        "root_kl": float(chain.root),
        "conditional_kls": np.asarray(chain.conditional, dtype=np.float64),
        "expected_conditional_kl": float(chain.expected_conditional),
        "total_kl": float(chain.total),
        # Joint tables ``joint_p[a1, a2] = p_0(a1) p(a2 | a1)`` (row = first action).
        "joint_p": p0[:, None] * p_next,
        "joint_q": q0[:, None] * q_next,
        "joint_kl": float(chain.joint),
    }


#: Variant 0's answers.
ANSWERS = answers(FAMILY.seed)
#: Variant 0's joint tables.
JOINT_P, JOINT_Q = ANSWERS["joint_p"], ANSWERS["joint_q"]


def _f(x: float, digits: int = 6) -> str:
    return f"{x:.{digits}f}"


def _g(x: float) -> str:
    return f"{x:g}"


def _entry(x: float) -> str:
    """A joint probability as the product of a two- and a one-decimal number is exact: at least two
    decimals (0.20, as a table of probabilities reads), three where it has them (0.245)."""
    text = f"{x:.3f}"
    return text[:-1] if text.endswith("0") else text


def _terms(values) -> str:
    """``0.109393 - 0.089257``: signed terms of a sum, six decimals."""
    return " ".join(_f(t) if i == 0 else f"{'-' if t < 0 else '+'} {_f(abs(t))}" for i, t in enumerate(values))


def worked(parameters) -> dict:
    """The numbers the worked solution and the rubric quote for one variant (``{{ name }}`` in
    ``solution.md`` and ``rubric.md``)."""
    p0, q0, p_next, q_next = tree(parameters)
    key = answers(parameters)
    a, b = (float(x) for x in parameters["p0"])
    qa, qb = (float(x) for x in parameters["q0"])
    out = {"p0_0": _g(a), "p0_1": _g(b), "q0_0": _g(qa), "q0_1": _g(qb)}
    for branch in (0, 1):
        for action in (0, 1):
            out[f"p{branch}{action}"] = _g(float(parameters["p_next"][branch][action]))
            out[f"q{branch}{action}"] = _g(float(parameters["q_next"][branch][action]))
            # A joint entry of two one- and two-decimal numbers has at most three decimals.
            out[f"jp{branch}{action}"] = _entry(float(key["joint_p"][branch, action]))
            out[f"jq{branch}{action}"] = _entry(float(key["joint_q"][branch, action]))
    out["root_terms"] = _terms(p0 * np.log(p0 / q0))
    out["root_kl"] = _f(key["root_kl"])
    out["cond_kl_0"], out["cond_kl_1"] = (_f(x) for x in key["conditional_kls"])
    out["expected_conditional_kl"] = _f(key["expected_conditional_kl"])
    out["total_kl"] = _f(key["total_kl"])
    joint_terms = (key["joint_p"] * np.log(key["joint_p"] / key["joint_q"])).ravel()
    out["joint_terms"] = _terms(joint_terms)
    even = key["root_kl"] + float(np.mean(key["conditional_kls"]))
    out["equal_weights_total"] = _f(even)
    out["equal_weights_total_4"] = _f(even, 4)
    out["total_kl_4"] = _f(key["total_kl"], 4)
    return out
