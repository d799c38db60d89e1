r"""Reference solution of exercise 30, off-policy by design: asynchronous rollouts (``module6_further``).

An asynchronous trainer is :math:`k` versions ahead of the sampler that drew its data. Three policies
meet in the decoupled PPO objective (Hilton et al. 2021, "Batch size-invariance for policy optimization",
arXiv 2110.00641; AReaL, arXiv 2505.24298):

* the **behaviour** policy :math:`\pi_{\text{behav}}`, which sampled the tokens (the engine's log-probs);
* the **proximal** policy :math:`\pi_{\text{prox}}`, which anchors the clip (the trainer's log-probs of
  the same tokens under its newest weights, recomputed before the update);
* the **current** policy :math:`\pi_\theta`, being optimised.

.. math::

    J(\theta) = \mathbb E_{y\sim\pi_{\text{behav}}}\Big[\,\bar w\;
        \min\big(r A,\ \mathrm{clip}(r, 1-\varepsilon_{\text{low}}, 1+\varepsilon_{\text{high}})\,A\big)\Big],
    \qquad w = \frac{\pi_{\text{prox}}}{\pi_{\text{behav}}},\quad \bar w = \min(w, c),\quad
    r = \frac{\pi_\theta}{\pi_{\text{prox}}}.

=================================  ===================================================================
function                           what it returns
=================================  ===================================================================
:func:`staleness_kept`             which samples a staleness limit keeps (TRL's ``max_staleness``,
                                   verl's ``max_off_policy_threshold``)
:func:`decoupled_weights`          per token: the behaviour weight, its truncation, the PPO ratio, the
                                   surrogate and its derivative with respect to the current log-prob
:func:`surrogate_expectation`      for one categorical step, the exact expectation over the behaviour
                                   policy of that surrogate and its gradient with respect to the logits
:func:`routed_logprobs`            a toy mixture-of-experts layer: the engine's, the trainer's and the
                                   trainer's log-probs with the engine's routing replayed
=================================  ===================================================================

Everything is float64; bad input raises ``TypeError``/``ValueError`` naming the argument.

Upstream (read in the releases named):

* trl==1.16.0, ``trl/experimental/async_grpo/async_grpo_trainer.py``, ``RolloutQueueDataset.__iter__``:
  ``staleness = version - sample.model_version``, the sample dropped when ``staleness > max_staleness``
  (``AsyncGRPOConfig.max_staleness``, default 4, ``async_grpo_config.py``); ``AsyncGRPOTrainer.compute_loss``
  takes the ratio against ``old_log_probs``, the sampler's log-probs (two policies, no behaviour weight).
* verl==0.9.1, ``verl/trainer/ppo/v1/replay_buffer.py``, ``ReplayBufferAsync._stale_terminal_keys``: a group is
  dropped when ``global_steps - prompt_global_steps + 1 > max_off_policy_threshold`` (the number of versions
  it spans); ``None`` disables the control, and the constructor asserts an ``int > 0`` otherwise.
* verl==0.9.1, ``verl/trainer/ppo/rollout_corr_helper.py``, ``compute_rollout_correction_weights``:
  ``log_ratio = old_log_prob - rollout_log_prob`` (proximal over behaviour), per token
  ``exp(clamp(log_ratio, -20, 20)).clamp(max=rollout_is_threshold)``, detached; ``core_algos.py``,
  ``compute_policy_loss_vanilla`` multiplies the clipped PPO loss (ratio ``log_prob - old_log_prob``) by it.
* verl==0.9.1, ``verl/utils/megatron/router_replay_patch.py``, ``RouterReplay.get_replay_topk``: the replayed
  expert indices are used with the current router's scores (``scores.gather(1, indices)``), so only the
  choice of experts is replayed, never the gate weights.
"""

from __future__ import annotations

import math

import numpy as np

from autograder.reference._validation import (as_clip_epsilon, as_float_array, as_int, as_int_array,
                                              as_response_logprobs, as_response_mask)
from autograder.reference.softmax import stable_log_softmax

