"""Answers to exercise 29 (clipping and gating) written by an outside tester from the release notebook alone.

The tester had the release notebook `29_clipping_and_gating.ipynb`, the student package `course/` and the trainers'
published sources, never the hidden checks or the reference. Each constant is the full source of the four answer
cells of one imagined student (ppo_clip_loss, trl_delta_loss, cispo_loss, stale_sequence_mask), copied here as the
tester wrote them; the comments are theirs ("Open checks: CAUGHT / NOT CAUGHT" were measured against the open checks
as they were then: the gradient's check is stricter now, see `tests/test_checks_ex29_clipping_and_gating.py`).

CORRECT_*    : correct by the notebook's text, in four styles (vectorised, a transcription of the trainers' code,
               token loops with `math`, decisions on the log-ratio with `np.select`).
WRONG_*      : CORRECT_VECTORISED (or another correct answer) with one plausible practitioner's mistake.
GAME_*       : gaming answers (the open checks' values hard-coded; raising everywhere else; a lookup of the open
               checks' inputs with a rule-free formula elsewhere).
BORDERLINE_* : the trainers' clamp of the log-ratio to [-20, 20] kept; the notebook states that graded inputs keep
               |log-ratio| < 20, where the clamp changes nothing, so it is graded as correct.
"""

# ----------------------------------------------------------------------------------------------------------
# CORRECT answers
# ----------------------------------------------------------------------------------------------------------

CORRECT_VECTORISED = r'''
import numpy as np


def _arrays(logp_new, logp_old, advantages):
    """Float64 copies of the three per-token inputs, validated (shapes first, before any arithmetic)."""
    lp_new = np.asarray(logp_new, dtype=np.float64)
    lp_old = np.asarray(logp_old, dtype=np.float64)
    adv = np.asarray(advantages, dtype=np.float64)
    if lp_new.shape != lp_old.shape or lp_new.shape != adv.shape:
        raise ValueError(f"shapes differ: {lp_new.shape}, {lp_old.shape}, {adv.shape}")
    for name, lp in (("logp_new", lp_new), ("logp_old", lp_old)):
        if not np.all(np.isfinite(lp)):
            raise ValueError(f"{name} must be finite")
        if np.any(lp > 0):
            raise ValueError(f"{name} must be <= 0")
    if not np.all(np.isfinite(adv)):
        raise ValueError("advantages must be finite")
    return lp_new, lp_old, adv


def _eps(eps_low, eps_high):
    if not (0 <= eps_low < 1):
        raise ValueError("eps_low must be in [0, 1)")
    if eps_high is None:
        eps_high = eps_low
    if not (eps_high >= 0):
        raise ValueError("eps_high must be >= 0")
    return 1.0 - eps_low, 1.0 + eps_high


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    """Per token: PPO's clipped loss, its derivative with respect to logp_new, and which tokens are clipped."""
    lp_new, lp_old, adv = _arrays(logp_new, logp_old, advantages)
    lo, hi = _eps(eps_low, eps_high)
    if dual_clip is not None and not (dual_clip > 1):
        raise ValueError("dual_clip must be > 1")
    r = np.exp(lp_new - lp_old)
    plain = -adv * r
    loss = np.maximum(plain, -adv * np.clip(r, lo, hi))
    if dual_clip is not None:
        loss = np.where(adv < 0, np.minimum(loss, -dual_clip * adv), loss)
    clipped = (loss != plain) & (adv != 0)
    grad = np.where(clipped, 0.0, plain)
    return {"loss": loss.astype(np.float64), "grad": grad.astype(np.float64), "clipped": clipped}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    """Per token: TRL's two-sided clipped loss, its derivative with respect to logp_new, and which tokens are clipped."""
    lp_new, lp_old, adv = _arrays(logp_new, logp_old, advantages)
    lo, hi = _eps(eps_low, eps_high)
    if not (delta > 1):
        raise ValueError("delta must be > 1")
    r = np.exp(lp_new - lp_old)
    plain = -adv * r
    loss = -np.minimum(np.minimum(r, delta) * adv, np.clip(r, lo, hi) * adv)
    clipped = (loss != plain) & (adv != 0)
    grad = np.where(clipped, 0.0, plain)
    return {"loss": loss, "grad": grad, "clipped": clipped}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    """Per token: CISPO's loss with the clipped weight detached, its derivative, and which weights are clipped."""
    lp_new, lp_old, adv = _arrays(logp_new, logp_old, advantages)
    if not (weight_high > 0):
        raise ValueError("weight_high must be > 0")
    if weight_low is not None and not (0 <= weight_low <= weight_high):
        raise ValueError("weight_low must be in [0, weight_high]")
    r = np.exp(lp_new - lp_old)
    w = np.clip(r, -np.inf if weight_low is None else weight_low, weight_high)
    return {"loss": -w * adv * lp_new, "grad": -w * adv, "clipped": w != r}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    """The sampler's drift per response and which responses keep their loss: {"kl": float64 [B], "keep": bool [B]}."""
    lp_new = np.asarray(logp_new, dtype=np.float64)
    lp_s = np.asarray(logp_sampler, dtype=np.float64)
    m = np.asarray(mask)
    adv = np.asarray(advantages, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError("mask must be 2-D")
    if lp_new.shape != m.shape or lp_s.shape != m.shape:
        raise ValueError("logp_new, logp_sampler and mask must have one shape")
    if adv.shape != (m.shape[0],):
        raise ValueError("advantages must be [B]")
    m = m.astype(bool)
    for name, lp in (("logp_new", lp_new), ("logp_sampler", lp_s)):
        on = lp[m]
        if not np.all(np.isfinite(on)) or np.any(on > 0):
            raise ValueError(f"{name} must be finite and <= 0 on response tokens")
    if not np.all(np.isfinite(adv)):
        raise ValueError("advantages must be finite")
    if not (threshold >= 0):
        raise ValueError("threshold must be >= 0")
    with np.errstate(invalid="ignore"):
        diff = np.where(m, lp_s - lp_new, 0.0)
    kl = diff.sum(axis=1) / np.maximum(m.sum(axis=1), 1)
    keep = (adv >= 0) | (kl <= threshold)
    return {"kl": kl.astype(np.float64), "keep": keep}
'''


