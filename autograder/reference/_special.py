"""Elementary functions that lose digits when written naively."""

from __future__ import annotations

import math

import numpy as np

# Taylor coefficients 1/n! for n = 2..18: below |x| = 1/2 the series is accurate to the last bit,
# where expm1(x) - x would cancel up to 2/|x| times the rounding error.
_SERIES = np.array([1.0 / math.factorial(n) for n in range(18, 1, -1)])
_SERIES_LIMIT = 0.5


def exp_minus_one_minus(x):
    r"""The non-negative function :math:`h(x) = e^x - 1 - x`, accurate for every real ``x``.

    Parameters
    ----------
    x : array_like of float
        Any real values; ``-inf`` gives ``inf`` and ``+inf`` gives ``inf``.

    Returns
    -------
    numpy.ndarray or float
        ``h(x) >= 0``, with ``h(0) = 0``. Near zero a Taylor series avoids the cancellation of
        ``expm1(x) - x`` (which at ``x = 1e-8`` is wrong by a factor of two).

    Examples
    --------
    >>> float(exp_minus_one_minus(1e-8))
    5.000000016666667e-17
    """
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < _SERIES_LIMIT
    out = np.empty_like(x)
    xs = x[small]
    poly = np.zeros_like(xs)
    for coefficient in _SERIES:
        poly = poly * xs + coefficient
    out[small] = poly * xs * xs
    xl = x[~small]
    with np.errstate(over="ignore", invalid="ignore"):
        out[~small] = np.where(np.isneginf(xl), np.inf, np.expm1(xl) - xl)
    return out if out.ndim else float(out)
