"""The hidden checks of exercise 28 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests, result_of

STEM = "28_kl_across_response"

# An answer written response by response: loops over the tree, the softmax Jacobian, every weight in log
# space (w * r as exp(log w + log p - log q), so nothing overflows where q underflows). The {placeholders}
# are where the mistakes of the corpus go.
LOOPS = '''
import numpy as np

def _ls(z):
    s = z - z.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))

def _tree(*arrays):
    arrays = [np.asarray(x, dtype=np.float64) for x in arrays]
    t1, t2 = arrays[0], arrays[1]
    if t1.ndim != 1 or t2.ndim != 2 or t2.shape[0] != t1.size:
        raise ValueError("theta1 [V1], theta2 [V1, V2]")
    for i, x in enumerate(arrays):
        {shape_check}
    if not all(np.isfinite(x).all() for x in arrays):
        raise ValueError("finite logits only")
    return [_ls(x) for x in arrays]

def _jac(lq):
    q = np.exp(lq)
    return np.diag(q) - np.outer(q, q)   # d log q(x) / d theta = e_x - q, row x of (I - 1 q^T); times q(x): J

def sequence_kl_gradient(theta1, theta2, ref1, ref2):
    lq1, lq2, lp1, lp2 = _tree(theta1, theta2, ref1, ref2)
    g1, g2 = np.zeros(lq1.shape), np.zeros(lq2.shape)
    for a in range(lq1.size):
        k2 = np.exp(lq2[a]) @ (lq2[a] - lp2[a])
        g1 += _jac(lq1)[a] * ({seq_w1})
        g2[a] = {visit} * (_jac(lq2[a]) @ (lq2[a] - lp2[a]))
    return {{"step1": {sign}g1, "step2": {sign}g2}}

def reward_return_gradient(theta1, theta2, ref1, ref2, gamma=1.0):
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or {gamma_check}:
        raise ValueError("gamma in [0, 1]")
    lq1, lq2, lp1, lp2 = _tree(theta1, theta2, ref1, ref2)
    g1, g2 = np.zeros(lq1.shape), np.zeros(lq2.shape)
    e1, e2 = np.eye(lq1.size), np.eye(lq2.shape[1])
    q1 = np.exp(lq1)
    for a in range(lq1.size):
        q2 = np.exp(lq2[a])
        for b in range(q2.size):
            prob = q1[a] * q2[b]
            k_a, k_b = lq1[a] - lp1[a], lq2[a, b] - lp2[a, b]
            g1 += prob * (e1[a] - q1) * ({return1})
            g2[a] += prob * (e2[b] - q2) * ({return2})
    return {{"step1": g1, "step2": g2}}

_VALUE = {{"k1": "k1", "k2": "k2", "k3": "k3", "k3+": "{plus_value}"}}
_SLOPE = {{"k1": "k1", "k2": "k2", "k3": "{k3_slope}", "k3+": "{plus_slope}"}}

def _terms(lw, lq, lp, name, which):
    """w * k and w * dk/dlog q, with w = exp(lw) the probability of the token's response times its weight."""
    w, d = np.exp(lw), lq - lp
    w_r = np.exp(lw - d)                          # w * r, r = p / q, formed in log space
    if which == "value":
        kind = _VALUE[name]
        return {{"k1": w * d, "k2": 0.5 * w * d * d, "k3": (w_r - w) + w * d}}[kind]
    kind = _SLOPE[name]
    return {{"k1": w, "k2": {k2_slope}, "k3": w - w_r}}[kind]

def per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator):
    return off_policy_loss_gradient(theta1, theta2, ref1, ref2, theta1, theta2, estimator, "none")

