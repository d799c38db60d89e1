r"""Reference solutions of exercise 27 (``module6_further``): sequence-level importance ratios as deployed.

=================================  ====================================================================
function                           what it computes
=================================  ====================================================================
:func:`sequence_ratios`            token ratios, their product, GSPO's length-normalised (geometric)
                                   ratio, GSPO's clipped ratio and verl's clamped sequence weight
:func:`kept_mask`                  which response tokens keep their gradient under TRL's and verl's
                                   masking / rejection rules
:func:`first_dropped_length`       the shortest response, every token biased alike, that a rule drops
=================================  ====================================================================

Conventions: ``logp_new`` are the log-probabilities of the policy being trained (the trainer's, in the
sampler-trainer setting), ``logp_old`` those of the policy that sampled (the engine's); the per-token
log-ratio is ``d_t = logp_new - logp_old`` on response tokens (``mask`` True), padding ignored whatever it
holds. Everything is float64; bad input raises ``TypeError``/``ValueError`` naming the argument.

Upstream (read in the releases named):

* trl==1.16.0, ``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._compute_loss``: with
  ``importance_sampling_level="sequence"`` the log-weight is ``(log_ratio * mask).sum(-1) /
  mask.sum(-1).clamp(min=1.0)`` (GSPO's geometric mean; an empty row gets ratio 1).
* trl==1.16.0, same file, ``GRPOTrainer._generate_and_score_completions``: the vLLM correction sums the
  per-token differences for the ``sequence_*`` modes (no length normalisation, no clamp), exponentiates, and
  for ``*_mask`` modes zeroes ratios ``< clip_min`` or ``> clip_max`` (a missing bound is no bound).
* verl==0.9.1, ``verl/trainer/ppo/rollout_corr_helper.py``: ``compute_rollout_correction_weights`` clamps the
  sequence log-weight to ``[-SAFETY_BOUND, SAFETY_BOUND] = [-20, 20]`` before ``exp``;
  ``compute_rollout_rejection_mask`` clamps each token's log-ratio to ``[-20, 20]``, takes ``k1 = -log_ratio``
  and keeps a sequence when ``log(lower) <= stat <= log(upper)`` (``seq_sum_k1``: the sum of k1,
  ``seq_mean_k1``: its mean); ``_parse_rollout_rs_thresholds`` sets ``lower = 1 / upper`` when one number is given.
"""

from __future__ import annotations

import math

import numpy as np

from autograder.reference._validation import (as_clip_epsilon, as_float_array, as_int, as_response_logprobs,
                                              as_response_mask)

#: The rules of :func:`kept_mask` (TRL's ``vllm_importance_sampling_mode`` masking modes, verl's ``rollout_rs``).
MASK_RULES = ("token_mask", "sequence_mask", "seq_sum_k1", "seq_mean_k1")
#: verl's ``SAFETY_BOUND``: log-ratios (per token, or a sequence's sum) are clamped to +-20 before ``exp``.
SAFETY_BOUND = 20.0
#: GSPO's clipping ranges in the paper's experiments (arXiv 2507.18071: left 3e-4, right 4e-4).
GSPO_EPS_LOW, GSPO_EPS_HIGH = 3e-4, 4e-4
#: The longest response :func:`first_dropped_length` considers unless told otherwise.
DEFAULT_MAX_LEN = 100_000


def _log_ratios(logp_new, logp_old, mask) -> tuple:
    """``(d, mask)``: the per-token log-ratio (0 at padding) and the boolean mask, after every check."""
    mask = as_response_mask(mask)
    arrays = {name: as_response_logprobs(value, name, mask)
              for name, value in (("logp_new", logp_new), ("logp_old", logp_old))}
    return np.where(mask, arrays["logp_new"] - arrays["logp_old"], 0.0), mask


