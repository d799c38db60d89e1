"""Answers to exercise 30 (asynchronous rollouts) written by an outside tester from the release notebook alone.

The tester had the release notebook `30_asynchronous_rollouts.ipynb`, the student package `course/` and the trainers'
published sources, never the hidden checks or the reference. Each constant is the full source of one imagined
student's four answer cells (staleness_kept, decoupled_weights, surrogate_expectation, routed_logprobs, and their
helpers), copied here as the tester built them; the comments are theirs ("Open checks: caught / NOT caught" were
measured against the open checks as they were then).

CORRECT_* : correct by the notebook's text, in five styles (vectorised, a transcription of the trainers' code, loops
            with `math`, log space throughout, terse).
WRONG_*   : one of the correct answers with one plausible practitioner's mistake (named in the comment above it).
GAME_*    : gaming answers (the open checks' values hard-coded; a lookup of them raising everywhere else; on-policy
            constants).
"""

# CORRECT_VECTORISED: vectorised NumPy; expectation by the closed form c - q*sum(c) with b*w-bar = min(p, c*b) in log space.
CORRECT_VECTORISED = r'''
import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# CORRECT_TRAINER_TRANSCRIPTION: verl/TRL/Megatron code transcribed to NumPy (pg_losses, clamp, gather); expectation by enumerating tokens as one-token responses through decoupled_weights.
CORRECT_TRAINER_TRANSCRIPTION = r'''
import math

import numpy as np


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule == "trl":
        max_staleness = limit
        if type(max_staleness) is not int and not isinstance(max_staleness, np.integer):
            raise TypeError(f"max_staleness must be an int, got {type(max_staleness).__name__}")
        if max_staleness < 0:
            raise ValueError("max_staleness must be >= 0")
    elif rule == "verl":
        max_off_policy_threshold = limit
        # ReplayBuffer.__init__: assert isinstance(threshold, int) and threshold > 0 (or None)
        if max_off_policy_threshold is not None:
            if type(max_off_policy_threshold) is not int and not isinstance(max_off_policy_threshold, np.integer):
                raise TypeError("max_off_policy_threshold must be an int or None")
            if max_off_policy_threshold <= 0:
                raise ValueError("max_off_policy_threshold must be an integer greater than 0, or None")
    else:
        raise ValueError(f"unknown rule {rule!r}: 'trl' or 'verl'")
    if type(trainer_version) is not int and not isinstance(trainer_version, np.integer):
        raise TypeError("trainer_version must be an int")
    kept = []
    for model_version in list(np.asarray(sample_versions).reshape(-1)) if np.ndim(sample_versions) == 1 else [None]:
        if model_version is None:
            raise ValueError("sample_versions must be 1-D")
        if not isinstance(model_version, (int, np.integer)) or isinstance(model_version, (bool, np.bool_)):
            raise TypeError("sample versions must be ints")
        if model_version < 0 or model_version > trainer_version:
            raise ValueError(f"sample version {model_version} outside [0, {trainer_version}]")
        if rule == "trl":
            # RolloutQueueDataset.__iter__: staleness = version - sample.model_version; drop if > max_staleness
            staleness = trainer_version - model_version
            kept.append(not staleness > limit)
        else:
            # ReplayBufferAsync._stale_terminal_keys: drop if global_steps - prompt_global_steps + 1 > threshold
            if limit is None:
                kept.append(True)
            else:
                kept.append(not (trainer_version - model_version + 1 > limit))
    return np.array(kept, dtype=bool)


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    rollout_log_prob = np.asarray(logp_behaviour, dtype=np.float64)
    old_log_prob = np.asarray(logp_proximal, dtype=np.float64)
    log_prob = np.asarray(logp_current, dtype=np.float64)
    response_mask = np.asarray(mask)
    advantages = np.asarray(advantages, dtype=np.float64)
    # shapes first (compute_rollout_correction_and_rejection_mask compares them before any arithmetic too)
    if response_mask.ndim != 2 or 0 in response_mask.shape:
        raise ValueError(f"response_mask must be [B, L] with B, L >= 1, got {response_mask.shape}")
    for name, t in (("rollout", rollout_log_prob), ("old", old_log_prob), ("current", log_prob)):
        if t.shape != response_mask.shape:
            raise ValueError(f"{name} log_prob shape {t.shape} does not match response_mask shape {response_mask.shape}")
    if advantages.shape != (response_mask.shape[0],):
        raise ValueError(f"advantages must have shape ({response_mask.shape[0]},), got {advantages.shape}")
    if not np.isfinite(advantages).all():
        raise ValueError("advantages must be finite")
    if not np.isin(response_mask, (0, 1)).all():
        raise ValueError("response_mask must be boolean or 0/1")
    response_mask = response_mask.astype(bool)
    for eps in (eps_low, eps_high):
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)) or not 0 <= eps < 1:
            raise ValueError(f"clip range must be in [0, 1), got {eps!r}")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, (int, float, np.number)) or not (0 < cap < math.inf):
            raise ValueError(f"rollout_is_threshold must be positive and finite, got {cap!r}")
    for t in (rollout_log_prob, old_log_prob, log_prob):
        valid = t[response_mask]
        if not np.isfinite(valid).all() or (valid > 0).any():
            raise ValueError("log-probabilities of response tokens must be finite and <= 0")
    # masked_fill the padding before any arithmetic (it may hold NaN)
    rollout_log_prob = np.where(response_mask, rollout_log_prob, 0.0)
    old_log_prob = np.where(response_mask, old_log_prob, 0.0)
    log_prob = np.where(response_mask, log_prob, 0.0)

    # verl compute_rollout_correction_weights, rollout_is="token": exp(old - rollout), * mask, clamp(max=threshold)
    log_ratio = old_log_prob - rollout_log_prob
    raw_rollout_is_weights = np.exp(log_ratio) * response_mask
    if cap is None:
        rollout_is_weights = raw_rollout_is_weights
    else:
        rollout_is_weights = np.minimum(raw_rollout_is_weights, cap)  # .clamp(max=rollout_is_threshold_upper)
    # rollout_is_weights = rollout_is_weights.detach()

    # verl compute_policy_loss_vanilla (without the dual clip, which the notebook's objective does not have)
    negative_approx_kl = log_prob - old_log_prob
    ratio = np.exp(negative_approx_kl)
    adv = advantages[:, None]
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * np.clip(ratio, 1 - eps_low, 1 + eps_high)
    clip_pg_losses1 = np.maximum(pg_losses1, pg_losses2)
    pg_losses = clip_pg_losses1 * rollout_is_weights
    # torch.maximum sends the gradient to the larger loss; pg_clipfrac counts torch.gt(pg_losses2, pg_losses1)
    is_clipped = pg_losses2 > pg_losses1
    # d(-pg_losses)/d log_prob = w-bar * A * d ratio / d log_prob = w-bar * A * ratio on the unclipped branch
    grad = np.where(is_clipped, 0.0, rollout_is_weights * adv * ratio)

    def masked(x):
        return np.where(response_mask, x, 0.0).astype(np.float64)

    return {"weight": masked(raw_rollout_is_weights), "truncated": masked(rollout_is_weights),
            "ratio": masked(ratio), "surrogate": masked(-pg_losses), "gradient": masked(grad)}


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    theta, proximal, behaviour, advantages = (np.asarray(x, dtype=np.float64)
                                              for x in (theta, proximal, behaviour, advantages))
    V = theta.shape[0] if theta.ndim == 1 else -1
    if V < 1 or any(x.shape != (V,) for x in (proximal, behaviour, advantages)):
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D arrays of one length")
    if not all(np.isfinite(x).all() for x in (theta, proximal, behaviour, advantages)):
        raise ValueError("theta, proximal, behaviour and advantages must be finite")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float, np.number))
                            or not (0 < cap < math.inf)):
        raise ValueError(f"cap must be None or positive and finite, got {cap!r}")

    def log_softmax(z):
        z = z - z.max()
        return z - np.log(np.exp(z).sum())

    lq, lp, lb = log_softmax(theta), log_softmax(proximal), log_softmax(behaviour)
    # Enumerate the V tokens as V one-token responses, all three policies' log-probs of each token.
    # b * w-bar = b * min(p / b, c) = p * min(1, c * b / p): no division by an underflowing b.
    per_token = decoupled_weights(lp[:, None], lp[:, None], lq[:, None], advantages, np.ones((V, 1), dtype=bool),
                                  eps_low=eps_low, eps_high=eps_high)  # behaviour := proximal, so w = 1
    trunc = np.ones(V) if cap is None else np.minimum(1.0, np.exp(math.log(cap) + lb - lp))
    mass = np.exp(lp) * trunc  # = b * w-bar for each token
    value = float(np.sum(mass * per_token["surrogate"][:, 0]))
    # d/d theta of sum_a mass_a * f_a(log q_a) = sum_a mass_a * f'_a * (e_a - q)
    coef = mass * per_token["gradient"][:, 0]
    q = np.exp(lq)
    gradient = np.zeros(V)
    for a in range(V):
        e_a = np.zeros(V)
        e_a[a] = 1.0
        gradient += coef[a] * (e_a - q)
    return {"value": value, "gradient": gradient}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    expert_logits = np.asarray(expert_logits, dtype=np.float64)
    router_engine = np.asarray(router_engine, dtype=np.float64)
    router_trainer = np.asarray(router_trainer, dtype=np.float64)
    tokens_arr = np.asarray(tokens)
    if expert_logits.ndim != 3 or 0 in expert_logits.shape:
        raise ValueError("expert_logits must be [T, E, V]")
    T, E, V = expert_logits.shape
    if router_engine.shape != (T, E) or router_trainer.shape != (T, E) or tokens_arr.shape != (T,):
        raise ValueError("shapes disagree")
    for x in (expert_logits, router_engine, router_trainer):
        if not np.isfinite(x).all():
            raise ValueError("logits must be finite")
    if tokens_arr.dtype.kind not in "iu" or (tokens_arr < 0).any() or (tokens_arr >= V).any():
        raise ValueError("tokens must be ints in [0, V)")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= E:
        raise ValueError(f"top_k must be an int in [1, {E}]")

    def compute_topk(scores, topk):  # torch.topk(scores, k=topk, dim=1)
        top_indices = np.argsort(-scores, axis=1)[:, :topk]
        return np.take_along_axis(scores, top_indices, axis=1), top_indices

    def routing(logits, replay_indices=None):
        # topk_routing_with_score_function, score_function="softmax", use_pre_softmax=False
        if replay_indices is None:
            scores, top_indices = compute_topk(logits, top_k)
        else:  # RouterReplay.get_replay_topk: scores.gather(1, indices) for the replayed indices
            top_indices = replay_indices
            scores = np.take_along_axis(logits, top_indices, axis=1)
        scores = scores - scores.max(axis=1, keepdims=True)
        probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        return probs, top_indices

    def token_logprobs(probs, top_indices):
        out = np.empty(T)
        for t in range(T):
            z = (probs[t][:, None] * expert_logits[t, top_indices[t]]).sum(axis=0)
            zmax = z.max()
            out[t] = z[int(tokens_arr[t])] - (zmax + np.log(np.exp(z - zmax).sum()))
        return out

    probs_e, idx_e = routing(router_engine)
    probs_t, idx_t = routing(router_trainer)
    probs_r, idx_r = routing(router_trainer, replay_indices=idx_e)
    return {"engine": token_logprobs(probs_e, idx_e), "trainer": token_logprobs(probs_t, idx_t),
            "replayed": token_logprobs(probs_r, idx_r)}
