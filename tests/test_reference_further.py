"""The second assignment's reference (autograder.reference.further) against independent oracles:
mpmath at 50 digits, mpmath's numerical differentiation, exact fractions and hand-worked cases."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from autograder.reference import further

mpmath.mp.dps = 50


def mp_log_softmax(row):
    row = [mpmath.mpf(float(v)) for v in row]
    norm = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in row))
    return [v - norm for v in row]


def close_mp(actual, expected, rtol=1e-13, atol=1e-15):
    return abs(mpmath.mpf(float(actual)) - expected) <= atol + rtol * abs(expected)


# --------------------------------------------------------------------------- 21


@pytest.mark.parametrize("temperature,top_k", [(1.0, 2), (0.7, 3), (1.6, 1), (0.5, None), (1.0, 6)])
def test_engine_and_trainer_logprobs_match_mpmath(temperature, top_k):
    rng = np.random.default_rng(int(10 * temperature) + (top_k or 0))
    z = rng.normal(scale=2.0, size=(5, 7))
    order = np.argsort(-z, axis=-1, kind="stable")
    ids = order[:, 0] if top_k is None else order[np.arange(5), rng.integers(0, top_k, size=5)]
    out = further.engine_and_trainer_logprobs(z, ids, temperature, top_k)
    for row, token, engine, trainer in zip(z, ids, out["engine"], out["trainer"]):
        lp = mp_log_softmax(row / temperature)
        kept = sorted(range(len(lp)), key=lambda i: (-lp[i], i))[: (top_k or len(lp))]
        log_z = mpmath.log(mpmath.fsum(mpmath.exp(lp[i]) for i in kept))
        assert close_mp(trainer, lp[token])
        assert close_mp(engine, lp[token] - log_z)


def test_the_keep_ties_engine_rule_matches_mpmath_and_the_exact_rule_elsewhere():
    # Ties with the k-th token: exactly k keeps ids 1 and 2 of the three tied ones, the engines' other rule
    # (transformers' TopKLogitsWarper: drop only scores below the k-th largest) keeps all three.
    z = np.array([[2.0, 1.0, 1.0, 1.0, -1.0]])
    lp = mp_log_softmax(z[0] / 0.8)
    exact = further.engine_and_trainer_logprobs(z, [2], 0.8, 3)
    ties = further.engine_and_trainer_logprobs(z, [2], 0.8, 3, keep_ties=True)
    assert close_mp(exact["engine"][0], lp[2] - mpmath.log(mpmath.fsum(mpmath.exp(lp[i]) for i in (0, 1, 2))))
    assert close_mp(ties["engine"][0], lp[2] - mpmath.log(mpmath.fsum(mpmath.exp(lp[i]) for i in (0, 1, 2, 3))))
    np.testing.assert_array_equal(exact["trainer"], ties["trainer"])
    # the tied token beyond the first k: unsampleable under one rule, sampleable under the other
    with pytest.raises(ValueError, match="token_ids"):
        further.engine_and_trainer_logprobs(z, [3], 0.8, 3)
    np.testing.assert_array_equal(further.engine_and_trainer_logprobs(z, [3], 0.8, 3, keep_ties=True)["engine"],
                                  ties["engine"])
    # without a tie at the cut both rules are the same rule
    rng = np.random.default_rng(3)
    free = rng.normal(size=(4, 9))
    ids = np.argsort(-free, axis=-1, kind="stable")[:, 1]
    for key in ("engine", "trainer"):
        np.testing.assert_array_equal(further.engine_and_trainer_logprobs(free, ids, 1.3, 4)[key],
                                      further.engine_and_trainer_logprobs(free, ids, 1.3, 4, keep_ties=True)[key])
    with pytest.raises(TypeError, match="keep_ties"):
        further.engine_and_trainer_logprobs(z, [2], 0.8, 3, keep_ties="yes")


def test_a_support_holding_nearly_all_mass_matches_mpmath():
    # Dropping one token of probability ~e-30: log Z_S ~ -5e-14 is taken as log1p(-dropped mass).
    z = np.array([[0.0, 0.0, -30.0]])
    out = further.engine_and_trainer_logprobs(z, [0], 1.0, 2)
    lp = mp_log_softmax(z[0])
    assert close_mp(out["engine"][0], lp[0] - mpmath.log(mpmath.exp(lp[0]) + mpmath.exp(lp[1])), rtol=1e-15)
    assert close_mp(out["trainer"][0], lp[0], rtol=1e-15)


def test_engine_and_trainer_logprobs_reject_bad_input_naming_the_argument():
    z = np.zeros((2, 4))
    with pytest.raises(ValueError, match="token_ids"):
        further.engine_and_trainer_logprobs(z, [0, 1, 2])
    with pytest.raises(ValueError, match="token_ids"):
        further.engine_and_trainer_logprobs(np.array([[3.0, 2.0, 1.0, 0.0]]), [3], top_k=2)
    with pytest.raises(ValueError, match="temperature"):
        further.engine_and_trainer_logprobs(z, [0, 1], temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        further.engine_and_trainer_logprobs(z, [0, 1], top_k=5)


def test_truncated_is_weights_match_mpmath_and_never_overflow():
    rng = np.random.default_rng(3)
    engine = rng.normal(size=(3, 6)) - 2.0
    trainer = engine + rng.normal(scale=0.8, size=(3, 6))
    mask = np.arange(6)[None, :] < np.array([[6], [3], [0]])
    out = further.truncated_is_weights(np.where(mask, trainer, np.nan), engine, mask, cap=1.7)
    for b in range(3):
        total = mpmath.fsum(mpmath.mpf(float(trainer[b, t])) - mpmath.mpf(float(engine[b, t]))
                            for t in range(6) if mask[b, t])
        assert close_mp(out["sequence"][b], min(mpmath.exp(total), mpmath.mpf(1.7)))
        for t in range(6):
            expected = min(mpmath.exp(mpmath.mpf(float(trainer[b, t])) - mpmath.mpf(float(engine[b, t]))),
                           mpmath.mpf(1.7)) if mask[b, t] else 0
            assert close_mp(out["token"][b, t], expected)
    long = further.truncated_is_weights(np.zeros((1, 1000)), np.full((1, 1000), -1.0), np.ones((1, 1000)), cap=np.inf)
    assert np.isinf(long["sequence"][0]) and np.all(long["token"] == np.e)  # no cap: e^1000 is honestly inf
    capped = further.truncated_is_weights(np.zeros((1, 1000)), np.full((1, 1000), -1.0), np.ones((1, 1000)), cap=2.0)
    assert capped["sequence"][0] == 2.0


def test_truncated_is_weights_reject_bad_input():
    good = np.zeros((2, 3))
    with pytest.raises(ValueError, match="mask"):
        further.truncated_is_weights(good, good, np.ones((2, 2)))
    with pytest.raises(ValueError, match="cap"):
        further.truncated_is_weights(good, good, np.ones((2, 3)), cap=0.0)
    with pytest.raises(ValueError, match="trainer_logprobs"):
        further.truncated_is_weights(np.full((2, 3), np.nan), good, np.ones((2, 3)))


# --------------------------------------------------------------------------- 22


def _mp_policy(theta):
    return [mpmath.exp(v) for v in mp_log_softmax(theta)]


def _mp_grad(function, theta):
    """Gradient of ``function`` (of an mpmath vector) at ``theta`` by mpmath's numerical differentiation."""
    theta = [mpmath.mpf(float(v)) for v in theta]
    grads = []
    for i in range(len(theta)):
        def along(h, i=i):
            moved = list(theta)
            moved[i] += h
            return function(moved)
        grads.append(mpmath.diff(along, 0))
    return grads


