"""Answer key for exercise 05: one sampled log-ratio can be negative, exact KL cannot.

The numbers come from ``autograder.reference``: the sampled log-ratio is the k1 value of the sampled action
(samples from the policy), the exact KL is ``kl_divergence(policy, reference)``.
"""

import numpy as np

from autograder.reference import kl_divergence, kl_sample_values

#: The notebook's two policies over actions 0, 1, 2 and the sampled action (public).
PI = (0.5, 0.3, 0.2)
PI_REF = (0.3, 0.4, 0.3)
SAMPLED_ACTION = 1

EXACT_KL_CAN_BE_NEGATIVE = False
SAMPLED_LOG_RATIO_CAN_BE_NEGATIVE = True

#: Which distribution the average of log(pi/pi_ref) must be taken under (options are public).
AVERAGE_OPTIONS = ("pi", "pi_ref", "uniform")
AVERAGE_UNDER = "pi"

_LOG_PI, _LOG_REF = np.log(PI), np.log(PI_REF)
#: log pi(a) - log pi_ref(a) for the sampled action: k1 of a sample drawn from pi.
LOG_RATIO = float(kl_sample_values(_LOG_PI[[SAMPLED_ACTION]], _LOG_REF[[SAMPLED_ACTION]])["k1"][0])
#: D_KL(pi || pi_ref).
EXACT_KL = float(kl_divergence(PI, PI_REF))

#: What the classic mistakes produce instead.
AVERAGE_UNDER_REFERENCE = float(-kl_divergence(PI_REF, PI))       # E_{pi_ref}[log pi - log pi_ref]
UNIFORM_AVERAGE = float(np.mean(_LOG_PI - _LOG_REF))
REVERSED_KL = float(kl_divergence(PI_REF, PI))

#: Logarithm bases other than e that a student might use (both numbers are asked in nats).
OTHER_LOG_BASES = (2.0, 10.0)

if not LOG_RATIO < 0 < EXACT_KL:
    raise RuntimeError("the example must have a negative sampled log-ratio and a positive KL")
if not max(AVERAGE_UNDER_REFERENCE, UNIFORM_AVERAGE) < 0:
    raise RuntimeError("the wrong averages must be negative here: the task's cap counts them as a negative KL")
