"""Hidden checks for exercise 19: temperature, top-k and top-p as standalone distribution transforms.

Expected distributions come from :mod:`autograder.reference`, computed here in the trusted process.

Decision boundaries. Top-p compares running sums with the threshold, and a float64 running sum can
land an ulp or so either side of a threshold that decimal arithmetic would hit exactly. Where a
prefix mass lies within ``BOUNDARY`` of ``top_p`` both outcomes (that token kept or not) are
accepted, except in the cases the notebook teaches exactly: the task's ``0.55 + 0.20 = 0.75``
nucleus (given as logits ``log p``) keeps two tokens, and ``top_p = 1`` keeps the whole support.

Ties. "The smaller id ranks first" is graded on large blocks of equal probabilities with the cut in the
middle of the block: NumPy's default sort (introsort, or the SIMD sorts of x86 CPUs with AVX2/AVX-512)
reorders equal keys there on every platform, while on a handful of tokens its insertion sort happens
to be stable. A reversed ascending sort and an unstable sort are the same misconception (tie order).

Top-k at a tie with the k-th token. Engines disagree: transformers' ``TopKLogitsWarper`` and vLLM's
PyTorch path (``apply_top_k_only``, ``apply_top_k_top_p_pytorch``) keep every token tied with the k-th,
vLLM's Triton kernel keeps exactly k, the smaller index first (transformers==5.24.0, vllm==0.33.0). The
notebook teaches exactly k and states that the other rule earns the same points, so every top-k case
accepts both outcomes (``reference.top_k_distribution(..., keep_ties=True)``); the tie-order rule is still
graded where it is the only rule, in top-p's tie blocks and in top-k's exactly-k answers.

The nucleus rule (keep the token that reaches ``top_p``, after ranking) is the exercise's central idea:
a nucleus that drops the threshold token or accumulates in id order caps the notebook at a third.
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    ATOL, FLOAT32_OUTPUT, PASS, RTOL, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, close,
    coding_groups, error_case, exercise_stem, finite_floats, float32_arithmetic, float32_output, float_array, redraw,
    shared as _shared, value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)
#: Prefix masses this close to ``top_p`` are "within rounding": either outcome is accepted.
BOUNDARY = 1e-9

GROUPS = coding_groups(
    2,
    Group("temperature", 1, "temperature_distribution on random logits, temperatures and large logits"),
    Group("top_k", 2, "top_k_distribution: the k first-ranked tokens (or every token tied with the k-th), "
                      "renormalised"),
    Group("top_p", 3, "top_p_distribution: smallest prefix reaching top_p, ties, min_tokens_to_keep"),
    validation=(1, "Bad temperature, k, top_p and logits raise ValueError or TypeError"),
)

# ----------------------------------------------------------------------------- misconceptions

TEMPERATURE_MULTIPLIED = Misconception(
    "temperature-multiplied",
    "The logits were multiplied by the temperature: divide them by it (T > 1 flattens, T < 1 sharpens).")
UNNORMALISED_SOFTMAX = Misconception(
    "softmax-unnormalised",
    "The values do not sum to one: divide the exponentials by their sum (after subtracting the maximum).")
NO_RENORMALISE = _shared.NO_RENORMALISE
SOFTMAX_OVERFLOW = _shared.NO_MAX_SHIFT
TIE_ORDER = Misconception(
    "tie-order",
    "Among tied tokens the smaller token id must rank first: sort with np.argsort(-p, kind='stable'). "
    "A reversed ascending sort puts the larger id first, and the default (unstable) sort may order "
    "equal probabilities any way it likes, differently on other array sizes and CPUs.")
TOP_K_OFF_BY_ONE = Misconception(
    "top-k-off-by-one",
    "The number of kept tokens is off by one: top-k keeps the k first-ranked tokens (more only when the "
    "k-th is tied and you keep its ties).")
TOP_P_DROPS = _shared.TOP_P_DROPS
TOP_P_EXTRA = _shared.TOP_P_EXTRA
TOP_P_UNSORTED = Misconception(
    "top-p-unsorted",
    "The nucleus was accumulated in token-id order: rank the tokens by probability, largest first, "
    "before adding up their mass.")
MIN_TOKENS_IGNORED = Misconception(
    "min-tokens-ignored",
    "min_tokens_to_keep was ignored: keep at least that many tokens even when fewer already reach top_p.")
TOP_P_ONE = Misconception(
    "top-p-one-drops-support",
    "top_p = 1 must keep every token, however small: a float running sum can reach 1.0 before the last "
    "token, so treat top_p = 1 as 'keep the whole support'.")


# ----------------------------------------------------------------------------- trusted helpers


def _softmax(z: np.ndarray) -> np.ndarray:
    return np.asarray(reference.softmax(np.asarray(z, dtype=np.float64)), dtype=np.float64)


def _stable_order(p: np.ndarray) -> np.ndarray:
    return np.argsort(-p, kind="stable")


def _larger_id_order(p: np.ndarray) -> np.ndarray:
    """Descending order in which the larger id wins ties (a reversed ascending sort)."""
    return np.argsort(p, kind="stable")[::-1]


def _keep(p: np.ndarray, ids: np.ndarray, renormalise: bool = True) -> np.ndarray:
    out = np.zeros_like(p)
    out[ids] = p[ids]
    return out / out.sum() if renormalise else out


def _nucleus_counts(p: np.ndarray, top_p: float) -> tuple:
    """``(count, acceptable)``: the ideal prefix length, and every length within rounding of it."""
    sorted_p = p[_stable_order(p)]
    prefix = np.cumsum(sorted_p)
    count = int(np.searchsorted(prefix, top_p - BOUNDARY, side="left")) + 1
    count = min(count, p.size)
    acceptable = {count}
    for j in range(p.size):
        if abs(prefix[j] - top_p) <= BOUNDARY:  # prefix of j + 1 tokens is on the boundary
            acceptable.update({j + 1, min(j + 2, p.size)})
    return count, acceptable


def _same_values_other_ties(actual: np.ndarray, expected: np.ndarray) -> bool:
    """The same kept probabilities (as a multiset) on a different set of ids: tied tokens swapped."""
    if actual.shape != expected.shape or np.array_equal(actual > 0, expected > 0):
        return False
    return close(np.sort(actual), np.sort(expected), rtol=1e-8, atol=1e-10)


def _overflows(scaled_logits: np.ndarray) -> bool:
    """Whether a softmax without the max shift overflows (exp(710) is inf) or underflows to 0/0."""
    return bool(np.max(scaled_logits) > 709.0 or np.max(scaled_logits) < -745.0)


def _matches(actual: np.ndarray, target, *, support: bool, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Close to ``target``; for truncations also the same support (a kept token of probability 1e-20
    is below any absolute tolerance, yet dropping it is exactly the mistake being tested)."""
    target = np.asarray(target, dtype=np.float64)
    if not close(actual, target, rtol=rtol, atol=atol):
        return False
    return not support or bool(np.array_equal(actual > 0, target > 0))


