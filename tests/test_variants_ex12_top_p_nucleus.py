"""Exercise 12's variants: 500 students' distributions keep the lesson, and each is graded as their own.

The lesson, held in every draw and checked here exactly: the two most likely tokens reach
top_p = 0.80 exactly in decimal arithmetic, while an engine's float64 softmax of ``log p`` summed by
a running sum stops exactly one ulp short of 0.80 at the second token (so a rule without a tolerance
keeps a third token); 0.81 needs exactly one more token, never the whole vocabulary.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import mpmath
import nbformat
import numpy as np
import pytest

from autograder.assignment import REPO_ROOT
from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import number_matches
from autograder.exercises import load_key, solution_path
from autograder.exercises import fill
from autograder.variants import variant_for
from course.variants import families, parameters
from course.variants.family_12_top_p_nucleus import DISTRIBUTIONS, THRESHOLDS
from tests.variant_family_support import assert_full_marks, assert_published_answers_lose_every_group, numbers_of, open_check_sources

STEM = "12_top_p_nucleus"
STUDENTS = [f"s{i}" for i in range(500)]
KEY = load_key(STEM)
FAMILY = families()[STEM]
SEED_P = (0.50, 0.30, 0.15, 0.05)
ONE_ULP_SHORT = np.nextafter(0.80, 0.0)
SOURCE = REPO_ROOT / "source" / "module6" / f"{STEM}.ipynb"
TABLE = frozenset(DISTRIBUTIONS)


@pytest.fixture(scope="module")
def drawn() -> dict:
    return {student: parameters(STEM, student) for student in STUDENTS}


@pytest.fixture(scope="module")
def distinct(drawn) -> list:
    """One student per distinct distribution drawn (a check depends on the parameters only)."""
    seen = {}
    for student, params in drawn.items():
        seen.setdefault(params["p"], student)
    return sorted(seen.values(), key=lambda s: int(s[1:]))


def _exact(p) -> list:
    return [Fraction(repr(x)) for x in p]  # the decimals the question states, exactly


def _engine_numpy(p) -> np.ndarray:
    z = np.log(np.asarray(p, dtype=np.float64))
    e = np.exp(z - z.max())
    return e / e.sum()


def _engine_libm(p) -> list:
    z = [math.log(x) for x in p]
    e = [math.exp(v - max(z)) for v in z]
    total = 0.0
    for v in e:
        total += v
    return [v / total for v in e]


def _engine_correctly_rounded(p) -> list:
    """The same float64 steps with log and exp correctly rounded (mpmath at 200 bits, then rounded)."""
    with mpmath.workprec(200):
        z = [float(mpmath.log(mpmath.mpf(x))) for x in p]
        e = [float(mpmath.exp(mpmath.mpf(v - max(z)))) for v in z]
    total = 0.0
    for v in e:
        total += v
    return [v / total for v in e]


def _running(values) -> list:
    out, total = [], 0.0
    for v in values:
        total += v
        out.append(total)
    return out


# --------------------------------------------------------------------------- the draws


def test_parameters_are_well_formed_deterministic_and_never_the_published_ones(drawn):
    for student, params in drawn.items():
        assert set(params) == {"p"}, student
        p = params["p"]
        assert isinstance(p, tuple) and len(p) == 4 and all(type(x) is float for x in p), (student, p)
        assert json.loads(json.dumps(params)) == {"p": list(p)}, student  # JSON-able as it is
        assert parameters(STEM, student) == params, student  # the same id, the same numbers
        assert p in TABLE and p != SEED_P and p[:2] != SEED_P[:2], (student, p)
    assert len({params["p"] for params in drawn.values()}) >= 490  # the class is spread over the table
    assert parameters(STEM, None) == {"p": SEED_P} == dict(FAMILY.seed)


def test_every_distribution_states_exact_decimals_that_reach_080_exactly_and_081_one_token_later():
    assert len(DISTRIBUTIONS) == len(TABLE) == 16011
    for p in DISTRIBUTIONS + (SEED_P,):
        q = _exact(p)
        assert all(x * 2000 == int(x * 2000) and x > 0 for x in q), p  # the 0.0005 grid, a student can type it
        assert q[0] > q[1] > q[2] > q[3] and sum(q) == 1, p
        assert q[0] + q[1] == Fraction(4, 5), p  # the threshold reached exactly by the token that stays
        assert q[0] < Fraction(4, 5) < q[0] + q[1] + q[2], p
        assert q[0] + q[1] < Fraction(81, 100) <= q[0] + q[1] + q[2] < 1, p  # one more token, not all four
        if p != SEED_P:  # off the explorers' grid of 0.05 (docs/DESIGN.md, "Widgets")
            assert q[0] % Fraction(1, 20) != 0 and q[2] % Fraction(1, 20) != 0, p


def test_the_float64_running_sum_misses_080_by_exactly_one_ulp_in_every_distribution():
    """The lesson: cumulative sums are not exact. Checked bit for bit, with three implementations of
    log and exp; and the consequences: a rule without a tolerance keeps three tokens at 0.80, and so
    does transformers' ascending rule in float64."""
    for p in DISTRIBUTIONS + (SEED_P,):
        for engine in (_engine_numpy(p).tolist(), _engine_libm(p), _engine_correctly_rounded(p)):
            running = _running(engine)
            assert running[1] == ONE_ULP_SHORT, (p, running)
            assert running[0] < 0.80 and running[1] < 0.81 < running[2] and running[2] > 0.81, (p, running)
        cumulative = np.cumsum(_engine_numpy(p))
        assert cumulative[1] == ONE_ULP_SHORT and np.nextafter(cumulative[1], 1.0) == 0.80, p
        assert int(np.searchsorted(cumulative, 0.80, side="left")) + 1 == 3, p  # the float trap
        ascending = np.cumsum(np.sort(_engine_numpy(p)))
        assert int(np.count_nonzero(ascending > 1 - 0.80)) == 3, p


