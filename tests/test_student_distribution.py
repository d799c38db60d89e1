"""The students' tree (hub image and Binder): what it ships holds no answer, and its install steps work.

``tools/student_distribution.py`` writes the tree a Binder branch or a hub image is built from. The
image cannot be built here (no Docker engine), so this tests what can be: the tree's files (nothing
of ``source/`` or ``autograder``, no answer by the release leak scan's collectors), the Dockerfile's
base image and steps, and the install steps themselves, run in a fresh virtualenv from the tree as
the image and Binder run them (``requirements.txt``, then ``postBuild``; uv installs the requirements
in place of pip, for speed, from the same file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.dist_support import run_python
from tests.leak_support import WORKED_EXAMPLE, find_leaks, normalise, secrets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import student_distribution  # noqa: E402
import student_lab_config  # noqa: E402

pytestmark = pytest.mark.xdist_group("wheels")


@pytest.fixture(scope="module", params=student_distribution.FLAVOURS)
def tree(request, tmp_path_factory):
    return student_distribution.build(tmp_path_factory.mktemp(request.param) / "tree", request.param), request.param


def _texts(tree: Path) -> dict:
    texts = {}
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            raw = path.read_bytes().decode("utf-8", errors="replace")
            if path.suffix == ".ipynb":
                raw += "\n" + "\n".join(cell.source for cell in nbformat.reads(raw, as_version=4).cells)
            texts[path.relative_to(tree).as_posix()] = normalise(raw)
    return texts


def test_the_tree_holds_the_student_package_and_release_only(tree):
    root, _ = tree
    top = sorted(p.name for p in root.iterdir())
    assert top == ["Dockerfile", "README.md", "course", "module6", "module6_further", "postBuild",
                   "requirements.txt", "tools"], top
    assert not list(root.rglob("autograder")) and not list(root.rglob("source"))
    assert sorted(p.name for p in (root / "tools").iterdir()) == sorted(student_distribution.TOOLS)
    for assignment in ("module6", "module6_further"):
        shipped = sorted(p.name for p in (root / assignment).glob("*.ipynb"))
        assert shipped == sorted(p.name for p in (ROOT / "release" / assignment).glob("*.ipynb")) and shipped
    for path in root.rglob("*.py"):
        assert "import autograder" not in path.read_text() and "from autograder" not in path.read_text(), path


def test_nothing_the_tree_ships_holds_an_answer(tree):
    """Beyond the worked example's own answers, in the one file the student package holds them in
    (exactly the generator's output: see tests/test_distributions.py), no key, solution or rubric."""
    from autograder.authoring.worked_example import render

    root, _ = tree
    texts = _texts(root)
    example = texts.pop(WORKED_EXAMPLE)
    assert example == normalise(render())
    assert find_leaks(secrets(), texts) == []
    assert find_leaks(secrets(["solutions and hidden tests", "rubrics", "self-study"]), {WORKED_EXAMPLE: example}) == []


def test_the_dockerfile_builds_on_an_upstream_jupyter_image_with_the_trees_steps(tree):
    root, _ = tree
    lines = [line for line in (root / "Dockerfile").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == f"FROM {student_distribution.BASE_IMAGE}" and lines[0].startswith("FROM quay.io/jupyter/")
    assert [line.split()[0] for line in lines] == ["FROM", "COPY", "WORKDIR", "RUN", "WORKDIR"]
    assert "COPY --chown=${NB_UID}:${NB_GID} . /opt/module6" in lines  # the tree, which is all it has
    assert "RUN python -m pip install --no-cache-dir -r requirements.txt && sh postBuild" in lines


def test_the_install_steps_work_in_a_fresh_environment(tree, tmp_path):
    root, flavour = tree
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    venv = tmp_path / "venv"
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    uv = [sys.executable, "-m", "uv"]
    for step in ([*uv, "venv", "--quiet", "--python", base, str(venv)],
                 [*uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "-r", "requirements.txt"]):
        done = subprocess.run(step, cwd=root, capture_output=True, text=True, timeout=900, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"  # `python` in postBuild is the environment's
    done = subprocess.run(["sh", "postBuild"], cwd=root, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    python = venv / "bin" / "python"
    probe = run_python(python, "import course.widgets, nbgrader, jupyterlab; import importlib.util as u; "
                               "print(u.find_spec('autograder') is None)", cwd=tmp_path)
    assert probe.returncode == 0 and probe.stdout.strip() == "True", probe.stderr
    config = venv / "etc" / "jupyter"
    disabled = json.loads((config / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    server = json.loads((config / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    kept = set(student_lab_config.HUB_KEEPS_LAB) if flavour == "hub" else set()
    assert {name.split(":")[1] for name in disabled} == set(student_lab_config.LAB_OFF) - kept
    assert ("nbgrader.server_extensions.assignment_list" in server) == (flavour == "binder")
    assert "nbgrader.server_extensions.formgrader" in server and "validate_assignment" not in " ".join(server)
    bundle = "".join(p.read_text() for p in (venv / "share/jupyter/labextensions/@jupyter/nbgrader/static").glob("*.js"))
    assert "Success! Your notebook passes all the tests." not in bundle  # Validate says what it checked
