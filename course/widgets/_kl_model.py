"""The KL explorer's model: two distributions and a number of draws in, a plain state out.

Samples are drawn from ``q`` and the k1, k2, k3 estimators target KL(q || p) with r = p / q. The
arithmetic is the widgets' own (:mod:`course.widgets._math`); an instructor-side test keeps it
equal to the reference solutions.

The probabilities a learner gives (the p and q boxes, :func:`kl_state`) are multiples of 0.05: the
explorer shows how the estimators behave on distributions of that grid, and no notebook's graded
numbers lie on it (``docs/DESIGN.md``, "Widgets"), so it never works out a notebook's answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

import course.widgets._math as _math  # the module itself, not the package (whose __init__ imports this one)
from ._inputs import SUM_TOLERANCE, _check_int, _check_on_grid

ESTIMATORS = ("k1", "k2", "k3")

@dataclass(frozen=True)
class KLPreset:
    """Two distributions over named outcomes; samples come from ``q``.

    ``p_text`` and ``q_text`` are what the explorer's text boxes show; fractions
    such as ``2/3`` keep the values exact through :func:`parse_distribution`.
    """

    label: str
    p_text: str
    q_text: str
    outcomes: tuple[str, ...]
    lesson: str

    @property
    def p(self) -> np.ndarray:
        return parse_distribution(self.p_text, "p")

    @property
    def q(self) -> np.ndarray:
        return parse_distribution(self.q_text, "q")


# Every preset is the explorer's own example, none a notebook's, on the explorer's grid of 0.05.
KL_PRESETS: dict[str, KLPreset] = {
    "k_estimators": KLPreset(
        "r = 3 or 1/3: q = (1/4, 3/4), p = (3/4, 1/4)",
        "3/4, 1/4", "1/4, 3/4", ("x=0", "x=1"),
        "Every draw has r = 3 or r = 1/3. Compare the columns: which estimator can be negative on "
        "one draw, which ones average to the exact KL, and how wide is each band?",
    ),
    "support_missing_mass": KLPreset(
        "Support A: q = (0.5, 0.5, 0), p = (0.55, 0.15, 0.3)",
        "0.55, 0.15, 0.3", "0.5, 0.5, 0", ("x=0", "x=1", "x=2"),
        "q never draws x=2, where p has mass. Compare E_q[p/q] with 1, and each estimator's "
        "exact mean with the exact KL.",
    ),
    "support_infinite_log": KLPreset(
        "Support B: q = (0.5, 0.3, 0.2), p = (0.6, 0.4, 0)",
        "0.6, 0.4, 0", "0.5, 0.3, 0.2", ("x=0", "x=1", "x=2"),
        "q draws x=2, where p = 0. Watch log r there, the running means, and the exact KL in each "
        "direction.",
    ),
    "close": KLPreset(
        "Close: q = (0.45, 0.55), p = (0.55, 0.45)",
        "0.55, 0.45", "0.45, 0.55", ("x=0", "x=1"),
        "Close distributions: compare the three running means with the exact KL, and their bands.",
    ),
}

KL_PRESET_GROUPS = {
    "support": "support_missing_mass",
    "k_estimators": "k_estimators",
}


SAMPLE_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)


def parse_distribution(text: str, name: str = "distribution") -> np.ndarray:
    """Parse ``"0.6, 0.4"`` or ``"1/4 3/4"`` into a probability vector.

    Raises
    ------
    ValueError
        Naming ``name``: empty, not a number, negative, not a multiple of 0.05
        (the explorer's grid), or not summing to 1 (within 1e-9, as the
        notebooks ask; the numbers are used as typed, not renormalised).

    Examples
    --------
    >>> parse_distribution("1/4, 3/4", "q")
    array([0.25, 0.75])
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string of numbers, got {type(text).__name__}")
    items = [item for item in text.replace(",", " ").replace(";", " ").split() if item]
    if not items:
        raise ValueError(f"{name} is empty: type probabilities such as 0.6, 0.4")
    values = []
    for item in items:
        try:
            values.append(float(Fraction(item)))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name}: {item!r} is not a number") from None
    array = np.asarray(values, dtype=np.float64)
    if np.any(array < 0):
        raise ValueError(f"{name} has a negative entry")
    _check_on_grid(array, name)
    total = float(array.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} sums to {total:.10g}, not 1")
    return array


