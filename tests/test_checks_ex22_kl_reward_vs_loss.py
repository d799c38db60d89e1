"""The hidden checks of exercise 22 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests

STEM = "22_kl_reward_vs_loss"

HEAD = """
import numpy as np

def _logs(theta, ref_logits):
    a = np.asarray(theta, dtype=np.float64)
    b = np.asarray(ref_logits, dtype=np.float64)
    if a.ndim == 0 or a.shape != b.shape or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("theta and ref_logits: finite, one shape")
    out = []
    for z in (a, b):
        s = z - z.max(axis=-1, keepdims=True)
        out.append(s - np.log(np.exp(s).sum(axis=-1, keepdims=True)))
    return out

def _score(q, w):
    return q * (w - (q * w).sum(axis=-1, keepdims=True))
"""


def answer(reverse="_score(q, lq - lp)", forward="q - p",
           loss=("np.zeros_like(q)", "_score(q, lq - lp)", "q - p"),
           reward=("_score(q, lq - lp)", "_score(q, 0.5 * (lp - lq)**2)", "_score(q, np.expm1(lp - lq) - (lp - lq))")):
    return HEAD + f"""
def true_kl_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q, p = np.exp(lq), np.exp(lp)
    return {{"reverse": {reverse}, "forward": {forward}}}

def loss_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q, p = np.exp(lq), np.exp(lp)
    return {{"k1": {loss[0]}, "k2": {loss[1]}, "k3": {loss[2]}}}

def reward_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q, p = np.exp(lq), np.exp(lp)
    return {{"k1": {reward[0]}, "k2": {reward[1]}, "k3": {reward[2]}}}
"""


RIGHT_LOSS = ("np.zeros_like(q)", "_score(q, lq - lp)", "q - p")
RIGHT_REWARD = ("_score(q, lq - lp)", "_score(q, 0.5 * (lp - lq)**2)", "_score(q, np.expm1(lp - lq) - (lp - lq))")

CORRECT = {
    "closed_forms": answer(),
    "generic_score_formula": answer(loss=("_score(q, np.ones_like(q))", "_score(q, -(lp - lq))", "_score(q, -np.expm1(lp - lq))")),
    "jacobian_matrix": HEAD + """
def _jac_apply(q, w):
    # sum_x q_x w_x (e_x - q), written with the softmax Jacobian diag(q) - q q^T
    out = np.empty_like(q)
    for idx in np.ndindex(q.shape[:-1]):
        qi = q[idx]
        jac = np.diag(qi) - np.outer(qi, qi)
        out[idx] = jac @ w[idx]
    return out

def true_kl_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q, p = np.exp(lq), np.exp(lp)
    return {"reverse": _jac_apply(q, lq - lp), "forward": q - p}

def loss_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q = np.exp(lq)
    lr = lp - lq
    return {"k1": _jac_apply(q, np.ones_like(q)), "k2": _jac_apply(q, -lr), "k3": _jac_apply(q, 1 - np.exp(lr))}

def reward_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q = np.exp(lq)
    lr = lp - lq
    return {"k1": _jac_apply(q, -lr), "k2": _jac_apply(q, lr**2 / 2), "k3": _jac_apply(q, np.exp(lr) - 1 - lr)}
""",
}

WRONG = {
    "directions_swapped": (answer(reverse="q - p", forward="_score(q, lq - lp)"), "kl-directions-swapped"),
    "forward_sign": (answer(forward="p - q"), "gradient-sign"),
    "reverse_not_centred": (answer(reverse="q * (lq - lp)"), "softmax-jacobian"),
    "k3_loss_is_reverse": (answer(loss=(RIGHT_LOSS[0], RIGHT_LOSS[1], "_score(q, lq - lp)")),
                           "estimator-gradient-is-kl-gradient"),
    "k1_loss_is_reverse": (answer(loss=("_score(q, lq - lp)", RIGHT_LOSS[1], RIGHT_LOSS[2])),
                           "estimator-gradient-is-kl-gradient"),
    "loss_and_reward_swapped": (answer(loss=RIGHT_REWARD, reward=RIGHT_LOSS), "loss-reward-swapped"),
    "reward_not_centred": (answer(reward=("q * (lq - lp)", "q * 0.5 * (lp - lq)**2", RIGHT_REWARD[2])),
                           "softmax-jacobian"),
    "no_input_checks": ("""
import numpy as np

def _ls(z):
    z = np.atleast_1d(np.asarray(z, dtype=float))
    s = z - np.nanmax(z, axis=-1, keepdims=True)
    return s - np.log(np.nansum(np.exp(s), axis=-1, keepdims=True))

def _pair(theta, ref_logits):
    a, b = _ls(theta), _ls(ref_logits)
    n = min(a.shape[-1], b.shape[-1])
    return np.nan_to_num(a[..., :n]), np.nan_to_num(b[..., :n])

def _score(q, w):
    return q * (w - (q * w).sum(axis=-1, keepdims=True))

def true_kl_gradients(theta, ref_logits):
    lq, lp = _pair(theta, ref_logits)
    return {"reverse": _score(np.exp(lq), lq - lp), "forward": np.exp(lq) - np.exp(lp)}

def loss_gradients(theta, ref_logits):
    lq, lp = _pair(theta, ref_logits)
    q = np.exp(lq)
    return {"k1": 0 * q, "k2": _score(q, lq - lp), "k3": q - np.exp(lp)}

def reward_gradients(theta, ref_logits):
    lq, lp = _pair(theta, ref_logits)
    q, lr = np.exp(lq), lp - lq
    return {"k1": _score(q, -lr), "k2": _score(q, lr**2 / 2), "k3": _score(q, np.expm1(lr) - lr)}
""", "silent-bad-input"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(3)
def true_kl_gradients(theta, ref_logits): return {"reverse": Anything(), "forward": Anything()}
def loss_gradients(theta, ref_logits): return {"k1": Anything(), "k2": Anything(), "k3": Anything()}
def reward_gradients(theta, ref_logits): return {"k1": Anything(), "k2": Anything(), "k3": Anything()}
""", ("public", "true_kl", "loss", "reward")),
    "returns_the_logits": ("""
import numpy as np
def true_kl_gradients(theta, ref_logits):
    t = np.asarray(theta, dtype=float)
    return {"reverse": t, "forward": t}
def loss_gradients(theta, ref_logits):
    t = np.asarray(theta, dtype=float)
    return {"k1": t, "k2": t, "k3": t}
def reward_gradients(theta, ref_logits):
    t = np.asarray(theta, dtype=float)
    return {"k1": t, "k2": t, "k3": t}
""", ("public", "true_kl", "loss", "reward")),
    "dict_subclass": ("""
import numpy as np
class Sneaky(dict):
    def __getitem__(self, key): return np.zeros(3)
    def __eq__(self, other): return True
def true_kl_gradients(theta, ref_logits): return Sneaky(reverse=None, forward=None)
def loss_gradients(theta, ref_logits): return Sneaky(k1=None, k2=None, k3=None)
def reward_gradients(theta, ref_logits): return Sneaky(k1=None, k2=None, k3=None)
""", ("public", "true_kl", "loss", "reward")),
}


class TestKlRewardVsLoss(CodingCheckTests):
    stem = STEM
    groups = ("public", "true_kl", "loss", "reward", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.further"
    reference_functions = ("true_kl_gradients", "loss_gradients", "reward_gradients")
    quiet_mistakes = ("directions_swapped", "k3_loss_is_reverse")
