"""Exercise 05 (negative KL?): correct answers earn full marks, each confusion of sample and expectation is named."""

from __future__ import annotations

import pytest

import concept_notebook_support as support

STEM = "05_negative_kl"
NAMES = ("exact_kl_can_be_negative", "sampled_log_ratio_can_be_negative", "average_under",
         "log_ratio_action_1", "exact_kl")

CANONICAL = """
exact_kl_can_be_negative = False
sampled_log_ratio_can_be_negative = True
average_under = "pi"
log_ratio_action_1 = math.log(0.3 / 0.4)
exact_kl = 0.5 * math.log(0.5 / 0.3) + 0.3 * math.log(0.3 / 0.4) + 0.2 * math.log(0.2 / 0.3)
"""

CORRECT = {
    "canonical": CANONICAL,
    "rounded to six significant digits": """
exact_kl_can_be_negative = False
sampled_log_ratio_can_be_negative = True
average_under = "PI"
log_ratio_action_1 = -0.287682
exact_kl = 0.0880152
""",
    "numpy scalars and arrays, other summation order": """
pi, ref = np.array([0.5, 0.3, 0.2], dtype=np.float32), np.array([0.3, 0.4, 0.3], dtype=np.float32)
exact_kl_can_be_negative = np.False_
sampled_log_ratio_can_be_negative = 1
average_under = " pi "
log_ratio_action_1 = np.float32(np.log(pi[1]) - np.log(ref[1]))
exact_kl = np.array([np.sum((pi * (np.log(pi) - np.log(ref)))[::-1])])
print("KL", exact_kl)
""",
}

WRONG = [
    ("kl can be negative", CANONICAL + "exact_kl_can_be_negative = True", "negative-kl"),
    ("a sample cannot be negative", CANONICAL + "sampled_log_ratio_can_be_negative = False", "sample-is-kl"),
    ("average under the reference (choice)", CANONICAL + 'average_under = "pi_ref"', "wrong-sampling-distribution"),
    ("uniform average (choice)", CANONICAL + 'average_under = "uniform"', "uniform-average"),
    ("average under the reference (number)",
     CANONICAL + "exact_kl = 0.3 * math.log(0.5 / 0.3) + 0.4 * math.log(0.3 / 0.4) + 0.3 * math.log(0.2 / 0.3)",
     "wrong-sampling-distribution"),
    ("uniform average (number)",
     CANONICAL + "exact_kl = (math.log(0.5 / 0.3) + math.log(0.3 / 0.4) + math.log(0.2 / 0.3)) / 3",
     "uniform-average"),
    ("reversed KL", CANONICAL + "exact_kl = 0.3 * math.log(0.3 / 0.5) + 0.4 * math.log(0.4 / 0.3) "
     "+ 0.3 * math.log(0.3 / 0.2)", "reversed-kl"),
    ("the sample as the KL", CANONICAL + "exact_kl = math.log(0.3 / 0.4)", "sample-is-kl"),
    ("flipped ratio", CANONICAL + "log_ratio_action_1 = math.log(0.4 / 0.3)", "flipped-ratio"),
]


def test_key_numbers_agree_with_the_definition():
    import math

    from autograder.keys import ex05_negative_kl as key

    assert key.LOG_RATIO == pytest.approx(math.log(0.3 / 0.4), rel=1e-14)
    by_hand = sum(p * math.log(p / q) for p, q in zip(key.PI, key.PI_REF))
    assert key.EXACT_KL == pytest.approx(by_hand, rel=1e-12)


def test_notebook_solution_gets_full_marks():
    support.assert_full_marks(STEM, support.namespace_of(support.source_notebook(STEM)))


def test_released_stub_scores_zero_with_not_implemented():
    support.assert_stub_scores_zero(STEM)


def test_notebook_cells_match_the_check():
    support.assert_notebook_matches_check(STEM, 2)


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_correct_answers_get_full_marks(label):
    support.assert_full_marks(STEM, support.namespace_from(CORRECT[label]))


@pytest.mark.parametrize("label, source, key", WRONG, ids=[w[0] for w in WRONG])
def test_each_mistake_loses_points_and_is_named(label, source, key):
    support.assert_misconception(STEM, support.namespace_from(source), key)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("label", sorted(support.ADVERSARIAL))
def test_hostile_values_earn_nothing_for_their_item(name, label):
    support.assert_hostile_value_fails(STEM, CANONICAL, name, label)


@pytest.mark.parametrize("value", ["0.088", "0.08801", "'0.0880152'", "True", "float('inf')"])
def test_too_coarse_or_malformed_numbers_fail(value):
    result = support.grade(STEM, support.namespace_from(CANONICAL + f"exact_kl = {value}"))
    case = next(case for case in result.cases if case.name == "exact KL of the two policies")
    assert not case.passed and case.message