@dataclass(frozen=True, eq=False)
class KLState:
    """Everything the KL explorer shows for one pair (p, q) and sample count.

    Samples are drawn from ``q`` and the estimators target KL(q || p), with
    r = p / q.

    Attributes
    ----------
    kl_qp, kl_pq : float
        Exact KL(q||p) (the estimators' target) and KL(p||q).
    weight_mean : float
        E_q[p/q], the mass of p on the outcomes q draws.
    ratio : ndarray
        r per outcome (NaN where q = 0: never drawn).
    per_outcome : dict of ndarray
        k1, k2, k3 at each outcome (inf where q > 0 = p, NaN where q = 0).
    expected : dict of float
        Exact expectation of each estimator under q.
    draws : ndarray of int
        The sampled outcomes (seeded).
    values : dict of ndarray
        Per-sample k1, k2, k3.
    running_mean, running_se : dict of ndarray
        Mean and standard error of the first n samples, n = 1 .. samples.
    sample_mean, sample_se, sample_min, negative_fraction : dict of float
        The same at n = samples, the smallest sample and the share below 0.
    reasons : dict
        One-line reason for each non-finite value, keyed like ``"kl_qp"``,
        ``"expected.k1"`` or ``"sample_mean.k3"``.
    """

    p: np.ndarray
    q: np.ndarray
    outcomes: tuple[str, ...]
    samples: int
    seed: int
    kl_qp: float
    kl_pq: float
    weight_mean: float
    ratio: np.ndarray
    per_outcome: Mapping[str, np.ndarray]
    expected: Mapping[str, float]
    draws: np.ndarray
    values: Mapping[str, np.ndarray]
    running_mean: Mapping[str, np.ndarray]
    running_se: Mapping[str, np.ndarray]
    sample_mean: Mapping[str, float]
    sample_se: Mapping[str, float]
    sample_min: Mapping[str, float]
    negative_fraction: Mapping[str, float]
    reasons: Mapping[str, str]

    @property
    def bias(self) -> dict[str, float]:
        """Exact bias E_q[k] - KL(q||p) of each estimator (NaN when KL is inf)."""
        out = {}
        for k in ESTIMATORS:
            e = self.expected[k]
            out[k] = e - self.kl_qp if math.isfinite(e) and math.isfinite(self.kl_qp) else math.nan
        return out