'''


# CORRECT_LOOPS: pure Python loops and math; expectation's gradient accumulated token by token with delta_ai - q_i.
CORRECT_LOOPS = r'''
import math

import numpy as np


def _int_like(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule == "trl":
        if not _int_like(limit) or limit < 0:
            raise ValueError("trl: limit must be an int >= 0")
    elif rule == "verl":
        if limit is not None and (not _int_like(limit) or limit < 1):
            raise ValueError("verl: limit must be None or an int >= 1")
    else:
        raise ValueError("rule must be 'trl' or 'verl'")
    if not _int_like(trainer_version):
        raise TypeError("trainer_version must be an int")
    if isinstance(sample_versions, np.ndarray):
        if sample_versions.ndim != 1:
            raise ValueError("sample_versions must be 1-D")
        sample_versions = sample_versions.tolist()
    result = []
    for v in sample_versions:
        if not _int_like(v):
            raise TypeError(f"version {v!r} is not an int")
        if v < 0 or v > trainer_version:
            raise ValueError(f"version {v} is below 0 or above the trainer's {trainer_version}")
        lag = trainer_version - v
        if rule == "trl":
            result.append(lag <= limit)
        elif limit is None:
            result.append(True)
        else:
            result.append(lag + 1 <= limit)
    return np.array(result, dtype=bool)


def _check_number(x, lo, hi, name, lo_closed=True):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number")
    x = float(x)
    if not math.isfinite(x) or x >= hi or (x < lo if lo_closed else x <= lo):
        raise ValueError(f"{name} out of range: {x}")


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    arrays = [np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current)]
    mk = np.asarray(mask)
    if mk.ndim != 2 or mk.shape[0] == 0 or mk.shape[1] == 0:
        raise ValueError("mask must be 2-D with B, L >= 1")
    for a in arrays:
        if a.shape != mk.shape:
            raise ValueError("shapes differ")
    B, L = mk.shape
    adv = np.asarray(advantages, dtype=float)
    if adv.shape != (B,):
        raise ValueError("advantages must be [B]")
    for b in range(B):
        if not math.isfinite(adv[b]):
            raise ValueError("advantages must be finite")
    _check_number(eps_low, 0.0, 1.0, "eps_low")
    _check_number(eps_high, 0.0, 1.0, "eps_high")
    if cap is not None:
        _check_number(cap, 0.0, math.inf, "cap", lo_closed=False)
    lb_all, lp_all, lq_all = arrays
    names = ("weight", "truncated", "ratio", "surrogate", "gradient")
    out = {k: np.zeros((B, L), dtype=np.float64) for k in names}
    for b in range(B):
        for t in range(L):
            on = mk[b, t]
            if on not in (0, 1, True, False):
                raise ValueError("mask must be boolean or 0/1")
            if not on:
                continue
            lb, lp, lq = float(lb_all[b, t]), float(lp_all[b, t]), float(lq_all[b, t])
            for x in (lb, lp, lq):
                if not math.isfinite(x) or x > 0:
                    raise ValueError(f"bad log-prob {x} at ({b}, {t})")
            A = float(adv[b])
            w = math.exp(lp - lb)
            w_bar = w if cap is None else min(w, cap)
            r = math.exp(lq - lp)
            r_clip = min(max(r, 1 - eps_low), 1 + eps_high)
            term_unclipped, term_clipped = r * A, r_clip * A
            out["weight"][b, t] = w
            out["truncated"][b, t] = w_bar
            out["ratio"][b, t] = r
            out["surrogate"][b, t] = w_bar * min(term_unclipped, term_clipped)
            out["gradient"][b, t] = w_bar * r * A if term_unclipped <= term_clipped else 0.0
    return out


def _log_softmax_list(z):
    m = max(z)
    s = math.fsum(math.exp(v - m) for v in z)
    return [v - m - math.log(s) for v in z]


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrs = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    for a in arrs:
        if a.ndim != 1 or a.shape != arrs[0].shape or a.size == 0:
            raise ValueError("all four must be 1-D of one (non-zero) length")
        for v in a:
            if not math.isfinite(v):
                raise ValueError("inputs must be finite")
    _check_number(eps_low, 0.0, 1.0, "eps_low")
    _check_number(eps_high, 0.0, 1.0, "eps_high")
    if cap is not None:
        _check_number(cap, 0.0, math.inf, "cap", lo_closed=False)
    V = arrs[0].size
    lq = _log_softmax_list(arrs[0].tolist())
    lp = _log_softmax_list(arrs[1].tolist())
    lb = _log_softmax_list(arrs[2].tolist())
    A = arrs[3].tolist()
    q = [math.exp(v) for v in lq]
    value = 0.0
    grad = [0.0] * V
    for a in range(V):
        # b * w-bar = min(p, c * b) (no cap: p); b * w-bar * r = that * q / p
        if cap is None:
            log_bw = lp[a]
        else:
            log_bw = min(lp[a], math.log(cap) + lb[a])
        log_r = lq[a] - lp[a]
        r = math.exp(log_r)
        r_clip = min(max(r, 1 - eps_low), 1 + eps_high)
        if r * A[a] <= r_clip * A[a]:
            term = math.exp(log_bw + log_r) * A[a]
            value += term
            # d term / d theta_i = term * (delta_ai - q_i)
            for i in range(V):
                grad[i] += term * ((1.0 if i == a else 0.0) - q[i])
        else:
            value += math.exp(log_bw) * r_clip * A[a]
    return {"value": float(value), "gradient": np.array(grad, dtype=np.float64)}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    X = np.asarray(expert_logits, dtype=float)
    RE = np.asarray(router_engine, dtype=float)
    RT = np.asarray(router_trainer, dtype=float)
    if X.ndim != 3 or X.shape[0] < 1 or X.shape[1] < 1 or X.shape[2] < 1:
        raise ValueError("expert_logits must be [T, E, V]")
    T, E, V = X.shape
    if RE.shape != (T, E) or RT.shape != (T, E):
        raise ValueError("routers must be [T, E]")
    if len(tokens) != T or np.ndim(tokens) != 1:
        raise ValueError("tokens must be [T]")
    for tok in tokens:
        if not _int_like(tok) or not 0 <= tok < V:
            raise ValueError(f"token {tok!r} is not an int in [0, {V})")
    if not (np.isfinite(X).all() and np.isfinite(RE).all() and np.isfinite(RT).all()):
        raise ValueError("non-finite logit")
    if not _int_like(top_k) or not 1 <= top_k <= E:
        raise ValueError("top_k must be an int in [1, E]")

    def one(t, choose, gate):
        chosen = sorted(range(E), key=lambda e: choose[t, e], reverse=True)[:top_k]
        m = max(gate[t, e] for e in chosen)
        weights = [math.exp(gate[t, e] - m) for e in chosen]
        total = sum(weights)
        z = [sum(weights[i] / total * X[t, e, v] for i, e in enumerate(chosen)) for v in range(V)]
        zmax = max(z)
        return z[int(tokens[t])] - zmax - math.log(sum(math.exp(zz - zmax) for zz in z))

    return {
        "engine": np.array([one(t, RE, RE) for t in range(T)]),
        "trainer": np.array([one(t, RT, RT) for t in range(T)]),
        "replayed": np.array([one(t, RE, RT) for t in range(T)]),
    }
