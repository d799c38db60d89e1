"""Per-sequence totals of selected log-probabilities under a response mask."""

from __future__ import annotations

import dataclasses

import numpy as np

from autograder.reference._validation import _to_array, as_bool_mask


@dataclasses.dataclass(frozen=True)
class SequenceMetrics:
    """Per-response summaries, one entry per row of the batch.

    Attributes
    ----------
    token_count : numpy.ndarray of int64, shape [B]
        Active (masked-in) tokens.
    sum_logprob : numpy.ndarray of float64, shape [B]
        :math:`\\sum_t m_t \\ell_t`, the sequence log-probability.
    mean_nll : numpy.ndarray of float64, shape [B]
        :math:`-\\sum_t m_t \\ell_t / \\sum_t m_t`.
    perplexity : numpy.ndarray of float64, shape [B]
        :math:`\\exp(\\text{mean\\_nll})`.
    """

    token_count: np.ndarray
    sum_logprob: np.ndarray
    mean_nll: np.ndarray
    perplexity: np.ndarray


def masked_sequence_metrics(selected_logprobs, mask):
    r"""Token count, sequence log-probability, mean negative log-likelihood and perplexity per response.

    .. math::

        n_b = \sum_t m_{bt}, \quad S_b = \sum_t m_{bt}\,\ell_{bt}, \quad
        \bar{\mathcal L}_b = -S_b / n_b, \quad \operatorname{PPL}_b = \exp(\bar{\mathcal L}_b).

    Perplexity is the exponential of the mean, never a product of probabilities raised to ``-1/n``
    (which underflows after a few hundred tokens). It is ``inf`` only when the mean NLL exceeds
    ``log(DBL_MAX) ~ 709.78``, which is the true value rounded to float64.

    Parameters
    ----------
    selected_logprobs : array_like of float, shape [B, T] or [T]
        Log-probabilities of the selected tokens. Active entries must be finite and ``<= 0``;
        entries outside the mask are ignored (NaN padding is fine).
    mask : array_like of bool or 0/1, same shape
        True for response tokens. A 1-D pair is treated as a batch of one.

    Returns
    -------
    SequenceMetrics
        Arrays of shape ``[B]``.

    Raises
    ------
    TypeError
        Non-numeric log-probabilities or a mask that is not boolean/0-1 integers.
    ValueError
        Mismatched shapes, more than two dimensions, a response with no active token, active
        log-probabilities that are not finite or are positive.

    Examples
    --------
    >>> m = masked_sequence_metrics([[-0.1, -0.2, -1.0]], [[0, 1, 1]])
    >>> int(m.token_count[0]), float(m.sum_logprob[0]), float(m.mean_nll[0])
    (2, -1.2, 0.6)
    """
    logprobs = _to_array(selected_logprobs, "selected_logprobs")
    if logprobs.dtype == bool or logprobs.dtype.kind not in "iuf":
        raise TypeError(f"selected_logprobs must hold real numbers, got an array of dtype {logprobs.dtype}")
    logprobs = logprobs.astype(np.float64, copy=False)
    active = as_bool_mask(mask, "mask")
    if logprobs.shape != active.shape:
        raise ValueError(f"selected_logprobs and mask must have the same shape, got {logprobs.shape} and {active.shape}")
    if logprobs.ndim == 1:
        logprobs, active = logprobs[None, :], active[None, :]
    elif logprobs.ndim != 2:
        raise ValueError(f"selected_logprobs must have shape [B, T] or [T], got {logprobs.shape}")
    if logprobs.shape[0] == 0:
        raise ValueError("selected_logprobs must contain at least one response")
    token_count = active.sum(axis=1).astype(np.int64)
    if np.any(token_count == 0):
        empty = np.flatnonzero(token_count == 0).tolist()
        raise ValueError(f"mask selects no token for response(s) {empty}: an empty response has no mean")
    chosen = logprobs[active]
    if not np.all(np.isfinite(chosen)):
        raise ValueError("selected_logprobs must be finite wherever mask is active")
    if np.any(chosen > 0):
        raise ValueError("selected_logprobs must be <= 0 wherever mask is active (they are log-probabilities)")
    sum_logprob = np.where(active, logprobs, 0.0).sum(axis=1)
    mean_nll = -sum_logprob / token_count
    with np.errstate(over="ignore"):
        perplexity = np.exp(mean_nll)
    return SequenceMetrics(token_count=token_count, sum_logprob=sum_logprob, mean_nll=mean_nll, perplexity=perplexity)
