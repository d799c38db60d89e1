"""Hidden checks for exercise 22: the gradients of both KL directions, and of k1, k2, k3 used as a
loss or as a reward, for a softmax policy (exact expectations over the vocabulary, no sampling noise).

Expected values come from :mod:`autograder.reference.further`; the reference itself is tested against
central finite differences in ``tests/test_reference_further.py``. Misconceptions are recognised by
their outputs: directions swapped, a sign flipped, the softmax Jacobian's centring term left out, and
the tempting "each estimator's loss gradient is the reverse-KL gradient".

A policy and reference that disagree completely (theta = [1000, 0, -1000] against its reverse) make
r = p/q overflow: k3's gradients must never form r. Swapped directions cap the notebook at a third;
bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call, Returned
from autograder.checks.authoring import (
    Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, coding_groups, error_case, exercise_stem,
    judge_key, log_softmax, shared as _shared,
)
from autograder.reference import further

STEM = exercise_stem(__name__)

GROUPS = coding_groups(
    1,
    Group("true_kl", 2, "true_kl_gradients: the gradients of KL(q||p) and KL(p||q) with respect to the logits"),
    Group("loss", 2, "loss_gradients: E_q[grad k] for k1, k2, k3 used as a loss"),
    Group("reward", 2, "reward_gradients: E_q[k grad log q] for k1, k2, k3 used as a reward"),
    validation=(1, "Every function rejects mismatched shapes and non-finite logits"),
)

DIRECTIONS_SWAPPED = Misconception(
    "kl-directions-swapped",
    "The two directions are swapped: 'reverse' is KL(q||p), the expectation under the policy q being trained; "
    "'forward' is KL(p||q), the expectation under the reference p.")
SIGN_FLIPPED = Misconception(
    "gradient-sign",
    "The sign is flipped: these are gradients of the KL (the direction in which it grows), not descent steps.")
NOT_CENTRED = Misconception(
    "softmax-jacobian",
    "The centring term is missing: for q = softmax(theta), grad log q(x) = e_x - q, so every expectation "
    "E_q[w(x) grad log q(x)] is q * (w - E_q[w]), not q * w.")
ALL_REVERSE = Misconception(
    "estimator-gradient-is-kl-gradient",
    "Not every estimator's gradient is the reverse-KL gradient: an unbiased estimate of a value is not an "
    "unbiased estimate of its gradient. Differentiate k(x) through log q(x) with x fixed and take E_q.")
LOSS_REWARD_SWAPPED = Misconception(
    "loss-reward-swapped",
    "These are the other use's gradients: as a loss, k is differentiated (x fixed, E_q[grad k]); as a reward "
    "k is a constant weight on grad log q (E_q[k grad log q]).")

K1_SIGN = _shared.K1_SIGN
RATIO_OVERFLOW = Misconception(
    "ratio-overflow",
    "A value came out inf or NaN: where q(x) underflows and p(x) does not, r = exp(log p - log q) overflows "
    "and q * r becomes 0 * inf. Simplify before computing: q(x) r(x) = p(x), so q * (1 - r) is q - p and "
    "no r is needed.")

ESTIMATORS = ("k1", "k2", "k3")


def _overflow_named(judge, function: str, key: str):
    """``judge``, except that a non-finite value at ``key`` is named as the overflowing ratio (the case's
    input makes r = p/q overflow while q * r = p stays finite)."""

    def wrapped(outcomes):
        outcome = outcomes[0]
        if isinstance(outcome, Returned) and isinstance(outcome.value, dict) and key in outcome.value:
            try:
                values = np.asarray(outcome.value[key], dtype=np.float64)
            except (TypeError, ValueError):
                values = None
            if values is not None and not np.all(np.isfinite(values)):
                return Verdict(False, RATIO_OVERFLOW.sentence, RATIO_OVERFLOW.key)
        return judge(outcomes)

    return wrapped
DIRECTIONS = ("forward", "reverse")


def _uncentred(theta, ref) -> dict:
    """What leaving out the softmax Jacobian's centring gives, for each weight function."""
    log_q, log_p = log_softmax(theta), log_softmax(ref)
    q = np.exp(log_q)
    lr = log_p - log_q
    with np.errstate(over="ignore", invalid="ignore"):  # r overflows where q underflows: dropped by _finite
        return {"reverse": q * (log_q - log_p), "loss": {"k1": q, "k2": -q * lr, "k3": -q * np.expm1(lr)},
                "reward": {"k1": -q * lr, "k2": 0.5 * q * lr ** 2, "k3": q * (np.expm1(lr) - lr)}}


def _finite(wrong: list) -> list:
    """The mistakes whose output on this input is finite (a non-finite one is named by its overflow)."""
    return [(output, m) for output, m in wrong if np.all(np.isfinite(output))]


