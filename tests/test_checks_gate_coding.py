"""The validation gate applied to the coding notebooks 15-20 (outside tester, finding F-RAISEALL).

A stub that raises ValueError on every input, and an answer that hard-codes the notebook's open check
and raises on everything else, used to collect every bad-input point (2/9 in 15-17, 1/9 in 18-19,
5/9 in 20; 4/9 for the open check plus raise in 15-17). Both now earn nothing in the gated groups, in
the whole check and in each hidden cell graded on its own, while the reference keeps full marks.
"""

from __future__ import annotations

import pytest

from autograder.checks import CHECKS
from check_support import result_of

# The result types the notebooks give, as their corpora write them.
from test_checks_ex17_sequence_metrics import SEQUENCE_METRICS  # noqa: E402
from test_checks_ex20_rollout_validation import SUMMARY  # noqa: E402

#: ``stem -> (function signatures, gated groups)``.
NOTEBOOKS = {
    "15_stable_log_softmax": (("stable_log_softmax(logits, axis=-1)",), ("validation",)),
    "16_causal_shift": (("causal_response_logprobs(model_logits, input_ids, response_token_mask)",), ("validation",)),
    "17_sequence_metrics": (("masked_sequence_metrics(selected_logprobs, mask)",), ("validation",)),
    "18_kl_estimators": (("exact_kl_from_logits(p_logits, q_logits)", "kl_sample_values(log_q, log_p)"),
                         ("validation",)),
    "19_sampling_transforms": (("temperature_distribution(logits, temperature)", "top_k_distribution(logits, k)",
                                "top_p_distribution(logits, top_p, *, min_tokens_to_keep=1)"), ("validation",)),
    "20_rollout_validation": (("validate_rollout_batch(batch)",), ("structure", "values")),
}


def raise_all(stem: str) -> str:
    """The tester's g_raise_NN: every function raises ValueError('invalid input')."""
    return "".join(f"def {signature}:\n    raise ValueError('invalid input')\n" for signature in NOTEBOOKS[stem][0])


#: The tester's answers that return the open check's expected values and raise on every other input
#: (round 10: 15, 16, 17; round 9: 20, which names every field in its message as rule 1 asks).
OPEN_CHECK_PLUS_RAISE = {
    "15_stable_log_softmax": """
def stable_log_softmax(logits, axis=-1):
    x = np.asarray(logits, dtype=float)
    if x.shape == (2, 3) and np.allclose(x, [[1000.0, 1001.0, 999.0], [-1000.0, -999.0, -1001.0]]):
        r = np.array([0.0, 1.0, -1.0]); r = r - np.log(np.exp(r).sum())
        return np.stack([r, r])
    raise ValueError("unsupported input")
""",
    "16_causal_shift": """
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    z = np.asarray(model_logits, dtype=float); ids = np.asarray(input_ids); m = np.asarray(response_token_mask)
    if z.shape == (1, 3, 4) and not z.any():
        return np.full((1, 2), -np.log(4.0)), m[:, 1:].astype(bool)
    if z.shape == (1, 4, 4) and ids.tolist() == [[2, 0, 3, 1]]:
        zz = z[:, :-1]; lse = np.log(np.exp(zz - zz.max(-1, keepdims=True)).sum(-1)) + zz.max(-1)
        return np.take_along_axis(zz, ids[:, 1:, None], -1)[..., 0] - lse, m[:, 1:].astype(bool)
    raise ValueError("unsupported input")
""",
    "17_sequence_metrics": SEQUENCE_METRICS + """
def masked_sequence_metrics(selected_logprobs, mask):
    x = np.asarray(selected_logprobs, dtype=float)
    if x.shape == (1, 3) and np.allclose(x, [[-0.1, -0.2, -1.0]]):
        return SequenceMetrics(np.array([2]), np.array([-1.2]), np.array([0.6]), np.exp(np.array([0.6])))
    raise ValueError("unsupported input")
""",
    "20_rollout_validation": SUMMARY + """
def validate_rollout_batch(batch):
    try:
        ids = np.asarray(batch["response_ids"]).tolist()
        r = np.asarray(batch["sequence_rewards"], dtype=float)
        if ids == [[5, 6], [7, 8]] and np.isfinite(r).all():
            return RolloutBatchSummary(2, 2, 3, 1, 1, 1.5)
    except Exception:
        pass
    raise ValueError("invalid batch; check response_ids, response_mask, old_logprobs, ref_logprobs, "
                     "sequence_rewards, terminated, truncated, stop_reason")
""",
}

ANSWERS = [(stem, "raise-all", raise_all(stem)) for stem in NOTEBOOKS]
ANSWERS += [(stem, "open-check-plus-raise", source) for stem, source in OPEN_CHECK_PLUS_RAISE.items()]


@pytest.mark.parametrize("stem, label, source", ANSWERS, ids=[f"{stem[:2]}-{label}" for stem, label, _ in ANSWERS])
def test_rejecting_everything_earns_no_bad_input_point(stem, label, source):
    gated = NOTEBOOKS[stem][1]
    assert set(CHECKS[stem].gate.groups) == set(gated)
    result = result_of(stem, source)
    for group in result.groups:
        if group.name in gated:
            assert group.points_earned == 0, result.feedback()
            if any(case.withheld for case in group.cases):
                assert group.gated and "counts only when valid input is accepted" in group.gated
    # Graded one hidden cell at a time (nbgrader), each gated cell withholds the same.
    for name in gated:
        alone = result_of(stem, source, [name])
        assert alone.points_earned == 0, alone.feedback()
    assert result.points_earned <= CHECKS[stem].points / 3 + 1e-9, result.feedback()


@pytest.mark.parametrize("stem", sorted(NOTEBOOKS))
def test_the_gate_names_hidden_cases_only(stem):
    check = CHECKS[stem]
    assert all(case.group != "public" for case in check.gate_cases()), stem
    for gate in check.gates:
        assert len(check.gate_cases(gate)) == len(gate.cases), (stem, gate)
