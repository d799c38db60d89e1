"""Time ``autograder report`` (and ``autograder similarity``) on a simulated class of 500 students.

    python benchmarks/bench_class_report.py [--students 500] [--repeats 3]

Grading 500 students takes a while; the report only reads the results. The class here is made of
report rows (:func:`autograder.demo.simulated_results.simulated_rows`: the real notebooks' case
groups, misconceptions, crashes and time-outs planted in known numbers) written as one JSON-lines
file (``--results``); the default source (the gradebook and the autograded notebooks, see
:mod:`autograder.insight.results`) needs a graded course and is not timed here (about 2 ms per
autograded notebook read, measured on the toy course). Timed as an instructor runs it: ``python -m autograder.cli report``
in a fresh process, so imports (matplotlib, nbgrader, the checks) are included. The in-process time
of :func:`autograder.insight.report.build` is printed too, and the counts are checked against the
plants, so a fast but wrong report fails loudly.

The similarity signal is timed on 500 submissions of exercise 15's answer cell (a handful of
distinct solutions, each shared by many students, plus planted copies), in process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.demo.simulated_results import simulated_rows  # noqa: E402
from autograder.results import write_jsonl  # noqa: E402
from autograder.insight import report as class_report  # noqa: E402

PLANT = {
    ("19_sampling_transforms", "top_p", "top-p-keeps-extra"): 211,
    ("15_stable_log_softmax", "numerics", "no-max-shift"): 97,
    ("19_sampling_transforms", "temperature", "temperature-multiplied"): 40,
    ("12_top_p_nucleus", "threshold_080", "top-p-keeps-extra"): 150,
}


def timed_cli(course: Path, *extra: str) -> tuple:
    """(wall seconds, CPU seconds) of one ``autograder report`` in a fresh process.

    On a shared, busy machine the wall time mostly measures waiting for a core; the CPU time
    (user + system, from the child's rusage) is what the report itself costs.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "report", "module6", "--course-dir", str(course),
                           "--no-gradebook", *extra], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    rows = simulated_rows(args.students, seed=7, plant=PLANT, crash={"16_causal_shift": 23, "20_rollout_validation": 8},
                          timeout={"18_kl_estimators": 11}, missing={"20_rollout_validation": 14})
    print(f"{args.students} students, {len(rows)} report rows")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        course = Path(tmp)
        results = course / "grades.jsonl"
        write_jsonl(str(results), rows)

        report = class_report.summarise(rows, "module6")
        wrong = [(k, n, report.misconception(k[0], k[2])) for k, n in PLANT.items()
                 if report.misconception(k[0], k[2]) != n]
        if wrong:
            raise SystemExit(f"report counts differ from the plants: {wrong}")
        print("counts match the plants")

        for label, extra in (("--results grades.jsonl", ("--results", str(results))),):
            runs = [timed_cli(course, *extra) for _ in range(args.repeats)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            print(f"autograder report, {label:24}: wall median {statistics.median(walls):.2f} s "
                  f"(min {min(walls):.2f}), CPU median {statistics.median(cpus):.2f} s (min {min(cpus):.2f}); "
                  f"a fresh process, imports included")
        inner, inner_cpu = [], []
        for _ in range(args.repeats):
            cpu = time.process_time()
            made = class_report.build(course, "module6", results=results, output=course / "reports",
                                      use_gradebook=False)
            inner.append(made["seconds"])
            inner_cpu.append(time.process_time() - cpu)
        print(f"report.build in process (rows read, summary, 3 plots, HTML, CSV): wall median "
              f"{statistics.median(inner):.2f} s, CPU median {statistics.median(inner_cpu):.2f} s; "
              f"page {made['html'].stat().st_size / 1024:.0f} KiB")

    from autograder.insight import similarity
    sys.path.insert(0, str(ROOT / "tests"))
    from test_similarity import CELL, COPY_OF_2, COPY_OF_5, HONEST, STEM, _reference  # noqa: E402

    # Most students share one of the common solutions (the worked one and six variants, ~70 each);
    # honest variants 2 and 5 are written once each and copied once each.
    common = [_reference()] + [code for i, code in enumerate(HONEST) if i not in (2, 5)]
    codes = {f"s{i:04d}": common[i % len(common)] for i in range(args.students - 4)}
    codes.update({"odd_a": HONEST[2], "copy_a": COPY_OF_2, "odd_b": HONEST[5], "copy_b": COPY_OF_5})
    started, cpu = time.perf_counter(), time.process_time()
    pairs = similarity.find_pairs({(STEM, CELL): codes})
    print(f"similarity on {len(codes)} submissions of one cell: wall {time.perf_counter() - started:.2f} s, "
          f"CPU {time.process_time() - cpu:.2f} s; pairs listed: {[(p.left, p.right) for p in pairs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
