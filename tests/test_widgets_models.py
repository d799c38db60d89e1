"""The widgets' pure models, checked on the instructor's side: equal to autograder.reference and mpmath.

The student package computes what its explorers draw with its own private arithmetic
(``course.widgets._math``); these tests keep every value an explorer shows equal to the reference
solutions (which the student package never imports) and to mpmath, and check that non-finite values
come with reasons. No display is needed.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import reference as ref
from course.widgets import TRUNCATION_PRESETS  # noqa: F401  (presets are checked below)
from course.widgets import (
    ESTIMATORS,
    KL_PRESETS,
    DEFAULT_TREE,
    chain_rule_from_controls,
    chain_rule_state,
    kl_preset_state,
    kl_state,
    parse_distribution,
    truncation_preset_state,
)
# The models' arithmetic for any input, which the explorers' public API no longer takes (they work on
# their presets and the 0.05 grid only: docs/DESIGN.md, "Widgets"); compared with the reference here.
from course.widgets._chain_rule_model import _chain_rule_state
from course.widgets._kl_model import _kl_state
from course.widgets._truncation_model import _truncation_state as truncation_state

NUCLEUS = np.log([0.50, 0.30, 0.15, 0.05])


def _non_finite_fields(state, names):
    return [name for name in names if not math.isfinite(float(getattr(state, name)))]


# ------------------------------------------------------------------ truncation: the private model on the notebooks' data


def test_nucleus_at_080_keeps_two_tokens_renormalised_as_in_the_seed():
    s = truncation_state(NUCLEUS, top_p=0.80)
    assert s.support.tolist() == [True, True, False, False]
    np.testing.assert_allclose(s.behaviour_probs, [0.625, 0.375, 0.0, 0.0], rtol=0, atol=1e-12)
    assert s.support_mass == pytest.approx(0.80, abs=1e-12)
    assert s.removed_by == ("", "", "top-p", "top-p")


def test_nucleus_at_081_needs_the_third_token():
    s = truncation_state(NUCLEUS, top_p=0.81)
    assert s.support.tolist() == [True, True, True, False]
    np.testing.assert_allclose(s.behaviour_probs, [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0.0],
                               rtol=0, atol=1e-12)
    assert s.support_mass == pytest.approx(0.95, abs=1e-12)


def test_nucleus_preset_opens_on_a_reached_threshold_of_its_own():
    s = truncation_preset_state("nucleus")
    np.testing.assert_allclose(s.base_probs, [0.40, 0.30, 0.20, 0.06, 0.04], rtol=0, atol=1e-15)
    assert s.top_p == 0.70
    # 0.40 + 0.30 reaches 0.70 (up to rounding), so two tokens; one step more needs a third.
    assert s.support_tokens == s.tokens[:2]
    assert truncation_preset_state("nucleus", top_p=0.71).support_tokens == s.tokens[:3]


def test_truncation_correction_typed_in_reproduces_the_worked_numbers():
    # What a learner gets by typing exercise 13's data into the explorer after answering.
    s = truncation_state(np.log([0.40, 0.25, 0.20, 0.10, 0.05]), top_p=0.80, chosen=1, positions=4)
    assert s.support_mass == pytest.approx(0.85, abs=1e-12)
    assert s.base_prob == pytest.approx(0.25, abs=1e-15)
    assert s.positions == 4
    # Worked answer: p~ = 0.25/0.85 ~ 0.294118, log p~ ~ -1.223775, increase -log 0.85 ~ 0.162519,
    # four-position factor 1/0.85**4 ~ 1.915686.
    assert s.behaviour_prob == pytest.approx(0.294118, abs=5e-7)
    assert s.behaviour_logprob == pytest.approx(-1.223775, abs=5e-7)
    assert s.logprob_shift == pytest.approx(0.162519, abs=5e-7)
    assert s.log_correction == pytest.approx(0.162519, abs=5e-7)
    assert s.ratio_error == pytest.approx(1.915686, abs=5e-7)
    assert not s.reasons


def test_ratio_error_follows_the_positions_control():
    factors = [truncation_preset_state("truncation_correction", positions=n).ratio_error
               for n in (1, 2, 4, 8)]
    np.testing.assert_allclose(factors, [0.87 ** -n for n in (1, 2, 4, 8)], rtol=1e-12)


# ------------------------------------------------------------------ truncation: against the reference

settings_strategy = st.fixed_dictionaries({
    "temperature": st.sampled_from([0.25, 0.5, 0.8, 1.0, 1.7, 3.0]),
    "top_k": st.one_of(st.none(), st.integers(1, 6)),
    "top_p": st.sampled_from([0.05, 0.3, 0.5, 0.8, 0.81, 0.9, 0.97, 1.0]),
    "min_tokens_to_keep": st.integers(1, 6),
    "banned": st.lists(st.integers(0, 5), max_size=3, unique=True),
    "chosen": st.integers(0, 5),
    "positions": st.integers(1, 12),
})


@settings(max_examples=60, deadline=None)
@given(logits=st.lists(st.floats(-6, 6), min_size=6, max_size=6), controls=settings_strategy)
def test_truncation_state_is_what_the_reference_computes(logits, controls):
    s = truncation_state(logits, **controls)
    config = ref.SamplingConfig(temperature=controls["temperature"],
                                banned_token_ids=tuple(sorted(controls["banned"])),
                                top_k=controls["top_k"], top_p=controls["top_p"],
                                min_tokens_to_keep=controls["min_tokens_to_keep"])
    try:
        expected = ref.behaviour_distribution(logits, config)
        record = ref.behaviour_logprob(logits, controls["chosen"], config)
    except ValueError:
        # The reference refuses this configuration: the model must say so and show no numbers.
        assert s.error
        assert np.all(np.isnan(s.behaviour_probs)) and math.isnan(s.ratio_error)
        assert set(_non_finite_fields(s, ["support_mass", "behaviour_logprob", "ratio_error"])) \
            <= set(s.reasons)
        return
    assert s.error is None
    np.testing.assert_array_equal(s.behaviour_probs, expected)
    np.testing.assert_array_equal(s.base_probs, ref.softmax(np.asarray(logits)))
    np.testing.assert_array_equal(s.tempered_probs,
                                  ref.temperature_distribution(logits, controls["temperature"]))
    assert s.support_mass == record.support_mass
    assert s.base_logprob == record.base_logprob
    assert s.tempered_logprob == record.tempered_logprob
    assert s.behaviour_logprob == record.behaviour_logprob
    assert s.log_correction == ref.truncation_log_correction(record.support_mass)
    assert s.ratio_error == ref.sequence_ratio_error(record.support_mass, controls["positions"])
    # Inside the support the shift is exactly the truncation correction; outside it is -inf.
    if s.support[controls["chosen"]]:
        assert s.logprob_shift == pytest.approx(s.log_correction, abs=1e-12)
    else:
        assert s.logprob_shift == -math.inf and s.behaviour_logprob == -math.inf
    assert s.support.sum() >= 1
    for i, why in enumerate(s.removed_by):
        assert (why == "") == bool(s.support[i])
        if i in controls["banned"]:
            assert why == "banned"
        elif why == "top-k":
            assert controls["top_k"] is not None
    # Every number that is not finite carries its reason.
    fields = ["support_mass", "base_logprob", "tempered_logprob", "behaviour_logprob",
              "logprob_shift", "log_correction", "ratio_error"]
    missing = [f for f in _non_finite_fields(s, fields) if not s.reasons.get(f)]
    assert not missing, missing


def test_a_chosen_token_outside_the_support_is_minus_inf_with_a_reason():
    s = truncation_state(NUCLEUS, ["mat", "sofa", "floor", "moon"], top_p=0.8, chosen="moon")
    assert s.behaviour_logprob == -math.inf
    assert s.behaviour_prob == 0.0
    assert "moon" in s.reasons["behaviour_logprob"] and "top-p" in s.reasons["behaviour_logprob"]
    assert "logprob_shift" in s.reasons


def test_banned_tokens_are_reported_as_banned():
    s = truncation_state(NUCLEUS, ["mat", "sofa", "floor", "moon"], banned=["mat"], top_p=0.8)
    assert s.removed_by[0] == "banned"
    assert not s.support[0]
    # The remaining tempered mass is renormalised by top-p over the unbanned tokens.
    assert s.behaviour_probs.sum() == pytest.approx(1.0, abs=1e-12)


def test_top_k_is_named_as_the_stage_that_cut_a_token():
    s = truncation_state(NUCLEUS, top_k=1, top_p=1.0)
    assert s.removed_by == ("", "top-k", "top-k", "top-k")
    assert s.support_mass == pytest.approx(0.5, abs=1e-12)


def test_temperature_away_from_one_is_noted():
    assert truncation_state(NUCLEUS, temperature=1.0).notes == ()
    hot = truncation_state(NUCLEUS, temperature=2.0)
    assert any("T = 2" in note for note in hot.notes)
    assert hot.tempered_logprob != hot.base_logprob


def test_banning_every_token_gives_nan_and_a_reason_not_a_crash():
    s = truncation_state(NUCLEUS, banned=[0, 1, 2, 3])
    assert s.error
    assert math.isnan(s.support_mass) and math.isnan(s.behaviour_logprob)
    assert math.isnan(s.ratio_error)
    for key in ("support_mass", "behaviour_logprob", "ratio_error"):
        assert s.reasons[key]
    assert s.base_logprob == pytest.approx(math.log(0.5), abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": True}, TypeError, "temperature"),
        ({"top_k": 9}, ValueError, "top_k"),
        ({"min_tokens_to_keep": 0}, ValueError, "min_tokens_to_keep"),
        ({"chosen": "cat"}, ValueError, "chosen"),
        ({"chosen": 4}, ValueError, "chosen"),
        ({"banned": ["dog"]}, ValueError, "banned"),
        ({"positions": 0}, ValueError, "positions"),
        ({"positions": 2.0}, TypeError, "positions"),
    ],
)
def test_bad_controls_raise_naming_the_argument(kwargs, error, word):
    with pytest.raises(error, match=word):
        truncation_state(NUCLEUS, ["mat", "sofa", "floor", "moon"], **kwargs)


@pytest.mark.parametrize(("logits", "word"), [([], "logits"), ([[1.0, 2.0]], "logits"),
                                               ([1.0, float("nan")], "logits")])
def test_bad_logits_raise(logits, word):
    with pytest.raises(ValueError, match=word):
        truncation_state(logits)


def test_unknown_preset_is_refused():
    with pytest.raises(ValueError, match="preset"):
        truncation_preset_state("greedy")


# ------------------------------------------------------------------ KL: the private model on the notebooks' data


def test_k_estimators_typed_in_give_the_worked_values_at_r_2_and_one_half():
    s = _kl_state([2 / 3, 1 / 3], [1 / 3, 2 / 3])
    np.testing.assert_allclose(s.ratio, [2.0, 0.5], rtol=1e-15)
    worked = {"k1": [-0.693147, 0.693147], "k2": [0.240227, 0.240227], "k3": [0.306853, 0.193147]}
    for k in ESTIMATORS:
        np.testing.assert_allclose(s.per_outcome[k], worked[k], atol=5e-7, rtol=0)
        np.testing.assert_allclose(s.per_outcome[k], ref.kl_estimators_at_ratio(s.ratio)[k],
                                   rtol=1e-12)


def test_k1_and_k3_are_unbiased_k2_is_not():
    s = kl_preset_state("k_estimators")
    truth = float(ref.kl_divergence(s.q, s.p))
    assert s.kl_qp == pytest.approx(truth, rel=1e-14)
    assert truth == pytest.approx(math.log(3) / 2, rel=1e-12)  # r = 3 or 1/3, q = (1/4, 3/4)
    assert s.expected["k1"] == pytest.approx(truth, rel=1e-12)
    assert s.expected["k3"] == pytest.approx(truth, rel=1e-12)
    assert s.expected["k2"] == pytest.approx(math.log(3) ** 2 / 2, rel=1e-12)
    assert s.bias["k2"] > 0.05
    assert abs(s.bias["k1"]) < 1e-12 and abs(s.bias["k3"]) < 1e-12


def test_k1_goes_negative_on_the_draws_with_r_above_one_and_k3_never_does():
    s = kl_preset_state("k_estimators", samples=5000, seed=3)
    at_r3 = s.draws == 0
    assert at_r3.any() and (~at_r3).any()
    assert s.negative_fraction["k1"] == pytest.approx(at_r3.mean(), abs=0)
    assert np.all(s.values["k1"][at_r3] < 0)
    assert s.negative_fraction["k3"] == 0.0 and s.sample_min["k3"] > 0
    assert s.negative_fraction["k2"] == 0.0


@pytest.mark.parametrize("preset", sorted(KL_PRESETS))
def test_k3_is_never_negative_on_any_preset(preset):
    s = kl_preset_state(preset, samples=2000, seed=11)
    assert np.all(s.values["k3"] >= 0)
    assert np.all(s.values["k2"] >= 0)


@pytest.mark.parametrize("p, q, unseen", [
    ((0.8, 0.2), (1.0, 0.0), 0.2),  # exercise 06's first counterexample, typed in
    ((0.55, 0.15, 0.3), (0.5, 0.5, 0.0), 0.3),  # the explorer's own "Support A"
])
def test_p_mass_that_q_never_draws(p, q, unseen):
    s = kl_state(p, q, samples=100)
    assert s.weight_mean == pytest.approx(1 - unseen, abs=1e-15)
    assert s.weight_mean == ref.importance_weight_mean(s.p, s.q)
    assert s.kl_qp == pytest.approx(float(ref.kl_divergence(s.q, s.p)), rel=1e-13)
    assert s.kl_pq == math.inf and "q never draws" in s.reasons["kl_pq"]
    assert "kl_qp" not in s.reasons
    # k1 is still unbiased; k3 loses exactly the unseen mass 1 - E_q[p/q].
    assert s.expected["k1"] == pytest.approx(s.kl_qp, rel=1e-12)
    assert s.expected["k3"] == pytest.approx(s.kl_qp - unseen, rel=1e-12)
    assert np.all(s.q[s.draws] > 0)


def test_the_support_a_preset_is_that_case():
    s = kl_preset_state("support_missing_mass")
    assert s.q[2] == 0 and s.p[2] > 0 and s.kl_pq == math.inf


@pytest.mark.parametrize("p, q, bad", [
    ((1.0, 0.0), (0.8, 0.2), 1),  # exercise 06's second counterexample, typed in
    ((0.6, 0.4, 0.0), (0.5, 0.3, 0.2), 2),  # the explorer's own "Support B"
])
def test_draws_where_p_is_zero_have_log_ratio_minus_infinity(p, q, bad):
    s = kl_state(p, q, samples=200, seed=0)
    assert s.kl_qp == math.inf and "where p = 0" in s.reasons["kl_qp"]
    assert s.kl_pq == pytest.approx(float(ref.kl_divergence(s.p, s.q)), rel=1e-13)
    assert s.ratio[bad] == 0.0
    for k in ESTIMATORS:
        assert s.per_outcome[k][bad] == math.inf
        assert s.expected[k] == math.inf and s.reasons[f"expected.{k}"]
        assert s.sample_mean[k] == math.inf and s.reasons[f"sample_mean.{k}"]
        assert math.isnan(s.sample_se[k]) and s.reasons[f"sample_se.{k}"]
        assert math.isnan(s.bias[k])
    first = int(np.argmax(s.draws == bad))
    assert np.all(np.isfinite(s.running_mean["k3"][:first]))
    assert np.all(np.isinf(s.running_mean["k3"][first:]))
    assert f"draw {first + 1} " in s.reasons["sample_mean.k3"]


def test_an_outcome_q_never_samples_is_never_drawn_and_has_no_ratio():
    s = kl_preset_state("support_missing_mass", samples=5000, seed=2)
    assert not np.any(s.draws == 2)
    assert math.isnan(s.ratio[2])
    assert all(math.isnan(s.per_outcome[k][2]) for k in ESTIMATORS)
    assert s.kl_pq == math.inf and s.weight_mean == pytest.approx(0.7, abs=1e-12)


# ------------------------------------------------------------------ KL: sampling and running estimates


def test_running_mean_and_spread_match_a_direct_computation():
    s = kl_preset_state("close", samples=500, seed=5)
    for k in ESTIMATORS:
        values = s.values[k]
        np.testing.assert_array_equal(values, s.per_outcome[k][s.draws])
        n = np.arange(1, values.size + 1)
        np.testing.assert_allclose(s.running_mean[k], np.cumsum(values) / n, rtol=1e-12, atol=1e-15)
        for m in (2, 3, 17, 500):
            expected = np.std(values[:m], ddof=1) / math.sqrt(m)
            assert s.running_se[k][m - 1] == pytest.approx(expected, rel=1e-9, abs=1e-15)
        assert math.isnan(s.running_se[k][0])
        assert s.sample_mean[k] == s.running_mean[k][-1]


def test_draws_are_seeded_and_a_longer_run_extends_a_shorter_one():
    short = kl_preset_state("k_estimators", samples=100, seed=7)
    long = kl_preset_state("k_estimators", samples=1000, seed=7)
    again = kl_preset_state("k_estimators", samples=1000, seed=7)
    other = kl_preset_state("k_estimators", samples=1000, seed=8)
    np.testing.assert_array_equal(long.draws[:100], short.draws)
    np.testing.assert_array_equal(long.draws, again.draws)
    assert not np.array_equal(long.draws, other.draws)


def test_draw_frequencies_follow_q():
    s = kl_state([0.2, 0.3, 0.5], [0.1, 0.6, 0.3], samples=20000, seed=1)
    freq = np.bincount(s.draws, minlength=3) / s.samples
    se = np.sqrt(s.q * (1 - s.q) / s.samples)
    assert np.all(np.abs(freq - s.q) < 5 * se)


def test_unbiased_running_means_approach_the_exact_kl():
    s = kl_preset_state("close", samples=20000, seed=4)
    for k in ("k1", "k3"):
        assert abs(s.sample_mean[k] - s.kl_qp) < 5 * s.sample_se[k]
    # The k3 spread is far smaller than k1's for close distributions.
    assert s.sample_se["k3"] < s.sample_se["k1"] / 5


def test_one_sample_has_no_spread_and_says_so():
    s = kl_preset_state("k_estimators", samples=1)
    for k in ESTIMATORS:
        assert math.isnan(s.sample_se[k]) and s.reasons[f"sample_se.{k}"]


def test_kl_state_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        kl_state([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="q must sum to 1"):
        kl_state([0.5, 0.5], [0.2, 0.3])
    with pytest.raises(ValueError, match="p must have finite non-negative"):
        kl_state([1.5, -0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="samples"):
        kl_state([0.5, 0.5], [0.5, 0.5], samples=0)
    with pytest.raises(TypeError, match="seed"):
        kl_state([0.5, 0.5], [0.5, 0.5], seed=1.5)


def test_parse_distribution():
    np.testing.assert_allclose(parse_distribution("1/4, 3/4"), [1 / 4, 3 / 4], rtol=1e-15)
    np.testing.assert_array_equal(parse_distribution("0.6 0.4"), [0.6, 0.4])
    for text, word in (("", "empty"), ("0.5, x", "'x' is not a number"), ("0.7, 0.7", "sums to"),
                       ("1.2, -0.2", "negative"), ("1/0, 1", "not a number"),
                       ("1/3, 2/3", "not a multiple of 0.05"), ("0.37, 0.63", "0.37, which is not")):
        with pytest.raises(ValueError, match=word):
            parse_distribution(text, "q")
    with pytest.raises(ValueError, match="^q"):
        parse_distribution("0.5", "q")
    with pytest.raises(TypeError, match="q"):
        parse_distribution([0.5, 0.5], "q")


# ------------------------------------------------------------------ chain rule


def _plain_kl(p, q):
    p, q = np.ravel(p), np.ravel(q)
    if np.any((p > 0) & (q == 0)):
        return math.inf
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))


EXERCISE_10_TREE = {"first_p": (0.6, 0.4), "first_q": (0.5, 0.5),
                    "cond_p": ((0.7, 0.3), (0.2, 0.8)), "cond_q": ((0.4, 0.6), (0.5, 0.5))}


def test_chain_rule_typed_in_reproduces_the_worked_tree():
    s = chain_rule_state(**EXERCISE_10_TREE)
    assert s.root == pytest.approx(0.0201355, abs=5e-8)
    assert s.expected_conditional == pytest.approx(0.1873700, abs=5e-8)
    assert s.total == pytest.approx(0.2075056, abs=5e-8)
    assert s.joint == pytest.approx(0.2075056, abs=5e-8)
    assert s.agree and abs(s.difference) < 1e-15
    np.testing.assert_allclose(s.joint_p, [[0.42, 0.18], [0.08, 0.32]], rtol=1e-14)
    np.testing.assert_allclose(s.joint_q, [[0.20, 0.30], [0.25, 0.25]], rtol=1e-14)


@pytest.mark.parametrize("tree", [EXERCISE_10_TREE, DEFAULT_TREE])
def test_chain_rule_state_is_the_reference_result(tree):
    s = chain_rule_state(**tree)
    r = ref.kl_chain_rule(**tree)
    for mine, theirs in ((s.root, r.root), (s.expected_conditional, r.expected_conditional),
                         (s.total, r.total), (s.joint, r.joint)):
        assert mine == pytest.approx(theirs, rel=1e-14)
    np.testing.assert_allclose(s.conditional, r.conditional, rtol=1e-14)


def test_the_default_tree_is_not_the_exercise_tree():
    assert all(np.any(np.asarray(DEFAULT_TREE[k]) != np.asarray(EXERCISE_10_TREE[k]))
               for k in DEFAULT_TREE)


probability = st.integers(1, 99).map(lambda i: i / 100)


@settings(max_examples=80, deadline=None)
@given(p0=probability, q0=probability, pg=st.tuples(probability, probability),
       qg=st.tuples(probability, probability))
def test_both_sides_agree_with_an_independent_joint_kl(p0, q0, pg, qg):
    def split(x):
        return (x, 1.0 - x)
    s = _chain_rule_state(split(p0), split(q0), [split(v) for v in pg], [split(v) for v in qg])
    assert s.agree
    assert s.joint == pytest.approx(_plain_kl(s.joint_p, s.joint_q), rel=1e-9, abs=1e-15)
    assert s.total == pytest.approx(s.root + s.expected_conditional, rel=1e-15)
    np.testing.assert_allclose(s.joint_p.sum(), 1.0, rtol=1e-15)


def test_a_first_action_q_never_takes_makes_both_sides_inf():
    s = chain_rule_from_controls(0.6, 0.0, (0.7, 0.2), (0.4, 0.5))
    assert s.root == math.inf and "root" in s.reasons
    assert s.total == math.inf and s.joint == math.inf
    assert s.agree
    assert math.isnan(s.difference) and "both sides are inf" in s.reasons["difference"]


def test_an_unreachable_branch_with_infinite_conditional_kl_adds_nothing():
    # p never takes a1 = 1, so the infinite KL below it has weight zero.
    s = chain_rule_from_controls(1.0, 0.5, (0.7, 0.5), (0.4, 0.0))
    assert s.conditional[1] == math.inf and "a1 = 1" in s.reasons["conditional.1"]
    assert math.isfinite(s.expected_conditional) and math.isfinite(s.joint)
    assert s.agree
    assert s.total == pytest.approx(_plain_kl(s.joint_p, s.joint_q), rel=1e-12)


def test_chain_controls_are_validated():
    with pytest.raises(ValueError, match="p0"):
        chain_rule_from_controls(1.2, 0.5, (0.5, 0.5), (0.5, 0.5))
    with pytest.raises(ValueError, match="q_given"):
        chain_rule_from_controls(0.5, 0.5, (0.5, 0.5), (0.5, -0.1))
    with pytest.raises(TypeError, match="q0"):
        chain_rule_from_controls(0.5, "0.5", (0.5, 0.5), (0.5, 0.5))


# ------------------------------------------------------------------ the private arithmetic vs the reference and mpmath

mpmath.mp.dps = 50


def _mp_kl(a, b):
    """KL(a || b) in 50-digit arithmetic (inf where a > 0 = b)."""
    total = mpmath.mpf(0)
    for x, y in zip(a, b):
        if x > 0:
            if y == 0:
                return math.inf
            total += mpmath.mpf(x) * mpmath.log(mpmath.mpf(x) / mpmath.mpf(y))
    return float(total)


def _dirichlet(draw, size, zeros):
    weights = draw(st.lists(st.floats(1e-6, 1.0), min_size=size, max_size=size))
    w = np.asarray(weights)
    for i in zeros:
        w[i % size] = 0.0
    if w.sum() == 0:
        w[0] = 1.0
    return w / w.sum()


@st.composite
def distribution_pairs(draw):
    size = draw(st.integers(2, 5))
    p = _dirichlet(draw, size, draw(st.lists(st.integers(0, 4), max_size=2)))
    q = _dirichlet(draw, size, draw(st.lists(st.integers(0, 4), max_size=2)))
    return p, q


@settings(max_examples=80, deadline=None)
@given(pair=distribution_pairs())
def test_kl_state_equals_the_reference_and_mpmath(pair):
    p, q = pair
    s = _kl_state(p, q, samples=50, seed=1)
    for mine, (a, b) in ((s.kl_qp, (q, p)), (s.kl_pq, (p, q))):
        theirs = float(ref.kl_divergence(a, b))
        oracle = _mp_kl(a, b)
        if math.isinf(oracle):
            assert mine == theirs == math.inf
        else:
            assert mine == pytest.approx(oracle, rel=1e-12, abs=1e-15)
            assert mine == pytest.approx(theirs, rel=1e-12, abs=1e-15)
    assert s.weight_mean == ref.importance_weight_mean(p, q)
    usable = (q > 0) & (p > 0)
    if usable.any():
        expected = ref.kl_sample_values(np.log(q[usable]), np.log(p[usable]))
        for k in ESTIMATORS:
            np.testing.assert_array_equal(s.per_outcome[k][usable], expected[k])


@pytest.mark.parametrize("r", [1e-12, 1e-5, 0.3, 0.999999, 1.0, 1.000001, 2.5, 1e6])
def test_estimator_values_against_mpmath(r):
    s = _kl_state([r / (1 + r), 1 / (1 + r)], [0.5, 0.5], samples=1)
    # The estimators are functions of log r = log p - log q as float64 gives it (as in the
    # reference and in trainers); the oracle evaluates them exactly at that log r.
    lam = mpmath.mpf(float(np.log(s.p[0]) - np.log(s.q[0])))
    oracle = {"k1": -lam, "k2": lam ** 2 / 2, "k3": mpmath.expm1(lam) - lam}
    for k in ESTIMATORS:
        assert s.per_outcome[k][0] == pytest.approx(float(oracle[k]), rel=1e-13, abs=1e-300)


@settings(max_examples=40, deadline=None)
@given(logits=st.lists(st.floats(-30, 30), min_size=3, max_size=6),
       top_p=st.sampled_from([0.1, 0.5, 0.9, 0.99]), chosen=st.integers(0, 2))
def test_support_mass_and_corrections_against_mpmath(logits, top_p, chosen):
    s = truncation_state(logits, top_p=top_p, chosen=chosen, positions=5)
    z = [mpmath.mpf(v) for v in logits]
    norm = mpmath.fsum(mpmath.exp(v) for v in z)
    mass = mpmath.fsum(mpmath.exp(v) for v, kept in zip(z, s.support) if kept) / norm
    assert s.support_mass == pytest.approx(float(mass), rel=1e-12)
    assert s.log_correction == pytest.approx(float(-mpmath.log(mass)), rel=1e-10, abs=1e-15)
    assert s.ratio_error == pytest.approx(float(mass ** -5), rel=1e-12)
    if s.support[chosen]:
        exact = z[chosen] - mpmath.log(norm) - mpmath.log(mass)
        assert s.behaviour_logprob == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


def test_chain_rule_against_mpmath():
    for tree in (EXERCISE_10_TREE, DEFAULT_TREE):
        s = chain_rule_state(**tree)
        jp, jq = s.joint_p.ravel(), s.joint_q.ravel()
        assert s.joint == pytest.approx(_mp_kl(jp, jq), rel=1e-13)
        assert s.root == pytest.approx(_mp_kl(tree["first_p"], tree["first_q"]), rel=1e-13)


# ------------------------------------------------------------------ the explorers take no notebook's numbers


def test_the_public_models_take_only_the_explorers_grid():
    """What a learner (or a notebook) can hand an explorer: presets, and probabilities in steps of
    0.05 (docs/DESIGN.md, "Widgets"); anything else is refused with a sentence naming the argument."""
    with pytest.raises(ValueError, match="p holds 0.37, which is not a multiple of 0.05"):
        kl_state([0.37, 0.63], [0.5, 0.5])
    with pytest.raises(ValueError, match="q holds"):
        kl_state([0.5, 0.5], [2 / 3, 1 / 3])
    assert kl_state([0.35, 0.65], [0.5, 0.5]).kl_pq > 0  # 7/20 is on the grid
    with pytest.raises(ValueError, match="first_p holds 0.62"):
        chain_rule_state((0.62, 0.38), (0.5, 0.5), ((0.7, 0.3), (0.2, 0.8)), ((0.4, 0.6), (0.5, 0.5)))
    with pytest.raises(ValueError, match="cond_q holds 0.43"):
        chain_rule_state((0.6, 0.4), (0.5, 0.5), ((0.7, 0.3), (0.2, 0.8)), ((0.43, 0.57), (0.5, 0.5)))
    with pytest.raises(ValueError, match="q_given\\[1\\] holds 0.51"):
        chain_rule_from_controls(0.6, 0.5, (0.7, 0.2), (0.4, 0.51))
    with pytest.raises(TypeError, match="takes no logits"):
        truncation_preset_state([2.0, 1.0, 0.5])
    with pytest.raises(TypeError, match="the logits are the preset's own"):
        truncation_preset_state("nucleus", logits=[2.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="temperature = 0.57 is not a multiple of 0.05"):
        truncation_preset_state("nucleus", temperature=0.57)
    with pytest.raises(ValueError, match="top_p = 0.805 is not a multiple of 0.01"):
        truncation_preset_state("nucleus", top_p=0.805)
    assert truncation_preset_state("nucleus", temperature=0.55, top_p=0.8).temperature == 0.55
    import course.widgets as public
    assert not hasattr(public, "truncation_state") and "truncation_state" not in public.__all__


def test_every_preset_is_on_the_grid():
    for preset in KL_PRESETS.values():
        assert kl_state(preset.p, preset.q).p.size == len(preset.outcomes)
    assert chain_rule_state(**DEFAULT_TREE).agree
