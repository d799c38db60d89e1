"""The grading results of a class, as report rows, from what every grading command leaves behind.

Rows are the dicts of :mod:`autograder.results` (``student``, ``notebook``, ``grade_id``,
``score``, ``max_score``, ``status``, ``feedback``, ``misconceptions``). By default they are read
from what ``autograder grade``, ``nbgrader autograde`` and formgrader's Autograde button all leave
(:func:`read_graded`): the gradebook (which submissions exist, every score, manual grades included)
and the autograded notebooks, whose test cells carry the verdicts as data (the metadata under
:data:`autograder.results.METADATA_KEY`: which cases ran, why a run ended early, the
misconception keys). All three doors grade with :func:`autograder.grading.worker.grade_notebook`,
so the rows are the same whichever one ran. ``--results FILE`` reads instead a JSON-lines file
written by ``autograder grade --report FILE``.

Everything read here is bounded: autograded notebooks are read with the grader's own reader (size,
JSON depth, no symbolic link, no FIFO) and never validated or rendered; one that cannot be read
costs only its own rows (status ``error``, scores from the gradebook).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from autograder.grading import intake
from autograder.insight.variant_matches import of_notebook
from autograder.limits import AUTOGRADED_SOURCE_CELLS, CELLS, FRAME_BYTES, NOTEBOOK_BYTES, REPORT_TOLD_CHARS, job
from autograder.results import Status, normalise, verdicts_of


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


#: How a test cell's verdict record says its run ended early, as the row status (the worker's rule:
#: a cell all of whose cases ran is ``graded``; otherwise the run's reason decides, ``error`` by default).
_STATUS_OF_REASON = {"timeout": Status.TIMEOUT, "sandbox": Status.GRADER_ERROR, "rejected": Status.REJECTED,
                     "unreadable": Status.UNREADABLE}


def _read_autograded(root: Path, parts: tuple) -> dict:
    """The JSON of an autograded notebook, read through the grader's intake (no link in any component,
    regular file, size, nesting and cell count checked before parsing; never validated).

    The one place this module opens a notebook file; raises :class:`autograder.grading.intake.Refused`
    or ``ValueError`` when it cannot be read within the limits.
    """
    # Beyond the submission the grader read: its outputs (all replies together are capped by the
    # grader's frame_bytes) and the source notebook's own cells.
    limits = job(notebook_bytes=NOTEBOOK_BYTES.value + FRAME_BYTES.value,
                 cells=CELLS.value + AUTOGRADED_SOURCE_CELLS.value)
    data = json.loads(intake.read_text(root, parts, limits))
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("not a notebook (no cell list)")
    return data


def _kind_at(root: Path, parts: tuple) -> str:
    """``missing``, ``symlink`` or ``present``: what a folder holds where a notebook would be (looked at
    through the intake: a link in any component is a link, and nothing is opened)."""
    refusal = intake.locate(root, parts)
    if refusal is None:
        return "present"
    if refusal.status in (Status.MISSING, Status.SYMLINK):
        return refusal.status.value
    return "present"


def _text(value) -> str:
    """A multiline field as nbformat stores it on disk (a string, or a list of lines), as one string."""
    if isinstance(value, str):
        return value
    return "".join(line for line in value if isinstance(line, str)) if isinstance(value, list) else ""


def read_stored(course_dir, assignment: str, students: Iterable[str], stems: Iterable[str]) -> dict:
    """``(student, stem) -> Stored`` read from the autograded notebooks (when the report's rows come from
    a ``--results`` file and not from the notebooks themselves); unreadable ones are left out."""
    from autograder.grading.gradebook import course_directory

    coursedir = course_directory(course_dir)
    root = Path(coursedir.root) / coursedir.autograded_directory
    out = {}
    for student in students:
        for stem in stems:
            parts = (student, assignment, f"{stem}.ipynb")
            if _kind_at(root, parts) != "present":
                continue
            try:
                out[(student, stem)] = of_notebook(_read_autograded(root, parts))
            except Exception:  # noqa: BLE001 - one damaged notebook costs only its own evidence
                continue
    return out


def _note_told(told: dict | None, notebook: str, record: dict | None) -> None:
    """Count, in ``told[(notebook, key)]``, the message each failed case with a misconception key gave."""
    if told is None or not record:
        return
    for case in record.get("cases", []):
        if not isinstance(case, dict) or case.get("passed"):
            continue
        key, message = case.get("misconception"), case.get("message")
        if isinstance(key, str) and key and isinstance(message, str) and message.strip():
            told.setdefault((notebook, key), Counter())[message.strip()[:REPORT_TOLD_CHARS.value]] += 1


def _cell_rows(student: str, notebook: str, data: dict, scores: dict, told: dict | None = None) -> list:
    """The rows of one autograded notebook, as the worker computes them (``worker._rows``), with the
    gradebook's ``scores`` (grade id -> score as stored, manual grades included). ``told``, when given,
    counts what the failed cases told the student, per misconception key (:func:`_note_told`)."""

    cells = [cell for cell in data["cells"] if isinstance(cell, dict)]
    graded = []
    for cell in cells:
        meta = cell.get("metadata")
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and meta.get("grade") and isinstance(meta.get("grade_id"), str):
            graded.append((cell, meta))
    records = {meta["grade_id"]: verdicts_of(cell) for cell, meta in graded}
    # A notebook the grader refused (a limit, or an unreadable file) says so in every test cell's record.
    refused = {record.get("reason") for record in records.values() if record} & {"rejected", "unreadable"}
    whole = _STATUS_OF_REASON[refused.pop()] if refused else None
    rows = []
    for cell, meta in graded:
        grade_id = meta["grade_id"]
        try:
            max_score = float(meta.get("points") or 0.0)
        except (TypeError, ValueError):
            max_score = 0.0
        score = scores.get(grade_id)
        record = records[grade_id]
        feedback, keys = "", []
        if whole is not None:
            # "every cell scores 0" (the status's meaning, and the grader's rows), even where the
            # gradebook leaves a refused notebook's written answer waiting for a person
            status, score = whole, 0.0 if score is None else score
        elif meta.get("solution"):
            status = Status.NEEDS_MANUAL_GRADE if score is None else Status.GRADED
            feedback = "waiting for the instructor" if score is None else "No response."  # the worker's words
        elif record is not None:
            ran = all(isinstance(case, dict) and case.get("ran", True) for case in record.get("cases", []))
            status = Status.GRADED if ran else _STATUS_OF_REASON.get(record.get("reason"), Status.ERROR)
            keys = [key for key in record.get("misconceptions", []) if isinstance(key, str)]
            _note_told(told, notebook, record)
        else:  # no verdict record: graded by plain nbgrader (no bridge), or no check was known for the cell
            errors = [o for o in cell.get("outputs", []) if isinstance(o, dict) and o.get("output_type") == "error"]
            status = Status.ERROR if errors or score is None else Status.GRADED
        if not meta.get("solution"):
            feedback = "".join(_text(o.get("text")) for o in cell.get("outputs", []) if isinstance(o, dict)
                               and o.get("output_type") == "stream").strip()
        rows.append({"student": student, "notebook": notebook, "grade_id": grade_id, "score": score,
                     "max_score": max_score, "status": status, "feedback": feedback, "misconceptions": keys})
    return rows


def read_graded(course_dir: str | Path, assignment: str, *, use_gradebook: bool = True,
                stored: dict | None = None, told: dict | None = None) -> list:
    """Rows of every submission of ``assignment`` in the gradebook, whichever command graded it.

    Per student and notebook: the rows of its autograded notebook (:func:`_cell_rows`); a notebook
    the gradebook holds but ``autograded/`` does not is ``missing`` (nothing submitted), ``symlink``
    (the submission is a link, never followed) or ``error`` (grading failed or never ran); one whose
    autograded notebook cannot be read is ``error`` with the gradebook's scores. Without
    ``use_gradebook`` the scores a person gave are left out (written answers count as pending).
    ``stored``, when given, receives ``(student, notebook) -> Stored`` of every notebook whose numbers
    vary (the values its test cells read: :mod:`autograder.insight.variant_matches`), from the same read;
    ``told``, when given, receives ``(notebook, misconception key) -> Counter`` of the messages the
    failed cases with that key gave the students (the verdict records' ``message``).
    """
    from course.variants import varies
    from autograder.grading.gradebook import course_directory

    coursedir = course_directory(course_dir)
    grades = gradebook_grades(course_dir, assignment, manual=use_gradebook)
    autograded = Path(coursedir.root) / coursedir.autograded_directory
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    rows = []
    for (student, notebook), cells in sorted(grades.items()):
        scores = {name: score for name, (score, _max) in cells.items()}
        parts = (student, assignment, f"{notebook}.ipynb")
        problem = None
        if _kind_at(autograded, parts) == "present":
            try:
                data = _read_autograded(autograded, parts)
                rows.extend(_cell_rows(student, notebook, data, scores, told))
                if stored is not None and varies(notebook):
                    stored[(student, notebook)] = of_notebook(data)
                continue
            except Exception as error:  # noqa: BLE001 - one damaged file costs only its own rows
                problem = f"the autograded notebook could not be read ({type(error).__name__}): regrade it"
        kind = _kind_at(submitted, parts)
        if problem is not None:
            status, text = Status.ERROR, problem
        elif kind == "missing":
            status, text = Status.MISSING, "this notebook was not submitted"
        elif kind == "symlink":
            status, text = Status.SYMLINK, "not graded: the submitted notebook is a symbolic link"
        else:
            status, text = Status.ERROR, "not graded: no autograded notebook (grading failed or has not run)"
        rows.extend({"student": student, "notebook": notebook, "grade_id": name, "score": score,
                     "max_score": max_score, "status": status, "feedback": text, "misconceptions": []}
                    for name, (score, max_score) in sorted(cells.items()))
    return rows


def gradebook_grades(course_dir: str | Path, assignment: str, *, manual: bool = True) -> dict:
    """``(student, notebook) -> {grade cell: (score, max_score)}`` for every submission in the gradebook.

    ``score`` is the manual score when a person gave one (and ``manual``), else the auto score, else
    None. One query, so it stays fast for hundreds of students.
    """
    from autograder.grading.gradebook import course_directory

    coursedir = course_directory(course_dir)
    from nbgrader.api import (
        Assignment, Grade, GradeCell, Gradebook, Notebook, Student, SubmittedAssignment, SubmittedNotebook,
    )

    out: dict = defaultdict(dict)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        query = (gb.db.query(Student.id, Notebook.name, GradeCell.name, GradeCell.max_score, Grade.auto_score,
                             Grade.manual_score)
                 .select_from(Grade)
                 .join(GradeCell, Grade.cell_id == GradeCell.id)
                 .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                 .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                 .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                 .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                 .join(Student, SubmittedAssignment.student_id == Student.id)
                 .filter(Assignment.name == assignment))
        for student, notebook, cell, max_score, auto, given in query:
            score = given if manual and given is not None else auto
            out[(student, notebook)][cell] = (None if score is None else float(score), float(max_score or 0.0))
    return dict(out)


def gradebook_scores(course_dir: str | Path, assignment: str) -> dict:
    """``(student, notebook, grade_id) -> score`` as the gradebook has it now (manual grades included)."""
    return {(student, notebook, cell): score for (student, notebook), cells in
            gradebook_grades(course_dir, assignment).items() for cell, (score, _max) in cells.items()
            if score is not None}


def load_rows(course_dir: str | Path, assignment: str, results: str | Path | None = None, *,
              use_gradebook: bool = True, stored: dict | None = None, told: dict | None = None) -> list:
    """The class's rows: from ``results`` (JSON lines, manual scores from the gradebook), or else from
    the gradebook and the autograded notebooks (:func:`read_graded`, which fills ``stored`` and ``told``)."""
    if results is None:
        rows = read_graded(course_dir, assignment, use_gradebook=use_gradebook, stored=stored, told=told)
        if not rows:
            raise ResultsError(f"no graded submission of {assignment!r} in the gradebook of "
                               f"{Path(course_dir).resolve()}: grade with `autograder grade {assignment}` or "
                               f"`nbgrader autograde {assignment}` first, or pass --results FILE")
        return rows
    rows = read_jsonl(results)
    if use_gradebook:
        scores = gradebook_scores(course_dir, assignment)
        for row in rows:
            key = (row["student"], row["notebook"], row["grade_id"])
            if row["status"] == Status.NEEDS_MANUAL_GRADE and key in scores:
                row["score"] = scores[key]
                row["status"] = Status.GRADED
    return rows
