"""The one switch (``autograder.course_setup.use_module6``) is scoped: the kit's assignments get the kit, the
course's own assignment ``ps1`` keeps nbgrader's behaviour, in the same course and in the same run.

One course, ``stat-490`` (tests/plain_course.py), with the instructor's own stubs and the marked block
``autograder add-to-course`` writes. Its assignments: ``ps1`` (nbgrader ``assert`` tests, in a kernel), one
real kit notebook in ``module6`` (for the release steps), and the toy course's notebook as assignment
``toy``, which the test adds to ``c.Module6Scope.assignments`` so that a kit assignment is graded in the
sandbox in a few seconds (the kit's own notebooks are graded through this same door by tests/test_term.py
and tests/test_add_to_course.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import plain_course
from hostile import toy

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
KIT_STEM = "15_stable_log_softmax"
BLOCK = """
# >>> Module 6 kit (managed by `autograder add-to-course`)
c.Module6.term = ""
from autograder.course_setup import use_module6
use_module6(c)
# <<< Module 6 kit
"""
TEST_ONLY = f"""
# This test only: the toy notebook stands in for a kit assignment that grades in seconds.
import sys
sys.path.insert(0, {str(TESTS)!r})
from hostile import toy as _toy
_toy.register()
c.Module6Scope.assignments = list(c.Module6Scope.assignments) + ["toy"]
"""


def _block() -> str:
    # c.Module6 (the term) is h38-draws' setting; until it is merged the line is left out here.
    try:
        import autograder.course_settings  # noqa: F401
    except ImportError:
        return BLOCK.replace('c.Module6.term = ""\n', "")
    return BLOCK


def _run(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = toy.nbgrader_env()
    env.pop("JUPYTER_CONFIG_DIR", None)
    return subprocess.run([sys.executable, *args], cwd=course, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    proc = _run(course, "-m", "nbgrader", *args)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc


def _scores(course: Path) -> dict:
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), plain_course.COURSE_ID) as gb:
        for assignment in ("ps1", "toy"):
            for record in gb.assignment_submissions(assignment):
                for notebook in record.notebooks:
                    found[(assignment, record.student.id)] = float(notebook.code_score)
    return found


API = """
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
coursedir = CourseDirectory(config=config)
coursedir.root = os.getcwd()
api = NbGraderAPI(coursedir, config=config)
result = api.autograde(sys.argv[1], sys.argv[2])
print(json.dumps({"success": result["success"], "log": result.get("log", ""), "error": result.get("error", "")}))
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = plain_course.write_course(tmp_path_factory.mktemp("scoped") / "stat-490")
    with (course / "nbgrader_config.py").open("a") as handle:
        handle.write(_block() + TEST_ONLY)
    toy_source = course / "source" / "toy"
    toy_source.mkdir(parents=True)
    toy.nbbuild.write(toy_source / f"{toy.STEM}.ipynb", toy.source_notebook())
    (course / "source" / "module6").mkdir(parents=True)
    (course / "source" / "module6" / f"{KIT_STEM}.ipynb").write_bytes(
        (ROOT / "source" / "module6" / f"{KIT_STEM}.ipynb").read_bytes())
    for assignment in ("ps1", "toy", "module6"):
        _nbgrader(course, "generate_assignment", assignment, "--force")
    for student, (answer, _) in plain_course.ANSWERS.items():
        target = course / "submitted" / student / "ps1"
        target.mkdir(parents=True)
        nbformat.write(plain_course.answered(course / "release" / "ps1" / "ps1.ipynb", student),
                       str(target / "ps1.ipynb"))
        toy.submit(course, student, toy.honest_answers())
    # One run over every assignment: nbgrader's own loop, each assignment to its converter.
    graded = _run(course, "-m", "nbgrader", "autograde", "*", timeout=900)
    feedback = _run(course, "-m", "nbgrader", "generate_feedback", "*")
    refused = _run(course, "-m", "autograder", "grade", "ps1", "--no-progress")
    button = _run(course, "-c", API, "ps1", "ann")
    # formgrader's button on a kit assignment, in this course of another id: bob resubmits (the button
    # regrades what changed) with a wrong answer, graded in the sandbox: 2 of 3 points.
    toy.submit(course, "bob", {**toy.honest_answers(), "answer_value": "ANSWER = 41\n"})
    kit_button = _run(course, "-c", API, "toy", "bob")
    return {"course": course, "graded": graded, "scores": _scores(course), "feedback": feedback,
            "refused": refused, "button": button, "kit_button": kit_button, "after_button": _scores(course)}


