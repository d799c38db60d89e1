"""nbgrader's door on a Dask cluster of sandboxing hosts (issue 39): ``c.SandboxedGrade.dask_scheduler``.

A real grading host runs here: ``dask scheduler`` and ``dask worker`` over ``tls://`` with a throwaway
course CA (tests/dask_tls_support.py), started as the README starts them. The instructor's server is
a pod-like process (deploy/hub/podlike.py: bubblewrap cannot run in it) that runs ``nbgrader autograde``
and formgrader's Autograde button (``NbGraderAPI.autograde``) with the README's four lines in the course's
``nbgrader_config.py``; its results must be those of a local sandboxed run, byte for byte and row for row.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dask_tls_support as tls
from autograder.authoring import scratch_course
from autograder.demo.simulate import write_class
from run_cache import released_course, writable_copy

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

PODLIKE = tls.PODLIKE
ASSIGNMENT = scratch_course.ASSIGNMENT
#: A coding exercise and a concept exercise whose numbers vary per student.
STEMS = ("09_sequence_ppl", "15_stable_log_softmax")
CLASS = {"ada": "solutions", "ben": "untouched", "cai": "solutions"}

API = """
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
coursedir = CourseDirectory(config=config)
coursedir.root = os.getcwd()
api = NbGraderAPI(coursedir, config=config)
print(json.dumps({student: api.autograde(sys.argv[1], student) for student in sys.argv[2:]}))
"""


def _sandbox_works() -> bool:
    probe = "from autograder.grading.sandbox import _probe_bubblewrap; print(_probe_bubblewrap()[0] is not None)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120).stdout.strip() == "True"


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux",
                                 reason="the grading host's sandbox and podlike.py are Linux's")]


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """A grading host: the course's certificates, a TLS scheduler and one sandboxing worker."""
    if not _sandbox_works():
        pytest.skip("bubblewrap does not run on this machine: no grading host can be started")
    folder = tmp_path_factory.mktemp("grading-host")
    pki = tls.make_pki(folder / "tls")
    scheduler, address = tls.start_scheduler(folder, pki)
    workers = tls.start_workers(folder, pki, address, 2)
    try:
        tls.wait_for_workers(address, pki, 2)
        yield {"folder": folder, "pki": pki, "address": address}
    finally:
        tls.stop(workers)
        tls.stop(scheduler)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The released course with three students' submissions and the course secret; read-only (copy it)."""
    from autograder.variants import course_secret

    folder = tmp_path_factory.mktemp("remote-course")
    made = writable_copy(released_course(tmp_path_factory, STEMS), folder / "course")
    write_class(made, CLASS)
    course_secret(made, create=True)
    return made


def _env() -> dict:
    env = dict(os.environ)
    env.pop("JUPYTER_CONFIG_DIR", None)
    return env


