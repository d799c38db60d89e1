"""One grading task, made by one function, for every door (issue 37).

``autograder grade`` and nbgrader's door (``nbgrader autograde``, formgrader's button) grade with the
:class:`~autograder.grading.task.GradingTask` that :func:`~autograder.grading.task.student_tasks` made,
and nothing else: a door that built a task by hand again (as both once built the same dict) fails here,
by its source and by what it hands the worker.
"""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import pytest

import doors_support as doors
from autograder.grading import batch
from autograder.grading.task import GradingTask

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"
TASK_MODULE = PACKAGE / "grading" / "task.py"

#: Appended to the toy course's config: nbgrader's door, in its own process, records the tasks
#: ``student_tasks`` made and the task each ``grade_notebook`` call got (whether it is one of those).
SPY = """
import os as _os, pickle as _pickle
from autograder.grading import nbgrader_bridge as _bridge, worker as _spy_worker
_spy_made, _spy_make, _spy_grade = [], _bridge.student_tasks, _spy_worker.grade_notebook
def _spy_student_tasks(plan, writer, student):
    made = _spy_make(plan, writer, student)
    _spy_made.extend(made.tasks.values())
    return made
def _spy_grade_notebook(task):
    with open(_os.environ["TASK_SPY"], "ab") as handle:
        _pickle.dump((task, any(task is made for made in _spy_made)), handle)
    return _spy_grade(task)
if not hasattr(_bridge, "_spied"):  # nbgrader reads its config more than once: spied once
    _bridge.student_tasks, _spy_worker.grade_notebook, _bridge._spied = _spy_student_tasks, _spy_grade_notebook, 1
"""


def _calls(tree: ast.AST, name: str) -> list:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == name]


def test_only_the_task_module_makes_a_task_and_no_door_builds_the_old_dict():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path != TASK_MODULE:
            assert not _calls(tree, "GradingTask"), f"{path}: a GradingTask made outside task.student_tasks"
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
                assert not {"student", "stem", "source"} <= keys, f"{path}:{node.lineno}: a task built as a dict"
    for door in ("batch.py", "nbgrader_bridge.py"):
        tree = ast.parse((PACKAGE / "grading" / door).read_text(encoding="utf-8"))
        assert _calls(tree, "student_tasks") and _calls(tree, "make_plan"), door


def test_a_task_is_frozen_and_crosses_to_a_worker_as_it_is():
    task = GradingTask(student="ann", assignment="toy", stem="90_toy", source="{}", limits={"wall_seconds": 60},
                       root="/nowhere", parts=("ann", "toy", "90_toy.ipynb"), digest="d")
    with pytest.raises(AttributeError):
        task.student = "bob"
    assert pickle.loads(pickle.dumps(task)) == task


@pytest.mark.slow
def test_both_doors_grade_the_task_student_tasks_made_and_the_same_one(tmp_path, monkeypatch):
    course = doors.course(tmp_path)
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(SPY)
    made, graded = [], []
    make, grade = batch.student_tasks, batch.grade_notebook

    def spy_student_tasks(plan, writer, student):
        result = make(plan, writer, student)
        made.extend(result.tasks.values())
        return result

    def spy_grade_notebook(task):
        graded.append((task, any(task is one for one in made)))
        return grade(task)

    # ``batch.run`` reads the course's config (the spy included) in this process: marked as spied already,
    # the spy leaves this process's modules alone (it is for nbgrader's own process below), and the mark
    # goes when the test ends.
    from autograder.grading import nbgrader_bridge
    monkeypatch.setattr(nbgrader_bridge, "_spied", 1, raising=False)
    monkeypatch.setattr(batch, "student_tasks", spy_student_tasks)
    monkeypatch.setattr(batch, "grade_notebook", spy_grade_notebook)
    from hostile import toy
    toy.register()
    assert batch.run(batch.Options("toy", course_dir=str(course), jobs=1, progress=False)) == 0
    assert sorted((task.student, task.stem) for task, _ in graded) == [("ann", doors.STEM), ("bob", doors.STEM)]
    assert all(one for _, one in graded), "autograder grade graded a task student_tasks did not make"

    spy = tmp_path / "spy.pickle"
    proc = doors.nbgrader(course, "--force", TASK_SPY=str(spy))
    assert proc.returncode == 0, proc.stdout
    theirs = []
    with spy.open("rb") as handle:
        while True:
            try:
                theirs.append(pickle.load(handle))
            except EOFError:
                break
    assert all(one for _, one in theirs), "nbgrader autograde graded a task student_tasks did not make"
    # The same submissions, unchanged: the nbgrader door's task equals the batch's, field by field.
    ours = {task.student: task for task, _ in graded}
    assert sorted(task.student for task, _ in theirs) == sorted(ours)
    for task, _ in theirs:
        differ = [field.name for field in dataclasses.fields(GradingTask)
                  if getattr(task, field.name) != getattr(ours[task.student], field.name)]
        assert not differ, (task.student, differ)
