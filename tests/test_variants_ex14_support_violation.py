"""Exercise 14's family: each student's mu misses one action of three and pi has full support, so
ordinary ratios never work and exactly one action breaks them; which one, the ratios and their mean
under mu vary (the graded answer is more than a choice of three actions)."""

import math
from fractions import Fraction

from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import number_matches
from autograder.exercises import load_key, solution_path
from autograder.exercises import answers_for, fill
from autograder.variants import variant_for
from course.variants import families
from tests.variant_family_support import (
    STUDENTS, assert_full_marks, assert_swapped_answers_lose, drawn,
)

STEM = "14_support_violation"
key = load_key(STEM)
DRAWS = drawn(STEM)


def _on_grid(value: float, step: Fraction) -> bool:
    return Fraction(str(value)) % step == 0


def test_every_draw_keeps_the_lesson_one_missing_action_and_a_full_support_target():
    missing_seen = set()
    for student, values in DRAWS:
        mu, pi = values["mu"], values["pi"]
        assert len(mu) == len(pi) == 3, student
        # exact sums: the numbers are stated as the code holds them (hundredths)
        assert sum(Fraction(str(m)) for m in mu) == 1 and sum(Fraction(str(p)) for p in pi) == 1, student
        assert all(_on_grid(m, Fraction(1, 100)) for m in mu) and all(_on_grid(p, Fraction(1, 100)) for p in pi)
        # off the explorers' grid of 0.05: no explorer can be set to a student's target (docs/DESIGN.md)
        assert not any(_on_grid(p, Fraction(1, 20)) for p in pi), student
        zeros = [a for a in range(3) if mu[a] == 0]
        assert len(zeros) == 1, student                          # exactly one action mu never takes
        assert all(m >= 0.1 for a, m in enumerate(mu) if a not in zeros), student
        assert all(p >= 0.05 for p in pi), student                # pi takes every action
        assert 0.1 <= pi[zeros[0]] <= 0.4, student                # a visible share of the target there
        assert all(mu[a] != pi[a] for a in range(3) if a not in zeros), student  # no ratio of 1
        answers = answers_for(STEM, student)
        assert answers["ratios_work"] is False and answers["problem_action"] == zeros[0] + 1, student
        assert answers["ratios"][zeros[0]] == math.inf and answers["ratio_mean"] < 1, student
        assert answers["remedies"] == key.GOOD_REMEDIES | key.EITHER_WAY_REMEDIES
        missing_seen.add(zeros[0])
    assert missing_seen == {0, 1, 2}  # every action is the missing one for some students


def test_the_reference_agrees_with_exact_fractions_on_drawn_variants():
    for student, values in DRAWS[:100]:
        mu = [Fraction(str(m)) for m in values["mu"]]
        pi = [Fraction(str(p)) for p in values["pi"]]
        report = key.report(values)
        covered = sum(p for m, p in zip(mu, pi) if m > 0)
        assert abs(Fraction(report.covered_target_mass) - covered) < Fraction(1, 10**12), student
        answers = key.answers(values)
        assert abs(Fraction(answers["ratio_mean"]) - covered) < Fraction(1, 10**12), student
        for a in range(3):
            if mu[a] > 0:
                assert abs(Fraction(float(report.ratios[a])) - pi[a] / mu[a]) < Fraction(1, 10**12), student
                assert abs(Fraction(answers["ratios"][a]) - pi[a] / mu[a]) <= pi[a] / mu[a] / 10**14, student
            else:
                assert report.ratios[a] == float("inf") == answers["ratios"][a], student


def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)


def test_the_slips_are_named_in_every_variant_and_never_pass():
    """Counting from zero and naming a supported action are named, whichever action is missing."""
    for student, values in DRAWS[:30]:
        variant = variant_for(STEM, student)
        right = dict(answers_for(STEM, student))
        missing = right["problem_action"]
        for slip in (1, 2, 3, missing - 1):
            if slip == missing:
                continue
            result = run_check(STEM, dict(right, problem_action=slip), variant=variant)
            diagnosis = next(group for group in result.groups if group.name == "diagnosis")
            assert diagnosis.points_earned < diagnosis.points_available, (student, slip)
            expected = "action-numbering" if slip == missing - 1 else "supported-action"
            assert expected in result.misconceptions, (student, slip, result.misconceptions)


def test_the_numeric_slips_are_named_and_apart_from_the_key():
    """The ratio upside down, a finite number for the missing action's ratio, a mean of 1 and the
    missed mass as the mean: each named, none within a relative 1e-3 of the key."""
    check = __import__(f"autograder.exercises.{STEM}.check", fromlist=["check"])
    for student, values in DRAWS[:40]:
        variant = variant_for(STEM, student)
        right = dict(answers_for(STEM, student))
        missing = right["problem_action"] - 1
        inverted = key.inverted_ratios(values)
        finite_missing = list(right["ratios"])
        finite_missing[missing] = 0.0
        for name, value, mistake in (("ratios", inverted, "ratios-inverted"),
                                     ("ratios", tuple(finite_missing), "missing-ratio-finite"),
                                     ("ratio_mean", 1.0, "ratio-mean-one"),
                                     ("ratio_mean", values["pi"][missing], "missed-mass-as-mean")):
            result = run_check(STEM, dict(right, **{name: value}), variant=variant)
            assert mistake in result.misconceptions, (student, name, value, result.misconceptions)
        for value, _ in check.slips(values)["ratio_mean"]:
            assert abs(value - right["ratio_mean"]) > 1e-3 * max(abs(value), abs(right["ratio_mean"]))
        seen = [a for a in range(3) if a != missing]
        assert not number_matches([inverted[a] for a in seen], [right["ratios"][a] for a in seen])
        assert all(abs(inverted[a] - right["ratios"][a]) > 1e-3 * right["ratios"][a] for a in seen)


def test_another_students_action_loses_the_diagnosis():
    pairs = list(zip(STUDENTS[:60], STUDENTS[60:120]))
    differing = assert_swapped_answers_lose(STEM, {"diagnosis": ("ratios_work", "problem_action", "ratios",
                                                                 "ratio_mean"),
                                                   "remedies": ("remedies",)}, pairs)
    assert differing == len(pairs)  # the ratios differ between any two students


def test_the_worked_solution_follows_the_variant_and_variant_0_reads_as_before():
    source = solution_path(STEM).read_text(encoding="utf-8")
    assert "{{ missing_action }}" in source
    assert "$0.6/0.7 \\approx 0.857$ and $0.2/0.3 \\approx 0.667$ for actions 1 and 2" in fill(source, STEM)
    assert "0.6 + 0.2 = 0.8" in fill(source, STEM) and "80 %" in fill(source, STEM)
    student, values = next((s, v) for s, v in DRAWS if v["mu"][0] == 0)
    filled = fill(source, STEM, values)
    assert "{{" not in filled and "for action 1: undefined" in filled and "actions 2 and 3" in filled
    assert families()[STEM].seed == {"mu": (0.7, 0.3, 0.0), "pi": (0.6, 0.2, 0.2)}
    assert CHECKS[STEM].points == 2
