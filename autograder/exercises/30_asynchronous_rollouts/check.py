"""Hidden checks for exercise 30: off-policy by design, asynchronous rollouts.

``staleness_kept(sample_versions, trainer_version, limit, rule)`` keeps the samples TRL's ``max_staleness``
or verl's ``max_off_policy_threshold`` keeps; ``decoupled_weights(logp_behaviour, logp_proximal,
logp_current, advantages, mask, eps_low, eps_high, cap)`` returns the per-token factors of the decoupled PPO
objective; ``surrogate_expectation(theta, proximal, behaviour, advantages, eps_low, eps_high, cap)`` its
exact expectation over the behaviour policy for one categorical step, and the gradient; ``routed_logprobs(
expert_logits, router_engine, router_trainer, tokens, top_k)`` a toy mixture-of-experts layer's log-probs
as the engine, the trainer and the trainer with the engine's routing replayed score them.

Expected values come from :mod:`autograder.reference.async_rollouts`, itself tested against mpmath values
and central differences (``tests/test_reference_async_rollouts.py``). Mistakes are recognised by their
outputs, computed here: a factor with the wrong policy in its denominator (the behaviour weight upside
down, the PPO ratio taken against the sampler or upside down: the central idea, which caps the notebook at
a third), the cap ignored, applied from both sides or as a mask, the clip's min replaced by a max, the
gradient through a clipped term or without the ratio, the softmax's centring term, verl's threshold read
as TRL's (and TRL's read as exclusive), the gates replayed with the experts or the routing replayed the
wrong way round. Random hidden inputs are drawn per student and keep every ratio at least 1e-6 away from
the clip bounds and every weight away from the cap, where the derivative changes. Bad-input points need
some ordinary hidden input answered right (the gate); a constant staleness answer, or factors of 1 where the
policies coincide, earn nothing on their own (the constant gates).
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, bool_array, close, coding_groups, error_case,
    exercise_stem, judge_key, log_softmax, mistakes_later, redraw, shared, value_of,
)
from autograder.reference import async_rollouts as ref

CLIP_BOUNDS_SWAPPED, CLIP_IGNORES_SIGN = shared.CLIP_BOUNDS_SWAPPED, shared.CLIP_IGNORES_SIGN

STEM = exercise_stem(__name__)

# One key, one sentence in every notebook: the mistakes 21 and 22 name come from their checks.
_21 = importlib.import_module("autograder.exercises.21_sampler_trainer_mismatch.check")
_22 = importlib.import_module("autograder.exercises.22_kl_reward_vs_loss.check")
NOT_TRUNCATED, TRUNCATED_BOTH_SIDES, NOT_CENTRED = _21.NOT_TRUNCATED, _21.TWO_SIDED, _22.NOT_CENTRED

GROUPS = coding_groups(
    1,
    Group("staleness", 1, "staleness_kept: TRL's max_staleness and verl's max_off_policy_threshold"),
    Group("weights", 2, "decoupled_weights: the behaviour weight, its truncation, the PPO ratio, the surrogate "
                        "and its derivative"),
    Group("expectation", 2, "surrogate_expectation: the exact expected surrogate and its gradient"),
    Group("routing", 1, "routed_logprobs: the engine's, the trainer's and the replayed routing"),
    validation=(1, "The functions reject bad shapes, log-probabilities above 0, unknown rules and bad limits, caps "
                   "and top-k"),
)

WEIGHT_KEYS = ("gradient", "ratio", "surrogate", "truncated", "weight")
EXPECTATION_KEYS = ("gradient", "value")
ROUTING_KEYS = ("engine", "replayed", "trainer")

# ----------------------------------------------------------------------------- misconceptions

WEIGHT_INVERTED = Misconception(
    "behaviour-weight-inverted",
    "The behaviour weight is upside down: it turns an average over the sampler's tokens into one over the "
    "proximal policy's, so it is pi_prox / pi_behav, the sampler (behaviour) policy in the denominator.")
RATIO_AGAINST_BEHAVIOUR = Misconception(
    "ratio-against-behaviour",
    "The PPO ratio was taken against the policy that sampled: in the decoupled objective the clip is anchored "
    "at the proximal policy, r = pi_theta / pi_prox; the behaviour policy appears only in the weight "
    "pi_prox / pi_behav.")
PPO_RATIO_INVERTED = Misconception(
    "ppo-ratio-inverted",
    "The PPO ratio is upside down: r = pi_theta / pi_prox, the policy being optimised over the proximal "
    "policy that anchors the clip.")
SIGN_FLIPPED = Misconception(
    "surrogate-gradient-sign",
    "The sign is flipped: this is the gradient of the loss -J, which an optimiser descends; the task asks for "
    "the gradient of the surrogate J itself.")
MASKED_NOT_TRUNCATED = Misconception(
    "weight-masked-not-truncated",
    "Weights above the cap were set to 0: truncation keeps such a token with weight c, min(w, c); zeroing it "
    "is masking (verl's IcePop, TRL's *_mask modes), another correction.")
SURROGATE_MAX = Misconception(
    "surrogate-max",
    "The surrogate takes the larger of r A and clip(r) A: PPO's objective (to maximise) takes the minimum, "
    "the pessimistic bound, which is the maximum of the two losses -r A and -clip(r) A.")
CLIP_IGNORED = Misconception(
    "clip-ignored",
    "The clip was left out: where r A > clip(r, 1 - eps_low, 1 + eps_high) A the surrogate is the clipped "
    "term, which stops the gradient.")
BOUNDS_SWAPPED = CLIP_BOUNDS_SWAPPED
GRADIENT_THROUGH_CLIP = Misconception(
    "gradient-through-clip",
    "A token whose clipped term is the minimum has no gradient: clip(r) A does not change with the current "
    "log-probability, so its derivative is 0 there, not w-bar r A.")
GRADIENT_WITHOUT_RATIO = Misconception(
    "gradient-without-ratio",
    "The ratio's own derivative is missing: d r / d log pi_theta = r, so the derivative of w-bar r A is "
    "w-bar r A, not w-bar A.")
GRADIENT_WITHOUT_WEIGHT = Misconception(
    "gradient-without-weight",
    "The behaviour weight is missing from the derivative: it is a constant factor of the surrogate, so it "
    "multiplies the derivative too.")
WEIGHT_PER_SEQUENCE = Misconception(
    "weight-per-sequence",
    "The behaviour weight here is each token's own, pi_prox / pi_behav at that token: the product over the "
    "response (verl's default rollout_is=\"sequence\") is another correction, one weight for all its tokens.")
DUAL_CLIP_KEPT = Misconception(
    "dual-clip-kept",
    "A negative-advantage token's surrogate was held at c A beyond a ratio of c (verl's dual clip, clip_ratio_c "
    "= 3, in compute_policy_loss_vanilla): the decoupled surrogate here has no dual clip, min(r A, clip(r) A) "
    "keeps following r A there, and so does its gradient.")
PADDING_NOT_ZERO = Misconception(
    "padding-not-zero",
    "Padding positions must hold 0.0 in every result: exp(0) = 1 is what padding gives when only the log-ratio "
    "is masked.")
WEIGHT_MISSING = Misconception(
    "behaviour-weight-missing",
    "The behaviour weight is missing: the tokens come from the behaviour policy, so without pi_prox / "
    "pi_behav each term is averaged under the sampler instead of the proximal policy.")
VERL_AS_TRL = Misconception(
    "verl-threshold-as-lag",
    "verl's max_off_policy_threshold counts the versions a sample spans, its own included: a sample of lag k "
    "spans k + 1 versions, and is kept when k + 1 <= threshold (one version fewer than TRL's max_staleness of "
    "the same number keeps).")
TRL_AS_VERL = Misconception(
    "trl-limit-exclusive",
    "TRL drops a sample only when its staleness exceeds max_staleness (staleness > max_staleness): a lag "
    "equal to the limit is kept.")
VERL_NONE = Misconception(
    "verl-none-drops",
    "verl's max_off_policy_threshold = None disables the control: every sample is kept.")
REPLAY_COPIES_GATES = Misconception(
    "replay-copies-gates",
    "Only the choice of experts is replayed: the gate weights come from the trainer's own router logits over "
    "the replayed experts (verl's get_replay_topk gathers the current scores), so they still carry the "
    "trainer's gradient; these are the engine's log-probs.")
REPLAY_REVERSED = Misconception(
    "replay-reversed",
    "The routing was replayed the wrong way round: the engine's recorded choice of experts is used by the "
    "trainer, gated by the trainer's router logits.")
GATES_NOT_RENORMALISED = Misconception(
    "gates-not-renormalised",
    "The gates are a softmax over the chosen experts' router logits (they sum to 1), not the full softmax's "
    "probabilities of those experts.")
GATES_UNIFORM = Misconception(
    "gates-uniform",
    "The chosen experts are not weighted equally: their gates are the softmax of their router logits.")
SMALLEST_EXPERTS = Misconception(
    "smallest-experts",
    "The router chooses the top_k experts with the largest router logits, not the smallest.")
MIXED_PROBABILITIES = Misconception(
    "mixed-probabilities",
    "The experts' logits are mixed, z = sum of g_e * expert_logits[e], and then normalised: mixing the experts' "
    "probabilities is another model.")


# ----------------------------------------------------------------------------- decoupled weights

def _weights_variant(behav, prox, cur, adv, mask, eps_low, eps_high, cap, *, log_w_sign=1.0, base="prox",
                     ratio_sign=1.0, truncate="min", reduce="min", gradient="active", padding=False,
                     weighted=True, eps_swap=False, inside_only=False, per_sequence=False, dual_clip=None):
    """Every key of decoupled_weights as one mistaken (or right) reading computes it."""
    m = np.asarray(mask, dtype=bool)
    lb, lp, lc = (np.where(m, np.asarray(x, dtype=float), 0.0) for x in (behav, prox, cur))
    a = np.broadcast_to(np.asarray(adv, dtype=float)[:, None], m.shape)
    if eps_swap:
        eps_low, eps_high = eps_high, eps_low
    log_w = log_w_sign * (lp - lb)
    if per_sequence:  # one weight per response: the product of its tokens' weights
        log_w = np.broadcast_to(np.sum(np.where(m, log_w, 0.0), axis=1, keepdims=True), m.shape)
    log_r = ratio_sign * (lc - (lb if base == "behav" else lp))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        w, r = np.exp(log_w), np.exp(log_r)
        if cap is None or truncate == "none":
            wbar = w
        elif truncate == "min":
            wbar = np.minimum(w, cap)
        elif truncate == "both":
            wbar = np.clip(w, 1.0 / cap, cap)
        else:  # "mask"
            wbar = np.where(w > cap, 0.0, w)
        if not weighted:
            wbar = np.ones_like(w)
        clipped = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
        if reduce == "min":
            surrogate = wbar * np.minimum(r * a, clipped * a)
            active = r * a <= clipped * a
        elif reduce == "max":
            surrogate = wbar * np.maximum(r * a, clipped * a)
            active = r * a >= clipped * a
        else:  # "none": no clip
            surrogate = wbar * r * a
            active = np.ones(m.shape, dtype=bool)
        if inside_only:  # the gradient kept only inside the clip range, whatever A's sign
            active = (r >= 1.0 - eps_low) & (r <= 1.0 + eps_high)
        if dual_clip is not None:  # verl's dual clip: for A < 0 the surrogate is at least c A, a constant
            held = (a < 0) & (surrogate < wbar * dual_clip * a)
            surrogate = np.where(held, wbar * dual_clip * a, surrogate)
            active = active & ~held
        slope = {"active": wbar * r * a * ratio_sign, "always": wbar * r * a, "no_ratio": wbar * a,
                 "no_weight": r * a}[gradient]
        grad = np.where(active | (gradient == "always"), slope, 0.0)
    out = {"weight": w, "truncated": wbar, "ratio": r, "surrogate": surrogate, "gradient": grad}
    if padding:
        return {key: np.where(m, value, np.exp(0.0) if key in ("weight", "truncated", "ratio") else value)
                for key, value in out.items()}
    return {key: np.where(m, value, 0.0) for key, value in out.items()}


_WEIGHT_MISTAKES = (
    (WEIGHT_INVERTED, {"log_w_sign": -1.0}),
    (RATIO_AGAINST_BEHAVIOUR, {"base": "behav"}),
    (RATIO_AGAINST_BEHAVIOUR, {"base": "behav", "weighted": False}, ("ratio", "surrogate", "gradient")),
    (PPO_RATIO_INVERTED, {"ratio_sign": -1.0}),
    (NOT_TRUNCATED, {"truncate": "none"}),
    (TRUNCATED_BOTH_SIDES, {"truncate": "both"}),
    (MASKED_NOT_TRUNCATED, {"truncate": "mask"}),
    (SURROGATE_MAX, {"reduce": "max"}),
    (CLIP_IGNORED, {"reduce": "none"}, ("surrogate",)),  # its gradient is GRADIENT_THROUGH_CLIP's
    (BOUNDS_SWAPPED, {"eps_swap": True}),
    (GRADIENT_THROUGH_CLIP, {"gradient": "always"}),
    (CLIP_IGNORES_SIGN, {"inside_only": True}, ("gradient",)),
    (WEIGHT_PER_SEQUENCE, {"per_sequence": True}),
    (DUAL_CLIP_KEPT, {"dual_clip": 3.0}, ("surrogate", "gradient")),
    (GRADIENT_WITHOUT_RATIO, {"gradient": "no_ratio"}),
    (GRADIENT_WITHOUT_WEIGHT, {"gradient": "no_weight"}),
    (PADDING_NOT_ZERO, {"padding": True}),
)


def _distinct(pairs: list, expected: np.ndarray) -> list:
    """The ``(output, Misconception)`` pairs that differ from the right answer and from every other
    misconception's output on this input (where two mistakes agree, naming one could blame the wrong one)."""
    def same(x, y):
        try:
            return close(np.asarray(x, dtype=float), np.asarray(y, dtype=float), rtol=1e-8, atol=1e-10)
        except (TypeError, ValueError):
            return False
    kept = [(w, m) for w, m in pairs if np.all(np.isfinite(w)) and not same(w, expected)]
    return [(w, m) for w, m in kept if not any(o.key != m.key and same(w, x) for x, o in kept)]


