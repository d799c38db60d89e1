"""Hidden inputs of the coding exercises, drawn per student from the course secret (issue 25).

Each coding check's ``build_cases(variant)`` draws its random cases from ``variant.seed(<its own seed>)``:
the checks' own seeds without a secret (variant 0), a seed mixed from the course secret, the exercise
and the student otherwise (:func:`autograder.variants.hidden_number`). What this file holds to:

* under every drawn variant the notebook's own solution earns full marks and every wrong answer of the
  exercise's corpus (``WRONG`` of its ``tests/test_checks_exNN_*.py``) still loses points. These are
  exercises 15-25, 28, 29 and 30: 26 has no random hidden input, and 27's random cases are not drawn per
  student yet (its kept and clipped statistics would first need a clearance from their bounds);
* two students of one course get different hidden inputs in every check, one student the same ones
  each time, and another course secret gives the same student others;
* without a secret every student's cases are today's, pinned below by value;
* through ``autograder grade``: the course gets its secret file (0600, ignored by git, never copied
  into ``autograded/`` or ``feedback/``), and a new secret grades unchanged submissions again.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from autograder.checks import CHECKS, run_check
from autograder.checks._core import judge_cases, perform_cases
from autograder.variants import SECRET_FILE, variant_for
from check_support import namespace_from, run_cells, source_notebook

ROOT = Path(__file__).resolve().parents[1]

#: The coding exercises whose hidden inputs are drawn per student, and the value-digest of their cases
#: in variant 0 (the checks' own seeds), taken from the checks as they were before they varied: the
#: cases of every student graded without a secret. A change here changes what every such student is
#: graded on; it is never a side effect.
VARIANT_ZERO = {
    "15_stable_log_softmax": "777f06373bcbcdfc4c4281f97ed68999f8720fdf5030abb6604b7ffab757c9c5",
    "16_causal_shift": "c256162f8259388ad13a09184c596550b233f024130f51ee0170d38c7628259f",
    "17_sequence_metrics": "32e76f539ac826a31c19ffccd7fe7fe37aec6f15f3ebf20c75dd3df7383a20cc",
    "18_kl_estimators": "b0bd919f72d54ab9542349884db418081424066fd8d98823f630ada01c3e1510",
    "19_sampling_transforms": "589a807e79115aff706e5b06f9c3ff878c64b3a98564988418de7cc7ae791517",
    "20_rollout_validation": "1d74064f1b3f8c8c44b8fe2a0182835d432eb0d47d38893fc17b0216e7b90ac5",
    "21_sampler_trainer_mismatch": "bdd02ff3d382544250be54cd6f62e79217644549691ed2874339456c91609a05",
    "22_kl_reward_vs_loss": "76b47f4173949a52c46a1859f6acc3c77a7e5843b673fdef774dbd63a930d2ff",
    "23_loss_aggregation": "2f5cebb59132a7a041bfadd7693c8d547dd461c585c3699725aa94be4f90a7ba",
    "24_labels_and_shifting": "ecdffcc7b006672ee85f14fe39d449a3441ec974a986081101a9e941c88eaa56",
    "25_logprob_precision": "435cd6d746b5ddad27550cf6a604bfb2194286ab79c0bfb8ee6589125758abb9",
    "28_kl_across_response": "3f436da70ed8bf98ee867a93a60372fc399d96e15306b02e3ef76276d2ea38be",
    # drawn per student from the start: its digest is that of its first cases; changed by the outside test of 29
    # (an eps_high = 0 case, NaN parameters, -inf padding, a negative advantage on an unpadded response)
    "29_clipping_and_gating": "63e60b18b45b6a3e6f969420747103428ca9484a658d1cdef0be03b75d255fdd",
    "30_asynchronous_rollouts": "23ca6fdfdf0d65f0473b367edb80c90c971a83972b6504a323a208cd0715feae",
}
STEMS = tuple(VARIANT_ZERO)

#: Twenty (secret, student) pairs: four courses of five students.
SECRETS = tuple(hashlib.sha256(f"course {n}".encode()).digest() for n in range(4))
PAIRS = tuple((secret, f"s{m}") for secret in SECRETS for m in range(5))
#: Exercises whose cases cost seconds to build (28 computes every wrong answer's gradients per tree):
#: graded under fewer of the pairs (one per course and then some), to keep this file near a minute.
FEWER_PAIRS = {"28_kl_across_response": PAIRS[::4] + PAIRS[1:2]}


# --------------------------------------------------------------------------- helpers


def _canonical(value):
    """A value as plain, exactly comparable data (arrays by dtype, shape and bytes; floats by their hex)."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ["object-array", list(value.shape), [_canonical(item) for item in value.ravel().tolist()]]
        return ["array", value.dtype.str, list(value.shape), hashlib.sha256(value.tobytes()).hexdigest()]
    if isinstance(value, np.generic):
        return _canonical(value.item()) + [type(value).__name__]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canonical(item) for item in value]]
    if isinstance(value, dict):
        return ["dict", [[_canonical(key), _canonical(item)] for key, item in value.items()]]
    return [type(value).__name__, repr(value)]


