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
#: graded on; it is never a side effect. The pin reads every float to ten significant digits
#: (:func:`_pinned`): NumPy's vectorised log and exp differ in the last ulp between processors (AVX-512
#: against AVX2), and 17's and 25's cases are logs of drawn numbers, so a digest of their exact bits is
#: a digest of the processor. Within one run every comparison stays exact (:func:`_digest`).
VARIANT_ZERO = {
    "15_stable_log_softmax": "903a7e3884c74f7e1e5e4f015f159088d534ae3036c6cf5985f61757de5dcf34",
    "16_causal_shift": "ab6bc39aa72ca5327bc1cb44607407752f9fe97c4d86e4e55c8e64cd2ed3e9f9",
    "17_sequence_metrics": "9f0315533214f2a4badf4beac3fc94b7b0b9dc70ea424427fc12ba77386c6552",
    "18_kl_estimators": "03d7e22d452048c7e25641e75b0a54e95473cdde31c0d52a42efbf4d92e4c4ba",
    "19_sampling_transforms": "279b682750e77733d60a979cd0dbee2e6fae522de20de37e9b2ee44f00ee2292",
    "20_rollout_validation": "f8ccf5823d270fdce2b0db372a53b723bf352ebfe76197a2d004686d6195562c",
    "21_sampler_trainer_mismatch": "29b3baa5526eb2aad0e3d475e52b17e0f6611f392c6f7f879fd11613f76bc76e",
    "22_kl_reward_vs_loss": "e3359119991451d1e109b939c0771277bc273d4d5e40965baadf1df37d55a311",
    "23_loss_aggregation": "861409c4ab877d9350395e0c2171b3650feadebb4f69c7e5bdbdaf352402aed2",
    "24_labels_and_shifting": "762a124052525cda0c96e5c93aeffa61ff6ea96ecec43b249bde7bd56fe8faca",
    "25_logprob_precision": "dfa329232b4a16fdf6426c1cf4651abd763723397cad4e7db3a59f91384df80d",
    "28_kl_across_response": "f40f3a9370e055a80d6f95c1dc043e1da176dfedd784cd2565d3e2ae0e82e6c4",
    # drawn per student from the start: its digest is that of its first cases; changed by the outside test of 29
    # (an eps_high = 0 case, NaN parameters, -inf padding, a negative advantage on an unpadded response)
    "29_clipping_and_gating": "5c842daf78a3f799ac8abfd805b7f3aeef3ec4ea30dd85688dc297f59eb89f5b",
    "30_asynchronous_rollouts": "0d600366796207a2dd64a9ba76b3b66c8a316f15efd8ad6da3afed8b72ac8547",
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


def _rounded_inputs(cases) -> dict:
    """:func:`_case_inputs` with :func:`_rounded` values."""
    return {case.name: json.dumps([case.group, [[call.target, call.read_only, _rounded(tuple(call.args)),
                                                 _rounded(dict(call.kwargs))] for call in case.calls]])
            for case in cases}


def _digest(cases) -> str:
    """Every input's exact bits: for comparisons within one run, on one processor."""
    return hashlib.sha256(json.dumps(_case_inputs(cases), sort_keys=True).encode()).hexdigest()


def _rounded(value):
    """``value`` as :func:`_canonical` gives it, with every float (alone or in an array) to ten
    significant digits: two processors whose libm or SIMD differ by an ulp give the same text (a value
    within an ulp of a rounding boundary is one in 10**6), a different draw does not."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        text = " ".join(f"{item:.9e}" for item in value.ravel().tolist())
        return ["array", value.dtype.str, list(value.shape), hashlib.sha256(text.encode()).hexdigest()]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return ["object-array", list(value.shape), [_rounded(item) for item in value.ravel().tolist()]]
    if isinstance(value, np.generic):
        return _rounded(value.item()) + [type(value).__name__]
    if isinstance(value, float):
        return ["float", f"{value:.9e}"]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_rounded(item) for item in value]]
    if isinstance(value, dict):
        return ["dict", [[_rounded(key), _rounded(item)] for key, item in value.items()]]
    return [type(value).__name__, repr(value)]


def _pinned(cases) -> str:
    """The digest :data:`VARIANT_ZERO` pins: names, groups, types, shapes and exact non-float inputs,
    floats to ten significant digits."""
    return hashlib.sha256(json.dumps(_rounded_inputs(cases), sort_keys=True).encode()).hexdigest()


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
    todays = CHECKS[stem].cases()
    assert _pinned(todays) == VARIANT_ZERO[stem]
    for student in (None, "ann", "s1"):
        variant = variant_for(stem, student)
        assert variant.hidden is None and variant.seed(1234) == 1234
        assert _digest(_fresh_cases(stem, variant)) == _digest(todays), student


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
