"""Which policies exercise 05's family may draw, and how its table was made.

The student package's family (``course.variants.family_05_negative_kl``)
draws from a table (``course/variants/data/05_negative_kl.json``) of
(pi, pi_ref) pairs in hundredths; this module is where the table comes from (:func:`candidates`), and
the tests check every entry with ``check.lesson_holds`` and the explorers' grid. It lives on the
instructor's side because deciding which pairs keep the lesson computes the exercise's answers.

The table: pairs drawn from a seeded ``random.Random`` (here only, on the instructor's side: the
student package draws with :class:`course.variants.Draw`), every probability at least 0.10, kept when
``lesson_holds`` (the reference favours the sampled action 1 and action 2, two negative KL terms in a
positive KL, both wrong averages negative, the uniform one exactly so, every slip apart) and no
explorer can be set to them: not
every probability on the explorers' 0.05 grid (the KL explorer's exact KL needs all six), and
pi(1)/pi_ref(1) not a ratio i/j of whole numbers up to 19 (the KL explorer's k1 at a ratio it shows).
Sorted, 8,000 of them.
"""

from __future__ import annotations

import importlib
import random
from fractions import Fraction

#: How many pairs the table holds.
SIZE = 8000
#: The generator's seed (the table is what it gives; change both together).
SEED = 20260505
#: The example (variant 0), never in the table.
EXAMPLE = ((50, 30, 20), (30, 40, 30))


def off_the_explorers_grid(pi: tuple, ref: tuple) -> bool:
    """Whether no explorer can be set to the pair (hundredths): see the module text."""
    if all(v % 5 == 0 for v in pi + ref):
        return False
    ratio = Fraction(pi[1], ref[1])
    return not (ratio.numerator <= 19 and ratio.denominator <= 19)


def parameters(pi: tuple, ref: tuple) -> dict:
    return {"pi": tuple(v / 100 for v in pi), "pi_ref": tuple(v / 100 for v in ref), "sampled_action": 1}


def _draws(rng: random.Random):
    while True:
        pi0 = rng.randint(10, 80)
        pi1 = rng.randint(10, 90 - pi0)
        ref0 = rng.randint(10, 80)
        ref1 = rng.randint(10, 90 - ref0)
        yield (pi0, pi1, 100 - pi0 - pi1), (ref0, ref1, 100 - ref0 - ref1)


def candidates(size: int = SIZE) -> list:
    """The first ``size`` distinct pairs of the seeded draws that keep the lesson, sorted."""
    check = importlib.import_module("autograder.exercises.05_negative_kl.check")
    kept, seen = [], set()
    for pi, ref in _draws(random.Random(SEED)):
        if len(kept) == size:
            break
        if min(pi + ref) < 10 or (pi, ref) in seen or (pi, ref) == EXAMPLE:
            continue
        seen.add((pi, ref))
        if not (pi[0] > ref[0] and pi[1] < ref[1] and pi[2] < ref[2]) or not off_the_explorers_grid(pi, ref):
            continue
        # The uniform average of the log-ratios is negative exactly (not by a float's rounding of 0, as
        # for pi a permutation of pi_ref): the product of pi below that of pi_ref, in integers.
        if not pi[0] * pi[1] * pi[2] < ref[0] * ref[1] * ref[2]:
            continue
        if check.lesson_holds(parameters(pi, ref)):
            kept.append((pi, ref))
    return sorted(kept)


def codes(pairs) -> str:
    """The family's encoding: pi(0), pi(1), pi_ref(0), pi_ref(1) in hundredths, two digits each."""
    return "".join(f"{pi[0]:02d}{pi[1]:02d}{ref[0]:02d}{ref[1]:02d}" for pi, ref in pairs)
