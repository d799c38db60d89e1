"""The hidden checks of exercise 20 against a corpus of correct, mistaken and hostile validators."""

from __future__ import annotations

import pytest

from autograder.checks import CHECKS
from check_support import CodingCheckTests, result_of

STEM = "20_rollout_validation"

SUMMARY = """
from dataclasses import dataclass
from typing import Any, Mapping
import numpy as np

@dataclass(frozen=True)
class RolloutBatchSummary:
    batch_size: int
    max_response_tokens: int
    active_tokens: int
    terminated_sequences: int
    truncated_sequences: int
    mean_response_length: float
"""

# A correct validator, one rule per block, so that each wrong answer can remove or alter one block.
BLOCKS = {
    "fields": """
    required = ("response_ids", "response_mask", "old_logprobs", "ref_logprobs",
                "sequence_rewards", "terminated", "truncated", "stop_reason")
    missing = [name for name in required if name not in batch]
    if missing:
        raise ValueError(f"batch is missing {missing}")
""",
    "flags": """
    for name in ("terminated", "truncated"):
        if np.asarray(batch[name]).dtype != bool:
            raise TypeError(f"{name} must hold booleans, not {np.asarray(batch[name]).dtype}")
""",
    "arrays": """
    ids = np.asarray(batch["response_ids"])
    mask = np.asarray(batch["response_mask"]).astype(bool)
    old = np.asarray(batch["old_logprobs"], dtype=np.float64)
    ref = np.asarray(batch["ref_logprobs"], dtype=np.float64)
    rewards = np.asarray(batch["sequence_rewards"], dtype=np.float64)
    terminated = np.asarray(batch["terminated"], dtype=bool)
    truncated = np.asarray(batch["truncated"], dtype=bool)
    reasons = np.asarray(batch["stop_reason"], dtype=object)
""",
    "shapes": """
    if ids.ndim != 2 or not (ids.shape == mask.shape == old.shape == ref.shape):
        raise ValueError("token-level arrays must share one [B, T] shape")
    B, T = ids.shape
    for name, array in (("sequence_rewards", rewards), ("terminated", terminated),
                        ("truncated", truncated), ("stop_reason", reasons)):
        if array.shape != (B,):
            raise ValueError(f"{name} must have shape ({B},)")
""",
    "empty": """
    lengths = mask.sum(axis=1)
    if np.any(lengths == 0):
        raise ValueError("every response needs an active token")
""",
    "contiguous": """
    if not np.array_equal(mask, np.arange(T)[None, :] < lengths[:, None]):
        raise ValueError("response_mask must be ones then zeros in every row")
""",
    "active_finite": """
    if not (np.all(np.isfinite(old[mask])) and np.all(np.isfinite(ref[mask]))):
        raise ValueError("log-probabilities must be finite on active tokens")
""",
    "padding_nan": """
    if not (np.all(np.isnan(old[~mask])) and np.all(np.isnan(ref[~mask]))):
        raise ValueError("log-probabilities must be NaN on padding")
""",
    "rewards": """
    if not np.all(np.isfinite(rewards)):
        raise ValueError("sequence_rewards must be finite")
""",
    "reasons": """
    for reason in reasons.tolist():
        if not isinstance(reason, str) or reason == "":
            raise ValueError("every stop_reason must be a non-empty string")
""",
    "result": """
    return RolloutBatchSummary(
        batch_size=int(B), max_response_tokens=int(T), active_tokens=int(mask.sum()),
        terminated_sequences=int(terminated.sum()), truncated_sequences=int(truncated.sum()),
        mean_response_length=float(lengths.mean()),
    )
""",
}


def validator(**changes: str) -> str:
    """The correct validator with some blocks replaced (``""`` removes a block)."""
    body = "".join(changes.get(name, block) for name, block in BLOCKS.items())
    return SUMMARY + "\ndef validate_rollout_batch(batch):" + body


