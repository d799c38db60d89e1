"""The hidden checks of exercise 30 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import re

import pytest

from check_support import CodingCheckTests, assert_capped, group_points, result_of, source_notebook

STEM = "30_asynchronous_rollouts"

# An answer written token by token: Python loops, every product formed in log space (b * w-bar * r as
# exp(min(log p, log c + log b) + log q - log p)), the routing by sorting each row. The {placeholders} are
# where the mistakes of the corpus go.
LOOPS = '''
import math
import numpy as np

def _int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

def staleness_kept(sample_versions, trainer_version, limit, rule):
    versions = [v for v in np.asarray(sample_versions).tolist()] if np.ndim(sample_versions) == 1 else None
    if versions is None or not all(_int(v) for v in versions):
        raise ValueError("sample_versions: a 1-D list of ints")
    if not _int(trainer_version) or trainer_version < 0 or any({future_check} for v in versions):
        raise ValueError("versions must lie in [0, trainer_version]")
    if rule == "trl":
        if not _int(limit) or limit < 0:
            raise ValueError("max_staleness: an int >= 0")
        return np.array([{trl_keep} for v in versions], dtype=bool)
    if rule == "verl":
        if limit is None:
            return np.array([{verl_none} for v in versions], dtype=bool)
        if not _int(limit) or limit < 1:
            raise ValueError("max_off_policy_threshold: None or an int >= 1")
        return np.array([{verl_keep} for v in versions], dtype=bool)
    raise ValueError("unknown rule")

def _eps_cap(eps_low, eps_high, cap):
    for e in (eps_low, eps_high):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 <= e < 1:
            raise ValueError("eps in [0, 1)")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 < cap < math.inf):
        raise ValueError("cap: None or positive")

def _truncate(log_w, cap):
    if cap is None:
        return log_w
    return {truncate}

def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=0.2, eps_high=0.2,
                      cap=None):
    m = np.asarray(mask)
    if m.ndim != 2 or 0 in m.shape or not np.all((m == 0) | (m == 1)):
        raise ValueError("mask: [B, L] of 0/1")
    m = m.astype(bool)
    arrays = [np.asarray(x, dtype=float) for x in (logp_behaviour, logp_proximal, logp_current)]
    if {shape_check}:
        raise ValueError("shapes differ")
    for x in arrays:
        if not np.all(np.isfinite(x[m])) or np.any(x[m] > 0):
            raise ValueError("log-probs: finite and <= 0")
    adv = np.asarray(advantages, dtype=float)
    if adv.shape != (m.shape[0],) or not np.all(np.isfinite(adv)):
        raise ValueError("advantages: [B]")
    _eps_cap(eps_low, eps_high, cap)
    lo, hi = {low}, {high}
    B, L = m.shape
    out = {{key: np.full((B, L), {pad}) for key in ("weight", "truncated", "ratio")}}
    out["surrogate"], out["gradient"] = np.zeros((B, L)), np.zeros((B, L))
    for i in range(B):
        A = adv[i]
        for t in range(L):
            if not m[i, t]:
                continue
            lb, lp, lc = (float(x[i, t]) for x in arrays)
            log_w = {log_w}
            log_wbar = _truncate(log_w, cap)
            log_r = {log_r}
            r = math.exp(log_r)
            wbar = math.exp(log_wbar)
            clipped = min(max(r, lo), hi)
            out["weight"][i, t], out["truncated"][i, t], out["ratio"][i, t] = math.exp(log_w), wbar, r
            out["surrogate"][i, t] = wbar * {reduce}(r * A, clipped * A)
            out["gradient"][i, t] = {slope} if {active} else 0.0
    return out

def _log_softmax(z):
    top = max(z)
    norm = top + math.log(sum(math.exp(v - top) for v in z))
    return [v - norm for v in z]

def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    arrays = [np.asarray(x, dtype=float) for x in (theta, proximal, behaviour, advantages)]
    if arrays[0].ndim != 1 or any(x.shape != arrays[0].shape for x in arrays):
        raise ValueError("one length for all")
    if not all(np.all(np.isfinite(x)) for x in arrays):
        raise ValueError("finite only")
    _eps_cap(eps_low, eps_high, cap)
    lq, lp, lb = (_log_softmax(list(x)) for x in arrays[:3])
    adv = arrays[3]
    V = len(lq)
    q = [math.exp(v) for v in lq]
    value, grad = 0.0, np.zeros(V)
    for a in range(V):
        log_mass = {log_mass}                    # log of b(a) * w-bar(a)
        log_r = {e_log_r}
        r = math.exp(log_r)
        clipped = min(max(r, 1 - eps_low), 1 + eps_high)
        unclipped = math.exp(log_mass + log_r) * adv[a]
        value += min(unclipped, math.exp(log_mass) * clipped * adv[a])
        if {e_active}:
            for j in range(V):                    # sum_a c(a) (e_a - q)
                grad[j] += {e_sign}unclipped * ((1.0 if j == a else 0.0) - {centre})
    return {{"value": value, "gradient": grad}}

def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    x = np.asarray(expert_logits, dtype=float)
    se, st = np.asarray(router_engine, dtype=float), np.asarray(router_trainer, dtype=float)
    tok = np.asarray(tokens)
    if x.ndim != 3 or se.shape != x.shape[:2] or st.shape != x.shape[:2] or tok.shape != x.shape[:1]:
        raise ValueError("shapes")
    if not (np.isfinite(x).all() and np.isfinite(se).all() and np.isfinite(st).all()):
        raise ValueError("finite only")
    if tok.dtype.kind not in "iu" or (tok < 0).any() or (tok >= x.shape[2]).any():
        raise ValueError("tokens in [0, V)")
    if not _int(top_k) or not 1 <= top_k <= x.shape[1]:
        raise ValueError("top_k in [1, E]")

    def score(choose, gate):
        out = []
        for t in range(x.shape[0]):
            experts = sorted(range(x.shape[1]), key=lambda e: {order})[:top_k]
            logits = [gate[t, e] for e in experts]
            g = {gates}
            z = [{mix} for v in range(x.shape[2])]
            out.append({logprob})
        return np.array(out)

    return {{"engine": score(se, se), "trainer": score(st, st), "replayed": score({replay_choose}, {replay_gate})}}
'''

RIGHT = dict(
    future_check="v < 0 or v > trainer_version", trl_keep="trainer_version - v <= limit", verl_none="True",
    verl_keep="trainer_version - v + 1 <= limit",
    truncate="min(log_w, math.log(cap))", shape_check="any(x.shape != m.shape for x in arrays)",
    low="1 - eps_low", high="1 + eps_high", pad="0.0", log_w="lp - lb", log_r="lc - lp", reduce="min",
    slope="wbar * r * A", active="r * A <= clipped * A",
    log_mass="lp[a] if cap is None else min(lp[a], math.log(cap) + lb[a])", e_log_r="lq[a] - lp[a]",
    e_active="r * adv[a] <= clipped * adv[a]", e_sign="", centre="q[j]",
    order="-choose[t, e]", gates="[math.exp(v) for v in _log_softmax(logits)]",
    mix="sum(g[k] * x[t, e, v] for k, e in enumerate(experts))",
    logprob="_log_softmax(z)[int(tok[t])]", replay_choose="se", replay_gate="st",
)


def loops(**mistake) -> str:
    return LOOPS.format(**{**RIGHT, **mistake})


def _from_solution() -> str:
    """The notebook's own solution cells (the vectorised style)."""
    cells = []
    for cell in source_notebook(STEM).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("solution") or cell.id == "setup"):
            cells.append(re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source))
    return "\n\n".join(cells)


