"""nbgrader's own ``autograde`` (command line and formgrader's Autograde button) on the sandboxed grader.

``nbgrader autograde`` and formgrader's button (``NbGraderAPI.autograde``) run nbgrader's ``Autograde``
converter. Left to itself (nbgrader 0.9.6, ``nbgrader/converters/base.py`` and ``autograde.py``) it
finds submissions with ``glob`` (following every link), copies every other file of the submission
folder into ``autograded/`` with ``shutil.copy`` (following links: a link to the instructor's source
notebook put it in a student's autograded folder), and has nbconvert's exporter open and parse each
notebook whole before any preprocessor runs (a FIFO blocks it forever; 200,000 cells cost 1.1 GB and
27 s). :func:`install`, called by the course's ``nbgrader_config.py``, replaces each of those steps so
that this door reads student files only through :mod:`autograder.grading.intake`, as ``autograder
grade`` does:

* :class:`SandboxedAutograde` (the converter both nbgrader entry points build) lists students and
  notebooks through the intake: a symbolic link at any level (student folder, assignment folder,
  notebook) is logged with its status and sentence and never followed or graded; no file of the
  submission folder is copied; ``timestamp.txt`` and ``submission_secret.txt`` (which ``nbgrader
  release_feedback`` needs) are read through the intake and written by the bridge; a notebook that was
  not submitted scores zero, as under nbgrader;
* ``exporter_class = SubmissionExporter``: nbconvert's exporter never opens or parses a student file;
  it hands the preprocessors an empty placeholder;
* ``sanitize_preprocessors = [DropSubmission]`` (nbgrader's ``CheckCellMetadata`` would let one hostile
  cell stop the whole run with ``SchemaTooNewError``);
* ``autograde_preprocessors = [SandboxedGrade, SaveStatedGrades, AssignLatePenalties, RememberGraded]``:
  :class:`SandboxedGrade` grades the submitted file with :func:`autograder.grading.worker.grade_notebook`
  (the function ``autograder grade`` runs in its workers, which reads the file through the intake
  within the same limits), on the :class:`~autograder.grading.task.GradingTask` that
  :meth:`SandboxedAutograde.init_assignment` made with :func:`~autograder.grading.task.student_tasks`,
  the one function ``autograder grade`` makes its tasks with too (gradebook setup, missing notebooks),
  and hands nbgrader the autograded notebook it built; nbgrader's own
  ``SaveAutoGrades`` (through ``SaveStatedGrades``, whose comments also name an unreadable notebook,
  and which keeps "graded by hand" where the graded answer is unchanged) and ``AssignLatePenalties``
  store it, exactly as ``autograder grade`` does; :class:`RememberGraded` records it in the state file
  both doors share (:mod:`autograder.grading.state`), so neither grades again what the other graded.
  Scores, gradebook rows, ``autograded/`` notebooks and feedback pages are the same whichever command ran;
* nothing is removed before grading: nbgrader's converter removed the autograded folder with
  ``--force`` (every click of formgrader's button), wrote a placeholder over each autograded notebook,
  and removed the folder again when a step raised; :class:`SandboxedAutograde` checks the sandbox in
  ``start()``, before anything is read or written, and replaces each notebook's files only with its
  new result (issue 33, F7).

nbgrader 0.9.6 crashes on an unparseable ``timestamp.txt`` (it calls ``CourseDirectory.fail``, which
does not exist) and trusts the time a student wrote there; :func:`install` makes it read submission
times with :func:`autograder.grading.timestamps.submission_time` (the exchange's receipt written by
:class:`autograder.grading.exchange.KitCollect` when there is one; an unusable file counts as
missing, with a warning), as ``autograder grade`` does.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook, MissingEntry
# The defining module's class: nbgrader.converters.Autograde is the name install() points at ScopedAutograde.
from nbgrader.converters.autograde import Autograde
from nbgrader.converters.base import NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import AssignLatePenalties, NbGraderPreprocessor
from traitlets import Bool, Float, Integer, Unicode

from autograder.grading import intake
from autograder.grading import state as state_file
from autograder.grading.task import GradingTask, Plan, make_plan, student_tasks
from autograder.grading.timestamps import carry_submission_files, submission_time
from autograder.grading.gradebook import SaveStatedGrades
from autograder.limits import MEMORY_MB, WALL_SECONDS

#: Set on a notebook by :class:`DropSubmission`, checked by :class:`SandboxedGrade`.
_PLACEHOLDER_KEY = "module6_placeholder"


def _parents(configurable):
    node = configurable
    while node is not None:
        yield node
        node = getattr(node, "parent", None)


def _coursedir_of(configurable) -> CourseDirectory:
    """The ``CourseDirectory`` of the nbgrader app or API a preprocessor runs under."""
    for node in _parents(configurable):
        coursedir = getattr(node, "coursedir", None)
        if isinstance(coursedir, CourseDirectory):
            return coursedir
    raise RuntimeError("SandboxedGrade runs only inside nbgrader's Autograde converter "
                       "(nbgrader autograde or formgrader's Autograde button)")


class DropSubmission(NbGraderPreprocessor):
    """Sanitize step: replace the submitted notebook with an empty placeholder.

    :class:`SandboxedGrade` reads the submitted file itself and takes only the student's answers
    from it; nothing else of the file is written anywhere.
    """

    def preprocess(self, nb, resources):
        placeholder = nbformat.v4.new_notebook()
        placeholder.metadata[_PLACEHOLDER_KEY] = True
        return placeholder, resources


class SandboxedGrade(NbGraderPreprocessor):
    """Autograde step: grade ``submitted/<student>/<assignment>/<notebook>.ipynb`` in the sandbox.

    Replaces nbgrader's ``Execute``: returns the autograded notebook built from ``source/`` with the
    student's answers and the graded test cells (points as their outputs, as nbgrader expects), and
    writes the feedback page ``autograder grade`` writes.
    """

    timeout = Float(None, allow_none=True,
                    help=f"seconds per notebook (as `autograder grade --timeout`; default {WALL_SECONDS.value:g})"
                    ).tag(config=True)
    memory_mb = Integer(None, allow_none=True,
                        help=f"memory per sandboxed process in MB (as `autograder grade --memory`; default "
                             f"{MEMORY_MB.value})").tag(config=True)
    no_sandbox = Bool(False, help="grade WITHOUT the bubblewrap sandbox (as `autograder grade --no-sandbox`): "
                                  "only for trying the grader where bubblewrap cannot run, never for credit"
                      ).tag(config=True)
    # Grading from a server that cannot sandbox (a Kubernetes pod): autograder.grading.remote.
    dask_scheduler = Unicode(
        None, allow_none=True, help="grade on the Dask cluster at this tls:// address (grading hosts that sandbox) "
                                    "instead of in this server's sandbox; needs the three dask_tls_* files"
    ).tag(config=True)
    dask_tls_ca_file = Unicode(
        None, allow_none=True, help="the course's CA certificate (PEM) that signed the scheduler's and this "
                                    "client's certificates").tag(config=True)
    dask_tls_client_cert = Unicode(
        None, allow_none=True, help="this server's client certificate (PEM), signed by the course's CA"
    ).tag(config=True)
    dask_tls_client_key = Unicode(
        None, allow_none=True, help="the key (PEM) of dask_tls_client_cert: the instructor's pod alone holds it"
    ).tag(config=True)

    def preprocess(self, nb, resources):
        from autograder.grading.gradebook import SEEN_KEY, write_outputs
        from autograder.grading.worker import close_sandbox, grade_notebook

        if not nb.metadata.get(_PLACEHOLDER_KEY):
            raise RuntimeError("SandboxedGrade needs DropSubmission as Autograde.sanitize_preprocessors: "
                               "use autograder.grading.nbgrader_bridge.install(c) in nbgrader_config.py")
        converter = next((node for node in _parents(self) if isinstance(node, SandboxedAutograde)), None)
        if converter is None:
            raise RuntimeError("SandboxedGrade runs only under SandboxedAutograde (nbgrader's own converter copies "
                               "the submission's other files): use autograder.grading.nbgrader_bridge.install(c)")
        info = resources["nbgrader"]
        student, assignment, stem = info["student"], info["assignment"], info["notebook"]
        coursedir = _coursedir_of(self)
        # The task the converter made for this student (task.student_tasks, as `autograder grade` makes it).
        task = converter.task(student, assignment, stem)
        if task is None:
            raise RuntimeError(f"notebook {stem!r} is not part of {assignment!r} in the gradebook")
        cluster = converter.cluster
        if cluster is not None:
            # A worker of the course's Dask cluster grades it in its sandbox (autograder.grading.remote).
            result = cluster.result(task)
        else:
            if not self.no_sandbox:
                self._require_sandbox(coursedir, student, assignment)
            atexit.register(close_sandbox)  # one sandbox per process, reused across notebooks
            result = grade_notebook(task)
        if result.get("reason") == "sandbox":
            # The sandbox failed on this notebook (twice): the grader's failure, not a grade. As under
            # `autograder grade`, it replaces nothing (autograded notebook, feedback, gradebook, state).
            raise GraderFailed(f"{student}/{stem}: the grading sandbox failed on this notebook (twice); nothing was "
                               "changed: grade it again")
        write_outputs(coursedir, assignment, result)
        if result.get("refusal"):
            self.log.warning(intake.Refusal.from_dict(result["refusal"]).line(student, stem))
        self.log.info("%s/%s graded in the sandbox%s (%s)", student, stem,
                      "" if cluster is None else " of a grading worker", result["reason"])
        # For SaveStatedGrades (what a person graded last time) and RememberGraded (the state entry).
        previous = state_file.read_state(state_file.state_path(coursedir, student, assignment)).get(stem)
        resources[SEEN_KEY] = previous.get("cells") if isinstance(previous, dict) else None
        resources[_ENTRY_KEY] = state_file.entry(result)
        return nbformat.reads(result["autograded"], as_version=4), resources

    def _require_sandbox(self, coursedir, student: str, assignment: str) -> None:
        """No sandbox, no grading (the rule of ``autograder grade``); see :func:`refusal_without_sandbox`.

        :meth:`SandboxedAutograde.start` asks first, before anything is read or written; this is asked
        again per notebook in case the sandbox stopped working during the run. Nothing is removed
        either way: nbgrader's converter removed the autograded folder (and the state) it was about to
        redo, and the refusal then left the grading host's work deleted (issue 33, F7).
        """
        message = refusal_without_sandbox(assignment)
        if message:
            raise SystemExit(message)


class GraderFailed(RuntimeError):
    """The grader itself failed on one notebook: reported for that notebook, nothing replaced or removed."""


def refusal_without_sandbox(assignment: str) -> str | None:
    """The one sentence nbgrader's door stops with where bubblewrap cannot run (None where it can).

    nbgrader prints a traceback for every student whose notebook raises; a ``SystemExit`` passes
    through its per-student handler, so the command stops with the one sentence (formgrader's button
    shows it as the error of that click).
    """
    from autograder.grading.sandbox import SandboxError, require_sandbox

    try:
        require_sandbox("set c.SandboxedGrade.no_sandbox = True in nbgrader_config.py")
    except SandboxError as error:
        # A hub's container server lacks the sandbox for good: name the route that grades anyway.
        return (f"nbgrader autograde: {error} Where this server cannot sandbox (a container hub's "
                f"pod), grade on a grading host where bubblewrap works, in this course directory: "
                f"`nbgrader collect {assignment}` then `autograder grade {assignment}`; formgrader "
                f"here then shows the grades for manual grading and feedback (README, \"A hub whose "
                f"pods cannot sandbox\"). Nothing was changed.")
    return None


#: Resources key: the state entry :class:`SandboxedGrade` made, which :class:`RememberGraded` writes.
_ENTRY_KEY = "module6_state_entry"


class RememberGraded(NbGraderPreprocessor):
    """Last autograde step: record the notebook in the state file every door shares.

    Runs after nbgrader's ``SaveAutoGrades`` and ``AssignLatePenalties`` have committed its rows (so the
    state never names a grade the gradebook lacks, as under ``autograder grade``), and writes the entry
    ``autograder grade`` writes (:mod:`autograder.grading.state`): the next run of either door skips the
    notebook while nothing it depends on changed.
    """

    def preprocess(self, nb, resources):
        entry = resources.pop(_ENTRY_KEY, None)
        if entry is not None:
            info = resources["nbgrader"]
            path = state_file.state_path(_coursedir_of(self), info["student"], info["assignment"])
            state = state_file.read_state(path)
            state[info["notebook"]] = entry
            state_file.write_state(path, state)
        return nb, resources


class SubmissionExporter(NotebookExporter):
    """nbconvert's notebook exporter that never opens or parses a submitted file.

    nbgrader's converter hands the exporter each submitted notebook's path (nbconvert==7.17.2, ``exporters/exporter.py``,
    ``Exporter.from_filename`` opens and parses it whole: a FIFO blocks there, 200,000 cells are
    validated one by one). Here it gets an empty placeholder instead; :class:`SandboxedGrade` reads the
    file through the intake, within the grader's limits. The autograde step's input (the placeholder
    the sanitize step wrote into ``autograded/``) is not opened either: it holds nothing.
    A file that is not a notebook reaches :class:`SandboxedGrade` too, whose grader reports it
    ``unreadable`` (zero points, never run), as ``autograder grade`` does.
    """

    def from_filename(self, filename, resources=None, **kw):
        resources = {} if resources is None else resources
        if not resources.get("metadata"):
            resources["metadata"] = {}
        path, basename = os.path.split(filename)
        resources["metadata"]["name"] = os.path.splitext(basename)[0]
        resources["metadata"]["path"] = path
        return self.from_notebook_node(_placeholder(), resources, **kw)

    def from_file(self, file_stream, resources=None, **kw):
        return self.from_notebook_node(_placeholder(), resources, **kw)


def _placeholder():
    placeholder = nbformat.v4.new_notebook()
    placeholder.metadata[_PLACEHOLDER_KEY] = True
    return placeholder


_DEFAULT_LAYOUT = os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}")


class SandboxedAutograde(Autograde):
    """nbgrader's ``Autograde`` converter, with every student file found and read through the intake.

    Replaces three steps of nbgrader 0.9.6 (``nbgrader/converters/base.py``, ``autograde.py``):
    ``BaseConverter.init_notebooks`` (``glob``, which follows links), ``BaseConverter.init_assignment``
    (``shutil.copy`` of every other file of the submission folder, following links) and the file
    handling of ``Autograde.init_assignment`` (the copy of ``source/``'s other files, which
    ``autograder grade`` does not make either, and the ``os.path.exists`` that scores a link as
    present). The gradebook steps are nbgrader's, in nbgrader's order.
    """

    #: The run's :class:`autograder.grading.remote.Cluster` when ``c.SandboxedGrade.dask_scheduler`` is set.
    cluster = None

    def start(self) -> None:
        """Refuse before anything is read, written or removed when the sandbox cannot run (see
        :func:`refusal_without_sandbox`), or, with ``c.SandboxedGrade.dask_scheduler``, when the course's
        Dask cluster cannot grade (:meth:`autograder.grading.remote.Cluster.open`; its workers sandbox, so
        this server need not); then nbgrader's run, with this converter's steps."""
        from autograder.grading import remote

        settings = SandboxedGrade(config=self.config)
        self.cluster = None
        try:
            cluster = remote.Settings.of(settings)
            if cluster is None and not settings.no_sandbox:
                message = refusal_without_sandbox(self.coursedir.assignment_id or "ASSIGNMENT")
                if message:
                    raise SystemExit(message)
            # The course's Dask cluster grades instead of this server's sandbox: its workers sandbox.
            self.cluster = None if cluster is None else remote.Cluster.open(cluster, self.log)
        except remote.ClusterRefused as refused:
            raise SystemExit(f"nbgrader autograde: {refused}. Nothing was changed.") from None
        self._plans = {}
        self._made = {}
        try:
            super().start()
        finally:
            if self.cluster is not None:
                self.cluster.close()

    def plan(self, assignment: str) -> Plan:
        """What every notebook of ``assignment`` is graded with in this run (made once): the gradebook's
        sources and checksums, the limits and sandbox choice of ``c.SandboxedGrade``, the course secret and
        the grader's digest, made by :func:`~autograder.grading.task.make_plan` as ``autograder grade``
        makes them (so both doors' digests agree)."""
        plans = self.__dict__.setdefault("_plans", {})
        if assignment not in plans:
            settings = SandboxedGrade(config=self.config)
            plans[assignment] = make_plan(self.coursedir, assignment, timeout=settings.timeout,
                                          memory_mb=settings.memory_mb,
                                          use_bwrap=False if settings.no_sandbox else None)
        return plans[assignment]

    def task(self, student: str, assignment: str, stem: str) -> GradingTask | None:
        """The task :meth:`init_assignment` made for this notebook (None: not one of the gradebook's,
        or not a file to grade)."""
        made = self.__dict__.get("_made", {}).get((student, assignment))
        return None if made is None else made.tasks.get(stem)

    def _regrades_everything(self) -> bool:
        """``nbgrader autograde --force``: every notebook again. formgrader's button (nbgrader's API, whose
        ``autograde`` always asks for ``force``) regrades what changed, as ``autograder grade`` does."""
        from nbgrader.apps.api import NbGraderAPI

        return bool(self.force) and not isinstance(self.parent, NbGraderAPI)

    def init_destination(self, assignment_id: str, student_id: str) -> bool:
        """Whether to process a submission: yes, unless the student is excluded. Nothing is removed.

        nbgrader 0.9.6 (``BaseConverter.init_destination``) removes the autograded folder here with
        ``--force`` (always, under formgrader's button) or when the submission is newer, before a single
        notebook is graded: a refusal that followed (no sandbox in a pod) left the grading host's work
        deleted. Here each notebook's own result replaces its own files when it is graded, and the
        shared state decides which notebooks are graded at all (:meth:`convert_single_notebook`).
        """
        if self.coursedir.student_id_exclude and student_id in self.coursedir.student_id_exclude.split(","):
            return False
        return True

    def write_single_notebook(self, output, resources) -> None:
        """Write nothing: :class:`SandboxedGrade` wrote the autograded notebook (and its feedback page)
        itself, atomically; nbgrader's writer would first have put the placeholder of the sanitize step
        in its place. The writer's folder is still set: nbgrader's autograde step reads its input path
        from it."""
        self.writer.build_directory = self._format_dest(resources["nbgrader"]["assignment"],
                                                        resources["nbgrader"]["student"])

    def convert_single_notebook(self, notebook_filename: str) -> None:
        """Grade one notebook, unless the state file every door shares says it is unchanged since it was
        graded (by either door): then nothing of it is touched but its late penalty (as ``autograder
        grade`` does for an unchanged notebook)."""
        from autograder.grading.gradebook import GradebookWriter

        if self._sanitizing:
            info = self.init_single_notebook_resources(notebook_filename)["nbgrader"]
            student, assignment, stem = info["student"], info["assignment"], info["notebook"]
            task = self.task(student, assignment, stem)
            if task is not None and self._unchanged(task):
                with GradebookWriter(self.coursedir, assignment) as writer:
                    writer.assign_late_penalty(student, stem)
                self.log.info("%s/%s: unchanged since it was graded (by autograder grade or nbgrader autograde): "
                              "not graded again", student, stem)
                return
        super().convert_single_notebook(notebook_filename)

    def _unchanged(self, task: GradingTask) -> bool:
        """Whether the state file every door shares says ``task``'s notebook is graded and unchanged since
        (never under ``nbgrader autograde --force``)."""
        if self._regrades_everything():
            return False
        path = state_file.state_path(self.coursedir, task.student, task.assignment)
        produced = Path(self._format_dest(task.assignment, task.student)) / f"{task.stem}.ipynb"
        return state_file.unchanged(state_file.read_state(path).get(task.stem), task.digest, produced)

    def convert_notebooks(self) -> None:
        """nbgrader 0.9.6's loop over submissions (``BaseConverter.convert_notebooks``), minus its removals.

        nbgrader removes a student's whole autograded folder (``_handle_failure``: ``rmtree``) when any
        step for that student raises, with what other notebooks and earlier runs had graded: a
        ``RecursionError`` in one notebook cost a student every graded notebook. Here a failure is that
        notebook's: logged with its student and notebook, the other notebooks are graded, nothing is
        removed, and the run ends with nbgrader's error (exit status 1) naming what failed.
        """
        import re
        import traceback

        import sqlalchemy

        errors = []
        for assignment in sorted(self.assignments.keys()):
            self.notebooks = sorted(self.assignments[assignment])
            regexp = self._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
            match = re.match(regexp, assignment)
            if match is None:
                msg = "Could not match '%s' with regexp '%s'" % (assignment, regexp)
                self.log.error(msg)
                raise NbGraderException(msg)
            ids = match.groupdict()
            try:
                if not self.init_destination(ids["assignment_id"], ids["student_id"]):
                    continue
                self.run_pre_convert_hook()
                self.init_assignment(ids["assignment_id"], ids["student_id"])
                for notebook in self.notebooks:
                    try:
                        self.convert_single_notebook(notebook)
                    except sqlalchemy.exc.OperationalError:
                        raise
                    except Exception as error:  # noqa: BLE001 - one notebook's failure is that notebook's
                        self._sanitizing = True
                        self.log.error("%s/%s could not be graded (%s: %s); what was graded before is kept",
                                       ids["student_id"], os.path.splitext(os.path.basename(notebook))[0],
                                       type(error).__name__, error)
                        self.log.debug(traceback.format_exc())
                        errors.append((ids["assignment_id"], ids["student_id"]))
                self.set_permissions(ids["assignment_id"], ids["student_id"])
                self.run_post_convert_hook()
            except sqlalchemy.exc.OperationalError:
                self.log.error(traceback.format_exc())
                msg = ("There was an error accessing the nbgrader database. This may occur if you recently "
                       "upgraded nbgrader. To resolve the issue, first BACK UP your database and then run the "
                       "command `nbgrader db upgrade`.")
                self.log.error(msg)
                raise NbGraderException(msg) from None
            except KeyboardInterrupt:
                self.log.error("Canceled")
                raise
            except Exception:  # noqa: BLE001 - one student's failure is that student's
                self.log.error("There was an error processing assignment: %s", assignment)
                self.log.error(traceback.format_exc())
                errors.append((ids["assignment_id"], ids["student_id"]))
        if errors:
            for assignment_id, student_id in dict.fromkeys(errors):
                self.log.error("There was an error processing assignment '%s' for student '%s' (nothing of "
                               "it was removed)", assignment_id, student_id)
            msg = "Please see the errors above; what was graded before they happened is kept."
            self.log.error(msg)
            raise NbGraderException(msg)

    def _root(self) -> Path:
        from autograder.grading.gradebook import submitted_root

        if self.coursedir.directory_structure != _DEFAULT_LAYOUT:
            raise NbGraderException("the sandboxed grader reads submissions laid out as nbgrader's default "
                                    f"CourseDirectory.directory_structure ({_DEFAULT_LAYOUT}), got "
                                    f"{self.coursedir.directory_structure!r}")
        return submitted_root(self.coursedir)

    def _stems(self, assignment: str) -> list:
        try:
            with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
                return sorted(notebook.name for notebook in gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return ["*"]

    def _refused(self, student: str, assignment: str, refusal: intake.Refusal, stems=None) -> None:
        for stem in stems if stems is not None else self._stems(assignment):
            self.log.warning(refusal.line(student, stem))

    def init_notebooks(self) -> None:
        self.assignments = {}
        self.notebooks = []
        # Submission folders whose every notebook was refused: still a submission (as under `autograder
        # grade`: the student and submission are recorded, the refused notebooks get no grade).
        self._only_refused = set()
        root = self._root()
        wanted_student, wanted_assignment = self.coursedir.student_id, self.coursedir.assignment_id
        pattern = self.coursedir.notebook_id + ".ipynb"
        listing = intake.list_folder(root)
        for student in listing.entries:
            if not fnmatch.fnmatchcase(student.name, wanted_student) or student.kind not in ("directory", "symlink"):
                continue
            if student.kind == "symlink":
                self._refused(student.name, wanted_assignment, intake.locate(root, (student.name,), folder=True))
                continue
            for folder in intake.list_folder(root, (student.name,)).entries:
                if not fnmatch.fnmatchcase(folder.name, wanted_assignment):
                    continue
                parts = (student.name, folder.name)
                if folder.kind == "symlink":
                    self._refused(student.name, folder.name, intake.locate(root, parts, folder=True))
                    continue
                if folder.kind != "directory":
                    continue
                path = self.coursedir.format_path(self.coursedir.submitted_directory, student.name, folder.name)
                found, refused = [], False
                for item in intake.list_folder(root, parts).entries:
                    if not fnmatch.fnmatchcase(item.name, pattern) or not item.name.endswith(".ipynb"):
                        continue
                    if item.kind == "symlink":
                        self._refused(student.name, folder.name, intake.locate(root, (*parts, item.name)),
                                      [item.name[:-len(".ipynb")]])
                        refused = True
                        continue
                    # Anything else that is not a regular file (a FIFO, a device) goes to the grader,
                    # which refuses it unopened and scores it zero, as `autograder grade` does.
                    found.append(os.path.join(path, item.name))
                if found or refused:
                    self.assignments[path] = sorted(found)
                    if not found:
                        self._only_refused.add(path)
                else:
                    self.log.warning("No notebooks were matched by '%s'", os.path.join(path, pattern))
        if not self.assignments:
            msg = "No notebooks were matched by '%s'" % self._format_source(wanted_assignment, wanted_student)
            self.log.error(msg)
            raise NbGraderException(msg)

    def init_assignment(self, assignment_id: str, student_id: str) -> None:
        """nbgrader's checks of the student and the assignment, then the student's tasks, made by
        :func:`~autograder.grading.task.student_tasks` as ``autograder grade`` makes them: the submission
        recorded in the gradebook, every notebook that was not submitted scored zero (nbgrader's rule; a
        link is neither submitted nor missing: no grade, as under ``autograder grade``)."""
        from autograder.grading.gradebook import GradebookWriter

        root = self._root()
        self._check_gradebook(assignment_id, student_id)
        src_path = self._format_source(assignment_id, student_id)
        self.notebooks = self._known_notebooks(assignment_id)
        nothing = not self.notebooks and src_path not in getattr(self, "_only_refused", ())
        with GradebookWriter(self.coursedir, assignment_id) as writer:
            if nothing:
                # nbgrader's order: the submission is recorded, then the error below; nothing is zeroed.
                timestamp = writer.prepare_student(student_id)
                made = None
            else:
                made = student_tasks(self.plan(assignment_id), writer, student_id)
                if made.refusal is not None:
                    self._refused(student_id, assignment_id, made.refusal)
                    self.notebooks = []
                    return
                if made.setup_error is not None:
                    raise made.setup_error
                self.__dict__.setdefault("_made", {})[(student_id, assignment_id)] = made
                timestamp = made.timestamp
        self._send_to_cluster(made)
        self._log_submission(assignment_id, student_id, timestamp)

        # Nothing of the submission folder is copied: the two files `nbgrader release_feedback` needs
        # are read through the intake and written here; every other file the grader writes itself.
        for problem in carry_submission_files(src_path, self._format_dest(assignment_id, student_id), root=root):
            self.log.warning(problem)
        if nothing:
            msg = "No notebooks found, did you forget to run 'nbgrader generate_assignment'?"
            self.log.error(msg)
            raise NbGraderException(msg)
        for refusal, _ in made.missing.values():
            self.log.warning("No submitted file: %s", refusal.reason.removesuffix(" does not exist"))

    def _send_to_cluster(self, made) -> None:
        """On a Dask cluster, send the student's notebooks that will be graded now, all at once (the workers
        grade them in parallel while :class:`SandboxedGrade` takes the results in nbgrader's order)."""
        cluster = getattr(self, "cluster", None)
        if cluster is None or made is None:
            return
        cluster.discard()  # what an earlier student's failure left unread
        wanted = {os.path.splitext(os.path.basename(notebook))[0] for notebook in self.notebooks}
        cluster.submit(task for stem, task in made.tasks.items() if stem in wanted and not self._unchanged(task))

    def _check_gradebook(self, assignment_id: str, student_id: str) -> None:
        """nbgrader's own checks before a submission is graded (``Autograde.init_assignment``)."""
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            if self.create_student:
                self.log.info("Creating/updating student with ID '%s': %s", student_id, {})
            else:
                try:
                    gb.find_student(student_id)
                except MissingEntry:
                    msg = "No student with ID '%s' exists in the database" % student_id
                    self.log.error(msg)
                    raise NbGraderException(msg) from None
            try:
                gb.find_assignment(assignment_id)
            except MissingEntry:
                msg = "No assignment with ID '%s' exists in the database" % assignment_id
                self.log.error(msg)
                raise NbGraderException(msg) from None

    def _known_notebooks(self, assignment_id: str) -> list:
        """The submitted notebooks that are in the gradebook (nbgrader skips the others, with a warning)."""
        notebooks = []
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            for notebook in self.notebooks:
                notebook_id = os.path.splitext(os.path.basename(notebook))[0]
                try:
                    gb.find_notebook(notebook_id, assignment_id)
                except MissingEntry:
                    self.log.warning("Skipping unknown notebook: %s", notebook)
                    continue
                notebooks.append(notebook)
        return notebooks

    def _log_submission(self, assignment_id: str, student_id: str, timestamp) -> None:
        """What nbgrader logs of a submission: an unusable ``timestamp.txt``, the time, and how late."""
        if timestamp.problem:
            self.log.warning(timestamp.problem)
        if timestamp.value:
            with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
                submission = gb.find_submission(assignment_id, student_id)
                self.log.info("%s submitted at %s", submission, timestamp.value)
                if submission.total_seconds_late > 0:
                    self.log.warning("%s is %s seconds late", submission, submission.total_seconds_late)


def _tolerant_timestamp(self, dest_path: str):
    # The folder is one of the course's (submitted/ or autograded/): read below it through the intake.
    root = None
    for step in (self.submitted_directory, self.autograded_directory):
        base = os.path.abspath(os.path.join(self.root, step))
        if os.path.commonpath([base, os.path.abspath(dest_path)]) == base:
            root = base
            break
    # The same time as `autograder grade`: the exchange's receipt when there is one (see receipts.py).
    timestamp = submission_time(dest_path, root=root)
    if timestamp.problem:
        self.log.warning(timestamp.problem)
    return timestamp.value


class ScopedAutograde(Autograde):
    """The converter behind nbgrader's ``Autograde`` name: the kit's assignments in the sandbox, the others in a kernel.

    ``nbgrader autograde ps1``, formgrader's Autograde button on ``ps1`` and ``nbgrader autograde "*"`` all
    build this class; :func:`autograder.scope.dispatch` hands each assignment of the run to
    :class:`SandboxedAutograde` when ``c.Module6Scope.assignments`` covers it and to nbgrader's own
    ``Autograde.start`` (with the course's ``c.Autograde`` settings, e.g. ``Execute``) when it does not.
    """

    def start(self) -> None:
        from autograder.scope import dispatch

        dispatch(self, self.coursedir.submitted_directory, SandboxedAutograde, Autograde.start,
                 carried=("force", "create_student"))


def install(c) -> None:
    """Point nbgrader's Autograde (command line and formgrader) at the sandboxed grader, in config ``c``.

    ``nbgrader autograde`` (``nbgrader/apps/autogradeapp.py``) and ``NbGraderAPI.autograde``
    (``nbgrader/apps/api.py``, behind formgrader's button) build the converter named ``Autograde`` in
    their own modules: both names are pointed at :class:`ScopedAutograde`, which grades the assignments of
    ``c.Module6Scope.assignments`` (every assignment unless set: :func:`autograder.course_setup.use_module6`
    sets the kit's) with :class:`SandboxedAutograde`, configured under its own name (``c.SandboxedAutograde``,
    which outranks the course's ``c.Autograde``), and every other assignment with nbgrader's own converter.

    Course-wide, for every assignment: the exchange's collect and release (:mod:`autograder.grading.exchange`,
    the hub's protection against a student submitting as a classmate or choosing their time) and the reading
    of submission times that goes with it (the exchange's receipt; an unreadable ``timestamp.txt`` is a
    warning, where nbgrader 0.9.6 crashed).
    """
    import nbgrader.apps.api
    import nbgrader.apps.autogradeapp
    import nbgrader.converters

    c.SandboxedAutograde.sanitize_preprocessors = [DropSubmission]
    c.SandboxedAutograde.autograde_preprocessors = [SandboxedGrade, SaveStatedGrades, AssignLatePenalties,
                                                    RememberGraded]
    c.SandboxedAutograde.exporter_class = SubmissionExporter
    for module in (nbgrader.apps.autogradeapp, nbgrader.apps.api, nbgrader.converters):
        module.Autograde = ScopedAutograde
    CourseDirectory.get_existing_timestamp = _tolerant_timestamp
    from autograder.grading import exchange
    exchange.install(c)
