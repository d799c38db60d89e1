"""The open-check gate on every function notebook (15-24, 26): open-check points are earned, not matched.

An answer that recognises the open checks' inputs and returns the published answer there (a lookup
table over the reference's values) used to collect the whole open-check group in every one of these
notebooks (2/9 in 15-20, 1/8 in 21-24), whether it raised or returned junk on every other input; a
function that raised on everything still earned 1/9 in 20 (the open check's NaN batch expects a
ValueError). The hidden cases of the same kind are now the evidence: each stub earns nothing there,
in the whole check and in the open-check cell graded on its own, while the corpora's correct answers
keep every point (their own tests).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograder.reference as reference
import autograder.reference.chat as chat
import autograder.reference.further as further
import autograder.reference.sequence_level as sequence_level
import autograder.reference.precision as precision
import autograder.reference.kl_response as kl_response
import autograder.reference.async_rollouts as async_rollouts
import autograder.reference.clipping as clipping
from autograder.checks import CHECKS
from autograder.checks._core import OPEN_GATE_REASON
from check_support import result_of

FUNCTIONS = {
    "15_stable_log_softmax": ("stable_log_softmax",),
    "16_causal_shift": ("causal_response_logprobs",),
    "17_sequence_metrics": ("masked_sequence_metrics",),
    "18_kl_estimators": ("exact_kl_from_logits", "kl_sample_values"),
    "19_sampling_transforms": ("temperature_distribution", "top_k_distribution", "top_p_distribution"),
    "20_rollout_validation": ("validate_rollout_batch",),
    "21_sampler_trainer_mismatch": ("engine_and_trainer_logprobs", "truncated_is_weights"),
    "22_kl_reward_vs_loss": ("true_kl_gradients", "loss_gradients", "reward_gradients"),
    "23_loss_aggregation": ("token_weights", "aggregate_loss"),
    "24_labels_and_shifting": ("causal_lm_loss", "loss_positions", "diagnose_labels"),
    "25_logprob_precision": ("round_to_bfloat16", "logprobs_at_precision", "precision_ratios", "bf16_error_bounds"),
    "26_chat_template_mask": ("response_mask", "transcript_mask", "assistant_mask"),
    "27_sequence_ratios": ("sequence_ratios", "kept_mask", "first_dropped_length"),
    "28_kl_across_response": ("sequence_kl_gradient", "reward_return_gradient", "per_token_loss_gradient",
                              "off_policy_loss_gradient", "response_kl_weights"),
    "29_clipping_and_gating": ("ppo_clip_loss", "trl_delta_loss", "cispo_loss", "stale_sequence_mask"),
    "30_asynchronous_rollouts": ("staleness_kept", "decoupled_weights", "surrogate_expectation", "routed_logprobs"),
}


def _same(a, b) -> bool:
    """Whether two call arguments are the same plain data (arrays by dtype, shape and values)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(a[key], b[key]) for key in a)
    try:
        x, y = np.asarray(a), np.asarray(b)
    except ValueError:  # ragged lists
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            _same(p, q) for p, q in zip(a, b))
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")


def matched(stem: str, otherwise: str) -> dict:
    """Each function returns the reference's value on the open checks' exact inputs (a lookup table)
    and, on every other input, raises ValueError (``"raise"``) or returns None (``"junk"``);
    ``"raise-all"`` raises everywhere."""
    seen = [(call.target, call.args, call.kwargs) for case in CHECKS[stem].cases(["public"]) for call in case.calls]

    def make(name):
        truth = (getattr(reference, name, None) or getattr(further, name, None) or getattr(chat, name, None)
                 or getattr(sequence_level, name, None) or getattr(precision, name, None)
                 or getattr(kl_response, name, None) or getattr(clipping, name, None)
                 or getattr(async_rollouts, name))

        def answer(*args, **kwargs):
            if otherwise != "raise-all":
                for target, known_args, known_kwargs in seen:
                    if target == name and len(args) == len(known_args) and kwargs.keys() == known_kwargs.keys() \
                            and all(_same(a, b) for a, b in zip(args, known_args)) \
                            and all(_same(kwargs[key], known_kwargs[key]) for key in kwargs):
                        return truth(*args, **kwargs)
            if otherwise == "junk":
                return None
            raise ValueError("invalid input")
        return answer

    namespace = {name: make(name) for name in FUNCTIONS[stem]}
    namespace["SequenceMetrics"] = reference.SequenceMetrics
    return namespace


def test_the_lookup_table_does_pass_the_open_checks():
    """The stubs are what they claim: without the gate they would pass every open-check case."""
    from autograder.checks._core import _safe_judge, perform_cases

    for stem in FUNCTIONS:
        cases = CHECKS[stem].cases(["public"])
        outcomes = perform_cases(cases, matched(stem, "raise"))
        assert all(_safe_judge(case, outcomes[case.name]).passed for case in cases), stem


KINDS = ("raise-all", "raise", "junk")


@pytest.mark.parametrize("stem", sorted(FUNCTIONS))
def test_a_matched_or_raised_answer_earns_nothing(stem):
    for kind in KINDS:
        answer = matched(stem, kind)
        result = result_of(stem, answer)
        assert result.points_earned == 0, (kind, result.feedback())
        alone = result_of(stem, answer, ["public"])  # the open-check cell graded on its own (nbgrader)
        assert alone.points_earned == 0, (kind, alone.feedback())
        if kind != "raise-all":
            public = next(group for group in result.groups if group.name == "public")
            assert any(case.withheld for case in public.cases), public.feedback()
            assert OPEN_GATE_REASON in public.gated, public.feedback()
            assert set(public.gated_by) <= set(FUNCTIONS[stem])


def test_the_withheld_open_check_says_which_hidden_case_failed_and_why():
    result = result_of("17_sequence_metrics", matched("17_sequence_metrics", "junk"))
    public = next(group for group in result.groups if group.name == "public")
    assert public.gated == (
        "points withheld: `masked_sequence_metrics` failed the hidden case 'B=2, T=5: token_count and sum_logprob' "
        "and `masked_sequence_metrics` failed the hidden case 'B=2, T=5: mean_nll and perplexity': the open check "
        "is a hint, and its points count only when the same function also passes the hidden cases of the same "
        "kind."), public.gated
    assert "[WITHHELD] the open check's response: token_count and sum_logprob and 1 more case" in public.feedback()


def test_20_raising_on_everything_earns_nothing_for_the_nan_batch():
    result = result_of("20_rollout_validation", matched("20_rollout_validation", "raise-all"))
    public = next(group for group in result.groups if group.name == "public")
    nan_case = next(case for case in public.cases if "NaN" in case.name)
    assert nan_case.withheld and public.points_earned == 0, public.feedback()
    assert "`validate_rollout_batch` raised on valid input too (case 'a valid batch of 2')" in public.gated


@pytest.mark.parametrize("stem", sorted(FUNCTIONS))
def test_every_open_check_case_is_gated_by_hidden_cases(stem):
    check = CHECKS[stem]
    open_gates = [gate for gate in check.gates if gate.needs == "passed"]
    for case in check.cases(["public"]):
        assert any(gate.covers(case) for gate in open_gates), (stem, case.name)
    assert all(case.group != "public" for gate in open_gates for case in check.gate_cases(gate))
