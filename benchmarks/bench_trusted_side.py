"""What one hostile submission costs a class on the trusted side (issue 32, item 5), as ratios in one run.

    python benchmarks/bench_trusted_side.py [--rounds 2] [--cells 1960] [--keep]

Grades, with ``autograder grade`` (in this process, a pool of ``--jobs`` workers), classes of three on
``05_negative_kl`` (numbers that vary, a written answer): two honest students and a third who is honest
(the honest class) or hands in the issue's attacks exactly:

* ``megabyte_id``: a 4 MB list in the ``STUDENT_ID`` cell;
* ``nested_id``: ``a+a+...`` 6 KB long in the ``STUDENT_ID`` cell;
* ``render_*``: a written answer of the renderer's worst shapes, 190,000 characters (the old budget);
* ``heavy`` and ``cheap``: ``--cells`` extra code cells of 9.8 KB each, ``a+1;`` repeated (slow to
  highlight, and to run) or one comment line each (the issue's notebook at the limits: 1,960 of them,
  19.5 MB).

For each class it prints the batch's wall time (best of ``--rounds``), its ratio to the honest class,
the exit status, and the third notebook's grading process: wall and CPU seconds (the CPU time is the
trusted side: the sandbox runs in other processes) and peak memory. Nothing here needs the code under
test to be new: run it from another checkout with ``PYTHONPATH=that/checkout`` to measure before a change.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy  # noqa: E402
from autograder.demo.simulate import write_class  # noqa: E402
from autograder.grading import batch  # noqa: E402
from autograder.grading.batch import Options, run  # noqa: E402
from simulated_class import scratch_folder  # noqa: E402

STEM = "05_negative_kl"
THIRD = "zz_third"
HEAVY_CELL = "a+1;" * 2450
CHEAP_CELL = "# " + "x" * 9798


def _measured(task):
    from autograder.grading import worker

    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    try:
        return worker.grade_notebook(task)
    finally:
        after = resource.getrusage(resource.RUSAGE_SELF)
        with open(os.environ["BENCH_TRUSTED_LOG"], "a") as handle:
            handle.write(json.dumps({"student": task.student, "wall": time.perf_counter() - started,
                                     "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
                                     "rss_mb": after.ru_maxrss / 1024}) + "\n")


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _written(nb):
    return next(c for c in nb.cells if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution"))


def attacks(cells: int) -> dict:
    def extra(text):
        # Each cell its own text, of the same length (the pages keep what they highlighted by content).
        return lambda nb: nb.cells.extend(nbformat.v4.new_code_cell(text[:-8] + f";#{i:06}", id=f"x{i}")
                                          for i in range(cells))
    return {
        "honest": lambda nb: None,
        "megabyte_id": lambda nb: setattr(_cell(nb, "student_id"), "source", _cell(nb, "student_id").source
                                          + "\nPADDING = [" + "0, " * 1_400_000 + "]\n"),
        "nested_id": lambda nb: setattr(_cell(nb, "student_id"), "source", _cell(nb, "student_id").source
                                        + "\nx = " + "a+" * 3_000 + "a\n"),
        "render_brackets": lambda nb: setattr(_written(nb), "source", "[*" * 95_000),
        "render_lines": lambda nb: setattr(_written(nb), "source", "1. a\n" * 38_000),
        "render_formulas": lambda nb: setattr(_written(nb), "source", "$a$ " * 47_500),
        "heavy": extra(HEAVY_CELL),
        "cheap": extra(CHEAP_CELL),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cells", type=int, default=200, help="extra cells of the heavy and cheap notebooks")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default: the course's)")
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    chosen = attacks(args.cells)
    if args.only:
        chosen = {name: chosen[name] for name in ["honest", *args.only.split(",")]}
    with scratch_folder("bench-trusted-", keep=args.keep) as base:
        template = make_course_copy(base / "template", stems=[STEM])
        generate_release(template)
        write_class(template, {"honest_a": "solutions", "honest_b": "solutions", THIRD: "solutions"})
        courses = {}
        for name, attack in chosen.items():
            course = Path(shutil.copytree(template, base / name))
            path = course / "submitted" / THIRD / ASSIGNMENT / f"{STEM}.ipynb"
            nb = nbformat.read(str(path), as_version=4)
            attack(nb)
            nbformat.write(nb, str(path))
            courses[name] = course
        log = base / "workers.jsonl"
        os.environ["BENCH_TRUSTED_LOG"] = str(log)
        batch.grade_notebook = _measured
        options = dict(assignment=ASSIGNMENT, jobs=args.jobs, progress=False, force=True, timeout=args.timeout)
        with open(os.devnull, "w") as quiet:
            saved, sys.stdout = sys.stdout, quiet
            try:
                run(Options(course_dir=str(template), **options))  # imports and the allow-list, once
                best: dict = {}
                for _ in range(args.rounds):
                    for name, course in courses.items():
                        log.write_text("")
                        started = time.perf_counter()
                        try:
                            status = run(Options(course_dir=str(course), **options))
                        except BaseException as error:  # noqa: BLE001 - a crash is a result here
                            status = f"{type(error).__name__}: {error}"[:60]
                        seconds = time.perf_counter() - started
                        third = next((json.loads(line) for line in log.read_text().splitlines()
                                      if json.loads(line)["student"] == THIRD), {})
                        if name not in best or seconds < best[name][0]:
                            best[name] = (seconds, status, third)
            finally:
                sys.stdout = saved
    honest = best["honest"][0]
    print(f"class of three on {STEM}, --jobs {args.jobs}, best of {args.rounds}; heavy/cheap: {args.cells} cells")
    print(f"{'class':16} {'batch s':>8} {'ratio':>6} {'exit':>5} {'3rd wall':>9} {'3rd cpu':>8} {'3rd MB':>7}")
    for name, (seconds, status, third) in best.items():
        print(f"{name:16} {seconds:8.2f} {seconds / honest:6.2f} {str(status):>5} {third.get('wall', float('nan')):9.2f} "
              f"{third.get('cpu', float('nan')):8.2f} {third.get('rss_mb', float('nan')):7.0f}")
    if "heavy" in best and "cheap" in best:
        print(f"heavy / cheap: batch {best['heavy'][0] / best['cheap'][0]:.2f}, grading process CPU "
              f"{best['heavy'][2].get('cpu', 0) / max(best['cheap'][2].get('cpu', 1e-9), 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
