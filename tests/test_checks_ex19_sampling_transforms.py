"""The hidden checks of exercise 19 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from autograder.checks import CHECKS
from check_support import CodingCheckTests, result_of

STEM = "19_sampling_transforms"

# A complete, correct answer written in small replaceable pieces; the wrong answers edit one piece.
COMMON = """
import numpy as np

def _check_logits(logits):
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError("logits must be a non-empty finite 1-D array")
    return z

def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()

def _order(p):
    return np.argsort(-p, kind="stable")

def _renormalise(p, ids):
    out = np.zeros_like(p)
    out[ids] = p[ids]
    return out / out.sum()
"""

TEMPERATURE = """
def temperature_distribution(logits, temperature):
    z = _check_logits(logits)
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError("temperature must be positive")
    return _softmax(z / temperature)
"""

TOP_K = """
def top_k_distribution(logits, k):
    p = _softmax(_check_logits(logits))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p.size:
        raise ValueError("k must be an integer in [1, V]")
    return _renormalise(p, _order(p)[:k])
"""

TOP_P = """
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1):
    p = _softmax(_check_logits(logits))
    if not (0.0 < top_p <= 1.0):
        raise ValueError("top_p must lie in (0, 1]")
    if isinstance(min_tokens_to_keep, bool) or not 1 <= min_tokens_to_keep <= p.size:
        raise ValueError("min_tokens_to_keep must be in [1, V]")
    order = _order(p)
    if top_p >= 1.0:
        count = p.size
    else:
        prefix = np.cumsum(p[order])
        # a float running sum can land an ulp short of a decimal threshold
        count = int(np.searchsorted(prefix, top_p - 1e-12, side="left")) + 1
    count = max(min(count, p.size), min_tokens_to_keep)
    return _renormalise(p, order[:count])
"""

REFERENCE_STYLE = COMMON + TEMPERATURE + TOP_K + TOP_P

CORRECT = {
    "vectorised": REFERENCE_STYLE,
    "loops": """
import math
import numpy as np

def _probs(logits, t=1.0):
    z = [float(v) for v in np.asarray(logits, dtype=float).ravel()]
    if np.ndim(logits) != 1 or not z or not all(math.isfinite(v) for v in z):
        raise ValueError("bad logits")
    m = max(z)
    e = [math.exp((v - m) / t) for v in z]
    s = sum(e)
    return [v / s for v in e]

def temperature_distribution(logits, temperature):
    if not temperature > 0 or math.isinf(temperature):
        raise ValueError("temperature must be positive")
    return np.array(_probs(logits, temperature))

def _ranked(p):
    return sorted(range(len(p)), key=lambda i: (-p[i], i))

def _kept(p, ids):
    mass = math.fsum(p[i] for i in ids)
    return np.array([p[i] / mass if i in ids else 0.0 for i in range(len(p))])

def top_k_distribution(logits, k):
    p = _probs(logits)
    if type(k) is not int or not 1 <= k <= len(p):
        raise TypeError("k must be an int between 1 and V")
    return _kept(p, set(_ranked(p)[:k]))

def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1):
    p = _probs(logits)
    if not 0 < top_p <= 1:
        raise ValueError("top_p must be in (0, 1]")
    ids, mass = [], 0.0
    for i in _ranked(p):
        if len(ids) >= min_tokens_to_keep and (mass >= top_p - 1e-9) and top_p < 1:
            break
        ids.append(i)
        mass += p[i]
    return _kept(p, set(ids))
""",
    "hf_style_rule_with_stable_sort": COMMON + TEMPERATURE + TOP_K + """
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1):
    # Transformers' formulation (drop the tail whose mass is at most 1 - top_p), but with a stable
    # order in which the smaller id wins ties, and the whole support at top_p = 1.
    p = _softmax(_check_logits(logits))
    if not (0.0 < top_p <= 1.0):
        raise ValueError("top_p must lie in (0, 1]")
    order = _order(p)
    tail_first = order[::-1]
    tail_mass = np.cumsum(p[tail_first])
    drop = tail_mass <= (1.0 - top_p) * (1 + 1e-12) + 1e-15 if top_p < 1.0 else np.zeros(p.size, bool)
    drop[-min_tokens_to_keep:] = False
    return _renormalise(p, tail_first[~drop])
