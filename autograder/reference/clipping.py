r"""Reference solution of exercise 29 (``module6_further``): clipping and gating beyond the symmetric PPO clip.

Every token :math:`t` has the log-probability ``logp_new`` of the policy being trained (the one the gradient
flows into), ``logp_old`` of the policy the ratio is taken against, and an advantage :math:`A_t`. With
:math:`r_t = \exp(\text{logp\_new}_t - \text{logp\_old}_t)`, each rule gives a per-token loss :math:`L_t` (to be
minimised) and its derivative :math:`g_t = \partial L_t / \partial\,\text{logp\_new}_t` (a token's loss depends on its
own log-probability only; :math:`\partial r_t/\partial\,\text{logp\_new}_t = r_t`):

==============================  =====================================================================
function                        rule
==============================  =====================================================================
:func:`ppo_clip_loss`           PPO's pessimistic clip with separate ``eps_low``/``eps_high`` ("clip-higher"),
                                optionally the dual clip for negative advantages (verl, OpenRLHF)
:func:`trl_delta_loss`          TRL's two-sided clip: the unclipped ratio capped at ``delta``
:func:`cispo_loss`              CISPO: a clipped, detached importance weight times :math:`A\,\log\pi`
:func:`stale_sequence_mask`     TRL's off-policy sequence mask (DeepSeek-V3.2): drop a negative-advantage
                                response whose sampler drifted too far
==============================  =====================================================================

The three loss functions return ``{"loss": L, "grad": g, "clipped": c}`` (float64, float64 and bool arrays of
the inputs' shape). ``clipped`` marks the tokens where the rule replaced :math:`r_t` by a bound: for the
PPO-style rules exactly the tokens whose loss is not :math:`-A_t r_t` (never a token with :math:`A_t = 0`), which
are exactly the tokens with :math:`A_t \ne 0` and zero gradient; for CISPO the tokens whose weight differs from
:math:`r_t`, whatever the advantage (their gradient is kept, capped). A ratio exactly on a bound counts as
inside (as ``torch.clamp`` passes the gradient there); the losses have kinks at the bounds, so no check
differentiates there.

Upstream (read in the releases named):

* verl==0.9.1, ``verl/trainer/ppo/core_algos.py``, ``compute_policy_loss_vanilla`` (``loss_mode="vanilla"``,
  the default of ``PolicyLossConfig`` in ``verl/workers/config/actor.py``): ``pg_losses1 = -A * ratio``,
  ``pg_losses2 = -A * clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)``, ``clip_pg_losses1 =
  maximum(pg_losses1, pg_losses2)``, ``pg_losses3 = -A * clip_ratio_c``, and for ``A < 0``
  ``min(pg_losses3, clip_pg_losses1)``: the dual clip is always on (``ActorConfig.clip_ratio_c = 3.0``, asserted
  ``> 1``). The log-ratio is clamped to [-20, 20] before ``exp`` (no effect on the inputs graded here).
* openrlhf==0.11.2, ``openrlhf/models/loss.py``, ``PolicyLoss.forward``: ``surr1 = ratio * A``, ``surr2 =
  ratio.clamp(1 - clip_eps_low, 1 + clip_eps_high) * A``, ``-min(surr1, surr2)``, and with ``dual_clip`` (None
  by default, asserted ``> 1``) ``-max(min(surr1, surr2), dual_clip * A)`` where ``A < 0``.
* trl==1.16.0, ``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._compute_loss``: ``coef_2 = clamp(coef_1, 1 -
  epsilon_low, 1 + epsilon_high)``; with ``args.delta`` set, ``coef_1 = clamp(coef_1, max=delta)``; the loss is
  ``-min(coef_1 * A, coef_2 * A)``. With ``loss_type="cispo"``: ``-clamp(coef_1, max=epsilon_high).detach() * A
  * per_token_logps`` (``epsilon_high`` is the cap itself). ``get_off_policy_mask``: ``kl = sampling_logps -
  per_token_logps.detach()``, averaged over the response (count clamped to 1), kept if ``A >= 0`` or
  ``kl <= off_policy_mask_threshold``.
* verl==0.9.1, same file, ``compute_policy_loss_cispo``: ``clamp(ratio, 1 - clip_ratio_low, 1 +
  clip_ratio_high).detach() * A * log_prob``, negated; its clip fraction counts ``ratio != clipped_ratio``.

Bad input raises ``TypeError``/``ValueError`` naming the argument.
"""

