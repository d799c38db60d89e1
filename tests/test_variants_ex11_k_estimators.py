"""Exercise 11's variants (``course.variants.family_11_k_estimators``): every student's ratio keeps the
lesson, the key is the reference's and agrees with mpmath, every slip stays distinguishable, each
student's own answers earn full marks and another student's answers do not.

The invariants, on 500 drawn students ("s0" .. "s499") and on every one of the family's 6,710 ratios:

* the parameters are ``{"r": r}``, JSON-able and deterministic, with ``1.25 <= r <= 8`` stated with at
  most three decimals and never the seed's 2, nor a ratio the KL explorer can be set to (i/j, both up
  to 19); the second ratio is ``1/r``;
* the lesson: k1 is negative at r and positive at 1/r (it changes sign), k2 is the same at both (one
  log-ratio with two signs) and positive, k3 is positive at both and differs between them; so the
  sets of Part B are {"k1"} and {"k2", "k3"} for everyone;
* for every value case, no slip value lies within the grader's tolerance of the key, and no two slips
  naming different misconceptions lie within it of each other;
* the case names carry the student's ratios, and the central idea names those cases;
* the key's answers score full marks through ``run_check(..., variant=variant_for(stem, student))``.
"""

from __future__ import annotations

import importlib
import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import nbformat
import pytest

from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import NUMBER_ATOL, NUMBER_RTOL, number_matches
from autograder.exercises import answers_for, fill
from autograder.variants import variant_for
from course.variants import parameters
from course.variants.family_11_k_estimators import FAMILY, RATIOS
from tests.variant_family_support import assert_full_marks

STEM = "11_k_estimators"
STUDENTS = [f"s{i}" for i in range(500)]
#: The source notebook (read directly: check_support's imports cost seconds this file does not need).
SOURCE = nbformat.read(str(Path(__file__).resolve().parents[1] / "source" / "module6" / f"{STEM}.ipynb"), as_version=4)
key = importlib.import_module(f"autograder.exercises.{STEM}.key")
check = importlib.import_module(f"autograder.exercises.{STEM}.check")


@pytest.fixture(scope="module")
def drawn():
    return {student: parameters(STEM, student) for student in STUDENTS}


def test_parameters_are_well_formed_deterministic_and_never_the_seed(drawn):
    assert parameters(STEM, None) == {"r": 2.0} == dict(FAMILY.seed)
    assert len(RATIOS) == 6710 and len(set(RATIOS)) == 6710 and 2.0 not in RATIOS
    explorer = {Fraction(i, j) for i in range(1, 20) for j in range(1, 20)}  # p/q in steps of 0.05
    assert not explorer & {Fraction(str(r)) for r in RATIOS}
    for student, values in drawn.items():
        assert values == parameters(STEM, student) and set(values) == {"r"}, student
        assert json.loads(json.dumps(values)) == values
        r = values["r"]
        assert r in RATIOS and 1.25 <= r <= 8 and r != 2
        assert Fraction(str(r)) * 1000 == int(Fraction(str(r)) * 1000)  # at most three decimals, as stated
        assert Fraction(str(r)) not in explorer and 1 / Fraction(str(r)) not in explorer
    assert len({v["r"] for v in drawn.values()}) > 450  # 500 students spread over the 6,710 ratios


def test_the_lesson_holds_for_every_ratio():
    for r in (2.0, *RATIOS):
        answers = key.answers({"r": r})
        up, down = answers["k_at_2"], answers["k_at_half"]
        assert up["k1"] < 0 < down["k1"], r  # k1 changes sign
        assert math.isclose(up["k2"], down["k2"], rel_tol=1e-12) and up["k2"] > 0, r  # one log-ratio, two signs
        assert up["k3"] > 0 and down["k3"] > 0 and not number_matches(up["k3"], down["k3"]), r
        assert answers["changes_sign"] == {"k1"} and answers["never_negative"] == {"k2", "k3"}, r


