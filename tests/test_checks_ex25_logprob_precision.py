"""The hidden checks of exercise 25 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests

STEM = "25_logprob_precision"

# A student's answer in the notebook's style: frexp, rint, ldexp; the @NAME@ markers are where the mistakes go.
ANSWER = """
import numpy as np

def round_to_bfloat16(x):
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite")
    _, e = np.frexp(x)
    step = np.maximum(e - 8, -133)
    @ROUND@

def logprobs_at_precision(logits, precision):
    if precision not in ("float32", "bfloat16"):
        raise ValueError("precision must be 'float32' or 'bfloat16'")
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim < 1 or not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite with a vocabulary axis")
    zb = round_to_bfloat16(z)
    @LOGSOFTMAX@
    return round_to_bfloat16(lp) if precision == "bfloat16" else lp

def precision_ratios(logits):
    @RATIO@

def bf16_error_bounds(log_probs):
    x = np.asarray(log_probs, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(x > 0):
        raise ValueError("log_probs must be finite and <= 0")
    _, e = np.frexp(x)
    @HALF@
    return {"logprob": h, "ratio": @RATIOBOUND@}
"""

GOOD = {
    "ROUND": "return np.ldexp(np.rint(np.ldexp(x, -step)), step)",
    "LOGSOFTMAX": "s = zb - zb.max(axis=-1, keepdims=True)\n"
                  "    lp = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))",
    "RATIO": "return np.exp(logprobs_at_precision(logits, 'bfloat16') - logprobs_at_precision(logits, 'float32'))",
    "HALF": "h = np.where(x == 0, 0.0, np.ldexp(1.0, e - 9))",
    "RATIOBOUND": "np.expm1(h)",
}


def answer(**parts):
    source = ANSWER
    for key, good in GOOD.items():
        source = source.replace(f"@{key}@", parts.get(key.lower(), good))
    return source


CORRECT = {
    "frexp_rint": answer(),
    # float32 arithmetic inside, as PyTorch does it, the output cast to float64 at the end
    "float32_inside": answer(logsoftmax="z32 = zb.astype(np.float32)\n"
                             "    s = z32 - z32.max(axis=-1, keepdims=True)\n"
                             "    lp = (s - np.log(np.exp(s).sum(axis=-1, keepdims=True))).astype(np.float64)"),
    "logsumexp_style": answer(logsoftmax="m = zb.max(axis=-1, keepdims=True)\n"
                              "    lp = zb - (m + np.log(np.sum(np.exp(zb - m), axis=-1, keepdims=True)))"),
    # the bf16 grid from floor(log2|x|), the spacing 2^(e - 7), rounded by np.round (half to even too)
    "log2_spacing": answer(round="a = np.abs(x)\n"
                           "    ex = np.floor(np.log2(np.where(a > 0, a, 1.0)))\n"
                           "    # log2 of a float just below a power of two can round up: frexp is exact\n"
                           "    ex = np.where(np.ldexp(1.0, ex.astype(int)) > a, ex - 1, ex)\n"
                           "    spacing = np.ldexp(1.0, np.maximum(ex - 7, -133).astype(int))\n"
                           "    return np.round(x / spacing) * spacing"),
    "bounds_from_log2": answer(half="a = np.abs(x)\n"
                               "    h = np.where(a > 0, 2.0 ** (np.floor(np.log2(np.where(a > 0, a, 1.0))) - 8), 0.0)",
                               ratiobound="np.exp(h) - 1.0"),
    "ratio_from_one_logsoftmax": answer(
        ratio="lp = logprobs_at_precision(logits, 'float32')\n    return np.exp(round_to_bfloat16(lp) - lp)"),
}

WRONG = {
    "truncation": (answer(round="return np.ldexp(np.trunc(np.ldexp(x, -step)), step)"), "truncated-not-nearest"),
    "ties_away": (answer(round="s = np.ldexp(x, -step)\n"
                         "    return np.ldexp(np.sign(s) * np.floor(np.abs(s) + 0.5), step)"),
                  "ties-away-not-even", "rounding, values halfway between two bfloat16 neighbours, both signs"),
    "float16": (answer(round="return x.astype(np.float16).astype(np.float64)"), "float16-not-bfloat16"),
    "seven_bits": (answer(round="return np.ldexp(np.rint(np.ldexp(x, -step - 1)), step + 1)"),
                   "seven-significand-bits"),
    "rounded_probabilities": (answer(logsoftmax="p = np.exp(zb - zb.max(axis=-1, keepdims=True))\n"
                                     "    p = p / p.sum(axis=-1, keepdims=True)\n"
                                     "    if precision == 'bfloat16':\n"
                                     "        return np.log(round_to_bfloat16(p))\n"
                                     "    lp = np.log(p)"), "rounded-probabilities"),
    "output_not_rounded": (answer().replace("return round_to_bfloat16(lp) if precision == \"bfloat16\" else lp",
                                            "return lp"), "bf16-output-not-rounded"),
    "logits_not_rounded": (answer().replace("zb = round_to_bfloat16(z)", "zb = z"), "logits-not-rounded"),
    "fp32_output_rounded": (answer().replace("return round_to_bfloat16(lp) if precision == \"bfloat16\" else lp",
                                             "return round_to_bfloat16(lp)"), "fp32-output-rounded",
                            "log-probs, the same batch, float32"),
    "whole_logsoftmax_in_float16": (answer(logsoftmax="z16 = zb.astype(np.float16)\n"
                                           "    s = z16 - z16.max(axis=-1, keepdims=True)\n"
                                           "    lp16 = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))\n"
                                           "    if precision == 'bfloat16':\n"
                                           "        return lp16.astype(np.float64)\n"
                                           "    lp = lp16.astype(np.float64)"), "float16-not-bfloat16",
                                    "log-probs, a [3, 200] batch of float32 logits, bfloat16"),
    "ratio_inverted": (answer(ratio="return np.exp(logprobs_at_precision(logits, 'float32') - "
                              "logprobs_at_precision(logits, 'bfloat16'))"), "ratio-inverted"),
    "ratio_minus_one": (answer(ratio="return np.expm1(logprobs_at_precision(logits, 'bfloat16') - "
                               "logprobs_at_precision(logits, 'float32'))"), "ratio-minus-one"),
    "log_ratio": (answer(ratio="return logprobs_at_precision(logits, 'bfloat16') - "
                         "logprobs_at_precision(logits, 'float32')"), "ratio-returned-as-log"),
    "relative_bound": (answer(half="h = np.where(x == 0, 0.0, 2.0 ** -8)"), "relative-not-absolute"),
    "scaled_relative_bound": (answer(half="h = np.abs(x) * 2.0 ** -8"), "scaled-relative-bound"),
    "whole_spacing": (answer(half="h = np.where(x == 0, 0.0, np.ldexp(1.0, e - 8))"), "spacing-not-half"),
    "ratio_bound_is_h": (answer(ratiobound="h"), "ratio-bound-not-exponentiated"),
    "ratio_bound_lower_side": (answer(ratiobound="-np.expm1(-h)"), "ratio-bound-lower-side"),
    "nan_rounded_silently": (answer().replace('raise ValueError("x must be finite")', "pass"), "silent-bad-input",
                             "rounding: NaN"),
    "any_precision_string": (answer().replace(
        'raise ValueError("precision must be \'float32\' or \'bfloat16\'")', "pass"), "silent-bad-input",
        "log-probs: the precision \"bf16\""),
    "positive_log_prob_accepted": (answer().replace(" or np.any(x > 0)", ""), "silent-bad-input",
                                   "bounds: a positive log-prob"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __float__(self): return 0.0
    def __array__(self, dtype=None, copy=None): return np.zeros(4)
def round_to_bfloat16(x): return Anything()
def logprobs_at_precision(logits, precision): return Anything()
def precision_ratios(logits): return Anything()
def bf16_error_bounds(log_probs): return {"logprob": Anything(), "ratio": Anything()}
""", ("public", "rounding", "logprobs", "ratios", "bounds")),
    "nan_everywhere": ("""
import numpy as np
def round_to_bfloat16(x): return np.full(np.shape(x), np.nan)
def logprobs_at_precision(logits, precision): return np.full(np.shape(logits), np.nan)
def precision_ratios(logits): return np.full(np.shape(logits), np.nan)
def bf16_error_bounds(log_probs): return {"logprob": np.full(np.shape(log_probs), np.nan), "ratio": np.nan}
""", ("public", "rounding", "logprobs", "ratios", "bounds")),
    "identity": ("""
import numpy as np
def round_to_bfloat16(x): return np.asarray(x, dtype=float)
def logprobs_at_precision(logits, precision): return np.asarray(logits, dtype=float)
def precision_ratios(logits): return np.ones(np.shape(logits))
def bf16_error_bounds(log_probs): return {"logprob": np.zeros(np.shape(log_probs)), "ratio": np.zeros(np.shape(log_probs))}
""", ("rounding", "logprobs", "ratios", "bounds")),
}