CORRECT = {
    "blockwise": validator(),
    "type_errors_for_types": validator(reasons="""
    for reason in reasons.tolist():
        if not isinstance(reason, str):
            raise TypeError("stop_reason entries must be strings")
        if not reason.strip():
            raise ValueError("stop_reason must not be empty")
"""),
    "loops": SUMMARY + """
import math

def validate_rollout_batch(batch, *, strict=True):
    absent = ""
    for name in ("response_ids", "response_mask", "old_logprobs", "ref_logprobs",
                 "sequence_rewards", "terminated", "truncated", "stop_reason"):
        if name not in batch:
            absent += " " + name
    if absent:
        raise ValueError("missing fields:" + absent)
    for name in ("terminated", "truncated"):
        if not all(type(flag) in (bool, np.bool_) for flag in np.asarray(batch[name], dtype=object).ravel()):
            raise TypeError(name + " must hold booleans")
    ids = [list(row) for row in np.asarray(batch["response_ids"]).tolist()] if np.ndim(batch["response_ids"]) == 2 else None
    if ids is None:
        raise ValueError("response_ids must be 2-D")
    B, T = len(ids), len(ids[0])
    rows = {}
    for name in ("response_mask", "old_logprobs", "ref_logprobs"):
        array = np.asarray(batch[name], dtype=float)
        if array.shape != (B, T):
            raise ValueError(name + " is misaligned")
        rows[name] = array.tolist()
    lengths = []
    for b in range(B):
        mask = [bool(v) for v in rows["response_mask"][b]]
        n = sum(mask)
        if n == 0 or mask != [True] * n + [False] * (T - n):
            raise ValueError("bad mask in row %d" % b)
        for t in range(T):
            for name in ("old_logprobs", "ref_logprobs"):
                v = rows[name][b][t]
                if mask[t] and not math.isfinite(v):
                    raise ValueError(name + " not finite on an active token")
                if not mask[t] and not math.isnan(v):
                    raise ValueError(name + " must be NaN on padding")
        lengths.append(n)
    per_seq = {}
    for name in ("sequence_rewards", "terminated", "truncated", "stop_reason"):
        values = list(np.asarray(batch[name], dtype=object).tolist()) if np.ndim(batch[name]) == 1 else None
        if values is None or len(values) != B:
            raise ValueError(name + " must have one entry per response")
        per_seq[name] = values
    if not all(math.isfinite(float(r)) for r in per_seq["sequence_rewards"]):
        raise ValueError("rewards must be finite")
    if not all(type(s) is str and s for s in per_seq["stop_reason"]):
        raise ValueError("stop reasons must be non-empty strings")
    return RolloutBatchSummary(B, T, sum(lengths), sum(map(bool, per_seq["terminated"])),
                               sum(map(bool, per_seq["truncated"])), sum(lengths) / B)
""",
    "prints_and_warns": validator(result="""
    print(f"batch of {B} responses, {int(mask.sum())} active tokens")
    import warnings; warnings.warn("some responses are both terminated and truncated")
""" + BLOCKS["result"]),
    "numpy_scalars_in_the_summary": validator(result="""
    return RolloutBatchSummary(np.int64(B), np.int32(T), mask.sum(), terminated.sum(), np.sum(truncated),
                               lengths.mean())
"""),
}

# (source, misconception key, a case that must fail)
WRONG = {
    "flags_exclusive": (validator(reasons=BLOCKS["reasons"] + """
    if np.any(terminated & truncated):
        raise ValueError("a response cannot be both terminated and truncated")
"""), "flags-exclusive", "a response both terminated and truncated is structurally valid"),
    "padding_counted": (validator(result=BLOCKS["result"].replace("active_tokens=int(mask.sum())",
                                                                  "active_tokens=int(mask.size)")),
                        "padding-counted", "a valid batch of 4"),
    "finite_padding_accepted": (validator(padding_nan=""), "silent-bad-input", "a finite old log-probability on padding"),
    "gaps_accepted": (validator(contiguous=""), "silent-bad-input", "a mask with a gap (1, 0, 1, 0)"),
    "empty_response_accepted": (validator(empty="    lengths = mask.sum(axis=1)\n"), "silent-bad-input",
                                "a response with an empty mask"),
    "missing_fields_as_keyerror": (validator(fields=""), "missing-field-keyerror", "the field 'stop_reason' is missing"),
    "empty_stop_reason_accepted": (validator(reasons="""
    if not all(isinstance(r, str) for r in reasons.tolist()):
        raise ValueError("stop reasons must be strings")
"""), "silent-bad-input", "an empty stop_reason"),
    "nan_rewards_accepted": (validator(rewards="""
    if np.any(np.isinf(rewards)):
        raise ValueError("infinite reward")
"""), "silent-bad-input", "a NaN reward"),
    "sequence_shapes_unchecked": (validator(shapes="""
    if ids.ndim != 2 or not (ids.shape == mask.shape == old.shape == ref.shape):
        raise ValueError("token-level arrays must share one [B, T] shape")
    B, T = ids.shape
"""), "silent-bad-input", "sequence_rewards has B + 1 entries"),
    "active_nan_accepted": (validator(active_finite=""), "silent-bad-input",
                            "NaN log-probability on an active token (old)"),
}

