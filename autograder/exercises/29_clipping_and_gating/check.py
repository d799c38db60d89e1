"""Hidden checks for exercise 29: clipping and gating beyond the symmetric PPO clip.

``ppo_clip_loss(logp_new, logp_old, advantages, eps_low, eps_high, dual_clip)``,
``trl_delta_loss(logp_new, logp_old, advantages, delta, eps_low, eps_high)`` and
``cispo_loss(logp_new, logp_old, advantages, weight_high, weight_low)`` return per token the loss, its
derivative with respect to ``logp_new`` and which tokens are clipped; ``stale_sequence_mask(logp_new,
logp_sampler, advantages, mask, threshold)`` the sampler's drift per response and which responses are kept.
Expected values come from :mod:`autograder.reference.clipping`, itself tested against mpmath central
differences of verl's, OpenRLHF's and TRL's losses written out (``tests/test_reference_clipping.py``).

Every token set holds tokens on each side of every bound, for both signs of the advantage, and tokens with
advantage 0; no ratio lies within 1e-4 (relative) of a bound, where the losses have kinks. Which tokens keep
a gradient is the exercise: an answer that clips whatever the advantage's sign, zeroes CISPO's clipped
tokens, caps the dual clip's gradient instead of zeroing it, or drops positive-advantage responses earns at
most a third of the points. Bad-input points need some ordinary hidden input answered right (the gate), and
on-policy tokens, where every rule gives -A r, count only where the function also clips right (the constant gate).
"""

from __future__ import annotations

import math

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    FLOAT32_ARITHMETIC, Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, coding_groups, error_case,
    exercise_stem, judge_key, mistakes_later, mistakes_part, redraw, shared as _shared,
)
from autograder.reference import clipping as ref

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    1,
    Group("ppo", 2, "ppo_clip_loss: the symmetric clip, clip-higher and the dual clip, on both sides of every bound"),
    Group("delta", 1, "trl_delta_loss: TRL's cap on the unclipped ratio, above and below 1 + eps_high"),
    Group("cispo", 2, "cispo_loss: the clipped, detached weight, in TRL's form and in verl's"),
    Group("mask", 1, "stale_sequence_mask: the sampler's drift per response and the responses TRL keeps"),
    validation=(1, "The functions reject shapes that differ, positive or non-finite log-probabilities and bounds "
                   "out of range"),
)

KEYS = ("clipped", "grad", "loss")
MASK_KEYS = ("keep", "kl")

# --------------------------------------------------------------------------- misconceptions

CLIP_IGNORES_SIGN = _shared.CLIP_IGNORES_SIGN
CISPO_ZEROED = Misconception(
    "cispo-gradient-zeroed",
    "CISPO's clipped tokens lost their gradient: the clipped weight is detached and multiplies the "
    "log-probability, -sg(w) A log pi_new, so every token keeps the gradient -w A, capped, never zeroed.")
DUAL_CAPPED = Misconception(
    "dual-clip-gradient-capped",
    "Beyond c the dual clip makes a negative-advantage token's loss the constant -c A, so its gradient is 0 there: "
    "it is the loss that is bounded (by c |A|), not the gradient held at c |A|.")
MASK_IGNORES_ADVANTAGE = Misconception(
    "stale-mask-ignores-advantage",
    "A response with a non-negative advantage was dropped: TRL's off-policy sequence mask keeps every response with "
    "A >= 0 and drops only negative-advantage responses whose sampler drifted beyond the threshold.")
OBJECTIVE = Misconception(
    "objective-not-loss",
    "These are the objective's values (what the trainer maximises): the loss is its negative, -A r where nothing "
    "is clipped, and so is its derivative.")
GRAD_WRT_RATIO = Misconception(
    "gradient-wrt-ratio",
    "This is the derivative with respect to the ratio, not to the log-probability: r = exp(logp_new - logp_old), "
    "so dr/dlogp_new = r and an unclipped token's gradient is -A r.")
BOUNDS_SWAPPED = _shared.CLIP_BOUNDS_SWAPPED
EPS_HIGH_DEFAULT = Misconception(
    "eps-high-default",
    "With eps_high left out the clip is symmetric, eps_high = eps_low (TRL's epsilon_high and verl's "
    "clip_ratio_high default to the lower value), not unbounded above.")
EPS_HIGH_ZERO = Misconception(
    "eps-high-zero-replaced",
    "eps_high = 0 is a valid bound (no room above a ratio of 1), but it was replaced by eps_low: `eps_high or "
    "eps_low` treats 0 like None. Test `eps_high is None`.")
ZERO_ADVANTAGE_CLIPPED = Misconception(
    "zero-advantage-clipped",
    "A token with advantage 0 is never clipped by a PPO-style rule: its loss is 0 whichever term is taken.")
DUAL_IGNORED = Misconception(
    "dual-clip-ignored",
    "dual_clip was left out (of the loss, the gradient or the clipped tokens): with it, a negative-advantage token "
    "whose ratio exceeds c has the constant loss -c A, so zero gradient, and counts as clipped.")
DUAL_BOTH_SIGNS = Misconception(
    "dual-clip-positive-advantage",
    "The dual clip was applied to positive advantages too: it caps only negative-advantage tokens (verl and "
    "OpenRLHF select it with advantages < 0); for A > 0 the loss is the plain clipped one.")
DELTA_AS_DUAL = Misconception(
    "delta-as-dual-clip",
    "TRL's delta was taken for the dual clip: TRL caps the unclipped ratio, min(r, delta), for both signs before "
    "the minimum, which equals the dual clip only when delta >= 1 + eps_high; below it a positive-advantage token "
    "loses its gradient from delta on.")
