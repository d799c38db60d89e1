"""The seed's contract for ``autograder.reference``.

Two kinds of checks live here:

* the open checks of the six coding exercises (15-20), with the seed's numbers and
  tolerances, written against the reference implementation;
* the worked numbers of the concept exercises 09-14 and 01, reproduced through the public
  functions that the checks and widgets use.

A worked number quoted with ``d`` decimals in the seed is asserted to within half a unit of
its last digit (the seed rounds), and then, where a closed form exists, to 1e-12 against
that closed form computed here with :mod:`math`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.reference import (
    EOS_IS_TERMINAL,
    REPRODUCIBILITY_FIELDS,
    ROLLOUT_BATCH_FIELDS,
    SamplingConfig,
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
    stable_log_softmax,
    temperature_distribution,
    top_k_distribution,
    top_p_distribution,
    truncation_log_correction,
    validate_rollout_batch,
)


def assert_rounded(value, quoted: str) -> None:
    """``value`` rounds to the seed's ``quoted`` decimal (half a unit of its last digit)."""
    decimals = len(quoted.split(".")[1])
    half_unit = 0.5 * 10.0**-decimals
    assert abs(float(value) - float(quoted)) <= half_unit * (1 + 1e-9), (value, quoted)


def support_ids(support) -> list[int]:
    """Token ids of a support given either as ids or as a boolean mask over the vocabulary."""
    array = np.asarray(support)
    if array.dtype == bool:
        return [int(i) for i in np.flatnonzero(array)]
    return sorted(int(i) for i in array.ravel())


# --------------------------------------------------------------------------------------
# Open checks of the coding exercises, as the seed states them.
# --------------------------------------------------------------------------------------


def test_open_check_stable_log_softmax():
    logits = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -999.0, -1001.0]])
    result = stable_log_softmax(logits, axis=-1)
    assert result.shape == logits.shape
    np.testing.assert_allclose(np.exp(result).sum(axis=-1), np.ones(2), atol=1e-12, rtol=0.0)
    np.testing.assert_allclose(result[0] - result[1], np.zeros(3), atol=1e-12)


def test_open_check_causal_response_logprobs():
    logits = np.zeros((1, 3, 4))
    input_ids = np.array([[0, 1, 2]])
    response_mask = np.array([[0, 1, 1]])
    selected, shifted = causal_response_logprobs(logits, input_ids, response_mask)
    assert selected.shape == (1, 2) and shifted.shape == (1, 2)
    assert np.allclose(selected, -np.log(4.0))
    assert np.array_equal(shifted, np.array([[1, 1]], dtype=bool))
    # DESIGN pins the dtypes: float64 log-probabilities and a boolean mask.
    assert selected.dtype == np.float64
    assert shifted.dtype == bool


def test_open_check_masked_sequence_metrics():
    metrics = masked_sequence_metrics(np.array([[-0.1, -0.2, -1.0]]), np.array([[0, 1, 1]]))
    assert metrics.token_count[0] == 2
    assert abs(metrics.sum_logprob[0] - (-1.2)) < 1e-12
    assert abs(metrics.mean_nll[0] - 0.6) < 1e-12
    assert abs(metrics.perplexity[0] - np.exp(0.6)) < 1e-9


def test_open_check_kl_functions():
    z = np.array([[1.0, -1.0], [0.5, 0.5]])
    np.testing.assert_allclose(exact_kl_from_logits(z, z), np.zeros(2), atol=1e-14)
    values = kl_sample_values(np.array([-0.4, -1.2]), np.array([-0.5, -0.7]))
    assert set(values) == {"k1", "k2", "k3"}
    assert np.all(values["k3"] >= -1e-14)


def test_open_check_sampling_transforms():
    logits = np.array([2.0, 1.0, 0.0, -1.0])
    warm = temperature_distribution(logits, 2.0)
    assert abs(warm[0] - 0.455054) < 1e-6
    assert abs(float(warm.sum()) - 1.0) < 1e-12
    kept = top_k_distribution(logits, 2)
    assert np.allclose(kept[2:], 0.0)
    assert abs(kept[0] - 0.731059) < 1e-6
    nucleus = top_p_distribution(logits, 0.8)
    assert np.allclose(nucleus, kept)


def seed_batch() -> dict:
    return {
        "response_ids": np.array([[5, 6], [7, 8]]),
        "response_mask": np.array([[1, 1], [1, 0]]),
        "old_logprobs": np.array([[-0.1, -0.2], [-0.3, np.nan]]),
        "ref_logprobs": np.array([[-0.2, -0.3], [-0.4, np.nan]]),
        "sequence_rewards": np.array([1.0, 0.0]),
        "terminated": np.array([True, False]),
        "truncated": np.array([False, True]),
        "stop_reason": np.array(["eos", "length"], dtype=object),
    }


