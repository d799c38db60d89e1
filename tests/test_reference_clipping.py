"""Exercise 29's reference (autograder.reference.clipping) against independent oracles.

* Every gradient is a central difference, in mpmath at 50 digits, of the loss as each trainer writes it
  (verl==0.9.1 ``compute_policy_loss_vanilla`` and ``compute_policy_loss_cispo``, openrlhf==0.11.2
  ``PolicyLoss.forward``, trl==1.16.0 ``GRPOTrainer._compute_loss``), transcribed step by step below in mpmath
  (no formula of the reference reused): a token's loss depends on its own log-probability only, so the
  derivative is taken token by token. For CISPO the detached weight is held at its value at the point.
* Every loss value is the transcription's value; the clipped flags are the trainers' clip-fraction metrics
  elementwise (verl's ``pg_clipfrac`` and ``pg_clipfrac_lower``, CISPO's ``ratio != clipped_ratio``) and, for
  every PPO-style rule, exactly the tokens with a nonzero advantage and a zero finite difference.
* The stale-sequence mask against TRL's ``get_off_policy_mask`` transcribed in exact fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.reference import clipping as ref

mpmath.mp.dps = 50
H = mpmath.mpf("1e-20")


# ----------------------------------------------------------------------------- the trainers, in mpmath


def _clamp(x, low=None, high=None):
    """torch.clamp on one value."""
    if low is not None and x < low:
        x = mpmath.mpf(low)
    if high is not None and x > high:
        x = mpmath.mpf(high)
    return x


def verl_vanilla(x, old, adv, clip_low, clip_high, clip_c):
    """verl==0.9.1 core_algos.compute_policy_loss_vanilla, one token (pg_losses)."""
    negative_approx_kl = _clamp(x - old, -20, 20)
    ratio = mpmath.exp(negative_approx_kl)
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * _clamp(ratio, 1 - mpmath.mpf(clip_low), 1 + mpmath.mpf(clip_high))
    clip_pg_losses1 = max(pg_losses1, pg_losses2)
    pg_losses3 = -adv * clip_c
    clip_pg_losses2 = min(pg_losses3, clip_pg_losses1)
    return clip_pg_losses2 if adv < 0 else clip_pg_losses1


def verl_clipfrac(x, old, adv, clip_low, clip_high, clip_c) -> bool:
    """verl's two clip metrics, elementwise: gt(pg_losses2, pg_losses1) or the dual clip's lower one."""
    ratio = mpmath.exp(_clamp(x - old, -20, 20))
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * _clamp(ratio, 1 - mpmath.mpf(clip_low), 1 + mpmath.mpf(clip_high))
    clip_pg_losses1 = max(pg_losses1, pg_losses2)
    lower = clip_pg_losses1 > -adv * clip_c and adv < 0
    return bool(pg_losses2 > pg_losses1 or lower)


def openrlhf_policy_loss(x, old, adv, clip_eps_low, clip_eps_high, dual_clip):
    """openrlhf==0.11.2 models/loss.py PolicyLoss.forward (policy_loss_type "ppo"), one token, before aggregation."""
    ratio = mpmath.exp(_clamp(x - old, -20, 20))
    surr1 = ratio * adv
    surr2 = _clamp(ratio, 1 - mpmath.mpf(clip_eps_low), 1 + mpmath.mpf(clip_eps_high)) * adv
    if dual_clip is None:
        return -min(surr1, surr2)
    clip1 = min(surr1, surr2)
    clip2 = max(clip1, dual_clip * adv)
    return -(clip2 if adv < 0 else clip1)


def trl_grpo(x, old, adv, epsilon_low, epsilon_high, delta):
    """trl==1.16.0 GRPOTrainer._compute_loss, loss_type "dapo" (token level), one token's per_token_loss."""
    coef_1 = mpmath.exp(x - old)
    coef_2 = _clamp(coef_1, 1 - mpmath.mpf(epsilon_low), 1 + mpmath.mpf(epsilon_high))
    if delta is not None:
        coef_1 = _clamp(coef_1, high=delta)
    return -min(coef_1 * adv, coef_2 * adv)


def trl_cispo(x, x_frozen, old, adv, epsilon_high):
    """trl==1.16.0, loss_type "cispo": -clamp(coef_1, max=epsilon_high).detach() * A * per_token_logps."""
    clamped_ratios = _clamp(mpmath.exp(x_frozen - old), high=epsilon_high)  # .detach(): at the point
    return -clamped_ratios * adv * x


