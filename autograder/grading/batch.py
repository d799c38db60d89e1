"""One grading batch: find the work, farm it out (process pool or Dask), store the results.

The coordinator (this module) is the only writer of the gradebook and of ``autograded/`` and
``feedback/``; workers run :func:`autograder.grading.worker.grade_notebook`, a pure function of
its task. A notebook whose submission, source and grader are unchanged since the last run is not
graded again unless ``force``.
"""

from __future__ import annotations

import concurrent.futures as cf
from concurrent.futures.process import BrokenProcessPool
import dataclasses
import multiprocessing
import os
import sys
import time
from pathlib import Path

from autograder import results as reporting
from autograder.grading.gradebook import (
    GradebookWriter, assignment_sources, course_directory, submitted_root, submitted_students, write_outputs,
)
from autograder.grading import intake
from autograder.grading.errors import GradingError
from autograder.grading import state as state_file
from autograder.grading.task import GradingTask, make_plan, student_tasks
from autograder.grading.timestamps import TIMESTAMP_FILE, carry_submission_files
from autograder.grading.worker import close_sandbox, grade_notebook
from autograder.limits import WALL_SECONDS
from autograder.results import Status

STATE_FILE = state_file.STATE_FILE


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
    #: ``--Class.trait=value`` settings for nbgrader's configuration, applied last (as on nbgrader's command line).
    nbgrader_args: tuple = ()


def _pool_init() -> None:
    from multiprocessing import util
    util.Finalize(None, close_sandbox, exitpriority=100)
    # A worker never outlives the coordinator (and its sandbox dies with it: bwrap --die-with-parent).
    try:
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)
    except Exception:  # noqa: BLE001 - not Linux: the zygote still ends when its socket closes
        pass


def _dask_task(task: GradingTask) -> dict:
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


def _row(student, stem, status, feedback, grade_id=None, max_score=None, score=None) -> dict:
    return {"student": student, "notebook": stem, "grade_id": grade_id, "score": score, "max_score": max_score,
            "status": status, "feedback": feedback}


def _configured_limits(coursedir, options: Options) -> tuple:
    """``(timeout, memory_mb)``: the command line's, else those ``nbgrader autograde`` uses (``c.SandboxedGrade``)."""
    from autograder.grading.nbgrader_bridge import SandboxedGrade

    configured = SandboxedGrade(config=coursedir.config)
    return (options.timeout if options.timeout is not None else configured.timeout,
            options.memory_mb if options.memory_mb is not None else configured.memory_mb)


def _require_kit_assignment(coursedir, assignment: str) -> None:
    """Refuse an assignment the course keeps for nbgrader (``c.Module6Scope.assignments`` does not cover it).

    In another instructor's course (:func:`autograder.course_setup.use_module6`) ``ps1`` is graded by
    nbgrader in a kernel, with its own tests: the sandboxed grader knows only the kit's notebooks.
    """
    from autograder.scope import Module6Scope

    scope = Module6Scope(config=coursedir.config)
    if not scope.covers(assignment):
        raise GradingError(f"{assignment!r} is not a Module 6 assignment in this course (the kit grades "
                           f"{', '.join(scope.assignments)}): grade it with nbgrader's own "
                           f"`nbgrader autograde {assignment}`")


def run(options: Options) -> int:
    """Grade a batch; return the process exit status (:data:`EXIT_OK` or :data:`EXIT_UNGRADED`)."""
    if options.use_bwrap is not False:
        from autograder.grading.sandbox import _cached_view, require_sandbox
        require_sandbox()  # before anything is touched: no sandbox, no grading (unless --no-sandbox)
        _cached_view()  # the allow-list, read from the installed metadata once, before workers fork
    return _Batch(options).run()


