"""The hidden checks of exercise 17 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

import pytest

import textwrap

from check_support import CodingCheckTests, result_of

STEM = "17_sequence_metrics"

# The result type the notebook gives (the gate tests reuse it), then input checks shared by the answers below.
SEQUENCE_METRICS = """
import math
from dataclasses import dataclass
import numpy as np

@dataclass(frozen=True)
class SequenceMetrics:
    token_count: np.ndarray
    sum_logprob: np.ndarray
    mean_nll: np.ndarray
    perplexity: np.ndarray
"""

HEAD = SEQUENCE_METRICS + """
def _checked(selected_logprobs, mask):
    x = np.asarray(selected_logprobs, dtype=np.float64)
    m = np.asarray(mask).astype(bool)
    if x.ndim != 2 or x.shape != m.shape:
        raise ValueError("selected_logprobs and mask must both be [B, T]")
    if np.any(m.sum(axis=1) == 0):
        raise ValueError("empty response")
    if not np.all(np.isfinite(x[m])):
        raise ValueError("active log-probabilities must be finite")
    return x, m
"""


def answer(body: str, signature: str = "selected_logprobs, mask") -> str:
    """A complete answer: the shared head, then ``body`` as the function's body."""
    return HEAD + f"\ndef masked_sequence_metrics({signature}):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def metrics(count: str = "n", total: str = "s", mean: str = "-s / n", ppl: str = "np.exp(-s / n)",
            start: str = "s = np.where(m, x, 0.0).sum(axis=1)") -> str:
    """An answer whose four fields are the given expressions of ``x``, ``m``, ``n`` and ``s``."""
    return answer(f"""
        x, m = _checked(selected_logprobs, mask)
        n = m.sum(axis=1)
        {start}
        return SequenceMetrics(token_count={count}, sum_logprob={total}, mean_nll={mean}, perplexity={ppl})
    """)


