"""Pure models behind the widgets: parameters in, a plain state object out.

Nothing here touches ipywidgets or matplotlib, so the numbers a learner sees
can be unit-tested without a display. Every quantity is computed by
:mod:`autograder.reference`; the models only choose the inputs, collect the
outputs and attach a one-line reason to every value that is not finite.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from autograder import reference as ref

ESTIMATORS = ("k1", "k2", "k3")

# --------------------------------------------------------------------------------------
# input helpers


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


def _support_mask(support, size: int) -> np.ndarray:
    """The reference's support as a boolean mask, whether it gives a mask or token ids."""
    array = np.asarray(support)
    if array.dtype == bool and array.shape == (size,):
        return array.copy()
    mask = np.zeros(size, dtype=bool)
    mask[np.asarray(array, dtype=np.int64).ravel()] = True
    return mask


# --------------------------------------------------------------------------------------
# truncation


@dataclass(frozen=True)
class TruncationPreset:
    """A base distribution over named tokens and the starting controls."""

    tokens: tuple[str, ...]
    logits: tuple[float, ...]
    settings: Mapping[str, object] = field(default_factory=dict)
    title: str = ""


def _log_probs(probabilities: Sequence[float]) -> tuple[float, ...]:
    # Logits equal to log-probabilities make softmax return the same probabilities.
    return tuple(float(np.log(p)) for p in probabilities)


TRUNCATION_PRESETS: dict[str, TruncationPreset] = {
    "default": TruncationPreset(
        tokens=("mat", "sofa", "floor", "chair", "bed", "roof", "moon", "piano"),
        logits=(2.0, 1.5, 1.0, 0.6, 0.3, -0.2, -1.0, -1.5),
        settings={"temperature": 1.0, "top_p": 0.9, "chosen": 1, "positions": 4},
        title="The cat sat on the ...",
    ),
    # Exercise 12: p = (0.50, 0.30, 0.15, 0.05); at top-p 0.80 two tokens remain, at 0.81 three.
    "nucleus": TruncationPreset(
        tokens=("mat", "sofa", "floor", "moon"),
        logits=_log_probs((0.50, 0.30, 0.15, 0.05)),
        settings={"temperature": 1.0, "top_p": 0.80, "chosen": 1, "positions": 4},
        title="A top-p nucleus: p = (0.50, 0.30, 0.15, 0.05)",
    ),
    # Exercise 13: top-p 0.80 keeps the first three tokens, Z_S = 0.40 + 0.25 + 0.20 = 0.85,
    # and the chosen token has base probability 0.25; n = 4 gives 1 / 0.85**4 = 1.915686.
    "truncation_correction": TruncationPreset(
        tokens=("Paris", "Lyon", "Nice", "Lille", "Metz"),
        logits=_log_probs((0.40, 0.25, 0.20, 0.10, 0.05)),
        settings={"temperature": 1.0, "top_p": 0.80, "chosen": 1, "positions": 4},
        title="Truncation correction: Z_S = 0.85, chosen base probability 0.25",
    ),
}


@dataclass(frozen=True, eq=False)
class TruncationState:
    """Everything the truncation explorer shows, for one setting of its controls.

    Attributes
    ----------
    tokens : tuple of str
        Token names, indexed by token id.
    base_probs, tempered_probs, behaviour_probs : ndarray
        softmax(logits), softmax(logits / T) and the post-transform behaviour
        distribution (zeros outside the support; NaN when ``error`` is set).
    support : ndarray of bool
        The retained support S.
    removed_by : tuple of str
        Per token: ``""`` if kept, else the stage that removed it
        (``"banned"``, ``"top-k"`` or ``"top-p"``).
    support_mass : float
        Z_S, the tempered mass of the retained support.
    base_logprob, tempered_logprob, behaviour_logprob : float
        Log-probabilities of the chosen token.
    logprob_shift : float
        ``behaviour_logprob - tempered_logprob`` (= -log Z_S inside S, -inf outside).
    log_correction : float
        ``-log Z_S`` from :func:`autograder.reference.truncation_log_correction`.
    ratio_error : float
        ``Z_S ** -positions``: how far an n-position ratio is off when it uses
        pre-truncation log-probs at every position (each position keeping Z_S).
    reasons : dict
        One-line reason for every field whose value is not finite.
    notes : tuple of str
        Remarks that qualify the numbers (e.g. temperature also changes them).
    error : str or None
        Why the configuration has no behaviour distribution at all.
    """

    tokens: tuple[str, ...]
    logits: np.ndarray
    temperature: float
    top_k: int | None
    top_p: float
    min_tokens_to_keep: int
    banned: tuple[int, ...]
    chosen: int
    positions: int
    base_probs: np.ndarray
    tempered_probs: np.ndarray
    behaviour_probs: np.ndarray
    support: np.ndarray
    removed_by: tuple[str, ...]
    support_mass: float
    base_logprob: float
    tempered_logprob: float
    behaviour_logprob: float
    logprob_shift: float
    log_correction: float
    ratio_error: float
    reasons: Mapping[str, str]
    notes: tuple[str, ...]
    error: str | None

    @property
    def chosen_token(self) -> str:
        return self.tokens[self.chosen]

    @property
    def base_prob(self) -> float:
        return float(self.base_probs[self.chosen])

    @property
    def behaviour_prob(self) -> float:
        return float(self.behaviour_probs[self.chosen])

    @property
    def support_tokens(self) -> tuple[str, ...]:
        return tuple(t for t, kept in zip(self.tokens, self.support) if kept)