# A third style: probabilities instead of logs (b * min(w, c) = min(p, c * b) is finite where b underflows),
# the gradient through the softmax's Jacobian matrix, verl's rule written as the span of versions, the
# gates by a full softmax renormalised over the chosen experts (the same numbers).
PROBABILITIES = '''
import numpy as np

def staleness_kept(sample_versions, trainer_version, limit, rule):
    v = np.asarray(sample_versions)
    if v.ndim != 1 or (v.size and v.dtype.kind not in "iu"):
        raise TypeError("sample_versions must hold ints")
    if type(trainer_version) is bool or not isinstance(trainer_version, (int, np.integer)) or trainer_version < 0:
        raise TypeError("trainer_version: an int >= 0")
    if v.size and (v.min() < 0 or v.max() > trainer_version):
        raise ValueError("a version outside [0, trainer_version]")
    if rule not in ("trl", "verl"):
        raise ValueError("rule")
    if rule == "verl" and limit is None:
        return np.full(v.shape, True)
    if type(limit) is bool or not isinstance(limit, (int, np.integer)) or limit < (0 if rule == "trl" else 1):
        raise ValueError("limit")
    span = trainer_version - v + 1                       # versions from the sample's to the trainer's
    return span <= (limit + 1 if rule == "trl" else limit)

def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def _checks(eps_low, eps_high, cap):
    if not (0 <= eps_low < 1 and 0 <= eps_high < 1):
        raise ValueError("eps")
    if cap is not None and not (np.isfinite(cap) and cap > 0):
        raise ValueError("cap")

def decoupled_weights(logp_behaviour, logp_proximal, logp_current, advantages, mask, eps_low=0.2, eps_high=0.2,
                      cap=None):
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1 or not np.isin(m, (0, 1)).all():
        raise ValueError("mask")
    m = m.astype(bool)
    b, p, c = (np.asarray(x, dtype=np.float64) for x in (logp_behaviour, logp_proximal, logp_current))
    for x in (b, p, c):
        if x.shape != m.shape:
            raise ValueError("shape")
        if not np.isfinite(x[m]).all() or (x[m] > 0).any():
            raise ValueError("log-probs")
    adv = np.asarray(advantages, dtype=np.float64)
    if adv.shape != (m.shape[0],) or not np.isfinite(adv).all():
        raise ValueError("advantages")
    _checks(eps_low, eps_high, cap)
    b, p, c = (np.exp(np.where(m, x, 0.0)) for x in (b, p, c))   # probabilities of the sampled tokens
    w = p / b
    wbar = w if cap is None else np.where(w > cap, cap, w)
    r = c / p
    A = np.repeat(adv[:, None], m.shape[1], axis=1)
    lo, hi = 1 - eps_low, 1 + eps_high
    surrogate = wbar * np.where(A >= 0, np.minimum(r, hi), np.maximum(r, lo)) * A   # min(r A, clip(r) A)
    moving = np.where(A > 0, r <= hi, np.where(A < 0, r >= lo, True))
    zero = lambda x: np.where(m, x, 0.0)
    return {"weight": zero(w), "truncated": zero(wbar), "ratio": zero(r), "surrogate": zero(surrogate),
            "gradient": zero(np.where(moving, wbar * r * A, 0.0))}

def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    t, pr, be, adv = (np.asarray(x, dtype=np.float64) for x in (theta, proximal, behaviour, advantages))
    if t.ndim != 1 or pr.shape != t.shape or be.shape != t.shape or adv.shape != t.shape:
        raise ValueError("shapes")
    if not all(np.isfinite(x).all() for x in (t, pr, be, adv)):
        raise ValueError("finite")
    _checks(eps_low, eps_high, cap)
    q, p, b = _softmax(t), _softmax(pr), _softmax(be)
    mass = p if cap is None else np.minimum(p, cap * b)        # b * min(p / b, c), with no division by b
    r = q / p
    lo, hi = 1 - eps_low, 1 + eps_high
    clipped = np.clip(r, lo, hi)
    value = np.sum(mass * np.minimum(r * adv, clipped * adv))
    moving = r * adv <= clipped * adv
    dJ_dq = np.where(moving, mass * adv / p, 0.0)              # d/dq(a) of mass * r * A
    jacobian = np.diag(q) - np.outer(q, q)                      # dq / dtheta
    return {"value": float(value), "gradient": jacobian @ dJ_dq}

def routed_logprobs(expert_logits, router_engine, router_trainer, tokens, top_k):
    x = np.asarray(expert_logits, dtype=np.float64)
    routers = [np.asarray(s, dtype=np.float64) for s in (router_engine, router_trainer)]
    tok = np.asarray(tokens)
    if x.ndim != 3 or any(s.shape != x.shape[:2] for s in routers) or tok.shape != (x.shape[0],):
        raise ValueError("shapes")
    if not np.isfinite(x).all() or not all(np.isfinite(s).all() for s in routers):
        raise ValueError("finite")
    if tok.dtype.kind not in "iu" or tok.min() < 0 or tok.max() >= x.shape[2]:
        raise ValueError("tokens")
    if type(top_k) is bool or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= x.shape[1]:
        raise ValueError("top_k")
    T = x.shape[0]

    def score(choose, gate):
        chosen = np.argsort(-choose, axis=1, kind="stable")[:, :top_k]
        full = _softmax(gate)
        g = np.take_along_axis(full, chosen, axis=1)
        g = g / g.sum(axis=1, keepdims=True)                    # renormalised: a softmax over the chosen
        z = (g[:, :, None] * x[np.arange(T)[:, None], chosen]).sum(axis=1)
        z = z - z.max(axis=1, keepdims=True)
        return (z - np.log(np.exp(z).sum(axis=1, keepdims=True)))[np.arange(T), tok]

    engine, trainer = routers
    return {"engine": score(engine, engine), "trainer": score(trainer, trainer), "replayed": score(engine, trainer)}
'''

