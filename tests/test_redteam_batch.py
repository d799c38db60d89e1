"""Issue 11's red-team corpus, graded in one batch beside honest students (process pool, 2 workers).

Each attack costs only its own notebook: the honest students' scores are exact, the attackers get
what their plainly wrong (or self-sabotaged) answers earn, rejected and linked submissions are
reported with their own status, no result of the grader's own failure is cached, a re-run without
``--force`` changes nothing, and no process outlives the batch.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import nbformat
import pytest

from hostile import redteam, toy
from inert_support import violations
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from autograder.grading.batch import Options, run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("redteam")]

HONEST = ("honest_a", "honest_m", "honest_z")


def _rows(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by(rows, student, grade_id):
    (row,) = [r for r in rows if r["student"] == student and r["grade_id"] == grade_id]
    return row


def _processes(marker: str) -> list:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path("/proc", entry, "cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _many_cells(nb):
    nb.cells.extend(nbformat.v4.new_markdown_cell("padding") for _ in range(5_000))


def _submit_raw(course: Path, student: str, writer) -> Path:
    folder = course / "submitted" / student / toy.ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{toy.STEM}.ipynb"
    writer(target)
    return target


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = toy.copy_course(toy.template(), tmp_path_factory.mktemp("redteam") / "course")
    for student in HONEST:
        toy.submit(course, student, toy.honest_answers())
    for student, answers, _ in redteam.CORPUS:
        toy.submit(course, student, answers)
    # The submitted files themselves as the attack.
    toy.submit(course, "rt_many_cells", toy.honest_answers(), cells=_many_cells)
    deep = toy.submit(course, "rt_deep_json", toy.honest_answers())
    # 5,000 nested arrays: the depth at which a recursive JSON parser raises RecursionError.
    deep.write_text(deep.read_text().replace('"nbformat": 4', '"deep": ' + "[" * 5_000 + "]" * 5_000
                                             + ', "nbformat": 4', 1))
    big = toy.submit(course, "rt_huge_file", toy.honest_answers())
    nb = json.loads(big.read_text())
    nb["metadata"]["padding"] = "p" * (25 * 1024 * 1024)
    big.write_text(json.dumps(nb))
    _submit_raw(course, "rt_fifo", lambda target: os.mkfifo(target))
    # Symbolic links: to another student's notebook, to the instructor's source, a whole folder.
    honest_nb = course / "submitted" / "honest_a" / toy.ASSIGNMENT / f"{toy.STEM}.ipynb"
    _submit_raw(course, "rt_link_other", lambda target: target.symlink_to(honest_nb))
    _submit_raw(course, "rt_link_source",
                lambda target: target.symlink_to(course / "source" / toy.ASSIGNMENT / f"{toy.STEM}.ipynb"))
    (course / "submitted" / "rt_link_folder").symlink_to(course / "submitted" / "honest_m")
    toy.submit(course, "odd name ü $(x)", toy.honest_answers())

    report = course / "report.jsonl"
    status = run(Options(assignment="toy", course_dir=str(course), jobs=2, timeout=30, report=str(report),
                         progress=False))
    rows = _rows(report)
    state = {path.parent.parent.name: json.loads(path.read_text())
             for path in (course / "autograded").glob(f"*/{toy.ASSIGNMENT}/.autograder-state.json")}
    again = course / "again.jsonl"
    second = run(Options(assignment="toy", course_dir=str(course), jobs=2, timeout=30, report=str(again),
                         progress=False))
    return {"course": course, "status": status, "rows": rows, "state": state, "second": second,
            "again": _rows(again)}


def test_the_batch_runs(graded):
    assert graded["status"] == 0 and graded["second"] == 0


@pytest.mark.parametrize("student", [*HONEST, "odd name ü $(x)"])
def test_honest_students_keep_every_point(graded, student):
    assert _by(graded["rows"], student, "test_double")["score"] == 2.0
    assert _by(graded["rows"], student, "test_answer")["score"] == 1.0
    assert _by(graded["rows"], student, "explain_why")["status"] == "needs_manual_grade"


@pytest.mark.parametrize("student,answers,expected", redteam.CORPUS, ids=[e[0] for e in redteam.CORPUS])
def test_each_attack_costs_only_its_own_points(graded, student, answers, expected):
    for grade_id, score in expected.items():
        row = _by(graded["rows"], student, grade_id)
        assert row["score"] == score, row


@pytest.mark.parametrize("student,limit", [("rt_many_cells", "cells"), ("rt_deep_json", "nested"),
                                           ("rt_huge_file", "larger than"), ("rt_fifo", "regular file")])
def test_oversized_or_odd_files_are_rejected_with_a_status(graded, student, limit):
    rows = [r for r in graded["rows"] if r["student"] == student]
    assert rows and {r["status"] for r in rows} == {"rejected"}, rows
    assert all(r["score"] == 0.0 for r in rows if r["grade_id"].startswith("test_"))
    assert limit in rows[0]["feedback"]


@pytest.mark.parametrize("student", ["rt_link_other", "rt_link_source", "rt_link_folder"])
def test_symbolic_links_are_reported_never_followed(graded, student):
    rows = [r for r in graded["rows"] if r["student"] == student]
    assert rows and {r["status"] for r in rows} == {"symlink"} and {r["score"] for r in rows} == {None}
    produced = graded["course"] / "autograded" / student
    assert not list(produced.rglob("*.ipynb")), "nothing is graded for a linked submission"
    assert not (graded["course"] / "feedback" / student).exists()


def test_verdict_lines_cannot_be_imitated(graded):
    row = _by(graded["rows"], "rt_fake_verdicts", "test_double")
    assert row["status"] == "graded" and row["score"] == 0.0
    lines = row["feedback"].splitlines()
    assert lines[0].endswith("0 / 2 points")
    assert all(not line.lstrip().startswith("[PASS]") for line in lines), lines
    assert all("points" not in line for line in lines[1:]), lines


def test_autograded_notebooks_carry_no_active_content(graded):
    path = graded["course"] / "autograded" / "rt_fake_verdicts" / toy.ASSIGNMENT / f"{toy.STEM}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    (manual,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_why"]
    text = manual.source
    assert "A fine answer." in text
    # The answer is sanitized HTML that nbconvert shows verbatim: parsed, it holds only allowed elements
    # and attributes, and no link at all (its javascript: and data: links are text now).
    rendered = markdown2html_mistune(text)
    assert rendered.strip() == text and violations(rendered) == []
    for active in ("<script", "<img", "<svg", "<a "):
        assert active not in text, active
    for output in (o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])):
        assert set(output.get("data", {})) <= {"text/plain"}, output


def test_floods_are_bounded_by_the_coordinator(graded):
    course = graded["course"]
    for student in ("rt_output_flood", "rt_malformed_frames", "rt_decode_bomb"):
        for path in [*(course / "autograded" / student).rglob("*.ipynb"), *(course / "feedback" / student).rglob("*")]:
            assert path.stat().st_size < 1_000_000, (path, path.stat().st_size)


def test_nothing_wrong_is_cached_and_a_rerun_changes_nothing(graded):
    key = lambda r: (r["student"], r["notebook"], str(r["grade_id"]))  # noqa: E731
    assert sorted(graded["again"], key=key) == sorted(graded["rows"], key=key)
    for student, state in graded["state"].items():
        for stem, entry in state.items():
            assert all(row["status"] != "grader_error" for row in entry["rows"]), (student, stem)
    # Rejected and linked submissions are not remembered as graded.
    assert "rt_link_folder" not in graded["state"] and "rt_link_other" not in graded["state"]


def test_nothing_outlives_the_batch(graded):
    assert _processes("987655") == []


def _dies_once_on_bob(task):
    """A stand-in for the worker's entry point (module level, so the pool can pickle it)."""
    from autograder.grading import worker
    marker = Path(os.environ["REDTEAM_DIE_MARKER"])
    if task.student == "bob" and not marker.exists():
        marker.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
    return worker.grade_notebook(task)


