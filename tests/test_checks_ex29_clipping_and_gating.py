"""The hidden checks of exercise 29 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from check_support import CodingCheckTests, assert_capped, group_points, result_of, source_notebook

STEM = "29_clipping_and_gating"

# An answer that writes verl's and TRL's losses out term by term (pg_losses1, pg_losses2, ... and coef_1, coef_2)
# and reads each token's derivative off the term that wins. The {placeholders} are where the mistakes go.
TERMS = '''
import numpy as np

def _tokens(logp_new, logp_old, advantages):
    new = np.asarray(logp_new, dtype=np.float64)
    old = np.asarray(logp_old, dtype=np.float64)
    adv = np.asarray(advantages, dtype=np.float64)
    if new.size == 0 or new.ndim == 0 {shape_check}:
        raise ValueError("logp_new, logp_old and advantages: one shape")
    if not (np.all(np.isfinite(new)) and np.all(np.isfinite(old)) and np.all(np.isfinite(adv))):
        raise ValueError("log-probabilities and advantages must be finite")
    if {positive_check}:
        raise ValueError("log-probabilities must be <= 0")
    return new, old, adv

def _param(x, name, ok):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x) or not ok(x):
        raise ValueError(name + " is out of range")
    return float(x)

def _ratio(new, old):
    return np.exp({log_ratio})

def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    el = _param(eps_low, "eps_low", lambda v: 0 <= v < 1)
    eh = {eh_default} if eps_high is None else _param(eps_high, "eps_high", lambda v: v >= 0)
    if dual_clip is not None:
        c = _param(dual_clip, "dual_clip", {dual_check})
    ratio = _ratio(new, old)
    lo, hi = {lo_hi}
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * np.clip(ratio, lo, hi)
    clip1 = {clip1}
    slope = np.where({clip1_const}, 0.0, -adv * ratio)   # where the clipped term wins, the loss is a constant
    clipped = {clipped1}
    loss = clip1
    if dual_clip is not None:
        pg_losses3 = -adv * c
        loss = np.where({dual_where}, np.minimum(pg_losses3, clip1), clip1)
        beyond = {dual_where} & (clip1 > pg_losses3)
        slope = np.where(beyond, {dual_slope}, slope)
        clipped = clipped | beyond
    return {{"loss": {sign}loss, "grad": {sign}{grad_factor}slope, "clipped": clipped}}

def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    {delta_shortcut}
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    el = _param(eps_low, "eps_low", lambda v: 0 <= v < 1)
    eh = {eh_default} if eps_high is None else _param(eps_high, "eps_high", lambda v: v >= 0)
    d = _param(delta, "delta", lambda v: v > 1)
    ratio = _ratio(new, old)
    coef_1 = np.minimum(ratio, d)
    coef_2 = np.clip(ratio, 1 - el, 1 + eh)
    t1, t2 = coef_1 * adv, coef_2 * adv
    loss = -np.minimum(t1, t2)
    d1 = np.where(ratio <= d, ratio, 0.0)
    d2 = np.where((ratio >= 1 - el) & (ratio <= 1 + eh), ratio, 0.0)
    slope = -adv * np.where(t1 <= t2, d1, d2)
    clipped = (adv != 0) & (loss != -adv * ratio)
    return {{"loss": {sign}loss, "grad": {sign}{grad_factor}slope, "clipped": clipped}}

def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    new, old, adv = _tokens(logp_new, logp_old, advantages)
    wh = _param(weight_high, "weight_high", lambda v: v > 0)
    wl = 0.0 if weight_low is None else _param(weight_low, "weight_low", lambda v: 0 <= v <= wh)
    ratio = _ratio(new, old)
    w = {cispo_w}
    inside = w == ratio
    return {{"loss": {cispo_loss}, "grad": {cispo_grad}, "clipped": ~inside}}

def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    m = np.asarray(mask)
    if m.ndim != 2 or m.size == 0:
        raise ValueError("mask must be [B, L]")
    m = m.astype(bool)
    new = np.asarray(logp_new, dtype=np.float64)
    s = np.asarray(logp_sampler, dtype=np.float64)
    adv = np.asarray(advantages, dtype=np.float64)
    if new.shape != m.shape or s.shape != m.shape or adv.shape != (m.shape[0],):
        raise ValueError("logp_new, logp_sampler: [B, L]; advantages: [B]")
    if not (np.isfinite(new[m]).all() and np.isfinite(s[m]).all() and np.isfinite(adv).all()):
        raise ValueError("not finite")
    if (new[m] > 0).any() or (s[m] > 0).any():
        raise ValueError("log-probabilities must be <= 0")
    thr = _param(threshold, "threshold", lambda v: v >= 0)
    diff = np.where(m, {kl_diff}, 0.0)
    kl = diff.sum(axis=1) / {kl_count}
    return {{"kl": kl, "keep": {keep}}}
'''

RIGHT = dict(
    shape_check="or old.shape != new.shape or adv.shape != new.shape",
    positive_check="(new > 0).any() or (old > 0).any()", log_ratio="new - old", eh_default="el",
    dual_check="lambda v: v > 1", lo_hi="1 - el, 1 + eh", clip1="np.maximum(pg_losses1, pg_losses2)",
    clip1_const="pg_losses2 > pg_losses1", clipped1="pg_losses2 > pg_losses1", dual_where="(adv < 0)",
    dual_slope="0.0", sign="", grad_factor="", delta_shortcut="",
    cispo_w="np.clip(ratio, wl, wh)", cispo_loss="-w * adv * new", cispo_grad="-w * adv",
    kl_diff="s - new", kl_count="np.maximum(m.sum(axis=1), 1)", keep="(adv >= 0) | (kl <= thr)",
)


def terms(**mistake) -> str:
    return TERMS.format(**{**RIGHT, **mistake})


# An answer written token by token with the math module: each rule's cases spelt out as a practitioner would.
LOOPS = '''
import math
import numpy as np

def _flat(logp_new, logp_old, advantages):
    arrays = [np.asarray(x, dtype=float) for x in (logp_new, logp_old, advantages)]
    shape = arrays[0].shape
    if not shape or arrays[0].size == 0 or any(a.shape != shape for a in arrays):
        raise ValueError("logp_new, logp_old and advantages must be non-empty arrays of one shape")
    if not all(np.isfinite(a).all() for a in arrays):
        raise ValueError("every value must be finite")
    if (arrays[0] > 0).any() or (arrays[1] > 0).any():
        raise ValueError("log-probabilities are <= 0")
    return [a.ravel().tolist() for a in arrays], shape

def _num(x, name):
    if type(x) is bool or not isinstance(x, (int, float)) or math.isnan(x) or math.isinf(x):
        raise TypeError(name + " must be a finite number")
    return float(x)

def _epsilons(eps_low, eps_high):
    el = _num(eps_low, "eps_low")
    eh = el if eps_high is None else _num(eps_high, "eps_high")
    if not 0 <= el < 1 or eh < 0:
        raise ValueError("eps_low in [0, 1), eps_high >= 0")
    return el, eh

def _assemble(rows, shape):
    loss, grad, clipped = zip(*rows)
    return {"loss": np.array(loss, dtype=float).reshape(shape), "grad": np.array(grad, dtype=float).reshape(shape),
            "clipped": np.array(clipped, dtype=bool).reshape(shape)}

def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    (new, old, adv), shape = _flat(logp_new, logp_old, advantages)
    el, eh = _epsilons(eps_low, eps_high)
    if dual_clip is not None and _num(dual_clip, "dual_clip") <= 1:
        raise ValueError("dual_clip must exceed 1")
    rows = []
    for x, o, a in zip(new, old, adv):
        r = math.exp(x - o)
        if a > 0 and r > 1 + eh:
            rows.append((-a * (1 + eh), 0.0, True))
        elif a < 0 and r < 1 - el:
            rows.append((-a * (1 - el), 0.0, True))
        elif a < 0 and dual_clip is not None and r > dual_clip:
            rows.append((-a * dual_clip, 0.0, True))
        else:
            rows.append((-a * r, -a * r, False))
    return _assemble(rows, shape)

def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    (new, old, adv), shape = _flat(logp_new, logp_old, advantages)
    el, eh = _epsilons(eps_low, eps_high)
    if _num(delta, "delta") <= 1:
        raise ValueError("delta must exceed 1")
    rows = []
    for x, o, a in zip(new, old, adv):
        r = math.exp(x - o)
        c1, c2 = min(r, delta), min(max(r, 1 - el), 1 + eh)
        used = min(c1, c2) if a > 0 else max(c1, c2) if a < 0 else r
        rows.append((-a * r, -a * r, False) if used == r else (-a * used, 0.0, True))
    return _assemble(rows, shape)

def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    (new, old, adv), shape = _flat(logp_new, logp_old, advantages)
    high = _num(weight_high, "weight_high")
    low = 0.0 if weight_low is None else _num(weight_low, "weight_low")
    if high <= 0 or not 0 <= low <= high:
        raise ValueError("0 <= weight_low <= weight_high, weight_high > 0")
    rows = []
    for x, o, a in zip(new, old, adv):
        r = math.exp(x - o)
        w = min(max(r, low), high)      # a number, not a function of x: the stop-gradient
        rows.append((-w * a * x, -w * a, w != r))
    return _assemble(rows, shape)

def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    m = np.asarray(mask)
    if m.ndim != 2 or 0 in m.shape or not np.isin(m, (0, 1)).all():
        raise ValueError("mask: [B, L] of 0/1")
    new, s, adv = (np.asarray(x, dtype=float) for x in (logp_new, logp_sampler, advantages))
    if new.shape != m.shape or s.shape != m.shape or adv.shape != (m.shape[0],):
        raise ValueError("shapes: [B, L] and [B]")
    limit = _num(threshold, "threshold")
    if limit < 0:
        raise ValueError("threshold >= 0")
    kls, keep = [], []
    for row_new, row_s, row_m, a in zip(new.tolist(), s.tolist(), m.tolist(), adv.tolist()):
        if not math.isfinite(a):
            raise ValueError("advantages must be finite")
        total, count = 0.0, 0
        for x, y, on in zip(row_new, row_s, row_m):
            if on:
                if not (math.isfinite(x) and math.isfinite(y)) or x > 0 or y > 0:
                    raise ValueError("a response token's log-probability must be finite and <= 0")
                total += y - x
                count += 1
        kl = total / max(count, 1)
        kls.append(kl)
        keep.append(a >= 0 or kl <= limit)
    return {"kl": np.array(kls), "keep": np.array(keep)}
'''

# An answer that decides in log space (log-ratios against the logs of the bounds) and averages with masked arrays.
LOG_SPACE = '''
import numpy as np

def _read(logp_new, logp_old, advantages):
    new, old, adv = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (logp_new, logp_old, advantages)))
    shapes = {np.shape(logp_new), np.shape(logp_old), np.shape(advantages)}
    if len(shapes) != 1 or new.size == 0 or new.ndim == 0:
        raise ValueError("one shape")
    if not np.isfinite(np.stack([new, old, adv])).all() or np.maximum(new, old).max() > 0:
        raise ValueError("finite log-probabilities <= 0 and finite advantages")
    return new, old, adv

def _real(x, name):
    if isinstance(x, bool) or not np.isscalar(x) or not np.isreal(x) or not np.isfinite(x):
        raise ValueError(name)
    return float(x)

def ppo_clip_loss(logp_new, logp_old, advantages, eps_low=0.2, eps_high=None, dual_clip=None):
    new, old, adv = _read(logp_new, logp_old, advantages)
    el = _real(eps_low, "eps_low")
    eh = el if eps_high is None else _real(eps_high, "eps_high")
    if not 0 <= el < 1 or eh < 0 or (dual_clip is not None and not _real(dual_clip, "dual_clip") > 1):
        raise ValueError("a parameter is out of range")
    d = new - old
    up, down = (adv > 0) & (d > np.log1p(eh)), (adv < 0) & (d < np.log1p(-el))
    beyond = (adv < 0) & (d > np.log(dual_clip)) if dual_clip is not None else np.zeros(d.shape, bool)
    used = np.where(up, 1 + eh, np.where(down, 1 - el, np.where(beyond, dual_clip or 1.0, np.exp(d))))
    clipped = up | down | beyond
    return {"loss": -adv * used, "grad": np.where(clipped, 0.0, -adv * np.exp(d)), "clipped": clipped}

def trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low=0.2, eps_high=None):
    new, old, adv = _read(logp_new, logp_old, advantages)
    el = _real(eps_low, "eps_low")
    eh = el if eps_high is None else _real(eps_high, "eps_high")
    if not 0 <= el < 1 or eh < 0 or not _real(delta, "delta") > 1:
        raise ValueError("a parameter is out of range")
    d = new - old
    top_pos, top_neg = min(delta, 1 + eh), max(delta, 1 + eh)   # where the minimum / maximum stops following r
    up = (adv > 0) & (d > np.log(top_pos))
    down, over = (adv < 0) & (d < np.log1p(-el)), (adv < 0) & (d > np.log(top_neg))
    used = np.where(up, top_pos, np.where(down, 1 - el, np.where(over, top_neg, np.exp(d))))
    clipped = up | down | over
    return {"loss": -adv * used, "grad": np.where(clipped, 0.0, -adv * np.exp(d)), "clipped": clipped}

def cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low=None):
    new, old, adv = _read(logp_new, logp_old, advantages)
    high = _real(weight_high, "weight_high")
    low = 0.0 if weight_low is None else _real(weight_low, "weight_low")
    if not high > 0 or not 0 <= low <= high:
        raise ValueError("weights out of range")
    d = new - old
    above, below = d > np.log(high), (d < np.log(low)) if low > 0 else np.zeros(d.shape, bool)
    w = np.where(above, high, np.where(below, low, np.exp(d)))
    return {"loss": -(w * adv) * new, "grad": -(w * adv), "clipped": above | below}

def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    m = np.asarray(mask)
    if m.ndim != 2 or m.size == 0:
        raise ValueError("mask [B, L]")
    m = m.astype(bool)
    new, s = np.asarray(logp_new, dtype=float), np.asarray(logp_sampler, dtype=float)
    adv = np.asarray(advantages, dtype=float)
    if new.shape != m.shape or s.shape != m.shape or adv.shape != m.shape[:1] or not np.isfinite(adv).all():
        raise ValueError("shapes or advantages")
    tokens = np.concatenate([new[m], s[m]])
    if not np.isfinite(tokens).all() or (tokens > 0).any():
        raise ValueError("response log-probabilities must be finite and <= 0")
    if _real(threshold, "threshold") < 0:
        raise ValueError("threshold")
    kl = np.ma.masked_array(np.where(m, s - new, 0.0), mask=~m).mean(axis=1).filled(0.0)
    return {"kl": np.asarray(kl, dtype=float), "keep": (adv >= 0) | (kl <= threshold)}
'''


def _from_solution() -> str:
    """The notebook's own solution cells (the vectorised 'used ratio' style)."""
    cells = []
    for cell in source_notebook(STEM).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("solution") or cell.id == "setup"):
            cells.append(re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source))
    return "\n\n".join(cells)


