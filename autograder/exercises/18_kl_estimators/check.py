"""Hidden checks for exercise 18: exact KL from logits and the k1/k2/k3 sample values.

Expected values come from :mod:`autograder.reference`, computed here in the trusted process. The
tolerances (``rtol=1e-10, atol=1e-12``) accept the plain textbook formulas as well as the
reference's more careful ones: the two differ by round-off, far below ``atol``.

Every rule of the task has a case: the expectation under the first argument (and a public check that
catches the reversed direction), stable logs where q's probability underflows (``log`` of a softmax gives
an infinite KL there, clipping gives a wrong finite one), float64 results, and the argument order of
``kl_sample_values``. The direction is the exercise's central idea: KL(q||p) for the exact KL, an
inverted ratio or a sign-flipped k1 caps the notebook at a third of its autograded points.
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    ATOL, CLIPPED_LOG, LOG_OF_SOFTMAX, PASS, RTOL, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject,
    Verdict, clipped_logs, close, coding_groups, error_case, exercise_stem, expect_close, field, finite_floats,
    float32_arithmetic, float32_output, float_array, key_difference, log_softmax, mistake_outputs, shared as _shared,
    value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    2,
    Group("exact_kl", 3, "exact_kl_from_logits: KL(p||q) for several shapes and large logits"),
    Group("sample_values", 3, "kl_sample_values: k1, k2 and k3 on sampled log-probabilities"),
    validation=(1, "Both functions reject mismatched shapes and non-finite input"),
)

# ----------------------------------------------------------------------------- misconceptions

KL_DIRECTION = _shared.KL_DIRECTION
KL_UNNORMALISED = Misconception(
    "kl-unnormalised",
    "The logits were used as if they were probabilities or log-probabilities: normalise each row "
    "first (log-softmax), so that the probabilities sum to one.")
KL_OVERFLOW = _shared.NO_MAX_SHIFT
K1_SIGN = _shared.K1_SIGN
RATIO_INVERTED = _shared.RATIO_INVERTED
K2_HALF = _shared.K2_HALF
K3_MINUS_ONE = Misconception(
    "k3-missing-minus-one",
    "k3 is missing the -1: k3 = (r - 1) - log r, which is zero when p = q.")


def _kl_wrong_outputs(p_logits: np.ndarray, q_logits: np.ndarray) -> list:
    """The outputs of the classic mistakes on this input (trusted process)."""
    log_p, log_q = log_softmax(p_logits), log_softmax(q_logits)
    p, q = np.exp(log_p), np.exp(log_q)
    wrong = [(np.sum(q * (log_q - log_p), axis=-1), KL_DIRECTION)]
    with np.errstate(all="ignore"):
        naive = np.sum(p * (np.log(p) - np.log(q)), axis=-1)  # np.log of a softmax: inf where q underflows
    if not np.all(np.isfinite(naive)):
        wrong.append((naive, LOG_OF_SOFTMAX))
    for clipped_q in clipped_logs(log_q):
        # clipping p as well changes only terms weighted by a tiny p, far below the tolerance
        wrong.append((np.sum(p * (log_p - clipped_q), axis=-1), CLIPPED_LOG))
    with np.errstate(over="ignore", invalid="ignore"):
        raw_p = np.exp(p_logits)
        for candidate in (
            np.sum(p * (p_logits - q_logits), axis=-1),      # raw logits as log-probabilities
            np.sum(raw_p * (p_logits - q_logits), axis=-1),  # nothing normalised
            np.sum(raw_p * (log_p - log_q), axis=-1),        # weights exp(logits)
        ):
            if np.all(np.isfinite(candidate)):
                wrong.append((candidate, KL_UNNORMALISED))
    return wrong


def _sample_wrong(log_q: np.ndarray, log_p: np.ndarray) -> dict:
    log_r = log_p - log_q
    r = np.exp(log_r)
    return {
        "k1": [(log_r, K1_SIGN)],
        "k2": [(log_r ** 2, K2_HALF)],
        "k3": [(1.0 / r - 1.0 + log_r, RATIO_INVERTED), (r - log_r, K3_MINUS_ONE),
               (1.0 / r + log_r, RATIO_INVERTED)],
    }


# ----------------------------------------------------------------------------- judges


def _judge_exact(p_logits: np.ndarray, q_logits: np.ndarray, *, large: bool = False, underflow: bool = False):
    """``large``: the logits overflow a naive exp; ``underflow``: q's probability underflows where p has
    mass, so an infinite answer is the log of a softmax."""
    expected = np.asarray(reference.exact_kl_from_logits(p_logits, q_logits), dtype=np.float64)
    # The mistakes' outputs are computed when an answer first needs them (each student's cases are
    # built per notebook, and a right answer never does): ten times the cost of the rest of the case.
    wrong = mistake_outputs(lambda: _kl_wrong_outputs(p_logits, q_logits))

    def judge(outcomes):
        value = value_of(outcomes[0], "exact_kl_from_logits")
        overflow = LOG_OF_SOFTMAX if underflow else KL_OVERFLOW if large else None
        actual = finite_floats(value, "the KL values", shape=expected.shape, overflow=overflow)
        verdict = expect_close(actual, expected, "the KL values", rtol=RTOL, atol=ATOL, wrong=wrong)
        if verdict.passed:
            rounded = float32_output(value, actual, expected)
            return rounded if rounded is not None else verdict
        rounded = float32_output(value, actual, expected) or float32_arithmetic(value, actual, expected)
        if rounded is not None and verdict.misconception is None:
            return rounded
        if not verdict.passed and verdict.misconception is None and np.any(actual < -ATOL):
            return Verdict(False, "a KL divergence came out negative, but KL(p||q) is never negative: "
                                  "check the direction and the normalisation")
        return verdict

    return judge


def _judge_public_exact(z: np.ndarray):
    def judge(outcomes):
        value = value_of(outcomes[0], "exact_kl_from_logits")
        actual = float_array(value, "exact_kl_from_logits(z, z)", shape=(z.shape[0],))
        if not np.all(np.abs(actual) <= 1e-14):
            return Verdict(False, "exact_kl_from_logits(z, z) should be zero (within 1e-14) for identical logits")
        return PASS

    return judge


def _judge_public_samples(outcomes):
    value = value_of(outcomes[0], "kl_sample_values")
    if not isinstance(value, dict):
        raise Reject("kl_sample_values should return a dict with keys 'k1', 'k2', 'k3'")
    if set(value) != {"k1", "k2", "k3"}:
        expected = ["k1", "k2", "k3"]
        raise Reject("the dict should have exactly the keys 'k1', 'k2', 'k3'" + key_difference(
            [name for name in expected if name not in value], len([name for name in value if name not in expected])))
    k3 = float_array(value["k3"], "k3", shape=(2,))
    if not np.all(k3 >= -1e-14):
        return Verdict(False, "k3 = (r - 1) - log r is never negative (r - 1 >= log r for every r > 0), but some "
                              "of the k3 values returned are negative: check the sign of each term, with "
                              "log r = log_p - log_q")
    return PASS


def _diagnose(value, key: str, log_q: np.ndarray, log_p: np.ndarray, shape: tuple) -> Verdict | None:
    """Name the mistake behind a wrong ``key``: its own classic mistake, except that an inverted ratio
    (seen in k3) explains k1 and k3 together. k2 is the same for r and 1/r, so it is never blamed on
    the ratio, and a key is never blamed on another key's mistake."""
    wrong = _sample_wrong(log_q, log_p)

    def mistake(name: str) -> Misconception | None:
        try:
            actual = float_array(field(value, name, "the returned dict"), name, shape=shape)
        except Reject:
            return None
        return next((m for output, m in wrong[name] if close(actual, output, rtol=1e-8, atol=1e-10)), None)

    found = RATIO_INVERTED if key != "k2" and mistake("k3") is RATIO_INVERTED else mistake(key)
    return None if found is None else Verdict(False, found.sentence, found.key)