def off_policy_loss_gradient(theta1, theta2, ref1, ref2, old1, old2, estimator, weight):
    if estimator not in ("k1", "k2", "k3", "k3+") or weight not in ("none", "detached", "differentiable"):
        raise ValueError("estimator or weight unknown")
    lq1, lq2, lp1, lp2, ls1, ls2 = _tree(theta1, theta2, ref1, ref2, old1, old2)
    value, g1, g2 = 0.0, np.zeros(lq1.shape), np.zeros(lq2.shape)
    e1, e2 = np.eye(lq1.size), np.eye(lq2.shape[1])
    q1 = np.exp(lq1)
    for a in range(lq1.size):
        q2 = np.exp(lq2[a])
        for b in range(q2.size):
            log_s = ls1[a] + ls2[a, b]                    # the sampler's probability of (a, b)
            for step, lq, lp, lo in ((1, lq1[a], lp1[a], ls1[a]), (2, lq2[a, b], lp2[a, b], ls2[a, b])):
                lw = log_s + ({log_c})                   # probability times weight, in log space
                v = _terms(lw, lq, lp, estimator, "value")
                slope = _terms(lw, lq, lp, estimator, "slope")
                if weight == "differentiable":
                    slope = slope {diff_sign} v
                value += v
                if step == 1:
                    g1 += slope * (e1[a] - q1)
                else:
                    g2[a] += {prefix}slope * (e2[b] - q2)
    return {{"value": float(value), "step1": g1, "step2": g2}}

def response_kl_weights(lengths, mode, max_len=None):
    n = np.asarray(lengths)
    if n.ndim != 1 or n.size == 0 or n.dtype.kind not in "iu" or (n < 0).any():
        raise ValueError("lengths: non-negative ints")
    B = n.size
    if mode == "token_mean":
        w = np.full(B, {token_mean})
    elif mode == "sequence_mean":
        w = {sequence_mean}
    elif mode == "constant":
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < max(1, n.max()):
            raise ValueError("max_len: an int at least the longest response")
        w = np.full(B, {constant})
    else:
        raise ValueError("mode unknown")
    return {empty}
'''

RIGHT = dict(
    shape_check='if x.shape != arrays[i % 2].shape:\n            raise ValueError("one tree: ref and old of the shapes of theta")',
    seq_w1="(lq1[a] - lp1[a]) + k2", visit="np.exp(lq1[a])", sign="",
    gamma_check="not 0 <= gamma <= 1", return1="k_a + gamma * k_b", return2="k_b",
    plus_value="k3", k3_slope="k3", plus_slope="k2", k2_slope="w * d",
    log_c='0.0 if weight == "none" else lq - lo', diff_sign="+", prefix="",
    token_mean="1.0 / n.sum() if n.sum() else 0.0", sequence_mean="1.0 / (B * np.maximum(n, 1))",
    constant="1.0 / (B * max_len)", empty="np.where(n > 0, w, 0.0)",
)


def loops(**mistake) -> str:
    return LOOPS.format(**{**RIGHT, **mistake})


def _from_solution() -> str:
    """The notebook's own solution cells, given helpers included (a second, vectorised style)."""
    import re

    from check_support import source_notebook

    cells = []
    for cell in source_notebook(STEM).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("solution") or cell.id in ("setup", "given-helpers")):
            cells.append(re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source))
    return "\n\n".join(cells)


CORRECT = {
    "notebook_vectorised": _from_solution(),
    "response_by_response": loops(),
    # the other way round: k3+ delegating to k2 for its slope and to k3 for its value, the sequence KL from
    # the returns with gamma = 1, and the normalisers written from exercise 23's per-token weights
    "delegating": loops().replace(
        "def sequence_kl_gradient(theta1, theta2, ref1, ref2):",
        "def sequence_kl_gradient(theta1, theta2, ref1, ref2):\n    return reward_return_gradient(theta1, theta2, ref1, ref2, 1.0)\n\ndef _unused(theta1, theta2, ref1, ref2):"
    ).replace("def response_kl_weights(lengths, mode, max_len=None):", '''def response_kl_weights(lengths, mode, max_len=None):
    n = np.asarray(lengths)
    if n.ndim != 1 or n.size == 0 or n.dtype.kind not in "iu" or (n < 0).any():
        raise ValueError("lengths: non-negative ints")
    if mode not in ("token_mean", "sequence_mean", "constant"):
        raise ValueError("mode unknown")
    width = max(1, int(n.max()))
    if mode == "constant" and (not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < width):
        raise ValueError("max_len: an int at least the longest response")
    mask = np.arange(width)[None, :] < n[:, None]
    if mode == "token_mean":
        per_token = np.where(mask, 1.0 / max(mask.sum(), 1), 0.0)
    elif mode == "sequence_mean":
        per_token = np.where(mask, 1.0 / (n.size * np.maximum(mask.sum(1, keepdims=True), 1)), 0.0)
    else:
        per_token = np.where(mask, 1.0 / (n.size * max_len), 0.0)
    return per_token.max(axis=1)