CORRECT = {
    "notebook_vectorised": _from_solution(),
    "token_by_token": loops(),
    "probabilities": PROBABILITIES,
}

WRONG = {
    # the central idea: each factor's denominator
    "weight_inverted": (loops(log_w="lb - lp"), "behaviour-weight-inverted"),
    "coupled_ppo": (loops(log_w="0.0", truncate="0.0", log_r="lc - lb", log_mass="lb[a]", e_log_r="lq[a] - lb[a]"),
                    "ratio-against-behaviour"),
    "ratio_against_behaviour": (loops(log_r="lc - lb", e_log_r="lq[a] - lb[a]"), "ratio-against-behaviour"),
    "ppo_ratio_inverted": (loops(log_r="lp - lc"), "ppo-ratio-inverted"),
    # truncation
    "cap_ignored": (loops(truncate="log_w", log_mass="lp[a]"), "not-truncated"),
    "truncated_both_sides": (loops(truncate="min(max(log_w, -math.log(cap)), math.log(cap))"), "clipped-both-sides"),
    "masked_not_truncated": (loops(truncate="(-math.inf if log_w > math.log(cap) else log_w)"),
                             "weight-masked-not-truncated"),
    # the clip and the derivative
    "surrogate_max": (loops(reduce="max"), "surrogate-max"),
    "clip_ignored": (loops(reduce="(lambda u, c: u)"), "clip-ignored"),
    "bounds_swapped": (loops(low="1 - eps_high", high="1 + eps_low"), "clip-bounds-swapped"),
    "gradient_through_clip": (loops(active="True"), "gradient-through-clip"),
    "gradient_without_ratio": (loops(slope="wbar * A"), "gradient-without-ratio"),
    "gradient_without_weight": (loops(slope="r * A"), "gradient-without-weight"),
    "padding_not_zero": (loops(pad="1.0"), "padding-not-zero"),
    # the exact expectation
    "expectation_not_centred": (loops(centre="0.0"), "softmax-jacobian"),
    "expectation_sign": (loops(e_sign="-"), "surrogate-gradient-sign"),
    "expectation_weight_missing": (loops(log_mass="lb[a]"), "behaviour-weight-missing"),
    "expectation_through_clip": (loops(e_active="True"), "gradient-through-clip"),
    # b * w formed from b and w: 0 * inf where the sampler's probability underflows
    "naive_mass": (loops(log_mass="math.log(math.exp(lb[a]) * min(math.exp(lp[a] - lb[a]), cap or math.inf)) "
                                  "if math.exp(lb[a]) > 0 else math.nan"),
                   None, "expected value, a token the sampler almost never draws (its probability underflows)"),
    # staleness
    "verl_as_trl": (loops(verl_keep="trainer_version - v <= limit"), "verl-threshold-as-lag"),
    "trl_exclusive": (loops(trl_keep="trainer_version - v < limit"), "trl-limit-exclusive"),
    "verl_none_drops": (loops(verl_none="False"), "verl-none-drops"),
    # routing
    "replay_copies_gates": (loops(replay_gate="se"), "replay-copies-gates"),
    "replay_reversed": (loops(replay_choose="st", replay_gate="se"), "replay-reversed"),
    "gates_not_renormalised": (loops(gates="[math.exp(_log_softmax(list(gate[t]))[e]) for e in experts]"),
                               "gates-not-renormalised"),
    "gates_uniform": (loops(gates="[1.0 / top_k] * top_k"), "gates-uniform"),
    "smallest_experts": (loops(order="choose[t, e]"), "smallest-experts"),
    "mixed_probabilities": (loops(logprob="math.log(sum(g[k] * math.exp(_log_softmax(list(x[t, e]))[int(tok[t])]) "
                                          "for k, e in enumerate(experts)))"), "mixed-probabilities"),
    # logits of order 1e3 without the max shift: exp overflows
    "routing_no_max_shift": (loops(logprob="(z[int(tok[t])] - math.log(sum(math.exp(v) for v in z))) "
                                           "if max(z) < 700 else math.nan"),
                             None, "engine log-probs, logits of order 1e3"),
    # bad input let through
    "future_accepted": (loops(future_check="v < 0"), "silent-bad-input", "staleness: a sample from a later version"),
    "shapes_broadcast": (loops(shape_check="False").replace(
        "arrays = [np.asarray(x, dtype=float) for x in (logp_behaviour",
        "arrays = [np.broadcast_to(np.asarray(x, dtype=float), m.shape) for x in (logp_behaviour"),
                         "silent-bad-input", "weights: one row of logp_proximal for four"),
}