def verl_cispo(x, x_frozen, old, adv, clip_ratio_low, clip_ratio_high):
    """verl==0.9.1 core_algos.compute_policy_loss_cispo, one token's pg_losses."""
    ratio = mpmath.exp(_clamp(x_frozen - old, -20, 20))
    clipped_ratio_sg = _clamp(ratio, 1 - mpmath.mpf(clip_ratio_low), 1 + mpmath.mpf(clip_ratio_high))
    return -clipped_ratio_sg * adv * x


def per_token(loss, logp_new, logp_old, advantages, *params, frozen=False):
    """Values and central differences of ``loss`` at each token (mpf inputs from the float64 ones)."""
    values, slopes = [], []
    for x, old, adv in zip(np.ravel(logp_new), np.ravel(logp_old), np.ravel(advantages)):
        x, old, adv = mpmath.mpf(float(x)), mpmath.mpf(float(old)), mpmath.mpf(float(adv))
        f = (lambda y: loss(y, x, old, adv, *params)) if frozen else (lambda y: loss(y, old, adv, *params))
        values.append(f(x))
        slopes.append((f(x + H) - f(x - H)) / (2 * H))
    shape = np.shape(logp_new)
    return (np.array([float(v) for v in values]).reshape(shape), np.array([float(s) for s in slopes]).reshape(shape))


# ----------------------------------------------------------------------------- inputs


