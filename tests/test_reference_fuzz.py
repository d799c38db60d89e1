"""Fuzzing every public function of ``autograder.reference`` with arbitrary input.

Contract under test: whatever the input (NaN, inf, huge, tiny, empty, 0-d, ragged lists,
strings, objects, bools, complex numbers), a function either raises ``ValueError`` /
``TypeError`` or returns a value that satisfies its invariants:

* probabilities are finite, in [0, 1] and sum to 1 within 1e-12;
* log-probabilities are <= 0 and never NaN;
* k2, k3 and every KL are >= 0 and never NaN;
* supports shrink monotonically as top-k's k or top-p's threshold decreases.

Any other exception (IndexError, ZeroDivisionError, OverflowError, AttributeError, ...) or a
broken invariant fails the test. Each test runs ~100-150 examples with no deadline so the
file stays well under a minute on a shared two-core machine.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.reference import (
    EOS_IS_TERMINAL,
    SamplingConfig,
    behaviour_distribution,
    behaviour_logprob,
    causal_response_logprobs,
    exact_kl_from_logits,
    importance_support,
    importance_weight_mean,
    kl_chain_rule,
    kl_divergence,
    kl_estimators_at_ratio,
    kl_sample_values,
    map_stop_reason,
    masked_sequence_metrics,
    sequence_ratio_error,
    softmax,
    stable_log_softmax,
    temperature_distribution,
    top_k_distribution,
    top_p_distribution,
    truncation_log_correction,
    validate_rollout_batch,
)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SUM_TOL = 1e-12

# ---- strategies ---------------------------------------------------------------------------

any_float = st.floats(allow_nan=True, allow_infinity=True)
wild_floats = st.one_of(
    any_float,
    st.sampled_from([0.0, -0.0, 1e-308, 5e-324, 1e308, -1e308, 1e15, -1e15, 709.8, -745.2]),
)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
object_elements = st.one_of(st.none(), st.floats(), st.integers(-5, 5), st.text(max_size=2))


def arrays_of(dtype):
    if dtype == "object":
        return hnp.arrays(object, shapes, elements=object_elements)
    if dtype == "U":
        return hnp.arrays("<U3", shapes)
    if dtype == "complex":
        return hnp.arrays(np.complex128, shapes)
    if dtype == "float64":
        return hnp.arrays(np.float64, shapes, elements=wild_floats)
    return hnp.arrays(dtype, shapes)


# Arrays of every kind, plus Python scalars, lists and other junk.
anything = st.one_of(
    st.sampled_from(["float64", "float32", "int64", "int8", "uint8", "bool", "complex", "U", "object"]).flatmap(arrays_of),
    hnp.arrays(np.float64, shapes, elements=st.floats(-60.0, 60.0)),
    wild_floats,
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(wild_floats, max_size=5),
    st.lists(st.lists(st.floats(-5, 5), max_size=3), max_size=3),
)



def mostly(valid, junk):
    """Valid input three times in four, junk otherwise: returns must be frequent enough
    that the invariants are actually checked (see --hypothesis-show-statistics)."""
    return st.sampled_from((0, 1, 2, 3)).flatmap(lambda i: junk if i == 3 else valid)


finite_big = st.floats(-1e308, 1e308)
good_logits_1d = st.one_of(
    hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-1e3, 1e3)),
    hnp.arrays(np.float64, st.integers(1, 6), elements=finite_big),
    st.lists(st.floats(-50, 50), min_size=1, max_size=6),
)
logits_1d = mostly(good_logits_1d, st.one_of(hnp.arrays(np.float64, st.integers(0, 6), elements=wild_floats), anything))
scalar_param = st.one_of(
    st.floats(-2.0, 2.0), wild_floats, st.integers(-3, 8), st.booleans(), st.none(), st.text(max_size=2),
    hnp.arrays(np.float64, st.integers(0, 2), elements=st.floats(0, 1)),
)
temperature_param = mostly(st.one_of(st.floats(0.05, 5.0), st.floats(1e-300, 1e300)), scalar_param)
k_param = mostly(st.one_of(st.integers(1, 6), st.sampled_from([np.int64(1), np.int32(2)])), scalar_param)
top_p_param = mostly(st.one_of(st.floats(0.01, 1.0), st.just(1.0), st.floats(1e-300, 1e-3)), scalar_param)
keep_param = mostly(st.integers(1, 3), scalar_param)


def probabilities_of_size(n):
    weights = hnp.arrays(np.float64, n, elements=st.one_of(st.just(0.0), st.floats(1e-6, 1.0)))
    return weights.map(lambda a: a / a.sum() if a.sum() > 0 else np.full(a.size, 1.0 / a.size))


small_probabilities = st.integers(1, 5).flatmap(probabilities_of_size)
# Two distributions over the same actions, or junk in either place.
distribution_pairs = st.integers(1, 5).flatmap(
    lambda n: st.tuples(mostly(probabilities_of_size(n), anything), mostly(probabilities_of_size(n), anything))
)


def attempt(fn, *args, **kwargs):
    """Return (True, value) or (False, None) when fn rejects the input as the contract allows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(*args, **kwargs)
        except (ValueError, TypeError):
            event(f"{getattr(fn, '__name__', fn)}: rejected")
            return False, None
    # Reported by --hypothesis-show-statistics: a fuzz test whose calls never return would
    # check no invariant at all.
    event(f"{getattr(fn, '__name__', fn)}: returned")
    return True, value


