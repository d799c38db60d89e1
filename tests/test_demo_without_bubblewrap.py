"""`make demo` never prints wrong grades: on a machine without bubblewrap it grades as the sandbox would.

Issue 35: on a fresh machine with no bubblewrap the demo graded with ``--no-sandbox``, whose notebook
process could not import the editable student package (its finder is a ``.pth`` hook that the
notebook's ``python -S`` skips), so the simulated perfect student scored 70.1/83.5, with no warning
printed. ``--no-sandbox`` now shows the notebook the sandbox's own site-packages (the student view, as
links), and the demo says, before its table, that it grades without isolation and how to get
bubblewrap. A machine without bubblewrap is simulated by a PATH without ``bwrap``: the sandbox's own
probe (``shutil.which``) then finds none, in this process and in the grader it starts.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from autograder.authoring.scratch_course import generate_release, make_course_copy, notebook_points, read_gradebook
from autograder.demo import __main__ as demo
from autograder.demo.simulate import default_class, write_class
from autograder.grading import sandbox

#: A notebook whose numbers vary (it imports course.variants), a coding notebook, and one with a widget.
STEMS = ("09_sequence_ppl", "12_top_p_nucleus", "15_stable_log_softmax")


@pytest.fixture
def no_bubblewrap(monkeypatch, tmp_path):
    """PATH holds the venv's programs and nothing else: no ``bwrap`` for this process or its children."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in os.listdir(Path(sys.executable).parent):
        (bin_dir / name).symlink_to(Path(sys.executable).parent / name)
    assert not (bin_dir / "bwrap").exists()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(sandbox, "_PROBE", {})
    assert sandbox.bubblewrap() is None
    yield
    sandbox._PROBE.clear()


def _scores(course: Path, students) -> dict:
    """``student -> notebook -> (autograded score, {test cell: score})``."""
    return {student: {stem: (entry.auto_score, entry.test_cells) for stem, entry in row.items()}
            for student, row in read_gradebook(course, sorted(students)).items()}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    if sandbox.bubblewrap() is None:
        pytest.skip("bubblewrap cannot run here: nothing to compare the unsandboxed grades with")
    course = make_course_copy(tmp_path_factory.mktemp("demo") / "course", stems=STEMS)
    generate_release(course)
    students = default_class(course)
    write_class(course, students)
    # The same released and submitted course, graded once each way (a second grading of one copy would
    # find every notebook unchanged and keep the first grades).
    unsandboxed = tmp_path_factory.mktemp("demo-no-sandbox") / "course"
    shutil.copytree(course, unsandboxed, symlinks=True)
    code, log = demo.grade_with_autograder(course)
    assert code == 0, log
    assert "WITHOUT" not in log
    return unsandboxed, students, _scores(course, students)


def test_without_bubblewrap_the_demo_grades_every_notebook_as_the_sandbox_does(course, no_bubblewrap):
    course, students, sandboxed = course
    assert _scores(course, students) == {student: {} for student in students}  # not graded yet
    code, log = demo.grade_with_autograder(course)  # --no-sandbox, as make demo does without bubblewrap
    assert code == 0, log
    assert "WITHOUT the sandbox" in log  # the grader's own summary says so too
    unsandboxed = _scores(course, students)
    assert unsandboxed == sandboxed
    # Not two wrong tables that agree: the simulated perfect student has every autograded point.
    points = notebook_points(course)
    perfect = next(name for name, profile in students.items() if profile == "solutions")
    assert {stem: score for stem, (score, _) in unsandboxed[perfect].items()} == {
        stem: auto for stem, (auto, _) in points.items()}


def test_without_bubblewrap_the_demo_says_so_before_its_table_and_how_to_get_it(no_bubblewrap):
    notice = demo.sandbox_notice()
    assert notice.startswith("NOTE: bubblewrap (bwrap) is not installed, so this demo grades")
    assert "WITHOUT the sandbox" in notice and "apt install bubblewrap" in notice
    assert "the grades are those of sandboxed grading" in notice


def test_with_bubblewrap_the_demo_says_nothing_about_it():
    if sandbox.bubblewrap() is None:
        pytest.skip("bubblewrap cannot run here")
    assert demo.sandbox_notice() == ""


def test_the_notice_is_printed_before_the_table(no_bubblewrap, monkeypatch):
    """run_demo prints the notice ahead of grading (grading itself is the first test's)."""
    printed = io.StringIO()
    monkeypatch.setattr(demo, "grade_with_autograder", lambda course, assignment: (0, ""))
    demo.run_demo("autograder", {"ada": "solutions"}, ["09_sequence_ppl"], None, printed)
    text = printed.getvalue()
    assert "NOTE: bubblewrap (bwrap) is not installed" in text
    assert text.index("NOTE: bubblewrap") < text.index("student ")


def test_no_sandbox_sees_the_student_view_only(tmp_path):
    """The unsandboxed notebook's one site-packages directory holds the student view: the student
    package (editable or not), NumPy, IPython; never the instructor's package or nbgrader."""
    site = sandbox._linked_view(tmp_path / "site", dict(sandbox._cached_view()))
    names = {path.name for path in site.iterdir()}
    assert "course" in names and "numpy" in names and "IPython" in names
    assert not {"autograder", "nbgrader"} & names
    assert all((site / name).resolve() == Path(source).resolve() for name, source in sandbox._cached_view())
    shutil.rmtree(site)