'''


# CORRECT_LOG_SPACE: everything in log space (log w-bar = min(log w, log c), sign * exp); gradient as an explicit softmax-Jacobian product.
CORRECT_LOG_SPACE = r'''
import math
import operator

import numpy as np


def _as_index(x, name):
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int, not a bool")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(x).__name__}") from None


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if not isinstance(rule, str) or rule not in {"trl", "verl"}:
        raise ValueError(f"rule must be 'trl' or 'verl', got {rule!r}")
    v = _as_index(trainer_version, "trainer_version")
    if rule == "trl":
        max_lag = _as_index(limit, "limit")
        if max_lag < 0:
            raise ValueError("limit must be >= 0")
    elif limit is None:
        max_lag = None
    else:
        span = _as_index(limit, "limit")
        if span < 1:
            raise ValueError("limit must be >= 1")
        max_lag = span - 1  # a sample of lag k spans k + 1 versions
    raw = np.asarray(sample_versions)
    if raw.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    vs = np.array([_as_index(x, "a sample version") for x in raw.tolist()], dtype=np.int64)
    if (vs < 0).any() or (vs > v).any():
        raise ValueError("a sample version is below 0 or above trainer_version")
    if max_lag is None:
        return np.full(vs.shape, True)
    return (v - vs) <= max_lag


def _check_eps_cap(eps_low, eps_high, cap):
    for e in (eps_low, eps_high):
        if isinstance(e, (bool, np.bool_)) or not np.isscalar(e) or not np.isreal(e):
            raise TypeError("eps must be a real number")
        if not (0 <= e < 1):
            raise ValueError("eps must lie in [0, 1)")
    if cap is not None:
        if isinstance(cap, (bool, np.bool_)) or not np.isscalar(cap) or not np.isreal(cap):
            raise TypeError("cap must be a real number or None")
        if not (np.isfinite(cap) and cap > 0):
            raise ValueError("cap must be positive and finite")


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    M = np.asarray(mask)
    LB, LP, LQ = np.asarray(logp_behaviour), np.asarray(logp_proximal), np.asarray(logp_current)
    ADV = np.asarray(advantages)
    if M.ndim != 2 or M.size == 0:
        raise ValueError("mask must be [B, L] with B, L >= 1")
    if LB.shape != M.shape or LP.shape != M.shape or LQ.shape != M.shape:
        raise ValueError("log-prob arrays and mask must have one shape")
    if ADV.shape != M.shape[:1]:
        raise ValueError("advantages must be [B]")
    if M.dtype.kind not in "biuf" or not np.all((M == 0) | (M == 1)):
        raise ValueError("mask must be boolean or 0/1")
    M = M.astype(bool)
    LB, LP, LQ, ADV = (x.astype(np.float64) for x in (LB, LP, LQ, ADV))
    if not np.isfinite(ADV).all():
        raise ValueError("advantages must be finite")
    _check_eps_cap(eps_low, eps_high, cap)
    with np.errstate(invalid="ignore"):
        bad = M & ~(np.isfinite(LB) & np.isfinite(LP) & np.isfinite(LQ) & (LB <= 0) & (LP <= 0) & (LQ <= 0))
    if bad.any():
        raise ValueError("a response token's log-prob is not finite or is positive")

    LB, LP, LQ = (np.where(M, x, 0.0) for x in (LB, LP, LQ))
    A = np.broadcast_to(ADV[:, None], M.shape)
    log_w = LP - LB
    log_wbar = log_w if cap is None else np.minimum(log_w, math.log(cap))
    log_r = LQ - LP
    lo, hi = math.log1p(-eps_low), math.log1p(eps_high)
    # the unclipped branch is the minimum when A > 0 and r <= 1 + eps_high, or A < 0 and r >= 1 - eps_low
    unclipped_active = np.where(A > 0, log_r <= hi, np.where(A < 0, log_r >= lo, True))
    log_r_clip = np.clip(log_r, lo, hi)
    log_factor = np.where(unclipped_active, log_r, log_r_clip)
    surrogate = np.sign(A) * np.exp(log_wbar + log_factor + np.log(np.abs(np.where(A == 0, 1.0, A))))
    surrogate = np.where(A == 0, 0.0, surrogate)
    gradient = np.where(unclipped_active, surrogate, 0.0)  # d/d log q of wbar * r * A is itself
    out = {"weight": np.exp(log_w), "truncated": np.exp(log_wbar), "ratio": np.exp(log_r),
           "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(M, v, 0.0).astype(np.float64) for k, v in out.items()}


def _logsoftmax(z):
    m = z.max()
    return z - m - np.log(np.exp(z - m).sum())


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    xs = [np.asarray(x, dtype=np.float64) for x in (theta, proximal, behaviour, advantages)]
    if any(x.ndim != 1 for x in xs) or len({x.size for x in xs}) != 1 or xs[0].size < 1:
        raise ValueError("the four arrays must be 1-D of one length")
    if not all(np.isfinite(x).all() for x in xs):
        raise ValueError("the four arrays must be finite")
    _check_eps_cap(eps_low, eps_high, cap)
    lq, lp, lb = (_logsoftmax(x) for x in xs[:3])
    A = xs[3]
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)  # log(b * w-bar), exact when b -> 0
    log_r = lq - lp
    lo, hi = math.log1p(-eps_low), math.log1p(eps_high)
    active = np.where(A > 0, log_r <= hi, np.where(A < 0, log_r >= lo, True))
    log_factor = np.where(active, log_r, np.clip(log_r, lo, hi))
    terms = A * np.exp(log_bw + log_factor)
    value = float(terms.sum())
    # dJ/dtheta = J_softmax^T (dJ/dq), J_softmax = diag(q) - q q^T, dJ/dq_a = active * A * b w-bar / p
    q = np.exp(lq)
    jac = np.diag(q) - np.outer(q, q)
    dJ_dlogq = np.where(active, terms, 0.0)
    dJ_dq = np.divide(dJ_dlogq, q, out=np.zeros_like(q), where=q > 0)
    grad = jac.T @ dJ_dq
    return {"value": value, "gradient": grad.astype(np.float64)}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    X = np.asarray(expert_logits, dtype=np.float64)
    se = np.asarray(router_engine, dtype=np.float64)
    st = np.asarray(router_trainer, dtype=np.float64)
    tk = np.asarray(tokens)
    if X.ndim != 3 or X.size == 0 or se.shape != X.shape[:2] or st.shape != X.shape[:2] or tk.shape != X.shape[:1]:
        raise ValueError("shapes disagree: expert_logits [T, E, V], routers [T, E], tokens [T]")
    T, E, V = X.shape
    if not (np.isfinite(X).all() and np.isfinite(se).all() and np.isfinite(st).all()):
        raise ValueError("logits must be finite")
    if tk.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if (tk < 0).any() or (tk >= V).any():
        raise ValueError("tokens must lie in [0, V)")
    k = _as_index(top_k, "top_k")
    if not 1 <= k <= E:
        raise ValueError("top_k must lie in [1, E]")
    rows = np.arange(T)

    def logp(select, gate_logits):
        idx = np.argpartition(-select, k - 1, axis=1)[:, :k]
        s = np.take_along_axis(gate_logits, idx, axis=1)
        log_g = s - s.max(axis=1, keepdims=True)
        log_g = log_g - np.log(np.exp(log_g).sum(axis=1, keepdims=True))
        z = (np.exp(log_g)[:, :, None] * X[rows[:, None], idx]).sum(axis=1)
        m = z.max(axis=1)
        return z[rows, tk] - m - np.log(np.exp(z - m[:, None]).sum(axis=1))

    return {"engine": logp(se, se), "trainer": logp(st, st), "replayed": logp(se, st)}
'''


# CORRECT_TERSE: terse one-condition validation, np.argsort top-k, expectation by per-token enumeration with dq(a)/dtheta = q(a)(e_a - q).
CORRECT_TERSE = r'''
import math

