"""Exercise 10's variants (``course.variants.family_10_kl_chain_rule``): every student's tree keeps the
lesson, the key is the reference's and agrees with mpmath, every slip stays distinguishable, each
student's own answers earn full marks and another student's answers do not.

The invariants, on 500 drawn students ("s0" .. "s499"):

* the parameters are JSON-able, deterministic, and a tree: ``p0 = (a, 1 - a)`` with two decimals,
  ``a`` not within 0.05 of 0.5, ``q0 = (0.5, 0.5)``, p's conditionals of one decimal each and q's of
  two, every pair summing to exactly 1 as the decimals stated; never the seed's tree; neither ``a``
  nor q's conditionals on the explorers' grid of 0.05 (no explorer can be set to the tree);
* the chain rule's expectation matters: the ``p0``-weighted total and the equally (= ``q0``-) weighted
  total differ by at least 5 % of the total, and the two conditional KLs differ;
* no branch where KL is symmetric, no joint table equal to its transpose;
* for every case of the check, no slip value lies within the grader's tolerance of the key, and no two
  slips naming different misconceptions lie within it of each other;
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
import numpy as np
import pytest

from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import number_matches
from autograder.exercises import answers_for, fill
from autograder.variants import variant_for
from course.variants import parameters
from course.variants.family_10_kl_chain_rule import FAMILY
from tests.variant_family_support import assert_full_marks

STEM = "10_kl_chain_rule"
STUDENTS = [f"s{i}" for i in range(500)]
#: The source notebook (read directly: check_support's imports cost seconds this file does not need).
SOURCE = nbformat.read(str(Path(__file__).resolve().parents[1] / "source" / "module6" / f"{STEM}.ipynb"), as_version=4)
key = importlib.import_module(f"autograder.exercises.{STEM}.key")
check = importlib.import_module(f"autograder.exercises.{STEM}.check")


@pytest.fixture(scope="module")
def drawn():
    return {student: parameters(STEM, student) for student in STUDENTS}


@pytest.fixture(scope="module")
def keys(drawn):
    return {student: key.answers(values) for student, values in drawn.items()}


def _close(a, b) -> bool:
    if np.ndim(a) or np.ndim(b):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return a.shape == b.shape and bool(number_matches(a, b))
    return bool(number_matches(a, b))


def _decimals(x: float) -> int:
    text = repr(float(x))
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def test_parameters_are_well_formed_deterministic_and_never_the_seed(drawn):
    assert parameters(STEM, None) == dict(FAMILY.seed)
    for student, values in drawn.items():
        assert values == parameters(STEM, student), student  # the same id, the same tree
        assert json.loads(json.dumps(values)) == json.loads(json.dumps(values, default=str))
        assert set(values) == {"p0", "q0", "p_next", "q_next"}
        assert tuple(values["q0"]) == (0.5, 0.5)
        assert values != dict(FAMILY.seed)
        a = values["p0"][0]
        assert 0.2 <= a <= 0.8 and abs(a - 0.5) > 0.05 and _decimals(a) <= 2, (student, values)
        pairs = [values["p0"], values["q0"], *values["p_next"], *values["q_next"]]
        for pair in pairs:
            assert len(pair) == 2 and all(0 < x < 1 for x in pair)
            assert sum(Fraction(str(x)) for x in pair) == 1, (student, pair)  # exactly, as stated
        for pair in values["p_next"]:
            assert all(_decimals(x) <= 1 for x in pair), (student, pair)
        for pair in values["q_next"]:
            assert all(_decimals(x) <= 2 for x in pair), (student, pair)
        # off the explorers' grid (docs/DESIGN.md, "Widgets"): p0 and every conditional of q
        for x in (a, *values["q_next"][0], *values["q_next"][1]):
            assert Fraction(str(x)) % Fraction(1, 20) != 0, (student, values)
    assert len({json.dumps(v) for v in drawn.values()}) > 450  # students mostly differ


def test_the_chain_rules_expectation_matters_on_every_tree(drawn, keys):
    for student, values in drawn.items():
        answers = keys[student]
        k0, k1 = answers["conditional_kls"]
        equal_weights = answers["root_kl"] + (k0 + k1) / 2  # = the q0-weighted total: q0 is even
        assert abs(answers["total_kl"] - equal_weights) >= 0.05 * answers["total_kl"], (student, values)
        assert abs(k0 - k1) > 1e-3 * max(k0, k1)
        for p, q in zip(values["p_next"], values["q_next"]):
            assert tuple(p) != tuple(q) and tuple(p) != tuple(q[::-1]), (student, values)  # KL > 0, not symmetric
        assert not np.allclose(answers["joint_p"], answers["joint_p"].T)
        assert not np.allclose(answers["joint_q"], answers["joint_q"].T)


def test_no_slip_is_within_the_tolerance_of_the_key_or_of_another_slip(drawn):
    for student, values in drawn.items():
        for name, _group, _variable, expected, wrong in check.slips(values):
            for i, (value, mistake) in enumerate(wrong):
                assert not _close(value, expected), (student, name, mistake.key)
                for other, other_mistake in wrong[i + 1:]:
                    if other_mistake.key != mistake.key:
                        assert not _close(value, other), (student, name, mistake.key, other_mistake.key)


def test_the_seeds_slips_are_apart_too():
    """Variant 0 is not drawn, but its slips stay named (the family's own rule holds for it)."""
    for name, _group, _variable, expected, wrong in check.slips(FAMILY.seed):
        assert not any(_close(value, expected) for value, _ in wrong), name


def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)  # full marks: no case failed, so no misconception was named