def _case_inputs(cases) -> dict:
    """``case name -> its group and calls``, compared by value."""
    return {case.name: json.dumps([case.group, [[call.target, call.read_only, _canonical(tuple(call.args)),
                                                 _canonical(dict(call.kwargs))] for call in case.calls]])
            for case in cases}


def _digest(cases) -> str:
    return hashlib.sha256(json.dumps(_case_inputs(cases), sort_keys=True).encode()).hexdigest()


def _fresh_cases(stem: str, variant) -> tuple:
    """The cases of ``variant`` built anew by the exercise's own ``build_cases`` (no cache in between)."""
    module = importlib.import_module(f"autograder.exercises.{stem}.check")
    return tuple(module.build_cases(variant))


def _corpus(stem: str):
    """The exercise's test class (its ``wrong`` answers), from its ``tests/test_checks_exNN_*.py``."""
    (path,) = (ROOT / "tests").glob(f"test_checks_ex{stem[:2]}_*.py")
    module = importlib.import_module(path.stem)
    (found,) = [value for name, value in vars(module).items()
                if inspect.isclass(value) and name.startswith("Test") and getattr(value, "stem", None) == stem]
    return found


# --------------------------------------------------------------------------- (a) every variant grades fairly


def _failing_on_their_own(result) -> set:
    """The cases of ``result`` that failed on their own verdict (not withheld by a gate)."""
    return {case.name for case in result.cases if not case.passed and not case.withheld}


@pytest.mark.parametrize("stem", STEMS)
def test_each_variant_gives_the_solution_full_marks_and_every_wrong_answer_less(stem):
    """Under each of twenty variants (five for 28, see FEWER_PAIRS): the notebook's solution earns every
    point, and each wrong answer of the corpus fails at least one case on that case's own verdict (so it
    loses points there).

    A wrong answer is first graded in variant 0. In another variant, a case it failed there whose
    inputs are the same (a hand-made case) fails again: the same calls, judged by the same judge. A
    case it failed whose inputs moved is run again in that variant; only when none of them fails does
    the whole check run there (which must then cost points all the same)."""
    full = CHECKS[stem].points
    solution = run_cells(source_notebook(stem))
    zero = _case_inputs(CHECKS[stem].cases())
    wrong = {label: namespace_from(entry[0]) for label, entry in _corpus(stem).wrong.items()}
    failed = {}
    for label, namespace in wrong.items():
        result = run_check(stem, dict(namespace), variant=variant_for(stem))
        assert result.points_earned < full, (label, result.feedback())
        failed[label] = _failing_on_their_own(result)
        assert failed[label], (label, result.feedback())  # it must not lose points to a gate alone

    moved_anywhere = set()
    for secret, student in FEWER_PAIRS.get(stem, PAIRS):
        variant = variant_for(stem, student, secret)
        check = CHECKS[stem].at(variant)
        inputs = _case_inputs(check.cases())
        moved = {name for name, value in inputs.items() if zero[name] != value}
        moved_anywhere |= moved
        result = run_check(stem, dict(solution), variant=variant)
        assert result.points_earned == full, (student, result.feedback())
        for label, namespace in wrong.items():
            if failed[label] - moved:
                continue  # a hand-made case it fails
            again = [case for case in check.cases() if case.name in failed[label]]
            outcomes = perform_cases(again, dict(namespace))
            judged = judge_cases(check, outcomes, sorted({case.group for case in again}))
            if _failing_on_their_own(judged) & failed[label]:
                continue
            result = run_check(stem, dict(namespace), variant=variant)
            assert result.points_earned < full, (label, student, result.feedback())
    assert moved_anywhere, f"{stem}: no hidden input varies"


@pytest.mark.parametrize("stem", STEMS)
def test_every_correct_answer_of_the_corpus_passes_each_students_hidden_inputs(stem):
    """The corpus's other correct answers (``CORRECT``: tolerances, float32 casts, other orders of
    operations) pass every case whose inputs moved, in two variants (two courses). They earn full marks in
    variant 0 (their own tests), and a case whose inputs did not move is judged as there; a gate or a
    cap can only take points where a case fails on its own verdict, so that is full marks."""
    zero = _case_inputs(CHECKS[stem].cases())
    answers = {label: namespace_from(source) for label, source in _corpus(stem).correct.items()}
    for secret, student in PAIRS[::10]:
        check = CHECKS[stem].at(variant_for(stem, student, secret))
        inputs = _case_inputs(check.cases())
        moved = [case for case in check.cases() if inputs[case.name] != zero[case.name]]
        assert moved, (stem, student)
        groups = sorted({case.group for case in moved})
        for label, namespace in answers.items():
            judged = judge_cases(check, perform_cases(moved, dict(namespace)), groups)
            failed = _failing_on_their_own(judged) & {case.name for case in moved}
            assert not failed, (label, student, sorted(failed), judged.feedback())