def test_a_dead_grading_process_is_replaced_and_its_notebooks_regraded(tmp_path, monkeypatch):
    """A pool worker that dies (out of memory, killed) costs no notebook: the pool is rebuilt."""
    from autograder.grading import batch

    course = toy.copy_course(toy.template(), tmp_path / "course")
    for student in ("ann", "bob", "cid", "dan"):
        toy.submit(course, student, toy.honest_answers())
    marker = tmp_path / "died-once"
    monkeypatch.setenv("REDTEAM_DIE_MARKER", str(marker))
    monkeypatch.setattr(batch, "grade_notebook", _dies_once_on_bob)
    report = course / "report.jsonl"
    assert run(Options(assignment="toy", course_dir=str(course), jobs=2, report=str(report), progress=False)) == 0
    rows = _rows(report)
    assert marker.exists()
    for student in ("ann", "bob", "cid", "dan"):
        assert _by(rows, student, "test_double")["score"] == 2.0, student
        assert _by(rows, student, "test_answer")["score"] == 1.0, student


RUNNER = """
import sys
sys.path.insert(0, {tests!r})
from hostile import toy
toy.register()
from autograder.grading.batch import Options, run
run(Options(assignment="toy", course_dir={course!r}, jobs=2, timeout=600, progress=False))
"""


def test_a_killed_coordinator_leaves_no_process_behind(tmp_path):
    """SIGKILL to the coordinator: its workers, sandboxes and the students' processes all end."""
    import subprocess
    import sys
    import time

    course = toy.copy_course(toy.template(), tmp_path / "course")
    sleeper = "import subprocess\nsubprocess.Popen(['sleep', '987657'])\nimport time\ntime.sleep(600)\n" + redteam.RIGHT
    for student in ("ann", "bob"):
        toy.submit(course, student, {**toy.honest_answers(), "double": sleeper})
    tests = str(Path(__file__).resolve().parent)
    coordinator = subprocess.Popen([sys.executable, "-c", RUNNER.format(tests=tests, course=str(course))],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Wait for the fact (the students' processes are running), not for a time.
        deadline = time.monotonic() + 300
        while not _processes("987657") and time.monotonic() < deadline and coordinator.poll() is None:
            time.sleep(0.2)
        assert _processes("987657"), "the students' notebooks never started"
    finally:
        coordinator.kill()
        coordinator.wait()
    deadline = time.monotonic() + 120
    while _processes("987657") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes("987657") == [], "a student's process outlived the killed coordinator"
