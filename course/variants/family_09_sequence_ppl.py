"""Exercise 09's variants: three token probabilities (a fourth token of probability 1 stays).

What varies: the three probabilities, distinct hundredths in 0.05..0.95, at least 0.2 between the
smallest and the largest.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex09_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data


def _draw(d: Draw) -> dict:
    # Hundredths from 0.05 to 0.95: about 10^5 different sets, so that few students of a class share
    # the same three numbers.
    # At least 0.2 between the smallest and the largest (three close values would let a slip pass for the
    # answer: see the family's tests).
    while True:
        probabilities = d.distinct(lambda: d.grid(0.05, 0.95, 0.01), 3)
        if max(probabilities) - min(probabilities) >= 0.2:
            return {"p": tuple(probabilities), "p4": 1.0}


def _rows(parameters) -> list:
    p1, p2, p3 = parameters["p"]
    return [("p1, p2, p3 (the three tokens)", f"{p1:g}, {p2:g}, {p3:g}"),
            ("p4 (the fourth token, Part B)", f"{parameters['p4']:g}")]


FAMILY = Family("09_sequence_ppl", family_data("09_sequence_ppl")["seed"], _draw, _rows)