def tokens(seed: int, n: int = 40, *, spread: float = 1.2):
    """Random tokens: log-ratios N(0, spread), both log-probabilities <= 0, a few advantages exactly 0."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, spread, n)
    top = -rng.exponential(1.5, n) - 0.01  # the larger of the two log-probabilities
    logp_new, logp_old = np.where(d >= 0, top, top + d), np.where(d >= 0, top - d, top)
    adv = rng.normal(0.0, 1.0, n)
    adv[rng.choice(n, 4, replace=False)] = 0.0
    return logp_new, logp_old, adv


def clear_of(ratio, bounds, margin=1e-6) -> bool:
    """Every ratio at least ``margin`` (relative) away from every bound: no kink inside the differences."""
    return all(np.all(np.abs(np.log(ratio) - math.log(b)) > margin) for b in bounds if b)


def assert_close(actual, expected, rtol=1e-12, atol=1e-14):
    assert np.allclose(actual, expected, rtol=rtol, atol=atol), (actual, expected)


SETTINGS = [  # (eps_low, eps_high, the third parameter)
    (0.2, None, None), (0.2, 0.28, None), (0.2, 0.28, 3.0), (0.1, 0.5, 1.3), (0.2, 0.2, 10.0),
]


# ----------------------------------------------------------------------------- PPO, clip-higher, dual clip


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eps_low, eps_high, dual", SETTINGS)
def test_ppo_clip_loss_is_verls_and_openrlhfs_loss_and_its_derivative(seed, eps_low, eps_high, dual):
    new, old, adv = tokens(seed)
    high = eps_low if eps_high is None else eps_high
    assert clear_of(np.exp(new - old), (1 - eps_low, 1 + high, dual))
    got = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, dual)
    verl_c = 1e300 if dual is None else dual  # verl always applies a dual clip: a huge c is none
    values, slopes = per_token(verl_vanilla, new, old, adv, eps_low, high, verl_c)
    assert_close(got["loss"], values)
    assert_close(got["grad"], slopes, rtol=1e-11, atol=1e-13)
    o_values, _ = per_token(openrlhf_policy_loss, new, old, adv, eps_low, high, dual)
    assert_close(got["loss"], o_values)
    metric = [verl_clipfrac(mpmath.mpf(float(x)), mpmath.mpf(float(o)), mpmath.mpf(float(a)), eps_low, high, verl_c)
              for x, o, a in zip(new, old, adv)]
    assert got["clipped"].dtype == bool and got["clipped"].tolist() == metric
    assert np.array_equal(got["clipped"], (adv != 0) & (slopes == 0))


def test_the_clip_zeroes_only_the_side_the_advantage_pushes():
    """A > 0 loses its gradient above 1 + eps_high, A < 0 below 1 - eps_low; A < 0 far above keeps |A| r."""
    old = np.log(np.full(6, 0.1))
    new = np.log([0.6, 0.02, 0.6, 0.02, 0.6, 0.1])  # ratios 6, 0.2, 6, 0.2, 6, 1
    adv = np.array([1.0, 1.0, -1.0, -1.0, 0.0, -2.0])
    out = ref.ppo_clip_loss(new, old, adv, 0.2, 0.28)
    assert out["clipped"].tolist() == [True, False, False, True, False, False]
    assert_close(out["grad"], [0.0, -0.2, 6.0, 0.0, 0.0, 2.0])
    dual = ref.ppo_clip_loss(new, old, adv, 0.2, 0.28, dual_clip=3.0)
    assert dual["clipped"].tolist() == [True, False, True, True, False, False]
    assert_close(dual["grad"], [0.0, -0.2, 0.0, 0.0, 0.0, 2.0])
    assert_close(dual["loss"][2], 3.0)  # -c * A: the loss is capped, its gradient 0


# ----------------------------------------------------------------------------- TRL's delta


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("eps_low, eps_high, delta", [(0.2, None, 3.0), (0.2, 0.28, 1.2), (0.2, 0.28, 1.5),
                                                      (0.1, 0.5, 1.05), (0.2, 0.2, 4.0)])
def test_trl_delta_loss_is_trls_loss_and_its_derivative(seed, eps_low, eps_high, delta):
    new, old, adv = tokens(seed)
    high = eps_low if eps_high is None else eps_high
    assert clear_of(np.exp(new - old), (1 - eps_low, 1 + high, delta))
    got = ref.trl_delta_loss(new, old, adv, delta, eps_low, eps_high)
    values, slopes = per_token(trl_grpo, new, old, adv, eps_low, high, delta)
    assert_close(got["loss"], values)
    assert_close(got["grad"], slopes, rtol=1e-11, atol=1e-13)
    assert np.array_equal(got["clipped"], (adv != 0) & (slopes == 0))
    dual = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, delta)
    if delta >= 1 + high:  # then delta is the dual clip with c = delta, and nothing else
        assert np.array_equal(got["loss"], dual["loss"]) and np.array_equal(got["grad"], dual["grad"])
    else:  # below 1 + eps_high it differs where delta < r < 1 + eps_high, for either sign of A
        between = math.log((delta + 1 + high) / 2)
        x, o, a = np.array([-1.0 + between, -1.0 + between]), np.array([-1.0, -1.0]), np.array([1.0, -1.0])
        two, one = ref.trl_delta_loss(x, o, a, delta, eps_low, eps_high), ref.ppo_clip_loss(x, o, a, eps_low, eps_high, delta)
        assert two["clipped"].tolist() == [True, False] and one["clipped"].tolist() == [False, True]


def test_trl_without_delta_is_the_plain_clip():
    new, old, adv = tokens(5)
    plain, _ = per_token(trl_grpo, new, old, adv, 0.2, 0.28, None)
    assert_close(ref.ppo_clip_loss(new, old, adv, 0.2, 0.28)["loss"], plain)


# ----------------------------------------------------------------------------- CISPO


@pytest.mark.parametrize("seed", [6, 7])
@pytest.mark.parametrize("epsilon_high", [5.0, 1.5])
def test_cispo_in_trls_form(seed, epsilon_high):
    new, old, adv = tokens(seed, spread=1.5)
    assert clear_of(np.exp(new - old), (epsilon_high,))
    got = ref.cispo_loss(new, old, adv, weight_high=epsilon_high)
    values, slopes = per_token(trl_cispo, new, old, adv, epsilon_high, frozen=True)
    assert_close(got["loss"], values)
    assert_close(got["grad"], slopes, rtol=1e-11, atol=1e-13)
    ratio = np.exp(new - old)
    assert np.array_equal(got["clipped"], ratio > epsilon_high)
    assert np.all(got["grad"][adv != 0] != 0)  # nothing is zeroed: the clipped tokens keep a capped gradient


@pytest.mark.parametrize("seed", [8, 9])
@pytest.mark.parametrize("clip_low, clip_high", [(0.2, 0.28), (0.2, 0.2), (0.5, 1.0)])
def test_cispo_in_verls_form(seed, clip_low, clip_high):
    new, old, adv = tokens(seed, spread=1.5)
    assert clear_of(np.exp(new - old), (1 - clip_low, 1 + clip_high))
    got = ref.cispo_loss(new, old, adv, 1 + clip_high, 1 - clip_low)
    values, slopes = per_token(verl_cispo, new, old, adv, clip_low, clip_high, frozen=True)
    assert_close(got["loss"], values)
    assert_close(got["grad"], slopes, rtol=1e-11, atol=1e-13)
    ratio = np.exp(new - old)
    clipped_ratio = np.clip(ratio, 1 - clip_low, 1 + clip_high)  # verl's pg_clipfrac: ratio != clipped_ratio
    assert np.array_equal(got["clipped"], ratio != clipped_ratio)


def test_cispo_differs_from_its_undetached_weight():
    """Differentiating through the weight (no stop-gradient) gives another gradient where it is not clipped."""
    new, old, adv = tokens(10, spread=1.5)
    got = ref.cispo_loss(new, old, adv, weight_high=5.0)
    _, through = per_token(lambda x, o, a, cap: -_clamp(mpmath.exp(x - o), high=cap) * a * x, new, old, adv, 5.0)
    inside = (adv != 0) & ~got["clipped"]
    assert inside.any() and np.all(np.abs(got["grad"][inside] - through[inside]) > 1e-6)


# ----------------------------------------------------------------------------- properties over arbitrary tokens


finite = st.floats(-30.0, 0.0, allow_nan=False)
#: Advantages as trainers make them: 0 (a tied group) or of order 1 (normalised), never denormal.
advantage = st.one_of(st.just(0.0), st.floats(0.01, 5.0), st.floats(-5.0, -0.01))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(finite, finite, advantage), min_size=1, max_size=12),
       st.floats(0.0, 0.9), st.floats(0.0, 2.0), st.floats(1.001, 20.0))
def test_which_tokens_lose_their_gradient(rows, eps_low, eps_high, bound):
    new, old, adv = (np.array(column) for column in zip(*rows))
    for out in (ref.ppo_clip_loss(new, old, adv, eps_low, eps_high),
                ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, bound),
                ref.trl_delta_loss(new, old, adv, bound, eps_low, eps_high)):
        assert np.array_equal(out["clipped"], (adv != 0) & (out["grad"] == 0))
        assert np.all(out["clipped"] <= (adv != 0))
    cispo = ref.cispo_loss(new, old, adv, bound)
    assert np.all((cispo["grad"] != 0) == (adv != 0))
    assert np.all(np.abs(cispo["grad"]) <= bound * np.abs(adv))
    dual = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, bound)
    # the dual clip bounds a negative advantage's gradient by c |A|; a positive one is bounded by the clip,
    # (1 + eps_high) |A|, which may exceed c (hypothesis found eps_high = 1, c = 1.5, r = e^0.5, A = 1)
    negative, positive = adv < 0, adv > 0
    assert np.all(np.abs(dual["grad"][negative]) <= bound * np.abs(adv[negative]) * (1 + 1e-15))
    assert np.all(np.abs(dual["grad"][positive]) <= (1 + eps_high) * adv[positive] * (1 + 1e-15))


# ----------------------------------------------------------------------------- the stale-sequence mask


def trl_off_policy_mask(advantages, per_token_logps, sampling_per_token_logps, mask, threshold):
    """trl==1.16.0 GRPOTrainer.get_off_policy_mask, in exact fractions of the float64 inputs."""
    keep, kls = [], []
    for a, row_new, row_s, row_m in zip(advantages, per_token_logps, sampling_per_token_logps, mask):
        kl_div = [Fraction(float(s)) - Fraction(float(n)) for s, n in zip(row_s, row_new)]
        kl_div = [k if m else Fraction(0) for k, m in zip(kl_div, row_m)]  # (kl_div * mask): padding is 0
        seq_kl_sum = sum(kl_div, Fraction(0))
        avg_seq_kl = seq_kl_sum / max(sum(bool(m) for m in row_m), 1)
        kls.append(avg_seq_kl)
        keep.append(a >= 0 or avg_seq_kl <= Fraction(threshold))
    return kls, keep


def test_stale_sequence_mask_is_trls():
    rng = np.random.default_rng(11)
    lengths = [5, 9, 1, 0, 12, 7, 3, 12]
    mask = np.arange(12)[None, :] < np.array(lengths)[:, None]
    new = -rng.exponential(1.0, mask.shape) - 0.05
    sampler = np.minimum(new + rng.normal(0.3, 0.6, mask.shape), 0.0)
    new_padded, sampler_padded = np.where(mask, new, np.nan), np.where(mask, sampler, 7.0)
    adv = np.array([1.0, -1.0, -0.5, -2.0, 0.0, -1.0, 0.5, -0.1])
    got = ref.stale_sequence_mask(new_padded, sampler_padded, adv, mask, 0.3)
    kls, keep = trl_off_policy_mask(adv, new, sampler, mask, 0.3)
    assert_close(got["kl"], [float(k) for k in kls], rtol=1e-14, atol=0)
    assert got["keep"].dtype == bool and got["keep"].tolist() == keep
    assert keep != [a >= 0 for a in adv] and keep != [k <= Fraction(0.3) for k in kls]  # both halves matter


def test_a_drift_exactly_at_the_threshold_and_an_empty_response_are_kept():
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=bool)
    new = np.array([[-1.0, -1.5, 0.0, 0.0], [-2.0, -2.0, -2.0, -2.0], [0.0] * 4, [-0.25, 0.0, 0.0, 0.0]])
    sampler = np.array([[-0.5, -1.0, 0.0, 0.0], [-1.0, -2.0, -2.0, -2.5], [0.0] * 4, [-0.5, 0.0, 0.0, 0.0]])
    out = ref.stale_sequence_mask(new, sampler, [-1.0, -1.0, -1.0, -1.0], mask, threshold=0.5)
    assert out["kl"].tolist() == [0.5, 0.125, 0.0, -0.25]
    assert out["keep"].tolist() == [True, True, True, True]
    assert ref.stale_sequence_mask(new, sampler, [-1.0] * 4, mask, threshold=0.25)["keep"].tolist() == [
        False, True, True, True]


# ----------------------------------------------------------------------------- bad input


LP = np.log([0.5, 0.25, 0.125])


@pytest.mark.parametrize("call, argument", [
    (lambda: ref.ppo_clip_loss(LP, LP[:2], [1.0, 1.0, 1.0]), "logp_old"),
    (lambda: ref.ppo_clip_loss(LP, LP, [[1.0], [1.0], [1.0]]), "advantages"),
    (lambda: ref.ppo_clip_loss(-LP, LP, [1.0, 1.0, 1.0]), "logp_new"),
    (lambda: ref.ppo_clip_loss(LP, LP, [1.0, np.nan, 1.0]), "advantages"),
    (lambda: ref.ppo_clip_loss(LP, LP, [1.0, 1.0, 1.0], eps_low=1.0), "eps_low"),
    (lambda: ref.ppo_clip_loss(LP, LP, [1.0, 1.0, 1.0], eps_high=-0.1), "eps_high"),
    (lambda: ref.ppo_clip_loss(LP, LP, [1.0, 1.0, 1.0], dual_clip=1.0), "dual_clip"),
    (lambda: ref.ppo_clip_loss(LP, LP, [1.0, 1.0, 1.0], eps_low=True), "eps_low"),
    (lambda: ref.ppo_clip_loss(-1.0, -1.0, 1.0), "logp_new"),
    (lambda: ref.trl_delta_loss(LP, LP, [1.0, 1.0, 1.0], delta=0.9), "delta"),
    (lambda: ref.trl_delta_loss(LP, LP, [1.0, 1.0, 1.0], delta=math.inf), "delta"),
    (lambda: ref.cispo_loss(LP, LP, [1.0, 1.0, 1.0], weight_high=0.0), "weight_high"),
    (lambda: ref.cispo_loss(LP, LP, [1.0, 1.0, 1.0], weight_high=1.2, weight_low=1.5), "weight_low"),
    (lambda: ref.stale_sequence_mask([LP], [LP], [1.0, 1.0], [[1, 1, 1]], 0.5), "advantages"),
    (lambda: ref.stale_sequence_mask([LP], [LP], [1.0], [[1, 1, 1]], -0.5), "threshold"),
    (lambda: ref.stale_sequence_mask(LP, LP, [1.0], [1, 1, 1], 0.5), "mask"),
    (lambda: ref.stale_sequence_mask([LP], [-LP], [1.0], [[1, 1, 1]], 0.5), "logp_sampler"),
    (lambda: ref.stale_sequence_mask([LP], [LP[:2]], [1.0], [[1, 1, 1]], 0.5), "logp_sampler"),
])
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        call()


def test_lists_and_two_dimensional_batches():
    new, old, adv = tokens(12, 12)
    flat = ref.ppo_clip_loss(new, old, adv, 0.2, 0.28, 3.0)
    square = ref.ppo_clip_loss(new.reshape(3, 4).tolist(), old.reshape(3, 4).tolist(), adv.reshape(3, 4).tolist(),
                               0.2, 0.28, 3.0)
    for key in ("loss", "grad", "clipped"):
        assert square[key].shape == (3, 4) and np.array_equal(square[key].ravel(), flat[key])
