r"""Sampling transforms (temperature, banned tokens, top-k, top-p) and the behaviour policy they define.

Conventions of this course (they differ from some engines on purpose; see the notebooks):

* **Stable order.** Tokens are ranked by probability with a stable sort, so among equal
  probabilities the smaller token id ranks first (and is kept first).
* **top-k** keeps exactly ``k`` tokens, ties broken by the stable order (vLLM's Triton top-k kernel
  does the same). ``keep_ties=True`` gives the other rule in use, every token tied with the ``k``-th
  (transformers' ``TopKLogitsWarper``, vLLM's PyTorch ``apply_top_k_only``); exercises 19 and 21
  accept either, see their notebooks.
* **top-p** keeps the smallest prefix of the ranked tokens whose mass *reaches* ``top_p``: the token
  that crosses the threshold is kept. ``top_p = 1`` keeps the whole support.
* **Tolerance rule.** Probabilities computed from logits carry rounding error: the seed's
  0.50 + 0.30 = 0.80 nucleus has a float64 cumulative mass of 0.7999999999999999. A prefix
  "reaches" ``top_p`` when its cumulative mass is at least ``top_p - tol`` with
  ``tol = 8 * V * eps`` (V the vocabulary size, eps the float64 machine epsilon), a bound on the
  rounding error of a softmax followed by a V-term cumulative sum. A genuine gap smaller than that
  cannot be resolved from float64 input anyway.
* **Order of the behaviour chain**: temperature, then banned tokens, then top-k, then top-p, each
  renormalising what the previous step left. The behaviour probability of a kept token is its
  tempered probability divided by :math:`Z_S`, the tempered mass of the final support S.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from autograder.reference._validation import as_float, as_float_array, as_int
from autograder.reference.softmax import stable_log_softmax

EPS = np.finfo(np.float64).eps
CHAIN_ORDER = ("temperature", "banned_tokens", "top_k", "top_p")


def _logits_1d(logits) -> np.ndarray:
    return as_float_array(logits, "logits", ndim=1, logits=True)


def _ranked(probabilities: np.ndarray) -> np.ndarray:
    """Token ids from most to least probable; equal probabilities keep increasing id order."""
    return np.argsort(-probabilities, kind="stable")


def _nucleus_size(sorted_probabilities: np.ndarray, top_p: float) -> int:
    """How many ranked tokens the top-p rule keeps (see the module's tolerance rule)."""
    if top_p >= 1.0:
        return int(np.count_nonzero(sorted_probabilities > 0)) or sorted_probabilities.size
    cumulative = np.cumsum(sorted_probabilities)
    tolerance = 8 * sorted_probabilities.size * EPS
    reached = np.flatnonzero(cumulative >= top_p - tolerance)
    return int(reached[0]) + 1 if reached.size else sorted_probabilities.size


def _restrict(log_probabilities: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Renormalise onto the kept tokens: probabilities, zero elsewhere."""
    kept = np.where(keep, log_probabilities, -np.inf)
    return np.exp(stable_log_softmax(kept[keep]))[np.cumsum(keep) - 1] * keep


def temperature_distribution(logits, temperature):
    r"""Softmax of the logits divided by a temperature: :math:`p_i \propto \exp(z_i / T)`.

    ``T > 1`` flattens the distribution, ``T < 1`` sharpens it. Computed as
    :math:`\operatorname{softmax}((z - \max z)/T)`, so small temperatures never overflow.

    Parameters
    ----------
    logits : array_like of float, shape [V]
        Finite logits, ``V >= 1``.
    temperature : float
        Finite and ``> 0`` (a bool is rejected).

    Returns
    -------
    numpy.ndarray of float64, shape [V]
        Probabilities that sum to one.

    Examples
    --------
    >>> temperature_distribution([2.0, 1.0, 0.0, -1.0], 2.0).round(6)
    array([0.455054, 0.276004, 0.167405, 0.101536])
    """
    z = _logits_1d(logits)
    temperature = as_float(temperature, "temperature", positive=True)
    return np.exp(stable_log_softmax((z - z.max()) / temperature))


def top_k_distribution(logits, k, *, keep_ties=False):
    r"""Keep the ``k`` most probable tokens (smaller id first among ties) and renormalise.

    Parameters
    ----------
    logits : array_like of float, shape [V]
    k : int
        ``1 <= k <= V``; bools and floats are rejected.
    keep_ties : bool, default False
        ``False``: exactly ``k`` tokens, the smaller id kept first among ties at the cut (this course's
        rule; vllm==0.33.0 ``vllm/v1/sample/ops/topk_topp_triton.py`` ``_topk_topp_kernel`` keeps the
        same set). ``True``: every token whose probability equals the ``k``-th's is kept too, so more
        than ``k`` may remain (transformers==5.24.0 ``TopKLogitsWarper.__call__`` removes only
        ``scores < topk(scores, k)[..., -1]``; vllm==0.33.0 ``apply_top_k_only`` likewise).

    Returns
    -------
    numpy.ndarray of float64, shape [V]
        ``k`` non-zero entries (fewer only if probabilities underflowed; more with ``keep_ties`` when
        the ``k``-th is tied), summing to one.

    Examples
    --------
    >>> top_k_distribution([2.0, 1.0, 0.0, -1.0], 2).round(6)
    array([0.731059, 0.268941, 0.      , 0.      ])
    >>> top_k_distribution([0.0, 1.0, 1.0, 0.0], 1)
    array([0., 1., 0., 0.])
    >>> top_k_distribution([0.0, 1.0, 1.0, 0.0], 1, keep_ties=True)
    array([0. , 0.5, 0.5, 0. ])
    """
    z = _logits_1d(logits)
    k = as_int(k, "k", low=1, high=z.size)
    if not isinstance(keep_ties, (bool, np.bool_)):
        raise TypeError(f"keep_ties must be a bool, got {keep_ties!r}")
    log_p = stable_log_softmax(z)
    ranked = _ranked(log_p)
    if keep_ties:
        # equal logits give bit-identical log-probabilities, so == on them is the engines' tie
        keep = log_p >= log_p[ranked[k - 1]]
    else:
        keep = np.zeros(z.size, dtype=bool)
        keep[ranked[:k]] = True
    return _restrict(log_p, keep)


def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1):
    r"""Nucleus sampling: keep the smallest ranked prefix whose probability mass reaches ``top_p``.

    With tokens ranked by probability (stable: smaller id first among ties) and cumulative mass
    :math:`c_j`, the kept set is the first :math:`\max(j^*, \text{min\_tokens\_to\_keep})` tokens,
    :math:`j^* = \min\{j : c_j \ge \text{top\_p} - \text{tol}\}` (the module's tolerance rule), and the
    kept probabilities are renormalised. ``top_p = 1`` keeps every token.

    Parameters
    ----------
    logits : array_like of float, shape [V]
    top_p : float
        In ``(0, 1]``.
    min_tokens_to_keep : int, keyword-only, default 1
        In ``[1, V]``.

    Returns
    -------
    numpy.ndarray of float64, shape [V]

    Examples
    --------
    >>> top_p_distribution(np.log([0.50, 0.30, 0.15, 0.05]), 0.80).round(6)
    array([0.625, 0.375, 0.   , 0.   ])
    >>> top_p_distribution(np.log([0.50, 0.30, 0.15, 0.05]), 0.81).round(6)
    array([0.526316, 0.315789, 0.157895, 0.      ])
    """
    z = _logits_1d(logits)
    top_p = as_float(top_p, "top_p", low=0.0, high=1.0, low_open=True)
    min_tokens_to_keep = as_int(min_tokens_to_keep, "min_tokens_to_keep", low=1, high=z.size)
    log_p = stable_log_softmax(z)
    order = _ranked(log_p)
    count = max(_nucleus_size(np.exp(log_p[order]), top_p), min_tokens_to_keep)
    keep = np.zeros(z.size, dtype=bool)
    keep[order[:count]] = True
    return _restrict(log_p, keep)


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """The settings that turn base logits into the behaviour policy (validated on construction).

    Attributes
    ----------
    temperature : float
        ``> 0``.
    banned_token_ids : tuple of int
        Tokens forced to probability zero (e.g. by a bad-words list or a grammar mask).
    top_k : int or None
        ``None`` disables top-k.
    top_p : float
        In ``(0, 1]``; ``1`` disables top-p.
    min_tokens_to_keep : int
        The floor of the top-p step.
    """

    temperature: float = 1.0
    banned_token_ids: tuple = ()
    top_k: int | None = None
    top_p: float = 1.0
    min_tokens_to_keep: int = 1

    def __post_init__(self):
        object.__setattr__(self, "temperature", as_float(self.temperature, "temperature", positive=True))
        if isinstance(self.banned_token_ids, (str, bytes)) or not hasattr(self.banned_token_ids, "__iter__"):
            raise TypeError("banned_token_ids must be a sequence of token ids")
        banned = tuple(sorted({as_int(t, "banned_token_ids", low=0) for t in self.banned_token_ids}))
        object.__setattr__(self, "banned_token_ids", banned)
        if self.top_k is not None:
            object.__setattr__(self, "top_k", as_int(self.top_k, "top_k", low=1))
        object.__setattr__(self, "top_p", as_float(self.top_p, "top_p", low=0.0, high=1.0, low_open=True))
        object.__setattr__(self, "min_tokens_to_keep", as_int(self.min_tokens_to_keep, "min_tokens_to_keep", low=1))

    def as_record(self) -> dict:
        """A JSON-ready record of the configuration, including the order the transforms ran in."""
        return {"temperature": self.temperature, "banned_token_ids": list(self.banned_token_ids),
                "top_k": self.top_k, "top_p": self.top_p, "min_tokens_to_keep": self.min_tokens_to_keep,
                "order": list(CHAIN_ORDER)}


def _config(config) -> SamplingConfig:
    if not isinstance(config, SamplingConfig):
        raise TypeError(f"config must be a SamplingConfig (SamplingConfig() for no transforms), got {type(config).__name__}")
    return config


def _support(z: np.ndarray, config: SamplingConfig) -> tuple:
    """``(tempered log-probabilities, support mask)`` after the whole chain."""
    tempered = stable_log_softmax((z - z.max()) / config.temperature)
    keep = np.ones(z.size, dtype=bool)
    if config.banned_token_ids:
        if config.banned_token_ids[-1] >= z.size:
            raise ValueError(f"banned_token_ids must lie in [0, {z.size}) for these logits")
        keep[list(config.banned_token_ids)] = False
        if not keep.any():
            raise ValueError("banned_token_ids bans every token: the behaviour policy would be empty")
    if config.top_k is not None and config.top_k < keep.sum():
        allowed = np.flatnonzero(keep)
        ranked = allowed[_ranked(tempered[allowed])]
        keep[:] = False
        keep[ranked[:config.top_k]] = True
    if config.top_p < 1.0:
        allowed = np.flatnonzero(keep)
        ranked = allowed[_ranked(tempered[allowed])]
        renormalised = np.exp(stable_log_softmax(tempered[ranked]))
        count = max(_nucleus_size(renormalised, config.top_p), min(config.min_tokens_to_keep, ranked.size))
        keep[:] = False
        keep[ranked[:count]] = True
    return tempered, keep


def behaviour_distribution(logits, config):
    r"""The behaviour policy after the documented chain (temperature, bans, top-k, top-p).

    Returns :math:`\pi_\text{beh}(i) = \tilde p_i / Z_S` on the support S and 0 elsewhere, where
    :math:`\tilde p = \operatorname{softmax}(z / T)` and :math:`Z_S = \sum_{i \in S} \tilde p_i`.

    Examples
    --------
    >>> behaviour_distribution(np.log([0.5, 0.3, 0.15, 0.05]), SamplingConfig(banned_token_ids=(0,), top_k=2)).round(6)
    array([0.      , 0.666667, 0.333333, 0.      ])
    """
    z = _logits_1d(logits)
    tempered, keep = _support(z, _config(config))
    return _restrict(tempered, keep)


@dataclasses.dataclass(frozen=True)
class BehaviourLogprob:
    """The log-probability a trainer must store for a sampled token, with what produced it.

    Attributes
    ----------
    token_id : int
    base_logprob : float
        ``log softmax(logits)[token_id]``: what the model alone says (not the behaviour policy).
    tempered_logprob : float
        ``log softmax(logits / T)[token_id]``: before truncation.
    behaviour_logprob : float
        ``tempered_logprob - log Z_S`` inside the support, ``-inf`` outside it.
    support : numpy.ndarray of bool
        The retained tokens.
    support_mass : float
        :math:`Z_S`, the tempered mass of the support (it may underflow to 0.0 for a support far
        out in the tail; ``log_support_mass`` keeps the exact scale).
    log_support_mass : float
        :math:`\\log Z_S \\le 0`, always finite.
    config : dict
        :meth:`SamplingConfig.as_record` of the configuration used.
    """

    token_id: int
    base_logprob: float
    tempered_logprob: float
    behaviour_logprob: float
    support: np.ndarray
    support_mass: float
    log_support_mass: float
    config: dict


def behaviour_logprob(logits, token_id, config):
    r"""Behaviour-policy log-probability of ``token_id`` under ``config`` (``-inf`` if it cannot be sampled).

    .. math::

        \log \pi_\text{beh}(a) = \log\tilde p_a - \log Z_S \quad (a \in S), \qquad -\infty \quad (a \notin S).

    Examples
    --------
    >>> p = np.array([0.35, 0.25, 0.25, 0.15])
    >>> b = behaviour_logprob(np.log(p), 1, SamplingConfig(top_p=0.85))
    >>> round(b.support_mass, 6), round(b.behaviour_logprob, 6), round(b.behaviour_logprob - b.base_logprob, 6)
    (0.85, -1.223775, 0.162519)
    """
    z = _logits_1d(logits)
    token_id = as_int(token_id, "token_id", low=0, high=z.size - 1)
    config = _config(config)
    tempered, keep = _support(z, config)
    # log Z_S, never above 0: from the small excluded mass with log1p when most mass is kept (the full
    # support gives exactly 0), else from a log-sum-exp of the kept log-probabilities.
    excluded = float(np.exp(tempered[~keep]).sum())
    if excluded < 0.5:
        log_mass = math.log1p(-excluded)
    else:
        kept = tempered[keep]
        log_mass = min(0.0, float(kept.max() + np.log(np.exp(kept - kept.max()).sum())))
    # tempered - log Z_S with log Z_S <= 0 is never below the tempered value (rounding is monotone);
    # the clamp keeps it a log-probability where two roundings meet, and one kept token is certain.
    if not keep[token_id]:
        behaviour = -math.inf
    elif np.count_nonzero(keep) == 1:
        behaviour = 0.0
    else:
        behaviour = min(0.0, float(tempered[token_id] - log_mass))
    return BehaviourLogprob(token_id=token_id, base_logprob=float(stable_log_softmax(z)[token_id]),
                            tempered_logprob=float(tempered[token_id]), behaviour_logprob=behaviour,
                            support=keep, support_mass=float(math.exp(log_mass)), log_support_mass=float(log_mass),
                            config=config.as_record())


def truncation_log_correction(support_mass):
    r"""How much larger a kept token's log-probability is after renormalising onto a support of mass
    :math:`Z_S`: :math:`-\log Z_S \ge 0`.

    Examples
    --------
    >>> round(truncation_log_correction(0.85), 6)
    0.162519
    """
    mass = as_float(support_mass, "support_mass", low=0.0, high=1.0, low_open=True)
    return -math.log(mass)


def sequence_ratio_error(support_mass, positions):
    r"""Multiplicative error :math:`Z_S^{-n}` of an n-position probability ratio that uses base instead
    of behaviour log-probabilities at every position (same support mass each time); ``inf`` when the
    factor exceeds the largest float64.

    Examples
    --------
    >>> round(sequence_ratio_error(0.85, 4), 6)
    1.915686
    """
    mass = as_float(support_mass, "support_mass", low=0.0, high=1.0, low_open=True)
    positions = as_int(positions, "positions", low=0)
    try:
        return math.exp(-positions * math.log(mass))
    except OverflowError:  # the true factor exceeds the largest float64
        return math.inf
