"""Exercise 12's variants: four sorted base probabilities of token ids 0..3.

What varies: the distribution ``p = (p0, p1, p2, p3)`` (strictly decreasing, multiples of 0.005,
summing to 1), one of a literal table. Held: the thresholds 0.80 (Part A) and 0.81 (Part B), which
the answers' names carry. The table is literal, not floats tested at draw time: NumPy's SIMD ``log``
and ``exp`` may round differently on another processor, and a student's machine and the grader must
draw the same numbers. Variant 0 is never drawn.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex12_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family

#: Top-p thresholds per answer suffix (held: the answer names carry them).
THRESHOLDS = {"080": 0.80, "081": 0.81}

#: The drawn distributions in thousandths (integers: the file then states no decimal that could be
#: mistaken for another exercise's rounded result; k / 1000 is the double nearest the decimal).
_PER_MILLE = (
    (415, 385, 105, 95), (415, 385, 110, 90), (415, 385, 120, 80), (415, 385, 125, 75),
    (415, 385, 135, 65), (415, 385, 150, 50), (415, 385, 155, 45), (415, 385, 165, 35),
    (415, 385, 170, 30), (415, 385, 180, 20), (415, 385, 185, 15), (415, 385, 195, 5),
    (455, 345, 150, 50), (455, 345, 165, 35), (455, 345, 170, 30), (480, 320, 175, 25),
    (480, 320, 190, 10), (485, 315, 105, 95), (485, 315, 165, 35), (550, 250, 105, 95),
    (550, 250, 125, 75), (550, 250, 165, 35), (550, 250, 185, 15), (550, 250, 190, 10),
    (555, 245, 165, 35), (555, 245, 190, 10), (565, 235, 105, 95), (565, 235, 110, 90),
    (565, 235, 115, 85), (565, 235, 120, 80), (565, 235, 125, 75), (565, 235, 155, 45),
    (565, 235, 160, 40), (565, 235, 165, 35), (565, 235, 170, 30), (565, 235, 175, 25),
    (565, 235, 180, 20), (565, 235, 185, 15), (565, 235, 190, 10), (565, 235, 195, 5),
    (570, 230, 110, 90), (570, 230, 135, 65), (570, 230, 140, 60), (570, 230, 145, 55),
    (570, 230, 180, 20), (570, 230, 185, 15), (570, 230, 190, 10), (575, 225, 165, 35),
    (575, 225, 185, 15), (575, 225, 190, 10), (580, 220, 110, 90), (580, 220, 115, 85),
    (580, 220, 120, 80), (580, 220, 135, 65), (580, 220, 140, 60), (580, 220, 145, 55),
    (580, 220, 155, 45), (580, 220, 165, 35), (580, 220, 170, 30), (580, 220, 175, 25),
    (580, 220, 180, 20), (580, 220, 195, 5), (585, 215, 105, 95), (585, 215, 125, 75),
    (585, 215, 130, 70), (585, 215, 135, 65), (585, 215, 140, 60), (585, 215, 145, 55),
    (585, 215, 165, 35), (585, 215, 170, 30), (585, 215, 175, 25), (585, 215, 180, 20),
    (585, 215, 190, 10), (585, 215, 195, 5), (625, 175, 105, 95), (625, 175, 115, 85),
    (625, 175, 120, 80), (625, 175, 125, 75), (625, 175, 130, 70), (625, 175, 135, 65),
    (625, 175, 140, 60), (625, 175, 145, 55), (625, 175, 150, 50), (625, 175, 155, 45),
    (625, 175, 160, 40), (625, 175, 165, 35), (625, 175, 170, 30), (630, 170, 105, 95),
    (630, 170, 135, 65), (630, 170, 140, 60), (655, 145, 110, 90), (655, 145, 120, 80),
    (655, 145, 125, 75), (665, 135, 130, 70), (690, 110, 105, 95),
)

#: The distributions a student can draw (see the module's docstring for how they were chosen).
DISTRIBUTIONS = tuple(tuple(k / 1000 for k in row) for row in _PER_MILLE)

SEED = {"p": (0.50, 0.30, 0.15, 0.05)}


def _draw(d: Draw) -> dict:
    return {"p": tuple(d.choice(DISTRIBUTIONS))}


def _decimal(value: float) -> str:
    """A probability as the task writes it: two decimals, three where the grid needs them."""
    text = f"{value:.3f}"
    return text[:-1] if text.endswith("0") else text


def _rows(parameters) -> list:
    return [("p: base probabilities of token ids 0, 1, 2, 3 (sorted)", ", ".join(_decimal(x) for x in parameters["p"])),
            ("top_p of Part A, of Part B", ", ".join(f"{t:.2f}" for t in THRESHOLDS.values()))]


FAMILY = Family("12_top_p_nucleus", SEED, _draw, _rows)
