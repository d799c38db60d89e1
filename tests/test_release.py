"""The committed student release: in sync with the source, free of anything instructor-only, and runnable.

The leak scan reads every file under ``release/`` and looks for text that only the instructor has:
solution regions and hidden tests of the source notebooks, rubric sentences, answer-key values and
self-study worked solutions.
"""

from __future__ import annotations

import ast
import json
import time

import pytest

from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID

from autograder.assignment import ASSIGNMENTS, assignment_of
from autograder.authoring.release import check_release
from autograder.authoring.scratch_course import REPO_ROOT
from tests.leak_support import SECRET_KINDS, _solution_secrets, find_leaks, worked_numbers
from tests.leak_support import release_texts as _release_texts
from tests.nbrun_support import (  # noqa: I001
    HUB_STUDENT,
    HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END, all_present_stems, errors, in_pool, is_answer_cell,
    config, is_test_cell, nbgrader_meta, normalise, read, release_path, release_with_hidden_tests,
    stderr_text,
)

#: Every notebook of every assignment (``release/<assignment>/<stem>.ipynb``).
PRESENT = all_present_stems()
RELEASE_ROOT = REPO_ROOT / "release"
STUB_MESSAGE = "Replace this line with your code, then run the check cell below."


@pytest.mark.parametrize("kind", sorted(SECRET_KINDS))
def test_nothing_instructor_only_is_released(kind):
    texts = _release_texts()
    assert texts, "release/ is empty"
    leaks = find_leaks(SECRET_KINDS[kind](), texts)
    assert not leaks, "\n".join(f"{where}: {origin}: {snippet!r}" for where, origin, snippet in leaks[:30])


def test_no_notebook_prints_the_numbers_another_exercise_derives():
    """A release notebook never shows a number that another exercise's worked solution derives."""
    texts = {path.stem: path.read_text(encoding="utf-8") for path in RELEASE_ROOT.rglob("*.ipynb")}
    derived = worked_numbers()
    assert any(derived.values()), "no worked solution derives a number: the scan would be vacuous"
    leaks = [(stem, number, other) for stem, numbers in derived.items() for number in sorted(numbers)
             for other, text in texts.items() if other != stem and number in text]
    assert not leaks, leaks


def test_key_scan_finds_another_notebooks_answer_vector():
    """A graded vector printed in another notebook (12's 0.80 nucleus in a top-p task, say) is a leak."""
    planted = {"planted": normalise("np.testing.assert_allclose(at_080, [0.625, 0.375, 0.0, 0.0])")}
    assert find_leaks(SECRET_KINDS["answer keys"](), planted)


def test_leak_scan_finds_a_planted_secret():
    """The scan is not vacuous: a solution line or a hidden-test line pasted into a release text is found."""
    secrets = _solution_secrets()
    texts = _release_texts()
    for kind in ("solution", "hidden test"):
        origin, snippet = next((o, s) for o, s in secrets if kind in o)
        where = next(iter(texts))
        planted = dict(texts)
        planted[where] = texts[where] + " " + normalise("x = 1\n    " + snippet + "  \n")
        assert (where, origin, snippet) in find_leaks([(origin, snippet)], planted)


def test_release_holds_exactly_the_notebooks():
    files = sorted(p.relative_to(RELEASE_ROOT).as_posix() for p in RELEASE_ROOT.rglob("*") if p.is_file())
    assert files == sorted(f"{assignment_of(stem)}/{stem}.ipynb" for stem in PRESENT)
    assert {f.split("/")[0] for f in files} == set(ASSIGNMENTS)


@pytest.mark.parametrize("stem", PRESENT)
def test_released_cells_are_stubbed_and_checksummed(stem):
    nb = read(release_path(stem))
    text = json.dumps(nb)
    for marker in (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END):
        assert marker not in text
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        assert "checksum" in meta, cell.id
        if is_answer_cell(cell) and cell.cell_type == "code" and meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            assert cell.source == STUDENT_ID_CELL, cell.id  # released as written: an id to type, no stub
        elif is_answer_cell(cell) and cell.cell_type == "code":
            assert STUB_MESSAGE in cell.source, cell.id
        if is_test_cell(cell):
            ast.parse(cell.source)  # what is left after the hidden region still runs


# --------------------------------------------------------------------------- regeneration and kernels


@pytest.mark.slow
def test_committed_release_is_a_fresh_build():
    assert check_release() == []


def _run_release(stem: str) -> dict:
    """Run a released notebook, untouched, in its release folder, with its hidden tests restored.

    One kernel run serves two tests: the answer and check cells behave as the plain release (a test
    cell's hidden part only prints feedback and returns points), and nbgrader's inverted Validator
    reads the test cells' grades. (The release itself holds only each test cell's docstring, which
    nbgrader would count as a pass, so inverting the plain release would prove nothing.)
    """
    import os

    from nbgrader.validator import Validator

    validator = Validator(config=config())
    validator.invert = True
    validator.ignore_checksums = True
    os.chdir(release_path(stem).parent)  # a worker process runs one notebook at a time: the kernel starts here
    os.environ["JUPYTERHUB_USER"] = HUB_STUDENT  # a student on the course's hub (their numbers, no typed id)
    start = time.perf_counter()
    executed = validator._preprocess(release_with_hidden_tests(stem))  # what Validator.validate runs
    seconds = time.perf_counter() - start
    cells = [{"id": c.get("id"), "kind": _kind(c), "errors": errors(c), "stderr": stderr_text(c)}
             for c in executed.cells if c.cell_type == "code"]
    passed = [c.source[:80] for c in validator._get_passed_cells(executed)]
    return {"seconds": seconds, "cells": cells, "passed": passed}


def _kind(cell) -> str:
    if is_answer_cell(cell):
        return "answer"
    if is_test_cell(cell):
        return "test"
    return "check" if str(cell.get("id", "")).startswith("check") else "other"


@pytest.fixture(scope="module")
def release_runs():
    runs = in_pool(_run_release, PRESENT)
    print("\nuntouched release with hidden tests, seconds per notebook (kernel start included):")
    for stem, run in runs.items():
        print(f"  {stem}: {run['seconds']:.2f}")
    return runs


ALLOWED = {"answer": {"NotImplementedError"}, "check": {"NotImplementedError", "AssertionError", "OpenCheckFailed"},
           "test": set(), "other": set()}


@pytest.mark.slow
@pytest.mark.parametrize("stem", PRESENT)
def test_untouched_release_fails_only_at_the_stubs(stem, release_runs, record_property):
    run = release_runs[stem]
    record_property("seconds", round(run["seconds"], 2))
    bad = [(c["id"], c["errors"]) for c in run["cells"] if {e for e, _ in c["errors"]} - ALLOWED[c["kind"]]]
    assert not bad, bad
    # Concept stubs raise in the answer cell, coding stubs when the check cell calls them.
    stopped = [c["id"] for c in run["cells"] if c["kind"] in ("answer", "check")
               and any(e == "NotImplementedError" for e, _ in c["errors"])]
    assert stopped, "an untouched notebook should stop at its stubs"
    noisy = [(c["id"], c["stderr"][:200]) for c in run["cells"] if c["kind"] == "other" and c["stderr"]]
    assert not noisy, noisy


@pytest.mark.slow
@pytest.mark.parametrize("stem", PRESENT)
def test_stubs_fail_every_hidden_test(stem, release_runs):
    """nbgrader's inverted Validator on the release with its hidden tests back: no test cell passes."""
    assert release_runs[stem]["passed"] == []
