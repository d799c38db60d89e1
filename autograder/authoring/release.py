"""Regenerate (or check) the committed student release ``release/module6`` from ``source/module6``.

``python -m autograder.authoring.release`` runs ``nbgrader generate_assignment module6 --force`` in a scratch copy
of the course (so the repository never gets a gradebook) and replaces ``release/module6`` with the
result. ``--check`` only compares: exit status 1 and a list of differing files when the committed
release is out of date. The output depends on the source alone, so a rerun is byte-identical.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from autograder.authoring.scratch_course import REPO_ROOT, generate_release, make_course_copy, release_dir


def build_release(dest: Path) -> Path:
    """Generate the release from the repository's source into ``dest`` (replaced if it exists)."""
    dest = Path(dest)
    with tempfile.TemporaryDirectory(prefix="module6-release-") as tmp:
        course = make_course_copy(Path(tmp) / "course")
        generate_release(course)
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        # copyfile: contents only, so modes and timestamps of the scratch run never matter.
        shutil.copytree(release_dir(course), dest, copy_function=shutil.copyfile)
    return dest


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
    """Differences between a fresh build and the committed release (empty: in sync)."""
    committed = release_dir(REPO_ROOT) if committed is None else Path(committed)
    with tempfile.TemporaryDirectory(prefix="module6-release-check-") as tmp:
        fresh = build_release(Path(tmp) / "release")
        return compare_trees(fresh, committed)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.authoring.release", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write: exit 1 if release/module6 differs from a fresh build")
    args = parser.parse_args(argv)
    if args.check:
        problems = check_release()
        for problem in problems:
            print(problem)
        print("release/module6 is out of date: run `make release`" if problems else "release/module6 is up to date")
        return 1 if problems else 0
    dest = build_release(release_dir(REPO_ROOT))
    count = len(list(dest.glob("*.ipynb")))
    print(f"wrote {count} notebooks to {dest.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
