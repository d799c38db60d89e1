"""Input checking for every public function of :mod:`course`: one place converts and explains.

Each helper takes the value and the *name of the argument* it came from, converts it to the type
the computation needs, and raises ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind,
wrong value) with a message that names the argument and says what was expected.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return f"{type(value).__name__}"


def _to_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got a string")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name} must be a rectangular array of numbers ({error})") from None
    except Exception as error:  # an exotic object whose __array__ fails
        raise TypeError(f"{name} could not be read as an array ({type(error).__name__})") from None
    return array


def as_float_array(value: Any, name: str, *, ndim: int | None = None, min_ndim: int = 0,
                   finite: bool = True, allow_empty: bool = False, logits: bool = False) -> np.ndarray:
    """A float64 array of real numbers (ints are fine; bools, strings, objects and complex are not).

    ``finite`` rejects NaN and infinities. Shape constraints: exactly ``ndim`` or at least ``min_ndim``.
    ``logits`` also rejects values whose spread ``max - min`` overflows float64: differences of
    logits are what softmax sees, and beyond that range they cannot be formed.
    """
    array = _to_array(value, name)
    if array.dtype == bool:
        raise TypeError(f"{name} must hold real numbers, not booleans")
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got {_describe(array)}")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    array = array.astype(np.float64, copy=False)
    if finite and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    if logits and array.size:
        check_logit_spread(array, name)
    return array


def check_logit_spread(array: np.ndarray, name: str) -> None:
    """Raise when ``max - min`` of finite logits overflows float64 (about 1.8e308)."""
    with np.errstate(over="ignore"):
        spread = np.float64(array.max()) - np.float64(array.min())
    if not np.isfinite(spread):
        raise ValueError(f"{name} spans more than the float64 range (max - min overflows); rescale the logits")


def as_int_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """An int64 array from integer data; booleans and floats (even integral ones) are rejected."""
    array = _to_array(value, name)
    if array.dtype == bool or array.dtype.kind not in "iu":
        if array.size == 0 and array.dtype.kind == "f":
            array = array.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers (token ids), got {_describe(array)}")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds integers too large for int64")
    return array.astype(np.int64, copy=False)


def as_bool_mask(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """A boolean mask from bools or 0/1 numbers (trainers often store masks as ints or floats)."""
    array = _to_array(value, name)
    if array.dtype != bool:
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a boolean (or 0/1) mask, got {_describe(array)}")
        if not np.all((array == 0) | (array == 1)):
            raise ValueError(f"{name} must contain only 0/1 (or False/True)")
        array = array.astype(bool)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    return array


def as_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """A Python int in ``[low, high]``; bools and floats are rejected even when integral."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    result = operator.index(value)
    if (low is not None and result < low) or (high is not None and result > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {result}")
    return result


def as_float(value: Any, name: str, *, positive: bool = False, low: float | None = None,
             high: float | None = None, low_open: bool = False) -> float:
    """A finite real Python float (bools rejected); ``positive`` means > 0; bounds as stated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    result = float(value)
    if not np.isfinite(result):
        raise ValueError(f"{name} must be finite, got {result}")
    if positive and not result > 0.0:
        raise ValueError(f"{name} must be positive, got {result}")
    if low is not None and (result < low or (low_open and result == low)):
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must lie in {bracket}{low}, {high if high is not None else 'inf'}], got {result}")
    if high is not None and result > high:
        raise ValueError(f"{name} must be at most {high}, got {result}")
    return result


def normalize_axis(axis: Any, ndim: int, name: str = "axis") -> int:
    """A valid non-negative axis index for an array with ``ndim`` dimensions."""
    axis = as_int(axis, name)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} dimension(s)")
    return axis % ndim


def as_probabilities(value: Any, name: str, *, min_ndim: int = 1, atol: float = 1e-9) -> np.ndarray:
    """Non-negative finite float64 probabilities that sum to one along the last axis (within ``atol``)."""
    array = as_float_array(value, name, min_ndim=min_ndim)
    if np.any(array < 0):
        raise ValueError(f"{name} must be non-negative probabilities")
    totals = array.sum(axis=-1)
    if not np.all(np.abs(totals - 1.0) <= atol):
        raise ValueError(f"{name} must sum to 1 along the last axis (within {atol:g}), got sums {np.round(totals, 12)}")
    return array


def same_shape(first: np.ndarray, second: np.ndarray, first_name: str, second_name: str) -> None:
    """Raise when two arrays that are paired element by element do not have the same shape."""
    if first.shape != second.shape:
        raise ValueError(f"{first_name} and {second_name} must have the same shape, got {first.shape} and {second.shape}")


def as_response_mask(value: Any, name: str = "mask") -> np.ndarray:
    """A ``[B, L]`` response mask (booleans, or 0/1) with ``B >= 1`` and ``L >= 1``, as booleans."""
    mask = as_bool_mask(value, name, ndim=2)
    if mask.shape[0] == 0 or mask.shape[1] == 0:
        raise ValueError(f"{name} must have shape [B, L] with B >= 1 and L >= 1, got {mask.shape}")
    return mask


def as_response_logprobs(value: Any, name: str, mask: np.ndarray) -> np.ndarray:
    """Log-probabilities of ``mask``'s shape, finite and ``<= 0`` on response tokens (``mask`` True), 0 at
    padding (which may hold anything: NaN, -inf, junk from the batch's collation)."""
    array = as_float_array(value, name, ndim=2, finite=False)
    if array.shape != mask.shape:
        raise ValueError(f"{name} must have the mask's shape {mask.shape}, got {array.shape}")
    on = array[mask]
    if not np.all(np.isfinite(on)):
        raise ValueError(f"{name} must be finite on response tokens (mask True)")
    if np.any(on > 0.0):
        raise ValueError(f"{name} holds log-probabilities: they must be <= 0 on response tokens")
    return np.where(mask, array, 0.0)


def as_clip_epsilon(value: Any, name: str) -> float:
    """A clip range's epsilon: a real number in ``[0, 1)`` (NaN is outside it; a bool is not a number)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number in [0, 1), got {type(value).__name__}")
    value = float(value)
    if not 0.0 <= value < 1.0:  # NaN fails too
        raise ValueError(f"{name} must lie in [0, 1), got {value}")
    return value