CORRECT_TRAINER_TRANSCRIPTION = r'''
import numpy as np


def _check(logp_new, logp_old, advantages):
    log_prob = np.asarray(logp_new, dtype=np.float64)
    old_log_prob = np.asarray(logp_old, dtype=np.float64)
    advantages = np.asarray(advantages, dtype=np.float64)
    if not (log_prob.shape == old_log_prob.shape == advantages.shape):
        raise ValueError("logp_new, logp_old and advantages must have the same shape")
    if not (np.isfinite(log_prob).all() and np.isfinite(old_log_prob).all()):
        raise ValueError("log-probabilities must be finite")
    if (log_prob > 0).any() or (old_log_prob > 0).any():
        raise ValueError("log-probabilities must be <= 0")
    if not np.isfinite(advantages).all():
        raise ValueError("advantages must be finite")
    return log_prob, old_log_prob, advantages


def _cliprange(eps_low, eps_high):
    if not isinstance(eps_low, (int, float, np.floating, np.integer)) or isinstance(eps_low, bool):
        raise TypeError("eps_low must be a number")
    if not 0.0 <= eps_low < 1.0:
        raise ValueError("eps_low must be in [0, 1)")
    cliprange_low = eps_low
    cliprange_high = eps_low if eps_high is None else eps_high  # verl: clip_ratio_high defaults to clip_ratio
    if not isinstance(cliprange_high, (int, float, np.floating, np.integer)) or isinstance(cliprange_high, bool):
        raise TypeError("eps_high must be a number")
    if not cliprange_high >= 0.0:
        raise ValueError("eps_high must be >= 0")
    return cliprange_low, cliprange_high


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    """verl==0.9.1 compute_policy_loss_vanilla, per token (no aggregation, no [-20, 20] clamp of the log-ratio)."""
    log_prob, old_log_prob, advantages = _check(logp_new, logp_old, advantages)
    cliprange_low, cliprange_high = _cliprange(eps_low, eps_high)
    if dual_clip is not None:
        clip_ratio_c = dual_clip
        if not clip_ratio_c > 1.0:
            raise ValueError(f"dual_clip must be > 1.0, got {clip_ratio_c}")
    negative_approx_kl = log_prob - old_log_prob
    ratio = np.exp(negative_approx_kl)
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * np.clip(ratio, 1 - cliprange_low, 1 + cliprange_high)
    clip_pg_losses1 = np.maximum(pg_losses1, pg_losses2)
    is_clipped = pg_losses2 > pg_losses1  # verl's pg_clipfrac
    if dual_clip is None:
        pg_losses = clip_pg_losses1
    else:
        pg_losses3 = -advantages * clip_ratio_c
        clip_pg_losses2 = np.minimum(pg_losses3, clip_pg_losses1)
        is_clipped_lower = (clip_pg_losses1 > pg_losses3) & (advantages < 0)  # verl's pg_clipfrac_lower
        pg_losses = np.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
        is_clipped = is_clipped | is_clipped_lower
    # d(-A r)/dlogp = -A r where the ratio is live; a bound is a constant, so 0 there.
    grad = np.where(is_clipped, 0.0, -advantages * ratio)
    return {"loss": pg_losses, "grad": grad, "clipped": is_clipped}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    """trl==1.16.0 GRPOTrainer._compute_loss with GRPOConfig.delta, per token."""
    per_token_logps, old_per_token_logps, advantages = _check(logp_new, logp_old, advantages)
    epsilon_low, epsilon_high = _cliprange(eps_low, eps_high)
    if not delta > 1:
        raise ValueError("delta must be above 1")
    coef_1 = np.exp(per_token_logps - old_per_token_logps)
    ratio = coef_1
    coef_2 = np.clip(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    coef_1 = np.minimum(coef_1, delta)  # torch.clamp(coef_1, max=delta)
    per_token_loss1 = coef_1 * advantages
    per_token_loss2 = coef_2 * advantages
    per_token_loss = -np.minimum(per_token_loss1, per_token_loss2)
    clipped = (per_token_loss != -advantages * ratio) & (advantages != 0)
    grad = np.where(clipped, 0.0, -advantages * ratio)
    return {"loss": per_token_loss, "grad": grad, "clipped": clipped}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    """trl==1.16.0 (cap only) / verl==0.9.1 compute_policy_loss_cispo (floor and cap), per token."""
    log_prob, old_log_prob, advantages = _check(logp_new, logp_old, advantages)
    if not weight_high > 0:
        raise ValueError("weight_high must be positive")
    if weight_low is not None and not 0 <= weight_low <= weight_high:
        raise ValueError("weight_low must be in [0, weight_high]")
    ratio = np.exp(log_prob - old_log_prob)
    if weight_low is None:
        clipped_ratio = np.minimum(ratio, weight_high)  # torch.clamp(coef_1, max=self.epsilon_high)
    else:
        clipped_ratio = np.clip(ratio, weight_low, weight_high)  # torch.clamp(ratio, 1 - low, 1 + high)
    clipped_ratio_sg = clipped_ratio.copy()  # .detach(): a constant when differentiating
    pg_losses = -clipped_ratio_sg * advantages * log_prob
    return {"loss": pg_losses, "grad": -clipped_ratio_sg * advantages, "clipped": ratio != clipped_ratio}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    """trl==1.16.0 GRPOTrainer.get_off_policy_mask, with the notebook's validation (NaN on a response token raises)."""
    per_token_logps = np.asarray(logp_new, dtype=np.float64)
    sampling_per_token_logps = np.asarray(logp_sampler, dtype=np.float64)
    advantages = np.asarray(advantages, dtype=np.float64)
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError("mask must be [B, L]")
    if per_token_logps.shape != mask.shape or sampling_per_token_logps.shape != mask.shape:
        raise ValueError("logp_new, logp_sampler and mask must be [B, L] alike")
    if advantages.shape != (mask.shape[0],):
        raise ValueError("advantages must be [B]")
    mask = mask.astype(bool)
    for lp in (per_token_logps, sampling_per_token_logps):
        if not np.isfinite(lp[mask]).all() or (lp[mask] > 0).any():
            raise ValueError("log-probabilities on response tokens must be finite and <= 0")
    if not np.isfinite(advantages).all():
        raise ValueError("advantages must be finite")
    if not threshold >= 0:
        raise ValueError("threshold must be >= 0")
    with np.errstate(invalid="ignore", over="ignore"):
        kl_div = sampling_per_token_logps - per_token_logps
        kl_div = np.nan_to_num(kl_div, nan=0.0)
        seq_kl_sum = (kl_div * mask).sum(axis=1)
    avg_seq_kl = seq_kl_sum / np.maximum(mask.sum(axis=1), 1.0)
    is_pos_adv = advantages >= 0
    is_low_kl = avg_seq_kl <= threshold
    return {"kl": avg_seq_kl, "keep": is_pos_adv | is_low_kl}
'''