def test_answers_for_is_the_key_and_variant_0_is_the_seed(keys):
    assert all(_close(answers_for(STEM, "s7")[name], value) for name, value in keys["s7"].items())
    ours = answers_for(STEM, None)
    assert ours.keys() == key.ANSWERS.keys()
    assert all(_close(ours[name], key.ANSWERS[name]) for name in ours)
    assert math.isclose(ours["total_kl"], 0.2075056, rel_tol=1e-6)  # the seed's own number


def _mp_kl(p, q):
    return mpmath.fsum(mpmath.mpf(str(a)) * mpmath.log(mpmath.mpf(str(a)) / mpmath.mpf(str(b)))
                       for a, b in zip(p, q))


def test_the_reference_agrees_with_mpmath_on_drawn_trees(drawn, keys):
    with mpmath.workdps(40):
        for student in STUDENTS[:60]:
            values, answers = drawn[student], keys[student]
            p0, q0 = values["p0"], values["q0"]
            root = _mp_kl(p0, q0)
            conditional = [_mp_kl(p, q) for p, q in zip(values["p_next"], values["q_next"])]
            expected = mpmath.fsum(mpmath.mpf(str(w)) * k for w, k in zip(p0, conditional))
            joint_p = [mpmath.mpf(str(p0[i])) * mpmath.mpf(str(values["p_next"][i][j])) for i in (0, 1) for j in (0, 1)]
            joint_q = [mpmath.mpf(str(q0[i])) * mpmath.mpf(str(values["q_next"][i][j])) for i in (0, 1) for j in (0, 1)]
            joint = mpmath.fsum(a * mpmath.log(a / b) for a, b in zip(joint_p, joint_q))
            assert abs(joint - (root + expected)) < mpmath.mpf(10) ** -30  # the chain rule, exactly
            for got, exact in [(answers["root_kl"], root), (answers["expected_conditional_kl"], expected),
                               (answers["total_kl"], root + expected), (answers["joint_kl"], joint),
                               *zip(answers["conditional_kls"], conditional)]:
                assert abs(got - float(exact)) <= 1e-12 * float(exact), (student, got, exact)
            assert np.allclose(answers["joint_p"].ravel(), [float(x) for x in joint_p], rtol=1e-15, atol=0)


def test_another_students_answers_lose_points_on_every_group_that_differs(drawn, keys):
    groups = {group.name: group for group in CHECKS[STEM].groups}
    by_group = {}
    for name, group, variable, _expected, _wrong in check.slips(FAMILY.seed):
        by_group.setdefault(group, []).append(variable)
    for mine, theirs in zip(STUDENTS[:40:2], STUDENTS[1:40:2]):
        result = run_check(STEM, dict(keys[theirs]), variant=variant_for(STEM, mine))
        earned = {group.name: group.points_earned for group in result.groups}
        for group, variables in by_group.items():
            differs = any(not _close(keys[mine][v], keys[theirs][v]) for v in variables)
            if differs:
                assert earned[group] < groups[group].points, (mine, theirs, group)
        assert result.points_earned < CHECKS[STEM].points, (mine, theirs)


