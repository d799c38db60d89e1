"""Exercise 09's variants: three token probabilities (a fourth, certain token stays at 1).

The lesson needs three different probabilities below 1, spread apart (so that the arithmetic and
geometric means differ clearly, and no slip lands near the answer), and stated with two decimals, as the course text's are.
"""

from course.variants import Draw, Family


def _draw(d: Draw) -> dict:
    # Hundredths from 0.05 to 0.95: about 10^5 different sets, so that few students of a class share
    # a product (every answer depends on the product alone, not on the order).
    # At least 0.2 between the smallest and the largest: the arithmetic mean then stays well away from
    # the geometric one (0.74, 0.75, 0.76 would make "one over the arithmetic mean" pass as perplexity).
    while True:
        probabilities = d.distinct(lambda: d.grid(0.05, 0.95, 0.01), 3)
        if max(probabilities) - min(probabilities) >= 0.2:
            return {"p": tuple(probabilities), "p4": 1.0}


def _rows(parameters) -> list:
    p1, p2, p3 = parameters["p"]
    return [("p1, p2, p3 (the three tokens)", f"{p1:g}, {p2:g}, {p3:g}"),
            ("p4 (the fourth token, Part B)", f"{parameters['p4']:g}")]


FAMILY = Family("09_sequence_ppl", {"p": (0.5, 0.25, 0.8), "p4": 1.0}, _draw, _rows)
