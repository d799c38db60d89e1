"""What one attacker costs a class: ``autograder grade`` on an honest class, then with one attacker.

    python benchmarks/bench_redteam.py [--students 50] [--jobs 2] [--keep]

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


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", action="store_true", help="keep the scratch courses")
    args = parser.parse_args(argv)
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
