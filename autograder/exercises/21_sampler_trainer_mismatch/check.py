"""Hidden checks for exercise 21: engine vs trainer log-probabilities, truncated importance weights.

Expected values come from :mod:`autograder.reference.further` in the trusted process; the classic
mistakes (an engine that does not renormalise, a trainer that truncates too, temperature left out,
an inverted ratio, PPO-style two-sided clipping, a sequence weight built from truncated token weights,
padding counted) are recognised by computing their outputs on the same input.

Every stated rule has a case: ties at the top-k cut (exercise 19's tie block, so an unstable sort fails
too; as in exercise 19 the engines' other rule, every token tied with the k-th kept, is accepted: the
tie cases take either log Z_S, and the tied token that "exactly k" drops must raise for an answer that
keeps exactly k and come out right for one that keeps the ties, told apart by a control call), T <= 0, top_k > V, cap = 0 and cap = inf, an empty row's min(1, C), shapes that NumPy would
broadcast. An engine that is not renormalised (or adds log Z_S) caps the notebook at a third; bad-input
points need valid input accepted (the gate); "exactly the keys" is graded in the open checks only.
"""

from __future__ import annotations

import importlib

import numpy as np

from autograder.channel import Call, Raised, Returned
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, coding_groups, error_case,
    exercise_stem, expect_error, judge_key, log_softmax, overflow_named, redraw, shared as _shared,
)
from autograder.reference import further

# Ties are ranked as in exercise 19 (smaller id first), built the same way so that an unstable sort fails too.
_EX19 = importlib.import_module("autograder.exercises.19_sampling_transforms.check")
TIE_ORDER = _EX19.TIE_ORDER

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    1,
    Group("logprobs", 3, "engine_and_trainer_logprobs: top-k engine vs untruncated trainer, with temperature"),
    Group("weights", 3, "truncated_is_weights: per-token and sequence weights, truncated at the cap, padding ignored"),
    validation=(1, "Both functions reject inconsistent shapes, unsampleable tokens and a bad cap"),
)

ENGINE_NOT_RENORMALISED = Misconception(
    "engine-not-renormalised",
    "The engine's log-probability is the tempered log-softmax itself: after keeping the top-k tokens the "
    "engine renormalises over them, so its log-probability is larger by -log Z_S (Z_S = their tempered mass).")
ENGINE_LOG_Z_SIGN = Misconception(
    "engine-log-z-sign",
    "log Z_S was added to the engine's log-probability: renormalising over the top-k set divides the "
    "probability by Z_S <= 1, so the engine's log-probability is log softmax(z / T) - log Z_S, at least the "
    "trainer's.")
NO_MAX_SHIFT = _shared.NO_MAX_SHIFT
TRAINER_TRUNCATED = Misconception(
    "trainer-truncated",
    "The trainer's log-probability was renormalised over the top-k tokens too: the trainer recomputes "
    "log softmax(logits / T) over the whole vocabulary, with no truncation.")
NO_TEMPERATURE = Misconception(
    "temperature-left-out",
    "The temperature is missing: both the engine and the trainer divide the logits by T before the softmax.")
RATIO_INVERTED = Misconception(
    "is-ratio-inverted",
    "The ratio is inverted: the importance weight is pi_trainer / pi_engine = exp(trainer - engine), the "
    "policy being trained over the policy that sampled.")
NOT_TRUNCATED = Misconception(
    "not-truncated",
    "The weights are not truncated: truncated importance sampling uses min(weight, cap).")
TWO_SIDED = Misconception(
    "clipped-both-sides",
    "The weights were clipped from below too (as PPO clips its ratio): truncated importance sampling only "
    "caps large weights, min(weight, cap); small weights stay as they are.")
SEQUENCE_FROM_TOKENS = Misconception(
    "sequence-from-truncated-tokens",
    "The sequence weight was built from the already truncated token weights: it is exp(sum of the response's "
    "log-ratios), truncated once at the end.")
TIE_RULE_MIXED = Misconception(
    "tie-rule-mixed",
    "Two tie rules at once: the engine's log-probabilities keep every token tied with the k-th in Z_S, yet a "
    "tied token beyond the first k is rejected as unsampleable. Either rule is accepted (exactly k, smaller "
    "id first; or every token tied with the k-th), but the support you sample from and the one you "
    "normalise over must be the same set.")
