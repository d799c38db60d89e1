"""Hidden checks for exercise 27: sequence-level ratios as TRL and verl deploy them.

``sequence_ratios(logp_new, logp_old, mask, eps_low, eps_high)`` returns the token ratios and four
sequence ratios (product, GSPO's geometric mean, GSPO's clipped ratio, verl's clamped weight);
``kept_mask(logp_new, logp_old, mask, rule, low, high)`` the tokens a masking / rejection rule keeps;
``first_dropped_length(token_log_ratio, rule, low, high, max_len)`` the shortest uniformly biased response
a rule drops. Expected values come from :mod:`autograder.reference.sequence_level`; the classic mistakes
(sum for mean and mean for sum, the ratio inverted, padding in the length, the geometric mean formed as a
power of the product, the token ratios clipped instead of the sequence ratio, verl's clamp left out or put
on the sum, a sequence rule applied per token, exclusive bounds, verl's k1 sign, each trainer's default for
a missing lower bound, the last kept length for the first dropped one) are recognised from their outputs.

Every stated rule has a case: bounds met exactly (on rows whose arithmetic is exact in float64, so
any order of summation or the log or the ratio space decides alike), asymmetric verl bounds, a token
beyond verl's +-20, 1000-token responses (log space), an empty row, NaN padding, lists, left padding,
a drop length beyond max_len. Swapping the sum and the mean of the log-ratios, which is the exercise,
caps the notebook at a third; bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, bool_array, coding_groups,
    error_case, exercise_stem, judge_key, shared as _shared, value_of,
)
from autograder.reference import sequence_level as ref

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    1,
    Group("ratios", 2, "sequence_ratios: token ratios, the product, GSPO's geometric and clipped ratios, verl's clamped weight"),
    Group("kept", 3, "kept_mask: the tokens TRL's and verl's masking and rejection rules keep"),
    Group("lengths", 1, "first_dropped_length: the shortest uniformly biased response each rule drops"),
    validation=(1, "The functions reject bad shapes, positive log-probabilities, unknown rules and bad bounds"),
)

KEYS = ("geometric", "gspo_clipped", "product", "token", "verl_sequence")

GEOMETRIC_WITHOUT_LENGTH = Misconception(
    "geometric-without-length",
    "This is the product of the token ratios, exp(sum of log-ratios): GSPO's sequence ratio is normalised by "
    "the response length, exp(mean of the log-ratios) = (pi_new(y) / pi_old(y)) ** (1 / |y|).")
PRODUCT_NORMALISED = Misconception(
    "product-length-normalised",
    "This is the geometric mean, exp(mean of log-ratios): the product of the token ratios is exp(sum of the "
    "log-ratios), which moves further from 1 the longer the response.")
SUM_MEAN_SWAPPED = Misconception(
    "sum-and-mean-swapped",
    "This rule was applied with the other statistic: sequence_mask and seq_sum_k1 use the sum of the "
    "log-ratios (the product of the ratios), seq_mean_k1 uses their mean over the response (the geometric "
    "mean), so only seq_mean_k1 treats a long response like a short one.")
RATIO_INVERTED = _shared.RATIO_INVERTED
PADDING_COUNTED = _shared.PADDING_COUNTED
TOKEN_PADDING = Misconception(
    "token-ratio-at-padding",
    "The token ratios at padding must be 0.0 (as verl multiplies its weights by the response mask): exp(0) = 1 "
    "is what padding gives when only the log-ratio is masked.")
GEOMETRIC_OVERFLOW = Misconception(
    "geometric-overflow",
    "The geometric mean was formed as a power of the product, (e^S) ** (1 / n): for a long response e^S "
    "underflows to 0 or overflows to inf before the root is taken. Work in log space: exp(S / n).")
CLIPPED_TOKENS = Misconception(
    "clipped-token-ratios",
    "The token ratios were clipped before the geometric mean was taken: GSPO clips the sequence ratio once, "
    "clip(s, 1 - eps_low, 1 + eps_high).")
CLIPPED_PRODUCT = Misconception(
    "clipped-product",
    "The product of the token ratios was clipped: GSPO clips its length-normalised ratio s = exp(mean of "
    "log-ratios).")
VERL_UNCLAMPED = Misconception(
    "verl-no-clamp",
    "verl's sequence weight clamps the summed log-ratio to [-20, 20] before exp (SAFETY_BOUND in "
    "rollout_corr_helper.py): exp(clip(S, -20, 20)).")
VERL_CLAMP_PER_TOKEN = Misconception(
    "verl-clamp-per-token",
    "The clamp was applied to each token's log-ratio: verl's sequence IS weight clamps the sum, "
    "exp(clip(sum of log-ratios, -20, 20)) (its rejection rules are the ones that clamp per token).")
MASK_PER_TOKEN = Misconception(
    "sequence-rule-per-token",
    "A sequence rule was applied token by token: sequence_mask, seq_sum_k1 and seq_mean_k1 decide once per "
    "response, and keep or drop all of its tokens together.")
MASK_PER_SEQUENCE = Misconception(
    "token-rule-per-sequence",
    "token_mask decides each token on its own ratio: a token outside the bounds is masked, the rest of its "
    "response stays.")
BOUNDS_EXCLUSIVE = Misconception(
    "bounds-exclusive",
    "A value exactly on a bound was dropped: TRL masks ratios < low or > high, verl rejects a statistic "
    "outside [log low, log high]; both keep the bound itself.")
K1_SIGN = Misconception(
    "verl-k1-sign",
    "verl's k1 statistic is minus the log-ratio, k1 = log pi_old - log pi_new, and it is k1 that must lie in "
    "[log low, log high]: the bounds are on pi_old / pi_new. (With verl's usual bounds, low = 1 / high, the "
    "two readings agree; with others they do not.)")
NO_TOKEN_CLAMP = Misconception(
    "verl-no-token-clamp",
    "verl's rejection rules clamp each token's log-ratio to [-20, 20] before summing or averaging it.")
VERL_LOW_DEFAULT = Misconception(
    "verl-lower-default",
    "With low left out, verl's rules use low = 1 / high (a single rollout_rs_threshold is read as "
    "1/threshold_threshold): a response whose ratio fell far below 1 is rejected too.")
TRL_LOW_DEFAULT = Misconception(
    "trl-lower-default",
    "With low left out, TRL's rules have no lower bound (vllm_importance_sampling_clip_min defaults to "
    "None): only ratios above high are masked.")
LAST_KEPT = Misconception(
    "last-kept-length",
    "This is the longest length the rule keeps: the task asks for the first length it drops, one more.")
NOT_NONE = Misconception(
    "no-drop-not-none",
    "When no length up to max_len is dropped, return None (not 0, max_len or another number).")


# ----------------------------------------------------------------------------- ratios


def _ratio_wrong(new, old, mask, eps_low, eps_high) -> dict:
    """``key -> [(output, Misconception)]``: the mistakes' outputs on this input, computed here."""
    m = np.asarray(mask, dtype=bool)
    d = np.where(m, np.nan_to_num(np.asarray(new, dtype=float)) - np.nan_to_num(np.asarray(old, dtype=float)), 0.0)
    total, n, width = d.sum(axis=1), np.maximum(m.sum(axis=1), 1), m.shape[1]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        inverted = ref.sequence_ratios(old, new, mask, eps_low, eps_high) if _all_nonpositive(old, new, m) else None
        product, mean = np.exp(total), np.exp(total / n)
        wrong = {key: [] for key in KEYS}
        if inverted is not None:
            for key in KEYS:
                wrong[key].append((inverted[key], RATIO_INVERTED))
        wrong["geometric"] += [(product, GEOMETRIC_WITHOUT_LENGTH), (np.exp(total / width), PADDING_COUNTED),
                               (product ** (1.0 / n), GEOMETRIC_OVERFLOW)]
        wrong["product"].append((mean, PRODUCT_NORMALISED))
        wrong["token"].append((np.exp(d), TOKEN_PADDING))
        low, high = 1.0 - eps_low, 1.0 + eps_high
        token_clipped = np.exp(np.where(m, np.log(np.clip(np.exp(d), low, high)), 0.0).sum(axis=1) / n)
        wrong["gspo_clipped"] += [(token_clipped, CLIPPED_TOKENS), (np.clip(product, low, high), CLIPPED_PRODUCT),
                                  (np.clip(product, low, high), GEOMETRIC_WITHOUT_LENGTH)]
        wrong["verl_sequence"] += [(product, VERL_UNCLAMPED),
                                   (np.exp(np.where(m, np.clip(d, -20, 20), 0.0).sum(axis=1)), VERL_CLAMP_PER_TOKEN)]
    return {key: [(w, mc) for w, mc in pairs if np.all(np.isfinite(w)) or key == "geometric"]
            for key, pairs in wrong.items()}