WRONG.update({
    # The last "wrong, yet full marks": only the first missing field is named.
    "names_only_the_first_missing_field": (validator(fields="""
    for name in ("response_ids", "response_mask", "old_logprobs", "ref_logprobs",
                 "sequence_rewards", "terminated", "truncated", "stop_reason"):
        if name not in batch:
            raise ValueError(f"batch is missing {name!r}")
"""), "missing-fields-not-all-named", "three fields are missing: all of them are named"),
    "flags_as_numbers_accepted": (validator(flags=""), "silent-bad-input", "terminated given as 0/1 integers"),
    "mean_length_integer_division": (validator(result=BLOCKS["result"].replace(
        "mean_response_length=float(lengths.mean())", "mean_response_length=int(mask.sum()) // int(B)")),
        "mean-length-not-float", "a valid batch of 2"),
    # No validation at all: the summary of anything. The exercise's point is missed: at most a third.
    "no_validation": (SUMMARY + """
def validate_rollout_batch(batch):
    mask = np.asarray(batch.get("response_mask", [[1]])).astype(bool)
    B, T = mask.shape if mask.ndim == 2 else (1, mask.size)
    flags = [np.asarray(batch.get(name, [False] * B)).astype(bool) for name in ("terminated", "truncated")]
    return RolloutBatchSummary(B, T, int(mask.sum()), int(flags[0].sum()), int(flags[1].sum()), mask.sum() / B)
""", "silent-bad-input", "a NaN reward"),
})

# Hostile return values: none may earn the points of the groups they attack.
ADVERSARIAL = {
    "always_equal_object": ("""
class Anything:
    def __eq__(self, other): return True
    def __getattr__(self, name): return 2
def validate_rollout_batch(batch): return Anything()
""", ("public", "summary")),
    "properties_that_raise": (SUMMARY + """
@dataclass(frozen=True)
class Tricky(RolloutBatchSummary):
    def __getattribute__(self, name):
        if name == "active_tokens":
            raise RuntimeError("reading this field fails")
        return object.__getattribute__(self, name)
def validate_rollout_batch(batch): return Tricky(2, 2, 3, 1, 1, 1.5)
""", ("public", "summary")),
    "nan_summary": (SUMMARY + """
def validate_rollout_batch(batch):
    n = float("nan")
    return RolloutBatchSummary(n, n, n, n, n, n)
""", ("public", "summary")),
    "generator": ("""
def validate_rollout_batch(batch):
    yield 1
""", ("public", "summary", "structure", "values")),
    "always_raises": ("""
def validate_rollout_batch(batch):
    raise ValueError("everything is invalid")
""", ("the notebook's example batch", "summary")),
    "never_raises_constant_summary": (SUMMARY + """
def validate_rollout_batch(batch):
    return RolloutBatchSummary(2, 2, 3, 1, 1, 1.5)
""", ("structure", "values")),
    "exits": ("""
def validate_rollout_batch(batch):
    raise SystemExit(0)
""", ("public", "summary", "structure", "values")),
}


class TestRolloutValidation(CodingCheckTests):
    stem = STEM
    central_mistakes = ('no_validation',)
    groups = ("public", "summary", "structure", "values")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("validate_rollout_batch",)
    rejecting_groups = ("structure", "values")
    quiet_mistakes = ("padding_counted",)
    revealing = r"\d\.\d{3,}"


def test_batch_sizes_one_to_five_are_covered():
    sizes = set()
    for case in CHECKS[STEM].cases(["summary"]):
        batch = case.calls[0].args[0]
        sizes.add(len(batch["sequence_rewards"]))
    assert {1, 2, 3, 4, 5} <= sizes


