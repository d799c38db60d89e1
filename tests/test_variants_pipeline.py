"""Every student their own numbers, end to end through ``autograder grade`` on a scratch course.

One scratch course holds every notebook of ``module6`` whose numbers vary. Three students hand in:
``ada`` the source solutions (which compute from ``numbers``), ``bob`` the literal values of his own
variant's key, ``cai`` the source solutions with ``STUDENT_ID = "ada"`` typed in. All three score full
marks (cai is graded with his own numbers, whatever he typed, and his feedback page says so). Then
bob's folder holds ada's literal values: he loses points on every exercise whose numbers differ, and
the class report names the pair and the exercises.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.assignment import ASSIGNMENT, COURSE_ID, notebook_stems
from autograder.authoring.scratch_course import generate_release, make_course_copy, notebook_points, read_gradebook
from autograder.demo.simulate import solution_text, write_class
from autograder.exercises import answers_for
from autograder.variants import numbers_lines
from course import variants as registry

pytestmark = pytest.mark.slow

STEMS = [stem for stem in notebook_stems() if registry.varies(stem)]
#: The course and term the scratch course's release draws in: the kit's own course id, no term label
#: (its nbgrader_config.py); checked against the release below.
CONTEXT = registry.CourseTerm(COURSE_ID, "")
#: The students whose numbers differ (checked below, exercise by exercise).
ADA, BOB, CAI = "ada", "bob", "cai"
DIFFERENT = [stem for stem in STEMS
             if registry.parameters(stem, ADA, CONTEXT) != registry.parameters(stem, BOB, CONTEXT)]


def _cli(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("JUPYTERHUB_USER", None)
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=course, env=env, text=True,
                          capture_output=True, timeout=timeout)


def _literal(value) -> str:
    if hasattr(value, "tolist"):
        return f"np.array({value.tolist()!r})"
    return repr(value)


def _answer_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"
            and cell.metadata.get("nbgrader", {}).get("solution")
            and cell.metadata["nbgrader"].get("grade_id") != registry.STUDENT_ID_GRADE_ID]


def _write_literals(course: Path, folder: str, owner: str) -> None:
    """``folder``'s notebooks with every answer cell holding ``owner``'s key as literal values (what a
    student who copied ``owner``'s printed answers hands in)."""
    source_dir = course / "source" / ASSIGNMENT
    for stem in STEMS:
        path = course / "submitted" / folder / ASSIGNMENT / f"{stem}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        source = {c.metadata["nbgrader"]["grade_id"]: c
                  for c in _answer_cells(nbformat.read(str(source_dir / f"{stem}.ipynb"), as_version=4))}
        key = answers_for(stem, owner, CONTEXT)
        for cell in _answer_cells(nb):
            solved = solution_text(source[cell.metadata["nbgrader"]["grade_id"]].source)
            assigned = [t.id for node in ast.parse(solved).body if isinstance(node, ast.Assign)
                        for t in node.targets if isinstance(t, ast.Name)]
            names = [name for name in dict.fromkeys(assigned) if name in key]
            assert names, (stem, solved)
            cell.source = ("import numpy as np\nfrom math import inf, nan  # repr() of a float writes them so\n"
                           + "\n".join(f"{name} = {_literal(key[name])}" for name in names))
        nbformat.write(nb, str(path))


