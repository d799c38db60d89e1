"""Exercise 12's variants: four sorted base probabilities of token ids 0..3.

What varies: the distribution ``p = (p0, p1, p2, p3)`` (strictly decreasing, multiples of 0.0005,
summing to 1), one of a stored table of 16,011. Held: the thresholds 0.80 (Part A) and 0.81 (Part B),
which the answers' names carry. The table is stored, not floats tested at draw time: NumPy's SIMD
``log`` and ``exp`` may round differently on another processor, and a student's machine and the
grader must draw the same numbers. Variant 0 is never drawn, nor a distribution whose p0 or p2 is a
multiple of 0.05 (the explorers' grid).

The table is a bitmap over the grid's points, in the order of :func:`_grid` (one bit per point, 1 =
in the table), packed most significant bit first and base64-encoded, stored in ``data/12_top_p_nucleus.json`` with
variant 0 (:func:`course.variants.family_data` reads it); the instructor side computes it
(``autograder/exercises/12_top_p_nucleus/lesson.py``) and a test checks it is exactly that. What each
draw keeps of the lesson, and which slips it keeps apart from the answer, is the instructor's to state:
it is tested in ``tests/test_variants_ex12_*.py`` and described in ``docs/DESIGN.md``. This file holds
parameters only.
"""

import base64
import functools

from course.variants import Draw, Family, family_data

#: The grid's denominator: probabilities are multiples of 1/_GRID.
_GRID = 2000

#: Top-p thresholds per answer suffix (held, not drawn: the answer names carry them).
THRESHOLDS = {"080": 0.80, "081": 0.81}

#: The family's numbers (``data/12_top_p_nucleus.json``): variant 0, and the table, one bit per point
#: of :func:`_grid` (whether a student can draw it).
_DATA = family_data("12_top_p_nucleus")
SEED = _DATA["seed"]


def _grid() -> list:
    """Every ``(a, c)`` with p = (a, 1600 - a, c, 400 - c) / 2000 strictly decreasing, the third token
    reaching 0.81, and the top pair not the example's, in the table's order (integers only)."""
    # a > 1600 - a > c > 400 - c > 0: a from 801, c from 201 and below 1600 - a (and 400).
    return [(a, c) for a in range(801, 1600) for c in range(201, min(400, 1600 - a))
            if (a, 1600 - a) != (1000, 600)]


@functools.lru_cache(maxsize=1)
def distributions() -> tuple:
    """The distributions a student can draw (see the module's docstring for how they were chosen);
    decoded on first use, so that importing the families costs nothing for the other notebooks."""
    packed = base64.b64decode(_DATA["table"])
    return tuple((a / _GRID, (1600 - a) / _GRID, c / _GRID, (400 - c) / _GRID)
                 for i, (a, c) in enumerate(_grid()) if packed[i // 8] & (0x80 >> (i % 8)))


def __getattr__(name):
    if name == "DISTRIBUTIONS":  # the table, as a module attribute (decoded once, when first asked for)
        return distributions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _draw(d: Draw) -> dict:
    return {"p": tuple(d.choice(distributions()))}


def _decimal(value: float) -> str:
    """A probability as the task writes it: at least two decimals, four where the grid needs them."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" * max(0, 2 - len(text.split(".")[1]))


def _rows(parameters) -> list:
    return [("p: base probabilities of token ids 0, 1, 2, 3 (sorted)", ", ".join(_decimal(x) for x in parameters["p"])),
            ("top_p of Part A, of Part B", ", ".join(f"{t:.2f}" for t in THRESHOLDS.values()))]


FAMILY = Family("12_top_p_nucleus", SEED, _draw, _rows)