DELTA_IGNORED = Misconception(
    "delta-ignored",
    "delta was left out: TRL clamps the unclipped ratio at delta, so a negative-advantage token whose ratio "
    "exceeds it has zero gradient.")
CISPO_SURROGATE = Misconception(
    "cispo-loss-is-surrogate",
    "CISPO's loss is -sg(w) A logp_new: the clipped weight multiplies the log-probability (a REINFORCE term), "
    "it is not PPO's surrogate -A w.")
CISPO_NOT_DETACHED = Misconception(
    "cispo-weight-not-detached",
    "The weight was differentiated too: CISPO detaches the clipped weight, so the gradient of -sg(w) A logp_new "
    "is -w A, with no term from w's own dependence on logp_new.")
CISPO_BY_SIGN = Misconception(
    "cispo-clipped-by-sign",
    "CISPO clips the weight of every token whatever its advantage's sign (TRL's CISPO clip metric counts only "
    "positive advantages, but its loss clamps every ratio).")
CISPO_ZERO_ADVANTAGE = Misconception(
    "cispo-zero-advantage-unflagged",
    "CISPO's clipped marks w != r for every token, an advantage of 0 included: the weight is clipped whatever "
    "the advantage (only the PPO-style rules never mark a token with A = 0, whose loss is 0 either way).")
CISPO_AS_EPSILONS = Misconception(
    "cispo-bounds-as-epsilons",
    "weight_high and weight_low bound the weight itself (TRL's epsilon_high = 5.0 caps it at 5; verl's form is "
    "1 - clip_ratio_low and 1 + clip_ratio_high): they are not epsilons around 1.")
KL_SIGN = Misconception(
    "stale-kl-sign",
    "The drift has the wrong sign: TRL averages logp_sampler - logp_new, an estimate of KL(sampler || new) from "
    "tokens the sampler drew, which is large when the sampler liked its tokens more than the policy now does.")
KL_SUM = Misconception(
    "stale-kl-sum",
    "The drift is a mean over the response's tokens, not a sum: TRL divides by the response length (at least 1), "
    "so a long response is not dropped for its length alone.")
MASK_IGNORES_KL = Misconception(
    "stale-mask-ignores-kl",
    "Every negative-advantage response was dropped: the mask drops one only when its drift exceeds the threshold.")
ZERO_ADVANTAGE_DROPPED = Misconception(
    "zero-advantage-dropped",
    "A response with advantage exactly 0 was dropped: TRL keeps advantages >= 0.")
THRESHOLD_EXCLUSIVE = Misconception(
    "threshold-exclusive",
    "A drift exactly at the threshold was dropped: TRL keeps kl <= threshold.")
RIGHT_PADDING_ASSUMED = Misconception(
    "right-padding-assumed",
    "The drift averaged the first n_i positions of each row: the mask marks the response tokens wherever they "
    "are (left padding puts them at the end of the row), so select with the mask itself.")
PADDING_MULTIPLIED = Misconception(
    "padding-multiplied-by-mask",
    "Padding reached the drift: multiplying by the mask does not remove NaN or infinite padding (NaN * 0 and "
    "inf * 0 are NaN), and a NaN drift drops a negative-advantage response. Select the response tokens "
    "(np.where(mask, ..., 0.0)) before summing.")
EMPTY_RESPONSE_NAN = Misconception(
    "empty-response-drift-nan",
    "An empty response's drift came out 0 / 0 = NaN, and a NaN drift is never <= the threshold, so a negative "
    "advantage dropped it: TRL divides by the token count clamped to 1, so an empty response drifts 0.")
GRADIENT_INEXACT = Misconception(
    "gradient-inexact",
    "The gradient is right to only 7 to 10 significant digits, as a finite-difference estimate of the loss (or "
    "float32 arithmetic) is. It is graded, like the open checks, to a relative 1e-10: compute the derivative "
    "itself, in float64.")
RATIO_INVERTED = _shared.RATIO_INVERTED
PADDING_COUNTED = _shared.PADDING_COUNTED


# --------------------------------------------------------------------------- mistakes' outputs (trusted side)


def _out(loss, grad, clipped) -> dict:
    return {"loss": np.asarray(loss, float), "grad": np.asarray(grad, float), "clipped": np.asarray(clipped, bool)}


def _from_effective(ratio, effective, adv) -> dict:
    """A PPO-style answer from its effective ratio (as the reference assembles the right one)."""
    with np.errstate(invalid="ignore"):
        follows = effective == ratio
        live = adv != 0
        return _out(np.where(live, -adv * effective, 0.0), np.where(live & follows, -adv * ratio, 0.0),
                    live & ~follows)


def _distinct(found: dict, right: dict) -> dict:
    """Per key, the (output, Misconception) pairs that differ from the right output and from every pair of
    another misconception (where two mistakes agree, naming one would blame a mistake maybe not made)."""
    same = lambda a, b: a.shape == b.shape and np.allclose(a, b, rtol=1e-8, atol=1e-10)  # noqa: E731
    kept = {}
    for key, pairs in found.items():
        pairs = [(np.asarray(w, float), m) for w, m in pairs
                 if np.all(np.isfinite(np.asarray(w, float))) and not same(np.asarray(w, float), np.asarray(right[key], float))]
        kept[key] = [(w, m) for w, m in pairs if not any(o.key != m.key and same(w, v) for v, o in pairs)]
    return kept


