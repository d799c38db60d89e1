"""End-to-end demo: release, a simulated class, grading, and a grade table, all in a scratch course.

``python -m autograder.demo`` copies the course into a temporary directory (never touching the
repository), and for each assignment (``module6``, then ``module6_further``) generates the release
there, writes five students' submissions (see :func:`autograder.demo.simulate.default_class`), grades
them and prints each student's autograded points per notebook and overall. A notebook whose grading failed shows ``ERR``; one not handed in shows ``-``.
The graded course is kept in ``build/demo`` (``--keep``) with the feedback pages, the class report
and the similarity page (``autograder report`` / ``similarity``), and the demo prints where they are.

``--grader autograder`` grades with the course's batch grader (``autograder grade ASSIGNMENT``),
``--grader nbgrader`` with plain ``nbgrader autograde``; the default uses the batch grader when
``autograder.cli`` is installed and works, nbgrader otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.authoring.scratch_course import (
    ASSIGNMENT, ASSIGNMENTS, generate_release, make_course_copy, notebook_points, read_gradebook, run_nbgrader,
)
from autograder.demo.simulate import default_class, write_class


def batch_grader_available() -> bool:
    """True when ``autograder.cli`` is importable and answers ``--help``."""
    if importlib.util.find_spec("autograder.cli") is None:
        return False
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "--help"], capture_output=True, text=True,
                          timeout=120)
    return proc.returncode == 0


def grade_with_nbgrader(course: Path, assignment: str = ASSIGNMENT) -> tuple:
    run = run_nbgrader(course, "autograde", assignment, "--force", check=False)
    return run.returncode, run.output


def sandbox_notice() -> str:
    """What the demo prints when bubblewrap cannot run here ("" when it can).

    The demo then grades its simulated students with ``--no-sandbox``, which shows the notebook the same
    site-packages as the sandbox (the student view), so the grades are the sandbox's; only the isolation
    is missing. ``tests/test_demo_without_bubblewrap.py`` compares both tables.
    """
    from autograder.grading.sandbox import INSTALL_HELP, _probe_bubblewrap
    path, why = _probe_bubblewrap()
    if path is not None:
        return ""
    return (f"NOTE: {why.rstrip().rstrip('.')}, so this demo grades its simulated students WITHOUT the sandbox "
            "(--no-sandbox): the grades are those of sandboxed grading, but student code is not isolated. "
            f"Real grading needs the sandbox: {INSTALL_HELP}")


def grade_with_autograder(course: Path, assignment: str = ASSIGNMENT) -> tuple:
    from autograder.grading.sandbox import bubblewrap
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    # The demo grades simulated students in a scratch copy: where bubblewrap cannot run it says so
    # (sandbox_notice) and grades without the sandbox, with the sandbox's view of site-packages, so the
    # grades are the same; real grading never falls back by itself.
    unsandboxed = [] if bubblewrap() else ["--no-sandbox"]
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", assignment, "--no-progress", "--jobs", "2",
                           *unsandboxed],
                          cwd=course, env=env,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc.returncode, proc.stdout


def format_table(scores: dict, points: dict, profiles: dict | None = None, handed_in: dict | None = None) -> str:
    """A plain-text table: one row per student, autograded points per notebook, then the total.

    ``scores`` is :func:`autograder.authoring.scratch_course.read_gradebook`'s result, ``points`` maps a notebook
    to ``(autograded, written)`` maximum points, ``handed_in`` a student to the notebooks submitted
    (nbgrader records a notebook that was not handed in as a zero; the table shows ``-``).
    """
    stems = sorted(points)
    auto_max = sum(auto for auto, _ in points.values())
    written_max = sum(written for _, written in points.values())
    name_width = max([7] + [len(name) for name in scores])
    cell = 5

    def num(value):
        return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0")

    header = "student".ljust(name_width) + "".join(s[:2].rjust(cell) for s in stems) + "   total"
    lines = [header, "max".ljust(name_width) + "".join(num(points[s][0]).rjust(cell) for s in stems)
             + f"   {num(auto_max)}", "-" * len(header)]
    for student in sorted(scores):
        row = scores[student]
        cells, total, failed = [], 0.0, 0
        for stem in stems:
            entry = row.get(stem)
            if entry is None or handed_in is not None and stem not in handed_in.get(student, ()):
                cells.append("-")
            elif entry.auto_score is None:
                cells.append("ERR")
                failed += 1
            else:
                cells.append(num(entry.auto_score))
                total += entry.auto_score
        note = f"  ({failed} not graded)" if failed else ""
        if profiles and student in profiles:
            note += f"  [{profiles[student]}]"
        lines.append(student.ljust(name_width) + "".join(c.rjust(cell) for c in cells)
                     + f"   {num(total)}/{num(auto_max)}{note}")
    lines.append("")
    lines.append(f"Autograded points only: written answers ({num(written_max)} points in all) wait for a human "
                 "grader. ERR: grading failed for that notebook; -: not handed in.")
    return "\n".join(lines)


def run_demo(grader: str = "auto", students: dict | None = None, stems: list | None = None,
             keep: Path | None = None, out=sys.stdout) -> dict:
    """Run the whole demo, every assignment; returns the first assignment's ``{"scores", "points", "profiles",
    "seconds", "grader"}`` and ``"assignments"``, the same for each assignment by name."""
    if grader == "auto":
        grader = "autograder" if batch_grader_available() else "nbgrader"
    tmp = Path(tempfile.mkdtemp(prefix="module6-demo-"))
    try:
        course = make_course_copy(tmp / "course", stems=stems)
        results = {}
        # Every assignment of the course, one after the other, as an instructor grades them.
        for assignment in ASSIGNMENTS:
            if not any((course / "source" / assignment).glob("*.ipynb")):
                continue  # --notebook kept none of its notebooks
            results[assignment] = _grade_assignment(course, assignment, grader, students, out)
        if keep is not None:
            keep = Path(keep).resolve()
            if keep.exists():
                shutil.rmtree(keep)
            shutil.copytree(course, keep)
            for assignment, result in results.items():
                print_pages(keep, sorted(result["profiles"]), out, assignment)
        first = results[next(iter(results))]
        return {**first, "assignments": results}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _grade_assignment(course: Path, assignment: str, grader: str, students: dict, out) -> dict:
    """Release, hand in, grade and print the table of one assignment."""
    start = time.perf_counter()
    generate_release(course, assignment)
    print(f"\n{assignment}: release generated in {time.perf_counter() - start:.1f} s ({course})", file=out)
    students = students or default_class(course, assignment)  # chosen from this assignment's notebooks
    for name in sorted(students):
        print(f"  {name}: {students[name]}", file=out)
    write_class(course, students, assignment)
    notice = sandbox_notice() if grader == "autograder" else ""
    if notice:
        print(notice, file=out)
    start = time.perf_counter()
    code, log = (grade_with_autograder if grader == "autograder" else grade_with_nbgrader)(course, assignment)
    seconds = time.perf_counter() - start
    print(f"{assignment}: graded {len(students)} students with {grader} in {seconds:.1f} s (exit status {code})",
          file=out)
    if code != 0:
        # Expected when a simulated student crashes a kernel: the table still comes out.
        errors = [line for line in log.splitlines() if "ERROR" in line][:8]
        print("grader reported errors:\n  " + "\n  ".join(errors), file=out)
    scores = read_gradebook(course, sorted(students), assignment)
    points = notebook_points(course, assignment)
    print("", file=out)
    handed_in = {name: {p.stem for p in (course / "submitted" / name / assignment).glob("*.ipynb")}
                 for name in students}
    print(format_table(scores, points, students, handed_in), file=out)
    if grader == "autograder":
        insight_reports(course, assignment)
    return {"scores": scores, "points": points, "profiles": students, "seconds": seconds, "grader": grader}


def insight_reports(course: Path, assignment: str = ASSIGNMENT) -> None:
    """``autograder report`` and ``autograder similarity`` on the graded class (pages in course/reports)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    for command in ("report", "similarity"):
        subprocess.run([sys.executable, "-m", "autograder.cli", command, assignment], cwd=course, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)


