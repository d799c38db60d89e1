"""Exact KL divergences, the k1/k2/k3 sample estimators, and the chain rule on a two-step tree."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from autograder.reference._validation import as_float_array, as_probabilities, same_shape
from autograder.reference._special import exp_minus_one_minus
from autograder.reference.softmax import stable_log_softmax


def _kl_terms(log_p: np.ndarray, u: np.ndarray) -> np.ndarray:
    r"""Non-negative per-entry terms whose sum is :math:`D_{KL}(p\|q)`, given :math:`u = \log q - \log p`.

    Because :math:`\sum_i p_i (e^{u_i} - 1) = \sum_i q_i - \sum_i p_i = 0` for normalised p and q,
    :math:`D_{KL} = \sum_i p_i h(u_i)` with :math:`h(u) = e^u - 1 - u \ge 0`. Every term is
    non-negative and accurate, so nearly equal policies give a small positive KL instead of a
    cancellation error of either sign. Where :math:`u > 1` the term is formed as
    :math:`q_i - p_i (1 + u_i)` to avoid overflow when :math:`p_i` is tiny.
    """
    p = np.exp(log_p)
    large = u > 1.0
    terms = p * exp_minus_one_minus(np.where(large, 0.0, u))
    return np.where(large, np.exp(log_p + np.where(large, u, 0.0)) - p * (1.0 + u), terms)


def _log_ratio_from_logits(p: np.ndarray, q: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    r""":math:`\log q_i - \log p_i` from logits, accurate when the two sets of logits are close.

    With :math:`\delta = z_q - z_p`, :math:`\log q_i - \log p_i = \delta_i - \log \mathbb E_p[e^\delta]`,
    and for small :math:`\delta` the log-normaliser difference is
    :math:`\operatorname{log1p}(\mathbb E_p[\operatorname{expm1}(\delta)])`, free of the cancellation
    that subtracting two separately rounded log-softmaxes suffers (a relative error of ~1e-7 at 1e-9 apart).
    """
    delta = q - p
    delta = delta - np.mean(delta, axis=-1, keepdims=True)  # a common offset changes neither policy
    close = np.all(np.abs(delta) <= 1.0, axis=-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        near = delta - np.log1p(np.sum(np.exp(log_p) * np.expm1(np.where(close, delta, 0.0)), axis=-1, keepdims=True))
    far = stable_log_softmax(q) - log_p
    return np.where(close, near, far)


def exact_kl_from_logits(p_logits, q_logits):
    r"""Exact :math:`D_{KL}(p\|q) = \sum_i p_i (\log p_i - \log q_i)` along the last axis, from logits.

    Both distributions are the softmax of their logits over the last axis. The sum is evaluated as
    :math:`\sum_i p_i\,h(\log q_i - \log p_i)` with :math:`h(u) = e^u - 1 - u` (see the module), so the
    result is never negative and keeps full relative accuracy when the policies are nearly equal.

    Parameters
    ----------
    p_logits, q_logits : array_like of float, same shape, at least 1-D
        Finite logits; leading axes are batch axes.

    Returns
    -------
    numpy.ndarray of float64
        Shape ``p_logits.shape[:-1]`` (a 0-d array for 1-D input), every entry ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        Non-numeric, non-finite, empty or mismatched inputs (the message names the argument).

    Examples
    --------
    >>> z = np.array([[1.0, -1.0], [0.5, 0.5]])
    >>> exact_kl_from_logits(z, z)
    array([0., 0.])
    >>> float(exact_kl_from_logits(np.log([0.6, 0.4]), np.log([0.5, 0.5]))).__round__(7)
    0.0201355
    """
    p = as_float_array(p_logits, "p_logits", min_ndim=1, logits=True)
    q = as_float_array(q_logits, "q_logits", min_ndim=1, logits=True)
    same_shape(p, q, "p_logits", "q_logits")
    log_p = stable_log_softmax(p)
    u = _log_ratio_from_logits(p, q, log_p)
    terms = _kl_terms(log_p, u)
    with np.errstate(over="ignore"):  # an overflowed row is bounded just below
        total = terms.sum(axis=-1)
    # Logits validated to span at most the float64 range give -u_i <= about 1.8e308 + log(n), so the exact KL
    # is finite; a plain sum of terms near that limit can still round past it into inf. Such a row gets an
    # upper bound that is as close: the entries with u_i <= 1 add up to a p-weighted mean of h(u_i), at most
    # their largest h(u_i), and each other term (q_i - p_i (1 + u_i)) is at most q_i <= 1 and is added as is.
    overflowed = np.isinf(total)
    if np.any(overflowed):
        small = (u <= 1.0) & (log_p > -np.inf)
        largest = np.max(np.where(small, exp_minus_one_minus(np.minimum(u, 1.0)), 0.0), axis=-1)
        total = np.where(overflowed, np.minimum(total, largest + np.where(u > 1.0, terms, 0.0).sum(axis=-1)), total)
    return total


def kl_divergence(p, q):
    r"""Exact :math:`D_{KL}(p\|q)` between probability vectors along the last axis.

    .. math::

        D_{KL}(p\|q) = \sum_{i:\,p_i > 0} p_i \log\frac{p_i}{q_i},

    with :math:`0 \log 0 = 0` and :math:`+\infty` as soon as some :math:`p_i > 0 = q_i` (p is not
    absolutely continuous with respect to q). Inputs are renormalised (they must already sum to one
    within 1e-9) and the sum is formed from non-negative terms, so the result is never negative.

    Parameters
    ----------
    p, q : array_like of float, same shape, at least 1-D
        Non-negative probabilities that sum to one along the last axis.

    Returns
    -------
    numpy.ndarray or float
        A float for 1-D input, else an array of shape ``p.shape[:-1]``; may be ``inf``.

    Examples
    --------
    >>> round(kl_divergence([0.7, 0.3], [0.4, 0.6]), 7)
    0.1837869
    >>> kl_divergence([0.8, 0.2], [1.0, 0.0])
    inf
    """
    p = as_probabilities(p, "p")
    q = as_probabilities(q, "q")
    same_shape(p, q, "p", "q")
    # Renormalising multiplies q/p by S_p/S_q; log(S_p/S_q) = log1p((S_p - S_q)/S_q) with the
    # difference of the two sums correctly rounded (fsum), so nearly equal inputs keep their digits.
    flat_p, flat_q = p.reshape(-1, p.shape[-1]), q.reshape(-1, q.shape[-1])
    sum_q = np.array([math.fsum(row) for row in flat_q]).reshape(p.shape[:-1] + (1,))
    gap = np.array([math.fsum(np.concatenate([a, -b])) for a, b in zip(flat_p, flat_q)]).reshape(sum_q.shape)
    log_scale = np.log1p(gap / sum_q)
    inside = p > 0
    with np.errstate(divide="ignore"):
        log_p = np.where(inside, np.log(np.where(inside, p, 1.0)), 0.0) - np.log(sum_q + gap)
        log_q = np.log(q) - np.log(sum_q)
    blocked = inside & (q == 0)
    usable = inside & ~blocked
    safe_p = np.where(usable, p, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # q - p is exact when the two are close (Sterbenz), so log1p keeps the digits log q - log p loses.
        u = np.where(np.abs(q - p) < 0.5 * safe_p, np.log1p((q - p) / safe_p) + log_scale,
                     np.where(blocked, 0.0, log_q) - log_p)
    u = np.where(usable, u, 0.0)
    terms = np.where(usable, _kl_terms(log_p, u), 0.0)
    # Mass of q where p is zero closes the identity sum_i p_i (e^{u_i} - 1) = 0 used by the terms.
    total = terms.sum(axis=-1) + np.where(inside, 0.0, q).sum(axis=-1) / sum_q[..., 0]
    total = np.where(blocked.any(axis=-1), np.inf, total)
    return float(total) if total.ndim == 0 else total


def _estimators(log_ratio: np.ndarray) -> dict:
    return {"k1": -log_ratio, "k2": 0.5 * log_ratio * log_ratio, "k3": exp_minus_one_minus(log_ratio)}


def kl_sample_values(log_q, log_p):
    r"""Per-sample values of the k1, k2, k3 estimators of :math:`D_{KL}(q\|p)` for samples :math:`x \sim q`.

    With :math:`r = p(x)/q(x)` and :math:`\lambda = \log r = \log p - \log q`:

    .. math::

        k_1 = -\lambda, \qquad k_2 = \tfrac12 \lambda^2, \qquad k_3 = (r - 1) - \lambda .

    k1 is unbiased and negative whenever :math:`r > 1`; k2 is biased but never negative; k3 is
    unbiased and never negative (:math:`u - 1 - \log u \ge 0`). k3 is computed as
    :math:`h(\lambda) = e^\lambda - 1 - \lambda` without cancellation, so it is exactly
    non-negative and accurate for :math:`|\lambda|` down to the smallest floats.

    Parameters
    ----------
    log_q, log_p : array_like of float, same shape
        Finite log-probabilities (``<= 0``) of the sampled tokens under the sampling policy q and
        under p; being non-positive, their difference cannot overflow.

    Returns
    -------
    dict
        ``{"k1": ..., "k2": ..., "k3": ...}``, float64 arrays of the input's shape.

    Examples
    --------
    >>> v = kl_sample_values(np.log([0.25]), np.log([0.5]))
    >>> [round(float(v[k][0]), 6) for k in ("k1", "k2", "k3")]
    [-0.693147, 0.240227, 0.306853]
    """
    log_q = as_float_array(log_q, "log_q", allow_empty=True)
    log_p = as_float_array(log_p, "log_p", allow_empty=True)
    same_shape(log_q, log_p, "log_q", "log_p")
    for name, values in (("log_q", log_q), ("log_p", log_p)):
        if np.any(values > 0):
            raise ValueError(f"{name} must be log-probabilities (<= 0)")
    return _estimators(log_p - log_q)


def kl_estimators_at_ratio(r):
    r"""k1, k2 and k3 at given ratios :math:`r = p(x)/q(x) > 0` (see :func:`kl_sample_values`).

    Examples
    --------
    >>> v = kl_estimators_at_ratio(0.5)
    >>> [round(float(v[k]), 6) for k in ("k1", "k2", "k3")]
    [0.693147, 0.240227, 0.193147]
    """
    ratio = as_float_array(r, "r", allow_empty=True)
    if np.any(ratio <= 0):
        raise ValueError("r must be positive (a ratio of probabilities on the support of q)")
    values = _estimators(np.log(ratio))
    return {key: (float(value) if np.ndim(value) == 0 else value) for key, value in values.items()}


@dataclasses.dataclass(frozen=True)
class ChainRuleKL:
    r"""The chain rule :math:`D_{KL}(p_{1:2}\|q_{1:2}) = D_{KL}(p_0\|q_0) + \mathbb E_{a\sim p_0} D_{KL}(p(\cdot|a)\|q(\cdot|a))`.

    Attributes
    ----------
    root : float
        :math:`D_{KL}(p_0\|q_0)`.
    conditional : numpy.ndarray
        One conditional KL per first action.
    expected_conditional : float
        :math:`\sum_a p_0(a)\,D_{KL}(p(\cdot|a)\|q(\cdot|a))` (a first action with :math:`p_0(a) = 0` adds 0).
    total : float
        ``root + expected_conditional``.
    joint : float
        KL between the joint distributions, computed directly from the products.
    """

    root: float
    conditional: np.ndarray
    expected_conditional: float
    total: float
    joint: float


def kl_chain_rule(first_p, first_q, cond_p, cond_q):
    r"""Both sides of the KL chain rule on a depth-two tree.

    Parameters
    ----------
    first_p, first_q : array_like, shape [A]
        First-step distributions.
    cond_p, cond_q : array_like, shape [A, A2]
        Second-step conditionals: row ``a`` is :math:`p(\cdot \mid a)`.

    Returns
    -------
    ChainRuleKL

    Examples
    --------
    >>> kl = kl_chain_rule([0.6, 0.4], [0.5, 0.5], [[0.7, 0.3], [0.2, 0.8]], [[0.4, 0.6], [0.5, 0.5]])
    >>> round(kl.root, 7), round(kl.expected_conditional, 7), round(kl.total, 7), round(kl.joint, 7)
    (0.0201355, 0.18737, 0.2075056, 0.2075056)
    """
    p0 = as_probabilities(first_p, "first_p")
    q0 = as_probabilities(first_q, "first_q")
    pc = as_probabilities(cond_p, "cond_p", min_ndim=2)
    qc = as_probabilities(cond_q, "cond_q", min_ndim=2)
    if p0.ndim != 1:
        raise ValueError(f"first_p must be 1-D, got shape {p0.shape}")
    same_shape(p0, q0, "first_p", "first_q")
    same_shape(pc, qc, "cond_p", "cond_q")
    if pc.ndim != 2 or pc.shape[0] != p0.shape[0]:
        raise ValueError(f"cond_p must have shape [A, A2] with A = {p0.shape[0]} rows, got {pc.shape}")
    root = kl_divergence(p0, q0)
    conditional = np.asarray(kl_divergence(pc, qc), dtype=np.float64)
    weighted = np.where(p0 > 0, p0 * np.where(p0 > 0, conditional, 0.0), 0.0)
    expected = float(weighted.sum())
    joint = kl_divergence((p0[:, None] * pc).ravel(), (q0[:, None] * qc).ravel())
    return ChainRuleKL(root=float(root), conditional=conditional, expected_conditional=expected,
                       total=float(root) + expected, joint=float(joint))
