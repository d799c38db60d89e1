"""Exercise 10's variants: a depth-two tree of two actions per step.

What varies: the first step of ``p`` (``p0 = (a, 1 - a)``, ``a`` from :data:`FIRSTS`, hundredths), the
second-step conditionals of ``p`` (``p(. | a1)``, one decimal each, from :data:`P_SECONDS`) and of ``q``
(``q(. | a1)``, hundredths, from :data:`Q_SECONDS`). Held: ``q0 = (0.5, 0.5)``, two actions per step,
and the table's order (row = first action). Neither ``a`` nor a conditional of ``q`` is a multiple of
0.05, the explorers' grid: no explorer can be set to a student's tree, so none works out its answers
(``docs/DESIGN.md``, "Widgets"). A variant is one of :data:`TREES`, a table stored in
``data/10_kl_chain_rule.json`` with variant 0 (:func:`course.variants.family_data` reads it), made on
the instructor's side (``autograder/exercises/10_kl_chain_rule/lesson.py``) and checked there again by
every test run, so this package computes nothing of the exercise.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex10_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: The first step's ``a``: hundredths from 0.20 to 0.80, not within 0.05 of one half, not a multiple of 0.05.
FIRSTS = tuple(k / 100 for k in range(20, 81) if abs(k - 50) > 5 and k % 5 != 0)
#: The first entries of p's conditionals (one decimal).
P_SECONDS = tuple(k / 10 for k in range(1, 10))
#: The first entries of q's conditionals: hundredths from 0.06 to 0.94, not a multiple of 0.05.
Q_SECONDS = tuple(k / 100 for k in range(6, 95) if k % 5 != 0)


def _pair(x: float) -> tuple:
    """``(x, 1 - x)`` with the complement stated to ``x``'s decimals (0.35, 0.65; not 0.6499999...)."""
    return (x, round(1 - x, 2))


def tree(a: float, c: float, d: float, e: float, f: float) -> dict:
    """The parameters of the tree ``p0 = (a, 1 - a)``, ``p(.|0) = (c, .)``, ``p(.|1) = (d, .)``,
    ``q(.|0) = (e, .)``, ``q(.|1) = (f, .)``."""
    return {"p0": _pair(a), "q0": (0.5, 0.5), "p_next": (_pair(c), _pair(d)), "q_next": (_pair(e), _pair(f))}


#: The family's numbers (``data/10_kl_chain_rule.json``): variant 0, and every tree a student can get,
#: eight digits each: a in hundredths (two digits), c and d in tenths (one digit each), e and f in
#: hundredths (two digits each).
_DATA = family_data("10_kl_chain_rule")
SEED = _DATA["seed"]


def _decode(code: str) -> tuple:
    return (int(code[0:2]) / 100, int(code[2]) / 10, int(code[3]) / 10, int(code[4:6]) / 100, int(code[6:8]) / 100)


#: The trees a student can draw, as ``(a, c, d, e, f)`` (see :func:`tree`).
TREES = tuple(_decode(code) for code in _DATA["trees"])


def _draw(d: Draw) -> dict:
    return tree(*d.choice(TREES))


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


FAMILY = Family("10_kl_chain_rule", SEED, _draw, _rows)