def _weights_wrong(args, expected) -> dict:
    behav, prox, cur, adv, mask, eps_low, eps_high, cap = args
    outputs = [(entry[0], _weights_variant(behav, prox, cur, adv, mask, eps_low, eps_high, cap, **entry[1]),
                entry[2] if len(entry) > 2 else WEIGHT_KEYS) for entry in _WEIGHT_MISTAKES]
    return {key: _distinct([(out[key], m) for m, out, keys in outputs if key in keys], expected[key])
            for key in WEIGHT_KEYS}


def _weights_cases(name, behav, prox, cur, adv, mask, *, eps=None, cap=None, keys=WEIGHT_KEYS, as_lists=False,
                   group="weights", exact=False):
    eps_low, eps_high = eps if eps is not None else (ref.DEFAULT_EPS, ref.DEFAULT_EPS)
    expected = ref.decoupled_weights(behav, prox, cur, adv, mask, eps_low, eps_high, cap)
    wrong = mistakes_later(_weights_wrong, (behav, prox, cur, adv, mask, eps_low, eps_high, cap), expected)
    kwargs = {} if eps is None else {"eps_low": eps_low, "eps_high": eps_high}
    if cap is not None:
        kwargs["cap"] = cap
    args = tuple(np.asarray(x).tolist() for x in (behav, prox, cur, adv, mask)) if as_lists else (
        behav, prox, cur, adv, mask)
    return [Case(f"{key}, {name}", group, (Call("decoupled_weights", args, kwargs),),
                 judge_key("decoupled_weights", key, expected, WEIGHT_KEYS, exact=exact,
                           wrong=(lambda key=key: wrong()[key])))
            for key in keys]