def _all_nonpositive(old, new, m) -> bool:
    return bool(np.all(np.asarray(old, dtype=float)[m] <= 0) and np.all(np.asarray(new, dtype=float)[m] <= 0))


def _overflow_named(judge, key):
    """A geometric mean of inf or 0 where the right one is finite and positive is the power of the product."""

    def wrapped(outcomes):
        try:
            verdict = judge(outcomes)
        except Reject as rejection:
            verdict = Verdict(False, rejection.message, rejection.misconception)
        if verdict.passed or verdict.misconception is not None:
            return verdict
        try:
            value = value_of(outcomes[0])
            raw = np.asarray(value[key], dtype=np.float64) if isinstance(value, dict) and key in value else None
        except (Reject, ValueError, TypeError):
            raw = None
        if raw is not None and raw.ndim == 1 and np.any((raw == 0.0) | np.isinf(raw)):
            return Verdict(False, GEOMETRIC_OVERFLOW.sentence, GEOMETRIC_OVERFLOW.key)
        return verdict

    return wrapped


def _ratio_cases(name, new, old, mask, *, keys=KEYS, eps=None, as_lists=False, group="ratios", long=False):
    eps_low, eps_high = eps if eps is not None else (ref.GSPO_EPS_LOW, ref.GSPO_EPS_HIGH)
    expected = ref.sequence_ratios(new, old, mask, eps_low, eps_high)
    wrong = _ratio_wrong(new, old, mask, eps_low, eps_high)
    kwargs = {} if eps is None else {"eps_low": eps_low, "eps_high": eps_high}
    args = tuple(np.asarray(a).tolist() for a in (new, old, mask)) if as_lists else (new, old, mask)
    cases = []
    for key in keys:
        judge = judge_key("sequence_ratios", key, expected, KEYS, wrong=wrong[key])
        if long and key in ("geometric", "gspo_clipped"):
            judge = _overflow_named(judge, key)
        cases.append(Case(f"{key} ratios, {name}", group, (Call("sequence_ratios", args, kwargs),), judge))
    return cases


