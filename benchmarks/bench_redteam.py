"""What one attacker costs a class: ``autograder grade`` on an honest class, then with one attacker.

    python benchmarks/bench_redteam.py [--students 50] [--jobs 2] [--keep]
    python benchmarks/bench_redteam.py --highlight [--stem 15_stable_log_softmax]
    python benchmarks/bench_redteam.py --class-of 30 [--stems 5] [--dask]

``--highlight`` (issue 20): one notebook at the limits (1,960 extra code cells of 9.8 KB, 18.5 MB) made
of code that is slow to highlight (``a+1;`` repeated) against the same number of cells of the same
size that are cheap to highlight (one comment line each): ``autograder grade`` then ``nbgrader
generate_feedback``, wall time of each and the size of both feedback pages (goal: ratio <= 3, pages
under 5 MB).

``--class-of N`` (issue 20): a class of N honest students alone, then with one student whose every
notebook sits at the limits (the slow-to-highlight notebook above): how long until every honest grade
is written (the newest honest autograded notebook), against the honest class alone (goal: <= 1.5).
On ``--jobs`` workers, and with ``--dask`` on a local Dask cluster of as many workers as well.

Builds a scratch course from ``source/module6`` (all 20 notebooks), a simulated honest class
(``solutions`` / ``untouched`` / one wrong function, cycling) of ``--students`` students, grades it,
then grades the same class plus one attacker (issue 11) whose 20 notebooks are the solutions except:

* 15: 500,000 extra cells (the file is over the size limit: rejected unread);
* 16: 150,000 extra cells under the size limit (parsed once, rejected on the cell count);
* 17: prints 240 MB and writes forged 30 MB reply frames on every fd (the reply budget stops it);
* 18: patches the sandbox's encoder through ``gc`` to send an ``|S0`` array of shape (6e8,);
* 19: a reply 5,000 brackets deep and a header announcing 2 GB on every fd;
* 20: parks 64 MB in SysV shared memory and a key in the user keyring, forges zygote frames and leaves
  a process behind.

Prints both wall times, their ratio (issue 11 asks for less than 2) and the attacker's rows. A
notebook that loops until its timeout costs exactly ``--timeout``: that price is the instructor's
setting, so the attacker here uses none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from autograder.authoring import scratch_course  # noqa: E402
from autograder.demo.simulate import write_class  # noqa: E402
from simulated_class import cycling_class, scratch_folder  # noqa: E402
from hostile import redteam  # noqa: E402

ATTACKS = {
    "17_sequence_metrics": redteam.OUTPUT_FLOOD.replace(redteam.RIGHT, ""),
    "18_kl_estimators": redteam.DECODE_BOMB.replace("def double(x):\n    return bomb\n", ""),
    "19_sampling_transforms": redteam.MALFORMED.replace(redteam.RIGHT, ""),
    "20_rollout_validation": redteam.SYSV_KEYRING.replace(redteam.WRONG, "").replace("ANSWER = ", "_unused = ")
    + redteam.FORGE_FRAMES.replace(redteam.WRONG, ""),
}


def _attacker(course: Path) -> None:
    folder = course / "submitted" / "zz_attacker" / scratch_course.ASSIGNMENT
    for stem, attack in ATTACKS.items():
        path = folder / f"{stem}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
        first.source = attack + "\n" + first.source
        nbformat.write(nb, str(path))
    for stem, count in (("15_stable_log_softmax", 500_000), ("16_causal_shift", 150_000)):
        path = folder / f"{stem}.ipynb"
        data = json.loads(path.read_text())
        data["cells"].extend({"cell_type": "raw", "metadata": {}, "source": "", "id": f"x{i}"} for i in range(count))
        path.write_text(json.dumps(data, separators=(",", ":")))


def _grade(course: Path, jobs: int, report: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", scratch_course.ASSIGNMENT, "--jobs", str(jobs),
                           "--no-progress", "--force", "--report", str(report)], cwd=course, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    print(proc.stdout.strip().splitlines()[-1])
    return seconds


#: The highlighting attack: extra cells of ~9.8 KB, as many as fit under the 2,000-cell limit.
HEAVY_CELL = "a+1;" * 2450
CHEAP_CELL = "# " + "x" * 9798
EXTRA_CELLS = 1_960


def _at_the_limits(path: Path, cell: str, count: int = EXTRA_CELLS) -> None:
    """Append ``count`` extra code cells of ``cell`` to the submitted notebook at ``path``."""
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.extend(nbformat.v4.new_code_cell(cell, id=f"limit-{i}") for i in range(count))
    nbformat.write(nb, str(path))


def _run(course: Path, *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", *args], cwd=course, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return time.perf_counter() - start


def _page_sizes(course: Path, student: str) -> list:
    return [path.stat().st_size for path in sorted((course / "feedback" / student).rglob("*.html"))]


def highlight_attack(base: Path, stem: str) -> int:
    course = scratch_course.make_course_copy(base / "course", stems=[stem])
    scratch_course.generate_release(course)
    write_class(course, {"heavy": "solutions", "cheap": "solutions"})
    _at_the_limits(course / "submitted" / "heavy" / scratch_course.ASSIGNMENT / f"{stem}.ipynb", HEAVY_CELL)
    _at_the_limits(course / "submitted" / "cheap" / scratch_course.ASSIGNMENT / f"{stem}.ipynb", CHEAP_CELL)
    size = (course / "submitted" / "heavy" / scratch_course.ASSIGNMENT / f"{stem}.ipynb").stat().st_size
    print(f"notebook {stem}: {EXTRA_CELLS} extra cells, {size / 1e6:.1f} MB each")
    seconds = {}
    for student in ("cheap", "heavy"):
        grade = _run(course, "autograder", "grade", scratch_course.ASSIGNMENT, "--student", student, "--jobs", "1",
                     "--no-progress", "--force")
        ours = _page_sizes(course, student)
        feedback = _run(course, "nbgrader", "generate_feedback", scratch_course.ASSIGNMENT, "--student", student,
                        "--force")
        theirs = _page_sizes(course, student)
        seconds[student] = (grade, feedback)
        print(f"{student:6}: autograder grade {grade:6.1f} s (page {max(ours) / 1e6:.2f} MB), "
              f"nbgrader generate_feedback {feedback:6.1f} s (page {max(theirs) / 1e6:.2f} MB)")
        if max(ours + theirs) >= 5_000_000:
            print(f"  a page of {student} is over 5 MB")
            return 1
    ratio = sum(seconds["heavy"]) / sum(seconds["cheap"])
    print(f"heavy / cheap (grade + feedback): {ratio:.2f} (goal <= 3)")
    return 0 if ratio <= 3 else 1


def _last_honest_write(course: Path, hostile: str, started: float) -> float:
    """Seconds from ``started`` (a wall-clock time) to the newest honest autograded notebook."""
    newest = max(path.stat().st_mtime for path in (course / "autograded").rglob("*.ipynb")
                 if path.relative_to(course / "autograded").parts[0] != hostile)
    return newest - started


def class_with_one_hostile(base: Path, students: int, stem_count: int, jobs: int, dask: bool) -> int:
    stems = scratch_course.notebook_stems()[:stem_count]
    honest = scratch_course.make_course_copy(base / "honest", stems=stems)
    scratch_course.generate_release(honest)
    write_class(honest, cycling_class(honest, students))
    hostile = base / "hostile"
    shutil.copytree(honest, hostile)
    write_class(hostile, {"zz_limits": "solutions"})
    for stem in stems:
        _at_the_limits(hostile / "submitted" / "zz_limits" / scratch_course.ASSIGNMENT / f"{stem}.ipynb", HEAVY_CELL)
    cluster = None
    try:
        where = ["--jobs", str(jobs)]
        if dask:
            import distributed
            cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                               dashboard_address=None)
            where = ["--dask", cluster.scheduler_address]
        results = {}
        for name, course in (("honest", honest), ("hostile", hostile)):
            started = time.time()
            total = _run(course, "autograder", "grade", scratch_course.ASSIGNMENT, *where, "--no-progress", "--force")
            results[name] = (_last_honest_write(course, "zz_limits", started), total)
    finally:
        if cluster is not None:
            cluster.close()
    print(f"class: {students} honest students x {len(stems)} notebooks, "
          f"{'Dask, ' + str(jobs) + ' workers' if dask else '--jobs ' + str(jobs)}; the hostile student's "
          f"{len(stems)} notebooks are each {EXTRA_CELLS} cells of 9.8 KB")
    for name, (last, total) in results.items():
        print(f"{name:8}: last honest grade written after {last:7.1f} s (whole batch {total:7.1f} s)")
    ratio = results["hostile"][0] / results["honest"][0]
    print(f"last honest grade, with / without the hostile student: {ratio:.2f} (goal <= 1.5)")
    return 0 if ratio <= 1.5 else 1


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    parser.add_argument("--highlight", action="store_true", help="the highlighting attack (issue 20)")
    parser.add_argument("--stem", default="15_stable_log_softmax", help="notebook of the highlighting attack")
    parser.add_argument("--class-of", type=int, default=None, metavar="N",
                        help="N honest students and one whose every notebook sits at the limits (issue 20)")
    parser.add_argument("--stems", type=int, default=20, help="with --class-of: the first this many notebooks")
    parser.add_argument("--dask", action="store_true", help="with --class-of: grade on a local Dask cluster")
    args = parser.parse_args(argv)
    if args.highlight:
        with scratch_folder("bench-highlight-", keep=args.keep) as base:
            return highlight_attack(base, args.stem)
    if args.class_of is not None:
        with scratch_folder("bench-class-", keep=args.keep) as base:
            return class_with_one_hostile(base, args.class_of, args.stems, args.jobs, args.dask)
    with scratch_folder("bench-redteam-", keep=args.keep) as base:
        honest = scratch_course.make_course_copy(base / "honest")
        scratch_course.generate_release(honest)
        profiles = cycling_class(honest, args.students)
        write_class(honest, profiles)
        attacked = base / "attacked"
        shutil.copytree(honest, attacked)
        write_class(attacked, {"zz_attacker": "solutions"})
        _attacker(attacked)
        honest_seconds = _grade(honest, args.jobs, base / "honest.jsonl")
        attacked_seconds = _grade(attacked, args.jobs, base / "attacked.jsonl")
        rows = [json.loads(line) for line in (base / "attacked.jsonl").read_text().splitlines()]
        before = {(r["student"], r["notebook"], r["grade_id"]): r["score"]
                  for r in map(json.loads, (base / "honest.jsonl").read_text().splitlines())}
        changed = [r for r in rows if r["student"] != "zz_attacker"
                   and before.get((r["student"], r["notebook"], r["grade_id"])) != r["score"]]
        print(f"class: {args.students} students x 20 notebooks, --jobs {args.jobs}")
        print(f"honest class          : {honest_seconds:8.1f} s")
        print(f"with one attacker     : {attacked_seconds:8.1f} s")
        print(f"ratio                 : {attacked_seconds / honest_seconds:8.2f} (issue 11: < 2)")
        print(f"honest rows changed by the attacker: {len(changed)}")
        for row in sorted((r for r in rows if r["student"] == "zz_attacker"), key=lambda r: (r["notebook"],
                                                                                            str(r["grade_id"]))):
            if row["notebook"] in ATTACKS or row["notebook"].startswith(("15", "16")):
                print(f"  attacker {row['notebook']:26} {str(row['grade_id']):28} {row['status']:10} {row['score']}")
        return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
