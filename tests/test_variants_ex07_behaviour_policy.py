"""Exercise 07's family: each student's logits and engine settings keep token 1 the threshold token of
the nucleus after temperature and the ban, and every partial replay of the chain apart from the key."""

import math
from fractions import Fraction

import mpmath

from autograder.checks import CHECKS
from autograder.exercises import load_check, load_key, rubric_path, solution_path
from autograder.exercises import fill
from course.variants import families
from course.variants.family_07_behaviour_policy import _CODES, CANDIDATES
from tests.variant_family_support import (  # noqa: I001
    assert_slips_named,
    STUDENTS, assert_full_marks, assert_swapped_answers_lose, drawn,
)

STEM = "07_behaviour_policy"
key = load_key(STEM)
check = load_check(STEM)
DRAWS = drawn(STEM)


def _parameters(candidate) -> dict:
    logits, temperature, banned, top_p = candidate
    return {"logits": tuple(float(v) for v in logits), "temperature": float(temperature), "banned": (banned,),
            "top_p": float(top_p), "token": 1}


def _replays(parameters) -> dict:
    """The key and the slips of ``check.slips`` derived again in plain floats (the chain and each
    partial replay of it), for an independent look at every candidate."""
    z, t = parameters["logits"], parameters["temperature"]
    banned, top_p = parameters["banned"][0], parameters["top_p"]

    def log_prob(scale, ban, top, extra=0, last_temperature=None):
        allowed = [i for i in range(5) if not (ban and i == banned)]
        weights = {i: math.exp(z[i] / scale) for i in allowed}
        total = sum(weights.values())
        ranked = sorted(allowed, key=lambda i: (-z[i], i))
        support, running = [], 0.0
        for i in ranked:
            support.append(i)
            running += weights[i] / total
            if top and running >= top_p:
                break
        support = ranked[:len(support) + extra] if top else allowed
        if 1 not in support:
            return -math.inf
        final = last_temperature or scale
        return z[1] / final - math.log(sum(math.exp(z[i] / final) for i in support))

    stored = z[1] - math.log(sum(math.exp(v) for v in z))
    behaviour = log_prob(t, True, True)
    ratio = math.exp(behaviour - stored)

    def units(x):
        return [(x / math.log(10), "base"), (x / math.log(2), "base"), (-x, "negated"), (math.exp(x), "probability")]

    return {"stored_logprob": [(stored, "key")] + units(stored),
            "behaviour_logprob_token_1": [
                (behaviour, "key"), (stored, "base softmax"), (log_prob(t, False, False), "temperature only"),
                (log_prob(t, True, False), "no top-p"), (log_prob(t, False, True), "no ban"),
                (log_prob(1.0, True, True), "no temperature"), (-math.inf, "threshold dropped"),
                (log_prob(t, True, True, extra=1), "nucleus too large"),
                (log_prob(1.0, True, True, last_temperature=t), "nucleus too large")] + units(behaviour),
            "first_step_ratio": [(ratio, "key"), (1.0, "cancels"), (1 / ratio, "upside down"),
                                 (math.log(ratio), "log")]}


def _apart(values) -> bool:
    """Pairwise more than a relative 1e-3 apart, but two slips of one mistake, which may coincide."""
    for i, (a, tag_a) in enumerate(values):
        for b, tag_b in values[i + 1:]:
            if tag_a == tag_b and tag_a != "key":
                continue
            if math.isinf(a) or math.isinf(b):
                if a == b:
                    return False
            elif abs(a - b) <= 1e-3 * max(abs(a), abs(b)):
                return False
    return True


def test_every_candidate_keeps_the_lesson_and_separates_the_slips():
    """The family's list, checked again: stated exactly (logits in tenths, temperature and top-p in
    hundredths); the check's lesson_holds (token 1 the threshold token by 0.02 either side, top-p drops
    a token, every slip more than a relative 1e-3 from the key and the others: 5 ms a setting) on one in
    eight, and on every one the key and its partial replays derived again in plain floats, apart."""
    assert len(set(CANDIDATES)) == len(CANDIDATES) == 8000
    seed = (families()[STEM].seed["logits"], 0.7, 3, 0.85)
    for candidate in CANDIDATES + (seed,):
        parameters = _parameters(candidate)
        assert all(Fraction(str(v)) % Fraction(1, 10) == 0 and -1 <= v <= 2.5 for v in parameters["logits"])
        assert len(set(parameters["logits"])) == 5 and 0.5 <= parameters["temperature"] <= 0.9
        assert Fraction(str(parameters["temperature"])) % Fraction(1, 100) == 0
        if candidate != seed:  # off the truncation explorer's temperatures (docs/DESIGN.md, "Widgets")
            assert Fraction(str(parameters["temperature"])) % Fraction(1, 20) != 0, candidate
        assert Fraction(str(parameters["top_p"])) % Fraction(1, 100) == 0 and parameters["banned"] != (1,)
        assert all(_apart(values) for values in _replays(parameters).values()), candidate
    for candidate in CANDIDATES[::8] + (seed,):
        parameters = _parameters(candidate)
        assert check.lesson_holds(parameters), candidate
        key_value = key.answers(parameters)  # the plain-float replays are the reference's key
        for name, values in _replays(parameters).items():
            assert math.isclose(values[0][0], key_value[name], rel_tol=1e-12), (candidate, name)


