"""Issue 38: per-student numbers depend on the course and the term, and one term's numbers never change.

What enters a draw is :class:`course.variants.CourseTerm` (the nbgrader course id and ``c.Module6.term``);
the release writes it into the numbers cell and the notebook's metadata; the grader, ``autograder
variants`` and the class report read it from the release, never from the configuration.

The first tests are quick (the draws, the empty context's bit-for-bit seed, bad values, the release steps'
scoping); the rest run one scratch course with its own course id and term through ``nbgrader
generate_assignment``, a laptop student's run of the released notebook, ``autograder grade`` and
``autograder variants``, a changed term and a refused re-release.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.assignment import ASSIGNMENT
from course import variants as registry
from course.variants import CourseTerm

STEMS = sorted(registry.families())
IDS = [f"s{i:04d}" for i in range(300)] + ["ada", "josé", "o'brien", "Ada"]
CONTEXTS = {
    "course A, term 1": CourseTerm("ml-101", "2027-spring"),
    "course B, term 1": CourseTerm("ml-102", "2027-spring"),
    "course A, term 2": CourseTerm("ml-101", "2027-fall"),
    "course A, no term": CourseTerm("ml-101", ""),
    "no course, term 1": CourseTerm("", "2027-spring"),
    "empty": CourseTerm(),
}


# --------------------------------------------------------------------------- the draws


@pytest.mark.parametrize("stem", STEMS)
def test_two_courses_and_two_terms_give_an_id_different_numbers(stem):
    """Every pair of contexts gives (almost) every id other numbers in every family; a family's own small
    table of choices may repeat for a few ids (at most 2%; measured: at most 1 of 304)."""
    names = list(CONTEXTS)
    drawn = {name: [registry.parameters(stem, student, CONTEXTS[name]) for student in IDS] for name in names}
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            same = sum(a == b for a, b in zip(drawn[first], drawn[second]))
            assert same <= 0.02 * len(IDS), (stem, first, second, same)
    # and the draws are the context's: the same again, never the example numbers
    again = [registry.parameters(stem, student, CONTEXTS["course A, term 1"]) for student in IDS]
    assert again == drawn["course A, term 1"]
    assert all(values != dict(registry.families()[stem].seed) for values in again)


def test_no_id_gets_all_its_numbers_again_in_another_course_or_term():
    for first, second in [("course A, term 1", "course B, term 1"), ("course A, term 1", "course A, term 2"),
                          ("course A, no term", "empty"), ("no course, term 1", "empty")]:
        for student in IDS:
            assert any(registry.parameters(stem, student, CONTEXTS[first])
                       != registry.parameters(stem, student, CONTEXTS[second]) for stem in STEMS), (student, first, second)


def _old_seed(stem: str, student: str) -> bytes:
    """The seed before course and term existed, written out here from its definition (SCHEME NUL stem NUL id)."""
    return hashlib.sha256(b"module6-variants-1\x00" + stem.encode() + b"\x00" + student.encode("utf-8")).digest()


def _drawn_from(stem: str, seed: bytes) -> dict:
    """A family's numbers from ``seed``: its first draw that is not the example numbers."""
    family, d = registry.families()[stem], registry.Draw(seed)
    while True:
        values = dict(family.draw(d))
        if values != dict(family.seed):
            return values


@pytest.mark.parametrize("stem", STEMS)
def test_the_empty_context_draws_the_old_numbers_bit_for_bit(stem):
    assert registry.SCHEME == "module6-variants-1"
    for student in IDS[:60] + ["josé", "o'brien"]:
        old = _old_seed(stem, student)
        assert registry.seed_bytes(stem, student) == old == registry.seed_bytes(stem, student, CourseTerm())
        assert registry.parameters(stem, student) == registry.parameters(stem, student, CourseTerm()) \
            == _drawn_from(stem, old)
    assert registry.parameters(stem, None, CONTEXTS["course A, term 1"]) == dict(registry.families()[stem].seed)


def test_a_context_seed_is_the_hash_of_its_json_array():
    context = CourseTerm("ml-101", 'spring "27" \\ é')
    text = json.dumps(["module6-variants-1", "course-term", "05_negative_kl", "ada", context.course, context.term],
                      ensure_ascii=False)
    assert registry.seed_bytes("05_negative_kl", "ada", context) == hashlib.sha256(text.encode("utf-8")).digest()
    # a course id that ends like a term label does not pass for one
    assert registry.seed_bytes("05_negative_kl", "ada", CourseTerm("a", "b")) \
        != registry.seed_bytes("05_negative_kl", "ada", CourseTerm('a", "b', ""))