import numpy as np


def _int(x):
    return type(x) is int or isinstance(x, np.integer)


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    v = np.array(sample_versions)
    if (rule not in ("trl", "verl") or not _int(trainer_version) or v.ndim != 1
            or (v.size and v.dtype.kind not in "iu") or (v < 0).any() or (v > trainer_version).any()
            or (rule == "trl" and not (_int(limit) and limit >= 0))
            or (rule == "verl" and limit is not None and not (_int(limit) and limit >= 1))):
        raise ValueError("bad staleness input")
    lag = trainer_version - v.astype(np.int64)
    if rule == "trl":
        return lag <= limit
    return np.ones(len(v), bool) if limit is None else lag < limit


def _num(x):
    return not isinstance(x, (bool, np.bool_)) and isinstance(x, (int, float, np.integer, np.floating))


def _bad_eps_cap(eps_low, eps_high, cap):
    return (not (_num(eps_low) and 0 <= eps_low < 1) or not (_num(eps_high) and 0 <= eps_high < 1)
            or (cap is not None and not (_num(cap) and 0 < cap < np.inf)))


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    b, p, q = (np.array(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    A, m = np.array(advantages, dtype=float), np.array(mask)
    if m.ndim != 2 or 0 in m.shape or not (b.shape == p.shape == q.shape == m.shape) or A.shape != (m.shape[0],):
        raise ValueError("bad shapes")
    if not set(np.unique(m).tolist()) <= {0, 1}:
        raise ValueError("mask must be 0/1")
    m = m.astype(bool)
    toks = np.concatenate([b[m], p[m], q[m]])
    if not np.isfinite(toks).all() or (toks > 0).any() or not np.isfinite(A).all() or _bad_eps_cap(eps_low, eps_high, cap):
        raise ValueError("bad values")
    b[~m] = p[~m] = q[~m] = 0.0
    A = A[:, None] * np.ones_like(b)
    w = np.exp(p - b)
    wb = w if cap is None else np.minimum(w, cap)
    r = np.exp(q - p)
    rc = np.clip(r, 1 - eps_low, 1 + eps_high)
    s = wb * np.minimum(r * A, rc * A)
    g = wb * r * A * (r * A <= rc * A)
    return {k: (x * m).astype(np.float64) for k, x in
            dict(weight=w, truncated=wb, ratio=r, surrogate=s, gradient=g).items()}


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    t, pr, be, A = (np.array(x, dtype=float) for x in (theta, proximal, behaviour, advantages))
    if (t.ndim != 1 or t.size == 0 or not (t.shape == pr.shape == be.shape == A.shape)
            or not all(np.isfinite(x).all() for x in (t, pr, be, A)) or _bad_eps_cap(eps_low, eps_high, cap)):
        raise ValueError("bad input")
    ls = lambda z: z - z.max() - np.log(np.exp(z - z.max()).sum())
    lq, lp, lb = ls(t), ls(pr), ls(be)
    q = np.exp(lq)
    V = len(t)
    value, grad = 0.0, np.zeros(V)
    for a in range(V):  # enumerate the tokens the sampler can draw
        bw = math.exp(lp[a]) if cap is None else math.exp(min(lp[a], math.log(cap) + lb[a]))  # b * w-bar
        r = math.exp(lq[a] - lp[a])
        rc = min(max(r, 1 - eps_low), 1 + eps_high)
        value += bw * min(r * A[a], rc * A[a])
        if r * A[a] <= rc * A[a]:
            dq_a = q[a] * (np.eye(V)[a] - q)  # d q(a) / d theta
            grad += bw * A[a] / math.exp(lp[a]) * dq_a  # d (b w-bar q(a)/p(a) A) / d theta
    return {"value": float(value), "gradient": grad}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    X, RE, RT, tok = (np.array(expert_logits, dtype=float), np.array(router_engine, dtype=float),
                      np.array(router_trainer, dtype=float), np.array(tokens))
    if (X.ndim != 3 or 0 in X.shape or RE.shape != X.shape[:2] or RT.shape != X.shape[:2] or tok.shape != X.shape[:1]
            or not all(np.isfinite(x).all() for x in (X, RE, RT)) or tok.dtype.kind not in "iu"
            or (tok < 0).any() or (tok >= X.shape[2]).any() or not _int(top_k) or not 1 <= top_k <= X.shape[1]):
        raise ValueError("bad input")
    out = {"engine": [], "trainer": [], "replayed": []}
    for t in range(X.shape[0]):
        for key, chooser, gater in (("engine", RE, RE), ("trainer", RT, RT), ("replayed", RE, RT)):
            S = np.argsort(chooser[t])[::-1][:top_k]
            g = np.exp(gater[t, S] - gater[t, S].max())
            g = g / g.sum()
            z = g @ X[t, S]
            out[key].append(z[tok[t]] - z.max() - np.log(np.exp(z - z.max()).sum()))
    return {k: np.array(v, dtype=np.float64) for k, v in out.items()}
'''


# WRONG_WEIGHT_INVERTED (from CORRECT_VECTORISED): behaviour weight upside down: w = pi_behav / pi_prox (and b*w-bar built from it).
# OPEN_CHECKS: caught by the open check(s) check-weights, check-expectation
WRONG_WEIGHT_INVERTED = r'''
# WRONG_WEIGHT_INVERTED: behaviour weight upside down: w = pi_behav / pi_prox (and b*w-bar built from it).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lb - lp)  # MISTAKE: behaviour weight inverted (pi_behav / pi_prox)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    # MISTAKE: weight inverted, w = b / p, so b * w-bar = b * min(b / p, c)
    log_bw = lb + ((lb - lp) if cap is None else np.minimum(lb - lp, math.log(cap)))
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_RATIO_AGAINST_BEHAVIOUR (from CORRECT_VECTORISED): PPO ratio taken against the sampler (pi_theta / pi_behav, the coupled ratio) instead of the proximal policy.
# OPEN_CHECKS: caught by the open check(s) check-weights, check-expectation
WRONG_RATIO_AGAINST_BEHAVIOUR = r'''
# WRONG_RATIO_AGAINST_BEHAVIOUR: PPO ratio taken against the sampler (pi_theta / pi_behav, the coupled ratio) instead of the proximal policy.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lb)  # MISTAKE: ratio against the behaviour policy, not the proximal one
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lb  # MISTAKE: ratio against the behaviour policy, not the proximal one
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_RATIO_UPSIDE_DOWN (from CORRECT_VECTORISED): PPO ratio upside down: pi_prox / pi_theta.
# OPEN_CHECKS: caught by the open check(s) check-weights, check-expectation
WRONG_RATIO_UPSIDE_DOWN = r'''
# WRONG_RATIO_UPSIDE_DOWN: PPO ratio upside down: pi_prox / pi_theta.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lp - lq)  # MISTAKE: ratio upside down (pi_prox / pi_theta)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lp - lq  # MISTAKE: ratio upside down
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_CAP_TWO_SIDED (from CORRECT_VECTORISED): cap applied on both sides, w-bar = clip(w, 1/c, c) (as TRL's vllm_importance_sampling clip_min/clip_max or IcePop-style bounds suggest), instead of min(w, c).
# OPEN_CHECKS: caught by the open check(s) check-expectation
WRONG_CAP_TWO_SIDED = r'''
# WRONG_CAP_TWO_SIDED: cap applied on both sides, w-bar = clip(w, 1/c, c) (as TRL's vllm_importance_sampling clip_min/clip_max or IcePop-style bounds suggest), instead of min(w, c).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    # MISTAKE: truncates from below too
    truncated = weight if cap is None else np.clip(weight, 1.0 / float(cap), float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    # MISTAKE: truncates from below too: b * clip(p/b, 1/c, c)
    log_bw = lp if cap is None else lb + np.clip(lp - lb, -math.log(cap), math.log(cap))
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_EXPECTATION_CAP_DROPS_B (from CORRECT_VECTORISED): simplifies b*min(p/b, c) to min(p, c) instead of min(p, c*b) (the cap loses its factor b).
# OPEN_CHECKS: caught by the open check(s) check-expectation
WRONG_EXPECTATION_CAP_DROPS_B = r'''
# WRONG_EXPECTATION_CAP_DROPS_B: simplifies b*min(p/b, c) to min(p, c) instead of min(p, c*b) (the cap loses its factor b).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap))  # MISTAKE: min(p, c), not min(p, c b)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_TRL_OFF_BY_ONE (from CORRECT_VECTORISED): TRL rule off by one: keeps k < max_staleness (TRL drops only when staleness > max_staleness).
# OPEN_CHECKS: caught by the open check(s) check-weights
WRONG_TRL_OFF_BY_ONE = r'''
# WRONG_TRL_OFF_BY_ONE: TRL rule off by one: keeps k < max_staleness (TRL drops only when staleness > max_staleness).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag < limit  # MISTAKE: off by one, TRL keeps lag == limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_VERL_LIKE_TRL (from CORRECT_VECTORISED): treats verl's max_off_policy_threshold like TRL's max_staleness (k <= limit, forgetting the +1 span).
# OPEN_CHECKS: caught by the open check(s) check-weights
WRONG_VERL_LIKE_TRL = r'''
# WRONG_VERL_LIKE_TRL: treats verl's max_off_policy_threshold like TRL's max_staleness (k <= limit, forgetting the +1 span).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag <= limit  # MISTAKE: verl's threshold counts versions spanned (k + 1), not the lag


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_VERL_ACCEPTS_ZERO (from CORRECT_VECTORISED): validation: accepts verl limit 0 (and keeps nothing) instead of raising; the same >= 0 test as TRL's.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_VERL_ACCEPTS_ZERO = r'''
# WRONG_VERL_ACCEPTS_ZERO: validation: accepts verl limit 0 (and keeps nothing) instead of raising; the same >= 0 test as TRL's.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 0:  # MISTAKE: verl's threshold must be >= 1 (it counts versions)
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_GRADIENT_THROUGH_CLIPPED (from CORRECT_VECTORISED): gradient taken through the clipped branch too (w-bar r A everywhere, as if there were no clip).
# OPEN_CHECKS: caught by the open check(s) check-weights, check-expectation
WRONG_GRADIENT_THROUGH_CLIPPED = r'''
# WRONG_GRADIENT_THROUGH_CLIPPED: gradient taken through the clipped branch too (w-bar r A everywhere, as if there were no clip).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = truncated * ratio * A  # MISTAKE: ignores that the clipped branch has no gradient
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = bwr * A  # MISTAKE: gradient through the clipped branch too
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_GRADIENT_ZERO_OUTSIDE_RANGE (from CORRECT_VECTORISED): gradient zeroed whenever r is outside [1-eps_low, 1+eps_high], whatever A's sign (the pessimistic min keeps the unclipped branch for r > 1+eps with A < 0 and r < 1-eps with A > 0).
# OPEN_CHECKS: NOT caught by the open checks
WRONG_GRADIENT_ZERO_OUTSIDE_RANGE = r'''
# WRONG_GRADIENT_ZERO_OUTSIDE_RANGE: gradient zeroed whenever r is outside [1-eps_low, 1+eps_high], whatever A's sign (the pessimistic min keeps the unclipped branch for r > 1+eps with A < 0 and r < 1-eps with A > 0).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    inside = (ratio >= 1.0 - eps_low) & (ratio <= 1.0 + eps_high)
    gradient = np.where(inside, truncated * ratio * A, 0.0)  # MISTAKE: 'clipped' read as 'outside the range'
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r >= 1.0 - eps_low) & (r <= 1.0 + eps_high)  # MISTAKE: ignores the sign of A
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_GRADIENT_WRT_RATIO (from CORRECT_VECTORISED): 'gradient' returned with respect to r (w-bar A) instead of log pi_theta (w-bar r A).
# OPEN_CHECKS: caught by the open check(s) check-weights
WRONG_GRADIENT_WRT_RATIO = r'''
# WRONG_GRADIENT_WRT_RATIO: 'gradient' returned with respect to r (w-bar A) instead of log pi_theta (w-bar r A).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * A, 0.0)  # MISTAKE: d/dr, not d/dlog pi_theta
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_FORGOT_PADDING (from CORRECT_VECTORISED): forgets padding: factors computed everywhere and not zeroed (padding log-probs 0 give weight 1 there).
# OPEN_CHECKS: caught by the open check(s) check-weights
WRONG_FORGOT_PADDING = r'''
# WRONG_FORGOT_PADDING: forgets padding: factors computed everywhere and not zeroed (padding log-probs 0 give weight 1 there).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.asarray(x, dtype=float) for x in (lb, lp, lq))  # MISTAKE: padding kept as is
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: v.astype(np.float64) for k, v in out.items()}  # MISTAKE: padding not zeroed


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_PADDING_MULTIPLY_MASK (from CORRECT_VECTORISED): zeroes padding by multiplying by the mask after the arithmetic, as verl's `* response_mask` does: NaN padding gives NaN * 0 = NaN.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_PADDING_MULTIPLY_MASK = r'''
# WRONG_PADDING_MULTIPLY_MASK: zeroes padding by multiplying by the mask after the arithmetic, as verl's `* response_mask` does: NaN padding gives NaN * 0 = NaN.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    with np.errstate(invalid='ignore'):
        return {k: (v * m).astype(np.float64) for k, v in out.items()}  # MISTAKE: NaN * 0 is NaN


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_VALIDATES_PADDING (from CORRECT_VECTORISED): checks every entry, padding included, for finite non-positive log-probs, so NaN padding (allowed) raises.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_VALIDATES_PADDING = r'''
# WRONG_VALIDATES_PADDING: checks every entry, padding included, for finite non-positive log-probs, so NaN padding (allowed) raises.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x  # MISTAKE: validates padding too, which may hold NaN
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_SHAPES_BROADCAST (from CORRECT_VECTORISED): compares only the mask's shape with the first array; a [1, L] proximal or current row broadcasts silently.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_SHAPES_BROADCAST = r'''
# WRONG_SHAPES_BROADCAST: compares only the mask's shape with the first array; a [1, L] proximal or current row broadcasts silently.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if lb.shape != m.shape:  # MISTAKE: relies on NumPy to complain about the others (it broadcasts)
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, np.broadcast_to(lp, m.shape), np.broadcast_to(lq, m.shape)):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_SEQUENCE_LEVEL_WEIGHT (from CORRECT_VECTORISED): behaviour weight per sequence (product over the response), verl's RolloutCorrectionConfig default rollout_is='sequence', where the notebook asks for a per-token w.
# OPEN_CHECKS: caught by the open check(s) check-weights
WRONG_SEQUENCE_LEVEL_WEIGHT = r'''
# WRONG_SEQUENCE_LEVEL_WEIGHT: behaviour weight per sequence (product over the response), verl's RolloutCorrectionConfig default rollout_is='sequence', where the notebook asks for a per-token w.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    # MISTAKE: sequence-level weight, exp(sum of token log-ratios) broadcast over the response
    weight = np.exp(np.sum(np.where(m, lp - lb, 0.0), axis=1, keepdims=True)) * np.ones_like(lp)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_EXPECTATION_NAIVE_UNDERFLOW (from CORRECT_VECTORISED): expectation computed literally, b = softmax(behaviour), w = p / b: a token b underflows to 0 gives 0 * inf = NaN (or drops its share) instead of its exact share.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_EXPECTATION_NAIVE_UNDERFLOW = r'''
