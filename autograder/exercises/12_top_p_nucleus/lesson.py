"""Which distributions exercise 12's family may draw: the two most likely tokens reach 0.80 exactly, and
an engine's float64 softmax running sum stops exactly one ulp short of it.

The student package's family (``course.variants.family_12_top_p_nucleus``)
draws from a table (``course/variants/data/12_top_p_nucleus.json``)
(a bitmap over the grid); this module is where the table comes from (:func:`admissible`,
:func:`table_bits`), and the tests check that the table is exactly what it computes. It lives on the
instructor's side because it computes what the exercise's lesson rests on (softmax running sums).

The grid: probabilities in steps of 1/2000 (0.0005), p0 + p1 = 0.80 and p2 + p3 = 0.20, strictly
decreasing, 0.81 reached by the third token; the explorers' grid of 0.05 is left out (p0 and p2 not a
multiple of 0.05: an explorer cannot be set to a student's distribution), and so is the seed's top pair.
A point is admissible when, with NumPy's float64 ``log``/``exp`` (as an engine computes a softmax of
``log p``), with libm's, and with correctly rounded ones (mpmath), the descending running sum at the
second token is exactly one ulp below 0.80, the third token takes it past 0.81, and transformers'
ascending rule keeps three tokens. No point of the grid keeps the one-ulp result under every rounding
of log and exp within an ulp (a single ulp moved anywhere changes it), so the table is what these three
implementations agree on; another processor's NumPy may round an exp differently, which the
per-distribution test would show.
"""

from __future__ import annotations

import base64
import math

import mpmath
import numpy as np

#: The grid's denominator: probabilities are multiples of 1/GRID.
GRID = 2000
#: The seed's distribution (variant 0).
SEED = (0.50, 0.30, 0.15, 0.05)
ONE_ULP_SHORT = float(np.nextafter(0.80, 0.0))


def grid_points() -> list:
    """Every ``(a, c)`` of the grid in the family's order: p = (a, 1600 - a, c, 400 - c) / 2000,
    strictly decreasing, reaching 0.81 with the third token, the top pair not the seed's."""
    points = []
    for a in range(1, 1600):
        for c in range(1, 400):
            p0, p1, p2, p3 = a, 1600 - a, c, 400 - c
            if p0 > p1 > p2 > p3 > 0 and p0 + p1 + p2 >= 1620 and (p0, p1) != (1000, 600):
                points.append((a, c))
    return points


def distribution(point) -> tuple:
    a, c = point
    return (a / GRID, (1600 - a) / GRID, c / GRID, (400 - c) / GRID)


def engine_numpy(p) -> np.ndarray:
    z = np.log(np.asarray(p, dtype=np.float64))
    e = np.exp(z - z.max())
    return e / e.sum()


def engine_libm(p) -> list:
    z = [math.log(x) for x in p]
    e = [math.exp(v - max(z)) for v in z]
    total = 0.0
    for v in e:
        total += v
    return [v / total for v in e]


def engine_correctly_rounded(p) -> list:
    """The same float64 steps with log and exp correctly rounded (mpmath at 200 bits, then rounded)."""
    with mpmath.workprec(200):
        z = [float(mpmath.log(mpmath.mpf(x))) for x in p]
        e = [float(mpmath.exp(mpmath.mpf(v - max(z)))) for v in z]
    total = 0.0
    for v in e:
        total += v
    return [v / total for v in e]


def _running(values) -> list:
    out, total = [], 0.0
    for v in values:
        total += v
        out.append(total)
    return out


def _keeps(running) -> bool:
    return running[1] == ONE_ULP_SHORT and running[0] < 0.80 and running[1] < 0.81 < running[2]


def admissible(point) -> bool:
    """Whether the grid point keeps the lesson in all three implementations (see the module text)."""
    a, c = point
    if a % 100 == 0 or c % 100 == 0:  # p0 or p2 a multiple of 0.05: the explorers' grid
        return False
    p = distribution(point)
    numpy_probabilities = engine_numpy(p)
    if not _keeps(_running(numpy_probabilities.tolist())) or not _keeps(_running(engine_libm(p))):
        return False
    if int(np.count_nonzero(np.cumsum(np.sort(numpy_probabilities)) > 1 - 0.80)) != 3:
        return False
    return _keeps(_running(engine_correctly_rounded(p)))


def table_bits() -> str:
    """The family's table: one bit per grid point (1 = admissible), in :func:`grid_points` order, packed
    most significant bit first and base64-encoded."""
    bits = [admissible(point) for point in grid_points()]
    packed = bytearray((len(bits) + 7) // 8)
    for i, bit in enumerate(bits):
        if bit:
            packed[i // 8] |= 0x80 >> (i % 8)
    return base64.b64encode(bytes(packed)).decode("ascii")