def assert_distribution(probabilities, axis=-1):
    probabilities = np.asarray(probabilities)
    assert probabilities.dtype == np.float64
    assert np.all(np.isfinite(probabilities))
    assert np.all(probabilities >= 0.0) and np.all(probabilities <= 1.0)
    assert np.all(np.abs(probabilities.sum(axis=axis) - 1.0) <= SUM_TOL)


def assert_log_probabilities(values):
    values = np.asarray(values, dtype=np.float64)
    assert not np.any(np.isnan(values))
    assert np.all(values <= 0.0)


def support_set(probabilities):
    return set(np.flatnonzero(np.asarray(probabilities) > 0).tolist())


# ---- softmax ------------------------------------------------------------------------------


good_logits_nd = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
    elements=st.one_of(st.floats(-60.0, 60.0), finite_big),
)


@FUZZ
@given(logits=mostly(good_logits_nd, anything), axis=mostly(st.integers(-1, 0), st.one_of(st.integers(-4, 4), st.none(), st.floats(-1, 1), st.booleans())))
def test_fuzz_log_softmax_and_softmax(logits, axis):
    ok, result = attempt(stable_log_softmax, logits, axis=axis)
    if ok:
        assert result.shape == np.shape(logits)
        assert np.all(np.isfinite(result))
        assert_log_probabilities(result)
        assert np.all(np.abs(np.exp(result).sum(axis=axis) - 1.0) <= SUM_TOL)
    ok2, probabilities = attempt(softmax, logits, axis=axis)
    assert ok2 == ok
    if ok2:
        assert probabilities.shape == np.shape(logits)
        assert_distribution(probabilities, axis=axis)


# ---- causal -------------------------------------------------------------------------------


@st.composite
def causal_inputs(draw):
    if draw(st.integers(0, 5)) == 0:
        return draw(anything), draw(anything), draw(anything)
    b = draw(mostly(st.integers(1, 3), st.just(0)))
    length = draw(mostly(st.integers(2, 5), st.just(1)))
    vocab = draw(st.integers(1, 5))
    elements = mostly(st.floats(-1e4, 1e4), st.one_of(wild_floats, finite_big))
    raw = draw(hnp.arrays(np.float64, (b, length, vocab), elements=elements))
    with np.errstate(over="ignore"):
        logits = raw.astype(draw(mostly(st.just(np.float32), st.just(np.float64))))
    ids = draw(hnp.arrays(np.int64, (b, length), elements=mostly(st.integers(0, vocab - 1), st.integers(-1, vocab))))
    ids = ids.astype(draw(mostly(st.sampled_from([np.int64, np.int32]), st.sampled_from([np.uint8, np.float64, bool]))))
    mask = draw(hnp.arrays(np.int64, (b, length), elements=st.integers(0, 1)))
    mask = mask.astype(draw(st.sampled_from([np.int64, bool, np.float64])))
    return logits, ids, mask


