"""Hidden checks for exercise 17: ``masked_sequence_metrics(selected_logprobs, mask)``.

The answer returns an object with four per-response arrays: ``token_count``, ``sum_logprob``,
``mean_nll`` and ``perplexity``. The notebook gives a ``SequenceMetrics`` dataclass, but any object
with those fields is accepted: a dataclass or plain object (fields read by name), a dict with those
keys, or a namedtuple. The channel sends tuples as tuples, so a namedtuple (or a plain 4-tuple) is
read positionally in the seed's field order.

Inputs are ``[B, T]`` only. The reference also reads a 1-D ``[T]`` pair as a batch of one, but the
seed's task does not ask for it, so that is not graded. Masks are boolean or 0/1 integers, the types
the reference accepts.

Precision follows the task's wording: a float64 input must give float64-accurate metrics (float32
arithmetic inside is named as such), a float32 input may be worked in float32 and returned in either
precision. Denominators and sums over padding (the mask ignored) are the exercise's central mistake and
cap the notebook at a third of its autograded points.
"""

from __future__ import annotations

import math

import numpy as np

from autograder.channel import Call, ObjectData, RecordTuple
from autograder.checks.authoring import (
    CLIPPED_LOG, PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, clipped_logs, coding_groups,
    error_case, exercise_stem, field, judge_floats, mistakes_later, mistakes_part, redraw, shared as _shared, value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)
TARGET = "masked_sequence_metrics"
FIELDS = ("token_count", "sum_logprob", "mean_nll", "perplexity")

GROUPS = coding_groups(
    (2, "The notebook's open check: one response of three tokens, two of them active"),
    Group("batches", 3, "Random batches with prompt, response and padding: all four metrics per response"),
    Group("numerics", 2, "Padding holding NaN or -inf is ignored; perplexity survives long and unlikely responses"),
    validation=(2, "Rejects an empty response, mismatched shapes and non-finite active log-probabilities"),
)

# ----------------------------------------------------------------------------- misconceptions

COUNT_PADDING = _shared.PADDING_COUNTED
SUM_PADDING = Misconception(
    "sum-includes-padding",
    "sum_logprob adds log-probabilities outside the mask: only active response tokens belong to the sum.")
MEAN_OVER_PADDING = Misconception(
    "mean-over-padding",
    "mean_nll divides by the full row length: the mean runs over the active tokens only, so divide by "
    "each response's token_count.")
NLL_SIGN = Misconception(
    "nll-sign",
    "mean_nll has the wrong sign: it is the mean *negative* log-probability, so it is >= 0.")
NLL_BITS = Misconception(
    "nll-in-bits",
    "mean_nll is in bits (log base 2): keep natural logarithms, since the log-probabilities are natural logs.")
BATCH_MEAN = Misconception(
    "batch-mean",
    "One number for the whole batch: each metric is per response, an array with one entry per row.")
PPL_FROM_SUM = Misconception(
    "perplexity-from-sum",
    "Perplexity was computed from the sum: it is exp(mean_nll), the exponential of the per-token mean, "
    "so that it does not grow with the length of the response.")
PPL_SIGN = Misconception(
    "perplexity-sign",
    "Perplexity is exp(+mean_nll), which is >= 1; exp(-mean_nll) is the geometric-mean probability instead.")
PPL_BASE_2 = Misconception(
    "perplexity-base-2",
    "Perplexity mixes bases: with natural-log NLL it is exp(mean_nll); 2 ** x is only right when x is in bits.")
PPL_PRODUCT = Misconception(
    "perplexity-product-underflow",
    "Perplexity overflowed or underflowed: a product of many probabilities underflows to 0. Compute it as "
    "exp(mean_nll), from the sum of log-probabilities.")
NAN_PADDING = Misconception(
    "padding-poisons-result",
    "NaN appeared although every active log-probability is finite: padding positions may hold NaN or -inf, "
    "and NaN * 0 is NaN. Select active entries (np.where(mask, x, 0.0) or x[mask]) instead of multiplying by the mask.")


