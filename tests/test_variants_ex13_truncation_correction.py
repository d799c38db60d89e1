"""Exercise 13's variants: 500 students' (Z_S, p, n) keep the lesson, and each is graded as their own.

The lesson, held in every draw and checked here exactly: truncation changes the ratio by a stated
factor, 1/Z_S per position (between 1 and 1.2: inside a [0.8, 1.2] PPO clip range, so per-token
clipping does not flag it) and Z_S**-n over the response (between 1.5 and 4: far outside it).
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import mpmath
import nbformat
import pytest

from autograder.assignment import REPO_ROOT
from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import number_matches
from autograder.exercises import exercise_dir, load_key, solution_path
from autograder.exercises import fill
from autograder.variants import variant_for
from course.variants import families, parameters
from course.variants.family_13_truncation_correction import POSITIONS
from tests.variant_family_support import assert_full_marks, assert_swapped_answers_lose, assert_published_answers_lose_every_group, numbers_of, open_check_sources

STEM = "13_truncation_correction"
STUDENTS = [f"s{i}" for i in range(500)]
KEY = load_key(STEM)
FAMILY = families()[STEM]
SEED = {"z": 0.85, "p": 0.25, "n": 4}
SOURCE = REPO_ROOT / "source" / "module6" / f"{STEM}.ipynb"
NAMES = ("p_tilde", "log_p_tilde", "log_increase", "ratio_factor")


@pytest.fixture(scope="module")
def drawn() -> dict:
    return {student: parameters(STEM, student) for student in STUDENTS}


@pytest.fixture(scope="module")
def distinct(drawn) -> list:
    """One student per distinct set of numbers drawn (a check depends on the parameters only)."""
    seen = {}
    for student, params in drawn.items():
        seen.setdefault((params["z"], params["p"], params["n"]), student)
    return sorted(seen.values(), key=lambda s: int(s[1:]))


# --------------------------------------------------------------------------- the draws


def test_parameters_are_well_formed_deterministic_and_never_the_published_ones(drawn):
    for student, params in drawn.items():
        assert set(params) == {"z", "p", "n"}, student
        z, p, n = params["z"], params["p"], params["n"]
        assert type(z) is float and type(p) is float and type(n) is int, (student, params)
        assert json.loads(json.dumps(params)) == params, student
        assert parameters(STEM, student) == params, student
        assert z in POSITIONS and n in POSITIONS[z], (student, params)
        assert Fraction(repr(z)) * 100 == round(z * 100) and Fraction(repr(p)) * 1000 == round(p * 1000), params
        assert 0.10 <= p <= 0.70 and z not in (0.85, 0.87, 0.90), (student, params)
    assert len({(d["z"], d["p"], d["n"]) for d in drawn.values()}) >= 490  # nearly every student their own
    assert parameters(STEM, None) == SEED == dict(FAMILY.seed)


def test_the_lengths_table_is_exactly_the_rule():
    """Every n in 3..8 with 1.5 <= z**-n <= 4 (exact rational arithmetic), for each mass."""
    for z, lengths in POSITIONS.items():
        q = Fraction(repr(z))
        assert q * 100 == int(q * 100)
        assert lengths == tuple(n for n in range(3, 9) if Fraction(3, 2) <= q ** -n <= 4), z


def test_truncation_changes_the_ratio_by_the_stated_factor_in_every_draw(drawn):
    """Exact: the per-token factor 1/Z_S lies in (1, 1.2), the sequence factor Z_S**-n in [1.5, 4], and
    the sampled token is inside the kept set (p < Z_S). Then the key against mpmath: the factor is
    exp(n * log_increase) = Z_S**-n, and p_tilde / p = 1/Z_S whatever p."""
    for student, params in list(drawn.items()) + [(None, SEED)]:
        z, p, n = Fraction(repr(params["z"])), Fraction(repr(params["p"])), params["n"]
        assert 1 < 1 / z < Fraction(6, 5), student  # per token: inside a [0.8, 1.2] clip range
        assert Fraction(3, 2) <= z ** -n <= 4, student  # over the response: well outside it
        assert 0 < p < z, student
        key = KEY.answers(params)
        with mpmath.workdps(40):
            zm, pm = mpmath.mpf(str(params["z"])), mpmath.mpf(str(params["p"]))
            exact = {"p_tilde": pm / zm, "log_p_tilde": mpmath.log(pm / zm), "log_increase": -mpmath.log(zm),
                     "ratio_factor": zm ** -n}
            for name, truth in exact.items():
                assert abs(mpmath.mpf(key[name]) - truth) <= abs(truth) * mpmath.mpf(10) ** -14, (student, name)
            assert abs(mpmath.mpf(key["ratio_factor"]) - mpmath.exp(n * mpmath.mpf(key["log_increase"]))) \
                <= mpmath.mpf(10) ** -13, student
        assert Fraction(key["ratio_factor"]) > Fraction(key["p_tilde"]) / p > 1, student  # n >= 3 positions


def test_variant_zero_is_the_seed_and_its_key_unchanged():
    assert (KEY.SUPPORT_MASS, KEY.BASE_PROBABILITY, KEY.POSITIONS) == (0.85, 0.25, 4)
    assert round(KEY.ANSWERS["p_tilde"], 6) == 0.294118 and round(KEY.ANSWERS["log_p_tilde"], 6) == -1.223775
    assert round(KEY.ANSWERS["log_increase"], 6) == 0.162519 and round(KEY.ANSWERS["ratio_factor"], 6) == 1.915686


def _slips(params) -> dict:
    """The check's misconceptions, recomputed here from the parameters: ``name -> [(value, key)]``."""
    z, p, n = params["z"], params["p"], params["n"]
    bases = (math.log2, math.log10)
    return {
        "p_tilde": [(p * z, "multiplied-by-mass"), (p, "no-renormalise"), (p / (1 - z), "divided-by-dropped-mass")],
        "log_p_tilde": [(log(p / z), "log-base") for log in bases]
        + [(math.log(p * z), "multiplied-by-mass"), (math.log(p), "no-renormalise"),
           (math.log(p / (1 - z)), "divided-by-dropped-mass")],
        "log_increase": [(-log(z), "log-base") for log in bases]
        + [(math.log(z), "correction-sign"), (1 - z, "difference-not-log"), (p / z - p, "difference-not-log")],
        "ratio_factor": [(z ** n, "factor-inverted"), (-n * math.log(z), "log-not-exponentiated"),
                         (1 / z, "one-position")] + [(math.exp(-n * log(z)), "log-base") for log in bases],
    }


