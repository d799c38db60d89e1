"""Hidden checks for exercise 16: ``causal_response_logprobs(model_logits, input_ids, response_token_mask)``.

The answer returns ``(selected, shifted_mask)``: ``selected[b, t]`` is the log-probability that the
logits at position ``t`` give to the token at ``t + 1``, and ``shifted_mask = mask[:, 1:]``. Expected
values come from :mod:`autograder.reference` in the trusted process; the mistakes that keep the shapes
plausible (same-position pairing, shifting the wrong way, raw logits, ...) are recognised by
computing their outputs on the same input. The task asks for ``selected`` in float64 and for
``shifted_mask`` as booleans, and both are graded: a float32 ``selected`` or a 0/1 integer mask loses
the case with its own message (``selected[mask]`` with an integer mask indexes positions 0 and 1 instead
of masking).

Missing the shift (same-position pairing, the wrong direction, a mask shifted the wrong way or not at
all) is the exercise's central mistake: it caps the notebook at a third of its autograded points.
"""

from __future__ import annotations

import functools

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, bool_array, coding_groups,
    error_case, exercise_stem, judge_floats, log_softmax, mistake_outputs, redraw, shared as _shared, strict_bool_array,
    value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)
TARGET = "causal_response_logprobs"

GROUPS = coding_groups(
    (2, "The notebook's open checks: uniform logits over 4 tokens, and a model that predicts each next token"),
    Group("alignment", 3, "Random [B, L, V] batches: logits at t score the token at t + 1, mask shifted to match"),
    Group("inputs", 2, "Lists, float32 logits, other integer and mask types, logits of order 1e3"),
    validation=(2, "Rejects bad shapes, L < 2, ids outside the vocabulary or not integers, NaN logits"),
)

# ----------------------------------------------------------------------------- misconceptions

SAME_POSITION = _shared.SAME_POSITION
SHIFT_BACKWARDS = _shared.SHIFT_BACKWARDS
RAW_LOGITS = Misconception(
    "gathered-logits",
    "These are raw logits picked at the target ids, not log-probabilities: apply a (stable) log-softmax "
    "over the vocabulary axis before gathering.")
PROBABILITIES = Misconception(
    "gathered-probabilities",
    "These are probabilities, not log-probabilities: gather from the log-softmax instead of the softmax.")
VOCAB_AXIS = Misconception(
    "normalised-wrong-axis",
    "The log-softmax was taken over the wrong axis: normalise over the vocabulary (the last axis, V), "
    "not over positions.")
NEGATED = _shared.NEGATED
ZEROED = Misconception(
    "masked-selected",
    "Positions outside the response were set to zero. Return the log-probability of every next token; "
    "the shifted mask you return is what tells later steps which positions count.")
NO_MAX_SHIFT = _shared.NO_MAX_SHIFT
# The mask messages teach which target each flag belongs to; they do not hand over the line of code
# (a self-learner sees them before choosing to reveal the worked solution).
MASK_WRONG_SHIFT = Misconception(
    "mask-wrong-shift",
    "The mask was shifted the wrong way: it kept the flag of the first token and dropped the last one. "
    "Each output position scores the NEXT token, so its flag must be that next token's flag: the first "
    "token is never a target, the last one is.")
MASK_NOT_BOOLEAN = Misconception(
    "mask-not-boolean",
    "The shifted mask holds numbers, not booleans: return a boolean array. With a 0/1 integer array, "
    "selected[mask] picks positions 0 and 1 instead of masking.")
MASK_NOT_SHIFTED = Misconception(
    "mask-not-shifted",
    "The mask was returned unshifted: it must describe the targets, the tokens from the second one on, "
    "so it has one column fewer than the input (shape [B, L - 1]), like selected.")


