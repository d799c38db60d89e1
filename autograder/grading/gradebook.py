"""The coordinator's side of nbgrader: course layout, gradebook rows, and storing scores.

Scores reach the gradebook through nbgrader's own :class:`~nbgrader.preprocessors.SaveAutoGrades`
run on the autograded notebook the grader built, so ``nbgrader export`` and formgrader read them
exactly as after ``nbgrader autograde``. Only the coordinator calls this module.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import nbformat
from nbgrader import api as _api
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

from autograder.grading import preflight
from autograder.grading.errors import GradingError
from autograder.grading.timestamps import Timestamp, submission_time


def load_config(root: str | Path, argv: list | tuple = ()):
    """The configuration every nbgrader command run in ``root`` sees, loaded the way its apps load it.

    nbgrader's ``NbGrader.initialize`` reads ``nbgrader_config.py`` from each Jupyter config
    directory (``jupyter --paths``: system, environment, then the user's own, e.g.
    ``~/.jupyter``), then from the working directory and the course root, and applies
    ``--Class.trait=value`` arguments last. The same app class does it here, in ``root``, so a late
    penalty plugin, a database URL or an exchange set in the instructor's own config applies to
    ``autograder grade`` exactly as to ``nbgrader autograde``. Unlike nbgrader, a config file that
    raises stops everything (:class:`GradingError`) instead of leaving the defaults in force.
    """
    import contextlib

    from nbgrader.apps.baseapp import NbGrader

    class _Configuration(NbGrader):
        """nbgrader's base app, used only for its configuration (it never starts)."""
        name = "autograder"

    app = _Configuration()
    app.raise_config_file_errors = True
    try:
        with contextlib.chdir(root):
            app.initialize(list(argv))
    except SystemExit as error:  # traitlets' own message about a bad argument is already printed
        raise GradingError(f"the nbgrader settings {' '.join(argv)} could not be read") from error
    except Exception as error:  # noqa: BLE001 - unlike nbgrader, never grade silently on defaults
        raise GradingError(f"the nbgrader configuration of {root} could not be loaded: "
                           f"{type(error).__name__}: {error}") from error
    finally:
        app.clear_instance()
    return app.config


def course_directory(root: str | Path, argv: list | tuple = ()) -> CourseDirectory:
    """nbgrader's view of the course in ``root``, with nbgrader's whole config chain applied (:func:`load_config`).

    Raises :class:`GradingError` when ``root`` is not a course directory or its gradebook is missing
    or unreachable (see :mod:`autograder.grading.preflight`); never creates a gradebook.
    """
    root = preflight.check_course_root(root)
    # nbgrader runs its `alembic` helper when it creates a gradebook: it lives next to this Python.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    config = load_config(root, argv)
    coursedir = CourseDirectory(config=config)
    coursedir.root = str(root)
    preflight.check_gradebook(coursedir.db_url, root)
    return coursedir


def open_gradebook(coursedir: CourseDirectory) -> Gradebook:
    """nbgrader's ``Gradebook`` of the course; :class:`GradingError` in one line when it cannot be read
    (a file that is not a database, a schema it does not know), not a page of SQLAlchemy traceback."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return Gradebook(coursedir.db_url, coursedir.course_id)
    except SQLAlchemyError as error:
        first = str(getattr(error, "orig", None) or type(error).__name__).strip().splitlines()
        raise GradingError(f"the gradebook {coursedir.db_url} could not be read: "
                           f"{first[0] if first else type(error).__name__}") from None


def assignment_sources(coursedir: CourseDirectory, assignment: str) -> dict:
    """``stem -> {"source": text, "checksums": {grade_id: checksum}}`` for the notebooks in the gradebook."""
    with open_gradebook(coursedir) as gb:
        try:
            record = gb.find_assignment(assignment)
        except MissingEntry:
            raise GradingError(_unknown_assignment(coursedir, assignment, [a.name for a in gb.assignments])) from None
        specs = {}
        for notebook in record.notebooks:
            path = Path(coursedir.format_path(coursedir.source_directory, ".", assignment)) / f"{notebook.name}.ipynb"
            if not path.exists():
                raise GradingError(f"the source notebook {path} is missing")
            checksums = {cell.name: cell.checksum for cell in notebook.source_cells if cell.checksum}
            specs[notebook.name] = {"source": path.read_text(encoding="utf-8"), "checksums": checksums}
    if not specs:
        raise GradingError(f"assignment {assignment!r} has no notebooks in the gradebook")
    return dict(sorted(specs.items()))


def submitted_root(coursedir: CourseDirectory) -> Path:
    """The course's ``submitted/`` folder: the trusted root below which the intake reads student files."""
    return Path(coursedir.root) / coursedir.submitted_directory


