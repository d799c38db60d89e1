"""Answer key for exercise 05: one sampled log-ratio can be negative, exact KL cannot.

The numbers come from ``autograder.reference``: the sampled log-ratio is the k1 value of the sampled action
(samples from the policy), the exact KL is ``kl_divergence(policy, reference)``. The policies vary per
student (``course.variants.family_05_negative_kl``): :func:`values` and :func:`answers` compute any
variant's key; the module constants are variant 0's (the seed's).
"""

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np

from autograder.reference import kl_divergence, kl_sample_values
from course.variants.family_05_negative_kl import FAMILY

EXACT_KL_CAN_BE_NEGATIVE = False
SAMPLED_LOG_RATIO_CAN_BE_NEGATIVE = True

#: Which distribution the average of log(pi/pi_ref) must be taken under (options are public).
AVERAGE_OPTIONS = ("pi", "pi_ref", "uniform")
AVERAGE_UNDER = "pi"

#: Logarithm bases other than e that a student might use (both numbers are asked in nats).
OTHER_LOG_BASES = (2.0, 10.0)


@dataclasses.dataclass(frozen=True)
class Values:
    """One variant's numbers: the two answers and what the classic mistakes produce instead."""

    log_ratio: float             # log pi(a) - log pi_ref(a) for the sampled action: k1 of a sample from pi
    exact_kl: float              # D_KL(pi || pi_ref)
    average_under_reference: float  # E_{pi_ref}[log pi - log pi_ref] = -D_KL(pi_ref || pi)
    uniform_average: float       # a plain mean of the three log-ratios
    reversed_kl: float           # D_KL(pi_ref || pi)


def values(parameters) -> Values:
    """The numbers of one variant's ``parameters`` (``pi``, ``pi_ref``, ``sampled_action``)."""
    return _values(tuple(float(p) for p in parameters["pi"]), tuple(float(r) for r in parameters["pi_ref"]),
                   int(parameters["sampled_action"]))


@functools.lru_cache(maxsize=64)  # the key, the check's slips and the worked text of one variant share it
def _values(pi: tuple, ref: tuple, action: int) -> Values:
    log_pi, log_ref = np.log(pi), np.log(ref)
    found = Values(
        log_ratio=float(kl_sample_values(log_pi[[action]], log_ref[[action]])["k1"][0]),
        exact_kl=float(kl_divergence(pi, ref)),
        average_under_reference=float(-kl_divergence(ref, pi)),
        uniform_average=float(np.mean(log_pi - log_ref)),
        reversed_kl=float(kl_divergence(ref, pi)))
    return found


def answers(parameters) -> dict:
    """The answers of one variant, keyed by the names the notebook's answer cell assigns."""
    found = values(parameters)
    return {"exact_kl_can_be_negative": EXACT_KL_CAN_BE_NEGATIVE,
            "sampled_log_ratio_can_be_negative": SAMPLED_LOG_RATIO_CAN_BE_NEGATIVE,
            "average_under": AVERAGE_UNDER,
            "log_ratio_action_1": found.log_ratio,
            "exact_kl": found.exact_kl}


#: Variant 0: the two policies over actions 0, 1, 2 and the sampled action (public).
PI = tuple(FAMILY.seed["pi"])
PI_REF = tuple(FAMILY.seed["pi_ref"])
SAMPLED_ACTION = int(FAMILY.seed["sampled_action"])

_VALUES = values(FAMILY.seed)
if not _VALUES.log_ratio < 0 < _VALUES.exact_kl:
    raise RuntimeError("the example must have a negative sampled log-ratio and a positive KL")
if not max(_VALUES.average_under_reference, _VALUES.uniform_average) < 0:
    raise RuntimeError("the wrong averages must be negative here: the task's cap counts them as a negative KL")
#: Variant 0: log pi(a) - log pi_ref(a) for the sampled action, and D_KL(pi || pi_ref).
LOG_RATIO = _VALUES.log_ratio
EXACT_KL = _VALUES.exact_kl
#: Variant 0: what the classic mistakes produce instead.
AVERAGE_UNDER_REFERENCE = _VALUES.average_under_reference
UNIFORM_AVERAGE = _VALUES.uniform_average
REVERSED_KL = _VALUES.reversed_kl


def _g(value: float) -> str:
    return f"{value:g}"


def _fraction(p: float, r: float) -> str:
    ratio = Fraction(str(p)) / Fraction(str(r))
    return f"{ratio.numerator}/{ratio.denominator}"


def worked(parameters) -> dict:
    """The numbers ``solution.md`` and ``rubric.md`` quote, as text, for one variant."""
    pi, ref = tuple(parameters["pi"]), tuple(parameters["pi_ref"])
    action = int(parameters["sampled_action"])
    found = values(parameters)
    ratio = Fraction(str(pi[action])) / Fraction(str(ref[action]))
    # a ratio with a short decimal is written as one (log 0.75), any other as a fraction (log(2/3))
    short = ratio.denominator in (1, 2, 4, 5, 8, 10, 16, 20, 25, 40, 50, 100)
    ratio_text = f"\\log {_g(float(ratio))}" if short else f"\\log({ratio.numerator}/{ratio.denominator})"
    out = {
        "pi_sampled": _g(pi[action]), "ref_sampled": _g(ref[action]),
        "log_ratio_expression": f"\\log {_g(pi[action])} - \\log {_g(ref[action])} = {ratio_text}",
        "log_ratio": f"{found.log_ratio:.6f}", "log_ratio_3": f"{found.log_ratio:.3f}",
        "exact_kl": f"{found.exact_kl:.6f}", "exact_kl_3": f"{found.exact_kl:.3f}",
        "exact_kl_4": f"{found.exact_kl:.4f}",
    }
    for a in range(len(pi)):
        log_ratio = math.log(pi[a] / ref[a])
        out[f"pi_{a}"] = _g(pi[a])
        out[f"ratio_{a}"] = f"\\log({_fraction(pi[a], ref[a])}) \\approx {log_ratio:.6f}"
        out[f"term_{a}"] = f"{pi[a] * log_ratio:.6f}"
    return out
