"""The grading results of a class, as report rows, from the files ``autograder grade`` leaves.

Rows are the dicts of :mod:`autograder.grading.report` (``student``, ``notebook``, ``grade_id``,
``score``, ``max_score``, ``status``, ``feedback``, ``misconceptions``). They come from a JSON-lines
file written by ``autograder grade --report FILE``, or else from the per-student state the grader
keeps beside the autograded notebooks. The gradebook then supplies the scores a person gave since
(written answers graded in formgrader), so the report shows the grades as they stand.
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.grading import intake
from autograder.grading.report import normalise
from autograder.grading.statuses import Status

#: The grader's per-student state (``autograded/<student>/<assignment>/``), one entry per notebook.
STATE_FILE = ".autograder-state.json"
#: A state file holds a student's report rows for one assignment; anything larger is not one.
STATE_BYTES = 64 * 1024 * 1024


class ResultsError(ValueError):
    """No grading results where they were looked for."""


def read_jsonl(path: str | Path) -> list:
    """Rows of a report written by ``autograder grade --report``; a clear error for a bad line."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise ResultsError(f"results: line {number} of {path} is not JSON ({error})") from None
            if not isinstance(row, dict) or "student" not in row or "notebook" not in row:
                raise ResultsError(f"results: line {number} of {path} is not a report row "
                                   "(expected an object with student and notebook)")
            rows.append(normalise(row))
    return rows


def read_states(course_dir: str | Path, assignment: str) -> list:
    """Rows stored by the grader in ``autograded/*/<assignment>/.autograder-state.json``."""
    rows = []
    # Read through the grader's intake like every student file: autograded/ is the grader's own
    # folder, but its student folders bear student-chosen names; no link below it is followed.
    root = Path(course_dir) / "autograded"
    for student in intake.list_folder(root).named("directory"):
        try:
            state = json.loads(intake.read_bytes(root, (student, assignment, STATE_FILE), STATE_BYTES))
        except (intake.Refused, OSError, ValueError):
            continue  # a damaged state only means that student's notebooks are graded again next time
        for entry in state.values() if isinstance(state, dict) else []:
            rows.extend(normalise(row) for row in entry.get("rows", []) if isinstance(row, dict))
    return rows


def gradebook_scores(course_dir: str | Path, assignment: str) -> dict:
    """``(student, notebook, grade_id) -> score`` as the gradebook has it now (manual grades included).

    Empty when the course has no gradebook. One query, so it stays fast for hundreds of students.
    """
    from autograder.grading.gradebook import course_directory

    coursedir = course_directory(course_dir)
    if coursedir.db_url.startswith("sqlite:///") and not Path(coursedir.db_url[len("sqlite:///"):]).exists():
        return {}
    from nbgrader.api import (
        Assignment, Grade, GradeCell, Gradebook, Notebook, Student, SubmittedAssignment, SubmittedNotebook,
    )

    scores = {}
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        query = (gb.db.query(Student.id, Notebook.name, GradeCell.name, Grade.auto_score, Grade.manual_score)
                 .select_from(Grade)
                 .join(GradeCell, Grade.cell_id == GradeCell.id)
                 .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                 .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                 .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                 .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                 .join(Student, SubmittedAssignment.student_id == Student.id)
                 .filter(Assignment.name == assignment))
        for student, notebook, cell, auto, manual in query:
            score = manual if manual is not None else auto
            if score is not None:
                scores[(student, notebook, cell)] = float(score)
    return scores


def load_rows(course_dir: str | Path, assignment: str, results: str | Path | None = None, *,
              use_gradebook: bool = True) -> list:
    """The class's rows: from ``results`` (JSON lines) or the grader's state, scores from the gradebook."""
    if results is not None:
        rows = read_jsonl(results)
    else:
        rows = read_states(course_dir, assignment)
        if not rows:
            raise ResultsError(f"no grading results for {assignment!r} in {Path(course_dir).resolve()}/autograded: "
                               f"run `autograder grade {assignment}` first, or pass --results FILE")
    if use_gradebook:
        scores = gradebook_scores(course_dir, assignment)
        for row in rows:
            key = (row["student"], row["notebook"], row["grade_id"])
            if row["status"] == Status.NEEDS_MANUAL_GRADE and key in scores:
                row["score"] = scores[key]
                row["status"] = Status.GRADED
    return rows