def _judge_distribution(target: str, expected: np.ndarray, *, wrong=(), alternatives=(), support: bool = True,
                        large: bool = False):
    """A 1-D distribution close to ``expected`` (or to one of ``alternatives``, boundary cases).

    ``large``: the logits overflow a naive ``exp``, so NaN or inf in the answer is named as such."""
    expected = np.asarray(expected, dtype=np.float64)

    def judge(outcomes):
        value = value_of(outcomes[0], target)
        actual = finite_floats(value, "the distribution", shape=expected.shape,
                               overflow=SOFTMAX_OVERFLOW if large else None)
        if any(_matches(actual, candidate, support=support) for candidate in (expected, *alternatives)):
            if float32_output(value, actual, expected) is not None or (
                    isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype.itemsize < 8):
                return Verdict(False, FLOAT32_OUTPUT.sentence, FLOAT32_OUTPUT.key)
            return PASS
        for output, misconception in wrong:
            if _matches(np.asarray(output, dtype=np.float64), expected, support=support, rtol=1e-8, atol=1e-10):
                continue  # this input cannot tell the mistake from the right answer
            if _matches(actual, output, support=support, rtol=1e-8, atol=1e-10):
                return Verdict(False, misconception.sentence, misconception.key)
        rounded = float32_output(value, actual, expected)
        if rounded is not None:
            return rounded
        if support and _same_values_other_ties(actual, expected):
            return Verdict(False, TIE_ORDER.sentence, TIE_ORDER.key)
        arithmetic = float32_arithmetic(value, actual, expected)
        if arithmetic is not None and np.array_equal(actual > 0, expected > 0):
            return arithmetic
        if close(actual, expected, rtol=RTOL, atol=ATOL):
            return Verdict(False, "the values are right but the set of kept tokens is not: a token of tiny "
                                  "probability was dropped or kept")
        if abs(float(actual.sum()) - 1.0) > 1e-9:
            return Verdict(False, "the distribution is not correct for this input, and it does not sum to one")
        return Verdict(False, "the distribution is not correct for this input")

    return judge