def _run(course: Path, *args: str, pod: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    command = [sys.executable, *args]
    if pod:
        command = [sys.executable, str(PODLIKE), "--", *command]
    return subprocess.run(command, cwd=course, env=_env(), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)


def _configured(course: Path, folder: Path, address: str, pki: dict) -> Path:
    made = writable_copy(course, folder)
    config = made / "nbgrader_config.py"
    config.write_text(config.read_text() + "\n" + tls.config_lines(address, pki))
    return made


def _files(course: Path) -> dict:
    return {path.relative_to(course).as_posix(): path.read_bytes()
            for folder in ("autograded", "feedback") for path in sorted((course / folder).rglob("*"))
            if path.is_file()}


def _rows(course: Path) -> dict:
    with sqlite3.connect(course / "gradebook.db") as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        # Row ids and times differ between two runs; what a person reads must not.
        return {table: sorted(map(repr, db.execute(f'SELECT * FROM "{table}"').fetchall())) for table in tables}


def _scores(course: Path) -> dict:
    return scratch_course.read_gradebook(course)


def _comparable(files: dict) -> dict:
    """The autograded notebooks, feedback pages and state entries, byte for byte; each state entry's digest
    aside: it covers the course's ``nbgrader_config.py`` (state.grader_fingerprint), which holds the
    cluster's four lines in one copy and not in the other (so a course that moves to the cluster grades
    each notebook once more, and is then at rest again: asserted by the second click below)."""
    out = {}
    for name, data in files.items():
        if name.endswith(".autograder-state.json"):
            state = json.loads(data)
            for entry in state.values():
                assert len(entry.pop("digest")) == 64
            out[name] = state
        else:
            out[name] = data
    return out


def test_the_pod_servers_button_and_command_grade_on_the_cluster_as_a_local_run(host, course, tmp_path):
    local = writable_copy(course, tmp_path / "local")
    proc = _run(local, "-m", "nbgrader", "autograde", ASSIGNMENT, pod=False)
    assert proc.returncode == 0, proc.stdout[-3000:]

    # The command in a server that cannot sandbox, with the README's four lines.
    pod = _configured(course, tmp_path / "pod", host["address"], host["pki"])
    proc = _run(pod, "-m", "nbgrader", "autograde", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Grading on the Dask cluster at tls://" in proc.stdout
    assert "graded in the sandbox of a grading worker" in proc.stdout
    assert "bubblewrap" not in proc.stdout  # no refusal: the workers sandbox
    assert _scores(pod) == _scores(local)
    assert _comparable(_files(pod)) == _comparable(_files(local))
    assert _rows(pod).keys() == _rows(local).keys()
    from autograder.checks import CHECKS
    assert _scores(pod)["ada"][STEMS[0]].auto_score == CHECKS[STEMS[0]].points

    # formgrader's button (nbgrader's API), one student per click, in the same kind of server.
    button = _configured(course, tmp_path / "button", host["address"], host["pki"])
    proc = _run(button, "-c", API, ASSIGNMENT, *CLASS)
    assert proc.returncode == 0, proc.stdout[-3000:]
    clicks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert all(click["success"] for click in clicks.values()), clicks
    assert "graded in the sandbox of a grading worker" in clicks["ada"]["log"]
    assert _scores(button) == _scores(local)
    assert _comparable(_files(button)) == _comparable(_files(local))

    # A second click grades nothing again (the state file both doors share).
    proc = _run(button, "-c", API, ASSIGNMENT, "ada")
    assert proc.returncode == 0 and "not graded again" in proc.stdout


def test_without_the_cluster_setting_the_pod_server_still_refuses(course, tmp_path):
    pod = writable_copy(course, tmp_path / "pod")
    proc = _run(pod, "-m", "nbgrader", "autograde", ASSIGNMENT)
    assert proc.returncode != 0 and "grade on a grading host where bubblewrap works" in proc.stdout
    assert not (pod / "autograded").exists()


def _unchanged_after(course: Path, run) -> str:
    before = (_files(course), _rows(course))
    output = run()
    assert (_files(course), _rows(course)) == before, "a refused run changed the course"
    return output


def test_an_unreachable_scheduler_is_a_clear_error_and_changes_nothing(host, course, tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens there: Dask retries for DASK_CONNECT_SECONDS, then the run is refused.
    pod = _configured(course, tmp_path / "pod", f"tls://127.0.0.1:{port}", host["pki"])

    def command():
        proc = _run(pod, "-m", "nbgrader", "autograde", ASSIGNMENT)
        assert proc.returncode != 0
        return proc.stdout

    output = _unchanged_after(pod, command)
    assert f"cannot reach the Dask scheduler at tls://127.0.0.1:{port}" in output
    assert "Nothing was changed." in output

    def click():
        proc = _run(pod, "-c", API, ASSIGNMENT, "ada")
        assert proc.returncode == 0, proc.stdout[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])["ada"]

    result = _unchanged_after(pod, click)
    assert not result["success"]
    assert "cannot reach the Dask scheduler" in result["error"] + result.get("log", "")


@pytest.mark.parametrize("setting, expected", [
    ("c.SandboxedGrade.dask_scheduler = 'tcp://127.0.0.1:8786'\n", "must be a tls:// address"),
    ("c.SandboxedGrade.dask_tls_client_key = ''\n", "c.SandboxedGrade.dask_tls_client_key is not set"),
    ("c.SandboxedGrade.dask_tls_ca_file = '/nonexistent/ca.pem'\n", "is not a readable file"),
    ("c.SandboxedGrade.no_sandbox = True\n", "remove no_sandbox"),
])
def test_a_wrong_setting_is_named_before_anything_is_touched(host, course, tmp_path, setting, expected):
    pod = _configured(course, tmp_path / "pod", host["address"], host["pki"])
    config = pod / "nbgrader_config.py"
    config.write_text(config.read_text() + setting)

    def command():
        proc = _run(pod, "-m", "nbgrader", "autograde", ASSIGNMENT)
        assert proc.returncode != 0
        return proc.stdout

    assert expected in _unchanged_after(pod, command)


def _connect(address: str, **security) -> str:
    """Try to run ``1 + 1`` on the cluster as a client with ``security`` (keywords of distributed.Security);
    return what happened ("ok" or the error)."""
    code = ("import sys, json\nfrom distributed import Client, Security\n"
            f"kw = json.loads({json.dumps(json.dumps(security))})\n"
            "try:\n"
            "    sec = Security(**kw) if kw else None\n"
            f"    with Client({address!r}, security=sec, timeout=8, set_as_default=False) as c:\n"
            "        print('ok', c.submit(sum, [1, 1]).result(timeout=20))\n"
            "except BaseException as e:\n"
            "    print('refused', type(e).__name__, e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return proc.stdout.strip() + proc.stderr[-300:]


def test_only_the_courses_client_certificate_can_submit_work(host):
    pki, address = host["pki"], host["address"]
    assert _connect(address, tls_ca_file=pki["ca"], tls_client_cert=pki["client"],
                    tls_client_key=pki["client_key"], require_encryption=True).startswith("ok 2")
    plain = address.replace("tls://", "tcp://")
    strangers = {
        "no security at all (tcp:// to the TLS port)": _connect(plain),
        "TLS with the course's CA but no client certificate": _connect(address, tls_ca_file=pki["ca"],
                                                                       require_encryption=True),
        "TLS with a certificate from another CA": _connect(address, tls_ca_file=pki["ca"],
                                                           tls_client_cert=pki["stranger"],
                                                           tls_client_key=pki["stranger_key"], require_encryption=True),
        "TLS trusting the stranger's CA": _connect(address, tls_ca_file=pki["stranger_ca"],
                                                   tls_client_cert=pki["stranger"],
                                                   tls_client_key=pki["stranger_key"], require_encryption=True),
    }
    for who, outcome in strangers.items():
        assert outcome.startswith("refused"), (who, outcome)


def test_a_worker_that_cannot_sandbox_is_refused_by_name_and_refuses_to_grade(host, course, tmp_path):
    folder = tmp_path / "pod-host"
    folder.mkdir()
    pki = host["pki"]
    scheduler, address = tls.start_scheduler(folder, pki)
    worker = tls.start_workers(folder, pki, address, 1, podlike=True, name="in-a-pod")
    try:
        tls.wait_for_workers(address, pki, 1)
        pod = _configured(course, tmp_path / "pod", address, pki)

        def command():
            proc = _run(pod, "-m", "nbgrader", "autograde", ASSIGNMENT)
            assert proc.returncode != 0
            return proc.stdout

        output = _unchanged_after(pod, command)
        assert "cannot sandbox: bubblewrap cannot create its namespaces here" in output
        assert "Nothing was changed." in output
        # And the worker itself refuses a task however it is sent (not only the preflight's check).
        from autograder.grading.remote import grade_on_worker
        from autograder.grading.task import GradingTask
        task = GradingTask(student="ada", assignment=ASSIGNMENT, stem=STEMS[1], source="{}", submission="{}")
        with tls.client(address, pki, timeout=30) as client:
            with pytest.raises(Exception, match="cannot sandbox .* grades nothing"):
                client.submit(grade_on_worker, task, pure=False).result(timeout=120)
    finally:
        tls.stop(worker)
        tls.stop(scheduler)


def test_a_worker_never_takes_a_path_or_a_task_without_its_sandbox():
    from autograder.grading.remote import grade_on_worker
    from autograder.grading.task import GradingTask

    with pytest.raises(ValueError, match="never a path into the course directory"):
        grade_on_worker(GradingTask(student="a", assignment="m", stem="s", source="{}", root="/course/submitted",
                                    parts=("a", "m", "s.ipynb")))
    with pytest.raises(ValueError, match="grades only in its sandbox"):
        grade_on_worker(GradingTask(student="a", assignment="m", stem="s", source="{}", submission="{}",
                                    use_bwrap=False))


def _sleeping_submission(pod: Path, student: str) -> None:
    """``student``'s concept notebook, its first answer cell asleep for 40 s (the wall time is 60 s)."""
    notebook = pod / "submitted" / student / ASSIGNMENT / f"{STEMS[1]}.ipynb"
    nb = json.loads(notebook.read_text())
    code = next(cell for cell in nb["cells"] if cell["cell_type"] == "code"
                and cell.get("metadata", {}).get("nbgrader", {}).get("solution"))
    code["source"] = "import time\ntime.sleep(40)\n" + "".join(code["source"])
    notebook.write_text(json.dumps(nb))


def _kill_while_grading(pod: Path, address: str, pki: dict, kill) -> str:
    """Run the pod server's ``nbgrader autograde`` for cai's sleeping notebook, call ``kill(client)`` once
    the notebook has been on the worker for a while; the run's output."""
    run = subprocess.Popen([sys.executable, str(PODLIKE), "--", sys.executable, "-m", "nbgrader", "autograde",
                            ASSIGNMENT, "--student", "cai", "--notebook", STEMS[1]], cwd=pod, env=_env(), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with tls.client(address, pki, timeout=30) as client:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if "grade_on_worker" in str(client.processing()):
                time.sleep(8)  # inside the sleeping notebook
                break
            time.sleep(0.5)
        else:
            run.kill()
            pytest.fail("the notebook never reached the worker: " + run.communicate()[0][-2000:])
        kill(client)
    output, _ = run.communicate(timeout=600)
    assert run.returncode != 0, output[-3000:]
    return output


def _nothing_of(pod: Path, student: str, stem: str) -> None:
    graded = _scores(pod)[student]
    assert stem not in graded or graded[stem].auto_score is None
    assert not (pod / "autograded" / student / ASSIGNMENT / f"{stem}.ipynb").exists()
    assert not (pod / "feedback" / student / ASSIGNMENT / f"{stem}.html").exists()
    state = pod / "autograded" / student / ASSIGNMENT / ".autograder-state.json"
    assert stem not in (json.loads(state.read_text()) if state.exists() else {})


def test_a_scheduler_that_dies_mid_run_is_a_clear_error_and_nothing_is_half_written(host, course, tmp_path):
    pki = host["pki"]
    folder = tmp_path / "dying-scheduler"
    folder.mkdir()
    scheduler, address = tls.start_scheduler(folder, pki)
    worker = tls.start_workers(folder, pki, address, 1, name="orphan")
    try:
        tls.wait_for_workers(address, pki, 1)
        pod = _configured(course, tmp_path / "pod", address, pki)
        _sleeping_submission(pod, "cai")
        output = _kill_while_grading(pod, address, pki, lambda client: os.killpg(scheduler.pid, signal.SIGKILL))
    finally:
        tls.stop(worker)
        tls.stop(scheduler)
    assert f"cai/{STEMS[1]}: not graded, the Dask cluster at {address} stopped answering" in output, output[-3000:]
    _nothing_of(pod, "cai", STEMS[1])


def test_a_worker_that_dies_mid_notebook_is_an_error_for_that_notebook_and_nothing_is_half_written(
        host, course, tmp_path):
    """The scheduler gives up on a task at the first worker death (allowed-failures 0); the worker's nanny
    starts it again. The notebook it held has no grade, no file and no state entry."""
    pki = host["pki"]
    folder = tmp_path / "dying-host"
    folder.mkdir()
    env = dict(tls.dask_env(), DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="0")
    scheduler, address = tls.start_scheduler(folder, pki, env=env)
    worker = tls.start_workers(folder, pki, address, 1, name="dying", env=env)

    def kill_workers(client):
        for pid in client.run(os.getpid).values():
            os.kill(pid, signal.SIGKILL)

    try:
        tls.wait_for_workers(address, pki, 1)
        pod = _configured(course, tmp_path / "pod", address, pki)
        _sleeping_submission(pod, "cai")
        output = _kill_while_grading(pod, address, pki, kill_workers)
    finally:
        tls.stop(worker)
        tls.stop(scheduler)
    assert f"cai/{STEMS[1]}: the grading worker died while grading it" in output, output[-3000:]
    assert "nothing of it was changed" in output
    _nothing_of(pod, "cai", STEMS[1])