def _old_weights(lengths, mode, max_len=None):'''),
}

WRONG = {
    # the central idea: the first step sees only its own KL
    "future_dropped": (loops(seq_w1="(lq1[a] - lp1[a])", return1="k_a"), "future-kl-dropped"),
    "visit_missing": (loops(visit="1.0"), "visit-weight-missing"),
    "sequence_sign": (loops(sign="-"), "gradient-sign"),
    "sequence_forward_kl": (loops().replace(
        '    return {"step1": g1, "step2": g2}\n\ndef reward_return_gradient',
        '    q1, p1 = np.exp(lq1), np.exp(lp1)\n'
        '    return {"step1": q1 - p1, "step2": p1[:, None] * (np.exp(lq2) - np.exp(lp2))}\n\n'
        'def reward_return_gradient'), "sequence-kl-forward"),
    "sequence_not_centred": (loops().replace("g1 += _jac(lq1)[a] * (", "g1[a] += np.exp(lq1[a]) * ("),
                             "softmax-jacobian"),
    "discount_ignored": (loops(return1="k_a + k_b"), "discount-ignored"),
    "discount_from_start": (loops(return2="gamma * k_b"), "discount-from-start"),
    # "return not summed from the current step": the first step's return is its own KL only
    "return_own_kl_only": (loops(return1="k_a"), "future-kl-dropped"),
    "loss_with_future": (loops().replace(
        'def per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator):\n',
        'def per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator):\n'
        '    out = off_policy_loss_gradient(theta1, theta2, ref1, ref2, theta1, theta2, estimator, "none")\n'
        '    if estimator in ("k2", "k3+"):\n'
        '        out["step1"] = sequence_kl_gradient(theta1, theta2, ref1, ref2)["step1"]\n'
        '    return out\n'), "loss-has-future-kl"),
    "k2_slope_sign": (loops(k2_slope="-w * d"), "k2-slope-sign"),
    "k3_slope_is_k2s": (loops(k3_slope="k2"), "k3-gradient-is-k2s"),
    "k3plus_slope_is_k3s": (loops(plus_slope="k3"), "k3plus-gradient-is-k3s"),
    "k3plus_value_is_k2s": (loops(plus_value="k2"), "k3plus-value-is-k2s"),
    "weight_missing": (loops(log_c="0.0"), "importance-weight-missing"),
    "weight_inverted": (loops(log_c='0.0 if weight == "none" else lo - lq', diff_sign="-"),
                        "importance-weight-inverted"),
    "ratio_always_detached": (loops(diff_sign="+ 0 *"), "ratio-detached"),
    "ratio_always_differentiated": (loops().replace('if weight == "differentiable":', 'if weight != "none":'),
                                    "ratio-differentiated"),
    "prefix_by_policy": (loops(prefix='(np.exp(lq1[a] - ls1[a]) if weight != "none" else 1.0) * '),
                         "prefix-weighted-by-policy"),
    "sampler_ignored": (loops().replace("log_s = ls1[a] + ls2[a, b]", "log_s = lq1[a] + lq2[a, b]"),
                        "sampler-ignored"),
    "normaliser_objective": (loops(token_mean="1.0 / B", constant="1.0 / B"), "kl-weight-is-objective"),
    "sequence_mean_without_batch": (loops(sequence_mean="1.0 / np.maximum(n, 1)"), "sequence-mean-without-batch"),
    "constant_without_batch": (loops(constant="1.0 / max_len"), "constant-without-batch"),
    "sequence_mean_is_token_mean": (loops(sequence_mean="np.full(B, 1.0 / max(n.sum(), 1))"), "normalisers-mixed-up"),
    "empty_response_weighted": (loops(empty="w"), "empty-response-weighted"),
    # r = p / q formed on its own: inf where q underflows and p does not
    "naive_ratio": (loops().replace("w_r = np.exp(lw - d)", "w_r = w * np.exp(-d)"), "ratio-overflow",
                    "k3 loss step1, logits of order 1e3 that disagree completely"),
    "gamma_unchecked": (loops(gamma_check="False"), "silent-bad-input", "reward_return_gradient: gamma above 1"),
    "shapes_broadcast": (loops(shape_check="pass"), "silent-bad-input",
                         "sequence_kl_gradient: ref2 of shape [3, 1] against theta2 of shape [3, 2] (NumPy would broadcast them)"),
}

ADVERSARIAL = {
    "always_equal_object": ('''
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(3)
def _out(*args, **kwargs): return {"step1": Anything(), "step2": Anything(), "value": Anything()}
sequence_kl_gradient = reward_return_gradient = per_token_loss_gradient = off_policy_loss_gradient = _out
def response_kl_weights(lengths, mode, max_len=None): return Anything()
''', ("public", "sequence", "loss", "off_policy", "normaliser")),
    "dict_subclass": ('''
