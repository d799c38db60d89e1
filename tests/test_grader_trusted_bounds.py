"""Issue 32, item 5: what one hostile submission costs a class, against the honest class in the same run.

A varying concept exercise with a written answer (``05_negative_kl``) is graded by ``autograder grade``
(a process pool of 2) for classes of three: two honest students and a third who is honest too (the
honest class) or hands in one attack:

* ``megabyte_id``: 4 MB (a list of 1.4 million numbers) in the ``STUDENT_ID`` cell, which the worker
  used to ``ast.parse`` whole (the class took 23 times as long, 1.4-2 GB per worker);
* ``nested_id``: ``a+a+...`` 6 KB long in the ``STUDENT_ID`` cell (``RecursionError`` in the worker: the
  batch stopped with exit status 3, and ``nbgrader autograde`` deleted the student's autograded folder);
* ``render_over``, ``render_lines`` and ``render_formulas``: a written answer of the renderer's worst
  shapes, 190,000 characters of it (under the old budget) and as much as the new budget formats;
* ``heavy`` and ``cheap``: extra code cells slow to highlight (``a+1;`` repeated) and the same number of
  cells of the same size cheap to highlight (one comment line each);
* ``refused``: a notebook over a limit of the intake (2,001 cells), refused unread.

The class's time is the batch's wall time (best of two runs, honest and hostile classes taking turns);
each notebook's grading process records its wall and CPU time (the CPU time is the trusted side alone:
the sandbox runs in other processes) and its peak memory. Code slow to highlight is as slow to run:
Pygments and IPython's tokenizer (which every cell goes through before it runs, in the sandbox) both
pay per token, about the same (23 and 22 ms for 2,000 characters of ``a+1;``), so no code is heavy to
highlight and cheap to run. That pair is compared as the class's time less the measured notebook's
own time in its sandbox (its code's, which the instructor's timeout caps, as for any loop): what the
trusted side spends on it.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy
from autograder.demo.simulate import write_class
from autograder.feedback.markdown import markdown_cost
from autograder.grading import batch
from autograder.grading.batch import Options, run
from autograder.grading.gradebook import GradebookWriter
from autograder.limits import ID_CELL_CHARS, PAGE_MARKDOWN_COST

pytestmark = pytest.mark.slow

STEM = "05_negative_kl"
HONEST = ("honest_a", "honest_b")
#: The measured student of every class (graded last: the worst place for a slow notebook).
THIRD = "zz_third"
#: The renderer's worst shapes per unit of its budget (autograder/feedback/markdown.py): one list item
#: per line, and formulas (MathML made for each).
WORST_LINE = "1. a\n"
WORST_FORMULA = "$a$ "
#: Extra code cells: slow to highlight (24 bytes of Pygments markup per character) or cheap to.
HEAVY_CELL = "a+1;" * 500
CHEAP_CELL = "# " + "x" * (len(HEAVY_CELL) - 2)
EXTRA_CELLS = 60
#: What the worker's own memory may reach (the sandboxed processes' limit, ``--memory``'s default).
MEMORY_MB = 1024
#: Classes whose wall time is compared with the honest class's.
COMPARED = ("megabyte_id", "nested_id", "render_over", "render_lines", "render_formulas")
#: Classes timed twice (best of two).
TIMED = ("honest", *COMPARED, "heavy", "cheap")


def _measured(task):
    """The worker's entry point, timed (wall, CPU of this process: the trusted side) and its peak memory."""
    from autograder.grading import worker

    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    result = worker.grade_notebook(task)
    after = resource.getrusage(resource.RUSAGE_SELF)
    record = {"student": task.student, "wall": time.perf_counter() - started,
              "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
              "rss_mb": after.ru_maxrss / 1024}
    with open(os.environ["TRUSTED_BOUNDS_LOG"], "a") as handle:
        handle.write(json.dumps(record) + "\n")
    return result


