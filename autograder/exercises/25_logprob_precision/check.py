"""Hidden checks for exercise 25: bfloat16 rounding, log-probs at a stated precision, the ratio error it
puts between a bf16 trainer and an fp32 sampler, and the rounding bound.

Expected values come from :mod:`autograder.reference.precision`. A bf16 log-prob computed in float32
and then rounded can land on either neighbour when the float32 value sits within float32 error of a
rounding boundary, so bf16 outputs are judged entry by entry against the rounding of an interval
``[x - delta, x + delta]`` around the exact value (rounding is monotone, so every value between the two
roundings is one that some correct float32 computation could give). ``delta`` is many float32 ulps and
a tiny fraction of a bf16 ulp, so truncating or rounding at another place still fails on most entries.

The classic mistakes are recognised from their outputs: truncation, float16 instead of bfloat16, a
significand of 7 bits, ties away from zero, the probabilities rounded instead of the log-probs, the
logits or the output left unrounded, the ratio inverted or minus one, the relative bound or the whole
spacing given for the absolute half-spacing. Rounding the wrong way or at the wrong place caps the
notebook at a third; bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, close, coding_groups, error_case,
    exercise_stem, float_array, judge_key, not_correct, redraw, shared as _shared, value_of,
)
from autograder.reference import precision
from autograder.reference.softmax import stable_log_softmax

STEM = exercise_stem(__name__)
BOUND_KEYS = ("logprob", "ratio")

GROUPS = coding_groups(
    1,
    Group("rounding", 2, "round_to_bfloat16: nearest bfloat16, ties to even"),
    Group("logprobs", 2, "logprobs_at_precision: bf16 logits, output kept in float32 or rounded to bfloat16"),
    Group("ratios", 1, "precision_ratios: trainer (bf16) over sampler (float32), per vocabulary entry"),
    Group("bounds", 1, "bf16_error_bounds: the half-spacing of a log-prob and the ratio error it allows"),
    validation=(1, "The functions reject NaN, an unknown precision, 0-d logits and positive log-probs"),
)

TRUNCATED = Misconception(
    "truncated-not-nearest",
    "The values were truncated (the low bits dropped, rounding toward zero): bfloat16 conversion rounds to "
    "the nearest value, ties to the even significand, so the error is at most half a spacing, not a whole one.")
FLOAT16 = Misconception(
    "float16-not-bfloat16",
    "These are float16 values (np.float16: 11 significand bits, 5 exponent bits). bfloat16 keeps float32's "
    "8 exponent bits and only 8 significand bits, so its values are coarser.")
SEVEN_BITS = Misconception(
    "seven-significand-bits",
    "The grid is twice too coarse: bfloat16 stores 7 significand bits plus the implicit leading 1, so "
    "8 bits in all; at a value in [2^e, 2^(e+1)) the spacing is 2^(e-7).")
TIES_AWAY = Misconception(
    "ties-away-not-even",
    "A value exactly halfway between two bfloat16 values went away from zero (or always up): IEEE "
    "round-to-nearest sends a tie to the neighbour whose last significand bit is 0 (np.rint does this).")
ROUNDED_PROBABILITIES = Misconception(
    "rounded-probabilities",
    "The probabilities were rounded to bfloat16 and their log taken: a bf16 log_softmax rounds the "
    "log-probabilities themselves (computed in float32), so the error is absolute in log space and grows "
    "with |log p|, not relative to p.")
OUTPUT_NOT_ROUNDED = Misconception(
    "bf16-output-not-rounded",
    "For \"bfloat16\" the output was left in float32: F.log_softmax of a bf16 tensor computes in float32 "
    "and returns bf16, so the log-probs are rounded to bfloat16 at the end.")
OUTPUT_ROUNDED_FOR_FP32 = Misconception(
    "fp32-output-rounded",
    "For \"float32\" the output was rounded to bfloat16: the float32 path (vLLM's compute_logprobs) keeps "
    "the log-softmax in float32; only the logits are bf16.")
LOGITS_NOT_ROUNDED = Misconception(
    "logits-not-rounded",
    "The logits were used as given: the model emits bf16 logits, so round them to bfloat16 first, for "
    "both precisions (the sampler and the trainer see the same bf16 logits).")
#: The shared sentence (exercises 05, 18): trainer over sampler is p over q for tokens sampled from q.
RATIO_INVERTED = _shared.RATIO_INVERTED
RATIO_MINUS_ONE = Misconception(
    "ratio-minus-one",
    "This is the ratio minus 1 (its error), not the ratio: return exp(lp_bf16 - lp_fp32), which is 1 "
    "where the two agree.")
LOG_RATIO = Misconception(
    "ratio-returned-as-log",
    "This is the log-ratio lp_bf16 - lp_fp32: the ratio is its exponential.")
RELATIVE_BOUND = Misconception(
    "relative-not-absolute",
    "This is a relative bound (2^-8, bfloat16's unit roundoff): the log-prob's error is absolute, half the "
    "grid spacing at x, and so grows with |x|.")
SCALED_RELATIVE = Misconception(
    "scaled-relative-bound",
    "This is |x| times 2^-8, a valid but loose bound: the tight one is half the spacing of the grid at x, "
    "2^(floor(log2|x|) - 8), a power of two.")
WHOLE_SPACING = Misconception(
    "spacing-not-half",
    "This is the whole spacing of the grid at x: round to nearest moves a value by at most half of it.")
RATIO_NOT_EXPONENTIATED = Misconception(
    "ratio-bound-not-exponentiated",
    "The ratio bound is the log-prob bound h itself: the ratio exp(bf16(x) - x) can reach exp(h), so "
    "|r - 1| <= exp(h) - 1 (slightly more than h).")
RATIO_LOWER_SIDE = Misconception(
    "ratio-bound-lower-side",
    "This is 1 - exp(-h), the ratio's distance from 1 on the low side: the larger one is exp(h) - 1.")

#: The rounding of a float32 computation can differ from the exact value's by a float32 error; this much
#: around the exact log-prob is accepted (about 80 float32 ulps, 1/400 of a bf16 spacing at magnitude 1).
DELTA_RTOL = 1e-5


# ----------------------------------------------------------------------------- the roundings


def _ties_away(x: np.ndarray) -> np.ndarray:
    exp = precision._spacing_exponent(x)
    scaled = np.ldexp(x, -exp)
    return np.ldexp(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), exp)


def _truncate(x: np.ndarray) -> np.ndarray:
    exp = precision._spacing_exponent(x)
    return np.ldexp(np.trunc(np.ldexp(x, -exp)), exp)


def _seven_bits(x: np.ndarray) -> np.ndarray:
    exp = precision._spacing_exponent(x) + 1
    return np.ldexp(np.rint(np.ldexp(x, -exp)), exp)


def _float16(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def _within(actual: np.ndarray, exact: np.ndarray, rounding) -> bool:
    """Every entry lies between the roundings of ``exact -+ delta`` (the interval a correct float32
    computation followed by ``rounding`` can land in)."""
    delta = DELTA_RTOL * (1.0 + np.abs(exact))
    low, high = rounding(exact - delta), rounding(exact + delta)
    return bool(np.all((actual >= low) & (actual <= high)))


def _judge_rounded(function, exact, what, *, rounded_wrong=(), exact_wrong=(), call=0):
    """A judge for bf16 values: each entry a rounding (nearest, ties to even) of a float32 value close to
    ``exact``. ``rounded_wrong``: ``(rounding, Misconception)`` applied to the same interval;
    ``exact_wrong``: ``(output, Misconception)`` of mistakes compared at float32 tolerance."""
    exact = np.asarray(exact, dtype=np.float64)

    def judge(outcomes):
        actual = float_array(value_of(outcomes[call], function), what, shape=exact.shape)
        if _within(actual, exact, precision._round):
            return PASS
        for rounding, misconception in rounded_wrong:
            if _within(actual, exact, rounding):
                return Verdict(False, misconception.sentence, misconception.key)
        for output, misconception in exact_wrong:
            if close(actual, output, rtol=DELTA_RTOL, atol=DELTA_RTOL):
                return Verdict(False, misconception.sentence, misconception.key)
        return Verdict(False, not_correct(what))

    return judge


# ----------------------------------------------------------------------------- the cases


def _rounding_case(name, x, *, group="rounding", as_list=False):
    x = np.asarray(x, dtype=np.float64)
    expected = precision.round_to_bfloat16(x)
    wrong = [(_truncate(x), TRUNCATED), (_float16(x), FLOAT16), (_seven_bits(x), SEVEN_BITS),
             (_ties_away(x), TIES_AWAY)]
    # A mistake that gives the right values on this input is not that mistake here.
    wrong = [(output, key) for output, key in wrong if not np.array_equal(output, expected)]

    def judge(outcomes):
        actual = float_array(value_of(outcomes[0], "round_to_bfloat16"), "the rounded values", shape=x.shape)
        if np.array_equal(actual, expected):
            return PASS
        for output, misconception in wrong:
            if np.array_equal(actual, output):
                return Verdict(False, misconception.sentence, misconception.key)
        return Verdict(False, not_correct("the rounded values"))

    args = (x.tolist(),) if as_list else (x,)
    return Case(f"rounding, {name}", group, (Call("round_to_bfloat16", args),), judge)


def _logprob_wrongs(z: np.ndarray, precision_name: str):
    """The mistakes' outputs for logprobs_at_precision on logits z: ``[(output, Misconception)]`` for
    "float32", ``(rounded_wrong, exact_wrong)`` for "bfloat16" (see :func:`_judge_rounded`)."""
    zb = precision._round(z)
    exact = stable_log_softmax(zb, axis=-1)
    unrounded_logits = stable_log_softmax(z, axis=-1)
    if precision_name == "float32":
        return [(precision._round(exact), OUTPUT_ROUNDED_FOR_FP32), (unrounded_logits, LOGITS_NOT_ROUNDED)]
    with np.errstate(divide="ignore"):
        probabilities = precision._round(np.exp(exact))
        rounded_p = np.log(probabilities)
    return ([(_truncate, TRUNCATED), (_float16, FLOAT16)],
            [(exact, OUTPUT_NOT_ROUNDED), (precision._round(unrounded_logits), LOGITS_NOT_ROUNDED),
             (rounded_p, ROUNDED_PROBABILITIES)])


def _logprobs_case(name, z, precision_name, *, group="logprobs", as_list=False):
    z = np.asarray(z, dtype=np.float64)
    expected = precision.logprobs_at_precision(z, precision_name)
    args = (z.tolist() if as_list else z, precision_name)
    call = Call("logprobs_at_precision", args)
    if precision_name == "float32":
        wrong = _logprob_wrongs(z, "float32")

        def judge(outcomes):
            actual = float_array(value_of(outcomes[0], "logprobs_at_precision"), "the log-probabilities",
                                 shape=expected.shape)
            if close(actual, expected, rtol=DELTA_RTOL, atol=DELTA_RTOL):
                return PASS
            for output, misconception in wrong:
                if close(actual, output, rtol=DELTA_RTOL, atol=DELTA_RTOL):
                    return Verdict(False, misconception.sentence, misconception.key)
            return Verdict(False, not_correct("the log-probabilities"))

        return Case(f"log-probs, {name}", group, (call,), judge)
    rounded_wrong, exact_wrong = _logprob_wrongs(z, "bfloat16")
    exact = precision.logprobs_at_precision(z, "float32")
    judge = _judge_rounded("logprobs_at_precision", exact, "the log-probabilities", rounded_wrong=rounded_wrong,
                           exact_wrong=exact_wrong)
    return Case(f"log-probs, {name}", group, (call,), judge)


def _ratios_case(name, z, *, group="ratios"):
    z = np.asarray(z, dtype=np.float64)
    exact = precision.logprobs_at_precision(z, "float32")
    expected = precision.precision_ratios(z)

    def judge(outcomes):
        actual = float_array(value_of(outcomes[0], "precision_ratios"), "the ratios", shape=expected.shape)
        # log r + lp_fp32 must be a correct bf16 log-prob (either neighbour near a boundary), give or take
        # the float32 error of both log-probs.
        delta = DELTA_RTOL * (1.0 + np.abs(exact))
        low = precision._round(exact - delta) - exact - delta
        high = precision._round(exact + delta) - exact + delta
        with np.errstate(divide="ignore", invalid="ignore"):
            log_actual = np.where(actual > 0, np.log(np.where(actual > 0, actual, 1.0)), -np.inf)
        if np.all((log_actual >= low) & (log_actual <= high)):
            return PASS
        for output, misconception in ((1.0 / expected, RATIO_INVERTED), (expected - 1.0, RATIO_MINUS_ONE),
                                      (np.log(expected), LOG_RATIO)):
            if close(actual, output, rtol=1e-4, atol=1e-6):
                return Verdict(False, misconception.sentence, misconception.key)
        return Verdict(False, not_correct("the ratios"))

    return Case(f"ratios, {name}", group, (Call("precision_ratios", (z,)),), judge)


def _bounds_cases(name, log_probs, *, group="bounds"):
    x = np.asarray(log_probs, dtype=np.float64)
    expected = precision.bf16_error_bounds(x)
    h = expected["logprob"]
    call = (Call("bf16_error_bounds", (x,)),)
    logprob_wrong = [(np.where(x == 0, 0.0, np.full(x.shape, 2.0 ** -8)), RELATIVE_BOUND),
                     (np.abs(x) * 2.0 ** -8, SCALED_RELATIVE), (2 * h, WHOLE_SPACING)]
    ratio_wrong = [(h, RATIO_NOT_EXPONENTIATED), (-np.expm1(-h), RATIO_LOWER_SIDE),
                   (np.expm1(2 * h), WHOLE_SPACING), (np.expm1(np.abs(x) * 2.0 ** -8), SCALED_RELATIVE)]
    return [Case(f"bounds, {name}: the log-prob bound", group, call,
                 judge_key("bf16_error_bounds", "logprob", expected, BOUND_KEYS, wrong=logprob_wrong)),
            Case(f"bounds, {name}: the ratio bound", group, call,
                 judge_key("bf16_error_bounds", "ratio", expected, BOUND_KEYS, wrong=ratio_wrong))]


def _float32_logits(rng, shape, scale):
    """Logits that are float32 values (as a bf16 model's logits become when upcast), not bf16 ones."""
    return rng.normal(scale=scale, size=shape).astype(np.float32).astype(np.float64)


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    cases = []
    rng = np.random.default_rng(variant.seed(25))

    # --- public: the notebook's open checks
    cases.append(_rounding_case("the open check: two ties, a value near -10 and one near 256",
                                [1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -10.03, 255.9], group="public"))
    cases.append(_logprobs_case("the open check: four equal logits, bfloat16", np.zeros(4), "bfloat16",
                                group="public"))
    cases.append(_ratios_case("the open check: four equal logits", np.zeros(4), group="public"))
    cases += _bounds_cases("the open check: -10, -1 and 0", [-10.0, -1.0, 0.0], group="public")[:1]

    # --- rounding
    cases.append(_rounding_case("float32 values of magnitude 1e-3 to 1e3",
                                (rng.normal(size=400) * 10.0 ** rng.uniform(-3, 3, size=400)).astype(np.float32)))
    ties = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3 + 2.0 ** -7, 3 + 3 * 2.0 ** -7, 100.25, 101.75, 0.0])
    cases.append(_rounding_case("values halfway between two bfloat16 neighbours, both signs",
                                np.concatenate([ties, -ties])))
    cases.append(_rounding_case("log-prob-like values from -0.01 to -60, in a [4, 50] array",
                                -np.exp(rng.uniform(np.log(0.01), np.log(60.0), size=(4, 50))).astype(np.float32)))
    cases.append(_rounding_case("values that round up to the next power of two",
                                [255.9, -255.9, 7.99, -0.12495, 1.9961]))
    cases.append(_rounding_case("a list of float32 values", rng.normal(scale=5.0, size=30).astype(np.float32),
                                as_list=True))
    cases.append(_rounding_case("large and small magnitudes (1e30, 1e-30)",
                                np.array([1e30, -3.3e35, 1.7e-30, -2.5e-25, 6.0e20], dtype=np.float32)))

    # --- log-probs
    z = _float32_logits(rng, (3, 200), 3.0)
    cases.append(_logprobs_case("a [3, 200] batch of float32 logits, bfloat16", z, "bfloat16"))
    cases.append(_logprobs_case("the same batch, float32", z, "float32"))
    wide = _float32_logits(rng, 2000, 4.0)
    cases.append(_logprobs_case("a vocabulary of 2,000 with log-probs down to about -40, bfloat16", wide, "bfloat16"))
    # Drawn again until every logit lies in [512, 1024), where the bf16 spacing is the 4 the name says.
    near_1e3 = redraw(lambda: 1000.0 + _float32_logits(rng, (2, 50), 6.0),
                      lambda z: bool(np.all((z >= 512.0) & (z < 1024.0))), "every logit in [512, 1024)")
    cases.append(_logprobs_case("logits of order 1e3 (bf16 spacing 4 there), bfloat16", near_1e3, "bfloat16"))
    cases.append(_logprobs_case("logits of order 1e3, float32", 1000.0 + _float32_logits(rng, (2, 50), 6.0),
                                "float32"))
    cases.append(_logprobs_case("a [2, 3, 64] batch given as lists, bfloat16", _float32_logits(rng, (2, 3, 64), 2.0),
                                "bfloat16", as_list=True))

    # --- ratios
    cases.append(_ratios_case("a vocabulary of 5,000", _float32_logits(rng, 5000, 3.0)))
    cases.append(_ratios_case("a [4, 300] batch", _float32_logits(rng, (4, 300), 2.5)))

    # --- bounds
    cases += _bounds_cases("log-probs from -1e-3 to -100, powers of two among them",
                           [-1e-3, -0.3, -1.0, -1.5, -7.99, -8.0, -10.0, -20.0, -33.0, -64.0, -100.5, 0.0])
    cases += _bounds_cases("a [3, 40] array", -np.exp(rng.uniform(np.log(1e-4), np.log(90.0), size=(3, 40))))

    # --- validation
    z = _float32_logits(rng, (2, 8), 2.0)
    nan_logits = z.copy()
    nan_logits[1, 3] = np.nan
    cases += [
        error_case("rounding: NaN", "round_to_bfloat16", (np.array([1.0, np.nan]),), "x holding NaN", "x"),
        error_case("log-probs: the precision \"bf16\"", "logprobs_at_precision", (z, "bf16"),
                   "a precision that is not \"float32\" or \"bfloat16\"", "precision"),
        error_case("log-probs: the precision \"float16\"", "logprobs_at_precision", (z, "float16"),
                   "a precision that is not \"float32\" or \"bfloat16\"", "precision"),
        error_case("log-probs: NaN logits", "logprobs_at_precision", (nan_logits, "bfloat16"),
                   "logits holding NaN", "logits"),
        error_case("log-probs: 0-d logits", "logprobs_at_precision", (np.float64(1.5), "float32"),
                   "0-d logits (no vocabulary axis)", "logits"),
        error_case("ratios: NaN logits", "precision_ratios", (nan_logits,), "logits holding NaN", "logits"),
        error_case("bounds: a positive log-prob", "bf16_error_bounds", (np.array([-1.0, 0.5]),),
                   "a log-prob above 0", "log_probs"),
        error_case("bounds: NaN", "bf16_error_bounds", (np.array([np.nan, -2.0]),), "a log-prob that is NaN",
                   "log_probs"),
    ]
    return cases


