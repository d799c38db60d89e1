"""Exercise 27's reference (autograder.reference.sequence_level) against independent oracles: mpmath at 50
digits for the ratios (products formed as products, not as exp of a float sum), exact rational thresholds
for the lengths, and the rules written out once more token by token, as TRL and verl apply them."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from autograder.reference import sequence_level as ref

mpmath.mp.dps = 50


def _batch(seed, shape=(4, 9), scale=0.3):
    rng = np.random.default_rng(seed)
    old = -rng.exponential(2.0, size=shape)
    new = np.minimum(old + rng.normal(scale=scale, size=shape), 0.0)
    mask = np.arange(shape[1])[None, :] < rng.integers(0, shape[1] + 1, size=(shape[0], 1))
    mask[0, :] = True  # at least one full row
    return new, np.where(mask, old, np.nan), mask


def _mp_row(new, old, on):
    ratios = [mpmath.exp(mpmath.mpf(float(a)) - mpmath.mpf(float(b))) for a, b, keep in zip(new, old, on) if keep]
    product = mpmath.fprod(ratios) if ratios else mpmath.mpf(1)
    geometric = mpmath.root(product, len(ratios)) if ratios else mpmath.mpf(1)
    return ratios, product, geometric


@pytest.mark.parametrize("seed,scale", [(0, 0.3), (1, 2.0), (2, 0.01)])
def test_sequence_ratios_match_mpmath(seed, scale):
    new, old, mask = _batch(seed, scale=scale)
    out = ref.sequence_ratios(new, old, mask, eps_low=0.05, eps_high=0.1)
    for i in range(mask.shape[0]):
        ratios, product, geometric = _mp_row(new[i], old[i], mask[i])
        assert np.allclose(out["token"][i][mask[i]], [float(r) for r in ratios], rtol=1e-14)
        assert np.all(out["token"][i][~mask[i]] == 0.0)
        assert abs(out["product"][i] - float(product)) <= 1e-13 * float(product)
        assert abs(out["geometric"][i] - float(geometric)) <= 1e-14 * float(geometric)
        clipped = min(max(geometric, mpmath.mpf("0.95")), mpmath.mpf("1.1"))
        assert abs(out["gspo_clipped"][i] - float(clipped)) <= 1e-14
        log_product = mpmath.log(product)
        weight = mpmath.exp(min(max(log_product, -20), 20))
        assert abs(out["verl_sequence"][i] - float(weight)) <= 1e-13 * float(weight)


def test_long_responses_in_log_space():
    """1000 tokens at log-ratio -1 (and +1): the product leaves float64 (0 and inf), the geometric mean is
    e^-1 (e) exactly as mpmath's 1000th root of the product, verl's weight is e^-20 (e^20)."""
    old = np.full((2, 1000), -1.0)
    new = np.stack([np.full(1000, -2.0), np.zeros(1000)])
    out = ref.sequence_ratios(new, old, np.ones((2, 1000), dtype=bool))
    product = mpmath.exp(mpmath.mpf(-1000))
    assert out["product"][0] == 0.0 and float(product) == 0.0 and out["product"][1] == math.inf
    assert abs(out["geometric"][0] - float(mpmath.root(product, 1000))) <= 1e-15
    assert abs(out["geometric"][1] - float(mpmath.e)) <= 1e-14
    assert np.allclose(out["verl_sequence"], [float(mpmath.exp(-20)), float(mpmath.exp(20))], rtol=1e-14)


def _kept_by_hand(new, old, mask, rule, low, high):
    """The rules token by token and row by row, in mpmath (exact enough that no float boundary matters)."""
    if rule.endswith("_k1") and low is None:
        low = 1 / high
    kept = np.zeros(mask.shape, dtype=bool)
    for i in range(mask.shape[0]):
        d = [mpmath.mpf(float(a)) - mpmath.mpf(float(b)) for a, b, on in zip(new[i], old[i], mask[i]) if on]
        inside = lambda x, lo, hi: (lo is None or x >= lo) and (hi is None or x <= hi)  # noqa: E731
        if rule == "token_mask":
            flags = iter([inside(mpmath.exp(x), low, high) for x in d])
            kept[i] = [bool(on) and next(flags) for on in mask[i]]
            continue
        if rule == "sequence_mask":
            keep = inside(mpmath.exp(mpmath.fsum(d)), low, high)
        else:
            c = [min(max(x, -20), 20) for x in d]
            k1 = -mpmath.fsum(c) / (len(c) if rule == "seq_mean_k1" and c else 1)
            keep = inside(k1, mpmath.log(low), mpmath.log(high))
        kept[i] = mask[i] & keep
    return kept


@pytest.mark.parametrize("rule,low,high", [
    ("token_mask", None, 3.0), ("token_mask", 0.5, 1.5), ("sequence_mask", None, 3.0),
    ("sequence_mask", 0.5, 2.0), ("seq_sum_k1", None, 2.0), ("seq_sum_k1", 0.6, 1.4),
    ("seq_mean_k1", None, 1.2), ("seq_mean_k1", 0.9, 1.05)])
@pytest.mark.parametrize("seed", [3, 4])
def test_kept_mask_matches_the_rules_written_out(rule, low, high, seed):
    new, old, mask = _batch(seed, shape=(12, 7), scale=0.4)
    assert np.array_equal(ref.kept_mask(new, old, mask, rule, low, high),
                          _kept_by_hand(new, old, mask, rule, low, high))


def test_verl_clamps_each_token_before_summing():
    """A token at log-ratio -50 and one at +40: the clamped sum is 0 (kept); unclamped it is -10."""
    new, old = np.array([[-50.0, -1.0]]), np.array([[0.0, -41.0]])
    assert ref.kept_mask(new, old, np.ones((1, 2)), "seq_sum_k1", high=2.0).all()
    assert not ref.kept_mask(new, old, np.ones((1, 2)), "sequence_mask", low=0.5, high=2.0).any()


def _mp_first_dropped(b, rule, low, high, max_len):
    """The smallest n with n * b (as an exact rational) outside the log-bounds, from the closed form."""
    b = mpmath.mpf(b)
    if rule.endswith("_k1"):
        b = min(max(b, -20), 20)
        low = 1 / mpmath.mpf(high) if low is None else low
        lo, hi = -mpmath.log(high), -mpmath.log(low)  # bounds on the log-ratio (k1 = -log-ratio)
    else:
        lo = -mpmath.inf if low is None else mpmath.log(low)
        hi = mpmath.inf if high is None else mpmath.log(high)
    if rule in ("token_mask", "seq_mean_k1"):
        return 1 if not lo <= b <= hi else None
    if b == 0:
        return None
    edge = lo if b < 0 else hi
    if not mpmath.isfinite(edge):
        return None
    n = int(mpmath.floor(edge / b)) + 1  # the first n with n * b beyond the edge
    return n if n <= max_len else None


@pytest.mark.parametrize("b", [math.log(0.98), math.log(0.999), -0.37, 0.013, math.log(0.9995), 0.0, -25.0])
@pytest.mark.parametrize("rule,low,high", [
    ("token_mask", None, 3.0), ("token_mask", 0.9, 1.1), ("sequence_mask", None, 3.0), ("sequence_mask", 0.5, 3.0),
    ("seq_sum_k1", 0.5, 2.0), ("seq_sum_k1", None, 1.5), ("seq_mean_k1", 0.999, 1.001), ("seq_mean_k1", None, 2.0)])
def test_first_dropped_length_matches_the_closed_form(b, rule, low, high):
    expected = _mp_first_dropped(b, rule, low, high, ref.DEFAULT_MAX_LEN)
    assert ref.first_dropped_length(b, rule, low, high) == expected


def test_an_exact_threshold_is_kept():
    """b = -1/4 and low = e^-2 exactly in float64: n = 8 sits on the bound and is kept, 9 is dropped."""
    low = math.exp(-2.0)
    assert math.log(low) == -2.0 and np.exp(8 * -0.25) == low
    assert ref.first_dropped_length(-0.25, "sequence_mask", low=low, high=3.0) == 9
    assert ref.first_dropped_length(0.25, "seq_sum_k1", low=low, high=1 / low) == 9
    assert ref.first_dropped_length(-0.25, "sequence_mask", low=low, high=3.0, max_len=8) is None


@pytest.mark.parametrize("call", [
    lambda: ref.sequence_ratios([[-1.0]], [[-1.0, -2.0]], [[1]]),
    lambda: ref.sequence_ratios([[0.5]], [[-1.0]], [[1]]),
    lambda: ref.sequence_ratios([[np.nan]], [[-1.0]], [[1]]),
    lambda: ref.sequence_ratios(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2))),
    lambda: ref.sequence_ratios([[-1.0]], [[-1.0]], [[1]], eps_low=1.0),
    lambda: ref.kept_mask([[-1.0]], [[-1.0]], [[1]], "geo"),
    lambda: ref.kept_mask([[-1.0]], [[-1.0]], [[1]], "seq_sum_k1"),
    lambda: ref.kept_mask([[-1.0]], [[-1.0]], [[1]], "token_mask", low=2.0, high=1.5),
    lambda: ref.kept_mask([[-1.0]], [[-1.0]], [[1]], "token_mask", low=-1.0),
    lambda: ref.first_dropped_length(math.inf, "token_mask"),
    lambda: ref.first_dropped_length(-0.1, "sequence_mask", low=1.5, high=3.0),
    lambda: ref.first_dropped_length(-0.1, "sequence_mask", high=3.0, max_len=0),
])
def test_bad_input_is_refused(call):
    with pytest.raises((TypeError, ValueError)):
        call()


def test_the_doctests_of_the_module_pass():
    import doctest

    result = doctest.testmod(ref, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 6 and result.failed == 0
