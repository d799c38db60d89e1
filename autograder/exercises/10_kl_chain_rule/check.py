"""Hidden checks for exercise 10: the KL chain rule on a depth-two tree, by hand.

Answers are numbers and 2 x 2 tables bound to documented names (nats, at least 6 significant
digits). The slips the exercise is about (averaging the conditional KLs without the weights p_0,
measuring KL the wrong way round, building the joint table the wrong way) are recomputed here from each
student's own tree (``course.variants.family_10_kl_chain_rule``).
"""

from __future__ import annotations

import numpy as np

from autograder.checks.authoring import (
    Central, ExerciseCheck, Group, Misconception, array_case, exercise_stem, number_case, shared as _shared,
)
from . import key

STEM = exercise_stem(__name__)

DIRECTION = _shared.KL_DIRECTION
UNWEIGHTED = Misconception(
    "unweighted-average",
    "The conditional KLs must be weighted by how often p takes each first action, p_0(a1), not "
    "averaged equally (here that is also what weighting by q_0 gives).")
UNWEIGHTED_SUM = Misconception(
    "unweighted-sum",
    "The conditional KLs are not simply added: each is weighted by the probability p_0(a1) of reaching "
    "its branch.")
BITS = _shared.LOG_BASE
NEGATED_KL = _shared.KL_NEGATED
ORDER = Misconception(
    "conditional-order",
    "The two conditional KLs are in the wrong order: the first entry belongs to first action 0.")
TRANSPOSED = Misconception(
    "joint-transposed",
    "The table is transposed: the row is the first action a1 and the column the second action a2.")
CONDITIONAL_ONLY = Misconception(
    "joint-missing-first-step",
    "A joint probability multiplies the first step by the second: p(a1, a2) = p_0(a1) p(a2 | a1); "
    "the entries of the table should sum to 1.")



# The shared mistakes of numeric answers, named by the shared number judge (listed here for the catalogue).
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT


def _kl(p, q, log=np.log) -> float:
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    keep = p > 0
    return float(np.sum(p[keep] * log(p[keep] / q[keep])))


def slips(parameters) -> list:
    """``(case name, group, variable, key, [(slip value, misconception), ...])`` of one variant's tree:
    every slip recomputed from its numbers. A slip that changes nothing in a term (equal weights do not
    touch the root KL) is not listed for it, so that no listed slip equals the key by construction (the
    family excludes the trees where one would by accident: ``tests/test_variants_ex10_kl_chain_rule.py``)."""
    first_p, first_q, cond_p, cond_q = key.tree(parameters)
    answers = key.answers(parameters)

    def chain(log=np.log, reverse=False, weights=None):
        """Root, conditionals, expected conditional and total under one (possibly mistaken) recipe."""
        a, b = (first_q, first_p) if reverse else (first_p, first_q)
        ca, cb = (cond_q, cond_p) if reverse else (cond_p, cond_q)
        conditional = np.array([_kl(ca[i], cb[i], log) for i in range(len(a))])
        weight = a if weights is None else weights
        expected = float(np.dot(weight, conditional))
        root = _kl(a, b, log)
        return root, conditional, expected, root + expected

    right_way = chain()
    reverse = chain(reverse=True)
    weightings = {UNWEIGHTED: chain(weights=np.full(len(first_p), 1.0 / len(first_p))),
                  UNWEIGHTED_SUM: chain(weights=np.ones(len(first_p)))}
    log_ways = [chain(log=np.log2), chain(log=np.log10)]
    # KL with the right weights p_0 but conditionals measured the other way round.
    mixed_expected = float(np.dot(first_p, reverse[1]))

    def wrong(index):
        pairs = [(reverse[index], DIRECTION)]
        if index >= 2:  # the weights enter the expected conditional KL and the total only
            pairs += [(values[index], mistake) for mistake, values in weightings.items()]
        return pairs + [(values[index], BITS) for values in log_ways] + [(-right_way[index], NEGATED_KL)]

    joint_p, joint_q = answers["joint_p"], answers["joint_q"]
    return [
        ("root KL(p_0 || q_0)", "chain_terms", "root_kl", answers["root_kl"], wrong(0)),
        ("conditional KLs, one per first action", "chain_terms", "conditional_kls",
         answers["conditional_kls"], wrong(1) + [(answers["conditional_kls"][::-1], ORDER)]),
        ("expected conditional KL", "chain_terms", "expected_conditional_kl",
         answers["expected_conditional_kl"], wrong(2) + [(mixed_expected, DIRECTION)]),
        ("root plus expected conditional KL", "chain_terms", "total_kl", answers["total_kl"],
         wrong(3) + [(answers["root_kl"] + mixed_expected, DIRECTION)]),
        ("joint table of p", "joint", "joint_p", joint_p, [(joint_p.T, TRANSPOSED), (cond_p, CONDITIONAL_ONLY)]),
        ("joint table of q", "joint", "joint_q", joint_q, [(joint_q.T, TRANSPOSED), (cond_q, CONDITIONAL_ONLY)]),
        ("KL between the joint distributions", "joint", "joint_kl", answers["joint_kl"],
         [(_kl(joint_q.ravel(), joint_p.ravel()), DIRECTION), (weightings[UNWEIGHTED][3], UNWEIGHTED),
          (-answers["joint_kl"], NEGATED_KL),
          (_kl(joint_p.ravel(), joint_q.ravel(), np.log2), BITS),
          (_kl(joint_p.ravel(), joint_q.ravel(), np.log10), BITS)]),
    ]


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their tree)."""
    return [(array_case if np.ndim(expected) else number_case)(name, group, variable, expected, wrong)
            for name, group, variable, expected, wrong in slips(variant.parameters)]



#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the chain rule (root KL plus the p_0-weighted mean of the conditional KLs, all under p)",
    {"kl-direction", "unweighted-average", "unweighted-sum"},
    ("root KL(p_0 || q_0)", "conditional KLs, one per first action", "expected conditional KL"))

CHECK = ExerciseCheck(
    STEM,
    [Group("chain_terms", 1.5, "The chain rule's terms: root KL, conditional KLs, their p_0-weighted mean, the total"),
     Group("joint", 0.5, "The joint distributions and the KL between them")],
    build_cases,
    CENTRAL,
)