def _judge_sample_key(key: str, log_q: np.ndarray, log_p: np.ndarray):
    expected_all = reference.kl_sample_values(log_q, log_p)
    expected = np.asarray(expected_all[key], dtype=np.float64)
    shape = expected.shape

    def judge(outcomes):
        value = value_of(outcomes[0], "kl_sample_values")
        if not isinstance(value, dict):
            raise Reject("kl_sample_values should return a dict with keys 'k1', 'k2', 'k3'")
        raw = field(value, key, "the returned dict")
        actual = float_array(raw, key, shape=shape)
        rounded = float32_output(raw, actual, expected)
        if rounded is not None:
            return rounded
        if close(actual, expected, rtol=RTOL, atol=ATOL):
            return PASS
        diagnosis = _diagnose(value, key, log_q, log_p, shape)
        if diagnosis is not None:
            return diagnosis
        arithmetic = float32_arithmetic(raw, actual, expected)
        if arithmetic is not None:
            return arithmetic
        return Verdict(False, f"{key} is not correct for these samples")

    return judge


# ----------------------------------------------------------------------------- cases


def _log_probs(rng: np.random.Generator, shape: tuple, scale: float = 1.5) -> np.ndarray:
    """Log-probabilities of sampled tokens: rows of a random softmax, picked at random."""
    return log_softmax(rng.normal(scale=scale, size=shape + (7,)))[..., 3]