def read_fields(value) -> dict:
    """The four metrics from a returned object, dict or (named)tuple; :class:`Reject` otherwise."""
    if isinstance(value, (tuple, list)) and not isinstance(value, ObjectData):
        if len(value) != len(FIELDS):
            raise Reject("masked_sequence_metrics should return a SequenceMetrics object "
                         "(token_count, sum_logprob, mean_nll, perplexity)")
        return dict(zip(FIELDS, value))
    if not isinstance(value, (ObjectData, dict)):
        raise Reject("masked_sequence_metrics should return a SequenceMetrics object "
                     "(token_count, sum_logprob, mean_nll, perplexity)")
    return {name: field(value, name, "the returned metrics") for name in FIELDS}


def wrong_outputs(logprobs: np.ndarray, mask: np.ndarray) -> dict:
    """Per field, the outputs of the classic mistakes (trusted process)."""
    active = mask.astype(bool)
    length = active.shape[1]
    count = active.sum(axis=1)
    masked_sum = np.where(active, logprobs, 0.0).sum(axis=1)
    mean_nll = -masked_sum / count
    with np.errstate(all="ignore"):
        all_sum = logprobs.sum(axis=1)
        global_mean = -masked_sum.sum() / count.sum()
        wrong = {
            "token_count": [(np.full(count.shape, length), COUNT_PADDING)],
            "sum_logprob": [(all_sum, SUM_PADDING)],
            "mean_nll": [(-masked_sum / length, MEAN_OVER_PADDING), (-all_sum / length, MEAN_OVER_PADDING),
                         (masked_sum / count, NLL_SIGN), (mean_nll / math.log(2.0), NLL_BITS),
                         (np.array(global_mean), BATCH_MEAN)],
            "perplexity": [(np.exp(-masked_sum), PPL_FROM_SUM), (np.exp(masked_sum), PPL_FROM_SUM),
                           (np.exp(-mean_nll), PPL_SIGN), (2.0 ** mean_nll, PPL_BASE_2),
                           (np.exp(np.array(global_mean)), BATCH_MEAN)],
        }
    for clipped in clipped_logs(np.where(active, logprobs, 0.0)):
        clipped_sum = np.where(active, clipped, 0.0).sum(axis=1)
        wrong["sum_logprob"].append((clipped_sum, CLIPPED_LOG))
        wrong["mean_nll"].append((-clipped_sum / count, CLIPPED_LOG))
        with np.errstate(all="ignore"):
            wrong["perplexity"].append((np.exp(-clipped_sum / count), CLIPPED_LOG))
    # A mistake whose output overflows here is named by the case's overflow diagnosis instead: an
    # inf or NaN answer matches several mistakes at once, and the case knows which one it probes.
    return {name: [(output, mistake) for output, mistake in candidates if np.all(np.isfinite(output))]
            for name, candidates in wrong.items()}


NOT_SEQUENCE_METRICS = Misconception(
    "not-sequence-metrics",
    "masked_sequence_metrics should return a SequenceMetrics (the class defined in the notebook), whose "
    "fields are read as attributes (metrics.token_count, as the open check does); a dict or a plain tuple "
    "has no such attributes.")
LIST_NOT_ARRAY = _shared.LIST_NOT_ARRAY


def judge_form(value, batch_size: int) -> None:
    """The task's form of the result: a SequenceMetrics (an object with the four fields as attributes;
    a namedtuple also reads that way) whose fields are arrays of shape [B]; :class:`Reject` otherwise."""
    if not isinstance(value, (ObjectData, RecordTuple)):
        raise NOT_SEQUENCE_METRICS.reject()
    for name in FIELDS:
        item = field(value, name, "the returned metrics")
        if isinstance(item, (list, tuple)):
            raise LIST_NOT_ARRAY.reject()
        if not isinstance(item, np.ndarray) or item.shape != (batch_size,):
            # Neither the answer's shape nor its type's name: both are the answer's choice.
            raise Reject(f"{name} should be an array of shape [B] (one entry per response)"
                         + (", not an array of another shape" if isinstance(item, np.ndarray) else ", not an array"))