""",
    "returns_lists": REFERENCE_STYLE.replace("    return out / out.sum()", "    return (out / out.sum()).tolist()"),
    "prints_and_warns": REFERENCE_STYLE.replace(
        "    order = _order(p)\n    if top_p",
        "    order = _order(p)\n    print('sorted ids', order)\n"
        "    import warnings; warnings.warn('truncating the distribution')\n    if top_p"),
    "extra_keyword_arguments": REFERENCE_STYLE.replace(
        "def temperature_distribution(logits, temperature):",
        "def temperature_distribution(logits, temperature, axis=-1):").replace(
        "def top_k_distribution(logits, k):", "def top_k_distribution(logits, k, *, renormalise=True):"),
    # The engines' rule at a tie (the notebook accepts it): every token tied with the k-th survives,
    # written as transformers' TopKLogitsWarper (a threshold on the logits) and as a threshold on p.
    "top_k_keeps_ties_like_transformers": COMMON + TEMPERATURE + TOP_K.replace(
        "return _renormalise(p, _order(p)[:k])",
        "z = _check_logits(logits)\n    kth = np.sort(z)[::-1][k - 1]\n"
        "    return _renormalise(p, np.flatnonzero(~(z < kth)))") + TOP_P,
    "top_k_value_threshold": REFERENCE_STYLE.replace(
        "return _renormalise(p, _order(p)[:k])", "return _renormalise(p, p >= p[_order(p)[k - 1]])"),
    "log_space_renormalisation": COMMON + TEMPERATURE + TOP_K.replace(
        "return _renormalise(p, _order(p)[:k])",
        "z = np.log(p)\n    keep = _order(p)[:k]\n    out = np.full(p.size, -np.inf)\n    out[keep] = z[keep]\n"
        "    out = out - np.logaddexp.reduce(out[keep])\n    return np.exp(out)") + TOP_P,
}

WRONG = {
    "temperature_multiplied": (REFERENCE_STYLE.replace("_softmax(z / temperature)", "_softmax(z * temperature)"),
                               "temperature-multiplied"),
    "temperature_not_rejected": (REFERENCE_STYLE.replace(
        "    if not np.isfinite(temperature) or temperature <= 0:\n        raise ValueError(\"temperature must be positive\")\n",
        "    temperature = abs(temperature) + 1e-3\n"), "silent-bad-input"),
    "no_renormalisation": (REFERENCE_STYLE.replace("    return out / out.sum()", "    return out"), "no-renormalise"),
    "ties_to_larger_id": (REFERENCE_STYLE.replace('np.argsort(-p, kind="stable")', 'np.argsort(p, kind="stable")[::-1]'),
                          "tie-order"),
    # NumPy's default sort is not stable: on blocks of ties it reorders equal probabilities everywhere.
    "unstable_sort": (REFERENCE_STYLE.replace('np.argsort(-p, kind="stable")', 'np.argsort(-p)'), "tie-order",
                      "top-k: a block of tied tokens among 200, the cut inside it"),
    "heapsort": (REFERENCE_STYLE.replace('np.argsort(-p, kind="stable")', 'np.argsort(-p, kind="heapsort")'),
                 "tie-order", "top-p: a block of tied tokens among 100, the nucleus ends inside it"),
    # "T <= 0 or not finite" is bad input: inf (a uniform answer) and NaN (a NaN answer) must raise.
    "temperature_only_positive": (REFERENCE_STYLE.replace(
        "    if not np.isfinite(temperature) or temperature <= 0:", "    if temperature <= 0:"),
        "silent-bad-input", "an infinite temperature"),
    "temperature_nan_accepted": (REFERENCE_STYLE.replace(
        "    if not np.isfinite(temperature) or temperature <= 0:",
        "    if temperature <= 0 or temperature == np.inf:"), "silent-bad-input", "a NaN temperature"),
    "top_p_nan_accepted": (REFERENCE_STYLE.replace(
        "    if not (0.0 < top_p <= 1.0):", "    if top_p <= 0.0 or top_p > 1.0:"), "silent-bad-input",
        "a NaN top_p"),
    "logits_not_checked": (REFERENCE_STYLE.replace(
        "    if z.ndim != 1 or z.size == 0 or not np.all(np.isfinite(z)):",
        "    if np.any(np.isnan(z)):"), "silent-bad-input", "+inf in the logits"),
    "float32_arithmetic_inside": (REFERENCE_STYLE.replace(
        "    e = np.exp(z - z.max())\n    return e / e.sum()",
        "    z = z.astype(np.float32)\n    e = np.exp(z - z.max())\n    return (e / e.sum()).astype(np.float64)"),
        "float32-arithmetic"),
    "top_k_bad_k_accepted": (REFERENCE_STYLE.replace(
        "    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p.size:\n"
        "        raise ValueError(\"k must be an integer in [1, V]\")\n",
        "    k = max(1, min(int(k), p.size))\n"), "silent-bad-input"),
    "top_p_drops_threshold_token": (REFERENCE_STYLE.replace(
        'np.searchsorted(prefix, top_p - 1e-12, side="left")) + 1', 'np.searchsorted(prefix, top_p - 1e-12, side="left"))'),
        "top-p-drops-threshold-token"),
    "top_p_strict_comparison": (REFERENCE_STYLE.replace(
        'np.searchsorted(prefix, top_p - 1e-12, side="left")', 'np.searchsorted(prefix, top_p, side="right")'),
        "top-p-keeps-extra"),
    "top_p_no_rounding_tolerance": (REFERENCE_STYLE.replace("top_p - 1e-12", "top_p"), "top-p-keeps-extra"),
    "top_p_one_not_special": (REFERENCE_STYLE.replace("if top_p >= 1.0:", "if False:"), "top-p-one-drops-support"),
    "min_tokens_ignored": (REFERENCE_STYLE.replace(
        "count = max(min(count, p.size), min_tokens_to_keep)", "count = min(count, p.size)"), "min-tokens-ignored"),
    "top_p_range_not_checked": (REFERENCE_STYLE.replace(
        "    if not (0.0 < top_p <= 1.0):\n        raise ValueError(\"top_p must lie in (0, 1]\")\n", ""),
        "silent-bad-input"),
    "top_p_in_id_order": (REFERENCE_STYLE.replace(
        "prefix = np.cumsum(p[order])", "order = np.arange(p.size)\n        prefix = np.cumsum(p[order])"),
        "top-p-unsorted"),
    "softmax_without_normaliser": (REFERENCE_STYLE.replace(
        "    return _softmax(z / temperature)", "    s = z / temperature\n    return np.exp(s - s.max())"),
        "softmax-unnormalised"),
    "softmax_without_max_shift": (REFERENCE_STYLE.replace(
        "    e = np.exp(z - z.max())", "    e = np.exp(z)"), "no-max-shift"),
    "float32_results": (REFERENCE_STYLE.replace("    return out / out.sum()", "    return (out / out.sum()).astype(np.float32)")
                        .replace("return _softmax(z / temperature)", "return _softmax(z / temperature).astype(np.float32)"),
                        "float32-output"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.ones(4) / 4
def temperature_distribution(logits, temperature): return Anything()
def top_k_distribution(logits, k): return Anything()
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1): return Anything()
""", ("public", "temperature", "top_k", "top_p")),
    "ndarray_subclass": ("""
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def sum(self, *a, **k): return 1.0
def _fake(logits):
    return np.zeros(np.shape(logits)).view(Liar)
def temperature_distribution(logits, temperature): return _fake(logits)
def top_k_distribution(logits, k): return _fake(logits)
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1): return _fake(logits)
""", ("public", "temperature", "top_k", "top_p")),
    "nan_everywhere": ("""
import numpy as np
def temperature_distribution(logits, temperature): return np.full(np.shape(logits), np.nan)
def top_k_distribution(logits, k): return np.full(np.shape(logits), np.nan)
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1): return np.full(np.shape(logits), np.nan)
""", ("public", "temperature", "top_k", "top_p")),
    "generators_and_wrong_shapes": ("""
import numpy as np
def temperature_distribution(logits, temperature): return (x for x in [1.0])
def top_k_distribution(logits, k): return np.ones((1, len(logits))) / len(logits)
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1): return {"p": 1.0}
""", ("public", "temperature", "top_k", "top_p")),
    "huge_and_raising": ("""
import numpy as np
def temperature_distribution(logits, temperature): return np.zeros(10_000_000)
def top_k_distribution(logits, k): raise KeyboardInterrupt
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1): raise RuntimeError("no")
""", ("public", "temperature", "top_k", "top_p")),
    # the tester's lookup of the boundary-check cell (issue 22): the published trap at 0.75 and 0.76 earned
    # 0.31 of top-p's 3 points while every other nucleus was junk
    "boundary_check_lookup": ("""
import numpy as np
_TRAP = np.log([0.55, 0.20, 0.15, 0.10])
def temperature_distribution(logits, temperature): return None
def top_k_distribution(logits, k): return None
def top_p_distribution(logits, top_p, *, min_tokens_to_keep=1):
    z = np.asarray(logits, dtype=np.float64)
    if z.shape == (4,) and np.array_equal(z, _TRAP) and top_p == 0.75:
        return np.array([0.55 / 0.75, 0.20 / 0.75, 0.0, 0.0])
    if z.shape == (4,) and np.array_equal(z, _TRAP) and top_p == 0.76:
        return np.array([0.55, 0.20, 0.15, 0.0]) / 0.90
    if z.shape == (2,) and np.array_equal(z, [0.0, -46.0]):
        return np.exp(z) / np.exp(z).sum()
    return None
""", ("public", "temperature", "top_k", "top_p")),
}


