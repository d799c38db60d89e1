"""The hidden checks of exercise 24 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests

STEM = "24_labels_and_shifting"

LOSS = """
import numpy as np

def causal_lm_loss(logits, labels, ignore_index=-100):
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.ndim != 3 or y.shape != z.shape[:2] or y.shape[1] < 2 or y.dtype.kind not in "iu":
        raise ValueError("labels must be integer [B, L] matching logits [B, L, V]")
    s = z - z.max(axis=-1, keepdims=True)
    lp = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
    PAIR
    keep = t != ignore_index
    if not keep.any() or t[keep].min() < 0 or t[keep].max() >= z.shape[2]:
        raise ValueError("labels: no valid target")
    picked = np.take_along_axis(p, np.where(keep, t, 0)[..., None], axis=-1)[..., 0]
    REDUCE
"""

REST = """
def loss_positions(labels, ignore_index=-100):
    y = np.asarray(labels)
    if y.ndim != 2 or y.shape[1] < 2:
        raise ValueError("labels must be [B, L], L >= 2")
    out = np.zeros(y.shape, dtype=bool)
    POSITIONS
    return out

def diagnose_labels(input_ids, labels, ignore_index=-100):
    x, y = np.asarray(input_ids), np.asarray(labels)
    if y.ndim != 2 or x.shape != y.shape or y.shape[1] < 2:
        raise ValueError("input_ids and labels must share one [B, L] shape")
    k = y != ignore_index
    if not k.any():
        raise ValueError("labels: all ignored")
    if np.all(y[k] == x[k]):
        return "ok"
    if not k[:, -1].any() and np.all(y[:, :-1][k[:, :-1]] == x[:, 1:][k[:, :-1]]):
        return "double_shift"
    return "mismatch"
"""

GOOD_PAIR = "p, t = lp[:, :-1], y[:, 1:]"
GOOD_REDUCE = "return float(-picked[keep].mean())"
GOOD_POSITIONS = "out[:, :-1] = y[:, 1:] != ignore_index"


def answer(pair=GOOD_PAIR, reduce=GOOD_REDUCE, positions=GOOD_POSITIONS):
    return LOSS.replace("PAIR", pair).replace("REDUCE", reduce) + REST.replace("POSITIONS", positions)


CORRECT = {
    "vectorised": answer(),
    "transformers_style_padding": answer(
        pair="padded = np.concatenate([y, np.full((y.shape[0], 1), ignore_index)], axis=1)\n"
             "    p, t = lp, padded[:, 1:]"),
    "sum_over_count": answer(reduce="return -picked[keep].sum() / np.count_nonzero(keep)"),
    "loops": """
import math
import numpy as np

def causal_lm_loss(logits, labels, ignore_index=-100):
    z = np.asarray(logits, dtype=float)
    y = np.asarray(labels)
    if z.ndim != 3 or y.shape != z.shape[:2] or y.shape[1] < 2 or y.dtype.kind not in "iu":
        raise ValueError("bad shapes")
    total, count = 0.0, 0
    for b in range(z.shape[0]):
        for t in range(z.shape[1] - 1):
            target = int(y[b, t + 1])
            if target == ignore_index:
                continue
            if not 0 <= target < z.shape[2]:
                raise ValueError("labels: outside the vocabulary")
            row = z[b, t]
            m = max(row)
            total += m + math.log(sum(math.exp(v - m) for v in row)) - row[target]
            count += 1
    if count == 0:
        raise ValueError("labels: nothing to score")
    return total / count