def _common(call, args, right, keys=KEYS) -> dict:
    """The mistakes every PPO-style function shares: the objective's sign, the derivative with respect to the
    ratio, the ratio inverted."""
    new, old, adv = args[:3]
    ratio = np.exp(np.asarray(new, float) - np.asarray(old, float))
    found = {key: [] for key in keys}
    found["loss"].append((-right["loss"], OBJECTIVE))
    found["grad"].append((-right["grad"], OBJECTIVE))
    found["grad"].append((right["grad"] / ratio, GRAD_WRT_RATIO))
    inverted = call(old, new, *args[2:])
    for key in keys:
        found[key].append((inverted[key], RATIO_INVERTED))
    return found


def _ppo_wrongs(new, old, adv, eps_low, eps_high, dual) -> dict:
    new, old, adv = (np.asarray(a, float) for a in (new, old, adv))
    right = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, dual)
    found = _common(lambda n, o, *rest: ref.ppo_clip_loss(n, o, *rest), (new, old, adv, eps_low, eps_high, dual), right)
    high_eps = eps_low if eps_high is None else eps_high
    low, high = 1.0 - eps_low, 1.0 + high_eps
    ratio = np.exp(new - old)
    c = np.inf if dual is None else dual
    # central: the clip applied whatever the sign (the dual clip still on negative advantages)
    both = np.clip(ratio, low, high)
    both = np.where(adv < 0, np.minimum(both, c), both)
    for key, value in _from_effective(ratio, both, adv).items():
        found[key].append((value, CLIP_IGNORES_SIGN))
    if high_eps < 1.0 and high_eps != eps_low:
        swapped = ref.ppo_clip_loss(new, old, adv, high_eps, eps_low, dual)
        for key in KEYS:
            found[key].append((swapped[key], BOUNDS_SWAPPED))
    if eps_high is None:
        open_top = ref.ppo_clip_loss(new, old, adv, eps_low, 1e300, dual)
        for key in KEYS:
            found[key].append((open_top[key], EPS_HIGH_DEFAULT))
    elif eps_high == 0.0 and eps_low != 0.0:
        replaced = ref.ppo_clip_loss(new, old, adv, eps_low, eps_low, dual)
        for key in KEYS:
            found[key].append((replaced[key], EPS_HIGH_ZERO))
    found["clipped"].append((right["clipped"] | ((adv == 0) & ((ratio > high) | (ratio < low))), ZERO_ADVANTAGE_CLIPPED))
    if dual is not None:
        plain = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high)
        for key in KEYS:
            found[key].append((plain[key], DUAL_IGNORED))
        capped = np.where((adv < 0) & (ratio > dual), -adv * dual, right["grad"])
        found["grad"].append((capped, DUAL_CAPPED))
        everywhere = np.where(adv > 0, np.maximum(np.minimum(ratio, high), dual), np.where(
            adv < 0, np.minimum(np.maximum(ratio, low), dual), ratio))
        for key, value in _from_effective(ratio, everywhere, adv).items():
            found[key].append((value, DUAL_BOTH_SIGNS))
    return _distinct(found, right)


def _delta_wrongs(new, old, adv, delta, eps_low, eps_high) -> dict:
    new, old, adv = (np.asarray(a, float) for a in (new, old, adv))
    right = ref.trl_delta_loss(new, old, adv, delta, eps_low, eps_high)
    found = _common(lambda n, o, *rest: ref.trl_delta_loss(n, o, *rest), (new, old, adv, delta, eps_low, eps_high),
                    right)
    as_dual = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high, delta)
    plain = ref.ppo_clip_loss(new, old, adv, eps_low, eps_high)
    for key in KEYS:
        found[key].append((as_dual[key], DELTA_AS_DUAL))
        found[key].append((plain[key], DELTA_IGNORED))
    high = 1.0 + (eps_low if eps_high is None else eps_high)
    ratio = np.exp(new - old)
    both = np.minimum(np.clip(ratio, 1.0 - eps_low, high), delta)
    for key, value in _from_effective(ratio, both, adv).items():
        found[key].append((value, CLIP_IGNORES_SIGN))
    return _distinct(found, right)


def _cispo_wrongs(new, old, adv, weight_high, weight_low) -> dict:
    new, old, adv = (np.asarray(a, float) for a in (new, old, adv))
    right = ref.cispo_loss(new, old, adv, weight_high, weight_low)
    ratio = np.exp(new - old)
    w = np.clip(ratio, 0.0 if weight_low is None else weight_low, weight_high)
    inside = w == ratio
    found = {key: [] for key in KEYS}
    found["grad"].append((np.where(inside, -adv * ratio, 0.0), CISPO_ZEROED))
    found["loss"].append((-adv * w, CISPO_SURROGATE))
    found["grad"].append((-adv * w - np.where(inside, adv * new * ratio, 0.0), CISPO_NOT_DETACHED))
    by_sign = np.where(adv > 0, w, ratio)
    found["loss"].append((-by_sign * adv * new, CISPO_BY_SIGN))
    found["grad"].append((-by_sign * adv, CISPO_BY_SIGN))
    found["clipped"].append(((adv > 0) & ~inside, CISPO_BY_SIGN))
    found["clipped"].append(((adv != 0) & ~inside, CISPO_ZERO_ADVANTAGE))
    eps_w = np.clip(ratio, 0.0 if weight_low is None else 1.0 - weight_low, 1.0 + weight_high)
    found["loss"].append((-eps_w * adv * new, CISPO_AS_EPSILONS))
    found["grad"].append((-eps_w * adv, CISPO_AS_EPSILONS))
    found["clipped"].append((eps_w != ratio, CISPO_AS_EPSILONS))
    found["loss"].append((-right["loss"], OBJECTIVE))
    found["grad"].append((-right["grad"], OBJECTIVE))
    inverted = ref.cispo_loss(old, new, adv, weight_high, weight_low)
    for key in KEYS:
        found[key].append((inverted[key], RATIO_INVERTED))
    return _distinct(found, right)