def _cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _written(nb):
    return next(c for c in nb.cells if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution"))


def _at_budget(piece: str) -> str:
    """``piece`` repeated as far as one page's Markdown budget goes (formatted, not shown as plain text)."""
    count = PAGE_MARKDOWN_COST.value // markdown_cost(piece)
    text = piece * count
    assert markdown_cost(text) <= PAGE_MARKDOWN_COST.value
    return text


ATTACKS = {
    "honest": lambda nb: None,
    "megabyte_id": lambda nb: setattr(_cell(nb, "student_id"), "source", _cell(nb, "student_id").source
                                      + "\nPADDING = [" + "0, " * 1_400_000 + "]\n"),
    "nested_id": lambda nb: setattr(_cell(nb, "student_id"), "source", _cell(nb, "student_id").source
                                    + "\nx = " + "a+" * 3_000 + "a\n"),
    "render_over": lambda nb: setattr(_written(nb), "source", "[*" * 95_000),
    "render_lines": lambda nb: setattr(_written(nb), "source", _at_budget(WORST_LINE)),
    "render_formulas": lambda nb: setattr(_written(nb), "source", _at_budget(WORST_FORMULA)),
    # Each cell its own text (the pages keep what they highlighted by content: copies would cost nothing).
    "heavy": lambda nb: nb.cells.extend(nbformat.v4.new_code_cell(f"{HEAVY_CELL}# {i:04}", id=f"heavy-{i}")
                                        for i in range(EXTRA_CELLS)),
    "cheap": lambda nb: nb.cells.extend(nbformat.v4.new_code_cell(f"{CHEAP_CELL}# {i:04}", id=f"cheap-{i}")
                                        for i in range(EXTRA_CELLS)),
    "refused": lambda nb: nb.cells.extend(nbformat.v4.new_markdown_cell("x", id=f"pad-{i}") for i in range(2_001)),
}


def _grade(course: Path, log: Path, report: Path | None = None) -> tuple:
    """Grade ``course`` again (``--force``): ``(status, seconds, {student: worker record})``."""
    log.write_text("")
    started = time.perf_counter()
    status = run(Options(assignment=ASSIGNMENT, course_dir=str(course), jobs=2, timeout=120, progress=False,
                         force=True, report=str(report) if report else None))
    seconds = time.perf_counter() - started
    return status, seconds, {record["student"]: record for record in map(json.loads, log.read_text().splitlines())}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    import shutil

    base = tmp_path_factory.mktemp("trusted")
    template = make_course_copy(base / "template", stems=[STEM])
    generate_release(template)
    write_class(template, {name: "solutions" for name in (*HONEST, THIRD)})
    courses = {}
    for name, attack in ATTACKS.items():
        course = Path(shutil.copytree(template, base / name))
        path = course / "submitted" / THIRD / ASSIGNMENT / f"{STEM}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        attack(nb)
        nbformat.write(nb, str(path))
        courses[name] = course
    log = base / "workers.jsonl"
    stored: dict = {}  # student -> the coordinator's seconds writing and storing its notebook

    def timed(function, student_of):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                student = student_of(args)
                stored[student] = stored.get(student, 0.0) + time.perf_counter() - started
        return wrapper

    patch = pytest.MonkeyPatch()
    patch.setenv("TRUSTED_BOUNDS_LOG", str(log))
    patch.setattr(batch, "grade_notebook", _measured)
    patch.setattr(batch, "write_outputs", timed(batch.write_outputs, lambda args: args[2]["student"]))
    patch.setattr(GradebookWriter, "save", timed(GradebookWriter.save, lambda args: args[1]))
    results: dict = {}
    try:
        _grade(template, log)  # what every run pays once in this process (imports, allow-list) is paid here
        for round_ in range(2):
            for name, course in courses.items():
                if round_ and name not in TIMED:
                    continue
                report = base / f"{name}.jsonl"
                stored.clear()
                status, seconds, workers = _grade(course, log, report)
                for student, record in workers.items():
                    record["stored"] = stored.get(student, 0.0)
                best = results.get(name)
                if best is None or seconds < best["seconds"]:
                    results[name] = {"status": status, "seconds": seconds, "workers": workers,
                                     "rows": [json.loads(line) for line in report.read_text().splitlines()]}
    finally:
        patch.undo()
    print("\nclass of three, batch seconds: " + json.dumps({n: round(r["seconds"], 2) for n, r in results.items()})
          + "\nthird student's notebook (worker): " + json.dumps(
              {n: {k: round(v, 3) for k, v in r["workers"][THIRD].items() if k != "student"} for n, r in results.items()}))
    return {"courses": courses, "results": results}


def _rows(graded, name: str) -> list:
    return [row for row in graded["results"][name]["rows"] if row["student"] == THIRD]


def _third(graded, name: str) -> dict:
    return graded["results"][name]["workers"][THIRD]


def test_every_class_is_graded_with_exit_status_0(graded):
    for name, result in graded["results"].items():
        assert result["status"] == 0, name
        assert _rows(graded, name), name
        assert not [row for row in result["rows"] if row["status"] in ("error", "grader_error")], name


@pytest.mark.parametrize("name", COMPARED)
def test_one_hostile_submission_costs_the_class_at_most_one_and_a_half_times_its_honest_time(graded, name):
    ratio = graded["results"][name]["seconds"] / graded["results"]["honest"]["seconds"]
    assert ratio <= 1.5, (name, ratio, graded["results"][name]["seconds"], graded["results"]["honest"]["seconds"])


def _outside_its_sandbox(graded, name: str) -> float:
    """The class's time less the measured notebook's time waiting on its sandbox (its grading process's
    wall time that was not its CPU time)."""
    third = _third(graded, name)
    return graded["results"][name]["seconds"] - (third["wall"] - third["cpu"])


def test_cells_slow_to_highlight_cost_the_class_what_cheap_ones_do(graded):
    """What the trusted side spends on the slow-to-highlight notebook beyond the cheap one (the grading
    process's CPU time and the coordinator's time storing it), added to the honest class's time."""
    heavy, cheap = _third(graded, "heavy"), _third(graded, "cheap")
    honest = graded["results"]["honest"]["seconds"]
    extra = (heavy["cpu"] + heavy["stored"]) - (cheap["cpu"] + cheap["stored"])
    assert (honest + extra) / honest <= 1.5, (extra, honest, heavy, cheap)
    print(f"\nthe class's time outside the measured notebook's sandbox, heavy / cheap: "
          f"{_outside_its_sandbox(graded, 'heavy') / _outside_its_sandbox(graded, 'cheap'):.2f}")


def test_no_worker_goes_past_its_memory_limit(graded):
    peaks = {name: max(record["rss_mb"] for record in result["workers"].values())
             for name, result in graded["results"].items()}
    assert max(peaks.values()) <= MEMORY_MB, peaks
    # The 4 MB id cell used to take 1.4 GB: now reading, writing and showing it is all it costs.
    assert peaks["megabyte_id"] <= peaks["honest"] + 256, peaks


def test_a_megabyte_id_cell_is_neither_parsed_nor_run_and_the_notebook_is_graded(graded):
    rows = _rows(graded, "megabyte_id")
    tests = [row for row in rows if row["grade_id"].startswith("test_")]
    assert tests and all(row["score"] == row["max_score"] for row in tests), rows  # the released cell ran
    page = (graded["courses"]["megabyte_id"] / "feedback" / THIRD / ASSIGNMENT / f"{STEM}.html").read_text()
    assert f"more than {ID_CELL_CHARS.value:,} characters, so the grader neither read nor ran it" in page


def test_a_deeply_nested_id_cell_costs_only_its_own_run(graded):
    rows = _rows(graded, "nested_id")
    assert {row["status"] for row in rows} <= {"graded", "needs_manual_grade"}, rows


def test_written_answers_past_the_budget_are_shown_as_plain_text(graded):
    for name, formatted in (("render_over", False), ("render_lines", True), ("render_formulas", True)):
        path = graded["courses"][name] / "autograded" / THIRD / ASSIGNMENT / f"{STEM}.ipynb"
        shown = _written(nbformat.read(str(path), as_version=4)).source
        assert ("Shown as plain text: too long to format." in shown) is not formatted, name
        assert len(shown) < 3_000_000
        if name == "render_lines":
            assert "<ol>" in shown
        if name == "render_formulas":
            assert "<math" in shown


def test_a_refusal_is_that_notebooks_status(graded):
    rows = _rows(graded, "refused")
    assert rows and {row["status"] for row in rows} == {"rejected"}, rows
    assert "the notebook has more than 2000 cells" in rows[0]["feedback"]