#: Where and how the rounding happens is the exercise: truncating, float16, or rounding the probabilities
#: (or leaving the bf16 output unrounded) caps the notebook at a third of its autograded points.
CENTRAL = Central(
    "bfloat16 rounding to nearest (ties to even) applied to the log-probs, computed in float32 from bf16 logits",
    {"truncated-not-nearest", "float16-not-bfloat16", "seven-significand-bits", "rounded-probabilities",
     "bf16-output-not-rounded"},
    ("rounding, float32 values of magnitude 1e-3 to 1e3",
     "rounding, log-prob-like values from -0.01 to -60, in a [4, 50] array",
     "log-probs, a [3, 200] batch of float32 logits, bfloat16",
     "log-probs, a vocabulary of 2,000 with log-probs down to about -40, bfloat16"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input.
GATE = Gate(cases=("rounding, float32 values of magnitude 1e-3 to 1e3",
                   "log-probs, a [3, 200] batch of float32 logits, bfloat16",
                   "ratios, a [4, 300] batch",
                   "bounds, a [3, 40] array: the log-prob bound"))

#: The open check is a hint, the hidden cases are the evidence (see exercise 24).
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("rounding, the open check: two ties, a value near -10 and one near 256",),
         cases=("rounding, float32 values of magnitude 1e-3 to 1e3",
                "rounding, values halfway between two bfloat16 neighbours, both signs")),
    Gate(groups=("public",), needs="passed",
         only=("log-probs, the open check: four equal logits, bfloat16",),
         cases=("log-probs, a [3, 200] batch of float32 logits, bfloat16",
                "log-probs, the same batch, float32")),
    Gate(groups=("public",), needs="passed",
         only=("ratios, the open check: four equal logits",),
         cases=("ratios, a vocabulary of 5,000",)),
    Gate(groups=("public",), needs="passed",
         only=("bounds, the open check: -10, -1 and 0: the log-prob bound",),
         cases=("bounds, log-probs from -1e-3 to -100, powers of two among them: the log-prob bound",
                "bounds, a [3, 40] array: the log-prob bound")),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES)
