"""``autograder variants`` and the report's answers that fit another student's numbers, in-process.

Exercise 09 is the real family; a second exercise, where a test needs one, is a toy family (and its
key and check) registered for the test only. The end-to-end run through ``autograder grade`` is in
``tests/test_variants_pipeline.py``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from autograder.assignment import COURSE_ID
from autograder import checks, exercises, variant_listing, variants
from autograder.channel import encode_value
from autograder.checks._concept_answers import number_case
from autograder.checks._core import ExerciseCheck, Group
from autograder.insight import report as class_report
from autograder.insight import variant_matches as matching
from course import variants as registry

STEM = "09_sequence_ppl"
TOY = "98_toy_numbers"


def _stored(answers: dict, typed: str | None = None) -> matching.Stored:
    """What the worker stores: the channel encoding of each value a test cell read."""
    return matching.Stored({name: encode_value(value) for name, value in answers.items()}, typed)


@pytest.fixture
def toy_family(monkeypatch):
    """A second exercise with numbers: ``a`` drawn from 2..900, answers ``twice`` = 2a and ``square`` = a^2."""
    family = registry.Family(TOY, {"a": 3}, lambda d: {"a": d.integer(2, 900)}, lambda p: [("a", str(p["a"]))])
    monkeypatch.setitem(registry.families(), TOY, family)

    def key(parameters):
        return {"twice": 2.0 * parameters["a"], "square": float(parameters["a"]) ** 2}

    def build_cases(variant):
        expected = key(variant.parameters)
        return [number_case("twice a", "numbers", "twice", expected["twice"]),
                number_case("a squared", "numbers", "square", expected["square"])]

    real = exercises.answers_for
    monkeypatch.setattr(exercises, "answers_for",
                        lambda stem, student=None, course_term=None: key(registry.parameters(stem, student, course_term))
                        if stem == TOY else real(stem, student, course_term))
    checks.CHECKS.register(ExerciseCheck(TOY, [Group("numbers", 1, "Two numbers")], build_cases))
    yield key
    del checks.CHECKS._names()[TOY]
    dict.__delitem__(checks.CHECKS, TOY)


def _key(stem, student):
    return exercises.answers_for(stem, student)


# --------------------------------------------------------------------------- finding matches


def test_copied_answers_name_the_pair_and_the_fitting_values():
    ids = [f"s{i}" for i in range(40)]
    stored = {(s, STEM): _stored(_key(STEM, s)) for s in ids}
    stored[("s1", STEM)] = _stored(_key(STEM, "s2"))  # s1 hands in s2's answers
    stored[("s3", STEM)] = _stored(_key(STEM, None))  # s3 the example numbers' answers
    (copied, example) = sorted(matching.find_matches(stored, ids, [STEM]), key=lambda m: m.source is None)
    assert (copied.student, copied.source, example.student, example.source) == ("s1", "s2", "s3", None)
    (fit,) = copied.exercises
    planned = [case.name for case in checks.plan(STEM)]
    assert fit.stem == STEM and list(fit.fitting) == planned  # every value fits s2's numbers
    assert (fit.own_points, fit.source_points, fit.available) == (0.0, 2.5, 2.5)
    assert copied.enrolled and not copied.typed and not copied.also
    # s2, whose answers were copied, fits their own numbers: never listed.
    assert all(m.student != "s2" for m in matching.find_matches(stored, ids, [STEM]))


def test_a_lone_value_is_not_listed_but_two_over_two_exercises_are(toy_family):
    ids = [f"s{i}" for i in range(40)]
    own = {s: _key(STEM, s) for s in ids}
    stored = {(s, STEM): _stored(own[s]) for s in ids} | {(s, TOY): _stored(toy_family(registry.parameters(TOY, s)))
                                                          for s in ids}
    # s5: one value of s6's in 09 only (a slip can land on a classmate's number): not listed.
    stored[("s5", STEM)] = _stored({**own["s5"], "mean_nll": own["s6"]["mean_nll"]})
    assert not matching.find_matches(stored, ids, [STEM, TOY])
    # ... and one of s6's in the toy exercise too: two values of the same classmate, in two exercises.
    theirs = toy_family(registry.parameters(TOY, "s6"))
    assert theirs["twice"] != toy_family(registry.parameters(TOY, "s5"))["twice"]
    stored[("s5", TOY)] = _stored({**toy_family(registry.parameters(TOY, "s5")), "twice": theirs["twice"]})
    (match,) = matching.find_matches(stored, ids, [STEM, TOY])
    assert (match.student, match.source, match.stems, match.values) == ("s5", "s6", (STEM, TOY), 2)
    assert [fit.fitting for fit in match.exercises] == [("mean negative log-probability of the three tokens",),
                                                        ("twice a",)]


def test_the_notebooks_typed_id_is_a_source_even_outside_the_class():
    ids = ["ann", "ben"]
    stored = {("ann", STEM): _stored(_key(STEM, "ann")),
              ("ben", STEM): _stored(_key(STEM, "bem"), typed="bem")}  # a typo'd id, nobody's
    (match,) = matching.find_matches(stored, ids, [STEM])
    assert (match.student, match.source, match.typed, match.enrolled) == ("ben", "bem", True, False)


def test_candidates_stay_near_linear(monkeypatch):
    """One judgement per notebook, plus the few candidates that wrong values hit: not one per classmate."""
    ids = [f"s{i}" for i in range(400)]
    stored = {(s, STEM): _stored(_key(STEM, s)) for s in ids}
    stored[("s7", STEM)] = _stored(_key(STEM, "s8"))
    stored[("s9", STEM)] = _stored({name: value * 1.37 for name, value in _key(STEM, "s9").items()})  # all wrong
    calls = []
    real = matching._judge
    monkeypatch.setattr(matching, "_judge", lambda *a: calls.append(a[2]) or real(*a))
    found = matching.find_matches(stored, ids, [STEM])
    assert [(m.student, m.source) for m in found if "s8" in (m.source, *m.also)] == [("s7", m.source)
                                                                                  for m in found if m.student == "s7"]
    assert len(ids) <= len(calls) <= len(ids) + 20, len(calls)


def test_values_that_cannot_be_read_back_are_no_evidence():
    good = _stored(_key(STEM, "s2"))
    broken = matching.Stored({**good.answers, "mean_nll": {"type": "no such node"}})
    (match,) = matching.find_matches({("s1", STEM): broken}, ["s1", "s2"], [STEM])
    assert match.source == "s2" and match.values == 4


def test_fingerprint_lookups_cover_the_checks_tolerance():
    from autograder.checks._concept_answers import NUMBER_RTOL

    for value in (-2.0024805005437076, 1e-3, 7.5, 1.0):
        for factor in (1 - NUMBER_RTOL, 1 + NUMBER_RTOL):
            assert matching.fingerprint(value) in matching.lookups(value * factor), (value, factor)
    assert matching.fingerprint(0.0) in matching.lookups(5e-10)
    assert matching.fingerprint(frozenset({"Hidden state", "b"})) == matching.fingerprint(["b", "hidden_state"])


def test_report_sections_escape_ids():
    rows = [{"student": name, "notebook": STEM, "grade_id": "test_three_tokens", "score": 0.0, "max_score": 1.5,
             "status": "graded", "feedback": "", "misconceptions": []} for name in ("<b>x</b>", "y&z")]
    fit = matching.ExerciseFit(STEM, ("perplexity of the three tokens", "<i>case</i>"), 5, 0.0, 2.5, 2.5)
    report = dataclasses.replace(class_report.summarise(rows, "module6"), matches=(
        matching.VariantMatch("<b>x</b>", "y&z", (fit, fit)), matching.VariantMatch("y&z", None, (fit,))))
    page = class_report.render_html(report)
    section = page.split("id='other-numbers'", 1)[1].split("<h2", 1)[0]
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in section and "y&amp;z" in section
    assert "&lt;i&gt;case&lt;/i&gt;" in section and "example numbers" in section


# --------------------------------------------------------------------------- autograder variants


@pytest.fixture
def course_dir(tmp_path):
    shutil.copyfile(variants.__file__.replace("autograder/variants.py", "nbgrader_config.py"),
                    tmp_path / "nbgrader_config.py")
    return tmp_path


#: The context of the kit's own course before any release: its course id and the config's empty term.
KIT_CONTEXT = registry.CourseTerm(COURSE_ID, "")


def test_variants_json_and_table(course_dir, capsys):
    from autograder.cli import main

    assert main(["variants", "module6", "--student", "ada", "--json", "--course-dir", str(course_dir)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == json.loads(json.dumps(variant_listing.describe("module6", "ada", course_term=KIT_CONTEXT)))
    assert STEM in json.loads(out) and "no gradebook" in err
    # Nothing is released in this course yet: the listing says the numbers are the configured course's.
    assert "not released yet" in err and repr(COURSE_ID) in err
    assert main(["variants", "module6", "--student", "ada", "--course-dir", str(course_dir)]) == 0
    table = capsys.readouterr().out
    assert "student 'ada'" in table and STEM in table and f"course {COURSE_ID!r}, term ''" in table
    for name, value in exercises.answers_for(STEM, "ada", KIT_CONTEXT).items():
        assert f"{name}  " in table and repr(value) in table
    assert all(f"parameter  {name}" in table for name in registry.parameters(STEM, "ada", KIT_CONTEXT))


def test_variants_label_the_key_as_the_key_not_as_the_students_answers(course_dir, capsys):
    """The expected answers are computed for the student's numbers: the listing must not read as the student's
    own answers (issue 33, F12)."""
    from autograder.cli import main

    assert main(["variants", "module6", "--student", "ada", "--course-dir", str(course_dir)]) == 0
    table = capsys.readouterr().out
    heading, note = table.splitlines()[:2]
    assert "answers the grader expects" in heading and "Numbers and answers of student" not in table
    assert "answer key" in note and "not the student's answers" in note
    rows = [line.split()[0] for line in table.splitlines() if line.startswith("  ") and len(line.split()) > 2]
    assert {"parameter", "expected"} <= set(rows) and "answer" not in rows
    for name, value in exercises.answers_for(STEM, "ada", KIT_CONTEXT).items():
        assert any(line.split()[:2] == ["expected", name] and repr(value) in line for line in table.splitlines())


@pytest.mark.parametrize("argv,message", [
    (["variants", "nope", "--student", "ada"], "ASSIGNMENT should be one of module6, module6_further, not 'nope'"),
    (["variants", "module6", "--student", "a b"], "--student = 'a b' is not a student id"),
    (["variants", "module6", "--student", ""], "--student should name a student id"),
])
def test_variants_bad_arguments(course_dir, capsys, argv, message):
    from autograder.cli import main

    assert main(argv + ["--course-dir", str(course_dir)]) == 2
    assert message in capsys.readouterr().err


def test_variants_outside_a_course(tmp_path, capsys):
    from autograder.cli import main

    assert main(["variants", "module6", "--student", "ada", "--course-dir", str(tmp_path)]) == 2
    assert "not a course directory" in capsys.readouterr().err