CORRECT_TOKEN_LOOPS = r'''
import math
import numpy as np


def _to_float_array(x, name):
    try:
        return np.array(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: not an array of numbers") from err


def _number(x, name):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    x = float(x)
    if math.isnan(x):
        raise ValueError(f"{name} is NaN")
    return x


def _inputs(logp_new, logp_old, advantages):
    a = _to_float_array(logp_new, "logp_new")
    b = _to_float_array(logp_old, "logp_old")
    c = _to_float_array(advantages, "advantages")
    if a.shape != b.shape or a.shape != c.shape:
        raise ValueError("logp_new, logp_old and advantages differ in shape")
    for idx in np.ndindex(a.shape):
        for v in (a[idx], b[idx]):
            if not math.isfinite(v) or v > 0:
                raise ValueError(f"bad log-probability {v} at {idx}")
        if not math.isfinite(c[idx]):
            raise ValueError(f"bad advantage {c[idx]} at {idx}")
    return a, b, c


def _bounds(eps_low, eps_high):
    eps_low = _number(eps_low, "eps_low")
    if eps_low < 0 or eps_low >= 1:
        raise ValueError("eps_low outside [0, 1)")
    eps_high = eps_low if eps_high is None else _number(eps_high, "eps_high")
    if eps_high < 0:
        raise ValueError("eps_high negative")
    return 1 - eps_low, 1 + eps_high


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    """Token by token: L = -min(A r, A clip(r)), then the dual clip for A < 0."""
    a, b, adv = _inputs(logp_new, logp_old, advantages)
    lo, hi = _bounds(eps_low, eps_high)
    c = None if dual_clip is None else _number(dual_clip, "dual_clip")
    if c is not None and not c > 1:
        raise ValueError("dual_clip must be above 1")
    loss, grad = np.zeros(a.shape), np.zeros(a.shape)
    clipped = np.zeros(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        A = adv[idx]
        r = math.exp(a[idx] - b[idx])
        L, g, cl = -A * r, -A * r, False
        if A > 0 and r > hi:        # the gain is capped once the ratio passed 1 + eps_high
            L, g, cl = -A * hi, 0.0, True
        elif A < 0 and r < lo:      # the penalty is floored once the ratio went below 1 - eps_low
            L, g, cl = -A * lo, 0.0, True
        elif A < 0 and c is not None and r > c:   # dual clip: the penalty stops growing beyond c
            L, g, cl = -A * c, 0.0, True
        loss[idx], grad[idx], clipped[idx] = L, g, cl
    return {"loss": loss, "grad": grad, "clipped": clipped}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    """Token by token: L = -min(min(r, delta) A, clip(r) A)."""
    a, b, adv = _inputs(logp_new, logp_old, advantages)
    lo, hi = _bounds(eps_low, eps_high)
    d = _number(delta, "delta")
    if not d > 1:
        raise ValueError("delta must be above 1")
    loss, grad = np.zeros(a.shape), np.zeros(a.shape)
    clipped = np.zeros(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        A = adv[idx]
        r = math.exp(a[idx] - b[idx])
        first = min(r, d) * A
        second = min(max(r, lo), hi) * A
        L = -min(first, second)
        # The loss is -A r exactly when the ratio itself was chosen; otherwise a bound (a constant) was.
        cl = A != 0 and L != -A * r
        loss[idx], grad[idx], clipped[idx] = L, (0.0 if cl else -A * r), cl
    return {"loss": loss, "grad": grad, "clipped": clipped}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    """Token by token: w = clip(r, w_low, w_high), L = -sg(w) A log pi_new, dL/dlog pi_new = -w A."""
    a, b, adv = _inputs(logp_new, logp_old, advantages)
    wh = _number(weight_high, "weight_high")
    if not wh > 0:
        raise ValueError("weight_high must be positive")
    wl = None if weight_low is None else _number(weight_low, "weight_low")
    if wl is not None and not (0 <= wl <= wh):
        raise ValueError("weight_low outside [0, weight_high]")
    loss, grad = np.zeros(a.shape), np.zeros(a.shape)
    clipped = np.zeros(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        r = math.exp(a[idx] - b[idx])
        w = min(r, wh)
        if wl is not None:
            w = max(w, wl)
        loss[idx] = -w * adv[idx] * a[idx]
        grad[idx] = -w * adv[idx]
        clipped[idx] = w != r
    return {"loss": loss, "grad": grad, "clipped": clipped}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    """Response by response: the mean of logp_sampler - logp_new over its tokens; keep if A >= 0 or drift <= threshold."""
    new = _to_float_array(logp_new, "logp_new")
    samp = _to_float_array(logp_sampler, "logp_sampler")
    adv = _to_float_array(advantages, "advantages")
    m = np.array(mask)
    if m.ndim != 2:
        raise ValueError("mask must be 2-D")
    if new.shape != m.shape or samp.shape != m.shape:
        raise ValueError("logp_new, logp_sampler and mask differ in shape")
    if adv.shape != (m.shape[0],):
        raise ValueError("advantages must have shape [B]")
    thr = _number(threshold, "threshold")
    if thr < 0:
        raise ValueError("threshold negative")
    B, L = m.shape
    kl = np.zeros(B)
    keep = np.zeros(B, dtype=bool)
    for i in range(B):
        if not math.isfinite(adv[i]):
            raise ValueError("advantage not finite")
        total, n = 0.0, 0
        for t in range(L):
            if not m[i, t]:
                continue            # padding: may hold anything
            for v in (new[i, t], samp[i, t]):
                if not math.isfinite(v) or v > 0:
                    raise ValueError(f"bad log-probability on response token ({i}, {t})")
            total += samp[i, t] - new[i, t]
            n += 1
        kl[i] = total / max(n, 1)
        keep[i] = adv[i] >= 0 or kl[i] <= thr
    return {"kl": kl, "keep": keep}
'''