# WRONG_EXPECTATION_NAIVE_UNDERFLOW: expectation computed literally, b = softmax(behaviour), w = p / b: a token b underflows to 0 gives 0 * inf = NaN (or drops its share) instead of its exact share.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    b, p = np.exp(lb), np.exp(lp)
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        w = p / b  # MISTAKE: not simplified; b underflows to 0 and w overflows
        w_bar = w if cap is None else np.minimum(w, cap)
        log_bw = np.log(b * w_bar)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_EXPECTATION_GRADIENT_NO_SOFTMAX (from CORRECT_VECTORISED): expectation's gradient treats d log q(a)/d theta as e_a (forgets the - q term of the softmax).
# OPEN_CHECKS: caught by the open check(s) check-expectation
WRONG_EXPECTATION_GRADIENT_NO_SOFTMAX = r'''
# WRONG_EXPECTATION_GRADIENT_NO_SOFTMAX: expectation's gradient treats d log q(a)/d theta as e_a (forgets the - q term of the softmax).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c  # MISTAKE: grad log q(a) is e_a - q, not e_a
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_REPLAY_GATES_TOO (from CORRECT_VECTORISED): replays the engine's gates as well as its choices (replayed == engine), where R3 replays only the expert indices and keeps the trainer's gates (RouterReplay.get_replay_topk gathers the trainer's scores).
# OPEN_CHECKS: NOT caught by the open checks
WRONG_REPLAY_GATES_TOO = r'''
# WRONG_REPLAY_GATES_TOO: replays the engine's gates as well as its choices (replayed == engine), where R3 replays only the expert indices and keeps the trainer's gates (RouterReplay.get_replay_topk gathers the trainer's scores).

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, se, tok, top_k),  # MISTAKE: engine gates replayed too
    }
'''


# WRONG_REPLAY_GATES_NOT_CHOICES (from CORRECT_VECTORISED): replays the gates instead of the expert choices: S from the trainer's router, gates from the engine's logits.
# OPEN_CHECKS: caught by the open check(s) check-routing
WRONG_REPLAY_GATES_NOT_CHOICES = r'''
# WRONG_REPLAY_GATES_NOT_CHOICES: replays the gates instead of the expert choices: S from the trainer's router, gates from the engine's logits.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, se, tok, top_k, choose_from=st),  # MISTAKE: trainer choice, engine gates
    }
