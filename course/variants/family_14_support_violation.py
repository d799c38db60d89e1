"""Exercise 14's variants: a behaviour policy mu that never takes one of three actions, and a target pi.

What varies: which action mu never takes (1, 2 or 3), how mu splits its mass over the other two (one
decimal, each at least 0.1), and the target's three probabilities (steps of 0.05, each at least 0.05;
the one mu never takes between 0.1 and 0.4).

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex14_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family

#: The number of actions (numbered 1..ACTIONS in the notebook).
ACTIONS = 3


def _draw(d: Draw) -> dict:
    missing = d.integer(0, ACTIONS - 1)
    seen = [a for a in range(ACTIONS) if a != missing]
    first = d.grid(0.1, 0.9, 0.1)
    mu = [0.0] * ACTIONS
    mu[seen[0]], mu[seen[1]] = first, round(1.0 - first, 1)
    pi = [0.0] * ACTIONS
    pi[missing] = d.grid(0.1, 0.4, 0.05)
    rest = round(1.0 - pi[missing], 2)
    pi[seen[0]] = d.grid(0.05, round(rest - 0.05, 2), 0.05)
    pi[seen[1]] = round(rest - pi[seen[0]], 2)
    return {"mu": tuple(mu), "pi": tuple(pi)}


def _rows(parameters) -> list:
    def listed(values):
        return ", ".join(f"{v:g}" for v in values)
    return [("behaviour mu (actions 1, 2, 3)", listed(parameters["mu"])),
            ("target pi (actions 1, 2, 3)", listed(parameters["pi"]))]


FAMILY = Family("14_support_violation", {"mu": (0.7, 0.3, 0.0), "pi": (0.6, 0.2, 0.2)}, _draw, _rows)
