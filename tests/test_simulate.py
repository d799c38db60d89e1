"""The simulated class: profiles parse strictly, wrong answers stay runnable but wrong, output is deterministic."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from autograder.authoring.scratch_course import REPO_ROOT, make_course_copy, release_dir
from autograder.demo.simulate import (Profile, answer_cells, default_class, defined_names, exercise_code_answers,
                                      solution_text, write_class, wrong_version)
from tests.nbrun_support import present_stems


def test_profile_parsing():
    assert Profile.parse("untouched") == Profile(base="untouched")
    p = Profile.parse("wrong:15_a:f+crash:16_b+missing:17_c+untouched:18_d")
    assert p.base == "solutions" and p.wrong == (("15_a", "f"),) and p.crash == ("16_b",)
    assert p.missing == ("17_c",) and p.untouched == ("18_d",)
    for bad in ["", "wrong:15_a", "sideways", "crash:a:b"]:
        with pytest.raises(ValueError):
            Profile.parse(bad)


@pytest.mark.skipif("05_negative_kl" not in present_stems(), reason="no notebook that varies yet")
def test_a_wrong_answer_is_put_in_an_exercise_answer_not_in_the_typed_id():
    """A notebook that varies has the typed-id cell first among its code answers; a simulated wrong
    answer there would be a wrong id (its own mistake, stopped at the desk), not a wrong answer."""
    ids = [grade_id for grade_id, kind in answer_cells("05_negative_kl", REPO_ROOT) if kind == "code"]
    assert ids[0] == "student_id"
    assert exercise_code_answers("05_negative_kl", REPO_ROOT) == ids[1:] != []
    wrong = [part for profile in default_class(REPO_ROOT).values() for part in profile.split("+")
             if part.startswith("wrong:")]
    assert wrong and not any(part.endswith(":student_id") for part in wrong)


def test_solution_text_drops_only_markers():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"
    assert solution_text(source) == "def f(x):\n    return x"
    assert defined_names("def f(x):\n    return x\nA = 1\n_b = 2\nc, d = 3, 4") == (("f",), ("A", "c", "d"))


def test_wrong_version_runs_and_changes_every_result():
    code = ("import numpy as np\nfrom dataclasses import dataclass\n"
            "@dataclass(frozen=True)\nclass R:\n    n: int\n    x: np.ndarray\n"
            "def probs(z):\n    return np.full(3, 1 / 3)\n"
            "def record(k):\n    return R(k, np.arange(3.0))\n"
            "flag = True\nlabel = 'eos'\nvalue = 0.25\nmapping = {'a': 1.5, 'b': False}")
    space: dict = {}
    exec(wrong_version(code), space)  # noqa: S102 -- our own generated test code
    assert np.array_equal(space["probs"](0), np.zeros(3))
    r = space["record"](2)
    assert r.n == 3 and np.array_equal(r.x, np.zeros(3))
    assert space["flag"] is False and space["label"] != "eos" and space["value"] != 0.25
    assert space["mapping"] == {"a": 0.0, "b": True}


@pytest.mark.skipif(not present_stems(), reason="no notebooks yet")
def test_same_profiles_give_identical_submissions(tmp_path):
    stems = present_stems()
    coding = next((s for s in stems if int(s[:2]) >= 15), stems[-1])
    grade_id = next(g for g, kind in answer_cells(coding, REPO_ROOT) if kind == "code")
    students = {"a": "solutions", "b": "untouched", "c": f"wrong:{coding}:{grade_id}+missing:{stems[0]}"}
    outputs = []
    for name in ("one", "two"):
        course = make_course_copy(tmp_path / name)
        shutil.copytree(release_dir(REPO_ROOT), release_dir(course))
        write_class(course, students)
        outputs.append({p.relative_to(course).as_posix(): p.read_bytes()
                        for p in sorted((course / "submitted").rglob("*")) if p.is_file()})
    assert outputs[0] == outputs[1]
    assert f"submitted/c/module6/{stems[0]}.ipynb" not in outputs[0]
    assert outputs[0]["submitted/a/module6/timestamp.txt"] != outputs[0]["submitted/b/module6/timestamp.txt"]
    released = (release_dir(REPO_ROOT) / f"{coding}.ipynb").read_bytes()
    assert outputs[0][f"submitted/b/module6/{coding}.ipynb"] == released
    assert outputs[0][f"submitted/a/module6/{coding}.ipynb"] != released
