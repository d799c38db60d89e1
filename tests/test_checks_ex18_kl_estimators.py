"""The hidden checks of exercise 18 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests, result_of

STEM = "18_kl_estimators"

# Pieces shared by several answers (each answer is a complete cell's worth of code).
LOG_SOFTMAX = """
import numpy as np

def _log_softmax(z):
    z = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite")
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
"""

EXACT_KL = LOG_SOFTMAX + """
def exact_kl_from_logits(p_logits, q_logits):
    p_logits = np.asarray(p_logits, dtype=np.float64)
    q_logits = np.asarray(q_logits, dtype=np.float64)
    if p_logits.shape != q_logits.shape:
        raise ValueError("p_logits and q_logits must have the same shape")
    log_p, log_q = _log_softmax(p_logits), _log_softmax(q_logits)
    return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)
"""

SAMPLES_HEAD = """
def _inputs(log_q, log_p):
    log_q = np.asarray(log_q, dtype=np.float64)
    log_p = np.asarray(log_p, dtype=np.float64)
    if log_q.shape != log_p.shape:
        raise ValueError("log_q and log_p must have the same shape")
    if not (np.all(np.isfinite(log_q)) and np.all(np.isfinite(log_p))):
        raise ValueError("log_q and log_p must be finite")
    return log_q, log_p
"""


def samples(k1: str, k2: str, k3: str) -> str:
    """kl_sample_values with the three given expressions of ``lr = log_p - log_q`` and ``r``."""
    return SAMPLES_HEAD + f"""
def kl_sample_values(log_q, log_p):
    log_q, log_p = _inputs(log_q, log_p)
    lr = log_p - log_q
    r = np.exp(lr)
    return {{"k1": {k1}, "k2": {k2}, "k3": {k3}}}
"""


SEED_STYLE = EXACT_KL + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr")

CORRECT = {
    "seed_style": SEED_STYLE,
    "careful_numerics": LOG_SOFTMAX + """
def exact_kl_from_logits(p_logits, q_logits):
    p_logits = np.asarray(p_logits, dtype=np.float64)
    q_logits = np.asarray(q_logits, dtype=np.float64)
    if p_logits.shape != q_logits.shape:
        raise ValueError("shapes differ")
    log_p, log_q = _log_softmax(p_logits), _log_softmax(q_logits)
    d = log_q - log_p
    # sum of non-negative terms p * (e^d - 1 - d), exact for nearby policies
    return np.sum(np.exp(log_p) * (np.expm1(d) - d), axis=-1)
""" + samples("-lr", "lr * lr / 2", "np.expm1(lr) - lr"),
    "loops": """
import math
import numpy as np

def _row_kl(p_row, q_row):
    mp, mq = max(p_row), max(q_row)
    lzp = mp + math.log(sum(math.exp(v - mp) for v in p_row))
    lzq = mq + math.log(sum(math.exp(v - mq) for v in q_row))
    total = 0.0
    for a, b in zip(p_row, q_row):
        lp, lq = a - lzp, b - lzq
        total += math.exp(lp) * (lp - lq)
    return total

def exact_kl_from_logits(p_logits, q_logits):
    p = np.asarray(p_logits, dtype=float)
    q = np.asarray(q_logits, dtype=float)
    if p.shape != q.shape or not np.isfinite(p).all() or not np.isfinite(q).all():
        raise ValueError("bad logits")
    flat_p = p.reshape(-1, p.shape[-1])
    flat_q = q.reshape(-1, q.shape[-1])
    out = [_row_kl(list(a), list(b)) for a, b in zip(flat_p, flat_q)]
    return np.array(out).reshape(p.shape[:-1])

def kl_sample_values(log_q, log_p):
    q = np.asarray(log_q, dtype=float)
    p = np.asarray(log_p, dtype=float)
    if q.shape != p.shape or not np.isfinite(q).all() or not np.isfinite(p).all():
        raise ValueError("bad samples")
    k1, k2, k3 = [], [], []
    for a, b in zip(q.ravel(), p.ravel()):
        lr = float(b - a)
        k1.append(-lr)
        k2.append(lr * lr / 2)
        k3.append(math.exp(lr) - 1 - lr)
    return {"k1": np.reshape(k1, q.shape), "k2": np.reshape(k2, q.shape), "k3": np.reshape(k3, q.shape)}