@pytest.mark.parametrize("course,term,message", [
    ("x" * 129, "", "course is 129 characters long: a course id has at most 128"),
    ("", "t" * 129, "term is 129 characters long: a course term label has at most 128"),
    ("ml-101", "2027\nspring", "term = '2027\\nspring' is not a course term label: use printable characters only"),
    ("ml\t101", "", "course = 'ml\\t101' is not a course id: use printable characters only"),
    ("ml-101", " 2027", "term = ' 2027' starts or ends with a space"),
    (101, "", "course should be a string (the course id"),
    ("ml-101", None, "term should be a string (the course term label"),
])
def test_bad_course_or_term_values_are_refused_with_what_is_expected(course, term, message):
    with pytest.raises(ValueError) as caught:
        CourseTerm(course, term)
    assert message in str(caught.value)
    with pytest.raises(ValueError):  # the numbers cell says the same
        registry.your_numbers("05_negative_kl", "ada", course=course, term=term)


def test_the_longest_course_id_and_term_label_pass_and_the_limits_table_reads_the_bound():
    from autograder.limits import COURSE_TERM_CHARS

    assert COURSE_TERM_CHARS.value == registry.COURSE_TERM_MAX_CHARS == 128
    longest = CourseTerm("c" * 128, "t" * 128)
    assert registry.parameters("05_negative_kl", "ada", longest) != registry.parameters("05_negative_kl", "ada")
    with pytest.raises(TypeError, match="course_term should be a CourseTerm"):
        registry.parameters("05_negative_kl", "ada", ("ml-101", ""))


def test_the_term_setting_refuses_a_bad_label():
    from traitlets import TraitError
    from traitlets.config import Config

    from autograder.course_settings import Module6

    config = Config()
    config.Module6.term = "2027-spring"
    assert Module6(config=config).term == "2027-spring" and Module6().term == ""
    with pytest.raises(TraitError, match=r"c.Module6.term: term = '2027\\nspring' is not a course term label"):
        Module6(term="2027\nspring")
    assert "never change it after release" in Module6.class_traits()["term"].help


def test_numbers_know_their_context_and_a_check_in_the_kernel_judges_with_it(monkeypatch, tmp_path):
    from autograder import exercises
    from autograder.checks import run_check

    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.setenv(registry.ID_FILE_ENV, str(tmp_path / "none"))
    context = CONTEXTS["course A, term 1"]
    numbers = registry.your_numbers("05_negative_kl", "ada", course=context.course, term=context.term)
    assert numbers.course_term == context and dict(numbers) == registry.parameters("05_negative_kl", "ada", context)
    assert dict(numbers) != registry.parameters("05_negative_kl", "ada")
    right = dict(exercises.answers_for("05_negative_kl", "ada", context), numbers=numbers)
    assert run_check("05_negative_kl", right).points_earned == run_check("05_negative_kl", right).points_available
    # answers of the same id's numbers in no context are wrong for this notebook
    other = dict(exercises.answers_for("05_negative_kl", "ada"), numbers=numbers)
    assert run_check("05_negative_kl", other).points_earned < run_check("05_negative_kl", other).points_available


