"""Exercise 11's variants: the two ratios at which k1, k2 and k3 are evaluated.

What varies: the ratio ``r`` above 1 (thousandths, 1.25 to 8, not 2); the second ratio is ``1/r``.
The answers keep the names ``k_at_2`` and ``k_at_half`` (the ratio above 1 and the one below 1).
No ``r`` is a ratio ``i/j`` of two whole numbers up to 19 (such as 1.25 = 5/4, 2.5 = 5/2): the KL
explorer shows k1, k2, k3 at ratios p/q of probabilities in steps of 0.05, which are exactly those,
so it cannot be set to a student's ratio.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex11_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

import math
from fractions import Fraction

from course.variants import Draw, Family, family_data


def _explorer_ratio(thousandths: int) -> bool:
    """Whether k/1000 is a ratio p/q the KL explorer can be set to: i/j with i and j up to 19 (p and q
    in steps of 0.05, inside (0, 1))."""
    common = math.gcd(thousandths, 1000)  # k/1000 in lowest terms: (k / common) / (1000 / common)
    return thousandths // common <= 19 and 1000 // common <= 19


#: Every ratio above 1 a student can get: 1.250, 1.251, ..., 8.000, without the example's 2 and the
#: explorer's ratios (6,710 of them, so that few students of a class share one).
RATIOS = tuple(k / 1000 for k in range(1250, 8001) if k != 2000 and not _explorer_ratio(k))


def _draw(d: Draw) -> dict:
    return {"r": d.choice(RATIOS)}


def _rows(parameters) -> list:
    r = parameters["r"]
    inverse = 1 / Fraction(str(r))
    # 1/2 is 0.5 exactly; 1/4.35 is only about 0.229885.
    value = f"= {float(inverse):g}" if 10 ** 6 % inverse.denominator == 0 else f"\u2248 {float(inverse):.6g}"
    return [("r, the ratio above 1 (k_at_2; numbers[\"r\"])", f"{r:g}"),
            ("1/r, the ratio below 1 (k_at_half)", f"1/{r:g} {value}")]


FAMILY = Family("11_k_estimators", family_data("11_k_estimators")["seed"], _draw, _rows)