def _cases(name: str, group: str, logprobs, mask, *, parts: tuple, send=None, overflow=None,
           form: bool = False) -> list:
    """One case per entry of ``parts`` (each a tuple of field names judged in order); with ``form``, the
    result's type and its fields' types are judged first (:func:`judge_form`)."""
    x = np.asarray(logprobs, dtype=np.float64)
    mask_array = np.asarray(mask)
    metrics = reference.masked_sequence_metrics(logprobs, mask)
    expected = {name_: np.asarray(getattr(metrics, name_), dtype=np.float64) for name_ in FIELDS}
    wrong = mistakes_later(wrong_outputs, x, mask_array)
    float32_input = isinstance(logprobs, np.ndarray) and logprobs.dtype == np.float32
    call = Call(TARGET, send if send is not None else (logprobs, mask))
    overflow = overflow or {}

    def make_judge(fields: tuple):
        def judge(outcomes):
            returned = value_of(outcomes[0], TARGET)
            if form:
                judge_form(returned, x.shape[0])
            values = read_fields(returned)
            for field_name in fields:
                verdict = judge_floats(values[field_name], expected[field_name], field_name,
                                       wrong=mistakes_part(wrong, field_name), overflow=overflow.get(field_name),
                                       float32_input=float32_input, float32_work=True)
                if not verdict.passed:
                    return verdict
            return PASS
        return judge

    cases = []
    for fields in parts:
        label = name if len(parts) == 1 else f"{name}: {' and '.join(fields)}"
        cases.append(Case(label, group, (call,), make_judge(fields)))
    return cases


COUNTS = ("token_count", "sum_logprob")
MEANS = ("mean_nll", "perplexity")


def _error_case(name: str, args: tuple, problem: str, argument: str) -> Case:
    return error_case(name, TARGET, args, problem, argument, names=("ValueError",))  # the task: ValueError


def _batch(rng: np.random.Generator, batch: int, length: int, *, inactive: bool = True):
    """Log-probabilities of sampled tokens, and a mask of prompt (0), response (1, at least one), padding (0).

    With ``inactive`` the mask has an inactive position (drawn again until it does): counting, summing
    or averaging over padding, and a batch mean over rows of different lengths, must change the result.
    (The case of nested lists grades the input types and keeps whatever mask it draws.)"""
    if not inactive:
        return _draw_batch(rng, batch, length)
    return redraw(lambda: _draw_batch(rng, batch, length), lambda drawn: not drawn[1].all(),
                  "an inactive position in the mask")


