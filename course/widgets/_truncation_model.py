"""The truncation explorer's model: base logits and sampling controls in, a plain state out.

Nothing here touches ipywidgets or matplotlib, so what a learner sees can be tested without a
display. The arithmetic is the widgets' own (:mod:`course.widgets._math`); an instructor-side test
keeps it equal to the reference solutions.

The explorer works on its own examples only (:data:`TRUNCATION_PRESETS`, with any setting of its
controls): it takes no logits from outside, so it shows how temperature, bans, top-k and top-p act
without ever working out an exercise's answer for a notebook's numbers (``docs/DESIGN.md``, "Widgets").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

import course.widgets._math as _math  # the module itself, not the package (whose __init__ imports this one)
from ._inputs import _check_float, _check_int, _token_index

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
    # Opens on its own example (not a notebook's): 0.40 + 0.30 reaches top-p 0.70 exactly, so
    # one slider step to 0.71 brings in the third token.
    "nucleus": TruncationPreset(
        tokens=("tea", "coffee", "water", "juice", "milk"),
        logits=_log_probs((0.40, 0.30, 0.20, 0.06, 0.04)),
        settings={"temperature": 1.0, "top_p": 0.70, "chosen": 1, "positions": 4},
        title="Top-p (nucleus) explorer: which tokens survive, and how the rest is renormalised",
    ),
    # Its own example too: top-p 0.85 keeps three tokens of mass 0.87, and n = 6 positions.
    "truncation_correction": TruncationPreset(
        tokens=("Oslo", "Bergen", "Tromso", "Bodo", "Molde"),
        logits=_log_probs((0.45, 0.30, 0.12, 0.08, 0.05)),
        settings={"temperature": 1.0, "top_p": 0.85, "chosen": 1, "positions": 6},
        title="Truncation correction explorer: a kept token's log-prob before and after renormalising",
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
        ``-log Z_S``, the log-prob increase of a kept token.
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


def _checked_controls(logits, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned, chosen,
                      positions) -> tuple:
    """The explorer's inputs checked and converted (one place), in :func:`_truncation_state`'s order:
    ``(z, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id, positions)``."""
    example = np.array(logits, dtype=float)
    if example.ndim != 1 or example.size == 0:
        raise ValueError(f"logits must be a non-empty 1-D array, got shape {example.shape}")
    if not np.isfinite(example).all():
        raise ValueError("logits: every entry must be a finite number")
    z = example
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
        raise ValueError(f"the temperature must be a positive number, got {temperature}")
    if top_k is not None:
        top_k = _check_int(top_k, "top_k", 0, size) or None
    top_p = _check_float(top_p, "top_p")
    if top_p <= 0.0 or top_p > 1.0:
        raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
    min_tokens_to_keep = _check_int(min_tokens_to_keep, "min_tokens_to_keep", 1, size)
    banned_ids = tuple(sorted({_token_index(t, tokens, "banned") for t in banned}))
    chosen_id = _token_index(chosen, tokens, "chosen")
    positions = _check_int(positions, "positions", 1)
    return z, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id, positions


def _state_without_behaviour(controls: tuple, base, tempered, base_logprob: float, tempered_logprob: float,
                             error: str) -> TruncationState:
    """What the explorer shows when the controls leave no token to sample (``error`` says why): the base
    and tempered columns, and NaN with the reason for everything the behaviour policy would give."""
    z, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id, positions = controls
    size = z.size
    nan = math.nan
    reasons = {key: error for key in (
        "support_mass", "behaviour_logprob", "logprob_shift", "log_correction", "ratio_error",
        "behaviour_prob")}
    return TruncationState(
        tokens, z, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id,
        positions, base, tempered, np.full(size, nan), np.zeros(size, dtype=bool),
        tuple("banned" if i in banned_ids else "" for i in range(size)), nan,
        base_logprob, tempered_logprob, nan, nan, nan, nan, reasons, (), error,
    )


def _removed_by(masks: dict) -> list:
    """Which stage removed each token ("" for a kept one): the first of banned, top-k, top-p whose mask
    drops it (the stages' masks are cumulative)."""
    removed_by = []
    for i in range(masks["top-p"].size):
        if masks["top-p"][i]:
            removed_by.append("")
        elif not masks["banned"][i]:
            removed_by.append("banned")
        elif not masks["top-k"][i]:
            removed_by.append("top-k")
        else:
            removed_by.append("top-p")
    return removed_by


def _truncation_state(
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
    """Compute what the truncation explorer shows, for any logits (private: the explorer and
    :func:`truncation_preset_state` pass its presets' logits only; the instructor's tests compare this
    with the reference on arbitrary ones).

    Parameters
    ----------
    logits : sequence of float
        Base logits, one per token (1-D, finite).
    tokens : sequence of str, optional
        Token names; ``t0, t1, ...`` by default.
    temperature, top_k, top_p, min_tokens_to_keep
        The sampling controls, as in the notebooks
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
    >>> s = _truncation_state(np.log([0.6, 0.3, 0.1]), top_p=0.5, chosen=0, positions=2)
    >>> s.support_tokens, round(s.support_mass, 6), round(s.ratio_error, 6)
    (('t0',), 0.6, 2.777778)
    """
    controls = _checked_controls(logits, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned, chosen,
                                 positions)
    z, tokens, temperature, top_k, top_p, min_tokens_to_keep, banned_ids, chosen_id, positions = controls

    base = _math._softmax(z)
    base_logprob = float(_math._log_softmax(z)[chosen_id])
    tempered_log = _math._tempered_log_probs(z, temperature)
    tempered = np.exp(tempered_log)
    reasons: dict[str, str] = {}
    notes: list[str] = []
    name = tokens[chosen_id]
    try:
        # Stage by stage, to tell the learner which transform removed each token.
        masks = _math._truncation_stages(tempered_log, banned_ids, top_k, top_p,
                                         min_tokens_to_keep)
    except ValueError as exc:
        return _state_without_behaviour(controls, base, tempered, base_logprob, float(tempered_log[chosen_id]),
                                        f"no behaviour distribution: {exc}")
    support = masks["top-p"]
    behaviour = _math._renormalised(tempered_log, support)
    removed_by = _removed_by(masks)
    log_mass = _math._log_kept_mass(tempered_log, support)
    support_mass = math.exp(log_mass)
    tempered_logprob = float(tempered_log[chosen_id])
    behaviour_logprob = _math._kept_logprob(tempered_log, support, chosen_id, log_mass)
    log_correction = -math.log(support_mass) if support_mass > 0 else math.inf
    ratio_error = _math._inv_power(support_mass, positions) if support_mass > 0 else math.inf
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
    """What the truncation explorer shows for one of its presets, with controls overridden
    (``temperature``, ``top_k``, ``top_p``, ``min_tokens_to_keep``, ``banned``, ``chosen``,
    ``positions``); the logits are the preset's.

    Examples
    --------
    >>> truncation_preset_state("nucleus").support_tokens
    ('tea', 'coffee')
    >>> truncation_preset_state("nucleus", top_p=0.71).support_tokens
    ('tea', 'coffee', 'water')
    """
    chosen = preset_named(preset)
    unknown = sorted(set(overrides) - set(CONTROLS))
    if unknown:
        raise TypeError(f"truncation_preset_state: unknown control(s) {unknown}; the controls are "
                        f"{list(CONTROLS)} (the logits are the preset's own)")
    settings = {**chosen.settings, **overrides}
    for name, step in GRIDS.items():
        value = _check_float(settings[name], name)
        if abs(value / step - round(value / step)) > 1e-9:
            raise ValueError(f"{name} = {value:g} is not a multiple of {step:g}: the explorer's {name} moves "
                             f"in steps of {step:g}, as its slider does")
    return _truncation_state(chosen.logits, chosen.tokens, **settings)


#: The grids of the explorer's float controls (their sliders' steps): what a learner, or a notebook, can
#: set. Exercise 07's temperatures lie off the temperature's grid (docs/DESIGN.md, "Widgets").
GRIDS = {"temperature": 0.05, "top_p": 0.01}


#: The explorer's controls: everything a learner sets (the logits are the preset's).
CONTROLS = ("temperature", "top_k", "top_p", "min_tokens_to_keep", "banned", "chosen", "positions")


def preset_named(preset) -> TruncationPreset:
    """The preset called ``preset``, or an error that says the explorer takes no logits."""
    if not isinstance(preset, str):
        raise TypeError(
            f"the truncation explorer opens on its own examples, preset={sorted(TRUNCATION_PRESETS)}, "
            f"and takes no logits (got {type(preset).__name__}): it shows how the transforms act, and "
            "works out no exercise for a notebook's numbers")
    if preset not in TRUNCATION_PRESETS:
        raise ValueError(f"preset must be one of {sorted(TRUNCATION_PRESETS)}, got {preset!r}")
    return TRUNCATION_PRESETS[preset]