def _pick(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.take_along_axis(values, ids[..., None], axis=-1)[..., 0]


def wrong_selected(z: np.ndarray, ids: np.ndarray, mask: np.ndarray) -> list:
    """Outputs of the classic mistakes for ``selected`` (trusted process)."""
    log_p = log_softmax(z)
    correct = _pick(log_p[:, :-1], ids[:, 1:])
    wrong = [
        (_pick(log_p, ids), SAME_POSITION),
        (_pick(log_p[:, :-1], ids[:, :-1]), SAME_POSITION),
        (_pick(log_p[:, 1:], ids[:, 1:]), SAME_POSITION),
        (_pick(log_p[:, 1:], ids[:, :-1]), SHIFT_BACKWARDS),
        (_pick(z[:, :-1], ids[:, 1:]), RAW_LOGITS),
        (np.exp(correct), PROBABILITIES),
        (_pick(log_softmax(z[:, :-1], axis=1), ids[:, 1:]), VOCAB_AXIS),
        (_pick(log_softmax(z, axis=1)[:, :-1], ids[:, 1:]), VOCAB_AXIS),
        (-correct, NEGATED),
    ]
    response = mask[:, 1:].astype(bool)
    if not response.all():
        wrong.append((np.where(response, correct, 0.0), ZEROED))
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        raw = np.exp(z[:, :-1])
        total = raw.sum(axis=-1, keepdims=True)
        wrong.append((_pick(np.log(raw / total), ids[:, 1:]), NO_MAX_SHIFT))
        wrong.append((_pick(z[:, :-1] - np.log(total), ids[:, 1:]), NO_MAX_SHIFT))
    return wrong


def _pair(outcome) -> tuple:
    value = value_of(outcome, TARGET)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise Reject("causal_response_logprobs should return a pair: (selected, shifted_mask)")
    return value[0], value[1]


def _judge_mask(value, mask: np.ndarray) -> Verdict:
    expected = mask[:, 1:].astype(bool)
    actual = bool_array(value, "the shifted mask")
    if actual.shape == expected.shape and np.array_equal(actual, expected):
        strict_bool_array(value, "the shifted mask", numbers=MASK_NOT_BOOLEAN)
        return PASS
    if actual.shape == expected.shape and np.array_equal(actual, mask[:, :-1].astype(bool)):
        return Verdict(False, MASK_WRONG_SHIFT.sentence, MASK_WRONG_SHIFT.key)
    if actual.shape == mask.shape and np.array_equal(actual, mask.astype(bool)):
        return Verdict(False, MASK_NOT_SHIFTED.sentence, MASK_NOT_SHIFTED.key)
    if actual.shape != expected.shape:
        return Verdict(False, "the shifted mask has the wrong shape")  # never the answer's shape: it could encode numbers
    return Verdict(False, "the shifted mask is not correct for this input")


def _cases(name: str, group: str, logits, ids, mask, *, split: bool, send=None) -> list:
    """Cases for one input: ``split`` judges ``selected`` and the mask as two cases (partial credit)."""
    z = np.asarray(logits, dtype=np.float64)
    ids_array, mask_array = np.asarray(ids), np.asarray(mask)
    selected, _ = reference.causal_response_logprobs(logits, ids, mask)
    expected = np.asarray(selected, dtype=np.float64)
    wrong = mistake_outputs(functools.partial(wrong_selected, z, ids_array.astype(np.int64), mask_array))
    call = Call(TARGET, send if send is not None else (logits, ids, mask))

    def selected_verdict(value) -> Verdict:
        return judge_floats(value, expected, "the selected log-probabilities", wrong=wrong,
                            overflow=NO_MAX_SHIFT, float64=True)

    def judge_selected(outcomes):
        return selected_verdict(_pair(outcomes[0])[0])

    def judge_mask(outcomes):
        return _judge_mask(_pair(outcomes[0])[1], mask_array)

    def judge_both(outcomes):
        first, second = _pair(outcomes[0])
        verdict = selected_verdict(first)
        return verdict if not verdict.passed else _judge_mask(second, mask_array)

    if split:
        return [Case(f"{name}: selected log-probabilities", group, (call,), judge_selected),
                Case(f"{name}: shifted mask", group, (call,), judge_mask)]
    return [Case(name, group, (call,), judge_both)]


def _error_case(name: str, args: tuple, problem: str, argument: str) -> Case:
    return error_case(name, TARGET, args, problem, argument)


def _batch(rng: np.random.Generator, batch: int, length: int, vocabulary: int, *, scale: float = 2.0):
    """Random logits and ids, and a mask of prompt (0), response (1, at least one) and padding (0).

    From three positions on, the shifted mask (``mask[:, 1:]``) has a masked position (drawn again until
    it does), so that an answer that zeroes the masked log-probabilities, or misaligns the mask, differs
    from the key in every batch; with two positions the shifted mask is the single response token."""
    return redraw(lambda: _draw_batch(rng, batch, length, vocabulary, scale),
                  lambda drawn: length < 3 or not drawn[2][:, 1:].all(), "a masked position in the shifted mask")


def _draw_batch(rng: np.random.Generator, batch: int, length: int, vocabulary: int, scale: float):
    logits = rng.normal(scale=scale, size=(batch, length, vocabulary))
    # Neighbouring ids differ, so that pairing a token with its own position and shifting the wrong way
    # give different outputs: each mistake is always named by its own message.
    first = rng.integers(0, vocabulary, size=(batch, 1))
    steps = np.cumsum(rng.integers(1, vocabulary, size=(batch, length - 1)), axis=1)
    ids = (first + np.concatenate([np.zeros((batch, 1), dtype=np.int64), steps], axis=1)) % vocabulary
    mask = np.zeros((batch, length), dtype=np.int64)
    for row in range(batch):
        prompt = int(rng.integers(1, length))
        response = int(rng.integers(1, length - prompt + 1))
        mask[row, prompt:prompt + response] = 1
    return logits, ids, mask


#: The second open check: position t's logits add 20 to token ids[t + 1], so a correctly shifted
#: answer is close to 0 everywhere, and one that pairs positions the wrong way is far below. The base
#: logits 0, 0.5, 1, 1.5 make pairing at the same position and shifting backwards give different
#: outputs, so each is named by its own message.
PREDICTOR_IDS = np.array([[2, 0, 3, 1]])
PREDICTOR_MASK = np.array([[False, True, True, True]])
PREDICTOR_LOGITS = np.tile(0.5 * np.arange(4.0), (1, 4, 1))
PREDICTOR_LOGITS[0, np.arange(3), PREDICTOR_IDS[0, 1:]] += 20.0


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(1616))
    cases = _cases("the open check's uniform logits", "public", np.zeros((1, 3, 4)), np.array([[0, 1, 2]]),
                   np.array([[0, 1, 1]]), split=True)
    cases += _cases("the open check's model that predicts each next token", "public", PREDICTOR_LOGITS,
                    PREDICTOR_IDS, PREDICTOR_MASK, split=False)

    for batch, length, vocabulary in [(1, 2, 2), (2, 5, 7), (3, 7, 50), (4, 3, 11), (1, 6, 3), (4, 7, 23)]:
        logits, ids, mask = _batch(rng, batch, length, vocabulary)
        cases += _cases(f"B={batch}, L={length}, V={vocabulary}", "alignment", logits, ids, mask, split=True)

    logits, ids, mask = _batch(rng, 2, 4, 6)
    cases += _cases("all three arguments as nested lists", "inputs", logits, ids, mask, split=False,
                    send=(logits.tolist(), ids.tolist(), mask.tolist()))
    logits, ids, mask = _batch(rng, 3, 5, 9)
    cases += _cases("float32 logits", "inputs", logits.astype(np.float32), ids, mask, split=False)
    logits, ids, mask = _batch(rng, 2, 6, 8)
    cases += _cases("int32 ids and a boolean mask", "inputs", logits, ids.astype(np.int32), mask.astype(bool),
                    split=False)
    logits, ids, mask = _batch(rng, 3, 4, 10, scale=5.0)
    cases += _cases("logits near +1000", "inputs", logits + 1000.0, ids, mask, split=False)
    logits, ids, mask = _batch(rng, 2, 5, 12)
    cases += _cases("logits uniform in [-1000, 1000]", "inputs", rng.uniform(-1000.0, 1000.0, size=logits.shape),
                    ids, mask, split=False)

    logits, ids, mask = _batch(rng, 2, 4, 5)
    nan_logits = logits.copy()
    nan_logits[1, 2, 3] = np.nan
    inf_logits = logits.copy()
    inf_logits[0, 1, 0] = np.inf
    too_large, negative = ids.copy(), ids.copy()
    too_large[1, 2] = 5
    negative[0, 3] = -1
    float_ids = ids.astype(np.float64)
    float_ids[0, 1] = 1.5
    cases += [
        _error_case("2-D logits [L, V]", (logits[0], ids[0], mask[0]), "model_logits without a batch axis",
                    "model_logits"),
        _error_case("input_ids longer than the logits", (logits, np.concatenate([ids, ids[:, :1]], axis=1), mask),
                    "input_ids whose shape differs from model_logits[:2]", "input_ids"),
        _error_case("a mask shorter than input_ids", (logits, ids, mask[:, :-1]),
                    "a response_token_mask whose shape differs from input_ids", "response_token_mask"),
        _error_case("a single position (L = 1)", (logits[:, :1], ids[:, :1], mask[:, :1]),
                    "sequences of length 1 (nothing to predict)", "model_logits"),
        _error_case("an id equal to the vocabulary size", (logits, too_large, mask), "a token id >= V", "input_ids"),
        _error_case("a negative id", (logits, negative, mask), "a negative token id", "input_ids"),
        _error_case("float ids", (logits, float_ids, mask), "non-integer token ids", "input_ids"),
        _error_case("boolean ids", (logits, ids % 2 == 0, mask), "boolean token ids", "input_ids"),
        _error_case("NaN among the logits", (nan_logits, ids, mask), "model_logits containing NaN", "model_logits"),
        _error_case("+inf among the logits", (inf_logits, ids, mask), "model_logits containing +inf",
                    "model_logits"),
    ]
    return cases


