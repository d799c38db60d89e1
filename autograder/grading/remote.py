"""nbgrader's door on a Dask cluster of sandboxing hosts: ``c.SandboxedGrade.dask_scheduler`` (issue 39).

A notebook server in a container pod cannot run bubblewrap (README, "A hub whose pods cannot sandbox").
With the address of a Dask scheduler and the course's TLS files in ``nbgrader_config.py``::

    c.SandboxedGrade.dask_scheduler = "tls://grading-host:8786"
    c.SandboxedGrade.dask_tls_ca_file = "/etc/module6-grading/ca.pem"
    c.SandboxedGrade.dask_tls_client_cert = "/etc/module6-grading/client.pem"
    c.SandboxedGrade.dask_tls_client_key = "/etc/module6-grading/client-key.pem"

``nbgrader autograde`` and formgrader's Autograde button (:mod:`autograder.grading.nbgrader_bridge`) make
the same tasks as ever (:func:`autograder.grading.task.student_tasks`) and grade each on a worker of that
cluster instead of in this server's sandbox. Everything else stays here: the intake reads the submitted
file (:meth:`GradingTask.shipped`: the worker gets the notebook's text and the task, never a path), and
the results are written into the course and the gradebook by the same steps as a local run, so the rows,
the autograded notebooks and the pages are the same.

What this module holds, and nothing more (Dask schedules, queues, retries and authenticates):

* :class:`Settings`: the four settings, checked (a ``tls://`` address and the three files; Dask's
  :class:`distributed.Security` with ``require_encryption=True``: the scheduler accepts only a client whose
  certificate the course's CA signed, so a student's pod on the same network can neither submit work nor
  read results);
* :func:`worker_report` and :func:`grade_on_worker`, what runs on a worker: a worker that cannot sandbox
  refuses every notebook (never a grade without the sandbox), and so does one handed a path or asked to
  grade without the sandbox;
* :class:`Cluster`, the run's connection: :meth:`Cluster.open` refuses the run before anything is read or
  written when the scheduler cannot be reached, has no worker, or has a worker that cannot sandbox or runs
  another grader; :meth:`Cluster.submit` sends a student's notebooks at once (the cluster grades them in
  parallel), :meth:`Cluster.result` waits for one (a worker that died on it, a cluster that stalls or drops
  the connection: :class:`RemoteFailed`, and nothing of that notebook is replaced).
"""

from __future__ import annotations

import dataclasses
import os
import socket

from autograder.grading.task import GradingTask
from autograder.limits import DASK_CONNECT_SECONDS, DASK_STALL_SECONDS, WALL_SECONDS

#: The settings (traits of ``SandboxedGrade``) this door reads, as ``nbgrader_config.py`` names them.
TRAITS = ("dask_scheduler", "dask_tls_ca_file", "dask_tls_client_cert", "dask_tls_client_key")


class ClusterRefused(RuntimeError):
    """The run cannot grade on the cluster; said before anything was read or written."""