def _cases(name, theta, ref, *, as_lists=False, ratio_overflows=False):
    true = further.true_kl_gradients(theta, ref)
    loss = further.loss_gradients(theta, ref)
    reward = further.reward_gradients(theta, ref)
    plain = _uncentred(theta, ref)
    args = (theta.tolist(), ref.tolist()) if as_lists else (theta, ref)
    cases = []
    for key in DIRECTIONS:
        other = "forward" if key == "reverse" else "reverse"
        wrong = [(true[other], DIRECTIONS_SWAPPED), (-true[key], SIGN_FLIPPED)]
        if key == "reverse":
            wrong.append((plain["reverse"], NOT_CENTRED))
        cases.append(Case(f"{key} KL gradient, {name}", "true_kl", (Call("true_kl_gradients", args),),
                          judge_key("true_kl_gradients", key, true, DIRECTIONS, wrong=_finite(wrong))))
    for key in ESTIMATORS:
        # "It is the reverse-KL gradient" first: for k1 that is also the reward's gradient, and the belief
        # that every estimator's gradient is the KL's is the likelier thought behind it.
        wrong = [(true["reverse"], ALL_REVERSE)] if key != "k2" else []
        wrong += [(reward[key], LOSS_REWARD_SWAPPED), (-loss[key], SIGN_FLIPPED), (plain["loss"][key], NOT_CENTRED)]
        judge = judge_key("loss_gradients", key, loss, ESTIMATORS, wrong=_finite(wrong))
        if ratio_overflows and key == "k3":
            judge = _overflow_named(judge, "loss_gradients", key)
        cases.append(Case(f"{key} as a loss, {name}", "loss", (Call("loss_gradients", args),), judge))
        # k1 = -log r used as a reward with +log r is k1's sign slip, named as in exercises 11 and 18
        wrong = [(loss[key], LOSS_REWARD_SWAPPED), (-reward[key], K1_SIGN if key == "k1" else SIGN_FLIPPED),
                 (plain["reward"][key], NOT_CENTRED)]
        if key != "k1":
            wrong.append((true["reverse"], ALL_REVERSE))
        judge = judge_key("reward_gradients", key, reward, ESTIMATORS, wrong=_finite(wrong))
        if ratio_overflows and key == "k3":
            judge = _overflow_named(judge, "reward_gradients", key)
        cases.append(Case(f"{key} as a reward, {name}", "reward", (Call("reward_gradients", args),), judge))
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    cases = []
    rng = np.random.default_rng(variant.seed(22))

    # --- public: the notebook's open checks (the policy of the task text)
    theta = np.array([1.0, 0.0, -1.0])
    ref = np.array([0.0, 0.5, 0.0])
    true = further.true_kl_gradients(theta, ref)
    cases.append(Case("the open check: forward-KL gradient of the three-token policy", "public",
                      (Call("true_kl_gradients", (theta, ref)),),
                      judge_key("true_kl_gradients", "forward", true, DIRECTIONS, exact=True,
                                wrong=[(true["reverse"], DIRECTIONS_SWAPPED)])))
    cases.append(Case("the open check: k1 used as a loss has zero expected gradient", "public",
                      (Call("loss_gradients", (theta, ref)),),
                      judge_key("loss_gradients", "k1", further.loss_gradients(theta, ref), ESTIMATORS, exact=True,
                                wrong=[(true["reverse"], ALL_REVERSE)])))

    inputs = [
        ("a policy over 5 tokens", rng.normal(size=5), rng.normal(size=5)),
        ("a batch of 3 positions over 4 tokens", rng.normal(scale=1.5, size=(3, 4)), rng.normal(scale=1.5, size=(3, 4))),
        ("a peaked reference (logit gap 12)", rng.normal(size=6), np.array([12.0, 0.0, 0.0, 0.0, 0.0, 0.0])),
        ("logits of order 1e3", rng.normal(size=(2, 5)) + 1000.0, rng.normal(size=(2, 5)) - 1000.0),
        ("policy equal to the reference (every gradient is 0)", np.array([0.3, -1.0, 2.0]), np.array([0.3, -1.0, 2.0])),
    ]
    for name, theta, ref in inputs:
        cases += _cases(name, theta, ref)
    # q puts almost all its mass where p puts almost none and the other way round: r = p/q overflows
    cases += _cases("logits of order 1e3 with large differences", np.array([1000.0, 0.0, -1000.0]),
                    np.array([-1000.0, 0.0, 1000.0]), ratio_overflows=True)
    theta, ref = rng.normal(size=4), rng.normal(size=4)
    cases += [case for case in _cases("logits given as lists", theta, ref, as_lists=True)
              if case.name.startswith(("reverse", "k3"))]

    # --- validation
    good = rng.normal(size=4)
    nan = good.copy()
    nan[2] = np.nan
    inf = good.copy()
    inf[1] = np.inf
    batch = rng.normal(size=(3, 4))
    for function in ("true_kl_gradients", "loss_gradients", "reward_gradients"):
        cases += [
            error_case(f"{function}: different vocabulary sizes", function, (good, rng.normal(size=5)),
                       "theta and ref_logits over different vocabularies", "ref_logits"),
            error_case(f"{function}: NaN in theta", function, (nan, good), "a theta with a NaN", "theta"),
            error_case(f"{function}: +inf in ref_logits", function, (good, inf), "a ref_logits with +inf",
                       "ref_logits"),
            error_case(f"{function}: a batch of theta against one row of ref_logits", function, (batch, good),
                       "theta of shape [3, 4] with ref_logits of shape [4] (NumPy would broadcast them)",
                       "ref_logits"),
        ]
    return cases


