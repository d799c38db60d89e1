"""The hidden checks of exercise 16 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import textwrap

import pytest

from check_support import CodingCheckTests, group_points, namespace_from, result_of

STEM = "16_causal_shift"

# Input checks shared by the answers below (each answer is a complete cell's worth of code).
CHECKED = """
import numpy as np

def _checked(model_logits, input_ids, response_token_mask):
    logits = np.asarray(model_logits, dtype=np.float64)
    ids = np.asarray(input_ids)
    mask = np.asarray(response_token_mask)
    if logits.ndim != 3:
        raise ValueError("model_logits must be [B, L, V]")
    if ids.dtype == bool or not np.issubdtype(ids.dtype, np.integer):
        raise TypeError("input_ids must be integers")
    if ids.shape != logits.shape[:2] or mask.shape != ids.shape:
        raise ValueError("input_ids and response_token_mask must be [B, L]")
    if logits.shape[1] < 2:
        raise ValueError("L must be at least 2")
    if ids.min() < 0 or ids.max() >= logits.shape[2]:
        raise ValueError("input_ids outside the vocabulary")
    if not np.isfinite(logits).all():
        raise ValueError("model_logits must be finite")
    return logits, ids, mask

def _log_softmax(z, axis=-1):
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
"""


def answer(body: str, signature: str = "model_logits, input_ids, response_token_mask") -> str:
    """A complete answer: the shared helpers, then ``body`` as the function's body."""
    return (CHECKED + f"\ndef causal_response_logprobs({signature}):\n"
            + textwrap.indent(textwrap.dedent(body), "    "))


CORRECT = {
    "take_along_axis": answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected, mask[:, 1:].astype(bool)
    """),
    "fancy_indexing_gather_first": answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        B, L, V = logits.shape
        rows = np.arange(B)[:, None]
        cols = np.arange(L - 1)[None, :]
        # pick the target's logit first, then subtract the log-normaliser of its row
        target_logit = logits[rows, cols, ids[:, 1:]]
        m = logits[:, :-1].max(axis=-1)
        lse = m + np.log(np.exp(logits[:, :-1] - m[..., None]).sum(axis=-1))
        return target_logit - lse, mask[:, 1:] == 1
    """),
    "python_loops": answer("""
        import math
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        B, L, V = logits.shape
        selected = np.zeros((B, L - 1))
        shifted = np.zeros((B, L - 1), dtype=bool)
        for b in range(B):
            for t in range(L - 1):
                row = [float(v) for v in logits[b, t]]
                m = max(row)
                total = math.fsum(math.exp(v - m) for v in row)
                selected[b, t] = row[int(ids[b, t + 1])] - m - math.log(total)
                shifted[b, t] = bool(mask[b, t + 1])
        return selected, shifted
    """),
    "returns_lists_of_floats_and_bools": answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return [selected.tolist(), mask[:, 1:].astype(bool).tolist()]
    """),
    "mask_compared_with_zero": answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected, mask[:, 1:] != 0
    """),
    "prints_warns_and_extra_keyword": answer("""
        import warnings
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        if verbose:
            print("batch", logits.shape)
        warnings.warn("computing log-probabilities", RuntimeWarning)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected, mask[:, 1:].astype(bool)
    """, signature="model_logits, input_ids, response_token_mask, verbose=True"),
    "namedtuple_result": answer("""
        from collections import namedtuple
        Result = namedtuple("Result", "selected shifted_mask")
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        return Result(np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool))
    """),
}

