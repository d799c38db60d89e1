"""Exercise 05's variants: a policy pi and a reference pi_ref over actions 0, 1, 2; the sampled action stays 1.

What varies: the six probabilities (steps of 0.05, each at least 0.1; each policy sums to 1).

What is held (the lesson): the sampled action is action 1 (the notebook's answer is named
``log_ratio_action_1``), and the reference favours it (pi(1) < pi_ref(1)), so its logged log-ratio is
negative; the reference favours action 2 too and the policy favours action 0, so two of the three
terms of the KL are negative while the sum is not; a plain mean of the three log-ratios is negative
(the task's cap counts it, with the average under the reference, as a negative KL).

The values a slip produces (the log-ratio flipped or in another base; the average under pi_ref, the
uniform average, the reversed KL, the sample as the KL, the KL in another base) are computed here
only to turn down a draw where two of them, or one and the right answer, lie within a relative 1e-3
of each other, so that the check can always tell them apart; nothing computed here is returned.
"""

import math

from course.variants import Draw, Family

#: How far apart (relative) the right answer and every slip of one answer must be.
SEPARATION = 1e-3


def _policy(d: Draw) -> tuple:
    first = d.grid(0.1, 0.8, 0.05)
    second = d.grid(0.1, round(0.9 - first, 2), 0.05)
    return (first, second, round(1.0 - first - second, 2))


def _apart(values) -> bool:
    values = list(values)
    return all(abs(a - b) > SEPARATION * max(abs(a), abs(b))
               for i, a in enumerate(values) for b in values[i + 1:])


def _keeps_lesson(pi, ref) -> bool:
    if not (pi[0] > ref[0] and pi[1] < ref[1] and pi[2] < ref[2]):
        return False
    logs = [math.log(p / r) for p, r in zip(pi, ref)]
    if not sum(logs) / 3 < 0:
        return False
    kl = sum(p * x for p, x in zip(pi, logs))
    under_ref = sum(r * x for r, x in zip(ref, logs))
    reversed_kl = -under_ref
    sample = logs[1]
    kl_family = [kl, under_ref, sum(logs) / 3, reversed_kl, sample, kl / math.log(2), kl / math.log(10)]
    sample_family = [sample, -sample, sample / math.log(2), sample / math.log(10)]
    return _apart(kl_family) and _apart(sample_family)


def _draw(d: Draw) -> dict:
    for _ in range(2000):
        pi, ref = _policy(d), _policy(d)
        if _keeps_lesson(pi, ref):
            return {"pi": pi, "pi_ref": ref, "sampled_action": 1}
    raise RuntimeError("05_negative_kl: no draw kept the lesson")  # never reached: about 1 in 12 does


def _rows(parameters) -> list:
    def listed(values):
        return ", ".join(f"{v:g}" for v in values)
    return [("pi (actions 0, 1, 2)", listed(parameters["pi"])),
            ("pi_ref (actions 0, 1, 2)", listed(parameters["pi_ref"])),
            ("sampled action", str(parameters["sampled_action"]))]


FAMILY = Family("05_negative_kl", {"pi": (0.5, 0.3, 0.2), "pi_ref": (0.3, 0.4, 0.3), "sampled_action": 1},
                _draw, _rows)
