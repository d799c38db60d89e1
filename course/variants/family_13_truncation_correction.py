"""Exercise 13's variants: the kept mass Z_S, the sampled token's base probability p, and the length n.

What varies: ``z`` (the base mass of the kept set, two decimals, one of a short list), ``p`` (the
sampled token's base probability, 0.100 to 0.700 in steps of 0.001, always below ``z``: 601 values, so
that few students of a class share their numbers) and ``n`` (the positions of the response in Part B,
from a stored table per mass, ``data/13_truncation_correction.json``: no float arithmetic at draw time).

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex13_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: The family's numbers (``data/13_truncation_correction.json``): variant 0 and the positions.
_DATA = family_data("13_truncation_correction")
#: The lengths n a mass z can come with: every n in 3..8 with 1.5 <= z**-n <= 4 (the file's keys are
#: the masses as JSON must write them, text; ``float("0.84") == 0.84``).
POSITIONS = {float(z): lengths for z, lengths in _DATA["positions"].items()}

SEED = _DATA["seed"]


def _draw(d: Draw) -> dict:
    z = d.choice(sorted(POSITIONS))
    return {"z": z, "p": d.integer(100, 700) / 1000, "n": d.choice(POSITIONS[z])}


def _rows(parameters) -> list:
    return [("Z_S: base mass of the kept set", f"{parameters['z']:.2f}"),
            ("p: base probability of the sampled token", f"{parameters['p']:g}"),
            ("n: positions of the response (Part B)", str(parameters["n"]))]


FAMILY = Family("13_truncation_correction", SEED, _draw, _rows)
