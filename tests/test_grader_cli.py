"""The batch grader on a toy course: report format, gradebook, re-runs, structural tampering, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import nbformat
import pytest

from hostile import toy
from autograder.grading.batch import Options, run
from autograder.results import KEYS
from autograder.grading.sandbox import Sandbox, SandboxWarning


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by(rows, student, grade_id):
    (row,) = [r for r in rows if r["student"] == student and r["grade_id"] == grade_id]
    return row


@pytest.fixture
def course(tmp_path):
    return toy.copy_course(toy.template(), tmp_path / "course")


def test_report_gradebook_and_rerun(course, capsys):
    toy.submit(course, "ann", toy.honest_answers())
    toy.submit(course, "bob", {})  # the release as it is: stubs
    report = course / "report.jsonl"
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == 0
    rows = _rows(report)
    assert all(tuple(row) == KEYS for row in rows)
    assert len(rows) == 2 * 3
    assert _by(rows, "ann", "test_double")["score"] == 2.0
    assert _by(rows, "ann", "explain_why") == {**_by(rows, "ann", "explain_why"), "score": None,
                                               "status": "needs_manual_grade"}
    assert _by(rows, "bob", "test_double")["score"] == 0.0
    assert "not implemented" in _by(rows, "bob", "test_double")["feedback"]
    assert _by(rows, "bob", "explain_why")["score"] == 0.0  # untouched written answer: nbgrader's "No response"
    from nbgrader.api import Gradebook
    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        ann = gb.find_submission_notebook("90_toy", "toy", "ann")
        assert ann.code_score == 3.0 and ann.needs_manual_grade
        assert not gb.find_submission_notebook("90_toy", "toy", "bob").needs_manual_grade
    assert "graded 2 notebooks" in capsys.readouterr().out

    # Unchanged submissions are not graded again; a changed one is; --force grades everything.
    run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False))
    assert "graded 0 notebooks (2 unchanged" in capsys.readouterr().out
    assert _rows(report) == rows
    toy.submit(course, "bob", toy.honest_answers())
    run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False))
    assert "graded 1 notebooks (1 unchanged" in capsys.readouterr().out
    assert _by(_rows(report), "bob", "test_double")["score"] == 2.0
    run(Options("toy", course_dir=str(course), jobs=1, force=True, progress=False))
    assert "graded 2 notebooks (0 unchanged" in capsys.readouterr().out


def _move_and_tamper(nb):
    cells = nb.cells
    answer = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == "double")
    value = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_value")
    tests = [c for c in cells if c.metadata.get("nbgrader", {}).get("grade", False) and c.cell_type == "code"]
    for cell in tests:
        cell.source = "pass"  # a student's own "test"
        cell.metadata["nbgrader"]["points"] = 100
    cells.remove(value)
    cells.append(value)  # moved below the tests
    answer.metadata["nbgrader"]["grade"] = True
    answer.metadata["nbgrader"]["points"] = 50
    helper = nbformat.v4.new_code_cell("def _twice(x):\n    return 2 * np.asarray(x, dtype=float)")
    cells.insert(cells.index(answer), helper)  # an extra cell the answer relies on
    duplicate = nbformat.from_dict(json.loads(json.dumps(answer)))
    duplicate.source = "def double(x):\n    return _twice(x)"
    duplicate.id = "copy-of-double"
    cells.insert(cells.index(answer) + 1, duplicate)


def test_structure_of_submission_is_not_trusted(course):
    toy.submit(course, "moved", {"double": "def double(x):\n    return x", "answer_value": "ANSWER = 42"},
               cells=_move_and_tamper)
    toy.submit(course, "deleted", toy.honest_answers(),
               cells=lambda nb: nb.cells.__setitem__(slice(None), [c for c in nb.cells if not (
                   c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")]))
    toy.submit(course, "no_answer", {"answer_value": "ANSWER = 42"},
               cells=lambda nb: nb.cells.__setitem__(slice(None), [c for c in nb.cells if
                                                                  c.metadata.get("nbgrader", {}).get("grade_id") != "double"]))
    (course / "submitted" / "garbage" / "toy").mkdir(parents=True)
    (course / "submitted" / "garbage" / "toy" / "90_toy.ipynb").write_text("{not json")
    report = course / "report.jsonl"
    assert run(Options("toy", course_dir=str(course), jobs=2, report=str(report), progress=False)) == 0
    rows = _rows(report)
    # Helper cell + duplicate answer ran in order (the later copy wins), tests and points from source.
    assert _by(rows, "moved", "test_double") | {"feedback": ""} == {
        "student": "moved", "notebook": "90_toy", "grade_id": "test_double", "score": 2.0, "max_score": 2.0,
        "status": "graded", "feedback": "", "misconceptions": []}
    assert _by(rows, "moved", "test_answer")["score"] == 1.0
    assert _by(rows, "deleted", "test_double")["score"] == 2.0  # deleted tests are restored from source
    assert _by(rows, "no_answer", "test_double")["score"] == 0.0
    assert _by(rows, "no_answer", "test_answer")["score"] == 1.0
    assert [r["score"] for r in rows if r["student"] == "garbage" and r["grade_id"].startswith("test_")] == [0, 0]
    html = (course / "feedback" / "moved" / "toy" / "90_toy.html").read_text()
    assert "appears more than once" in html and "extra code cell" in html and "moved" in html
    assert "missing from the submission" in (course / "feedback" / "no_answer" / "toy" / "90_toy.html").read_text()


def test_missing_notebook_scores_zero(course):
    (course / "submitted" / "ghost" / "toy").mkdir(parents=True)
    report = course / "report.jsonl"
    run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False))
    assert {r["status"] for r in _rows(report)} == {"missing"}
    assert {r["score"] for r in _rows(report)} == {0.0}


def test_cli_exit_status(course):
    env_bin = str(__import__("pathlib").Path(sys.executable).parent)
    unknown = subprocess.run([sys.executable, "-m", "autograder", "grade", "nope", "--no-progress"], cwd=course,
                             capture_output=True, text=True, env={"PATH": env_bin + ":/usr/bin:/bin"})
    # A mistyped assignment is named with the ones the course has, not sent to generate_assignment.
    assert unknown.returncode == 2 and "no assignment 'nope'" in unknown.stderr and "known: toy" in unknown.stderr
    assert "generate_assignment" not in unknown.stderr
    helped = subprocess.run([sys.executable, "-m", "autograder", "grade", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--dask" in helped.stdout


def test_without_bubblewrap_it_warns_and_still_limits(course):
    with pytest.warns(SandboxWarning, match="NOT|CAN READ"):
        box = Sandbox(use_bwrap=False)
    try:
        from autograder.grading.task import limits_for
        steps = [{"kind": "exec", "id": "a", "source": "import resource\nprint(resource.getrlimit(resource.RLIMIT_AS))"}]
        result = box.run(steps, limits_for(timeout=10, memory_mb=700))
        (frame,) = result.cells.values()
        assert frame["stdout"].strip() == str((700 * 2 ** 20, 700 * 2 ** 20))
        assert not box.isolated
    finally:
        box.close()


def test_a_notebook_whose_results_cannot_be_stored_does_not_stop_the_batch(course, monkeypatch):
    from autograder.grading import batch
    toy.submit(course, "ann", toy.honest_answers())
    toy.submit(course, "bob", toy.honest_answers())
    real = batch.write_outputs

    def refuse_ann(coursedir, assignment, result):
        if result["student"] == "ann":
            raise OSError("disk full")
        real(coursedir, assignment, result)

    monkeypatch.setattr(batch, "write_outputs", refuse_ann)
    report = course / "report.jsonl"
    # The batch goes on, and its exit status says that a notebook has no grade because of the grader.
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == batch.EXIT_UNGRADED
    rows = _rows(report)
    assert [r["status"] for r in rows if r["student"] == "ann"] == ["error"]
    assert "disk full" in _by(rows, "ann", None)["feedback"]
    assert _by(rows, "bob", "test_double")["score"] == 2.0
    # ann's failure is not remembered as graded: the next run grades her again.
    monkeypatch.setattr(batch, "write_outputs", real)
    run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False))
    assert _by(_rows(report), "ann", "test_double")["score"] == 2.0


def test_rows_that_cannot_be_stored_cost_only_their_notebook_in_a_shared_transaction(course, monkeypatch, capsys):
    """Gradebook rows are committed many notebooks at a time: one whose rows fail halfway (some already
    flushed) is rolled back alone; the notebook stored before it in the same transaction, and the one
    after, keep their grades, and only the committed ones are remembered as graded."""
    from nbgrader.api import Gradebook

    from autograder.grading import batch, gradebook
    for student in ("ann", "bob", "cai"):
        toy.submit(course, student, toy.honest_answers())
    real = gradebook.GradebookWriter.save

    def fail_bob_halfway(self, student, stem, text, **kwargs):
        real(self, student, stem, text, **kwargs)  # bob's rows are flushed into the open transaction...
        if student == "bob":
            raise RuntimeError("the gradebook refused bob")  # ...and then his notebook fails

    monkeypatch.setattr(gradebook.GradebookWriter, "save", fail_bob_halfway)
    report = course / "report.jsonl"
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == batch.EXIT_UNGRADED
    rows = _rows(report)
    assert [r["status"] for r in rows if r["student"] == "bob"] == ["error"]
    assert _by(rows, "ann", "test_double")["score"] == _by(rows, "cai", "test_double")["score"] == 2.0
    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        scores = {student: gb.find_submission_notebook("90_toy", "toy", student).code_score
                  for student in ("ann", "bob", "cai")}
    assert scores == {"ann": 3.0, "bob": 0.0, "cai": 3.0}
    capsys.readouterr()
    monkeypatch.setattr(gradebook.GradebookWriter, "save", real)
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == 0
    assert "graded 1 notebooks (2 unchanged" in capsys.readouterr().out
    assert _by(_rows(report), "bob", "test_double")["score"] == 2.0


def test_a_report_in_a_missing_folder_is_refused_before_grading(course, capsys):
    from autograder.cli import main
    toy.submit(course, "ann", toy.honest_answers())
    assert main(["grade", "toy", "--course-dir", str(course), "--no-progress",
                 "--report", str(course / "no-such-folder" / "report.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--report" in err and "existing folder" in err
    assert not (course / "autograded").exists()  # nothing was graded


def test_a_sandbox_failure_replaces_no_earlier_grade_nor_file(course, monkeypatch):
    """The grader's own failure (reason ``sandbox``) is reported, never stored over an earlier result."""
    from nbgrader.api import Gradebook

    from autograder.grading import batch
    toy.submit(course, "ann", toy.honest_answers())
    report = course / "report.jsonl"
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == 0
    autograded = course / "autograded" / "ann" / "toy" / "90_toy.ipynb"
    feedback = course / "feedback" / "ann" / "toy" / "90_toy.html"
    before = autograded.read_bytes(), feedback.read_bytes()
    real = batch.grade_notebook

    def sandbox_dies(task):
        result = real(task)
        nb = nbformat.reads(result["autograded"], as_version=4)
        for cell in nb.cells:  # what a run cut short by the sandbox leaves: no points
            for output in cell.get("outputs", []):
                if output.get("output_type") == "execute_result":
                    output["data"]["text/plain"] = "0.0"
        rows = [dict(row, score=0.0 if row["score"] is not None else None, status="grader_error")
                for row in result["rows"]]
        return {**result, "reason": "sandbox", "rows": rows, "autograded": nbformat.writes(nb),
                "feedback": "<p>the sandbox stopped</p>"}

    monkeypatch.setattr(batch, "grade_notebook", sandbox_dies)
    assert run(Options("toy", course_dir=str(course), jobs=1, force=True, report=str(report),
                       progress=False)) == batch.EXIT_UNGRADED
    assert _by(_rows(report), "ann", "test_double")["status"] == "grader_error"
    assert (autograded.read_bytes(), feedback.read_bytes()) == before
    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        assert gb.find_submission_notebook("90_toy", "toy", "ann").code_score == 3.0
    # Not remembered as graded: the next run grades the notebook again.
    monkeypatch.setattr(batch, "grade_notebook", real)
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(report), progress=False)) == 0
    assert _by(_rows(report), "ann", "test_double") | {"feedback": ""} == {
        **_by(_rows(report), "ann", "test_double"), "feedback": "", "score": 2.0, "status": "graded"}