def test_open_check_validate_rollout_batch():
    summary = validate_rollout_batch(seed_batch())
    assert summary.batch_size == 2 and summary.active_tokens == 3
    assert summary.terminated_sequences == 1 and summary.truncated_sequences == 1


def test_rollout_batch_allows_terminated_and_truncated_together():
    # The seed: structural validation must not ban a terminal event that coincides with
    # an external boundary; that is a task contract's decision.
    batch = seed_batch()
    batch["terminated"] = np.array([True, True])
    batch["truncated"] = np.array([False, True])
    summary = validate_rollout_batch(batch)
    assert summary.terminated_sequences == 2
    assert summary.truncated_sequences == 1


def test_rollout_field_lists():
    assert set(ROLLOUT_BATCH_FIELDS) == {
        "response_ids", "response_mask", "old_logprobs", "ref_logprobs",
        "sequence_rewards", "terminated", "truncated", "stop_reason",
    }
    assert len(ROLLOUT_BATCH_FIELDS) == 8
    # Exercise 08: response text and the UI colour are not among the required fields.
    assert set(REPRODUCIBILITY_FIELDS) == {
        "response_ids", "response_mask", "old_logprobs", "policy_version",
        "sampling_config", "reward_raw", "terminated", "truncated", "stop_reason",
    }


# --------------------------------------------------------------------------------------
# Exercise 01: stop reasons under the stated task contract.
# --------------------------------------------------------------------------------------


def test_stop_reasons_under_eos_is_terminal():
    eos = map_stop_reason("eos")
    assert (eos.stop_reason, eos.terminated, eos.truncated) == ("eos", True, False)
    length = map_stop_reason("length", EOS_IS_TERMINAL)
    assert (length.stop_reason, length.terminated, length.truncated) == ("length", False, True)
    # The flags are real bools, not numpy bools or ints, so they serialise as the seed shows.
    assert type(eos.terminated) is bool and type(length.truncated) is bool
    assert EOS_IS_TERMINAL.map("eos") == eos


# --------------------------------------------------------------------------------------
# Exercise 09: sequence log-probability and perplexity.
# --------------------------------------------------------------------------------------


def test_sequence_ppl_worked_numbers():
    logprobs = np.log(np.array([[0.5, 0.25, 0.8]]))
    metrics = masked_sequence_metrics(logprobs, np.ones((1, 3), dtype=bool))
    assert metrics.token_count[0] == 3
    assert_rounded(metrics.sum_logprob[0], "-2.302585")
    assert metrics.sum_logprob[0] == pytest.approx(math.log(0.1), rel=1e-12)
    assert_rounded(metrics.mean_nll[0], "0.767528")
    assert_rounded(metrics.perplexity[0], "2.154435")
    assert metrics.perplexity[0] == pytest.approx(0.1 ** (-1 / 3), rel=1e-12)


def test_fourth_token_of_probability_one_lowers_ppl():
    logprobs = np.log(np.array([[0.5, 0.25, 0.8, 1.0]]))
    three = masked_sequence_metrics(logprobs, np.array([[1, 1, 1, 0]]))
    four = masked_sequence_metrics(logprobs, np.array([[1, 1, 1, 1]]))
    # The sum does not move; the denominator does.
    assert four.sum_logprob[0] == pytest.approx(three.sum_logprob[0], abs=1e-15)
    assert four.token_count[0] == 4
    assert_rounded(three.perplexity[0], "2.154435")
    assert_rounded(four.perplexity[0], "1.7783")
    assert four.perplexity[0] == pytest.approx(math.exp(-math.log(0.1) / 4), rel=1e-12)


# --------------------------------------------------------------------------------------
# Exercise 10: KL chain rule on a depth-two tree.
# --------------------------------------------------------------------------------------


def _kl(p, q):
    return sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)