CORRECT_LOGSPACE_SELECT = r'''
import numpy as np


def _prep(*arrays):
    out = [np.asarray(x, dtype=np.float64) for x in arrays]
    if len({x.shape for x in out}) != 1:
        raise ValueError("arrays that go together must have one shape")
    return out


def _validate_logps(*lps):
    for lp in lps:
        if not np.isfinite(lp).all() or (lp > 0).any():
            raise ValueError("log-probabilities must be finite and non-positive")


def _validate_adv(adv):
    if not np.isfinite(adv).all():
        raise ValueError("advantages must be finite")


def _log_bounds(eps_low, eps_high):
    if eps_high is None:
        eps_high = eps_low
    if not (0 <= eps_low < 1) or not (eps_high >= 0):
        raise ValueError("eps_low must be in [0, 1) and eps_high >= 0")
    return np.log1p(-eps_low), np.log1p(eps_high)


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    """Regions decided on the log-ratio; np.select picks each token's loss."""
    lp_new, lp_old, adv = _prep(logp_new, logp_old, advantages)
    _validate_logps(lp_new, lp_old)
    _validate_adv(adv)
    log_lo, log_hi = _log_bounds(eps_low, eps_high)
    if dual_clip is not None and not dual_clip > 1:
        raise ValueError("dual_clip must be above 1")
    log_r = lp_new - lp_old
    r = np.exp(log_r)
    pos, neg = adv > 0, adv < 0
    capped = pos & (log_r > log_hi)
    floored = neg & (log_r < log_lo)
    dual = neg & (log_r > np.log(dual_clip)) if dual_clip is not None else np.zeros_like(pos)
    # Regions are decided in log space, but the clipped values use the bounds themselves (exp(log1p(eps)) need
    # not be 1 + eps to the last bit).
    hi = 1.0 + (eps_low if eps_high is None else eps_high)
    lo = 1.0 - eps_low
    loss = np.select([capped, floored, dual], [-adv * hi, -adv * lo,
                                               -adv * (dual_clip if dual_clip is not None else 0.0)], -adv * r)
    clipped = capped | floored | dual
    grad = np.where(clipped, 0.0, -adv * r)
    return {"loss": loss, "grad": grad, "clipped": clipped}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    """For A > 0 the ratio is capped at min(delta, 1 + eps_high); for A < 0 floored at 1 - eps_low and capped at
    max(delta, 1 + eps_high) (the cap of the unclipped ratio loses to the clip unless delta is the larger)."""
    lp_new, lp_old, adv = _prep(logp_new, logp_old, advantages)
    _validate_logps(lp_new, lp_old)
    _validate_adv(adv)
    log_lo, log_hi = _log_bounds(eps_low, eps_high)
    if not delta > 1:
        raise ValueError("delta must be above 1")
    hi = 1.0 + (eps_low if eps_high is None else eps_high)
    lo = 1.0 - eps_low
    log_r = lp_new - lp_old
    r = np.exp(log_r)
    pos_cap, neg_cap = min(delta, hi), max(delta, hi)
    capped_pos = (adv > 0) & (log_r > np.log(pos_cap))
    capped_neg = (adv < 0) & (log_r > np.log(neg_cap))
    floored = (adv < 0) & (log_r < log_lo)
    loss = np.select([capped_pos, capped_neg, floored], [-adv * pos_cap, -adv * neg_cap, -adv * lo], -adv * r)
    clipped = capped_pos | capped_neg | floored
    return {"loss": loss, "grad": np.where(clipped, 0.0, -adv * r), "clipped": clipped}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    """log w = clip(log r, log w_low, log w_high); the weight is a constant for the derivative."""
    lp_new, lp_old, adv = _prep(logp_new, logp_old, advantages)
    _validate_logps(lp_new, lp_old)
    _validate_adv(adv)
    if not weight_high > 0:
        raise ValueError("weight_high must be positive")
    if weight_low is not None and not 0 <= weight_low <= weight_high:
        raise ValueError("weight_low must lie in [0, weight_high]")
    log_r = lp_new - lp_old
    r = np.exp(log_r)
    over = log_r > np.log(weight_high)
    with np.errstate(divide="ignore"):
        under = np.zeros_like(over) if weight_low is None else log_r < np.log(weight_low)
    w = np.where(over, weight_high, np.where(under, weight_low if weight_low is not None else 0.0, r))
    return {"loss": -w * adv * lp_new, "grad": -w * adv, "clipped": over | under}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    """A masked array keeps padding (NaN or anything) out of the mean."""
    lp_new, lp_s, m = _prep(logp_new, logp_sampler, mask)
    adv = np.asarray(advantages, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError("mask must be 2-D")
    if adv.shape != m.shape[:1]:
        raise ValueError("advantages must be [B]")
    m = m != 0
    if not np.isfinite(np.where(m, lp_new, 0.0)).all() or not np.isfinite(np.where(m, lp_s, 0.0)).all():
        raise ValueError("log-probabilities on response tokens must be finite")
    if (np.where(m, lp_new, 0.0) > 0).any() or (np.where(m, lp_s, 0.0) > 0).any():
        raise ValueError("log-probabilities on response tokens must be <= 0")
    _validate_adv(adv)
    if not threshold >= 0:
        raise ValueError("threshold must be non-negative")
    with np.errstate(invalid="ignore"):
        drift = np.ma.masked_array(lp_s - lp_new, mask=~m)
    n = np.maximum(m.sum(axis=1), 1)
    kl = np.ma.filled(drift.sum(axis=1), 0.0) / n
    return {"kl": np.asarray(kl, dtype=np.float64), "keep": np.asarray((adv >= 0) | (kl <= threshold), dtype=bool)}
'''