@FUZZ
@given(inputs=causal_inputs())
def test_fuzz_causal_response_logprobs(inputs):
    logits, ids, mask = inputs
    ok, result = attempt(causal_response_logprobs, logits, ids, mask)
    if ok:
        selected, shifted = result
        b, length = np.shape(ids)
        assert selected.shape == shifted.shape == (b, length - 1)
        assert selected.dtype == np.float64 and shifted.dtype == bool
        assert np.all(np.isfinite(selected))
        assert_log_probabilities(selected)


# ---- metrics ------------------------------------------------------------------------------


@st.composite
def metric_inputs(draw):
    if draw(st.integers(0, 5)) == 0:
        return draw(anything), draw(anything)
    shape = draw(st.tuples(st.integers(0, 3), st.integers(1, 4)))
    logprobs = draw(hnp.arrays(np.float64, shape, elements=mostly(st.floats(-800.0, 0.0), st.one_of(wild_floats, finite_big))))
    mask = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 1)))
    if draw(st.integers(0, 3)):
        mask[:, 0] = 1
    return logprobs, mask.astype(draw(st.sampled_from([np.int64, bool])))


@FUZZ
@given(inputs=metric_inputs())
def test_fuzz_masked_sequence_metrics(inputs):
    logprobs, mask = inputs
    ok, metrics = attempt(masked_sequence_metrics, logprobs, mask)
    if ok:
        count = np.asarray(metrics.token_count)
        assert np.all(count >= 1)
        mean_nll = np.asarray(metrics.mean_nll, dtype=np.float64)
        perplexity = np.asarray(metrics.perplexity, dtype=np.float64)
        assert not np.any(np.isnan(mean_nll)) and not np.any(np.isnan(perplexity))
        np.testing.assert_allclose(np.asarray(metrics.sum_logprob), -mean_nll * count, rtol=1e-12, atol=1e-300)
        with np.errstate(over="ignore"):
            np.testing.assert_allclose(perplexity, np.exp(mean_nll), rtol=1e-12)
        if np.all(np.asarray(logprobs, dtype=np.float64)[np.asarray(mask, dtype=bool)] <= 0):
            assert np.all(mean_nll >= 0.0) and np.all(perplexity >= 1.0)


# ---- KL -----------------------------------------------------------------------------------


@st.composite
def logit_pairs(draw):
    if draw(st.integers(0, 5)) == 0:
        return draw(anything), draw(anything)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5))
    elements = mostly(st.floats(-1e3, 1e3), st.one_of(wild_floats, finite_big))
    return draw(hnp.arrays(np.float64, shape, elements=elements)), draw(hnp.arrays(np.float64, shape, elements=elements))


@FUZZ
@given(pair=logit_pairs())
@example(pair=(np.array([0.0, 0.0, 0.0, -33.0, -37.0]), np.array([0.0, 0.0, 0.0, 0.0, 1.79769313e308])))
@example(pair=(np.array([0.0, 0.0, 0.0, -33.0, -37.0]), np.array([0.0, 0.0, 0.0, 0.0, np.finfo(np.float64).max])))
def test_fuzz_exact_kl_from_logits(pair):
    ok, result = attempt(exact_kl_from_logits, *pair)
    if ok:
        result = np.asarray(result, dtype=np.float64)
        assert result.shape == np.shape(pair[0])[:-1]
        assert np.all(np.isfinite(result)) and np.all(result >= 0.0)