def sequence_ratios(logp_new, logp_old, mask, eps_low=GSPO_EPS_LOW, eps_high=GSPO_EPS_HIGH):
    r"""Per-token ratios and four per-sequence ratios built from them.

    With :math:`d_t = \log\pi_{new}(y_t) - \log\pi_{old}(y_t)` over the :math:`n` response tokens of a row and
    :math:`S = \sum_t d_t`:

    * ``"token"``: :math:`r_t = e^{d_t}` on response tokens, ``0.0`` at padding (PPO/GRPO's ratios);
    * ``"product"``: :math:`\prod_t r_t = e^{S}`, the ratio of sequence probabilities (TRL's vLLM
      ``sequence_*`` correction), ``inf`` or ``0.0`` when :math:`e^S` leaves float64;
    * ``"geometric"``: GSPO's :math:`s = (\pi_{new}(y)/\pi_{old}(y))^{1/n} = e^{S/n}`, formed in log space so
      that it never overflows when :math:`e^S` would; ``1.0`` for a row without response tokens (TRL's
      ``mask.sum(-1).clamp(min=1.0)``);
    * ``"gspo_clipped"``: :math:`\mathrm{clip}(s, 1 - \varepsilon_{low}, 1 + \varepsilon_{high})`, the
      sequence ratio clipped once (never the token ratios);
    * ``"verl_sequence"``: :math:`e^{\mathrm{clip}(S, -20, 20)}`, verl's sequence IS weight before its
      truncation (``compute_rollout_correction_weights``, ``rollout_is="sequence"``).

    Parameters
    ----------
    logp_new, logp_old : array_like of float, shape [B, L]
        Log-probabilities (``<= 0`` and finite on response tokens; padding may hold anything, NaN too).
    mask : array_like of bool or 0/1, shape [B, L], B >= 1, L >= 1
    eps_low, eps_high : float in [0, 1)
        GSPO's clipping ranges (the paper's 3e-4 and 4e-4 by default).

    Returns
    -------
    dict
        ``{"token": [B, L], "product": [B], "geometric": [B], "gspo_clipped": [B], "verl_sequence": [B]}``.

    Examples
    --------
    >>> out = sequence_ratios([[-1.0, -2.0, 0.0]], [[-1.5, -1.0, -7.0]], [[1, 1, 0]])
    >>> out["token"].round(6), out["product"].round(6), out["geometric"].round(6)
    (array([[1.648721, 0.367879, 0.      ]]), array([0.606531]), array([0.778801]))
    >>> out["gspo_clipped"], out["verl_sequence"].round(6)
    (array([0.9997]), array([0.606531]))
    """
    d, mask = _log_ratios(logp_new, logp_old, mask)
    eps_low, eps_high = as_clip_epsilon(eps_low, "eps_low"), as_clip_epsilon(eps_high, "eps_high")
    total = d.sum(axis=1)
    counts = mask.sum(axis=1)
    log_geometric = total / np.maximum(counts, 1)
    with np.errstate(over="ignore"):  # e^S beyond float64 is inf: the honest product
        token = np.where(mask, np.exp(d), 0.0)
        product = np.exp(total)
    geometric = np.exp(log_geometric)
    return {
        "token": token,
        "product": product,
        "geometric": geometric,
        "gspo_clipped": np.clip(geometric, 1.0 - eps_low, 1.0 + eps_high),
        "verl_sequence": np.exp(np.clip(total, -SAFETY_BOUND, SAFETY_BOUND)),
    }


def _bound(value, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a positive number or None, got {type(value).__name__}")
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):  # NaN fails too
        raise ValueError(f"{name} must be a positive finite number or None, got {value}")
    return value


def _rule_bounds(rule, low, high) -> tuple:
    """``(rule, low, high)`` checked; verl's k1 rules need ``high`` and default ``low`` to ``1 / high``."""
    if not isinstance(rule, str) or rule not in MASK_RULES:
        raise ValueError(f"rule must be one of {MASK_RULES}, got {rule!r}")
    low, high = _bound(low, "low"), _bound(high, "high")
    if rule.endswith("_k1"):
        if high is None:
            raise ValueError(f"rule {rule!r} needs high (verl's rollout_rs_threshold has no default)")
        if low is None:
            low = 1.0 / high
    if low is not None and high is not None and low > high:
        raise ValueError(f"low must not exceed high, got low = {low} and high = {high}")
    return rule, low, high


def _inside(value: np.ndarray, low: float | None, high: float | None) -> np.ndarray:
    """``low <= value <= high`` with a missing bound no bound: TRL masks ``< low`` and ``> high`` only."""
    keep = np.ones(np.shape(value), dtype=bool)
    if low is not None:
        keep &= value >= low
    if high is not None:
        keep &= value <= high
    return keep