""",
    "returns_lists": EXACT_KL.replace("return np.sum(", "return (lambda a: a.tolist())(np.sum(") + ")" + samples(
        "(-lr).tolist()", "(0.5 * lr**2).tolist()", "(r - 1.0 - lr).tolist()"),
    "prints_and_warns": SEED_STYLE.replace(
        "    lr = log_p - log_q\n",
        "    lr = log_p - log_q\n    print('log-ratios:', lr)\n"
        "    import warnings; warnings.warn('k1 is negative for some samples')\n"),
    "extra_keyword_arguments": EXACT_KL.replace("(p_logits, q_logits):", "(p_logits, q_logits, axis=-1):")
    + samples("-lr", "0.5 * lr**2", "np.maximum(r - 1.0 - lr, 0.0)").replace(
        "(log_q, log_p):\n    log_q, log_p", "(log_q, log_p, clip=None):\n    log_q, log_p"),
    "scipy_based": """
import numpy as np
from scipy.special import log_softmax

def exact_kl_from_logits(p_logits, q_logits):
    p_logits = np.asarray(p_logits, dtype=np.float64)
    q_logits = np.asarray(q_logits, dtype=np.float64)
    if p_logits.shape != q_logits.shape or not np.all(np.isfinite(p_logits)) or not np.all(np.isfinite(q_logits)):
        raise ValueError("bad logits")
    log_p, log_q = log_softmax(p_logits, axis=-1), log_softmax(q_logits, axis=-1)
    return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)
""" + SAMPLES_HEAD + """
def kl_sample_values(log_q, log_p):
    log_q, log_p = _inputs(log_q, log_p)
    out = {}
    out["k3"] = np.exp(log_p - log_q) - 1 - (log_p - log_q)
    out["k2"] = np.square(log_q - log_p) / 2
    out["k1"] = log_q - log_p
    return out
""",
}

# One wrong answer per misconception: (source, misconception key that the feedback must name).
WRONG = {
    "kl_direction": (EXACT_KL.replace("np.exp(log_p) * (log_p - log_q)", "np.exp(log_q) * (log_q - log_p)")
                     + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "kl-direction"),
    "kl_raw_logits_as_log_probs": (EXACT_KL.replace("(log_p - log_q)", "(p_logits - q_logits)")
                                   + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "kl-unnormalised"),
    "kl_exp_without_normaliser": (EXACT_KL.replace("np.exp(log_p) *", "np.exp(p_logits) *")
                                  + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "kl-unnormalised"),
    "kl_no_max_shift": ("""
import numpy as np

def exact_kl_from_logits(p_logits, q_logits):
    p_logits = np.asarray(p_logits, dtype=np.float64)
    q_logits = np.asarray(q_logits, dtype=np.float64)
    if p_logits.shape != q_logits.shape:
        raise ValueError("shapes differ")
    p = np.exp(p_logits) / np.exp(p_logits).sum(axis=-1, keepdims=True)
    q = np.exp(q_logits) / np.exp(q_logits).sum(axis=-1, keepdims=True)
    return np.sum(p * (np.log(p) - np.log(q)), axis=-1)
""" + SAMPLES_HEAD + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "no-max-shift"),
    "k1_sign": (SEED_STYLE.replace('"k1": -lr', '"k1": lr'), "k1-sign"),
    "ratio_inverted": (EXACT_KL + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr").replace(
        "lr = log_p - log_q", "lr = log_q - log_p"), "ratio-inverted"),
    "k2_without_half": (EXACT_KL + samples("-lr", "lr**2", "r - 1.0 - lr"), "k2-missing-half"),
    "k3_missing_minus_one": (EXACT_KL + samples("-lr", "0.5 * lr**2", "r - lr"), "k3-missing-minus-one"),
    "k3_ratio_inverted_only": (EXACT_KL + samples("-lr", "0.5 * lr**2", "1.0 / r - 1.0 + lr"), "ratio-inverted"),
    "no_input_checks": ("""
import numpy as np

def exact_kl_from_logits(p_logits, q_logits):
    def lsm(z):
        z = np.asarray(z, dtype=np.float64)
        s = z - z.max(axis=-1, keepdims=True)
        return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
    log_p, log_q = lsm(p_logits), lsm(q_logits)
    if log_p.shape != log_q.shape:
        n = min(log_p.shape[-1], log_q.shape[-1])
        log_p, log_q = log_p[..., :n], log_q[..., :n]
    return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)