def test_the_kit_s_release_steps_and_stubs_touch_only_the_kit_s_notebooks(course):
    from autograder.authoring.release_preprocessors import CODE_STUB, NOTE

    root = course["course"]
    ps1 = nbformat.read(str(root / "release" / "ps1" / "ps1.ipynb"), as_version=4)
    kit = nbformat.read(str(root / "release" / "module6" / f"{KIT_STEM}.ipynb"), as_version=4)

    def sources(nb):
        return "\n".join(cell.source for cell in nb.cells)

    # ps1: the instructor's own stub, nbgrader's released test cells, no kernel language_info of the kit.
    (answer,) = [cell for cell in ps1.cells if cell.metadata["nbgrader"]["grade_id"] == "square"]
    assert answer.source == "def square(x):\n    " + plain_course.CODE_STUB.replace("\n", "\n    ")
    assert NOTE not in sources(ps1) and "language_info" not in ps1.metadata
    assert "square(0)" not in sources(ps1)  # nbgrader's ClearHiddenTests still ran
    # module6: the kit's stub, quiet hidden-test cells and language_info; not the instructor's stub.
    assert all(line in sources(kit) for line in CODE_STUB.splitlines()) and "PS1: write your code here" not in sources(kit)
    assert NOTE in sources(kit) and "language_info" in kit.metadata


def test_one_autograde_run_grades_the_kit_in_the_sandbox_and_ps1_in_a_kernel(course):
    graded = course["graded"]
    assert graded.returncode == 0, graded.stdout[-4000:]
    output = graded.stdout
    for student in plain_course.ANSWERS:
        assert f"{student}/{toy.STEM} graded in the sandbox" in output
    # ps1 went through nbgrader's own Autograde: its Execute preprocessor ran the notebook in a kernel
    # (every code cell has an execution count), and the kit's grader kept no state for it.
    root = course["course"]
    for student in plain_course.ANSWERS:
        assert f"Autograding {root / 'autograded' / student / 'ps1' / 'ps1.ipynb'}" in output
        autograded = nbformat.read(str(root / "autograded" / student / "ps1" / "ps1.ipynb"), as_version=4)
        assert all(cell.execution_count for cell in autograded.cells if cell.cell_type == "code")
        assert not (root / "autograded" / student / "ps1" / ".autograder-state.json").exists()
        assert (root / "autograded" / student / "toy" / ".autograder-state.json").exists()
    assert course["scores"][("ps1", "ann")] == plain_course.ANSWERS["ann"][1]
    assert course["scores"][("ps1", "bob")] == plain_course.ANSWERS["bob"][1]
    assert course["scores"][("toy", "ann")] == 3.0  # the toy's two test groups, graded by its check


def test_formgrader_s_button_on_ps1_is_nbgrader_s_own(course):
    proc = course["button"]
    assert proc.returncode == 0, proc.stdout[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["success"], result
    assert "graded in the sandbox" not in result["log"]


def test_formgrader_s_button_on_a_kit_assignment_grades_in_the_sandbox(course):
    proc = course["kit_button"]
    assert proc.returncode == 0, proc.stdout[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["success"], result
    assert f"bob/{toy.STEM} graded in the sandbox" in result["log"]
    assert course["after_button"][("toy", "bob")] == 2.0
    assert course["after_button"][("ps1", "bob")] == plain_course.ANSWERS["bob"][1]


def test_feedback_is_the_kit_s_page_for_the_kit_and_nbgrader_s_for_ps1(course):
    assert course["feedback"].returncode == 0, course["feedback"].stdout[-4000:]
    root = course["course"]
    ps1 = (root / "feedback" / "ann" / "ps1" / "ps1.html").read_text()
    kit = (root / "feedback" / "ann" / "toy" / f"{toy.STEM}.html").read_text()
    import html

    from autograder.feedback.withheld import RULE

    # ps1: nbgrader's page as nbgrader makes it (its hidden tests shown: the instructor's choice to keep).
    assert "BEGIN HIDDEN TESTS" in ps1 and RULE not in html.unescape(ps1)
    # The kit's page: hidden tests redacted, the kit's sentence above the first hidden test.
    assert "BEGIN HIDDEN TESTS" not in kit and "from autograder.checks import grade" not in kit
    assert RULE in html.unescape(kit)


def test_autograder_grade_refuses_an_assignment_that_is_not_the_kit_s(course):
    refused = course["refused"]
    assert refused.returncode == 2, refused.stdout
    assert "'ps1' is not a Module 6 assignment" in refused.stdout and "nbgrader autograde ps1" in refused.stdout


def test_use_module6_sets_nothing_the_instructor_owns():
    from traitlets.config import Config

    from autograder.course_setup import use_module6

    config = Config()
    use_module6(config)
    owned = {"CourseDirectory", "Exchange", "Execute", "ExecutePreprocessor", "Validator", "ClearSolutions",
             "Autograde", "GenerateFeedback", "NbGrader", "NbGraderApp"}
    assert not owned & set(config.keys()), sorted(owned & set(config.keys()))
    assert list(config.Module6Scope.assignments) == ["module6", "module6_further"]