RULE_CASES = {
    "empty": ["a response with an empty mask"],
    "contiguous": ["a mask that is not a prefix (1, 1, 0, 1)", "a mask with a gap (1, 0, 1, 0)"],
    "active_finite": ["-inf log-probability on an active token (ref)", "NaN log-probability on an active token (old)"],
    "padding_nan": ["a finite old log-probability on padding", "a finite ref log-probability on padding"],
    "rewards": ["a NaN reward", "an infinite reward", "the notebook's example batch with a NaN reward"],
    "reasons": ["a stop_reason that is not a string", "an empty stop_reason"],
}


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_each_rule_is_broken_alone(rule):
    # A validator that skips exactly one rule fails exactly that rule's cases: each invalid batch
    # breaks one rule and no other.
    changes = {rule: "    lengths = mask.sum(axis=1)\n" if rule == "empty" else ""}
    result = result_of(STEM, validator(**changes))
    failed = sorted(case.name for case in result.cases if not case.passed)
    assert failed == sorted(RULE_CASES[rule]), failed


@pytest.mark.parametrize("label", ["finite_padding_accepted", "gaps_accepted", "nan_rewards_accepted",
                                   "flags_as_numbers_accepted", "names_only_the_first_missing_field"])
def test_a_validator_missing_one_rule_is_not_capped(label):
    result = result_of(STEM, WRONG[label][0])
    assert not any(group.capped for group in result.groups), result.feedback()
    assert result.points_earned > 6.0, result.feedback()


def test_the_open_checks_catch_a_validator_that_lets_a_nan_reward_through():
    from check_support import namespace_from, source_notebook
    cell = next(c for c in source_notebook(STEM).cells if c.id == "check-validate-rollout-batch")
    namespace = namespace_from(WRONG["no_validation"][0])
    with pytest.raises(AssertionError, match="NaN reward"):
        exec(compile(cell.source, "<check>", "exec"), namespace)


# The outside tester's validators that reject every batch (F-RAISEALL): one with a bare message, one
# naming all eight fields, one that also hard-codes the notebook's example batch.
REJECT_ALL = {
    "bare_message": """
def validate_rollout_batch(batch):
    raise ValueError("invalid input")
""",
    "names_every_field": """
def validate_rollout_batch(batch):
    raise ValueError("invalid batch; check response_ids, response_mask, old_logprobs, ref_logprobs, "
                     "sequence_rewards, terminated, truncated, stop_reason")
""",
    "example_batch_hard_coded": SUMMARY + """
def validate_rollout_batch(batch):
    try:
        if np.asarray(batch["response_ids"]).tolist() == [[5, 6], [7, 8]] and \
                np.isfinite(np.asarray(batch["sequence_rewards"], dtype=float)).all():
            return RolloutBatchSummary(2, 2, 3, 1, 1, 1.5)
    except Exception:
        pass
    raise ValueError("invalid batch; check response_ids, response_mask, old_logprobs, ref_logprobs, "
                     "sequence_rewards, terminated, truncated, stop_reason")
""",
}


@pytest.mark.parametrize("label", sorted(REJECT_ALL))
def test_a_validator_that_rejects_every_batch_earns_no_rule_points_and_is_not_blamed_on_one_rule(label):
    result = result_of(STEM, REJECT_ALL[label])
    points = {group.name: group.points_earned for group in result.groups}
    assert points["structure"] == points["values"] == points["summary"] == 0, result.feedback()
    assert result.points_earned <= 2, result.feedback()  # was 5.00 and 6.00 / 9
    # Neither the flags rule nor the naming rule is blamed: the validator rejects valid batches.
    assert "flags-exclusive" not in result.misconceptions, result.feedback()
    assert "missing-fields-not-all-named" not in result.misconceptions, result.feedback()
    assert "also on the same batch with one stop flag per response" in result.feedback()


def test_the_flags_control_keeps_naming_a_validator_that_rejects_both_flags():
    result = result_of(STEM, WRONG["flags_exclusive"][0])
    flagged = [case for case in result.cases if case.misconception == "flags-exclusive"]
    assert len(flagged) == 6, result.feedback()  # every valid batch with a row holding both flags
    points = {group.name: group.points_earned for group in result.groups}
    assert points["structure"] == 2 and points["values"] == 2, result.feedback()  # the gate stays open