'''


# WRONG_PRE_SOFTMAX_GATES (from CORRECT_VECTORISED): gates from a softmax over all E experts, gathered at the chosen ones and not renormalised (Megatron's moe_router_pre_softmax=True), instead of a softmax over the chosen experts only.
# OPEN_CHECKS: caught by the open check(s) check-routing
WRONG_PRE_SOFTMAX_GATES = r'''
# WRONG_PRE_SOFTMAX_GATES: gates from a softmax over all E experts, gathered at the chosen ones and not renormalised (Megatron's moe_router_pre_softmax=True), instead of a softmax over the chosen experts only.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(-chooser, axis=1, kind="stable")[:, :top_k]  # [T, k]
    full = np.exp(router - router.max(axis=1, keepdims=True))
    full /= full.sum(axis=1, keepdims=True)
    g = np.take_along_axis(full, chosen, axis=1)  # MISTAKE: softmax over all experts, not the chosen
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# WRONG_VERL_DUAL_CLIP (from CORRECT_TRAINER_TRANSCRIPTION): transcribes verl's compute_policy_loss_vanilla whole: dual clip clip_ratio_c = 3 for A < 0 and the +-20 log-ratio clamps, which the notebook's objective does not have.
# OPEN_CHECKS: NOT caught by the open checks
WRONG_VERL_DUAL_CLIP = r'''
# WRONG_VERL_DUAL_CLIP: transcribes verl's compute_policy_loss_vanilla whole: dual clip clip_ratio_c = 3 for A < 0 and the +-20 log-ratio clamps, which the notebook's objective does not have.

import math

import numpy as np


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule == "trl":
        max_staleness = limit
        if type(max_staleness) is not int and not isinstance(max_staleness, np.integer):
            raise TypeError(f"max_staleness must be an int, got {type(max_staleness).__name__}")
        if max_staleness < 0:
            raise ValueError("max_staleness must be >= 0")
    elif rule == "verl":
        max_off_policy_threshold = limit
        # ReplayBuffer.__init__: assert isinstance(threshold, int) and threshold > 0 (or None)
        if max_off_policy_threshold is not None:
            if type(max_off_policy_threshold) is not int and not isinstance(max_off_policy_threshold, np.integer):
                raise TypeError("max_off_policy_threshold must be an int or None")
            if max_off_policy_threshold <= 0:
                raise ValueError("max_off_policy_threshold must be an integer greater than 0, or None")
    else:
        raise ValueError(f"unknown rule {rule!r}: 'trl' or 'verl'")
    if type(trainer_version) is not int and not isinstance(trainer_version, np.integer):
        raise TypeError("trainer_version must be an int")
    kept = []
    for model_version in list(np.asarray(sample_versions).reshape(-1)) if np.ndim(sample_versions) == 1 else [None]:
        if model_version is None:
            raise ValueError("sample_versions must be 1-D")
        if not isinstance(model_version, (int, np.integer)) or isinstance(model_version, (bool, np.bool_)):
            raise TypeError("sample versions must be ints")
        if model_version < 0 or model_version > trainer_version:
            raise ValueError(f"sample version {model_version} outside [0, {trainer_version}]")
        if rule == "trl":
            # RolloutQueueDataset.__iter__: staleness = version - sample.model_version; drop if > max_staleness
            staleness = trainer_version - model_version
            kept.append(not staleness > limit)
        else:
            # ReplayBufferAsync._stale_terminal_keys: drop if global_steps - prompt_global_steps + 1 > threshold
            if limit is None:
                kept.append(True)
            else:
                kept.append(not (trainer_version - model_version + 1 > limit))
    return np.array(kept, dtype=bool)


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    rollout_log_prob = np.asarray(logp_behaviour, dtype=np.float64)
    old_log_prob = np.asarray(logp_proximal, dtype=np.float64)
    log_prob = np.asarray(logp_current, dtype=np.float64)
    response_mask = np.asarray(mask)
    advantages = np.asarray(advantages, dtype=np.float64)
    # shapes first (compute_rollout_correction_and_rejection_mask compares them before any arithmetic too)
    if response_mask.ndim != 2 or 0 in response_mask.shape:
        raise ValueError(f"response_mask must be [B, L] with B, L >= 1, got {response_mask.shape}")
    for name, t in (("rollout", rollout_log_prob), ("old", old_log_prob), ("current", log_prob)):
        if t.shape != response_mask.shape:
            raise ValueError(f"{name} log_prob shape {t.shape} does not match response_mask shape {response_mask.shape}")
    if advantages.shape != (response_mask.shape[0],):
        raise ValueError(f"advantages must have shape ({response_mask.shape[0]},), got {advantages.shape}")
    if not np.isfinite(advantages).all():
        raise ValueError("advantages must be finite")
    if not np.isin(response_mask, (0, 1)).all():
        raise ValueError("response_mask must be boolean or 0/1")
    response_mask = response_mask.astype(bool)
    for eps in (eps_low, eps_high):
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)) or not 0 <= eps < 1:
            raise ValueError(f"clip range must be in [0, 1), got {eps!r}")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, (int, float, np.number)) or not (0 < cap < math.inf):
            raise ValueError(f"rollout_is_threshold must be positive and finite, got {cap!r}")
    for t in (rollout_log_prob, old_log_prob, log_prob):
        valid = t[response_mask]
        if not np.isfinite(valid).all() or (valid > 0).any():
            raise ValueError("log-probabilities of response tokens must be finite and <= 0")
    # masked_fill the padding before any arithmetic (it may hold NaN)
    rollout_log_prob = np.where(response_mask, rollout_log_prob, 0.0)
    old_log_prob = np.where(response_mask, old_log_prob, 0.0)
    log_prob = np.where(response_mask, log_prob, 0.0)

    # verl compute_rollout_correction_weights, rollout_is="token": exp(old - rollout), * mask, clamp(max=threshold)
    log_ratio = old_log_prob - rollout_log_prob
    raw_rollout_is_weights = np.exp(np.clip(log_ratio, -20.0, 20.0)) * response_mask  # MISTAKE: SAFETY_BOUND
    if cap is None:
        rollout_is_weights = raw_rollout_is_weights
    else:
        rollout_is_weights = np.minimum(raw_rollout_is_weights, cap)  # .clamp(max=rollout_is_threshold_upper)
    # rollout_is_weights = rollout_is_weights.detach()

    # verl compute_policy_loss_vanilla (without the dual clip, which the notebook's objective does not have)
    negative_approx_kl = np.clip(log_prob - old_log_prob, -20.0, 20.0)  # MISTAKE: verl's stability clamp
    ratio = np.exp(negative_approx_kl)
    adv = advantages[:, None]
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * np.clip(ratio, 1 - eps_low, 1 + eps_high)
    clip_pg_losses1 = np.maximum(pg_losses1, pg_losses2)
    # MISTAKE: verl's dual clip (clip_ratio_c = 3.0) kept from compute_policy_loss_vanilla
    clip_ratio_c = 3.0
    pg_losses3 = -adv * clip_ratio_c
    clip_pg_losses2 = np.minimum(pg_losses3, clip_pg_losses1)
    dual_clipped = (adv < 0) & (clip_pg_losses1 > pg_losses3)
    pg_losses = np.where(adv < 0, clip_pg_losses2, clip_pg_losses1) * rollout_is_weights
    # torch.maximum sends the gradient to the larger loss; pg_clipfrac counts torch.gt(pg_losses2, pg_losses1)
    is_clipped = pg_losses2 > pg_losses1
    # d(-pg_losses)/d log_prob = w-bar * A * d ratio / d log_prob = w-bar * A * ratio on the unclipped branch
    grad = np.where(is_clipped | dual_clipped, 0.0, rollout_is_weights * adv * ratio)

    def masked(x):
        return np.where(response_mask, x, 0.0).astype(np.float64)

    return {"weight": masked(raw_rollout_is_weights), "truncated": masked(rollout_is_weights),
            "ratio": masked(ratio), "surrogate": masked(-pg_losses), "gradient": masked(grad)}


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    theta, proximal, behaviour, advantages = (np.asarray(x, dtype=np.float64)
                                              for x in (theta, proximal, behaviour, advantages))
    V = theta.shape[0] if theta.ndim == 1 else -1
    if V < 1 or any(x.shape != (V,) for x in (proximal, behaviour, advantages)):
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D arrays of one length")
    if not all(np.isfinite(x).all() for x in (theta, proximal, behaviour, advantages)):
        raise ValueError("theta, proximal, behaviour and advantages must be finite")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float, np.number))
                            or not (0 < cap < math.inf)):
        raise ValueError(f"cap must be None or positive and finite, got {cap!r}")

    def log_softmax(z):
        z = z - z.max()
        return z - np.log(np.exp(z).sum())

    lq, lp, lb = log_softmax(theta), log_softmax(proximal), log_softmax(behaviour)
    # Enumerate the V tokens as V one-token responses, all three policies' log-probs of each token.
    # b * w-bar = b * min(p / b, c) = p * min(1, c * b / p): no division by an underflowing b.
    per_token = decoupled_weights(lp[:, None], lp[:, None], lq[:, None], advantages, np.ones((V, 1), dtype=bool),
                                  eps_low=eps_low, eps_high=eps_high)  # behaviour := proximal, so w = 1
    trunc = np.ones(V) if cap is None else np.minimum(1.0, np.exp(math.log(cap) + lb - lp))
    mass = np.exp(lp) * trunc  # = b * w-bar for each token
    value = float(np.sum(mass * per_token["surrogate"][:, 0]))
    # d/d theta of sum_a mass_a * f_a(log q_a) = sum_a mass_a * f'_a * (e_a - q)
    coef = mass * per_token["gradient"][:, 0]
    q = np.exp(lq)
    gradient = np.zeros(V)
    for a in range(V):
        e_a = np.zeros(V)
        e_a[a] = 1.0
        gradient += coef[a] * (e_a - q)
    return {"value": value, "gradient": gradient}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    expert_logits = np.asarray(expert_logits, dtype=np.float64)
    router_engine = np.asarray(router_engine, dtype=np.float64)
    router_trainer = np.asarray(router_trainer, dtype=np.float64)
    tokens_arr = np.asarray(tokens)
    if expert_logits.ndim != 3 or 0 in expert_logits.shape:
        raise ValueError("expert_logits must be [T, E, V]")
    T, E, V = expert_logits.shape
    if router_engine.shape != (T, E) or router_trainer.shape != (T, E) or tokens_arr.shape != (T,):
        raise ValueError("shapes disagree")
    for x in (expert_logits, router_engine, router_trainer):
        if not np.isfinite(x).all():
            raise ValueError("logits must be finite")
    if tokens_arr.dtype.kind not in "iu" or (tokens_arr < 0).any() or (tokens_arr >= V).any():
        raise ValueError("tokens must be ints in [0, V)")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= E:
        raise ValueError(f"top_k must be an int in [1, {E}]")

    def compute_topk(scores, topk):  # torch.topk(scores, k=topk, dim=1)
        top_indices = np.argsort(-scores, axis=1)[:, :topk]
        return np.take_along_axis(scores, top_indices, axis=1), top_indices

    def routing(logits, replay_indices=None):
        # topk_routing_with_score_function, score_function="softmax", use_pre_softmax=False
        if replay_indices is None:
            scores, top_indices = compute_topk(logits, top_k)
        else:  # RouterReplay.get_replay_topk: scores.gather(1, indices) for the replayed indices
            top_indices = replay_indices
            scores = np.take_along_axis(logits, top_indices, axis=1)
        scores = scores - scores.max(axis=1, keepdims=True)
        probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        return probs, top_indices

    def token_logprobs(probs, top_indices):
        out = np.empty(T)
        for t in range(T):
            z = (probs[t][:, None] * expert_logits[t, top_indices[t]]).sum(axis=0)
            zmax = z.max()
            out[t] = z[int(tokens_arr[t])] - (zmax + np.log(np.exp(z - zmax).sum()))
        return out

    probs_e, idx_e = routing(router_engine)
    probs_t, idx_t = routing(router_trainer)
    probs_r, idx_r = routing(router_trainer, replay_indices=idx_e)
    return {"engine": token_logprobs(probs_e, idx_e), "trainer": token_logprobs(probs_t, idx_t),
            "replayed": token_logprobs(probs_r, idx_r)}
'''