def test_the_course_settings_doctests():
    """``autograder/course_settings.py`` is outside pytest's doctest paths: its examples run here."""
    import doctest

    from autograder import course_settings

    result = doctest.testmod(course_settings, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


# --------------------------------------------------------------------------- the release steps


def _kit_notebook_for(assignment: str):
    from autograder.assignment import REPO_ROOT, source_dir
    return nbformat.read(str(source_dir(REPO_ROOT, "module6") / "05_negative_kl.ipynb"), as_version=4), \
        {"nbgrader": {"assignment": assignment, "notebook": "05_negative_kl"}}


def test_every_kit_release_step_leaves_another_assignment_alone():
    from traitlets.config import Config

    from autograder.authoring import release_preprocessors as steps

    config = Config()
    config.CourseDirectory.course_id = "ml-101"
    config.Module6.term = "2027-spring"
    for step in (steps.TypedIdCell, steps.QuietReleasedTests, steps.CourseTermCell, steps.KernelLanguageInfo):
        nb, resources = _kit_notebook_for("ps1")
        before = json.dumps(nb, sort_keys=True)
        out, _ = step(config=config).preprocess(nb, resources)
        assert json.dumps(out, sort_keys=True) == before, step.__name__
    nb, resources = _kit_notebook_for(ASSIGNMENT)
    out, _ = steps.CourseTermCell(config=config).preprocess(nb, resources)
    (cell,) = [c for c in out.cells if c.get("id") == "your-numbers"]
    assert 'your_numbers("05_negative_kl", STUDENT_ID, course="ml-101", term="2027-spring")' in cell.source
    assert out.metadata["module6_course_term"] == {"course": "ml-101", "term": "2027-spring"}


def test_the_release_step_runs_before_the_checksums_and_the_gradebook():
    from nbgrader.preprocessors import ComputeChecksums, SaveCells

    from autograder.authoring.release_preprocessors import CourseTermCell, release_steps

    listed = release_steps()
    assert listed.index(CourseTermCell) < listed.index(ComputeChecksums) < listed.index(SaveCells)


def test_the_repository_config_uses_the_release_steps():
    from autograder.assignment import REPO_ROOT
    from autograder.authoring.release_preprocessors import release_steps
    from autograder.grading.gradebook import load_config

    assert list(load_config(REPO_ROOT).GenerateAssignment.preprocessors) == release_steps()


# --------------------------------------------------------------------------- a course of its own


COURSE, TERM, LATER_TERM = "ml-101", "2027-spring", "2028-fall"
COURSE_STEMS = ["01_stop_reasons", "05_negative_kl", "13_truncation_correction"]
VARYING = [stem for stem in COURSE_STEMS if registry.varies(stem)]


def _env() -> dict:
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("JUPYTERHUB_USER", None)
    return env


def _cli(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=course, env=_env(), text=True,
                          capture_output=True, timeout=900)


def _set_term(course: Path, term: str) -> None:
    with (course / "nbgrader_config.py").open("a", encoding="utf-8") as config:
        config.write(f"\nc.Module6.term = {term!r}\n")


def _tree(folder: Path) -> dict:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _stored_numbers_cells(course: Path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), COURSE) as gb:
        return {nb.name: (cell.source, cell.checksum) for nb in gb.find_assignment(ASSIGNMENT).notebooks
                for cell in nb.source_cells if cell.name == "your-numbers"}


def _plan(course: Path):
    from autograder.grading.gradebook import course_directory
    from autograder.grading.task import make_plan

    return make_plan(course_directory(course), ASSIGNMENT, timeout=None, memory_mb=None, use_bwrap=None)