#: The key exercises 01, 17 and 20 use too: one key, one sentence.
PADDING_COUNTED = _shared.PADDING_COUNTED

KEYS_LP = ("engine", "trainer")
KEYS_W = ("sequence", "token")


def _logprob_wrong(z, ids, temperature, top_k) -> dict:
    no_t = further.engine_and_trainer_logprobs(z, ids, 1.0, top_k) if temperature != 1.0 else None
    right = further.engine_and_trainer_logprobs(z, ids, temperature, top_k)
    wrong = {"engine": [], "trainer": []}
    if top_k is not None:
        wrong["engine"].append((right["trainer"], ENGINE_NOT_RENORMALISED))
        wrong["engine"].append((2 * right["trainer"] - right["engine"], ENGINE_LOG_Z_SIGN))
        wrong["trainer"].append((right["engine"], TRAINER_TRUNCATED))
    if no_t is not None:
        wrong["engine"].append((no_t["engine"], NO_TEMPERATURE))
        wrong["trainer"].append((no_t["trainer"], NO_TEMPERATURE))
    # An output of zeros (the greedy engine's log-probability, top-1, zero up to rounding) is also what an
    # answer returning zeros gives: naming a mistake there would blame one it need not have made.
    return {key: [(output, mistake) for output, mistake in pairs if np.any(np.abs(np.asarray(output)) > 1e-12)]
            for key, pairs in wrong.items()}


def _verdict(judge, outcomes) -> Verdict:
    try:
        return judge(outcomes)
    except Reject as rejection:
        return Verdict(False, rejection.message, rejection.misconception)


def _either(primary, *others):
    """PASS when ``primary`` or one of ``others`` passes; otherwise ``primary``'s verdict (its feedback
    names the taught rule's mistakes)."""

    def judge(outcomes):
        first = _verdict(primary, outcomes)
        if first.passed or any(_verdict(other, outcomes).passed for other in others):
            return PASS
        return first

    return judge


def _logprob_cases(name, z, ids, temperature, top_k, *, as_lists=False, large=False, ties=False):
    """``large``: logits of order 1e3, called again moved down by their maximum (same expected values) to
    name a missing max shift; ``ties``: every valid token is one of the tied tokens kept by the smaller-id
    rule, so an answer that raises on it ranked the ties the other way; the engine's log-probability
    may follow either tie rule (exactly k, or every token tied with the k-th)."""
    expected = further.engine_and_trainer_logprobs(z, ids, temperature, top_k)
    kept_ties = further.engine_and_trainer_logprobs(z, ids, temperature, top_k, keep_ties=True) if ties else None
    wrong = _logprob_wrong(z, ids, temperature, top_k)
    args = (z.tolist(), ids.tolist()) if as_lists else (z, ids)
    kwargs = {"temperature": temperature, "top_k": top_k}
    cases = []
    for key in KEYS_LP:
        judge = judge_key("engine_and_trainer_logprobs", key, expected, KEYS_LP, wrong=wrong[key])
        if kept_ties is not None:
            judge = _either(judge, judge_key("engine_and_trainer_logprobs", key, kept_ties, KEYS_LP))
        calls = (Call("engine_and_trainer_logprobs", args, kwargs),)
        if large:
            calls += (Call("engine_and_trainer_logprobs", (z - z.max(), ids), kwargs),)
            judge = overflow_named(judge, NO_MAX_SHIFT)
        if ties:
            # a control call on the same logits, sampling each row's most probable token (no tie involved)
            calls += (Call("engine_and_trainer_logprobs", (z, np.argmax(z, axis=-1)), kwargs),)
            judge = _ties_named(judge)
        cases.append(Case(f"{key} log-probabilities, {name}", "logprobs", calls, judge))
    return cases


def _ties_named(judge):
    """A ValueError on tokens the smaller-id rule keeps, while the same logits with an untied token
    return, means the ties were ranked another way (an answer that raises on everything is not told so)."""

    def wrapped(outcomes):
        if (isinstance(outcomes[0], Raised) and outcomes[0].is_a("ValueError")
                and isinstance(outcomes[1], Returned)):
            return Verdict(False, TIE_ORDER.sentence, TIE_ORDER.key)
        return judge(outcomes[:1])

    return wrapped