def test_kl_chain_rule_worked_numbers():
    first_p, first_q = [0.6, 0.4], [0.5, 0.5]
    cond_p = [[0.7, 0.3], [0.2, 0.8]]
    cond_q = [[0.4, 0.6], [0.5, 0.5]]
    result = kl_chain_rule(first_p, first_q, cond_p, cond_q)
    assert_rounded(result.root, "0.0201355")
    assert_rounded(result.expected_conditional, "0.1873700")
    assert_rounded(result.total, "0.2075056")
    assert_rounded(result.joint, "0.2075056")
    expected_conditional = [_kl(cond_p[0], cond_q[0]), _kl(cond_p[1], cond_q[1])]
    np.testing.assert_allclose(result.conditional, expected_conditional, rtol=1e-12)
    joint = _kl(
        [first_p[a] * cond_p[a][b] for a in range(2) for b in range(2)],
        [first_q[a] * cond_q[a][b] for a in range(2) for b in range(2)],
    )
    assert result.joint == pytest.approx(joint, rel=1e-12)
    assert result.total == pytest.approx(result.root + result.expected_conditional, rel=1e-12)


# --------------------------------------------------------------------------------------
# Exercise 11: k1, k2, k3 at r = 2 and r = 1/2.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "k1", "k2", "k3"),
    [
        (2.0, "-0.693147", "0.240227", "0.306853"),
        (0.5, "0.693147", "0.240227", "0.193147"),
    ],
)
def test_k_estimators_worked_numbers(ratio, k1, k2, k3):
    values = kl_estimators_at_ratio(ratio)
    assert set(values) == {"k1", "k2", "k3"}
    assert_rounded(values["k1"], k1)
    assert_rounded(values["k2"], k2)
    assert_rounded(values["k3"], k3)
    # The same numbers from samples: log q = log(1/2) and log p = log(ratio / 2).
    samples = kl_sample_values(np.array([math.log(0.5)]), np.array([math.log(ratio / 2)]))
    for name, quoted in (("k1", k1), ("k2", k2), ("k3", k3)):
        assert_rounded(np.asarray(samples[name]).ravel()[0], quoted)


def test_only_k1_changes_sign():
    up, down = kl_estimators_at_ratio(2.0), kl_estimators_at_ratio(0.5)
    assert float(up["k1"]) < 0 < float(down["k1"])
    for name in ("k2", "k3"):
        assert float(up[name]) > 0 and float(down[name]) > 0


# --------------------------------------------------------------------------------------
# Exercise 12: the top-p nucleus from logits = log(p).
# --------------------------------------------------------------------------------------

NUCLEUS_PROBABILITIES = np.array([0.50, 0.30, 0.15, 0.05])


def test_nucleus_at_080_keeps_two_tokens_despite_rounding():
    logits = np.log(NUCLEUS_PROBABILITIES)
    # Why this is a trap: the float64 prefix sum falls one ulp short of the threshold.
    shifted = np.exp(logits - logits.max())
    assert np.cumsum(shifted / shifted.sum())[1] < 0.80
    result = top_p_distribution(logits, 0.80)
    np.testing.assert_allclose(result, [0.625, 0.375, 0.0, 0.0], atol=1e-12, rtol=0)
    assert result[2] == 0.0 and result[3] == 0.0


def test_nucleus_at_081_keeps_three_tokens():
    result = top_p_distribution(np.log(NUCLEUS_PROBABILITIES), 0.81)
    expected = np.array([0.50, 0.30, 0.15, 0.0]) / 0.95
    np.testing.assert_allclose(result, expected, atol=1e-12, rtol=0)
    assert result[3] == 0.0


# --------------------------------------------------------------------------------------
# Exercise 13: truncation correction with Z_S = 0.85 and a token of base probability 0.25.
# --------------------------------------------------------------------------------------

# Descending probabilities whose prefix masses are 0.40, 0.65, 0.85: top-p 0.8 keeps the
# first three tokens, a support of mass 0.85, and token 1 has probability 0.25.
TRUNCATION_PROBABILITIES = np.array([0.40, 0.25, 0.20, 0.15])


def test_truncation_correction_worked_numbers():
    record = behaviour_logprob(np.log(TRUNCATION_PROBABILITIES), 1, SamplingConfig(top_p=0.8))
    assert support_ids(record.support) == [0, 1, 2]
    assert record.token_id == 1
    assert record.support_mass == pytest.approx(0.85, rel=1e-12)
    assert record.base_logprob == pytest.approx(math.log(0.25), rel=1e-12)
    assert record.tempered_logprob == pytest.approx(math.log(0.25), rel=1e-12)
    assert_rounded(math.exp(record.behaviour_logprob), "0.294118")
    assert_rounded(record.behaviour_logprob, "-1.223775")
    assert record.behaviour_logprob == pytest.approx(math.log(0.25 / 0.85), rel=1e-12)
    assert_rounded(record.behaviour_logprob - record.base_logprob, "0.162519")
    assert record.config == SamplingConfig(top_p=0.8).as_record()


