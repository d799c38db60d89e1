"""Plain nbgrader, end to end, in scratch copies of the course: release, simulated class, autograde, feedback,
for every assignment (``module6`` and ``module6_further``).

Two scratch courses are graded side by side (one kernel each, so at most two at a time): one with the
student who types in every solution plus a student with two wrong answers (only those notebooks
handed in), one with the student who hands in the release untouched.
"""

from __future__ import annotations

import concurrent.futures
import html
import re
import shutil

import pytest

from autograder.assignment import ASSIGNMENTS, TOTAL_POINTS
from autograder.checks import CHECKS, plan
from autograder.authoring.scratch_course import (
    generate_release, make_course_copy, notebook_points, read_gradebook, run_nbgrader,
)
from autograder.demo.simulate import defined_names, solution_text, write_class
from tests.nbrun_support import HIDDEN_BEGIN, HIDDEN_END, nbgrader_meta, present_stems, read, regions, source_path

pytestmark = pytest.mark.slow

#: ``assignment -> its notebooks``.
PRESENT = {assignment: present_stems(assignment) for assignment in ASSIGNMENTS}
#: Per assignment, one wrong answer cell per listed notebook (each cell's groups are known from the calls
#: its cases make): a concept and a coding notebook of the first assignment, four of the second.
WRONG = {
    "module6": [("09_sequence_ppl", "answer_fourth_token"), ("18_kl_estimators", "kl_sample_values")],
    "module6_further": [("22_kl_reward_vs_loss", "loss_gradients"), ("24_labels_and_shifting", "diagnose_labels"),
                        ("28_kl_across_response", "response_kl_weights"), ("29_clipping_and_gating", "cispo_loss")],
}
WRONG = {a: [(s, g) for s, g in pairs if s in PRESENT[a]] for a, pairs in WRONG.items()}
STEMS = [(a, s) for a in ASSIGNMENTS for s in PRESENT[a]]
WRONG_CELLS = [(a, s, g) for a in ASSIGNMENTS for s, g in WRONG[a]]


def _released_course(path):
    """A scratch course with every assignment released (and in its gradebook), nobody submitted yet."""
    course = make_course_copy(path)
    for assignment in ASSIGNMENTS:
        generate_release(course, assignment)
    return course


def _grade_course(course, students_by_assignment, feedback_for=None):
    """Submit, autograde (and optionally give feedback) for every assignment in a released scratch course."""
    result = {"course": course}
    for assignment, students in students_by_assignment.items():
        write_class(course, students, assignment)
        run = run_nbgrader(course, "autograde", assignment, "--force", check=False)
        entry = {"autograde": run, "scores": read_gradebook(course, sorted(students), assignment),
                 "points": notebook_points(course, assignment)}
        if feedback_for:
            entry["feedback"] = run_nbgrader(course, "generate_feedback", assignment, "--force",
                                             "--student", feedback_for, check=False)
        result[assignment] = entry
    return result


def _wrong_profile(assignment):
    wrong_stems = {s for s, _ in WRONG[assignment]}
    return "+".join(["solutions"] + [f"wrong:{s}:{g}" for s, g in WRONG[assignment]]
                    + [f"missing:{s}" for s in PRESENT[assignment] if s not in wrong_stems])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    # One release build serves both courses: the second is a copy made before anyone submits
    # (generate_assignment is the same for both, and costs as much as grading a small class).
    released = _released_course(root / "released")
    for name in ("a", "b"):
        shutil.copytree(released, root / name)
    jobs = {"with_solutions": (root / "a", {a: {"sol": "solutions", "wrong": _wrong_profile(a)} for a in ASSIGNMENTS},
                               "wrong"),
            "untouched": (root / "b", {a: {"untouched": "untouched"} for a in ASSIGNMENTS}, None)}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_grade_course, *args) for name, args in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    print("\nplain nbgrader autograde (one CLI call per course and assignment):")
    for assignment in ASSIGNMENTS:
        print(f"  {assignment}: 'sol' ({len(PRESENT[assignment])} notebooks) + 'wrong' ({len(WRONG[assignment])}): "
              f"{results['with_solutions'][assignment]['autograde'].seconds:.1f} s; "
              f"'untouched': {results['untouched'][assignment]['autograde'].seconds:.1f} s")
    return results