def _tied_token_case(tie_z, dropped, kept, k, temperature) -> Case:
    """The tied token that "exactly k, smaller id first" drops. An answer that keeps exactly k must raise
    on it (the engine could not have sampled it); one that keeps every token tied with the k-th (the other
    rule the notebook accepts) must return its log-probability. A control call on a tied token both rules
    keep tells which rule the answer applies, so neither rule can be half-applied to dodge this case."""
    kwargs = {"temperature": temperature, "top_k": k}
    control_ids = np.array([kept])
    keep_rule = judge_key("engine_and_trainer_logprobs", "engine",
                          further.engine_and_trainer_logprobs(tie_z, control_ids, temperature, k, keep_ties=True),
                          KEYS_LP)
    dropped_value = judge_key("engine_and_trainer_logprobs", "engine",
                              further.engine_and_trainer_logprobs(tie_z, np.array([dropped]), temperature, k,
                                                                  keep_ties=True), KEYS_LP)
    problem = "a tied token just below the top-k cut (the smaller ids are kept)"

    def judge(outcomes):
        if isinstance(outcomes[1], Returned) and _verdict(keep_rule, outcomes[1:]).passed:
            if isinstance(outcomes[0], Raised):
                return Verdict(False, TIE_RULE_MIXED.sentence, TIE_RULE_MIXED.key)
            return _verdict(dropped_value, outcomes[:1])
        return expect_error(outcomes[0], problem=problem, argument="token_ids")

    return Case("log-probs: a tied token that the smaller-id rule drops", "validation",
                (Call("engine_and_trainer_logprobs", (tie_z, np.array([dropped])), kwargs),
                 Call("engine_and_trainer_logprobs", (tie_z, control_ids), kwargs)), judge)


def _tie_rows(vocabulary: int) -> tuple:
    """Exercise 19's tie block (a large block of equal logits, the top-k cut in its middle) as one row per
    tied token that the smaller-id rule keeps, each sampling that token; and the first tied token it drops."""
    z, k, _ = _EX19.tie_block(vocabulary)
    order = np.argsort(-z, kind="stable")
    tied_kept = np.array([i for i in order[:k] if z[i] == 0.0])
    return np.tile(z, (tied_kept.size, 1)), tied_kept, k, int(order[k])