def _unknown_assignment(coursedir: CourseDirectory, assignment: str, recorded: list) -> str:
    """Why ``assignment`` cannot be graded, and the one thing to do about it."""
    source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    if source.is_dir():
        return (f"assignment {assignment!r} is not in the gradebook yet: run "
                f"`{preflight.SETUP_COMMAND.format(assignment=assignment)}` in {coursedir.root}")
    sources = Path(coursedir.root) / coursedir.source_directory
    known = sorted(set(recorded) | {p.name for p in sources.iterdir() if p.is_dir()} if sources.is_dir() else set(recorded))
    return f"no assignment {assignment!r} in this course (no {source}); known: {', '.join(known) or 'none'}"


def submitted_students(coursedir: CourseDirectory, assignment: str, only: list | None = None) -> list:
    """Students with a ``submitted/<student>/<assignment>`` entry, listed through the intake.

    A student folder or assignment folder that is a symbolic link is listed too (never followed): the
    batch reports it with its status instead of leaving the student out without a word.
    """
    from autograder.grading import intake

    base = submitted_root(coursedir)
    found = []
    for entry in intake.list_folder(base).entries:
        if entry.kind == "symlink":
            found.append(entry.name)
        elif entry.kind == "directory":
            inner = intake.list_folder(base, (entry.name,))
            if any(e.name == assignment and e.kind in ("directory", "symlink") for e in inner.entries):
                found.append(entry.name)
    if only:
        unknown = sorted(set(only) - set(found))
        if unknown:
            raise GradingError(f"--student {unknown[0]}: no submission in {base / unknown[0] / assignment}"
                               + (f" (nor for {', '.join(unknown[1:])})" if unknown[1:] else ""))
        wanted = set(only)
        found = [student for student in found if student in wanted]
    return found


class _FlushOnly:
    """A session stand-in whose ``commit`` does nothing: nbgrader's per-cell commits become one write
    per notebook (:func:`_end_write` flushes or commits once nbgrader's cell loop is done)."""

    def __init__(self, session):
        self._session = session

    def commit(self):
        pass

    def __getattr__(self, name):
        return getattr(self._session, name)


#: nbgrader's ``find_grade`` looks a name up among the grade cells and then the task cells, its
#: ``find_comment`` among the solution cells and then the task cells (nbgrader==0.9.6, ``api.py``).
_GRADE_CELL_TYPES = ("GradeCell", "TaskCell")
_COMMENT_CELL_TYPES = ("SolutionCell", "TaskCell")


def _rows_by_cell(gradebook: Gradebook, row_class, submitted_notebook_id: str, cell_types: tuple) -> dict:
    """One notebook's grades (or comments) by cell name, in nbgrader's order of cell types: one query."""
    found: dict = {}
    rows = (gradebook.db.query(row_class, _api.BaseCell.name, _api.BaseCell.type)
            .join(_api.BaseCell, _api.BaseCell.id == row_class.cell_id)
            .filter(row_class.notebook_id == submitted_notebook_id).all())
    for cell_type in cell_types:
        for row, name, row_type in rows:
            if row_type == cell_type:
                found.setdefault(name, row)
    return found


class _Deferred:
    """The gradebook as nbgrader's ``SaveAutoGrades`` sees it while one notebook is stored.

    Its ``find_grade`` and ``find_comment`` answer from the notebook's rows, read in two queries
    instead of two joined queries per cell; any other notebook, or a name that is not there, goes to
    nbgrader's own method (which raises nbgrader's ``MissingEntry``). The rows are the session's own
    objects, so what nbgrader's cell logic sets on them is what gets written.
    """

    def __init__(self, gradebook, notebook: str, assignment: str, student: str):
        self._gradebook = gradebook
        self.db = _FlushOnly(gradebook.db)
        self._key = (notebook, assignment, student)
        try:
            submitted = gradebook.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            self._grades = self._comments = {}
        else:
            self._grades = _rows_by_cell(gradebook, _api.Grade, submitted.id, _GRADE_CELL_TYPES)
            self._comments = _rows_by_cell(gradebook, _api.Comment, submitted.id, _COMMENT_CELL_TYPES)

    def find_grade(self, grade_cell: str, notebook: str, assignment: str, student: str):
        found = self._grades.get(grade_cell) if (notebook, assignment, student) == self._key else None
        return found if found is not None else self._gradebook.find_grade(grade_cell, notebook, assignment, student)

    def find_comment(self, solution_cell: str, notebook: str, assignment: str, student: str):
        found = self._comments.get(solution_cell) if (notebook, assignment, student) == self._key else None
        return found if found is not None else self._gradebook.find_comment(solution_cell, notebook, assignment,
                                                                            student)

    def __getattr__(self, name):
        return getattr(self._gradebook, name)


