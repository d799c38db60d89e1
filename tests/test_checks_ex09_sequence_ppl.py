"""Exercise 09 (sequence log-probability and PPL): exact expressions and 6-digit roundings pass, each
classic slip is named, and hostile values never score."""

import re

import pytest

from check_support import ConceptCheckTests, failure_messages, hostile_rebinds, namespace_from, result_of, source_notebook

STEM = "09_sequence_ppl"

EXACT = """
sequence_logprob = math.log(0.5) + math.log(0.25) + math.log(0.8)
mean_nll = -sequence_logprob / 3
perplexity = math.exp(mean_nll)
sequence_logprob_4 = sequence_logprob + math.log(1.0)
perplexity_4 = math.exp(-sequence_logprob_4 / 4)
"""

CORRECT = {
    "exact expressions": EXACT,
    "numpy, other summation order": """
logp = np.log(np.array([0.8, 0.25, 0.5]))
sequence_logprob = logp.sum()
mean_nll = -logp.mean()
perplexity = np.exp(mean_nll)
sequence_logprob_4 = np.log([1.0, 0.8, 0.25, 0.5]).sum()
perplexity_4 = np.exp(-np.log([1.0, 0.8, 0.25, 0.5]).mean())
""",
    "product forms": """
sequence_logprob = math.log(0.5 * 0.25 * 0.8)
mean_nll = -math.log(0.1) / 3
perplexity = 0.1 ** (-1 / 3)
sequence_logprob_4 = math.log(0.1)
perplexity_4 = 0.1 ** (-1 / 4)
""",
    # "a number": a Decimal, a Fraction and NumPy scalars or 0-d arrays are read as their value
    "Decimal, Fraction and NumPy scalars": """
from decimal import Decimal
from fractions import Fraction
sequence_logprob = Decimal(math.log(0.1))
mean_nll = Fraction(-math.log(0.1)) / 3
perplexity = np.float64(0.1 ** (-1 / 3))
sequence_logprob_4 = np.array(math.log(0.1))
perplexity_4 = np.float32(0.1 ** (-1 / 4))
""",
    "the worked numbers to 7 digits": """
sequence_logprob = -2.302585
mean_nll = 0.767528
perplexity = 2.154435
sequence_logprob_4 = -2.302585
perplexity_4 = 1.778279
""",
    "rounded to 6 significant digits": """
sequence_logprob = -2.30259
mean_nll = 0.767528
perplexity = 2.15443
sequence_logprob_4 = -2.30259
perplexity_4 = 1.77828
""",
    "float32 and 0-d arrays": """
sequence_logprob = np.float32(math.log(0.1))
mean_nll = np.array(-math.log(0.1) / 3)
perplexity = np.array([0.1 ** (-1 / 3)])
sequence_logprob_4 = np.float64(math.log(0.1))
perplexity_4 = np.float32(0.1 ** -0.25)
""",
    "printing along the way": EXACT + "print('perplexity is', perplexity)\n",
    # perplexity does not depend on the log base: 2 ** (mean bits) is e ** (mean nats)
    "perplexity from bits, exponentiated in base 2": EXACT + """
mean_bits = -(math.log2(0.5) + math.log2(0.25) + math.log2(0.8)) / 3
perplexity = 2 ** mean_bits
perplexity_4 = 2 ** (-(math.log2(0.1) + math.log2(1.0)) / 4)
""",
}

WRONG = {
    "base-10 logs": (EXACT.replace("math.log(", "math.log10("), "log-base-10"),
    "base-2 logs": (EXACT.replace("math.log(", "math.log2("), "log-base-2"),
    "product instead of log": (EXACT.replace("sequence_logprob = math.log(0.5) + math.log(0.25) + math.log(0.8)",
                                             "sequence_logprob = 0.5 * 0.25 * 0.8"), "product-not-log"),
    "sign flipped": (EXACT + "sequence_logprob = -sequence_logprob\n", "sign-flipped"),
    "total instead of mean": (EXACT + "mean_nll = -sequence_logprob\nperplexity = math.exp(-sequence_logprob)\n",
                              "sum-not-mean"),
    "one over the arithmetic mean": (EXACT + "perplexity = 3 / (0.5 + 0.25 + 0.8)\n", "arithmetic-mean"),
    "adds the probability 1 instead of its log": (
        EXACT + "sequence_logprob_4 = sequence_logprob + 1.0\nperplexity_4 = math.exp(-sequence_logprob_4 / 4)\n",
        "added-probability-not-log"),
    "PPL unchanged by a certain token": (EXACT + "perplexity_4 = perplexity\n", "ppl-unchanged-by-certain-token"),
    "rounded to 4 digits": (EXACT + "perplexity = 2.154\n", "too-few-digits"),
    "a number in quotes": (EXACT + "mean_nll = '0.767528'\n", "number-as-text"),
    # "at least 6 significant digits" holds for Part B too
    "Part B rounded to 3 digits": (EXACT + "perplexity_4 = 1.78\n", "too-few-digits", "perplexity with the fourth token"),
    # "the mean negative log-probability": its sign too
    "mean log-probability instead of its negative": (EXACT + "mean_nll = sequence_logprob / 3\n", "sign-flipped"),
    "Part B in base 10": (EXACT.replace("sequence_logprob_4 = sequence_logprob + math.log(1.0)",
                                        "sequence_logprob_4 = math.log10(0.1)"), "log-base-10"),
}