class _Batch:
    """One run of ``autograder grade``, read as its stages (:meth:`run`):

    1. the plan (:func:`~autograder.grading.task.make_plan`, as nbgrader's door makes it) and each
       student's tasks (:meth:`take_student`: :func:`~autograder.grading.task.student_tasks`, the one
       function every door makes tasks with), minus the notebooks unchanged since they were graded,
       whose rows are replayed from the state file;
    2. execution (:func:`_execute`: process pool, one process, or Dask), each result stored as it
       comes (:meth:`store`) in the gradebook's open transaction;
    3. commits (:meth:`commit_pending`) of many notebooks at once, then their state files;
    4. the report, the summary and the exit status (:meth:`report`).
    """

    def __init__(self, options: Options):
        self.options = options
        self.coursedir = course_directory(options.course_dir, options.nbgrader_args)
        self.assignment = options.assignment
        _require_kit_assignment(self.coursedir, self.assignment)
        specs = assignment_sources(self.coursedir, self.assignment)
        self.students = submitted_students(self.coursedir, self.assignment, options.students)
        timeout, memory_mb = _configured_limits(self.coursedir, options)
        self.plan = make_plan(self.coursedir, self.assignment, timeout=timeout, memory_mb=memory_mb,
                              use_bwrap=options.use_bwrap, specs=specs)
        self.writer: GradebookWriter | None = None
        self.rows: list = []
        self.tasks: list = []
        self.skipped = self.problems = self.failures = 0
        self.states: dict = {}
        self.penalties: dict = {}
        self.failed: list = []
        self.chunks: list = []  # each graded notebook's rows, in the order they finished
        self.pending: list = []  # (task, result, chunk): in the gradebook's open transaction, not committed yet
        self.opened = 0.0  # when the oldest pending notebook was stored
        self.held = 0  # characters of autograded text the pending notebooks hold (kept for a replay)
        self.progress: _Progress | None = None

    def run(self) -> int:
        with GradebookWriter(self.coursedir, self.assignment) as self.writer:
            for student in self.students:
                self.take_student(student)
            self.progress = _Progress(len(self.tasks), self.options.progress)
            started = time.perf_counter()
            try:
                if self.tasks:
                    for task, result, error in _execute(_cheap_first(self.tasks), self.options):
                        self.store(task, result, error)
            finally:
                # Interrupted or not, what was graded completely is kept.
                self.commit_pending()
            self.rows.extend(row for chunk in self.chunks for row in chunk)
            elapsed = time.perf_counter() - started
        _carry_and_warn(self.coursedir, self.assignment, list(self.penalties), self.penalties)
        return self.report(elapsed)

    # -- 1. the plan: each student's tasks, what is unchanged replayed

    def take_student(self, student: str) -> None:
        """The student's tasks (:func:`student_tasks`), their rows for what is not graded, and the tasks
        to grade; the late penalties of the notebooks not graded again are committed once per student
        (a later student's gradebook refusal rolls back only that student's changes)."""
        made = student_tasks(self.plan, self.writer, student)
        stems = self.plan.specs
        if made.refusal is not None:
            self.problems += 1
            self.rows.extend(_row(student, stem, made.refusal.status, made.refusal.feedback) for stem in stems)
            return
        if made.setup_error is not None:
            self.problems += 1
            refused = f"not graded: the gradebook refused this student ({type(made.setup_error).__name__})"
            self.rows.extend(_row(student, stem, Status.ERROR, refused) for stem in stems)
            return
        self.penalties[student] = 0.0
        timestamp = made.timestamp
        if timestamp.problem:
            # Student-written data: reported, never fatal (nbgrader's "no timestamp" semantics).
            print(f"autograder: warning: {timestamp.problem}", file=sys.stderr)
            self.rows.append({"student": student, "notebook": TIMESTAMP_FILE, "grade_id": None, "score": None,
                              "max_score": None, "feedback": timestamp.problem,
                              "status": Status.TIMESTAMP_DISPUTED if timestamp.disputed else Status.BAD_TIMESTAMP})
        # The same file, and the same entries, as nbgrader's door writes (autograder/grading/state.py).
        state = self.states[student] = state_file.read_state(state_file.state_path(self.coursedir, student,
                                                                                  self.assignment))
        for stem in stems:
            if stem in made.refused:
                self.problems += 1
                self.rows.append(_row(student, stem, Status.SYMLINK, made.refused[stem].feedback))
                state.pop(stem, None)
            elif stem in made.missing:
                self.rows.extend(_row(student, stem, Status.MISSING, "this notebook was not submitted", grade_id,
                                      max_score, 0.0) for grade_id, max_score in made.missing[stem][1])
                state.pop(stem, None)
            else:
                self.take_task(made.tasks[stem], state.get(stem))
        self.writer.commit()

    def take_task(self, task: GradingTask, previous) -> None:
        """Queue ``task``, unless its notebook is unchanged since it was graded (by either door)."""
        produced = Path(self.coursedir.format_path(self.coursedir.autograded_directory, task.student,
                                                   self.assignment)) / f"{task.stem}.ipynb"
        if not self.options.force and state_file.unchanged(previous, task.digest, produced):
            self.rows.extend(previous.get("rows", []))
            self.skipped += 1
            self.penalties[task.student] += self.writer.assign_late_penalty(task.student, task.stem,
                                                                            commit=False) or 0.0
            return
        self.tasks.append(task)

    # -- 2. each result as it comes

    def store(self, task: GradingTask, result: dict | None, error: BaseException | None) -> None:
        student, stem = task.student, task.stem
        chunk: list = []
        self.chunks.append(chunk)
        # The sandbox failed (twice) on this notebook: the grader's failure, not a grade. Its partial
        # results replace nothing: a grade, autograded notebook and feedback page from an earlier
        # run stay as they were; the rows say what happened and the exit status asks for a re-run.
        grader_failed = result is not None and result.get("reason") == "sandbox"
        if result is not None and not grader_failed:
            try:
                write_outputs(self.coursedir, self.assignment, result)
                result.pop("feedback", None)  # on disk now; a pending notebook keeps only what it may replay
                self.store_rows(task, result)
            except Exception as failure:  # noqa: BLE001 - one notebook's results must not stop the batch
                # The rollback takes the other pending notebooks' rows with it: stored again one by one.
                self.writer.rollback()
                earlier = list(self.pending)
                self.pending.clear()
                self.pending.extend(self.replay(earlier))
                result, error = None, failure
        if result is None:
            self.give_up(task, chunk, error)
            self.save_state(student)
        else:
            chunk.extend(result["rows"])
            if grader_failed:
                # Never remembered as this notebook's grade either: the next run grades it again.
                self.states[student].pop(stem, None)
                self.failed.append((student, stem))
                self.save_state(student)
            else:
                if not self.pending:
                    self.opened, self.held = time.monotonic(), 0
                self.pending.append((task, result, chunk))
                self.held += len(result["autograded"])
        if self.pending and (len(self.pending) >= COMMIT_NOTEBOOKS or self.held >= COMMIT_CHARS
                             or time.monotonic() - self.opened >= COMMIT_SECONDS):
            self.commit_pending()
        self.progress.step(f"{student}/{stem}")

    def store_rows(self, task: GradingTask, result: dict) -> None:
        """The notebook's scores, comments and late penalty into the open transaction (not committed).

        What a person graded by hand stays graded where what they saw is unchanged: the cells' digests
        of the last grading, from the state file (not yet replaced: that happens after the commit)."""
        previous = self.states[task.student].get(task.stem)
        seen = previous.get("cells") if isinstance(previous, dict) else None
        self.writer.save(task.student, task.stem, result["autograded"], commit=False, seen=seen)
        penalty = self.writer.assign_late_penalty(task.student, task.stem, commit=False) or 0.0
        result["_penalty"] = penalty

    def give_up(self, task: GradingTask, chunk: list, error: BaseException | None) -> None:
        self.failures += 1
        self.failed.append((task.student, task.stem))
        chunk[:] = [_row(task.student, task.stem, Status.ERROR, f"grading failed: {type(error).__name__}: {error}")]
        self.states[task.student].pop(task.stem, None)

    def save_state(self, student: str) -> None:
        try:
            # Streamed: what is graded is on disk now, whatever happens to the batch later.
            state_file.write_state(state_file.state_path(self.coursedir, student, self.assignment),
                                   self.states[student])
        except OSError as failure:
            sys.stderr.write(f"autograder: could not save the state of {student}: {failure}\n")

    # -- 3. commits, then state files

    def commit_pending(self) -> None:
        """One transaction for every pending notebook, then their state files: a state file never
        names a grade the gradebook does not hold (a crash before the commit grades them again)."""
        if not self.pending:
            return
        entries = list(self.pending)
        self.pending.clear()
        try:
            self.writer.commit()
        except Exception:  # noqa: BLE001 - the database refused the batch: each notebook alone
            self.writer.rollback()
            entries = self.replay(entries)
        touched = []
        for task, result, chunk in entries:
            self.penalties[task.student] += result.pop("_penalty", 0.0)
            self.states[task.student][task.stem] = state_file.entry(result)
            if task.student not in touched:
                touched.append(task.student)
        for student in touched:
            self.save_state(student)

    def replay(self, entries: list) -> list:
        """After a rollback: each of ``entries`` stored and committed on its own, as before batches.
        Returns those that could be stored; the others are given up (their rows say why)."""
        kept = []
        for task, result, chunk in entries:
            try:
                self.store_rows(task, result)
                self.writer.commit()
            except Exception as failure:  # noqa: BLE001 - one notebook's results must not stop the batch
                self.writer.rollback()
                self.give_up(task, chunk, failure)
                self.save_state(task.student)
            else:
                kept.append((task, result, chunk))
        return kept

    # -- 4. the report

    def report(self, elapsed: float) -> int:
        status = 0
        if self.options.report:
            try:
                reporting.write_jsonl(self.options.report, self.rows)
            except OSError as error:
                sys.stderr.write(f"autograder: the report could not be written: {error}\n")
                status = 1
        text = reporting.summary(self.rows, graded=len(self.tasks), skipped=self.skipped, failures=self.failures,
                                 seconds=elapsed)
        if self.options.use_bwrap is False:
            text += ("\nWARNING: graded WITHOUT the sandbox (--no-sandbox): student code could read the course "
                     "files and the reference solutions. Do not use these grades for credit.")
        if self.problems:
            text += (f"\n{self.problems} submission(s) not graded (symbolic links or names the gradebook refused): "
                     "see the report.")
        sys.stdout.write(text + "\n")
        return status or _exit_status(self.failed)


