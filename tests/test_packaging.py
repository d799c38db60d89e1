"""Packaging stays consistent: the two pyproject.toml files, environment.yml, import boundaries, doctests.

Two distributions come from this repository: ``module6-course`` (course/pyproject.toml, what a
student installs) and ``module6-instructor`` (pyproject.toml, which depends on it). The wheels
themselves are built and installed in ``tests/test_distributions.py``.

environment.yml is a conda-forge environment, so its names are conda-forge's: a pip extra
such as ``dask[distributed]`` is two conda packages (``dask`` and ``distributed``) and
``psycopg2-binary`` (a pip-only wheel name) is ``psycopg2``. The comparison maps pyproject's
requirements to conda names and then demands the same packages with the same version
specifiers on both sides.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]

# pip requirement (normalised name, extras) -> conda-forge package names.
PIP_TO_CONDA = {
    ("dask", frozenset({"distributed"})): ("dask", "distributed"),
    ("psycopg2-binary", frozenset()): ("psycopg2",),
}
# environment.yml entries that are tooling, not project dependencies.
CONDA_TOOLING = {"python", "pip"}
CONDA_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<spec>(?:[<>=!~].*)?)$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def student_pyproject() -> dict:
    return tomllib.loads((ROOT / "course" / "pyproject.toml").read_text(encoding="utf-8"))

#: Our own distributions: installed from this repository, not from conda-forge.
OWN = {"module6-course", "module6-instructor"}


@pytest.fixture(scope="module")
def environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))


def pyproject_as_conda(pyproject: dict) -> dict[str, str]:
    requirements = list(pyproject["project"]["dependencies"])
    for extra in pyproject["project"].get("optional-dependencies", {}).values():
        requirements.extend(extra)
    out: dict[str, str] = {}
    for line in requirements:
        requirement = Requirement(line)
        if normalise(requirement.name) in OWN:
            continue
        key = (normalise(requirement.name), frozenset(requirement.extras))
        names = PIP_TO_CONDA.get(key)
        if names is None:
            assert not requirement.extras, f"no conda mapping for {line!r}: add one to PIP_TO_CONDA"
            names = (normalise(requirement.name),)
        for name in names:
            out[name] = str(SpecifierSet(str(requirement.specifier)))
    return out


def conda_entries(environment: dict) -> list[str]:
    return [entry for entry in environment["dependencies"] if isinstance(entry, str)]


def environment_packages(environment: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in conda_entries(environment):
        match = CONDA_SPEC.match(entry.strip())
        assert match, f"environment.yml entry {entry!r} is not a conda match spec"
        name = normalise(match["name"])
        if name in CONDA_TOOLING:
            continue
        assert name not in out, f"{name} listed twice in environment.yml"
        out[name] = str(SpecifierSet(match["spec"].replace(" ", "")))
    return out


def test_environment_uses_conda_names(environment):
    # pip-only names: those whose conda-forge packages are called something else.
    pip_only = {pip: conda for (pip, _), conda in PIP_TO_CONDA.items() if pip not in conda}
    for entry in conda_entries(environment):
        assert "[" not in entry, f"{entry!r}: conda has no extras; list the packages separately"
        name = normalise(CONDA_SPEC.match(entry.strip())["name"])
        assert name not in pip_only, f"{entry!r} is a pip name; conda-forge calls it {pip_only.get(name)}"


def test_environment_and_pyproject_list_the_same_packages(pyproject, environment):
    from_pyproject = pyproject_as_conda(pyproject)
    from_environment = environment_packages(environment)
    assert sorted(from_environment) == sorted(from_pyproject)
    for name, spec in from_pyproject.items():
        assert from_environment[name] == spec, f"{name}: pyproject {spec!r} vs environment.yml {from_environment[name]!r}"


def test_environment_installs_the_project_and_pins_python(environment):
    assert "conda-forge" in environment.get("channels", [])
    assert "python=3.11" in [entry.replace(" ", "") for entry in conda_entries(environment)]
    pip_sections = [entry["pip"] for entry in environment["dependencies"] if isinstance(entry, dict) and "pip" in entry]
    installs = [line.replace("-e", "").strip() for section in pip_sections for line in section]
    assert "./course" in installs and "." in installs, installs


@pytest.mark.parametrize("which", ["instructor", "student"])
def test_pyproject_has_pep621_metadata(which, pyproject, student_pyproject):
    data, folder = (pyproject, ROOT) if which == "instructor" else (student_pyproject, ROOT / "course")
    project = data["project"]
    for field in ("name", "description", "readme", "requires-python", "license", "dependencies"):
        assert field in project, field
    assert "version" in project or "version" in project.get("dynamic", [])
    python = SpecifierSet(project["requires-python"])
    for supported in ("3.11.0", "3.11.9", "3.12.0", "3.13.1"):
        assert supported in python, f"{which}: Python {supported} must be allowed"
    assert "3.10.14" not in python
    assert (folder / project["readme"]).is_file(), f"readme {project['readme']} is missing"
    assert data["build-system"]["build-backend"]


def test_the_two_distributions_are_named_and_versioned_together(pyproject, student_pyproject):
    student, instructor = student_pyproject["project"], pyproject["project"]
    assert student["name"] == "module6-course" and instructor["name"] == "module6-instructor"
    pins = [Requirement(line) for line in instructor["dependencies"]]
    pin = next(r for r in pins if normalise(r.name) == "module6-course")
    assert str(pin.specifier) == f"=={student['version']}", "the instructor package pins its own student package"
    assert instructor["version"] == student["version"]


def test_the_student_distribution_needs_no_jupyter_and_no_grader(student_pyproject):
    names = {normalise(Requirement(line).name) for line in student_pyproject["project"]["dependencies"]}
    # jinja2 (MarkupSafe its only requirement): exercise 26 renders a chat template in the release notebook
    assert names == {"numpy", "matplotlib", "ipywidgets", "jinja2"}, names
    packages = student_pyproject["tool"]["setuptools"]["packages"]
    assert all(name == "course" or name.startswith("course.") for name in packages), packages


def test_the_instructor_distribution_ships_no_student_package(pyproject):
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["autograder*"], include


def test_pyproject_test_extra_has_the_oracles(pyproject):
    test = {normalise(Requirement(line).name) for line in pyproject["project"]["optional-dependencies"]["test"]}
    assert {"pytest", "hypothesis", "mpmath", "scipy"} <= test


def test_console_script_points_at_an_existing_main(pyproject):
    target = pyproject["project"]["scripts"]["autograder"]
    module, _, function = target.partition(":")
    assert module == "autograder.cli" and function == "main"
    source = ROOT / Path(*module.split(".")).with_suffix(".py")
    assert source.is_file(), f"{source.relative_to(ROOT)} does not exist"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    assert any(isinstance(node, ast.FunctionDef) and node.name == function for node in tree.body)


def imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call):
            # importlib.import_module("autograder...") and __import__("autograder...")
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in {"import_module", "__import__"} and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.append(first.value)
    return names


def test_imported_modules_finds_every_form():
    tree = ast.parse(
        "import autograder\nfrom autograder.checks import grade\n"
        "import importlib\nimportlib.import_module('autograder.cli')\n__import__('autograder')\n"
    )
    assert imported_modules(tree) == ["autograder", "autograder.checks", "importlib", "autograder.cli", "autograder"]


def test_course_never_imports_autograder():
    sources = sorted((ROOT / "course").rglob("*.py"))
    assert sources, "course/ has no Python files"
    offenders = []
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in imported_modules(tree):
            if name == "autograder" or name.startswith("autograder."):
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert not offenders, offenders


def test_pytest_collects_doctests_from_the_reference_and_the_widgets(pyproject):
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert {"course", "autograder/reference"} <= set(options["testpaths"])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "course", "autograder/reference"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doctest_items = [line for line in result.stdout.splitlines() if line.startswith("autograder/reference/") and "::" in line]
    assert doctest_items, "no doctest collected from autograder/reference"
