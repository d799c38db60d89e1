"""Exercise 05 (negative KL?): correct answers earn full marks, each confusion of sample and expectation is named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

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
     "+ 0.3 * math.log(0.3 / 0.2)", "kl-direction"),
    ("the sample as the KL", CANONICAL + "exact_kl = math.log(0.3 / 0.4)", "sample-is-kl"),
    ("flipped ratio", CANONICAL + "log_ratio_action_1 = math.log(0.4 / 0.3)", "ratio-inverted"),
    # Every rule the text states (RULES.md lists them with their cases).
    ("log-ratio in bits", CANONICAL + "log_ratio_action_1 = math.log2(0.3 / 0.4)", "log-base"),
    ("log-ratio in base 10", CANONICAL + "log_ratio_action_1 = math.log10(0.3 / 0.4)", "log-base"),
    ("KL in bits", CANONICAL + "exact_kl = exact_kl / math.log(2)", "log-base"),
    ("KL rounded to two digits", CANONICAL + "exact_kl = 0.088", "too-few-digits"),
    ("KL cut at four digits", CANONICAL + "exact_kl = 0.08801", "too-few-digits"),
    ("log-ratio rounded to four digits", CANONICAL + "log_ratio_action_1 = -0.2877", "too-few-digits"),
    ("reversed KL rounded early", CANONICAL + "exact_kl = 0.0835", "kl-direction"),
    ("a negative KL of any other kind", CANONICAL + "exact_kl = -0.0880152", "negative-kl"),
    ("an option outside the list", CANONICAL + 'average_under = "pi_old"', None, "the distribution to average under"),
    ("a number as a string", CANONICAL + 'exact_kl = "0.0880152"', None, "exact KL of the two policies"),
]


def test_key_numbers_agree_with_the_definition():
    import math

    from autograder.exercises import load_key
    key = load_key('05_negative_kl')

    assert key.LOG_RATIO == pytest.approx(math.log(0.3 / 0.4), rel=1e-14)
    by_hand = sum(p * math.log(p / q) for p, q in zip(key.PI, key.PI_REF))
    assert key.EXACT_KL == pytest.approx(by_hand, rel=1e-12)


class TestNegativeKl(ConceptCheckTests):
    stem = STEM
    central_mistakes = ("kl can be negative", "a sample cannot be negative", "the sample as the KL",
                        "average under the reference (number)", "uniform average (number)",
                        "a negative KL of any other kind")
    groups = ("kl_vs_sample",)
    autograded_points, total_points = 1, 2
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


@pytest.mark.parametrize("value", ["0.088", "0.08801", "'0.0880152'", "True", "float('inf')"])
def test_too_coarse_or_malformed_numbers_fail(value):
    """(A coarse rounding is named too-few-digits: see WRONG.)"""
    result = support.result_of(STEM, CANONICAL + f"exact_kl = {value}")
    case = next(case for case in result.cases if case.name == "exact KL of the two policies")
    assert not case.passed and case.message


def test_choosing_a_wrong_distribution_alone_does_not_cap():
    """Only a negative exact_kl caps: average_under = "pi_ref" with a right exact_kl costs its own case."""
    result = support.result_of(STEM, CANONICAL + 'average_under = "pi_ref"')
    assert result.points_earned == 0.8 and not result.groups[0].capped, result.feedback()


def _open_check(cell_id: str) -> str:
    return next(cell.source for cell in support.source_notebook(STEM).cells if cell.id == cell_id)


@pytest.mark.parametrize("mistake, message", [
    ("sampled_log_ratio_can_be_negative = False", "yet you say a sampled log-ratio cannot be negative"),
    ("exact_kl = -0.0834647", "yet your exact_kl is negative"),
    ("exact_kl = math.log(0.3 / 0.4)", "equals the log-ratio of the one sampled action"),
])
def test_the_open_check_catches_answers_that_contradict_one_another(mistake, message):
    namespace = support.namespace_from(CANONICAL + mistake)
    with pytest.raises(AssertionError, match=message):
        exec(_open_check("check-kl"), namespace)