#: Graded notebooks stored in one gradebook transaction at the most, and the longest a stored notebook
#: waits for its commit (seconds): one SQLite commit (its fsyncs) per notebook was the coordinator's
#: largest fixed cost. Each notebook's state file is written after its commit, never before.
#: The pending notebooks' autograded text is bounded too (a class at the 20 MB limit must not make the
#: coordinator hold 64 of them): 32 M characters at the most before a commit.
COMMIT_NOTEBOOKS = 64
COMMIT_SECONDS = 2.0
COMMIT_CHARS = 32_000_000


#: A submission larger than this is graded after every smaller one. An honest notebook of this course is
#: well under 1 MB (its figures included); one at the limits (20 MB, 2,000 cells) costs its student
#: seconds of parsing and running, and nobody else waits for it.
HEAVY_BYTES = 1_000_000


def _cheap_first(tasks: list) -> list:
    """``tasks`` with the heavy submissions (over :data:`HEAVY_BYTES`) moved to the end, smallest first.

    The others keep their order (student by student, so each student's state is written as early as
    before). The size is the file's own ``lstat``, looked up through the intake (the worker refuses a
    link or a FIFO anyway).
    """
    def size(task: GradingTask) -> int:
        try:
            return intake.size_of(task.root, task.parts)
        except (OSError, KeyError, ValueError):
            return 0

    sizes = {id(task): size(task) for task in tasks}
    return sorted(tasks, key=lambda task: (sizes[id(task)] > HEAVY_BYTES,
                                           sizes[id(task)] if sizes[id(task)] > HEAVY_BYTES else 0))