def test_the_coordinator_never_reads_an_oversized_link_or_fifo_submission(tmp_path):
    import os

    from autograder.grading.intake import fingerprint
    big = tmp_path / "big.ipynb"
    big.write_bytes(b"a" * 101)
    first = fingerprint(tmp_path, ["big.ipynb"], 100)
    with open(big, "r+b") as handle:  # the same size and time, other bytes: the worker rejects it unread anyway
        handle.write(b"b" * 101)
    os.utime(big, ns=(os.stat(big).st_atime_ns, int(first.split(b"modified ")[1])))
    assert fingerprint(tmp_path, ["big.ipynb"], 100) == first and first.startswith(b"over the size limit: 101 bytes")
    small = tmp_path / "small.ipynb"
    small.write_bytes(b"{}")
    assert len(fingerprint(tmp_path, ["small.ipynb"], 100)) == 32  # a SHA-256 of the content
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    # returns at once: never opens (so never blocks on) a FIFO
    assert fingerprint(tmp_path, ["fifo.ipynb"], 100).startswith(b"refused: file: the submission is not a regular")
    link = tmp_path / "link.ipynb"
    link.symlink_to(small)
    assert fingerprint(tmp_path, ["link.ipynb"], 100).startswith(b"refused: symlink: ")


def test_an_unreadable_gradebook_or_an_unknown_student_is_one_line_not_a_traceback(course, capsys):
    from autograder.cli import main
    toy.submit(course, "ann", toy.honest_answers())
    assert main(["grade", "toy", "--course-dir", str(course), "--no-progress", "--student", "nobody"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--student nobody" in err
    (course / "gradebook.db").write_bytes(b"not a database at all")
    assert main(["grade", "toy", "--course-dir", str(course), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gradebook" in err and "could not be read" in err


def test_a_dask_batch_holds_a_window_of_submissions_not_the_class(tmp_path, monkeypatch):
    """With --dask the coordinator reads each submission to ship it: only as slots free up."""
    import collections
    import types

    from autograder.grading import batch
    from autograder.grading.task import GradingTask, default_limits

    held = {"now": 0, "most": 0}

    class Future:
        def __init__(self, key, task):
            self.key, self.task = key, task

        def result(self):
            return {"stem": self.task.stem, "text": self.task.submission}

        def release(self):
            held["now"] -= 1

    class Client:
        def __init__(self, address):
            self.count = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def scheduler_info(self):
            return {"workers": {"a": {}, "b": {}}}

        def submit(self, function, task, pure):
            assert function is batch._dask_task and not pure and task.root is None and task.parts == ()
            self.count += 1
            held["now"] += 1
            held["most"] = max(held["most"], held["now"])
            return Future(f"k{self.count}", task)

    class AsCompleted:
        def __init__(self):
            self.queue = collections.deque()

        def add(self, future):
            self.queue.append(future)

        def __iter__(self):
            while self.queue:
                yield self.queue.popleft()

    monkeypatch.setitem(sys.modules, "distributed", types.SimpleNamespace(Client=Client, as_completed=AsCompleted))
    tasks = []
    for number in range(3 * batch.DASK_WINDOW):
        path = tmp_path / f"{number}.ipynb"
        path.write_text(json.dumps({"cells": [], "n": number}))
        tasks.append(GradingTask(student="ann", assignment="toy", stem=f"s{number}", source="", root=str(tmp_path),
                                 parts=(path.name,), limits=default_limits()))
    done = list(batch._execute(tasks, batch.Options("toy", dask="tcp://nowhere:1")))
    assert [task.stem for task, _, _ in done] == [task.stem for task in tasks]
    assert all(error is None and json.loads(result["text"])["n"] == int(task.stem[1:])
               for task, result, error in done)
    assert held["most"] == batch.DASK_WINDOW


def test_stored_rows_are_those_nbgraders_own_save_auto_grades_writes(course, tmp_path):
    """The writer answers nbgrader's per-cell ``find_grade``/``find_comment`` from one read of the
    notebook's rows and writes once per notebook: every grade and comment it leaves must be the one
    nbgrader==0.9.6's own ``SaveAutoGrades`` (its per-cell queries and commits) leaves on a copy of the
    same gradebook, including a grade a person has already scored and a cell left as released."""
    import shutil

    from nbgrader.api import Comment, Grade, Gradebook
    from nbgrader.preprocessors import SaveAutoGrades

    from autograder.grading import gradebook
    toy.submit(course, "ann", toy.honest_answers())
    toy.submit(course, "bob", {"double": "def double(x):\n    return x\n"})  # wrong, the rest as released
    assert run(Options("toy", course_dir=str(course), jobs=1, report=str(tmp_path / "r.jsonl"), progress=False)) == 0
    autograded = {s: (course / "autograded" / s / "toy" / "90_toy.ipynb").read_text() for s in ("ann", "bob")}

    def scramble(db):
        with Gradebook("sqlite:///" + str(db)) as gb:
            for grade in gb.db.query(Grade):
                grade.auto_score, grade.needs_manual_grade = 123.0, not grade.needs_manual_grade
            for comment in gb.db.query(Comment):
                comment.auto_comment = "stale"
            gb.find_grade("explain_why", "90_toy", "toy", "ann").manual_score = 0.5
            gb.db.commit()

    def rows(db):
        with Gradebook("sqlite:///" + str(db)) as gb:
            return (sorted((g.notebook.student.id, g.name, g.auto_score, g.manual_score, g.needs_manual_grade)
                           for g in gb.db.query(Grade)),
                    sorted((c.notebook.student.id, c.name, c.auto_comment) for c in gb.db.query(Comment)))

    theirs, ours = tmp_path / "theirs.db", tmp_path / "ours.db"
    for db in (theirs, ours):
        shutil.copy(course / "gradebook.db", db)
        scramble(db)
    scrambled = rows(ours)
    for student, text in autograded.items():
        resources = {"nbgrader": {"student": student, "assignment": "toy", "notebook": "90_toy",
                                  "db_url": "sqlite:///" + str(theirs)}}
        SaveAutoGrades().preprocess(nbformat.reads(text, as_version=4), resources)
    coursedir = gradebook.course_directory(course)
    coursedir.db_url = "sqlite:///" + str(ours)
    with gradebook.GradebookWriter(coursedir, "toy") as writer:
        writer.save("ann", "90_toy", autograded["ann"], commit=False)  # one transaction for both,
        writer.save("bob", "90_toy", autograded["bob"], commit=False)  # as the batch writes them
        writer.commit()
    assert rows(ours) == rows(theirs) != scrambled
    grades, comments = rows(ours)
    assert ("ann", "explain_why", None, 0.5, True) in grades  # a person's score still asks for review
    assert ("bob", "answer_value", "No response.") in comments
    assert any(score == 0.0 for student, name, score, *_ in grades if student == "bob")