def _log_softmax_mp(theta):
    norm = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in theta))
    return [v - norm for v in theta]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kl_gradients_match_numerical_differentiation_at_50_digits(seed):
    rng = np.random.default_rng(seed)
    theta, ref = rng.normal(scale=1.5, size=5), rng.normal(scale=1.5, size=5)
    lp = mp_log_softmax(ref)
    p = [mpmath.exp(v) for v in lp]
    theta0 = [mpmath.mpf(float(v)) for v in theta]
    lq0 = _log_softmax_mp(theta0)
    q0 = [mpmath.exp(v) for v in lq0]

    def reverse(t):
        lq = _log_softmax_mp(t)
        return mpmath.fsum(mpmath.exp(a) * (a - b) for a, b in zip(lq, lp))

    def forward(t):
        lq = _log_softmax_mp(t)
        return mpmath.fsum(pi * (b - a) for pi, a, b in zip(p, lq, lp))

    def estimator(name, lq_value, lp_value):
        lr = lp_value - lq_value
        return {"k1": -lr, "k2": lr ** 2 / 2, "k3": mpmath.exp(lr) - 1 - lr}[name]

    true = further.true_kl_gradients(theta, ref)
    loss = further.loss_gradients(theta, ref)
    reward = further.reward_gradients(theta, ref)
    for got, want in ((true["reverse"], _mp_grad(reverse, theta)), (true["forward"], _mp_grad(forward, theta))):
        assert all(close_mp(g, w, rtol=1e-12, atol=1e-14) for g, w in zip(got, want))
    for k in ("k1", "k2", "k3"):
        as_loss = lambda t, k=k: mpmath.fsum(qx * estimator(k, a, b) for qx, a, b in zip(q0, _log_softmax_mp(t), lp))
        as_reward = lambda t, k=k: mpmath.fsum(mpmath.exp(a) * estimator(k, a0, b)
                                               for a, a0, b in zip(_log_softmax_mp(t), lq0, lp))
        assert all(close_mp(g, w, rtol=1e-12, atol=1e-14) for g, w in zip(loss[k], _mp_grad(as_loss, theta))), k
        assert all(close_mp(g, w, rtol=1e-12, atol=1e-14) for g, w in zip(reward[k], _mp_grad(as_reward, theta))), k


