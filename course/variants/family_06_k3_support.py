"""Exercise 06's variants: the two examples of Part B, with other masses.

What varies: in example 1, q = (1, 0) and p = (a, 1 - a), with a in 0.0500..0.9500 in steps of
0.0001 (9,000 masses, so that few students of a class share theirs), neither a multiple of 0.05 (the
explorers' grid: an explorer cannot be set to a student's example) nor within 0.001 of one half
(where the answer, a, would be the missed mass, 1 - a); in example 2, q = (b, 1 - b) and p = (1, 0),
with b in hundredths from 0.06 to 0.94, not a multiple of 0.05.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex06_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: Example 1's choices of a, in ten-thousandths.
_MASSES_1 = tuple(k for k in range(500, 9501) if k % 500 != 0 and abs(k - 5000) > 10)
#: Example 2's choices of b, in hundredths.
_MASSES_2 = tuple(k for k in range(6, 95) if k % 5 != 0)


def _draw(d: Draw) -> dict:
    a, b = d.choice(_MASSES_1), d.choice(_MASSES_2)
    return {"q1": (1.0, 0.0), "p1": (a / 10000, (10000 - a) / 10000),
            "q2": (b / 100, (100 - b) / 100), "p2": (1.0, 0.0)}


def _rows(parameters) -> list:
    def pair(values):
        return "(" + ", ".join(f"{v:g}" for v in values) + ")"
    return [("example 1", f"q = {pair(parameters['q1'])}, p = {pair(parameters['p1'])}"),
            ("example 2", f"q = {pair(parameters['q2'])}, p = {pair(parameters['p2'])}")]


FAMILY = Family("06_k3_support", family_data("06_k3_support")["seed"], _draw, _rows)