def _matches(actual: float, expected: float) -> bool:
    """``number_matches`` for two finite floats (its rule, |a - e| <= 1e-9 + 1e-5 |e|, without building
    arrays: 6,710 ratios make about half a million comparisons)."""
    assert math.isfinite(actual) and math.isfinite(expected)
    return abs(actual - expected) <= NUMBER_ATOL + NUMBER_RTOL * abs(expected)


def test_no_slip_is_within_the_tolerance_of_the_key_or_of_another_slip():
    assert _matches(1.0, 1.0 + 9e-6) == number_matches(1.0, 1.0 + 9e-6) and not _matches(1.0, 1.0 + 2e-5)
    for r in (2.0, *RATIOS):
        answers = key.answers({"r": r})
        for name, ratio in key.ratios({"r": r}).items():
            for estimator in key.ESTIMATORS:
                expected, wrong = answers[name][estimator], check.value_slips(ratio, estimator)
                for i, (value, mistake) in enumerate(wrong):
                    assert not _matches(value, expected), (r, name, estimator, mistake.key)
                    for other, other_mistake in wrong[i + 1:]:
                        if other_mistake.key != mistake.key:
                            assert not _matches(value, other), (r, name, estimator, mistake.key,
                                                                other_mistake.key)


def test_case_names_and_the_central_idea_follow_the_ratio():
    seed_names = [case.name for case in CHECKS[STEM].cases()]
    assert seed_names[:6] == ["k1 at r = 2", "k2 at r = 2", "k3 at r = 2",
                              "k1 at r = 1/2", "k2 at r = 1/2", "k3 at r = 1/2"]
    bound = CHECKS[STEM].at(variant_for(STEM, "s0"))
    r = parameters(STEM, "s0")["r"]
    names = [case.name for case in bound.cases()]
    assert f"k1 at r = {r:g}" in names and f"k3 at r = 1/{r:g}" in names
    assert set(bound.central.cases) <= set(names)
    assert CHECKS[STEM].central.cases == ("k1 at r = 2", "k1 at r = 1/2", "k3 at r = 2")


def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)  # full marks: no case failed, so no misconception was named


def test_the_central_cap_applies_in_a_drawn_variant():
    """A flipped k1 in a student's own variant is named and caps the notebook at a third."""
    student = "s3"
    answers = answers_for(STEM, student)
    answers["k_at_2"] = {**answers["k_at_2"], "k1": -answers["k_at_2"]["k1"]}
    result = run_check(STEM, answers, variant=variant_for(STEM, student))
    assert "k1-sign" in result.misconceptions
    assert result.points_earned <= CHECKS[STEM].points / 3 + 1e-9, result.feedback()


def test_the_reference_agrees_with_mpmath_on_drawn_ratios(drawn):
    with mpmath.workdps(40):
        for r in sorted({values["r"] for values in drawn.values()}):
            answers = key.answers({"r": r})
            for name, ratio in (("k_at_2", mpmath.mpf(str(r))), ("k_at_half", 1 / mpmath.mpf(str(r)))):
                log_r = mpmath.log(ratio)
                exact = {"k1": -log_r, "k2": log_r ** 2 / 2, "k3": (ratio - 1) - log_r}
                for estimator, value in exact.items():
                    got = answers[name][estimator]
                    # The key evaluates at the float 1/r: one rounding of the ratio, well inside 1e-12.
                    assert abs(got - float(value)) <= 1e-12 * abs(float(value)), (r, name, estimator, got)


