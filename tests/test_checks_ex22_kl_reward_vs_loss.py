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

def _centre(q, qw):
    # q * (w - E_q w) from q * w: q * r = p needs no r, which overflows where q underflows
    return qw - q * qw.sum(axis=-1, keepdims=True)
"""


def answer(reverse="_score(q, lq - lp)", forward="q - p",
           loss=("np.zeros_like(q)", "_score(q, lq - lp)", "q - p"),
           reward=("_score(q, lq - lp)", "_score(q, 0.5 * (lp - lq)**2)", "_centre(q, p - q - q * (lp - lq))")):
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
RIGHT_REWARD = ("_score(q, lq - lp)", "_score(q, 0.5 * (lp - lq)**2)", "_centre(q, p - q - q * (lp - lq))")

CORRECT = {
    "closed_forms": answer(),
    "generic_score_formula": answer(loss=("_score(q, np.ones_like(q))", "_score(q, -(lp - lq))", "_centre(q, q - p)")),
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
    p = np.exp(lp)
    return {"k1": _jac_apply(q, np.ones_like(q)), "k2": _jac_apply(q, -lr), "k3": q - p - q * (q - p).sum(-1, keepdims=True)}

def reward_gradients(theta, ref_logits):
    lq, lp = _logs(theta, ref_logits)
    q = np.exp(lq)
    lr = lp - lq
    k3 = np.exp(lp) - q - q * lr          # q * (r - 1 - log r), with q r = p
    return {"k1": _jac_apply(q, -lr), "k2": _jac_apply(q, lr**2 / 2), "k3": k3 - q * k3.sum(-1, keepdims=True)}
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
    # the outside tester's w22d_naiver: r = exp(log p - log q) formed, inf where q underflows (0 * inf = NaN)
    "naive_ratio": (answer(loss=(RIGHT_LOSS[0], RIGHT_LOSS[1], "_score(q, 1 - np.exp(lp - lq))"),
                           reward=(RIGHT_REWARD[0], RIGHT_REWARD[1], "_score(q, np.expm1(lp - lq) - (lp - lq))")),
                    "ratio-overflow", "k3 as a loss, logits of order 1e3 with large differences"),
    # w22h_rewardk1_sign: k1 used as a reward with +log r, the k1 sign slip of exercises 11 and 18
    "reward_k1_sign": (answer(reward=("_score(q, lp - lq)", RIGHT_REWARD[1], RIGHT_REWARD[2])), "k1-sign"),
    # r5_22_nanonly: only NaN rejected, +inf accepted
    "inf_accepted": (answer().replace("not (np.isfinite(a).all() and np.isfinite(b).all())",
                                      "np.isnan(a).any() or np.isnan(b).any()"),
                     "silent-bad-input", "true_kl_gradients: +inf in ref_logits"),
    # r5_22_noshape_bcast: shapes broadcast instead of compared
    "shapes_broadcast": (answer().replace("    if a.ndim == 0 or a.shape != b.shape",
                                          "    a, b = np.broadcast_arrays(a, b)\n    if a.ndim == 0"),
                         "silent-bad-input", "loss_gradients: a batch of theta against one row of ref_logits"),
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
    quiet_mistakes = ("directions_swapped", "k3_loss_is_reverse", "naive_ratio")
    central_mistakes = ("directions_swapped",)


def test_an_extra_key_costs_only_the_open_checks_share():
    """"Exactly the keys" is graded once, in the open checks (as in exercise 18): one key too many costs
    half of the open checks' point, not every value case."""
    from check_support import result_of

    source = CORRECT["closed_forms"].replace('"forward": q - p}', '"forward": q - p, "kl": 0.0}')
    result = result_of(STEM, source)
    assert result.points_earned == 7.5, result.feedback()
    failed = [case.name for case in result.cases if not case.passed]
    assert failed == ["the open check: forward-KL gradient of the three-token policy"], failed