#: The resources key under which nbgrader's door hands :class:`SaveStatedGrades` the cells' digests of the
#: notebook's last grading (``cells`` of its state entry, :mod:`autograder.grading.state`).
SEEN_KEY = "module6_seen_cells"


class SaveStatedGrades(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, whose comments name a state of the whole notebook when it has one,
    and which keeps a grade made by hand where what was graded did not change.

    An unreadable submission (not a notebook) gets, on every answer cell, the sentence the grader put in
    the autograded notebook's metadata (``worker.STATE_KEY``), so formgrader's comment boxes say why
    there is nothing to grade instead of nothing at all. Otherwise the comments are nbgrader's.

    nbgrader==0.9.6's ``SaveAutoGrades._add_score`` sets ``needs_manual_grade`` on every cell that has a
    ``manual_score``, each time a notebook is autograded: a regrade (after a changed check, a new secret,
    the other door) put every answer a person had graded back on formgrader's "needs manual grade" list.
    Here, a cell a person graded (a ``manual_score``, and not waiting for review) whose text and outputs
    are what they were at the last grading (``cell_digest`` against the state file's ``cells``) stays
    graded; the manual score is never touched (nbgrader's rule). A cell whose answer changed, or with no
    record of the last grading, is marked for review, as nbgrader does.
    """

    def preprocess(self, nb, resources):
        state = nb.metadata.get("module6_state")
        self._state_comment = state.get("comment") if isinstance(state, dict) else None
        seen = resources.get(SEEN_KEY)
        self._seen = seen if isinstance(seen, dict) else {}
        return super().preprocess(nb, resources)

    def _add_score(self, cell, resources) -> None:
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        reviewed = grade.manual_score is not None and not grade.needs_manual_grade
        super()._add_score(cell, resources)
        if reviewed and grade.needs_manual_grade:
            from autograder.grading.state import cell_digest
            if self._seen.get(cell.metadata["nbgrader"]["grade_id"]) == cell_digest(cell):
                grade.needs_manual_grade = False
                self.gradebook.db.commit()

    def _add_comment(self, cell, resources) -> None:
        super()._add_comment(cell, resources)
        comment = getattr(self, "_state_comment", None)
        if comment:
            found = self.gradebook.find_comment(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                                self.assignment_id, self.student_id)
            found.auto_comment = comment
            self.gradebook.db.commit()


def _end_write(gradebook: Gradebook, commit: bool) -> None:
    """Commit the session's changes, or with ``commit=False`` only flush them into the open transaction
    (the batch grader commits many notebooks at once; a rollback still takes them back)."""
    if commit:
        gradebook.db.commit()
    else:
        gradebook.db.flush()


class _SaveWithGradebook(SaveStatedGrades):
    """nbgrader's SaveAutoGrades on an already open gradebook (the cell logic is nbgrader's own)."""

    def save(self, gradebook: Gradebook, nb, resources: dict, *, commit: bool = True, seen: dict | None = None):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = _Deferred(gradebook, self.notebook_id, self.assignment_id, self.student_id)
        state = nb.metadata.get("module6_state")
        self._state_comment = state.get("comment") if isinstance(state, dict) else None
        self._seen = seen if isinstance(seen, dict) else {}
        nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)
        _end_write(gradebook, commit)
        return nb, resources


class GradebookWriter:
    """Open once per batch; the only writer of the gradebook."""

    def __init__(self, coursedir: CourseDirectory, assignment: str):
        self.coursedir = coursedir
        self.assignment = assignment
        self.gradebook = open_gradebook(coursedir)
        self._saver = _SaveWithGradebook()
        self._late = None
        self._seconds_late: dict = {}

    def close(self) -> None:
        self.gradebook.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def prepare_student(self, student: str) -> Timestamp:
        """Create the student (if new) and the submission, with the timestamp nbgrader would read.

        Returns the time used (:func:`~autograder.grading.timestamps.submission_time`); an unusable
        ``timestamp.txt`` or one that disagrees with the exchange's receipt has a ``problem`` for the
        caller to report.
        """
        gb = self.gradebook
        self._seconds_late.pop(student, None)
        path = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.assignment)
        timestamp = submission_time(path, root=submitted_root(self.coursedir))  # the exchange's receipt when there is one; timestamp.txt is a claim
        with warnings.catch_warnings():
            # nbgrader's own submission setup trips SQLAlchemy's autoflush warnings; they are harmless.
            warnings.simplefilter("ignore")
            gb.update_or_create_student(student)
            if timestamp.value is not None:
                gb.update_or_create_submission(self.assignment, student, timestamp=timestamp.value)
            else:
                gb.update_or_create_submission(self.assignment, student)
        return timestamp

    def save(self, student: str, stem: str, autograded_text: str, *, commit: bool = True,
             seen: dict | None = None) -> None:
        """Store the notebook's scores and comments with nbgrader's ``SaveAutoGrades``.

        With ``commit=False`` the rows are only flushed: they become durable with the batch's
        :meth:`commit` (one transaction for many notebooks), or go with its :meth:`rollback`. ``seen``:
        the cells' digests of the notebook's last grading (see :class:`SaveStatedGrades`).
        """
        # Read back without nbformat's schema validation: the worker built this text with
        # nbformat.writes, which validated it; parsing it is what SaveAutoGrades needs (the same
        # NotebookNode as nbformat.reads gives: the reader rejoins lines and strips transient fields).
        nb = nbformat.convert(nbformat.reader.reads(autograded_text), 4)
        resources = {"nbgrader": {"student": student, "assignment": self.assignment, "notebook": stem,
                                  "db_url": self.coursedir.db_url}}
        self._saver.save(self.gradebook, nb, resources, commit=commit, seen=seen)

    def commit(self) -> None:
        """Make every row flushed since the last commit durable (one SQLite transaction)."""
        self.gradebook.db.commit()

    def assign_late_penalty(self, student: str, stem: str, *, commit: bool = True) -> float | None:
        """Set the notebook's late penalty as nbgrader's ``AssignLatePenalties`` would, and return it.

        The plugin and its settings come from the course config (``AssignLatePenalties.plugin_class``,
        ``LateSubmissionPlugin.penalty_method``, the assignment's due date), and the penalty is
        clamped by nbgrader's own ``_check_late_penalty``: the numbers are nbgrader's. With
        ``commit=False`` the change waits for the batch's :meth:`commit`.
        """
        assigner = self._late
        if assigner is None:
            assigner = self._late = AssignLatePenalties(config=self.coursedir.config)
            assigner.init_plugin()
        gb = self.gradebook
        late = self._seconds_late.get(student)
        if late is None:
            # The submission's time and due date are set before its notebooks are graded and do not
            # change during the batch: looked up once per student, not once per notebook.
            late = self._seconds_late[student] = gb.find_submission(self.assignment, student).total_seconds_late
        notebook = gb.find_submission_notebook(stem, self.assignment, student)
        notebook.late_submission_penalty = None
        if late > 0:
            penalty = assigner.plugin_inst.late_submission_penalty(student, notebook.score, late)
            if penalty is not None:
                notebook.late_submission_penalty = assigner._check_late_penalty(notebook, penalty)
        _end_write(gb, commit)
        return notebook.late_submission_penalty

    def rollback(self) -> None:
        """Drop a notebook's unfinished scores after its results could not be stored."""
        self.gradebook.db.rollback()

    def zero_missing(self, student: str, stem: str) -> list:
        """A notebook that was not submitted scores zero, as under ``nbgrader autograde``."""
        submission = self.gradebook.find_submission_notebook(stem, self.assignment, student)
        rows = []
        for grade in submission.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = False
            rows.append((grade.name, float(grade.max_score)))
        self.gradebook.db.commit()
        return rows


def write_outputs(coursedir: CourseDirectory, assignment: str, result: dict) -> None:
    """Write ``autograded/<student>/<assignment>/<stem>.ipynb`` and ``feedback/.../<stem>.html``."""
    student, stem = result["student"], result["stem"]
    for directory, name, text in ((coursedir.autograded_directory, f"{stem}.ipynb", result["autograded"]),
                                  (coursedir.feedback_directory, f"{stem}.html", result["feedback"])):
        target = Path(coursedir.format_path(directory, student, assignment))
        target.mkdir(parents=True, exist_ok=True)
        temporary = target / f".{name}.tmp"
        if name.endswith(".ipynb") and not text.endswith("\n"):
            text += "\n"  # as nbformat.write and nbgrader's own writer end the file: byte-identical outputs
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target / name)
