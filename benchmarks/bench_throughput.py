"""Where one notebook's grading time goes, the floor under it, and the batch grader's throughput (issue 24).

    python benchmarks/bench_throughput.py profile   [--students 10]               # stage breakdown + floor
    python benchmarks/bench_throughput.py class     [--students 100] [--jobs 2]   # throughput, coordinator RSS
    python benchmarks/bench_throughput.py nbgrader  [--students 2]                # ratio to plain nbgrader autograde
    python benchmarks/bench_throughput.py dask      [--students 20] [--workers 1,2,4]
    python benchmarks/bench_throughput.py pod-dask  [--students 10] [--workers 1,2,4]  # nbgrader's door on Dask
    python benchmarks/bench_throughput.py outputs   --students 6 --save DIR       # scores, rows and pages, for a diff
    python benchmarks/bench_throughput.py outputs   --door nbgrader --save DIR    # the same, through nbgrader autograde

Every mode builds a scratch course with both assignments (``module6``: 20 notebooks, ``module6_further``:
4), releases them with nbgrader and writes a class that cycles through three kinds of student per
assignment (every notebook solved; every notebook solved but one code answer wrong; the release
handed in untouched), every student submitting every notebook of both (28).

``profile`` grades the class in this process, one notebook at a time (``--jobs 1``: the coordinator
and the worker are one process, the sandbox is its child), with a wall-clock and a CPU counter around
each stage; the sandbox's CPU comes from ``RUSAGE_CHILDREN`` once it is closed. The **floor** is the
time spent running the notebook's own units (its cells and the checks' calls) in its already forked,
already sandboxed notebook process (:meth:`Sandbox._converse`): what the student's code costs when
every fixed cost of isolation, judging and storing is taken away. ``--cprofile N`` also prints the N
most expensive functions of the trusted side.

Timings on a shared machine are noise: each mode prints the load average, and every goal is a
ratio of numbers measured in the same run. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import functools
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from autograder.authoring import scratch_course  # noqa: E402
from autograder.demo.simulate import exercise_code_answers, write_class  # noqa: E402
from simulated_class import scratch_folder  # noqa: E402

ASSIGNMENTS = scratch_course.ASSIGNMENTS


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def class_profiles(course: Path, assignment: str, count: int) -> dict:
    """``student -> profile`` cycling solutions / one wrong code answer / untouched over the notebooks."""
    stems = sorted(path.stem for path in scratch_course.release_dir(course, assignment).glob("*.ipynb"))
    profiles = {}
    for index in range(count):
        stem = stems[index % len(stems)]
        code = exercise_code_answers(stem, course, assignment)
        choice = index % 3
        name = f"s{index:04d}"
        if choice == 0 or not code:
            profiles[name] = "solutions"
        elif choice == 1:
            profiles[name] = f"solutions+wrong:{stem}:{code[0]}"
        else:
            profiles[name] = "untouched"
    return profiles


def build_course(base: Path, students: int) -> Path:
    """A scratch course with both assignments released and ``students`` students in each."""
    course = scratch_course.make_course_copy(base / "course")
    for assignment in ASSIGNMENTS:
        scratch_course.generate_release(course, assignment)
        write_class(course, class_profiles(course, assignment, students), assignment)
    return course


def copy_course(course: Path, dest: Path, students: int | None = None) -> Path:
    """A copy of ``course`` (gradebook included), keeping the first ``students`` submissions."""
    shutil.copytree(course, dest)
    if students is not None:
        for folder in sorted((dest / "submitted").iterdir())[students:]:
            shutil.rmtree(folder)
    return dest


def notebooks_in(course: Path) -> int:
    return len(list((course / "submitted").rglob("*.ipynb")))


# --------------------------------------------------------------------------- the stage counters


class Counters:
    """Wall and CPU seconds per stage, and call counts."""

    def __init__(self):
        self.wall = collections.Counter()
        self.cpu = collections.Counter()
        self.calls = collections.Counter()
        self.steps: list = []

    def wrap(self, owner, name: str, stage: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.wall[stage] += time.perf_counter() - wall
                self.cpu[stage] += time.process_time() - cpu
                self.calls[stage] += 1

        setattr(owner, name, timed)


def instrument(counters: Counters) -> None:
    """Counters around each stage of one notebook's grading (patched in this process only)."""
    import nbformat

    from autograder import checks
    from autograder.feedback import page
    from autograder.grading import batch, gradebook, intake, sandbox, state, worker

    wrap = counters.wrap
    wrap(batch, "grade_notebook", "worker: grade_notebook (all)")
    wrap(worker, "read_submission", "worker: read + parse the submission (intake)")
    wrap(worker, "read_notebook", "worker: parse the source notebook")
    wrap(worker, "extract", "worker: extract the answers")
    wrap(worker, "plan_steps", "worker: plan the steps (checks.plan)")
    wrap(sandbox.Sandbox, "start", "sandbox: start the zygote (bwrap, NumPy, IPython)")
    wrap(sandbox.Sandbox, "run", "sandbox: run (all)")
    wrap(sandbox.Sandbox, "_converse", "FLOOR: the units in the warm notebook process")
    wrap(worker, "_build_notebook", "worker: build the autograded notebook (all)")
    wrap(worker, "_test_outputs", "worker:   judge the test cells (decode + judge)")
    wrap(checks, "judge", "worker:     checks.judge")
    wrap(worker, "withhold_after_hidden_tests", "worker:   withhold outputs after hidden tests")
    wrap(page, "render", "worker: render the feedback page")
    wrap(worker, "_rows", "worker: report rows")
    wrap(nbformat, "writes", "worker: nbformat.writes (autograded text)")
    wrap(batch, "write_outputs", "coordinator: write autograded/ and feedback/ files")
    wrap(gradebook.GradebookWriter, "save", "coordinator: gradebook rows (SaveAutoGrades)")
    wrap(gradebook.GradebookWriter, "assign_late_penalty", "coordinator: late penalty")
    wrap(gradebook.GradebookWriter, "prepare_student", "coordinator: prepare the student")
    wrap(state, "write_state", "coordinator: state file")
    wrap(intake, "fingerprint", "coordinator: submission digest (intake)")
    wrap(state, "grader_fingerprint", "coordinator: grader fingerprint (once)")
    wrap(batch, "assignment_sources", "coordinator: assignment sources (once)")
    wrap(batch, "run", "batch.run (all)")
    _sandbox_cpu(counters, sandbox.Sandbox)