CORRECT = {
    "notebook_used_ratio": _from_solution(),
    "trainer_terms": terms(),
    "token_by_token": LOOPS,
    "log_space_masked_arrays": LOG_SPACE,
}

WRONG = {
    # the central idea: which tokens keep a gradient
    "clip_whatever_the_sign": (terms(clip1="pg_losses2", clip1_const="(ratio < lo) | (ratio > hi)",
                                     clipped1="(adv != 0) & ((ratio < lo) | (ratio > hi))"),
                               "clip-ignores-advantage-sign"),
    "cispo_clipped_zeroed": (terms(cispo_grad="np.where(inside, -adv * ratio, 0.0)"), "cispo-gradient-zeroed"),
    "dual_gradient_capped": (terms(dual_slope="-adv * c"), "dual-clip-gradient-capped"),
    "mask_ignores_advantage": (terms(keep="kl <= thr"), "stale-mask-ignores-advantage"),
    # CISPO written as PPO's surrogate -A clip(r): the loss and (hence) the zeroed gradient
    "cispo_as_surrogate": (terms(cispo_loss="-w * adv", cispo_grad="np.where(inside, -adv * ratio, 0.0)"),
                           "cispo-loss-is-surrogate"),
    "objective_not_loss": (terms(sign="-"), "objective-not-loss"),
    "gradient_wrt_ratio": (terms(grad_factor="(1 / ratio) * "), "gradient-wrt-ratio"),
    "ratio_inverted": (terms(log_ratio="old - new"), "ratio-inverted"),
    "bounds_swapped": (terms(lo_hi="1 - eh, 1 + el"), "clip-bounds-swapped"),
    "eps_high_unbounded_by_default": (terms(eh_default="1e300"), "eps-high-default"),
    "zero_advantage_clipped": (terms(clipped1="(pg_losses2 > pg_losses1) | ((adv == 0) & ((ratio < lo) | (ratio > hi)))"),
                               "zero-advantage-clipped"),
    "dual_clip_ignored": (terms(dual_where="np.zeros(adv.shape, dtype=bool)"), "dual-clip-ignored"),
    "dual_clip_both_signs": (terms(dual_where="np.ones(adv.shape, dtype=bool)"), "dual-clip-positive-advantage"),
    "delta_as_dual_clip": (terms(delta_shortcut="return ppo_clip_loss(logp_new, logp_old, advantages, eps_low, "
                                                "eps_high, dual_clip=delta)"), "delta-as-dual-clip"),
    "delta_ignored": (terms(delta_shortcut="return ppo_clip_loss(logp_new, logp_old, advantages, eps_low, eps_high)"),
                      "delta-ignored"),
    "cispo_weight_not_detached": (terms(cispo_grad="-w * adv - np.where(inside, adv * new * ratio, 0.0)"),
                                  "cispo-weight-not-detached"),
    "cispo_clipped_by_sign": (terms(cispo_w="np.where(adv > 0, np.clip(ratio, wl, wh), ratio)"), "cispo-clipped-by-sign"),
    "cispo_bounds_as_epsilons": (terms(cispo_w="np.clip(ratio, 0.0 if weight_low is None else 1 - wl, 1 + wh)"),
                                 "cispo-bounds-as-epsilons"),
    "kl_sign": (terms(kl_diff="new - s"), "stale-kl-sign"),
    "kl_summed": (terms(kl_count="1"), "stale-kl-sum"),
    "kl_over_padding": (terms(kl_count="m.shape[1]"), "padding-counted"),
    "every_negative_dropped": (terms(keep="adv >= 0"), "stale-mask-ignores-kl"),
    "zero_advantage_dropped": (terms(keep="(adv > 0) | (kl <= thr)"), "zero-advantage-dropped"),
    "threshold_exclusive": (terms(keep="(adv >= 0) | (kl < thr)"), "threshold-exclusive",
                            "stale_sequence_mask keep, a drift exactly at the threshold, an empty response, an "
                            "advantage of 0"),
    "float32_arithmetic": (terms(log_ratio="np.float32(new) - np.float32(old)"), "float32-arithmetic"),
    "shapes_broadcast": (terms(shape_check=""), "silent-bad-input",
                         "ppo_clip_loss: advantages of shape [T, 1] against logp_new of shape [T] (NumPy would "
                         "broadcast them)"),
    "positive_logp_accepted": (terms(positive_check="False"), "silent-bad-input",
                               "ppo_clip_loss: a positive log-probability in logp_new"),
    "dual_clip_unchecked": (terms(dual_check="lambda v: True"), "silent-bad-input",
                            "ppo_clip_loss: dual_clip = 1 (it must exceed 1)"),
}

