"""Hidden checks for exercise 28: the KL of a whole (two-step) response, and the gradients that KL in the
reward with returns, per-token KL losses (k1, k2, k3, verl's k3+), off-policy weights and the loss
normalisers give it (exact sums over the tree of responses, no sampling noise).

Expected values come from :mod:`autograder.reference.kl_response`, itself tested against mpmath central
differences of objectives written out over the tree (``tests/test_reference_kl_response.py``). Mistakes are
recognised by their outputs: the future-KL term dropped (the central idea: it caps the notebook at a
third), the second step not weighted by the chance of reaching it, the discount applied from the start,
k2's slope with the wrong sign, k3 and k3+ given each other's gradient or value, the importance weight
missing, inverted, detached where it must not be, or the prefix weighted by the policy instead of the
sampler, and a normaliser by the wrong count. Bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import importlib

import numpy as np

from autograder.channel import Call, Returned
from autograder.checks.authoring import (
    Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, coding_groups, error_case, exercise_stem,
    judge_array, judge_key, log_softmax, mistakes_later, mistakes_part,
)
from autograder.reference import kl_response as ref

STEM = exercise_stem(__name__)

# One key, one sentence in every notebook: the mistakes 22 and 23 name come from their checks.
_22 = importlib.import_module("autograder.exercises.22_kl_reward_vs_loss.check")
_23 = importlib.import_module("autograder.exercises.23_loss_aggregation.check")
SIGN_FLIPPED, NOT_CENTRED, RATIO_OVERFLOW = _22.SIGN_FLIPPED, _22.NOT_CENTRED, _22.RATIO_OVERFLOW
MODES_MIXED, SEQUENCE_WITHOUT_BATCH, CONSTANT_WITHOUT_BATCH = (
    _23.MODES_MIXED, _23.SEQUENCE_WITHOUT_BATCH, _23.CONSTANT_WITHOUT_BATCH)

GROUPS = coding_groups(
    1,
    Group("sequence", 2, "sequence_kl_gradient and reward_return_gradient: the response's KL and KL in the "
                         "reward with returns"),
    Group("loss", 2, "per_token_loss_gradient: value and gradient of k1, k2, k3 and k3+ summed over the response"),
    Group("off_policy", 1, "off_policy_loss_gradient: samples from an older policy, no weight, a detached or a "
                           "differentiable ratio"),
    Group("normaliser", 1, "response_kl_weights: the weight on each response's KL under each loss normaliser"),
    validation=(1, "Every function rejects bad shapes, non-finite logits, unknown names and out-of-range numbers"),
)

FUTURE_DROPPED = Misconception(
    "future-kl-dropped",
    "The first step's gradient misses the KL of what comes after it: changing the first token's "
    "probabilities changes which second-step distributions get visited, so its score is weighted by its "
    "own KL plus the expected KL of the rest of the response (the return from that step on).")
VISIT_MISSING = Misconception(
    "visit-weight-missing",
    "The second step's rows are not weighted by the chance of reaching them: row a is only visited when the "
    "first token is a, so its gradient (and its share of the value) carries that first token's probability "
    "under the distribution the responses are drawn from.")
FORWARD_SEQUENCE = Misconception(
    "sequence-kl-forward",
    "This is the gradient of the other direction, KL(ref || pi): the response's KL to keep small is "
    "KL(pi || ref), the expectation over responses drawn from the policy being trained.")
DISCOUNT_IGNORED = Misconception(
    "discount-ignored",
    "The discount is missing: the return from the first step is its own k1 plus gamma times the later k1.")
DISCOUNT_FROM_START = Misconception(
    "discount-from-start",
    "The discount is counted from the start of the response, not from the current step: the return from "
    "step t weights step t' by gamma ** (t' - t), so each step's own k1 has weight 1.")
LOSS_HAS_FUTURE = Misconception(
    "loss-has-future-kl",
    "A per-token loss has no future term: with the sampled response held fixed, the first token's loss term "
    "depends on the first step's logits only, so its gradient is that position's own expected gradient, "
    "not the whole response's KL gradient.")
K2_SLOPE_SIGN = Misconception(
    "k2-slope-sign",
    "k2's slope has the wrong sign: k2 = (log q - log p)^2 / 2, so dk2/dlog q = log q - log p (it pushes "
    "log q down where it exceeds log p).")
K3_AS_K2 = Misconception(
    "k3-gradient-is-k2s",
    "This k3 has k2's gradient, which is k3+ (the straight-through version): plain k3 differentiated "
    "through log q has slope 1 - r, with r = p / q.")
K3PLUS_AS_K3 = Misconception(
    "k3plus-gradient-is-k3s",
    "k3+ is k2 - k2.detach() + k3.detach(): its value is k3's but its gradient is k2's (slope log q - log p), "
    "not k3's own slope 1 - r.")
K3PLUS_VALUE_K2 = Misconception(
    "k3plus-value-is-k2s",
    "k3+ reports k3's value (k2 - k2.detach() + k3.detach() equals k3), not k2's.")
WEIGHT_MISSING = Misconception(
    "importance-weight-missing",
    "The importance weight is missing: the tokens come from the older policy, so without pi/pi_old each "
    "term is averaged under pi_old instead of pi.")
WEIGHT_INVERTED = Misconception(
    "importance-weight-inverted",
    "The importance weight is upside down: an average under pi of terms sampled from pi_old needs "
    "pi / pi_old, the policy being trained over the one that sampled.")
RATIO_DETACHED = Misconception(
    "ratio-detached",
    "The ratio was held constant: as TRL multiplies the KL by it, the ratio pi/pi_old carries a gradient, "
    "which adds k's value times the score to k's own slope.")
RATIO_DIFFERENTIATED = Misconception(
    "ratio-differentiated",
    "A detached ratio carries no gradient: it only reweights each term's slope, so the gradient is the "
    "on-policy loss gradient and k's value is not added to the slope.")
PREFIX_BY_POLICY = Misconception(
    "prefix-weighted-by-policy",
    "A token-level ratio corrects only that token's own conditional: the second step is still reached "
    "through a first token drawn from pi_old, so its rows count with pi_old's first-token probabilities.")
OLD_IGNORED = Misconception(
    "sampler-ignored",
    "These are the on-policy values: with no weight, every term is averaged under pi_old, the policy that "
    "drew the responses.")
WEIGHT_IS_OBJECTIVE = Misconception(
    "kl-weight-is-objective",
    "This is the weight of the KL the objective names, (1/B) sum_i KL_i, not what the normaliser gives: "
    "each token's KL term is scaled by the same weight as its policy-loss term.")
EMPTY_WEIGHTED = Misconception(
    "empty-response-weighted",
    "A response with no token has no KL to weight: its weight is 0 in every mode.")

ESTIMATORS = ref.ESTIMATORS
STEPS = ("step1", "step2")
LOSS_KEYS = ("step1", "step2", "value")


# ------------------------------------------------------------------------ wrong outputs, in the trusted process

def _logs(theta1, theta2):
    return log_softmax(np.asarray(theta1, dtype=np.float64)), log_softmax(np.asarray(theta2, dtype=np.float64))


def _centred(q, weighted):
    return weighted - q * np.sum(weighted, axis=-1, keepdims=True)


def _sequence_wrongs(theta1, theta2, ref1, ref2, gamma=1.0, *, returns=False) -> dict:
    """(output, misconception) lists for the keys "step1" and "step2" of the sequence-KL gradient (or of
    KL in the reward with returns and discount ``gamma``)."""
    (lq1, lq2), (lp1, lp2) = _logs(theta1, theta2), _logs(ref1, ref2)
    q1, q2, p1, p2 = np.exp(lq1), np.exp(lq2), np.exp(lp1), np.exp(lp2)
    d1, d2 = lq1 - lp1, lq2 - lp2
    future = np.sum(q2 * d2, axis=-1)
    right1 = _centred(q1, q1 * (d1 + gamma * future))
    right2 = q1[:, None] * _centred(q2, q2 * d2)
    step1 = [(_centred(q1, q1 * d1), FUTURE_DROPPED), (-right1, SIGN_FLIPPED), (q1 * (d1 + gamma * future), NOT_CENTRED)]
    step2 = [(_centred(q2, q2 * d2), VISIT_MISSING), (-right2, SIGN_FLIPPED), (q1[:, None] * q2 * d2, NOT_CENTRED)]
    if returns:
        if gamma != 1.0:
            step1.append((_centred(q1, q1 * (d1 + future)), DISCOUNT_IGNORED))
            step2.append((gamma * right2, DISCOUNT_FROM_START))
    else:
        step1.append((q1 - p1, FORWARD_SEQUENCE))
        step2.append((p1[:, None] * (q2 - p2), FORWARD_SEQUENCE))
    right = {"step1": right1, "step2": right2}
    return {key: [(w, m) for w, m in found if not np.allclose(w, right[key], rtol=1e-8, atol=1e-10)]
            for key, found in (("step1", step1), ("step2", step2))}


def _loss_wrongs(theta1, theta2, ref1, ref2, estimator) -> dict:
    """(output, misconception) lists for each key of per_token_loss_gradient's result."""
    right = ref.per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator)
    other = {name: ref.per_token_loss_gradient(theta1, theta2, ref1, ref2, name) for name in ESTIMATORS}
    true = ref.sequence_kl_gradient(theta1, theta2, ref1, ref2)
    q1 = np.exp(_logs(theta1, theta2)[0])
    wrong = {key: [] for key in LOSS_KEYS}
    wrong["step1"].append((true["step1"], LOSS_HAS_FUTURE))
    if estimator == "k2":
        for key in STEPS:
            wrong[key].append((-right[key], K2_SLOPE_SIGN))
    if estimator == "k3":
        for key in STEPS:
            wrong[key].append((other["k3+"][key], K3_AS_K2))
    if estimator == "k3+":
        for key in STEPS:
            wrong[key].append((other["k3"][key], K3PLUS_AS_K3))
        wrong["value"].append((other["k2"]["value"], K3PLUS_VALUE_K2))
    for key in STEPS:
        wrong[key].append((-right[key], SIGN_FLIPPED))
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong["step2"].append((right["step2"] / q1[:, None], VISIT_MISSING))
    return {key: [(w, m) for w, m in found if np.all(np.isfinite(w))
                  and not np.allclose(w, right[key], rtol=1e-8, atol=1e-10)] for key, found in wrong.items()}