# ----------------------------------------------------------------------------- the exact expectation

def _expectation_variant(theta, prox, behav, adv, eps_low, eps_high, cap, *, log_w_sign=1.0, base="prox",
                         ratio_sign=1.0, truncate="min", reduce="min", gradient="active", weighted=True,
                         centred=True, sign=1.0, inside_only=False):
    lq, lp, lb = (log_softmax(np.asarray(x, dtype=float)) for x in (theta, prox, behav))
    a = np.asarray(adv, dtype=float)
    log_w = log_w_sign * (lp - lb)
    if not weighted:
        log_w = np.zeros_like(lp)
    if cap is not None and weighted:
        if truncate == "min":
            log_w = np.minimum(log_w, math.log(cap))
        elif truncate == "both":
            log_w = np.clip(log_w, -math.log(cap), math.log(cap))
        elif truncate == "mask":
            log_w = np.where(log_w > math.log(cap), -np.inf, log_w)
    log_r = ratio_sign * (lq - (lb if base == "behav" else lp))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mass = np.exp(lb + log_w)
        r = np.exp(log_r)
        clipped = np.clip(r, 1.0 - eps_low, 1.0 + eps_high)
        unclipped = np.exp(lb + log_w + log_r) * a
        if reduce == "min":
            value = np.minimum(unclipped, mass * clipped * a)
            active = r * a <= clipped * a
        else:  # "none"
            value = unclipped
            active = np.ones(a.shape, dtype=bool)
        if inside_only:  # the gradient kept only inside the clip range, whatever A's sign
            active = (r >= 1.0 - eps_low) & (r <= 1.0 + eps_high)
        coefficient = np.where(active | (gradient == "always"), unclipped * ratio_sign, 0.0)
        q = np.exp(lq)
        grad = coefficient - q * np.sum(coefficient) if centred else coefficient
    return {"value": float(np.sum(value)), "gradient": sign * grad}