def test_the_draws_keep_the_lesson_exactly(drawn):
    for student, params in drawn.items():
        p = params["p"]
        assert np.cumsum(_engine_numpy(p))[1] == ONE_ULP_SHORT, student
        assert _exact(p)[0] + _exact(p)[1] == Fraction(4, 5), student


def test_the_table_is_exactly_the_grid_points_with_the_properties():
    """Nothing of the 0.0005 grid with the lesson's properties is left out (but the seed's top pair and
    the explorers' grid, p0 or p2 a multiple of 0.05). The cheap engines first: the correctly rounded
    one (mpmath) only where they already agree."""
    found = []
    for a in range(1, 1600):
        for c in range(1, 400):
            q = (a / 2000, (1600 - a) / 2000, c / 2000, (400 - c) / 2000)
            if not (q[0] > q[1] > q[2] > q[3] > 0) or q[:2] == SEED_P[:2] or a % 100 == 0 or c % 100 == 0:
                continue
            if q[0] + q[1] + q[2] < 0.81 - 1e-12:
                continue
            numpy_engine = _engine_numpy(q)
            if _running(numpy_engine.tolist())[1] != ONE_ULP_SHORT or _running(_engine_libm(q))[1] != ONE_ULP_SHORT:
                continue
            if np.count_nonzero(np.cumsum(np.sort(numpy_engine)) > 1 - 0.80) != 3:
                continue
            if _running(_engine_correctly_rounded(q))[1] == ONE_ULP_SHORT:
                found.append(q)
    assert sorted(found) == sorted(DISTRIBUTIONS)


def test_the_instructors_generator_agrees_with_the_table():
    """``lesson.py`` made the family's bitmap: on every point of the table and a sample of the rest of
    the grid it says the same."""
    import importlib

    lesson = importlib.import_module(f"autograder.exercises.{STEM}.lesson")
    points = lesson.grid_points()
    assert [lesson.distribution(point) for point in points] == [
        (a / 2000, (1600 - a) / 2000, c / 2000, (400 - c) / 2000) for a, c in points]
    chosen = {lesson.distribution(point) for point in points[::97]} | set(DISTRIBUTIONS[::53])
    for point in points:
        p = lesson.distribution(point)
        if p in chosen:
            assert lesson.admissible(point) == (p in TABLE), p


# --------------------------------------------------------------------------- the key


def _exact_nucleus(p, size: int) -> list:
    q = _exact(p)
    mass = sum(q[:size])
    return [x / mass if i < size else Fraction(0) for i, x in enumerate(q)]


def test_the_reference_agrees_with_exact_arithmetic_and_mpmath(distinct, drawn):
    for student in distinct + [None]:
        params = drawn[student] if student else dict(FAMILY.seed)
        answers = KEY.answers(params)
        assert answers["kept_080"] == frozenset({0, 1}) and answers["kept_081"] == frozenset({0, 1, 2}), student
        for suffix, size in (("080", 2), ("081", 3)):
            exact = _exact_nucleus(params["p"], size)
            got = answers[f"nucleus_{suffix}"]
            assert got.shape == (4,) and all(got[size:] == 0), student
            for value, truth in zip(got[:size], exact[:size]):
                assert abs(Fraction(float(value)) - truth) <= truth * Fraction(1, 10 ** 14), (student, suffix)
            with mpmath.workdps(40):
                mass = mpmath.fsum(mpmath.mpf(str(x)) for x in params["p"][:size])
                for value, x in zip(got[:size], params["p"]):
                    assert abs(mpmath.mpf(float(value)) - mpmath.mpf(str(x)) / mass) < mpmath.mpf(10) ** -15


def test_variant_zero_is_the_seed_and_its_key_unchanged():
    assert KEY.PROBABILITIES == SEED_P and KEY.THRESHOLDS == THRESHOLDS == {"080": 0.80, "081": 0.81}
    np.testing.assert_allclose(KEY.NUCLEUS["080"], [0.625, 0.375, 0, 0], rtol=1e-15)
    np.testing.assert_allclose(KEY.NUCLEUS["081"], [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0], rtol=1e-15)