def _unambiguous(wrong, same) -> list:
    """The ``(output, Misconception)`` pairs whose output no pair of another misconception shares: where
    two mistakes give the same answer, naming one would blame a mistake the student may not have made."""
    return [(output, mistake) for output, mistake in wrong
            if not any(other.key != mistake.key and same(output, alike) for alike, other in wrong)]


# ----------------------------------------------------------------------------- kept


def _log_mask(d, m, level, stat, lo, hi, *, exclusive=False, clamp=False):
    """A rule written in log space: keep where ``lo <= x <= hi`` (strictly at both bounds, or at ``"low"`` or
    ``"high"`` only, with ``exclusive``), x the per-token log-ratio, the row's sum or its mean (after a clamp
    to +-20 when ``clamp``)."""
    x = np.where(m, np.clip(d, -20, 20) if clamp else d, 0.0)
    if level == "sequence":
        x = x.sum(axis=1)
        if stat == "mean":
            x = x / np.maximum(m.sum(axis=1), 1)
        x = x[:, None]
    lo = -np.inf if lo is None else lo
    hi = np.inf if hi is None else hi
    above = x > lo if exclusive in (True, "low") else x >= lo
    below = x < hi if exclusive in (True, "high") else x <= hi
    keep = above & below
    return m & np.broadcast_to(keep, m.shape)


def _kept_wrong(new, old, mask, rule, low, high) -> list:
    m = np.asarray(mask, dtype=bool)
    d = np.where(m, np.nan_to_num(np.asarray(new, dtype=float)) - np.nan_to_num(np.asarray(old, dtype=float)), 0.0)
    log = lambda v: None if v is None else math.log(v)  # noqa: E731
    wrong = []
    if rule in ("token_mask", "sequence_mask"):
        lo, hi = log(low), log(high)
        level = "token" if rule == "token_mask" else "sequence"
        other = "sequence" if level == "token" else "token"
        wrong += [(_log_mask(d, m, other, "sum", lo, hi), MASK_PER_SEQUENCE if level == "token" else MASK_PER_TOKEN),
                  *[(_log_mask(d, m, level, "sum", lo, hi, exclusive=side), BOUNDS_EXCLUSIVE)
                    for side in (True, "low", "high")],
                  (_log_mask(-d, m, level, "sum", lo, hi), RATIO_INVERTED)]
        if level == "sequence":
            wrong.append((_log_mask(d, m, level, "mean", lo, hi), SUM_MEAN_SWAPPED))
        if low is None and high is not None:
            wrong.append((_log_mask(d, m, level, "sum", -hi, hi), TRL_LOW_DEFAULT))
        return wrong
    stat = "sum" if rule == "seq_sum_k1" else "mean"
    low_value = 1.0 / high if low is None else low
    lo, hi = -math.log(high), -math.log(low_value)  # bounds on the log-ratio: k1 = -log-ratio
    wrong += [(_log_mask(d, m, "sequence", "mean" if stat == "sum" else "sum", lo, hi, clamp=True), SUM_MEAN_SWAPPED),
              (_log_mask(d, m, "token", stat, lo, hi, clamp=True), MASK_PER_TOKEN),
              *[(_log_mask(d, m, "sequence", stat, lo, hi, clamp=True, exclusive=side), BOUNDS_EXCLUSIVE)
                for side in (True, "low", "high")],
              (_log_mask(d, m, "sequence", stat, math.log(low_value), math.log(high), clamp=True), K1_SIGN),
              (_log_mask(d, m, "sequence", stat, lo, hi), NO_TOKEN_CLAMP)]
    if low is None:
        wrong.append((_log_mask(d, m, "sequence", stat, lo, None, clamp=True), VERL_LOW_DEFAULT))
    return wrong


