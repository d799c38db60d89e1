"""One grading batch: find the work, farm it out (process pool or Dask), store the results.

The coordinator (this module) is the only writer of the gradebook and of ``autograded/`` and
``feedback/``; workers run :func:`autograder.grading.worker.grade_notebook`, a pure function of
its task. A notebook whose submission, source and grader are unchanged since the last run is not
graded again unless ``force``.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from autograder.grading import report as reporting
from autograder.grading.gradebook import (
    GradebookWriter, assignment_sources, course_directory, submitted_students, write_outputs,
)
from autograder.grading.worker import close_sandbox, grade_notebook, limits_for

STATE_FILE = ".autograder-state.json"


@dataclasses.dataclass
class Options:
    assignment: str
    students: list | None = None
    jobs: int | None = None
    dask: str | None = None
    report: str | None = None
    timeout: float | None = None
    memory_mb: int | None = None
    force: bool = False
    course_dir: str = "."
    use_bwrap: bool | None = None
    progress: bool = True


def _grader_fingerprint() -> str:
    """Changes whenever the grader or the checks change, so that results are not reused across versions."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    paths = [*root.glob("grading/*.py"), *root.glob("checks/*.py"), *root.glob("exercises/*/*.py"),
             *root.glob("reference/*.py"), root / "channel.py"]
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _digest(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _pool_init() -> None:
    from multiprocessing import util
    util.Finalize(None, close_sandbox, exitpriority=100)


def _dask_task(task: dict) -> dict:
    return grade_notebook(task)


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled and total > 0
        self.started = time.perf_counter()
        self._last = 0.0
        self.tty = sys.stderr.isatty()

    def step(self, label: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.done < self.total and now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        rate = self.done / max(now - self.started, 1e-9)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} notebooks  {rate:.1f}/s  {label}"
        if self.tty:
            sys.stderr.write("\r" + line[:110].ljust(110))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def run(options: Options) -> int:
    """Grade a batch; return the process exit status (0 when the batch ran)."""
    coursedir = course_directory(options.course_dir)
    assignment = options.assignment
    specs = assignment_sources(coursedir, assignment)
    students = submitted_students(coursedir, assignment, options.students)
    limits = limits_for(options.timeout, options.memory_mb)
    grader = _grader_fingerprint()
    task_options = {"use_bwrap": options.use_bwrap}

    rows: list = []
    tasks: list = []
    skipped = 0
    states: dict = {}
    with GradebookWriter(coursedir, assignment) as writer:
        for student in students:
            writer.prepare_student(student)
            folder = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
            state_path = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / STATE_FILE
            try:
                state = json.loads(state_path.read_text()) if state_path.exists() else {}
            except (OSError, ValueError):
                state = {}
            states[student] = state
            for stem, spec in specs.items():
                path = folder / f"{stem}.ipynb"
                if not path.exists():
                    for grade_id, max_score in writer.zero_missing(student, stem):
                        rows.append({"student": student, "notebook": stem, "grade_id": grade_id, "score": 0.0,
                                     "max_score": max_score, "status": "missing",
                                     "feedback": "this notebook was not submitted"})
                    state.pop(stem, None)
                    continue
                raw = path.read_bytes()
                digest = _digest(raw, spec["source"], spec["checksums"], grader, limits)
                previous = state.get(stem)
                produced = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / f"{stem}.ipynb"
                if not options.force and previous and previous.get("digest") == digest and produced.exists():
                    rows.extend(previous.get("rows", []))
                    skipped += 1
                    continue
                tasks.append({"student": student, "assignment": assignment, "stem": stem,
                              "source": spec["source"], "checksums": spec["checksums"],
                              "submission": raw.decode("utf-8", "replace"), "limits": limits,
                              "options": task_options, "digest": digest})

        progress = _Progress(len(tasks), options.progress)
        failures = 0
        timings: list = []
        started = time.perf_counter()

        def store(task: dict, result: dict | None, error: BaseException | None) -> None:
            nonlocal failures
            student, stem = task["student"], task["stem"]
            if result is not None:
                try:
                    write_outputs(coursedir, assignment, result)
                    writer.save(student, stem, result["autograded"])
                except Exception as failure:  # noqa: BLE001 - one notebook's results must not stop the batch
                    writer.rollback()
                    result, error = None, failure
            if result is None:
                failures += 1
                rows.append({"student": student, "notebook": stem, "grade_id": None, "score": None,
                             "max_score": None, "status": "error",
                             "feedback": f"grading failed: {type(error).__name__}: {error}"})
                states[student].pop(stem, None)
            else:
                rows.extend(result["rows"])
                timings.append(result["seconds"])
                states[student][stem] = {"digest": result["digest"], "rows": result["rows"]}
            progress.step(f"{student}/{stem}")

        if tasks:
            for task, result, error in _execute(tasks, options):
                store(task, result, error)
        elapsed = time.perf_counter() - started

    for student, state in states.items():
        state_path = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / STATE_FILE
        state_path.parent.mkdir(parents=True, exist_ok=True)
        state_path.write_text(json.dumps(state, indent=1, sort_keys=True))

    if options.report:
        reporting.write_jsonl(options.report, rows)
    sys.stdout.write(reporting.summary(rows, graded=len(tasks), skipped=skipped, failures=failures,
                                       seconds=elapsed) + "\n")
    return 1 if tasks and failures == len(tasks) else 0


def _execute(tasks: list, options: Options):
    """Yield ``(task, result, error)`` as notebooks finish."""
    if options.dask:
        from distributed import Client, as_completed
        with Client(options.dask) as client:
            futures = client.map(_dask_task, tasks, pure=False)
            index = {future.key: task for future, task in zip(futures, tasks)}
            for future in as_completed(futures):
                task = index[future.key]
                try:
                    yield task, future.result(), None
                except Exception as error:  # noqa: BLE001
                    yield task, None, error
        return
    jobs = options.jobs or os.cpu_count() or 1
    if jobs <= 1:
        try:
            for task in tasks:
                try:
                    yield task, grade_notebook(task), None
                except Exception as error:  # noqa: BLE001
                    yield task, None, error
        finally:
            close_sandbox()
        return
    # Load every needed check (and build its cases) here, before the workers fork: they all judge
    # with the one version whose fingerprint was taken, even if the tree changes during the batch.
    from autograder import checks
    for stem in sorted({task["stem"] for task in tasks}):
        checks.plan(stem)
    context = multiprocessing.get_context("fork")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_pool_init) as pool:
        futures = {pool.submit(grade_notebook, task): task for task in tasks}
        for future in cf.as_completed(futures):
            task = futures[future]
            try:
                yield task, future.result(), None
            except Exception as error:  # noqa: BLE001
                yield task, None, error
