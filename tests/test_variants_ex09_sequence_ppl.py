"""Exercise 09's family: 500 drawn variants keep the lesson, the key matches mpmath, and no slip lands
on the answer; one student's answers in another's variant lose points."""

import math

import mpmath
import pytest

from autograder import checks
from autograder.exercises import load_key
from autograder.exercises import answers_for
from autograder.variants import variant_for
from course.variants import parameters

STEM = "09_sequence_ppl"
STUDENTS = [f"s{i}" for i in range(500)]
KEY = load_key(STEM)
#: Far wider than the checks' 1e-5: a slip this close to the answer would be a coin toss, not a lesson.
APART = 1e-3


@pytest.fixture(scope="module")
def drawn():
    return {student: parameters(STEM, student) for student in STUDENTS}


def test_parameters_are_three_distinct_hundredths_below_one_and_a_certain_fourth(drawn):
    for student, values in drawn.items():
        p = values["p"]
        assert len(p) == 3 and len(set(p)) == 3, student
        assert all(0 < x < 1 and round(x, 2) == x for x in p), student
        assert max(p) - min(p) >= 0.2, student
        assert values["p4"] == 1.0
        assert parameters(STEM, student) == values  # a pure function of the id
    assert len({tuple(sorted(v["p"])) for v in drawn.values()}) > 480  # students rarely share a set


def test_the_key_matches_mpmath(drawn):
    mpmath.mp.dps = 40
    for student, values in list(drawn.items())[:100]:
        answers = KEY.answers(values)
        total = mpmath.fsum(mpmath.log(mpmath.mpf(repr(x))) for x in values["p"])
        expected = {"sequence_logprob": total, "mean_nll": -total / 3, "perplexity": mpmath.exp(-total / 3),
                    "sequence_logprob_4": total, "perplexity_4": mpmath.exp(-total / 4)}
        for name, value in expected.items():
            # A sum of float64 logs is within a few ulps; exp then turns the sum's absolute error
            # into a relative one, so the exponentials are as close as |sum| ulps allow, no closer.
            scale = 1 + abs(float(total)) if name.startswith("perplexity") else 1
            assert abs(answers[name] - float(value)) <= 4.5e-16 * scale * abs(float(value)), (student, name)


def _apart(a, b):
    return abs(a - b) > APART * max(abs(a), abs(b))


def test_no_slip_lands_on_the_answer(drawn):
    for student, values in drawn.items():
        p = values["p"]
        answers = KEY.answers(values)
        total = sum(map(math.log, p))
        slips = {
            "sequence_logprob": [sum(map(math.log10, p)), sum(map(math.log2, p)), math.prod(p), -total],
            "mean_nll": [-sum(map(math.log10, p)) / 3, -sum(map(math.log2, p)) / 3, total / 3, -total],
            "perplexity": [1 / math.prod(p), 3 / sum(p), math.exp(total / 3), math.exp(-sum(map(math.log2, p)) / 3)],
            "perplexity_4": [answers["perplexity"], 4 / (sum(p) + 1), math.exp(-(total + 1) / 4)],
        }
        for name, values_ in slips.items():
            for slip in values_:
                assert _apart(slip, answers[name]), (student, name, slip)


def test_ones_answers_in_anothers_variant_lose_every_part():
    for mine, theirs in (("s1", "s2"), ("s3", "s4"), ("ada", "ben")):
        copied = dict(answers_for(STEM, theirs))
        result = checks.run_check(STEM, copied, variant=variant_for(STEM, mine))
        assert all(group.points_earned == 0 for group in result.groups), result.feedback()
        own = checks.run_check(STEM, dict(answers_for(STEM, mine)), variant=variant_for(STEM, mine))
        assert own.points_earned == checks.CHECKS[STEM].points