#: Clock ticks per second of /proc/<pid>/stat's times.
_TICKS = os.sysconf("SC_CLK_TCK")


def _sandbox_cpu(counters: Counters, cls) -> None:
    """Record every notebook's steps, and the zygote's CPU just before each sandbox closes.

    The zygote is bubblewrap's child (another session: killing bubblewrap does not reap it, so its
    time never reaches this process's ``RUSAGE_CHILDREN``); ``/proc/<zygote>/stat`` has its own CPU
    (utime, stime) and that of the watchers and notebook processes it reaped (cutime, cstime).
    """
    close, run = cls.close, cls.run

    def closing(self):
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:
                (inner,) = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
                fields = Path(f"/proc/{inner}/stat").read_text().rsplit(")", 1)[1].split()
                utime, stime, cutime, cstime = (int(value) / _TICKS for value in fields[11:15])
                counters.cpu["sandbox: the zygote itself"] += utime + stime
                counters.cpu["sandbox: watchers + notebook processes"] += cutime + cstime
            except (OSError, ValueError):
                counters.calls["sandbox: CPU not read"] += 1
        return close(self)

    def running(self, steps, limits, *more, **options):
        counters.steps.append(steps)
        return run(self, steps, limits, *more, **options)

    cls.close, cls.run = closing, running


