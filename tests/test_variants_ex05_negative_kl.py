"""Exercise 05's family: each student's pi and pi_ref keep action 1 favoured by the reference (a
negative logged log-ratio), two negative terms in a positive KL, and every slip apart from the key."""

from fractions import Fraction

import mpmath

from autograder.checks._concept_answers import number_matches
from autograder.exercises import load_check, load_key, solution_path, rubric_path
from autograder.exercises import fill
from course.variants import families
from course.variants.family_05_negative_kl import CANDIDATES
from tests.variant_family_support import (  # noqa: I001
    assert_slips_named,
    STUDENTS, assert_full_marks, assert_swapped_answers_lose, drawn,
)

STEM = "05_negative_kl"
key = load_key(STEM)
check = load_check(STEM)
DRAWS = drawn(STEM)


def _exact(values) -> tuple:
    return tuple(Fraction(str(v)) for v in values)


def _lesson_in_plain_floats(pi, ref) -> bool:
    """``check.lesson_holds`` written again with ``math.log``: the reference favours action 1 and
    action 2, both wrong averages are negative, and within each answer the key and the slips of
    ``check.slips`` are pairwise more than a relative 1e-3 apart."""
    import math

    if not (pi[0] > ref[0] and pi[1] < ref[1] and pi[2] < ref[2]):
        return False
    logs = [math.log(p / r) for p, r in zip(pi, ref)]
    log_ratio = logs[1]
    exact = sum(p * v for p, v in zip(pi, logs))
    reversed_kl = -sum(r * v for r, v in zip(ref, logs))
    uniform = sum(logs) / 3
    if not (log_ratio < 0 < exact and uniform < 0 and -reversed_kl < 0):
        return False
    # exactly negative, not a rounding of 0: the product of pi below that of pi_ref (in hundredths)
    if not math.prod(round(100 * p) for p in pi) < math.prod(round(100 * r) for r in ref):
        return False
    groups = [[log_ratio, -log_ratio, log_ratio / math.log(2), log_ratio / math.log(10)],
              [exact, -reversed_kl, uniform, reversed_kl, log_ratio, exact / math.log(2), exact / math.log(10)]]
    return all(abs(a - b) > 1e-3 * max(abs(a), abs(b))
               for values in groups for i, a in enumerate(values) for b in values[i + 1:])


def test_every_candidate_keeps_the_lesson():
    """The family's list, checked again: every pair keeps the lesson, and no explorer can be set to it
    (not all six probabilities on the 0.05 grid; pi(1)/pi_ref(1) no ratio i/j of whole numbers up to 19,
    which the KL explorer shows k1 at)."""
    assert len(set(CANDIDATES)) == len(CANDIDATES) == 8000
    # The check's own predicate (3 ms a pair: the reference's KL validates every call) on one pair in
    # four; an independent re-derivation in plain floats on every pair.
    for pi, ref in CANDIDATES[::4]:
        assert check.lesson_holds({"pi": pi, "pi_ref": ref, "sampled_action": 1}), (pi, ref)
    for pi, ref in CANDIDATES:
        assert _lesson_in_plain_floats(pi, ref), (pi, ref)
        exact = _exact(pi + ref)
        assert not all(p % Fraction(1, 20) == 0 for p in exact), (pi, ref)
        ratio = exact[1] / exact[4]
        assert ratio.numerator > 19 or ratio.denominator > 19, (pi, ref)
    assert check.lesson_holds(families()[STEM].seed)


def test_the_table_is_what_the_instructors_generator_makes():
    import importlib

    lesson = importlib.import_module(f"autograder.exercises.{STEM}.lesson")
    pairs = [(tuple(round(p * 100) for p in pi), tuple(round(r * 100) for r in ref)) for pi, ref in CANDIDATES]
    assert [lesson.parameters(pi, ref) for pi, ref in pairs[:50]] == [
        {"pi": pi, "pi_ref": ref, "sampled_action": 1} for pi, ref in CANDIDATES[:50]]
    first = lesson.candidates(300)  # the seeded draws' first 300 kept pairs are all in the table
    assert set(first) <= set(pairs) and pairs == sorted(pairs)