def _kept_case(name, new, old, mask, rule, low=None, high=None, *, as_lists=False, group="kept"):
    expected = ref.kept_mask(new, old, mask, rule, low, high)
    wrong = _unambiguous([(w, mc) for w, mc in _kept_wrong(new, old, mask, rule, low, high)
                          if not np.array_equal(w, expected)], np.array_equal)
    response = np.asarray(mask, dtype=bool)

    def judge(outcomes):
        value = value_of(outcomes[0], "kept_mask")
        actual = bool_array(value, "the kept mask", shape=expected.shape)
        if np.array_equal(actual, expected):
            return PASS
        if np.any(actual & ~response):
            return Verdict(False, PADDING_COUNTED.sentence, PADDING_COUNTED.key)
        for output, misconception in wrong:
            if np.array_equal(actual, output):
                return Verdict(False, misconception.sentence, misconception.key)
        return Verdict(False, "the kept mask is not correct for this input")

    kwargs = {key: value for key, value in (("low", low), ("high", high)) if value is not None}
    args = tuple(np.asarray(a).tolist() for a in (new, old, mask)) if as_lists else (new, old, mask)
    return Case(f"{rule}, {name}", group, (Call("kept_mask", (*args, rule), kwargs),), judge)


# ----------------------------------------------------------------------------- lengths


def _length_wrong(b, rule, low, high, max_len) -> list:
    expected = ref.first_dropped_length(b, rule, low, high, max_len)
    wrong = []
    if expected is not None and expected > 1:
        wrong.append((expected - 1, LAST_KEPT))
    other = {"sequence_mask": None, "seq_sum_k1": "seq_mean_k1", "seq_mean_k1": "seq_sum_k1", "token_mask": None}[rule]
    if other is not None:
        swapped = ref.first_dropped_length(b, other, low, high, max_len)
        wrong.append((swapped, SUM_MEAN_SWAPPED))
    if rule == "sequence_mask" and high is not None:
        wrong.append((ref.first_dropped_length(b, "seq_mean_k1", 1.0 / high if low is None else low, high, max_len),
                      SUM_MEAN_SWAPPED))
    if rule == "sequence_mask" and low is None and high is not None:
        wrong.append((ref.first_dropped_length(b, rule, 1.0 / high, high, max_len), TRL_LOW_DEFAULT))
    if rule.endswith("_k1"):
        low_value = 1.0 / high if low is None else low
        wrong.append((ref.first_dropped_length(b, rule, 1.0 / high, 1.0 / low_value, max_len), K1_SIGN))
        if low is None:
            wrong.append((ref.first_dropped_length(b, rule, 1e-300, high, max_len) if b <= 0 else None,
                          VERL_LOW_DEFAULT))
    return [(w, mc) for w, mc in wrong if w != expected]


def _length_case(name, b, rule, low=None, high=None, max_len=None, *, extra=()):
    max_len_value = ref.DEFAULT_MAX_LEN if max_len is None else max_len
    expected = ref.first_dropped_length(b, rule, low, high, max_len_value)
    wrong = _unambiguous(_length_wrong(b, rule, low, high, max_len_value) + list(extra),
                         lambda first, second: first == second)

    def judge(outcomes):
        value = value_of(outcomes[0], "first_dropped_length")
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise Reject("first_dropped_length should return an int or None")
        if value == expected:
            return PASS
        for output, misconception in wrong:
            if value == output:
                return Verdict(False, misconception.sentence, misconception.key)
        if expected is None:
            return Verdict(False, NOT_NONE.sentence, NOT_NONE.key)
        return Verdict(False, "the length is not correct for this rule and bias")

    kwargs = {key: value for key, value in (("low", low), ("high", high), ("max_len", max_len)) if value is not None}
    return Case(f"first dropped length, {rule}, {name}", "lengths", (Call("first_dropped_length", (b, rule), kwargs),),
                judge)