ADVERSARIAL = {
    "always_equal_object": ('''
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(3)
def _out(*args, **kwargs):
    return {"weight": Anything(), "truncated": Anything(), "ratio": Anything(), "surrogate": Anything(),
            "gradient": Anything(), "value": Anything(), "engine": Anything(), "trainer": Anything(),
            "replayed": Anything()}
decoupled_weights = surrogate_expectation = routed_logprobs = _out
def staleness_kept(*args, **kwargs): return Anything()
''', ("public", "staleness", "weights", "expectation", "routing")),
    "dict_subclass": ('''
import numpy as np
class Sneaky(dict):
    def __getitem__(self, key): return np.zeros(3)
    def __eq__(self, other): return True
def _out(*args, **kwargs):
    return Sneaky(weight=None, truncated=None, ratio=None, surrogate=None, gradient=None, value=None, engine=None,
                  trainer=None, replayed=None)
decoupled_weights = surrogate_expectation = routed_logprobs = _out
def staleness_kept(versions, *args, **kwargs): return np.ones(len(versions), dtype=bool)
''', ("public", "staleness", "weights", "expectation", "routing")),
    "returns_its_input": ('''
import numpy as np
def staleness_kept(versions, trainer_version, limit, rule): return np.asarray(versions) >= 0
def decoupled_weights(lb, lp, lc, adv, mask, *rest, **kw):
    z = np.nan_to_num(np.asarray(lc, float))
    return {key: z for key in ("weight", "truncated", "ratio", "surrogate", "gradient")}
def surrogate_expectation(theta, *rest, **kw):
    return {"value": 0.0, "gradient": np.asarray(theta, float)}
def routed_logprobs(experts, engine, trainer, tokens, top_k):
    z = np.zeros(len(tokens))
    return {"engine": z, "trainer": z, "replayed": z}
''', ("public", "staleness", "weights", "expectation", "routing")),
}