def _inverted(theta, reference, old, estimator, weight) -> dict:
    """What the weight pi_old / pi in place of pi / pi_old gives (computed in log space; moderate logits)."""
    (lq1, lq2), (lp1, lp2), (ls1, ls2) = theta, reference, old

    def one(ls, lq, lp):
        s, q = np.exp(ls), np.exp(lq)
        inv = np.exp(2 * ls - lq)  # s * (s / q)
        gap = lq - lp
        value_est = "k3" if estimator == "k3+" else estimator
        k = {"k1": gap, "k2": 0.5 * gap ** 2, "k3": np.expm1(-gap) + gap}[value_est]
        slope = {"k1": np.ones_like(gap), "k2": gap, "k3+": gap, "k3": -np.expm1(-gap)}[estimator]
        if weight == "differentiable":  # d(s/q) = -(s/q) dlog q
            slope = slope - k
        return np.sum(inv * k, axis=-1), _centred(q, inv * slope)

    v1, g1 = one(ls1, lq1, lp1)
    v2, g2 = one(ls2, lq2, lp2)
    visit = np.exp(ls1)
    return {"value": float(v1 + np.sum(visit * v2)), "step1": g1, "step2": visit[:, None] * g2}


def _off_policy_wrongs(args, estimator, weight) -> dict:
    theta1, theta2, ref1, ref2, old1, old2 = args
    right = ref.off_policy_loss_gradient(*args, estimator, weight)
    same = lambda w: ref.off_policy_loss_gradient(*args, estimator, w)  # noqa: E731
    wrong = {key: [] for key in LOSS_KEYS}
    if weight == "none":
        on = ref.per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator)
        for key in LOSS_KEYS:
            wrong[key].append((on[key], OLD_IGNORED))
    else:
        for key in LOSS_KEYS:
            wrong[key].append((same("none")[key], WEIGHT_MISSING))
        flipped = _inverted(_logs(theta1, theta2), _logs(ref1, ref2), _logs(old1, old2), estimator, weight)
        for key in LOSS_KEYS:
            wrong[key].append((flipped[key], WEIGHT_INVERTED))
        other, mistake = ("detached", RATIO_DETACHED) if weight == "differentiable" else ("differentiable",
                                                                                          RATIO_DIFFERENTIATED)
        for key in STEPS:
            wrong[key].append((same(other)[key], mistake))
        q1, s1 = np.exp(log_softmax(np.asarray(theta1, float))), np.exp(log_softmax(np.asarray(old1, float)))
        wrong["step2"].append((right["step2"] / s1[:, None] * q1[:, None], PREFIX_BY_POLICY))
    for key in STEPS:
        wrong[key].append((-right[key], SIGN_FLIPPED))
    return {key: [(w, m) for w, m in found if np.all(np.isfinite(w))
                  and not np.allclose(w, right[key], rtol=1e-8, atol=1e-10)] for key, found in wrong.items()}