_EXPECTATION_MISTAKES = (
    (WEIGHT_INVERTED, {"log_w_sign": -1.0}),
    (RATIO_AGAINST_BEHAVIOUR, {"base": "behav"}),
    (RATIO_AGAINST_BEHAVIOUR, {"base": "behav", "weighted": False}),
    (PPO_RATIO_INVERTED, {"ratio_sign": -1.0}),
    (WEIGHT_MISSING, {"weighted": False}),
    (NOT_TRUNCATED, {"truncate": "none"}),
    (TRUNCATED_BOTH_SIDES, {"truncate": "both"}),
    (MASKED_NOT_TRUNCATED, {"truncate": "mask"}),
    (CLIP_IGNORED, {"reduce": "none"}, ("value",)),
    (GRADIENT_THROUGH_CLIP, {"gradient": "always"}),
    (CLIP_IGNORES_SIGN, {"inside_only": True}, ("gradient",)),
    (NOT_CENTRED, {"centred": False}),
    (SIGN_FLIPPED, {"sign": -1.0}),
)


def _expectation_wrong(args, expected) -> dict:
    theta, prox, behav, adv, eps_low, eps_high, cap = args
    outputs = [(entry[0], _expectation_variant(theta, prox, behav, adv, eps_low, eps_high, cap, **entry[1]),
                entry[2] if len(entry) > 2 else EXPECTATION_KEYS) for entry in _EXPECTATION_MISTAKES]
    return {key: _distinct([(out[key], m) for m, out, keys in outputs if key in keys], expected[key])
            for key in EXPECTATION_KEYS}


def _expectation_cases(name, theta, prox, behav, adv, *, eps=None, cap=None, keys=EXPECTATION_KEYS,
                       as_lists=False, group="expectation", exact=False):
    eps_low, eps_high = eps if eps is not None else (ref.DEFAULT_EPS, ref.DEFAULT_EPS)
    expected = ref.surrogate_expectation(theta, prox, behav, adv, eps_low, eps_high, cap)
    wrong = mistakes_later(_expectation_wrong, (theta, prox, behav, adv, eps_low, eps_high, cap), expected)
    kwargs = {} if eps is None else {"eps_low": eps_low, "eps_high": eps_high}
    if cap is not None:
        kwargs["cap"] = cap
    args = tuple(np.asarray(x).tolist() for x in (theta, prox, behav, adv)) if as_lists else (theta, prox, behav, adv)
    return [Case(f"expected {key}, {name}", group, (Call("surrogate_expectation", args, kwargs),),
                 judge_key("surrogate_expectation", key, expected, EXPECTATION_KEYS, exact=exact,
                           wrong=(lambda key=key: wrong()[key])))
            for key in keys]


# ----------------------------------------------------------------------------- staleness

def _staleness_wrong(versions, trainer_version, limit, rule, expected) -> list:
    lag = trainer_version - np.asarray(versions)
    wrong = []
    if rule == "verl" and limit is not None:
        wrong.append((lag <= limit, VERL_AS_TRL))
    if rule == "trl":
        wrong.append((lag < limit, TRL_AS_VERL))
    if rule == "verl" and limit is None:
        wrong.append((np.zeros(lag.shape, dtype=bool), VERL_NONE))
    return [(w, m) for w, m in wrong if not np.array_equal(w, expected)]


def _staleness_case(name, versions, trainer_version, limit, rule, *, group="staleness", as_list=False):
    expected = ref.staleness_kept(versions, trainer_version, limit, rule)
    wrong = _staleness_wrong(versions, trainer_version, limit, rule, expected)

    def judge(outcomes):
        value = value_of(outcomes[0], "staleness_kept")
        actual = bool_array(value, "the kept samples", shape=expected.shape)
        if np.array_equal(actual, expected):
            return PASS
        for output, misconception in wrong:
            if np.array_equal(actual, output):
                return Verdict(False, misconception.sentence, misconception.key)
        return Verdict(False, "the kept samples are not correct for this rule and limit")

    args = (np.asarray(versions).tolist() if as_list else np.asarray(versions), trainer_version, limit, rule)
    return Case(f"{rule} staleness, {name}", group, (Call("staleness_kept", args),), judge)


# ----------------------------------------------------------------------------- routing

def _routing_variant(experts, choose, gate, tokens, top_k, *, gates="softmax", pick="top", mix="logits"):
    experts, choose, gate = (np.asarray(x, dtype=float) for x in (experts, choose, gate))
    tokens = np.asarray(tokens)
    order = np.argsort(-choose if pick == "top" else choose, axis=1, kind="stable")[:, :top_k]
    rows = np.arange(experts.shape[0])[:, None]
    if gates == "softmax":
        g = np.exp(log_softmax(gate[rows, order]))
    elif gates == "full":
        g = np.exp(log_softmax(gate))[rows, order]
    else:
        g = np.full(order.shape, 1.0 / top_k)
    chosen = experts[rows, order]
    if mix == "logits":
        z = np.einsum("tk,tkv->tv", g, chosen)
        logp = log_softmax(z)
    else:
        with np.errstate(divide="ignore"):
            logp = np.log(np.einsum("tk,tkv->tv", g, np.exp(log_softmax(chosen))))
    return logp[np.arange(tokens.size), tokens]