#: The staleness rules of :func:`staleness_kept`: TRL's ``max_staleness`` and verl's ``max_off_policy_threshold``.
STALENESS_RULES = ("trl", "verl")
#: PPO's clipping range on each side (TRL's ``epsilon``, verl's ``clip_ratio``: 0.2 by default).
DEFAULT_EPS = 0.2


# ----------------------------------------------------------------------------- staleness


def staleness_kept(sample_versions, trainer_version, limit, rule):
    r"""Which samples a staleness limit keeps.

    A sample drawn while the sampler held policy version :math:`v_i` reaches a trainer at version
    :math:`v`: its **lag** is :math:`k_i = v - v_i \ge 0` (weight updates published since it was started).

    * ``"trl"`` (trl==1.16.0 ``AsyncGRPOConfig.max_staleness``): kept iff :math:`k_i \le` ``limit``;
      ``limit`` is an int :math:`\ge 0` (0 keeps only samples of the current version).
    * ``"verl"`` (verl==0.9.1 ``max_off_policy_threshold``, the number of versions a sample may span,
      its own included): kept iff :math:`k_i + 1 \le` ``limit``; ``limit`` is an int :math:`\ge 1`, or
      ``None`` (no control: every sample kept).

    Parameters
    ----------
    sample_versions : array_like of int, shape [N]
        Non-negative versions, none above ``trainer_version``.
    trainer_version : int >= 0
    limit : int or None
    rule : ``"trl"`` or ``"verl"``

    Returns
    -------
    numpy.ndarray of bool, shape [N]

    Examples
    --------
    >>> staleness_kept([10, 8, 6, 5], 10, 4, "trl").tolist()
    [True, True, True, False]
    >>> staleness_kept([10, 8, 6, 5], 10, 4, "verl").tolist()
    [True, True, False, False]
    """
    versions = as_int_array(sample_versions, "sample_versions", ndim=1)
    trainer_version = as_int(trainer_version, "trainer_version", low=0)
    if np.any(versions < 0):
        raise ValueError("sample_versions must be non-negative versions")
    if np.any(versions > trainer_version):
        raise ValueError("sample_versions must not exceed trainer_version (no sample comes from a later policy)")
    if not isinstance(rule, str):
        raise TypeError(f"rule must be one of {list(STALENESS_RULES)}, got {type(rule).__name__}")
    if rule not in STALENESS_RULES:
        raise ValueError(f"rule must be one of {list(STALENESS_RULES)}, got an unknown name")
    lag = trainer_version - versions
    if rule == "trl":
        if limit is None:
            raise ValueError("limit must be an int >= 0 for rule 'trl' (max_staleness has no 'off' value)")
        return lag <= as_int(limit, "limit", low=0)
    if limit is None:  # verl's max_off_policy_threshold: null disables the control
        return np.ones(versions.shape, dtype=bool)
    return lag + 1 <= as_int(limit, "limit", low=1)


# ----------------------------------------------------------------------------- per-token weights


def _cap(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"cap must be a positive number or None, got {type(value).__name__}")
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"cap must be a positive finite number or None, got {value}")
    return value