def test_autograde_ran_cleanly(graded):
    for name, result in graded.items():
        for assignment in ASSIGNMENTS:
            run = result[assignment]["autograde"]
            assert run.ok, f"{name} {assignment}:\n{run.output[-3000:]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_points_add_up(graded, assignment):
    points = graded["with_solutions"][assignment]["points"]
    assert sorted(points) == PRESENT[assignment]
    assert sum(auto + written for auto, written in points.values()) == pytest.approx(TOTAL_POINTS[assignment])


@pytest.mark.parametrize("assignment,stem", STEMS)
def test_solutions_get_every_autograded_point(graded, assignment, stem):
    entry = graded["with_solutions"][assignment]["scores"]["sol"][stem]
    auto_max = graded["with_solutions"][assignment]["points"][stem][0]
    assert entry.auto_score == pytest.approx(auto_max), entry.test_cells
    assert all(score is not None for score in entry.test_cells.values())


@pytest.mark.parametrize("assignment,stem", STEMS)
def test_untouched_gets_zero_and_every_cell_a_result(graded, assignment, stem):
    entry = graded["untouched"][assignment]["scores"]["untouched"][stem]
    assert entry.auto_score == 0
    assert entry.test_cells and all(score == 0 for score in entry.test_cells.values()), entry.test_cells


def _groups_calling(stem, names):
    return {group.grade_id for group in CHECKS[stem].groups
            if any(call.target in names for case in plan(stem, [group.name]) for call in case.calls)}


@pytest.mark.parametrize("assignment,stem,grade_id", WRONG_CELLS)
def test_one_wrong_answer_loses_only_its_points(graded, assignment, stem, grade_id):
    cell = next(c for c in read(source_path(stem)).cells if nbgrader_meta(c).get("grade_id") == grade_id)
    functions, values = defined_names(solution_text(cell.source))
    affected = _groups_calling(stem, set(functions) | set(values))
    assert affected, f"no check group calls what {grade_id} defines"
    entry = graded["with_solutions"][assignment]["scores"]["wrong"][stem]
    points = {g.grade_id: g.points for g in CHECKS[stem].groups}
    kept = {gid: score for gid, score in entry.test_cells.items() if gid not in affected}
    assert kept == {gid: pytest.approx(points[gid]) for gid in kept}, "groups that never call it keep full points"
    lost = sum(points[gid] - entry.test_cells[gid] for gid in affected)
    assert 0 < lost <= sum(points[gid] for gid in affected), entry.test_cells


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_never_shows_hidden_tests(graded, assignment):
    result = graded["with_solutions"][assignment]
    assert result["feedback"].ok, result["feedback"].output[-3000:]
    course = graded["with_solutions"]["course"]
    for stem, _ in WRONG[assignment]:
        hidden = [line.strip() for c in read(source_path(stem)).cells
                  for region in regions(c.source, HIDDEN_BEGIN, HIDDEN_END) for line in region.splitlines()
                  if line.strip()]
        # The scan is not vacuous: the source's hidden regions hold lines to look for.
        assert hidden, f"{stem} has no hidden test lines"
        page = (course / "feedback" / "wrong" / assignment / f"{stem}.html").read_text()
        # Code is syntax-highlighted token by token: compare the text a reader sees.
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        # The sandboxed grader (behind nbgrader autograde too) writes test cells from the judge's
        # verdicts: the autograded notebook the page is made from holds no hidden line either.
        autograded = (course / "autograded" / "wrong" / assignment / f"{stem}.ipynb").read_text()
        assert HIDDEN_BEGIN not in autograded and not [line for line in hidden if line in autograded]
        for marker in (HIDDEN_BEGIN, HIDDEN_END, "from autograder.checks import grade", f'grade("{stem}"'):
            assert marker not in text
        assert not [line for line in hidden if line in text]
