"""Floating-point accuracy of ``autograder.reference`` against an independent oracle.

The oracle is mpmath at 50 significant digits, fed the *exact* binary values of the float64
inputs (``mpmath.mpf(float)`` is exact), so the truth is the exact answer for the numbers the
function actually received, not for the decimal numbers we had in mind.

Tolerance rule used throughout (``rel`` = |computed - truth| / |truth|):

* log-softmax: ``rel <= 1e-15`` per element (about 4.5 ulps). This is a fair demand because
  ``log_softmax(x)_i = (x_i - m) - log sum_j exp(x_j - m)`` subtracts two non-positive quantities
  with no cancellation, so an implementation that shifts by the maximum and takes ``log1p`` of
  the non-maximal mass is accurate to a few ulps of the *result*, even when the result is tiny
  (``[0, -40]`` -> -4.25e-18, where ``log(sum)`` rounds to 0).
* k3 = r - 1 - log r: ``rel <= 1e-14`` and never negative, for log r from 1e-15 to 30.
  k3 ~ (log r)^2 / 2 near r = 1, so the naive formula loses everything to cancellation; a
  series for small log r is accurate to a few ulps.
* exact KL between nearby policies: ``rel <= 1e-12`` and never negative. A forward-accurate
  formulation (``sum p h(d)`` with ``h(x) = e^x - 1 - x`` and ``d`` computed from the logit
  differences) reaches ~3e-16 on these inputs; the plain ``sum p (log p - log q)`` is off by a
  factor of 1e2-1e9 and can turn negative.
* perplexity over N tokens: ``rel <= 1e-12`` (summation of N log-probabilities costs at most a
  few times log2(N) ulps with numpy's pairwise sums; 1e-12 leaves room without hiding a
  ``prod(p) ** (-1/N)`` underflow, which gives inf or 0).
* ordinary random inputs against scipy.special: ``rel <= 1e-13`` / ``atol <= 1e-15`` (scipy
  is itself accurate to a few ulps there; this guards against outright formula errors).

Where the truth overflows float64 (mean NLL beyond log(DBL_MAX) ~ 709.78), the correctly
rounded answer is +inf, and that is what is asserted: not NaN, not an exception.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.reference import (
    exact_kl_from_logits,
    kl_divergence,
    kl_estimators_at_ratio,
    kl_sample_values,
    masked_sequence_metrics,
    softmax,
    stable_log_softmax,
)

mpmath.mp.dps = 50

LOG_SOFTMAX_REL = 1e-15
K3_REL = 1e-14
KL_REL = 1e-12
PPL_REL = 1e-12


def mp_log_softmax(row) -> list:
    values = [mpmath.mpf(float(x)) for x in row]
    normaliser = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in values))
    return [v - normaliser for v in values]


def relative_errors(computed, truth) -> list[float]:
    out = []
    for c, t in zip(np.ravel(computed), truth):
        t = mpmath.mpf(t)
        if t == 0:
            out.append(0.0 if c == 0 else math.inf)
        else:
            out.append(float(abs(mpmath.mpf(float(c)) - t) / abs(t)))
    return out


# --------------------------------------------------------------------------------------
# log-softmax far from zero
# --------------------------------------------------------------------------------------

FAR_LOGITS = {
    "offset_1e3": [1e3, 1e3 + 1.0, 1e3 - 2.5, 1e3 + 0.25],
    "offset_minus_1e3": [-1e3, -1e3 + 1.0, -1e3 - 2.5],
    "offset_1e6": [1e6, 1e6 - 1.0, 1e6 + 3.0, 1e6 - 0.5],
    "offset_1e15": [1e15, 1e15 + 1.0, 1e15 - 2.0, 1e15 + 0.5],
    "offset_minus_1e15": [-1e15, -1e15 + 1.0, -1e15 - 2.0],
    "mixed_magnitudes": [1e3, -1e3, 0.0, 1e-3, 998.5, 1e-300],
    "zero_and_minus_40": [0.0, -40.0],
    "zero_and_minus_700": [0.0, -700.0, -1.0],
    "one_dominant_many_small": [50.0] + [0.0] * 7,
}


@pytest.mark.parametrize("name", sorted(FAR_LOGITS))
def test_log_softmax_far_from_zero_matches_mpmath(name):
    logits = np.array(FAR_LOGITS[name], dtype=np.float64)
    result = stable_log_softmax(logits)
    assert result.dtype == np.float64
    errors = relative_errors(result, mp_log_softmax(logits))
    assert max(errors) <= LOG_SOFTMAX_REL, (name, errors)
    assert np.all(result <= 0.0)


def test_log_softmax_of_zero_and_minus_40_keeps_the_tiny_value():
    # log(1 + e^-40) rounds to zero when computed as log(sum); the truth is -4.25e-18.
    result = stable_log_softmax(np.array([0.0, -40.0]))
    assert result[0] < 0.0
    assert result[0] == pytest.approx(-math.log1p(math.exp(-40.0)), rel=LOG_SOFTMAX_REL)


def test_log_softmax_along_other_axes_matches_mpmath():
    logits = np.array([[1e15, -3.0], [1e15 + 2.0, 4.0], [1e15 - 1.0, -40.0]])
    result = stable_log_softmax(logits, axis=0)
    for column in range(2):
        errors = relative_errors(result[:, column], mp_log_softmax(logits[:, column]))
        assert max(errors) <= LOG_SOFTMAX_REL
    assert np.allclose(softmax(logits, axis=0).sum(axis=0), 1.0, atol=1e-15, rtol=0)


@pytest.mark.parametrize("name", sorted(FAR_LOGITS))
def test_softmax_far_from_zero_matches_mpmath(name):
    logits = np.array(FAR_LOGITS[name], dtype=np.float64)
    result = softmax(logits)
    log_truth = mp_log_softmax(logits)
    # exp amplifies an absolute error in log p into a relative error in p, so the bound
    # grows with |log p|: 4 ulps * (1 + |log p|). Subnormal results are compared in
    # absolute terms.
    eps = np.finfo(np.float64).eps
    for c, lt in zip(result, log_truth):
        t = mpmath.exp(lt)
        bound = 4 * eps * (1 + abs(float(lt))) * abs(t)
        assert abs(mpmath.mpf(float(c)) - t) <= max(bound, 1e-300), (c, t)
    assert abs(float(result.sum()) - 1.0) <= 1e-15


# --------------------------------------------------------------------------------------
# k3 near r = 1 and far from it
# --------------------------------------------------------------------------------------

LOG_RATIOS = [1e-3, 1e-8, 1e-12, 1e-15, -1e-8, -1e-15, 30.0, -30.0]


def mp_k_values(log_ratio) -> dict:
    lr = mpmath.mpf(log_ratio)
    return {"k1": -lr, "k2": lr * lr / 2, "k3": mpmath.expm1(lr) - lr}


@pytest.mark.parametrize("log_ratio", LOG_RATIOS)
def test_k3_from_samples_matches_mpmath(log_ratio):
    # log q = -40 and log p = -40 + log_ratio are both valid log-probabilities, and their
    # float difference is exact (Sterbenz) for the small ratios; the truth uses the exact
    # float difference anyway.
    log_q = np.array([-40.0])
    log_p = np.array([-40.0 + log_ratio])
    exact_log_ratio = mpmath.mpf(float(log_p[0])) - mpmath.mpf(float(log_q[0]))
    values = kl_sample_values(log_q, log_p)
    truth = mp_k_values(exact_log_ratio)
    k3 = float(np.asarray(values["k3"]).ravel()[0])
    assert k3 >= 0.0
    assert relative_errors([k3], [truth["k3"]])[0] <= K3_REL, (log_ratio, k3, truth["k3"])
    for name in ("k1", "k2"):
        value = float(np.asarray(values[name]).ravel()[0])
        assert relative_errors([value], [truth[name]])[0] <= K3_REL


@pytest.mark.parametrize("log_ratio", LOG_RATIOS)
def test_k3_at_ratio_matches_mpmath(log_ratio):
    ratio = math.exp(log_ratio)
    exact_log_ratio = mpmath.log(mpmath.mpf(ratio))
    values = kl_estimators_at_ratio(ratio)
    k3 = float(values["k3"])
    assert k3 >= 0.0
    assert relative_errors([k3], [mp_k_values(exact_log_ratio)["k3"]])[0] <= K3_REL


def test_k3_is_zero_exactly_at_ratio_one():
    assert float(kl_estimators_at_ratio(1.0)["k3"]) == 0.0
    values = kl_sample_values(np.array([-0.3, -2.0]), np.array([-0.3, -2.0]))
    assert np.all(np.asarray(values["k3"]) == 0.0)


# --------------------------------------------------------------------------------------
# Exact KL between nearby policies
# --------------------------------------------------------------------------------------


def mp_kl_from_logits(p_row, q_row):
    p_log = mp_log_softmax(p_row)
    q_log = mp_log_softmax(q_row)
    return mpmath.fsum(mpmath.exp(a) * (a - b) for a, b in zip(p_log, q_log))


@pytest.mark.parametrize("gap", [1e-9, 1e-12])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_kl_between_nearby_policies(gap, seed):
    rng = np.random.default_rng(seed)
    p_logits = rng.normal(size=(3, 6))
    q_logits = p_logits + gap * rng.normal(size=(3, 6))
    result = exact_kl_from_logits(p_logits, q_logits)
    assert result.shape == (3,)
    assert np.all(result >= 0.0)
    truths = [mp_kl_from_logits(p_logits[i], q_logits[i]) for i in range(3)]
    errors = relative_errors(result, truths)
    assert max(errors) <= KL_REL, (gap, errors)


def test_exact_kl_of_identical_logits_is_zero_not_negative():
    rng = np.random.default_rng(7)
    logits = rng.normal(scale=30.0, size=(5, 11))
    result = exact_kl_from_logits(logits, logits)
    assert np.all(result == 0.0)


def test_exact_kl_with_large_logits_matches_mpmath():
    p_logits = np.array([[1e6, 1e6 - 1.0, 1e6 - 3.0], [0.0, -40.0, -700.0]])
    q_logits = np.array([[1e6 - 2.0, 1e6, 1e6 - 0.5], [-40.0, 0.0, -1.0]])
    result = exact_kl_from_logits(p_logits, q_logits)
    truths = [mp_kl_from_logits(p_logits[i], q_logits[i]) for i in range(2)]
    assert max(relative_errors(result, truths)) <= KL_REL


def test_exact_kl_at_the_edge_of_float64_is_finite_and_matches_mpmath():
    """Logits spanning almost the whole float64 range: the exact KL is just below 1.8e308, and a plain sum of
    its three large terms rounded past the limit into inf (hypothesis found it); the last two rows stay
    ordinary, so the fallback must touch only the row that overflowed."""
    top = np.finfo(np.float64).max
    p_logits = np.array([[0.0, 0.0, 0.0, -33.0, -37.0], [0.0, 0.0, 0.0, -33.0, -37.0],
                         [0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 0.0, 0.0, 0.0, 0.0]])
    q_logits = np.array([[0.0, 0.0, 0.0, 0.0, 1.79769313e308], [0.0, 0.0, 0.0, 0.0, top],
                         [4.0, 3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 5.0]])
    result = exact_kl_from_logits(p_logits, q_logits)
    assert np.all(np.isfinite(result))
    truths = [mp_kl_from_logits(p_logits[i], q_logits[i]) for i in range(4)]
    assert max(relative_errors(result, truths)) <= KL_REL


def mp_kl_divergence(p_row, q_row):
    total = mpmath.mpf(0)
    for a, b in zip(p_row, q_row):
        a, b = mpmath.mpf(float(a)), mpmath.mpf(float(b))
        if a == 0:
            continue
        if b == 0:
            return mpmath.inf
        total += a * mpmath.log(a / b)
    return total


@pytest.mark.parametrize(
    ("p", "q"),
    [
        ([0.6, 0.4], [0.5, 0.5]),
        ([0.7, 0.3], [0.4, 0.6]),
        ([1.0, 0.0], [0.8, 0.2]),
        ([0.25, 0.25, 0.5], [0.5, 0.25, 0.25]),
        ([1.0 - 2.0**-30, 2.0**-30], [0.5, 0.5]),
        ([0.5, 0.25, 0.25 - 2.0**-50, 2.0**-50], [0.25, 0.25, 0.25, 0.25]),
    ],
)
def test_kl_divergence_matches_mpmath(p, q):
    value = float(kl_divergence(p, q))
    truth = mp_kl_divergence(p, q)
    assert value >= 0.0
    # The cases are exact binary fractions that sum to one, and sit well away from p = q:
    # close to p = q, KL is ill-conditioned in the inputs themselves and a relative bound
    # would demand more than the inputs carry.
    assert relative_errors([value], [truth])[0] <= 1e-12, (value, truth)


def test_kl_divergence_infinite_and_batched():
    result = kl_divergence([[0.8, 0.2], [0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]])
    assert np.asarray(result).shape == (2,)
    assert np.isposinf(result[0])
    assert result[1] == 0.0


# --------------------------------------------------------------------------------------
# Perplexity over long sequences
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1000, 100_000])
def test_perplexity_of_long_sequences_does_not_underflow(length):
    rng = np.random.default_rng(length)
    probabilities = rng.uniform(0.45, 0.55, size=length)
    logprobs = np.log(probabilities)[None, :]
    # A product of 1000 halves is ~1e-301 and 100000 of them underflows to 0 outright.
    metrics = masked_sequence_metrics(logprobs, np.ones_like(logprobs, dtype=bool))
    total = mpmath.fsum(mpmath.mpf(float(x)) for x in logprobs[0])
    mean_nll = -total / length
    assert metrics.token_count[0] == length
    assert relative_errors([metrics.sum_logprob[0]], [total])[0] <= PPL_REL
    assert relative_errors([metrics.mean_nll[0]], [mean_nll])[0] <= PPL_REL
    assert relative_errors([metrics.perplexity[0]], [mpmath.exp(mean_nll)])[0] <= PPL_REL
    assert 1.8 < metrics.perplexity[0] < 2.25


def test_perplexity_overflow_is_infinite_not_nan():
    # mean NLL 710 > log(DBL_MAX) ~ 709.78: exp overflows, and the correctly rounded
    # perplexity is +inf. Just below the limit it stays finite.
    logprobs = np.array([[-710.0, -710.0], [-709.0, -709.0]])
    with np.errstate(over="ignore"):
        metrics = masked_sequence_metrics(logprobs, np.ones((2, 2), dtype=bool))
    assert np.isposinf(metrics.perplexity[0])
    assert np.isfinite(metrics.perplexity[1])
    assert metrics.perplexity[1] == pytest.approx(math.exp(709.0), rel=PPL_REL)
    assert metrics.mean_nll[0] == 710.0


# --------------------------------------------------------------------------------------
# Ordinary random inputs against scipy.special
# --------------------------------------------------------------------------------------

ordinary_logits = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
    elements=st.floats(-50.0, 50.0, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(logits=ordinary_logits, data=st.data())
def test_log_softmax_agrees_with_scipy(logits, data):
    axis = data.draw(st.integers(-logits.ndim, logits.ndim - 1), label="axis")
    result = stable_log_softmax(logits, axis=axis)
    expected = scipy.special.log_softmax(logits, axis=axis)
    np.testing.assert_allclose(result, expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(softmax(logits, axis=axis), scipy.special.softmax(logits, axis=axis),
                               rtol=1e-13, atol=1e-15)


# Zeros exercise 0 log 0 and the infinite case; weights are kept >= 1e-6 otherwise so that
# scipy's x * log(x / y) cannot overflow in x / y and become a wrong oracle.
probability_weights = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))
distributions = st.integers(2, 8).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, n, elements=probability_weights),
        hnp.arrays(np.float64, n, elements=probability_weights),
    )
)


@settings(max_examples=150, deadline=None)
@given(pair=distributions)
def test_kl_divergence_agrees_with_scipy_rel_entr(pair):
    raw_p, raw_q = pair
    if raw_p.sum() == 0 or raw_q.sum() == 0:
        raw_p = raw_p + 1.0
        raw_q = raw_q + 1.0
    p = raw_p / raw_p.sum()
    q = raw_q / raw_q.sum()
    # Renormalised floats sum to 1 within a few ulps; that is a valid distribution.
    expected = float(np.sum(scipy.special.rel_entr(p, q)))
    value = float(kl_divergence(p, q))
    if math.isinf(expected):
        assert math.isinf(value) and value > 0
    else:
        assert value >= 0.0
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(max_examples=150, deadline=None)
@given(pair=st.integers(2, 8).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, (2, n), elements=st.floats(-20.0, 20.0)),
        hnp.arrays(np.float64, (2, n), elements=st.floats(-20.0, 20.0)),
    )
))
def test_exact_kl_from_logits_agrees_with_scipy(pair):
    p_logits, q_logits = pair
    p = scipy.special.softmax(p_logits, axis=-1)
    expected = np.sum(
        p * (scipy.special.log_softmax(p_logits, axis=-1) - scipy.special.log_softmax(q_logits, axis=-1)),
        axis=-1,
    )
    result = exact_kl_from_logits(p_logits, q_logits)
    assert np.all(result >= 0.0)
    # scipy's plain formula carries ~1e-15 absolute cancellation error, so compare with
    # that absolute floor; relative agreement is demanded above it.
    np.testing.assert_allclose(result, expected, rtol=1e-11, atol=1e-14)