# ----------------------------------------------------------------------------- cases


def _biased_group(rng, lengths, width, bias, noise):
    """Right-padded responses whose tokens' log-ratios are ``bias`` plus noise, NaN in the padding."""
    mask = np.arange(width)[None, :] < np.asarray(lengths)[:, None]
    old = -rng.exponential(1.5, size=mask.shape) - 0.5
    new = np.minimum(old + bias + noise * rng.normal(size=mask.shape), 0.0)
    return np.where(mask, new, np.nan), np.where(mask, old, np.nan), mask


def _exact_rows(values, width):
    """Rows with one token of log-ratio ``v`` and the rest 0: sums, means, products and logs all exact."""
    mask = np.ones((len(values), width), dtype=bool)
    old = np.full(mask.shape, -6.0)
    new = old.copy()
    new[:, 0] = old[:, 0] + np.asarray(values)
    return new, old, mask


def _cases_public():
    """The notebook's open checks: its two responses, its batch, its length at 0.98 per token."""
    cases = []
    p_new = np.array([[-1.0, -2.0, -7.0], [-0.5, -9.0, -9.0]])
    p_old = np.array([[-1.5, -1.0, -3.0], [-1.0, -9.0, -9.0]])
    p_mask = np.array([[True, True, False], [True, False, False]])
    cases += _ratio_cases("the open check's two responses", p_new, p_old, p_mask, keys=("geometric", "product"),
                          group="public")
    k_old = np.array([[-1.0, -1.0, -1.0, -9.0], [-1.0, -9.0, -9.0, -9.0]])
    k_new = np.array([[-0.5, -0.5, -0.5, -9.0], [-0.5, -9.0, -9.0, -9.0]])
    k_mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0]])
    cases.append(_kept_case("the open check's batch", k_new, k_old, k_mask, "sequence_mask", high=3.0, group="public"))
    cases.append(_kept_case("the open check's batch", k_new, k_old, k_mask, "seq_mean_k1", high=2.0, group="public"))
    cases.append(Case("the open check: seq_sum_k1 at 0.98 per token", "public",
                      (Call("first_dropped_length", (math.log(0.98), "seq_sum_k1"), {"high": 2.0}),),
                      _length_case("", math.log(0.98), "seq_sum_k1", high=2.0).judge))
    return cases


def _cases_ratios(rng):
    """sequence_ratios: GRPO groups, padding of every kind, long responses, verl's clamp."""
    cases = []
    group = _biased_group(rng, [4, 9, 17, 30], 30, math.log(0.98), 0.2)
    cases += _ratio_cases("a GRPO group of lengths 4, 9, 17, 30 (NaN padding)", *group)
    new, old, mask = _biased_group(rng, [6, 1, 0, 3], 6, 0.05, 0.5)
    cases += _ratio_cases("left padding, an empty row, lists, eps 0.05 / 0.1", new[:, ::-1], old[:, ::-1],
                          mask[:, ::-1].astype(int), eps=(0.05, 0.1), as_lists=True)
    long_old = np.full((2, 1000), -1.0)
    long_new = np.stack([np.full(1000, -2.0), np.full(1000, -0.9985)])
    cases += _ratio_cases("1000-token responses (one falling, one rising slowly)", long_new, long_old,
                          np.ones((2, 1000), dtype=bool), keys=("geometric", "gspo_clipped", "verl_sequence", "product"),
                          long=True)
    drift_new, drift_old, drift_mask = _biased_group(rng, [40, 25, 60], 60, 0.01, 0.001)
    cases += _ratio_cases("a small drift over long responses, eps 0.2 / 0.28", drift_new, drift_old, drift_mask,
                          keys=("gspo_clipped", "product"), eps=(0.2, 0.28))
    far_new = np.array([[-30.0, -1.0, -2.0], [-1.0, -25.5, -3.0]])
    far_old = np.array([[0.0, -26.0, -2.0], [-1.5, -0.5, -9.0]])
    cases += _ratio_cases("a token beyond verl's +-20 each way", far_new, far_old, np.array([[1, 1, 1], [1, 1, 0]]),
                          keys=("verl_sequence", "product", "geometric"))
    up_new, up_old = np.zeros((1, 1000)), np.full((1, 1000), -1.0)
    cases += _ratio_cases("a 1000-token response at log-ratio +1 per token", up_new, up_old, np.ones((1, 1000)),
                          keys=("geometric", "verl_sequence"), long=True)
    return cases