def _mask_wrongs(new, sampler, adv, mask, threshold) -> dict:
    m = np.asarray(mask, dtype=bool)
    # the first n_i positions of each row averaged, as if every row were right-padded (padding read as it is)
    first = np.arange(m.shape[1])[None, :] < m.sum(axis=1)[:, None]
    with np.errstate(invalid="ignore"):
        raw_diff = np.asarray(sampler, float) - np.asarray(new, float)
        right_kl = np.where(first, raw_diff, 0.0).sum(axis=1) / np.maximum(m.sum(axis=1), 1)
        # the mask multiplied in (NaN * 0 is NaN, inf * 0 too): padding reaches the drift
        product_kl = (raw_diff * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1)
        unclamped_kl = np.where(m, raw_diff, 0.0).sum(axis=1) / m.sum(axis=1)  # 0 / 0 for an empty response
    new = np.where(m, np.nan_to_num(np.asarray(new, float)), 0.0)
    sampler = np.where(m, np.nan_to_num(np.asarray(sampler, float)), 0.0)
    adv = np.asarray(adv, float)
    right = ref.stale_sequence_mask(new, sampler, adv, m, threshold)
    total = (sampler - new).sum(axis=1)
    kl = right["kl"]
    found = {"kl": [(-kl, KL_SIGN), (total, KL_SUM), (total / m.shape[1], PADDING_COUNTED)], "keep": []}
    for value, mistake in ((-kl, KL_SIGN), (total, KL_SUM), (total / m.shape[1], PADDING_COUNTED)):
        found["keep"].append(((adv >= 0) | (value <= threshold), mistake))
    found["keep"] += [(kl <= threshold, MASK_IGNORES_ADVANTAGE), (adv >= 0, MASK_IGNORES_KL),
                      ((adv > 0) | (kl <= threshold), ZERO_ADVANTAGE_DROPPED),
                      ((adv >= 0) | (kl < threshold), THRESHOLD_EXCLUSIVE),
                      ((adv >= 0) | (right_kl <= threshold), RIGHT_PADDING_ASSUMED),
                      ((adv >= 0) | (product_kl <= threshold), PADDING_MULTIPLIED),
                      ((adv >= 0) | (unclamped_kl <= threshold), EMPTY_RESPONSE_NAN)]
    found["kl"].append((right_kl, RIGHT_PADDING_ASSUMED))
    return _distinct(found, right)


# --------------------------------------------------------------------------- inputs


def _pair(rng, log_ratio):
    """logp_new and logp_old, both <= 0, with the given log-ratios: the larger one is -Exp(1.5) - 0.01."""
    log_ratio = np.asarray(log_ratio, float)
    top = -rng.exponential(1.5, log_ratio.shape) - 0.01
    return np.where(log_ratio >= 0, top, top + log_ratio), np.where(log_ratio >= 0, top - log_ratio, top)


def _bounds_clear(new, old, bounds, margin=1e-4) -> bool:
    log_ratio = np.asarray(new) - np.asarray(old)
    return all(np.all(np.abs(log_ratio - math.log(b)) > margin) for b in bounds)