# ----------------------------------------------------------------------------------------------------------
# WRONG answers: each is CORRECT_VECTORISED with one plausible mistake (so each failure is that mistake's).
# ----------------------------------------------------------------------------------------------------------

def _mutate(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


_V = CORRECT_VECTORISED

# Dual clip applied to every token, OpenRLHF's max(clip1, c*A) without its torch.where(advantages < 0, ...).
# Open checks: CAUGHT.
WRONG_DUAL_CLIP_BOTH_SIGNS = _mutate(
    _V, "        loss = np.where(adv < 0, np.minimum(loss, -dual_clip * adv), loss)\n",
    "        loss = -np.maximum(-loss, dual_clip * adv)  # OpenRLHF's clip2 = max(clip1, c * A), for every token\n")

# Clips whatever the sign of the advantage: L = -A clip(r), no PPO minimum (a ratio outside the band is clipped).
# Open checks: CAUGHT.
WRONG_CLIP_IGNORES_SIGN = _mutate(
    _V, "    loss = np.maximum(plain, -adv * np.clip(r, lo, hi))\n",
    "    loss = -adv * np.clip(r, lo, hi)\n")

# Holds the dual clip's gradient at c|A| beyond c (the ratio "replaced by c" in d(-A r)/dlogp = -A r).
# Open checks: CAUGHT.
WRONG_DUAL_CLIP_GRAD_NONZERO = _mutate(
    _V, "    grad = np.where(clipped, 0.0, plain)\n    return {\"loss\": loss.astype",
    "    grad = np.where(clipped, 0.0, plain)\n"
    "    if dual_clip is not None:\n"
    "        grad = np.where(clipped & (adv < 0) & (r > dual_clip), -dual_clip * adv, grad)\n"
    "    return {\"loss\": loss.astype")

# Zeroes CISPO's clipped tokens, as PPO does (the detached weight read as "no gradient").
# Open checks: CAUGHT.
WRONG_CISPO_ZERO_CLIPPED_GRAD = _mutate(
    _V, "    return {\"loss\": -w * adv * lp_new, \"grad\": -w * adv, \"clipped\": w != r}\n",
    "    return {\"loss\": -w * adv * lp_new, \"grad\": np.where(w != r, 0.0, -w * adv), \"clipped\": w != r}\n")

# Forgets CISPO's stop-gradient: differentiates w = r too where unclipped, grad = -A (w + r log pi_new).
# Open checks: CAUGHT.
WRONG_CISPO_NO_STOPGRAD = _mutate(
    _V, "    return {\"loss\": -w * adv * lp_new, \"grad\": -w * adv, \"clipped\": w != r}\n",
    "    dw = np.where(w != r, 0.0, r)  # d w / d log pi_new\n"
    "    return {\"loss\": -w * adv * lp_new, \"grad\": -adv * (w + dw * lp_new), \"clipped\": w != r}\n")

# Wrong ratio direction, r = pi_old / pi_new, in every function.
# Open checks: CAUGHT.
WRONG_RATIO_DIRECTION = _V.replace("r = np.exp(lp_new - lp_old)", "r = np.exp(lp_old - lp_new)")

# Mixes up delta and eps_high: delta taken as the clip's upper bound, the unclipped ratio left uncapped.
# Open checks: CAUGHT.
WRONG_DELTA_AS_CLIP_BOUND = _mutate(
    _V, "    loss = -np.minimum(np.minimum(r, delta) * adv, np.clip(r, lo, hi) * adv)\n",
    "    loss = -np.minimum(r * adv, np.clip(r, lo, delta) * adv)\n")

# Reads TRL's delta as "the dual clip with c = delta" (Part B's claim) and applies it for every delta:
# wrong for A > 0 (and A < 0 in (delta, 1+eps_high]) when delta < 1 + eps_high. Open checks: NOT CAUGHT (delta 3 only).
WRONG_DELTA_AS_DUAL_CLIP_ALWAYS = _mutate(
    _V, "    loss = -np.minimum(np.minimum(r, delta) * adv, np.clip(r, lo, hi) * adv)\n",
    "    loss = np.maximum(plain, -adv * np.clip(r, lo, hi))\n"
    "    loss = np.where(adv < 0, np.minimum(loss, -delta * adv), loss)\n")

# TRL's delta capping the ratio only for positive advantages (thinking "delta stops positive tokens exploding").
# Open checks: CAUGHT (ratio 6, A = -1 should be held at delta 3).
WRONG_DELTA_POSITIVE_ONLY = _mutate(
    _V, "    loss = -np.minimum(np.minimum(r, delta) * adv, np.clip(r, lo, hi) * adv)\n",
    "    loss = -np.minimum(np.where(adv > 0, np.minimum(r, delta), r) * adv, np.clip(r, lo, hi) * adv)\n")

# Ignores the sign condition in the sequence mask: drops every stale response, positive ones too.
# Open checks: CAUGHT (the fourth response, A = 0, drift 0.9).
WRONG_MASK_IGNORES_SIGN = _mutate(
    _V, "    keep = (adv >= 0) | (kl <= threshold)\n", "    keep = kl <= threshold\n")

# Keeps only strictly positive advantages (A > 0 instead of A >= 0): drops a stale response with A = 0.
# Open checks: CAUGHT (the fourth response).
WRONG_MASK_STRICT_POSITIVE = _mutate(
    _V, "    keep = (adv >= 0) | (kl <= threshold)\n", "    keep = (adv > 0) | (kl <= threshold)\n")

# Drift compared strictly (kl < threshold): drops a negative response exactly at the threshold.
# Open checks: NOT CAUGHT.
WRONG_MASK_STRICT_THRESHOLD = _mutate(
    _V, "    keep = (adv >= 0) | (kl <= threshold)\n", "    keep = (adv >= 0) | (kl < threshold)\n")

# Multiplies by the mask instead of selecting with it: NaN padding makes the drift NaN (and drops A < 0 rows).
# Open checks: NOT CAUGHT (their padding is finite).
WRONG_MASK_NAN_PADDING = _mutate(
    _V, "        diff = np.where(m, lp_s - lp_new, 0.0)\n", "        diff = (lp_s - lp_new) * m\n")

# Divides by the row length L (padding counted) instead of the response's n_i.
# Open checks: CAUGHT (the second response has 2 of 3 tokens).
WRONG_MASK_MEAN_OVER_PADDING = _mutate(
    _V, "    kl = diff.sum(axis=1) / np.maximum(m.sum(axis=1), 1)\n",
    "    kl = diff.sum(axis=1) / m.shape[1]\n")

# Divides by n_i without max(n_i, 1): an empty response drifts NaN and, with A < 0, is dropped.
# Open checks: NOT CAUGHT.
WRONG_MASK_EMPTY_RESPONSE = _mutate(
    _V, "    kl = diff.sum(axis=1) / np.maximum(m.sum(axis=1), 1)\n",
    "    with np.errstate(invalid=\"ignore\"):\n        kl = diff.sum(axis=1) / m.sum(axis=1)\n")

# Off by one in the mask: assumes right padding and averages the first n_i tokens of each row.
# Open checks: NOT CAUGHT (their padding is on the right).
WRONG_MASK_ASSUMES_RIGHT_PADDING = _mutate(
    _V, "        diff = np.where(m, lp_s - lp_new, 0.0)\n",
    "        n = m.sum(axis=1)\n"
    "        diff = np.where(np.arange(m.shape[1])[None, :] < n[:, None], lp_s - lp_new, 0.0)\n")

# Drift with the sign reversed (logp_new - logp_sampler, the "KL of new from sampler" direction).
# Open checks: CAUGHT.
WRONG_MASK_DRIFT_SIGN = _mutate(
    _V, "        diff = np.where(m, lp_s - lp_new, 0.0)\n", "        diff = np.where(m, lp_new - lp_s, 0.0)\n")

# `eps_high = eps_high or eps_low`: a valid eps_high of 0 silently becomes eps_low.
# Open checks: NOT CAUGHT.
WRONG_EPS_HIGH_FALSY_ZERO = _mutate(
    _V, "    if eps_high is None:\n        eps_high = eps_low\n", "    eps_high = eps_high or eps_low\n")

# "clipped" copied from TRL's clip metrics (coef_1 outside the band with the matching sign): misses dual-clipped tokens.
# Open checks: CAUGHT.
WRONG_CLIPPED_FLAG_FROM_TRL_METRIC = _mutate(
    _V, "    clipped = (loss != plain) & (adv != 0)\n    grad = np.where(clipped, 0.0, plain)\n    return {\"loss\": loss.astype",
    "    clipped = ((r < lo) & (adv < 0)) | ((r > hi) & (adv > 0))\n"
    "    grad = np.where(clipped, 0.0, plain)\n"
    "    return {\"loss\": loss.astype")

# CISPO's "clipped" copied from TRL's cispo_clip_ratio metric: only positive advantages above the cap.
# Open checks: CAUGHT (ratio 6, A = -1).
WRONG_CISPO_FLAG_POSITIVE_ONLY = _mutate(
    _V, "\"clipped\": w != r}\n", "\"clipped\": (r > weight_high) & (adv > 0)}\n")

# CISPO's "clipped" with PPO's "never a token with A = 0" carried over: (w != r) & (A != 0). The text says w != r
# "whatever the sign of A". Open checks: NOT CAUGHT (no A = 0 token in them).
WRONG_CISPO_FLAG_EXCLUDES_ZERO_ADV = _mutate(
    _V, "\"clipped\": w != r}\n", "\"clipped\": (w != r) & (adv != 0)}\n")

# Gradient by central finite differences of the loss (h = 1e-6, as the open check itself does) instead of the
# derivative: passes the open checks (tolerance 1e-6) but is only ~1e-10 accurate. Open checks: NOT CAUGHT.
WRONG_GRAD_BY_FINITE_DIFFERENCES = _mutate(_mutate(
    _V,
    "    grad = np.where(clipped, 0.0, plain)\n    return {\"loss\": loss.astype",
    "    def _L(x):\n"
    "        rr = np.exp(x - lp_old)\n"
    "        out = np.maximum(-adv * rr, -adv * np.clip(rr, lo, hi))\n"
    "        return out if dual_clip is None else np.where(adv < 0, np.minimum(out, -dual_clip * adv), out)\n"
    "    grad = (_L(lp_new + 1e-6) - _L(lp_new - 1e-6)) / 2e-6\n"
    "    return {\"loss\": loss.astype"),
    "    grad = np.where(clipped, 0.0, plain)\n    return {\"loss\": loss, \"grad\": grad",
    "    def _L(x):\n"
    "        rr = np.exp(x - lp_old)\n"
    "        return -np.minimum(np.minimum(rr, delta) * adv, np.clip(rr, lo, hi) * adv)\n"
    "    grad = (_L(lp_new + 1e-6) - _L(lp_new - 1e-6)) / 2e-6\n"
    "    return {\"loss\": loss, \"grad\": grad")

# Shape check by broadcasting: accepts [T, 1] against [T] (and then returns a [T, T] outer result).
# Open checks: NOT CAUGHT.
WRONG_SHAPES_BROADCAST = _mutate(
    _V, "    if lp_new.shape != lp_old.shape or lp_new.shape != adv.shape:\n",
    "    try:\n        np.broadcast_shapes(lp_new.shape, lp_old.shape, adv.shape)\n        bad = False\n"
    "    except ValueError:\n        bad = True\n    if bad:\n")

# Correct maths, no input validation at all (the "bad input" point lost).
# Open checks: NOT CAUGHT.
WRONG_NO_VALIDATION = r'''
import numpy as np


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    lp_new, lp_old, adv = (np.asarray(x, dtype=float) for x in (logp_new, logp_old, advantages))
    hi = 1 + (eps_low if eps_high is None else eps_high)
    r = np.exp(lp_new - lp_old)
    plain = -adv * r
    loss = np.maximum(plain, -adv * np.clip(r, 1 - eps_low, hi))
    if dual_clip is not None:
        loss = np.where(adv < 0, np.minimum(loss, -dual_clip * adv), loss)
    clipped = (loss != plain) & (adv != 0)
    return {"loss": loss, "grad": np.where(clipped, 0.0, plain), "clipped": clipped}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    lp_new, lp_old, adv = (np.asarray(x, dtype=float) for x in (logp_new, logp_old, advantages))
    hi = 1 + (eps_low if eps_high is None else eps_high)
    r = np.exp(lp_new - lp_old)
    plain = -adv * r
    loss = -np.minimum(np.minimum(r, delta) * adv, np.clip(r, 1 - eps_low, hi) * adv)
    clipped = (loss != plain) & (adv != 0)
    return {"loss": loss, "grad": np.where(clipped, 0.0, plain), "clipped": clipped}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    lp_new, lp_old, adv = (np.asarray(x, dtype=float) for x in (logp_new, logp_old, advantages))
    r = np.exp(lp_new - lp_old)
    w = np.minimum(r, weight_high) if weight_low is None else np.clip(r, weight_low, weight_high)
    return {"loss": -w * adv * lp_new, "grad": -w * adv, "clipped": w != r}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    m = np.asarray(mask, dtype=bool)
    diff = np.where(m, np.asarray(logp_sampler, float) - np.asarray(logp_new, float), 0.0)
    kl = diff.sum(1) / np.maximum(m.sum(1), 1)
    return {"kl": kl, "keep": (np.asarray(advantages, float) >= 0) | (kl <= threshold)}
'''

# verl/OpenRLHF transcription that keeps the trainers' clamp of the log-ratio to [-20, 20] (the notebook's r has
# none): differs only where |logp_new - logp_old| > 20. Open checks: NOT CAUGHT. Whether hidden tests reach it: unknown.
BORDERLINE_VERL_LOGRATIO_CLAMP = CORRECT_VECTORISED.replace(
    "r = np.exp(lp_new - lp_old)", "r = np.exp(np.clip(lp_new - lp_old, -20.0, 20.0))")


# ----------------------------------------------------------------------------------------------------------
# GAMING answers
# ----------------------------------------------------------------------------------------------------------

# Returns the open checks' expected outputs whatever the input (values printed from the open checks' own
# written_out at full precision). Passes the open checks; shape-wrong everywhere else.
GAME_HARDCODED_OPEN_CHECKS = r'''
import numpy as np

_PPO = {"loss": np.array([-0.2, -0.9, -1.28, -1.28, 0.8, 0.9, 1.5, 3.0]),
        "grad": np.array([-0.2, -0.9, 0.0, 0.0, 0.0, 0.9, 1.5, 0.0]),
        "clipped": np.array([False, False, True, True, True, False, False, True])}
_DELTA = {"loss": np.array([-0.2, -0.9, -1.28, -1.28, 0.8, 0.9, 1.5, 3.0]),
          "grad": np.array([-0.2, -0.9, 0.0, 0.0, 0.0, 0.9, 1.5, 0.0]),
          "clipped": np.array([False, False, True, True, True, False, False, True])}
_CISPO = {"loss": np.array([0.2 * 3.912023005428146, 0.9 * 2.4079456086518722, 1.5 * 1.8971199848858813,
                            5.0 * 0.5108256237659907, -0.2 * 3.912023005428146, -0.9 * 2.4079456086518722,
                            -1.5 * 1.8971199848858813, -5.0 * 0.5108256237659907]),
          "grad": np.array([-0.2, -0.9, -1.5, -5.0, 0.2, 0.9, 1.5, 5.0]),
          "clipped": np.array([False, False, False, True, False, False, False, True])}


def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    return {k: v.copy() for k, v in _PPO.items()}


def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    return {k: v.copy() for k, v in _DELTA.items()}


def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    return {k: v.copy() for k, v in _CISPO.items()}


def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    return {"kl": np.array([0.6, 0.05, 0.6, 0.9]), "keep": np.array([True, True, False, True])}
'''

# Raises ValueError on every input except the open checks' own (recognised by shape and first value), where it
# returns the hard-coded answers (zeros for the comparison table's, so Validate runs): "rejects bad input"
# everywhere, passes the open checks.
GAME_RAISE_EXCEPT_OPEN_INPUTS = GAME_HARDCODED_OPEN_CHECKS.replace("import numpy as np\n", r'''import numpy as np


def _is_open(x, shape, first):
    try:
        a = np.asarray(x, dtype=float)
        return a.shape == shape and abs(a.flat[0] - first) < 1e-9
    except Exception:
        return False


def _is_table(logp_new, logp_old):
    """The comparison table's inputs (7 ratios against pi_old = 0.1) must not raise, or Validate fails."""
    try:
        a, b = np.asarray(logp_new, dtype=float), np.asarray(logp_old, dtype=float)
        return a.shape == (7,) and b.shape == (7,) and np.allclose(b, np.log(0.1)) and abs(a[0] - np.log(0.02)) < 1e-9
    except Exception:
        return False


def _table(n=7):
    return {"loss": np.zeros(n), "grad": np.zeros(n), "clipped": np.zeros(n, dtype=bool)}


def _guard(*checks):
    if not all(checks):
        raise ValueError("invalid input")
''', 1).replace(
    "    return {k: v.copy() for k, v in _PPO.items()}",
    "    if _is_table(logp_new, logp_old):\n        return _table()\n"
    "    _guard(_is_open(logp_new, (8,), np.log(0.02)), dual_clip == 3.0)\n"
    "    return {k: v.copy() for k, v in _PPO.items()}").replace(
    "    return {k: v.copy() for k, v in _DELTA.items()}",
    "    if _is_table(logp_new, logp_old):\n        return _table()\n"
    "    _guard(_is_open(logp_new, (8,), np.log(0.02)), delta == 3.0)\n"
    "    return {k: v.copy() for k, v in _DELTA.items()}").replace(
    "    return {k: v.copy() for k, v in _CISPO.items()}",
    "    if _is_table(logp_new, logp_old):\n        return _table()\n"
    "    _guard(_is_open(logp_new, (8,), np.log(0.02)), weight_high == 5.0, weight_low is None)\n"
    "    return {k: v.copy() for k, v in _CISPO.items()}").replace(
    "    return {\"kl\": np.array([0.6, 0.05, 0.6, 0.9])",
    "    _guard(_is_open(logp_new, (4, 3), np.log(0.2)), threshold == 0.5)\n"
    "    return {\"kl\": np.array([0.6, 0.05, 0.6, 0.9])")

# Looks the open checks' inputs up and returns their answers; anything else gets plain REINFORCE
# (loss -A r, grad -A r, nothing clipped; every response kept), shaped right and validated, so it never crashes.
GAME_FINGERPRINT_ELSE_NAIVE = GAME_HARDCODED_OPEN_CHECKS.replace("import numpy as np\n", r'''import numpy as np


def _fingerprint(x):
    a = np.asarray(x, dtype=float)
    return (a.shape, tuple(np.round(a.ravel()[:8], 9)))


_OPEN_NEW = _fingerprint(np.log(np.array([0.02, 0.09, 0.15, 0.6] * 2)))


def _naive(logp_new, logp_old, advantages):
    lp_new, lp_old, adv = (np.asarray(x, dtype=float) for x in (logp_new, logp_old, advantages))
    if not lp_new.shape == lp_old.shape == adv.shape:
        raise ValueError("shapes differ")
    if not (np.isfinite(lp_new).all() and np.isfinite(lp_old).all() and np.isfinite(adv).all()):
        raise ValueError("not finite")
    if (lp_new > 0).any() or (lp_old > 0).any():
        raise ValueError("positive log-probability")
    r = np.exp(lp_new - lp_old)
    return {"loss": -adv * r, "grad": -adv * r, "clipped": np.zeros(r.shape, dtype=bool)}
''', 1).replace(
    "    return {k: v.copy() for k, v in _PPO.items()}",
    "    if _fingerprint(logp_new) != _OPEN_NEW:\n        return _naive(logp_new, logp_old, advantages)\n"
    "    return {k: v.copy() for k, v in _PPO.items()}").replace(
    "    return {k: v.copy() for k, v in _DELTA.items()}",
    "    if _fingerprint(logp_new) != _OPEN_NEW:\n        return _naive(logp_new, logp_old, advantages)\n"
    "    return {k: v.copy() for k, v in _DELTA.items()}").replace(
    "    return {k: v.copy() for k, v in _CISPO.items()}",
    "    if _fingerprint(logp_new) != _OPEN_NEW:\n        out = _naive(logp_new, logp_old, advantages)\n"
    "        adv = np.asarray(advantages, dtype=float)\n"
    "        return {'loss': -adv * np.asarray(logp_new, dtype=float), 'grad': -adv, 'clipped': out['clipped']}\n"
    "    return {k: v.copy() for k, v in _CISPO.items()}").replace(
    "    return {\"kl\": np.array([0.6, 0.05, 0.6, 0.9])",
    "    if np.asarray(mask).shape != (4, 3):\n"
    "        b = np.asarray(advantages, dtype=float).shape[0]\n"
    "        return {\"kl\": np.zeros(b), \"keep\": np.ones(b, dtype=bool)}\n"
    "    return {\"kl\": np.array([0.6, 0.05, 0.6, 0.9])")


CORRECT = [n for n in dir() if n.startswith("CORRECT_")]
WRONG = [n for n in dir() if n.startswith("WRONG_")]
GAME = [n for n in dir() if n.startswith("GAME_")]
BORDERLINE = [n for n in dir() if n.startswith("BORDERLINE_")]