@FUZZ
@given(pair=distribution_pairs)
def test_fuzz_kl_divergence(pair):
    p, q = pair
    ok, result = attempt(kl_divergence, p, q)
    if ok:
        result = np.asarray(result, dtype=np.float64)
        assert not np.any(np.isnan(result)) and np.all(result >= 0.0)


@st.composite
def log_prob_pairs(draw):
    if draw(st.integers(0, 5)) == 0:
        return draw(anything), draw(anything)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
    elements = mostly(st.floats(-800.0, 0.0), st.one_of(wild_floats, st.floats(-1e308, 0.0)))
    return draw(hnp.arrays(np.float64, shape, elements=elements)), draw(hnp.arrays(np.float64, shape, elements=elements))


def assert_k_values(values):
    assert set(values) == {"k1", "k2", "k3"}
    k1, k2, k3 = (np.asarray(values[k], dtype=np.float64) for k in ("k1", "k2", "k3"))
    assert not (np.any(np.isnan(k1)) or np.any(np.isnan(k2)) or np.any(np.isnan(k3)))
    assert np.all(k2 >= 0.0) and np.all(k3 >= 0.0)
    # k2 = (log r)^2 / 2 with log r = -k1 (both overflow to inf together).
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(k2, 0.5 * k1 * k1, rtol=1e-12)


@FUZZ
@given(pair=log_prob_pairs())
def test_fuzz_kl_sample_values(pair):
    ok, values = attempt(kl_sample_values, *pair)
    if ok:
        assert_k_values(values)


@FUZZ
@given(r=mostly(st.one_of(st.floats(0.0, 1e6), st.floats(0.0, 1e308)), st.one_of(wild_floats, anything)))
def test_fuzz_kl_estimators_at_ratio(r):
    ok, values = attempt(kl_estimators_at_ratio, r)
    if ok:
        assert_k_values(values)


@st.composite
def chain_inputs(draw):
    if draw(st.integers(0, 5)) == 0:
        return tuple(draw(anything) for _ in range(4))
    n1, n2 = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    first = probabilities_of_size(n1)
    row = probabilities_of_size(n2)
    cond = st.lists(row, min_size=n1, max_size=n1).map(np.array)
    return draw(first), draw(first), draw(cond), draw(cond)


@FUZZ
@given(inputs=chain_inputs())
def test_fuzz_kl_chain_rule(inputs):
    ok, result = attempt(kl_chain_rule, *inputs)
    if ok:
        parts = [result.root, result.expected_conditional, result.total, result.joint]
        values = np.array([float(x) for x in parts])
        assert not np.any(np.isnan(values)) and np.all(values >= 0.0)
        conditional = np.asarray(result.conditional, dtype=np.float64)
        assert not np.any(np.isnan(conditional)) and np.all(conditional >= 0.0)
        if np.all(np.isfinite(values)):
            assert result.total == result.root + result.expected_conditional or math.isclose(
                result.total, result.root + result.expected_conditional, rel_tol=1e-12, abs_tol=1e-15)
            assert math.isclose(result.joint, result.total, rel_tol=1e-9, abs_tol=1e-12)


# ---- sampling -----------------------------------------------------------------------------


@FUZZ
@given(logits=logits_1d, temperature=temperature_param)
def test_fuzz_temperature_distribution(logits, temperature):
    ok, result = attempt(temperature_distribution, logits, temperature)
    if ok:
        assert result.shape == np.shape(logits)
        assert_distribution(result)


@FUZZ
@given(logits=logits_1d, k=k_param)
def test_fuzz_top_k_distribution_and_monotone_support(logits, k):
    ok, result = attempt(top_k_distribution, logits, k)
    if ok:
        assert_distribution(result)
        assert len(support_set(result)) <= int(k)
        bigger_ok, bigger = attempt(top_k_distribution, logits, int(k) + 1)
        if bigger_ok:
            assert support_set(result) <= support_set(bigger)