#: The open check on the direction: p = softmax([0, log 3]) = (1/4, 3/4) against the uniform q.
DIRECTION_P = np.array([0.0, np.log(3.0)])
DIRECTION_Q = np.array([0.0, 0.0])


def _cases_public():
    """The notebook's open checks: zero KL, the dict's keys, the direction, k1's sign."""
    cases = []
    z = np.array([[1.0, -1.0], [0.5, 0.5]])
    cases.append(Case("identical logits give zero KL", "public",
                      (Call("exact_kl_from_logits", (z, z)),), _judge_public_exact(z)))
    cases.append(Case("the dict has keys k1, k2, k3 and k3 is non-negative", "public",
                      (Call("kl_sample_values", (np.array([-0.4, -1.2]), np.array([-0.5, -0.7]))),),
                      _judge_public_samples))
    cases.append(Case("the open check's direction: p = (1/4, 3/4) against a uniform q", "public",
                      (Call("exact_kl_from_logits", (DIRECTION_P, DIRECTION_Q)),),
                      _judge_exact(DIRECTION_P, DIRECTION_Q)))
    cases.append(Case("the open check's k1 = log_q - log_p", "public",
                      (Call("kl_sample_values", (np.array([-0.4, -1.2]), np.array([-0.5, -0.7]))),),
                      _judge_sample_key("k1", np.array([-0.4, -1.2]), np.array([-0.5, -0.7]))))
    return cases


