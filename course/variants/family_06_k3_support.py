"""Exercise 06's variants: the two examples of Part B, with other masses.

What varies: in example 1, q = (1, 0) and p = (a, 1 - a), with a in 0.05..0.95 in steps of 0.01
(0.5 left out); in example 2, q = (b, 1 - b) and p = (1, 0), with b in 0.05..0.95 in steps of 0.05.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex06_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family

#: Example 1's choices of a: two decimals, never one half.
_MASSES_1 = tuple(round(0.05 + 0.01 * k, 2) for k in range(91) if round(0.05 + 0.01 * k, 2) != 0.5)


def _draw(d: Draw) -> dict:
    a = d.choice(_MASSES_1)
    b = d.grid(0.05, 0.95, 0.05)
    return {"q1": (1.0, 0.0), "p1": (a, round(1.0 - a, 2)), "q2": (b, round(1.0 - b, 2)), "p2": (1.0, 0.0)}


def _rows(parameters) -> list:
    def pair(values):
        return "(" + ", ".join(f"{v:g}" for v in values) + ")"
    return [("example 1", f"q = {pair(parameters['q1'])}, p = {pair(parameters['p1'])}"),
            ("example 2", f"q = {pair(parameters['q2'])}, p = {pair(parameters['p2'])}")]


FAMILY = Family("06_k3_support", {"q1": (1.0, 0.0), "p1": (0.8, 0.2), "q2": (0.8, 0.2), "p2": (1.0, 0.0)},
                _draw, _rows)