CORRECT = {
    "vectorised_where": metrics(),
    "boolean_indexing_loop": answer("""
        x, m = _checked(selected_logprobs, mask)
        rows = [x[b][m[b]] for b in range(x.shape[0])]
        n = np.array([len(r) for r in rows])
        s = np.array([math.fsum(r) for r in rows])
        return SequenceMetrics(n, s, -s / n, np.exp(-s / n))
    """),
    "python_loops_other_order": answer("""
        x, m = _checked(selected_logprobs, mask)
        counts, sums = [], []
        for row, keep in zip(x.tolist(), m.tolist()):
            total = 0.0
            for value, on in reversed(list(zip(row, keep))):
                if on:
                    total += value
            counts.append(sum(keep))
            sums.append(total)
        mean = [-t / c for t, c in zip(sums, counts)]
        # the task asks for arrays of shape [B]: the lists are converted on the way out
        return SequenceMetrics(np.array(counts), np.array(sums), np.array(mean), np.array([math.exp(v) for v in mean]))
    """),
    "float_counts_and_nanmean": answer("""
        x, m = _checked(selected_logprobs, mask)
        n = m.sum(axis=1).astype(np.float64)
        mean = -np.nanmean(np.where(m, x, np.nan), axis=1)
        return SequenceMetrics(n, -mean * n, mean, np.exp(mean))
    """),
    "returns_namedtuple": answer("""
        from collections import namedtuple
        Metrics = namedtuple("Metrics", "token_count sum_logprob mean_nll perplexity")
        x, m = _checked(selected_logprobs, mask)
        n = m.sum(axis=1)
        s = np.where(m, x, 0.0).sum(axis=1)
        return Metrics(n, s, -s / n, np.exp(-s / n))
    """),
    "plain_object_with_attributes": answer("""
        class Result:
            pass
        x, m = _checked(selected_logprobs, mask)
        out = Result()
        out.token_count = m.sum(axis=1)
        out.sum_logprob = np.where(m, x, 0.0).sum(axis=1)
        out.mean_nll = -out.sum_logprob / out.token_count
        out.perplexity = np.exp(out.mean_nll)
        return out
    """),
    "keeps_float32": answer("""
        dtype = np.float32 if getattr(selected_logprobs, "dtype", None) == np.float32 else np.float64
        x, m = _checked(selected_logprobs, mask)
        x = x.astype(dtype)
        n = m.sum(axis=1)
        s = np.where(m, x, dtype(0)).sum(axis=1)
        mean = -s / n.astype(dtype)
        return SequenceMetrics(n, s, mean, np.exp(mean))
    """),
    # The fair reading: float32 input summed in float32, the mean divided by an int64 count
    # (so it comes out float64): right to float32 precision, which the task allows for float32 input.
    "keeps_the_inputs_dtype": """
import numpy as np
from dataclasses import dataclass

@dataclass(frozen=True)
class SequenceMetrics:
    token_count: np.ndarray
    sum_logprob: np.ndarray
    mean_nll: np.ndarray
    perplexity: np.ndarray

def masked_sequence_metrics(selected_logprobs, mask):
    x = np.asarray(selected_logprobs)
    m = np.asarray(mask).astype(bool)
    if x.ndim != 2 or x.shape != m.shape:
        raise ValueError("shapes")
    n = m.sum(axis=1)
    if np.any(n == 0) or not np.all(np.isfinite(x[m])):
        raise ValueError("empty response or non-finite active log-probability")
    s = np.where(m, x, 0).sum(axis=1)
    return SequenceMetrics(n, s, -s / n, np.exp(-s / n))
""",
    "prints_warns_and_extra_keyword": answer("""
        import warnings
        x, m = _checked(selected_logprobs, mask)
        n = m.sum(axis=1)
        s = np.where(m, x, 0.0).sum(axis=1)
        if verbose:
            print("responses:", len(n))
            warnings.warn("summarising", UserWarning)
        return SequenceMetrics(n, s, -s / n, np.exp(-s / n))
    """, signature="selected_logprobs, mask, verbose=True"),
    "accepts_one_dimensional_too": answer("""
        x = np.asarray(selected_logprobs, dtype=np.float64)
        m = np.asarray(mask).astype(bool)
        if x.ndim == 1 and m.ndim == 1:
            x, m = x[None], m[None]
        x, m = _checked(x, m)
        n = m.sum(axis=1)
        s = np.where(m, x, 0.0).sum(axis=1)
        return SequenceMetrics(n, s, -s / n, np.exp(-s / n))
    """),
}

WRONG = {
    "float32_arithmetic_inside": (metrics(start="s = np.where(m, x, 0.0).astype(np.float32).sum(axis=1).astype(np.float64)"),
                                  "float32-arithmetic"),
    "clipped_probabilities": (metrics(start="s = np.where(m, np.log(np.clip(np.exp(x), 1e-12, 1.0)), 0.0).sum(axis=1)"),
                              "clipped-log", "very unlikely tokens (log-probabilities near -700)"),
    "counts_padding": (metrics(count="np.full(len(n), x.shape[1])"), "padding-counted"),
    "sums_padding": (metrics(total="x.sum(axis=1)"), "sum-includes-padding"),
    "mean_over_row_length": (metrics(mean="-s / x.shape[1]", ppl="np.exp(-s / x.shape[1])"), "mean-over-padding"),
    "mean_of_everything": (metrics(mean="-x.mean(axis=1)", ppl="np.exp(-x.mean(axis=1))"), "mean-over-padding"),
    "nll_sign": (metrics(mean="s / n"), "nll-sign"),
    "nll_in_bits": (metrics(mean="-s / n / math.log(2)", ppl="2.0 ** (-s / n / math.log(2))"), "nll-in-bits"),
    "perplexity_from_sum": (metrics(ppl="np.exp(-s)"), "perplexity-from-sum"),
    "perplexity_sign": (metrics(ppl="np.exp(s / n)"), "perplexity-sign"),
    "perplexity_base_2": (metrics(ppl="2.0 ** (-s / n)"), "perplexity-base-2"),
    "perplexity_from_product": (metrics(ppl="np.prod(np.where(m, np.exp(x), 1.0), axis=1) ** (-1.0 / n)"),
                                "perplexity-product-underflow"),
    "batch_mean": (metrics(mean="-s.sum() / n.sum()", ppl="np.exp(-s.sum() / n.sum())"), "batch-mean"),
    "multiplies_by_mask": (metrics(start="s = (x * m).sum(axis=1)"), "padding-poisons-result"),
    "no_empty_check": ("""
from dataclasses import dataclass
import numpy as np

@dataclass(frozen=True)
class SequenceMetrics:
    token_count: np.ndarray
    sum_logprob: np.ndarray
    mean_nll: np.ndarray
    perplexity: np.ndarray

def masked_sequence_metrics(selected_logprobs, mask):
    x = np.asarray(selected_logprobs, dtype=np.float64)
    m = np.asarray(mask).astype(bool)
    if x.shape != m.shape:
        raise ValueError("shapes differ")
    n = m.sum(axis=1)
    s = np.where(m, x, 0.0).sum(axis=1)
    return SequenceMetrics(n, s, -s / n, np.exp(-s / n))
""", "silent-bad-input"),
}