""" + REST.replace("POSITIONS", "for b in range(y.shape[0]):\n"
                   "        for t in range(y.shape[1] - 1):\n"
                   "            out[b, t] = y[b, t + 1] != ignore_index"),
}

WRONG = {
    "missing_shift": (answer(pair="p, t = lp, y"), "same-position"),
    # the outside tester's w24a_noshift: same-position pairs, trimmed to L - 1 like the right ones
    "missing_shift_trimmed": (answer(pair="p, t = lp[:, :-1], y[:, :-1]"), "same-position"),
    "double_shift": (answer(pair="p, t = lp[:, :-2], y[:, 2:]"), "double-shift"),
    # r24d_noshift_pos: the label positions, the last one dropped
    "positions_unshifted_trimmed": (answer(positions="out[:] = y != ignore_index\n    out[:, -1] = False"),
                                    "positions-unshifted"),
    # the outside tester's w24i_naive: no max shift, exp(1000) overflows to NaN (named, not "contains NaN")
    "no_max_shift": (answer().replace("s = z - z.max(axis=-1, keepdims=True)", "s = z"), "no-max-shift",
                     "loss, logits of order 1e3"),
    # r5_24_neglabel: only labels >= V rejected, a label of -2 silently wraps to token V - 2
    "negative_label_accepted": (answer().replace("t[keep].min() < 0 or ", ""), "silent-bad-input",
                                "loss: a negative label that is not ignore_index"),
    # w24d_doublefirst: the double-shift rule tested before "ok"
    "diagnosis_double_shift_first": (answer().replace(
        '    if np.all(y[k] == x[k]):\n        return "ok"\n', "").replace(
        '    return "mismatch"', '    if np.all(y[k] == x[k]):\n        return "ok"\n    return "mismatch"'),
        "diagnosis-ok-not-first", "diagnosis, repeated tokens: both rules hold, ok takes precedence"),
    # w24e_nolastcol: the last-column condition of double_shift left out
    "diagnosis_no_last_column": (answer().replace("if not k[:, -1].any() and np.all", "if np.all"),
                                 "diagnosis-last-column", "diagnosis, shifted labels with a real last label"),
    # w24l_diag_noerr: "ok" instead of an error when every label is ignore_index
    "diagnosis_all_ignored_ok": (answer().replace('raise ValueError("labels: all ignored")', 'return "ok"'),
                                 "silent-bad-input", "diagnosis: every label ignore_index"),
    # r5_24_diag_noval: no validation at all (broadcasts, 1-D and L = 1 accepted)
    "diagnosis_no_validation": (answer().replace(
        "    x, y = np.asarray(input_ids), np.asarray(labels)\n"
        "    if y.ndim != 2 or x.shape != y.shape or y.shape[1] < 2:\n"
        '        raise ValueError("input_ids and labels must share one [B, L] shape")',
        "    x, y = np.broadcast_arrays(np.atleast_2d(np.asarray(input_ids)), np.atleast_2d(np.asarray(labels)))"),
        "silent-bad-input", "diagnosis: one row of input_ids for two rows of labels"),
    "shift_backwards": (answer(pair="p, t = lp[:, 1:], y[:, :-1]"), "shift-backwards"),
    "sum_not_mean": (answer(reduce="return float(-picked[keep].sum())"), "loss-sum-not-mean"),
    "mean_of_row_means": (answer(reduce="return float(np.mean([-r[k].mean() for r, k in zip(picked, keep) if k.any()]))"),
                          "mean-of-row-means"),
    "ignored_counted": (answer(reduce="return float(-picked[keep].sum() / keep.size)"), "ignored-counted"),
    "positions_unshifted": (answer(positions="out[:] = y != ignore_index"), "positions-unshifted"),
    "positions_backwards": (answer(positions="out[:, 1:] = y[:, :-1] != ignore_index"), "positions-shifted-backwards"),
    "no_input_checks": ("""
import numpy as np

def causal_lm_loss(logits, labels, ignore_index=-100):
    z = np.asarray(logits, dtype=float)
    y = np.resize(np.asarray(labels).astype(int), z.shape[:2])
    s = z - z.max(axis=-1, keepdims=True)
    lp = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
    t = np.clip(y[:, 1:], 0, z.shape[2] - 1)
    keep = y[:, 1:] != ignore_index
    picked = np.take_along_axis(lp[:, :-1], t[..., None], axis=-1)[..., 0]
    return float(-picked[keep].sum() / max(keep.sum(), 1))