def _weights_wrongs(lengths, mode, max_len) -> list:
    n = np.asarray(lengths)
    batch = n.size
    right = ref.response_kl_weights(lengths, mode, max_len)
    wrong = [(ref.response_kl_weights(lengths, other, max_len if other == "constant" else None), MODES_MIXED)
             for other in ref.AGGREGATION_MODES if other != mode and (other != "constant" or max_len)]
    wrong.append((np.where(n > 0, 1.0 / batch, 0.0), WEIGHT_IS_OBJECTIVE))
    if mode == "sequence_mean":
        wrong.append((np.where(n > 0, 1.0 / np.maximum(n, 1), 0.0), SEQUENCE_WITHOUT_BATCH))
        wrong.append((1.0 / (batch * np.maximum(n, 1)), EMPTY_WEIGHTED))
    if mode == "constant":
        wrong.append((np.where(n > 0, 1.0 / max_len, 0.0), CONSTANT_WITHOUT_BATCH))
        wrong.append((np.full(batch, 1.0 / (batch * max_len)), EMPTY_WEIGHTED))
    if mode == "token_mean" and n.sum():
        wrong.append((np.full(batch, 1.0 / n.sum()), EMPTY_WEIGHTED))
    return [(w, m) for w, m in wrong if not np.allclose(w, right)]