def _draw(q: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """Seeded draws from q by inversion, so n draws are a prefix of n + 1 draws."""
    uniforms = np.random.default_rng(seed).random(samples)
    cdf = np.cumsum(q)
    draws = np.searchsorted(cdf / cdf[-1], uniforms, side="right")
    # Round-off can leave the cdf just below 1; such a draw belongs to the last outcome q samples.
    return np.minimum(draws, np.flatnonzero(q > 0)[-1])


def kl_state(
    p: Sequence[float],
    q: Sequence[float],
    *,
    samples: int = 1000,
    seed: int = 0,
    outcomes: Sequence[str] | None = None,
) -> KLState:
    """Compute what the KL explorer shows.

    Parameters
    ----------
    p, q : sequence of float
        Probability vectors of the same length, every entry a multiple of 0.05
        (the explorer's grid); samples come from ``q``.
    samples : int
        Number of draws from ``q`` (at least 1).
    seed : int
        Seed of the draws (the same seed gives the same draws).
    outcomes : sequence of str, optional
        Outcome names; ``x=0, x=1, ...`` by default.

    Returns
    -------
    KLState

    Examples
    --------
    >>> s = kl_state([0.9, 0.1], [0.6, 0.4], samples=100)
    >>> [round(float(v), 4) for v in s.ratio], round(s.kl_qp, 4)
    ([1.5, 0.25], 0.3112)
    """
    for name, dist in (("p", p), ("q", q)):
        _check_on_grid(np.asarray(dist, dtype=np.float64), name)
    return _kl_state(p, q, samples=samples, seed=seed, outcomes=outcomes)


def _kl_state(p, q, *, samples: int = 1000, seed: int = 0, outcomes=None) -> KLState:
    """:func:`kl_state` for any probability vectors (the instructor's tests compare it with the
    reference on arbitrary ones; the explorer itself only ever passes its grid's)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    for name, dist in (("p", p), ("q", q)):
        if dist.ndim != 1 or dist.size < 2:
            raise ValueError(f"{name} must be a 1-D probability vector with at least 2 entries")
        if not np.all(np.isfinite(dist)) or np.any(dist < 0):
            raise ValueError(f"{name} must have finite non-negative entries")
        if abs(float(dist.sum()) - 1.0) > SUM_TOLERANCE:
            raise ValueError(f"{name} must sum to 1, got {float(dist.sum()):.10g}")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}")
    samples = _check_int(samples, "samples", 1)
    seed = _check_int(seed, "seed", 0)
    size = p.size
    if outcomes is None:
        outcomes = tuple(f"x={i}" for i in range(size))
    outcomes = tuple(outcomes)
    if len(outcomes) != size:
        raise ValueError(f"outcomes must have {size} names")

    reasons: dict[str, str] = {}
    kl_qp = _math._kl_between(q, p)
    kl_pq = _math._kl_between(p, q)
    drawn = q > 0
    lost = drawn & (p == 0)  # q samples these, p never: log r = -inf
    unseen = (p > 0) & ~drawn  # p has mass here, q never samples it
    if lost.any():
        where = ", ".join(f"{outcomes[i]} (q = {q[i]:g})" for i in np.flatnonzero(lost))
        reasons["kl_qp"] = f"q draws {where} where p = 0: log r = -inf there"
    if unseen.any():
        where = ", ".join(f"{outcomes[i]} (p = {p[i]:g})" for i in np.flatnonzero(unseen))
        reasons["kl_pq"] = f"p has mass on {where}, which q never draws"
    weight_mean = float(np.sum(p[drawn]))  # E_q[p/q] = the mass of p where q draws

    ratio = np.full(size, math.nan)
    ratio[drawn] = p[drawn] / q[drawn]
    per_outcome = {k: np.full(size, math.nan) for k in ESTIMATORS}
    finite = drawn & ~lost
    if finite.any():
        values_at = _math._estimator_bars(np.log(p[finite]) - np.log(q[finite]))
        for k in ESTIMATORS:
            per_outcome[k][finite] = np.asarray(values_at[k], dtype=np.float64)
    for k in ESTIMATORS:
        # r = 0: k1 = -log r, k2 = (log r)^2 / 2 and k3 = (r - 1) - log r are all +inf.
        per_outcome[k][lost] = math.inf

    expected = {}
    for k in ESTIMATORS:
        if lost.any():
            expected[k] = math.inf
            reasons[f"expected.{k}"] = "q samples an outcome where p = 0, and there it is +inf"
        else:
            expected[k] = float(np.sum(q[finite] * per_outcome[k][finite]))

    draws = _draw(q, samples, seed)
    # Cumulative counts per outcome give every running mean and spread without
    # the cancellation of a running sum of squares.
    counts = np.cumsum(np.eye(size, dtype=np.int64)[draws], axis=0)
    n = np.arange(1, samples + 1, dtype=np.float64)
    hit_lost = counts[:, lost].sum(axis=1) > 0
    values, running_mean, running_se = {}, {}, {}
    sample_mean, sample_se, sample_min, negative_fraction = {}, {}, {}, {}
    for k in ESTIMATORS:
        at = np.where(finite, per_outcome[k], 0.0)
        values[k] = per_outcome[k][draws]
        mean = counts @ at / n
        spread = np.full(samples, math.nan)
        if samples > 1:
            sq = counts[1:] * (at[None, :] - mean[1:, None]) ** 2
            spread[1:] = np.sqrt(sq.sum(axis=1) / (n[1:] - 1.0) / n[1:])
        mean[hit_lost] = math.inf
        spread[hit_lost] = math.nan
        running_mean[k], running_se[k] = mean, spread
        sample_mean[k], sample_se[k] = float(mean[-1]), float(spread[-1])
        sample_min[k] = float(values[k].min())
        negative_fraction[k] = float(np.mean(values[k] < 0))
        if hit_lost[-1]:
            first = int(np.argmax(hit_lost)) + 1
            reasons[f"sample_mean.{k}"] = f"draw {first} landed where p = 0, so log r = -inf"
            reasons[f"sample_se.{k}"] = "the spread of samples that include +inf is undefined"
            if math.isinf(sample_min[k]):
                reasons[f"sample_min.{k}"] = "every draw landed where p = 0"
        elif samples == 1:
            reasons[f"sample_se.{k}"] = "one sample has no spread estimate"
    return KLState(
        p, q, outcomes, samples, seed, kl_qp, kl_pq, weight_mean, ratio, per_outcome, expected,
        draws, values, running_mean, running_se, sample_mean, sample_se, sample_min,
        negative_fraction, reasons,
    )


def kl_preset_state(preset: str = "k_estimators", *, samples: int = 1000, seed: int = 0) -> KLState:
    """:func:`kl_state` for a named preset of :data:`KL_PRESETS`."""
    if preset not in KL_PRESETS:
        raise ValueError(f"preset must be one of {sorted(KL_PRESETS)}, got {preset!r}")
    chosen = KL_PRESETS[preset]
    return kl_state(chosen.p, chosen.q, samples=samples, seed=seed, outcomes=chosen.outcomes)