def test_the_open_check_weights_by_the_students_own_p0(drawn, keys):
    """The notebook's open Part A check passes a student's right answers in their notebook and refuses
    the same answers under another student's numbers (it reads ``numbers``, never the example's)."""
    from course.variants import Identity, Numbers

    cell = next(cell for cell in SOURCE.cells if cell.id == "check-chain")
    for mine, theirs in (("s0", "s1"), ("s2", "s3")):
        def namespace(student):
            values = drawn[student]
            return {"__name__": "__main__", "math": math, "np": np, **keys[mine],
                    "numbers": Numbers(STEM, Identity(student, "typed"), values, FAMILY.rows(values))}
        exec(cell.source, namespace(mine))
        if abs(drawn[mine]["p0"][0] - drawn[theirs]["p0"][0]) > 0.01:
            with pytest.raises(AssertionError, match="p_0"):
                exec(cell.source, namespace(theirs))


def test_the_worked_solution_and_rubric_follow_the_tree(drawn, keys):
    from autograder.exercises import exercise_dir

    texts = [(exercise_dir(STEM) / name).read_text(encoding="utf-8") for name in ("solution.md", "rubric.md")]
    seed_solution = fill(texts[0], STEM)
    for number in ("0.020136", "0.183787", "0.192745", "0.187370", "0.207506", "0.208401",
                   "0.311614 - 0.091949 - 0.091155 + 0.078995", "$0.5 \\times 0.4 = 0.20$"):
        assert number in seed_solution, number
    assert "about 0.2084 instead of 0.2075" in fill(texts[1], STEM)
    # Self-study shows the worked solution filled in (the example numbers', unless it is given others).
    from autograder import selfstudy
    shown = selfstudy.load_solution(STEM)
    assert "{{" not in shown["solution"] + "".join(shown["hints"]) and shown["solution"] in seed_solution
    assert "{{" not in selfstudy.load_solution(STEM, parameters(STEM, "s1"))["solution"]
    for student in STUDENTS[:20]:
        solution, rubric = (fill(text, STEM, drawn[student]) for text in texts)
        assert "{{" not in solution and "{{" not in rubric
        assert f"{keys[student]['total_kl']:.6f}" in solution
        assert f"{keys[student]['total_kl']:.4f}" in rubric


def test_the_notebooks_solution_is_right_for_a_drawn_tree(drawn):
    """The source notebook's solution cells compute from ``numbers``; graded in one's own kernel (no
    variant given), the check grades the numbers the notebook shows."""
    from course.variants import Identity, Numbers

    for student in ("s11", "s12"):
        values = drawn[student]
        namespace = {"__name__": "__main__",
                     "numbers": Numbers(STEM, Identity(student, "typed"), values, FAMILY.rows(values))}
        for cell in SOURCE.cells:
            if cell.id == "setup" or (cell.cell_type == "code" and cell.id.startswith("answer")):
                exec(compile(cell.source, cell.id, "exec"), namespace)
        result = run_check(STEM, namespace)
        assert result.points_earned == CHECKS[STEM].points, (student, result.feedback())
        assert not run_check(STEM, namespace, variant=variant_for(STEM, None)).points_earned == CHECKS[STEM].points


def test_the_student_packages_table_is_exactly_the_instructors_admissible_trees():
    """The family draws from a literal table (the student package computes nothing of the exercise);
    the instructor side's filter (lesson kept, every slip clear) recomputes it over the whole grid."""
    from course.variants.family_10_kl_chain_rule import TREES, tree
    lesson = importlib.import_module(f"autograder.exercises.{STEM}.lesson")
    assert list(TREES) == lesson.admissible_trees()
    assert len(set(TREES)) == len(TREES) == 12_000
    assert tree(0.6, 0.7, 0.2, 0.4, 0.5) == FAMILY.seed and (0.6, 0.7, 0.2, 0.4, 0.5) not in TREES