# ------------------------------------------------------------------------ cases

def _overflow_named(judge):
    """``judge``, except that a non-finite value is named as the overflowing ratio (the case's input makes
    r = p/q overflow while q * r = p stays finite)."""

    def wrapped(outcomes):
        outcome = outcomes[0]
        if isinstance(outcome, Returned) and isinstance(outcome.value, dict):
            for key in LOSS_KEYS:
                try:
                    values = np.asarray(outcome.value[key], dtype=np.float64)
                except (KeyError, TypeError, ValueError):
                    continue
                if not np.all(np.isfinite(values)):
                    return Verdict(False, RATIO_OVERFLOW.sentence, RATIO_OVERFLOW.key)
        return judge(outcomes)

    return wrapped


def _args(tree, as_lists):
    return tuple(np.asarray(a).tolist() for a in tree) if as_lists else tuple(tree)


def _sequence_cases(name, tree, *, gammas=(1.0, 0.5), as_lists=False):
    cases = []
    args = _args(tree, as_lists)
    true = ref.sequence_kl_gradient(*tree)
    wrong = mistakes_later(_sequence_wrongs, *tree)
    for key in STEPS:
        cases.append(Case(f"sequence KL gradient {key}, {name}", "sequence", (Call("sequence_kl_gradient", args),),
                          judge_key("sequence_kl_gradient", key, true, STEPS, wrong=mistakes_part(wrong, key))))
    for gamma in gammas:
        expected = ref.reward_return_gradient(*tree, gamma=gamma)
        wrong = mistakes_later(_sequence_wrongs, *tree, gamma, returns=True)
        kwargs = {} if gamma == 1.0 else {"gamma": gamma}
        label = ("the default gamma" if gamma == 1.0 else "gamma 0 (each step's own KL)" if gamma == 0.0
                 else "a discount below 1")
        for key in STEPS:
            cases.append(Case(f"k1 in the reward with returns {key}, {label}, {name}", "sequence",
                              (Call("reward_return_gradient", args, kwargs),),
                              judge_key("reward_return_gradient", key, expected, STEPS, wrong=mistakes_part(wrong, key))))
    return cases