def _tokens(rng, bounds, n_random=16, shape=None):
    """Tokens on every side of every bound for both signs of A (one each, inside its interval, clear of the
    ends), then ``n_random`` random ones (log-ratios N(0, 1.2), advantages N(0, 1)), two advantages 0, shuffled;
    drawn again until every ratio is clear of every bound and every log-ratio is below 20 in size (the task
    says so: the trainers' clamp of the log-ratio to [-20, 20] changes nothing here)."""
    edges = sorted(math.log(b) for b in bounds)
    cuts = [edges[0] - 1.5] + edges + [edges[-1] + 1.5]

    def draw():
        placed = [rng.uniform(lo + 0.02, hi - 0.02) for lo, hi in zip(cuts[:-1], cuts[1:]) for _ in (0, 1)]
        signs = [1.0, -1.0] * (len(placed) // 2)
        d = np.concatenate([placed, rng.normal(0.0, 1.2, n_random), rng.normal(0.0, 1.0, 2)])
        adv = np.concatenate([np.array(signs) * rng.uniform(0.3, 2.0, len(placed)), rng.normal(0.0, 1.0, n_random),
                              np.zeros(2)])
        order = rng.permutation(d.size)
        new, old = _pair(rng, d[order])
        return new, old, adv[order]

    new, old, adv = redraw(draw, lambda t: _bounds_clear(t[0], t[1], bounds) and bool(np.all(np.abs(t[0] - t[1]) < 20)),
                           "every ratio clear of the bounds, every log-ratio below 20 in size")
    if shape is not None:
        new, old, adv = (a[: int(np.prod(shape))].reshape(shape) for a in (new, old, adv))
    return new, old, adv


def _on_policy(rng, n=10):
    new = -rng.exponential(1.0, n) - 0.05
    return new, new.copy(), rng.normal(0.0, 1.0, n)


def _args(arrays, as_lists):
    return tuple(np.asarray(a).tolist() for a in arrays) if as_lists else tuple(arrays)


#: The open check's tokens (the notebook prints them): pi_old = 0.1, pi_new in (0.02, 0.09, 0.15, 0.6), so the
#: ratios are 0.2, 0.9, 1.5 and 6, each with advantage +1 and -1.
OPEN_NEW = np.log(np.array([0.02, 0.09, 0.15, 0.6, 0.02, 0.09, 0.15, 0.6]))
OPEN_OLD = np.log(np.full(8, 0.1))
OPEN_ADV = np.array([1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0])
#: The open check's batch for the mask: drifts 0.6 (stale), 0.05 and 0.6, advantages +1, -1, -1, 0.
OPEN_MASK = np.array([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=bool)
OPEN_MASK_NEW = np.log(np.array([[0.2, 0.2, 0.2], [0.5, 0.5, 1.0], [0.2, 0.2, 0.2], [0.3, 1.0, 1.0]]))
OPEN_MASK_SAMPLER = np.array([[0.6, 0.6, 0.6], [0.05, 0.05, 0.0], [0.6, 0.6, 0.6], [0.9, 0.0, 0.0]]) + OPEN_MASK_NEW
OPEN_MASK_SAMPLER = np.minimum(OPEN_MASK_SAMPLER, 0.0)
OPEN_MASK_ADV = np.array([1.0, -1.0, -1.0, 0.0])


def _loss_cases(function, wrongs, name, group, arrays, params, kwargs=None, keys=KEYS, *, as_lists=False,
                public=False):
    """One case per key of ``function``'s result on ``arrays`` with ``params`` (positional after the arrays)."""
    kwargs = dict(kwargs or {})
    expected = getattr(ref, function)(*arrays, *params, **kwargs)
    wrong = mistakes_later(wrongs, *arrays, *_complete(function, params, kwargs))
    call = Call(function, (*_args(arrays, as_lists), *params), kwargs)
    return [Case(f"{'the open check: ' if public else ''}{function} {key}, {name}", group, (call,),
                 _inexact_gradient_named(judge_key(function, key, expected, KEYS, exact=public,
                                                   wrong=mistakes_part(wrong, key)), key))
            for key in keys]


def _inexact_gradient_named(judge, key):
    """A gradient right to only single precision is most often a finite-difference estimate: say so (the
    float32 sentence alone would send the student looking for a cast that is not there)."""
    if key != "grad":
        return judge

    def named(outcomes):
        verdict = judge(outcomes)
        if verdict.misconception == FLOAT32_ARITHMETIC.key:
            return Verdict(False, GRADIENT_INEXACT.sentence, GRADIENT_INEXACT.key)
        return verdict

    return named


def _complete(function, params, kwargs) -> tuple:
    """The full positional parameters of a wrongs function (defaults filled in as the signature has them)."""
    names = {"ppo_clip_loss": (("eps_low", ref.EPS), ("eps_high", None), ("dual_clip", None)),
             "trl_delta_loss": (("delta", None), ("eps_low", ref.EPS), ("eps_high", None)),
             "cispo_loss": (("weight_high", None), ("weight_low", None))}[function]
    values = list(params) + [kwargs.get(name, default) for name, default in names[len(params):]]
    return tuple(values)


def _mask_cases(name, group, arrays, threshold, keys=MASK_KEYS, *, as_lists=False, public=False):
    expected = ref.stale_sequence_mask(*arrays, threshold)
    wrong = mistakes_later(_mask_wrongs, *arrays, threshold)
    call = Call("stale_sequence_mask", (*_args(arrays, as_lists), threshold))
    return [Case(f"{'the open check: ' if public else ''}stale_sequence_mask {key}, {name}", group, (call,),
                 judge_key("stale_sequence_mask", key, expected, MASK_KEYS, exact=public,
                           wrong=mistakes_part(wrong, key)))
            for key in keys]


def _responses(rng, lengths, width, drift, noise, threshold):
    """Right-padded responses (NaN padding) whose sampler log-probabilities exceed the policy's by ``drift``
    per response plus noise; drawn again until no response's drift lies within 1e-6 of ``threshold`` (where
    the order of summation could decide)."""
    mask = np.arange(width)[None, :] < np.asarray(lengths)[:, None]

    def draw():
        new = -rng.exponential(1.2, mask.shape) - 0.3
        sampler = np.minimum(new + np.asarray(drift)[:, None] + noise * rng.normal(size=mask.shape), 0.0)
        return np.where(mask, new, np.nan), np.where(mask, sampler, np.nan), mask

    def clear(drawn):
        kl = ref.stale_sequence_mask(*drawn[:2], np.zeros(mask.shape[0]), mask, threshold)["kl"]
        return bool(np.all(np.abs(kl - threshold) > 1e-6))

    return redraw(draw, clear, "every drift clear of the threshold")


#: The name of the on-policy cases (r = 1), which a rule-free formula passes (see CONSTANT_GATE).
_ON_POLICY = "on-policy tokens (logp_new equal to logp_old)"


def _cases_public():
    """The notebook's open checks: its eight tokens and four responses."""
    P, D, C = "ppo_clip_loss", "trl_delta_loss", "cispo_loss"
    open_tokens = (OPEN_NEW, OPEN_OLD, OPEN_ADV)
    cases = []
    cases += _loss_cases(P, _ppo_wrongs, "the eight tokens, clip-higher and the dual clip", "public", open_tokens,
                         (0.2, 0.28, 3.0), keys=("grad", "clipped"), public=True)
    cases += _loss_cases(D, _delta_wrongs, "the eight tokens, delta 3", "public", open_tokens, (3.0, 0.2, 0.28),
                         keys=("grad",), public=True)
    cases += _loss_cases(C, _cispo_wrongs, "the eight tokens, TRL's cap of 5", "public", open_tokens, (5.0,),
                         keys=("grad", "clipped"), public=True)
    cases += _mask_cases("the four responses", "public", (OPEN_MASK_NEW, OPEN_MASK_SAMPLER, OPEN_MASK_ADV, OPEN_MASK),
                         0.5, keys=("keep",), public=True)
    return cases


def _cases_ppo(rng):
    """ppo_clip_loss: the symmetric clip, clip-higher, the default eps_high, the dual clip, r = 1."""
    P = "ppo_clip_loss"
    cases = []
    sym = _tokens(rng, (0.8, 1.2))
    cases += _loss_cases(P, _ppo_wrongs, "the symmetric clip 0.2", "ppo", sym, (0.2, 0.2))
    higher = _tokens(rng, (0.8, 1.28))
    cases += _loss_cases(P, _ppo_wrongs, "clip-higher 0.2 / 0.28", "ppo", higher, (0.2, 0.28))
    default = _tokens(rng, (0.9, 1.1))
    cases += _loss_cases(P, _ppo_wrongs, "eps_high left out (eps_low 0.1)", "ppo", default, (0.1,),
                         keys=("grad", "clipped"))
    flat_top = _tokens(rng, (0.8, 1.0, 1.2))
    cases += _loss_cases(P, _ppo_wrongs, "eps_high = 0 (no room above a ratio of 1)", "ppo", flat_top, (0.2, 0.0),
                         keys=("grad", "clipped"))
    dual = _tokens(rng, (0.8, 1.28, 3.0))
    cases += _loss_cases(P, _ppo_wrongs, "verl's dual clip c = 3 with clip-higher", "ppo", dual, (0.2, 0.28, 3.0))
    dual_grid = _tokens(rng, (0.75, 1.25, 1.5), n_random=14, shape=(3, 8))
    cases += _loss_cases(P, _ppo_wrongs, "a dual clip of 1.5 on a [3, 8] batch given as lists", "ppo", dual_grid,
                         (0.25,), {"dual_clip": 1.5}, keys=("grad", "clipped"), as_lists=True)
    cases += _loss_cases(P, _ppo_wrongs, _ON_POLICY, "ppo", _on_policy(rng),
                         (0.2, 0.28, 3.0), keys=("grad", "loss"))
    return cases


def _cases_delta(rng):
    """trl_delta_loss: delta above and below 1 + eps_high, eps_high left out."""
    D = "trl_delta_loss"
    cases = []
    above = _tokens(rng, (0.8, 1.28, 3.0))
    cases += _loss_cases(D, _delta_wrongs, "delta 3 with clip-higher", "delta", above, (3.0, 0.2, 0.28))
    below = _tokens(rng, (0.8, 1.2, 1.28))
    cases += _loss_cases(D, _delta_wrongs, "delta 1.2, below 1 + eps_high = 1.28", "delta", below, (1.2, 0.2, 0.28),
                         keys=("grad", "clipped"))
    wide = _tokens(rng, (0.8, 1.2, 10.0))
    cases += _loss_cases(D, _delta_wrongs, "delta 10 with eps_high left out, lists", "delta", wide, (10.0,),
                         keys=("grad",), as_lists=True)
    return cases


def _cases_cispo(rng):
    """cispo_loss: TRL's cap, verl's bounds, a floor, r = 1."""
    C = "cispo_loss"
    cases = []
    trl = _tokens(rng, (5.0,), n_random=20)
    cases += _loss_cases(C, _cispo_wrongs, "TRL's form, a cap of 5 and no lower bound", "cispo", trl, (5.0,))
    verl = _tokens(rng, (0.8, 1.28))
    cases += _loss_cases(C, _cispo_wrongs, "verl's form, weights in [0.8, 1.28]", "cispo", verl, (1.28, 0.8))
    grid = _tokens(rng, (0.5, 2.0), n_random=16, shape=(4, 6))
    cases += _loss_cases(C, _cispo_wrongs, "a cap of 2 and a floor of 0.5 on a [4, 6] batch", "cispo", grid, (2.0,),
                         {"weight_low": 0.5}, keys=("grad", "clipped"))
    cases += _loss_cases(C, _cispo_wrongs, _ON_POLICY, "cispo", _on_policy(rng),
                         (5.0,), keys=("grad", "loss"))
    return cases


def _cases_stale_mask(rng):
    """stale_sequence_mask: padding of every kind, drifts exactly on the threshold."""
    cases = []
    drift = np.array([0.9, 0.9, 0.05, 0.05, 0.9, 0.4, -0.2, 0.7])
    batch = _responses(rng, [6, 11, 3, 12, 9, 1, 7, 12], 12, drift, 0.1, 0.5)
    # a negative advantage on a full row (no padding) too: a drift NaN from the padding drops only padded rows
    adv = np.array([1.2, -0.8, -1.1, -0.4, -0.3, -1.5, -0.6, 0.9])
    cases += _mask_cases("a GRPO batch of 8 responses (NaN padding), threshold 0.5", "mask", (*batch[:2], adv, batch[2]),
                         0.5)
    # drifts exact in float64: 0.5 (on the threshold), 0.25 (summing to 1), 0 (an empty response), 0.75 twice, one
    # with advantage 0 (kept)
    exact_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 0]], dtype=bool)
    exact_new = np.array([[-1.0, -1.5, 0.0, 0.0], [-2.0, -2.0, -2.0, -2.0], [0.0] * 4, [-1.0, -1.0, -1.0, -1.0],
                          [-3.0, -2.0, -1.0, 0.0]])
    exact_sampler = np.array([[-0.5, -1.0, 0.0, 0.0], [-1.0, -1.5, -2.0, -2.5], [0.0] * 4, [-0.25] * 4,
                              [-2.0, -1.0, -0.75, 0.0]])
    cases += _mask_cases("a drift exactly at the threshold, an empty response, an advantage of 0", "mask",
                         (exact_new, exact_sampler, np.array([-1.0, -1.0, -1.0, 0.0, -0.5]), exact_mask), 0.5)
    left = _responses(rng, [4, 1, 6, 2], 6, np.array([1.1, 0.02, 0.3, 2.0]), 0.05, 0.25)
    # padding of 0 in logp_new and -inf in logp_sampler: averaging the first n_i positions reads -inf
    left_new, left_sampler = np.where(left[2], left[0], 0.0), np.where(left[2], left[1], -np.inf)
    cases += _mask_cases("left padding given as lists of 0/1, -inf in the padding, threshold 0.25", "mask",
                         (left_new[:, ::-1], left_sampler[:, ::-1], np.array([-1.0, -2.0, -0.5, 0.7]),
                          left[2][:, ::-1].astype(int)), 0.25, keys=("keep",), as_lists=True)
    return cases