# ----------------------------------------------------------------------------- per-transform cases


def _temperature_case(name: str, logits, temperature: float, group: str = "temperature") -> Case:
    z = np.asarray(logits, dtype=np.float64)
    expected = reference.temperature_distribution(z, temperature)
    wrong = [(_softmax(z * temperature), TEMPERATURE_MULTIPLIED)]
    scaled = z / temperature
    wrong.append((np.exp(scaled - scaled.max()), UNNORMALISED_SOFTMAX))
    with np.errstate(over="ignore", invalid="ignore"):
        raw = np.exp(scaled)
    if np.all(np.isfinite(raw)):
        wrong.append((raw, UNNORMALISED_SOFTMAX))
    return Case(f"temperature: {name}", group, (Call("temperature_distribution", (logits, temperature)),),
                _judge_distribution("temperature_distribution", expected, wrong=wrong, support=False,
                                    large=_overflows(z / temperature)))


def _top_k_case(name: str, logits, k: int, group: str = "top_k") -> Case:
    z = np.asarray(logits, dtype=np.float64)
    p = _softmax(z)
    expected = reference.top_k_distribution(z, k)
    # The engines' other rule, every token tied with the k-th kept: the notebook accepts it too.
    keep_ties = reference.top_k_distribution(z, k, keep_ties=True)
    alternatives = [] if np.array_equal(keep_ties > 0, expected > 0) else [keep_ties]
    order = _stable_order(p)
    wrong = [
        (_keep(p, _larger_id_order(p)[:k]), TIE_ORDER),
        (_keep(p, order[:k], renormalise=False), NO_RENORMALISE),
    ]
    if k > 1:
        wrong.append((_keep(p, order[:k - 1]), TOP_K_OFF_BY_ONE))
    if k < p.size:
        wrong.append((_keep(p, order[:k + 1]), TOP_K_OFF_BY_ONE))
    return Case(f"top-k: {name}", group, (Call("top_k_distribution", (logits, k)),),
                _judge_distribution("top_k_distribution", expected, wrong=wrong, alternatives=alternatives,
                                    large=_overflows(z)))


def _top_p_case(name: str, logits, top_p: float, min_tokens: int | None = None, *, group: str = "top_p",
                exact: bool = False) -> Case:
    """``exact``: the taught case, where only the reference's outcome is accepted."""
    z = np.asarray(logits, dtype=np.float64)
    p = _softmax(z)
    floor = 1 if min_tokens is None else min_tokens
    kwargs = {} if min_tokens is None else {"min_tokens_to_keep": min_tokens}
    expected = np.asarray(reference.top_p_distribution(z, top_p, min_tokens_to_keep=floor), dtype=np.float64)
    order = _stable_order(p)
    count, acceptable = _nucleus_counts(p, top_p)
    alternatives = [] if exact else [_keep(p, order[:max(n, floor)]) for n in sorted(acceptable)]
    kept = max(count, floor)
    wrong = [
        (_keep(p, _larger_id_order(p)[:kept]), TIE_ORDER),
        (_keep(p, order[:kept], renormalise=False), NO_RENORMALISE),
    ]
    if floor > count:
        wrong.append((_keep(p, order[:count]), MIN_TOKENS_IGNORED))
    id_order = np.arange(p.size)
    unsorted_count = min(int(np.searchsorted(np.cumsum(p), top_p - BOUNDARY, side="left")) + 1, p.size)
    wrong.append((_keep(p, id_order[:max(unsorted_count, floor)]), TOP_P_UNSORTED))
    if count > 1 and count - 1 >= floor:
        wrong.append((_keep(p, order[:count - 1]), TOP_P_DROPS))
    if kept < p.size:
        wrong.append((_keep(p, order[:kept + 1]), TOP_P_EXTRA))
    if top_p == 1.0:
        wrong = [(_keep(p, order[:n]), TOP_P_ONE) for n in range(1, p.size)] + wrong
    return Case(f"top-p: {name}", group, (Call("top_p_distribution", (logits, top_p), kwargs),),
                _judge_distribution("top_p_distribution", expected, wrong=wrong, alternatives=alternatives,
                                    large=_overflows(z)))


# ----------------------------------------------------------------------------- public cases


