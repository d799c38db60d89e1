"""Plain nbgrader, end to end, in scratch copies of the course: release, simulated class, autograde, feedback.

Two scratch courses are graded side by side (one kernel each, so at most two at a time): one with the
student who types in every solution plus a student with two wrong answers (only those notebooks
handed in), one with the student who hands in the release untouched.
"""

from __future__ import annotations

import concurrent.futures
import html
import re

import pytest

from autograder.checks import CHECKS, plan
from autograder.feedback_redaction import PLACEHOLDER
from autograder.authoring.scratch_course import (
    ASSIGNMENT, generate_release, make_course_copy, notebook_points, read_gradebook, run_nbgrader, source_dir,
)
from autograder.demo.simulate import defined_names, solution_text, write_class
from tests.nbrun_support import HIDDEN_BEGIN, HIDDEN_END, nbgrader_meta, present_stems, read, regions

pytestmark = pytest.mark.slow

PRESENT = present_stems()
#: One wrong answer in a concept notebook and one in a coding notebook (each cell's groups are known
#: from the calls its cases make).
WRONG = [("09_sequence_ppl", "answer_fourth_token"), ("18_kl_estimators", "kl_sample_values")]
WRONG = [(stem, grade_id) for stem, grade_id in WRONG if stem in PRESENT]


def _grade_course(path, students, feedback_for=None):
    course = make_course_copy(path)
    generate_release(course)
    write_class(course, students)
    run = run_nbgrader(course, "autograde", ASSIGNMENT, "--force", check=False)
    result = {"course": course, "autograde": run, "scores": read_gradebook(course, sorted(students)),
              "points": notebook_points(course)}
    if feedback_for:
        result["feedback"] = run_nbgrader(course, "generate_feedback", ASSIGNMENT, "--force",
                                          "--student", feedback_for, check=False)
    return result


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    wrong_profile = "+".join(["solutions"] + [f"wrong:{s}:{g}" for s, g in WRONG]
                             + [f"missing:{s}" for s in PRESENT if s not in {s for s, _ in WRONG}])
    jobs = {"with_solutions": (root / "a", {"sol": "solutions", "wrong": wrong_profile}, "wrong"),
            "untouched": (root / "b", {"untouched": "untouched"}, None)}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_grade_course, *args) for name, args in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    print("\nplain nbgrader autograde (one CLI call per course):")
    print(f"  'sol' (20 notebooks) + 'wrong' ({len(WRONG)}): {results['with_solutions']['autograde'].seconds:.1f} s")
    print(f"  'untouched' (20 notebooks): {results['untouched']['autograde'].seconds:.1f} s")
    return results


def test_autograde_ran_cleanly(graded):
    for name, result in graded.items():
        assert result["autograde"].ok, f"{name}:\n{result['autograde'].output[-3000:]}"


def test_points_add_up_to_100(graded):
    points = graded["with_solutions"]["points"]
    assert sorted(points) == PRESENT
    assert sum(auto + written for auto, written in points.values()) == pytest.approx(100)


@pytest.mark.parametrize("stem", PRESENT)
def test_solutions_get_every_autograded_point(graded, stem):
    entry = graded["with_solutions"]["scores"]["sol"][stem]
    auto_max = graded["with_solutions"]["points"][stem][0]
    assert entry.auto_score == pytest.approx(auto_max), entry.test_cells
    assert all(score is not None for score in entry.test_cells.values())


@pytest.mark.parametrize("stem", PRESENT)
def test_untouched_gets_zero_and_every_cell_a_result(graded, stem):
    entry = graded["untouched"]["scores"]["untouched"][stem]
    assert entry.auto_score == 0
    assert entry.test_cells and all(score == 0 for score in entry.test_cells.values()), entry.test_cells


def _groups_calling(stem, names):
    return {group.grade_id for group in CHECKS[stem].groups
            if any(call.target in names for case in plan(stem, [group.name]) for call in case.calls)}


@pytest.mark.parametrize("stem,grade_id", WRONG)
def test_one_wrong_answer_loses_only_its_points(graded, stem, grade_id):
    cell = next(c for c in read(source_dir() / f"{stem}.ipynb").cells if nbgrader_meta(c).get("grade_id") == grade_id)
    functions, values = defined_names(solution_text(cell.source))
    affected = _groups_calling(stem, set(functions) | set(values))
    assert affected, f"no check group calls what {grade_id} defines"
    entry = graded["with_solutions"]["scores"]["wrong"][stem]
    points = {g.grade_id: g.points for g in CHECKS[stem].groups}
    kept = {gid: score for gid, score in entry.test_cells.items() if gid not in affected}
    assert kept == {gid: pytest.approx(points[gid]) for gid in kept}, "groups that never call it keep full points"
    lost = sum(points[gid] - entry.test_cells[gid] for gid in affected)
    assert 0 < lost <= sum(points[gid] for gid in affected), entry.test_cells


def test_feedback_never_shows_hidden_tests(graded):
    result = graded["with_solutions"]
    assert result["feedback"].ok, result["feedback"].output[-3000:]
    course = result["course"]
    for stem, _ in WRONG:
        hidden = [line.strip() for c in read(source_dir() / f"{stem}.ipynb").cells
                  for region in regions(c.source, HIDDEN_BEGIN, HIDDEN_END) for line in region.splitlines()
                  if line.strip()]
        autograded = (course / "autograded" / "wrong" / ASSIGNMENT / f"{stem}.ipynb").read_text()
        assert HIDDEN_BEGIN in autograded  # what feedback is made from does hold the hidden tests
        page = (course / "feedback" / "wrong" / ASSIGNMENT / f"{stem}.html").read_text()
        # Code is syntax-highlighted token by token: compare the text a reader sees.
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        assert PLACEHOLDER in text
        for marker in (HIDDEN_BEGIN, HIDDEN_END, "from autograder.checks import grade", f'grade("{stem}"'):
            assert marker not in text
        assert not [line for line in hidden if line in text]
