"""Exercise 14's variants: a behaviour policy mu that never takes one of three actions, and a target pi.

What varies: which action mu never takes (1, 2 or 3), how mu splits its mass over the other two
(hundredths, each at least 0.1), and the target's three probabilities (hundredths, the one mu never
takes between 0.1 and 0.4, the others at least 0.05). No probability of pi is a multiple of 0.05, so
the explorers (whose probabilities move in steps of 0.05) cannot be set to a student's policies, and
pi never equals mu on an action mu takes.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex14_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: The number of actions (numbered 1..ACTIONS in the notebook).
ACTIONS = 3


def _off_grid(hundredths: int) -> bool:
    """Not a multiple of 0.05 (the explorers' grid)."""
    return hundredths % 5 != 0


def _draw(d: Draw) -> dict:
    missing = d.integer(0, ACTIONS - 1)
    seen = [a for a in range(ACTIONS) if a != missing]
    while True:
        first = d.integer(10, 90)  # mu's split, in hundredths
        target = d.choice([k for k in range(10, 41) if _off_grid(k)])
        rest = 100 - target
        split = d.integer(5, rest - 5)
        mu = {seen[0]: first, seen[1]: 100 - first, missing: 0}
        pi = {seen[0]: split, seen[1]: rest - split, missing: target}
        if all(_off_grid(pi[a]) for a in range(ACTIONS)) and all(pi[a] != mu[a] for a in seen):
            break
    return {"mu": tuple(mu[a] / 100 for a in range(ACTIONS)), "pi": tuple(pi[a] / 100 for a in range(ACTIONS))}


def _rows(parameters) -> list:
    def listed(values):
        return ", ".join(f"{v:g}" for v in values)
    return [("behaviour mu (actions 1, 2, 3)", listed(parameters["mu"])),
            ("target pi (actions 1, 2, 3)", listed(parameters["pi"]))]


FAMILY = Family("14_support_violation", family_data("14_support_violation")["seed"], _draw, _rows)
