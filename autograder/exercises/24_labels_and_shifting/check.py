"""Hidden checks for exercise 24: a causal-LM loss that shifts ``labels`` itself, the positions it
trains, and a diagnosis of the labels a caller passes to it.

Expected values come from :mod:`autograder.reference.further`; the classic mistakes (no shift, a shift
the other way, a sum or a per-row mean instead of the batch mean over targets, the mask not shifted)
are recognised from their outputs, with the shared keys of exercises 03 and 16.

diagnose_labels has a case where both rules hold ("ok" first), one where only the last column
separates double_shift from mismatch, and each validation rule. A loss that pairs at the same
position, shifts the wrong way or twice (or unshifted positions) caps the notebook at a third;
bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, bool_array, coding_groups,
    error_case, exercise_stem, judge_array, log_softmax, overflow_named, shared as _shared, value_of,
)
from autograder.reference import further

STEM = exercise_stem(__name__)
IGNORE = -100

GROUPS = coding_groups(
    1,
    Group("loss", 3, "causal_lm_loss: mean next-token NLL with the labels shifted inside"),
    Group("positions", 2, "loss_positions: which logits positions get a loss term (and so gradient)"),
    Group("diagnose", 1, "diagnose_labels: labels as given, already shifted, or neither"),
    validation=(1, "The functions reject bad shapes, labels outside the vocabulary and batches with no target"),
)

# The shift's mistakes are the same as in exercises 03 and 16: one key, one sentence.
NO_SHIFT = _shared.SAME_POSITION
WRONG_WAY = _shared.SHIFT_BACKWARDS
DOUBLE_SHIFT = _shared.DOUBLE_SHIFT
NO_MAX_SHIFT = _shared.NO_MAX_SHIFT
SUM_NOT_MEAN = Misconception(
    "loss-sum-not-mean",
    "This is the sum of the negative log-likelihoods: the loss is their mean over the targets that are not "
    "ignore_index.")
ROW_MEAN = Misconception(
    "mean-of-row-means",
    "Each row was averaged first, then the rows: transformers' loss averages over all targets of the batch at "
    "once, so a long row weighs more than a short one.")
IGNORED_COUNTED = Misconception(
    "ignored-counted",
    "Targets equal to ignore_index were counted in the mean's denominator: skip them entirely.")
MASK_UNSHIFTED = Misconception(
    "positions-unshifted",
    "These are the positions of the labels, not of the logits that are scored: position t gets a loss term "
    "when labels[:, t + 1] is not ignore_index (and the last position never does).")
MASK_WRONG_WAY = Misconception(
    "positions-shifted-backwards",
    "The positions were shifted the wrong way: the logits at t are scored against labels[:, t + 1].")
OK_NOT_FIRST = Misconception(
    "diagnosis-ok-not-first",
    "\"ok\" is tested first: labels that equal input_ids at the same position are fine, even when repeated "
    "tokens make them look shifted too.")
DOUBLE_SHIFT_LAST_COLUMN = Misconception(
    "diagnosis-last-column",
    "\"double_shift\" also needs the last column to hold only ignore_index: labels shifted by the caller have "
    "nothing to put there, so labels that match input_ids one position later but have a real last label are "
    "a \"mismatch\".")


def _loss_wrong(z, labels) -> list:
    log_p = log_softmax(z)
    wrong = []

    def nll(lp, targets):
        counted = targets != IGNORE
        if not counted.any() or targets[counted].max() >= z.shape[2] or targets[counted].min() < 0:
            return None
        picked = np.take_along_axis(lp, np.where(counted, targets, 0)[..., None], axis=-1)[..., 0]
        return picked, counted

    # same-position pairing over every position, or trimmed at either end to L - 1 pairs
    for same in (nll(log_p, labels), nll(log_p[:, :-1], labels[:, :-1]), nll(log_p[:, 1:], labels[:, 1:])):
        if same is not None:
            wrong.append((float(-same[0][same[1]].mean()), NO_SHIFT))
    back = nll(log_p[:, 1:], labels[:, :-1])
    if back is not None:
        wrong.append((float(-back[0][back[1]].mean()), WRONG_WAY))
    twice = nll(log_p[:, :-2], labels[:, 2:]) if labels.shape[1] > 2 else None
    if twice is not None:
        wrong.append((float(-twice[0][twice[1]].mean()), DOUBLE_SHIFT))
    right = nll(log_p[:, :-1], labels[:, 1:])
    if right is not None:
        picked, counted = right
        wrong.append((float(-picked[counted].sum()), SUM_NOT_MEAN))
        rows = [float(-picked[b][counted[b]].mean()) for b in range(labels.shape[0]) if counted[b].any()]
        wrong.append((float(np.mean(rows)), ROW_MEAN))
        wrong.append((float(-picked[counted].sum() / counted.size), IGNORED_COUNTED))
    return wrong


def _loss_case(name, z, labels, *, as_lists=False, group="loss", large=False):
    """``large``: the logits overflow a naive exp; the case also calls the loss on the same logits moved
    down by their maximum (the loss is unchanged) to tell a missing max shift from other mistakes."""
    expected = further.causal_lm_loss(z, labels, IGNORE)
    args = (z.tolist(), labels.tolist()) if as_lists else (z, labels)
    judge = judge_array("causal_lm_loss", expected, "the loss", wrong=_loss_wrong(z, labels))
    if not large:
        return Case(f"loss, {name}", group, (Call("causal_lm_loss", args),), judge)
    calls = (Call("causal_lm_loss", args), Call("causal_lm_loss", (z - z.max(), labels)))
    return Case(f"loss, {name}", group, calls, overflow_named(judge, NO_MAX_SHIFT))


def _judge_positions(labels, ignore_index):
    expected = further.loss_positions(labels, ignore_index)
    unshifted = labels != ignore_index
    unshifted_trimmed = unshifted.copy()
    unshifted_trimmed[:, -1] = False  # the label positions, with the last one dropped because it has no logits after it
    backwards = np.zeros(labels.shape, dtype=bool)
    backwards[:, 1:] = labels[:, :-1] != ignore_index

    def judge(outcomes):
        value = value_of(outcomes[0], "loss_positions")
        actual = bool_array(value, "the positions", shape=expected.shape)
        if np.array_equal(actual, expected):
            return PASS
        if np.array_equal(actual, unshifted) or np.array_equal(actual, unshifted_trimmed):
            return Verdict(False, MASK_UNSHIFTED.sentence, MASK_UNSHIFTED.key)
        if np.array_equal(actual, backwards):
            return Verdict(False, MASK_WRONG_WAY.sentence, MASK_WRONG_WAY.key)
        return Verdict(False, "the positions are not correct for these labels")

    return judge


def _positions_case(name, labels, ignore_index=IGNORE, *, group="positions"):
    kwargs = {} if ignore_index == IGNORE else {"ignore_index": ignore_index}
    return Case(f"positions, {name}", group, (Call("loss_positions", (labels,), kwargs),),
                _judge_positions(labels, ignore_index))


def _judge_diagnosis(expected):
    def judge(outcomes):
        value = value_of(outcomes[0], "diagnose_labels")
        if not isinstance(value, str):
            raise Reject(f"diagnose_labels should return one of {list(further.LABEL_DIAGNOSES)}")
        if value not in further.LABEL_DIAGNOSES:
            raise Reject(f"diagnose_labels should return one of {list(further.LABEL_DIAGNOSES)}, not another string")
        if value == expected:
            return PASS
        if (expected, value) == ("ok", "double_shift"):
            return Verdict(False, OK_NOT_FIRST.sentence, OK_NOT_FIRST.key)
        if (expected, value) == ("mismatch", "double_shift"):
            return Verdict(False, DOUBLE_SHIFT_LAST_COLUMN.sentence, DOUBLE_SHIFT_LAST_COLUMN.key)
        return Verdict(False, "the diagnosis is not right for these labels")

    return judge


def _diagnose_case(name, ids, labels):
    expected = further.diagnose_labels(ids, labels, IGNORE)
    return Case(f"diagnosis, {name}", "diagnose", (Call("diagnose_labels", (ids, labels)),), _judge_diagnosis(expected))


def _batch(rng, batch, length, vocab, prompt):
    """Ids, logits and the labels of a prompt-masked batch (prompt labels ignored)."""
    ids = rng.integers(0, vocab, size=(batch, length))
    z = rng.normal(scale=2.0, size=(batch, length, vocab))
    labels = ids.copy()
    labels[:, :prompt] = IGNORE
    return ids, z, labels


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    cases = []
    rng = np.random.default_rng(variant.seed(24))

    # --- public: the notebook's open checks
    z = np.zeros((1, 4, 5))
    labels = np.array([[IGNORE, IGNORE, 3, 1]])
    cases.append(_loss_case("the open check: uniform logits over 5 tokens", z, labels, group="public"))
    cases.append(_positions_case("the open check: a prompt of two tokens", labels, group="public"))

    # --- loss
    ids, z, labels = _batch(rng, 3, 7, 6, 3)
    cases.append(_loss_case("a [3, 7] batch with a 3-token prompt", z, labels))
    ids, z, labels = _batch(rng, 4, 9, 11, 2)
    labels[1, 5:] = IGNORE  # right padding
    labels[3, 3:] = IGNORE
    cases.append(_loss_case("rows with different numbers of targets (padding ignored)", z, labels))
    ids, z, labels = _batch(rng, 1, 5, 4, 0)
    cases.append(_loss_case("no prompt: every next token is a target", z, labels))
    ids, z, labels = _batch(rng, 2, 6, 150, 2)
    cases.append(_loss_case("a vocabulary of 150 tokens (ignore_index -100 is not a valid id to pick)", z, labels))
    ids, z, labels = _batch(rng, 2, 5, 7, 1)
    cases.append(_loss_case("logits of order 1e3", z + 1000.0, labels, large=True))
    ids, z, labels = _batch(rng, 2, 4, 5, 1)
    cases.append(_loss_case("inputs given as lists", z, labels, as_lists=True))

    # --- positions
    _, _, labels = _batch(rng, 3, 8, 9, 3)
    labels[2, 6:] = IGNORE
    cases.append(_positions_case("prompt masked and one padded row", labels))
    multi = np.array([[IGNORE, 4, 5, IGNORE, IGNORE, 7, 8, IGNORE]])  # two assistant turns
    cases.append(_positions_case("two assistant turns with a user turn between", multi))
    cases.append(_positions_case("a custom ignore_index of -1", np.array([[-1, -1, 2, 3], [-1, 5, 6, -1]]), -1))
    cases.append(_positions_case("no ignored label at all", np.array([[1, 2, 3], [4, 5, 6]])))

    # --- diagnose
    ids = np.array([[11, 12, 13, 14, 15, 16], [21, 22, 23, 24, 25, 26]])
    ok = np.where(np.arange(6) < 2, IGNORE, ids)
    double = np.full(ids.shape, IGNORE)
    double[:, 1:-1] = ids[:, 2:]
    wrong = ok.copy()
    wrong[1, 4] = 99
    cases += [_diagnose_case("labels as given", ids, ok),
              _diagnose_case("labels already shifted by the caller", ids, double),
              _diagnose_case("one label differs from every input", ids, wrong)]
    repeats = np.array([[5, 5, 5, 5, 7]])
    cases.append(_diagnose_case("repeated tokens", repeats, np.array([[IGNORE, 5, 5, 5, 7]])))
    # Both rules hold here (a run of one token, last column ignored): "ok" is tested first.
    cases.append(_diagnose_case("repeated tokens: both rules hold, ok takes precedence", np.array([[5, 5, 5, 5]]),
                                np.array([[IGNORE, 5, 5, IGNORE]])))
    # Shifted by the caller, but the last column holds a real token (a pad id): not a double shift.
    cases.append(_diagnose_case("shifted labels with a real last label", np.array([[11, 12, 13, 14], [21, 22, 23, 24]]),
                                np.array([[12, 13, 14, 0], [IGNORE, 23, 24, 0]])))

    # --- validation
    ids, z, labels = _batch(rng, 2, 5, 6, 2)
    out_of_vocab = labels.copy()
    out_of_vocab[0, 4] = 6
    negative = labels.copy()
    negative[1, 3] = -2
    cases += [
        error_case("loss: labels of another shape", "causal_lm_loss", (z, labels[:, :4]),
                   "labels whose shape is not logits.shape[:2]", "labels"),
        error_case("loss: a label outside the vocabulary", "causal_lm_loss", (z, out_of_vocab),
                   "a label equal to the vocabulary size", "labels"),
        error_case("loss: a negative label that is not ignore_index", "causal_lm_loss", (z, negative),
                   "a counted label of -2 (not ignore_index, not a token id)", "labels"),
        error_case("loss: every target ignored", "causal_lm_loss", (z, np.full(labels.shape, IGNORE)),
                   "labels that are all ignore_index", "labels"),
        error_case("positions: a 1-D labels array", "loss_positions", (labels[0],), "a 1-D labels array", "labels"),
        error_case("diagnosis: input_ids and labels of different shapes", "diagnose_labels", (ids[:, :4], labels),
                   "input_ids and labels of different shapes", "labels"),
        error_case("diagnosis: one row of input_ids for two rows of labels", "diagnose_labels", (ids[:1], labels),
                   "input_ids of shape [1, L] for labels of shape [2, L] (NumPy would broadcast them)", "input_ids"),
        error_case("diagnosis: 1-D input_ids and labels", "diagnose_labels", (ids[0], labels[0]),
                   "1-D input_ids and labels", "labels"),
        error_case("diagnosis: rows of one position", "diagnose_labels", (ids[:, :1], np.array([[3], [4]])),
                   "labels of shape [B, 1] (L < 2)", "labels"),
        error_case("diagnosis: every label ignore_index", "diagnose_labels", (ids, np.full(ids.shape, IGNORE)),
                   "labels that are all ignore_index", "labels"),
    ]
    return cases


#: The shift is the exercise: a loss that pairs logits and labels at the same position, shifts the wrong way
#: or shifts twice (or positions that are not shifted) caps the notebook at a third of its autograded points.
CENTRAL = Central(
    "the shift inside the loss (logits at t against labels[:, t + 1], labels passed unshifted)",
    {"same-position", "shift-backwards", "double-shift", "positions-unshifted", "positions-shifted-backwards"},
    ("loss, a [3, 7] batch with a 3-token prompt",
     "loss, rows with different numbers of targets (padding ignored)",
     "positions, the open check: a prompt of two tokens", "positions, prompt masked and one padded row"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input (a stub that
#: raises ValueError on everything would otherwise collect them).
#: (The diagnosis case's answer is not "ok", the open check's: a constant "ok" shows no work.)
GATE = Gate(cases=("loss, a [3, 7] batch with a 3-token prompt", "positions, prompt masked and one padded row",
          "diagnosis, one label differs from every input"))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=('loss, the open check: uniform logits over 5 tokens',),
         cases=(
             'loss, a [3, 7] batch with a 3-token prompt',
             'loss, rows with different numbers of targets (padding ignored)',)),
    Gate(groups=("public",), needs="passed",
         only=('positions, the open check: a prompt of two tokens',),
         cases=(
             'positions, prompt masked and one padded row',
             'positions, two assistant turns with a user turn between',)),
)

#: A diagnosis that ignores its input is right wherever the answer happens to be its constant: "ok" alone
#: passed three of the six cases (0.5 of 1). Each answer's cases count only when the same function also
#: gets a case whose answer is another one right, so no constant earns a point in the group.
_CONSTANT = ("a diagnosis must tell labels apart: the cases with this answer count only when the function "
             "also gets right a hidden case whose answer is another")
CONSTANT_GATES = (
    Gate(groups=("diagnose",), needs="passed", why=_CONSTANT,
         only=("diagnosis, labels as given", "diagnosis, repeated tokens",
               "diagnosis, repeated tokens: both rules hold, ok takes precedence"),
         cases=("diagnosis, one label differs from every input",)),
    Gate(groups=("diagnose",), needs="passed", why=_CONSTANT,
         only=("diagnosis, labels already shifted by the caller", "diagnosis, one label differs from every input",
               "diagnosis, shifted labels with a real last label"),
         cases=("diagnosis, labels as given",)),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + CONSTANT_GATES)