class _Order:
    """Which notebook is graded next: in the given order, except that once one of a student's notebooks
    was slow (it ran out of time, or used half its wall-clock limit), that student's other notebooks
    wait until everyone else's have started. Notebooks are handed out one at a time as slots free up,
    so one student whose every notebook loops until its time-out holds one slot once, not all of them.
    """

    def __init__(self, indices, tasks: list):
        self.waiting = list(indices)
        self.tasks = tasks
        self.slow: set = set()

    def finished(self, task: GradingTask, result: dict | None) -> None:
        wall = float(task.limits.get("wall_seconds", WALL_SECONDS.value))
        if result is not None and (result.get("reason") == "timeout" or float(result.get("seconds", 0)) >= wall / 2):
            self.slow.add(task.student)

    def next(self):
        """The index of the next task, or None when none is left."""
        for position, i in enumerate(self.waiting):
            if self.tasks[i].student not in self.slow:
                return self.waiting.pop(position)
        return self.waiting.pop(0) if self.waiting else None

    def rest(self) -> list:
        rest, self.waiting = self.waiting, []
        return rest


#: A notebook that was in flight when two worker processes died is graded alone, then given up on.
MAX_ATTEMPTS = 3
#: Notebooks in flight on a Dask cluster at the least (twice its workers when that is more).
DASK_WINDOW = 16


