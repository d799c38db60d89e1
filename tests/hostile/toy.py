"""A tiny nbgrader course for the batch grader's tests: one notebook, a registered check.

``90_toy`` asks for ``double(x)`` (2 points, group ``double``) and ``ANSWER`` (1 point, group
``answer``), plus a written answer (1 point, manual). Building the course runs the real
``nbgrader generate_assignment`` once; tests copy the result.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np

from autograder.channel import Call, Returned
from autograder.checks import CHECKS, Case, ExerciseCheck, Group, Verdict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import nbbuild  # noqa: E402

STEM = "90_toy"
ASSIGNMENT = "toy"
SOLUTION = "def double(x):\n    return 2 * np.asarray(x, dtype=float)\n\nANSWER = 42\n"


def _equal_array(expected):
    def judge(outcomes):
        (outcome,) = outcomes
        if not isinstance(outcome, Returned):
            return Verdict(False, "the call did not return a value")
        value = outcome.value
        if type(value) is not np.ndarray or value.shape != expected.shape or value.dtype != np.float64:
            return Verdict(False, "expected a float64 array of the input's shape")
        return Verdict(bool(np.array_equal(value, expected)), "wrong values")
    return judge


def _answer_is_42(outcomes):
    (outcome,) = outcomes
    ok = isinstance(outcome, Returned) and type(outcome.value) is int and outcome.value == 42
    return Verdict(ok, "ANSWER is not the expected number")


def _cases():
    rng = np.random.default_rng(7)
    for index in range(3):
        x = rng.normal(size=4)
        yield Case(f"double_{index}", "double", (Call("double", (x,)),), _equal_array(2 * x))
    yield Case("answer", "answer", (Call.value("ANSWER"),), _answer_is_42)


CHECK = ExerciseCheck(STEM, [Group("double", 2, "Doubling"), Group("answer", 1, "The answer")], _cases)


def register() -> None:
    """Make the toy check known to ``autograder.checks`` in this process (and forked workers)."""
    CHECKS.register(CHECK)


def source_notebook():
    return [
        nbbuild.md("intro", "# Toy\nDouble things."),
        nbbuild.code("setup", "import numpy as np"),
        nbbuild.answer("answer-double", "double", """
            def double(x):
                ### BEGIN SOLUTION
                return 2 * np.asarray(x, dtype=float)
                ### END SOLUTION
            """),
        nbbuild.answer("answer-value", "answer_value", """
            ### BEGIN SOLUTION
            ANSWER = 42
            ### END SOLUTION
            """),
        nbbuild.code("check-double", "assert double([1.0]).shape == (1,)"),
        nbbuild.tests("test-double", STEM, "double", 2, "double gives twice its input"),
        nbbuild.tests("test-answer", STEM, "answer", 1, "the answer"),
        nbbuild.manual("explain-why", "explain_why", 1, "Because doubling is linear."),
    ]


CONFIG = """c = get_config()
c.CourseDirectory.course_id = "toy-course"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
c.Execute.timeout = 20
"""


def nbgrader_env() -> dict:
    """The environment nbgrader needs (its ``alembic`` helper must be on PATH)."""
    import os
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def build_course(directory: Path) -> Path:
    """Write source/, run ``nbgrader generate_assignment``; return the course directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nbgrader_config.py").write_text(CONFIG)
    source = directory / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    nbbuild.write(source / f"{STEM}.ipynb", source_notebook())
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force"],
                   cwd=directory, check=False, capture_output=True, text=True, env=nbgrader_env())
    if not (directory / "release" / ASSIGNMENT / f"{STEM}.ipynb").exists():
        raise RuntimeError("generate_assignment failed:\n" + proc.stdout[-3000:] + proc.stderr[-3000:])
    return directory


def submit(course: Path, student: str, answers: dict | None = None, *, cells=None,
           stem: str = STEM, assignment: str = ASSIGNMENT) -> Path:
    """Write ``submitted/<student>/<assignment>/<stem>.ipynb`` from the release.

    ``answers`` maps a grade id to the new source of that cell (code or markdown); ``cells`` (a
    function of the notebook) may rewrite the notebook further (move, duplicate, add cells).
    """
    nb = nbformat.read(str(course / "release" / assignment / f"{stem}.ipynb"), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and grade_id in answers:
            cell.source = answers[grade_id]
    if cells is not None:
        cells(nb)
    target = course / "submitted" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    # ASCII JSON: a lone surrogate in a hostile answer is written as its escape, as a hand-edited file would.
    (target / f"{stem}.ipynb").write_text(nbformat.writes(nb, ensure_ascii=True), encoding="utf-8")
    return target / f"{stem}.ipynb"


def honest_answers(explanation: str = "Because it is linear.") -> dict:
    return {"double": "def double(x):\n    return 2 * np.asarray(x, dtype=float)\n",
            "answer_value": "ANSWER = 42\n", "explain_why": explanation}


def copy_course(template: Path, target: Path) -> Path:
    shutil.copytree(template, target)
    return target


_TEMPLATE: list = []


def template() -> Path:
    """The toy course with its release generated, built once per test process (copy it before use)."""
    if not _TEMPLATE:
        import atexit
        import tempfile
        base = Path(tempfile.mkdtemp(prefix="toy-course-"))
        atexit.register(shutil.rmtree, base, True)
        _TEMPLATE.append(build_course(base / "course"))
    register()
    return _TEMPLATE[0]
