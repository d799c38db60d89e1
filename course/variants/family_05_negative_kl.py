"""Exercise 05's variants: a policy pi and a reference pi_ref over actions 0, 1, 2; the sampled action stays 1.

What varies: the six probabilities (hundredths, each at least 0.1; each policy sums to 1). A variant is
one of :data:`CANDIDATES`, 8,000 pairs stored in ``data/05_negative_kl.json`` with variant 0
(:func:`course.variants.family_data` reads it), made once on the instructor's side
(``autograder/exercises/05_negative_kl/lesson.py``) and checked there again by every test run (so this
package computes nothing of the exercise). No pair has all six probabilities on the explorers' grid of
0.05, nor pi(1)/pi_ref(1) a ratio the KL explorer shows, so no explorer can be set to a student's pair.

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex05_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: The family's numbers (``data/05_negative_kl.json``): variant 0, and every pair a student can get,
#: eight digits each: pi(0), pi(1), pi_ref(0), pi_ref(1) in hundredths (the third probability of each
#: is the rest of 1).
_DATA = family_data("05_negative_kl")


def _decode(code: str) -> tuple:
    pi0, pi1, ref0, ref1 = (int(code[i:i + 2]) for i in range(0, 8, 2))
    return ((pi0 / 100, pi1 / 100, (100 - pi0 - pi1) / 100), (ref0 / 100, ref1 / 100, (100 - ref0 - ref1) / 100))


#: (pi, pi_ref) of every variant a student can get (action 1 is the sampled one).
CANDIDATES = tuple(_decode(code) for code in _DATA["pairs"])


def _draw(d: Draw) -> dict:
    pi, ref = d.choice(CANDIDATES)
    return {"pi": tuple(float(p) for p in pi), "pi_ref": tuple(float(r) for r in ref), "sampled_action": 1}


def _rows(parameters) -> list:
    def listed(values):
        return ", ".join(f"{v:g}" for v in values)
    return [("pi (actions 0, 1, 2)", listed(parameters["pi"])),
            ("pi_ref (actions 0, 1, 2)", listed(parameters["pi_ref"])),
            ("sampled action", str(parameters["sampled_action"]))]


FAMILY = Family("05_negative_kl", _DATA["seed"], _draw, _rows)