def kl_sample_values(log_q, log_p):
    log_q = np.asarray(log_q, dtype=np.float64)
    log_p = np.asarray(log_p, dtype=np.float64)
    n = min(log_q.size, log_p.size)
    lr = log_p[:n] - log_q[:n]
    return {"k1": -lr, "k2": 0.5 * lr**2, "k3": np.exp(lr) - 1 - lr}
""", "silent-bad-input"),
    "float32_results": (EXACT_KL.replace("return np.sum(", "return np.float32(1) * np.sum(").replace(
        "axis=-1)\n", "axis=-1).astype(np.float32)\n", 1) + samples(
        "(-lr).astype(np.float32)", "(0.5 * lr**2).astype(np.float32)", "(r - 1.0 - lr).astype(np.float32)"),
        "float32-output"),
}

PROBABILITY_KL = """
import numpy as np
from scipy.special import softmax, rel_entr

def exact_kl_from_logits(p_logits, q_logits):
    p_logits = np.asarray(p_logits, dtype=np.float64)
    q_logits = np.asarray(q_logits, dtype=np.float64)
    if p_logits.shape != q_logits.shape or not np.all(np.isfinite(p_logits)) or not np.all(np.isfinite(q_logits)):
        raise ValueError("bad logits")
    p, q = softmax(p_logits, axis=-1), softmax(q_logits, axis=-1)
    return {formula}
"""

WRONG.update({
    # The issue's first "wrong, yet full marks": inf where p has mass and q underflows.
    "log_of_softmax": (PROBABILITY_KL.format(formula="np.sum(p * (np.log(p) - np.log(q)), axis=-1)")
                       + SAMPLES_HEAD + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "log-of-softmax",
                       "p's mass where q's probability underflows (1-D)"),
    "rel_entr_on_probabilities": (PROBABILITY_KL.format(formula="rel_entr(p, q).sum(axis=-1)")
                                  + SAMPLES_HEAD + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"),
                                  "log-of-softmax"),
    "clipped_probabilities": (PROBABILITY_KL.format(
        formula="np.sum(p * (np.log(np.clip(p, 1e-12, 1)) - np.log(np.clip(q, 1e-12, 1))), axis=-1)")
        + SAMPLES_HEAD + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "clipped-log"),
    "epsilon_in_the_log": (PROBABILITY_KL.format(
        formula="np.sum(p * (np.log(p + 1e-10) - np.log(q + 1e-10)), axis=-1)")
        + SAMPLES_HEAD + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "clipped-log"),
    "float32_arithmetic_inside": (EXACT_KL.replace(
        "log_p, log_q = _log_softmax(p_logits), _log_softmax(q_logits)",
        "log_p, log_q = _log_softmax(p_logits.astype(np.float32)), _log_softmax(q_logits.astype(np.float32))")
        .replace("return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)",
                 "return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1).astype(np.float64)")
        + samples("-lr", "0.5 * lr**2", "r - 1.0 - lr"), "float32-arithmetic"),
    "samples_in_float32": (EXACT_KL + SAMPLES_HEAD.replace("dtype=np.float64", "dtype=np.float32") + """
def kl_sample_values(log_q, log_p):
    log_q, log_p = _inputs(log_q, log_p)
    lr = log_p - log_q
    return {k: np.asarray(v, dtype=np.float64) for k, v in
            {"k1": -lr, "k2": 0.5 * lr**2, "k3": np.exp(lr) - 1 - lr}.items()}
""", "float32-arithmetic"),
})

# The outside tester's r5_18_noshape: without their own shape checks both functions still raised on
# the shapes the cases used (NumPy cannot broadcast [3] with [4]); broadcastable shapes now find them.
WRONG.update({
    "exact_kl_without_shape_check": (SEED_STYLE.replace(
        """    if p_logits.shape != q_logits.shape:
        raise ValueError("p_logits and q_logits must have the same shape")
""", ""), "silent-bad-input", "exact KL: shapes that broadcast ([2, 3] against [3])"),
    "samples_without_shape_check": (SEED_STYLE.replace(
        """    if log_q.shape != log_p.shape:
        raise ValueError("log_q and log_p must have the same shape")