def test_every_draw_keeps_the_lesson():
    listed = set(CANDIDATES)
    for student, values in DRAWS:
        assert (values["pi"], values["pi_ref"]) in listed, student
        pi, ref = _exact(values["pi"]), _exact(values["pi_ref"])
        assert values["sampled_action"] == 1, student                   # the answer is named for action 1
        assert sum(pi) == 1 and sum(ref) == 1, student                  # stated exactly as the code holds them
        assert all(p % Fraction(1, 100) == 0 and p >= Fraction(1, 10) for p in pi + ref), student
        assert pi[0] > ref[0] and pi[1] < ref[1] and pi[2] < ref[2], student  # two negative terms, one positive
        found = key.values(values)
        assert found.log_ratio < 0 < found.exact_kl, student
        assert found.average_under_reference < 0 and found.uniform_average < 0, student  # the cap's premise


def test_no_slip_comes_near_the_key_or_another_slip():
    """Within each answer, the key and every slip are more than a relative 1e-3 apart (the check's
    tolerance is 1e-5), so a slip is always named as itself and never passes."""
    for student, values in DRAWS:
        answers = key.answers(values)
        for name, wrong in check.slips(values).items():
            numbers = [answers[name]] + [value for value, _ in wrong]
            for i, a in enumerate(numbers):
                for b in numbers[i + 1:]:
                    assert abs(a - b) > 1e-3 * max(abs(a), abs(b)), (student, name, a, b)
                    assert not number_matches(a, b)


def test_each_slip_is_named_in_drawn_variants():
    assert_slips_named(STEM, check.slips, DRAWS[:15])

def test_the_reference_agrees_with_mpmath_on_drawn_variants():
    mpmath.mp.dps = 40
    for student, values in DRAWS[:100]:
        pi = [mpmath.mpf(Fraction(str(p)).numerator) / Fraction(str(p)).denominator for p in values["pi"]]
        ref = [mpmath.mpf(Fraction(str(r)).numerator) / Fraction(str(r)).denominator for r in values["pi_ref"]]
        kl = mpmath.fsum(p * mpmath.log(p / r) for p, r in zip(pi, ref))
        log_ratio = mpmath.log(pi[1] / ref[1])
        answers = key.answers(values)
        assert abs(answers["exact_kl"] - kl) <= 1e-13 * abs(kl), student
        assert abs(answers["log_ratio_action_1"] - log_ratio) <= 1e-13 * abs(log_ratio), student
        found = key.values(values)
        reversed_kl = mpmath.fsum(r * mpmath.log(r / p) for p, r in zip(pi, ref))
        assert abs(found.reversed_kl - reversed_kl) <= 1e-13 * reversed_kl, student


def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)


def test_another_students_numbers_lose_points():
    pairs = list(zip(STUDENTS[:60], STUDENTS[60:120]))
    differing = assert_swapped_answers_lose(STEM, {"kl_vs_sample": ("log_ratio_action_1", "exact_kl")}, pairs)
    assert differing >= len(pairs) - 2


def test_the_worked_solution_and_rubric_follow_the_variant_and_variant_0_reads_as_before():
    solution = solution_path(STEM).read_text(encoding="utf-8")
    rubric = rubric_path(STEM).read_text(encoding="utf-8")
    seed = fill(solution, STEM)
    assert "$\\log 0.3 - \\log 0.4 = \\log 0.75 \\approx -0.287682$" in seed
    assert "| 0 | 0.5 | $\\log(5/3) \\approx 0.510826$ | $0.255413$ |" in seed and "$\\approx 0.088015$" in seed
    assert "(here action 1: 0.4 > 0.3)" in fill(rubric, STEM) and "about 0.0880 and -0.288" in fill(rubric, STEM)
    student, values = DRAWS[0]
    answers = key.answers(values)
    for text in (fill(solution, STEM, values), fill(rubric, STEM, values)):
        assert "{{" not in text
    assert f"{answers['exact_kl']:.6f}" in fill(solution, STEM, values)
    assert families()[STEM].seed["pi"] == (0.5, 0.3, 0.2)
