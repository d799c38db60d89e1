"""What every door grades with: one typed task per notebook, made by one function per student.

``autograder grade`` (:mod:`autograder.grading.batch`, its process pool and ``--dask``) and nbgrader's
door (``nbgrader autograde`` and formgrader's Autograde button, :mod:`autograder.grading.nbgrader_bridge`)
both

1. make a :class:`Plan` once per run and assignment (:func:`make_plan`): the gradebook's source notebooks
   and checksums, the limits, the sandbox choice, the course secret, the course and term the students'
   numbers were released in, and the grader's digest;
2. make each student's tasks with :func:`student_tasks`: the student's folder through the intake, the
   student and the submission in the gradebook, every notebook that was not submitted scored zero, a
   symbolic link refused unread, and one :class:`GradingTask` for every other notebook;
3. hand each task to :func:`autograder.grading.worker.grade_notebook`.

So the two doors' digests, state entries and grades agree by construction. A :class:`GradingTask` is
frozen and made only here; it pickles as it is (process pool, Dask), and :meth:`GradingTask.shipped` is
the one place where a task for a worker that cannot see the course gets its submission's text.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from autograder.channel import MAX_DECODED_ELEMENTS
from autograder.course_settings import ReleaseContextError, released_course_term
from autograder.grading.errors import GradingError
from autograder.grading import intake
from autograder.grading import state as state_file
from autograder.results import Status
from autograder.grading.timestamps import Timestamp
from autograder.limits import job
from course.variants import CourseTerm


def default_limits() -> dict:
    """The limits a notebook is graded under (:func:`autograder.limits.job`) and what the judge decodes from
    one call's outcome at most (array elements plus other values: the codec's own bound, which it keeps
    because it is copied into the sandbox alone)."""
    return dict(job(), decoded_elements=MAX_DECODED_ELEMENTS)


def limits_for(timeout: float | None = None, memory_mb: int | None = None) -> dict:
    limits = default_limits()
    if timeout is not None:
        limits["wall_seconds"] = float(timeout)
        limits["cpu_seconds"] = max(1, int(timeout) + 1)
        limits["cell_seconds"] = min(limits["cell_seconds"], float(timeout))
        limits["call_seconds"] = min(limits["call_seconds"], float(timeout))
    if memory_mb is not None:
        limits["memory_mb"] = int(memory_mb)
    return limits


@dataclasses.dataclass(frozen=True)
class GradingTask:
    """One submitted notebook to grade: everything :func:`~autograder.grading.worker.grade_notebook` reads.

    The submitted file is ``root``/``parts`` (a trusted folder and the names below it, read through
    :mod:`autograder.grading.intake` within ``limits``), or ``submission`` (its text, read by the
    coordinator for a Dask worker), or ``refused`` (why it was not read).
    """

    student: str
    assignment: str
    stem: str
    #: The source notebook's JSON text.
    source: str
    #: ``grade_id -> checksum`` of the release, from the gradebook.
    checksums: dict = dataclasses.field(default_factory=dict)
    #: The run's limits (:func:`limits_for`); the worker fills in any left out.
    limits: dict = dataclasses.field(default_factory=dict)
    #: ``False`` grades without bubblewrap (``--no-sandbox``); ``None`` is the sandbox, required.
    use_bwrap: bool | None = None
    #: The course secret (hex) that draws each student's hidden inputs (:func:`autograder.variants.course_secret`).
    variant_secret: str | None = None
    #: :func:`autograder.grading.state.notebook_digest` when the task was made: the state entry's key.
    digest: str | None = None
    root: str | None = None
    parts: tuple = ()
    submission: str | None = None
    refused: intake.Refusal | None = None
    #: The course and term the student's numbers were drawn in: the assignment's release's
    #: (:func:`autograder.course_settings.released_course_term`), never the configured term.
    course_term: CourseTerm = CourseTerm()

    def shipped(self) -> "GradingTask":
        """This task for a worker that does not see the course (Dask): the submission's text read here,
        through the intake and within the limits, or the refusal met reading it; no path."""
        try:
            text = intake.read_text(self.root, self.parts, self.limits)
        except intake.Refused as refused:
            return dataclasses.replace(self, root=None, parts=(), refused=refused.refusal)
        return dataclasses.replace(self, root=None, parts=(), submission=text)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one run grades the notebooks of an assignment with, whichever door (see :func:`make_plan`)."""

    assignment: str
    #: ``stem -> {"source": text, "checksums": {grade_id: checksum}}``
    #: (:func:`~autograder.grading.gradebook.assignment_sources`).
    specs: dict
    limits: dict
    #: ``use_bwrap`` and ``variant_secret``: what every task of the run gets; part of the grader's digest.
    options: dict
    #: :func:`autograder.grading.state.grader_digest` of the grader and ``options``.
    grader: str
    #: The course's ``submitted/`` folder: the trusted root the intake reads below.
    root: Path
    #: The course and term of the assignment's release (:func:`plan_course_term`): every task's numbers.
    course_term: CourseTerm = CourseTerm()


