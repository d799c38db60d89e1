"""The chain-rule explorer's model: a depth-two tree of probabilities in, both sides of the rule out.

The arithmetic is the widgets' own (:mod:`course.widgets._math`); an instructor-side test keeps it
equal to the reference solutions. The trees a learner sets (the sliders, :func:`chain_rule_state`) have
every probability a multiple of 0.05, the explorers' grid, where no notebook's tree lies
(``docs/DESIGN.md``, "Widgets").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

import course.widgets._math as _math  # the module itself, not the package (whose __init__ imports this one)
from ._inputs import _check_distributions, _check_float, _check_on_grid

# The explorer opens on a tree of its own, not a notebook's; the sliders set any tree of the 0.05 grid.
DEFAULT_TREE = {
    "first_p": (0.75, 0.25),
    "first_q": (0.45, 0.55),
    "cond_p": ((0.65, 0.35), (0.15, 0.85)),
    "cond_q": ((0.3, 0.7), (0.55, 0.45)),
}


@dataclass(frozen=True, eq=False)
class ChainRuleState:
    """The chain rule on a two-step tree: root KL + E[conditional KL] = joint KL.

    Attributes
    ----------
    root : float
        KL(p0 || q0) of the first step.
    conditional : ndarray
        KL(p(.|a1) || q(.|a1)) for each first action a1.
    expected_conditional : float
        The conditional KLs averaged under p0.
    total : float
        ``root + expected_conditional``.
    joint : float
        KL of the joint distributions over (a1, a2), computed directly.
    joint_p, joint_q : ndarray
        The four joint probabilities, ``[a1, a2]``.
    difference : float
        ``total - joint`` (0 up to round-off; NaN when both are inf).
    agree : bool
        Whether the two sides agree (both finite and equal to 1e-12, or both inf).
    reasons : dict
        One-line reason for each non-finite value.
    """

    first_p: np.ndarray
    first_q: np.ndarray
    cond_p: np.ndarray
    cond_q: np.ndarray
    root: float
    conditional: np.ndarray
    expected_conditional: float
    total: float
    joint: float
    joint_p: np.ndarray
    joint_q: np.ndarray
    difference: float
    agree: bool
    reasons: Mapping[str, str]


def chain_rule_state(first_p, first_q, cond_p, cond_q) -> ChainRuleState:
    """Compute what the chain-rule explorer shows: both sides of the chain rule.

    Parameters
    ----------
    first_p, first_q : sequence of float
        First-step distributions.
    cond_p, cond_q : 2-D array-like
        ``cond[a1, a2] = p(a2 | a1)``.

    Every probability is a multiple of 0.05, the explorer's grid (ValueError otherwise).

    Examples
    --------
    >>> s = chain_rule_state((0.5, 0.5), (0.5, 0.5), ((1.0, 0.0), (0.5, 0.5)), ((0.5, 0.5), (0.5, 0.5)))
    >>> s.root, round(float(s.expected_conditional / np.log(2)), 12), s.agree
    (0.0, 0.5, True)
    """
    for name, value in (("first_p", first_p), ("first_q", first_q), ("cond_p", cond_p), ("cond_q", cond_q)):
        _check_on_grid(_check_distributions(value, name, 1 if name.startswith("first") else 2), name)
    return _chain_rule_state(first_p, first_q, cond_p, cond_q)


def _chain_rule_state(first_p, first_q, cond_p, cond_q) -> ChainRuleState:
    """:func:`chain_rule_state` for any tree (the instructor's tests compare it with the reference on
    arbitrary ones; the explorer itself only ever passes its grid's)."""
    first_p = _check_distributions(first_p, "first_p", 1)
    first_q = _check_distributions(first_q, "first_q", 1)
    cond_p = _check_distributions(cond_p, "cond_p", 2)
    cond_q = _check_distributions(cond_q, "cond_q", 2)
    if first_q.shape != first_p.shape:
        raise ValueError(f"first_p and first_q must have the same length, got {first_p.size} and "
                         f"{first_q.size}")
    if cond_p.shape[0] != first_p.size or cond_q.shape != cond_p.shape:
        raise ValueError(f"cond_p and cond_q must both have one row per first action "
                         f"({first_p.size}), got shapes {cond_p.shape} and {cond_q.shape}")
    root = _math._kl_between(first_p, first_q)
    conditional = np.array([_math._kl_between(cond_p[a1], cond_q[a1])
                            for a1 in range(first_p.size)])
    # A first action p never takes adds nothing, even below an infinite conditional KL.
    reached = first_p > 0
    expected_conditional = float(np.sum(first_p[reached] * conditional[reached]))
    total = root + expected_conditional
    joint_p = first_p[:, None] * cond_p
    joint_q = first_q[:, None] * cond_q
    joint = _math._kl_between(joint_p.ravel(), joint_q.ravel())
    reasons: dict[str, str] = {}
    if math.isinf(root):
        bad = [str(a) for a in range(first_p.size) if first_p[a] > 0 and first_q[a] == 0]
        reasons["root"] = f"p0 takes first action {', '.join(bad)} where q0 = 0"
    for a1, value in enumerate(conditional):
        if math.isinf(value):
            bad = [str(a) for a in range(cond_p.shape[1]) if cond_p[a1, a] > 0 and cond_q[a1, a] == 0]
            reasons[f"conditional.{a1}"] = f"after a1 = {a1}, p takes a2 = {', '.join(bad)} where q = 0"
    if math.isinf(expected_conditional):
        reasons["expected_conditional"] = "a first action that p takes leads to an infinite conditional KL"
    for key in ("total", "joint"):
        if math.isinf(total if key == "total" else joint):
            reasons[key] = "p gives a path positive probability that q gives 0"
    if math.isfinite(total) and math.isfinite(joint):
        difference = total - joint
        agree = abs(difference) <= 1e-12 * max(1.0, abs(joint))
    else:
        difference = math.nan
        agree = total == joint and math.isinf(joint)
        reasons["difference"] = ("both sides are inf, so their difference is undefined" if agree
                                 else "one side is not finite")
    for key in ("root", "expected_conditional", "total", "joint"):
        value = {"root": root, "expected_conditional": expected_conditional, "total": total,
                 "joint": joint}[key]
        if math.isnan(value):
            reasons[key] = "not a number for these probabilities"
    return ChainRuleState(
        first_p, first_q, cond_p, cond_q, root, conditional, expected_conditional, total, joint,
        joint_p, joint_q, difference, agree, reasons,
    )


def chain_rule_from_controls(p0: float, q0: float, p_given: Sequence[float],
                             q_given: Sequence[float]) -> ChainRuleState:
    """The tree from the explorer's six sliders.

    ``p0 = p(a1 = 0)``, ``q0 = q(a1 = 0)``, ``p_given[a1] = p(a2 = 0 | a1)`` and
    ``q_given[a1] = q(a2 = 0 | a1)``; the other branch of each split gets the rest. Each is a
    multiple of 0.05, as the sliders step.
    """
    values = [("p0", p0), ("q0", q0)] + [(f"p_given[{i}]", v) for i, v in enumerate(p_given)] + [
        (f"q_given[{i}]", v) for i, v in enumerate(q_given)]
    for name, value in values:
        value = _check_float(value, name)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        _check_on_grid(value, name)
    if len(p_given) != 2 or len(q_given) != 2:
        raise ValueError("p_given and q_given must hold one value per first action (2)")

    def split(x):
        return (float(x), 1.0 - float(x))

    return chain_rule_state(
        split(p0), split(q0), [split(v) for v in p_given], [split(v) for v in q_given]
    )