class TestAsynchronousRollouts(CodingCheckTests):
    stem = STEM
    groups = ("public", "staleness", "weights", "expectation", "routing", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.async_rollouts"
    reference_functions = ("staleness_kept", "decoupled_weights", "surrogate_expectation", "routed_logprobs")
    quiet_mistakes = ("weight_inverted", "coupled_ppo", "cap_ignored", "gradient_through_clip", "replay_copies_gates",
                      "verl_as_trl")
    central_mistakes = ("weight_inverted", "coupled_ppo", "ratio_against_behaviour", "ppo_ratio_inverted")


def test_an_extra_key_costs_only_the_open_checks_share():
    """"Exactly the keys" is graded once, in the open checks (as in exercises 18, 22 and 28)."""
    source = CORRECT["token_by_token"].replace('out["surrogate"], out["gradient"] = np.zeros((B, L)), np.zeros((B, L))',
                                               'out["surrogate"], out["gradient"] = np.zeros((B, L)), np.zeros((B, L))\n'
                                               '    out["kl"] = np.zeros((B, L))')
    result = result_of(STEM, source)
    failed = sorted(case.name for case in result.cases if not case.passed)
    assert failed == sorted(f"the open check: {key}, two responses, cap 1.5"
                            for key in ("gradient", "ratio", "surrogate", "truncated", "weight")), result.feedback()


def test_keeping_every_sample_earns_nothing_in_staleness():
    """A constant answer passes the cases whose answer it is (verl's None, all samples current), gated."""
    source = CORRECT["token_by_token"] + "\ndef staleness_kept(sample_versions, trainer_version, limit, rule):\n" \
                                         "    return np.ones(len(sample_versions), dtype=bool)\n"
    result = result_of(STEM, source)
    staleness = next(group for group in result.groups if group.name == "staleness")
    assert staleness.points_earned == 0, result.feedback()
    assert any(case.withheld for case in staleness.cases), result.feedback()


# --------------------------------------------------------------------------- the outside corpus

#: Where each wrong answer of the outside corpus (`tests/outside_answers_ex30.py`) loses points, and the
#: misconception its feedback names (None where the answer's output is NaN, raises, or no mistake has a name).
OUTSIDE_WRONG = {
    "WRONG_WEIGHT_INVERTED": (("weights", "expectation"), "behaviour-weight-inverted"),
    "WRONG_RATIO_AGAINST_BEHAVIOUR": (("weights", "expectation"), "ratio-against-behaviour"),
    "WRONG_RATIO_UPSIDE_DOWN": (("weights", "expectation"), "ppo-ratio-inverted"),
    "WRONG_CAP_TWO_SIDED": (("weights", "expectation"), "clipped-both-sides"),
    "WRONG_EXPECTATION_CAP_DROPS_B": (("expectation",), "not-truncated"),
    "WRONG_TRL_OFF_BY_ONE": (("staleness",), "trl-limit-exclusive"),
    "WRONG_VERL_LIKE_TRL": (("staleness",), "verl-threshold-as-lag"),
    "WRONG_VERL_ACCEPTS_ZERO": (("validation",), "silent-bad-input"),
    "WRONG_GRADIENT_THROUGH_CLIPPED": (("weights", "expectation"), "gradient-through-clip"),
    "WRONG_GRADIENT_ZERO_OUTSIDE_RANGE": (("weights", "expectation"), "clip-ignores-advantage-sign"),
    "WRONG_GRADIENT_WRT_RATIO": (("weights",), "gradient-without-ratio"),
    "WRONG_FORGOT_PADDING": (("weights",), "padding-not-zero"),
    "WRONG_PADDING_MULTIPLY_MASK": (("weights",), None),
    "WRONG_VALIDATES_PADDING": (("weights",), None),
    "WRONG_SHAPES_BROADCAST": (("validation",), "silent-bad-input"),
    "WRONG_SEQUENCE_LEVEL_WEIGHT": (("weights",), "weight-per-sequence"),
    "WRONG_EXPECTATION_NAIVE_UNDERFLOW": (("expectation",), None),
    "WRONG_EXPECTATION_GRADIENT_NO_SOFTMAX": (("expectation",), "softmax-jacobian"),
    "WRONG_REPLAY_GATES_TOO": (("routing",), "replay-copies-gates"),
    "WRONG_REPLAY_GATES_NOT_CHOICES": (("routing",), "replay-reversed"),
    "WRONG_PRE_SOFTMAX_GATES": (("routing",), "gates-not-renormalised"),
    "WRONG_VERL_DUAL_CLIP": (("weights",), "dual-clip-kept"),
    "WRONG_TOPK_SMALLEST": (("routing",), "smallest-experts"),
}
#: The outside wrong answers that get the central idea wrong (each capped at a third).
OUTSIDE_CENTRAL = ("WRONG_WEIGHT_INVERTED", "WRONG_RATIO_AGAINST_BEHAVIOUR", "WRONG_RATIO_UPSIDE_DOWN")
#: The outside wrong answers the open checks let through (the hidden checks catch each).
OPEN_CHECKS_MISS = {"WRONG_GRADIENT_ZERO_OUTSIDE_RANGE", "WRONG_PADDING_MULTIPLY_MASK", "WRONG_VALIDATES_PADDING",
                    "WRONG_SHAPES_BROADCAST", "WRONG_VERL_ACCEPTS_ZERO", "WRONG_EXPECTATION_NAIVE_UNDERFLOW",
                    "WRONG_REPLAY_GATES_TOO", "WRONG_VERL_DUAL_CLIP"}


def _outside(name: str) -> str:
    import outside_answers_ex30

    return getattr(outside_answers_ex30, name)


def _outside_names(kind: str) -> list:
    import outside_answers_ex30

    return list(getattr(outside_answers_ex30, kind))


def _open_checks_pass(source: str) -> bool:
    """Whether every check cell of the notebook (the open checks and the two tables) runs through on an answer, as
    Validate runs them."""
    import contextlib
    import io

    from check_support import namespace_from

    namespace = namespace_from(source)
    cells = [cell.source for cell in source_notebook(STEM).cells if cell.cell_type == "code"
             and cell.id.startswith("check")]
    assert len(cells) == 5
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for cell in cells:
                exec(compile(cell, "<open check>", "exec"), namespace)
    except Exception:  # noqa: BLE001 - any error stops Validate
        return False
    return True


def test_the_outside_corpus_is_listed_whole():
    assert sorted(OUTSIDE_WRONG) == sorted(_outside_names("WRONG"))
    assert len(_outside_names("CORRECT")) == 5 and len(_outside_names("GAME")) == 3


@pytest.mark.parametrize("name", _outside_names("CORRECT"))
def test_outside_correct_answers_earn_full_marks_and_pass_the_open_checks(name):
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
    assert _open_checks_pass(_outside(name)) == (name in OPEN_CHECKS_MISS)


@pytest.mark.parametrize("name", OUTSIDE_CENTRAL)
def test_outside_central_mistakes_earn_at_most_a_third(name):
    assert_capped(STEM, _outside(name))


@pytest.mark.parametrize("name", _outside_names("GAME"))
def test_outside_gaming_answers_earn_nothing_in_any_hidden_group(name):
    """The open checks hard-coded, a lookup of them raising everywhere else, or on-policy constants (every sample
    kept, weights and ratios 1, surrogate and gradient A): nothing, graded together or cell by cell. The constants
    pass the cases where the policies coincide and an advantage-size mismatch raises by accident; both are gated."""
    from autograder.checks import CHECKS

    result = result_of(STEM, _outside(name))
    assert result.points_earned == 0, result.feedback()
    for group in CHECKS[STEM].groups:
        assert result_of(STEM, _outside(name), [group.name]).points_earned == 0, group.name


def test_the_open_expectation_check_holds_the_gradient_to_the_grading_tolerance():
    """The open check's expectation is written out in 50-digit decimal arithmetic: a gradient by float64 central
    differences of the answer's own J (right to about 1e-9) is stopped there, as grading (rtol 1e-10) stops it."""
    source = _outside("CORRECT_VECTORISED") + '''

_exact_expectation = surrogate_expectation


def surrogate_expectation(theta, proximal, behaviour, advantages, eps_low=0.2, eps_high=0.2, cap=None):
    theta = np.asarray(theta, dtype=float)
    out = _exact_expectation(theta, proximal, behaviour, advantages, eps_low, eps_high, cap)
    h, steps = 1e-6, np.eye(theta.size)
    value = lambda t: _exact_expectation(t, proximal, behaviour, advantages, eps_low, eps_high, cap)["value"]
    out["gradient"] = np.array([(value(theta + h * e) - value(theta - h * e)) / (2 * h) for e in steps])
    return out
'''
    assert not _open_checks_pass(source)
    assert group_points(result_of(STEM, source))["expectation"][0] < 2