def test_the_table_is_what_the_instructors_generator_makes():
    import importlib

    lesson = importlib.import_module(f"autograder.exercises.{STEM}.lesson")
    assert lesson.codes(CANDIDATES[:40]) == "".join(
        _CODES[i:i + 8] for i in range(0, 8 * 40, 8))
    assert set(lesson.candidates(40)) <= set(CANDIDATES) and list(CANDIDATES) == sorted(CANDIDATES)


def test_every_draw_is_a_candidate_with_token_1_sampled():
    listed = {(tuple(float(v) for v in c[0]), float(c[1]), c[2], float(c[3])) for c in CANDIDATES}
    seen = set()
    for student, values in DRAWS:
        candidate = (values["logits"], values["temperature"], values["banned"][0], values["top_p"])
        assert candidate in listed and _parameters(candidate) == values, student
        assert values["token"] == 1, student
        found = key.values(values)
        assert found.record.support[1] and found.behaviour < 0 and found.first_step_ratio != 1, student
        seen.add(candidate)
    assert len(seen) >= 480  # 500 students spread over the 8,000 candidates


def test_the_reference_agrees_with_mpmath_on_drawn_variants():
    mpmath.mp.dps = 40
    for student, values in DRAWS[:60]:
        z = [mpmath.mpf(str(v)) for v in values["logits"]]
        t = mpmath.mpf(str(values["temperature"]))
        stored = z[1] - mpmath.log(mpmath.fsum(mpmath.exp(v) for v in z))
        tempered = [mpmath.exp(v / t) for v in z]
        allowed = [i for i in range(5) if i not in values["banned"]]
        ranked = sorted(allowed, key=lambda i: (-values["logits"][i], i))
        total = mpmath.fsum(tempered[i] for i in allowed)
        running, support = mpmath.mpf(0), []
        for i in ranked:  # the shortest prefix whose probability reaches top_p
            support.append(i)
            running += tempered[i] / total
            if running >= mpmath.mpf(str(values["top_p"])):
                break
        behaviour = mpmath.log(tempered[1] / mpmath.fsum(tempered[i] for i in support))
        answers = key.answers(values)
        assert abs(answers["stored_logprob"] - stored) <= 1e-13 * abs(stored), student
        assert abs(answers["behaviour_logprob_token_1"] - behaviour) <= 1e-13 * abs(behaviour), student
        ratio = mpmath.exp(behaviour - stored)
        assert abs(answers["first_step_ratio"] - ratio) <= 1e-12 * ratio, student


def test_each_slip_is_named_in_drawn_variants():
    assert_slips_named(STEM, check.slips, DRAWS[:8])

def test_each_students_key_earns_full_marks_in_their_own_variant():
    assert_full_marks(STEM, STUDENTS)


def test_another_students_numbers_lose_points():
    pairs = list(zip(STUDENTS[:60], STUDENTS[60:120]))
    differing = assert_swapped_answers_lose(STEM, {
        "ratio": ("ratio_error", "stored_logprob", "behaviour_logprob_token_1", "first_step_ratio"),
        "metadata": ("behaviour_metadata",)}, pairs)
    assert differing >= len(pairs) - 2


def test_the_worked_solution_and_rubric_follow_the_variant_and_variant_0_reads_as_before():
    solution = solution_path(STEM).read_text(encoding="utf-8")
    rubric = rubric_path(STEM).read_text(encoding="utf-8")
    seed = fill(solution, STEM)
    for text in ("$\\operatorname{softmax}(z) \\approx (0.438669, 0.161377, 0.097880, 0.266066, 0.036008)$",
                 "running sums $0.721977$, then $0.894999 \\ge 0.85$", "nucleus is $\\{0, 1\\}$",
                 "e^{-1.643401 + 1.824011} = e^{0.180610} \\approx 1.197948",
                 "($0.533439 + 0.127839 = 0.661278$)", "\\approx 0.792 \\times 1.512 \\approx 1.198$"):
        assert text in seed, text
    assert "(here about +0.181, a first-step ratio of about 1.198 instead of 1)" in fill(rubric, STEM)
    for student, values in DRAWS[:20]:
        answers = key.answers(values)
        for text in (fill(solution, STEM, values), fill(rubric, STEM, values)):
            assert "{{" not in text
        assert f"{answers['first_step_ratio']:.6f}" in fill(solution, STEM, values)
    assert CHECKS[STEM].points == 2 and math.isfinite(key.FIRST_STEP_RATIO)