""", ""), "silent-bad-input", "samples: shapes that broadcast ([3] against [1, 3])"),
})
assert all(WRONG[label][0] != SEED_STYLE for label in ("exact_kl_without_shape_check", "samples_without_shape_check"))

CENTRAL_MISTAKES = ("kl_direction", "k1_sign", "ratio_inverted", "kl_raw_logits_as_log_probs")

# Hostile return values: none may earn the points of the groups they attack.
ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    shape = (2,)
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(2)
def exact_kl_from_logits(p_logits, q_logits): return Anything()
def kl_sample_values(log_q, log_p): return {"k1": Anything(), "k2": Anything(), "k3": Anything()}
""", ("exact_kl", "sample_values")),
    "ndarray_subclass_lying_eq": ("""
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def __sub__(self, other): return np.zeros(self.shape)
def exact_kl_from_logits(p_logits, q_logits):
    return np.ones(np.shape(p_logits)[:-1]).view(Liar)
def kl_sample_values(log_q, log_p):
    z = np.ones(np.shape(log_q)).view(Liar)
    return {"k1": z, "k2": z, "k3": z}
""", ("exact_kl", "sample_values")),
    "nan_everywhere": ("""
import numpy as np
def exact_kl_from_logits(p_logits, q_logits): return np.full(np.shape(p_logits)[:-1], np.nan)
def kl_sample_values(log_q, log_p):
    n = np.full(np.shape(log_q), np.nan)
    return {"k1": n, "k2": n, "k3": n}
""", ("exact_kl", "sample_values")),
    "generators": ("""
import numpy as np
def exact_kl_from_logits(p_logits, q_logits): return (0.0 for _ in range(3))
def kl_sample_values(log_q, log_p): return {"k1": iter([0.0]), "k2": (x for x in [0.0]), "k3": map(float, [0])}
""", ("public", "exact_kl", "sample_values")),
    "wrong_shapes_keepdims": (EXACT_KL.replace("axis=-1)\n", "axis=-1, keepdims=True)\n", 1)
                              + samples("-lr[None]", "0.5 * lr[None]**2", "(r - 1.0 - lr)[None]"),
                              ("public", "exact_kl", "sample_values")),
    "huge_arrays": ("""
import numpy as np
def exact_kl_from_logits(p_logits, q_logits): return np.zeros(10_000_000)
def kl_sample_values(log_q, log_p):
    big = np.zeros(10_000_000)
    return {"k1": big, "k2": big, "k3": big}
""", ("public", "exact_kl", "sample_values")),
    "raises_everything": ("""
def exact_kl_from_logits(p_logits, q_logits): raise RuntimeError("boom")
def kl_sample_values(log_q, log_p): raise SystemExit(3)
""", ("public", "exact_kl", "sample_values", "validation")),
    "dict_subclass_and_set": ("""
import numpy as np
class Sneaky(dict):
    def __getitem__(self, key): return np.zeros(1)
    def __eq__(self, other): return True
def exact_kl_from_logits(p_logits, q_logits): return {0.0, 1.0}
def kl_sample_values(log_q, log_p): return Sneaky(k1=None, k2=None, k3=None)
""", ("exact_kl", "sample_values")),
}


# The task asks for ValueError for bad values; TypeError there is named.
WRONG["type_error_for_non_finite_logits"] = (CORRECT["seed_style"].replace('raise ValueError("logits must be finite")', 'raise TypeError("logits must be finite")'), "value-error-expected", "exact KL: NaN in p_logits")


# Issue 22: estimators of zeros (the exact KL right) earned 0.56 of sample_values' 3 points on the p = q
# cases; a constant earns nothing in the group now.
ADVERSARIAL["estimators_always_zero"] = (
    EXACT_KL + samples("np.zeros_like(lr)", "np.zeros_like(lr)", "np.zeros_like(lr)"), ("sample_values",))


def test_zero_estimators_are_told_why_the_p_equal_q_cases_earn_nothing():
    result = result_of(STEM, ADVERSARIAL["estimators_always_zero"][0], ["sample_values"])
    (group,) = result.groups
    withheld = sorted(case.name for case in group.cases if case.withheld)
    assert withheld == ["k1 on p equal to q", "k2 on p equal to q", "k3 on p equal to q"], group.feedback()
    assert group.points_earned == 0, group.feedback()
    assert "an estimator must follow its samples" in group.gated, group.gated


def test_one_wrong_estimator_keeps_the_p_equal_q_cases_of_the_others():
    """The gate is per key: a k2 without its half keeps k1's and k3's p = q cases (and loses k2's, whose
    1-D samples it gets wrong)."""
    result = result_of(STEM, EXACT_KL + samples("-lr", "lr**2", "r - 1.0 - lr"), ["sample_values"])
    by_name = {case.name: case for case in result.cases}
    assert by_name["k1 on p equal to q"].passed and by_name["k3 on p equal to q"].passed, result.feedback()
    assert by_name["k2 on p equal to q"].withheld, result.feedback()