def _loss_cases(name, tree, estimators=ESTIMATORS, *, as_lists=False, overflow=False):
    cases = []
    args = _args(tree, as_lists)
    for estimator in estimators:
        expected = ref.per_token_loss_gradient(*tree, estimator)
        wrong = mistakes_later(_loss_wrongs, *tree, estimator)
        for key in LOSS_KEYS:
            judge = judge_key("per_token_loss_gradient", key, expected, LOSS_KEYS, wrong=mistakes_part(wrong, key))
            if overflow:
                judge = _overflow_named(judge)
            cases.append(Case(f"{estimator} loss {key}, {name}", "loss",
                              (Call("per_token_loss_gradient", (*args, estimator)),), judge))
    return cases


def _off_policy_cases(name, tree, old, combos):
    cases = []
    full = (*tree, *old)
    for estimator, weight in combos:
        expected = ref.off_policy_loss_gradient(*full, estimator, weight)
        wrong = mistakes_later(_off_policy_wrongs, full, estimator, weight)
        for key in LOSS_KEYS:
            cases.append(Case(f"{estimator} off-policy, weight {weight}, {key}, {name}", "off_policy",
                              (Call("off_policy_loss_gradient", (*full, estimator, weight)),),
                              judge_key("off_policy_loss_gradient", key, expected, LOSS_KEYS, wrong=mistakes_part(wrong, key))))
    return cases


def _weights_case(name, lengths, mode, max_len=None):
    kwargs = {} if max_len is None else {"max_len": max_len}
    return Case(f"{mode} KL weights, {name}", "normaliser", (Call("response_kl_weights", (lengths, mode), kwargs),),
                judge_array("response_kl_weights", ref.response_kl_weights(lengths, mode, max_len), "the weights",
                            wrong=_weights_wrongs(lengths, mode, max_len)))


#: The notebook's open-check tree (the task text prints it): two first tokens, three second tokens.
OPEN_TREE = (np.array([0.5, -0.5]), np.array([[1.0, 0.0, -1.0], [0.0, 0.5, 0.0]]),
             np.array([0.0, 0.0]), np.array([[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]]))


def _cases_public():
    """The notebook's open checks: both steps of the sequence-KL and k3+ loss gradients."""
    cases = []
    # both steps, as the open check cell compares both with finite differences
    true = ref.sequence_kl_gradient(*OPEN_TREE)
    plus = ref.per_token_loss_gradient(*OPEN_TREE, "k3+")
    for key in STEPS:
        step = key[-1]
        cases.append(Case(f"the open check: the sequence-KL gradient at step {step}", "public",
                          (Call("sequence_kl_gradient", OPEN_TREE),),
                          judge_key("sequence_kl_gradient", key, true, STEPS, exact=True,
                                    wrong=_sequence_wrongs(*OPEN_TREE)[key])))
        cases.append(Case(f"the open check: the k3+ loss gradient at step {step}", "public",
                          (Call("per_token_loss_gradient", (*OPEN_TREE, "k3+")),),
                          judge_key("per_token_loss_gradient", key, plus, LOSS_KEYS, exact=True,
                                    wrong=_loss_wrongs(*OPEN_TREE, "k3+")[key])))
    return cases