def test_truncation_helpers_worked_numbers():
    assert_rounded(truncation_log_correction(0.85), "0.162519")
    assert truncation_log_correction(0.85) == pytest.approx(-math.log(0.85), rel=1e-14)
    assert_rounded(sequence_ratio_error(0.85, 4), "1.915686")
    assert sequence_ratio_error(0.85, 4) == pytest.approx(0.85**-4, rel=1e-13)


# --------------------------------------------------------------------------------------
# Exercise 14 and the k3 support question (exercise 06).
# --------------------------------------------------------------------------------------


def test_support_violation_worked_example():
    report = importance_support([0.7, 0.3, 0.0], [0.6, 0.2, 0.2])
    assert not report.ratios_defined
    assert [int(a) for a in report.violating_actions] == [2]
    ratios = np.asarray(report.ratios, dtype=np.float64)
    np.testing.assert_allclose(ratios[:2], [0.6 / 0.7, 0.2 / 0.3], rtol=1e-12)
    assert report.covered_target_mass == pytest.approx(0.8, rel=1e-12)


def test_importance_weight_mean_misses_unseen_mass():
    # q = (1, 0) never samples the second action, so E_q[p/q] sees only 0.8 of p.
    assert importance_weight_mean([0.8, 0.2], [1.0, 0.0]) == pytest.approx(0.8, rel=1e-12)


def test_kl_is_infinite_when_the_sampler_leaves_the_target_support():
    # KL(q || p) with q = (0.8, 0.2), p = (1, 0): infinite, not NaN, not an error.
    value = kl_divergence([0.8, 0.2], [1.0, 0.0])
    assert np.isposinf(value)
    # The other direction is finite: 0 log 0 = 0.
    assert kl_divergence([1.0, 0.0], [0.8, 0.2]) == pytest.approx(-math.log(0.8), rel=1e-12)


# --------------------------------------------------------------------------------------
# Sampling rules the seed fixes: full support at top_p = 1 and stable ties.
# --------------------------------------------------------------------------------------


def test_top_p_one_keeps_the_whole_support_even_a_1e300_token():
    logits = np.log(np.array([1.0, 1e-300]))
    result = top_p_distribution(logits, 1.0)
    assert result[1] > 0.0
    assert result[1] == pytest.approx(1e-300, rel=1e-12)
    record = behaviour_logprob(logits, 1, SamplingConfig())
    assert support_ids(record.support) == [0, 1]
    assert np.isfinite(record.behaviour_logprob)


def test_ties_smaller_id_wins_in_top_k():
    logits = np.array([0.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(top_k_distribution(logits, 1) > 0, [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(top_k_distribution(logits, 3) > 0, [1, 1, 0, 1, 0])
    np.testing.assert_allclose(top_k_distribution(logits, 3)[[0, 1, 3]].sum(), 1.0, rtol=1e-15)


def test_keep_ties_keeps_every_token_tied_with_the_kth_as_transformers_does():
    # transformers' TopKLogitsWarper removes scores < topk(scores, k)[..., -1]: written here on the logits.
    logits = np.array([0.0, 1.0, 0.0, 1.0, 0.0, -2.0])
    for k in range(1, logits.size + 1):
        kth = np.sort(logits)[::-1][k - 1]
        kept = top_k_distribution(logits, k, keep_ties=True)
        np.testing.assert_array_equal(kept > 0, ~(logits < kth))
        p = np.exp(logits - logits.max())
        np.testing.assert_allclose(kept, np.where(logits < kth, 0.0, p) / p[logits >= kth].sum(), rtol=1e-15)
    np.testing.assert_array_equal(top_k_distribution(logits, 3, keep_ties=True) > 0, [1, 1, 1, 1, 1, 0])
    with pytest.raises(TypeError, match="keep_ties"):
        top_k_distribution(logits, 2, keep_ties=1)


def test_ties_smaller_id_wins_in_top_p():
    # Uniform over four tokens: 0.3 needs two tokens, and they are ids 0 and 1.
    result = top_p_distribution(np.zeros(4), 0.3)
    np.testing.assert_allclose(result, [0.5, 0.5, 0.0, 0.0], atol=1e-15, rtol=0)
    # One dominant token (p ~ 0.870) and three tied ones (~ 0.043 each): the tied tokens
    # enter the nucleus in id order.
    tied_tail = np.array([-1.0, 2.0, -1.0, -1.0])
    assert np.flatnonzero(top_p_distribution(tied_tail, 0.90)).tolist() == [0, 1]
    assert np.flatnonzero(top_p_distribution(tied_tail, 0.95)).tolist() == [0, 1, 2]