#: Exit statuses of ``autograder grade`` (documented in ``autograder grade --help``).
EXIT_OK = 0  # every notebook was graded, whatever the scores
EXIT_USAGE = 2  # the batch could not start: arguments, course directory, gradebook, driver, extra
EXIT_UNGRADED = 3  # the batch ran, but some notebooks could not be graded because of the grader


def _exit_status(failed: list) -> int:
    """0 when every notebook got a grade; :data:`EXIT_UNGRADED` with the list on stderr otherwise."""
    if not failed:
        return EXIT_OK
    print(f"autograder: {len(failed)} notebook(s) could not be graded because of the grader "
          "(they have no grade; run again to retry):", file=sys.stderr)
    for student, stem in sorted(failed):
        print(f"  {student}/{stem}", file=sys.stderr)
    return EXIT_UNGRADED


def _carry_and_warn(coursedir, assignment: str, students: list, penalties: dict) -> None:
    """What ``nbgrader autograde`` also does for a student: copy the submission's ``timestamp.txt`` and
    ``submission_secret.txt`` into ``autograded/`` (``nbgrader generate_feedback`` and
    ``release_feedback`` need them), and say who was late and what it cost."""
    for student in students:
        problems = carry_submission_files(
            coursedir.format_path(coursedir.submitted_directory, student, assignment),
            coursedir.format_path(coursedir.autograded_directory, student, assignment),
            root=submitted_root(coursedir))
        for problem in problems:
            print(f"autograder: warning: {problem}", file=sys.stderr)
        if penalties.get(student):
            print(f"autograder: warning: {student} submitted {assignment} late: late penalty "
                  f"{penalties[student]:g} points in total (nbgrader's LateSubmissionPlugin)", file=sys.stderr)


def _as_completed(futures: dict):
    """The futures of ``futures`` as they finish, including those added to it meanwhile."""
    while futures:
        done, _ = cf.wait(list(futures), return_when=cf.FIRST_COMPLETED)
        for future in done:
            yield future