def _hidden_trees(rng):
    """The drawn trees the sequence, loss and off-policy groups share (name -> theta1, theta2, ref1, ref2)."""
    trees = {
        "a tree of 3 first and 2 second tokens": (rng.normal(size=3), rng.normal(size=(3, 2)),
                                                  rng.normal(size=3), rng.normal(size=(3, 2))),
        "a tree of 2 x 4 with a peaked reference": (rng.normal(size=2), rng.normal(size=(2, 4)),
                                                    np.array([4.0, -3.0]), np.array([[9.0, 0.0, 0.0, 0.0],
                                                                                     [0.0, -6.0, 0.0, 2.0]])),
        "a tree of 4 x 3 with logits of order 1e3": (rng.normal(size=4) + 1000.0, rng.normal(size=(4, 3)) - 1000.0,
                                                     rng.normal(size=4) - 1000.0, rng.normal(size=(4, 3)) + 1000.0),
    }
    return trees


def _cases_sequence(rng, trees):
    """sequence_kl_gradient and reward_return_gradient on each tree, the reference itself, lists."""
    equal = (np.array([0.2, -1.0, 0.7]), np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]]))
    cases = []
    for name, tree in trees.items():
        cases += _sequence_cases(name, tree, gammas=(1.0, 0.5) if "peaked" not in name else (1.0, 0.0))
    cases += _sequence_cases("the policy equal to the reference (every gradient is 0)", equal + equal, gammas=(0.9,))
    cases += [c for c in _sequence_cases("logits given as lists", (rng.normal(size=2), rng.normal(size=(2, 3)),
                                                                     rng.normal(size=2), rng.normal(size=(2, 3))),
                                         gammas=(0.8,), as_lists=True) if "step1" in c.name]
    return cases


def _cases_losses(rng, trees):
    """per_token_loss_gradient on each tree, logits that disagree completely, lists."""
    cases = []
    for name, tree in trees.items():
        cases += _loss_cases(name, tree)
    # q puts almost all its mass where p puts almost none and the other way round: r = p/q overflows
    far = (np.array([1000.0, 0.0, -1000.0]), np.array([[1000.0, -1000.0], [0.0, 1.0], [-1000.0, 1000.0]]),
           np.array([-1000.0, 0.0, 1000.0]), np.array([[-1000.0, 1000.0], [0.0, -1.0], [1000.0, -1000.0]]))
    cases += [c for c in _loss_cases("logits of order 1e3 that disagree completely", far, ("k3",), overflow=True)
              if "value" not in c.name]
    cases += _loss_cases("logits given as lists", (rng.normal(size=2), rng.normal(size=(2, 3)),
                                                    rng.normal(size=2), rng.normal(size=(2, 3))),
                         ("k2", "k3+"), as_lists=True)
    return cases


def _cases_off_policy(rng, trees):
    """off_policy_loss_gradient: each estimator and weight with an old policy near two trees."""
    cases = []
    for name, tree in list(trees.items())[:2]:
        old = (tree[0] + rng.normal(scale=0.8, size=tree[0].shape), tree[1] + rng.normal(scale=0.8, size=tree[1].shape))
        combos = [(e, w) for w in ref.WEIGHTS for e in (("k1", "k3") if w != "differentiable" else ESTIMATORS)]
        cases += _off_policy_cases(name, tree, old, combos)
    return cases


