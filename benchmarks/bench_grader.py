"""Throughput of ``autograder grade`` against plain ``nbgrader autograde`` on the same files, side by side.

    python benchmarks/bench_grader.py [--students 12] [--jobs 2] [--keep]

Builds a scratch course from ``source/module6`` (every notebook present), a simulated class
(``solutions`` / ``untouched`` / one wrong function, cycling), then grades two identical copies:
one with ``nbgrader autograde module6``, one with ``autograder grade module6 --jobs N``. Also
measures the floor: starting a sandboxed Python that imports NumPy (bubblewrap, as the grader
would without its pre-forked zygote). Prints the ratio and the cost per notebook.

Both sides import one frozen copy of ``autograder`` and ``course`` taken at the start: the
nbgrader phase lasts minutes, and its kernels would otherwise import whatever the (shared,
editable) working tree holds when each one starts. Every test cell whose scores differ is listed
with its cause (:mod:`autograder.demo.compare`); the exit status is 1 when a difference is
unexplained or on the batch grader's side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from autograder.authoring import scratch_course  # noqa: E402
from autograder.demo.compare import compare, freeze_code, imported_from  # noqa: E402
from autograder.demo.simulate import write_class  # noqa: E402
from simulated_class import cycling_class, released_stems, scratch_folder  # noqa: E402


def _class(course: Path, count: int) -> dict:
    """The cycling class of :mod:`simulated_class`, on the coding exercises (15 on) when there are any."""
    stems = released_stems(course)
    return cycling_class(course, count, [s for s in stems if int(s[:2]) >= 15] or stems)


def _floor(repeats: int = 10) -> float:
    """Seconds to start a bubblewrapped Python and import NumPy (no zygote)."""
    from autograder.grading.sandbox import bubblewrap
    bwrap = bubblewrap()
    prefix = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
              "--unshare-all", "--die-with-parent"] if bwrap else []
    command = prefix + [sys.executable, "-I", "-c", "import numpy"]
    subprocess.run(command, check=True)
    start = time.perf_counter()
    for _ in range(repeats):
        subprocess.run(command, check=True)
    return (time.perf_counter() - start) / repeats


def _nbgrader_autograde(course: Path, env: dict) -> subprocess.CompletedProcess:
    """``nbgrader autograde module6 --force`` in ``course`` with ``env`` (its kernels inherit it)."""
    return subprocess.run([sys.executable, "-m", "nbgrader", "autograde", scratch_course.ASSIGNMENT, "--force"],
                          cwd=course, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    args = parser.parse_args(argv)
    holds = "code/ = the frozen packages, nbgrader/ + nbgrader.log, autograder/ + report.jsonl"
    with scratch_folder("bench-grader-", keep=args.keep, holds=holds) as base:
        env = freeze_code(base / "code")
        where = imported_from(env, cwd=base)
        if any(Path(path).parent != base / "code" for path in where.values()):
            print(f"the frozen code is not what Python imports: {where}")
            return 1
        theirs = scratch_course.make_course_copy(base / "nbgrader")
        scratch_course.generate_release(theirs)
        write_class(theirs, _class(theirs, args.students))
        ours = base / "autograder"
        shutil.copytree(theirs, ours)
        notebooks = len(list((theirs / "submitted").rglob("*.ipynb")))

        start = time.perf_counter()
        run = _nbgrader_autograde(theirs, env)
        nbgrader_seconds = time.perf_counter() - start
        (base / "nbgrader.log").write_text(run.stdout)

        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade", scratch_course.ASSIGNMENT,
                               "--jobs", str(args.jobs), "--no-progress", "--report", str(base / "report.jsonl")],
                              cwd=ours, env=env, capture_output=True, text=True)
        ours_seconds = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
            return 1
        floor = _floor()
        result = compare(theirs, ours, nbgrader_log=run.stdout, report=base / "report.jsonl")
        print(f"class: {args.students} students x {notebooks // max(args.students, 1)} notebooks = {notebooks}")
        print(f"nbgrader autograde : {nbgrader_seconds:8.1f} s  ({nbgrader_seconds / notebooks:.3f} s/notebook, "
              f"exit {run.returncode})")
        print(f"autograder grade   : {ours_seconds:8.1f} s  ({ours_seconds / notebooks:.3f} s/notebook wall, "
              f"{ours_seconds * args.jobs / notebooks:.3f} core-s/notebook, --jobs {args.jobs})")
        print(f"throughput ratio   : {nbgrader_seconds / ours_seconds:8.1f} x")
        print(f"floor (bwrap python + import numpy, no zygote): {floor:.3f} s; "
              f"our core-s per notebook / floor = {ours_seconds * args.jobs / notebooks / floor:.2f}")
        print(f"identical test-cell scores: {result.identical}/{result.notebooks} notebooks")
        for title, group in (("nbgrader did not run the check (not the batch grader's doing)", result.on_nbgrader_side),
                             ("the batch grader did not run the check", result.on_grader_side),
                             ("UNEXPLAINED: both ran, the scores differ", result.unexplained)):
            print(f"{title}: {len(group)} test cells")
            for difference in group:
                print("  " + difference.line())
        return 1 if result.unexplained or result.on_grader_side else 0


if __name__ == "__main__":
    sys.exit(main())
