"""Selected log-probabilities of the next token, aligned causally and computed without a ``[B, L, V]`` copy."""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import _to_array, as_bool_mask, as_int_array, check_logit_spread

# Rows of the vocabulary axis processed at once: ~2 MiB of float64 keeps the working set in cache
# and the extra memory a small, fixed amount, whatever the size of the logits.
_CHUNK_ELEMENTS = 1 << 18


def _as_logits(value) -> np.ndarray:
    """Real logits of any float or integer dtype, kept in their own dtype (no float64 copy)."""
    array = _to_array(value, "model_logits")
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(f"model_logits must hold real numbers, got an array of dtype {array.dtype}")
    if array.ndim != 3:
        raise ValueError(f"model_logits must have shape [B, L, V], got shape {array.shape}")
    if 0 in array.shape:
        raise ValueError(f"model_logits must not be empty, got shape {array.shape}")
    return array


def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    r"""Log-probability of each next token under the model, with the response mask shifted to match.

    The logits at position :math:`t` are the model's prediction for the token at :math:`t + 1`:

    .. math::

        \text{selected}[b, t] = \log\operatorname{softmax}(\text{logits}[b, t, :])[\text{ids}[b, t + 1]],
        \qquad t = 0, \dots, L - 2,

    and the mask that says which of those targets belong to the response is ``mask[:, 1:]``.

    Only the selected entries are formed: each block of rows is shifted by its maximum and
    exponentiated in float64 (``log1p`` of the non-maximal terms, as in
    :func:`~autograder.reference.stable_log_softmax`), so extra memory stays a few MiB for any
    ``[B, L, V]`` and float32 logits are never copied to float64 as a whole.

    Parameters
    ----------
    model_logits : array_like, shape [B, L, V]
        Finite real logits (float16/32/64 or integers).
    input_ids : array_like of int, shape [B, L]
        Token ids in ``[0, V)``; booleans and floats are rejected.
    response_token_mask : array_like of bool or 0/1, shape [B, L]
        True where the token belongs to the response.

    Returns
    -------
    selected : numpy.ndarray of float64, shape [B, L - 1]
    shifted_mask : numpy.ndarray of bool, shape [B, L - 1]

    Raises
    ------
    TypeError
        Wrong dtypes (non-numeric logits, non-integer ids, non-0/1 mask types).
    ValueError
        Wrong shapes, ``L < 2``, ids outside ``[0, V)``, non-finite logits.

    Examples
    --------
    >>> selected, shifted = causal_response_logprobs(np.zeros((1, 3, 4)), [[0, 1, 2]], [[0, 1, 1]])
    >>> selected.round(6), shifted
    (array([[-1.386294, -1.386294]]), array([[ True,  True]]))
    """
    logits = _as_logits(model_logits)
    batch, length, vocabulary = logits.shape
    ids = as_int_array(input_ids, "input_ids", ndim=2)
    mask = as_bool_mask(response_token_mask, "response_token_mask", ndim=2)
    if ids.shape != (batch, length):
        raise ValueError(f"input_ids must have shape [B, L] = {(batch, length)} like model_logits, got {ids.shape}")
    if mask.shape != (batch, length):
        raise ValueError(f"response_token_mask must have shape [B, L] = {(batch, length)}, got {mask.shape}")
    if length < 2:
        raise ValueError("model_logits must have at least two positions (L >= 2) to predict a next token")
    if ids.size and (ids.min() < 0 or ids.max() >= vocabulary):
        raise ValueError(f"input_ids must lie in [0, {vocabulary}) (the vocabulary of model_logits)")

    # The last position predicts nothing inside the sequence, but bad values there still mean bad input.
    if not np.isfinite(logits[:, -1, :]).all():
        raise ValueError("model_logits must be finite (no NaN or infinity)")
    selected = np.empty((batch, length - 1), dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // vocabulary)
    for b in range(batch):
        # logits[b, :-1] is a view (contiguous when the input is): no copy of the logits is ever made.
        rows, targets = logits[b, :-1, :], ids[b, 1:]
        for start in range(0, length - 1, step):
            block = rows[start:start + step]
            if not np.isfinite(block).all():
                raise ValueError("model_logits must be finite (no NaN or infinity)")
            check_logit_spread(block, "model_logits")
            index = np.arange(block.shape[0])
            top = np.argmax(block, axis=1)
            maximum = block[index, top].astype(np.float64)
            shifted = np.subtract(block, maximum[:, None], dtype=np.float64)
            target_shifted = shifted[index, targets[start:start + step]]
            np.exp(shifted, out=shifted)
            shifted[index, top] = 0.0
            selected[b, start:start + step] = target_shifted - np.log1p(shifted.sum(axis=1))
    return selected, mask[:, 1:].copy()