def _cases_normalisers():
    """response_kl_weights: each aggregation mode, an empty response, one response."""
    cases = []
    for lengths in ([4, 9, 2, 15], [1, 0, 7]):
        name = f"a batch of {len(lengths)} responses" + (" with an empty one" if 0 in lengths else "")
        for mode in ref.AGGREGATION_MODES:
            cases.append(_weights_case(name, lengths, mode, 24 if mode == "constant" else None))
    cases.append(_weights_case("one response", [6], "sequence_mean"))
    return cases


def _cases_validation(rng):
    """Bad input to each function, each naming its argument."""
    cases = []
    t1, t2 = rng.normal(size=3), rng.normal(size=(3, 2))
    r1, r2 = rng.normal(size=3), rng.normal(size=(3, 2))
    nan1 = t1.copy()
    nan1[1] = np.nan
    inf2 = r2.copy()
    inf2[2, 0] = np.inf
    bad_shapes = [
        ("theta2 with a row count other than theta1's size", (t1, t2[:2], r1, r2), "theta2"),
        ("ref1 over another first-token vocabulary", (t1, t2, rng.normal(size=4), r2), "ref1"),
        ("ref2 of shape [3, 1] against theta2 of shape [3, 2] (NumPy would broadcast them)",
         (t1, t2, r1, r2[:, :1]), "ref2"),
        ("theta2 given as one row [V2]", (t1, t2[0], r1, r2), "theta2"),
        ("a NaN in theta1", (nan1, t2, r1, r2), "theta1"),
        ("+inf in ref2", (t1, t2, r1, inf2), "ref2"),
    ]
    for function, extra in (("sequence_kl_gradient", ()), ("reward_return_gradient", ()),
                            ("per_token_loss_gradient", ("k3",)), ("off_policy_loss_gradient", None)):
        for problem, args, argument in bad_shapes:
            full = (*args, t1, t2, "k3", "detached") if extra is None else (*args, *extra)
            cases.append(error_case(f"{function}: {problem}", function, full, problem, argument))
    cases += [
        error_case("reward_return_gradient: gamma above 1", "reward_return_gradient", (t1, t2, r1, r2),
                   "a gamma above 1", "gamma", kwargs={"gamma": 1.5}),
        error_case("reward_return_gradient: a negative gamma", "reward_return_gradient", (t1, t2, r1, r2),
                   "a negative gamma", "gamma", kwargs={"gamma": -0.1}),
        error_case("per_token_loss_gradient: an unknown estimator", "per_token_loss_gradient",
                   (t1, t2, r1, r2, "k4"), "an estimator name that is not one of the four", "estimator"),
        error_case("off_policy_loss_gradient: an unknown weight", "off_policy_loss_gradient",
                   (t1, t2, r1, r2, t1, t2, "k3", "clipped"), "a weight name that is not one of the three", "weight"),
        error_case("off_policy_loss_gradient: old2 of another shape", "off_policy_loss_gradient",
                   (t1, t2, r1, r2, t1, rng.normal(size=(3, 3)), "k3", "none"), "old2 of another shape", "old2"),
        error_case("response_kl_weights: a negative length", "response_kl_weights", ([3, -1], "token_mean"),
                   "a negative length", "lengths"),
        error_case("response_kl_weights: an unknown mode", "response_kl_weights", ([3, 1], "mean"),
                   "an unknown mode", "mode"),
        error_case("response_kl_weights: constant without max_len", "response_kl_weights", ([3, 1], "constant"),
                   "mode constant without max_len", "max_len"),
        error_case("response_kl_weights: max_len below the longest response", "response_kl_weights",
                   ([3, 9], "constant"), "a max_len shorter than a response", "max_len", kwargs={"max_len": 8}),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(28))
    # one generator, drawn from in this order (each group's draws follow the previous group's)
    public = _cases_public()
    trees = _hidden_trees(rng)
    sequence = _cases_sequence(rng, trees)
    losses = _cases_losses(rng, trees)
    off_policy = _cases_off_policy(rng, trees)
    return [*public, *sequence, *losses, *off_policy, *_cases_normalisers(), *_cases_validation(rng)]


