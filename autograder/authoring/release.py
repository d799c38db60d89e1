"""Regenerate (or check) the committed student releases ``release/<assignment>`` from ``source/<assignment>``.

``python -m autograder.authoring.release`` runs ``nbgrader generate_assignment <assignment> --force`` for
every assignment of :data:`autograder.assignment.ASSIGNMENTS` in one scratch copy of the course (so the
repository never gets a gradebook) and replaces each ``release/<assignment>`` with the result.
``--check`` only compares: exit status 1 and a list of differing files when a committed release is out
of date. The output depends on the source alone, so a rerun is byte-identical.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from autograder.authoring.scratch_course import (
    ASSIGNMENTS, REPO_ROOT, generate_release, make_course_copy, release_dir,
)


def build_releases(dests: dict) -> dict:
    """Generate ``assignment -> dest`` releases from the repository's source (each dest replaced if it exists).

    One scratch course serves every assignment, as one course directory does for an instructor.
    """
    dests = {assignment: Path(dest) for assignment, dest in dests.items()}
    unknown = sorted(set(dests) - set(ASSIGNMENTS))
    if unknown:
        raise ValueError(f"dests: unknown assignments {unknown}; known: {ASSIGNMENTS}")
    with tempfile.TemporaryDirectory(prefix="module6-release-") as tmp:
        course = make_course_copy(Path(tmp) / "course")
        for assignment, dest in dests.items():
            generate_release(course, assignment)
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            # copyfile: contents only, so modes and timestamps of the scratch run never matter.
            shutil.copytree(release_dir(course, assignment), dest, copy_function=shutil.copyfile)
    return dests


def build_release(dest: Path, assignment: str = ASSIGNMENTS[0]) -> Path:
    """Generate one assignment's release from the repository's source into ``dest`` (replaced if it exists)."""
    return build_releases({assignment: dest})[assignment]


def tree_files(root: Path) -> dict:
    """``relative path -> bytes`` of every file under ``root``."""
    root = Path(root)
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()}


def compare_trees(expected: Path, actual: Path) -> list:
    """Human-readable differences between two release trees (empty when byte-identical)."""
    want, got = tree_files(expected), tree_files(actual)
    problems = [f"missing: {name}" for name in sorted(set(want) - set(got))]
    problems += [f"unexpected: {name}" for name in sorted(set(got) - set(want))]
    problems += [f"differs: {name}" for name in sorted(set(want) & set(got)) if want[name] != got[name]]
    return problems


def check_release(committed: Path | None = None) -> list:
    """Differences between a fresh build and the committed releases (empty: in sync).

    ``committed`` is the folder holding ``<assignment>/`` release folders (default: ``release/``);
    differences are named relative to it (``module6_further/21_....ipynb``).
    """
    committed = REPO_ROOT / "release" if committed is None else Path(committed)
    with tempfile.TemporaryDirectory(prefix="module6-release-check-") as tmp:
        build_releases({assignment: Path(tmp) / "release" / assignment for assignment in ASSIGNMENTS})
        return compare_trees(Path(tmp) / "release", committed)


def main(argv: list | None = None, prog: str = "python -m autograder.authoring.release") -> int:
    # ``autograder release`` passes its own name, so --help shows the command that was typed.
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write: exit 1 if a release/<assignment> differs from a fresh build")
    args = parser.parse_args(argv)
    if args.check:
        problems = check_release()
        for problem in problems:
            print(problem)
        print("release/ is out of date: run `make release`" if problems else "release/ is up to date")
        return 1 if problems else 0
    dests = build_releases({assignment: release_dir(REPO_ROOT, assignment) for assignment in ASSIGNMENTS})
    for dest in dests.values():
        count = len(list(dest.glob("*.ipynb")))
        print(f"wrote {count} notebooks to {dest.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
