"""Exercise 28's reference (autograder.reference.kl_response) against independent oracles: every expected
gradient is a central difference, in mpmath at 50 digits, of an objective written out over the whole tree
of responses (no closed form of the reference reused); the normaliser weights against exercise 23's
token weights and exact fractions."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from autograder.reference import further
from autograder.reference import kl_response as ref_mod

mpmath.mp.dps = 50
H = mpmath.mpf("1e-20")


def mp_log_softmax(row):
    norm = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in row))
    return [v - norm for v in row]


def mp_tree(step1, step2):
    """log q1 [V1] and log q2 [V1][V2] in mpmath, from mpf logits."""
    return mp_log_softmax(step1), [mp_log_softmax(row) for row in step2]


def to_mp(theta1, theta2):
    return [mpmath.mpf(float(v)) for v in theta1], [[mpmath.mpf(float(v)) for v in row] for row in theta2]


def k_value(name, log_q, log_p):
    log_r = log_p - log_q
    if name == "k1":
        return -log_r
    if name == "k2":
        return log_r ** 2 / 2
    return mpmath.exp(log_r) - 1 - log_r


def central_gradient(objective, theta1, theta2):
    """d objective / d theta1 and / d theta2 by central differences of step H (error ~ H^2 = 1e-40)."""
    t1, t2 = to_mp(theta1, theta2)
    g1 = []
    for i in range(len(t1)):
        up, down = list(t1), list(t1)
        up[i] += H
        down[i] -= H
        g1.append((objective(up, t2) - objective(down, t2)) / (2 * H))
    g2 = []
    for a in range(len(t2)):
        row = []
        for j in range(len(t2[a])):
            up, down = [list(r) for r in t2], [list(r) for r in t2]
            up[a][j] += H
            down[a][j] -= H
            row.append((objective(t1, up) - objective(t1, down)) / (2 * H))
        g2.append(row)
    return g1, g2


def assert_close(actual, expected, rtol=1e-11, atol=1e-13):
    actual = np.asarray(actual, dtype=np.float64)
    flat = np.asarray([float(v) for v in np.ravel(np.asarray(expected, dtype=object))]).reshape(actual.shape)
    assert np.allclose(actual, flat, rtol=rtol, atol=atol), (actual, flat)


RNG = np.random.default_rng(28)
TREES = [
    ("random 3x2", RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=3), RNG.normal(size=(3, 2))),
    ("random 2x4, peaked reference", RNG.normal(size=2), RNG.normal(size=(2, 4)), np.array([3.0, -2.0]),
     np.array([[6.0, 0.0, 0.0, 0.0], [0.0, -5.0, 0.0, 1.0]])),
]
OLD = [RNG.normal(scale=0.7, size=t[1].shape) + t[1] for t in TREES], [RNG.normal(scale=0.7, size=t[2].shape) + t[2] for t in TREES]


@pytest.mark.parametrize("case", TREES, ids=[t[0] for t in TREES])
def test_sequence_kl_gradient_is_the_derivative_of_the_sequence_kl(case):
    _, theta1, theta2, ref1, ref2 = case
    p1, p2 = mp_tree(*to_mp(ref1, ref2))

    def kl(t1, t2):
        q1, q2 = mp_tree(t1, t2)
        return mpmath.fsum(mpmath.exp(q1[a] + q2[a][b]) * (q1[a] + q2[a][b] - p1[a] - p2[a][b])
                           for a in range(len(q1)) for b in range(len(q2[a])))

    got = ref_mod.sequence_kl_gradient(theta1, theta2, ref1, ref2)
    g1, g2 = central_gradient(kl, theta1, theta2)
    assert_close(got["step1"], g1)
    assert_close(got["step2"], g2)


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("case", TREES, ids=[t[0] for t in TREES])
def test_reward_return_gradient_is_reinforce_with_returns(case, gamma):
    """The surrogate sum_y pi_theta(y) [log q1'(a) G1 + log q2'(b|a) G2], returns frozen at theta."""
    _, theta1, theta2, ref1, ref2 = case
    p1, p2 = mp_tree(*to_mp(ref1, ref2))
    q1, q2 = mp_tree(*to_mp(theta1, theta2))
    g = mpmath.mpf(gamma)

    def surrogate(t1, t2):
        l1, l2 = mp_tree(t1, t2)
        total = []
        for a in range(len(q1)):
            for b in range(len(q2[a])):
                k_1, k_2 = q1[a] - p1[a], q2[a][b] - p2[a][b]
                total.append(mpmath.exp(q1[a] + q2[a][b]) * (l1[a] * (k_1 + g * k_2) + l2[a][b] * k_2))
        return mpmath.fsum(total)

    got = ref_mod.reward_return_gradient(theta1, theta2, ref1, ref2, gamma=gamma)
    g1, g2 = central_gradient(surrogate, theta1, theta2)
    assert_close(got["step1"], g1)
    assert_close(got["step2"], g2)


def _loss_objective(estimator, weight, theta1, theta2, ref1, ref2, old1, old2):
    """The expected loss as a function of theta', samples from old (frozen), written out over the tree:
    sum_y s(y) [c1(theta') k(a; theta') + c2(theta') k(b|a; theta')], k3+ as k2 - sg(k2) + sg(k3)."""
    p1, p2 = mp_tree(*to_mp(ref1, ref2))
    s1, s2 = mp_tree(*to_mp(old1, old2))
    f1, f2 = mp_tree(*to_mp(theta1, theta2))  # theta, frozen: for sg(.)

    def term(log_q, log_q_frozen, log_p, log_s):
        if estimator == "k3+":
            k = (k_value("k2", log_q, log_p) - k_value("k2", log_q_frozen, log_p)
                 + k_value("k3", log_q_frozen, log_p))
        else:
            k = k_value(estimator, log_q, log_p)
        if weight == "none":
            c = 1
        elif weight == "detached":
            c = mpmath.exp(log_q_frozen - log_s)
        else:
            c = mpmath.exp(log_q - log_s)
        return c * k

    def objective(t1, t2):
        l1, l2 = mp_tree(t1, t2)
        return mpmath.fsum(mpmath.exp(s1[a] + s2[a][b]) * (term(l1[a], f1[a], p1[a], s1[a])
                                                           + term(l2[a][b], f2[a][b], p2[a][b], s2[a][b]))
                           for a in range(len(l1)) for b in range(len(l2[a])))

    return objective


@pytest.mark.parametrize("estimator", ref_mod.ESTIMATORS)
@pytest.mark.parametrize("index", [0, 1])
def test_per_token_loss_gradient_matches_finite_differences_on_policy(estimator, index):
    _, theta1, theta2, ref1, ref2 = TREES[index]
    objective = _loss_objective(estimator, "none", theta1, theta2, ref1, ref2, theta1, theta2)
    got = ref_mod.per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator)
    g1, g2 = central_gradient(objective, theta1, theta2)
    assert_close(got["step1"], g1)
    assert_close(got["step2"], g2)
    assert_close(got["value"], objective(*to_mp(theta1, theta2)))


@pytest.mark.parametrize("weight", ref_mod.WEIGHTS)
@pytest.mark.parametrize("estimator", ref_mod.ESTIMATORS)
def test_off_policy_loss_gradient_matches_finite_differences(estimator, weight):
    _, theta1, theta2, ref1, ref2 = TREES[1]
    old1, old2 = OLD[0][1], OLD[1][1]
    objective = _loss_objective(estimator, weight, theta1, theta2, ref1, ref2, old1, old2)
    got = ref_mod.off_policy_loss_gradient(theta1, theta2, ref1, ref2, old1, old2, estimator, weight)
    g1, g2 = central_gradient(objective, theta1, theta2)
    assert_close(got["step1"], g1)
    assert_close(got["step2"], g2)
    assert_close(got["value"], objective(*to_mp(theta1, theta2)))


def test_the_notebook_conclusions_hold_in_the_reference():
    """The statements the notebook makes, as identities of the reference (on a tree where they are not 0)."""
    _, theta1, theta2, ref1, ref2 = TREES[0]
    true = ref_mod.sequence_kl_gradient(theta1, theta2, ref1, ref2)
    loss = {k: ref_mod.per_token_loss_gradient(theta1, theta2, ref1, ref2, k) for k in ref_mod.ESTIMATORS}
    seq_kl = loss["k1"]["value"]
    assert np.isclose(loss["k3"]["value"], seq_kl) and np.isclose(loss["k3+"]["value"], seq_kl)
    assert not np.isclose(loss["k2"]["value"], seq_kl)
    assert np.allclose(loss["k3+"]["step1"], loss["k2"]["step1"]) and np.allclose(loss["k3+"]["step2"], loss["k2"]["step2"])
    assert np.allclose(loss["k2"]["step2"], true["step2"]) and not np.allclose(loss["k2"]["step1"], true["step1"])
    assert np.allclose(loss["k1"]["step1"], 0.0) and np.allclose(loss["k1"]["step2"], 0.0)
    # the per-token k2 loss at step 1 is the first position's own reverse-KL gradient
    assert np.allclose(loss["k2"]["step1"], further.true_kl_gradients(theta1, ref1)["reverse"])
    # the future-KL term: true minus per-token is the score weighted by K2(a)
    old1, old2 = OLD[0][0], OLD[1][0]
    trl = ref_mod.off_policy_loss_gradient(theta1, theta2, ref1, ref2, old1, old2, "k3", "differentiable")
    assert np.allclose(trl["step1"], loss["k2"]["step1"])  # reverse KL of the first position, not the sequence's
    on = ref_mod.off_policy_loss_gradient(theta1, theta2, ref1, ref2, theta1, theta2, "k3", "differentiable")
    assert np.allclose(on["step2"], true["step2"])


def test_large_and_disagreeing_logits_stay_finite():
    theta1, ref1 = np.array([1000.0, 0.0, -1000.0]), np.array([-1000.0, 0.0, 1000.0])
    theta2 = np.array([[1000.0, -1000.0], [0.0, 1.0], [-1000.0, 1000.0]])
    ref2 = -theta2
    for estimator in ref_mod.ESTIMATORS:
        out = ref_mod.per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator)
        assert all(np.all(np.isfinite(out[key])) for key in ("step1", "step2", "value"))
    out = ref_mod.sequence_kl_gradient(theta1, theta2, ref1, ref2)
    assert np.all(np.isfinite(out["step1"])) and np.all(np.isfinite(out["step2"]))
    shifted = ref_mod.sequence_kl_gradient(theta1 + 5.0, theta2 - 3.0, ref1, ref2)
    assert np.allclose(out["step1"], shifted["step1"]) and np.allclose(out["step2"], shifted["step2"])


@pytest.mark.parametrize("mode", further.AGGREGATION_MODES)
def test_response_kl_weights_are_exercise_23s_token_weights(mode):
    lengths = [3, 0, 7, 1]
    mask = np.arange(8)[None, :] < np.array(lengths)[:, None]
    max_len = 10 if mode == "constant" else None
    weights = ref_mod.response_kl_weights(lengths, mode, max_len)
    tokens = further.token_weights(mask, mode, max_len)
    assert np.allclose(weights, [row[m].max() if m.any() else 0.0 for row, m in zip(tokens, mask)])
    exact = {"token_mean": [Fraction(1, 11)] * 4, "sequence_mean": [Fraction(1, 12), 0, Fraction(1, 28), Fraction(1, 4)],
             "constant": [Fraction(1, 40)] * 4}[mode]
    exact[1] = 0
    assert [Fraction(float(w)).limit_denominator(1000) for w in weights] == exact


@pytest.mark.parametrize("call, argument", [
    (lambda: ref_mod.sequence_kl_gradient([0.0, 1.0], [[0.0, 1.0]], [0.0, 1.0], [[0.0, 1.0]]), "theta2"),
    (lambda: ref_mod.sequence_kl_gradient([0.0, 1.0], [[0.0], [1.0]], [0.0, 1.0, 2.0], [[0.0], [1.0]]), "ref1"),
    (lambda: ref_mod.sequence_kl_gradient([0.0, np.nan], [[0.0], [1.0]], [0.0, 1.0], [[0.0], [1.0]]), "theta1"),
    (lambda: ref_mod.reward_return_gradient([0.0, 1.0], [[0.0], [1.0]], [0.0, 1.0], [[0.0], [1.0]], gamma=1.5), "gamma"),
    (lambda: ref_mod.per_token_loss_gradient([0.0, 1.0], [[0.0], [1.0]], [0.0, 1.0], [[0.0], [1.0]], "k4"), "estimator"),
    (lambda: ref_mod.off_policy_loss_gradient([0.0, 1.0], [[0.0], [1.0]], [0.0, 1.0], [[0.0], [1.0]],
                                              [0.0, 1.0], [[0.0], [1.0]], "k3", "sqrt"), "weight"),
    (lambda: ref_mod.off_policy_loss_gradient([0.0, 1.0], [[0.0], [1.0]], [0.0, 1.0], [[0.0], [1.0]],
                                              [0.0, 1.0], [[0.0, 1.0], [1.0, 2.0]], "k3", "none"), "old2"),
    (lambda: ref_mod.response_kl_weights([2, -1], "token_mean"), "lengths"),
    (lambda: ref_mod.response_kl_weights([2, 5], "constant", max_len=4), "max_len"),
    (lambda: ref_mod.response_kl_weights([2, 5], "mean"), "mode"),
])
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        call()


def test_the_numbers_the_notebook_states():
    """Part B's model answer and the worked solution: under sequence_mean a 20-token response's KL counts 3/20
    of a 3-token one's (the group of 3, 5, 12 and 20 tokens); token_mean and constant weight them alike."""
    lengths = [3, 5, 12, 20]
    seq = ref_mod.response_kl_weights(lengths, "sequence_mean")
    assert Fraction(float(seq[3] / seq[0])).limit_denominator(100) == Fraction(3, 20)
    for mode, max_len in (("token_mean", None), ("constant", 32)):
        w = ref_mod.response_kl_weights(lengths, mode, max_len)
        assert np.all(w == w[0])