def _weights_wrong(trainer, engine, mask, cap) -> dict:
    m = np.asarray(mask, dtype=bool)
    lr = np.where(m, trainer - np.where(m, engine, 0.0), 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        token_raw = np.where(m, np.exp(lr), 0.0)
        inverted = np.where(m, np.minimum(np.exp(-lr), cap), 0.0)
        two_sided = np.where(m, np.clip(np.exp(lr), 1.0 / cap, cap), 0.0)
        seq_raw = np.exp(lr.sum(axis=1))
        seq_inverted = np.minimum(np.exp(-lr.sum(axis=1)), cap)
        seq_two = np.clip(seq_raw, 1.0 / cap, cap)
        seq_tokens = np.prod(np.where(m, np.minimum(np.exp(lr), cap), 1.0), axis=1)
        padded_lr = np.nan_to_num(trainer - engine, nan=0.0)
        pad_token = np.minimum(np.exp(padded_lr), cap)
        pad_seq = np.minimum(np.exp(padded_lr.sum(axis=1)), cap)
    token = [(token_raw, NOT_TRUNCATED), (inverted, RATIO_INVERTED), (two_sided, TWO_SIDED), (pad_token, PADDING_COUNTED)]
    sequence = [(seq_raw, NOT_TRUNCATED), (seq_inverted, RATIO_INVERTED), (seq_two, TWO_SIDED),
                (seq_tokens, SEQUENCE_FROM_TOKENS), (pad_seq, PADDING_COUNTED)]
    finite = lambda pairs: [(o, m_) for o, m_ in pairs if np.all(np.isfinite(o))]  # noqa: E731
    return {"token": finite(token), "sequence": finite(sequence)}


def _weights_cases(name, trainer, engine, mask, cap, *, as_lists=False, keys=KEYS_W):
    expected = further.truncated_is_weights(trainer, engine, mask, cap)
    wrong = _weights_wrong(trainer, engine, mask, cap) if np.isfinite(cap) else {"token": [], "sequence": []}
    args = (trainer.tolist(), engine.tolist(), mask.tolist()) if as_lists else (trainer, engine, mask)
    return [Case(f"{key} weights, {name}", "weights", (Call("truncated_is_weights", args, {"cap": cap}),),
                 judge_key("truncated_is_weights", key, expected, KEYS_W, wrong=wrong[key]))
            for key in keys]


def _sampled(rng, z, temperature, top_k):
    """Token ids the engine could have sampled: one of the top-k tokens of each position."""
    ranked = np.argsort(-(z / temperature), axis=-1, kind="stable")
    pick = rng.integers(0, top_k if top_k else z.shape[-1], size=z.shape[:-1])
    return np.take_along_axis(ranked, pick[..., None], axis=-1)[..., 0]


def _mismatch_batch(rng, batch, length, spread=0.3, *, cap=None):
    """Trainer and engine log-probs that differ by a few tenths either way, with right padding.

    Drawn again until a row is padded (the padding holds garbage that must not count) and, with a
    ``cap``, until the cap matters both ways: an active token's ratio above ``cap`` and one below
    ``1 / cap``, a row whose sequence ratio is above ``cap`` and one whose is below ``1 / cap`` (an
    answer that does not truncate, or clips from below too, must be wrong on the batch)."""
    def holds(drawn):
        trainer, engine, mask = drawn
        if mask.all():
            return False
        if cap is None:
            return True
        log_ratio = np.where(mask, trainer - engine, 0.0)
        bound, active = np.log(cap), log_ratio[mask]
        sums = log_ratio.sum(axis=1)
        return bool((active > bound).any() and (active < -bound).any() and (sums > bound).any()
                    and (sums < -bound).any())

    return redraw(lambda: _draw_mismatch(rng, batch, length, spread), holds,
                  "a padded row" + (f" and ratios beyond the cap {cap} both ways" if cap else ""))


def _draw_mismatch(rng, batch, length, spread):
    engine = log_softmax(rng.normal(scale=2.0, size=(batch, length, 9)))[..., 0]
    trainer = engine + rng.normal(scale=spread, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    mask = np.arange(length)[None, :] < lengths[:, None]
    garbage = rng.normal(scale=5.0, size=(batch, length))
    return np.where(mask, trainer, garbage), np.where(mask, engine, -garbage), mask


def _cases_public():
    """The notebook's open checks: top-2 of four logits, two response tokens and a padding position."""
    cases = []
    z = np.array([[2.0, 1.0, 0.0, -1.0]])
    out = further.engine_and_trainer_logprobs(z, np.array([0]), 1.0, 2)
    cases.append(Case("the open check: top-2 of four logits, T = 1", "public",
                      (Call("engine_and_trainer_logprobs", (z, np.array([0])), {"temperature": 1.0, "top_k": 2}),),
                      judge_key("engine_and_trainer_logprobs", "engine", out, KEYS_LP, exact=True,
                                wrong=_logprob_wrong(z, np.array([0]), 1.0, 2)["engine"])))
    t = np.array([[-1.0, -2.0, 0.0]])
    e = np.array([[-1.5, -1.0, 7.0]])
    m = np.array([[True, True, False]])
    cases.append(Case("the open check: two response tokens and one padding position", "public",
                      (Call("truncated_is_weights", (t, e, m), {"cap": 1.5}),),
                      judge_key("truncated_is_weights", "token", further.truncated_is_weights(t, e, m, 1.5), KEYS_W,
                                exact=True)))
    return cases


def _cases_logprobs(rng):
    """engine_and_trainer_logprobs: shapes, temperatures, top-k (greedy, none, all), large logits, ties."""
    cases = []
    for name, shape, temperature, top_k in [
        ("one response of 6 tokens, T = 0.7, top-3 of 10", (6, 10), 0.7, 3),
        ("a [3, 5] batch, T = 1.3, top-4 of 8", (3, 5, 8), 1.3, 4),
        ("T = 1, top-1 (greedy): the engine log-prob is 0", (4, 6), 1.0, 1),
        ("no truncation (top_k None): engine and trainer agree", (2, 4, 7), 0.6, None),
        ("top_k equal to the vocabulary size", (5, 5), 0.9, 5),
    ]:
        z = rng.normal(scale=2.0, size=shape)
        ids = _sampled(rng, z, temperature, top_k)
        cases += _logprob_cases(name, z, ids, temperature, top_k)
    z = rng.normal(scale=2.0, size=(4, 6)) + 1000.0
    cases += _logprob_cases("logits of order 1e3, T = 0.5, top-2", z, _sampled(rng, z, 0.5, 2), 0.5, 2, large=True)
    for vocabulary in (100, 200):
        z, tied_kept, k, _ = _tie_rows(vocabulary)
        cases += _logprob_cases(f"ties at the top-k cut (V = {vocabulary}): the smaller ids are kept", z, tied_kept,
                                0.8, k, ties=True)
    z = rng.normal(size=(3, 5))
    cases += _logprob_cases("inputs given as lists, T = 0.8, top-3", z, _sampled(rng, z, 0.8, 3), 0.8, 3, as_lists=True)
    return cases


def _cases_weights(rng):
    """truncated_is_weights: padding, large mismatches, overflowing sums, empty rows, no cap."""
    cases = []
    trainer, engine, mask = _mismatch_batch(rng, 4, 7)
    cases += _weights_cases("a [4, 7] batch with right padding, cap 2", trainer, engine, mask, 2.0)
    trainer, engine, mask = _mismatch_batch(rng, 3, 6, spread=1.5, cap=1.5)
    cases += _weights_cases("large mismatches, cap 1.5", trainer, engine, mask, 1.5)
    trainer, engine, mask = _mismatch_batch(rng, 2, 5)
    cases += _weights_cases("0/1 integer mask, inputs as lists, cap 3", trainer, engine, mask.astype(np.int64), 3.0,
                            as_lists=True)
    engine = np.log(np.full((2, 40), 0.6))
    trainer = engine + np.log(0.85)  # a truncating engine: every per-token ratio is Z_S = 0.85
    cases += _weights_cases("40 tokens at ratio 0.85: the sequence weight is 0.85**40", trainer, engine,
                            np.ones((2, 40), dtype=bool), 2.0)
    engine = np.full((1, 400), -3.0)
    trainer = np.full((1, 400), -1.0)  # sum of log-ratios 800: exp would overflow before the cap
    cases += _weights_cases("400 tokens with log-ratio 2 each (exp of the sum overflows)", trainer, engine,
                            np.ones((1, 400), dtype=bool), 2.0)
    engine = rng.normal(size=(2, 4)) - 2.0
    trainer = engine + 0.2
    nan_mask = np.array([[True, True, False, False], [True, True, True, False]])
    cases += _weights_cases("NaN at padding positions", np.where(nan_mask, trainer, np.nan),
                            np.where(nan_mask, engine, np.nan), nan_mask, 2.0)
    trainer, engine, mask = _mismatch_batch(rng, 3, 4)
    mask[1] = False  # a row without response tokens: its sequence weight is min(1, C)
    for cap in (0.5, 2.0):
        cases += _weights_cases(f"a row without response tokens, cap {cap}", trainer, engine, mask, cap,
                                keys=("sequence",))
    trainer, engine, mask = _mismatch_batch(rng, 2, 5, spread=1.5)
    cases += _weights_cases("cap = inf: no truncation", trainer, engine, mask, np.inf)
    return cases


def _cases_validation(rng):
    """Bad input to both functions, each naming its argument."""
    cases = []
    z = rng.normal(size=(3, 5))
    ids = _sampled(rng, z, 1.0, 2)
    outside = ids.copy()
    outside[1] = np.argsort(-z[1], kind="stable")[4]  # the least likely token: outside the top-2
    good_t, good_e, good_m = _mismatch_batch(rng, 2, 3)
    tie_z, tie_kept, tie_k, dropped = _tie_rows(100)
    cases += [
        _tied_token_case(tie_z[:1], dropped, int(tie_kept[0]), tie_k, 0.8),
        error_case("log-probs: a negative temperature", "engine_and_trainer_logprobs",
                   (z, ids), "temperature -1", "temperature", kwargs={"temperature": -1.0, "top_k": None}),
        error_case("log-probs: top_k larger than the vocabulary", "engine_and_trainer_logprobs",
                   (z, ids), "top_k = V + 1", "top_k", kwargs={"temperature": 1.0, "top_k": z.shape[-1] + 1}),
        error_case("weights: cap = 0", "truncated_is_weights",
                   (good_t, good_e, good_m), "cap = 0", "cap", kwargs={"cap": 0.0}),
        error_case("weights: one row of trainer log-probs for two rows of mask", "truncated_is_weights",
                   (good_t[:1], good_e, good_m), "trainer_logprobs of shape [1, L] with a [2, L] mask (NumPy would "
                   "broadcast it)", "trainer_logprobs", kwargs={"cap": 2.0}),
        error_case("log-probs: token_ids of the wrong shape", "engine_and_trainer_logprobs",
                   (z, ids[:2]), "token_ids whose shape is not logits.shape[:-1]", "token_ids",
                   kwargs={"temperature": 1.0, "top_k": 2}),
        error_case("log-probs: a token outside the top-k support", "engine_and_trainer_logprobs",
                   (z, outside), "a token the engine could not have sampled", "token_ids",
                   kwargs={"temperature": 1.0, "top_k": 2}),
        error_case("log-probs: temperature 0", "engine_and_trainer_logprobs",
                   (z, ids), "temperature 0", "temperature", kwargs={"temperature": 0.0, "top_k": 2}),
        # The task's rule, settled: NaN temperatures and non-finite logits raise; T = inf is not graded.
        error_case("log-probs: a NaN temperature", "engine_and_trainer_logprobs",
                   (z, ids), "a NaN temperature", "temperature", kwargs={"temperature": float("nan"), "top_k": 2},
                   names=("ValueError",)),
        error_case("log-probs: NaN among the logits", "engine_and_trainer_logprobs",
                   (np.where(np.arange(5) == 3, np.nan, z), ids), "logits containing NaN", "logits",
                   kwargs={"temperature": 1.0, "top_k": None}, names=("ValueError",)),
        error_case("log-probs: +inf among the logits", "engine_and_trainer_logprobs",
                   (np.where(np.arange(5) == 0, np.inf, z), ids), "logits containing +inf", "logits",
                   kwargs={"temperature": 1.0, "top_k": None}, names=("ValueError",)),
        error_case("weights: mask of another shape", "truncated_is_weights",
                   (good_t, good_e, good_m[:, :2]), "a mask whose shape differs from the log-probs'", "mask",
                   kwargs={"cap": 2.0}),
        error_case("weights: a negative cap", "truncated_is_weights",
                   (good_t, good_e, good_m), "cap = -1", "cap", kwargs={"cap": -1.0}),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(21))
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    return [*_cases_public(), *_cases_logprobs(rng), *_cases_weights(rng), *_cases_validation(rng)]


#: The engine's renormalisation over the top-k set is the exercise (trainer - engine = log Z_S): an engine that
#: does not renormalise, or adds log Z_S, caps the notebook at a third of its autograded points.
CENTRAL = Central(
    "the engine's renormalisation over its top-k set (engine = trainer - log Z_S)",
    {"engine-not-renormalised", "engine-log-z-sign"},
    ("the open check: top-2 of four logits, T = 1",
     "engine log-probabilities, one response of 6 tokens, T = 0.7, top-3 of 10",
     "engine log-probabilities, a [3, 5] batch, T = 1.3, top-4 of 8"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input (a stub that
#: raises ValueError on everything would otherwise collect them).
GATE = Gate(cases=("engine log-probabilities, one response of 6 tokens, T = 0.7, top-3 of 10",
          "token weights, a [4, 7] batch with right padding, cap 2"))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=('the open check: top-2 of four logits, T = 1',),
         cases=(
             'engine log-probabilities, one response of 6 tokens, T = 0.7, top-3 of 10',
             'engine log-probabilities, a [3, 5] batch, T = 1.3, top-4 of 8',)),
    Gate(groups=("public",), needs="passed",
         only=('the open check: two response tokens and one padding position',),
         cases=(
             'token weights, a [4, 7] batch with right padding, cap 2',
             'token weights, large mismatches, cap 1.5',)),
)

#: Greedy decoding keeps one token, whose engine log-probability is 0 whatever the logits: an answer of
#: zeros passes that case, so it counts only when the function also gets a truncated distribution right.
CONSTANT_GATES = (
    Gate(groups=("logprobs",), needs="attempted", quorum=1,
         only=("engine log-probabilities, T = 1, top-1 (greedy): the engine log-prob is 0",),
         cases=("engine log-probabilities, one response of 6 tokens, T = 0.7, top-3 of 10",
                "engine log-probabilities, a [3, 5] batch, T = 1.3, top-4 of 8"),
         why="the greedy engine log-probability is 0 whatever the logits: it counts only when the function "
             "also gets the engine log-probabilities of a larger kept set right"),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + CONSTANT_GATES)
