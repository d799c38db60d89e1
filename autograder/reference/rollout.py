"""Structural validation of a batch of RL rollouts (shapes, masks, finiteness), separate from task semantics."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from autograder.reference._validation import _describe, _to_array, as_bool_mask, as_int_array

#: Exercise 8: the fields without which a training objective cannot be reproduced from a stored batch.
REPRODUCIBILITY_FIELDS = (
    "response_ids", "response_mask", "old_logprobs", "policy_version", "sampling_config", "reward_raw",
    "terminated", "truncated", "stop_reason",
)

#: Exercise 20: the fields :func:`validate_rollout_batch` checks.
ROLLOUT_BATCH_FIELDS = (
    "response_ids", "response_mask", "old_logprobs", "ref_logprobs", "sequence_rewards",
    "terminated", "truncated", "stop_reason",
)


@dataclasses.dataclass(frozen=True)
class RolloutBatchSummary:
    """Counts that describe a structurally valid batch."""

    batch_size: int
    max_response_tokens: int
    active_tokens: int
    terminated_sequences: int
    truncated_sequences: int
    mean_response_length: float


def _field(batch: Mapping, key: str) -> str:
    return f"batch[{key!r}]"


def _float_field(batch: Mapping, key: str) -> np.ndarray:
    array = _to_array(batch[key], _field(batch, key))
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(f"{_field(batch, key)} must hold real numbers, got an array of dtype {array.dtype}")
    return array.astype(np.float64, copy=False)


def _flag_field(batch: Mapping, key: str) -> np.ndarray:
    array = _to_array(batch[key], _field(batch, key))
    if array.dtype != bool:
        raise TypeError(f"{_field(batch, key)} must be a boolean array, got {_describe(array)}")
    return array


def validate_rollout_batch(batch):
    r"""Check that a rollout batch is structurally sound and summarise it.

    Rules (each violation raises with the field's name):

    * every field of :data:`ROLLOUT_BATCH_FIELDS` is present;
    * ``response_ids`` (integers), ``response_mask``, ``old_logprobs``, ``ref_logprobs`` share one
      shape ``[B, T]``; ``sequence_rewards``, ``terminated``, ``truncated`` (booleans) and
      ``stop_reason`` have shape ``[B]``;
    * every response has at least one active token and its mask is a contiguous prefix
      (right padding);
    * log-probabilities are finite on active tokens and NaN on padding (a finite number there would
      be silently summed by a careless loss);
    * rewards are finite; every ``stop_reason`` is a non-empty string.

    ``terminated`` and ``truncated`` may both be true: whether a combination is allowed is a
    question for the task contract (:class:`~autograder.reference.TaskContract`), not for structure.

    Parameters
    ----------
    batch : Mapping[str, Any]

    Returns
    -------
    RolloutBatchSummary

    Examples
    --------
    >>> nan = float("nan")
    >>> summary = validate_rollout_batch({
    ...     "response_ids": [[5, 6], [7, 8]], "response_mask": [[1, 1], [1, 0]],
    ...     "old_logprobs": [[-0.1, -0.2], [-0.3, nan]], "ref_logprobs": [[-0.2, -0.3], [-0.4, nan]],
    ...     "sequence_rewards": [1.0, 0.0], "terminated": [True, False], "truncated": [False, True],
    ...     "stop_reason": ["eos", "length"]})
    >>> summary.active_tokens, summary.mean_response_length
    (3, 1.5)
    """
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch must be a mapping of field names to arrays, got {_describe(batch)}")
    missing = [key for key in ROLLOUT_BATCH_FIELDS if key not in batch]
    if missing:
        raise ValueError(f"batch is missing required field(s): {', '.join(missing)}")

    ids = as_int_array(batch["response_ids"], _field(batch, "response_ids"), ndim=2)
    mask = as_bool_mask(batch["response_mask"], _field(batch, "response_mask"))
    old = _float_field(batch, "old_logprobs")
    ref = _float_field(batch, "ref_logprobs")
    for key, array in (("response_mask", mask), ("old_logprobs", old), ("ref_logprobs", ref)):
        if array.shape != ids.shape:
            raise ValueError(f"{_field(batch, key)} must have the shape of response_ids {ids.shape}, got {array.shape}")
    batch_size, max_tokens = ids.shape
    if ids.size and ids.min() < 0:
        raise ValueError("batch['response_ids'] must be non-negative token ids")
    if batch_size == 0 or max_tokens == 0:
        raise ValueError(f"batch['response_ids'] must be a non-empty [B, T] array, got shape {ids.shape}")

    rewards = _float_field(batch, "sequence_rewards")
    terminated = _flag_field(batch, "terminated")
    truncated = _flag_field(batch, "truncated")
    reasons = batch["stop_reason"]
    if isinstance(reasons, (str, bytes)):
        raise TypeError("batch['stop_reason'] must be a sequence of strings, one per response, not one string")
    reasons = _to_array(reasons, _field(batch, "stop_reason"))
    for key, array in (("sequence_rewards", rewards), ("terminated", terminated), ("truncated", truncated),
                       ("stop_reason", reasons)):
        if array.shape != (batch_size,):
            raise ValueError(f"{_field(batch, key)} must have shape ({batch_size},), got {array.shape}")

    lengths = mask.sum(axis=1)
    if np.any(lengths == 0):
        raise ValueError(f"batch['response_mask'] has empty response(s) at rows {np.flatnonzero(lengths == 0).tolist()}")
    prefix = np.arange(max_tokens)[None, :] < lengths[:, None]
    if not np.array_equal(mask, prefix):
        raise ValueError("batch['response_mask'] must be a contiguous prefix per row (right padding only)")
    for key, array in (("old_logprobs", old), ("ref_logprobs", ref)):
        if not np.all(np.isfinite(array[mask])):
            raise ValueError(f"{_field(batch, key)} must be finite on active tokens")
        if not np.all(np.isnan(array[~mask])):
            raise ValueError(f"{_field(batch, key)} must be NaN on padding positions")
    if not np.all(np.isfinite(rewards)):
        raise ValueError("batch['sequence_rewards'] must be finite")
    for row, reason in enumerate(reasons.tolist()):
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"batch['stop_reason'][{row}] must be a non-empty string, got {reason!r}")

    return RolloutBatchSummary(
        batch_size=int(batch_size), max_response_tokens=int(max_tokens), active_tokens=int(mask.sum()),
        terminated_sequences=int(terminated.sum()), truncated_sequences=int(truncated.sum()),
        mean_response_length=float(lengths.mean()),
    )
