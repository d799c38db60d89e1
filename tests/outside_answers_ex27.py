"""Answers to exercise 27 written by the outside test from the release notebook alone: each computes a
rule in the other space (or sums S token by token) and is correct by the notebook's text."""

TRL_COMPARES_LOGS = '''
import numpy as np

def _log_ratios(logp_new, logp_old, mask):
    new = np.asarray(logp_new, dtype=np.float64)
    old = np.asarray(logp_old, dtype=np.float64)
    m = np.asarray(mask)
    if new.shape != old.shape or new.shape != m.shape:
        raise ValueError(f"shapes differ: {new.shape}, {old.shape}, {m.shape}")
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError("mask must be 2-D with at least one row")
    m = m.astype(bool)
    for a in (new, old):
        v = a[m]
        if not np.all(np.isfinite(v)) or np.any(v > 0):
            raise ValueError("a response log-probability is not finite or is positive")
    d = np.where(m, new, 0.0) - np.where(m, old, 0.0)
    return d, m

def sequence_ratios(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
) -> dict[str, np.ndarray]:
    for e in (eps_low, eps_high):
        if not (0 <= e < 1):
            raise ValueError("eps must lie in [0, 1)")
    d, m = _log_ratios(logp_new, logp_old, mask)
    S = d.sum(axis=1)
    n = np.maximum(m.sum(axis=1), 1)
    with np.errstate(over="ignore", under="ignore"):
        token = np.where(m, np.exp(d), 0.0)
        product = np.exp(S)
    geometric = np.exp(S / n)
    return {"token": token, "product": product, "geometric": geometric,
            "gspo_clipped": np.clip(geometric, 1 - eps_low, 1 + eps_high),
            "verl_sequence": np.exp(np.clip(S, -20.0, 20.0))}


def _bound_ok(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and np.isfinite(v) and v > 0

def _rule_bounds(rule, low, high):
    if rule not in ("token_mask", "sequence_mask", "seq_sum_k1", "seq_mean_k1"):
        raise ValueError(f"unknown rule {rule!r}")
    if rule.startswith("seq_") and rule.endswith("_k1"):
        if high is None:
            raise ValueError("verl's rules need high")
        if low is None:
            if not _bound_ok(high):
                raise ValueError("bad bound")
            low = 1.0 / high
    for v in (low, high):
        if v is not None and not _bound_ok(v):
            raise ValueError("a bound must be a positive finite number")
    if low is not None and high is not None and low > high:
        raise ValueError("low > high")
    return low, high

def _keep(value, low, high):
    ok = np.ones(np.shape(value), dtype=bool)
    if low is not None:
        ok &= value >= low
    if high is not None:
        ok &= value <= high
    return ok

def kept_mask(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    rule: str,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    low, high = _rule_bounds(rule, low, high)
    d, m = _log_ratios(logp_new, logp_old, mask)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            return _keep(np.exp(d), low, high) & m
        if rule == "sequence_mask":
            return _keep(d.sum(axis=1), None if low is None else np.log(low), None if high is None else np.log(high))[:, None] & m
        c = np.where(m, np.clip(d, -20.0, 20.0), 0.0)
        k = -c.sum(axis=1)
        if rule == "seq_mean_k1":
            k = k / np.maximum(m.sum(axis=1), 1)
        return _keep(k, np.log(low), np.log(high))[:, None] & m


def first_dropped_length(
    token_log_ratio: float,
    rule: str,
    low: float | None = None,
    high: float | None = None,
    max_len: int = 100000,
) -> int | None:
    low, high = _rule_bounds(rule, low, high)
    b = float(token_log_ratio)
    if not np.isfinite(b):
        raise ValueError("token_log_ratio must be finite")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError("max_len must be an integer >= 1")
    if (low is not None and low > 1) or (high is not None and high < 1):
        raise ValueError("the bounds must contain 1")
    n = np.arange(1, int(max_len) + 1, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            kept = _keep(np.full(n.shape, math.exp(b)), low, high)
        elif rule == "sequence_mask":
            kept = _keep(np.exp(n * b), low, high)
        elif rule == "seq_sum_k1":
            c = min(max(b, -20.0), 20.0)
            kept = _keep(-(n * c), math.log(low), math.log(high))
        else:
            c = min(max(b, -20.0), 20.0)
            kept = _keep(np.full(n.shape, -c), math.log(low), math.log(high))
    dropped = np.flatnonzero(~kept)
    return int(dropped[0]) + 1 if dropped.size else None

'''

