"""Exercise 10's variants: a depth-two tree of two actions per step, the chain rule checked on it.

What varies: the first step of ``p`` (``p0 = (a, 1 - a)``, two decimals, never 0.5) and the four
second-step conditionals ``p(. | a1)``, ``q(. | a1)`` (one decimal each, as the seed's are).

What is held: ``q0 = (0.5, 0.5)``, as in the seed, so that weighting the branches by ``q0`` is the same
mistake as weighting them equally (the check's and the rubric's sentences say so); the two actions per
step; the order of the table (row = first action).

The lesson, kept on every draw: the branch weights matter. The two conditional KLs differ and ``p0`` is
far enough from even that the ``p0``-weighted total and the equally weighted (equivalently
``q0``-weighted) total differ by at least 5 % of the total, thousands of times the grader's tolerance.
Draws where one of the exercise's slips would give the right number are excluded: a conditional pair
that is its own mirror image (``q(. | a1) = reversed p(. | a1)``, where KL is symmetric and the
direction slip is invisible), two branches where one's KL the wrong way round is the other's KL (the
direction slip would read as the conditionals swapped, or as equal weights), a joint table equal to its
transpose, trees where two slips' values happen to coincide (:func:`slips_apart`), and the seed's own
tree.
"""

from fractions import Fraction
import math

from course.variants import Draw, Family

#: The smallest relative gap between the p0-weighted and the equally weighted total KL on a drawn tree.
MIN_WEIGHT_GAP = 0.05

_SEED = {"p0": (0.6, 0.4), "q0": (0.5, 0.5),
         "p_next": ((0.7, 0.3), (0.2, 0.8)), "q_next": ((0.4, 0.6), (0.5, 0.5))}


def _pair(x: float) -> tuple:
    """``(x, 1 - x)`` with the complement stated to ``x``'s decimals (0.35, 0.65; not 0.6499999...)."""
    return (x, round(1 - x, 2))


def _kl(p, q) -> float:
    # Only to decide whether a draw keeps the lesson (the weight gap); the keys are computed on the
    # instructor's side from the reference.
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
    if dict(parameters) == _SEED:
        return False
    return weight_gap(parameters) >= MIN_WEIGHT_GAP and slips_apart(parameters)


def _draw(d: Draw) -> dict:
    firsts = [x for x in (round(0.2 + 0.05 * i, 2) for i in range(13)) if abs(x - 0.5) > 0.06]
    for _ in range(1000):
        a = d.choice(firsts)
        c, d1, e, f = (d.grid(0.1, 0.9, 0.1) for _ in range(4))
        parameters = {"p0": _pair(a), "q0": (0.5, 0.5),
                      "p_next": (_pair(c), _pair(d1)), "q_next": (_pair(e), _pair(f))}
        if keeps_lesson(parameters):
            return parameters
    raise RuntimeError("no tree that keeps the lesson in 1000 draws")


def _rows(parameters) -> list:
    def show(pair):
        return f"({pair[0]:g}, {pair[1]:g})"

    p_next, q_next = parameters["p_next"], parameters["q_next"]
    return [("p_0: first step of p (numbers[\"p0\"])", show(parameters["p0"])),
            ("q_0: first step of q (numbers[\"q0\"])", show(parameters["q0"])),
            ("p(. | a1 = 0) (numbers[\"p_next\"][0])", show(p_next[0])),
            ("q(. | a1 = 0) (numbers[\"q_next\"][0])", show(q_next[0])),
            ("p(. | a1 = 1) (numbers[\"p_next\"][1])", show(p_next[1])),
            ("q(. | a1 = 1) (numbers[\"q_next\"][1])", show(q_next[1]))]


FAMILY = Family("10_kl_chain_rule", _SEED, _draw, _rows)