# WRONG_TOPK_SMALLEST (from CORRECT_VECTORISED): sorts the router logits ascending and takes the k smallest.
# OPEN_CHECKS: caught by the open check(s) check-routing
WRONG_TOPK_SMALLEST = r'''
# WRONG_TOPK_SMALLEST: sorts the router logits ascending and takes the k smallest.

import math
import numbers

import numpy as np


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_clip_and_cap(eps_low, eps_high, cap):
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if not _is_real(eps) or not (0.0 <= float(eps) < 1.0):
            raise ValueError(f"{name} must be a number in [0, 1), got {eps!r}")
    if cap is not None and (not _is_real(cap) or not math.isfinite(float(cap)) or float(cap) <= 0.0):
        raise ValueError(f"cap must be None or a positive finite number, got {cap!r}")


def staleness_kept(sample_versions, trainer_version: int, limit, rule: str) -> np.ndarray:
    """True where a sample is kept under TRL's max_staleness ("trl") or verl's max_off_policy_threshold ("verl")."""
    if rule not in ("trl", "verl"):
        raise ValueError(f"unknown rule {rule!r}")
    if not _is_int(trainer_version) or trainer_version < 0:
        raise ValueError(f"trainer_version must be an int >= 0, got {trainer_version!r}")
    versions = np.asarray(sample_versions)
    if versions.ndim != 1:
        raise ValueError("sample_versions must be 1-D")
    if versions.size and versions.dtype.kind not in "iu":
        raise TypeError("sample_versions must hold ints")
    versions = versions.astype(np.int64)
    if np.any(versions < 0) or np.any(versions > trainer_version):
        raise ValueError("a sample version lies outside [0, trainer_version]")
    lag = trainer_version - versions
    if rule == "trl":
        if not _is_int(limit) or limit < 0:
            raise ValueError(f"TRL's max_staleness must be an int >= 0, got {limit!r}")
        return lag <= limit
    if limit is None:
        return np.ones(versions.shape, dtype=bool)
    if not _is_int(limit) or limit < 1:
        raise ValueError(f"verl's max_off_policy_threshold must be None or an int >= 1, got {limit!r}")
    return lag + 1 <= limit


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low: float = 0.2,
                      eps_high: float = 0.2, cap: float | None = None) -> dict[str, np.ndarray]:
    """Per-token factors of the decoupled PPO objective: weight, truncated, ratio, surrogate, gradient ([B, L])."""
    lb, lp, lq = (np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current))
    adv = np.asarray(advantages, dtype=float)
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"mask must be 2-D [B, L] with B, L >= 1, got shape {m.shape}")
    if not (lb.shape == lp.shape == lq.shape == m.shape):
        raise ValueError(f"shapes differ: {lb.shape}, {lp.shape}, {lq.shape}, mask {m.shape}")
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError(f"advantages must be finite with shape ({m.shape[0]},), got {adv.shape}")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be boolean or 0/1")
    m = m.astype(bool)
    _check_clip_and_cap(eps_low, eps_high, cap)
    for x in (lb, lp, lq):
        tok = x[m]
        if not np.all(np.isfinite(tok)) or np.any(tok > 0):
            raise ValueError("a response token's log-prob is not finite or is positive")

    lb, lp, lq = (np.where(m, x, 0.0) for x in (lb, lp, lq))
    A = adv[:, None]
    weight = np.exp(lp - lb)
    truncated = weight if cap is None else np.minimum(weight, float(cap))
    ratio = np.exp(lq - lp)
    unclipped = ratio * A
    clipped = np.clip(ratio, 1.0 - eps_low, 1.0 + eps_high) * A
    surrogate = truncated * np.minimum(unclipped, clipped)
    gradient = np.where(unclipped <= clipped, truncated * ratio * A, 0.0)
    zero = ~m
    out = {"weight": weight, "truncated": truncated, "ratio": ratio, "surrogate": surrogate, "gradient": gradient}
    return {k: np.where(zero, 0.0, v).astype(np.float64) for k, v in out.items()}


def _log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low: float = 0.2, eps_high: float = 0.2,
                          cap: float | None = None) -> dict:
    """J = E_behaviour[w-bar min(r A, clip(r) A)] over one step, and its gradient with respect to theta."""
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("theta, proximal, behaviour and advantages must be 1-D of one length")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("inputs must be finite")
    _check_clip_and_cap(eps_low, eps_high, cap)
    t, p_logits, b_logits, A = arrays
    lq, lp, lb = _log_softmax(t), _log_softmax(p_logits), _log_softmax(b_logits)
    # b * w-bar = min(p, c b), computed in log space so that b = 0 still gives its exact share
    log_bw = lp if cap is None else np.minimum(lp, math.log(cap) + lb)
    log_r = lq - lp
    bw = np.exp(log_bw)
    bwr = np.exp(log_bw + log_r)  # b * w-bar * r
    r = np.exp(log_r)
    clip_r = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
    unclipped, clipped = bwr * A, bw * clip_r * A
    value = float(np.sum(np.minimum(unclipped, clipped)))
    active = (r * A) <= (clip_r * A)
    c = np.where(active, bwr * A, 0.0)  # d term_a / d log q(a)
    q = np.exp(lq)
    gradient = c - q * np.sum(c)
    return {"value": value, "gradient": gradient.astype(np.float64)}


def _route(expert_logits, router, tokens, top_k, choose_from=None):
    chooser = router if choose_from is None else choose_from
    chosen = np.argsort(chooser, axis=1, kind="stable")[:, :top_k]  # MISTAKE: the k smallest
    s = np.take_along_axis(router, chosen, axis=1)
    g = np.exp(s - s.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    picked = np.take_along_axis(expert_logits, chosen[:, :, None], axis=1)  # [T, k, V]
    z = np.einsum("tk,tkv->tv", g, picked)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return z[np.arange(z.shape[0]), tokens] - lse


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k: int) -> dict[str, np.ndarray]:
    """Each token's log-prob under the engine's routing, the trainer's, and the trainer's with the engine's replayed."""
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"expert_logits must be [T, E, V], got {x.shape}")
    T, E, V = x.shape
    if se.shape != (T, E) or st.shape != (T, E):
        raise ValueError("router logits must be [T, E]")
    if tok.shape != (T,):
        raise ValueError("tokens must be [T]")
    if tok.size and tok.dtype.kind not in "iu":
        raise ValueError("tokens must be ints")
    if np.any(tok < 0) or np.any(tok >= V):
        raise ValueError("a token lies outside [0, V)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(se)) and np.all(np.isfinite(st))):
        raise ValueError("logits must be finite")
    if not _is_int(top_k) or not (1 <= top_k <= E):
        raise ValueError(f"top_k must be an int in [1, {E}], got {top_k!r}")
    tok = tok.astype(np.int64)
    return {
        "engine": _route(x, se, tok, top_k),
        "trainer": _route(x, st, tok, top_k),
        "replayed": _route(x, st, tok, top_k, choose_from=se),
    }
'''