def loss_positions(labels, ignore_index=-100):
    y = np.atleast_2d(np.asarray(labels))
    out = np.zeros(y.shape, dtype=bool)
    out[:, :-1] = y[:, 1:] != ignore_index
    return out

def diagnose_labels(input_ids, labels, ignore_index=-100):
    x, y = np.asarray(input_ids), np.asarray(labels)
    n = min(x.shape[-1], y.shape[-1])
    x, y = x[..., :n], y[..., :n]
    k = y != ignore_index
    if np.all(y[k] == x[k]):
        return "ok"
    return "mismatch"
""", "silent-bad-input"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __float__(self): return 0.0
    def __array__(self, dtype=None, copy=None): return np.zeros((1, 4), dtype=bool)
def causal_lm_loss(logits, labels, ignore_index=-100): return Anything()
def loss_positions(labels, ignore_index=-100): return Anything()
def diagnose_labels(input_ids, labels, ignore_index=-100): return Anything()
""", ("public", "loss", "positions", "diagnose")),
    "str_subclass_equal_to_everything": ("""
import numpy as np
class Yes(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
def causal_lm_loss(logits, labels, ignore_index=-100): return Yes("1.0")
def loss_positions(labels, ignore_index=-100): return Yes("True")
def diagnose_labels(input_ids, labels, ignore_index=-100): return Yes("?")
""", ("public", "loss", "positions", "diagnose")),
    "everything_true": ("""
import numpy as np
def causal_lm_loss(logits, labels, ignore_index=-100): return float("nan")
def loss_positions(labels, ignore_index=-100): return np.ones(np.shape(labels), dtype=bool)
def diagnose_labels(input_ids, labels, ignore_index=-100): return "ok or double_shift"
""", ("public", "loss", "positions", "diagnose")),
}

# Issue 22: a diagnosis that ignores its input earned 0.5 of 1 ("ok" is the answer of three of the six
# cases); a constant earns nothing in the group now, whichever of the three answers it is.
_DIAGNOSIS = REST[REST.index("def diagnose_labels"):]
for _constant in ("ok", "mismatch", "double_shift"):
    ADVERSARIAL[f"diagnosis_always_{_constant}"] = (
        answer().replace(_DIAGNOSIS, f"def diagnose_labels(input_ids, labels, ignore_index=-100):\n"
                                     f"    return {_constant!r}\n"), ("diagnose",))
    assert f"return {_constant!r}" in ADVERSARIAL[f"diagnosis_always_{_constant}"][0]


def test_a_constant_diagnosis_is_told_why_its_matching_cases_earn_nothing():
    from check_support import result_of

    result = result_of(STEM, ADVERSARIAL["diagnosis_always_ok"][0], ["diagnose"])
    (group,) = result.groups
    assert group.points_earned == 0 and sum(case.withheld for case in group.cases) == 3, group.feedback()
    assert group.gated == (
        "points withheld: `diagnose_labels` failed the hidden case 'diagnosis, one label differs from every "
        "input': a diagnosis must tell labels apart: the cases with this answer count only when the function "
        "also gets right a hidden case whose answer is another."), group.gated


class TestLabelsAndShifting(CodingCheckTests):
    stem = STEM
    groups = ("public", "loss", "positions", "diagnose", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.further"
    reference_functions = ("causal_lm_loss", "loss_positions", "diagnose_labels")
    quiet_mistakes = ("missing_shift", "sum_not_mean", "double_shift")
    central_mistakes = ("missing_shift", "missing_shift_trimmed", "shift_backwards", "double_shift", "positions_unshifted",
                        "positions_unshifted_trimmed", "positions_backwards")