WRONG = {
    # The notebook asks for float64 and for booleans: keeping float32 or returning 0/1 loses points.
    "keeps_float32": (answer("""
        dtype = np.float32 if getattr(model_logits, "dtype", None) == np.float32 else np.float64
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :].astype(dtype))
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected, mask[:, 1:].astype(bool)
    """), "float32-output", "float32 logits"),
    "float32_arithmetic_inside": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :].astype(np.float32))
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected.astype(np.float64), mask[:, 1:].astype(bool)
    """), "float32-arithmetic"),
    "integer_mask": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected, mask[:, 1:]
    """), "mask-not-boolean"),
    "integer_mask_as_lists": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        return selected.tolist(), mask[:, 1:].astype(int).tolist()
    """), "mask-not-boolean"),
    "same_position_full_length": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        selected = np.take_along_axis(_log_softmax(logits), ids[..., None], axis=-1)[..., 0]
        return selected, mask[:, 1:].astype(bool)
    """), "same-position"),
    "same_position_drop_first": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, 1:, :])
        return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "same-position"),
    "same_position_drop_last": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        return np.take_along_axis(log_p, ids[:, :-1, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "same-position"),
    "shift_backwards": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, 1:, :])
        return np.take_along_axis(log_p, ids[:, :-1, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "shift-backwards"),
    "mask_shifted_wrong_way": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, :-1].astype(bool)
    """), "mask-wrong-shift"),
    "mask_not_shifted": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask.astype(bool)
    """), "mask-not-shifted"),
    "gathers_raw_logits": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        return np.take_along_axis(logits[:, :-1], ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "gathered-logits"),
    "gathers_probabilities": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        p = np.exp(_log_softmax(logits[:, :-1, :]))
        return np.take_along_axis(p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "gathered-probabilities"),
    "normalises_over_positions": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :], axis=1)
        return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "normalised-wrong-axis"),
    "zeroes_masked_positions": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        log_p = _log_softmax(logits[:, :-1, :])
        selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
        shifted = mask[:, 1:].astype(bool)
        return np.where(shifted, selected, 0.0), shifted
    """), "masked-selected"),
    "no_max_shift": (answer("""
        logits, ids, mask = _checked(model_logits, input_ids, response_token_mask)
        z = logits[:, :-1, :]
        log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
        return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
    """), "no-max-shift"),
    "casts_float_ids_silently": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    logits = np.asarray(model_logits, dtype=np.float64)
    ids = np.asarray(input_ids).astype(np.int64)
    mask = np.asarray(response_token_mask)
    if logits.ndim != 3 or ids.shape != logits.shape[:2] or mask.shape != ids.shape or logits.shape[1] < 2:
        raise ValueError("bad shapes")
    if ids.min() < 0 or ids.max() >= logits.shape[2] or not np.isfinite(logits).all():
        raise ValueError("bad values")
    z = logits[:, :-1, :]
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0], mask[:, 1:].astype(bool)
""", "silent-bad-input"),
    "no_input_checks": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    z = np.asarray(model_logits, dtype=np.float64)[:, :-1, :]
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    ids = np.asarray(input_ids)
    selected = np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]
    return selected, np.asarray(response_token_mask)[:, 1:].astype(bool)
""", "silent-bad-input"),
}

# Hostile answers and what they attack: whole groups, or (for a hostile half of the pair) every split
# case that judges that half.
ADVERSARIAL = {
    "object_with_lying_eq": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros((1, 2))
def causal_response_logprobs(model_logits, input_ids, response_token_mask): return Anything(), Anything()
""", ("public", "alignment", "inputs")),
    "ndarray_subclass_lying_eq": ("""
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def __sub__(self, other): return np.zeros(self.shape)
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    B, L = np.shape(input_ids)
    return np.full((B, L - 1), -0.5).view(Liar), np.zeros((B, L - 1), dtype=bool).view(Liar)
""", ("public", "alignment", "inputs")),
    "nan_everywhere": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    B, L = np.shape(input_ids)
    return np.full((B, L - 1), np.nan), np.asarray(response_token_mask)[:, 1:].astype(bool)
""", ("inputs", "selected log-probabilities")),
    "generator_pair": ("""
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    return (x for x in range(2))
""", ("public", "alignment", "inputs", "validation")),
    "one_array_instead_of_a_pair": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    B, L = np.shape(input_ids)
    return np.full((B, L - 1), -np.log(4.0))
""", ("public", "alignment", "inputs")),
    "three_items": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    B, L = np.shape(input_ids)
    return np.full((B, L - 1), -np.log(4.0)), np.ones((B, L - 1), dtype=bool), None