def test_a_slip_in_one_value_keeps_the_other_points():
    result = result_of(STEM, EXACT + "perplexity_4 = perplexity\n")
    groups = {group.name: group.points_earned for group in result.groups}
    assert groups["three_tokens"] == 1.5
    assert 0 < groups["fourth_token"] < 1


#: Hostile values for ``perplexity``.
HOSTILE_VALUES = {
    "NaN": "math.nan",
    "infinity": "math.inf",
    "a string": "'2.154435'",
    "True": "True",
    "three numbers": "[2.154435, 2.154435, 2.154435]",
    "complex": "complex(2.154435, 0)",
    "a float subclass that equals everything": (
        "type('Equal', (float,), {'__eq__': lambda self, other: True, '__hash__': float.__hash__})(9.0)"),
    "an ndarray subclass that equals everything": (
        "np.full(1, 9.0).view(type('Equal', (np.ndarray,), {'__eq__': lambda self, other: np.True_}))"),
    "a generator": "(x for x in [2.154435])",
    "a huge array": "np.full(10_000_000, 2.154435)",
    "a callable": "lambda: 2.154435",
}


class TestSequencePpl(ConceptCheckTests):
    stem = STEM
    central_mistakes = ('total instead of mean', 'one over the arithmetic mean')
    groups = ("three_tokens", "fourth_token")
    autograded_points, total_points = 2.5, 3
    correct = CORRECT
    wrong = WRONG
    hostile = hostile_rebinds(EXACT, {label: f"perplexity = {value}" for label, value in HOSTILE_VALUES.items()})


def test_feedback_never_reveals_the_expected_numbers():
    result = result_of(STEM, EXACT.replace("math.log(", "math.log10("))
    for message in failure_messages(result):
        assert "2.15" not in message and "0.767" not in message and "1.77" not in message


def test_rounding_is_named_by_the_precision_rule():
    result = result_of(STEM, EXACT + "perplexity = 2.154\n")
    assert any("6 significant digits" in message for message in failure_messages(result)), result.feedback()


@pytest.mark.parametrize("label", ["total instead of mean", "one over the arithmetic mean"])
def test_open_check_catches_the_central_mistake_without_the_key(label):
    """The open Part A check refuses a PPL that is not exp of the per-token mean, and prints no value."""
    cell = next(cell for cell in source_notebook(STEM).cells if cell.id == "check-three")
    with pytest.raises(AssertionError, match="mean") as raised:
        exec(cell.source, namespace_from(WRONG[label][0]))
    assert not re.search(r"\d\.\d{3,}", str(raised.value))
    exec(cell.source, namespace_from(EXACT))


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named


SUM_NOT_MEAN = EXACT.replace("mean_nll = -sequence_logprob / 3", "mean_nll = -sequence_logprob")


def test_the_cap_is_told_once_per_notebook_and_a_passing_capped_group_says_so():
    result = result_of(STEM, SUM_NOT_MEAN)
    lines = result.feedback().splitlines()
    capped = [line for line in lines if "[CAPPED]" in line]
    assert capped == [
        "  [CAPPED] points capped: the central idea (perplexity as the exponential of the mean negative "
        "log-probability) is missing from these answers, so every test of this notebook earns at most a third of "
        "its points: The mean NLL divides the summed negative log-probability by the number of active tokens, and "
        "perplexity exponentiates that per-token mean, not the total.",
        "  [CAPPED] every case passed, but the points are capped (the central idea is missing: see above)",
    ], lines
    assert "is wrong" not in result.feedback()
    # The batch grader's test cells and the feedback pages tell it the same way, from the same result.
    from autograder.results import GroupVerdict, verdict_text

    first, second = result.groups
    assert verdict_text(GroupVerdict.from_result(first)).splitlines()[1] == capped[0]
    assert verdict_text(GroupVerdict.from_result(second, cap_told=True)).splitlines()[1] == capped[1]
    record = GroupVerdict.from_result(second, ran={case.name for case in second.cases}, cap_told=False).to_json()
    assert record["capped"].startswith("every case passed, but the points are capped: the central idea (")
