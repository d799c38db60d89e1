"""The batch grader side by side with ``nbgrader autograde``: frozen code, and every difference explained.

Two courses that started as identical copies are graded, one by ``nbgrader autograde`` (the
student's kernel imports ``autograder.checks`` for the hidden test cells), one by ``autograder
grade``. Two things make such a comparison trustworthy:

* both sides must import the *same* ``autograder`` and ``course``. The project is installed in
  editable mode, so a kernel started minutes into a long nbgrader run imports whatever the
  working tree holds at that moment; on a tree that other people edit, a refactor caught half
  written (a check importing a name its helper module no longer has) makes every hidden test
  cell of that kernel raise and score 0, while the batch grader, run later, grades the finished
  code. :func:`freeze_code` copies both packages once and gives the environment that puts the
  copy first on ``sys.path`` (it precedes the editable finder, which is appended to
  ``sys.meta_path``);
* a score that differs is not necessarily the grader's fault. :func:`compare` reads both
  autograded notebooks and names the cause of each difference: the nbgrader side did not run the
  check (the test cell raised, a cell or a call timed out, the student's run failed), the batch
  grader did not (its report's status says why: timeout, error, a sandbox failure, a rejected or
  symbolic-linked submission, ...; see :data:`STATUS_CAUSES`), or neither, in which case the two graders disagree on a clean
  run and the difference is *unexplained*.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

PACKAGES = ("autograder", "course")
from autograder.assignment import ASSIGNMENT, REPO_ROOT  # noqa: E402
from autograder.results import GroupVerdict, Status, verdicts_of  # noqa: E402

#: The timeout of a check call, as the judge's message of the case words it (see ``autograder.channel``).
CALL_TIMEOUT = re.compile(r"did not finish within [0-9.]+ s")

#: Causes where nbgrader's side did not really run the check; the batch grader is not to blame.
NBGRADER_CAUSES = ("nbgrader-not-graded", "nbgrader-timeout", "nbgrader-call-timeout", "nbgrader-error")
#: The cause a difference gets from the batch grader's status of the cell (``graded``: none, the outputs
#: decide). Every status of :class:`~autograder.results.Status` but ``graded`` has one; the
#: sentence is the status's own meaning.
STATUS_CAUSES = {
    Status.TIMEOUT: "grader-timeout",
    Status.ERROR: "grader-error",
    Status.GRADER_ERROR: "grader-sandbox",
    Status.REJECTED: "grader-rejected",
    Status.UNREADABLE: "grader-unreadable",
    Status.SYMLINK: "grader-symlink",
    Status.MISSING: "grader-missing",
    Status.NEEDS_MANUAL_GRADE: "grader-manual",
    Status.BAD_TIMESTAMP: "grader-bad-timestamp",
    Status.TIMESTAMP_DISPUTED: "grader-timestamp-disputed",
}
#: Causes where the batch grader did not run the check.
GRADER_CAUSES = ("grader-call-timeout",) + tuple(STATUS_CAUSES.values())


#: nbgrader's own in-kernel autograde, for a course whose config puts the sandboxed grader behind
#: ``nbgrader autograde`` (``nbgrader_bridge``): appended to a copy's ``nbgrader_config.py``, it restores
#: nbgrader==0.9.6's default sanitize and autograde chains and exporter, the behaviour compared against.
IN_KERNEL_CONFIG = """
import nbgrader.apps.api as _api
import nbgrader.apps.autogradeapp as _app
from nbconvert.exporters import NotebookExporter as _NotebookExporter
from nbgrader.converters.autograde import Autograde as _Autograde
for _name in ("sanitize_preprocessors", "autograde_preprocessors"):
    setattr(c.Autograde, _name, _Autograde.class_traits()[_name].default())
