"""Exercise 25's reference (autograder.reference.precision) against independent oracles: ml_dtypes'
bfloat16 (the JAX project's NumPy dtype), mpmath at 8 bits of precision (round to nearest, ties to even)
and at 50 digits (the exact log-softmax), and the rounding bound as an inequality on many draws."""

from __future__ import annotations

import ml_dtypes
import mpmath
import numpy as np
import pytest

from autograder.reference import precision


def ml_bf16(x) -> np.ndarray:
    """float32 values rounded by ml_dtypes (one rounding: float32 -> bfloat16), back as float64."""
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def mp_bf16(value: float) -> float:
    """The nearest number with an 8-bit significand (mpmath rounds to nearest, ties to even)."""
    with mpmath.workprec(8):
        return float(+mpmath.mpf(value))


def mp_log_softmax(row) -> list:
    with mpmath.workdps(50):
        row = [mpmath.mpf(float(v)) for v in row]
        norm = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in row))
        return [v - norm for v in row]


@pytest.mark.parametrize("scale", [1e-30, 1e-3, 1.0, 10.0, 1e3, 1e30])
def test_rounding_matches_ml_dtypes_on_float32_draws(scale):
    rng = np.random.default_rng(int(np.log10(scale)) + 40)
    x = (rng.standard_normal(50_000) * scale).astype(np.float32)
    np.testing.assert_array_equal(precision.round_to_bfloat16(x), ml_bf16(x))


def test_rounding_matches_ml_dtypes_on_ties_subnormals_and_overflow():
    ties = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 100.25, -101.75, 3 + 2.0 ** -7])
    subnormal = np.array([2.0 ** -130, 3 * 2.0 ** -134, 1.7 * 2.0 ** -127, 2.5 * 2.0 ** -133, -1.5 * 2.0 ** -133])
    edge = np.array([precision.BF16_MAX, -precision.BF16_MAX, 3.3961e38, 3.3963e38, 255.9, -7.99, 0.0, -0.0])
    for x in (ties, subnormal, edge):
        np.testing.assert_array_equal(precision.round_to_bfloat16(x), ml_bf16(x))
    assert precision.round_to_bfloat16(ties).tolist()[:3] == [1.0, 1.015625, -1.0]
    assert np.isinf(precision.round_to_bfloat16([3.3963e38])[0])


def test_rounding_float64_values_matches_mpmath_at_eight_bits():
    # float64 inputs are rounded once (ml_dtypes' float64 path is not relied on here).
    rng = np.random.default_rng(8)
    x = rng.standard_normal(3000) * 10.0 ** rng.uniform(-20, 20, size=3000)
    expected = [mp_bf16(value) for value in x]
    np.testing.assert_array_equal(precision.round_to_bfloat16(x), expected)


def test_the_rounding_bound_holds_and_is_tight():
    """|bf16(x) - x| <= h(x) = 2^(floor(log2|x|) - 8) on many draws, equality at midpoints."""
    rng = np.random.default_rng(9)
    x = -np.exp(rng.uniform(np.log(1e-6), np.log(1e4), size=200_000))
    h = precision.bf16_error_bounds(x)["logprob"]
    assert np.all(np.abs(precision.round_to_bfloat16(x) - x) <= h)
    np.testing.assert_array_equal(h, 2.0 ** (np.floor(np.log2(np.abs(x))) - 8))
    # a midpoint between two bf16 neighbours is off by exactly h, whichever way the tie goes
    mid = -(10.0 + 2.0 ** -5)  # -10 and -10.0625 are neighbours (spacing 2^-4 in [8, 16))
    assert abs(precision.round_to_bfloat16([mid])[0] - mid) == precision.bf16_error_bounds([mid])["logprob"][0]
    out = precision.bf16_error_bounds([-10.0, -8.0, -7.99, 0.0])
    assert out["logprob"].tolist() == [2.0 ** -5, 2.0 ** -5, 2.0 ** -6, 0.0]
    np.testing.assert_array_equal(out["ratio"], np.expm1(out["logprob"]))


@pytest.mark.parametrize("scale,vocab", [(1.0, 7), (3.0, 50), (6.0, 200)])
def test_logprobs_match_mpmath(scale, vocab):
    rng = np.random.default_rng(vocab)
    z = rng.normal(scale=scale, size=(3, vocab)).astype(np.float32)
    fp32 = precision.logprobs_at_precision(z, "float32")
    bf16 = precision.logprobs_at_precision(z, "bfloat16")
    for row, got32, got16 in zip(ml_bf16(z), fp32, bf16):
        exact = mp_log_softmax(row)
        np.testing.assert_allclose(got32, [float(v) for v in exact], rtol=1e-13, atol=1e-14)
        assert got16.tolist() == [mp_bf16(v) for v in exact]


def test_a_float32_computation_rounded_by_ml_dtypes_lands_in_the_graded_interval():
    """What PyTorch does (float32 arithmetic, one rounding) agrees with the reference except on entries
    within float32 error of a rounding boundary, and the check's interval accepts those."""
    from importlib import import_module

    check = import_module("autograder.exercises.25_logprob_precision.check")
    rng = np.random.default_rng(32)
    z = ml_bf16(rng.normal(scale=3.0, size=(8, 4000))).astype(np.float32)
    shifted = z - z.max(axis=-1, keepdims=True)
    torch_like = ml_bf16(shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True, dtype=np.float32)))
    reference = precision.logprobs_at_precision(z, "bfloat16")
    assert np.mean(torch_like == reference) > 0.99
    assert check._within(torch_like, precision.logprobs_at_precision(z, "float32"), precision._round)


def test_ratios_lie_within_the_bound_of_their_log_prob():
    rng = np.random.default_rng(10)
    z = rng.normal(scale=4.0, size=(5, 3000))
    lp = precision.logprobs_at_precision(z, "float32")
    r = precision.precision_ratios(z)
    h = precision.bf16_error_bounds(lp)["logprob"]
    assert np.all((r >= np.exp(-h) * (1 - 1e-15)) & (r <= np.exp(h) * (1 + 1e-15)))
    np.testing.assert_allclose(np.log(r), precision.logprobs_at_precision(z, "bfloat16") - lp, rtol=1e-12, atol=1e-15)


def test_bad_input_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match="x"):
        precision.round_to_bfloat16([1.0, np.nan])
    with pytest.raises(ValueError, match="precision"):
        precision.logprobs_at_precision([0.0, 1.0], "bf16")
    with pytest.raises(TypeError, match="precision"):
        precision.logprobs_at_precision([0.0, 1.0], 16)
    with pytest.raises(ValueError, match="logits"):
        precision.logprobs_at_precision(1.0, "float32")
    with pytest.raises(ValueError, match="logits"):
        precision.precision_ratios([0.0, np.inf])
    with pytest.raises(ValueError, match="logits"):
        precision.precision_ratios([0.0, 3.4e38])  # rounds to infinity in bf16
    with pytest.raises(ValueError, match="log_probs"):
        precision.bf16_error_bounds([-1.0, 0.5])
    with pytest.raises(ValueError, match="log_probs"):
        precision.bf16_error_bounds([np.nan])
