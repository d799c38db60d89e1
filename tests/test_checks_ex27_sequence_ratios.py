"""The hidden checks of exercise 27 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import pytest

from check_support import CodingCheckTests, full_marks, result_of

STEM = "27_sequence_ratios"

TEMPLATE = '''
import math
import numpy as np

RULES = ("token_mask", "sequence_mask", "seq_sum_k1", "seq_mean_k1")

def _d(logp_new, logp_old, mask):
    m = np.asarray(mask)
    if m.ndim != 2 or 0 in m.shape:
        raise ValueError("mask must be [B, L]")
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
        raise ValueError("mask must be 0/1")
    m = m.astype(bool)
    a = np.asarray(logp_new, dtype=np.float64)
    b = np.asarray(logp_old, dtype=np.float64)
    if a.shape != m.shape or b.shape != m.shape:
        raise ValueError("logp_new and logp_old must have the mask's shape")
    if not (np.isfinite(a[m]).all() and np.isfinite(b[m]).all()):
        raise ValueError("log-probabilities must be finite on response tokens")
    if (a[m] > 0).any() or (b[m] > 0).any():
        raise ValueError("log-probabilities must be <= 0")
    return np.where(m, DIFF, 0.0), m

def sequence_ratios(logp_new, logp_old, mask, eps_low=3e-4, eps_high=4e-4):
    if not (0 <= eps_low < 1 and 0 <= eps_high < 1):
        raise ValueError("eps must lie in [0, 1)")
    d, m = _d(logp_new, logp_old, mask)
    S = d.sum(axis=1)
    n = np.maximum(m.sum(axis=1), 1)
    token = TOKEN
    product = PRODUCT
    geometric = GEOMETRIC
    return {"token": token, "product": product, "geometric": geometric,
            "gspo_clipped": GSPO_CLIPPED,
            "verl_sequence": VERL}

def _bounds(rule, low, high):
    if rule not in RULES:
        raise ValueError("unknown rule")
    for v in (low, high):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ValueError("bounds must be positive")
    if rule.endswith("k1"):
        if high is None:
            raise ValueError("verl rules need high")
        if low is None:
            low = VERL_LOW
    if low is not None and high is not None and low > high:
        raise ValueError("low must not exceed high")
    return low, high

def _inside(x, lo, hi):
    keep = np.ones(np.shape(x), dtype=bool)
    if lo is not None:
        keep &= LOWER_TEST
    if hi is not None:
        keep &= UPPER_TEST
    return keep

def kept_mask(logp_new, logp_old, mask, rule, low=None, high=None):
    d, m = _d(logp_new, logp_old, mask)
    low, high = _bounds(rule, low, high)
    if rule == "token_mask":
        return m & TOKEN_RULE
    if rule == "sequence_mask":
        keep = SEQUENCE_RULE
    else:
        c = np.where(m, CLAMP, 0.0)
        k1 = SIGN c.sum(axis=1)
        if rule == "seq_mean_k1":
            k1 = MEAN_K1
        keep = _inside(k1, math.log(low), math.log(high))
    return m & PER_ROW

def first_dropped_length(token_log_ratio, rule, low=None, high=None, max_len=100000):
    b = float(token_log_ratio)
    if not math.isfinite(b):
        raise ValueError("token_log_ratio must be finite")
    low, high = _bounds(rule, low, high)
    if (low is not None and low > 1) or (high is not None and high < 1):
        raise ValueError("the bounds must contain 1")
    if isinstance(max_len, bool) or int(max_len) != max_len or max_len < 1:
        raise ValueError("max_len must be an integer >= 1")
LENGTH_BODY
'''

LOOP = """    def dropped(n):
        if rule == "token_mask":
            return not _inside(np.exp(b), low, high)
        if rule == "sequence_mask":
            return not _inside(np.exp(n * b), low, high)
        c = min(max(b, -20.0), 20.0)
        k1 = SIGN (n * c) if rule == "seq_sum_k1" else SIGN c
        return not _inside(k1, math.log(low), math.log(high))
    for n in range(1, int(max_len) + 1):
        if dropped(n):
            return LENGTH
        if rule in ("token_mask", "seq_mean_k1"):
            return None
    return None
