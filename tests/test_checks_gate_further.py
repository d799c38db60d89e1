"""The validation gate on exercises 21-30: bad-input points count only for functions that accept valid input.

The outside tester's stubs: every function raising ValueError on every input (1/8 in each notebook
before the gate), and the open checks' answers hard-coded with ValueError for every other input. Both
now earn nothing in the validation group, graded together or as its own hidden cell; the reference
keeps every point.
"""

from __future__ import annotations

import importlib

import pytest

from autograder.checks import CHECKS
from check_support import result_of

FUNCTIONS = {
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
#: Where each notebook's reference lives when it is not autograder.reference.further.
REFERENCE_MODULES = {"25_logprob_precision": "autograder.reference.precision",
                     "26_chat_template_mask": "autograder.reference.chat",
                     "27_sequence_ratios": "autograder.reference.sequence_level",
                     "28_kl_across_response": "autograder.reference.kl_response",
                     "29_clipping_and_gating": "autograder.reference.clipping",
                     "30_asynchronous_rollouts": "autograder.reference.async_rollouts"}


def reference_of(stem: str):
    return importlib.import_module(REFERENCE_MODULES.get(stem, "autograder.reference.further"))


def raise_all(stem: str) -> str:
    return "\n".join(f"def {name}(*args, **kwargs):\n    raise ValueError('invalid input')\n"
                     for name in FUNCTIONS[stem])


def open_checks_plus_raise(stem: str) -> dict:
    """Each function answers the inputs of the notebook's open checks as the reference does (a lookup
    table) and raises ValueError on every other input."""
    import numpy as np

    reference = reference_of(stem)
    check = CHECKS[stem]
    seen = [(call.target, call.args, call.kwargs) for case in check.cases(["public"]) for call in case.calls]

    def make(name):
        def answer(*args, **kwargs):
            for target, known_args, known_kwargs in seen:
                if target == name and len(args) == len(known_args) and all(
                        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(args, known_args)) \
                        and kwargs == known_kwargs:
                    return (getattr(reference, name, None) or getattr(exercise_28, name))(*args, **kwargs)
            raise ValueError("unsupported input")
        return answer

    return {name: make(name) for name in FUNCTIONS[stem]}


@pytest.mark.parametrize("stem", sorted(FUNCTIONS))
@pytest.mark.parametrize("kind", ["raise-all", "open-checks-plus-raise"])
def test_a_function_that_rejects_valid_input_earns_no_bad_input_points(stem, kind):
    answer = raise_all(stem) if kind == "raise-all" else open_checks_plus_raise(stem)
    result = result_of(stem, answer)
    validation = next(group for group in result.groups if group.name == "validation")
    assert validation.points_earned == 0, result.feedback()
    assert validation.gated and set(validation.gated_by) == set(FUNCTIONS[stem]), result.feedback()
    assert "rejecting bad input counts only when valid input is accepted" in validation.feedback()
    alone = result_of(stem, answer, ["validation"])  # the hidden cell graded on its own gates alike
    assert alone.points_earned == 0, alone.feedback()
    if kind == "open-checks-plus-raise":
        assert result.points_earned <= CHECKS[stem].points / 3 + 1e-9, result.feedback()


@pytest.mark.parametrize("stem", sorted(FUNCTIONS))
def test_the_reference_keeps_every_bad_input_point(stem):
    reference = reference_of(stem)
    result = result_of(stem, {name: getattr(reference, name) for name in FUNCTIONS[stem]})
    assert result.points_earned == CHECKS[stem].points, result.feedback()
    assert not any(group.gated for group in result.groups)
