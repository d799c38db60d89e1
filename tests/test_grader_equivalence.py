"""Equivalence: on honest submissions the batch grader gives the scores ``nbgrader autograde`` gives.

Real notebooks of the module (a few, to stay quick), a simulated class (solutions, untouched,
one wrong function), graded twice from identical copies: once by ``nbgrader autograde``, once by
``autograder grade``; every test cell's auto score must agree. Both sides import one frozen copy
of ``autograder`` and ``course`` (see :mod:`autograder.demo.compare`): the working tree is
shared and edited while the suite runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.authoring import scratch_course
from autograder.demo.compare import IN_KERNEL_CONFIG, compare, freeze_code, imported_from
from autograder.demo.simulate import answer_cells, write_class
from conftest import with_lazy_imports
from run_cache import released_course, writable_copy

STEMS = ["09_sequence_ppl", "15_stable_log_softmax"]


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    base = tmp_path_factory.mktemp("equivalence")
    stems = [s for s in STEMS if s in scratch_course.notebook_stems()]
    if len(stems) < 1:
        pytest.fail("the source notebooks for the equivalence test are missing")
    course = writable_copy(released_course(tmp_path_factory, stems), base / "nbgrader")
    first_code = next(gid for gid, kind in answer_cells(stems[-1], course) if kind == "code")
    write_class(course, {"ada": "solutions", "ben": "untouched",
                         "cai": f"solutions+wrong:{stems[-1]}:{first_code}"})
    ours = base / "ours"
    shutil.copytree(course, ours)
    with (course / "nbgrader_config.py").open("a") as config:
        # The course's config sends `nbgrader autograde` through the sandboxed grader too; this copy goes
        # back to nbgrader's own in-kernel chains, the behaviour we match.
        config.write(IN_KERNEL_CONFIG)
    code = base / "code"
    env = freeze_code(code)
    assert {Path(p).parent for p in imported_from(env, cwd=base).values()} == {code}
    theirs = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", scratch_course.ASSIGNMENT, "--force"],
                            cwd=course, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert theirs.returncode == 0, theirs.stdout
    env_path = str(Path(sys.executable).parent)
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", scratch_course.ASSIGNMENT, "--jobs", "2",
                           "--report", str(ours / "report.jsonl"), "--no-progress"], cwd=ours, text=True,
                          capture_output=True, env={"PATH": env_path + ":/usr/bin:/bin", "HOME": str(base),
                                                    "PYTHONPATH": with_lazy_imports(str(code))})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    (ours / "nbgrader.log").write_text(theirs.stdout)
    return course, ours


@pytest.mark.slow
def test_same_scores_as_nbgrader_autograde(courses):
    theirs, ours = (scratch_course.read_gradebook(path) for path in courses)
    assert set(theirs) == set(ours) == {"ada", "ben", "cai"}
    result = compare(courses[0], courses[1], nbgrader_log=(courses[1] / "nbgrader.log").read_text(),
                     report=courses[1] / "report.jsonl")
    assert result.differences == (), "\n".join(d.line() for d in result.differences)
    assert result.identical == result.notebooks > 0
    compared = 0
    for student, notebooks in theirs.items():
        for stem, score in notebooks.items():
            mine = ours[student][stem]
            assert mine.test_cells == score.test_cells, (student, stem)
            assert mine.needs_manual_grade == score.needs_manual_grade, (student, stem)
            compared += len(score.test_cells)
    assert compared > 0
    # The class is not uniform: the comparison saw full, zero and partial results.
    totals = {student: sum(n.auto_score or 0 for n in notebooks.values()) for student, notebooks in ours.items()}
    assert totals["ada"] > totals["cai"] > totals["ben"] == 0