def print_pages(course: Path, students: list, out=sys.stdout, assignment: str = ASSIGNMENT) -> None:
    """Where the pages of a kept demo course are: feedback per student, class report, similarity."""
    print("\nPages (open them in a browser; they need no network):", file=out)
    for student in students:
        folder = course / "feedback" / student / assignment
        pages = sorted(folder.glob("*.html"))
        if pages:
            print(f"  feedback for {student}: {folder}/ ({len(pages)} pages, e.g. {pages[-1].name})", file=out)
    for label, name in (("class report", f"{assignment}-report.html"), ("class report CSV", f"{assignment}-groups.csv"),
                        ("similar answers", f"{assignment}-similarity.html")):
        path = course / "reports" / name
        if path.exists():
            print(f"  {label}: {path}", file=out)


def main(argv: list | None = None, prog: str = "python -m autograder.demo") -> int:
    # ``autograder demo`` passes its own name, so --help shows the command that was typed.
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--grader", choices=["auto", "autograder", "nbgrader"], default="auto")
    parser.add_argument("--student", action="append", metavar="NAME=PROFILE",
                        help="a simulated student (repeatable; default: five students with different profiles)")
    parser.add_argument("--notebook", action="append", metavar="STEM", help="grade only these notebooks")
    parser.add_argument("--keep", type=Path, default=Path("build/demo"),
                        help="copy the graded course here, with its feedback pages and reports (default: build/demo; "
                             "replaced on every run)")
    args = parser.parse_args(argv)
    students = dict(item.split("=", 1) for item in args.student) if args.student else None
    run_demo(args.grader, students, args.notebook, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
