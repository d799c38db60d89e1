"""Which engine settings exercise 07's family may draw, and how its table was made.

The student package's family (``course.variants.family_07_behaviour_policy``)
draws from a table (``course/variants/data/07_behaviour_policy.json``)
of (logits, temperature, banned token, top-p); this module is where the table comes from
(:func:`candidates`), and the tests check its entries with ``check.lesson_holds``. It lives on the
instructor's side because deciding which settings keep the lesson computes the exercise's answers.

The grid: five distinct logits in tenths from -1.0 to 2.5, a temperature in hundredths from 0.51 to
0.89 that is not a multiple of 0.05 (the truncation explorer's temperatures are: with the student's
settings and a preset's logits, a nucleus of the same logit gaps would give the same behaviour
log-probability), a banned token other than the sampled token 1, and a top-p threshold in hundredths
from 0.60 to 0.95. Settings are drawn from a seeded ``random.Random`` (here only: the student package draws with
:class:`course.variants.Draw`), screened by :func:`threshold_token` (cheap, plain floats: token 1 is
where top-p's running sum crosses the threshold, by 0.02 either side) and kept when ``lesson_holds``
(the same and every slip apart; 5 ms a setting, hence the screen). Sorted, :data:`SIZE` of them. The
truncation explorer takes no logits, so no explorer can be set to them.
"""

from __future__ import annotations

import importlib
import math
import random

#: How many settings the table holds.
SIZE = 8000
#: The generator's seed (the table is what it gives; change both together).
SEED = 20260508
#: The grids, in the order the family encodes them (one character per field: the index in its grid).
LOGITS = tuple(v / 10 for v in range(-10, 26))
TEMPERATURES = tuple(v / 100 for v in range(50, 91) if v % 5 != 0)
BANNED = (0, 2, 3, 4)
TOP_P = tuple(v / 100 for v in range(60, 96))
#: The characters of the encoding (an index into a grid of at most 62 values).
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parameters(candidate) -> dict:
    logits, temperature, banned, top_p = candidate
    return {"logits": tuple(float(v) for v in logits), "temperature": float(temperature),
            "banned": (int(banned),), "top_p": float(top_p), "token": 1}


def _nucleus_size(logits, temperature, banned, top_p) -> tuple:
    """``(size of the top-p nucleus, its running sum before its last token, the last token's share)``
    after temperature and the ban, in plain floats."""
    allowed = [i for i in range(5) if i != banned]
    scaled = {i: logits[i] / temperature for i in allowed}
    top = max(scaled.values())
    weights = {i: math.exp(v - top) for i, v in scaled.items()}
    total = sum(weights.values())
    running = 0.0
    for size, i in enumerate(sorted(allowed, key=lambda i: (-logits[i], i)), 1):
        if running + weights[i] / total >= top_p:
            return size, running, weights[i] / total
        running += weights[i] / total
    return len(allowed), running, 0.0


def threshold_token(candidate) -> bool:
    """The screen: token 1 is where the running sum of the tempered, ban-renormalised probabilities
    (most likely first) crosses top-p, with 0.02 to spare on either side, top-p drops a token, the ban
    removes a token ranked above token 1 (else forgetting it changes nothing), and the nucleus without
    temperature has another size (else applying temperature last changes nothing): the slips
    ``lesson_holds`` keeps apart, screened cheaply."""
    logits, temperature, banned, top_p = candidate
    allowed = [i for i in range(5) if i != banned]
    ranked = sorted(allowed, key=lambda i: (-logits[i], i))
    position = ranked.index(1)
    size, before, share = _nucleus_size(logits, temperature, banned, top_p)
    if size != position + 1 or size == len(allowed) or logits[banned] < logits[1]:
        return False
    if not (before <= top_p - 0.02 and before + share >= top_p + 0.02):
        return False
    return _nucleus_size(logits, 1.0, banned, top_p)[0] != size


def _draws(rng: random.Random):
    while True:
        logits = tuple(rng.sample(LOGITS, 5))
        yield logits, rng.choice(TEMPERATURES), rng.choice(BANNED), rng.choice(TOP_P)


def candidates(size: int = SIZE) -> list:
    """The first ``size`` distinct settings of the seeded draws that keep the lesson, sorted."""
    check = importlib.import_module("autograder.exercises.07_behaviour_policy.check")
    kept, seen = [], set()
    for candidate in _draws(random.Random(SEED)):
        if len(kept) == size:
            break
        if candidate in seen:
            continue
        seen.add(candidate)
        if threshold_token(candidate) and check.lesson_holds(parameters(candidate)):
            kept.append(candidate)
    return sorted(kept)


def codes(table) -> str:
    """The family's encoding: eight characters a setting (five logits, temperature, ban, top-p)."""
    return "".join("".join(DIGITS[LOGITS.index(v)] for v in logits) + DIGITS[TEMPERATURES.index(temperature)]
                   + DIGITS[BANNED.index(banned)] + DIGITS[TOP_P.index(top_p)]
                   for logits, temperature, banned, top_p in table)