def _clip_terms(log_r: np.ndarray, advantages: np.ndarray, eps_low: float, eps_high: float) -> tuple:
    """``(clipped ratio, active)``: ``clip(r, 1 - eps_low, 1 + eps_high)`` and where the unclipped term
    ``r A`` is the smaller of the two (it then carries the gradient): ``r A <= clip(r) A``, decided in log
    space so that it holds for ratios beyond float64 too."""
    low, high = 1.0 - eps_low, 1.0 + eps_high
    with np.errstate(over="ignore", divide="ignore"):
        clipped = np.clip(np.exp(log_r), low, high)
        log_low = math.log(low) if low > 0.0 else -math.inf
    active = np.where(advantages > 0, log_r <= math.log(high),
                      np.where(advantages < 0, log_r >= log_low, True))
    return clipped, active


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=DEFAULT_EPS,
                      eps_high=DEFAULT_EPS, cap=None):
    r"""Per-token factors of the decoupled PPO objective.

    On response tokens (``mask`` True), with :math:`A` the row's advantage:

    * ``"weight"``: :math:`w = \pi_{\text{prox}}/\pi_{\text{behav}} = e^{\log\pi_{\text{prox}} - \log\pi_{\text{behav}}}`;
    * ``"truncated"``: :math:`\bar w = \min(w, c)` (``cap`` :math:`c`; ``None``: :math:`\bar w = w`);
    * ``"ratio"``: :math:`r = \pi_\theta/\pi_{\text{prox}}`;
    * ``"surrogate"``: :math:`\bar w\,\min\big(rA,\ \mathrm{clip}(r, 1-\varepsilon_{\text{low}}, 1+\varepsilon_{\text{high}})A\big)`;
    * ``"gradient"``: its derivative with respect to :math:`\log\pi_\theta` of the token, :math:`\bar w\,r\,A`
      where :math:`rA \le \mathrm{clip}(r)A` (the unclipped term is the minimum), else 0 (the weights are
      constants: verl and AReaL detach them, and :math:`\log\pi_{\text{prox}}` is data).

    Every key is ``0.0`` at padding. With :math:`\pi_{\text{prox}} = \pi_{\text{behav}}` the weight is 1
    and this is the standard PPO objective; with all three equal (:math:`k = 0`, no mismatch), the
    gradient is :math:`A`, the policy gradient's.

    Parameters
    ----------
    logp_behaviour, logp_proximal, logp_current : array_like of float, shape [B, L]
        Log-probabilities of the sampled tokens (``<= 0`` and finite on response tokens; padding may hold
        anything, NaN too).
    advantages : array_like of float, shape [B]
        One advantage per response (GRPO's), finite.
    mask : array_like of bool or 0/1, shape [B, L], B >= 1, L >= 1
    eps_low, eps_high : float in [0, 1)
    cap : positive float or None

    Returns
    -------
    dict
        ``{"weight", "truncated", "ratio", "surrogate", "gradient"}``, each float64 [B, L].

    Examples
    --------
    >>> out = decoupled_weights([[-1.5, -1.0]], [[-1.0, -1.0]], [[-0.5, -1.2]], [2.0], [[1, 1]], cap=1.5)
    >>> out["weight"].round(6), out["truncated"].round(6), out["ratio"].round(6)
    (array([[1.648721, 1.      ]]), array([[1.5, 1. ]]), array([[1.648721, 0.818731]]))
    >>> out["surrogate"].round(6), out["gradient"].round(6)
    (array([[3.6     , 1.637462]]), array([[0.      , 1.637462]]))
    """
    mask = as_response_mask(mask)
    named = (("logp_behaviour", logp_behaviour), ("logp_proximal", logp_proximal), ("logp_current", logp_current))
    logs = {name: as_response_logprobs(value, name, mask) for name, value in named}
    advantages = as_float_array(advantages, "advantages", ndim=1)
    if advantages.shape != (mask.shape[0],):
        raise ValueError(f"advantages must have one value per response, shape ({mask.shape[0]},), "
                         f"got {advantages.shape}")
    eps_low, eps_high = as_clip_epsilon(eps_low, "eps_low"), as_clip_epsilon(eps_high, "eps_high")
    cap = _cap(cap)

    log_w = np.where(mask, logs["logp_proximal"] - logs["logp_behaviour"], 0.0)
    log_r = np.where(mask, logs["logp_current"] - logs["logp_proximal"], 0.0)
    log_wbar = log_w if cap is None else np.minimum(log_w, math.log(cap))
    a = np.broadcast_to(advantages[:, None], mask.shape)
    clipped, active = _clip_terms(log_r, a, eps_low, eps_high)
    with np.errstate(over="ignore"):
        weight, truncated, ratio = np.exp(log_w), np.exp(log_wbar), np.exp(log_r)
        surrogate = truncated * np.minimum(ratio * a, clipped * a)
        gradient = np.where(active, truncated * ratio * a, 0.0)
    return {
        "weight": np.where(mask, weight, 0.0),
        "truncated": np.where(mask, truncated, 0.0),
        "ratio": np.where(mask, ratio, 0.0),
        "surrogate": np.where(mask, surrogate, 0.0),
        "gradient": np.where(mask, gradient, 0.0),
    }


