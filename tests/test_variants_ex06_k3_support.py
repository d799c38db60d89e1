"""Exercise 06's family: each student's two counterexamples keep their direction (example 1: q never
samples p's second point; example 2: q samples where p = 0, an infinite KL); their masses vary."""

import math
from fractions import Fraction

import mpmath

from autograder.checks import CHECKS
from autograder.checks._concept_answers import number_matches
from autograder.exercises import load_check, load_key, rubric_path, solution_path
from autograder.exercises import answers_for, fill
from course.variants import families
from tests.variant_family_support import (  # noqa: I001
    assert_slips_named,
    STUDENTS, assert_full_marks, assert_swapped_answers_lose, drawn,
)

STEM = "06_k3_support"
key = load_key(STEM)
check = load_check(STEM)
DRAWS = drawn(STEM)


def test_every_draw_keeps_both_counterexamples_pointing_their_way():
    masses = set()
    for student, values in DRAWS:
        q1, p1 = [Fraction(str(v)) for v in values["q1"]], [Fraction(str(v)) for v in values["p1"]]
        q2, p2 = [Fraction(str(v)) for v in values["q2"]], [Fraction(str(v)) for v in values["p2"]]
        assert sum(q1) == sum(p1) == sum(q2) == sum(p2) == 1, student
        # example 1: q samples only x = 0, p has mass on x = 1 (p is not << q; q << p holds)
        assert q1 == [1, 0] and p1[1] > 0 and p1[0] > 0, student
        # example 2: q samples x = 1, where p = 0 (q is not << p)
        assert p2 == [1, 0] and q2[0] > 0 and q2[1] > 0, student
        assert p1[0] % Fraction(1, 10000) == 0 and Fraction(1, 20) <= p1[0] <= Fraction(19, 20), student
        assert abs(p1[0] - Fraction(1, 2)) > Fraction(1, 1000), student  # the answer would be the missed mass
        assert q2[0] % Fraction(1, 100) == 0, student
        # off the explorers' grid of 0.05 (docs/DESIGN.md, "Widgets")
        assert p1[0] % Fraction(1, 20) != 0 and q2[0] % Fraction(1, 20) != 0, student
        answers = answers_for(STEM, student)
        assert answers["weight_mean_example_1"] == float(p1[0]) and answers["kl_example_2"] == math.inf
        assert answers["support_needed"] == {"finite_log_ratio": "q<<p", "weights_average_to_one": "p<<q"}
        assert answers["k3_identity_needs"] == "both" and answers["smoothing_recovers_support"] is False
        masses.add(p1[0])
    assert len(masses) >= 480  # 9,000 masses of example 1: 500 students rarely share one


def test_no_slip_comes_near_the_key_or_another_slip():
    for student, values in DRAWS:
        answers = key.answers(values)
        for name, wrong in check.slips(values).items():
            numbers = [answers[name]] + [value for value, _ in wrong]
            for i, a in enumerate(numbers):
                for b in numbers[i + 1:]:
                    assert not number_matches(a, b), (student, name, a, b)
                    if math.isfinite(a) and math.isfinite(b):
                        assert abs(a - b) > 1e-3 * max(abs(a), abs(b)), (student, name, a, b)


def test_each_slip_is_named_in_drawn_variants():
    assert_slips_named(STEM, check.slips, DRAWS[:15])

def test_the_reference_agrees_with_mpmath_on_drawn_variants():
    mpmath.mp.dps = 40
    for student, values in DRAWS[:100]:
        found = key.example_values(values)
        b = Fraction(str(values["q2"][0]))
        b_mp = mpmath.mpf(b.numerator) / b.denominator
        assert found["weight_mean_1"] == float(Fraction(str(values["p1"][0])))
        assert abs(found["kl_2_other_direction"] + mpmath.log(b_mp)) <= 1e-13 * abs(mpmath.log(b_mp)), student
        assert abs(found["kl_2_dropped_term"] - b_mp * mpmath.log(b_mp)) <= 1e-13 * abs(b_mp * mpmath.log(b_mp))
        assert found["kl_2"] == math.inf


def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)


def test_another_students_counterexample_loses_points():
    pairs = list(zip(STUDENTS[:60], STUDENTS[60:120]))
    differing = assert_swapped_answers_lose(STEM, {
        "conditions": ("support_needed", "k3_identity_needs", "smoothing_recovers_support"),
        "counterexamples": ("weight_mean_example_1", "kl_example_2")}, pairs)
    assert differing >= len(pairs) - 1  # one mass in 9,000: a pair rarely shares it


def test_the_worked_solution_and_rubric_follow_the_variant_and_variant_0_reads_as_before():
    solution = solution_path(STEM).read_text(encoding="utf-8")
    rubric = rubric_path(STEM).read_text(encoding="utf-8")
    seed = fill(solution, STEM)
    assert "*Example 1*, $q = (1, 0)$, $p = (0.8, 0.2)$" in seed
    assert "$k_3 = -0.2 - \\log 0.8 \\approx 0.023144$" in seed and "\\approx 0.223144$" in seed
    assert "$0.2 \\log(0.2/0) = +\\infty$" in seed and "the mean is 0.8," in fill(rubric, STEM)
    student, values = DRAWS[0]
    a = values["p1"][0]
    for text in (fill(solution, STEM, values), fill(rubric, STEM, values)):
        assert "{{" not in text and f"{a:g}" in text
    assert f"{-math.log(a):.6f}" in fill(solution, STEM, values)
    assert families()[STEM].seed["p1"] == (0.8, 0.2) and CHECKS[STEM].points == 2