def _cases_kept(rng):
    """kept_mask: each rule on groups, one bound given, asymmetric bounds, the clamp, bounds met exactly."""
    cases = []
    group = _biased_group(rng, [3, 12, 40, 90], 90, math.log(0.98), 0.02)
    mixed = _biased_group(rng, [7, 7, 2, 5, 0], 8, 0.0, 0.6)
    for rule, low, high in (("token_mask", 0.97, 1.03), ("sequence_mask", 0.5, 3.0), ("seq_sum_k1", 0.5, 2.0),
                            ("seq_mean_k1", 0.97, 1.03)):
        cases.append(_kept_case("a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token", *group, rule, low, high))
        cases.append(_kept_case("noisy ratios, an empty row, lists", *mixed, rule, low, high, as_lists=True))
    # defaults: TRL has no lower bound, verl's is 1 / high (rows far below 1, one above)
    drift = _exact_rows([-3.0, -0.2, 0.4, 3.5, 0.9], 4)
    cases.append(_kept_case("one bound given (high = 3)", *drift, "sequence_mask", high=3.0))
    cases.append(_kept_case("one bound given (high = 3)", *drift, "token_mask", high=3.0))
    cases.append(_kept_case("one bound given (high = 2)", *drift, "seq_sum_k1", high=2.0))
    cases.append(_kept_case("one bound given (high = 2)", *drift, "seq_mean_k1", high=2.0))
    # verl's asymmetric bounds (its own tests use "0.6_1.4"): k1 = -log r must lie in [log 0.6, log 1.4]
    asym = _exact_rows([math.log(0.7), math.log(1.6), math.log(0.62), math.log(1.3)], 3)
    cases.append(_kept_case("asymmetric bounds 0.6 and 1.4", *asym, "seq_sum_k1", 0.6, 1.4))
    # a token beyond verl's +-20: clamped, the sum is 0 (kept); unclamped it is -10
    clamp_new = np.array([[-50.0, -1.0, -2.0], [-1.0, -1.0, -9.0], [-4.0, -1.0, -1.0]])
    clamp_old = np.array([[0.0, -41.0, -2.0], [-1.5, -0.5, -1.0], [-1.0, -1.0, -1.0]])
    clamp_mask = np.array([[True, True, True], [True, True, False], [True, True, True]])
    for rule in ("seq_sum_k1", "seq_mean_k1"):
        cases.append(_kept_case("a token at log-ratio -50 and one at +40", clamp_new, clamp_old, clamp_mask, rule,
                                high=2.0))
    # bounds met exactly (one nonzero token per row, 0 elsewhere: every way of computing agrees)
    edge = _exact_rows([-2.0, 2.0, -2.5, 0.0], 3)
    exact = math.exp(2.0)
    assert math.log(exact) == 2.0 and math.log(1.0 / exact) == -2.0 and math.exp(-2.0) == 1.0 / exact
    cases.append(_kept_case("ratios exactly on both bounds", *edge, "sequence_mask", 1.0 / exact, exact))
    cases.append(_kept_case("ratios exactly on both bounds", *edge, "token_mask", 1.0 / exact, exact))
    cases.append(_kept_case("a statistic exactly on both bounds", *edge, "seq_sum_k1", 1.0 / exact, exact))
    edge_mean = _exact_rows([-4.0, 4.0, -5.0, 0.0, -3.0], 2)  # the means are -2, 2, -2.5, 0, -1.5: exact
    cases.append(_kept_case("a statistic exactly on both bounds", *edge_mean, "seq_mean_k1", 1.0 / exact, exact))
    return cases