def floor_run(all_steps: list) -> dict:
    """Every graded notebook's steps, in turn, in ONE already started notebook process: no fork, no
    namespaces, no judge, no page, no gradebook per notebook. Wall and CPU (of the whole sandbox)."""
    from autograder.grading import sandbox, task

    box = sandbox.Sandbox()
    limits = task.limits_for(timeout=3600)
    steps = [step for notebook in all_steps for step in notebook]
    box.start(limits["memory_mb"])
    wall = time.perf_counter()
    # Signed in as one student, so that the numbers cells of exercises that vary show numbers (as
    # each graded notebook's do) instead of stopping for want of an id.
    result = box.run(steps, limits, {"JUPYTERHUB_USER": "s0000"})
    wall = time.perf_counter() - wall
    proc = box._proc
    (inner,) = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    fields = Path(f"/proc/{inner}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) / _TICKS for value in fields[11:15])
    box.close()
    return {"wall": wall, "cpu": cutime + cstime, "zygote": utime + stime, "reason": result.reason,
            "units": len(steps)}


def profile(args) -> int:
    from autograder.grading import batch

    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        course = build_course(base, args.students)
        counters = Counters()
        instrument(counters)
        total = notebooks_in(course)
        profiler = cProfile.Profile() if args.cprofile else None
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        loads = [os.getloadavg()[0]]
        wall = time.perf_counter()
        cpu = time.process_time()
        for assignment in ASSIGNMENTS:
            options = batch.Options(assignment=assignment, jobs=1, force=True, course_dir=str(course), progress=False)
            with contextlib.redirect_stdout(open(os.devnull, "w")):
                if profiler is not None:
                    profiler.enable()
                status = batch.run(options)
                if profiler is not None:
                    profiler.disable()
            loads.append(os.getloadavg()[0])
            if status != 0:
                print(f"{assignment}: exit status {status}")
                return 1
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        children = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        # The floor's own sandbox goes through the patched methods too: its counts are not the batch's.
        saved = (counters.wall.copy(), counters.cpu.copy(), counters.calls.copy())
        floor = floor_run(counters.steps)
        counters.wall, counters.cpu, counters.calls = saved
        floor_load = os.getloadavg()[0]
    per = 1000.0 / total
    print(f"profile: {args.students} students x {total // args.students} notebooks = {total} notebooks, one at a time ({load()}; "
          f"1-min load during the run {min(loads):.1f}..{max(loads):.1f}, after the floor {floor_load:.1f})"
          + ("; cProfile on (inflates the trusted side's Python)" if profiler is not None else ""))
    print(f"{'stage':58} {'wall ms/nb':>10} {'cpu ms/nb':>10} {'calls/nb':>9}")
    for stage in sorted(set(counters.wall) | set(counters.cpu),
                        key=lambda s: (s.split(":")[0], -counters.wall[s], -counters.cpu[s])):
        print(f"{stage:58} {counters.wall[stage] * per:10.1f} {counters.cpu[stage] * per:10.1f} "
              f"{counters.calls[stage] / total:9.2f}")
    sandbox_cpu = counters.cpu["sandbox: the zygote itself"] + counters.cpu["sandbox: watchers + notebook processes"]
    converse = counters.wall["FLOOR: the units in the warm notebook process"] * per
    run = counters.wall["batch.run (all)"] * per
    grade = counters.wall["worker: grade_notebook (all)"] * per
    sandbox = counters.wall["sandbox: run (all)"] * per
    print(f"whole run: {wall * per:.1f} ms/notebook wall; CPU: this process {cpu * per:.1f} ms/notebook, "
          f"the sandbox (zygote, watchers, notebooks) {sandbox_cpu * per:.1f} ms/notebook")
    print(f"  sandbox.run minus its units (fork, namespaces, start/end messages): {sandbox - converse:.1f} ms/notebook wall")
    print(f"  worker outside the sandbox: {grade - sandbox:.1f} ms/notebook; coordinator: {run - grade:.1f} ms/notebook")
    floor_wall, floor_cpu = floor["wall"] * per, (floor["cpu"] + floor["zygote"]) * per
    print(f"FLOOR (all {total} notebooks' {floor['units']} steps in one warm sandboxed process, {floor['reason']}): "
          f"{floor_wall:.1f} ms/notebook wall, {floor_cpu:.1f} ms/notebook CPU")
    cost = (cpu + sandbox_cpu) * per
    print(f"  cost per notebook: {cost:.1f} core-ms (every process), {wall * per:.1f} ms wall; "
          f"cost / floor = {cost / floor_cpu:.2f} (CPU), {wall * per / floor_wall:.2f} (wall)")
    if profiler is not None:
        stats = pstats.Stats(profiler)
        if os.environ.get("BENCH_PROFILE_DUMP"):
            stats.dump_stats(os.environ["BENCH_PROFILE_DUMP"])
        stats.sort_stats("cumulative").print_stats(args.cprofile)
        stats.sort_stats("tottime").print_stats(args.cprofile)
    return 0


# --------------------------------------------------------------------------- whole batches


def frozen(base: Path) -> dict:
    """An environment whose Pythons import a copy of ``autograder`` and ``course`` taken now, so that
    an edit to the working tree during a run cannot skew it (:func:`autograder.demo.compare.freeze_code`)."""
    from autograder.demo.compare import freeze_code

    env = freeze_code(base / "code", root=ROOT)
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # Dask's local workers are started from this process
    return env


def grade_command(course: Path, assignment: str, *where: str, env: dict | None = None) -> dict:
    """``autograder grade ASSIGNMENT --force`` in its own process: wall seconds, CPU of it and of
    everything it waited for, and its peak resident size (``VmHWM`` read as it exits)."""
    probe = ("import atexit, runpy, sys\n"
             "def hwm():\n"
             "    for line in open('/proc/self/status'):\n"
             "        if line.startswith('VmHWM'):\n"
             "            sys.stderr.write('VMHWM ' + line.split()[1] + '\\n')\n"
             "atexit.register(hwm)\n"
             "sys.argv = ['autograder'] + sys.argv[1:]\n"
             "runpy.run_module('autograder', run_name='__main__')\n")
    started = time.perf_counter()
    loads = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", probe, "grade", assignment, *where, "--no-progress", "--force"],
                          cwd=course, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"autograder grade {assignment} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    hwm = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("VMHWM ")]
    return {"seconds": seconds, "hwm_mb": hwm[-1] / 1024 if hwm else float("nan"),
            "load": (loads + os.getloadavg()[0]) / 2}


def grade_both(course: Path, *where: str, env: dict | None = None) -> dict:
    results = [grade_command(course, assignment, *where, env=env) for assignment in ASSIGNMENTS]
    return {"seconds": sum(r["seconds"] for r in results), "hwm_mb": max(r["hwm_mb"] for r in results),
            "load": sum(r["load"] for r in results) / len(results)}


def machine_cpu_seconds() -> float:
    """CPU seconds every process on the machine has used since boot (``/proc/stat``: user, nice,
    system, irq, softirq, steal): the sandbox's processes included, whose time never reaches the
    grader's ``RUSAGE_CHILDREN``. Read on a quiet machine, a difference is the batch's cost."""
    fields = open("/proc/stat").readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def whole_class(args) -> int:
    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        env = frozen(base)
        course = build_course(base, args.students)
        total = notebooks_in(course)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        machine = machine_cpu_seconds()
        result = grade_both(course, "--jobs", str(args.jobs), env=env)
        machine = machine_cpu_seconds() - machine
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rate = total / result["seconds"]
    each = total // args.students
    print(f"class: {args.students} students x {each} notebooks = {total} notebooks, --jobs {args.jobs} "
          f"(mean 1-min load {result['load']:.1f}; {load()})")
    print(f"  {result['seconds']:.1f} s, {rate:.1f} notebooks/s; CPU per notebook: {machine * 1000 / total:.1f} "
          f"core-ms on the whole machine, {cpu * 1000 / total:.1f} in the grader and the children it reaped; "
          f"coordinator peak {result['hwm_mb']:.0f} MB")
    print(f"  1,000 x {each} at this rate (extrapolated, linear): {1000 * each / rate / 60:.1f} min (goal < 10 min)")
    return 0


def versus_nbgrader(args) -> int:
    """Both graders on the same small class, in one run (nbgrader takes seconds per notebook).

    nbgrader's side is its own in-kernel autograde (``IN_KERNEL_CONFIG``): the course's config would
    otherwise send ``nbgrader autograde`` through the sandboxed grader as well."""
    from autograder.demo.compare import IN_KERNEL_CONFIG, compare

    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        env = frozen(base)
        course = build_course(base, args.students)
        ours = copy_course(course, base / "ours")
        with (course / "nbgrader_config.py").open("a") as config:
            config.write(IN_KERNEL_CONFIG)
        total = notebooks_in(course)
        started = time.perf_counter()
        logs = []
        for assignment in ASSIGNMENTS:
            run = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"], cwd=course,
                                 env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            logs.append(run.stdout)
        theirs = time.perf_counter() - started
        load_nbgrader = load()
        started = time.perf_counter()
        for assignment in ASSIGNMENTS:
            proc = subprocess.run([sys.executable, "-m", "autograder", "grade", assignment, "--jobs", str(args.jobs),
                                   "--no-progress", "--force", "--report", str(base / f"{assignment}.jsonl")],
                                  cwd=ours, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr)
                return 1
        mine = time.perf_counter() - started
        # The comparison reads module6's gradebook (compare() knows the first assignment only).
        result = compare(course, ours, nbgrader_log=logs[0], report=base / f"{ASSIGNMENTS[0]}.jsonl")
        differences = result.unexplained + result.on_grader_side
    print(f"class: {args.students} students x {total // args.students} notebooks = {total} notebooks")
    print(f"  nbgrader autograde: {theirs:.1f} s ({load_nbgrader})")
    print(f"  autograder grade --jobs {args.jobs}: {mine:.1f} s ({load()})")
    print(f"  ratio {theirs / mine:.1f}x (goal >= 60x); unexplained score differences: {len(differences)}")
    for difference in differences:
        print("    " + difference.line())
    return 1 if differences else 0


def on_dask(args) -> int:
    import distributed

    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        env = frozen(base)
        course = build_course(base, args.students)
        total = notebooks_in(course)
        for workers in [int(w) for w in args.workers.split(",")]:
            with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                          dashboard_address=None) as cluster:
                result = grade_both(course, "--dask", cluster.scheduler_address, env=env)
            print(f"dask, {workers} local worker(s): {total} notebooks in {result['seconds']:.1f} s, "
                  f"{total / result['seconds']:.1f} notebooks/s (mean 1-min load {result['load']:.1f})", flush=True)
        result = grade_both(course, "--jobs", "2", env=env)
        print(f"process pool --jobs 2 (same class, same run): {total / result['seconds']:.1f} notebooks/s "
              f"(mean 1-min load {result['load']:.1f})")
    return 0