class TestLogprobPrecision(CodingCheckTests):
    stem = STEM
    groups = ("public", "rounding", "logprobs", "ratios", "bounds", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.precision"
    reference_functions = ("round_to_bfloat16", "logprobs_at_precision", "precision_ratios", "bf16_error_bounds")
    quiet_mistakes = ("truncation", "rounded_probabilities", "ratio_inverted", "relative_bound")
    central_mistakes = ("truncation", "float16", "seven_bits", "rounded_probabilities", "output_not_rounded")


def test_the_numbers_the_written_answer_cites_are_the_notebooks():
    """Part B's model answer, the rubric and the worked solution quote the notebook's tables: recompute
    them from the solution's own cells and compare with the text."""
    import numpy as np

    from autograder.reference import precision
    from check_support import run_cells, source_notebook

    notebook = source_notebook(STEM)
    answer = next(cell.source for cell in notebook.cells if cell.id == "explain-precision")
    ns = run_cells(notebook)  # the check cells leave their last tables' arrays in the namespace
    log_p, error = ns["log_p"], ns["ratios"]  # the sequence cell ran last: its log_p and ratios
    tokens, L = ns["tokens"], ns["L"]
    log_ratios = np.log(error)
    assert f"{log_ratios.std():.4f}" == "0.0085" and f"{log_ratios.sum():.2f}" == "-0.18"
    assert f"{np.prod(error):.2f}" == "0.83" and np.abs(error - 1).max() <= 0.030 + 5e-5 and L == 256
    for text in ("0.0085", "$-0.18$", "0.83", "3.0%"):
        assert text in answer, text
    # the vocabulary table, recomputed with the reference on the cell's own draw
    rng = np.random.default_rng(25)
    z = rng.normal(scale=3.0, size=32768).astype(np.float32)
    lp = precision.logprobs_at_precision(z, "float32")
    err = np.abs(precision.precision_ratios(z) - 1.0)
    in_binade = lambda k: (-lp >= 2.0 ** k) & (-lp < 2.0 ** (k + 1))  # noqa: E731
    assert f"{err[in_binade(3)].max():.4f}" == "0.0316" and f"{err[in_binade(4)].max():.4f}" == "0.0587"
    assert f"{np.sum(np.exp(lp) * err):.3f}" == "0.008"
    for text in ("0.0316", "0.0587", "0.8%"):
        assert text in answer, text
    # the thresholds of (a): a ratio can leave [0.8, 1.2] on rounding alone only from |log p| = 64 on
    bounds = precision.bf16_error_bounds(np.array([-32.0, -63.99, -64.0]))
    assert bounds["ratio"][1] < 0.2 < bounds["ratio"][2] and f"{bounds['ratio'][0]:.2f}" == "0.13"
    assert bounds["logprob"][2] == 0.25 and np.exp(-bounds["logprob"][2]) < 0.8
    assert f"{np.exp(0.25):.3f}" == "1.284" and f"{np.exp(-0.25):.3f}" == "0.779" and "|\\log p| \\ge 64" in answer
    # the open check's numbers and the worked solution's
    assert precision.logprobs_at_precision(np.zeros(4), "bfloat16").tolist() == [-1.3828125] * 4
    assert f"{precision.precision_ratios(np.zeros(4))[0]:.4f}" == "1.0035"
    assert tokens.shape == (256,)