def test_the_boundary_check_lookup_would_pass_the_taught_cases_without_the_gate():
    """The stub is what it claims: it returns the right answer on the two taught cases, which the gate
    on ordinary hidden nuclei then withholds."""
    result = result_of(STEM, ADVERSARIAL["boundary_check_lookup"][0], ["top_p"])
    taught = [case for case in result.cases if "the task's nucleus" in case.name]
    assert len(taught) == 2 and all(case.withheld for case in taught), result.feedback()  # its own verdict passed
    assert result.points_earned == 0, result.feedback()


# The task asks for ValueError for bad values; TypeError there is named.
WRONG["type_error_for_bad_logits"] = (REFERENCE_STYLE.replace('raise ValueError("logits must be a non-empty finite 1-D array")', 'raise TypeError("logits must be a non-empty finite 1-D array")'), "value-error-expected", "empty logits")


class TestSamplingTransforms(CodingCheckTests):
    stem = STEM
    central_mistakes = ('top_p_drops_threshold_token', 'top_p_in_id_order')
    groups = ("public", "temperature", "top_k", "top_p", "validation")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("temperature_distribution", "top_k_distribution", "top_p_distribution")
    quiet_mistakes = ("ties_to_larger_id", "unstable_sort", "temperature_only_positive")


def test_the_seeds_solution_loses_only_the_taught_boundary_cases():
    # The seed's own top-p compares a float running sum with top_p without a tolerance, so on
    # logits log(0.55, 0.20, 0.15, 0.10) at 0.75 it keeps three tokens; the notebook teaches two.
    seed = REFERENCE_STYLE.replace("top_p - 1e-12", "top_p").replace("if top_p >= 1.0:", "if False:")
    result = result_of(STEM, seed)
    failed = [case.name for case in result.cases if not case.passed]
    assert failed == ["top-p: the task's nucleus (0.55, 0.20, 0.15, 0.10) at 0.75 keeps two tokens",
                      "top-p: top_p = 1 keeps even a token of probability 1e-20"], result.feedback()