def kept_mask(logp_new, logp_old, mask, rule, low=None, high=None):
    r"""Which response tokens keep a nonzero weight under one masking / rejection rule.

    With :math:`d_t` the per-token log-ratio and :math:`n` the row's response length:

    * ``"token_mask"`` (TRL ``vllm_importance_sampling_mode="token_mask"``): token :math:`t` is kept iff
      :math:`\mathrm{low} \le e^{d_t} \le \mathrm{high}`;
    * ``"sequence_mask"`` (TRL's default mode): every token of a row is kept iff
      :math:`\mathrm{low} \le e^{\sum_t d_t} \le \mathrm{high}` (the unnormalised product, no clamp);
    * ``"seq_sum_k1"`` (verl ``rollout_rs``): with :math:`c_t = \mathrm{clip}(d_t, -20, 20)` and
      :math:`k = -\sum_t c_t`, a row is kept iff :math:`\log\mathrm{low} \le k \le \log\mathrm{high}`;
    * ``"seq_mean_k1"`` (verl's geometric rule): the same with :math:`k = -\frac1n\sum_t c_t`.

    For TRL's rules a bound given as ``None`` is no bound (TRL's ``vllm_importance_sampling_clip_min``
    defaults to ``None``, ``clip_max`` to 3.0); verl's rules need ``high`` and take ``low = 1 / high`` when
    ``low`` is ``None``. Bounds are inclusive (a ratio equal to a bound is kept). Padding is never kept.

    Parameters
    ----------
    logp_new, logp_old, mask : as in :func:`sequence_ratios`
    rule : one of :data:`MASK_RULES`
    low, high : positive float or None, ``low <= high``

    Returns
    -------
    numpy.ndarray of bool, shape [B, L]

    Examples
    --------
    >>> lp_old = [[-1.0, -1.0, -1.0, -9.0], [-1.0, -9.0, -9.0, -9.0]]
    >>> lp_new = [[-0.5, -0.5, -0.5, -9.0], [-0.5, -9.0, -9.0, -9.0]]
    >>> m = [[1, 1, 1, 0], [1, 0, 0, 0]]
    >>> kept_mask(lp_new, lp_old, m, "sequence_mask", high=3.0).astype(int)
    array([[0, 0, 0, 0],
           [1, 0, 0, 0]])
    >>> kept_mask(lp_new, lp_old, m, "seq_mean_k1", high=2.0).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    d, mask = _log_ratios(logp_new, logp_old, mask)
    rule, low, high = _rule_bounds(rule, low, high)
    if rule == "token_mask":
        with np.errstate(over="ignore"):
            return mask & _inside(np.exp(d), low, high)
    if rule == "sequence_mask":
        with np.errstate(over="ignore"):
            keep = _inside(np.exp(d.sum(axis=1)), low, high)
    else:
        clipped = np.where(mask, np.clip(d, -SAFETY_BOUND, SAFETY_BOUND), 0.0)
        k1 = -clipped.sum(axis=1)
        if rule == "seq_mean_k1":
            k1 = k1 / np.maximum(mask.sum(axis=1), 1)
        keep = _inside(k1, math.log(low), math.log(high))
    return mask & keep[:, None]


def _dropped_at(n: int, b: float, rule: str, low, high) -> bool:
    """Whether a response of ``n`` tokens, each with log-ratio ``b``, loses its tokens under ``rule``."""
    if rule == "token_mask":
        return not _inside(np.exp(np.float64(b)), low, high)
    if rule == "sequence_mask":
        with np.errstate(over="ignore"):
            return not _inside(np.exp(np.float64(n) * np.float64(b)), low, high)
    c = min(max(b, -SAFETY_BOUND), SAFETY_BOUND)
    k1 = -(np.float64(n) * np.float64(c)) if rule == "seq_sum_k1" else -np.float64(c)
    return not _inside(k1, math.log(low), math.log(high))


def first_dropped_length(token_log_ratio, rule, low=None, high=None, max_len=DEFAULT_MAX_LEN):
    r"""The shortest response that ``rule`` drops when every token has the same log-ratio ``b``.

    A response of :math:`n` tokens, each with :math:`d_t = b` (a systematic bias: ``b = log Z`` per token
    when the engine samples from a truncated distribution of mass :math:`Z`, exercise 21), has
    :math:`\sum_t d_t = n\,b` (computed as ``n * b`` in float64) and mean :math:`b`; verl's rules clip
    :math:`b` to ``[-20, 20]`` first. The rule decides as in :func:`kept_mask`. Returns the smallest
    :math:`n \in [1, \mathrm{max\_len}]` at which the response is dropped (for ``"token_mask"``: its tokens
    are all masked), or ``None`` when no such length exists. Length-normalised rules (``"token_mask"``,
    ``"seq_mean_k1"``) drop at every length or at none, so they return ``1`` or ``None``.

    Parameters
    ----------
    token_log_ratio : float, finite
    rule, low, high : as in :func:`kept_mask`, with ``low <= 1 <= high``
    max_len : int >= 1

    Returns
    -------
    int or None

    Examples
    --------
    >>> b = math.log(0.98)
    >>> first_dropped_length(b, "seq_sum_k1", high=2.0), first_dropped_length(b, "seq_mean_k1", high=1.001)
    (35, 1)
    >>> first_dropped_length(b, "sequence_mask", high=3.0) is None   # TRL's default: no lower bound
    True
    """
    if isinstance(token_log_ratio, (bool, np.bool_)) or not isinstance(
            token_log_ratio, (int, float, np.integer, np.floating)):
        raise TypeError(f"token_log_ratio must be a real number, got {type(token_log_ratio).__name__}")
    b = float(token_log_ratio)
    if not math.isfinite(b):
        raise ValueError(f"token_log_ratio must be finite, got {b}")
    rule, low, high = _rule_bounds(rule, low, high)
    if (low is not None and low > 1.0) or (high is not None and high < 1.0):
        # bounds that exclude the ratio 1 drop an on-policy response; with 1 inside, the lengths a rule
        # drops are all lengths from some n on (the ratio moves away from 1 as n grows), or none
        raise ValueError(f"low and high must contain 1 (low <= 1 <= high), got low = {low}, high = {high}")
    max_len = as_int(max_len, "max_len", low=1)
    if not _dropped_at(max_len, b, rule, low, high):
        return None
    first, last = 1, max_len  # invariant: dropped at `last`; smallest dropped length in [first, last]
    while first < last:
        middle = (first + last) // 2
        if _dropped_at(middle, b, rule, low, high):
            last = middle
        else:
            first = middle + 1
    return first