VERL_COMPARES_EXP = '''
import numpy as np

def _log_ratios(logp_new, logp_old, mask):
    new = np.asarray(logp_new, dtype=np.float64)
    old = np.asarray(logp_old, dtype=np.float64)
    m = np.asarray(mask)
    if new.shape != old.shape or new.shape != m.shape:
        raise ValueError(f"shapes differ: {new.shape}, {old.shape}, {m.shape}")
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError("mask must be 2-D with at least one row")
    m = m.astype(bool)
    for a in (new, old):
        v = a[m]
        if not np.all(np.isfinite(v)) or np.any(v > 0):
            raise ValueError("a response log-probability is not finite or is positive")
    d = np.where(m, new, 0.0) - np.where(m, old, 0.0)
    return d, m

def sequence_ratios(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
) -> dict[str, np.ndarray]:
    for e in (eps_low, eps_high):
        if not (0 <= e < 1):
            raise ValueError("eps must lie in [0, 1)")
    d, m = _log_ratios(logp_new, logp_old, mask)
    S = d.sum(axis=1)
    n = np.maximum(m.sum(axis=1), 1)
    with np.errstate(over="ignore", under="ignore"):
        token = np.where(m, np.exp(d), 0.0)
        product = np.exp(S)
    geometric = np.exp(S / n)
    return {"token": token, "product": product, "geometric": geometric,
            "gspo_clipped": np.clip(geometric, 1 - eps_low, 1 + eps_high),
            "verl_sequence": np.exp(np.clip(S, -20.0, 20.0))}


def _bound_ok(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and np.isfinite(v) and v > 0

def _rule_bounds(rule, low, high):
    if rule not in ("token_mask", "sequence_mask", "seq_sum_k1", "seq_mean_k1"):
        raise ValueError(f"unknown rule {rule!r}")
    if rule.startswith("seq_") and rule.endswith("_k1"):
        if high is None:
            raise ValueError("verl's rules need high")
        if low is None:
            if not _bound_ok(high):
                raise ValueError("bad bound")
            low = 1.0 / high
    for v in (low, high):
        if v is not None and not _bound_ok(v):
            raise ValueError("a bound must be a positive finite number")
    if low is not None and high is not None and low > high:
        raise ValueError("low > high")
    return low, high

def _keep(value, low, high):
    ok = np.ones(np.shape(value), dtype=bool)
    if low is not None:
        ok &= value >= low
    if high is not None:
        ok &= value <= high
    return ok

def kept_mask(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    rule: str,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    low, high = _rule_bounds(rule, low, high)
    d, m = _log_ratios(logp_new, logp_old, mask)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            return _keep(np.exp(d), low, high) & m
        if rule == "sequence_mask":
            return _keep(np.exp(d.sum(axis=1)), low, high)[:, None] & m
        c = np.where(m, np.clip(d, -20.0, 20.0), 0.0)
        k = -c.sum(axis=1)
        if rule == "seq_mean_k1":
            k = k / np.maximum(m.sum(axis=1), 1)
        return _keep(np.exp(k), low, high)[:, None] & m


def first_dropped_length(
    token_log_ratio: float,
    rule: str,
    low: float | None = None,
    high: float | None = None,
    max_len: int = 100000,
) -> int | None:
    low, high = _rule_bounds(rule, low, high)
    b = float(token_log_ratio)
    if not np.isfinite(b):
        raise ValueError("token_log_ratio must be finite")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError("max_len must be an integer >= 1")
    if (low is not None and low > 1) or (high is not None and high < 1):
        raise ValueError("the bounds must contain 1")
    n = np.arange(1, int(max_len) + 1, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            kept = _keep(np.full(n.shape, math.exp(b)), low, high)
        elif rule == "sequence_mask":
            kept = _keep(np.exp(n * b), low, high)
        elif rule == "seq_sum_k1":
            c = min(max(b, -20.0), 20.0)
            kept = _keep(-(n * c), math.log(low), math.log(high))
        else:
            c = min(max(b, -20.0), 20.0)
            kept = _keep(np.full(n.shape, -c), math.log(low), math.log(high))
    dropped = np.flatnonzero(~kept)
    return int(dropped[0]) + 1 if dropped.size else None

'''