# --------------------------------------------------------------------------- (b) whose inputs are whose


@pytest.mark.parametrize("stem", STEMS)
def test_two_students_get_different_hidden_inputs_and_one_student_the_same_twice(stem):
    secret, other_secret = SECRETS[:2]
    ann, bob = variant_for(stem, "ann", secret), variant_for(stem, "bob", secret)
    assert CHECKS[stem].varies
    ann_cases = _case_inputs(_fresh_cases(stem, ann))
    assert ann_cases == _case_inputs(_fresh_cases(stem, variant_for(stem, "ann", secret)))
    bob_cases = _case_inputs(_fresh_cases(stem, bob))
    assert set(ann_cases) == set(bob_cases)  # the same cases (names, groups), other inputs
    assert any(ann_cases[name] != bob_cases[name] for name in ann_cases), stem
    elsewhere = _case_inputs(_fresh_cases(stem, variant_for(stem, "ann", other_secret)))
    assert any(ann_cases[name] != elsewhere[name] for name in ann_cases), stem
    # The random cases move together: no student shares a random case with another, while the
    # hand-made ones (the spec) are every student's.
    zero = _case_inputs(CHECKS[stem].cases())
    moved = {name for name in zero if ann_cases[name] != zero[name]}
    assert moved and all(ann_cases[name] != bob_cases[name] for name in moved), stem


def test_the_grader_hands_each_student_their_own_bound_cases():
    """``check.at(variant)`` (what ``plan``/``judge`` use) is the fresh build of that student's cases."""
    stem = "17_sequence_metrics"
    for secret, student in PAIRS[:3]:
        variant = variant_for(stem, student, secret)
        assert _digest(CHECKS[stem].at(variant).cases()) == _digest(_fresh_cases(stem, variant))


# --------------------------------------------------------------------------- (c) no secret: today's cases


@pytest.mark.parametrize("stem", STEMS)
def test_without_a_secret_every_student_gets_todays_cases(stem):
    assert _digest(CHECKS[stem].cases()) == VARIANT_ZERO[stem]
    for student in (None, "ann", "s1"):
        variant = variant_for(stem, student)
        assert variant.hidden is None and variant.seed(1234) == 1234
        assert _digest(_fresh_cases(stem, variant)) == VARIANT_ZERO[stem], student


# --------------------------------------------------------------------------- end to end: autograder grade


def _grade(course: Path, capsys) -> str:
    """``autograder grade toy`` on the toy course (its check registered in this process, as in
    tests/test_grader_cli.py), through the command line's own entry point; returns what it printed."""
    from autograder.cli import main
    assert main(["grade", "toy", "--course-dir", str(course), "--jobs", "1", "--no-progress",
                 "--report", str(course / "report.jsonl")]) == 0
    return capsys.readouterr().out


def test_autograder_grade_makes_the_secret_keeps_it_home_and_regrades_when_it_changes(tmp_path, monkeypatch, capsys):
    from hostile import toy

    monkeypatch.delenv("MODULE6_VARIANT_SECRET", raising=False)
    course = toy.copy_course(toy.template(), tmp_path / "course")
    toy.submit(course, "ann", toy.honest_answers())
    toy.submit(course, "bob", toy.honest_answers())
    secret_file = course / SECRET_FILE
    assert not secret_file.exists()

    assert "graded 2 notebooks" in _grade(course, capsys)
    assert secret_file.is_file() and not secret_file.is_symlink()
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    secret = bytes.fromhex(secret_file.read_text().strip())
    assert len(secret) == 32
    rows = [json.loads(line) for line in (course / "report.jsonl").read_text().splitlines()]
    assert {row["score"] for row in rows if row["grade_id"].startswith("test_")} == {2.0, 1.0}

    # Ignored by git: the course directory is the repository's root, whose .gitignore names the file.
    assert f"/{SECRET_FILE}" in (ROOT / ".gitignore").read_text().splitlines()
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", SECRET_FILE], capture_output=True)
    assert ignored.returncode == 0
    # Never copied out of the course directory's root, and nothing the grader wrote quotes it.
    assert any((course / "autograded").rglob("*.ipynb")) and any((course / "feedback").rglob("*.html"))
    for folder in ("autograded", "feedback", "submitted"):
        for path in (course / folder).rglob("*"):
            assert path.name != SECRET_FILE, path
            if path.is_file():
                assert secret.hex().encode() not in path.read_bytes(), path

    # The same secret: nothing to grade again. Another secret: every student's hidden inputs change, so
    # the unchanged submissions are graded again (the batch's digest includes the task options).
    assert "graded 0 notebooks (2 unchanged" in _grade(course, capsys)
    secret_file.unlink()
    assert "graded 2 notebooks (0 unchanged" in _grade(course, capsys)
    assert bytes.fromhex(secret_file.read_text().strip()) != secret
