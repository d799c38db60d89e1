"""What several test modules build alike, built once per test run and read by all of them.

A build (the two wheels, a released scratch course, a class graded by the grading host) lands in the
run's temporary root, which every xdist worker of one run shares (a worker's base temp is a folder
inside it), under a file lock: the first module to ask builds it, a module asking meanwhile on another
worker waits for that build instead of starting its own, and later ones find it done. A new run builds
again from the checkout as it is then.

The folder is named by the build's name and a hash of its inputs (``key``: the stems, the assignment,
...). Tests read it or copy it (:func:`writable_copy`) and never change it: each hand-out compares
the folder with the digest taken when it was built, so a test that wrote into it fails the next test
that asks for it, by name, instead of passing or failing by the order the modules ran in.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable


def run_root(tmp_path_factory) -> Path:
    """The temporary folder of this test run that all its xdist workers share."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def tree_digest(folder: Path) -> str:
    """A digest of every path, file content and link target under ``folder`` (modes aside)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        digest.update(b"\0")
    return digest.hexdigest()


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object], key: object = ()) -> Path:
    """A folder that ``build(folder)`` filled, once per test run for this ``name`` and ``key``.

    ``build`` gets a new empty folder. The folder returned must be treated as read-only (copy it
    with :func:`writable_copy` to change anything): it is checked unchanged at every hand-out.
    """
    root = run_root(tmp_path_factory)
    inputs = hashlib.sha256(repr((name, key)).encode()).hexdigest()[:16]
    folder = root / f"shared-{name}-{inputs}"
    done = root / f"shared-{name}-{inputs}.digest"
    with open(root / f"shared-{name}-{inputs}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
            folder.mkdir(parents=True)
            build(folder)
            done.write_text(tree_digest(folder))
        elif tree_digest(folder) != done.read_text():
            raise AssertionError(f"a test changed the shared build {folder} (tests must work on a copy)")
    return folder


def writable_copy(shared: Path, target: Path) -> Path:
    """A copy of a shared build (or part of one) for a test to change; links are copied as links."""
    return Path(shutil.copytree(shared, target, symlinks=True))


def released_course(tmp_path_factory, stems, assignment: str | None = None) -> Path:
    """A scratch course of ``stems`` with ``assignment`` released (``nbgrader generate_assignment``, so
    in its gradebook too), nobody submitted: once per run for these stems; read-only (copy it)."""
    from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy

    assignment = assignment or ASSIGNMENT
    stems = tuple(sorted(stems))

    def build(folder: Path) -> None:
        generate_release(make_course_copy(folder / "course", stems=stems), assignment)

    return built_once(tmp_path_factory, "released", build, key=(stems, assignment)) / "course"