def truncation_state(
    logits: Sequence[float],
    tokens: Sequence[str] | None = None,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float = 1.0,
    min_tokens_to_keep: int = 1,
    banned: Sequence[int | str] = (),
    chosen: int | str = 0,
    positions: int = 4,
) -> TruncationState:
    """Compute what the truncation explorer shows.

    Parameters
    ----------
    logits : sequence of float
        Base logits, one per token (1-D, finite).
    tokens : sequence of str, optional
        Token names; ``t0, t1, ...`` by default.
    temperature, top_k, top_p, min_tokens_to_keep
        The sampling controls, as in :class:`autograder.reference.SamplingConfig`
        (``top_k=None`` or ``0`` switches top-k off).
    banned : sequence of int or str
        Banned tokens, by id or name.
    chosen : int or str
        The sampled token whose log-probabilities are shown.
    positions : int
        n, the number of positions of the sequence ratio.

    Returns
    -------
    TruncationState

    Examples
    --------
    >>> s = truncation_state(np.log([0.40, 0.25, 0.20, 0.10, 0.05]), top_p=0.80, chosen=1)
    >>> round(s.support_mass, 6), round(s.ratio_error, 6)
    (0.85, 1.915686)
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"logits must be a non-empty 1-D array, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite")
    size = z.size
    if tokens is None:
        tokens = tuple(f"t{i}" for i in range(size))
    tokens = tuple(tokens)
    if len(tokens) != size or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"tokens must be {size} strings, one per logit")
    if len(set(tokens)) != size:
        raise ValueError("tokens must be distinct")
    temperature = _check_float(temperature, "temperature")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if top_k is not None:
        top_k = _check_int(top_k, "top_k", 0, size) or None
    top_p = _check_float(top_p, "top_p")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
    min_tokens_to_keep = _check_int(min_tokens_to_keep, "min_tokens_to_keep", 1, size)
    banned_ids = tuple(sorted({_token_index(t, tokens, "banned") for t in banned}))
    chosen_id = _token_index(chosen, tokens, "chosen")
    positions = _check_int(positions, "positions", 1)

    base = ref.softmax(z)
    tempered = ref.temperature_distribution(z, temperature)
    common = dict(temperature=temperature, banned_token_ids=banned_ids)
    config = ref.SamplingConfig(
        **common, top_k=top_k, top_p=top_p, min_tokens_to_keep=min_tokens_to_keep
    )
    reasons: dict[str, str] = {}
    notes: list[str] = []
    name = tokens[chosen_id]
    try:
        # Stage by stage, to tell the learner which transform removed each token.
        after_ban = ref.behaviour_distribution(z, ref.SamplingConfig(**common)) > 0
        after_k = ref.behaviour_distribution(z, ref.SamplingConfig(**common, top_k=top_k)) > 0
        behaviour = ref.behaviour_distribution(z, config)
        record = ref.behaviour_logprob(z, chosen_id, config)
    except ValueError as exc:
        error = f"no behaviour distribution: {exc}"
        nan = math.nan
        reasons = {key: error for key in (
            "support_mass", "behaviour_logprob", "logprob_shift", "log_correction", "ratio_error",
            "behaviour_prob")}
        return TruncationState(
            tokens, z, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id,
            positions, base, tempered, np.full(size, nan), np.zeros(size, dtype=bool),
            tuple("banned" if i in banned_ids else "" for i in range(size)), nan,
            float(np.log(base[chosen_id])), float(np.log(tempered[chosen_id])), nan, nan, nan, nan,
            reasons, (), error,
        )

    support = _support_mask(record.support, size)
    removed_by = []
    for i in range(size):
        if support[i]:
            removed_by.append("")
        elif not after_ban[i]:
            removed_by.append("banned")
        elif not after_k[i]:
            removed_by.append("top-k")
        else:
            removed_by.append("top-p")
    support_mass = float(record.support_mass)
    base_logprob = float(record.base_logprob)
    tempered_logprob = float(record.tempered_logprob)
    behaviour_logprob = float(record.behaviour_logprob)
    log_correction = float(ref.truncation_log_correction(support_mass))
    ratio_error = float(ref.sequence_ratio_error(support_mass, positions))
    if support[chosen_id]:
        logprob_shift = behaviour_logprob - tempered_logprob
    else:
        logprob_shift = -math.inf
        why = removed_by[chosen_id]
        outside = (f"'{name}' was removed by {why}: the behaviour policy never samples it, "
                   "so a ratio with this denominator is undefined")
        reasons["behaviour_logprob"] = outside
        reasons["logprob_shift"] = outside
    if not math.isfinite(ratio_error):
        reasons["ratio_error"] = f"Z_S^-n overflows float64 (Z_S = {support_mass:.3g}, n = {positions})"
    if not math.isfinite(log_correction):
        reasons["log_correction"] = f"-log Z_S is not finite (Z_S = {support_mass:.3g})"
    if temperature != 1.0:
        notes.append(
            f"T = {temperature:g}: base and tempered log-probs differ too, so base log-probs are off "
            "by more than the truncation factor shown"
        )
    return TruncationState(
        tokens, z, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id, positions,
        base, tempered, np.asarray(behaviour, dtype=np.float64), support, tuple(removed_by),
        support_mass, base_logprob, tempered_logprob, behaviour_logprob, logprob_shift,
        log_correction, ratio_error, reasons, tuple(notes), None,
    )


def truncation_preset_state(preset: str = "default", **overrides) -> TruncationState:
    """:func:`truncation_state` for a named preset, with controls overridden.

    Examples
    --------
    >>> truncation_preset_state("nucleus").support_tokens
    ('mat', 'sofa')
    >>> truncation_preset_state("nucleus", top_p=0.81).support_tokens
    ('mat', 'sofa', 'floor')
    """
    if preset not in TRUNCATION_PRESETS:
        raise ValueError(f"preset must be one of {sorted(TRUNCATION_PRESETS)}, got {preset!r}")
    chosen = TRUNCATION_PRESETS[preset]
    settings = {**chosen.settings, **overrides}
    return truncation_state(chosen.logits, chosen.tokens, **settings)


# --------------------------------------------------------------------------------------
# KL divergence and its sample estimators


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


KL_PRESETS: dict[str, KLPreset] = {
    # r = 2 on x=0 and r = 1/2 on x=1: the seed's k1, k2, k3 numbers are the two sample values.
    "k_estimators": KLPreset(
        "r = 2 or 1/2: q = (1/3, 2/3), p = (2/3, 1/3)",
        "2/3, 1/3", "1/3, 2/3", ("x=0", "x=1"),
        "Samples have r = 2 or r = 1/2, the seed's two cases: k1 changes sign, k2 and k3 do not.",
    ),
    "support_missing_mass": KLPreset(
        "Support 1: q = (1, 0), p = (0.8, 0.2)",
        "0.8, 0.2", "1, 0", ("x=0", "x=1"),
        "p has mass where q never samples: E_q[p/q] = 0.8, so k3's control variate is off by 0.2.",
    ),
    "support_infinite_log": KLPreset(
        "Support 2: q = (0.8, 0.2), p = (1, 0)",
        "1, 0", "0.8, 0.2", ("x=0", "x=1"),
        "q samples x=1 where p = 0: log r = -inf there and KL(q||p) is infinite.",
    ),
    "behaviour_target": KLPreset(
        "Support violation: q = mu = (0.7, 0.3, 0), p = pi = (0.6, 0.2, 0.2)",
        "0.6, 0.2, 0.2", "0.7, 0.3, 0", ("a=1", "a=2", "a=3"),
        "The behaviour policy q never takes a=3, which the target p takes with probability 0.2.",
    ),
    "chain_root": KLPreset(
        "Chain-rule root: q = (0.5, 0.5), p = (0.6, 0.4)",
        "0.6, 0.4", "0.5, 0.5", ("a=0", "a=1"),
        "Close distributions: all three estimators are near the exact KL, with different spreads.",
    ),
}

KL_PRESET_GROUPS = {
    "support": "support_missing_mass",
    "k_estimators": "k_estimators",
}

# autograder.reference accepts probability vectors that sum to one within 1e-9.
SUM_TOLERANCE = 1e-9

SAMPLE_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)


def parse_distribution(text: str, name: str = "distribution") -> np.ndarray:
    """Parse ``"0.6, 0.4"`` or ``"1/3 2/3"`` into a probability vector.

    Raises
    ------
    ValueError
        Naming ``name``: empty, not a number, negative, or not summing to 1
        (within 1e-9, as :func:`autograder.reference.kl_divergence` asks; the
        numbers are used as typed, not renormalised).

    Examples
    --------
    >>> parse_distribution("1/3, 2/3", "q")
    array([0.33333333, 0.66666667])
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
        E_q[p/q], which is 1 only when p puts no mass outside q's support.
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
        Probability vectors of the same length; samples come from ``q``.
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
    >>> s = kl_state([2 / 3, 1 / 3], [1 / 3, 2 / 3], samples=100)
    >>> [round(float(v), 6) for v in s.per_outcome["k3"]]
    [0.306853, 0.193147]
    """
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
    kl_qp = float(ref.kl_divergence(q, p))
    kl_pq = float(ref.kl_divergence(p, q))
    drawn = q > 0
    lost = drawn & (p == 0)  # q samples these, p never: log r = -inf
    unseen = (p > 0) & ~drawn  # p has mass here, q never samples it
    if lost.any():
        where = ", ".join(f"{outcomes[i]} (q = {q[i]:g})" for i in np.flatnonzero(lost))
        reasons["kl_qp"] = f"q samples {where} where p = 0: log r = -inf there (q \u226a p fails)"
    if unseen.any():
        where = ", ".join(f"{outcomes[i]} (p = {p[i]:g})" for i in np.flatnonzero(unseen))
        reasons["kl_pq"] = f"p has mass on {where} where q = 0 (p \u226a q fails)"
    weight_mean = float(ref.importance_weight_mean(p, q))

    ratio = np.full(size, math.nan)
    ratio[drawn] = p[drawn] / q[drawn]
    per_outcome = {k: np.full(size, math.nan) for k in ESTIMATORS}
    finite = drawn & ~lost
    if finite.any():
        values_at = ref.kl_sample_values(np.log(q[finite]), np.log(p[finite]))
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


# --------------------------------------------------------------------------------------
# KL chain rule on a depth-two tree

SEED_TREE = {
    "first_p": (0.6, 0.4),
    "first_q": (0.5, 0.5),
    "cond_p": ((0.7, 0.3), (0.2, 0.8)),
    "cond_q": ((0.4, 0.6), (0.5, 0.5)),
}


@dataclass(frozen=True, eq=False)
class ChainRuleState:
    """The chain rule on a two-step tree: root KL + E[conditional KL] = joint KL.

    Attributes
    ----------
    root : float
        KL(p0 || q0) of the first step.
    conditional : ndarray
        KL(p(.|a1) || q(.|a1)) for each first action a1.
    expected_conditional : float
        The conditional KLs averaged under p0.
    total : float
        ``root + expected_conditional``.
    joint : float
        KL of the joint distributions over (a1, a2), computed directly.
    joint_p, joint_q : ndarray
        The four joint probabilities, ``[a1, a2]``.
    difference : float
        ``total - joint`` (0 up to round-off; NaN when both are inf).
    agree : bool
        Whether the two sides agree (both finite and equal to 1e-12, or both inf).
    reasons : dict
        One-line reason for each non-finite value.
    """

    first_p: np.ndarray
    first_q: np.ndarray
    cond_p: np.ndarray
    cond_q: np.ndarray
    root: float
    conditional: np.ndarray
    expected_conditional: float
    total: float
    joint: float
    joint_p: np.ndarray
    joint_q: np.ndarray
    difference: float
    agree: bool
    reasons: Mapping[str, str]


def chain_rule_state(first_p, first_q, cond_p, cond_q) -> ChainRuleState:
    """Compute what the chain-rule explorer shows, with :func:`autograder.reference.kl_chain_rule`.

    Parameters
    ----------
    first_p, first_q : sequence of float
        First-step distributions.
    cond_p, cond_q : 2-D array-like
        ``cond[a1, a2] = p(a2 | a1)``.

    Examples
    --------
    >>> s = chain_rule_state(**SEED_TREE)
    >>> round(s.root, 7), round(s.expected_conditional, 7), round(s.joint, 7)
    (0.0201355, 0.18737, 0.2075056)
    """
    first_p = np.asarray(first_p, dtype=np.float64)
    first_q = np.asarray(first_q, dtype=np.float64)
    cond_p = np.asarray(cond_p, dtype=np.float64)
    cond_q = np.asarray(cond_q, dtype=np.float64)
    result = ref.kl_chain_rule(first_p, first_q, cond_p, cond_q)
    root = float(result.root)
    conditional = np.asarray(result.conditional, dtype=np.float64)
    expected_conditional = float(result.expected_conditional)
    total = float(result.total)
    joint = float(result.joint)
    joint_p = first_p[:, None] * cond_p
    joint_q = first_q[:, None] * cond_q
    reasons: dict[str, str] = {}
    if math.isinf(root):
        bad = [str(a) for a in range(first_p.size) if first_p[a] > 0 and first_q[a] == 0]
        reasons["root"] = f"p0 takes first action {', '.join(bad)} where q0 = 0"
    for a1, value in enumerate(conditional):
        if math.isinf(value):
            bad = [str(a) for a in range(cond_p.shape[1]) if cond_p[a1, a] > 0 and cond_q[a1, a] == 0]
            reasons[f"conditional.{a1}"] = f"after a1 = {a1}, p takes a2 = {', '.join(bad)} where q = 0"
    if math.isinf(expected_conditional):
        reasons["expected_conditional"] = "a first action that p takes leads to an infinite conditional KL"
    for key in ("total", "joint"):
        if math.isinf(total if key == "total" else joint):
            reasons[key] = "p gives a path positive probability that q gives 0"
    if math.isfinite(total) and math.isfinite(joint):
        difference = total - joint
        agree = abs(difference) <= 1e-12 * max(1.0, abs(joint))
    else:
        difference = math.nan
        agree = total == joint and math.isinf(joint)
        reasons["difference"] = ("both sides are inf, so their difference is undefined" if agree
                                 else "one side is not finite")
    for key in ("root", "expected_conditional", "total", "joint"):
        value = {"root": root, "expected_conditional": expected_conditional, "total": total,
                 "joint": joint}[key]
        if math.isnan(value):
            reasons[key] = "the reference returned NaN for these probabilities"
    return ChainRuleState(
        first_p, first_q, cond_p, cond_q, root, conditional, expected_conditional, total, joint,
        joint_p, joint_q, difference, agree, reasons,
    )


def chain_rule_from_controls(p0: float, q0: float, p_given: Sequence[float],
                             q_given: Sequence[float]) -> ChainRuleState:
    """The tree from the explorer's six sliders.

    ``p0 = p(a1 = 0)``, ``q0 = q(a1 = 0)``, ``p_given[a1] = p(a2 = 0 | a1)`` and
    ``q_given[a1] = q(a2 = 0 | a1)``; the other branch of each split gets the rest.
    """
    values = [("p0", p0), ("q0", q0)] + [(f"p_given[{i}]", v) for i, v in enumerate(p_given)] + [
        (f"q_given[{i}]", v) for i, v in enumerate(q_given)]
    for name, value in values:
        value = _check_float(value, name)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    if len(p_given) != 2 or len(q_given) != 2:
        raise ValueError("p_given and q_given must hold one value per first action (2)")

    def split(x):
        return (float(x), 1.0 - float(x))

    return chain_rule_state(
        split(p0), split(q0), [split(v) for v in p_given], [split(v) for v in q_given]
    )
