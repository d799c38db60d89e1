"""Answer key for exercise 10: the KL chain rule on a depth-two tree of two actions per step."""

import numpy as np

from autograder.reference import kl_chain_rule

#: First-step distributions p_0 and q_0 over actions 0 and 1.
FIRST_P = (0.6, 0.4)
FIRST_Q = (0.5, 0.5)
#: Second-step conditionals, ``COND_P[a1][a2] = p(a2 | a1)``.
COND_P = ((0.7, 0.3), (0.2, 0.8))
COND_Q = ((0.4, 0.6), (0.5, 0.5))

_CHAIN = kl_chain_rule(FIRST_P, FIRST_Q, COND_P, COND_Q)

#: Joint tables ``JOINT_P[a1, a2] = p_0(a1) p(a2 | a1)`` (row = first action).
JOINT_P = np.asarray(FIRST_P, dtype=np.float64)[:, None] * np.asarray(COND_P, dtype=np.float64)
JOINT_Q = np.asarray(FIRST_Q, dtype=np.float64)[:, None] * np.asarray(COND_Q, dtype=np.float64)

#: Answers in nats, keyed by the names the notebook asks for.
ANSWERS = {
    "root_kl": float(_CHAIN.root),
    "conditional_kls": np.asarray(_CHAIN.conditional, dtype=np.float64),
    "expected_conditional_kl": float(_CHAIN.expected_conditional),
    "total_kl": float(_CHAIN.total),
    "joint_p": JOINT_P,
    "joint_q": JOINT_Q,
    "joint_kl": float(_CHAIN.joint),
}