def _routing_wrong(experts, engine, trainer, tokens, top_k, expected) -> dict:
    both = {"engine": (engine, engine), "trainer": (trainer, trainer), "replayed": (engine, trainer)}
    wrong = {key: [] for key in ROUTING_KEYS}
    for key, (choose, gate) in both.items():
        for mistake, kw in ((GATES_NOT_RENORMALISED, {"gates": "full"}), (GATES_UNIFORM, {"gates": "uniform"}),
                            (SMALLEST_EXPERTS, {"pick": "bottom"}), (MIXED_PROBABILITIES, {"mix": "probs"})):
            wrong[key].append((_routing_variant(experts, choose, gate, tokens, top_k, **kw), mistake))
    wrong["replayed"].append((expected["engine"], REPLAY_COPIES_GATES))
    wrong["replayed"].append((_routing_variant(experts, trainer, engine, tokens, top_k), REPLAY_REVERSED))
    return {key: _distinct(pairs, expected[key]) for key, pairs in wrong.items()}


def _routing_cases(name, experts, engine, trainer, tokens, top_k, *, keys=ROUTING_KEYS, as_lists=False,
                   group="routing", exact=False):
    expected = ref.routed_logprobs(experts, engine, trainer, tokens, top_k)
    wrong = mistakes_later(_routing_wrong, experts, engine, trainer, tokens, top_k, expected)
    args = tuple(np.asarray(x).tolist() for x in (experts, engine, trainer, tokens)) if as_lists else (
        experts, engine, trainer, tokens)
    return [Case(f"{key} log-probs, {name}", group, (Call("routed_logprobs", (*args, top_k)),),
                 judge_key("routed_logprobs", key, expected, ROUTING_KEYS, exact=exact,
                           wrong=(lambda key=key: wrong()[key])))
            for key in keys]


# ----------------------------------------------------------------------------- inputs

CLEARANCE = 1e-6


def _clear_of_bounds(log_r, log_w, adv, eps_low, eps_high, cap) -> bool:
    """No ratio within CLEARANCE (relative) of a clip bound, no weight within it of the cap: there the
    surrogate's derivative jumps, and which side a float lands on is the machine's, not the student's."""
    r, w = np.exp(log_r), np.exp(log_w)
    near = lambda x, b: np.abs(x - b) <= CLEARANCE * b  # noqa: E731
    if np.any(near(r, 1.0 - eps_low)) or np.any(near(r, 1.0 + eps_high)):
        return False
    return cap is None or not np.any(near(w, cap))


def _batch(rng, lengths, width, *, spread_prox, spread_cur, eps=(0.2, 0.2), cap=None):
    """A right-padded batch (NaN padding): behaviour log-probs, the proximal ones ``spread_prox`` away, the
    current ones ``spread_cur`` further, one advantage per response; drawn again until clear of the bounds."""
    lengths = np.asarray(lengths)
    mask = np.arange(width)[None, :] < lengths[:, None]

    def draw():
        behav = -rng.exponential(1.2, size=mask.shape) - 0.05
        prox = np.minimum(behav + spread_prox * rng.normal(size=mask.shape), 0.0)
        cur = np.minimum(prox + spread_cur * rng.normal(size=mask.shape), 0.0)
        adv = np.round(rng.normal(size=lengths.size), 3)
        return behav, prox, cur, adv

    def holds(drawn):
        behav, prox, cur, adv = drawn
        return _clear_of_bounds((cur - prox)[mask], (prox - behav)[mask], 1.0, *eps, cap)

    behav, prox, cur, adv = redraw(draw, holds, "ratios and weights clear of the clip bounds and the cap")
    return (np.where(mask, behav, np.nan), np.where(mask, prox, np.nan), np.where(mask, cur, np.nan), adv, mask)


def _step(rng, size, *, spread_prox, spread_cur, eps=(0.2, 0.2), cap=None):
    """Behaviour, proximal and current logits of one categorical step, clear of the bounds."""
    def draw():
        behav = rng.normal(size=size)
        prox = behav + spread_prox * rng.normal(size=size)
        theta = prox + spread_cur * rng.normal(size=size)
        adv = np.round(rng.normal(size=size), 3)
        return theta, prox, behav, adv

    def holds(drawn):
        theta, prox, behav, adv = drawn
        lq, lp, lb = (log_softmax(x) for x in (theta, prox, behav))
        return _clear_of_bounds(lq - lp, lp - lb, adv, *eps, cap) and np.all(adv != 0)

    return redraw(draw, holds, "ratios and weights clear of the clip bounds and the cap")


def _routers(rng, positions, experts, top_k, *, noise):
    """Engine and trainer router logits that choose other experts at two positions at least and the same
    experts, with other gates, at two at least (no ties)."""
    def draw():
        engine = rng.normal(size=(positions, experts))
        return engine, engine + noise * rng.normal(size=(positions, experts))

    def holds(drawn):
        engine, trainer = drawn
        top = lambda r: np.sort(np.argsort(-r, axis=1)[:, :top_k], axis=1)  # noqa: E731
        differ = np.any(top(engine) != top(trainer), axis=1)
        gaps = np.diff(np.sort(np.concatenate([engine, trainer]), axis=1), axis=1)
        return differ.sum() >= 2 and (~differ).sum() >= 2 and gaps.min() > 1e-6

    return redraw(draw, holds, "routing that differs at two positions and agrees at two")


