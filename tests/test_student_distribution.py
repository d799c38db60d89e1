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
from tests.leak_support import normalise, student_side_leaks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import student_distribution  # noqa: E402
import student_lab_config  # noqa: E402

pytestmark = pytest.mark.xdist_group("wheels")


@pytest.fixture(scope="module", params=student_distribution.FLAVOURS)
def tree(request, tmp_path_factory):
    return student_distribution.build(tmp_path_factory.mktemp(request.param) / "tree", request.param).path, request.param


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
    root, _ = tree
    assert student_side_leaks(_texts(root)) == []


def test_the_dockerfile_builds_on_an_upstream_jupyter_image_with_the_trees_steps(tree):
    root, _ = tree
    lines = [line for line in (root / "Dockerfile").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == f"FROM {student_distribution.BASE_IMAGE}" and lines[0].startswith("FROM quay.io/jupyter/")
    assert [line.split()[0] for line in lines] == ["FROM", "COPY", "WORKDIR", "RUN", "WORKDIR"]
    assert "COPY --chown=${NB_UID}:${NB_GID} . /opt/module6" in lines  # the tree, which is all it has
    assert "RUN python -m pip install --no-cache-dir -r requirements.txt && sh postBuild" in lines


def test_the_install_steps_work_in_a_fresh_environment(tree, tmp_path):
    install_as_the_image_does(*tree, tmp_path)


def install_as_the_image_does(root: Path, flavour: str, tmp_path: Path) -> Path:
    """``requirements.txt`` then ``postBuild`` of the tree at ``root`` in a fresh venv, checked; its python."""
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
    return python


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=repo,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_only_the_commits_tracked_files_are_published_and_no_link_is_followed(tmp_path):
    """Issue 32, item 6: in a scratch clone, an untracked file in `course/`, a committed link from `course/`
    to the solutions, an untracked link among the release notebooks and an edit not yet committed: the
    tree of the clone's HEAD is git's listing of that commit, and nothing of the rest."""
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "--quiet", "--local", str(ROOT), str(clone))
    assert (clone / "source" / "module6").is_dir()  # the solutions the links point at
    solution = sorted((clone / "source" / "module6").glob("*.ipynb"))[0]
    (clone / "course" / "solutions").symlink_to(Path("..") / "source" / "module6")
    _git(clone, "add", "course/solutions")
    _git(clone, "commit", "--quiet", "-m", "a convenience link in course/")
    head = _git(clone, "rev-parse", "HEAD")
    (clone / "course" / "notes_answers.py").write_text("ANSWER_KEY = 'untracked-marker-4711'\n")
    (clone / "release" / "module6" / "zz_solution.ipynb").symlink_to(solution)
    (clone / "tools" / "student_lab_config.py").write_text("# uncommitted-marker-4712\n")
    dest = tmp_path / "tree"
    tree = student_distribution.build(dest, repo=clone)
    assert tree.commit == head and f"at commit `{head}`" in (dest / "README.md").read_text()
    assert tree.left_out == ("course/solutions (a symbolic link: never followed or published)",)
    files = {path.relative_to(dest).as_posix() for path in dest.rglob("*")}
    assert not [path for path in dest.rglob("*") if path.is_symlink()]
    assert not any(name.startswith("course/solutions") for name in files), sorted(files)
    assert "course/notes_answers.py" not in files and "module6/zz_solution.ipynb" not in files
    listed = _git(clone, "ls-tree", "-r", "--name-only", head, "--", "course", "release")
    published = {name for name in listed.splitlines() if name != "course/solutions"}
    shipped = {("release/" + name if name.startswith("module6") else name) for name in files
               if name.startswith(("course/", "module6")) and (dest / name).is_file()}
    assert shipped == published  # exactly git's listing of the commit
    texts = "".join(path.read_text(errors="replace") for path in dest.rglob("*") if path.is_file())
    assert "untracked-marker-4711" not in texts and "uncommitted-marker-4712" not in texts
    assert (dest / "tools" / "student_lab_config.py").read_bytes() == subprocess.run(  # committed, not the edit
        ["git", "show", f"{head}:{student_distribution.TOOLS_PATH}/student_lab_config.py"], cwd=clone,
        capture_output=True).stdout
    assert student_side_leaks(_texts(dest)) == []  # the worked example held to its generator's output


def test_the_command_names_the_commit_and_what_it_left_out(tmp_path, capsys):
    student_distribution.main([str(tmp_path / "tree"), "--flavour", "binder"])
    out = capsys.readouterr().out
    head = _git(ROOT, "rev-parse", "HEAD")
    assert f"students' tree (binder) of commit {head} written to {tmp_path / 'tree'}" in out
    with pytest.raises(SystemExit, match="--commit 'no-such-commit' is not a commit"):
        student_distribution.build(tmp_path / "other", commit="no-such-commit")
    assert not (tmp_path / "other").exists()