""", ("public", "alignment", "inputs")),
    "huge_arrays": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    return np.zeros(10_000_000), np.zeros(10_000_000, dtype=bool)
""", ("public", "alignment", "inputs", "validation")),
    "raises_everything": ("""
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    raise KeyboardInterrupt
""", ("public", "alignment", "inputs", "validation")),
    "mask_of_twos": ("""
import numpy as np
def causal_response_logprobs(model_logits, input_ids, response_token_mask):
    z = np.asarray(model_logits, dtype=np.float64)[:, :-1, :]
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    selected = np.take_along_axis(log_p, np.asarray(input_ids)[:, 1:, None], axis=-1)[..., 0]
    return selected, np.full(selected.shape, 2)
""", ("inputs", "shifted mask")),
}


class TestCausalShift(CodingCheckTests):
    stem = STEM
    central_mistakes = ('same_position_full_length', 'same_position_drop_first', 'same_position_drop_last', 'shift_backwards', 'mask_shifted_wrong_way', 'mask_not_shifted')
    groups = ("public", "alignment", "inputs", "validation")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("causal_response_logprobs",)
    quiet_mistakes = ("same_position_full_length", "gathers_raw_logits", "mask_shifted_wrong_way")


SHIFT_MISTAKES = ("same_position_full_length", "same_position_drop_first", "same_position_drop_last",
                  "shift_backwards", "mask_shifted_wrong_way", "mask_not_shifted")


@pytest.mark.parametrize("label", SHIFT_MISTAKES)
def test_a_missing_or_reversed_shift_earns_at_most_a_third(label):
    result = result_of(STEM, WRONG[label][0])
    assert result.points_earned <= 3.0, result.feedback()
    assert all(group.capped for group in result.groups), result.feedback()
    # every hidden cell, graded on its own as nbgrader does, applies the same cap
    for group in result.groups:
        alone = result_of(STEM, WRONG[label][0], [group.name])
        assert alone.points_earned <= group.points_available / 3 + 1e-9, alone.feedback()


@pytest.mark.parametrize("label", ["same_position_drop_first", "same_position_drop_last", "shift_backwards"])
def test_the_public_checks_catch_a_missing_or_reversed_shift(label):
    namespace = namespace_from(WRONG[label][0])
    with pytest.raises(AssertionError, match="paired with"):
        exec(compile(_public_check_source(), "<check>", "exec"), namespace)
    assert group_points(result_of(STEM, namespace, ["public"]))["public"][0] < 2


def test_side_mistakes_are_not_capped():
    for label in ("integer_mask", "keeps_float32", "no_input_checks", "zeroes_masked_positions"):
        result = result_of(STEM, WRONG[label][0])
        assert not any(group.capped for group in result.groups), (label, result.feedback())
        assert result.points_earned > 3.0, (label, result.feedback())


def test_one_mistake_one_message_whatever_the_length():
    """Shifting the wrong way is named as such on every case, L = 2 included (never 'same position')."""
    for label, key in (("shift_backwards", "shift-backwards"), ("same_position_drop_first", "same-position")):
        result = result_of(STEM, WRONG[label][0], ["alignment"])
        failed = [case for case in result.cases if not case.passed]
        assert failed and all(case.misconception == key for case in failed), result.feedback()


def _public_check_source() -> str:
    from check_support import source_notebook
    cell = next(c for c in source_notebook(STEM).cells if c.id == "check-causal-response-logprobs")
    return cell.source


def test_a_mask_that_keeps_the_first_flag_is_told_so():
    """Issue 22: mask[:, :-1] keeps the first token's flag and drops the last; the message said the reverse."""
    result = result_of(STEM, WRONG["mask_shifted_wrong_way"][0])
    messages = {case.message for case in result.cases if case.misconception == "mask-wrong-shift"}
    assert messages == {
        "The mask was shifted the wrong way: it kept the flag of the first token and dropped the last one. "
        "Each output position scores the NEXT token, so its flag must be that next token's flag: the first "
        "token is never a target, the last one is."}, result.feedback()