ADVERSARIAL = {
    "object_with_lying_eq": ("""
class Anything:
    token_count = sum_logprob = mean_nll = perplexity = None
    def __eq__(self, other): return True
    def __getattr__(self, name): return self
def masked_sequence_metrics(selected_logprobs, mask): return Anything()
""", ("public", "batches", "numerics")),
    "fields_that_lie": ("""
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def __sub__(self, other): return np.zeros(self.shape)
    def __abs__(self): return np.zeros(self.shape)
class Result:
    def __init__(self, n):
        z = np.full(n, -3.0).view(Liar)
        self.token_count = self.sum_logprob = self.mean_nll = self.perplexity = z
def masked_sequence_metrics(selected_logprobs, mask): return Result(len(selected_logprobs))
""", ("public", "batches", "numerics")),
    "nan_fields": ("""
import numpy as np
def masked_sequence_metrics(selected_logprobs, mask):
    n = np.full(len(selected_logprobs), np.nan)
    return {"token_count": n, "sum_logprob": n, "mean_nll": n, "perplexity": n}
""", ("public", "batches", "numerics")),
    "generator_fields": ("""
def masked_sequence_metrics(selected_logprobs, mask):
    return {"token_count": iter([2]), "sum_logprob": (x for x in [0.0]), "mean_nll": map(float, [0]),
            "perplexity": range(1)}
""", ("public", "batches", "numerics")),
    "missing_fields": ("""
import numpy as np
def masked_sequence_metrics(selected_logprobs, mask):
    return {"token_count": np.sum(mask, axis=1)}
""", ("public", "batches", "numerics")),
    "wrong_field_shapes": ("""
import numpy as np
from types import SimpleNamespace
def masked_sequence_metrics(selected_logprobs, mask):
    x = np.asarray(selected_logprobs, dtype=float)
    m = np.asarray(mask).astype(bool)
    if not m.any(axis=1).all() or not np.isfinite(x[m]).all():
        raise ValueError("bad")
    n = m.sum(axis=1, keepdims=True)
    s = np.where(m, x, 0.0).sum(axis=1, keepdims=True)
    return SimpleNamespace(token_count=n, sum_logprob=s, mean_nll=-s / n, perplexity=np.exp(-s / n))
""", ("public", "batches", "numerics")),
    "huge_arrays": ("""
import numpy as np
def masked_sequence_metrics(selected_logprobs, mask):
    big = np.zeros(10_000_000)
    return {"token_count": big, "sum_logprob": big, "mean_nll": big, "perplexity": big}
""", ("public", "batches", "numerics", "validation")),
    "raises_everything": ("""
def masked_sequence_metrics(selected_logprobs, mask):
    raise SystemExit("no")
""", ("public", "batches", "numerics", "validation")),
    "a_string": ("""
def masked_sequence_metrics(selected_logprobs, mask):
    return "token_count=2 sum_logprob=-1.2 mean_nll=0.6 perplexity=1.8221188"
""", ("public", "batches", "numerics")),
}


