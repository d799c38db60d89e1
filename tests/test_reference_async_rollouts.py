"""Exercise 30's reference (autograder.reference.async_rollouts) against independent oracles: every value is
recomputed in mpmath at 50 digits from the objective as written (no closed form of the reference reused), every
gradient is a central difference of that objective in mpmath, the staleness rules are the trainers' comparisons
written out, and the mixture-of-experts scores are a loop over experts in mpmath."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from autograder.reference import async_rollouts as ref

mpmath.mp.dps = 50
H = mpmath.mpf("1e-20")


def mp_log_softmax(row):
    top = max(row)
    norm = top + mpmath.log(mpmath.fsum(mpmath.exp(v - top) for v in row))
    return [v - norm for v in row]


def mp(values):
    return [mpmath.mpf(float(v)) for v in values]


def assert_close(actual, expected, rtol=1e-12, atol=1e-14):
    actual = np.asarray(actual, dtype=np.float64)
    flat = np.asarray([float(v) for v in np.ravel(np.asarray(expected, dtype=object))]).reshape(actual.shape)
    assert np.allclose(actual, flat, rtol=rtol, atol=atol), (actual, flat)


def mp_clip(x, low, high):
    return min(max(x, low), high)


# ----------------------------------------------------------------------------- staleness


@pytest.mark.parametrize("limit", [0, 1, 2, 4, 7])
def test_trl_keeps_what_its_dataset_keeps(limit):
    """trl==1.16.0 RolloutQueueDataset.__iter__: staleness = version - sample.model_version; dropped if > max_staleness."""
    versions = np.arange(0, 12)
    kept = ref.staleness_kept(versions, 11, limit, "trl")
    for version, keep in zip(versions, kept):
        staleness = 11 - version
        dropped = staleness > limit
        assert keep == (not dropped)


@pytest.mark.parametrize("limit", [1, 2, 4, 7, None])
def test_verl_keeps_what_its_replay_buffer_keeps(limit):
    """verl==0.9.1 ReplayBufferAsync._stale_terminal_keys: dropped if global_steps - prompt_global_steps + 1 > threshold."""
    versions = np.arange(3, 15)
    kept = ref.staleness_kept(versions, 14, limit, "verl")
    for version, keep in zip(versions, kept):
        dropped = limit is not None and 14 - version + 1 > limit
        assert keep == (not dropped)
    assert kept.dtype == bool


def test_the_same_number_keeps_one_version_fewer_in_verl():
    for limit in range(1, 8):
        trl = ref.staleness_kept(np.arange(20), 19, limit, "trl").sum()
        verl = ref.staleness_kept(np.arange(20), 19, limit, "verl").sum()
        assert (trl, verl) == (limit + 1, limit)


@pytest.mark.parametrize("call", [
    lambda: ref.staleness_kept([3, 5], 4, 2, "trl"),            # a sample from a later version
    lambda: ref.staleness_kept([-1, 2], 4, 2, "trl"),
    lambda: ref.staleness_kept([1, 2], 4, None, "trl"),
    lambda: ref.staleness_kept([1, 2], 4, -1, "trl"),
    lambda: ref.staleness_kept([1, 2], 4, 0, "verl"),
    lambda: ref.staleness_kept([1, 2], 4, 2.0, "trl"),
    lambda: ref.staleness_kept([1.0, 2.0], 4, 2, "trl"),
    lambda: ref.staleness_kept([[1, 2]], 4, 2, "trl"),
    lambda: ref.staleness_kept([1, 2], 4, 2, "areal"),
    lambda: ref.staleness_kept([1, 2], True, 2, "trl"),
])
def test_staleness_rejects_bad_input(call):
    with pytest.raises((ValueError, TypeError)):
        call()


# ----------------------------------------------------------------------------- decoupled weights

RNG = np.random.default_rng(30)


def _batch(rng, b=3, l=5, spread=0.3):
    mask = rng.random((b, l)) < 0.8
    mask[:, 0] = True
    behav = -rng.exponential(1.5, size=(b, l)) - 0.05
    prox = np.minimum(behav + spread * rng.normal(size=(b, l)), 0.0)
    cur = np.minimum(prox + spread * rng.normal(size=(b, l)), 0.0)
    adv = rng.normal(size=b)
    return np.where(mask, behav, np.nan), np.where(mask, prox, np.nan), np.where(mask, cur, np.nan), adv, mask


def mp_surrogate(lb, lp, lc, a, eps_low, eps_high, cap):
    w = mpmath.exp(lp - lb)
    wbar = w if cap is None else min(w, mpmath.mpf(cap))
    r = mpmath.exp(lc - lp)
    clipped = mp_clip(r, 1 - mpmath.mpf(eps_low), 1 + mpmath.mpf(eps_high))
    return wbar * min(r * a, clipped * a)


@pytest.mark.parametrize("eps, cap", [((0.2, 0.2), None), ((0.2, 0.28), 2.0), ((0.1, 0.3), 1.05)])
def test_decoupled_weights_against_mpmath(eps, cap):
    behav, prox, cur, adv, mask = _batch(RNG, spread=0.4)
    out = ref.decoupled_weights(behav, prox, cur, adv, mask, *eps, cap=cap)
    for key in ("weight", "truncated", "ratio", "surrogate", "gradient"):
        assert out[key].shape == mask.shape and out[key].dtype == np.float64
        assert np.all(out[key][~mask] == 0.0)
    for i, j in zip(*np.nonzero(mask)):
        lb, lp, lc, a = mp([behav[i, j], prox[i, j], cur[i, j], adv[i]])
        r = mpmath.exp(lc - lp)
        boundary = min(abs(r - (1 - mpmath.mpf(eps[0]))), abs(r - (1 + mpmath.mpf(eps[1]))))
        assert boundary > 1e-9  # no ratio on a clip bound: the derivative below is two-sided
        w = mpmath.exp(lp - lb)
        assert_close(out["weight"][i, j], w)
        assert_close(out["truncated"][i, j], w if cap is None else min(w, cap))
        assert_close(out["ratio"][i, j], r)
        assert_close(out["surrogate"][i, j], mp_surrogate(lb, lp, lc, a, *eps, cap))
        derivative = (mp_surrogate(lb, lp, lc + H, a, *eps, cap) - mp_surrogate(lb, lp, lc - H, a, *eps, cap)) / (2 * H)
        assert_close(out["gradient"][i, j], derivative)


def test_decoupled_weights_reduce_as_stated():
    behav, prox, cur, adv, mask = _batch(RNG)
    # proximal = behaviour: weight 1, standard PPO with the clip around the sampler
    same = ref.decoupled_weights(behav, behav, cur, adv, mask)
    assert np.all(same["weight"][mask] == 1.0) and np.all(same["truncated"][mask] == 1.0)
    # all three equal (k = 0): ratio 1, surrogate and gradient the advantage
    on = ref.decoupled_weights(behav, behav, behav, adv, mask, cap=2.0)
    a = np.broadcast_to(adv[:, None], mask.shape)
    assert np.array_equal(on["surrogate"][mask], a[mask]) and np.array_equal(on["gradient"][mask], a[mask])
    # a cap above every weight changes nothing
    wide = ref.decoupled_weights(behav, prox, cur, adv, mask, cap=1e6)
    free = ref.decoupled_weights(behav, prox, cur, adv, mask)
    assert all(np.array_equal(wide[k], free[k]) for k in free)


# ----------------------------------------------------------------------------- the exact expectation


def mp_expectation(theta, proximal, behaviour, adv, eps_low, eps_high, cap):
    """sum_a b(a) min(w, c) min(r A, clip(r) A) in mpmath, from the logits."""
    lq, lp, lb = mp_log_softmax(theta), mp_log_softmax(proximal), mp_log_softmax(behaviour)
    total = mpmath.mpf(0)
    for a in range(len(theta)):
        b = mpmath.exp(lb[a])
        w = mpmath.exp(lp[a] - lb[a])
        wbar = w if cap is None else min(w, mpmath.mpf(cap))
        r = mpmath.exp(lq[a] - lp[a])
        clipped = mp_clip(r, 1 - mpmath.mpf(eps_low), 1 + mpmath.mpf(eps_high))
        total += b * wbar * min(r * adv[a], clipped * adv[a])
    return total


def mp_gradient(theta, *rest):
    t = mp(theta)
    grad = []
    for i in range(len(t)):
        up, down = list(t), list(t)
        up[i] += H
        down[i] -= H
        grad.append((mp_expectation(up, *rest) - mp_expectation(down, *rest)) / (2 * H))
    return grad


STEPS = [
    ("random, no cap", (0.2, 0.2), None, 0.4),
    ("random, cap 2", (0.2, 0.28), 2.0, 0.8),
    ("random, cap 1.1", (0.1, 0.3), 1.1, 0.6),
]


@pytest.mark.parametrize("name, eps, cap, spread", STEPS, ids=[s[0] for s in STEPS])
def test_surrogate_expectation_against_mpmath(name, eps, cap, spread):
    rng = np.random.default_rng(sum(map(ord, name)))
    behaviour = rng.normal(size=6)
    proximal = behaviour + spread * rng.normal(size=6)
    theta = proximal + 0.5 * rng.normal(size=6)
    adv = rng.normal(size=6)
    out = ref.surrogate_expectation(theta, proximal, behaviour, adv, *eps, cap=cap)
    rest = (mp(proximal), mp(behaviour), mp(adv), *eps, cap)
    assert_close(out["value"], mp_expectation(mp(theta), *rest))
    assert_close(out["gradient"], mp_gradient(theta, *rest), rtol=1e-10, atol=1e-13)


def test_decoupled_is_the_on_policy_gradient_at_the_proximal_policy_whatever_the_sampler():
    rng = np.random.default_rng(3)
    proximal, adv = rng.normal(size=5), rng.normal(size=5)
    q = np.exp(proximal - np.log(np.exp(proximal).sum()))
    on_policy = q * adv - q * np.sum(q * adv)
    for behaviour in (proximal, proximal + rng.normal(size=5), proximal + 3 * rng.normal(size=5)):
        out = ref.surrogate_expectation(proximal, proximal, behaviour, adv)
        assert np.allclose(out["gradient"], on_policy, rtol=1e-13, atol=1e-15)
    # truncated, it is exact only where the weight is not truncated
    behaviour = proximal + 2 * rng.normal(size=5)
    w = np.exp((proximal - np.log(np.exp(proximal).sum())) - (behaviour - np.log(np.exp(behaviour).sum())))
    cap = float(np.sort(w)[2])  # two tokens above the cap
    truncated = ref.surrogate_expectation(proximal, proximal, behaviour, adv, cap=cap)
    coefficient = q * adv * np.minimum(1.0, cap / w)
    assert np.allclose(truncated["gradient"], coefficient - q * coefficient.sum(), rtol=1e-12, atol=1e-15)
    assert not np.allclose(truncated["gradient"], on_policy)


def test_a_token_the_sampler_never_draws_counts_with_its_proximal_mass():
    """b underflows (w overflows) where p does not: log space gives the exact contribution."""
    proximal = np.array([0.0, 1.0, -0.5])
    behaviour = np.array([0.0, -900.0, 2.0])
    adv = np.array([1.0, 2.0, -1.0])
    out = ref.surrogate_expectation(proximal, proximal, behaviour, adv)
    p = np.exp(proximal - np.log(np.exp(proximal).sum()))
    assert np.isfinite(out["value"]) and math.isclose(out["value"], float(p @ adv), rel_tol=1e-13)
    capped = ref.surrogate_expectation(proximal, proximal, behaviour, adv, cap=2.0)
    assert np.all(np.isfinite(capped["gradient"]))
    assert_close(capped["value"], mp_expectation(mp(proximal), mp(proximal), mp(behaviour), mp(adv), 0.2, 0.2, 2.0))


@pytest.mark.parametrize("call", [
    lambda: ref.surrogate_expectation([0.0, 1.0], [0.0], [0.0, 1.0], [1.0, 1.0]),
    lambda: ref.surrogate_expectation([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0]),
    lambda: ref.surrogate_expectation([0.0, np.nan], [0.0, 1.0], [0.0, 1.0], [1.0, 1.0]),
    lambda: ref.surrogate_expectation([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 1.0], cap=0.0),
    lambda: ref.surrogate_expectation([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 1.0], eps_low=1.0),
    lambda: ref.decoupled_weights([[-1.0]], [[-1.0]], [[-1.0]], [1.0, 2.0], [[1]]),
    lambda: ref.decoupled_weights([[-1.0]], [[0.5]], [[-1.0]], [1.0], [[1]]),
    lambda: ref.decoupled_weights([[-1.0, -1.0]], [[-1.0]], [[-1.0]], [1.0], [[1]]),
    lambda: ref.decoupled_weights([[-1.0]], [[-1.0]], [[-1.0]], [1.0], [[1]], cap=-1.0),
])
def test_weights_reject_bad_input(call):
    with pytest.raises((ValueError, TypeError)):
        call()


# ----------------------------------------------------------------------------- routing


def mp_routed(experts, router_choose, router_gate, tokens, top_k):
    out = []
    for t in range(experts.shape[0]):
        order = sorted(range(experts.shape[1]), key=lambda e: (-router_choose[t, e], e))[:top_k]
        gates = mp_log_softmax(mp([router_gate[t, e] for e in order]))
        z = [mpmath.fsum(mpmath.exp(g) * mpmath.mpf(float(experts[t, e, v])) for g, e in zip(gates, order))
             for v in range(experts.shape[2])]
        out.append(mp_log_softmax(z)[int(tokens[t])])
    return out


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_routed_logprobs_against_a_loop_in_mpmath(top_k):
    rng = np.random.default_rng(top_k)
    experts = rng.normal(scale=2.0, size=(6, 4, 5))
    engine = rng.normal(size=(6, 4))
    trainer = engine + 0.4 * rng.normal(size=(6, 4))
    tokens = rng.integers(0, 5, size=6)
    out = ref.routed_logprobs(experts, engine, trainer, tokens, top_k)
    assert_close(out["engine"], mp_routed(experts, engine, engine, tokens, top_k))
    assert_close(out["trainer"], mp_routed(experts, trainer, trainer, tokens, top_k))
    assert_close(out["replayed"], mp_routed(experts, engine, trainer, tokens, top_k))


def test_replay_is_exact_when_the_routers_agree_up_to_a_constant_and_large_logits_work():
    rng = np.random.default_rng(9)
    experts = rng.normal(scale=400.0, size=(4, 5, 7))
    engine = rng.normal(size=(4, 5)) * 1000.0
    shifted = engine + rng.normal(size=(4, 1)) * 50.0
    tokens = rng.integers(0, 7, size=4)
    out = ref.routed_logprobs(experts, engine, shifted, tokens, 2)
    assert np.all(np.isfinite(out["engine"]))
    assert np.allclose(out["trainer"], out["engine"], rtol=1e-12) and np.allclose(out["replayed"], out["engine"], rtol=1e-12)
    assert_close(out["engine"], mp_routed(experts, engine, engine, tokens, 2), rtol=1e-11)


@pytest.mark.parametrize("call", [
    lambda: ref.routed_logprobs(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 3)), [0, 1], 4),
    lambda: ref.routed_logprobs(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 3)), [0, 4], 1),
    lambda: ref.routed_logprobs(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 2)), [0, 1], 1),
    lambda: ref.routed_logprobs(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 3)), [0.0, 1.0], 1),
    lambda: ref.routed_logprobs(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), [0, 1], 1),
    lambda: ref.routed_logprobs(np.full((2, 3, 4), np.inf), np.zeros((2, 3)), np.zeros((2, 3)), [0, 1], 1),
    lambda: ref.routed_logprobs(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 3)), [0, 1], 0),
])
def test_routing_rejects_bad_input(call):
    with pytest.raises((ValueError, TypeError)):
        call()