#: The notebook's open-check inputs (the check cells print them).
OPEN_VERSIONS, OPEN_TRAINER_VERSION = np.array([12, 11, 9, 8, 7, 5]), 12
OPEN_WEIGHTS = (np.array([[-1.5, -1.0, 0.0], [-1.0, -1.0, -1.0]]),   # behaviour
                np.array([[-1.0, -1.0, 0.0], [-1.0, -1.0, -1.0]]),   # proximal
                np.array([[-0.5, -1.2, 0.0], [-1.5, -0.9, -1.0]]),   # current
                np.array([2.0, -1.0]),
                np.array([[True, True, False], [True, True, True]]))
OPEN_CAP = 1.5
OPEN_STEP = (np.array([0.6, -0.4, 0.1, 0.0]), np.array([0.2, -0.1, 0.0, 0.1]), np.array([0.1, -0.9, 0.3, 0.2]),
             np.array([1.0, -0.5, 0.8, -1.2]))
OPEN_STEP_CAP = 1.2
OPEN_EXPERTS = np.log(np.array([[[0.5, 0.5], [0.75, 0.25], [0.5, 0.5]],
                                [[0.2, 0.8], [0.6, 0.4], [0.9, 0.1]]]))
OPEN_ROUTER_ENGINE = np.array([[0.0, 1.0, 0.0], [0.0, 0.5, 2.0]])
OPEN_ROUTER_TRAINER = np.array([[1.1, 1.0, 0.0], [0.0, 0.4, 2.1]])
OPEN_TOKENS = np.array([0, 1])


def _cases_public():
    """The notebook's open checks: its queue, its two responses, its step and its two positions."""
    cases = []
    cases.append(_staleness_case("the open check's queue, max_staleness 4", OPEN_VERSIONS, OPEN_TRAINER_VERSION, 4,
                                 "trl", group="public"))
    cases.append(_staleness_case("the open check's queue, max_off_policy_threshold 4", OPEN_VERSIONS,
                                 OPEN_TRAINER_VERSION, 4, "verl", group="public"))
    cases += [Case(f"the open check: {c.name}", "public", c.calls, c.judge)
              for c in _weights_cases("two responses, cap 1.5", *OPEN_WEIGHTS, cap=OPEN_CAP, group="public",
                                      exact=True)]
    cases += [Case(f"the open check: {c.name}", "public", c.calls, c.judge)
              for c in _expectation_cases("four tokens, cap 1.2", *OPEN_STEP, cap=OPEN_STEP_CAP, group="public",
                                          exact=True)]
    cases += [Case(f"the open check: {c.name}", "public", c.calls, c.judge)
              for c in _routing_cases("two positions, top 1", OPEN_EXPERTS, OPEN_ROUTER_ENGINE, OPEN_ROUTER_TRAINER,
                                      OPEN_TOKENS, 1, group="public", exact=True)]
    return cases


def _cases_staleness(rng):
    """staleness_kept: TRL's and verl's limits on a queue of lags 0 to 9, lists, lag 0."""
    cases = []
    trainer_version = int(rng.integers(20, 40))
    queue = trainer_version - rng.permutation(np.arange(0, 10))
    for limit in (4, 0, 2):
        cases.append(_staleness_case(f"a queue of lags 0 to 9, limit {limit}", queue, trainer_version, limit, "trl"))
    for limit in (4, 1, 3):
        cases.append(_staleness_case(f"a queue of lags 0 to 9, limit {limit}", queue, trainer_version, limit, "verl"))
    cases.append(_staleness_case("no limit (None)", queue, trainer_version, None, "verl"))
    cases.append(_staleness_case("a list of versions, limit 2", list(map(int, queue[:6])), trainer_version, 2, "trl",
                                 as_list=True))
    cases.append(_staleness_case("every sample of the current version, limit 0", np.full(3, trainer_version),
                                 trainer_version, 0, "trl"))
    return cases


def _cases_weights(rng):
    """decoupled_weights on padded GRPO groups; also the group the validation cases break."""
    cases = []
    group = _batch(rng, [5, 9, 3, 7], 9, spread_prox=0.3, spread_cur=0.15)
    cases += _weights_cases("a GRPO group of four responses (NaN padding)", *group)
    capped = _batch(rng, [6, 4, 8], 8, spread_prox=0.8, spread_cur=0.3, eps=(0.2, 0.28), cap=2.0)
    behav, prox, cur, adv, mask = capped
    cases += _weights_cases("cap 2, eps 0.2 / 0.28, left padding, lists", behav[:, ::-1], prox[:, ::-1],
                            cur[:, ::-1], adv, mask[:, ::-1].astype(int), eps=(0.2, 0.28), cap=2.0, as_lists=True)
    behav, prox, cur, adv, mask = _batch(rng, [4, 6], 6, spread_prox=0.0, spread_cur=0.4)
    cases += _weights_cases("proximal equal to behaviour (standard PPO)", behav, behav, cur, adv, mask,
                            keys=("weight", "surrogate", "gradient"))
    cases += _weights_cases("all three policies equal (k = 0)", behav, behav, behav, adv, mask,
                            keys=("ratio", "surrogate", "gradient"), cap=2.0)
    stale = _batch(rng, [7, 7, 5, 6], 7, spread_prox=1.0, spread_cur=0.6, eps=(0.1, 0.3), cap=3.0)
    cases += _weights_cases("a stale sampler: ratios beyond both clip bounds, cap 3, eps 0.1 / 0.3", *stale,
                            eps=(0.1, 0.3), cap=3.0, keys=("truncated", "surrogate", "gradient"))
    return cases, group