@FUZZ
@given(logits=logits_1d, top_p=top_p_param, low=st.floats(0.01, 1.0), keep=keep_param)
# Found by CI on Python 3.12: the first token is kept but exp(-745) / 2 underflows (and its neighbour).
@example(logits=np.array([-745.0, 0.0, 0.0]), top_p=1.0, low=1.0, keep=3)
@example(logits=np.array([-744.5, 0.0, 0.0]), top_p=1.0, low=1.0, keep=3)
def test_fuzz_top_p_distribution_and_monotone_support(logits, top_p, low, keep):
    ok, result = attempt(top_p_distribution, logits, top_p, min_tokens_to_keep=keep)
    if ok:
        assert_distribution(result)
        # min_tokens_to_keep tokens are kept, but a kept token whose probability underflows is still 0.0
        # in float64, and that is decided after renormalising: logits (-745, 0, 0) keep all three, and
        # exp(-745) / 2 is 0. A token must show in the support when its probability is a normal float
        # even over the whole vocabulary (the kept mass is smaller, so its probability only grows); a
        # subnormal one rounds to 0 or not depending on the order of operations, so it is not counted.
        z = np.asarray(logits, dtype=np.float64)
        weights = np.exp(z - z.max())
        representable = int(np.count_nonzero(weights / weights.sum() >= np.finfo(np.float64).tiny))
        assert len(support_set(result)) >= min(int(keep), representable)
        # Lowering the threshold can only shrink the nucleus.
        smaller_ok, smaller = attempt(top_p_distribution, logits, min(low, float(top_p)), min_tokens_to_keep=keep)
        assert smaller_ok
        assert support_set(smaller) <= support_set(result)


config_fields = st.fixed_dictionaries({
    "temperature": mostly(temperature_param, scalar_param),
    "banned_token_ids": mostly(st.lists(st.integers(0, 2), max_size=2).map(tuple), st.one_of(st.lists(st.integers(-1, 6), max_size=3).map(tuple), anything)),
    "top_k": mostly(st.one_of(st.none(), st.integers(1, 3)), st.one_of(st.integers(-1, 7), scalar_param)),
    "top_p": mostly(top_p_param, scalar_param),
    "min_tokens_to_keep": mostly(st.integers(1, 2), scalar_param),
})


@FUZZ
@given(logits=logits_1d, fields=config_fields, token=mostly(st.integers(0, 5), st.one_of(st.integers(-1, 7), scalar_param)))
def test_fuzz_behaviour_distribution_and_logprob(logits, fields, token):
    # A config may reject bad fields when built or when used.
    ok, config = attempt(SamplingConfig, **fields)
    if not ok:
        return
    ok, distribution = attempt(behaviour_distribution, logits, config)
    if ok:
        assert_distribution(distribution)
        record = json.loads(json.dumps(config.as_record()))
        assert "order" in record
    ok_lp, logprob = attempt(behaviour_logprob, logits, token, config)
    if ok_lp:
        assert ok, "behaviour_logprob accepted what behaviour_distribution rejected"
        assert not math.isnan(logprob.behaviour_logprob) and logprob.behaviour_logprob <= 0.0
        assert logprob.base_logprob <= 0.0 and logprob.tempered_logprob <= 0.0
        # Z_S itself may underflow to 0.0 (a support ~e^-746 deep in the tail); its log may not.
        assert 0.0 <= logprob.support_mass <= 1.0 + SUM_TOL
        assert np.isfinite(logprob.log_support_mass) and logprob.log_support_mass <= 0.0
        assert logprob.support_mass == math.exp(logprob.log_support_mass)
        support = np.asarray(logprob.support)
        support_ids = set(np.flatnonzero(support).tolist()) if support.dtype == bool else set(support.ravel().tolist())
        # Every token with behaviour probability > 0 is in the support; a support token may
        # still have a probability that underflows to 0.0 (logit ~745 below the maximum).
        assert support_set(distribution) <= support_ids
        assert math.isfinite(logprob.behaviour_logprob) == (int(token) in support_ids)