import numpy as np
class Sneaky(dict):
    def __getitem__(self, key): return np.zeros(3)
    def __eq__(self, other): return True
def _out(*args, **kwargs): return Sneaky(step1=None, step2=None, value=None)
sequence_kl_gradient = reward_return_gradient = per_token_loss_gradient = off_policy_loss_gradient = _out
def response_kl_weights(lengths, mode, max_len=None): return np.zeros(len(lengths))
''', ("public", "sequence", "loss", "off_policy", "normaliser")),
    "returns_the_logits": ('''
import numpy as np
def sequence_kl_gradient(theta1, theta2, ref1, ref2, gamma=1.0):
    return {"step1": np.asarray(theta1, float), "step2": np.asarray(theta2, float)}
reward_return_gradient = sequence_kl_gradient
def per_token_loss_gradient(theta1, theta2, ref1, ref2, *rest):
    return {"step1": np.asarray(theta1, float), "step2": np.asarray(theta2, float), "value": 1.0}
off_policy_loss_gradient = per_token_loss_gradient
def response_kl_weights(lengths, mode, max_len=None): return np.asarray(lengths, float)
''', ("public", "sequence", "loss", "off_policy", "normaliser")),
}


class TestKlAcrossResponse(CodingCheckTests):
    stem = STEM
    groups = ("public", "sequence", "loss", "off_policy", "normaliser", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.kl_response"
    reference_functions = ("sequence_kl_gradient", "reward_return_gradient", "per_token_loss_gradient",
                           "off_policy_loss_gradient", "response_kl_weights")
    quiet_mistakes = ("future_dropped", "k3plus_slope_is_k3s", "prefix_by_policy", "naive_ratio",
                      "sequence_mean_without_batch")
    central_mistakes = ("future_dropped", "return_own_kl_only")


def test_an_extra_key_costs_only_the_open_checks_share():
    """"Exactly the keys" is graded once, in the open checks (as in exercises 18 and 22)."""
    source = CORRECT["response_by_response"].replace('return {"step1": g1, "step2": g2}\n\ndef reward',
                                                     'return {"step1": g1, "step2": g2, "kl": 0.0}\n\ndef reward')
    result = result_of(STEM, source)
    assert result.points_earned == 7.5, result.feedback()
    assert [case.name for case in result.cases if not case.passed] == [
        "the open check: the sequence-KL gradient at step 1", "the open check: the sequence-KL gradient at step 2"]


def test_the_open_checks_grade_step_two_as_the_open_check_cell_does():
    """Found by the outside test: an answer whose step-2 gradient is not weighted by the visit probability fails
    the notebook's open check (finite differences of both steps), so the hidden open-check cases fail it too."""
    right = "        g2[a] = np.exp(lq1[a]) * (_jac(lq2[a]) @ (lq2[a] - lp2[a]))\n"
    assert right in CORRECT["response_by_response"]
    wrong = CORRECT["response_by_response"].replace(right, "        g2[a] = _jac(lq2[a]) @ (lq2[a] - lp2[a])\n")
    result = result_of(STEM, wrong)
    failed = [case.name for case in result.cases if not case.passed and case.group == "public"]
    assert "the open check: the sequence-KL gradient at step 2" in failed, result.feedback()