def _slips(p) -> dict:
    """The check's misconceptions, recomputed here from the parameters: ``(suffix, answer) -> value``."""
    p = np.asarray(p, dtype=np.float64)

    def prefix(size, normalise=True):
        out = np.where(np.arange(4) < size, p, 0.0)
        return out / out.sum() if normalise else out

    out = {}
    for suffix, size in (("080", 2), ("081", 3)):
        out[(suffix, "top-p-drops-threshold-token")] = (frozenset(range(size - 1)), prefix(size - 1))
        out[(suffix, "top-p-keeps-extra")] = (frozenset(range(size + 1)), prefix(size + 1))
        out[(suffix, "one-based-ids")] = (frozenset(range(1, size + 1)), None)
        out[(suffix, "no-renormalise")] = (None, prefix(size, normalise=False))
    return out


def test_no_slip_is_within_the_tolerance_of_the_key(drawn):
    for student, params in drawn.items():
        answers = KEY.answers(params)
        for (suffix, _), (kept, nucleus) in _slips(params["p"]).items():
            assert kept != answers[f"kept_{suffix}"], student
            if nucleus is not None:
                assert not number_matches(nucleus, answers[f"nucleus_{suffix}"]), (student, suffix)


def test_the_slips_are_named_in_drawn_variants(distinct, drawn):
    for student in distinct[:12]:
        variant = variant_for(STEM, student)
        answers = KEY.answers(drawn[student])
        for (suffix, mistake), (kept, nucleus) in _slips(drawn[student]["p"]).items():
            wrong = dict(answers)
            if kept is not None:
                wrong[f"kept_{suffix}"] = set(kept)
            if nucleus is not None:
                wrong[f"nucleus_{suffix}"] = nucleus.tolist()
            result = run_check(STEM, wrong, variant=variant)
            assert result.points_earned < CHECKS[STEM].points and mistake in result.misconceptions, \
                (student, suffix, mistake, result.feedback())


# --------------------------------------------------------------------------- grading each student as their own


def test_each_students_key_earns_full_marks_in_their_variant(distinct):
    assert_full_marks(STEM, distinct)


def _differs(a: dict, b: dict, suffix: str) -> bool:
    return a[f"kept_{suffix}"] != b[f"kept_{suffix}"] or not number_matches(a[f"nucleus_{suffix}"], b[f"nucleus_{suffix}"])


def test_another_students_answers_lose_points_on_every_group_that_differs(distinct, drawn):
    pairs = list(zip(distinct, distinct[1:] + distinct[:1]))
    for mine, theirs in pairs:
        copied = KEY.answers(drawn[theirs])
        own = KEY.answers(drawn[mine])
        result = run_check(STEM, dict(copied), variant=variant_for(STEM, mine))
        differing = [s for s in THRESHOLDS if _differs(copied, own, s)]
        assert differing, (mine, theirs)  # nucleus_081 differs whenever the distributions do
        for group in result.groups:
            if group.name[len("threshold_"):] in differing:
                assert group.points_earned < group.points_available, (mine, theirs, group.name)


def test_the_published_answers_lose_points_on_both_groups_of_every_drawn_variant(distinct):
    assert_published_answers_lose_every_group(STEM, KEY.ANSWERS, distinct)


# --------------------------------------------------------------------------- the notebook and the worked solution


def test_the_open_checks_accept_each_students_own_answers(distinct, drawn):
    checks = open_check_sources(nbformat.read(SOURCE, as_version=4))
    for student in distinct:
        namespace = {"__name__": "__main__", "math": math, "np": np, **KEY.answers(drawn[student]),
                     "numbers": numbers_of(STEM, student, drawn[student])}
        for source in checks:
            exec(compile(source, f"<{STEM} open check>", "exec"), namespace)


def test_the_worked_solution_follows_the_students_numbers(distinct, drawn):
    text = solution_path(STEM).read_text(encoding="utf-8")
    seed = fill(text, STEM)
    for quoted in ("0.50 + 0.30 = 0.80", "(0.625,\\ 0.375,\\ 0,\\ 0)", "(0.526316,\\ 0.315789,\\ 0.157895,\\ 0)",
                   "$0.29999999999999993$", "`0.7999999999999999`", "Z = 0.95"):
        assert quoted in seed, quoted  # variant 0 reproduces the seed's worked numbers
    for student in distinct[:20]:
        params = drawn[student]
        worked = fill(text, STEM, params)
        assert "{{" not in worked and "0.526316" not in worked, student
        p0, p1 = (KEY.worked(params)[name] for name in ("p0", "p1"))
        assert f"{p0} + {p1} = 0.80" in worked, student
        namespace = {"__name__": "__main__", "math": math, "np": np, "numbers": numbers_of(STEM, student, params)}
        for block in re.findall(r"```python\n(.*?)```", worked, flags=re.S):
            exec(compile(block, f"<{STEM} worked solution>", "exec"), namespace)
        result = run_check(STEM, namespace, variant=variant_for(STEM, student))
        assert result.points_earned == CHECKS[STEM].points, (student, result.feedback())