# ----------------------------------------------------------------------------- one categorical step, exactly


def _logits(value, name: str, like: tuple | None = None) -> np.ndarray:
    array = as_float_array(value, name, ndim=1, logits=True)
    if like is not None and array.shape != like:
        raise ValueError(f"{name} must have the shape of theta, {like}, got {array.shape}")
    return array


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=DEFAULT_EPS, eps_high=DEFAULT_EPS,
                          cap=None):
    r"""The decoupled surrogate's exact expectation over the behaviour policy, and its gradient.

    One step over :math:`V` tokens: :math:`q = \mathrm{softmax}(\theta)` (current), :math:`p =
    \mathrm{softmax}(\text{proximal})`, :math:`b = \mathrm{softmax}(\text{behaviour})`, :math:`A(a)` the
    advantage of token :math:`a`. With :math:`w = p/b`, :math:`\bar w = \min(w, c)`, :math:`r = q/p`:

    .. math::

        J = \sum_a b(a)\,\bar w(a)\,\min\big(r(a)A(a),\ \mathrm{clip}(r(a))A(a)\big), \qquad
        \nabla_\theta J = \sum_a b(a)\,\bar w(a)\,r(a)A(a)\,[\text{unclipped}](a)\,(e_a - q).

    :math:`b\bar w = \min(p, c\,b)` and :math:`b\bar w r = \min(p, c\,b)\,q/p` are formed in log space, so a
    token the behaviour policy almost never draws (:math:`b` underflows, :math:`w` overflows) adds what it
    should. Without truncation the behaviour policy cancels (:math:`b w = p`); at :math:`\theta` = proximal
    the gradient is the on-policy policy gradient :math:`\sum_a q(a)A(a)(e_a - q)`.

    Parameters
    ----------
    theta, proximal, behaviour : array_like of float, shape [V]
        Logits, finite.
    advantages : array_like of float, shape [V]
    eps_low, eps_high, cap : as in :func:`decoupled_weights`

    Returns
    -------
    dict
        ``{"value": float, "gradient": float64 [V]}``.

    Examples
    --------
    >>> out = surrogate_expectation([0.0, 0.0], [0.0, 0.0], [1.0, -1.0], [1.0, -1.0])
    >>> round(out["value"], 12), out["gradient"].round(6)
    (0.0, array([ 0.5, -0.5]))
    """
    theta = _logits(theta, "theta")
    proximal = _logits(proximal, "proximal", theta.shape)
    behaviour = _logits(behaviour, "behaviour", theta.shape)
    advantages = as_float_array(advantages, "advantages", ndim=1)
    if advantages.shape != theta.shape:
        raise ValueError(f"advantages must have one value per token, shape {theta.shape}, got {advantages.shape}")
    eps_low, eps_high = as_clip_epsilon(eps_low, "eps_low"), as_clip_epsilon(eps_high, "eps_high")
    cap = _cap(cap)
    lq, lp, lb = (stable_log_softmax(x) for x in (theta, proximal, behaviour))
    log_mass = lp if cap is None else np.minimum(lp, math.log(cap) + lb)  # log(b * min(w, c))
    log_r = lq - lp
    clipped, active = _clip_terms(log_r, advantages, eps_low, eps_high)
    q = np.exp(lq)
    unclipped = np.exp(log_mass + log_r) * advantages  # b w-bar r A, never forming r or w alone
    value = float(np.sum(np.minimum(unclipped, np.exp(log_mass) * clipped * advantages)))
    coefficient = np.where(active, unclipped, 0.0)
    return {"value": value, "gradient": coefficient - q * np.sum(coefficient)}


# ----------------------------------------------------------------------------- routing replay


def _top_experts(router: np.ndarray, top_k: int) -> np.ndarray:
    """``[T, top_k]`` indices of the largest router logits of each row (ties: the smaller index first)."""
    return np.argsort(-router, axis=1, kind="stable")[:, :top_k]