#: The two directions of the KL are the exercise: swapping them caps the notebook at a third of its points.
CENTRAL = Central(
    "the direction of each KL ('reverse' = KL(q||p) under the policy, 'forward' = KL(p||q))",
    {"kl-directions-swapped"},
    ("the open check: forward-KL gradient of the three-token policy", "reverse KL gradient, a policy over 5 tokens",
     "forward KL gradient, a policy over 5 tokens"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input (a stub that
#: raises ValueError on everything would otherwise collect them).
#: (Not a k1-as-a-loss case: its answer is zero on every input, which a function of zeros gets right too.)
#: Its twin (bad input counts only for a function that also answers valid input) reads k2 and k3 as a
#: reward: zeros for k1 as a reward look like k1's loss gradient, a named mistake.
GATE = Gate(cases=("reverse KL gradient, a policy over 5 tokens", "k2 as a loss, a policy over 5 tokens",
                   "k1 as a reward, a policy over 5 tokens"),
            attempt_cases=("reverse KL gradient, a policy over 5 tokens", "forward KL gradient, a policy over 5 tokens",
                           "k2 as a loss, a policy over 5 tokens", "k3 as a loss, a policy over 5 tokens",
                           "k2 as a reward, a policy over 5 tokens", "k3 as a reward, a policy over 5 tokens"))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=('the open check: forward-KL gradient of the three-token policy',),
         cases=(
             'forward KL gradient, a policy over 5 tokens',
             'forward KL gradient, a batch of 3 positions over 4 tokens',)),
    # k1's loss gradient is zero on every input (the open check's lesson), which a function of zeros gets
    # right too: the evidence is a loss gradient that is not zero.
    Gate(groups=("public",), needs="passed", quorum=1,
         only=('the open check: k1 used as a loss has zero expected gradient',),
         cases=(
             'k2 as a loss, a policy over 5 tokens',
             'k3 as a loss, a policy over 5 tokens',
             'k2 as a loss, a batch of 3 positions over 4 tokens',
             'k3 as a loss, a batch of 3 positions over 4 tokens',)),
)

#: Where every gradient is zero (the policy equal to the reference, k1 used as a loss, a softmax saturated
#: by logits of order 1e3) an answer of zeros is right: those cases count only when the same function
#: also gets a gradient that is not zero right.
_ZERO = ("a gradient that is zero on this input counts only when the function also gets a gradient that is "
         "not zero right")
_EQUAL = "policy equal to the reference (every gradient is 0)"
_SATURATED = "logits of order 1e3 with large differences"
CONSTANT_GATES = (
    Gate(groups=("true_kl",), needs="attempted", quorum=1, why=_ZERO,
         only=(f"forward KL gradient, {_EQUAL}", f"reverse KL gradient, {_EQUAL}", f"reverse KL gradient, {_SATURATED}"),
         cases=("forward KL gradient, a policy over 5 tokens", "reverse KL gradient, a policy over 5 tokens",
                "forward KL gradient, a batch of 3 positions over 4 tokens",
                "reverse KL gradient, a batch of 3 positions over 4 tokens")),
    Gate(groups=("loss",), needs="attempted", quorum=1, why=_ZERO,
         only=tuple(f"k1 as a loss, {name}" for name in ("a policy over 5 tokens", "a batch of 3 positions over 4 tokens",
                                                        "a peaked reference (logit gap 12)", "logits of order 1e3",
                                                        _EQUAL, _SATURATED))
         + (f"k2 as a loss, {_EQUAL}", f"k3 as a loss, {_EQUAL}", f"k2 as a loss, {_SATURATED}"),
         cases=("k2 as a loss, a policy over 5 tokens", "k3 as a loss, a policy over 5 tokens",
                "k2 as a loss, a batch of 3 positions over 4 tokens", "k3 as a loss, a batch of 3 positions over 4 tokens")),
    Gate(groups=("reward",), needs="attempted", quorum=1, why=_ZERO,
         only=(f"k1 as a reward, {_EQUAL}", f"k2 as a reward, {_EQUAL}", f"k3 as a reward, {_EQUAL}",
               f"k1 as a reward, {_SATURATED}", f"k2 as a reward, {_SATURATED}"),
         # not k1 as a reward: zeros there read as k1's loss gradient, a named mistake
         cases=("k2 as a reward, a policy over 5 tokens", "k3 as a reward, a policy over 5 tokens",
                "k2 as a reward, a batch of 3 positions over 4 tokens",
                "k3 as a reward, a batch of 3 positions over 4 tokens")),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + CONSTANT_GATES)
