"""Which notebook is graded next: one student at the limits delays nobody else (issue 20).

Functional checks of the order only; the time it saves is measured by hand in
``benchmarks/bench_redteam.py --class-of 30``.
"""

from __future__ import annotations

from autograder.grading.batch import HEAVY_BYTES, _cheap_first, _Order
from autograder.grading.task import GradingTask


def _made(student, stem, **fields) -> GradingTask:
    return GradingTask(student=student, assignment="a", stem=stem, source="", **fields)


def _task(tmp_path, student, stem, size):
    path = tmp_path / f"{student}-{stem}.ipynb"
    with open(path, "wb") as handle:
        handle.truncate(size)  # sparse: the size is all that is read
    return _made(student, stem, root=str(tmp_path), parts=(path.name,), limits={"wall_seconds": 60})


def test_heavy_submissions_go_last_smallest_first_others_keep_their_order(tmp_path):
    tasks = [_task(tmp_path, "ann", "01", 10_000), _task(tmp_path, "bob", "01", HEAVY_BYTES * 20),
             _task(tmp_path, "bob", "02", HEAVY_BYTES * 2), _task(tmp_path, "cai", "01", 30_000),
             _made("dan", "01", root=str(tmp_path), parts=("missing.ipynb",))]
    ordered = [(t.student, t.stem) for t in _cheap_first(tasks)]
    assert ordered == [("ann", "01"), ("cai", "01"), ("dan", "01"), ("bob", "02"), ("bob", "01")]


def test_a_student_whose_notebook_was_slow_waits_behind_everyone_else():
    tasks = [_made(s, n, limits={"wall_seconds": 60}) for s in ("ann", "bob", "cai") for n in "12"]
    order = _Order(range(len(tasks)), tasks)
    first = order.next()
    assert tasks[first].student == "ann"
    order.finished(tasks[first], {"reason": "timeout", "seconds": 60.0})
    rest = [tasks[order.next()] for _ in range(len(tasks) - 1)]
    assert [t.student for t in rest] == ["bob", "bob", "cai", "cai", "ann"]
    assert order.next() is None


def test_half_the_wall_clock_limit_counts_as_slow_and_a_quick_notebook_does_not():
    tasks = [_made("ann", "1", limits={"wall_seconds": 10})]
    order = _Order([0], tasks)
    order.finished(tasks[0], {"reason": "exited", "seconds": 4.9})
    assert order.slow == set()
    order.finished(tasks[0], {"reason": "exited", "seconds": 5.0})
    assert order.slow == {"ann"}
    order.finished(_made("bob", "1"), None)  # a failed notebook is not a slow one
    assert order.slow == {"ann"}
