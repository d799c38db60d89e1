"""Which trees exercise 10's family may draw: the lesson kept, every slip clear of the key and of the others.

The student package's family (``course.variants.family_10_kl_chain_rule``)
draws from a table (``course/variants/data/10_kl_chain_rule.json``) of
trees; this module is where the table comes from (:func:`admissible_trees`), and the tests check that
the table is exactly what it computes. It lives on the instructor's side because it computes the
exercise's answers (the chain rule's total, and the slips' values).
"""

from __future__ import annotations

import math
from fractions import Fraction

import random

from course.variants.family_10_kl_chain_rule import FIRSTS, P_SECONDS, Q_SECONDS, SEED as SEED_TREE, tree

#: The smallest relative gap between the p0-weighted and the equally weighted total KL on a drawn tree.
MIN_WEIGHT_GAP = 0.05

def _kl(p, q) -> float:
    # Plain floats, only to decide which trees keep the lesson; the keys come from the reference.
    return sum(a * math.log(a / b) for a, b in zip(p, q))


#: How far apart (relative) two different slips' values must be on a drawn tree: ten times the
#: grader's tolerance (1e-5), so that a slip is named for what it is, and never passes as another.
_APART = 1e-4


def _close(x, y) -> bool:
    xs, ys = (x, y) if isinstance(x, tuple) else ((x,), (y,))
    return all(abs(a - b) <= _APART * max(abs(a), abs(b)) for a, b in zip(xs, ys))


def slips_apart(parameters) -> bool:
    """Whether, for each answer, the value of every slip the grader names stays clear of the right value
    and of every other slip's (the slips of ``autograder/exercises/10_kl_chain_rule/check.py``, here with
    plain logarithms: KL in bits or decibans is KL in nats over log 2 or log 10). A few trees in ten
    thousand fail by coincidence, such as one direction in nats matching the other in bits."""
    p0, q0 = parameters["p0"], parameters["q0"]
    branches = list(zip(parameters["p_next"], parameters["q_next"]))
    root, root_back = _kl(p0, q0), _kl(q0, p0)
    ks = tuple(_kl(p, q) for p, q in branches)
    ks_back = tuple(_kl(q, p) for p, q in branches)

    def dot(w, k):
        return sum(a * b for a, b in zip(w, k))

    def scaled(x, tag):
        if isinstance(x, tuple):
            return [(tuple(v / math.log(base) for v in x), "bits") for base in (2, 10)] + [
                (tuple(-v for v in x), "negated"), (x, tag)]
        return [(x / math.log(2), "bits"), (x / math.log(10), "bits"), (-x, "negated"), (x, tag)]

    expected = dot(p0, ks)
    per_answer = [
        scaled(root, "key") + [(root_back, "direction")],
        scaled(ks, "key") + [(ks_back, "direction"), (ks[::-1], "order")],
        scaled(expected, "key") + [(dot(q0, ks_back), "direction"), (dot(p0, ks_back), "direction"),
                                   (sum(ks) / len(ks), "unweighted"), (sum(ks), "sum")],
        scaled(root + expected, "key") + [(root_back + dot(q0, ks_back), "direction"),
                                          (root + dot(p0, ks_back), "direction"),
                                          (root + sum(ks) / len(ks), "unweighted"), (root + sum(ks), "sum")],
    ]
    for values in per_answer:
        for i, (x, tag) in enumerate(values):
            if any(tag != other and _close(x, y) for y, other in values[i + 1:]):
                return False
    return True


def weight_gap(parameters) -> float:
    """``|total - equally weighted total| / total``: how much the chain rule's weights matter on a tree."""
    p0, q0 = parameters["p0"], parameters["q0"]
    conditional = [_kl(p, q) for p, q in zip(parameters["p_next"], parameters["q_next"])]
    root = _kl(p0, q0)
    total = root + sum(w * k for w, k in zip(p0, conditional))
    even = root + sum(conditional) / len(conditional)
    return abs(total - even) / total


def keeps_lesson(parameters) -> bool:
    """Whether a tree keeps the exercise's lesson and leaves every slip distinguishable (see above)."""
    exact = {name: [[Fraction(str(x)) for x in row] for row in parameters[name]] for name in ("p_next", "q_next")}
    (a, b) = (Fraction(str(x)) for x in parameters["p0"])
    for p, q in zip(exact["p_next"], exact["q_next"]):
        if p == q or p == q[::-1]:
            return False  # a zero conditional KL, or a symmetric one (KL(p || q) = KL(q || p))
    for i, j in ((0, 1), (1, 0)):
        p, q = exact["p_next"][i], exact["q_next"][i]
        if (exact["q_next"][j], exact["p_next"][j]) in ((p, q), (p[::-1], q[::-1])):
            return False  # branch j's KL the wrong way round is branch i's KL: the direction slip hides
    if a * exact["p_next"][0][1] == b * exact["p_next"][1][0]:
        return False  # joint_p equals its transpose
    if exact["q_next"][0][1] == exact["q_next"][1][0]:
        return False  # joint_q equals its transpose (q0 is even)
    if dict(parameters) == SEED_TREE:
        return False
    return weight_gap(parameters) >= MIN_WEIGHT_GAP and slips_apart(parameters)




#: How many trees the family's table holds.
SIZE = 12000
#: The seed of the draws the table keeps (the table is what it gives; change both together).
SEED = 20260510


def admissible_trees(size: int = SIZE) -> list:
    """The family's table: the first ``size`` distinct ``(a, c, d, e, f)`` of seeded draws from the grid
    (``a`` from FIRSTS, ``c`` and ``d`` from P_SECONDS, ``e`` and ``f`` from Q_SECONDS) whose tree keeps the
    lesson, sorted. The grid has about 16 million trees, too many to list whole; the draws come from a
    ``random.Random`` here, on the instructor's side (the student package draws with its own Draw)."""
    rng = random.Random(SEED)
    kept, seen = [], set()
    while len(kept) < size:
        point = (rng.choice(FIRSTS), rng.choice(P_SECONDS), rng.choice(P_SECONDS), rng.choice(Q_SECONDS),
                 rng.choice(Q_SECONDS))
        if point in seen:
            continue
        seen.add(point)
        if keeps_lesson(tree(*point)):
            kept.append(point)
    return sorted(kept)
