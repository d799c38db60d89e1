"""Input checks shared by the widget models: one place, messages that name the argument."""

from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np


def _check_int(value, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and at most {high}"
        raise ValueError(f"{name} must be at least {low}{upper}, got {value}")
    return value


def _check_float(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _token_index(token, tokens: Sequence[str], name: str) -> int:
    """Accept a token either by name or by id."""
    if isinstance(token, str):
        if token not in tokens:
            raise ValueError(f"{name}: unknown token {token!r}; expected one of {list(tokens)}")
        return list(tokens).index(token)
    return _check_int(token, name, 0, len(tokens) - 1)


#: Probability vectors must sum to one within this (the notebooks' rule); they are used as given.
SUM_TOLERANCE = 1e-9


def _check_distributions(values, name: str, ndim: int) -> np.ndarray:
    """A float64 array of probability vectors along its last axis (1-D or 2-D), checked."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != ndim or array.size == 0:
        shape = "a 1-D probability vector" if ndim == 1 else "a 2-D array of probability rows"
        raise ValueError(f"{name} must be {shape}, got shape {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must have finite non-negative entries")
    sums = array.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > SUM_TOLERANCE):
        raise ValueError(f"{name} must sum to 1 (per row), got {np.round(sums, 10).tolist()}")
    return array


#: The explorers' grid for the probabilities a learner sets (sliders, typed p and q): steps of 0.05.
#: No family of ``course.variants`` draws a graded question's input on it (docs/DESIGN.md, "Widgets"),
#: so an explorer shows how a quantity behaves without ever working out a notebook's answer.
GRID_STEPS = 20


def _on_grid(value: float) -> bool:
    scaled = float(value) * GRID_STEPS
    return abs(scaled - round(scaled)) <= 1e-9


def _check_on_grid(values, name: str) -> None:
    """Raise ValueError, naming ``name``, unless every entry of ``values`` is a multiple of 0.05."""
    for value in np.ravel(np.asarray(values, dtype=np.float64)):
        if math.isfinite(value) and not _on_grid(value):
            raise ValueError(
                f"{name} holds {value:.10g}, which is not a multiple of 0.05: the explorers take "
                "probabilities in steps of 0.05 (such as 0.35, or 7/20), so type or choose one of those")