def _cases_lengths():
    """first_dropped_length: each rule at a per-token bias, bounds met exactly, max_len, the clamp."""
    exact = math.exp(2.0)  # the bound e**2, met exactly (as in the kept cases)
    cases = []
    b98, b999 = math.log(0.98), math.log(0.999)
    for b, label in ((b98, "0.98 per token"), (b999, "0.999 per token")):
        cases.append(_length_case(label, b, "sequence_mask", 0.5, 3.0))
        cases.append(_length_case(label, b, "seq_sum_k1", 0.5, 2.0))
        cases.append(_length_case(label, b, "seq_mean_k1", 0.999, 1.001))
    cases.append(_length_case("a bias of 5e-4 per token", math.log(0.9995), "seq_mean_k1", 0.999, 1.001))
    cases.append(_length_case("TRL's default bounds, 0.98 per token", b98, "sequence_mask", high=3.0))
    cases.append(_length_case("0.98 per token", b98, "token_mask", 0.9, 1.1))
    cases.append(_length_case("1.02 per token", math.log(1.02), "sequence_mask", high=3.0))
    cases.append(_length_case("1.02 per token, one bound", math.log(1.02), "seq_sum_k1", high=1.5))
    cases.append(_length_case("a bound met exactly (-1/4 per token)", -0.25, "sequence_mask", math.exp(-2.0), 3.0,
                              extra=[(8, BOUNDS_EXCLUSIVE)]))
    cases.append(_length_case("a bound met exactly (+1/4 per token)", 0.25, "seq_sum_k1", 1.0 / exact, exact,
                              extra=[(8, BOUNDS_EXCLUSIVE)]))
    cases.append(_length_case("beyond max_len", b999, "seq_sum_k1", 0.5, 2.0, max_len=600))
    cases.append(_length_case("-25 per token, clamped to -20", -25.0, "seq_sum_k1", high=math.exp(45.0),
                              extra=[(2, NO_TOKEN_CLAMP)]))
    return cases


def _cases_validation(rng):
    """Bad input to each of the three functions, each naming its argument."""
    cases = []
    m = np.ones((2, 3), dtype=bool)
    lp = -rng.exponential(1.0, size=(2, 3))
    cases += [
        error_case("ratios: logp_old of another shape", "sequence_ratios", (lp, lp[:, :2], m),
                   "a logp_old whose shape differs from the mask's", "logp_old"),
        error_case("ratios: one row of logp_new for two rows of mask", "sequence_ratios", (lp[:1], lp, m),
                   "a logp_new of shape [1, L] for a mask of shape [2, L] (NumPy would broadcast it)", "logp_new"),
        error_case("ratios: a positive log-probability", "sequence_ratios", (np.abs(lp) + 0.1, lp, m),
                   "a positive log-probability on a response token", "logp_new"),
        error_case("ratios: NaN on a response token", "sequence_ratios", (np.where(m, np.nan, 0.0), lp, m),
                   "NaN on a response token", "logp_new"),
        error_case("ratios: eps_high = 1", "sequence_ratios", (lp, lp, m), "eps_high = 1", "eps_high",
                   kwargs={"eps_high": 1.0}),
        error_case("kept: an unknown rule", "kept_mask", (lp, lp, m, "geometric"), "rule 'geometric'", "rule"),
        error_case("kept: seq_sum_k1 without high", "kept_mask", (lp, lp, m, "seq_sum_k1"),
                   "a verl rule with no high bound", "high"),
        error_case("kept: low above high", "kept_mask", (lp, lp, m, "token_mask"), "low = 2 and high = 1.5", "low",
                   kwargs={"low": 2.0, "high": 1.5}),
        error_case("kept: a negative bound", "kept_mask", (lp, lp, m, "sequence_mask"), "low = -1", "low",
                   kwargs={"low": -1.0}),
        error_case("kept: a 1-D mask", "kept_mask", (lp[0], lp[0], m[0], "token_mask"), "1-D inputs", "mask"),
        error_case("lengths: max_len = 0", "first_dropped_length", (-0.1, "sequence_mask"), "max_len = 0",
                   "max_len", kwargs={"high": 3.0, "max_len": 0}),
        error_case("lengths: bounds that exclude 1", "first_dropped_length", (-0.1, "sequence_mask"),
                   "low = 1.5 (the bounds must contain 1)", "low", kwargs={"low": 1.5, "high": 3.0}),
        error_case("lengths: an infinite log-ratio", "first_dropped_length", (-math.inf, "token_mask"),
                   "token_log_ratio = -inf", "token_log_ratio", kwargs={"high": 3.0}),
    ]
    return cases


def build_cases():
    rng = np.random.default_rng(27)
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    return [*_cases_public(), *_cases_ratios(rng), *_cases_kept(rng), *_cases_lengths(), *_cases_validation(rng)]


#: Which statistic each rule uses (the sum of the log-ratios, or their mean over the response) is the
#: exercise: swapping them, in the ratios or in the rules, caps the notebook at a third of its points.
CENTRAL = Central(
    "the sum of the log-ratios (product) against their mean (GSPO's geometric ratio, verl's seq_mean_k1)",
    {"geometric-without-length", "product-length-normalised", "sum-and-mean-swapped"},
    ("geometric ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
     "product ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
     "sequence_mask, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
     "seq_sum_k1, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
     "seq_mean_k1, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
     "sequence_mask, noisy ratios, an empty row, lists",
     "seq_sum_k1, noisy ratios, an empty row, lists",
     "seq_mean_k1, noisy ratios, an empty row, lists"))