def _cases_expectation(rng):
    """surrogate_expectation over a whole vocabulary, a sampler that underflows."""
    cases = []
    cases += _expectation_cases("a step of 6 tokens", *_step(rng, 6, spread_prox=0.5, spread_cur=0.4))
    cases += _expectation_cases("a step of 8 tokens, cap 2, eps 0.2 / 0.28",
                                *_step(rng, 8, spread_prox=1.0, spread_cur=0.5, eps=(0.2, 0.28), cap=2.0),
                                eps=(0.2, 0.28), cap=2.0)
    theta, prox, behav, adv = _step(rng, 6, spread_prox=1.5, spread_cur=0.0)
    cases += _expectation_cases("theta at the proximal policy, a stale sampler", prox, prox, behav, adv,
                                keys=("gradient",))
    theta, prox, behav, adv = _step(rng, 6, spread_prox=0.0, spread_cur=0.6)
    cases += _expectation_cases("proximal equal to behaviour (standard PPO), lists", theta, behav, behav, adv,
                                as_lists=True)
    rare = (np.array([0.2, 1.0, -0.5, 0.4]), np.array([0.0, 1.2, -0.4, 0.3]), np.array([0.0, -900.0, 2.0, 0.5]),
            np.round(rng.normal(size=4), 3) + np.array([0.0, 2.0, 0.0, 0.0]))
    cases += _expectation_cases("a token the sampler almost never draws (its probability underflows)", *rare)
    return cases


def _cases_routing(rng):
    """routed_logprobs: top-k routing replayed; also the inputs the validation cases break."""
    cases = []
    experts = rng.normal(scale=2.0, size=(8, 6, 5))
    tokens = rng.integers(0, 5, size=8)
    engine, trainer = _routers(rng, 8, 6, 2, noise=0.5)
    cases += _routing_cases("8 positions, 6 experts, top 2", experts, engine, trainer, tokens, 2)
    engine1, trainer1 = _routers(rng, 8, 6, 1, noise=0.5)
    cases += _routing_cases("top 1, lists", experts, engine1, trainer1, tokens, 1, as_lists=True,
                            keys=("trainer", "replayed"))
    shift = engine + rng.normal(scale=3.0, size=(8, 1))
    cases += _routing_cases("routers equal up to a constant per position", experts, engine, shift, tokens, 3,
                            keys=("trainer", "replayed"))
    big = _routers(rng, 4, 5, 2, noise=0.5)
    cases += _routing_cases("logits of order 1e3", 1000.0 + rng.normal(scale=50.0, size=(4, 5, 6)), big[0] * 1000.0,
                            big[1] * 1000.0, rng.integers(0, 6, size=4), 2, keys=("engine", "replayed"))
    return cases, (experts, engine, trainer, tokens)