@FUZZ
@given(mass=mostly(st.floats(0.0, 1.0), st.one_of(wild_floats, anything)), positions=mostly(st.integers(0, 3000), st.one_of(st.integers(-2, 5), scalar_param)))
def test_fuzz_truncation_helpers(mass, positions):
    ok, correction = attempt(truncation_log_correction, mass)
    if ok:
        assert math.isfinite(correction) and correction >= 0.0
    ok2, factor = attempt(sequence_ratio_error, mass, positions)
    if ok2:
        assert ok
        # Z ** -n >= 1 and may overflow to inf for long sequences, never NaN.
        assert not math.isnan(factor) and factor >= 1.0


# ---- stopping, support, rollout --------------------------------------------------------------


@FUZZ
@given(reason=mostly(st.sampled_from(["eos", "length"]), st.one_of(st.sampled_from(["stop", "abort", "", " eos"]), st.text(max_size=6), anything)))
def test_fuzz_stop_reasons(reason):
    ok, flags = attempt(map_stop_reason, reason)
    if ok:
        assert flags.stop_reason == reason
        assert type(flags.terminated) is bool and type(flags.truncated) is bool
        assert flags == EOS_IS_TERMINAL.map(reason)


@FUZZ
@given(pair=distribution_pairs)
def test_fuzz_importance_support_and_weight_mean(pair):
    behaviour, target = pair
    ok, report = attempt(importance_support, behaviour, target)
    if ok:
        violating = [int(a) for a in report.violating_actions]
        assert bool(report.ratios_defined) == (len(violating) == 0)
        assert 0.0 <= report.covered_target_mass <= 1.0 + SUM_TOL
    ok2, mean = attempt(importance_weight_mean, target, behaviour)
    if ok2:
        assert 0.0 <= mean <= 1.0 + SUM_TOL
        if ok:
            assert math.isclose(mean, report.covered_target_mass, rel_tol=1e-12, abs_tol=1e-15)


def fuzzed_batch(draw):
    b, t = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    lengths = draw(st.lists(mostly(st.integers(1, t), st.just(0)), min_size=b, max_size=b))
    mask = np.array([[1] * n + [0] * (t - n) for n in lengths], dtype=np.int64).reshape(b, t)
    logprobs = np.where(mask.astype(bool), -0.5, np.nan)
    batch = {
        "response_ids": draw(hnp.arrays(np.int64, (b, t), elements=st.integers(0, 50))),
        "response_mask": mask,
        "old_logprobs": logprobs.copy(),
        "ref_logprobs": logprobs.copy(),
        "sequence_rewards": draw(hnp.arrays(np.float64, b, elements=st.floats(-2, 2))),
        "terminated": draw(hnp.arrays(bool, b)),
        "truncated": draw(hnp.arrays(bool, b)),
        "stop_reason": np.array(draw(st.lists(mostly(st.sampled_from(["eos", "length"]), st.just("")), min_size=b, max_size=b)), dtype=object),
    }
    # Sometimes break one field in an arbitrary way, or drop one.
    if draw(st.integers(0, 2)) == 0:
        field = draw(st.sampled_from(sorted(batch)))
        batch[field] = draw(anything)
    if draw(st.integers(0, 5)) == 0:
        del batch[draw(st.sampled_from(sorted(batch)))]
    return batch


@FUZZ
@given(data=st.data())
def test_fuzz_validate_rollout_batch(data):
    batch = fuzzed_batch(data.draw)
    ok, summary = attempt(validate_rollout_batch, batch)
    if ok:
        mask = np.asarray(batch["response_mask"])
        assert summary.batch_size == mask.shape[0]
        assert summary.active_tokens == int(np.asarray(mask, dtype=bool).sum())
        assert summary.batch_size == 0 or summary.active_tokens >= summary.batch_size
        assert 0 <= summary.terminated_sequences <= summary.batch_size
        assert 0 <= summary.truncated_sequences <= summary.batch_size