#: The causal shift is the exercise: without it (or shifted the wrong way, for the log-probabilities
#: or the mask) an answer earns at most a third of the autograded points.
CENTRAL = Central(
    "the causal shift (which token each position's logits score, and the mask that goes with it)",
    {"same-position", "shift-backwards", "mask-wrong-shift", "mask-not-shifted"},
    ("the open check's model that predicts each next token",
     "B=2, L=5, V=7: selected log-probabilities", "B=2, L=5, V=7: shifted mask",
     "B=3, L=7, V=50: selected log-probabilities", "B=3, L=7, V=50: shifted mask"))

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
GATE = Gate(groups=("validation",), cases=(
    "B=2, L=5, V=7: selected log-probabilities",
    "B=3, L=7, V=50: selected log-probabilities",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("the open check's uniform logits: selected log-probabilities",),
         cases=(
             'B=2, L=5, V=7: selected log-probabilities',
             'B=3, L=7, V=50: selected log-probabilities',)),
    Gate(groups=("public",), needs="passed",
         only=("the open check's uniform logits: shifted mask",),
         cases=(
             'B=2, L=5, V=7: shifted mask',
             'B=3, L=7, V=50: shifted mask',)),
    Gate(groups=("public",), needs="passed",
         only=("the open check's model that predicts each next token",),
         cases=(
             'B=2, L=5, V=7: selected log-probabilities',
             'B=3, L=7, V=50: selected log-probabilities',
             'B=2, L=5, V=7: shifted mask',
             'B=3, L=7, V=50: shifted mask',)),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES)