LENGTH_BY_CUMSUM = '''
import numpy as np

def _log_ratios(logp_new, logp_old, mask):
    new = np.asarray(logp_new, dtype=np.float64)
    old = np.asarray(logp_old, dtype=np.float64)
    m = np.asarray(mask)
    if new.shape != old.shape or new.shape != m.shape:
        raise ValueError(f"shapes differ: {new.shape}, {old.shape}, {m.shape}")
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError("mask must be 2-D with at least one row")
    m = m.astype(bool)
    for a in (new, old):
        v = a[m]
        if not np.all(np.isfinite(v)) or np.any(v > 0):
            raise ValueError("a response log-probability is not finite or is positive")
    d = np.where(m, new, 0.0) - np.where(m, old, 0.0)
    return d, m

def sequence_ratios(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
) -> dict[str, np.ndarray]:
    for e in (eps_low, eps_high):
        if not (0 <= e < 1):
            raise ValueError("eps must lie in [0, 1)")
    d, m = _log_ratios(logp_new, logp_old, mask)
    S = d.sum(axis=1)
    n = np.maximum(m.sum(axis=1), 1)
    with np.errstate(over="ignore", under="ignore"):
        token = np.where(m, np.exp(d), 0.0)
        product = np.exp(S)
    geometric = np.exp(S / n)
    return {"token": token, "product": product, "geometric": geometric,
            "gspo_clipped": np.clip(geometric, 1 - eps_low, 1 + eps_high),
            "verl_sequence": np.exp(np.clip(S, -20.0, 20.0))}


def _bound_ok(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and np.isfinite(v) and v > 0

def _rule_bounds(rule, low, high):
    if rule not in ("token_mask", "sequence_mask", "seq_sum_k1", "seq_mean_k1"):
        raise ValueError(f"unknown rule {rule!r}")
    if rule.startswith("seq_") and rule.endswith("_k1"):
        if high is None:
            raise ValueError("verl's rules need high")
        if low is None:
            if not _bound_ok(high):
                raise ValueError("bad bound")
            low = 1.0 / high
    for v in (low, high):
        if v is not None and not _bound_ok(v):
            raise ValueError("a bound must be a positive finite number")
    if low is not None and high is not None and low > high:
        raise ValueError("low > high")
    return low, high

def _keep(value, low, high):
    ok = np.ones(np.shape(value), dtype=bool)
    if low is not None:
        ok &= value >= low
    if high is not None:
        ok &= value <= high
    return ok

def kept_mask(
    logp_new: np.ndarray,
    logp_old: np.ndarray,
    mask: np.ndarray,
    rule: str,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    low, high = _rule_bounds(rule, low, high)
    d, m = _log_ratios(logp_new, logp_old, mask)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            return _keep(np.exp(d), low, high) & m
        if rule == "sequence_mask":
            return _keep(np.exp(d.sum(axis=1)), low, high)[:, None] & m
        c = np.where(m, np.clip(d, -20.0, 20.0), 0.0)
        k = -c.sum(axis=1)
        if rule == "seq_mean_k1":
            k = k / np.maximum(m.sum(axis=1), 1)
        return _keep(k, np.log(low), np.log(high))[:, None] & m


def first_dropped_length(
    token_log_ratio: float,
    rule: str,
    low: float | None = None,
    high: float | None = None,
    max_len: int = 100000,
) -> int | None:
    low, high = _rule_bounds(rule, low, high)
    b = float(token_log_ratio)
    if not np.isfinite(b):
        raise ValueError("token_log_ratio must be finite")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError("max_len must be an integer >= 1")
    if (low is not None and low > 1) or (high is not None and high < 1):
        raise ValueError("the bounds must contain 1")
    n = np.arange(1, int(max_len) + 1, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        if rule == "token_mask":
            kept = _keep(np.full(n.shape, math.exp(b)), low, high)
        elif rule == "sequence_mask":
            kept = _keep(np.exp(np.cumsum(np.full(n.shape, b))), low, high)
        elif rule == "seq_sum_k1":
            c = min(max(b, -20.0), 20.0)
            kept = _keep(-(n * c), math.log(low), math.log(high))
        else:
            c = min(max(b, -20.0), 20.0)
            kept = _keep(np.full(n.shape, -c), math.log(low), math.log(high))
    dropped = np.flatnonzero(~kept)
    return int(dropped[0]) + 1 if dropped.size else None

'''