"""

CLOSED_FORM = """    if rule in ("seq_sum_k1", "seq_mean_k1"):
        b = min(max(b, -20.0), 20.0)
        lo, hi = -math.log(high), -math.log(low)
    else:
        lo = -math.inf if low is None else math.log(low)
        hi = math.inf if high is None else math.log(high)
    if rule in ("token_mask", "seq_mean_k1"):
        return None if lo <= b <= hi else 1
    edge = lo if b < 0 else hi
    if b == 0 or not math.isfinite(edge):
        return None
    n = max(1, math.floor(edge / b))
    while n > 1 and not (lo <= (n - 1) * b <= hi):
        n -= 1
    while lo <= n * b <= hi:
        n += 1
    return n if n <= max_len else None
"""

PARTS = {
    "LENGTH_BODY": CLOSED_FORM,
    "DIFF": "a - b",
    "TOKEN": "np.where(m, np.exp(d), 0.0)",
    "PRODUCT": "np.exp(S)",
    "GEOMETRIC": "np.exp(S / n)",
    "GSPO_CLIPPED": "np.clip(geometric, 1 - eps_low, 1 + eps_high)",
    "VERL": "np.exp(np.clip(S, -20.0, 20.0))",
    "VERL_LOW": "1.0 / high",
    "LOWER_TEST": "x >= lo",
    "UPPER_TEST": "x <= hi",
    "TOKEN_RULE": "_inside(np.exp(d), low, high)",
    "SEQUENCE_RULE": "_inside(np.exp(d.sum(axis=1)), low, high)",
    "CLAMP": "np.clip(d, -20.0, 20.0)",
    "SIGN": "-1.0 *",
    "MEAN_K1": "k1 / np.maximum(m.sum(axis=1), 1)",
    "PER_ROW": "keep[:, None]",
    "LENGTH": "n",
}


def answer(**changes) -> str:
    source = TEMPLATE
    for name, value in sorted({**PARTS, **changes}.items(), key=lambda item: -len(item[0])):
        source = source.replace(name, value)
    return source


# Most answers find the length in closed form (fast to grade); one loops over n up to max_len as a student
# may (about a second on the cases where no length is dropped).
CORRECT = {
    "vectorised_closed_form_length": answer(),
    "log_space_rules": answer(SEQUENCE_RULE="_inside(d.sum(axis=1), None if low is None else math.log(low), "
                                            "None if high is None else math.log(high))",
                              TOKEN_RULE="_inside(d, None if low is None else math.log(low), "
                                         "None if high is None else math.log(high))"),
    "geometric_as_product_of_roots": answer(GEOMETRIC="np.exp(np.where(m, d / n[:, None], 0.0).sum(axis=1))"),
    "length_by_a_loop": answer(LENGTH_BODY=LOOP),
}

WRONG = {
    # the central idea: which statistic each rule uses
    "geometric_is_product": (answer(GEOMETRIC="np.exp(S)"), "geometric-without-length"),
    "product_is_geometric": (answer(PRODUCT="np.exp(S / n)"), "product-length-normalised"),
    "sequence_mask_on_the_mean": (answer(SEQUENCE_RULE="_inside(np.exp(d.sum(axis=1) / np.maximum(m.sum(axis=1), 1)), "
                                                       "low, high)"), "sum-and-mean-swapped"),
    "seq_mean_k1_on_the_sum": (answer(MEAN_K1="k1"), "sum-and-mean-swapped"),
    # the ratios
    "ratio_inverted": (answer(DIFF="b - a"), "ratio-inverted"),
    "length_includes_padding": (answer(GEOMETRIC="np.exp(S / m.shape[1])"), "padding-counted"),
    "geometric_as_power_of_product": (answer(GEOMETRIC="np.exp(S) ** (1.0 / n)"), "geometric-overflow"),
    "token_ratio_one_at_padding": (answer(TOKEN="np.exp(d)"), "token-ratio-at-padding"),
    "gspo_clips_token_ratios": (answer(GSPO_CLIPPED="np.exp(np.where(m, np.log(np.clip(np.exp(d), 1 - eps_low, "
                                                    "1 + eps_high)), 0.0).sum(axis=1) / n)"), "clipped-token-ratios"),
    "gspo_clips_the_product": (answer(GSPO_CLIPPED="np.clip(product, 1 - eps_low, 1 + eps_high)"), "clipped-product"),
    "verl_weight_unclamped": (answer(VERL="np.exp(S)"), "verl-no-clamp"),
    "verl_weight_clamped_per_token": (answer(VERL="np.exp(np.where(m, np.clip(d, -20, 20), 0.0).sum(axis=1))"),
                                      "verl-clamp-per-token"),
    # the rules
    "sequence_mask_per_token": (answer(SEQUENCE_RULE="_inside(np.exp(d), low, high)", PER_ROW="(keep if keep.ndim == 2 "
                                       "else keep[:, None])"), "sequence-rule-per-token"),
    "token_mask_per_sequence": (answer(TOKEN_RULE="(_inside(np.exp(d), low, high) | ~m).all(axis=1, keepdims=True)"),
                                "token-rule-per-sequence"),
    "bounds_exclusive": (answer(LOWER_TEST="x > lo", UPPER_TEST="x < hi"), "bounds-exclusive"),
    "upper_bound_exclusive": (answer(UPPER_TEST="x < hi"), "bounds-exclusive"),
    "verl_k1_sign": (answer(SIGN="1.0 *"), "verl-k1-sign"),
    "verl_no_token_clamp": (answer(CLAMP="d"), "verl-no-token-clamp"),
    "verl_no_lower_default": (answer(VERL_LOW="1e-300"), "verl-lower-default"),
    "trl_lower_default": (answer().replace('    if rule.endswith("k1"):\n        if high is None:',
                                           '    if low is None and high is not None:\n        low = 1.0 / high\n'
                                           '    if rule.endswith("k1"):\n        if high is None:'),
                          "trl-lower-default"),
    "padding_kept": (answer(PER_ROW="keep[:, None] | ~m"), "padding-counted"),
    # the lengths
    "last_kept_length": (answer(LENGTH_BODY=LOOP, LENGTH="n - 1 if n > 1 else 1"), "last-kept-length"),
    "max_len_when_never_dropped": (answer(LENGTH_BODY=LOOP.replace("            return None\n    return None",
                                                                   "            return max_len\n    return max_len")),
                                   "no-drop-not-none"),
    # bad input
    "no_input_checks": (answer().replace('    if (a[m] > 0).any() or (b[m] > 0).any():\n        raise ValueError("log-probabilities must be <= 0")\n', "")
                        .replace('        raise ValueError("logp_new and logp_old must have the mask\'s shape")',
                                 "        a, b = np.broadcast_to(a, m.shape), np.broadcast_to(b, m.shape)"),
                        "silent-bad-input"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __float__(self): return 1.0
    def __array__(self, dtype=None, copy=None): return np.ones((2, 3))
def sequence_ratios(logp_new, logp_old, mask, eps_low=3e-4, eps_high=4e-4):
    return {k: Anything() for k in ("token", "product", "geometric", "gspo_clipped", "verl_sequence")}
def kept_mask(logp_new, logp_old, mask, rule, low=None, high=None): return Anything()
def first_dropped_length(token_log_ratio, rule, low=None, high=None, max_len=100000): return Anything()
""", ("public", "ratios", "kept", "lengths")),
    "mask_itself": ("""
import numpy as np
def sequence_ratios(logp_new, logp_old, mask, eps_low=3e-4, eps_high=4e-4):
    m = np.asarray(mask, dtype=float)
    return {"token": m, "product": m[:, 0], "geometric": m[:, 0], "gspo_clipped": m[:, 0], "verl_sequence": m[:, 0]}
def kept_mask(logp_new, logp_old, mask, rule, low=None, high=None): return np.asarray(mask, dtype=bool)
def first_dropped_length(token_log_ratio, rule, low=None, high=None, max_len=100000): return None
""", ("public", "ratios", "kept", "lengths")),
    "strings": ("""
def sequence_ratios(logp_new, logp_old, mask, eps_low=3e-4, eps_high=4e-4): return "ratios"
def kept_mask(logp_new, logp_old, mask, rule, low=None, high=None): return "mask"
def first_dropped_length(token_log_ratio, rule, low=None, high=None, max_len=100000): return "35"
""", ("public", "ratios", "kept", "lengths")),
}