class RemoteFailed(RuntimeError):
    """One notebook could not be graded on the cluster: it has no new grade, and nothing of it was replaced."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """The cluster named in ``nbgrader_config.py``: the scheduler's ``tls://`` address and the course's TLS files."""

    scheduler: str
    ca_file: str
    client_cert: str
    client_key: str

    @classmethod
    def of(cls, grade) -> "Settings | None":
        """The settings of ``grade`` (a configured ``SandboxedGrade``); None when no scheduler is set.

        Raises :class:`ClusterRefused` naming the setting to fix: an address that is not ``tls://``, a
        missing or unreadable TLS file, or ``no_sandbox`` set too (the cluster's workers always sandbox).
        """
        address = (grade.dask_scheduler or "").strip()
        if not address:
            return None
        if not address.startswith("tls://"):
            raise ClusterRefused(f"c.SandboxedGrade.dask_scheduler must be a tls:// address (mutual TLS with the "
                                 f"course's CA), got {address!r}: an unencrypted scheduler takes work from "
                                 f"anyone on its network, students' pods included")
        if grade.no_sandbox:
            raise ClusterRefused("c.SandboxedGrade.no_sandbox and c.SandboxedGrade.dask_scheduler are both set: "
                                 "the cluster's workers grade only in their sandbox; remove no_sandbox")
        files = {}
        for trait in TRAITS[1:]:
            path = (getattr(grade, trait) or "").strip()
            if not path:
                raise ClusterRefused(f"c.SandboxedGrade.{trait} is not set: the Dask scheduler at {address} is "
                                     f"reached with the course's TLS files only (README, \"Grading from a pod\")")
            if not os.path.isfile(path) or not os.access(path, os.R_OK):
                raise ClusterRefused(f"c.SandboxedGrade.{trait} = {path!r} is not a readable file")
            files[trait] = path
        return cls(address, files["dask_tls_ca_file"], files["dask_tls_client_cert"], files["dask_tls_client_key"])

    def security(self):
        """Dask's own TLS security for this client: the course CA verifies the scheduler, the client's
        certificate and key prove the instructor; nothing travels unencrypted."""
        from distributed import Security

        return Security(tls_ca_file=self.ca_file, tls_client_cert=self.client_cert, tls_client_key=self.client_key,
                        require_encryption=True)


# --------------------------------------------------------------------------- on a worker


def worker_report() -> dict:
    """What a worker tells the coordinator before a run: its host, why it cannot sandbox ("" when it can),
    and the versions and fingerprint of its grader (:func:`autograder.grading.state.grader_fingerprint`)."""
    from autograder.grading.sandbox import _probe_bubblewrap
    from autograder.grading.state import _versions, grader_fingerprint

    path, why = _probe_bubblewrap()
    return {"host": socket.gethostname(), "sandbox": "" if path else (why or "bubblewrap does not run"),
            "versions": _versions(), "grader": grader_fingerprint(None)}


def grade_on_worker(task: GradingTask) -> dict:
    """Grade ``task`` on this worker, in its sandbox: :func:`autograder.grading.worker.grade_notebook`.

    Refuses (raises) a task that carries a path (a worker is never sent one: the coordinator ships the
    text) or asks for no sandbox, and every task when bubblewrap cannot run on this host.
    """
    from autograder.grading.sandbox import INSTALL_HELP, SandboxError, _probe_bubblewrap
    from autograder.grading.worker import grade_notebook

    if task.root is not None or task.parts:
        raise ValueError(f"{task.student}/{task.stem}: a grading worker takes the notebook's text, never a path "
                         "into the course directory (GradingTask.shipped)")
    if task.use_bwrap is False:
        raise ValueError(f"{task.student}/{task.stem}: a grading worker grades only in its sandbox (use_bwrap=False)")
    path, why = _probe_bubblewrap()
    if path is None:
        raise SandboxError(f"the grading worker on {socket.gethostname()} cannot sandbox ({why}) and grades "
                           f"nothing: {INSTALL_HELP}")
    return grade_notebook(task)


# --------------------------------------------------------------------------- in the instructor's server


def _refusals(reports: dict, mine: dict) -> list:
    """Why each worker of ``reports`` (address -> :func:`worker_report` or the exception it raised) cannot
    grade for this server, whose own report is ``mine``."""
    problems = []
    for address, report in sorted(reports.items()):
        if not isinstance(report, dict):
            problems.append(f"the worker at {address} could not report ({type(report).__name__}: {report})")
            continue
        where = f"the worker at {address} (host {report.get('host')})"
        if report.get("sandbox"):
            problems.append(f"{where} cannot sandbox: {report['sandbox']}")
        elif report.get("versions") != mine["versions"]:
            differ = sorted(name for name in mine["versions"]
                            if report.get("versions", {}).get(name) != mine["versions"][name])
            here = ", ".join(f"{name} {mine['versions'][name]}" for name in differ)
            problems.append(f"{where} runs other versions of {', '.join(differ)} than this server ({here} here)")
        elif report.get("grader") != mine["grader"]:
            problems.append(f"{where} runs another grader than this server (the files of module6-instructor or "
                            f"module6-course differ): install the same release on both")
    return problems


class Cluster:
    """One run's connection to the grading cluster (see the module's docstring); close it with :meth:`close`."""

    def __init__(self, client, settings: Settings, workers: int):
        self.client, self.settings, self.workers = client, settings, workers
        self._futures: dict = {}
        #: Why the cluster cannot be used any more in this run (None while it can).
        self.broken: str | None = None

    @classmethod
    def open(cls, settings: Settings, log=None) -> "Cluster":
        """Connect (Dask's TLS), wait for a worker, and check every worker can sandbox and grades as this
        server would; :class:`ClusterRefused` otherwise, with nothing read or written."""
        from distributed import Client

        wait = DASK_CONNECT_SECONDS.value
        try:
            client = Client(settings.scheduler, security=settings.security(), timeout=wait, set_as_default=False)
        except Exception as error:  # noqa: BLE001 - every way of not connecting is the same refusal
            raise ClusterRefused(f"cannot reach the Dask scheduler at {settings.scheduler} within {wait} s "
                                 f"({type(error).__name__}: {error}): is the grading host up, and are "
                                 f"c.SandboxedGrade's TLS files the course's?") from None
        try:
            try:
                client.wait_for_workers(1, timeout=wait)
            except Exception:  # noqa: BLE001 - distributed's TimeoutError
                raise ClusterRefused(f"the Dask scheduler at {settings.scheduler} has no worker (waited {wait} s): "
                                     "start the grading workers (README, \"Grading from a pod\")") from None
            reports = client.run(worker_report, on_error="return")
            problems = _refusals(reports, worker_report() | {"sandbox": ""})
            if problems:
                raise ClusterRefused("the grading cluster cannot grade for this course: " + "; ".join(problems))
        except BaseException:
            client.close()
            raise
        if log is not None:
            log.info("Grading on the Dask cluster at %s (%d worker(s), each sandboxed)", settings.scheduler,
                     len(reports))
        return cls(client, settings, len(reports))

    @staticmethod
    def _key(task: GradingTask) -> tuple:
        return task.student, task.assignment, task.stem

    def submit(self, tasks) -> None:
        """Send ``tasks`` to the cluster now (each its notebook's text, read here through the intake)."""
        if self.broken:
            return
        for task in tasks:
            if self._key(task) not in self._futures:
                self._futures[self._key(task)] = self.client.submit(grade_on_worker, task.shipped(), pure=False)

    def result(self, task: GradingTask) -> dict:
        """The result of grading ``task`` on the cluster (sent now unless :meth:`submit` sent it).

        Waits at most twice the notebook's wall time plus :data:`~autograder.limits.DASK_STALL_SECONDS`;
        raises :class:`RemoteFailed` when the worker raised (one that cannot sandbox), died on the notebook
        as often as the scheduler allows (``KilledWorker``), or the cluster stalled or dropped the
        connection (then every later notebook of the run fails at once, with the same sentence).
        """
        from distributed import KilledWorker

        who = f"{task.student}/{task.stem}"
        self.submit([task])
        future = self._futures.pop(self._key(task), None)
        if future is None:
            raise RemoteFailed(f"{who}: not graded, {self.broken}")
        wait = 2 * float(task.limits.get("wall_seconds", WALL_SECONDS.value)) + DASK_STALL_SECONDS.value
        try:
            return future.result(timeout=wait)
        except Exception as error:  # noqa: BLE001 - classified below, by what Dask says of the task
            if isinstance(error, KilledWorker):
                raise RemoteFailed(f"{who}: the grading worker died while grading it, as often as the scheduler "
                                   f"retries ({error}); nothing of it was changed: grade it again") from None
            if future.status == "error":  # raised by grade_on_worker on the worker (one that cannot sandbox)
                raise RemoteFailed(f"{who}: not graded on the cluster ({type(error).__name__}: {error}); nothing of "
                                   "it was changed") from None
            # Still pending after the wait, cancelled, or the connection lost: the cluster, not this notebook.
            self.broken = (f"the Dask cluster at {self.settings.scheduler} stopped answering "
                           f"({type(error).__name__}: {error or f'no result within {wait:g} s'})")
            self.discard()
            raise RemoteFailed(f"{who}: not graded, {self.broken}; nothing of it was changed") from None
        finally:
            future.release()

    def discard(self) -> None:
        """Cancel every notebook sent and not yet taken (a failed run, the next student)."""
        futures, self._futures = list(self._futures.values()), {}
        if futures and self.client.status == "running":
            try:
                self.client.cancel(futures)
            except Exception:  # noqa: BLE001 - best effort: the client's close cancels them too
                pass

    def close(self) -> None:
        self.discard()
        self.client.close()