class TestKlEstimators(CodingCheckTests):
    stem = STEM
    central_mistakes = CENTRAL_MISTAKES
    groups = ("public", "exact_kl", "sample_values", "validation")
    autograded_points, total_points = 9, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_functions = ("exact_kl_from_logits", "kl_sample_values")
    quiet_mistakes = ("k2_without_half",)


def test_a_wrong_key_is_never_blamed_on_another_keys_mistake():
    # k1 wrong in no recognised way, k2 missing its half, k3 right: the k1 cases fail without naming
    # k2's mistake, which belongs to the k2 cases alone.
    answer = EXACT_KL + samples("-1.5 * lr", "lr**2", "r - 1.0 - lr")
    cases = result_of(STEM, answer, ["sample_values"]).cases
    # p = q gives zero for every k, right here too: those two cases are withheld by the constant-answer
    # gate (their key fails on other samples), not judged wrong, and say so
    withheld = [case for case in cases if case.withheld]
    assert sorted(case.name for case in withheld) == ["k1 on p equal to q", "k2 on p equal to q"]
    assert all(case.misconception is None for case in withheld)
    failed = [case for case in cases if not case.passed and not case.withheld]
    k1 = [case for case in failed if case.name.startswith("k1 ")]
    k2 = [case for case in failed if case.name.startswith("k2 ")]
    assert k1 and k2 and len(k1) + len(k2) == len(failed)
    assert all(case.misconception is None and "k1 is not correct" in case.message for case in k1)
    assert all(case.misconception == "k2-missing-half" for case in k2)


import pytest  # noqa: E402

from check_support import group_points, namespace_from, source_notebook  # noqa: E402


@pytest.mark.parametrize("label", ["k2_without_half", "no_input_checks", "log_of_softmax", "clipped_probabilities"])
def test_side_mistakes_are_not_capped(label):
    result = result_of(STEM, WRONG[label][0])
    assert not any(group.capped for group in result.groups), result.feedback()
    assert result.points_earned > 3.0, result.feedback()


@pytest.mark.parametrize("label", ["kl_direction", "k1_sign", "ratio_inverted"])
def test_the_open_checks_catch_the_wrong_direction(label):
    cell = next(c for c in source_notebook(STEM).cells if c.id == "check-kl-estimators")
    namespace = namespace_from(WRONG[label][0])
    with pytest.raises(AssertionError):
        exec(compile(cell.source, "<check>", "exec"), namespace)
    assert group_points(result_of(STEM, namespace, ["public"]))["public"][0] < 2


def test_the_issue_example_is_finite():
    from autograder import reference
    import mpmath
    value = float(reference.exact_kl_from_logits([0.0, 0.0], [0.0, -1000.0]))
    # KL = 1/2 log(1/2 / q0) + 1/2 log(1/2 / q1), q0 = 1/(1+e^-1000), q1 = e^-1000/(1+e^-1000)
    mpmath.mp.dps = 50
    q0 = 1 / (1 + mpmath.e ** -1000)
    q1 = mpmath.e ** -1000 / (1 + mpmath.e ** -1000)
    exact = mpmath.mpf(0.5) * mpmath.log(mpmath.mpf(0.5) / q0) + mpmath.mpf(0.5) * mpmath.log(mpmath.mpf(0.5) / q1)
    assert abs(value - float(exact)) <= 1e-12 * float(exact)


def test_a_negative_k3_is_told_why_it_cannot_be():
    from check_support import result_of

    source = """
def kl_sample_values(log_q, log_p):
    log_r = np.asarray(log_p, dtype=float) - np.asarray(log_q, dtype=float)
    return {"k1": -log_r, "k2": 0.5 * log_r ** 2, "k3": log_r - np.expm1(log_r)}
"""
    result = result_of(STEM, source, ["public"])
    case = next(case for case in result.cases if case.name == "the dict has keys k1, k2, k3 and k3 is non-negative")
    assert case.message == (
        "k3 = (r - 1) - log r is never negative (r - 1 >= log r for every r > 0), but some of the k3 values "
        "returned are negative: check the sign of each term, with log r = log_p - log_q")