class TestSequenceRatios(CodingCheckTests):
    stem = STEM
    groups = ("public", "ratios", "kept", "lengths", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.sequence_level"
    reference_functions = ("sequence_ratios", "kept_mask", "first_dropped_length")
    quiet_mistakes = ("geometric_is_product", "bounds_exclusive", "verl_k1_sign", "last_kept_length")
    central_mistakes = ("geometric_is_product", "product_is_geometric", "sequence_mask_on_the_mean",
                        "seq_mean_k1_on_the_sum")


def test_the_numbers_the_notebook_states_come_from_the_reference():
    """Every number the notebook's text, model answer and rubric quote is computed here from the reference."""
    import math
    from pathlib import Path

    import numpy as np

    from autograder.reference import sequence_level as ref
    from check_support import source_notebook

    text = "\n".join(cell.source for cell in source_notebook(STEM).cells)
    rubric = (Path(__file__).parents[1] / "autograder/exercises" / STEM / "rubric.md").read_text()
    first = {z: {rule: ref.first_dropped_length(math.log(z), rule, low, high)
                 for rule, low, high in (("sequence_mask", 0.5, 3.0), ("seq_sum_k1", 0.5, 2.0),
                                         ("seq_mean_k1", 0.999, 1.001), ("token_mask", 0.9, 1.1))}
             for z in (0.98, 0.999)}
    assert first[0.98]["sequence_mask"] == first[0.98]["seq_sum_k1"] == 35
    assert first[0.999]["sequence_mask"] == first[0.999]["seq_sum_k1"] == 693
    assert first[0.98]["seq_mean_k1"] == first[0.999]["seq_mean_k1"] == 1  # every length dropped
    assert first[0.98]["token_mask"] is first[0.999]["token_mask"] is None
    assert ref.first_dropped_length(math.log(0.98), "sequence_mask", None, 3.0) is None  # TRL's defaults
    assert ref.first_dropped_length(math.log(0.98), "seq_sum_k1", high=2.0) == 35  # the open check
    weight = lambda z, n: float(ref.sequence_ratios(np.full((1, n), -1.0) + math.log(z), np.full((1, n), -1.0),  # noqa: E731
                                                    np.ones((1, n), dtype=bool))["product"][0])
    assert f"{weight(0.98, 100):.3f}" == "0.133" and f"{weight(0.98, 1000):.1e}" == "1.7e-09"
    assert f"{weight(0.999, 1000):.3f}" == "0.368"
    assert round(math.log(0.98) / math.log(0.999)) == round(693 / 35) == 20  # "about 20 times"
    assert f"{math.exp(1.5):.2f}" == "4.48"
    for quoted in ("35-token", "693-token", "0.133", r"1.7\times10^{-9}", "0.368", "4.48", "about 20"):
        assert quoted in text, quoted
    for quoted in ("35-token", "693-token", "0.133", "1.7e-9", "0.368"):
        assert quoted in rubric, quoted


@pytest.mark.parametrize("name", ["TRL_COMPARES_LOGS", "VERL_COMPARES_EXP", "LENGTH_BY_CUMSUM"])
def test_either_space_and_either_sum_earn_full_marks(name):
    """The task says the exact-bound cases use numbers whose sums, exponentials and logarithms are exact, so a
    rule compared in the other space, or S summed token by token, is as right as the table's form (three
    answers of the outside test, written from the release notebook alone)."""
    import outside_answers_ex27

    result = result_of(STEM, getattr(outside_answers_ex27, name))
    assert result.points_earned == full_marks(STEM), result.feedback()