def _cases_validation(group, experts, engine, trainer, tokens):
    """Bad input to each of the four functions (the group and routing inputs above, broken one way each)."""
    cases = []
    lb, lp, lc, a, m = group
    cases += [
        error_case("staleness: a sample from a later version", "staleness_kept", ([5, 9], 8, 2, "trl"),
                   "a sample version above the trainer's", "sample_versions"),
        error_case("staleness: verl threshold 0", "staleness_kept", ([5, 8], 8, 0, "verl"),
                   "max_off_policy_threshold = 0 (verl asserts an int > 0)", "limit"),
        error_case("staleness: TRL limit None", "staleness_kept", ([5, 8], 8, None, "trl"),
                   "max_staleness = None", "limit"),
        error_case("staleness: an unknown rule", "staleness_kept", ([5, 8], 8, 2, "areal"), "rule 'areal'", "rule"),
        error_case("staleness: a negative limit", "staleness_kept", ([5, 8], 8, -1, "trl"), "a negative limit",
                   "limit"),
        error_case("weights: advantages per token", "decoupled_weights", (lb, lp, lc, np.zeros(m.shape), m),
                   "advantages of shape [B, L] (one per response expected)", "advantages"),
        error_case("weights: logp_current of another shape", "decoupled_weights", (lb, lp, lc[:, :4], a, m),
                   "a logp_current whose shape differs from the mask's", "logp_current"),
        error_case("weights: one row of logp_proximal for four", "decoupled_weights",
                   (lb, np.where(m, lp, -1.0)[:1], lc, a, m),
                   "a logp_proximal of shape [1, L] (NumPy would broadcast it)", "logp_proximal"),
        error_case("weights: a positive log-probability", "decoupled_weights",
                   (lb, np.where(m, 0.5, np.nan), lc, a, m), "a positive log-probability on a response token",
                   "logp_proximal"),
        error_case("weights: NaN on a response token", "decoupled_weights", (np.where(m, np.nan, 0.0), lp, lc, a, m),
                   "NaN on a response token", "logp_behaviour"),
        error_case("weights: cap 0", "decoupled_weights", (lb, lp, lc, a, m), "cap = 0", "cap", kwargs={"cap": 0.0}),
        error_case("weights: eps_high = 1", "decoupled_weights", (lb, lp, lc, a, m), "eps_high = 1", "eps_high",
                   kwargs={"eps_high": 1.0}),
        error_case("expectation: proximal over another vocabulary", "surrogate_expectation",
                   (np.zeros(4), np.zeros(5), np.zeros(4), np.ones(4)), "proximal of another size", "proximal"),
        error_case("expectation: advantages of another size", "surrogate_expectation",
                   (np.zeros(4), np.zeros(4), np.zeros(4), np.ones(3)), "advantages of another size", "advantages"),
        error_case("expectation: a NaN logit", "surrogate_expectation",
                   (np.array([0.0, np.nan]), np.zeros(2), np.zeros(2), np.ones(2)), "a NaN logit", "theta"),
        error_case("expectation: a negative cap", "surrogate_expectation",
                   (np.zeros(3), np.zeros(3), np.zeros(3), np.ones(3)), "cap = -1", "cap", kwargs={"cap": -1.0}),
        error_case("routing: top_k above the number of experts", "routed_logprobs",
                   (experts, engine, trainer, tokens, 7), "top_k = 7 with 6 experts", "top_k"),
        error_case("routing: top_k 0", "routed_logprobs", (experts, engine, trainer, tokens, 0), "top_k = 0",
                   "top_k"),
        error_case("routing: a token outside the vocabulary", "routed_logprobs",
                   (experts, engine, trainer, np.full(8, 5), 2), "a token id equal to V", "tokens"),
        error_case("routing: a trainer router of another shape", "routed_logprobs",
                   (experts, engine, trainer[:, :5], tokens, 2), "router_trainer of shape [T, E - 1]",
                   "router_trainer"),
        error_case("routing: an infinite expert logit", "routed_logprobs",
                   (np.where(experts > 3.0, np.inf, experts), engine, trainer, tokens, 2), "an infinite expert logit",
                   "expert_logits"),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(30)`` (30 is
    variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(30))
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    public, staleness = _cases_public(), _cases_staleness(rng)
    weights, group = _cases_weights(rng)
    expectation = _cases_expectation(rng)
    routing, routed = _cases_routing(rng)
    return [*public, *staleness, *weights, *expectation, *routing, *_cases_validation(group, *routed)]


_GROUP = "a GRPO group of four responses (NaN padding)"
_STEP = "a step of 6 tokens"

#: Which policy's probability goes in the denominator of each factor is the exercise: the behaviour weight
#: upside down, or the PPO ratio taken against the sampler or upside down, caps the notebook at a third.
CENTRAL = Central(
    "each factor's denominator: the behaviour weight pi_prox / pi_behav, the PPO ratio pi_theta / pi_prox",
    {"behaviour-weight-inverted", "ratio-against-behaviour", "ppo-ratio-inverted"},
    (f"weight, {_GROUP}", f"ratio, {_GROUP}", f"surrogate, {_GROUP}", f"gradient, {_GROUP}",
     f"expected value, {_STEP}", f"expected gradient, {_STEP}",
     "expected gradient, a step of 8 tokens, cap 2, eps 0.2 / 0.28"))

#: Bad-input points count only for a function that answers at least one of its ordinary hidden inputs right: a
#: function that raises on everything, or returns constants (every sample kept, weights and ratios 1) whose
#: arithmetic happens to raise on a bad shape, earns nothing for rejecting bad input, while one mistake in a
#: working function keeps them. The task says so.
GATE = Gate(
    cases=tuple(f"{rule} staleness, a queue of lags 0 to 9, limit {limit}"
                for rule, limits in (("trl", (4, 0, 2)), ("verl", (4, 1, 3))) for limit in limits)
    + tuple(f"{key}, {name}" for name in (_GROUP, "cap 2, eps 0.2 / 0.28, left padding, lists") for key in WEIGHT_KEYS)
    + tuple(f"expected {key}, {name}" for name in (_STEP, "a step of 8 tokens, cap 2, eps 0.2 / 0.28")
            for key in EXPECTATION_KEYS)
    + tuple(f"{key} log-probs, 8 positions, 6 experts, top 2" for key in ROUTING_KEYS)
    + ("trainer log-probs, top 1, lists", "replayed log-probs, top 1, lists"),
    needs="one-passed",
    why="rejecting bad input counts only when valid input is accepted and some ordinary hidden input is answered "
        "right")

#: The open checks are hints; hidden cases of the same kind are the evidence.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("trl staleness, the open check's queue, max_staleness 4",
               "verl staleness, the open check's queue, max_off_policy_threshold 4"),
         cases=("trl staleness, a queue of lags 0 to 9, limit 4", "verl staleness, a queue of lags 0 to 9, limit 4")),
    *(Gate(groups=("public",), needs="passed", only=(f"the open check: {key}, two responses, cap 1.5",),
           cases=(f"{key}, {_GROUP}", f"{key}, cap 2, eps 0.2 / 0.28, left padding, lists"))
      for key in WEIGHT_KEYS),
    *(Gate(groups=("public",), needs="passed", only=(f"the open check: expected {key}, four tokens, cap 1.2",),
           cases=(f"expected {key}, {_STEP}", f"expected {key}, a step of 8 tokens, cap 2, eps 0.2 / 0.28"))
      for key in EXPECTATION_KEYS),
    *(Gate(groups=("public",), needs="passed", only=(f"the open check: {key} log-probs, two positions, top 1",),
           cases=(f"{key} log-probs, 8 positions, 6 experts, top 2",)) for key in ROUTING_KEYS),
)

#: Keeping every sample (or none) is right where the limit keeps all: such cases count only when the same
#: function also drops the samples a limit drops.
CONSTANT_GATE = Gate(
    groups=("staleness",), needs="passed",
    only=("verl staleness, no limit (None)", "trl staleness, every sample of the current version, limit 0"),
    cases=("trl staleness, a queue of lags 0 to 9, limit 4", "verl staleness, a queue of lags 0 to 9, limit 4"),
    why="keeping every sample counts only when the same function also drops the samples a limit drops")

#: Where the policies coincide every factor is 1 (the weight where proximal is behaviour; the ratio, and so the
#: surrogate A and its derivative A, where all three are equal): an answer of constants passes those cases, so
#: each counts only when the same function gets the same key right where the policies differ.
CONSTANT_WEIGHT_GATES = tuple(
    Gate(groups=("weights",), needs="passed", only=(f"{key}, {case}",), cases=(f"{key}, {_GROUP}",),
         why="a factor of 1 where the policies coincide counts only when the same function also gets it right where "
             "they differ")
    for key, case in (("weight", "proximal equal to behaviour (standard PPO)"),
                      ("ratio", "all three policies equal (k = 0)"), ("surrogate", "all three policies equal (k = 0)"),
                      ("gradient", "all three policies equal (k = 0)")))

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + (CONSTANT_GATE,) + CONSTANT_WEIGHT_GATES)
