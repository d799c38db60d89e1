"""Issue 10's trust test: with both wheels installed non-editable, solution hunters find nothing.

Both wheels are built from this checkout and installed (not editable) into a fresh virtualenv, as an
instructor's machine or a hub image would have them. A course directory holds only
``nbgrader_config.py``, ``source/`` and ``release/``. That environment's ``autograder grade`` then
grades a perfect student (every point) and four solution hunters per coding exercise, each
looking for a working copy of the graded function: by import (every importable module), by path
(every file on the filesystem, imported from its package root), through ``/proc`` and through the
course directory. Each hunter scores 0 on the hunted notebook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from autograder.grading.sandbox import bubblewrap
from tests.dist_support import fresh_venv, shared_wheels

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "module6"
PIPED = "15_stable_log_softmax"
HUNTED = {"15_stable_log_softmax": "stable_log_softmax", "16_causal_shift": "causal_response_logprobs",
          "18_kl_estimators": "exact_kl_from_logits", "19_sampling_transforms": "top_p_distribution"}

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel-install"),
              pytest.mark.skipif(bubblewrap() is None and os.environ.get("CI", "").lower() != "true",
                                 reason="needs a working bubblewrap")]

# Shared by every hunter: search directories for a file defining NAME (a .py file, imported from its
# package root, or a notebook whose code cell defines it), within a time budget.
SEARCH = r'''
import os, sys, json, time, importlib

def _define_from(path, text, name):
    if path.endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells", [])
        except Exception:
            return None
        for cell in cells:
            source = "".join(cell.get("source", ""))
            if ("def %s(" % name) in source and cell.get("cell_type") == "code":
                scope = {}
                try:
                    exec("import numpy as np\n" + source, scope)
                except BaseException:
                    continue
                if callable(scope.get(name)):
                    return scope[name]
        return None
    root, parts = os.path.dirname(path), [os.path.basename(path)[:-3]]
    while os.path.exists(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    try:
        sys.path.insert(0, root)
        module = importlib.import_module(".".join(parts))
        found = getattr(module, name, None)
        if callable(found):
            return found
    except BaseException:
        pass
    scope = {"__name__": "hunted"}
    try:
        exec(compile(text, path, "exec"), scope)
    except BaseException:
        return None
    return scope.get(name) if callable(scope.get(name)) else None

def _search(tops, name, seconds=15):
    stop = time.monotonic() + seconds
    needle = "def %s(" % name
    for top in tops:
        for root, dirs, files in os.walk(top):
            if time.monotonic() > stop:
                return None
            if root.startswith(("/proc/sys", "/sys", "/dev")) or (root.startswith("/proc") and top == "/"):
                dirs[:] = []
                continue
            for file in files:
                if not file.endswith((".py", ".ipynb")):
                    continue
                path = os.path.join(root, file)
                try:
                    with open(path, errors="ignore") as handle:
                        text = handle.read(4_000_000)
                except OSError:
                    continue
                if needle in text:
                    found = _define_from(path, text, name)
                    if found is not None:
                        return found
    return None
'''

BY_IMPORT = r'''
import pkgutil, importlib, sys, time, io, contextlib
_found, _stop = None, time.monotonic() + 20
for _module in list(sys.modules.values()):
    if callable(getattr(_module, "NAME", None)):
        _found = getattr(_module, "NAME")
# Importing every module prints (the standard library's demos and self-tests): keep it quiet.
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for _info in pkgutil.walk_packages(onerror=lambda name: None):
        if _found is not None or time.monotonic() > _stop:
            break
        try:
            _candidate = getattr(importlib.import_module(_info.name), "NAME", None)
        except BaseException:
            continue
        if callable(_candidate):
            _found = _candidate
'''

BY_PATH = SEARCH + r'''
_found = _search(["/"], "NAME")
'''

VIA_PROC = SEARCH + r'''
import re
_dirs = set()
for _pid in os.listdir("/proc"):
    if not _pid.isdigit():
        continue
    for _what in ("cwd", "root", "exe"):
        try:
            _dirs.add(os.path.dirname(os.readlink("/proc/%s/%s" % (_pid, _what))))
            _dirs.add("/proc/%s/%s" % (_pid, _what))
        except OSError:
            pass
    for _what in ("cmdline", "environ", "maps", "mountinfo"):
        try:
            with open("/proc/%s/%s" % (_pid, _what), "rb") as _handle:
                _text = _handle.read().decode("utf-8", "ignore")
        except OSError:
            continue
        for _path in re.findall(r"(/[\w.\-/]+)", _text):
            for _base in (_path, "/proc/%s/root%s" % (_pid, _path)):
                _dirs.add(_base if os.path.isdir(_base) else os.path.dirname(_base))
_found = _search(sorted(d for d in _dirs if d and d != "/"), "NAME")
'''

VIA_COURSE = SEARCH + r'''
_tops = ["COURSE", "COURSE/source", "COURSE/release", os.path.expanduser("~"), os.getcwd(), "..", "../..",
         "/srv", "/home", "/root", "/opt", "/mnt", "/course"]
_found = _search([t for t in _tops if os.path.isdir(t)], "NAME")
'''

TAIL = r'''
if _found is not None:
    NAME = _found
else:
    def NAME(*args, **kwargs):
        raise NotImplementedError("the hunt found nothing")
print("hunter found", _found)
'''

HUNTERS = {"import": BY_IMPORT, "path": BY_PATH, "proc": VIA_PROC, "course": VIA_COURSE}


def _run(command, **kwargs):
    proc = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{command} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """A fresh venv with both wheels installed (built from this checkout), once per session."""
    wheels = shared_wheels(tmp_path_factory)
    python = fresh_venv(tmp_path_factory.mktemp("instructor") / "venv", wheels.student, wheels.instructor)
    return python.parent.parent


def _student(course: Path, student: str, notebooks: dict) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    for stem, nb in notebooks.items():
        nbformat.write(nb, str(folder / f"{stem}.ipynb"))


def _hunter(release: Path, stem: str, name: str, code: str, course: Path):
    nb = nbformat.read(str(release / f"{stem}.ipynb"), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == name]
    cell.source = (code + TAIL).replace("NAME", name).replace("COURSE", str(course))
    return nb


@pytest.fixture(scope="session")
def graded(installed, tmp_path_factory):
    course = tmp_path_factory.mktemp("installed-course") / "course"
    course.mkdir()
    shutil.copy2(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(ROOT / "source", course / "source")
    shutil.copytree(ROOT / "release", course / "release")
    bindir = str(installed / "bin")
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(course), "LANG": "C.UTF-8"}
    _run([f"{bindir}/nbgrader", "generate_assignment", ASSIGNMENT, "--force"], cwd=course, env=env, timeout=900)
    release = course / "release" / ASSIGNMENT
    source = course / "source" / ASSIGNMENT
    # The perfect student submits the instructor's own solutions.
    _student(course, "perfect", {path.stem: nbformat.read(str(path), as_version=4)
                                 for path in sorted(source.glob("*.ipynb"))})
    for kind, code in HUNTERS.items():
        _student(course, f"hunter_{kind}", {stem: _hunter(release, stem, name, code, course)
                                            for stem, name in HUNTED.items()})
    # Two doors' worth of hostile folders (the whole corpus is tests/test_intake_doors.py): a student
    # folder linked to the perfect one, and a FIFO for a notebook beside an extra file linked to source/.
    (course / "submitted" / "linked").symlink_to(course / "submitted" / "perfect")
    piped = course / "submitted" / "piped" / ASSIGNMENT
    piped.mkdir(parents=True)
    os.mkfifo(piped / f"{PIPED}.ipynb")
    (piped / "notes.txt").symlink_to(source / f"{PIPED}.ipynb")
    report = course / "report.jsonl"
    proc = subprocess.run([f"{bindir}/autograder", "grade", ASSIGNMENT, "--jobs", "2", "--no-progress",
                           "--report", str(report)], cwd=course, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    nbgrader = {}
    for student in ("piped", "linked"):
        # A deadline: a door that opens the FIFO blocks, and fails here instead of hanging.
        nbgrader[student] = subprocess.run([f"{bindir}/nbgrader", "autograde", ASSIGNMENT, "--student", student,
                                            "--force"], cwd=course, env=env, capture_output=True, text=True,
                                           timeout=900)
    return {"course": course, "rows": rows, "installed": installed, "nbgrader": nbgrader}


def test_the_wheels_hold_no_editable_hook(installed):
    site = next((installed / "lib").glob("python3*/site-packages"))
    assert not list(site.glob("__editable__*")) and (site / "autograder").is_dir() and (site / "course").is_dir()


def test_a_perfect_student_keeps_every_point(graded):
    autograded = [r for r in graded["rows"] if r["student"] == "perfect" and r["grade_id"].startswith("test_")]
    assert len({r["notebook"] for r in autograded}) == 20
    missed = [r for r in autograded if r["score"] != r["max_score"]]
    assert not missed, missed


@pytest.mark.parametrize("kind", sorted(HUNTERS))
@pytest.mark.parametrize("stem", sorted(HUNTED))
def test_a_solution_hunter_scores_zero(graded, kind, stem):
    rows = [r for r in graded["rows"] if r["student"] == f"hunter_{kind}" and r["notebook"] == stem
            and r["grade_id"].startswith("test_")]
    assert rows, f"hunter_{kind} was not graded on {stem}"
    assert sum(r["score"] for r in rows) == 0.0, rows
    autograded = graded["course"] / "autograded" / f"hunter_{kind}" / ASSIGNMENT / f"{stem}.ipynb"
    text = autograded.read_text()
    assert "hunter found None" in text, "the hunter's own report says it found something"


def test_the_installed_doors_read_through_the_intake(graded):
    """The installed `autograder grade` and `nbgrader autograde` refuse a linked folder and a FIFO alike."""
    rows = graded["rows"]
    linked = [r for r in rows if r["student"] == "linked"]
    assert linked and {r["status"] for r in linked} == {"symlink"} and {r["score"] for r in linked} == {None}
    (piped,) = {r["feedback"] for r in rows if r["student"] == "piped" and r["notebook"] == PIPED}
    assert {r["status"] for r in rows if r["student"] == "piped" and r["notebook"] == PIPED} == {"rejected"}
    assert "FIFO" in piped
    log = graded["nbgrader"]["piped"].stdout + graded["nbgrader"]["piped"].stderr
    assert graded["nbgrader"]["piped"].returncode == 0, log[-3000:]
    assert f"piped/{PIPED}: rejected: {piped}" in log
    log = graded["nbgrader"]["linked"].stdout + graded["nbgrader"]["linked"].stderr
    (line,) = {r["feedback"] for r in linked}
    assert f"linked/{PIPED}: symlink: {line}" in log, log[-3000:]
    produced = graded["course"] / "autograded"
    assert not (produced / "linked").exists()
    assert {p.name for p in (produced / "piped" / ASSIGNMENT).iterdir()} <= {
        f"{PIPED}.ipynb", "timestamp.txt", "submission_secret.txt", ".autograder-state.json"}


def test_the_grader_refuses_to_run_without_its_sandbox(graded, tmp_path):
    """Where bubblewrap cannot run, `autograder grade` stops with a reason and what to do."""
    bindir = graded["installed"] / "bin"
    lonely = tmp_path / "bin"  # a PATH with python and the CLI, but no bwrap
    lonely.mkdir()
    for name in ("python", "autograder", "alembic"):
        (lonely / name).symlink_to(bindir / name)
    env = {"PATH": str(lonely), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    refused = subprocess.run([str(lonely / "autograder"), "grade", ASSIGNMENT, "--no-progress"],
                             cwd=graded["course"], env=env, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0
    assert "bubblewrap" in refused.stderr and "--no-sandbox" in refused.stderr, refused.stderr
    told = subprocess.run([str(lonely / "autograder"), "grade", ASSIGNMENT, "--no-progress", "--no-sandbox",
                           "--student", "perfect", "--force"],
                          cwd=graded["course"], env=env, capture_output=True, text=True, timeout=1200)
    assert told.returncode == 0, told.stderr[-3000:]
    assert "WITHOUT the sandbox" in told.stdout