def _execute(tasks: list, options: Options):
    """Yield ``(task, result, error)`` as notebooks finish: on Dask, in this process, or in a pool."""
    if options.dask:
        yield from _execute_on_dask(tasks, options.dask)
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
    yield from _execute_in_pools(tasks, jobs)


def _execute_on_dask(tasks: list, address: str):
    """:func:`_execute` on the Dask cluster at ``address``."""
    from distributed import Client, as_completed
    with Client(address) as client:
        # Dask workers may not see the course directory: each task ships its submission's text,
        # read (within the limits) only when a slot frees up, so that the coordinator and the
        # scheduler hold a window of submissions at a time, never the whole class.
        window = max(DASK_WINDOW, 2 * len(client.scheduler_info().get("workers", {})))
        order = _Order(range(len(tasks)), tasks)
        running = as_completed()
        index: dict = {}

        def submit_next() -> None:
            number = order.next()
            if number is None:
                return
            task = tasks[number]
            # Read through the intake here (the Dask worker parses it within the same limits).
            future = client.submit(_dask_task, task.shipped(), pure=False)
            index[future.key] = task
            running.add(future)

        for _ in range(window):
            submit_next()
        for future in running:
            task = index.pop(future.key)
            try:
                result = future.result()
            except Exception as error:  # noqa: BLE001
                order.finished(task, None)
                yield task, None, error
            else:
                order.finished(task, result)
                yield task, result, None
            future.release()
            submit_next()


def _execute_in_pools(tasks: list, jobs: int):
    """:func:`_execute` in a pool of ``jobs`` forked processes, rebuilt when a worker dies: the notebooks
    it held are graded again, and one that was in flight twice is graded alone (:data:`MAX_ATTEMPTS`)."""
    # Load every needed check (and build its cases) here, before the workers fork: they all judge
    # with the one version whose fingerprint was taken, even if the tree changes during the batch.
    from autograder import checks
    for stem in sorted({task.stem for task in tasks}):
        checks.plan(stem)
    attempts: dict = {}
    queue = list(range(len(tasks)))
    while queue:
        # Notebooks that were in flight when a worker died more than once run alone, one per pool.
        alone = [i for i in queue if attempts.get(i, 0) >= 2]
        shared = [i for i in queue if attempts.get(i, 0) < 2]
        batches = ([(shared, jobs)] if shared else []) + [([i], 1) for i in alone]
        queue = []
        for indices, workers in batches:
            queue.extend((yield from _one_pool(tasks, indices, workers, attempts)))


def _one_pool(tasks: list, indices: list, workers: int, attempts: dict):
    """Grade ``tasks[i]`` for ``i`` in ``indices`` in one pool of ``workers`` processes, yielding as
    :func:`_execute` does; returns the indices to grade again (those of a pool that broke)."""
    again: list = []
    broken = False
    context = multiprocessing.get_context("fork")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_pool_init) as pool:
        # One spare notebook per pool keeps every worker busy; the rest wait in ``order``.
        order = _Order(indices, tasks)
        futures: dict = {}

        def submit_next() -> None:
            i = order.next()
            if i is not None:
                futures[pool.submit(grade_notebook, tasks[i])] = i

        for _ in range(workers + 1):
            submit_next()
        for future in _as_completed(futures):
            i = futures.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                # A worker died (out of memory, killed): the notebooks it held are graded again.
                broken = True
                attempts[i] = attempts.get(i, 0) + 1
                if attempts[i] >= MAX_ATTEMPTS:
                    yield tasks[i], None, RuntimeError("the grading process died on this notebook "
                                                       f"{MAX_ATTEMPTS} times (out of memory?)")
                else:
                    again.append(i)
                continue
            except Exception as error:  # noqa: BLE001
                yield tasks[i], None, error
                if not broken:
                    submit_next()
                continue
            order.finished(tasks[i], result)
            yield tasks[i], result, None
            if not broken:
                submit_next()
        # A broken pool takes no more work: what was still waiting is graded in the next round.
        again.extend(order.rest())
    return again