# The task asks for ValueError for bad values; TypeError there is named.
WRONG["type_error_for_non_finite_logprobs"] = (CORRECT["vectorised_where"].replace('raise ValueError("active log-probabilities must be finite")', 'raise TypeError("active log-probabilities must be finite")'), "value-error-expected", "NaN at an active position")


class TestSequenceMetrics(CodingCheckTests):
    stem = STEM
    central_mistakes = ('counts_padding', 'sums_padding', 'mean_over_row_length', 'mean_of_everything')
    groups = ("public", "batches", "numerics", "validation")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("masked_sequence_metrics",)
    quiet_mistakes = ("mean_over_row_length", "perplexity_from_sum", "multiplies_by_mask")


def test_a_wrong_perplexity_keeps_the_points_for_counts_and_sums():
    result = result_of(STEM, WRONG["perplexity_base_2"][0], ["public", "batches"])
    judged = {case.name: case.passed for case in result.cases}
    assert all(passed for name, passed in judged.items() if "token_count" in name), result.feedback()
    assert result.points_earned >= 2, result.feedback()


@pytest.mark.parametrize("label", ["nll_sign", "perplexity_base_2", "float32_arithmetic_inside", "clipped_probabilities"])
def test_side_mistakes_are_not_capped(label):
    result = result_of(STEM, WRONG[label][0])
    assert not any(group.capped for group in result.groups), result.feedback()


# The outside tester's F-17a: the text says "Return a SequenceMetrics ... whose four fields are arrays of
# shape [B]"; a dict (w17g) and list fields (w17n) had full marks. Each now fails the one case that
# grades the result's form, with its own message, and keeps every other point.
FORM_MISTAKES = {
    # (was a CORRECT answer of this corpus; the text asks for a SequenceMetrics)
    "returns_a_dict": (metrics().replace(
        "return SequenceMetrics(token_count=n, sum_logprob=s, mean_nll=-s / n, perplexity=np.exp(-s / n))",
        "return dict(token_count=n, sum_logprob=s, mean_nll=-s / n, perplexity=np.exp(-s / n))"),
        "not-sequence-metrics"),
    "returns_a_plain_tuple": (metrics().replace(
        "return SequenceMetrics(token_count=n, sum_logprob=s, mean_nll=-s / n, perplexity=np.exp(-s / n))",
        "return (n, s, -s / n, np.exp(-s / n))"), "not-sequence-metrics"),
    "fields_as_lists": (metrics(count="n.tolist()", total="s.tolist()", mean="(-s / n).tolist()",
                                ppl="np.exp(-s / n).tolist()"), "list-not-array"),
}


@pytest.mark.parametrize("label", sorted(FORM_MISTAKES))
def test_the_result_form_is_graded_in_one_case(label):
    source, key = FORM_MISTAKES[label]
    assert source != metrics()
    result = result_of(STEM, source)
    failed = [case for case in result.cases if not case.passed]
    assert [case.name for case in failed] == ["a SequenceMetrics of four arrays of shape [B]"], result.feedback()
    assert failed[0].misconception == key, result.feedback()
    assert 8.5 < result.points_earned < 9, result.feedback()


def test_a_namedtuple_with_the_four_fields_is_accepted():
    source = metrics().replace("@dataclass(frozen=True)\nclass SequenceMetrics:",
                               "from typing import NamedTuple\nclass SequenceMetrics(NamedTuple):")
    assert "NamedTuple" in source
    result = result_of(STEM, source)
    assert result.points_earned == 9, result.feedback()
