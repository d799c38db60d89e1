"""What nbgrader's gradebook says: which assignments to export, and each student's grade in each.

A grade is one of four things (:class:`Grade`):

* ``graded``: a submission whose every grade is final. Its score is nbgrader's own export's
  (``CsvExportPlugin``): the total minus the late penalty, never below zero.
* ``pending``: a submission with a grade that still needs a manual grade (nbgrader's
  ``needs_manual_grade``: a written answer not yet graded in formgrader, or an autograded cell whose
  result a grader must review). Its score is the partial total.
* ``ungraded``: collected (``submitted/<student>/<assignment>/`` exists) but not autograded yet: no
  score at all.
* ``missing``: no submission.

By default the assignments exported are those with at least one submission in the gradebook or in
``submitted/`` (an assignment not yet collected is not exported as zeros); ``--assignment`` names
them explicitly (nbgrader's ``ExportPlugin.assignment``; its documented ``[a,b]`` form is read too).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from nbgrader.api import Gradebook


@dataclasses.dataclass(frozen=True)
class Grade:
    """One student's standing in one assignment, as the gradebook says."""

    student: str
    assignment: str
    status: str  # "graded" | "pending" | "ungraded" | "missing"
    max_score: float
    raw_score: float | None = None
    penalty: float = 0.0
    pending: tuple[str, ...] = ()  # "notebook: grade cell" awaiting a manual grade

    @property
    def score(self) -> float | None:
        """The total after the late penalty, never below zero (``None`` when there is none)."""
        if self.raw_score is None:
            return None
        return max(0.0, self.raw_score - self.penalty)


def requested(names) -> list:
    """The assignment names of ``--assignment`` (repeated, or nbgrader's documented ``[a,b]`` form).

    >>> requested(["module6"]), requested(["[module6,module6_further]"]), requested([])
    (['module6'], ['module6', 'module6_further'], [])
    """
    out = []
    for item in names:
        item = str(item).strip()
        if item.startswith("[") and item.endswith("]"):
            out.extend(part.strip().strip("'\"") for part in item[1:-1].split(",") if part.strip())
        elif item:
            out.append(item)
    return list(dict.fromkeys(out))


def collected(submitted_root: Path | None, assignment: str) -> set:
    """Students with a collected submission folder ``submitted/<student>/<assignment>/``."""
    if submitted_root is None or not submitted_root.is_dir():
        return set()
    found = set()
    with os.scandir(submitted_root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and (Path(entry.path) / assignment).is_dir():
                found.add(entry.name)
    return found


def select_assignments(gradebook: Gradebook, names: list, submitted_root: Path | None) -> tuple:
    """``(chosen, skipped)``: the assignments to export (gradebook order) and those left out by default.

    Named assignments must exist in the gradebook; without names, an assignment is chosen when it has
    a submission in the gradebook or a collected one in ``submitted/``.
    """
    known = [a.name for a in gradebook.assignments]
    if names:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"--assignment / c.LmsExport.assignments: {', '.join(map(repr, unknown))} not in the "
                             f"gradebook (it has: {', '.join(known) or 'no assignments'})")
        return [name for name in known if name in names], []
    chosen, skipped = [], []
    for assignment in gradebook.assignments:
        if assignment.num_submissions or collected(submitted_root, assignment.name):
            chosen.append(assignment.name)
        else:
            skipped.append(assignment.name)
    return chosen, skipped


def grades(gradebook: Gradebook, assignment: str, students, submitted_root: Path | None) -> dict:
    """``{student id: Grade}`` for every student in ``students`` (gradebook ids)."""
    record = gradebook.find_assignment(assignment)
    max_score = float(record.max_score)
    out = {}
    for submission in record.submissions:
        student = submission.student_id
        if student not in students:
            continue
        pending = ()
        if submission.needs_manual_grade:
            pending = tuple(f"{notebook.name}: {grade.name}" for notebook in submission.notebooks
                            for grade in notebook.grades if grade.needs_manual_grade)
        out[student] = Grade(student, assignment, "pending" if pending else "graded", max_score,
                             float(submission.score), float(submission.late_submission_penalty or 0.0), pending)
    waiting = collected(submitted_root, assignment)
    for student in students:
        if student not in out:
            status = "ungraded" if student in waiting else "missing"
            out[student] = Grade(student, assignment, status, max_score)
    return out
