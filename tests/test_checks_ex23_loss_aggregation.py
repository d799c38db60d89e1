"""The hidden checks of exercise 23 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests

STEM = "23_loss_aggregation"

TEMPLATE = """
import numpy as np

def token_weights(mask, mode, max_len=None):
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("mask must be [B, L]")
    m = m.astype(bool)
    B, L = m.shape
    n = m.sum(axis=1, keepdims=True)
    if mode == "token_mean":
        w = np.full(m.shape, TOKEN_MEAN)
    elif mode == "sequence_mean":
        w = np.where(n > 0, SEQUENCE_MEAN, 0.0) * np.ones(m.shape)
    elif mode == "constant":
        if max_len is None or max_len < max(L, 1):
            raise ValueError("max_len must be at least L")
        w = np.full(m.shape, CONSTANT)
    else:
        raise ValueError("unknown mode")
    return np.where(m, w, 0.0)

def aggregate_loss(per_token_loss, mask, mode, max_len=None):
    w = token_weights(mask, mode, max_len)
    x = np.asarray(per_token_loss, dtype=np.float64)
    if x.shape != w.shape:
        raise ValueError("per_token_loss must have the mask's shape")
    m = np.asarray(mask).astype(bool)
    if not np.isfinite(x[m]).all():
        raise ValueError("per_token_loss must be finite on response tokens")
    AGGREGATE
"""

GOOD_AGGREGATE = "return float(np.sum(w[m] * x[m]))"


def answer(token_mean="1.0 / max(m.sum(), 1)", sequence_mean="1.0 / (B * np.maximum(n, 1))",
           constant="1.0 / (B * max_len)", aggregate=GOOD_AGGREGATE):
    return (TEMPLATE.replace("TOKEN_MEAN", token_mean).replace("SEQUENCE_MEAN", sequence_mean)
            .replace("CONSTANT", constant).replace("AGGREGATE", aggregate))


CORRECT = {
    "closed_forms": answer(),
    "aggregate_by_definition": answer(aggregate="""x = np.where(m, x, 0.0)
    B = m.shape[0]
    if mode == "token_mean":
        return float(x.sum() / max(m.sum(), 1))
    if mode == "sequence_mean":
        return float(np.mean([row[mrow].mean() if mrow.any() else 0.0 for row, mrow in zip(x, m)]))
    return float(x.sum() / (B * max_len))"""),
    "zero_d_array_result": answer(aggregate="return np.asarray(np.sum(w[m] * x[m]))"),
}

WRONG = {
    "sequence_mean_is_token_mean": (answer(sequence_mean="1.0 / max(m.sum(), 1)"), "normalisers-mixed-up"),
    "constant_from_padded_width": (answer(constant="1.0 / (B * L)"), "constant-from-padded-length"),
    "constant_without_batch": (answer(constant="1.0 / max_len"), "constant-without-batch"),
    "sequence_mean_without_batch": (answer(sequence_mean="1.0 / np.maximum(n, 1)"), "sequence-mean-without-batch"),
    "token_mean_counts_padding": (answer(token_mean="1.0 / m.size"), "padding-counted"),
    # the outside tester's w23b_tokrow: a token mean taken per row (then over the rows) is a sequence mean
    "token_mean_per_row": (answer(token_mean="1.0 / (B * np.maximum(n, 1))"), "normalisers-mixed-up"),
    # the outside tester's token mean per row without the 1/B: a sequence mean without its 1/B, named as such
    "token_mean_per_row_without_batch": (answer(token_mean="1.0 / np.maximum(n, 1)"), "token-mean-per-row"),
    # w23f_allempty: 0 / 0 = NaN weights when the batch has no response token at all
    "all_empty_batch_nan": (answer().replace("    return np.where(m, w, 0.0)",
                                             "    return m / m.sum() if mode == 'token_mean' else np.where(m, w, 0.0)"),
                            None, "token_mean weights, a batch with no response token at all (and one with tokens)"),
    # r5_23_norows: a mask with no rows accepted
    "no_rows_accepted": (answer().replace(" or m.shape[0] == 0", ""), "silent-bad-input",
                         "weights: a mask with no rows"),
    # r5_23_agg_noshape: per_token_loss broadcast to the mask's shape instead of rejected
    "aggregate_broadcasts": (answer().replace("    if x.shape != w.shape:",
                                              "    x = np.broadcast_to(x, w.shape)\n    if x.shape != w.shape:"),
                             "silent-bad-input", "loss: one row of per_token_loss for two rows of mask"),
    # r7_23_f32: float32 weights; aggregate_loss names the float32 precision too (as token_weights does)
    "float32_weights": (answer().replace("    return np.where(m, w, 0.0)", "    return np.where(m, w, 0.0).astype(np.float32)"),
                        "float32-arithmetic", "token_mean loss, five sequences, lists"),
    "aggregate_counts_padding": (answer(aggregate="return float(np.nansum(np.where(np.isfinite(x), x, 0.0)) "
                                        "* w[m][0] if m.any() else 0.0)"), "padding-counted"),
    "no_input_checks": ("""
