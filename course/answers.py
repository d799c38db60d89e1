"""How the open checks read an answer that should be a number, the way the grader reads it.

The notebooks ask for "a number ... or a Python expression", and the grader reads every number-like
value as the number it is worth: ``int``, ``float``, ``fractions.Fraction``, ``decimal.Decimal``, a
NumPy scalar, a 0-d or one-element NumPy array, or a one-element list or tuple of those. True/False
are refused (the grader refuses them too: a truth value is not an amount). The open checks run in the
student's kernel, so this module uses the standard library and NumPy only.
"""

from __future__ import annotations

import decimal
import fractions
import math

import numpy as np

_SCALARS = (int, float, fractions.Fraction, decimal.Decimal, np.integer, np.floating)


def as_number(value) -> float | None:
    """The float ``value`` is worth if it is number-like (see the module text), else ``None``.

    A value beyond float64's range is read as an infinity of its sign and a signalling NaN as NaN, as
    the grader reads them; whether an infinity or NaN is a valid answer is the check's to say.
    """
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, np.ndarray):
        if value.size != 1 or value.dtype.kind not in "iuf":
            return None  # a bool array is a truth value; text, objects and several values are not a number
        value = value.reshape(()).item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _SCALARS):
        return None
    if isinstance(value, decimal.Decimal) and value.is_nan():
        return math.nan  # float() refuses a signalling NaN
    try:
        return float(value)
    except OverflowError:  # a Fraction or int too large for a float
        return math.inf if value > 0 else -math.inf


__all__ = ["as_number"]
