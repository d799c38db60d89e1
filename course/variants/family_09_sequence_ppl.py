"""Exercise 09's variants: three token probabilities (a fourth, certain token stays at 1).

The lesson needs three different probabilities below 1 (so that the arithmetic and geometric means
differ, and no slip collides with the answer), and stated with two decimals, as the course text's are.
"""

from course.variants import Draw, Family


def _draw(d: Draw) -> dict:
    probabilities = d.distinct(lambda: d.grid(0.1, 0.95, 0.05), 3)
    return {"p": tuple(probabilities), "p4": 1.0}


def _rows(parameters) -> list:
    p1, p2, p3 = parameters["p"]
    return [("p1, p2, p3 (the three tokens)", f"{p1:g}, {p2:g}, {p3:g}"),
            ("p4 (the fourth token, Part B)", f"{parameters['p4']:g}")]


FAMILY = Family("09_sequence_ppl", {"p": (0.5, 0.25, 0.8), "p4": 1.0}, _draw, _rows)
