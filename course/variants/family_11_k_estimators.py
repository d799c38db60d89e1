"""Exercise 11's variants: the two ratios at which k1, k2 and k3 are evaluated.

What varies: the ratio ``r`` above 1 (two decimals, 1.25 to 6, never the seed's 2). What is held: the
second ratio is its reciprocal ``1/r``, as the seed's 1/2 is of 2, so that the lesson reads the same
for everyone: log r and log(1/r) are one number with two signs, so k1 changes sign and k2 does not
move, while k3 stays positive at both ratios with two different values (k3 is not symmetric in r and
1/r). The answers' names ``k_at_2`` and ``k_at_half`` stay the seed's (the ratio above 1 and the ratio
below 1).
"""

from fractions import Fraction

from course.variants import Draw, Family

#: Every ratio above 1 a student can get: 1.25, 1.30, ..., 6.00, without the seed's 2.
RATIOS = tuple(r for r in (round(1.25 + 0.05 * i, 2) for i in range(96)) if r != 2.0)


def _draw(d: Draw) -> dict:
    return {"r": d.choice(RATIOS)}


def _rows(parameters) -> list:
    r = parameters["r"]
    inverse = 1 / Fraction(str(r))
    # 1/2 is 0.5 exactly; 1/4.35 is only about 0.229885.
    value = f"= {float(inverse):g}" if 10 ** 6 % inverse.denominator == 0 else f"\u2248 {float(inverse):.6g}"
    return [("r, the ratio above 1 (k_at_2; numbers[\"r\"])", f"{r:g}"),
            ("1/r, the ratio below 1 (k_at_half)", f"1/{r:g} {value}")]


FAMILY = Family("11_k_estimators", {"r": 2.0}, _draw, _rows)