FUNCTIONS = ("ppo_clip_loss", "trl_delta_loss", "cispo_loss", "stale_sequence_mask")

ADVERSARIAL = {
    "always_equal_object": ('''
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(3)
def _out(*args, **kwargs): return {"loss": Anything(), "grad": Anything(), "clipped": Anything(),
                                   "kl": Anything(), "keep": Anything()}
ppo_clip_loss = trl_delta_loss = cispo_loss = stale_sequence_mask = _out
''', ("public", "ppo", "delta", "cispo", "mask")),
    "dict_subclass": ('''
import numpy as np
class Sneaky(dict):
    def __getitem__(self, key): return np.zeros(3)
    def __eq__(self, other): return True
def _out(*args, **kwargs): return Sneaky(loss=None, grad=None, clipped=None, kl=None, keep=None)
ppo_clip_loss = trl_delta_loss = cispo_loss = stale_sequence_mask = _out
''', ("public", "ppo", "delta", "cispo", "mask")),
    # every gradient 0, nothing clipped, every response kept, every drift 0: a constant answer
    "constant_answers": ('''
import numpy as np
def _out(logp_new, *args, **kwargs):
    shape = np.shape(logp_new)
    return {"loss": np.zeros(shape), "grad": np.zeros(shape), "clipped": np.zeros(shape, dtype=bool)}
ppo_clip_loss = trl_delta_loss = cispo_loss = _out
def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    return {"kl": np.zeros(len(advantages)), "keep": np.ones(len(advantages), dtype=bool)}
''', ("ppo", "delta", "cispo", "mask", "validation")),
    "raises_everywhere": ('''
def _out(*args, **kwargs):
    raise ValueError("invalid input")
ppo_clip_loss = trl_delta_loss = cispo_loss = stale_sequence_mask = _out
''', ("public", "ppo", "delta", "cispo", "mask", "validation")),
    # the ratio's unclipped answer everywhere: -A r for every token, nothing clipped, the plain drift
    "ratio_ignoring_every_rule": ('''
import numpy as np
def _out(logp_new, logp_old, advantages, *args, **kwargs):
    r = np.exp(np.asarray(logp_new, float) - np.asarray(logp_old, float))
    a = np.asarray(advantages, float)
    return {"loss": -a * r, "grad": -a * r, "clipped": np.zeros(r.shape, dtype=bool)}
ppo_clip_loss = trl_delta_loss = cispo_loss = _out
def stale_sequence_mask(logp_new, logp_sampler, advantages, mask, threshold):
    return {"kl": np.zeros(len(advantages)), "keep": np.ones(len(advantages), dtype=bool)}
''', ("public", "ppo", "delta", "cispo", "mask", "validation")),
}