def _cases_exact_kl(rng):
    """exact_kl_from_logits: shapes, direction, lists, large logits, underflow."""
    cases = []
    exact_inputs = [
        ("one distribution (1-D logits)", rng.normal(size=5), rng.normal(size=5), False),
        ("a batch of 4 rows over 6 tokens", rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), False),
        ("a [2, 3, 11] array (KL along the last axis)", rng.normal(scale=2.0, size=(2, 3, 11)),
         rng.normal(scale=2.0, size=(2, 3, 11)), False),
        ("very different distributions", np.array([[4.0, 0.0, -4.0], [0.0, 0.0, 6.0]]),
         np.array([[-4.0, 0.0, 4.0], [5.0, 0.0, 0.0]]), False),
        ("logits of order 1e3", rng.normal(scale=3.0, size=(3, 8)) + 1000.0,
         rng.normal(scale=3.0, size=(3, 8)) - 1000.0, True),
        ("two tokens, a vocabulary of 50 000", rng.normal(scale=2.0, size=(2, 50_000)),
         rng.normal(scale=2.0, size=(2, 50_000)), False),
    ]
    for name, p_logits, q_logits, large in exact_inputs:
        cases.append(Case(name, "exact_kl", (Call("exact_kl_from_logits", (p_logits, q_logits)),),
                          _judge_exact(p_logits, q_logits, large=large)))
    # p puts mass where q's probability underflows to 0 in float64: the KL is large but finite
    # (the task rules out np.log of an np.exp); 1-D as in the example, and a batch.
    underflow_inputs = [
        ("p's mass where q's probability underflows (1-D)", np.array([0.0, 0.0]), np.array([0.0, -1000.0])),
        ("p's mass where q's probability underflows (a batch of 3)",
         np.array([[0.0, 0.5, -1.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
         np.array([[0.0, -800.0, -5.0], [-900.0, 0.0, 1.0], [-760.0, -1000.0, 0.0]])),
    ]
    for name, p_logits, q_logits in underflow_inputs:
        cases.append(Case(name, "exact_kl", (Call("exact_kl_from_logits", (p_logits, q_logits)),),
                          _judge_exact(p_logits, q_logits, underflow=True)))
    p_list, q_list = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    cases.append(Case("logits given as nested lists", "exact_kl",
                      (Call("exact_kl_from_logits", (p_list.tolist(), q_list.tolist())),),
                      _judge_exact(p_list, q_list)))
    return cases


def _cases_sample_values(rng):
    """kl_sample_values: each key on several inputs."""
    cases = []
    sample_inputs = [
        ("1-D samples", _log_probs(rng, (9,)), _log_probs(rng, (9,))),
        ("a [3, 5] batch of samples", _log_probs(rng, (3, 5)), _log_probs(rng, (3, 5))),
        ("ratios 2 and 1/2", np.log(np.array([0.2, 0.4])), np.log(np.array([0.4, 0.2]))),
        ("large log-ratios (|log r| up to 30)", np.array([-1.0, -31.0, -0.5]), np.array([-31.0, -1.0, -0.5])),
        ("p equal to q", np.array([-0.3, -2.0, -7.5]), np.array([-0.3, -2.0, -7.5])),
    ]
    for name, log_q, log_p in sample_inputs:
        for key in ("k1", "k2", "k3"):
            cases.append(Case(f"{key} on {name}", "sample_values",
                              (Call("kl_sample_values", (log_q, log_p)),),
                              _judge_sample_key(key, log_q, log_p)))
    list_q, list_p = _log_probs(rng, (4,)), _log_probs(rng, (4,))
    cases.append(Case("k3 with samples given as lists", "sample_values",
                      (Call("kl_sample_values", (list_q.tolist(), list_p.tolist())),),
                      _judge_sample_key("k3", list_q, list_p)))
    return cases


def _cases_validation(rng):
    """Bad input to both functions, each naming its argument."""
    cases = []
    good = rng.normal(size=(2, 3))
    nan_logits = good.copy()
    nan_logits[1, 2] = np.nan
    inf_logits = good.copy()
    inf_logits[0, 0] = np.inf
    cases += [
        error_case("exact KL: different vocabulary sizes", "exact_kl_from_logits",
                    (rng.normal(size=3), rng.normal(size=4)), "a pair of logits over different vocabularies",
                    "q_logits", names=("ValueError",)),
        error_case("exact KL: NaN in p_logits", "exact_kl_from_logits",
                    (nan_logits, good), "a p_logits with a NaN", "p_logits", names=("ValueError",)),
        error_case("exact KL: infinity in q_logits", "exact_kl_from_logits",
                    (good, inf_logits), "a q_logits with an infinity", "q_logits", names=("ValueError",)),
        error_case("samples: log_q and log_p of different shapes", "kl_sample_values",
                    (np.array([-0.1, -0.2, -0.3]), np.array([-0.1, -0.2])), "a log_p whose shape differs from log_q's",
                    "log_p", names=("ValueError",)),
        error_case("samples: NaN in log_p", "kl_sample_values",
                    (np.array([-0.1, -0.2]), np.array([-0.1, np.nan])), "a log_p with a NaN", "log_p", names=("ValueError",)),
        error_case("samples: -inf in log_q", "kl_sample_values",
                    (np.array([-np.inf, -0.2]), np.array([-0.1, -0.3])), "a log_q with -inf", "log_q", names=("ValueError",)),
    ]
    # Shapes that differ but broadcast: NumPy computes something without complaint, so only the
    # answer's own shape check rejects them (the cases above would fail inside NumPy anyway).
    row = np.array([0.5, -0.25, 1.0])
    two_rows = np.array([[0.5, -0.25, 1.0], [-1.0, 0.0, 0.75]])
    cases += [
        error_case("exact KL: shapes that broadcast ([2, 3] against [3])", "exact_kl_from_logits",
                   (two_rows, row), "p_logits of shape [2, 3] with q_logits of shape [3]", "q_logits",
                   names=("ValueError",)),
        error_case("exact KL: shapes that broadcast ([1, 3] against [2, 3])", "exact_kl_from_logits",
                   (row[None, :], two_rows), "p_logits of shape [1, 3] with q_logits of shape [2, 3]", "p_logits",
                   names=("ValueError",)),
        error_case("samples: shapes that broadcast ([3] against [1, 3])", "kl_sample_values",
                   (-np.abs(row), -np.abs(row)[None, :]), "a log_q of shape [3] with a log_p of shape [1, 3]",
                   "log_p", names=("ValueError",)),
        error_case("samples: shapes that broadcast ([1] against [3])", "kl_sample_values",
                   (np.array([-0.5]), -np.abs(row)), "a log_q of shape [1] with a log_p of shape [3]", "log_q",
                   names=("ValueError",)),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(18))
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    return [*_cases_public(), *_cases_exact_kl(rng), *_cases_sample_values(rng), *_cases_validation(rng)]


#: The direction of the KL is the exercise: KL(q||p) for the exact KL, an inverted ratio or a k1 of the
#: wrong sign caps the notebook at a third of its autograded points, as does a KL of raw logits.
CENTRAL = Central(
    "the direction of the KL (exact: under p, the first argument; samples from q: r = p/q, k1 = -log r)",
    {"kl-direction", "ratio-inverted", "k1-sign", "kl-unnormalised"},
    ("the open check's direction: p = (1/4, 3/4) against a uniform q", "the open check's k1 = log_q - log_p",
     "a batch of 4 rows over 6 tokens", "k1 on 1-D samples", "k3 on 1-D samples"))

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
GATE = Gate(groups=("validation",), cases=(
    "one distribution (1-D logits)",
    "a batch of 4 rows over 6 tokens",
    "k1 on 1-D samples",
    "k1 on a [3, 5] batch of samples",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=('identical logits give zero KL',"the open check's direction: p = (1/4, 3/4) against a uniform q",),
         cases=(
             'one distribution (1-D logits)',
             'a batch of 4 rows over 6 tokens',)),
    Gate(groups=("public",), needs="passed",
         only=('the dict has keys k1, k2, k3 and k3 is non-negative',),
         cases=(
             'k3 on 1-D samples',
             'k3 on a [3, 5] batch of samples',)),
    Gate(groups=("public",), needs="passed",
         only=("the open check's k1 = log_q - log_p",),
         cases=(
             'k1 on 1-D samples',
             'k1 on a [3, 5] batch of samples',)),
)

#: Where p equals q every estimator is zero, which is also what an answer returning zeros gives (0.56 of
#: sample_values' 3 points). Each key's p = q case counts only when the same key is right on samples
#: whose values are not zero, so a constant earns nothing in the group.
_CONSTANT = ("an estimator must follow its samples: its value where p equals q (zero) counts only when the "
             "function also gets that estimator right on samples where it is not zero")
CONSTANT_GATES = tuple(
    Gate(groups=("sample_values",), needs="passed", why=_CONSTANT, only=(f"{key} on p equal to q",),
         cases=(f"{key} on 1-D samples",))
    for key in ("k1", "k2", "k3"))

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES + CONSTANT_GATES)