SEED_LOGITS = np.array([2.0, 1.0, 0.0, -1.0])


def _judge_public(outcomes):
    warm = float_array(value_of(outcomes[0], "temperature_distribution"), "temperature_distribution(logits, 2.0)",
                       shape=(4,))
    if abs(warm[0] - 0.455054) >= 1e-6:
        raise Reject("temperature_distribution(logits, 2.0)[0] should be about 0.455054")
    if abs(float(warm.sum()) - 1.0) >= 1e-12:
        raise Reject("temperature_distribution(logits, 2.0) should sum to one within 1e-12")
    kept = float_array(value_of(outcomes[1], "top_k_distribution"), "top_k_distribution(logits, 2)", shape=(4,))
    if not np.allclose(kept[2:], 0.0):
        raise Reject("top_k_distribution(logits, 2) should be zero outside the two largest logits")
    if abs(kept[0] - 0.731059) >= 1e-6:
        raise Reject("top_k_distribution(logits, 2)[0] should be about 0.731059")
    nucleus = float_array(value_of(outcomes[2], "top_p_distribution"), "top_p_distribution(logits, 0.8)",
                          shape=(4,))
    if not np.allclose(nucleus, kept):
        raise Reject("top_p_distribution(logits, 0.8) should equal top_k_distribution(logits, 2) here")
    return PASS


# ----------------------------------------------------------------------------- cases


#: Vocabulary sizes of the tie-block cases: an unstable sort misorders ties at each of them, with
#: NumPy's introsort and with its SIMD sorts alike (tests/test_checks_ex19_sampling_transforms.py).
TIE_BLOCK_SIZES = (40, 100, 200, 500)