#: The future-KL term is the exercise: dropping it from the response's KL gradient caps the notebook.
CENTRAL = Central(
    "the future-KL term: each token's score is weighted by its own KL and the KL of the rest of the response",
    {"future-kl-dropped"},
    ("the open check: the sequence-KL gradient at step 1",
     "sequence KL gradient step1, a tree of 3 first and 2 second tokens",
     "sequence KL gradient step1, a tree of 2 x 4 with a peaked reference",
     "k1 in the reward with returns step1, the default gamma, a tree of 3 first and 2 second tokens"))

_FIRST = "a tree of 3 first and 2 second tokens"

#: Bad-input points count only for a function that returns on an ordinary hidden valid input.
GATE = Gate(cases=(f"sequence KL gradient step1, {_FIRST}",
                   f"k1 in the reward with returns step1, the default gamma, {_FIRST}",
                   f"k3 loss step1, {_FIRST}",
                   f"k3 off-policy, weight detached, step1, {_FIRST}",
                   "token_mean KL weights, a batch of 4 responses"))

#: The open checks are hints; hidden cases of the same kind are the evidence.
OPEN_GATES = (
    *(Gate(groups=("public",), needs="passed", only=(f"the open check: the sequence-KL gradient at step {key[-1]}",),
           cases=(f"sequence KL gradient {key}, {_FIRST}",
                  f"sequence KL gradient {key}, a tree of 2 x 4 with a peaked reference")) for key in STEPS),
    *(Gate(groups=("public",), needs="passed", only=(f"the open check: the k3+ loss gradient at step {key[-1]}",),
           cases=(f"k3+ loss {key}, {_FIRST}", f"k3+ loss {key}, a tree of 2 x 4 with a peaked reference"))
      for key in STEPS),
)

#: Where every gradient is zero (the policy equal to the reference; k1 used as a loss, whose expected
#: gradient vanishes; k1 off-policy with the weight detached) an answer of zeros is right: those cases
#: count only when the same function also gets a gradient that is not zero right.
_ZERO = ("a gradient that is zero on this input counts only when the function also gets a gradient that is "
         "not zero right")
_EQUAL = "the policy equal to the reference (every gradient is 0)"
_PEAKED = "a tree of 2 x 4 with a peaked reference"
_LARGE = "a tree of 4 x 3 with logits of order 1e3"
CONSTANT_GATES = (
    Gate(groups=("sequence",), needs="attempted", quorum=1, why=_ZERO,
         only=tuple(f"sequence KL gradient {key}, {_EQUAL}" for key in STEPS)
         + tuple(f"k1 in the reward with returns {key}, a discount below 1, {_EQUAL}" for key in STEPS),
         cases=tuple(f"sequence KL gradient {key}, {tree}" for key in STEPS for tree in (_FIRST, _PEAKED))
         + tuple(f"k1 in the reward with returns {key}, the default gamma, {tree}" for key in STEPS
                 for tree in (_FIRST, _PEAKED))),
    Gate(groups=("loss",), needs="attempted", quorum=1, why=_ZERO,
         only=tuple(f"k1 loss {key}, {tree}" for key in STEPS for tree in (_FIRST, _PEAKED, _LARGE)),
         cases=tuple(f"{k} loss {key}, {tree}" for k in ("k2", "k3") for key in STEPS for tree in (_FIRST, _PEAKED))),
    Gate(groups=("off_policy",), needs="attempted", quorum=1, why=_ZERO,
         only=tuple(f"k1 off-policy, weight detached, {key}, {tree}" for key in STEPS for tree in (_FIRST, _PEAKED)),
         cases=tuple(f"k3 off-policy, weight {weight}, {key}, {tree}" for weight in ("none", "detached")
                     for key in STEPS for tree in (_FIRST, _PEAKED))),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + CONSTANT_GATES)
