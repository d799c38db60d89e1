"""The two wheels, installed as users install them: a student's environment holds nothing graded.

``make dist`` builds ``module6-course`` (students) and ``module6-instructor`` (instructors). Here the
student wheel goes into a fresh virtualenv, non-editable, and that environment is searched the way a
solution hunter would search it: imports, module attributes, every file's text. The sandbox side
(that grading sees only this environment) is tested in the grader's own tests.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.assignment import release_dir
from autograder.checks import CHECKS, plan
from tests.dist_support import fresh_venv, run_python, shared_wheels
from tests.leak_support import WORKED_EXAMPLE, find_leaks, secrets, worked_numbers
from tests.nbrun_support import normalise

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]


def graded_names() -> tuple[set, set]:
    """``(functions, values)``: every name a hidden check calls or reads, over all exercises."""
    functions, values = set(), set()
    for stem in CHECKS:
        for case in plan(stem):
            for call in case.calls:
                (values if call.read_only else functions).add(call.target)
    return functions, values


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    return shared_wheels(tmp_path_factory)


def committed_source_notebooks() -> dict:
    """``assignment/name.ipynb -> bytes`` of the source notebooks git tracks (the tree's, outside a git checkout)."""
    import subprocess

    from autograder.assignment import ASSIGNMENTS, REPO_ROOT

    listed = subprocess.run(["git", "ls-files", "-z", "--", *(f"source/{a}" for a in ASSIGNMENTS)], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        paths = [REPO_ROOT / name for name in listed.stdout.split("\0") if name.endswith(".ipynb")]
    else:
        paths = [path for a in ASSIGNMENTS for path in (REPO_ROOT / "source" / a).glob("*.ipynb")]
    return {path.relative_to(REPO_ROOT / "source").as_posix(): path.read_bytes() for path in paths}


@pytest.fixture(scope="module")
def student(tmp_path_factory, wheels):
    """(python, scratch dir) of a fresh venv holding only ``module6-course`` and its dependencies."""
    root = tmp_path_factory.mktemp("student")
    python = fresh_venv(root / "venv", wheels.student)
    scratch = root / "work"
    scratch.mkdir()
    return python, scratch


def test_the_student_wheel_holds_only_the_course_package(wheels):
    with zipfile.ZipFile(wheels.student) as archive:
        names = archive.namelist()
    code = [name for name in names if not name.startswith("module6_course-")]
    assert code and all(name.startswith("course/") for name in code), code
    assert not [name for name in code if "reference" in name or "autograder" in name or name.endswith(".md")]


def test_the_instructor_wheel_holds_every_exercise_folder(wheels):
    with zipfile.ZipFile(wheels.instructor) as archive:
        names = set(archive.namelist())
    assert not [name for name in names if name.startswith("course/")], "the instructor wheel must not duplicate course"
    for stem in CHECKS:
        for part in ("check.py", "solution.md"):
            assert f"autograder/exercises/{stem}/{part}" in names, (stem, part)
    assert "autograder/reference/__init__.py" in names
    with zipfile.ZipFile(wheels.instructor) as archive:
        metadata = archive.read(next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "Requires-Dist: module6-course==" in metadata


def test_the_instructor_wheel_holds_exactly_the_committed_source_notebooks(wheels):
    """`autograder add-to-course` installs the module from the wheel alone: setup.py maps source/ into it."""
    prefix = "autograder/kit_source/"
    with zipfile.ZipFile(wheels.instructor) as archive:
        packaged = {name[len(prefix):]: archive.read(name) for name in archive.namelist() if name.startswith(prefix)}
    committed = committed_source_notebooks()
    assert len(committed) >= 30
    assert sorted(packaged) == sorted(committed)
    assert packaged == committed


def test_the_installed_families_draw_from_their_data_files(student, wheels):
    """Every family's numbers are package data (``course/variants/data/<stem>.json``, read by
    ``course.variants.family_data``): the wheel ships one file per family, and the installed package,
    non-editable, gives every student exactly the numbers this checkout gives."""
    from course.variants import families, parameters

    python, scratch = student
    with zipfile.ZipFile(wheels.student) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("course/variants/data/")}
    assert shipped == {f"course/variants/data/{stem}.json" for stem in families()}, shipped
    ids = [None, "ada", "s1", "s499", "josé"]
    code = ("import json; from course.variants import families, parameters; "
            f"print(json.dumps({{stem: [parameters(stem, s) for s in {ids!r}] for stem in sorted(families())}}))")
    result = run_python(python, code, cwd=scratch)
    assert result.returncode == 0, result.stderr[-3000:]
    here = json.loads(json.dumps({stem: [parameters(stem, s) for s in ids] for stem in sorted(families())}))
    assert json.loads(result.stdout.strip().splitlines()[-1]) == here


def test_autograder_is_not_importable_for_a_student(student):
    python, scratch = student
    result = run_python(python, "import autograder", cwd=scratch)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, result.stdout + result.stderr


def test_no_installed_module_defines_a_graded_function(student):
    """Neither an importable name of ``course`` nor any ``def`` in the whole environment is a graded function."""
    python, scratch = student
    functions, _ = graded_names()
    assert {"stable_log_softmax", "top_p_distribution", "validate_rollout_batch"} <= functions
    code = f"""
import importlib, json, pkgutil, re, site, sys, os
names = set({sorted(functions)!r})
import course
found = []
for info in pkgutil.walk_packages(course.__path__, "course."):
    module = importlib.import_module(info.name)
    found += [f"{{info.name}}.{{n}}" for n in vars(module) if n in names]
found += [f"course.{{n}}" for n in vars(course) if n in names]
pattern = re.compile(r"^\\s*def\\s+(" + "|".join(map(re.escape, names)) + r")\\s*\\(", re.M)
for root in site.getsitepackages():
    for folder, _, files in os.walk(root):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8", errors="replace") as handle:
                    for match in pattern.finditer(handle.read()):
                        found.append(f"{{path}}: def {{match.group(1)}}")
print(json.dumps(found))
"""
    result = run_python(python, code, cwd=scratch)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_no_file_a_student_installs_holds_a_key_or_a_worked_answer(wheels):
    from autograder.authoring.worked_example import render

    with zipfile.ZipFile(wheels.student) as archive:
        texts = {name: normalise(archive.read(name).decode("utf-8", errors="replace"))
                 for name in archive.namelist()}
    example = texts.pop(WORKED_EXAMPLE)
    assert example == normalise(render())
    leaks = find_leaks(secrets(), texts)
    assert not leaks, leaks[:20]
    numbers = [(stem, number, name) for stem, found in worked_numbers().items() for number in sorted(found)
               for name, text in texts.items() if number in text]
    assert not numbers, numbers
    # The example's table: no solution line, hidden test, rubric or worked-solution sentence.
    assert not find_leaks(secrets(["solutions and hidden tests", "rubrics", "self-study"]), {WORKED_EXAMPLE: example})


def _widget_programs() -> dict:
    """``stem -> code`` of each release notebook's setup cell followed by its widget cells."""
    programs = {}
    for path in sorted(release_dir().glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        widget = [cell.source for cell in nb.cells if "widget" in cell.metadata.get("tags", [])]
        if widget:
            setup = [cell.source for cell in nb.cells if cell.get("id") == "setup"]
            programs[path.stem] = "\n\n".join(setup + widget)
    return programs


def test_release_widget_cells_run_with_only_the_student_package(student):
    python, scratch = student
    programs = _widget_programs()
    assert len(programs) >= 5, sorted(programs)
    for stem, program in programs.items():
        result = run_python(python, program + "\nprint('widget cells ran')", cwd=scratch)
        assert result.returncode == 0 and "widget cells ran" in result.stdout, (stem, result.stderr[-3000:])