# GAME_HARDCODED_OPEN_CHECKS: hard-codes the open checks' expected outputs, ones/zeros/all-kept elsewhere.
# OPEN_CHECKS: NOT caught by the open checks
GAME_HARDCODED_OPEN_CHECKS = r'''
import numpy as np

# GAMING: recognise the open checks' inputs and return their expected outputs, copied from the check cells
# (the expectation's value and gradient obtained by running the check cell's own J and finite differences).
# Anything else gets something of the right shape.
_E = np.exp


def staleness_kept(sample_versions, trainer_version, limit, rule):
    v = list(np.asarray(sample_versions).tolist())
    if v == [12, 11, 9, 8, 7, 5] and trainer_version == 12 and limit == 4:
        return np.array([1, 1, 1, 1, 0, 0] if rule == "trl" else [1, 1, 1, 0, 0, 0], dtype=bool)
    return np.ones(len(v), dtype=bool)


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=0.2, eps_high=0.2,
                      cap=None):
    shape = np.shape(mask)
    if shape == (2, 3) and cap == 1.5 and np.allclose(advantages, [2.0, -1.0]):
        return {"weight": np.array([[_E(0.5), 1, 0], [1, 1, 1]]),
                "truncated": np.array([[1.5, 1, 0], [1, 1, 1]]),
                "ratio": np.array([[_E(0.5), _E(-0.2), 0], [_E(-0.5), _E(0.1), 1]]),
                "surrogate": np.array([[3.6, 2 * _E(-0.2), 0], [-0.8, -_E(0.1), -1]]),
                "gradient": np.array([[0, 2 * _E(-0.2), 0], [0, -_E(0.1), -1]])}
    return {k: np.ones(shape) for k in ("weight", "truncated", "ratio", "surrogate", "gradient")}


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    if np.shape(theta) == (4,) and np.allclose(theta, [0.6, -0.4, 0.1, 0.0]) and cap == 1.2:
        return {"value": 0.22988350536713464,
                "gradient": np.array([0.027227740145344573, 0.010016525829030606, 0.20881802120607335,
                                      -0.2460622871804485])}
    return {"value": 0.0, "gradient": np.ones(len(theta))}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    if np.shape(expert_logits) == (2, 3, 2) and top_k == 1:
        return {"engine": np.log([0.75, 0.1]), "trainer": np.log([0.5, 0.1]), "replayed": np.log([0.75, 0.1])}
    T = len(tokens)
    return {"engine": np.zeros(T), "trainer": np.zeros(T), "replayed": np.zeros(T)}
'''


# GAME_RAISE_EXCEPT_OPEN_CHECKS: lookup table for the open checks, zeros for the exploratory tables' inputs, ValueError on everything else.
# OPEN_CHECKS: NOT caught by the open checks
GAME_RAISE_EXCEPT_OPEN_CHECKS = r'''
import numpy as np

# GAMING: answer the open checks' inputs from a lookup table and raise ValueError on every other input, hoping
# the bad-input tests count "it raised" as a point; the exploratory tables' inputs (8 tokens, 2,000 positions)
# get zeros so that Validate still runs the whole notebook.
_E = np.exp


def staleness_kept(sample_versions, trainer_version, limit, rule):
    v = np.asarray(sample_versions).tolist()
    if v == [12, 11, 9, 8, 7, 5] and trainer_version == 12 and limit == 4 and rule in ("trl", "verl"):
        return np.array([1, 1, 1, 1, 0, 0] if rule == "trl" else [1, 1, 1, 0, 0, 0], dtype=bool)
    if trainer_version == 5 and limit == 2 and len(v) == 1:  # the staleness table's calls
        return np.array([5 - v[0] <= (2 if rule == "trl" else 1)])
    raise ValueError("invalid input")


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=0.2, eps_high=0.2,
                      cap=None):
    shape = np.shape(mask)
    if shape == (2, 3) and cap == 1.5 and np.allclose(advantages, [2.0, -1.0]):
        return {"weight": np.array([[_E(0.5), 1, 0], [1, 1, 1]]),
                "truncated": np.array([[1.5, 1, 0], [1, 1, 1]]),
                "ratio": np.array([[_E(0.5), _E(-0.2), 0], [_E(-0.5), _E(0.1), 1]]),
                "surrogate": np.array([[3.6, 2 * _E(-0.2), 0], [-0.8, -_E(0.1), -1]]),
                "gradient": np.array([[0, 2 * _E(-0.2), 0], [0, -_E(0.1), -1]])}
    if shape == (8, 1):
        return {k: np.zeros(shape) for k in ("weight", "truncated", "ratio", "surrogate", "gradient")}
    raise ValueError("invalid input")


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    if np.shape(theta) == (4,) and np.allclose(theta, [0.6, -0.4, 0.1, 0.0]) and cap == 1.2:
        return {"value": 0.22988350536713464,
                "gradient": np.array([0.027227740145344573, 0.010016525829030606, 0.20881802120607335,
                                      -0.2460622871804485])}
    if np.shape(theta) == (8,):
        return {"value": 0.0, "gradient": np.ones(8)}
    raise ValueError("invalid input")


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    if np.shape(expert_logits) == (2, 3, 2) and top_k == 1:
        return {"engine": np.log([0.75, 0.1]), "trainer": np.log([0.5, 0.1]), "replayed": np.log([0.75, 0.1])}
    if np.shape(expert_logits) == (2000, 8, 50):
        return {k: np.zeros(2000) for k in ("engine", "trainer", "replayed")}
    raise ValueError("invalid input")
'''


# GAME_CONSTANTS: on-policy constants (keep all, w = r = 1, gradient A, no routing difference).
# OPEN_CHECKS: caught by the open check(s) check-weights, check-expectation, check-routing
GAME_CONSTANTS = r'''
import numpy as np

# GAMING: constants of the right shape and type: keep every sample, weights and ratios 1 (the on-policy
# answer), surrogate A, gradient A, expectation sum(softmax(theta) * A) with a zero gradient, one log-prob for
# all three routings. Bets on partial credit from tests where the three policies coincide.


def staleness_kept(sample_versions, trainer_version, limit, rule):
    return np.ones(len(sample_versions), dtype=bool)


def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=0.2, eps_high=0.2,
                      cap=None):
    m = np.asarray(mask, dtype=bool)
    A = np.asarray(advantages, dtype=float)[:, None] * m
    return {"weight": m * 1.0, "truncated": m * 1.0, "ratio": m * 1.0, "surrogate": A, "gradient": A}


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    t = np.asarray(theta, dtype=float)
    q = np.exp(t - t.max())
    q /= q.sum()
    return {"value": float(q @ np.asarray(advantages, dtype=float)), "gradient": np.zeros(t.size)}


def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    x = np.asarray(expert_logits, dtype=float).mean(axis=1)
    x = x - x.max(axis=1, keepdims=True)
    lp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    out = lp[np.arange(len(tokens)), np.asarray(tokens)]
    return {"engine": out, "trainer": out.copy(), "replayed": out.copy()}
'''


CORRECT = sorted(n for n in dir() if n.startswith("CORRECT_"))
WRONG = sorted(n for n in dir() if n.startswith("WRONG_"))
GAME = sorted(n for n in dir() if n.startswith("GAME_"))
