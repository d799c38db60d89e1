"""Bad input to every public function of ``autograder.reference``.

House rule: bad input raises ``ValueError`` or ``TypeError`` and the message names the
argument (for a rollout batch: the field) so a student can see what to fix. Every case below
asserts both: the exception type, and that the argument's name appears in ``str(exc)``.

Each case is a triple ``(label, call, name)``: ``call`` is a zero-argument callable that must
raise, ``name`` the argument it must name.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.reference import (
    EOS_IS_TERMINAL,
    ROLLOUT_BATCH_FIELDS,
    SamplingConfig,
    TaskContract,
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

NAN, INF = float("nan"), float("inf")
LOGITS = np.array([2.0, 1.0, 0.0, -1.0])
CAUSAL_LOGITS = np.zeros((1, 3, 4))
CAUSAL_IDS = np.array([[0, 1, 2]])
CAUSAL_MASK = np.array([[0, 1, 1]])
FIRST_P, FIRST_Q = [0.6, 0.4], [0.5, 0.5]
COND_P = [[0.7, 0.3], [0.2, 0.8]]
COND_Q = [[0.4, 0.6], [0.5, 0.5]]


def case(label, call, name):
    return pytest.param(call, name, id=label)


def with_nan(array, index):
    out = np.array(array, dtype=np.float64)
    out[index] = NAN
    return out


def with_value(array, index, value):
    out = np.array(array, dtype=np.float64)
    out[index] = value
    return out


CASES = [
    # ---- softmax / stable_log_softmax ------------------------------------------------
    *[
        item
        for fn in (stable_log_softmax, softmax)
        for item in (
            case(f"{fn.__name__}-nan", lambda fn=fn: fn([1.0, NAN]), "logits"),
            case(f"{fn.__name__}-inf", lambda fn=fn: fn([1.0, INF]), "logits"),
            case(f"{fn.__name__}-minus-inf", lambda fn=fn: fn([1.0, -INF]), "logits"),
            case(f"{fn.__name__}-0d", lambda fn=fn: fn(1.0), "logits"),
            case(f"{fn.__name__}-empty", lambda fn=fn: fn(np.zeros(0)), "logits"),
            case(f"{fn.__name__}-empty-axis", lambda fn=fn: fn(np.zeros((3, 0))), "logits"),
            case(f"{fn.__name__}-strings", lambda fn=fn: fn(["a", "b"]), "logits"),
            case(f"{fn.__name__}-objects", lambda fn=fn: fn(np.array([1.0, None], dtype=object)), "logits"),
            case(f"{fn.__name__}-complex", lambda fn=fn: fn(np.array([1.0 + 1j, 0.0])), "logits"),
            case(f"{fn.__name__}-ragged", lambda fn=fn: fn([[1.0, 2.0], [3.0]]), "logits"),
            case(f"{fn.__name__}-axis-out-of-range", lambda fn=fn: fn(np.zeros((2, 3)), axis=2), "axis"),
            case(f"{fn.__name__}-axis-negative-out", lambda fn=fn: fn(np.zeros((2, 3)), axis=-3), "axis"),
            case(f"{fn.__name__}-axis-float", lambda fn=fn: fn(np.zeros((2, 3)), axis=1.0), "axis"),
            case(f"{fn.__name__}-axis-bool", lambda fn=fn: fn(np.zeros((2, 3)), axis=True), "axis"),
            case(f"{fn.__name__}-axis-str", lambda fn=fn: fn(np.zeros((2, 3)), axis="-1"), "axis"),
            case(f"{fn.__name__}-axis-none", lambda fn=fn: fn(np.zeros((2, 3)), axis=None), "axis"),
        )
    ],
    # ---- causal_response_logprobs -----------------------------------------------------
    case("causal-logits-2d", lambda: causal_response_logprobs(np.zeros((3, 4)), CAUSAL_IDS, CAUSAL_MASK), "model_logits"),
    case("causal-logits-nan", lambda: causal_response_logprobs(with_nan(CAUSAL_LOGITS, (0, 1, 2)), CAUSAL_IDS, CAUSAL_MASK), "model_logits"),
    case("causal-logits-inf", lambda: causal_response_logprobs(with_value(CAUSAL_LOGITS, (0, 0, 0), INF), CAUSAL_IDS, CAUSAL_MASK), "model_logits"),
    case("causal-logits-strings", lambda: causal_response_logprobs(np.full((1, 3, 4), "x"), CAUSAL_IDS, CAUSAL_MASK), "model_logits"),
    case("causal-empty-vocab", lambda: causal_response_logprobs(np.zeros((1, 3, 0)), CAUSAL_IDS, CAUSAL_MASK), "model_logits"),
    case("causal-one-position", lambda: causal_response_logprobs(np.zeros((1, 1, 4)), np.array([[0]]), np.array([[1]])), "model_logits"),
    case("causal-ids-shape", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[0, 1]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-1d", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([0, 1, 2]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-outside-vocab", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[0, 1, 4]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-negative", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[0, -1, 2]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-float", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[0.0, 1.5, 2.0]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-integral-float", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[0.0, 1.0, 2.0]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-bool", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([[False, True, True]]), CAUSAL_MASK), "input_ids"),
    case("causal-ids-strings", lambda: causal_response_logprobs(CAUSAL_LOGITS, np.array([["0", "1", "2"]]), CAUSAL_MASK), "input_ids"),
    case("causal-mask-shape", lambda: causal_response_logprobs(CAUSAL_LOGITS, CAUSAL_IDS, np.array([[1, 1]])), "response_token_mask"),
    case("causal-mask-strings", lambda: causal_response_logprobs(CAUSAL_LOGITS, CAUSAL_IDS, np.array([["a", "b", "c"]])), "response_token_mask"),
    case("causal-mask-nan", lambda: causal_response_logprobs(CAUSAL_LOGITS, CAUSAL_IDS, np.array([[0.0, NAN, 1.0]])), "response_token_mask"),
    case("causal-mask-not-binary", lambda: causal_response_logprobs(CAUSAL_LOGITS, CAUSAL_IDS, np.array([[0, 2, 1]])), "response_token_mask"),
    # ---- masked_sequence_metrics ------------------------------------------------------
    case("metrics-shape-mismatch", lambda: masked_sequence_metrics(np.zeros((1, 3)), np.ones((1, 2))), "mask"),
    case("metrics-empty-mask", lambda: masked_sequence_metrics(np.array([[-0.1, -0.2]]), np.array([[0, 0]])), "mask"),
    case("metrics-one-empty-row", lambda: masked_sequence_metrics(np.array([[-0.1, -0.2], [-1.0, -1.0]]), np.array([[1, 1], [0, 0]])), "mask"),
    case("metrics-active-nan", lambda: masked_sequence_metrics(np.array([[-0.1, NAN]]), np.array([[1, 1]])), "selected_logprobs"),
    case("metrics-active-minus-inf", lambda: masked_sequence_metrics(np.array([[-0.1, -INF]]), np.array([[1, 1]])), "selected_logprobs"),
    case("metrics-strings", lambda: masked_sequence_metrics(np.array([["a", "b"]]), np.array([[1, 1]])), "selected_logprobs"),
    case("metrics-3d", lambda: masked_sequence_metrics(np.zeros((1, 1, 2)), np.ones((1, 1, 2))), "selected_logprobs"),
    case("metrics-0d", lambda: masked_sequence_metrics(-0.5, 1), "selected_logprobs"),
    case("metrics-mask-strings", lambda: masked_sequence_metrics(np.array([[-0.1, -0.2]]), np.array([["1", "0"]])), "mask"),
    case("metrics-mask-not-binary", lambda: masked_sequence_metrics(np.array([[-0.1, -0.2]]), np.array([[1, 3]])), "mask"),
    # ---- exact_kl_from_logits -----------------------------------------------------------
    case("exact-kl-shape", lambda: exact_kl_from_logits(np.zeros((2, 3)), np.zeros((2, 4))), "q_logits"),
    case("exact-kl-p-nan", lambda: exact_kl_from_logits([0.0, NAN], [0.0, 1.0]), "p_logits"),
    case("exact-kl-q-inf", lambda: exact_kl_from_logits([0.0, 1.0], [0.0, INF]), "q_logits"),
    case("exact-kl-0d", lambda: exact_kl_from_logits(1.0, 1.0), "p_logits"),
    case("exact-kl-empty", lambda: exact_kl_from_logits(np.zeros(0), np.zeros(0)), "p_logits"),
    case("exact-kl-strings", lambda: exact_kl_from_logits(["a"], ["b"]), "p_logits"),
    # ---- kl_divergence ------------------------------------------------------------------
    case("kl-shape", lambda: kl_divergence([0.5, 0.5], [0.2, 0.3, 0.5]), "q"),
    case("kl-p-negative", lambda: kl_divergence([1.2, -0.2], [0.5, 0.5]), "p"),
    case("kl-q-negative", lambda: kl_divergence([0.5, 0.5], [1.2, -0.2]), "q"),
    case("kl-p-nan", lambda: kl_divergence([NAN, 0.5], [0.5, 0.5]), "p"),
    case("kl-q-inf", lambda: kl_divergence([0.5, 0.5], [INF, 0.5]), "q"),
    case("kl-p-not-normalised", lambda: kl_divergence([0.5, 0.2], [0.5, 0.5]), "p"),
    case("kl-q-not-normalised", lambda: kl_divergence([0.5, 0.5], [0.9, 0.9]), "q"),
    case("kl-0d", lambda: kl_divergence(1.0, 1.0), "p"),
    case("kl-empty", lambda: kl_divergence([], []), "p"),
    case("kl-strings", lambda: kl_divergence(["a", "b"], [0.5, 0.5]), "p"),
    # ---- kl_sample_values / kl_estimators_at_ratio -------------------------------------
    case("samples-shape", lambda: kl_sample_values(np.array([-0.4, -1.2]), np.array([-0.5])), "log_p"),
    case("samples-q-nan", lambda: kl_sample_values(np.array([NAN]), np.array([-0.5])), "log_q"),
    case("samples-p-nan", lambda: kl_sample_values(np.array([-0.4]), np.array([NAN])), "log_p"),
    case("samples-q-minus-inf", lambda: kl_sample_values(np.array([-INF]), np.array([-0.5])), "log_q"),
    case("samples-p-plus-inf", lambda: kl_sample_values(np.array([-0.4]), np.array([INF])), "log_p"),
    # A log-probability is at most 0; 1e308 also makes log p - log q overflow.
    case("samples-p-positive", lambda: kl_sample_values(np.array([-8e307]), np.array([1e308])), "log_p"),
    case("samples-q-positive", lambda: kl_sample_values(np.array([0.5]), np.array([-0.5])), "log_q"),
    case("samples-strings", lambda: kl_sample_values(np.array(["x"]), np.array([-0.5])), "log_q"),
    case("ratio-negative", lambda: kl_estimators_at_ratio(-1.0), "r"),
    case("ratio-nan", lambda: kl_estimators_at_ratio(NAN), "r"),
    case("ratio-string", lambda: kl_estimators_at_ratio("2"), "r"),
    case("ratio-none", lambda: kl_estimators_at_ratio(None), "r"),
    # ---- kl_chain_rule ------------------------------------------------------------------
    case("chain-first-p-shape", lambda: kl_chain_rule([0.6, 0.3, 0.1], FIRST_Q, COND_P, COND_Q), "first_p"),
    case("chain-first-q-not-normalised", lambda: kl_chain_rule(FIRST_P, [0.5, 0.6], COND_P, COND_Q), "first_q"),
    case("chain-first-p-nan", lambda: kl_chain_rule([NAN, 0.4], FIRST_Q, COND_P, COND_Q), "first_p"),
    case("chain-cond-p-rows", lambda: kl_chain_rule(FIRST_P, FIRST_Q, [[0.7, 0.3]], COND_Q), "cond_p"),
    case("chain-cond-q-not-normalised", lambda: kl_chain_rule(FIRST_P, FIRST_Q, COND_P, [[0.4, 0.4], [0.5, 0.5]]), "cond_q"),
    case("chain-cond-p-negative", lambda: kl_chain_rule(FIRST_P, FIRST_Q, [[1.1, -0.1], [0.2, 0.8]], COND_Q), "cond_p"),
    case("chain-cond-q-1d", lambda: kl_chain_rule(FIRST_P, FIRST_Q, COND_P, [0.5, 0.5]), "cond_q"),
    case("chain-cond-shape-mismatch", lambda: kl_chain_rule(FIRST_P, FIRST_Q, COND_P, [[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]]), "cond_q"),
    # ---- temperature / top-k / top-p ----------------------------------------------------
    case("temperature-zero", lambda: temperature_distribution(LOGITS, 0.0), "temperature"),
    case("temperature-negative", lambda: temperature_distribution(LOGITS, -1.0), "temperature"),
    case("temperature-nan", lambda: temperature_distribution(LOGITS, NAN), "temperature"),
    case("temperature-inf", lambda: temperature_distribution(LOGITS, INF), "temperature"),
    case("temperature-bool", lambda: temperature_distribution(LOGITS, True), "temperature"),
    case("temperature-string", lambda: temperature_distribution(LOGITS, "2"), "temperature"),
    case("temperature-array", lambda: temperature_distribution(LOGITS, np.array([1.0, 2.0])), "temperature"),
    case("temperature-logits-2d", lambda: temperature_distribution(np.zeros((2, 2)), 1.0), "logits"),
    case("temperature-logits-empty", lambda: temperature_distribution(np.zeros(0), 1.0), "logits"),
    case("temperature-logits-nan", lambda: temperature_distribution([0.0, NAN], 1.0), "logits"),
    case("top-k-zero", lambda: top_k_distribution(LOGITS, 0), "k"),
    case("top-k-negative", lambda: top_k_distribution(LOGITS, -1), "k"),
    case("top-k-too-large", lambda: top_k_distribution(LOGITS, 5), "k"),
    case("top-k-bool", lambda: top_k_distribution(LOGITS, True), "k"),
    case("top-k-float", lambda: top_k_distribution(LOGITS, 2.0), "k"),
    case("top-k-none", lambda: top_k_distribution(LOGITS, None), "k"),
    case("top-k-string", lambda: top_k_distribution(LOGITS, "2"), "k"),
    case("top-k-logits-inf", lambda: top_k_distribution([0.0, INF], 1), "logits"),
    case("top-k-logits-2d", lambda: top_k_distribution(np.zeros((2, 2)), 1), "logits"),
    case("top-p-zero", lambda: top_p_distribution(LOGITS, 0.0), "top_p"),
    case("top-p-negative", lambda: top_p_distribution(LOGITS, -0.1), "top_p"),
    case("top-p-above-one", lambda: top_p_distribution(LOGITS, 1.5), "top_p"),
    case("top-p-nan", lambda: top_p_distribution(LOGITS, NAN), "top_p"),
    case("top-p-bool", lambda: top_p_distribution(LOGITS, True), "top_p"),
    case("top-p-string", lambda: top_p_distribution(LOGITS, "0.5"), "top_p"),
    case("top-p-none", lambda: top_p_distribution(LOGITS, None), "top_p"),
    case("top-p-min-keep-zero", lambda: top_p_distribution(LOGITS, 0.5, min_tokens_to_keep=0), "min_tokens_to_keep"),
    case("top-p-min-keep-too-large", lambda: top_p_distribution(LOGITS, 0.5, min_tokens_to_keep=5), "min_tokens_to_keep"),
    case("top-p-min-keep-bool", lambda: top_p_distribution(LOGITS, 0.5, min_tokens_to_keep=True), "min_tokens_to_keep"),
    case("top-p-min-keep-float", lambda: top_p_distribution(LOGITS, 0.5, min_tokens_to_keep=2.0), "min_tokens_to_keep"),
    case("top-p-logits-nan", lambda: top_p_distribution([NAN, 0.0], 0.5), "logits"),
    case("top-p-logits-0d", lambda: top_p_distribution(0.0, 0.5), "logits"),
    # ---- SamplingConfig, behaviour_distribution, behaviour_logprob ----------------------
    # A config may reject its fields when built or when used: both count, as long as the
    # field is named.
    case("config-temperature-zero", lambda: behaviour_distribution(LOGITS, SamplingConfig(temperature=0.0)), "temperature"),
    case("config-temperature-nan", lambda: behaviour_distribution(LOGITS, SamplingConfig(temperature=NAN)), "temperature"),
    case("config-temperature-bool", lambda: behaviour_distribution(LOGITS, SamplingConfig(temperature=True)), "temperature"),
    case("config-top-k-zero", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_k=0)), "top_k"),
    case("config-top-k-bool", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_k=True)), "top_k"),
    case("config-top-k-float", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_k=2.5)), "top_k"),
    case("config-top-p-zero", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_p=0.0)), "top_p"),
    case("config-top-p-above-one", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_p=1.01)), "top_p"),
    case("config-top-p-nan", lambda: behaviour_distribution(LOGITS, SamplingConfig(top_p=NAN)), "top_p"),
    case("config-min-keep-zero", lambda: behaviour_distribution(LOGITS, SamplingConfig(min_tokens_to_keep=0)), "min_tokens_to_keep"),
    case("config-min-keep-bool", lambda: behaviour_distribution(LOGITS, SamplingConfig(min_tokens_to_keep=True)), "min_tokens_to_keep"),
    case("config-banned-negative", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids=(-1,))), "banned_token_ids"),
    case("config-banned-outside-vocab", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids=(4,))), "banned_token_ids"),
    case("config-banned-float", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids=(1.5,))), "banned_token_ids"),
    case("config-banned-bool", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids=(True,))), "banned_token_ids"),
    case("config-banned-everything", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids=(0, 1, 2, 3))), "banned_token_ids"),
    case("config-banned-string", lambda: behaviour_distribution(LOGITS, SamplingConfig(banned_token_ids="12")), "banned_token_ids"),
    case("behaviour-config-dict", lambda: behaviour_distribution(LOGITS, {"temperature": 1.0}), "config"),
    case("behaviour-config-none", lambda: behaviour_distribution(LOGITS, None), "config"),
    case("behaviour-logits-nan", lambda: behaviour_distribution([0.0, NAN], SamplingConfig()), "logits"),
    case("behaviour-logits-2d", lambda: behaviour_distribution(np.zeros((2, 2)), SamplingConfig()), "logits"),
    case("logprob-token-outside-vocab", lambda: behaviour_logprob(LOGITS, 4, SamplingConfig()), "token_id"),
    case("logprob-token-negative", lambda: behaviour_logprob(LOGITS, -1, SamplingConfig()), "token_id"),
    case("logprob-token-float", lambda: behaviour_logprob(LOGITS, 1.0, SamplingConfig()), "token_id"),
    case("logprob-token-bool", lambda: behaviour_logprob(LOGITS, True, SamplingConfig()), "token_id"),
    case("logprob-token-string", lambda: behaviour_logprob(LOGITS, "1", SamplingConfig()), "token_id"),
    case("logprob-token-array", lambda: behaviour_logprob(LOGITS, np.array([1, 2]), SamplingConfig()), "token_id"),
    case("logprob-config-none", lambda: behaviour_logprob(LOGITS, 1, None), "config"),
    case("logprob-logits-inf", lambda: behaviour_logprob([0.0, INF], 1, SamplingConfig()), "logits"),
    case("correction-zero", lambda: truncation_log_correction(0.0), "support_mass"),
    case("correction-negative", lambda: truncation_log_correction(-0.5), "support_mass"),
    case("correction-above-one", lambda: truncation_log_correction(1.5), "support_mass"),
    case("correction-nan", lambda: truncation_log_correction(NAN), "support_mass"),
    case("correction-bool", lambda: truncation_log_correction(True), "support_mass"),
    case("correction-string", lambda: truncation_log_correction("0.85"), "support_mass"),
    case("ratio-error-mass-zero", lambda: sequence_ratio_error(0.0, 4), "support_mass"),
    case("ratio-error-mass-above-one", lambda: sequence_ratio_error(1.2, 4), "support_mass"),
    case("ratio-error-positions-negative", lambda: sequence_ratio_error(0.85, -1), "positions"),
    case("ratio-error-positions-float", lambda: sequence_ratio_error(0.85, 4.0), "positions"),
    case("ratio-error-positions-bool", lambda: sequence_ratio_error(0.85, True), "positions"),
    case("ratio-error-positions-string", lambda: sequence_ratio_error(0.85, "4"), "positions"),
    # ---- stopping ---------------------------------------------------------------------
    case("stop-unknown", lambda: map_stop_reason("timeout"), "stop_reason"),
    case("stop-empty", lambda: map_stop_reason(""), "stop_reason"),
    case("stop-blank", lambda: map_stop_reason("   "), "stop_reason"),
    case("stop-none", lambda: map_stop_reason(None), "stop_reason"),
    case("stop-int", lambda: map_stop_reason(3), "stop_reason"),
    case("stop-bytes", lambda: map_stop_reason(b"eos"), "stop_reason"),
    case("stop-contract-wrong-type", lambda: map_stop_reason("eos", {"eos": True}), "contract"),
    case("contract-map-unknown", lambda: EOS_IS_TERMINAL.map("abort"), "stop_reason"),
    case("contract-map-none", lambda: EOS_IS_TERMINAL.map(None), "stop_reason"),
    # ---- support ----------------------------------------------------------------------
    case("support-shape", lambda: importance_support([0.5, 0.5], [0.2, 0.3, 0.5]), "target"),
    case("support-behaviour-negative", lambda: importance_support([1.2, -0.2], [0.5, 0.5]), "behaviour"),
    case("support-target-nan", lambda: importance_support([0.5, 0.5], [NAN, 0.5]), "target"),
    case("support-behaviour-not-normalised", lambda: importance_support([0.5, 0.2], [0.5, 0.5]), "behaviour"),
    case("support-target-2d", lambda: importance_support([0.5, 0.5], [[0.5, 0.5]]), "target"),
    case("support-empty", lambda: importance_support([], []), "behaviour"),
    case("weight-mean-shape", lambda: importance_weight_mean([0.5, 0.5], [1.0]), "q"),
    case("weight-mean-p-negative", lambda: importance_weight_mean([1.2, -0.2], [0.5, 0.5]), "p"),
    case("weight-mean-q-nan", lambda: importance_weight_mean([0.5, 0.5], [NAN, 0.5]), "q"),
    case("weight-mean-q-not-normalised", lambda: importance_weight_mean([0.5, 0.5], [0.1, 0.1]), "q"),
]


@pytest.mark.parametrize(("call", "name"), CASES)
def test_bad_input_is_rejected_naming_the_argument(call, name):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert name in str(info.value), f"message {str(info.value)!r} does not name {name!r}"


# --------------------------------------------------------------------------------------
# validate_rollout_batch: one broken field at a time
# --------------------------------------------------------------------------------------


def good_batch() -> dict:
    return {
        "response_ids": np.array([[5, 6, 1], [7, 8, 0]]),
        "response_mask": np.array([[1, 1, 1], [1, 0, 0]]),
        "old_logprobs": np.array([[-0.1, -0.2, -0.3], [-0.3, np.nan, np.nan]]),
        "ref_logprobs": np.array([[-0.2, -0.3, -0.1], [-0.4, np.nan, np.nan]]),
        "sequence_rewards": np.array([1.0, 0.0]),
        "terminated": np.array([True, False]),
        "truncated": np.array([False, True]),
        "stop_reason": np.array(["eos", "length"], dtype=object),
    }


def test_good_batch_is_accepted():
    summary = validate_rollout_batch(good_batch())
    assert summary.batch_size == 2 and summary.active_tokens == 4


def edited(field, value):
    batch = good_batch()
    batch[field] = value
    return batch


BATCH_CASES = [
    ("ids-float", edited("response_ids", np.array([[5.0, 6.5, 1.0], [7.0, 8.0, 0.0]])), "response_ids"),
    ("ids-negative", edited("response_ids", np.array([[5, -6, 1], [7, 8, 0]])), "response_ids"),
    ("ids-bool", edited("response_ids", np.ones((2, 3), dtype=bool)), "response_ids"),
    ("ids-1d", edited("response_ids", np.array([5, 6, 1])), "response_ids"),
    ("ids-shape", edited("response_ids", np.array([[5, 6], [7, 8]])), "response_ids"),
    ("mask-non-contiguous", edited("response_mask", np.array([[1, 0, 1], [1, 0, 0]])), "response_mask"),
    ("mask-empty-row", edited("response_mask", np.array([[1, 1, 1], [0, 0, 0]])), "response_mask"),
    ("mask-shape", edited("response_mask", np.array([[1, 1], [1, 0]])), "response_mask"),
    ("mask-strings", edited("response_mask", np.array([["1", "1", "1"], ["1", "0", "0"]])), "response_mask"),
    ("mask-not-binary", edited("response_mask", np.array([[1, 1, 2], [1, 0, 0]])), "response_mask"),
    ("old-active-nan", edited("old_logprobs", np.array([[-0.1, np.nan, -0.3], [-0.3, np.nan, np.nan]])), "old_logprobs"),
    ("old-active-inf", edited("old_logprobs", np.array([[-0.1, -np.inf, -0.3], [-0.3, np.nan, np.nan]])), "old_logprobs"),
    ("old-padding-finite", edited("old_logprobs", np.array([[-0.1, -0.2, -0.3], [-0.3, -0.5, np.nan]])), "old_logprobs"),
    ("old-shape", edited("old_logprobs", np.array([[-0.1, -0.2], [-0.3, np.nan]])), "old_logprobs"),
    ("ref-active-nan", edited("ref_logprobs", np.array([[np.nan, -0.3, -0.1], [-0.4, np.nan, np.nan]])), "ref_logprobs"),
    ("ref-padding-finite", edited("ref_logprobs", np.array([[-0.2, -0.3, -0.1], [-0.4, np.nan, 0.0]])), "ref_logprobs"),
    ("ref-strings", edited("ref_logprobs", np.full((2, 3), "x")), "ref_logprobs"),
    ("rewards-nan", edited("sequence_rewards", np.array([1.0, np.nan])), "sequence_rewards"),
    ("rewards-inf", edited("sequence_rewards", np.array([np.inf, 0.0])), "sequence_rewards"),
    ("rewards-shape", edited("sequence_rewards", np.array([1.0, 0.0, 1.0])), "sequence_rewards"),
    ("rewards-2d", edited("sequence_rewards", np.array([[1.0], [0.0]])), "sequence_rewards"),
    ("terminated-shape", edited("terminated", np.array([True])), "terminated"),
    ("terminated-strings", edited("terminated", np.array(["yes", "no"])), "terminated"),
    ("terminated-not-binary", edited("terminated", np.array([2, 0])), "terminated"),
    ("truncated-shape", edited("truncated", np.array([[False, True]])), "truncated"),
    ("truncated-nan", edited("truncated", np.array([np.nan, 1.0])), "truncated"),
    ("stop-empty", edited("stop_reason", np.array(["eos", ""], dtype=object)), "stop_reason"),
    ("stop-blank", edited("stop_reason", np.array(["  ", "length"], dtype=object)), "stop_reason"),
    ("stop-none", edited("stop_reason", np.array(["eos", None], dtype=object)), "stop_reason"),
    ("stop-int", edited("stop_reason", np.array(["eos", 3], dtype=object)), "stop_reason"),
    ("stop-shape", edited("stop_reason", np.array(["eos"], dtype=object)), "stop_reason"),
    ("stop-plain-string", edited("stop_reason", "eos"), "stop_reason"),
]


@pytest.mark.parametrize(("batch", "name"), [pytest.param(b, n, id=label) for label, b, n in BATCH_CASES])
def test_bad_batch_field_is_rejected_naming_the_field(batch, name):
    with pytest.raises((ValueError, TypeError)) as info:
        validate_rollout_batch(batch)
    assert name in str(info.value), f"message {str(info.value)!r} does not name {name!r}"


@pytest.mark.parametrize("field", sorted(ROLLOUT_BATCH_FIELDS))
def test_missing_batch_field_is_named(field):
    batch = good_batch()
    del batch[field]
    with pytest.raises((ValueError, TypeError)) as info:
        validate_rollout_batch(batch)
    assert field in str(info.value)


@pytest.mark.parametrize("not_a_mapping", [None, [1, 2], "batch", np.zeros(3)])
def test_batch_must_be_a_mapping(not_a_mapping):
    with pytest.raises((ValueError, TypeError)) as info:
        validate_rollout_batch(not_a_mapping)
    assert "batch" in str(info.value)


def test_task_contract_rejects_a_non_string_reason_set():
    # A bare string as a reason set would silently become a set of characters.
    with pytest.raises((ValueError, TypeError)) as info:
        TaskContract(name="bad", terminal_reasons="eos", truncation_reasons=("length",))
    assert "terminal_reasons" in str(info.value)