def outputs(args) -> int:
    """Grade a class and save its scores, report rows, autograded notebooks and pages under ``--save``.

    ``--door grade`` (the default) grades with ``autograder grade --force`` and saves its report's rows;
    ``--door nbgrader`` grades the same class with ``nbgrader autograde --force`` in the scratch course
    (whose ``nbgrader_config.py`` sends it through the sandboxed grader) and saves the rows of the state
    files both doors write (every notebook of this class is submitted: those are the report's rows)."""
    save = Path(args.save)
    if save.exists():
        raise SystemExit(f"--save: {save} exists; give a new folder")
    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        env = frozen(base)
        course = build_course(base, args.students)
        for assignment in ASSIGNMENTS:
            if args.door == "nbgrader":
                command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"]
            else:
                command = [sys.executable, "-m", "autograder", "grade", assignment, "--jobs", str(args.jobs),
                           "--no-progress", "--force", "--report", str(base / f"{assignment}.jsonl")]
            proc = subprocess.run(command, cwd=course, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr)
                return 1
        save.mkdir(parents=True)
        for assignment in ASSIGNMENTS:
            rows = (_state_rows(course, assignment) if args.door == "nbgrader" else
                    [json.loads(line) for line in (base / f"{assignment}.jsonl").read_text().splitlines()])
            rows.sort(key=lambda row: json.dumps(row, sort_keys=True))
            (save / f"{assignment}.rows.json").write_text(json.dumps(rows, indent=1, sort_keys=True))
        shutil.copytree(course / "autograded", save / "autograded")
        shutil.copytree(course / "feedback", save / "feedback")
        scores = scratch_course.read_gradebook(course)
        further = scratch_course.read_gradebook(course, assignment=ASSIGNMENTS[1])
        (save / "gradebook.json").write_text(json.dumps(
            {"module6": {s: {n: vars(v) for n, v in nb.items()} for s, nb in scores.items()},
             "module6_further": {s: {n: vars(v) for n, v in nb.items()} for s, nb in further.items()}},
            indent=1, sort_keys=True, default=str))
        _dump_comments(course, save / "comments.json")
    print(f"saved to {save}")
    return 0