from __future__ import annotations

import math

import numpy as np

from autograder.reference._validation import as_float_array, as_response_logprobs, as_response_mask

#: verl's ``ActorConfig.clip_ratio`` (and its low/high) and TRL's ``GRPOConfig.epsilon``: 0.2.
EPS = 0.2


# ----------------------------------------------------------------------------- input checks


def _real(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _tokens(logp_new, logp_old, advantages) -> tuple:
    """``(logp_new, logp_old, advantages)`` as float64 arrays of one shape, log-probabilities <= 0."""
    new = as_float_array(logp_new, "logp_new", min_ndim=1)
    old = as_float_array(logp_old, "logp_old", min_ndim=1)
    adv = as_float_array(advantages, "advantages", min_ndim=1)
    for name, array in (("logp_old", old), ("advantages", adv)):
        if array.shape != new.shape:  # before any arithmetic: NumPy would broadcast [T, 1] against [T]
            raise ValueError(f"{name} must have the shape of logp_new, {new.shape}, got {array.shape}")
    for name, array in (("logp_new", new), ("logp_old", old)):
        if np.any(array > 0.0):
            raise ValueError(f"{name} holds log-probabilities: every value must be <= 0")
    return new, old, adv


def _clip_range(eps_low, eps_high) -> tuple:
    """``(1 - eps_low, 1 + eps_high)`` with ``eps_low`` in [0, 1) and ``eps_high >= 0`` (None: ``eps_low``)."""
    low = _real(eps_low, "eps_low")
    if not 0.0 <= low < 1.0:
        raise ValueError(f"eps_low must lie in [0, 1), got {low}")
    high = low if eps_high is None else _real(eps_high, "eps_high")
    if high < 0.0:
        raise ValueError(f"eps_high must be >= 0 (or None for eps_low), got {high}")
    return 1.0 - low, 1.0 + high


def _ratio(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a ratio beyond float64 is inf: the honest value
        return np.exp(new - old)


def _result(ratio: np.ndarray, effective: np.ndarray, adv: np.ndarray) -> dict:
    r"""The PPO-style result from the effective ratio :math:`e_t` the loss uses: :math:`L = -A e`, and
    :math:`g = -A r` where :math:`e = r` (the loss follows the ratio), else 0 (a bound: a constant)."""
    live = adv != 0.0
    follows = effective == ratio
    with np.errstate(invalid="ignore"):
        loss = np.where(live, -adv * effective, 0.0)
        grad = np.where(live & follows, -adv * ratio, 0.0)
    return {"loss": loss, "grad": grad, "clipped": live & ~follows}


# ----------------------------------------------------------------------------- the rules


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=EPS, eps_high=None, dual_clip=None):
    r"""PPO's clipped loss per token, with separate clip ranges and an optional dual clip.

    .. math::

        L_t = -\min\big(A_t r_t,\; A_t\,\mathrm{clip}(r_t, 1 - \varepsilon_{low}, 1 + \varepsilon_{high})\big),

    that is :math:`L = -A\min(r, 1 + \varepsilon_{high})` for :math:`A > 0` and :math:`L = -A\max(r, 1 - \varepsilon_{low})`
    for :math:`A < 0`: the clip removes the incentive to move further only in the direction the advantage
    pushes. With ``dual_clip`` :math:`c > 1`, a negative-advantage token's loss is also capped,
    :math:`L = \min(L, -c A)`, i.e. :math:`-A\min(\max(r, 1 - \varepsilon_{low}), c)`.

    Gradient :math:`g = -A r` where the loss follows the ratio; 0 where it is a bound (``clipped``):
    :math:`A > 0, r > 1 + \varepsilon_{high}`; :math:`A < 0, r < 1 - \varepsilon_{low}`; with the dual clip also
    :math:`A < 0, r > c`. Without it, a negative-advantage token's gradient :math:`|A| r` grows without bound.

    Parameters
    ----------
    logp_new, logp_old : array_like of float, one shape (at least 1-D), finite and <= 0
    advantages : array_like of float, the same shape, finite
    eps_low : float in [0, 1)
    eps_high : float >= 0, or None for ``eps_low`` (TRL's ``epsilon_high`` and verl's ``clip_ratio_high``
        default to the lower value)
    dual_clip : float > 1, or None (no dual clip)

    Returns
    -------
    dict
        ``{"loss": float64, "grad": float64, "clipped": bool}``, each of the inputs' shape.

    Examples
    --------
    >>> lp_old = np.log([0.1, 0.1, 0.1, 0.1])
    >>> out = ppo_clip_loss(np.log([0.6, 0.6, 0.02, 0.6]), lp_old, [1.0, -1.0, -1.0, 0.0])
    >>> out["grad"].round(12), out["clipped"]
    (array([-0.,  6.,  0.,  0.]), array([ True, False,  True, False]))
    >>> ppo_clip_loss(np.log([0.6]), np.log([0.1]), [-1.0], dual_clip=3.0)["loss"]
    array([3.])
    """
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    low, high = _clip_range(eps_low, eps_high)
    c = None if dual_clip is None else _real(dual_clip, "dual_clip")
    if c is not None and not c > 1.0:
        raise ValueError(f"dual_clip must be > 1 (verl and OpenRLHF assert it), got {c}")
    ratio = _ratio(new, old)
    negative = np.minimum(np.maximum(ratio, low), np.inf if c is None else c)
    effective = np.where(adv > 0.0, np.minimum(ratio, high), np.where(adv < 0.0, negative, ratio))
    return _result(ratio, effective, adv)


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=EPS, eps_high=None):
    r"""TRL's two-sided clip: the unclipped ratio is capped at ``delta`` before PPO's pessimistic minimum.

    .. math::

        L_t = -\min\big(\min(r_t, \delta)\,A_t,\; \mathrm{clip}(r_t, 1 - \varepsilon_{low}, 1 + \varepsilon_{high})\,A_t\big).

    For :math:`A < 0` and :math:`\delta \ge 1 + \varepsilon_{high}` this is the dual clip with :math:`c = \delta`; for
    :math:`A > 0` it changes nothing then. With :math:`\delta < 1 + \varepsilon_{high}` (TRL does not forbid it;
    its documentation recommends :math:`\delta > 1 + \varepsilon`), a positive-advantage token loses its
    gradient from :math:`r > \delta` on, and a negative-advantage one only beyond :math:`1 + \varepsilon_{high}`.

    ``delta`` must be a finite number > 1; the rest as in :func:`ppo_clip_loss`, and so is the result.

    Examples
    --------
    >>> out = trl_delta_loss(np.log([0.25, 0.25, 0.6]), np.log([0.2, 0.2, 0.1]), [1.0, -1.0, -1.0], delta=1.2,
    ...                      eps_high=0.28)
    >>> out["loss"].round(12), out["clipped"]
    (array([-1.2 ,  1.25,  1.28]), array([ True, False,  True]))
    """
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    low, high = _clip_range(eps_low, eps_high)
    cap = _real(delta, "delta")
    if not cap > 1.0:
        raise ValueError(f"delta must be > 1 (TRL recommends delta > 1 + epsilon), got {cap}")
    ratio = _ratio(new, old)
    capped, clipped = np.minimum(ratio, cap), np.clip(ratio, low, high)
    effective = np.where(adv > 0.0, np.minimum(capped, clipped), np.where(adv < 0.0, np.maximum(capped, clipped),
                                                                          ratio))
    return _result(ratio, effective, adv)


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    r"""CISPO: the importance weight is clipped and detached, and multiplies :math:`A\,\log\pi_{new}`.

    .. math::

        w_t = \mathrm{clip}(r_t, w_{low}, w_{high}),\qquad L_t = -\,\mathrm{sg}(w_t)\,A_t\,\text{logp\_new}_t,
        \qquad g_t = -w_t A_t.

    Every token keeps a gradient (unless :math:`A_t = 0`); a clipped token's is capped at the bound's weight,
    never zeroed. ``clipped`` is :math:`w_t \ne r_t`, whatever the advantage's sign. TRL's form is
    ``weight_high = epsilon_high`` (the cap itself, 5.0 recommended) with no lower bound (``weight_low=None``);
    verl's is ``weight_low = 1 - clip_ratio_low``, ``weight_high = 1 + clip_ratio_high``.

    Parameters
    ----------
    logp_new, logp_old, advantages : as in :func:`ppo_clip_loss`
    weight_high : float > 0
    weight_low : float in [0, weight_high], or None (no lower bound)

    Examples
    --------
    >>> out = cispo_loss(np.log([0.6, 0.02]), np.log([0.1, 0.1]), [1.0, -1.0], weight_high=5.0)
    >>> out["grad"].round(12), out["clipped"]
    (array([-5. ,  0.2]), array([ True, False]))
    >>> cispo_loss(np.log([0.02]), np.log([0.1]), [-1.0], 1.28, 0.8)["grad"]
    array([0.8])
    """
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    high = _real(weight_high, "weight_high")
    if not high > 0.0:
        raise ValueError(f"weight_high must be > 0, got {high}")
    low = 0.0 if weight_low is None else _real(weight_low, "weight_low")
    if not 0.0 <= low <= high:
        raise ValueError(f"weight_low must lie in [0, weight_high] = [0, {high}], got {low}")
    ratio = _ratio(new, old)
    weight = np.clip(ratio, low, high)
    return {"loss": -weight * adv * new, "grad": -weight * adv, "clipped": weight != ratio}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    r"""TRL's off-policy sequence mask: which responses keep their loss when the sampler may be stale.

    For response :math:`i` with :math:`n_i` tokens (``mask`` True), the sampler's drift is the mean of the
    sampled tokens' log-ratios

    .. math::

        \mathrm{kl}_i = \frac{1}{\max(n_i, 1)}\sum_t \big(\text{logp\_sampler}_{i,t} - \text{logp\_new}_{i,t}\big),

    a sample estimate of :math:`D_{\mathrm{KL}}(\pi_{sampler}\,\|\,\pi_{new})` (0 for an empty response), and the
    response is kept iff :math:`A_i \ge 0` or :math:`\mathrm{kl}_i \le` ``threshold``. A dropped response's tokens
    all get zero gradient, whatever the clipping rule; a response with a non-negative advantage is never
    dropped.

    Parameters
    ----------
    logp_new, logp_sampler : array_like of float, shape [B, L]; finite and <= 0 on response tokens
        (padding may hold anything, NaN too)
    advantages : array_like of float, shape [B] (one per response), finite
    mask : array_like of bool or 0/1, shape [B, L], B >= 1, L >= 1
    threshold : float >= 0

    Returns
    -------
    dict
        ``{"kl": float64 [B], "keep": bool [B]}``.

    Examples
    --------
    >>> new = np.log([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    >>> sampler = np.log([[0.9, 0.9], [0.9, 0.9], [0.5, 0.5]])
    >>> out = stale_sequence_mask(new, sampler, [1.0, -1.0, -1.0], [[1, 1], [1, 1], [1, 0]], threshold=0.5)
    >>> out["kl"].round(6), out["keep"]
    (array([0.587787, 0.587787, 0.      ]), array([ True, False,  True]))
    """
    mask = as_response_mask(mask)
    arrays = {name: as_response_logprobs(value, name, mask)
              for name, value in (("logp_new", logp_new), ("logp_sampler", logp_sampler))}
    adv = as_float_array(advantages, "advantages", ndim=1)
    if adv.shape != (mask.shape[0],):
        raise ValueError(f"advantages must have one value per response, shape ({mask.shape[0]},), got {adv.shape}")
    limit = _real(threshold, "threshold")
    if limit < 0.0:
        raise ValueError(f"threshold must be >= 0, got {limit}")
    drift = np.where(mask, arrays["logp_sampler"] - arrays["logp_new"], 0.0)
    kl = drift.sum(axis=1) / np.maximum(mask.sum(axis=1), 1)
    return {"kl": kl, "keep": (adv >= 0.0) | (kl <= limit)}