#: Bad-input points count only for functions that return on ordinary hidden valid input.
#: Its twin (bad input counts only for a function that also answers valid input) asks for answers that
#: are right: a junk mask is easily read as a mistake, and the twin's lengths are not the open check's 35.
GATE = Gate(cases=("token ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
                   "token_mask, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                   "first dropped length, sequence_mask, 0.98 per token"),
            attempt_needs="passed",
            attempt_cases=("token ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
                           "geometric ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
                           "product ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
                           "token_mask, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                           "sequence_mask, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                           "seq_sum_k1, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                           "seq_mean_k1, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                           "first dropped length, sequence_mask, 0.999 per token",
                           "first dropped length, sequence_mask, 1.02 per token",
                           "first dropped length, seq_sum_k1, 1.02 per token, one bound"))

#: The open checks are hints: each earns its points only where hidden cases of the same kind pass too.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("geometric ratios, the open check's two responses", "product ratios, the open check's two responses"),
         cases=("geometric ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
                "product ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)")),
    Gate(groups=("public",), needs="passed",
         only=("sequence_mask, the open check's batch", "seq_mean_k1, the open check's batch"),
         cases=("sequence_mask, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
                "seq_mean_k1, a GRPO group of lengths 3, 12, 40, 90 at 0.98 per token",
     "sequence_mask, noisy ratios, an empty row, lists",
     "seq_sum_k1, noisy ratios, an empty row, lists",
     "seq_mean_k1, noisy ratios, an empty row, lists")),
    Gate(groups=("public",), needs="passed",
         only=("the open check: seq_sum_k1 at 0.98 per token",),
         cases=("first dropped length, seq_sum_k1, 0.98 per token",
                "first dropped length, seq_sum_k1, 0.999 per token")),
)

#: A constant answer (always None, always 1) would pass the cases whose answer it is: they count only when
#: the same function also finds a length that depends on the bias.
CONSTANT_GATE = Gate(
    groups=("lengths",), needs="passed",
    only=("first dropped length, seq_mean_k1, 0.98 per token", "first dropped length, seq_mean_k1, 0.999 per token",
          "first dropped length, seq_mean_k1, a bias of 5e-4 per token",
          "first dropped length, sequence_mask, TRL's default bounds, 0.98 per token",
          "first dropped length, token_mask, 0.98 per token", "first dropped length, seq_sum_k1, beyond max_len"),
    cases=("first dropped length, sequence_mask, 0.98 per token", "first dropped length, sequence_mask, 1.02 per token"),
    why="a length-independent answer (None, or 1) counts only when the same function also finds a length that "
        "depends on the bias")

#: Two lengths equal the open check's own answer (35 tokens at 0.98 per token), which a function that
#: returns 35 whatever it is asked gets right: they count only when the same function also finds two
#: other lengths (pairwise different, so no constant finds two).
LENGTH_GATE = Gate(
    groups=("lengths",), needs="passed", quorum=2,
    only=("first dropped length, sequence_mask, 0.98 per token", "first dropped length, seq_sum_k1, 0.98 per token"),
    cases=("first dropped length, sequence_mask, 0.999 per token", "first dropped length, sequence_mask, 1.02 per token",
           "first dropped length, seq_sum_k1, 1.02 per token, one bound",
           "first dropped length, sequence_mask, a bound met exactly (-1/4 per token)",
           "first dropped length, seq_sum_k1, -25 per token, clamped to -20"),
    why="the open check's own length counts only when the same function also finds other lengths")

#: GSPO's clip holds two 1000-token responses at its two bounds, as it holds the open check's two: an
#: answer that repeats the open check's values gets that case right. It counts only when the same
#: function also gets a clip that is not at its bounds right.
CLIPPED_GATE = Gate(
    groups=("ratios",), needs="passed", quorum=1,
    only=("gspo_clipped ratios, 1000-token responses (one falling, one rising slowly)",),
    cases=("gspo_clipped ratios, a GRPO group of lengths 4, 9, 17, 30 (NaN padding)",
           "gspo_clipped ratios, left padding, an empty row, lists, eps 0.05 / 0.1"),
    why="a clipped ratio at its bounds counts only when the same function also gets clipped ratios inside them "
        "right")

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + (CONSTANT_GATE, LENGTH_GATE,
                                                                                   CLIPPED_GATE))