def _type_id(course: Path, folder: str, typed: str) -> None:
    for stem in STEMS:
        path = course / "submitted" / folder / ASSIGNMENT / f"{stem}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == registry.STUDENT_ID_GRADE_ID]
        cell.source = cell.source.replace('STUDENT_ID = ""', f'STUDENT_ID = "{typed}"')
        assert typed in cell.source
        nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = make_course_copy(tmp_path_factory.mktemp("variants") / "course", stems=STEMS)
    generate_release(course)
    write_class(course, {ADA: "solutions", BOB: "solutions", CAI: "solutions"})
    _write_literals(course, BOB, BOB)
    _type_id(course, CAI, ADA)
    _type_id(course, BOB, BOB)  # a laptop student types their own id (blind grading must not show it)
    graded = _cli(course, "grade", ASSIGNMENT, "--no-progress", "--jobs", "2")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    first = read_gradebook(course, [ADA, BOB, CAI])
    autograded_ada = {stem: nbformat.read(str(course / "autograded" / ADA / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
                      for stem in STEMS}
    feedback_cai = {stem: (course / "feedback" / CAI / ASSIGNMENT / f"{stem}.html").read_text(encoding="utf-8")
                    for stem in STEMS}
    # Then bob hands in ada's literal answers instead of his own.
    _write_literals(course, BOB, ADA)
    regraded = _cli(course, "grade", ASSIGNMENT, "--no-progress", "--student", BOB)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    report = _cli(course, "report", ASSIGNMENT)
    assert report.returncode == 0, report.stdout + report.stderr
    return {"course": course, "first": first, "second": read_gradebook(course, [ADA, BOB, CAI]),
            "autograded_ada": autograded_ada, "feedback_cai": feedback_cai, "report": report}


def test_the_release_draws_in_the_kit_course(course):
    from autograder.course_settings import release_folder, released_contexts

    class Course:  # what released_contexts needs of nbgrader's CourseDirectory
        release_directory = "release"

        @staticmethod
        def format_path(step, student, assignment):
            return str(course["course"] / step / student / assignment)

    found = released_contexts(release_folder(Course, ASSIGNMENT))
    assert found and set(found.values()) == {CONTEXT}


def test_two_students_have_different_numbers():
    assert STEMS, "no exercise of module6 varies"
    assert DIFFERENT == STEMS, f"ada and bob share the numbers of {sorted(set(STEMS) - set(DIFFERENT))}"
    assert len(DIFFERENT) >= 5  # the bar: different numbers in at least five exercises


def test_own_answers_score_full_marks(course):
    points = course["first"]
    for student in (ADA, BOB, CAI):  # source solutions, literal own values, solutions under a typed id
        for stem in STEMS:
            entry = points[student][stem]
            assert entry.auto_score is not None and entry.auto_score > 0, (student, stem)
            assert all(score is not None for score in entry.test_cells.values())
            assert entry.auto_score == pytest.approx(notebook_points(course["course"])[stem][0]), \
                (student, stem, entry.test_cells)


def test_anothers_answers_lose_points_on_every_exercise_that_differs(course):
    for stem in DIFFERENT:
        before, after = course["first"][BOB][stem], course["second"][BOB][stem]
        assert after.auto_score < notebook_points(course["course"])[stem][0], stem
        lost = [cell for cell, score in after.test_cells.items() if score < before.test_cells[cell]]
        assert lost, (stem, after.test_cells)
    assert course["second"][ADA] == course["first"][ADA]  # nobody else was regraded


def test_report_names_the_pair_and_the_exercises(course):
    import csv

    folder = course["course"] / "reports"
    with open(folder / f"{ASSIGNMENT}-variant-matches.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    pair = [row for row in rows if row["student"] == BOB and (row["fits_numbers_of"] == ADA
                                                              or ADA in row["also_fits"].split())]
    assert sorted(row["notebook"] for row in pair) == sorted(DIFFERENT), rows
    # ada's and cai's answers fit their own numbers: nobody else is listed.
    assert {row["student"] for row in rows} == {BOB}, rows
    page = (folder / f"{ASSIGNMENT}-report.html").read_text(encoding="utf-8")
    section = page.split("id='other-numbers'", 1)[1].split("<h2", 1)[0]
    assert f"<td>{BOB}</td>" in section and ADA in section
    assert all(stem in section for stem in DIFFERENT)
    assert f"{BOB!r}:" in course["report"].stdout and "numbers of 'ada'" in course["report"].stdout


def test_typed_id_of_another_student_is_named_on_the_feedback_page(course):
    for stem in STEMS:
        page = course["feedback_cai"][stem]
        assert "STUDENT_ID says" in page, stem
        assert f"submitted as &#x27;{CAI}&#x27;" in page or f"submitted as '{CAI}'" in page, stem


def test_rubric_cell_shows_the_students_numbers(course):
    from autograder.feedback.rubric import is_rubric_cell

    seen = 0
    for stem in STEMS:
        rubrics = [cell for cell in course["autograded_ada"][stem].cells if is_rubric_cell(cell)]
        for cell in rubrics:
            seen += 1
            assert "The numbers of this submission" in cell.source
            for what, value in numbers_lines(stem, ADA, CONTEXT):
                assert f"- {what}: `{value}`" in cell.source
    assert seen >= 5


def test_no_rubric_cell_names_the_student(course):
    """Blind grading stays blind (issue 33, F8): formgrader hides names on its grading page, so the rubric
    block below each written answer shows the submission's numbers without saying whose they are."""
    import re

    from autograder.feedback.rubric import is_rubric_cell

    seen = 0
    for path in sorted((course["course"] / "autograded").rglob("*.ipynb")):
        student = path.relative_to(course["course"] / "autograded").parts[0]
        for cell in nbformat.read(str(path), as_version=4).cells:
            if is_rubric_cell(cell):
                seen += 1
                assert not re.search(rf"(?<![A-Za-z0-9_]){re.escape(student)}(?![A-Za-z0-9_])", cell.source), \
                    (path, cell.source[:300])
                assert "student `" not in cell.source
    assert seen >= 3 * 5


def test_no_cell_of_an_autograded_notebook_names_its_student(course):
    """Nor does anything else formgrader's grading page shows (issue 33, F8): the numbers cell, run as the
    student's sign-in, says whose numbers they are, and a laptop student types their own id; the grader
    shows neither (cai typed *another* student's id: that stays, it is the evidence of the mismatch)."""
    import re

    checked = 0
    for path in sorted((course["course"] / "autograded").rglob("*.ipynb")):
        student = path.relative_to(course["course"] / "autograded").parts[0]
        named = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(student)}(?![A-Za-z0-9_])")
        for cell in nbformat.read(str(path), as_version=4).cells:
            texts = [cell.source] + ["".join(o.get("text", "")) + json.dumps(o.get("data", {}))
                                     for o in cell.get("outputs", [])]
            assert not [text for text in texts if named.search(text)], (path, cell.get("id"), texts)
            checked += 1
    assert checked > 100
    bob = nbformat.read(str(course["course"] / "autograded" / BOB / ASSIGNMENT / f"{STEMS[0]}.ipynb"), as_version=4)
    (typed,) = [c for c in bob.cells if c.metadata.get("nbgrader", {}).get("grade_id") == registry.STUDENT_ID_GRADE_ID]
    assert "typed their own id" in typed.source