import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from check_support import namespace_from, source_notebook  # noqa: E402

@pytest.mark.parametrize("label", ["ties_to_larger_id", "unstable_sort", "top_p_strict_comparison",
                                   "temperature_only_positive", "float32_results"])
def test_side_mistakes_are_not_capped(label):
    result = result_of(STEM, WRONG[label][0])
    assert not any(group.capped for group in result.groups), result.feedback()


TIE_CASES = [name for name in (case.name for case in CHECKS[STEM].cases()) if "block of tied tokens" in name]

_UNSTABLE_PROBE = """
import json, sys
import numpy as np
sys.path[:0] = {paths!r}
from check_support import result_of
from test_checks_ex19_sampling_transforms import WRONG
for label in ("unstable_sort", "heapsort"):
    result = result_of("19_sampling_transforms", WRONG[label][0])
    failed = sorted(case.name for case in result.cases if not case.passed and case.misconception == "tie-order")
    print(json.dumps([label, failed]))
"""


@pytest.mark.parametrize("features", ["", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"], ids=["default", "no-simd"])
def test_an_unstable_sort_fails_every_tie_block_case_whatever_the_cpu(features):
    """NumPy sorts with SIMD code on CPUs that have it and with introsort elsewhere; the tie-block
    cases must fail an unstable sort under both (NPY_DISABLE_CPU_FEATURES switches the SIMD sorts off)."""
    import json
    assert len(TIE_CASES) == 8
    here = Path(__file__).resolve().parent
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    if features:
        env["NPY_DISABLE_CPU_FEATURES"] = features
    probe = _UNSTABLE_PROBE.format(paths=[str(here), str(here.parent)])
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for line in done.stdout.strip().splitlines():
        label, failed = json.loads(line)
        assert set(TIE_CASES) <= set(failed), (label, sorted(set(TIE_CASES) - set(failed)))


def test_the_tie_blocks_cut_inside_the_block_far_from_any_rounding_boundary():
    import importlib
    import numpy as np
    check = importlib.import_module("autograder.exercises.19_sampling_transforms.check")
    for vocabulary in check.TIE_BLOCK_SIZES:
        z, k, top_p = check.tie_block(vocabulary)
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        ranked = np.sort(p)[::-1]
        prefix = np.cumsum(ranked)
        assert np.min(np.abs(prefix - top_p)) > 1e3 * check.BOUNDARY
        assert int(np.searchsorted(prefix, top_p)) + 1 == k
        # the k-th token and the next are tied, with ties on both sides of the cut
        assert ranked[k - 2] == ranked[k - 1] == ranked[k]


def test_a_nucleus_that_drops_the_threshold_token_fails_the_open_checks():
    cell = next(c for c in source_notebook(STEM).cells if c.id == "check-boundaries")
    namespace = namespace_from(WRONG["top_p_drops_threshold_token"][0])
    with pytest.raises(AssertionError):
        exec(compile(cell.source, "<check>", "exec"), namespace)