class TestClippingAndGating(CodingCheckTests):
    stem = STEM
    groups = ("public", "ppo", "delta", "cispo", "mask", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.clipping"
    reference_functions = FUNCTIONS
    quiet_mistakes = ("clip_whatever_the_sign", "cispo_clipped_zeroed", "dual_gradient_capped", "kl_sign",
                      "float32_arithmetic", "ratio_inverted")
    central_mistakes = ("clip_whatever_the_sign", "cispo_clipped_zeroed", "dual_gradient_capped",
                        "mask_ignores_advantage")


def test_an_extra_key_costs_only_the_open_checks_share():
    """"Exactly the keys" is graded once, in the open checks (as in exercises 18, 22 and 28)."""
    source = terms(cispo_grad='-w * adv, "weight": w')
    result = result_of(STEM, source)
    failed = [case.name for case in result.cases if not case.passed]
    assert failed == ["the open check: cispo_loss grad, the eight tokens, TRL's cap of 5",
                      "the open check: cispo_loss clipped, the eight tokens, TRL's cap of 5"], result.feedback()
    assert result.points_earned == 7.66, result.feedback()  # 4 of the 6 open-check cases, floored to 0.66


def test_each_token_set_holds_every_side_of_every_bound():
    """The hidden token sets discriminate by construction: for each case of the loss functions, both signs of
    the advantage on each side of each bound, and advantages of 0."""
    from autograder.checks import CHECKS

    for case in CHECKS[STEM].cases(["ppo", "delta", "cispo"]):
        call = case.calls[0]
        if "on-policy" in case.name:
            continue
        new, old, adv = (np.asarray(a, float).ravel() for a in call.args[:3])
        assert (adv == 0).any() and (adv > 0).any() and (adv < 0).any(), case.name
        ratio = np.exp(new - old)
        assert (ratio < 1).any() and (ratio > 1).any(), case.name


def test_the_notebook_model_answer_matches_the_table():
    """Part B's model answer quotes the table: gradient 6 at r = 6 for A < 0 under PPO, 0 under the dual clip and
    delta 3; delta 1.2 zeroes A > 0 at r = 1.25 and A < 0 at r = 2 but not at r = 1.25; CISPO 5 and 1.28 caps."""
    from autograder.reference import clipping as ref

    ratios = np.array([0.2, 0.5, 0.9, 1.1, 1.25, 2.0, 6.0])
    old = np.log(np.full(7, 0.1))
    new = old + np.log(ratios)
    neg, pos = -np.ones(7), np.ones(7)
    assert np.isclose(ref.ppo_clip_loss(new, old, neg, 0.2, 0.28)["grad"][6], 6.0)
    assert ref.ppo_clip_loss(new, old, neg, 0.2, 0.28, 3.0)["grad"][6] == 0.0
    assert ref.trl_delta_loss(new, old, neg, 3.0, 0.2, 0.28)["grad"][6] == 0.0
    small = ref.trl_delta_loss(new, old, pos, 1.2, 0.2, 0.28)
    assert small["grad"][4] == 0.0 and ref.ppo_clip_loss(new, old, pos, 0.2, 0.28)["grad"][4] != 0.0
    small_neg = ref.trl_delta_loss(new, old, neg, 1.2, 0.2, 0.28)
    assert small_neg["grad"][4] != 0.0 and small_neg["grad"][5] == 0.0
    assert np.isclose(ref.cispo_loss(new, old, pos, 5.0)["grad"][6], -5.0)
    verl = ref.cispo_loss(new, old, pos, 1.28, 0.8)["grad"]
    assert np.isclose(verl[0], -0.8) and np.isclose(verl[6], -1.28)


# --------------------------------------------------------------------------- the outside corpus

#: Where each wrong answer of the outside corpus (`tests/outside_answers_ex29.py`) loses points, and the
#: misconception its feedback names (None where another mistake gives the same output, or none has a name).
OUTSIDE_WRONG = {
    "WRONG_DUAL_CLIP_BOTH_SIGNS": (("ppo",), "dual-clip-positive-advantage"),
    "WRONG_CLIP_IGNORES_SIGN": (("ppo",), "clip-ignores-advantage-sign"),
    "WRONG_DUAL_CLIP_GRAD_NONZERO": (("ppo",), "dual-clip-gradient-capped"),
    "WRONG_CLIPPED_FLAG_FROM_TRL_METRIC": (("ppo",), "dual-clip-ignored"),
    "WRONG_EPS_HIGH_FALSY_ZERO": (("ppo",), "eps-high-zero-replaced"),
    "WRONG_GRAD_BY_FINITE_DIFFERENCES": (("ppo", "delta"), "gradient-inexact"),
    "WRONG_RATIO_DIRECTION": (("ppo", "delta", "cispo"), "ratio-inverted"),
    "WRONG_DELTA_AS_CLIP_BOUND": (("delta",), None),
    "WRONG_DELTA_AS_DUAL_CLIP_ALWAYS": (("delta",), "delta-as-dual-clip"),
    "WRONG_DELTA_POSITIVE_ONLY": (("delta",), "delta-ignored"),
    "WRONG_CISPO_ZERO_CLIPPED_GRAD": (("cispo",), "cispo-gradient-zeroed"),
    "WRONG_CISPO_NO_STOPGRAD": (("cispo",), "cispo-weight-not-detached"),
    "WRONG_CISPO_FLAG_POSITIVE_ONLY": (("cispo",), "cispo-clipped-by-sign"),
    "WRONG_CISPO_FLAG_EXCLUDES_ZERO_ADV": (("cispo",), "cispo-zero-advantage-unflagged"),
    "WRONG_MASK_IGNORES_SIGN": (("mask",), "stale-mask-ignores-advantage"),
    "WRONG_MASK_STRICT_POSITIVE": (("mask",), "zero-advantage-dropped"),
    "WRONG_MASK_STRICT_THRESHOLD": (("mask",), "threshold-exclusive"),
    "WRONG_MASK_NAN_PADDING": (("mask",), "padding-multiplied-by-mask"),
    "WRONG_MASK_MEAN_OVER_PADDING": (("mask",), "padding-counted"),
    "WRONG_MASK_EMPTY_RESPONSE": (("mask",), "empty-response-drift-nan"),
    "WRONG_MASK_ASSUMES_RIGHT_PADDING": (("mask",), "right-padding-assumed"),
    "WRONG_MASK_DRIFT_SIGN": (("mask",), "stale-kl-sign"),
    "WRONG_SHAPES_BROADCAST": (("validation",), "silent-bad-input"),
    "WRONG_NO_VALIDATION": (("validation",), "silent-bad-input"),
}
#: The outside wrong answers that get the central idea wrong (each capped at a third).
OUTSIDE_CENTRAL = ("WRONG_CLIP_IGNORES_SIGN", "WRONG_DUAL_CLIP_GRAD_NONZERO", "WRONG_CISPO_ZERO_CLIPPED_GRAD",
                   "WRONG_MASK_IGNORES_SIGN")
#: The outside wrong answers the open checks let through (the hidden checks must catch each).
OPEN_CHECKS_MISS = {"WRONG_DELTA_AS_DUAL_CLIP_ALWAYS", "WRONG_EPS_HIGH_FALSY_ZERO", "WRONG_CISPO_FLAG_EXCLUDES_ZERO_ADV",
                    "WRONG_MASK_STRICT_THRESHOLD", "WRONG_MASK_NAN_PADDING", "WRONG_MASK_EMPTY_RESPONSE",
                    "WRONG_MASK_ASSUMES_RIGHT_PADDING", "WRONG_SHAPES_BROADCAST", "WRONG_NO_VALIDATION"}


def _outside(name: str) -> str:
    import outside_answers_ex29

    return getattr(outside_answers_ex29, name)


def _outside_names(kind: str) -> list:
    import outside_answers_ex29

    return sorted(getattr(outside_answers_ex29, kind))


def _open_checks_pass(source: str) -> bool:
    """Whether the notebook's open-check cells run through on an answer (as Validate runs them)."""
    import contextlib
    import io

    from check_support import namespace_from

    namespace = namespace_from(source)
    cells = [cell.source for cell in source_notebook(STEM).cells if cell.cell_type == "code"
             and cell.id.startswith("check")]
    assert len(cells) == 3  # the tokens, the mask, the table
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for cell in cells:
                exec(compile(cell, "<open check>", "exec"), namespace)
    except Exception:  # noqa: BLE001 - any error stops Validate
        return False
    return True


def test_the_outside_corpus_is_listed_whole():
    assert sorted(OUTSIDE_WRONG) == _outside_names("WRONG")
    assert len(_outside_names("CORRECT")) == 4 and len(_outside_names("GAME")) == 3
    assert _outside_names("BORDERLINE") == ["BORDERLINE_VERL_LOGRATIO_CLAMP"]


@pytest.mark.parametrize("name", _outside_names("CORRECT") + _outside_names("BORDERLINE"))
def test_outside_correct_answers_earn_full_marks_and_pass_the_open_checks(name):
    """Four styles, and the trainers' [-20, 20] clamp of the log-ratio kept: the task says graded inputs keep
    |log-ratio| < 20, so the clamp changes nothing graded."""
    result = result_of(STEM, _outside(name))
    assert result.points_earned == 8, result.feedback()
    assert not result.misconceptions, result.feedback()
    assert _open_checks_pass(_outside(name))


@pytest.mark.parametrize("name", sorted(OUTSIDE_WRONG))
def test_outside_wrong_answers_lose_points_where_their_mistake_is(name):
    groups, key = OUTSIDE_WRONG[name]
    result = result_of(STEM, _outside(name))
    earned = group_points(result)
    for group in groups:
        assert earned[group][0] < earned[group][1], (group, result.feedback())
    if key is not None:
        assert key in result.misconceptions, (key, result.misconceptions, result.feedback())
    # what the open checks let through is left to the hidden checks; the rest is told at the desk
    assert _open_checks_pass(_outside(name)) == (name in OPEN_CHECKS_MISS)


@pytest.mark.parametrize("name", OUTSIDE_CENTRAL)
def test_outside_central_mistakes_earn_at_most_a_third(name):
    assert_capped(STEM, _outside(name))


@pytest.mark.parametrize("name", _outside_names("GAME"))
def test_outside_gaming_answers_earn_nothing_in_any_hidden_group(name):
    """Hard-coded open checks, raising everywhere else, or a lookup of the open checks' inputs with a rule-free
    formula (-A r, nothing clipped, every response kept) behind honest input checks elsewhere: nothing, graded
    together or cell by cell."""
    from autograder.checks import CHECKS

    result = result_of(STEM, _outside(name))
    assert result.points_earned == 0, result.feedback()
    for group in CHECKS[STEM].groups:
        assert result_of(STEM, _outside(name), [group.name]).points_earned == 0, group.name


def test_the_open_checks_hold_the_gradient_to_the_grading_tolerance():
    """A gradient by central finite differences of the answer's own loss (h = 1e-6, as the open checks once took
    theirs) is right to about 1e-10: graded at rtol 1e-10, it is stopped at the desk now, not only when graded."""
    assert not _open_checks_pass(_outside("WRONG_GRAD_BY_FINITE_DIFFERENCES"))
    assert group_points(result_of(STEM, _outside("WRONG_GRAD_BY_FINITE_DIFFERENCES")))["ppo"][0] < 2


def test_the_exact_threshold_case_agrees_in_every_summation_order():
    """The drift exactly on the threshold is built of binary fractions: a pairwise sum, a loop, a mean of d / n,
    math.fsum and a masked mean all give 0.5 exactly, so no correct order of summation decides the case."""
    import math

    from autograder.checks import CHECKS

    (case,) = [case for case in CHECKS[STEM].cases(["mask"])
               if case.name.startswith("stale_sequence_mask keep, a drift exactly at the threshold")]
    new, sampler, adv, mask, threshold = case.calls[0].args
    assert threshold == 0.5
    m = np.asarray(mask, dtype=bool)
    for row in range(m.shape[0]):
        d = [s - n for s, n, on in zip(sampler[row], new[row], m[row]) if on]
        if not d:
            continue
        loop = 0.0
        for value in d:
            loop += value
        orders = {np.sum(d) / len(d), loop / len(d), sum(v / len(d) for v in d), math.fsum(d) / len(d),
                  float(np.ma.masked_array(np.asarray(sampler[row]) - np.asarray(new[row]), ~m[row]).mean()),
                  sum(reversed(d)) / len(d)}
        assert len(orders) == 1, (row, orders)
    assert any(len([1 for on in m[row] if on]) and np.mean(
        [s - n for s, n, on in zip(sampler[row], new[row], m[row]) if on]) == threshold for row in range(m.shape[0]))


def test_hidden_log_ratios_stay_below_20_in_every_variant():
    """The task says graded inputs keep |log pi_new - log pi_old| < 20 (the trainers' clamp changes nothing):
    true of every valid-input case of the loss functions, for students of several courses."""
    import hashlib
    import importlib

    from autograder.variants import variant_for

    module = importlib.import_module(f"autograder.exercises.{STEM}.check")
    for n in range(6):
        variant = variant_for(STEM, f"s{n}", hashlib.sha256(f"course {n}".encode()).digest())
        for case in module.build_cases(variant):
            call = case.calls[0]
            if case.group in ("public", "ppo", "delta", "cispo"):
                new, old = (np.asarray(a, float) for a in call.args[:2])
                assert np.all(np.abs(new - old) < 20), case.name