def test_the_identities_the_notebook_teaches():
    rng = np.random.default_rng(5)
    theta, ref = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    true, loss, reward = (f(theta, ref) for f in (further.true_kl_gradients, further.loss_gradients,
                                                  further.reward_gradients))
    np.testing.assert_allclose(loss["k1"], 0.0, atol=1e-16)
    np.testing.assert_allclose(loss["k2"], true["reverse"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loss["k3"], true["forward"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(reward["k1"], true["reverse"], rtol=1e-12, atol=1e-15)
    assert not np.allclose(reward["k3"], true["reverse"]) and not np.allclose(reward["k3"], true["forward"])
    # TRL's bias-corrected KL (k3 times a differentiable ratio) has loss + reward gradient: the reverse KL's
    np.testing.assert_allclose(loss["k3"] + reward["k3"], true["reverse"], rtol=1e-12, atol=1e-15)


def test_kl_gradients_work_at_logits_of_order_1e3_and_reject_bad_input():
    theta = np.array([1000.0, 999.0, 998.5])
    g = further.true_kl_gradients(theta, theta - 2000.0)
    np.testing.assert_allclose(g["reverse"], 0.0, atol=1e-12)  # same distribution: shift-invariant logits
    with pytest.raises(ValueError, match="ref_logits"):
        further.loss_gradients([0.0, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="theta"):
        further.reward_gradients([np.nan, 1.0], [0.0, 1.0])


# --------------------------------------------------------------------------- 23


def _exact_weights(mask, mode, max_len=None):
    rows = [list(map(bool, row)) for row in mask]
    batch, total = len(rows), sum(map(sum, rows))
    out = []
    for row in rows:
        n = sum(row)
        if mode == "token_mean":
            w = Fraction(1, total) if total else Fraction(0)
        elif mode == "sequence_mean":
            w = Fraction(1, batch * n) if n else Fraction(0)
        else:
            w = Fraction(1, batch * max_len)
        out.append([w if on else Fraction(0) for on in row])
    return out


@pytest.mark.parametrize("mode", further.AGGREGATION_MODES)
def test_token_weights_and_aggregate_loss_match_exact_fractions(mode):
    mask = [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]
    loss = [[Fraction(k + 3 * b, 7) for k in range(5)] for b in range(4)]
    max_len = 8 if mode == "constant" else None
    exact = _exact_weights(mask, mode, max_len)
    got = further.token_weights(mask, mode, max_len)
    assert got.tolist() == [[float(w) for w in row] for row in exact]
    total = sum(w * x for wr, xr in zip(exact, loss) for w, x in zip(wr, xr))
    value = further.aggregate_loss([[float(x) for x in row] for row in loss], mask, mode, max_len)
    assert abs(Fraction(value) - total) <= Fraction(1, 10 ** 15)


def test_aggregation_edge_cases_and_errors():
    assert np.all(further.token_weights([[0, 0], [0, 0]], "token_mean") == 0)
    assert further.aggregate_loss([[np.nan, 1.0]], [[0, 1]], "sequence_mean") == 1.0
    with pytest.raises(ValueError, match="mode"):
        further.token_weights([[1]], "mean")
    with pytest.raises(ValueError, match="max_len"):
        further.token_weights([[1, 1, 1]], "constant", max_len=2)
    with pytest.raises(ValueError, match="max_len"):
        further.token_weights([[1]], "constant")
    with pytest.raises(ValueError, match="per_token_loss"):
        further.aggregate_loss([[1.0]], [[1, 1]], "token_mean")


# --------------------------------------------------------------------------- 24


def test_causal_lm_loss_matches_mpmath():
    rng = np.random.default_rng(24)
    z = rng.normal(scale=3.0, size=(2, 5, 9)) + 500.0
    labels = rng.integers(0, 9, size=(2, 5))
    labels[0, :2] = -100
    labels[1, 4] = -100
    terms = []
    for b in range(2):
        for t in range(4):
            if labels[b, t + 1] != -100:
                terms.append(-mp_log_softmax(z[b, t])[labels[b, t + 1]])
    assert close_mp(further.causal_lm_loss(z, labels), mpmath.fsum(terms) / len(terms))


def test_positions_and_diagnosis_by_hand():
    labels = np.array([[-100, -100, 7, 8, -100], [-100, 3, 4, -100, 6]])
    assert further.loss_positions(labels).tolist() == [[False, True, True, False, False],
                                                       [True, True, False, True, False]]
    ids = np.array([[1, 2, 3, 4, 5]])
    assert further.diagnose_labels(ids, [[-100, 2, 3, 4, 5]]) == "ok"
    assert further.diagnose_labels(ids, [[-100, 3, 4, 5, -100]]) == "double_shift"
    assert further.diagnose_labels(ids, [[-100, 3, 4, 5, 9]]) == "mismatch"
    assert further.diagnose_labels([[5, 5, 5]], [[-100, 5, 5]]) == "ok"  # both rules hold: ok first
    with pytest.raises(ValueError, match="labels"):
        further.causal_lm_loss(np.zeros((1, 3, 4)), [[-100, -100, -100]])
    with pytest.raises(ValueError, match="labels"):
        further.causal_lm_loss(np.zeros((1, 3, 4)), [[-100, 4, 1]])
    with pytest.raises(ValueError, match="labels"):
        further.diagnose_labels([[1, 2, 3]], [[-100, -100, -100]])


def test_the_doctests_of_the_module_pass():
    """``testpaths`` does not reach autograder/, so the examples in the docstrings are run here."""
    import doctest

    result = doctest.testmod(further, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0, result


@pytest.mark.parametrize("theta, ref", [
    ([1000.0, 0.0, -1000.0], [-1000.0, 0.0, 1000.0]),   # the outside tester's input: r = p/q overflows
    ([800.0, -5.0, 0.0, -900.0], [-700.0, 3.0, 0.0, 650.0]),
])
def test_k3_gradients_where_q_underflows_match_mpmath(theta, ref):
    """Where q(x) underflows and p(x) does not, r = exp(log p - log q) overflows in float64; the reference
    never forms r (q r = p), so the k3 gradients stay finite and match mpmath at 3 000 digits."""
    with mpmath.workdps(3000):
        lq = mp_log_softmax(theta)
        lp = mp_log_softmax(ref)
        q = [mpmath.exp(v) for v in lq]

        def centred(w):
            mean = mpmath.fsum(qi * wi for qi, wi in zip(q, w))
            return [qi * (wi - mean) for qi, wi in zip(q, w)]

        lr = [a - b for a, b in zip(lp, lq)]
        loss_k3 = centred([1 - mpmath.exp(v) for v in lr])
        reward_k3 = centred([mpmath.exp(v) - 1 - v for v in lr])
        loss = further.loss_gradients(theta, ref)["k3"]
        reward = further.reward_gradients(theta, ref)["k3"]
        for actual, expected in zip(list(loss) + list(reward), loss_k3 + reward_k3):
            assert np.isfinite(actual)
            assert abs(mpmath.mpf(float(actual)) - expected) <= 1e-15 + 1e-13 * abs(expected), (actual, expected)