def _state_rows(course: Path, assignment: str) -> list:
    """Every row the state files of ``assignment`` hold (:mod:`autograder.grading.state`)."""
    from autograder.grading.state import STATE_FILE

    rows = []
    for path in sorted((course / "autograded").glob(f"*/{assignment}/{STATE_FILE}")):
        for entry in json.loads(path.read_text()).values():
            rows.extend(entry["rows"])
    return rows


def _dump_comments(course: Path, target: Path) -> None:
    """Every grade and comment of the gradebook (what formgrader shows and ``nbgrader export`` reads)."""
    from nbgrader.api import Gradebook

    found = []
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), scratch_course.COURSE_ID) as gb:
        for assignment in ASSIGNMENTS:
            for submission in gb.assignment_submissions(assignment):
                for notebook in submission.notebooks:
                    found.append([assignment, submission.student_id, notebook.name, "notebook",
                                  notebook.score, notebook.late_submission_penalty, notebook.needs_manual_grade])
                    for grade in notebook.grades:
                        found.append([assignment, submission.student_id, notebook.name, "grade", grade.name,
                                      grade.auto_score, grade.manual_score, grade.needs_manual_grade])
                    for comment in notebook.comments:
                        found.append([assignment, submission.student_id, notebook.name, "comment", comment.name,
                                      comment.auto_comment, comment.manual_comment])
    target.write_text(json.dumps(sorted(found, key=json.dumps), indent=1, default=str))