def test_another_students_answers_lose_points_on_every_group_that_differs(drawn):
    values_points = next(group.points for group in CHECKS[STEM].groups if group.name == "values")
    pairs = [(mine, theirs) for mine, theirs in zip(STUDENTS[:60:2], STUDENTS[1:60:2])
             if drawn[mine]["r"] != drawn[theirs]["r"]]
    assert len(pairs) >= 20
    for mine, theirs in pairs:
        result = run_check(STEM, dict(answers_for(STEM, theirs)), variant=variant_for(STEM, mine))
        earned = {group.name: group.points_earned for group in result.groups}
        assert earned["values"] < values_points, (mine, theirs)
        # Part B's sets are the same for every variant: another's are right there.
        assert earned["signs"] == next(g.points for g in CHECKS[STEM].groups if g.name == "signs")


def test_the_open_check_uses_the_students_own_ratio(drawn):
    """The open Part A check passes a student's right answers in their notebook and refuses the same
    answers under another student's numbers, or the example numbers' (r = 2)."""
    from course.variants import Identity, Numbers

    cell = next(cell for cell in SOURCE.cells if cell.id == "check-values")
    mine, theirs = "s0", next(s for s in STUDENTS if drawn[s]["r"] != drawn["s0"]["r"])

    def namespace(student, numbers_of):
        values = dict(numbers_of)
        return {"__name__": "__main__", "math": math, **answers_for(STEM, student),
                "numbers": Numbers(STEM, Identity(student, "typed"), values, FAMILY.rows(values))}

    exec(cell.source, namespace(mine, drawn[mine]))
    for other in (drawn[theirs], FAMILY.seed):
        with pytest.raises(AssertionError, match="k3 - k1 should equal r - 1"):
            exec(cell.source, namespace(mine, other))


def test_the_notebooks_solution_is_right_for_a_drawn_ratio(drawn):
    """The source notebook's solution cells compute from ``numbers``; graded in one's own kernel (no
    variant given), the check grades the numbers the notebook shows."""
    from course.variants import Identity, Numbers

    values = drawn["s5"]
    namespace = {"__name__": "__main__",
                 "numbers": Numbers(STEM, Identity("s5", "typed"), values, FAMILY.rows(values))}
    for cell in SOURCE.cells:
        if cell.id == "setup" or (cell.cell_type == "code" and cell.id.startswith("answer")):
            exec(compile(cell.source, cell.id, "exec"), namespace)
    assert run_check(STEM, namespace).points_earned == CHECKS[STEM].points
    assert run_check(STEM, namespace, variant=variant_for(STEM, None)).points_earned < CHECKS[STEM].points


def test_the_worked_solution_follows_the_ratio(drawn):
    from autograder.exercises import exercise_dir

    text = (exercise_dir(STEM) / "solution.md").read_text(encoding="utf-8")
    seed = fill(text, STEM)
    for piece in ("$\\log 2 \\approx 0.693147$", "At $r = 1/2$", "$1 - 0.693147 = 0.306853$",
                  "$-0.5 + 0.693147 = 0.193147$", '"k3": math.log(2) - 0.5}'):
        assert piece in seed, piece
    # Self-study shows the worked solution filled in (the example numbers', unless it is given others).
    from autograder import selfstudy
    shown = selfstudy.load_solution(STEM)
    assert "{{" not in shown["solution"] + "".join(shown["hints"]) and shown["solution"] in seed
    assert "{{" not in selfstudy.load_solution(STEM, parameters(STEM, "s1"))["solution"]
    for r in sorted({values["r"] for values in drawn.values()})[:15]:
        worked = fill(text, STEM, {"r": r})
        answers = key.answers({"r": r})
        assert "{{" not in worked and f"At $r = 1/{r:g}$" in worked
        assert f"{answers['k_at_2']['k3']:.6f}" in worked and f"{answers['k_at_half']['k3']:.6f}" in worked
        # The code of the worked solution is exact: it evaluates to the key.
        code = worked.split("```python\n")[1].split("```")[0]
        namespace = {"math": math}
        exec(code, namespace)
        for name in ("k_at_2", "k_at_half"):
            for estimator in key.ESTIMATORS:
                assert math.isclose(namespace[name][estimator], answers[name][estimator], rel_tol=1e-12)