def _cases_validation(rng):
    """Bad input to each of the four functions, each naming its argument."""
    P, D, C, M = "ppo_clip_loss", "trl_delta_loss", "cispo_loss", "stale_sequence_mask"
    cases = []
    new, old, adv = _tokens(rng, (0.8, 1.2), n_random=4)
    n = new.size
    bad = [
        ("logp_old of another length", (new, old[:-1], adv), {}, "logp_old"),
        ("advantages of shape [T, 1] against logp_new of shape [T] (NumPy would broadcast them)",
         (new, old, adv[:, None]), {}, "advantages"),
        ("a positive log-probability in logp_new", (np.abs(new) + 0.1, old, adv), {}, "logp_new"),
        ("NaN in the advantages", (new, old, np.where(np.arange(n) == 2, np.nan, adv)), {}, "advantages"),
        ("-inf in logp_old (a token of probability 0)", (new, np.where(np.arange(n) == 1, -np.inf, old), adv), {},
         "logp_old"),
    ]
    for problem, arrays, kwargs, argument in bad:
        cases.append(error_case(f"ppo_clip_loss: {problem}", P, arrays, problem, argument, kwargs=kwargs))
    cases += [
        error_case("ppo_clip_loss: eps_low = 1", P, (new, old, adv), "eps_low = 1", "eps_low", kwargs={"eps_low": 1.0}),
        error_case("ppo_clip_loss: a negative eps_high", P, (new, old, adv), "eps_high = -0.1", "eps_high",
                   kwargs={"eps_high": -0.1}),
        error_case("ppo_clip_loss: dual_clip = 1 (it must exceed 1)", P, (new, old, adv), "dual_clip = 1",
                   "dual_clip", kwargs={"dual_clip": 1.0}),
        error_case("ppo_clip_loss: eps_high = NaN (out of every range)", P, (new, old, adv), "eps_high = NaN",
                   "eps_high", kwargs={"eps_high": math.nan}),
        error_case("trl_delta_loss: delta = 0.9 (it must exceed 1)", D, (new, old, adv, 0.9), "delta = 0.9", "delta"),
        error_case("trl_delta_loss: advantages of another length", D, (new, old, adv[:-1], 3.0),
                   "advantages of another length", "advantages"),
        error_case("trl_delta_loss: a positive log-probability in logp_old", D, (new, np.abs(old) + 0.1, adv, 3.0),
                   "a positive log-probability in logp_old", "logp_old"),
        error_case("cispo_loss: weight_high = 0", C, (new, old, adv, 0.0), "weight_high = 0", "weight_high"),
        error_case("cispo_loss: weight_low above weight_high", C, (new, old, adv, 1.2, 1.5),
                   "weight_low = 1.5 with weight_high = 1.2", "weight_low"),
        error_case("cispo_loss: a negative weight_low", C, (new, old, adv, 5.0, -0.5), "weight_low = -0.5",
                   "weight_low"),
        error_case("cispo_loss: weight_low = NaN (out of every range)", C, (new, old, adv, 5.0, math.nan),
                   "weight_low = NaN", "weight_low"),
        error_case("cispo_loss: advantages of shape [T, 1]", C, (new, old, adv[:, None], 5.0),
                   "advantages of shape [T, 1] against logp_new of shape [T]", "advantages"),
    ]
    m_new, m_sampler, m_mask = _responses(rng, [3, 2], 3, np.array([0.2, 0.1]), 0.05, 0.5)
    m_adv = np.array([1.0, -1.0])
    cases += [
        error_case("stale_sequence_mask: advantages per token, shape [B, L]", M,
                   (m_new, m_sampler, np.ones(m_mask.shape), m_mask, 0.5), "advantages of shape [B, L]", "advantages"),
        error_case("stale_sequence_mask: a 1-D mask", M, (m_new[0], m_sampler[0], m_adv[:1], m_mask[0], 0.5),
                   "1-D inputs", "mask"),
        error_case("stale_sequence_mask: a negative threshold", M, (m_new, m_sampler, m_adv, m_mask, -0.5),
                   "threshold = -0.5", "threshold"),
        error_case("stale_sequence_mask: threshold = NaN (out of every range)", M,
                   (m_new, m_sampler, m_adv, m_mask, math.nan), "threshold = NaN", "threshold"),
        error_case("stale_sequence_mask: a positive log-probability on a response token", M,
                   (m_new, np.where(m_mask, 0.3, np.nan), m_adv, m_mask, 0.5),
                   "a positive logp_sampler on a response token", "logp_sampler"),
        error_case("stale_sequence_mask: NaN on a response token of logp_new", M,
                   (np.where(m_mask, np.nan, 0.0), m_sampler, m_adv, m_mask, 0.5), "NaN on a response token",
                   "logp_new"),
        error_case("stale_sequence_mask: logp_sampler of another shape", M,
                   (m_new, m_sampler[:, :2], m_adv, m_mask, 0.5), "logp_sampler of shape [B, L - 1]", "logp_sampler"),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(29)``, the hand-made
    ones (the open check's tokens, exact thresholds, the validation inputs) the same for everyone."""
    rng = np.random.default_rng(variant.seed(29))
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    return [*_cases_public(), *_cases_ppo(rng), *_cases_delta(rng), *_cases_cispo(rng), *_cases_stale_mask(rng),
            *_cases_validation(rng)]


_SYM, _HIGHER, _DUAL = "the symmetric clip 0.2", "clip-higher 0.2 / 0.28", "verl's dual clip c = 3 with clip-higher"
_TRL, _VERL = "TRL's form, a cap of 5 and no lower bound", "verl's form, weights in [0.8, 1.28]"
_BATCH = "a GRPO batch of 8 responses (NaN padding), threshold 0.5"
_DELTA = "delta 3 with clip-higher"

#: Which tokens keep a gradient under each rule is the exercise: getting that wrong caps the notebook.
CENTRAL = Central(
    "which tokens keep a gradient under each rule: PPO clips only the side the advantage pushes, the dual clip "
    "zeroes a negative-advantage token beyond c, CISPO caps but never zeroes, the mask drops only negative "
    "advantages",
    {"clip-ignores-advantage-sign", "cispo-gradient-zeroed", "dual-clip-gradient-capped",
     "stale-mask-ignores-advantage"},
    (f"ppo_clip_loss grad, {_SYM}", f"ppo_clip_loss grad, {_HIGHER}", f"ppo_clip_loss grad, {_DUAL}",
     f"cispo_loss grad, {_TRL}", f"cispo_loss grad, {_VERL}", f"stale_sequence_mask keep, {_BATCH}"))

#: Bad-input points count only for a function that answers at least one of its ordinary hidden inputs right: a
#: function that raises on everything, or answers valid input with a rule-free formula (-A r, nothing clipped,
#: every response kept) behind honest input checks, earns nothing for rejecting bad input, while one mistake in a
#: working function keeps them. The task says so.
GATE = Gate(
    cases=tuple(f"ppo_clip_loss {key}, {name}" for name in (_SYM, _HIGHER, _DUAL) for key in KEYS)
    + tuple(f"trl_delta_loss {key}, {_DELTA}" for key in KEYS)
    + ("trl_delta_loss grad, delta 1.2, below 1 + eps_high = 1.28", "trl_delta_loss clipped, delta 1.2, below 1 + "
       "eps_high = 1.28", "trl_delta_loss grad, delta 10 with eps_high left out, lists")
    + tuple(f"cispo_loss {key}, {name}" for name in (_TRL, _VERL) for key in KEYS)
    + tuple(f"stale_sequence_mask {key}, {_BATCH}" for key in MASK_KEYS)
    + tuple(f"stale_sequence_mask {key}, a drift exactly at the threshold, an empty response, an advantage of 0"
            for key in MASK_KEYS),
    needs="one-passed",
    why="rejecting bad input counts only when valid input is accepted and some ordinary hidden input is answered "
        "right")

#: On-policy tokens (r = 1) get the unclipped answer under every rule, so a rule-free formula passes them: they
#: count only when the same function also clips right on a hidden case.
CONSTANT_GATE = Gate(
    groups=("ppo", "cispo"), needs="passed",
    only=tuple(f"{function} {key}, {_ON_POLICY}" for function in ("ppo_clip_loss", "cispo_loss")
               for key in ("grad", "loss")),
    cases=(f"ppo_clip_loss grad, {_HIGHER}", f"cispo_loss grad, {_TRL}"),
    why="on-policy tokens (a ratio of 1, where every rule gives the unclipped answer) count only when the same "
        "function also clips right on a hidden case")

#: The open checks are hints: each earns its points only where hidden cases of the same kind pass too.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("the open check: ppo_clip_loss grad, the eight tokens, clip-higher and the dual clip",
               "the open check: ppo_clip_loss clipped, the eight tokens, clip-higher and the dual clip"),
         cases=(f"ppo_clip_loss grad, {_DUAL}", f"ppo_clip_loss clipped, {_DUAL}", f"ppo_clip_loss grad, {_HIGHER}")),
    Gate(groups=("public",), needs="passed", only=("the open check: trl_delta_loss grad, the eight tokens, delta 3",),
         cases=(f"trl_delta_loss grad, {_DELTA}", "trl_delta_loss grad, delta 1.2, below 1 + eps_high = 1.28")),
    Gate(groups=("public",), needs="passed",
         only=("the open check: cispo_loss grad, the eight tokens, TRL's cap of 5",
               "the open check: cispo_loss clipped, the eight tokens, TRL's cap of 5"),
         cases=(f"cispo_loss grad, {_TRL}", f"cispo_loss clipped, {_TRL}", f"cispo_loss grad, {_VERL}")),
    Gate(groups=("public",), needs="passed", only=("the open check: stale_sequence_mask keep, the four responses",),
         cases=(f"stale_sequence_mask keep, {_BATCH}",
                "stale_sequence_mask keep, a drift exactly at the threshold, an empty response, an advantage of 0")),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + (CONSTANT_GATE,))