def _laptop_numbers(course: Path, stem: str, typed: str) -> dict:
    """What a laptop student who types ``typed`` sees: the released notebook's id and numbers cells run
    in a fresh Python (no hub, no remembered id, away from any submission folder)."""
    nb = nbformat.read(str(course / "release" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
    cells = {cell.get("id"): cell.source for cell in nb.cells}
    code = (cells["student-id"].replace('STUDENT_ID = ""', f"STUDENT_ID = {typed!r}") + "\n" + cells["your-numbers"]
            + "\nimport json\nprint(json.dumps(dict(numbers)))\n")
    env = dict(_env(), MODULE6_STUDENT_ID_FILE=str(course / "no-remembered-id"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=course.parent, env=env, text=True, capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return registry._tuples(json.loads(proc.stdout.strip().splitlines()[-1]))


def _literal_answers(course: Path, student: str, stem: str, context: CourseTerm) -> None:
    """``student``'s submitted ``stem`` with every answer cell holding the key of ``student``'s numbers
    in ``context`` as literal values."""
    import ast

    from autograder.demo.simulate import solution_text
    from autograder.exercises import answers_for

    path = course / "submitted" / student / ASSIGNMENT / f"{stem}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    source = {cell.metadata["nbgrader"]["grade_id"]: cell.source
              for cell in nbformat.read(str(course / "source" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4).cells
              if cell.metadata.get("nbgrader", {}).get("solution")}
    key = answers_for(stem, student, context)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("solution") or meta["grade_id"] == registry.STUDENT_ID_GRADE_ID:
            continue
        names = [t.id for node in ast.parse(solution_text(source[meta["grade_id"]])).body
                 if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name) and t.id in key]
        cell.source = "import numpy as np\nfrom math import inf, nan\n" + "\n".join(
            f"{name} = {key[name].tolist() if hasattr(key[name], 'tolist') else key[name]!r}" for name in dict.fromkeys(names))
    nbformat.write(nb, str(path))


def _edit_numbers_cell(course: Path, student: str, stem: str, course_id: str, term: str) -> None:
    path = course / "submitted" / student / ASSIGNMENT / f"{stem}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "your-numbers"]
    cell.source = cell.source.replace(f'course="{COURSE}", term="{TERM}"', f'course="{course_id}", term="{term}"')
    assert f'course="{course_id}"' in cell.source
    nbformat.write(nb, str(path))


def _scores(course: Path) -> dict:
    """``(student, notebook) -> (code score, max code score)`` from the course's gradebook (its own course id)."""
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course / "gradebook.db"), COURSE) as gb:
        students = sorted(s.id for s in gb.students)
        record = gb.find_assignment(ASSIGNMENT)
        table = {}
        for student in students:
            for notebook in record.notebooks:
                sub = gb.find_submission_notebook(notebook.name, ASSIGNMENT, student)
                table[(student, notebook.name)] = (float(sub.code_score), float(sub.max_code_score))
    return table


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course with course id ml-101 and term 2027-spring, released; ada hands in the literal key
    of her released numbers, bob the source solutions (computed from ``numbers``) with his numbers cell
    edited to another course and term; both graded."""
    from autograder.authoring.scratch_course import generate_release, make_course_copy
    from autograder.demo.simulate import write_class

    course = make_course_copy(tmp_path_factory.mktemp("course-term") / "course", stems=COURSE_STEMS)
    with (course / "nbgrader_config.py").open("a", encoding="utf-8") as config:
        config.write(f"\nc.CourseDirectory.course_id = {COURSE!r}\n")
    _set_term(course, TERM)
    generate_release(course)
    write_class(course, {"ada": "solutions", "bob": "solutions"})
    for stem in VARYING:
        _literal_answers(course, "ada", stem, CourseTerm(COURSE, TERM))
        _edit_numbers_cell(course, "bob", stem, "someone-else", "1999")
    graded = _cli(course, "grade", ASSIGNMENT, "--no-progress", "--jobs", "2")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    return course


@pytest.mark.slow
def test_the_release_records_the_course_and_term_where_checksums_and_the_gradebook_see_them(course):
    from nbgrader.utils import compute_checksum

    stored = _stored_numbers_cells(course)
    assert sorted(stored) == VARYING
    for stem in COURSE_STEMS:
        nb = nbformat.read(str(course / "release" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
        assert nb.metadata["module6_course_term"] == {"course": COURSE, "term": TERM}, stem
        for cell in nb.cells:
            if cell.get("id") == "your-numbers":
                assert f'your_numbers("{stem}", STUDENT_ID, course="{COURSE}", term="{TERM}")' in cell.source
                # nbgrader's checksum of the released locked cell, and the gradebook's copy, are the released text
                assert cell.metadata.nbgrader.checksum == compute_checksum(cell) == stored[stem][1]
                assert stored[stem][0] == cell.source


@pytest.mark.slow
def test_a_laptop_student_sees_the_numbers_the_grader_plans_with(course):
    plan = _plan(course)
    assert plan.course_term == CourseTerm(COURSE, TERM)
    from autograder.variants import variant_for

    for student in ("ada", "zoë", "s0042"):
        for stem in VARYING:
            shown = _laptop_numbers(course, stem, student)
            assert shown == variant_for(stem, student, course_term=plan.course_term).parameters, (student, stem)
            assert shown != registry.parameters(stem, student)  # the course and term entered the draw


@pytest.mark.slow
def test_the_grader_runs_the_released_numbers_cell_and_grades_the_released_numbers(course):
    scores = _scores(course)
    for stem in VARYING:
        # ada's literal key of her released numbers: full marks; bob computed from `numbers` in a notebook
        # whose numbers cell he edited to another course and term: the grader ran the released cell instead,
        # so his answers follow his released numbers (full marks), and the autograded notebook shows that cell.
        for student in ("ada", "bob"):
            earned, available = scores[(student, stem)]
            assert available > 0 and earned == available, (student, stem, earned, available)
        nb = nbformat.read(str(course / "autograded" / "bob" / ASSIGNMENT / f"{stem}.ipynb"), as_version=4)
        (cell,) = [c for c in nb.cells if c.get("id") == "your-numbers"]
        assert f'course="{COURSE}", term="{TERM}"' in cell.source and "someone-else" not in cell.source


@pytest.mark.slow
def test_a_term_changed_after_release_changes_neither_grading_nor_the_listing(course):
    before = _cli(course, "variants", ASSIGNMENT, "--student", "ada", "--json")
    assert before.returncode == 0, before.stderr
    scores = _scores(course)
    _set_term(course, LATER_TERM)
    try:
        assert _plan(course).course_term == CourseTerm(COURSE, TERM)
        after = _cli(course, "variants", ASSIGNMENT, "--student", "ada", "--json")
        assert after.returncode == 0 and json.loads(after.stdout) == json.loads(before.stdout), after.stderr
        from autograder.exercises import answers_for
        from autograder.variant_listing import json_value
        for stem in VARYING:
            assert json.loads(after.stdout)[stem]["answers"] == json.loads(json.dumps(
                json_value(answers_for(stem, "ada", CourseTerm(COURSE, TERM)))))
        regraded = _cli(course, "grade", ASSIGNMENT, "--no-progress", "--student", "ada", "--force")
        assert regraded.returncode == 0, regraded.stdout + regraded.stderr
        assert _scores(course) == scores
    finally:
        _set_term(course, TERM)


@pytest.mark.slow
def test_releasing_again_with_another_term_is_refused_and_changes_nothing(course):
    from autograder.authoring.scratch_course import run_nbgrader

    release, stored = _tree(course / "release" / ASSIGNMENT), _stored_numbers_cells(course)
    _set_term(course, LATER_TERM)
    try:
        for args in (("generate_assignment", ASSIGNMENT, "--force"), ("generate_assignment", ASSIGNMENT)):
            run = run_nbgrader(course, *args, check=False)
            assert run.returncode != 0, run.output
            assert (f"refusing to generate {ASSIGNMENT!r} with course {COURSE!r} and term {LATER_TERM!r}" in run.output
                    and f"made with course {COURSE!r} and term {TERM!r}" in run.output
                    and f"c.Module6.term = {TERM!r}" in run.output), run.output
            assert _tree(course / "release" / ASSIGNMENT) == release
            assert _stored_numbers_cells(course) == stored
    finally:
        _set_term(course, TERM)
    again = run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force", check=False)
    assert again.returncode == 0, again.output  # the same context releases as before
    assert _tree(course / "release" / ASSIGNMENT) == release


def test_a_legacy_release_is_refused_with_the_way_to_keep_it(tmp_path):
    """A release made before course and term entered the draws (no record) is kept, not re-released
    with other numbers; the message says so rather than asking to set an empty course id."""
    from autograder.authoring.release_preprocessors import refusal_text

    text = refusal_text("module6", tmp_path / "release" / "module6", "05_negative_kl.ipynb", CourseTerm(),
                        CourseTerm(COURSE, TERM))
    assert "made before the course and term entered the students' numbers" in text
    assert "Keep that release" in text and "Nothing was changed" in text and "course_id = ''" not in text


@pytest.mark.slow
def test_release_notebooks_that_disagree_stop_the_grader_with_a_clear_error(course, tmp_path):
    import shutil

    from autograder.grading.errors import GradingError

    copy = tmp_path / "course"
    shutil.copytree(course, copy, symlinks=True)
    path = copy / "release" / ASSIGNMENT / "01_stop_reasons.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["module6_course_term"]["term"] = "2026-fall"
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(GradingError, match="record different courses or terms") as caught:
        _plan(copy)
    assert "2026-fall" in str(caught.value) and TERM in str(caught.value)
    # a release made before the context existed (no metadata at all) is the empty context
    for path in (copy / "release" / ASSIGNMENT).glob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        del nb["metadata"]["module6_course_term"]
        path.write_text(json.dumps(nb), encoding="utf-8")
    assert _plan(copy).course_term == CourseTerm()
    # and nbgrader does not release it again with this course's numbers: refused, nothing removed
    from autograder.authoring.scratch_course import run_nbgrader

    legacy = _tree(copy / "release" / ASSIGNMENT)
    run = run_nbgrader(copy, "generate_assignment", ASSIGNMENT, "--force", check=False)
    assert run.returncode != 0 and "made before the course and term entered" in run.output, run.output
    assert _tree(copy / "release" / ASSIGNMENT) == legacy