c.Autograde.exporter_class = _NotebookExporter
_api.Autograde = _app.Autograde = _Autograde
"""


def freeze_code(dest: Path, *, root: Path | None = None) -> dict:
    """Copy ``autograder`` and ``course`` into ``dest`` (new) and return an environment that imports them.

    Parameters
    ----------
    dest : Path
        A new directory outside the course directories (nbgrader must not copy it).
    root : Path, optional
        The project root to copy from (default: the one this module belongs to).

    Returns
    -------
    dict
        ``os.environ`` with ``PYTHONPATH`` starting at ``dest`` and the virtualenv's ``bin`` first on
        ``PATH``: pass it to ``nbgrader`` (its kernels inherit it) and to ``autograder grade``.
    """
    root = Path(root) if root is not None else REPO_ROOT
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"dest must be a new or empty directory, got {dest}")
    dest.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        shutil.copytree(root / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(dest)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("JUPYTER_CONFIG_DIR", None)
    return env


def imported_from(env: dict, cwd: Path | None = None) -> dict:
    """``package -> directory`` that a fresh Python started with ``env`` imports (to verify a freeze)."""
    code = ("import json, os, " + ", ".join(PACKAGES) + "; print(json.dumps({p: os.path.dirname(m.__file__) "
            "for p, m in zip(" + repr(PACKAGES) + ", (" + ", ".join(PACKAGES) + ",))}))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


@dataclasses.dataclass(frozen=True)
class Difference:
    """One test cell scored differently; ``cause`` None means unexplained (a real disagreement)."""

    student: str
    notebook: str
    grade_id: str
    nbgrader: float | None
    grader: float | None
    cause: str | None
    detail: str

    def line(self) -> str:
        what = self.cause or "UNEXPLAINED"
        return (f"{self.student}/{self.notebook}/{self.grade_id}: nbgrader {self.nbgrader} vs grader {self.grader}"
                f"  [{what}] {self.detail}")


@dataclasses.dataclass(frozen=True)
class Comparison:
    notebooks: int
    identical: int
    differences: tuple

    @property
    def unexplained(self) -> tuple:
        return tuple(d for d in self.differences if d.cause is None)

    @property
    def on_nbgrader_side(self) -> tuple:
        return tuple(d for d in self.differences if d.cause in NBGRADER_CAUSES)

    @property
    def on_grader_side(self) -> tuple:
        return tuple(d for d in self.differences if d.cause in GRADER_CAUSES)


def _text(outputs: list, name: str) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == name)


def _test_cells(path: Path) -> dict:
    """``grade_id -> outputs`` of the graded code cells of an autograded notebook ({} when absent)."""
    if not path.exists():
        return {}
    nb = nbformat.read(str(path), as_version=4)
    cells = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cells[meta.get("grade_id")] = cell.get("outputs", [])
    return cells


def _failed_students(log: str) -> set:
    return set(re.findall(r"error processing assignment '[^']*' for student '([^']*)'", log))


def explain(nbgrader_outputs: list | None, grader_outputs: list | None, *, nbgrader_failed: bool = False,
            grader_status: str | None = None) -> tuple:
    """``(cause, detail)`` for one test cell whose two scores differ; cause None when nothing explains it.

    The cases that failed come from the verdict records both graders store with a test cell's points
    (``autograder.results.GroupVerdict``), never from the verdict text they print.

    Parameters
    ----------
    nbgrader_outputs, grader_outputs : list or None
        The cell's outputs in each autograded notebook (None: that notebook is missing).
    nbgrader_failed : bool
        nbgrader's log says this student's run failed (it then removes the autograded folder).
    grader_status : str, optional
        The cell's ``status`` in the batch grader's report (a :class:`~autograder.results.Status`;
        for a notebook-wide row, such as ``symlink``, the notebook's).
    """
    if nbgrader_failed or nbgrader_outputs is None:
        return "nbgrader-not-graded", "nbgrader's run of this student failed (see its log); no output to compare"
    for output in nbgrader_outputs:
        if output.get("output_type") == "error":
            name, value = str(output.get("ename", "")), str(output.get("evalue", ""))
            cause = "nbgrader-timeout" if "timeout" in name.lower() else "nbgrader-error"
            return cause, f"the test cell raised {name}: {value}"[:300]
    theirs, ours = _record(nbgrader_outputs), _record(grader_outputs)
    if _call_timed_out(theirs) and not _call_timed_out(ours):
        return "nbgrader-call-timeout", "a check call timed out in the student's kernel"
    status = _status(grader_status)
    if status is not None and status not in (Status.GRADED, Status.TIMEOUT, Status.ERROR):
        return STATUS_CAUSES[status], _because(status)
    if grader_outputs is None:
        return "grader-error", "the batch grader wrote no autograded notebook"
    if status == Status.TIMEOUT:
        return STATUS_CAUSES[status], _because(status)
    if _call_timed_out(ours) and not _call_timed_out(theirs):
        return "grader-call-timeout", "a check call timed out in the sandbox"
    if status == Status.ERROR:
        return STATUS_CAUSES[status], _because(status)
    theirs_fail, ours_fail = _failures(theirs), _failures(ours)
    stderr = _text(nbgrader_outputs, "stderr")
    detail = (f"nbgrader-only failures {sorted(set(theirs_fail) - set(ours_fail))}, "
              f"grader-only failures {sorted(set(ours_fail) - set(theirs_fail))}")
    missing = [side for side, record in (("nbgrader's", theirs), ("the grader's", ours)) if record is None]
    if missing:
        detail += f"; no verdict record in {' and '.join(missing)} test cell"
    if stderr:
        detail += f"; nbgrader's cell wrote to stderr (scored 0 by nbgrader): {stderr.strip()[:200]!r}"
    return None, detail


def _record(outputs: list | None) -> GroupVerdict | None:
    """The verdict record a test cell's points output carries (both graders write one), or None."""
    found = verdicts_of({"cell_type": "code", "outputs": outputs or []})
    return GroupVerdict.from_json(found) if found is not None else None


def _call_timed_out(record: GroupVerdict | None) -> bool:
    """Whether a failed case of ``record`` is a check call that ran out of time (the judge's message)."""
    return record is not None and any(CALL_TIMEOUT.search(case.message) for case in record.cases if not case.passed)


def _failures(record: GroupVerdict | None) -> list:
    """``"case: message"`` for each case of ``record`` that earned nothing (failed or withheld)."""
    return [] if record is None else [f"{case.name}: {case.message}" for case in record.cases if not case.passed]


def _status(value) -> Status | None:
    """The report's status as a :class:`Status`; None when absent. A status this code does not know
    (a report from another version) is an error, not a silent "graded"."""
    if value is None:
        return None
    try:
        return Status(value)
    except ValueError:
        raise ValueError(f"grader_status must be one of {[s.value for s in Status]} or None, "
                         f"got {value!r}") from None


def _because(status: Status) -> str:
    return f"the batch grader's status is {status.value!r}: {status.meaning}"


def read_statuses(report: Path) -> dict:
    """``(student, notebook, grade_id) -> status`` from the batch grader's ``--report`` file."""
    statuses = {}
    for line in Path(report).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            statuses[(row["student"], row["notebook"], row["grade_id"])] = row["status"]
    return statuses


def status_of(statuses: dict, student: str, notebook: str, grade_id: str) -> str | None:
    """The status of one cell: its own row's, else its notebook's row without a grade id (a symbolic
    link, a notebook that could not be graded or stored), else None."""
    return statuses.get((student, notebook, grade_id), statuses.get((student, notebook, None)))


def compare(nbgrader_course: Path, grader_course: Path, *, nbgrader_log: str = "",
            report: Path | None = None) -> Comparison:
    """Compare the gradebooks of two graded copies and explain every test cell that differs.

    ``report`` is the batch grader's ``--report`` file (per-cell status); ``nbgrader_log`` is the
    output of ``nbgrader autograde`` (it names the students whose run failed).
    """
    from autograder.authoring import scratch_course

    theirs = scratch_course.read_gradebook(Path(nbgrader_course))
    ours = scratch_course.read_gradebook(Path(grader_course))
    statuses = read_statuses(report) if report is not None and Path(report).exists() else {}
    failed = _failed_students(nbgrader_log)
    notebooks = identical = 0
    differences = []
    for student in sorted(theirs):
        for stem in sorted(theirs[student]):
            notebooks += 1
            a = theirs[student][stem].test_cells
            b = ours.get(student, {}).get(stem)
            b = b.test_cells if b is not None else {}
            if a == b:
                identical += 1
                continue
            paths = [Path(course) / "autograded" / student / ASSIGNMENT / f"{stem}.ipynb"
                     for course in (nbgrader_course, grader_course)]
            cells_a, cells_b = _test_cells(paths[0]), _test_cells(paths[1])
            for grade_id in sorted(set(a) | set(b)):
                if a.get(grade_id) == b.get(grade_id):
                    continue
                status = status_of(statuses, student, stem, grade_id)
                cause, detail = explain(cells_a.get(grade_id) if paths[0].exists() else None,
                                        cells_b.get(grade_id) if paths[1].exists() else None,
                                        nbgrader_failed=student in failed, grader_status=status)
                differences.append(Difference(student, stem, grade_id, a.get(grade_id), b.get(grade_id),
                                              cause, detail))
    return Comparison(notebooks, identical, tuple(differences))