def _mixture_logprobs(expert_logits, tokens, chosen, gate_router) -> np.ndarray:
    """Log-prob of each token under the mixture of the ``chosen`` experts, gated by the softmax of
    ``gate_router``'s logits over those experts."""
    rows = np.arange(expert_logits.shape[0])[:, None]
    gates = np.exp(stable_log_softmax(gate_router[rows, chosen], axis=-1))  # [T, k]
    mixed = np.einsum("tk,tkv->tv", gates, expert_logits[rows, chosen])
    return stable_log_softmax(mixed, axis=-1)[np.arange(tokens.size), tokens]


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    r"""A toy mixture-of-experts layer scored by the engine, by the trainer, and by the trainer with the
    engine's routing replayed.

    At position :math:`t` each of :math:`E` experts proposes logits ``expert_logits[t, e]`` over :math:`V`
    tokens; a router with logits :math:`s_t` chooses the ``top_k`` experts :math:`S_t` with the largest
    :math:`s_{t,e}` and gates them with :math:`g_{t,e} = \mathrm{softmax}_{e\in S_t}(s_{t,e})`; the token's
    logits are :math:`z_t = \sum_{e\in S_t} g_{t,e}\,\text{expert\_logits}[t, e]`, its log-prob
    :math:`\log\mathrm{softmax}(z_t)[\text{tokens}[t]]`.

    * ``"engine"``: :math:`S_t` and :math:`g` from ``router_engine``;
    * ``"trainer"``: both from ``router_trainer``;
    * ``"replayed"``: :math:`S_t` from ``router_engine`` (the recorded routing, R3), :math:`g` from
      ``router_trainer`` over those experts (verl's ``get_replay_topk`` gathers the current scores).

    Where the two routers agree up to a constant per row, all three coincide; where they choose the same
    experts, ``"replayed"`` equals ``"trainer"``.

    Parameters
    ----------
    expert_logits : array_like of float, shape [T, E, V], finite
    router_engine, router_trainer : array_like of float, shape [T, E], finite
    tokens : array_like of int, shape [T], each in [0, V)
    top_k : int in [1, E]

    Returns
    -------
    dict
        ``{"engine", "trainer", "replayed"}``, each float64 [T].

    Examples
    --------
    >>> experts = np.log([[[0.5, 0.5], [0.75, 0.25], [0.5, 0.5]]])
    >>> out = routed_logprobs(experts, [[0.0, 1.0, 0.0]], [[1.1, 1.0, 0.0]], [0], 1)
    >>> np.exp([out["engine"], out["trainer"], out["replayed"]]).round(6).ravel()
    array([0.75, 0.5 , 0.75])
    """
    experts = as_float_array(expert_logits, "expert_logits", ndim=3, logits=True)
    n_positions, n_experts, _ = experts.shape
    routers = []
    for name, value in (("router_engine", router_engine), ("router_trainer", router_trainer)):
        router = as_float_array(value, name, ndim=2, logits=True)
        if router.shape != (n_positions, n_experts):
            raise ValueError(f"{name} must have shape [T, E] = {(n_positions, n_experts)}, got {router.shape}")
        routers.append(router)
    tokens = as_int_array(tokens, "tokens", ndim=1)
    if tokens.shape != (n_positions,):
        raise ValueError(f"tokens must have one token per position, shape ({n_positions},), got {tokens.shape}")
    if np.any(tokens < 0) or np.any(tokens >= experts.shape[2]):
        raise ValueError(f"tokens must lie in [0, V) = [0, {experts.shape[2]})")
    top_k = as_int(top_k, "top_k", low=1, high=n_experts)
    engine, trainer = routers
    chosen_engine, chosen_trainer = _top_experts(engine, top_k), _top_experts(trainer, top_k)
    return {
        "engine": _mixture_logprobs(experts, tokens, chosen_engine, engine),
        "trainer": _mixture_logprobs(experts, tokens, chosen_trainer, trainer),
        "replayed": _mixture_logprobs(experts, tokens, chosen_engine, trainer),
    }
