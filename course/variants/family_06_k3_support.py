"""Exercise 06's variants: the two counterexamples of Part B, with other masses.

What varies: in example 1, q = (1, 0) and p = (a, 1 - a), with a in 0.05..0.95 in steps of 0.01 but
never 0.5 (there E_q[p/q] = a would equal the missed mass 1 - a, and the check could not tell the two
apart); in example 2, q = (b, 1 - b) and p = (1, 0), with b in 0.05..0.95 in steps of 0.05.

What is held (the lesson): two points; in example 1 q never samples the point where p has mass
(p is not << q, and E_q[p/q] falls short of one by the missed mass), in example 2 q samples the
point where p is zero (q is not << p, and D_KL(q || p) is infinite for every b). Part A's conditions
are concepts and do not vary; so is example 2's answer (always infinite), so only example 1's number
differs between students.
"""

from course.variants import Draw, Family

#: Example 1's choices of a: two decimals, never one half.
_MASSES_1 = tuple(round(0.05 + 0.01 * k, 2) for k in range(91) if round(0.05 + 0.01 * k, 2) != 0.5)


def _draw(d: Draw) -> dict:
    a = d.choice(_MASSES_1)
    b = d.grid(0.05, 0.95, 0.05)
    return {"q1": (1.0, 0.0), "p1": (a, round(1.0 - a, 2)), "q2": (b, round(1.0 - b, 2)), "p2": (1.0, 0.0)}


def _rows(parameters) -> list:
    def pair(values):
        return "(" + ", ".join(f"{v:g}" for v in values) + ")"
    return [("example 1", f"q = {pair(parameters['q1'])}, p = {pair(parameters['p1'])}"),
            ("example 2", f"q = {pair(parameters['q2'])}, p = {pair(parameters['p2'])}")]


FAMILY = Family("06_k3_support", {"q1": (1.0, 0.0), "p1": (0.8, 0.2), "q2": (0.8, 0.2), "p2": (1.0, 0.0)},
                _draw, _rows)