import numpy as np

def token_weights(mask, mode, max_len=None):
    m = np.atleast_2d(np.asarray(mask)).astype(bool)
    B, L = m.shape
    n = np.maximum(m.sum(axis=1, keepdims=True), 1)
    if mode == "sequence_mean":
        w = 1.0 / (B * n) * np.ones(m.shape)
    elif mode == "constant":
        w = np.full(m.shape, 1.0 / (B * (max_len or L)))
    else:
        w = np.full(m.shape, 1.0 / max(m.sum(), 1))
    return np.where(m, w, 0.0)

def aggregate_loss(per_token_loss, mask, mode, max_len=None):
    w = token_weights(mask, mode, max_len)
    x = np.nan_to_num(np.resize(np.asarray(per_token_loss, dtype=float), w.shape))
    return float(np.sum(w * x))
""", "silent-bad-input"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __float__(self): return 0.0
    def __array__(self, dtype=None, copy=None): return np.zeros((2, 3))
def token_weights(mask, mode, max_len=None): return Anything()
def aggregate_loss(per_token_loss, mask, mode, max_len=None): return Anything()
""", ("public", "weights", "aggregate")),
    "mask_itself": ("""
import numpy as np
def token_weights(mask, mode, max_len=None): return np.asarray(mask, dtype=float)
def aggregate_loss(per_token_loss, mask, mode, max_len=None):
    return float(np.nansum(np.asarray(per_token_loss, dtype=float)))
""", ("public", "weights", "aggregate")),
    "strings": ("""
def token_weights(mask, mode, max_len=None): return "weights"
def aggregate_loss(per_token_loss, mask, mode, max_len=None): return "0.0"
""", ("public", "weights", "aggregate")),
}


class TestLossAggregation(CodingCheckTests):
    stem = STEM
    groups = ("public", "weights", "aggregate", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.further"
    reference_functions = ("token_weights", "aggregate_loss")
    quiet_mistakes = ("constant_without_batch", "sequence_mean_is_token_mean")
    central_mistakes = ("sequence_mean_is_token_mean", "sequence_mean_without_batch", "token_mean_per_row",
                        "token_mean_per_row_without_batch")


def test_a_token_mean_taken_per_row_is_told_what_it_is():
    from check_support import result_of

    result = result_of(STEM, WRONG["token_mean_per_row_without_batch"][0], ["weights"])
    case = next(case for case in result.cases if case.name == "token_mean weights, a GRPO group of lengths 3, 5, 12, 20")
    assert case.message == (
        "This token_mean is a mean taken per row: each token is weighted 1 / n_i by its own response's length, "
        "which is a sequence mean without its 1/B. token_mean weights every response token of the batch alike, "
        "1 / (n_1 + ... + n_B), so a long response counts for more than a short one.")
