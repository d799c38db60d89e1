"""Throwaway copies of the course directory, and nbgrader run inside them.

The release build, the simulated class, the demo and the pipeline tests all run nbgrader in a copy
under a temporary directory: the repository never gets a gradebook, submitted/ or autograded/ folder.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Sequence

from autograder.assignment import (  # noqa: F401
    ASSIGNMENT, ASSIGNMENTS, COURSE_ID, REPO_ROOT, notebook_stems, release_dir, source_dir,
)


def make_course_copy(dest: Path, *, root: Path = REPO_ROOT, stems: Iterable[str] | None = None) -> Path:
    """Copy what nbgrader needs (config and every ``source/<assignment>``) into ``dest``, a new directory.

    ``stems`` keeps only those notebooks (for quick runs; they may come from any assignment); other
    files of the source folders are copied as they are, so nbgrader's ``ignore`` rules see the same
    tree as in the repository.
    """
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"dest must be a new or empty directory, got {dest}")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(root) / "nbgrader_config.py", dest / "nbgrader_config.py")
    wanted = None if stems is None else set(stems)
    if wanted is not None:
        unknown = wanted - {stem for assignment in ASSIGNMENTS for stem in notebook_stems(root, assignment)}
        if unknown:
            raise ValueError(f"stems: no source notebook for {sorted(unknown)}")
    sources = {source_dir(root, assignment) for assignment in ASSIGNMENTS}

    def skip(directory, names):
        if wanted is None or Path(directory) not in sources:
            return []
        return [name for name in names if name.endswith(".ipynb") and name[:-len(".ipynb")] not in wanted]

    for assignment in ASSIGNMENTS:
        if source_dir(root, assignment).is_dir():
            shutil.copytree(source_dir(root, assignment), source_dir(dest, assignment), ignore=skip)
    return dest


@dataclasses.dataclass(frozen=True)
class NbgraderRun:
    args: tuple
    returncode: int
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_nbgrader(course: Path, *args: str, check: bool = True, timeout: float | None = None) -> NbgraderRun:
    """Run ``python -m nbgrader ARGS`` with ``course`` as the working directory (so its config applies)."""
    import time

    start = time.perf_counter()
    env = dict(os.environ)
    # Grading must not pick up an instructor's personal nbgrader config from another directory.
    env.pop("JUPYTER_CONFIG_DIR", None)
    # nbgrader shells out to `alembic` (and kernels to `python`): the venv's bin directory goes first.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    run = NbgraderRun(tuple(args), proc.returncode, proc.stdout, time.perf_counter() - start)
    if check and not run.ok:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {run.returncode}) in {course}:\n{run.output}")
    return run


def generate_release(course: Path, assignment: str = ASSIGNMENT) -> NbgraderRun:
    """``nbgrader generate_assignment ASSIGNMENT --force`` in ``course``; checks every notebook came out."""
    run = run_nbgrader(course, "generate_assignment", assignment, "--force")
    if "[ERROR]" in run.output or "Traceback" in run.output:
        raise RuntimeError(f"nbgrader reported errors while generating the release:\n{run.output}")
    missing = sorted(set(notebook_stems(course, assignment))
                     - {p.stem for p in release_dir(course, assignment).glob("*.ipynb")})
    if missing:
        raise RuntimeError(f"release is missing notebooks {missing}:\n{run.output}")
    return run


@dataclasses.dataclass(frozen=True)
class NotebookScore:
    """One student's notebook as the gradebook has it (``score`` None: never graded)."""

    score: float | None
    max_score: float
    auto_score: float | None
    needs_manual_grade: bool
    test_cells: dict  # grade id -> auto score (None when the cell produced no grade)


def read_gradebook(course: Path, students: Sequence[str] | None = None, assignment: str = ASSIGNMENT) -> dict:
    """``student -> notebook -> NotebookScore`` from the course's gradebook (missing entries skipped)."""
    from nbgrader.api import Gradebook, MissingEntry

    url = "sqlite:///" + str(Path(course).resolve() / "gradebook.db")
    table: dict = {}
    with Gradebook(url, COURSE_ID) as gb:
        record = gb.find_assignment(assignment)
        names = students if students is not None else sorted(s.id for s in gb.students)
        for student in names:
            row = {}
            for notebook in record.notebooks:
                try:
                    sub = gb.find_submission_notebook(notebook.name, assignment, student)
                except MissingEntry:
                    continue
                cells = {g.name: g.auto_score for g in sub.grades if g.cell_type == "code"}
                graded = any(g.auto_score is not None for g in sub.grades if g.cell_type == "code")
                row[notebook.name] = NotebookScore(
                    score=float(sub.score) if graded else None, max_score=float(sub.max_score),
                    auto_score=float(sub.code_score) if graded else None,
                    needs_manual_grade=bool(sub.needs_manual_grade), test_cells=cells)
            table[student] = row
    return table


def notebook_points(course: Path, assignment: str = ASSIGNMENT) -> dict:
    """``notebook -> (autograded points, manual points)`` as the gradebook declares them."""
    from nbgrader.api import Gradebook

    url = "sqlite:///" + str(Path(course).resolve() / "gradebook.db")
    with Gradebook(url, COURSE_ID) as gb:
        record = gb.find_assignment(assignment)
        return {nb.name: (float(nb.max_code_score), float(nb.max_written_score)) for nb in record.notebooks}