def grading_options(course_root, use_bwrap, course_term: CourseTerm | None = None) -> dict:
    """The options of every task of a grading run: the sandbox choice, the course secret that draws
    each student's hidden inputs (made on first use, see :func:`autograder.variants.course_secret`) and
    the released course and term that draw their numbers (so a regraded release's context is in the digest)."""
    from autograder.variants import course_secret
    secret = course_secret(course_root, create=True)
    context = CourseTerm() if course_term is None else course_term
    return {"use_bwrap": use_bwrap, "variant_secret": secret.hex() if secret else None,
            "course_term": context.as_dict()}


def plan_course_term(coursedir, assignment: str) -> CourseTerm:
    """The course and term ``assignment``'s students' numbers were drawn in, read from the course's release
    notebooks (:func:`autograder.course_settings.released_course_term`: the instructor's own files, read
    bounded; every notebook must agree), never from the configuration: the students hold the release, and
    a term changed in ``nbgrader_config.py`` after it must not change what they are graded against.
    :class:`~autograder.grading.errors.GradingError` saying why when the release cannot say."""
    try:
        return released_course_term(coursedir, assignment)
    except ReleaseContextError as error:
        raise GradingError(str(error)) from None


def make_plan(coursedir, assignment: str, *, timeout: float | None, memory_mb: int | None,
              use_bwrap: bool | None, specs: dict | None = None) -> Plan:
    """The :class:`Plan` of ``assignment`` in ``coursedir`` (an nbgrader ``CourseDirectory``): ``specs``
    from the gradebook unless given, the limits of ``timeout`` and ``memory_mb``, the options and the
    grader's digest. Both doors make it here, so their digests agree."""
    from autograder.grading.gradebook import assignment_sources, submitted_root

    if specs is None:
        specs = assignment_sources(coursedir, assignment)
    limits = limits_for(timeout, memory_mb)
    course_term = plan_course_term(coursedir, assignment)
    options = grading_options(coursedir.root, use_bwrap, course_term)
    return Plan(assignment=assignment, specs=specs, limits=limits, options=options,
                grader=state_file.grader_digest(coursedir.root, options), root=submitted_root(coursedir),
                course_term=course_term)


@dataclasses.dataclass(frozen=True)
class StudentTasks:
    """What :func:`student_tasks` did for one student, and the tasks left to grade.

    When ``refusal`` (the student's folder is a link) or ``setup_error`` (the gradebook refused the
    student) is set, nothing else was done. Otherwise every notebook of the plan is in exactly one of
    ``refused`` (a link: not read, no grade; its refusal), ``missing`` (not submitted: scored zero; the
    refusal that says so and the ``(grade_id, max_score)`` of each cell zeroed) and ``tasks`` (to grade),
    each in the plan's order.
    """

    student: str
    refusal: intake.Refusal | None = None
    setup_error: Exception | None = None
    timestamp: Timestamp | None = None
    refused: dict = dataclasses.field(default_factory=dict)
    missing: dict = dataclasses.field(default_factory=dict)
    tasks: dict = dataclasses.field(default_factory=dict)


def student_tasks(plan: Plan, writer, student: str) -> StudentTasks:
    """One student's tasks, for every door: the intake, the gradebook's setup, the missing notebooks.

    ``writer`` is the run's :class:`~autograder.grading.gradebook.GradebookWriter`. Every file is found
    through the intake (no link followed anywhere): a student or assignment folder that is a link is
    refused before the gradebook is touched. The student and the submission (with the time nbgrader
    would read, the exchange's receipt when there is one) are created as nbgrader's ``autograde`` does
    (:meth:`~autograder.grading.gradebook.GradebookWriter.prepare_student`); should the gradebook refuse
    them, that is rolled back and reported, and nothing else is done. A notebook that was not submitted
    scores zero (nbgrader's rule); anything else that is no link (a FIFO, a device, a folder) becomes a
    task, which the worker rejects unread.
    """
    refusal = intake.locate(plan.root, (student, plan.assignment), folder=True)
    if refusal is not None:
        # Submissions arriving by zip, rsync or a shared drive may link to another student's work or to
        # the course's own files: reported, never read.
        return StudentTasks(student, refusal=refusal)
    try:
        timestamp = writer.prepare_student(student)
    except Exception as error:  # noqa: BLE001 - an odd folder name costs only that student
        writer.rollback()
        return StudentTasks(student, setup_error=error)
    made = StudentTasks(student, timestamp=timestamp)
    for stem, spec in plan.specs.items():
        parts = (student, plan.assignment, f"{stem}.ipynb")
        refusal = intake.locate(plan.root, parts)
        if refusal is not None and refusal.status == Status.SYMLINK:
            made.refused[stem] = refusal
        elif refusal is not None and refusal.status == Status.MISSING:
            made.missing[stem] = (refusal, tuple(writer.zero_missing(student, stem)))
        else:
            # The worker reads the file itself (within the limits): the coordinator holds no submission.
            made.tasks[stem] = GradingTask(
                student=student, assignment=plan.assignment, stem=stem, source=spec["source"],
                checksums=spec["checksums"], limits=plan.limits, use_bwrap=plan.options["use_bwrap"],
                variant_secret=plan.options["variant_secret"], course_term=plan.course_term,
                root=str(plan.root), parts=parts,
                digest=state_file.notebook_digest(plan.root, parts, spec, plan.grader, plan.limits))
    return made