def _draw_batch(rng: np.random.Generator, batch: int, length: int):
    logprobs = np.log(rng.uniform(0.02, 1.0, size=(batch, length)))
    mask = np.zeros((batch, length), dtype=np.int64)
    for row in range(batch):
        start = int(rng.integers(0, length))
        stop = int(rng.integers(start + 1, length + 1))
        mask[row, start:stop] = 1
    if batch > 1:
        mask[0, :] = 1  # one full row, so that the rows differ in length
    return logprobs, mask


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(1717))
    cases = _cases("the open check's response", "public", np.array([[-0.1, -0.2, -1.0]]), np.array([[0, 1, 1]]),
                   parts=(COUNTS, MEANS))

    for batch, length in [(2, 5), (4, 9), (3, 2), (1, 7)]:
        logprobs, mask = _batch(rng, batch, length)
        cases += _cases(f"B={batch}, T={length}", "batches", logprobs, mask, parts=(COUNTS, MEANS))
    logprobs, mask = _batch(rng, 3, 6)
    cases += _cases("a boolean mask", "batches", logprobs, mask.astype(bool), parts=(FIELDS,))
    logprobs, mask = _batch(rng, 2, 4, inactive=False)
    cases += _cases("nested lists instead of arrays", "batches", logprobs, mask, parts=(FIELDS,),
                    send=(logprobs.tolist(), mask.tolist()))
    logprobs, mask = _batch(rng, 3, 8)
    cases += _cases("float32 log-probabilities", "batches", logprobs.astype(np.float32), mask, parts=(FIELDS,))
    logprobs = np.log(rng.uniform(0.02, 1.0, size=(3, 1)))
    cases += _cases("one token per response", "batches", logprobs, np.ones((3, 1), dtype=np.int64), parts=(FIELDS,))
    # From a generator of its own, so that the other cases keep their inputs.
    logprobs, mask = _batch(np.random.default_rng(variant.seed(1718)), 3, 4)
    cases += _cases("a SequenceMetrics of four arrays of shape [B]", "batches", logprobs, mask, parts=(COUNTS,),
                    form=True)

    logprobs, mask = _batch(rng, 3, 7)
    nan_padding = np.where(mask.astype(bool), logprobs, np.nan)
    cases += _cases("NaN at every padding position", "numerics", nan_padding, mask, parts=(FIELDS,),
                    overflow={name: NAN_PADDING for name in FIELDS})
    logprobs, mask = _batch(rng, 2, 6)
    inf_padding = np.where(mask.astype(bool), logprobs, -np.inf)
    cases += _cases("-inf at every padding position", "numerics", inf_padding, mask, parts=(FIELDS,),
                    overflow={name: NAN_PADDING for name in FIELDS})
    long = np.log(rng.uniform(0.01, 0.2, size=(2, 3000)))
    long_mask = np.ones((2, 3000), dtype=np.int64)
    long_mask[1, 2500:] = 0
    cases += _cases("responses of 3000 tokens", "numerics", long, long_mask, parts=(FIELDS,),
                    overflow={"perplexity": PPL_PRODUCT})
    unlikely = -700.0 + rng.uniform(-0.5, 0.5, size=(2, 3))
    cases += _cases("very unlikely tokens (log-probabilities near -700)", "numerics", unlikely,
                    np.ones((2, 3), dtype=np.int64), parts=(FIELDS,), overflow={"perplexity": PPL_PRODUCT})

    logprobs, mask = _batch(rng, 3, 5)
    one_empty = mask.copy()
    one_empty[1, :] = 0
    nan_active = logprobs.copy()
    nan_active[0, 2] = np.nan
    inf_active = logprobs.copy()
    inf_active[0, 3] = -np.inf
    cases += [
        _error_case("one response with an empty mask", (logprobs, one_empty), "a response with no active token",
                    "mask"),
        _error_case("a single response with an empty mask", (logprobs[:1], np.zeros((1, 5), dtype=np.int64)),
                    "a response with no active token", "mask"),
        _error_case("a mask longer than the log-probabilities", (logprobs, np.ones((3, 6), dtype=np.int64)),
                    "selected_logprobs and mask of different shapes", "mask"),
        _error_case("NaN at an active position", (nan_active, mask), "an active log-probability that is NaN",
                    "selected_logprobs"),
        _error_case("-inf at an active position", (inf_active, mask), "an active log-probability that is -inf",
                    "selected_logprobs"),
    ]
    return cases


#: The mask decides every count and every denominator: counting, summing or averaging over padding caps
#: the notebook at a third of its autograded points.
CENTRAL = Central(
    "the mask (counts, sums and means run over the active tokens only)",
    {"padding-counted", "sum-includes-padding", "mean-over-padding"},
    ("B=2, T=5: token_count and sum_logprob", "B=2, T=5: mean_nll and perplexity",
     "B=4, T=9: token_count and sum_logprob", "B=4, T=9: mean_nll and perplexity"))

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
GATE = Gate(groups=("validation",), cases=(
    "B=2, T=5: token_count and sum_logprob",
    "B=4, T=9: token_count and sum_logprob",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("the open check's response: token_count and sum_logprob",),
         cases=(
             'B=2, T=5: token_count and sum_logprob',
             'B=4, T=9: token_count and sum_logprob',)),
    Gate(groups=("public",), needs="passed",
         only=("the open check's response: mean_nll and perplexity",),
         cases=(
             'B=2, T=5: mean_nll and perplexity',
             'B=4, T=9: mean_nll and perplexity',)),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES)