def tie_block(vocabulary: int) -> tuple:
    """Logits with an eighth of the tokens high, an eighth low and the rest equal (shuffled), with
    ``k`` and ``top_p`` that cut the tied block in the middle, far from any rounding boundary."""
    rng = np.random.default_rng(vocabulary)
    z = np.zeros(vocabulary)
    high = rng.choice(vocabulary, vocabulary // 8, replace=False)
    z[high] = rng.uniform(1.0, 3.0, vocabulary // 8)
    low = rng.choice(np.setdiff1d(np.arange(vocabulary), high), vocabulary // 8, replace=False)
    z[low] = -2.0
    tied = vocabulary - 2 * (vocabulary // 8)
    k = vocabulary // 8 + tied // 2
    p = _softmax(z)
    ranked = np.sort(p)[::-1]
    top_p = float(ranked[:k - 1].sum() + 0.5 * ranked[k - 1])  # reached by the k-th token, not before
    return z, k, top_p


#: How far a random case keeps from a cut: the k-th and (k+1)-th logits of a random top-k case, and
#: every prefix sum of a random top-p case from ``top_p``, differ by more than this, so that neither
#: float64 rounding (another order of summing, a shifted softmax) nor a rounding tolerance below it
#: can change which tokens are kept. Only the taught cases sit on a boundary, on purpose.
CLEARANCE = 1e-6


def _clear_cut(z: np.ndarray, k: int) -> bool:
    ranked = np.sort(np.asarray(z, dtype=np.float64))[::-1]
    return k >= ranked.size or ranked[k - 1] - ranked[k] > CLEARANCE


def _clear_nucleus(z: np.ndarray, top_p: float, floor: int = 0) -> bool:
    """No prefix sum within :data:`CLEARANCE` of ``top_p``, and a nucleus of more than ``floor`` tokens
    (the case where a ``min_tokens_to_keep`` of ``floor`` must change nothing)."""
    p = _softmax(np.asarray(z, dtype=np.float64))
    prefix = np.cumsum(p[_stable_order(p)])
    count = int(np.searchsorted(prefix, top_p - BOUNDARY, side="left")) + 1
    return bool(np.min(np.abs(prefix - top_p)) > CLEARANCE) and count > floor


def _top_k_logits(k: int, draw) -> np.ndarray:
    return redraw(draw, lambda z: _clear_cut(z, k), f"a clear gap at the top-{k} cut")


def _top_p_logits(top_p: float, draw, floor: int = 0) -> np.ndarray:
    what = f"every prefix sum clear of top_p = {top_p}" + (f" and a nucleus of more than {floor}" if floor else "")
    return redraw(draw, lambda z: _clear_nucleus(z, top_p, floor), what)


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(19))
    cases = [Case("the open checks on logits [2, 1, 0, -1]", "public",
                  (Call("temperature_distribution", (SEED_LOGITS, 2.0)),
                   Call("top_k_distribution", (SEED_LOGITS, 2)),
                   Call("top_p_distribution", (SEED_LOGITS, 0.8))),
                  _judge_public)]

    # --- temperature
    for vocabulary, temperature in ((5, 0.3), (12, 0.7), (32, 1.0), (100, 2.5), (7, 10.0)):
        logits = rng.normal(scale=2.0, size=vocabulary)
        cases.append(_temperature_case(f"{vocabulary} tokens at T = {temperature}", logits, temperature))
    cases.append(_temperature_case("logits of order 1e3 at T = 0.5", rng.normal(scale=3.0, size=6) + 1000.0, 0.5))
    cases.append(_temperature_case("logits given as a list", rng.normal(size=6).tolist(), 1.7))

    # --- top-k
    for vocabulary, k in ((6, 1), (10, 3), (32, 7), (50, 50), (100, 20)):
        logits = _top_k_logits(k, lambda: rng.normal(scale=2.0, size=vocabulary))
        cases.append(_top_k_case(f"{vocabulary} tokens, k = {k}", logits, k))
    ties = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    cases.append(_top_k_case("ties: three tokens tied for first, k = 2", ties, 2))
    cases.append(_top_k_case("ties: three tied tokens after the top two, k = 4",
                             np.array([-1.0, 3.0, -1.0, 2.0, -1.0, -3.0]), 4))
    cases.append(_top_k_case("five of (0.2, 0.1, 0.1, 0.1, 0.3, 0.2): ids 2 and 3 tie for the last place",
                             np.log([0.2, 0.1, 0.1, 0.1, 0.3, 0.2]), 5))
    for vocabulary in TIE_BLOCK_SIZES:
        logits, k, _ = tie_block(vocabulary)
        cases.append(_top_k_case(f"a block of tied tokens among {vocabulary}, the cut inside it", logits, k))
    cases.append(_top_k_case("logits given as a list", _top_k_logits(3, lambda: rng.normal(size=8)).tolist(), 3))
    cases.append(_top_k_case("logits of order 1e3",
                             _top_k_logits(4, lambda: rng.normal(scale=3.0, size=9) - 1000.0), 4))

    # --- top-p: the taught cases first (required exactly)
    nucleus = np.log(np.array([0.55, 0.20, 0.15, 0.10]))
    cases.append(_top_p_case("the task's nucleus (0.55, 0.20, 0.15, 0.10) at 0.75 keeps two tokens",
                             nucleus, 0.75, exact=True))
    cases.append(_top_p_case("the task's nucleus at 0.76 keeps three tokens", nucleus, 0.76, exact=True))
    cases.append(_top_p_case("top_p = 1 keeps the whole support", rng.normal(scale=2.0, size=12), 1.0,
                             exact=True))
    cases.append(_top_p_case("top_p = 1 keeps even a token of probability 1e-20",
                             np.array([0.0, -46.0, -1.0, -50.0]), 1.0, exact=True))
    for vocabulary, top_p in ((5, 0.3), (10, 0.5), (32, 0.9), (100, 0.95), (64, 0.7)):
        logits = _top_p_logits(top_p, lambda: rng.normal(scale=2.0, size=vocabulary))
        cases.append(_top_p_case(f"{vocabulary} tokens, top_p = {top_p}", logits, top_p))
    cases.append(_top_p_case("uniform logits: ties enter the nucleus in id order", np.zeros(4), 0.3))
    cases.append(_top_p_case("a tied tail enters the nucleus in id order",
                             np.array([-1.0, 2.0, -1.0, -1.0]), 0.95))
    for vocabulary in TIE_BLOCK_SIZES:
        logits, _, top_p = tie_block(vocabulary)
        cases.append(_top_p_case(f"a block of tied tokens among {vocabulary}, the nucleus ends inside it",
                                 logits, top_p))
    cases.append(_top_p_case("min_tokens_to_keep = 3 with one dominant token",
                             np.array([6.0, 0.0, 0.5, -1.0, 0.2]), 0.5, 3))
    cases.append(_top_p_case("min_tokens_to_keep below the nucleus size changes nothing",
                             _top_p_logits(0.9, lambda: rng.normal(size=10), floor=2), 0.9, 2))
    cases.append(_top_p_case("logits given as a list", _top_p_logits(0.6, lambda: rng.normal(size=7)).tolist(),
                             0.6))
    cases.append(_top_p_case("logits of order 1e3",
                             _top_p_logits(0.85, lambda: rng.normal(scale=2.0, size=8) + 1000.0), 0.85))

    # --- validation
    logits = rng.normal(size=5)
    cases += [
        error_case("temperature 0", "temperature_distribution", (logits, 0.0), "temperature = 0", "temperature"),
        error_case("negative temperature", "temperature_distribution", (logits, -1.0), "a negative temperature",
                    "temperature"),
        error_case("an infinite temperature", "temperature_distribution", (logits, np.inf),
                   "temperature = inf (not finite)", "temperature"),
        error_case("a NaN temperature", "temperature_distribution", (logits, np.nan),
                   "temperature = NaN (not finite)", "temperature"),
        error_case("+inf in the logits", "top_k_distribution", (np.array([0.0, np.inf, 1.0]), 1),
                   "a +inf among the logits", "logits", names=("ValueError",)),
        error_case("empty logits", "top_p_distribution", (np.zeros(0), 0.5), "empty logits", "logits", names=("ValueError",)),
        error_case("2-D logits", "top_k_distribution", (np.zeros((2, 3)), 1), "2-D logits", "logits", names=("ValueError",)),
        error_case("a NaN top_p", "top_p_distribution", (logits, np.nan), "top_p = NaN", "top_p"),
        error_case("NaN in the logits", "temperature_distribution", (np.array([0.0, np.nan, 1.0]), 1.0),
                    "a NaN among the logits", "logits", names=("ValueError",)),
        error_case("k = 0", "top_k_distribution", (logits, 0), "k = 0", "k"),
        error_case("k larger than the vocabulary", "top_k_distribution", (logits, 6), "k above the vocabulary size",
                    "k"),
        error_case("k given as a bool", "top_k_distribution", (logits, True), "k = True (a bool, not a count)", "k"),
        error_case("k given as a non-integer float", "top_k_distribution", (logits, 2.5), "k = 2.5", "k"),
        error_case("top_p = 0", "top_p_distribution", (logits, 0.0), "top_p = 0", "top_p"),
        error_case("top_p above 1", "top_p_distribution", (logits, 1.5), "top_p = 1.5", "top_p"),
        error_case("negative top_p", "top_p_distribution", (logits, -0.2), "a negative top_p", "top_p"),
    ]
    return cases


#: The nucleus rule is the exercise: a nucleus that drops the token reaching top_p, or adds up mass in
#: token-id order, caps the notebook at a third of its autograded points.
CENTRAL = Central(
    "the nucleus rule (rank by probability, keep the token whose running sum reaches top_p)",
    {"top-p-drops-threshold-token", "top-p-unsorted"},
    ("top-p: the task's nucleus (0.55, 0.20, 0.15, 0.10) at 0.75 keeps two tokens",
     "top-p: the task's nucleus at 0.76 keeps three tokens", "top-p: 10 tokens, top_p = 0.5",
     "top-p: 32 tokens, top_p = 0.9"))

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
GATE = Gate(groups=("validation",), cases=(
    "temperature: 5 tokens at T = 0.3",
    "temperature: 32 tokens at T = 1.0",
    "top-k: 10 tokens, k = 3",
    "top-k: 32 tokens, k = 7",
    "top-p: 5 tokens, top_p = 0.3",
    "top-p: 10 tokens, top_p = 0.5",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         cases=(
             'temperature: 5 tokens at T = 0.3',
             'temperature: 32 tokens at T = 1.0',
             'top-k: 10 tokens, k = 3',
             'top-k: 32 tokens, k = 7',
             'top-p: 5 tokens, top_p = 0.3',
             'top-p: 10 tokens, top_p = 0.5',)),
    # The task's nucleus at 0.75 and 0.76 must be graded on the published trap itself (its float64 sum
    # lands one rounding step below 0.75; another input would not teach the same trap), and the
    # boundary-check cell publishes those inputs and answers: they count only when the same
    # top_p_distribution also passes ordinary hidden nuclei, so a lookup of the trap earns nothing there.
    Gate(groups=("top_p",), needs="passed",
         only=("top-p: the task's nucleus (0.55, 0.20, 0.15, 0.10) at 0.75 keeps two tokens",
               "top-p: the task's nucleus at 0.76 keeps three tokens"),
         cases=(
             'top-p: 5 tokens, top_p = 0.3',
             'top-p: 10 tokens, top_p = 0.5',
             'top-p: 32 tokens, top_p = 0.9',)),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES)
