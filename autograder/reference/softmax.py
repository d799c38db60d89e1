"""Log-softmax and softmax along an axis, stable for logits of any finite magnitude."""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import as_float_array, normalize_axis


def _log_normalizer_parts(z: np.ndarray, axis: int) -> tuple:
    """``(shifted, log1p(others))`` with ``log_softmax = shifted - log1p(others)``.

    The maximum contributes exactly ``exp(0) = 1`` to the normaliser; summing only the other terms and
    using ``log1p`` keeps the tiny log-probability of a dominant token (e.g. ``-4.2e-18`` for logits
    ``[0, -40]``) instead of rounding it to zero.
    """
    top = np.argmax(z, axis=axis)
    top = np.expand_dims(top, axis)
    maximum = np.take_along_axis(z, top, axis=axis)
    shifted = z - maximum
    terms = np.exp(shifted)
    np.put_along_axis(terms, top, 0.0, axis=axis)
    return shifted, np.log1p(terms.sum(axis=axis, keepdims=True))


def stable_log_softmax(logits, axis=-1):
    r"""Log-probabilities of a softmax along ``axis``, stable for large or distant logits.

    .. math::

        \log\operatorname{softmax}(z)_i = (z_i - m) - \log\Bigl(1 + \sum_{j \ne j^*} e^{z_j - m}\Bigr),
        \qquad m = z_{j^*} = \max_j z_j .

    Subtracting the maximum first means no exponential overflows and the normaliser is a ``log1p``
    of a sum of non-positive exponents; the result does not depend on a common offset of the logits.

    Parameters
    ----------
    logits : array_like of float, at least 1-D
        Finite real values (lists are fine). NaN or infinity raises ``ValueError``.
    axis : int, default -1
        The axis that is normalised (negative values count from the end).

    Returns
    -------
    numpy.ndarray of float64
        Same shape as ``logits``; every entry ``<= 0`` and ``exp`` sums to one along ``axis``.

    Raises
    ------
    TypeError
        ``logits`` not real numbers, or ``axis`` not an integer (``bool`` included).
    ValueError
        Empty or 0-d ``logits``, non-finite values, ``axis`` out of range.

    Examples
    --------
    >>> stable_log_softmax([1000.0, 1001.0, 999.0]).round(6)
    array([-1.407606, -0.407606, -2.407606])
    """
    z = as_float_array(logits, "logits", min_ndim=1, logits=True)
    axis = normalize_axis(axis, z.ndim)
    shifted, log_normalizer = _log_normalizer_parts(z, axis)
    return shifted - log_normalizer


def softmax(logits, axis=-1):
    r"""Probabilities :math:`e^{z_i - m} / \sum_j e^{z_j - m}` along ``axis`` (same input rules as
    :func:`stable_log_softmax`).

    Examples
    --------
    >>> softmax([0.0, 0.0, np.log(2.0)]).round(6)
    array([0.25, 0.25, 0.5 ])
    """
    z = as_float_array(logits, "logits", min_ndim=1, logits=True)
    axis = normalize_axis(axis, z.ndim)
    terms = np.exp(z - z.max(axis=axis, keepdims=True))
    return terms / terms.sum(axis=axis, keepdims=True)
