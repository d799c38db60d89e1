"""Hidden checks for exercise 23: token-mean, sequence-mean and constant loss normalisers.

``token_weights(mask, mode, max_len=None)`` returns the weight of each token's loss in the batch loss;
``aggregate_loss(per_token_loss, mask, mode, max_len=None)`` the loss itself. Expected values come from
:mod:`autograder.reference.further`; the mistakes that mix the normalisers up (a sequence mean that is a
token mean, Dr. GRPO's constant taken from the padded length or without the batch size, padding counted)
are recognised from their outputs.

The empty batch (weight 0, not NaN), B = 0 and broadcastable shapes have cases. A mode given another
mode's weights, or a sequence mean without 1/B, caps the notebook at a third; bad-input points need
valid input accepted (the gate).
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    Case, Central, ExerciseCheck, Gate, Group, Misconception, coding_groups, error_case, exercise_stem, judge_array,
    shared as _shared,
)
from autograder.reference import further

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    1,
    Group("weights", 3, "token_weights: the weight of every token under each normaliser"),
    Group("aggregate", 3, "aggregate_loss: the batch loss under each normaliser, padding ignored"),
    validation=(1, "Both functions reject an unknown mode, a missing or too small max_len and bad shapes"),
)

MODES_MIXED = Misconception(
    "normalisers-mixed-up",
    "This is another mode's normaliser: token_mean divides by the batch's total number of response tokens, "
    "sequence_mean averages each sequence over its own tokens and then averages the sequences, constant "
    "divides by B * max_len.")
CONSTANT_FROM_PADDING = Misconception(
    "constant-from-padded-length",
    "The constant normaliser used this batch's padded width L: the task's constant is B * max_len, with max_len "
    "the maximum response length (TRL's dr_grpo). L equals max_len only when every batch is padded to the maximum.")
CONSTANT_WITHOUT_BATCH = Misconception(
    "constant-without-batch",
    "The constant normaliser is missing the batch size: the task asks for B * max_len, as TRL's dr_grpo divides "
    "by the number of sequences times max_completion_length.")
SEQUENCE_WITHOUT_BATCH = Misconception(
    "sequence-mean-without-batch",
    "sequence_mean must also average over the B sequences: each token's weight is 1 / (B * n_i).")
TOKEN_MEAN_PER_ROW = Misconception(
    "token-mean-per-row",
    "This token_mean is a mean taken per row: each token is weighted 1 / n_i by its own response's length, "
    "which is a sequence mean without its 1/B. token_mean weights every response token of the batch alike, "
    "1 / (n_1 + ... + n_B), so a long response counts for more than a short one.")
#: The key exercises 01, 17 and 20 use too: one key, one sentence.
PADDING_COUNTED = _shared.PADDING_COUNTED


def _wrong_weights(mask, mode, max_len) -> list:
    m = np.asarray(mask, dtype=bool)
    batch, length = m.shape
    others = [further.token_weights(m, other, max_len if other == "constant" else None)
              for other in further.AGGREGATION_MODES if other != mode and (other != "constant" or max_len)]
    wrong = [(w, MODES_MIXED) for w in others]
    counts = np.maximum(m.sum(axis=1, keepdims=True), 1)
    if mode == "constant":
        wrong += [(np.where(m, 1.0 / (batch * length), 0.0), CONSTANT_FROM_PADDING),
                  (np.where(m, 1.0 / max_len, 0.0), CONSTANT_WITHOUT_BATCH)]
    if mode == "sequence_mean":
        wrong.append((np.where(m, 1.0 / counts, 0.0), SEQUENCE_WITHOUT_BATCH))
    if mode == "token_mean":
        wrong.append((np.full(m.shape, 1.0 / m.size), PADDING_COUNTED))
        wrong.append((np.where(m, 1.0 / counts, 0.0), TOKEN_MEAN_PER_ROW))
    if mode == "sequence_mean":
        wrong.append((np.full(m.shape, 1.0 / (batch * length)), PADDING_COUNTED))
    return [(w, mc) for w, mc in wrong if w.shape == m.shape and not np.allclose(w, further.token_weights(m, mode, max_len))]


def _weights_case(name, mask, mode, max_len=None, *, as_list=False):
    expected = further.token_weights(mask, mode, max_len)
    kwargs = {} if max_len is None else {"max_len": max_len}
    arg = np.asarray(mask).tolist() if as_list else mask
    return Case(f"{mode} weights, {name}", "weights", (Call("token_weights", (arg, mode), kwargs),),
                judge_array("token_weights", expected, "the weights", wrong=_wrong_weights(mask, mode, max_len)))


def _paired_weights_case(name, first, second, mode, max_len=None):
    """One case, two masks: both weight arrays must be right (the first is an edge case that a trivial
    answer would get right on its own)."""
    kwargs = {} if max_len is None else {"max_len": max_len}
    judges = [judge_array("token_weights", further.token_weights(m, mode, max_len), "the weights",
                          wrong=_wrong_weights(m, mode, max_len)) for m in (first, second)]

    def judge(outcomes):
        for one, outcome in zip(judges, outcomes):
            verdict = one((outcome,))
            if not verdict.passed:
                return verdict
        return verdict

    return Case(f"{mode} weights, {name}", "weights",
                tuple(Call("token_weights", (m, mode), kwargs) for m in (first, second)), judge)


def _aggregate_case(name, loss, mask, mode, max_len=None, *, as_list=False):
    expected = further.aggregate_loss(loss, mask, mode, max_len)
    finite_loss = np.where(np.asarray(mask, dtype=bool), loss, 0.0)
    wrong = [(float(np.sum(w * finite_loss)), mc) for w, mc in _wrong_weights(mask, mode, max_len)]
    padded = np.nan_to_num(np.asarray(loss, dtype=np.float64))
    m = np.asarray(mask, dtype=bool)
    if mode == "token_mean":
        wrong.append((float(padded.sum() / padded.size), PADDING_COUNTED))
    elif mode == "sequence_mean":
        wrong.append((float(padded.mean(axis=1).mean()), PADDING_COUNTED))
        wrong.append((float(np.sum(np.where(m, padded, 0.0)) / m.shape[0] / m.shape[1]), PADDING_COUNTED))
    else:
        wrong.append((float(padded.sum() / (m.shape[0] * max_len)), PADDING_COUNTED))
    kwargs = {} if max_len is None else {"max_len": max_len}
    args = (np.asarray(loss).tolist(), np.asarray(mask).tolist()) if as_list else (loss, mask)
    return Case(f"{mode} loss, {name}", "aggregate", (Call("aggregate_loss", (*args, mode), kwargs),),
                judge_array("aggregate_loss", expected, "the loss", wrong=wrong))


def _ragged_mask(lengths, width) -> np.ndarray:
    return np.arange(width)[None, :] < np.asarray(lengths)[:, None]


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    cases = []
    rng = np.random.default_rng(variant.seed(23))

    # --- public: the notebook's open checks
    mask = _ragged_mask([2, 1], 3)
    loss = np.array([[1.0, 3.0, 9.0], [4.0, 0.0, 0.0]])
    cases.append(Case("the open check: sequence_mean weights of two sequences of lengths 2 and 1", "public",
                      (Call("token_weights", (mask, "sequence_mean")),),
                      judge_array("token_weights", further.token_weights(mask, "sequence_mean"), "the weights",
                                  wrong=_wrong_weights(mask, "sequence_mean", None))))
    cases.append(Case("the open check: token_mean loss of the same batch", "public",
                      (Call("aggregate_loss", (loss, mask, "token_mean")),),
                      judge_array("aggregate_loss", further.aggregate_loss(loss, mask, "token_mean"), "the loss")))

    # --- weights
    group = _ragged_mask([3, 5, 12, 20], 20)
    other = _ragged_mask([7, 1, 4], 9)
    with_empty = _ragged_mask([4, 0, 2], 5)
    left = _ragged_mask([3, 5], 6)[:, ::-1]  # left padding: the response is at the end of each row
    for mode in further.AGGREGATION_MODES:
        max_len = 32 if mode == "constant" else None
        cases.append(_weights_case("a GRPO group of lengths 3, 5, 12, 20", group, mode, max_len))
        cases.append(_weights_case("lengths 7, 1, 4 padded to 9", other, mode, 12 if max_len else None))
        cases.append(_weights_case("a row without response tokens", with_empty, mode, 5 if max_len else None))
        cases.append(_weights_case("left padding, mask as 0/1 lists", left.astype(int), mode, 6 if max_len else None,
                                   as_list=True))
        # the stated edge case: no response token at all gives weight 0 everywhere (not 0/0 = NaN), paired
        # with a batch of the same shape that has tokens, so that zeros everywhere does not pass by itself
        cases.append(_paired_weights_case("a batch with no response token at all (and one with tokens)",
                                          np.zeros((3, 4), dtype=bool), _ragged_mask([1, 4, 2], 4), mode,
                                          4 if max_len else None))

    # --- aggregate
    for mode in further.AGGREGATION_MODES:
        max_len = 24 if mode == "constant" else None
        loss = rng.normal(size=(4, 20))
        cases.append(_aggregate_case("a GRPO group of lengths 3, 5, 12, 20 (garbage in the padding)",
                                     np.where(group, loss, 100.0 * rng.normal(size=(4, 20))), group, mode,
                                     32 if max_len else None))
        mask = _ragged_mask([6, 2, 9, 1, 9], 9)
        loss = rng.normal(size=(5, 9))
        cases.append(_aggregate_case("five sequences, lists", np.where(mask, loss, 7.0), mask, mode, max_len,
                                     as_list=True))
        nan_loss = np.where(with_empty, rng.normal(size=with_empty.shape), np.nan)
        cases.append(_aggregate_case("NaN at padding, a row without tokens", nan_loss, with_empty, mode,
                                     8 if max_len else None))

    # --- validation
    mask = _ragged_mask([2, 3], 3)
    loss = rng.normal(size=(2, 3))
    cases += [
        error_case("weights: an unknown mode", "token_weights", (mask, "mean"), "mode 'mean'", "mode"),
        error_case("weights: constant without max_len", "token_weights", (mask, "constant"),
                   "mode 'constant' with no max_len", "max_len"),
        error_case("weights: max_len shorter than the padded width", "token_weights", (mask, "constant"),
                   "max_len = 2 for rows of width 3", "max_len", kwargs={"max_len": 2}),
        error_case("weights: a 1-D mask", "token_weights", (np.array([True, False]), "token_mean"),
                   "a 1-D mask", "mask"),
        error_case("weights: a mask with no rows", "token_weights", (np.zeros((0, 3), dtype=bool), "token_mean"),
                   "a mask of shape [0, 3] (no sequences)", "mask"),
        error_case("loss: per_token_loss of another shape", "aggregate_loss", (loss[:, :2], mask, "token_mean"),
                   "a per_token_loss whose shape differs from the mask's", "per_token_loss"),
        error_case("loss: one row of per_token_loss for two rows of mask", "aggregate_loss",
                   (loss[:1], mask, "sequence_mean"),
                   "a per_token_loss of shape [1, L] for a mask of shape [2, L] (NumPy would broadcast it)",
                   "per_token_loss"),
        error_case("loss: NaN on a response token", "aggregate_loss",
                   (np.where(mask, np.nan, 0.0), mask, "sequence_mean"), "a NaN loss on a response token",
                   "per_token_loss"),
    ]
    return cases


#: Which normaliser is which is the exercise: a sequence mean without the 1/B, or one mode's weights given
#: for another (a token mean taken per row is a sequence mean), caps the notebook at a third of its points.
CENTRAL = Central(
    "the normaliser of each mode (token_mean over the batch's tokens, sequence_mean 1 / (B * n_i))",
    {"sequence-mean-without-batch", "normalisers-mixed-up", "token-mean-per-row"},
    ("the open check: sequence_mean weights of two sequences of lengths 2 and 1",
     "the open check: token_mean loss of the same batch",
     "sequence_mean weights, a GRPO group of lengths 3, 5, 12, 20",
     "token_mean weights, a GRPO group of lengths 3, 5, 12, 20"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input (a stub that
#: raises ValueError on everything would otherwise collect them).
GATE = Gate(cases=("token_mean weights, a GRPO group of lengths 3, 5, 12, 20",
          "token_mean loss, a GRPO group of lengths 3, 5, 12, 20 (garbage in the padding)"))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=('the open check: sequence_mean weights of two sequences of lengths 2 and 1',),
         cases=(
             'sequence_mean weights, a GRPO group of lengths 3, 5, 12, 20',
             'sequence_mean weights, lengths 7, 1, 4 padded to 9',)),
    Gate(groups=("public",), needs="passed",
         only=('the open check: token_mean loss of the same batch',),
         cases=(
             'token_mean loss, a GRPO group of lengths 3, 5, 12, 20 (garbage in the padding)',
             'token_mean loss, five sequences, lists',)),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES)