def nbgrader_both(course: Path, *, pod: bool, env: dict) -> dict:
    """``nbgrader autograde ASSIGNMENT --force`` for both assignments (in a pod-like process when ``pod``)."""
    started = time.perf_counter()
    loads = os.getloadavg()[0]
    for assignment in ASSIGNMENTS:
        command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"]
        if pod:
            command = [sys.executable, str(ROOT / "deploy" / "hub" / "podlike.py"), "--", *command]
        proc = subprocess.run(command, cwd=course, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            raise SystemExit(f"nbgrader autograde {assignment} failed ({proc.returncode}):\n{proc.stdout[-4000:]}")
    return {"seconds": time.perf_counter() - started, "load": (loads + os.getloadavg()[0]) / 2}


def pod_dask(args) -> int:
    """nbgrader's door on a Dask cluster (issue 39): ``nbgrader autograde`` in a pod-like server (no sandbox)
    with ``c.SandboxedGrade.dask_scheduler``, on a TLS scheduler and 1, 2, 4 sandboxing workers started with
    the ``dask`` command as the README starts them; against, in the same run, the local process pool
    (``autograder grade --jobs 2``) and the same door grading locally (``nbgrader autograde``, one notebook
    at a time in this machine's sandbox)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import dask_tls_support as tls

    with scratch_folder("bench-throughput-", keep=args.keep) as base:
        env = frozen(base)
        env.pop("JUPYTER_CONFIG_DIR", None)
        course = build_course(base, args.students)
        total = notebooks_in(course)
        pki = tls.make_pki(base / "tls")
        pool = grade_both(course, "--jobs", "2", env=env)
        rates = {"pool": total / pool["seconds"]}
        print(f"class: {args.students} students x {total // args.students} notebooks = {total} notebooks", flush=True)
        print(f"  local pool, autograder grade --jobs 2: {rates['pool']:.2f} notebooks/s "
              f"(mean 1-min load {pool['load']:.1f})", flush=True)
        local = nbgrader_both(course, pod=False, env=env)
        rates["local door"] = total / local["seconds"]
        print(f"  nbgrader autograde, local sandbox: {rates['local door']:.2f} notebooks/s "
              f"(ratio to the pool {rates['local door'] / rates['pool']:.2f}; load {local['load']:.1f})", flush=True)
        config = (course / "nbgrader_config.py").read_text()
        for workers in [int(w) for w in args.workers.split(",")]:
            host = base / f"host-{workers}"
            host.mkdir()
            scheduler, address = tls.start_scheduler(host, pki)
            started = tls.start_workers(host, pki, address, workers)
            try:
                tls.wait_for_workers(address, pki, workers)
                (course / "nbgrader_config.py").write_text(config + "\n" + tls.config_lines(address, pki))
                result = nbgrader_both(course, pod=True, env=env)
            finally:
                (course / "nbgrader_config.py").write_text(config)
                tls.stop(started)
                tls.stop(scheduler)
            rate = total / result["seconds"]
            print(f"  pod server's nbgrader autograde on Dask over TLS, {workers} worker(s): {rate:.2f} notebooks/s "
                  f"(ratio to the pool {rate / rates['pool']:.2f}, to the local door {rate / rates['local door']:.2f}; "
                  f"load {result['load']:.1f})", flush=True)
    print(load())
    return 0


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("profile", "class", "nbgrader", "dask", "pod-dask", "outputs"))
    parser.add_argument("--students", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4", help="dask: local worker counts")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="profile: also the top N functions")
    parser.add_argument("--save", help="outputs: a new folder for the results")
    parser.add_argument("--door", choices=("grade", "nbgrader"), default="grade",
                        help="outputs: grade with `autograder grade` (default) or `nbgrader autograde`")
    parser.add_argument("--keep", action="store_true", help="keep the scratch course")
    args = parser.parse_args(argv)
    defaults = {"profile": 10, "class": 100, "nbgrader": 2, "dask": 20, "pod-dask": 10, "outputs": 6}
    args.students = args.students if args.students is not None else defaults[args.mode]
    return {"profile": profile, "class": whole_class, "nbgrader": versus_nbgrader, "dask": on_dask,
            "pod-dask": pod_dask, "outputs": outputs}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