def test_no_slip_is_within_the_tolerance_of_the_key(drawn):
    for student, params in drawn.items():
        key = KEY.answers(params)
        for name, slips in _slips(params).items():
            for value, mistake in slips:
                assert not number_matches(value, key[name]), (student, name, mistake)


def test_the_slips_are_named_in_drawn_variants(distinct, drawn):
    for student in distinct[:10]:
        params = drawn[student]
        variant = variant_for(STEM, student)
        key = KEY.answers(params)
        for name, slips in _slips(params).items():
            for value, mistake in slips:
                result = run_check(STEM, {**key, name: value}, variant=variant)
                assert result.points_earned < CHECKS[STEM].points and mistake in result.misconceptions, \
                    (student, name, mistake, result.feedback())


# --------------------------------------------------------------------------- grading each student as their own


def test_each_students_key_earns_full_marks_in_their_variant(distinct):
    assert_full_marks(STEM, distinct)


def test_another_students_answers_lose_points_on_every_group_that_differs(distinct):
    groups = {"renormalised": ("p_tilde", "log_p_tilde"), "correction": ("log_increase", "ratio_factor")}
    some = distinct[:100]  # a hundred pairs: each run of the check takes about ten milliseconds
    assert_swapped_answers_lose(STEM, groups, zip(some, some[1:] + some[:1]))


def test_the_published_answers_lose_points_on_both_groups_of_drawn_variants(distinct):
    assert_published_answers_lose_every_group(STEM, KEY.ANSWERS, distinct[:100])


# --------------------------------------------------------------------------- the notebook, worked solution and rubric


def test_the_open_checks_accept_each_students_own_answers(distinct, drawn):
    checks = open_check_sources(nbformat.read(SOURCE, as_version=4))
    for student in distinct[:60]:
        namespace = {"__name__": "__main__", "math": math, **KEY.answers(drawn[student]),
                     "numbers": numbers_of(STEM, student, drawn[student])}
        for source in checks:
            exec(compile(source, f"<{STEM} open check>", "exec"), namespace)


def test_the_worked_solution_and_rubric_follow_the_students_numbers(distinct, drawn):
    solution = solution_path(STEM).read_text(encoding="utf-8")
    rubric = (exercise_dir(STEM) / "rubric.md").read_text(encoding="utf-8")
    seed = fill(solution, STEM) + fill(rubric, STEM)
    for quoted in ("\\frac{0.25}{0.85} \\approx 0.294118", "= -1.223775", "0.85^{-4} \\approx 1.915686",
                   "1/0.85 \\approx 1.176", "0.85^4 \\approx 0.522", "by 1 / 0.85^4 (about 1.916)"):
        assert quoted in seed, quoted  # variant 0 reproduces the seed's worked numbers
    for student in distinct[:20]:
        params = drawn[student]
        worked = fill(solution, STEM, params)
        text = worked + fill(rubric, STEM, params)
        assert "{{" not in text and "1.915686" not in text and "0.162519" not in text, student
        assert f"{params['z']:.2f}^{{-{params['n']}}}" in worked, student
        namespace = {"__name__": "__main__", "math": math, "numbers": numbers_of(STEM, student, params)}
        for block in re.findall(r"```python\n(.*?)```", worked, flags=re.S):
            exec(compile(block, f"<{STEM} worked solution>", "exec"), namespace)
        result = run_check(STEM, namespace, variant=variant_for(STEM, student))
        assert result.points_earned == CHECKS[STEM].points, (student, result.feedback())