def test_variants_command_on_the_graded_course(course, capsys):
    from autograder.cli import main
    from autograder.variant_listing import varying_stems, json_value

    where = ["--course-dir", str(course["course"])]
    assert main(["variants", ASSIGNMENT, "--student", ADA, "--json", *where]) == 0
    described = json.loads(capsys.readouterr().out)
    # The graded course has its secret, so the coding exercises' hidden seeds are listed too (no answers).
    assert sorted(described) == sorted(varying_stems(ASSIGNMENT)) and set(STEMS) <= set(described)
    for stem in STEMS:
        assert described[stem]["answers"] == json.loads(json.dumps(json_value(answers_for(stem, ADA, CONTEXT))))
    for stem in set(described) - set(STEMS):
        assert described[stem]["answers"] == {} and isinstance(described[stem]["parameters"]["hidden_seed"], int)
    assert main(["variants", ASSIGNMENT, "--student", "adda", *where]) == 2
    err = capsys.readouterr().err
    assert "not in the gradebook" in err and "'ada'" in err, err


def test_report_from_a_results_file_reads_the_same_evidence(course, tmp_path):
    """Rows from `autograder grade --report FILE` carry no values: the report reads them from autograded/."""
    from autograder.results import write_jsonl
    from autograder.insight import report as class_report
    from autograder.insight.results import load_rows

    results = tmp_path / "grades.jsonl"
    write_jsonl(str(results), load_rows(course["course"], ASSIGNMENT))
    from_rows = class_report.build(course["course"], ASSIGNMENT, results=results, output=tmp_path / "a")["report"]
    from_notebooks = class_report.build(course["course"], ASSIGNMENT, output=tmp_path / "b")["report"]
    assert from_rows.matches == from_notebooks.matches and from_rows.copied
    assert {m.student for m in from_rows.matches} == {BOB}
