"""nbgrader's own ``autograde`` (command line and formgrader's Autograde button) on the sandboxed grader.

``nbgrader autograde`` runs each submitted notebook through two preprocessor chains of its
``Autograde`` converter: ``sanitize_preprocessors`` (clear outputs, overwrite locked cells, check
metadata) and ``autograde_preprocessors`` (``Execute`` in a kernel as the grading user, then
``SaveAutoGrades`` and ``AssignLatePenalties``). formgrader's button calls the same converter through
``NbGraderAPI.autograde``. Both read the course's ``nbgrader_config.py``, where :func:`install` puts:

* ``sanitize_preprocessors = [DropSubmission]``: the student's file is not trusted, so nothing of it
  is kept at this step (nbgrader's ``CheckCellMetadata`` would let one hostile cell stop the whole
  run with ``SchemaTooNewError``);
* ``autograde_preprocessors = [SandboxedGrade, SaveStatedGrades, AssignLatePenalties]``:
  :class:`SandboxedGrade` grades the submitted file with :func:`autograder.grading.worker.grade_notebook`
  (the function ``autograder grade`` runs in its workers) and hands nbgrader the autograded
  notebook it built; nbgrader's own ``SaveAutoGrades`` (whose comments also name an unreadable notebook) and ``AssignLatePenalties`` store it, exactly
  as ``autograder grade`` does. Scores, gradebook rows, ``autograded/`` notebooks and feedback pages
  are the same whichever command ran.
* ``exporter_class = SubmissionExporter``: a submitted file that is not a notebook at all is graded
  as an empty submission (zero points) instead of failing that student's whole assignment.

nbgrader 0.9.6 crashes on an unparseable ``timestamp.txt`` (it calls ``CourseDirectory.fail``, which
does not exist) and trusts the time a student wrote there; :func:`install` makes it read submission
times with :func:`autograder.grading.timestamps.submission_time` (the exchange's receipt written by
:class:`autograder.grading.receipts.ReceiptCollect` when there is one; an unusable file counts as
missing, with a warning), as ``autograder grade`` does.
"""

from __future__ import annotations

import atexit
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import AssignLatePenalties, NbGraderPreprocessor
from traitlets import Bool, Float, Integer

from autograder.grading.gradebook import SaveStatedGrades
from autograder.grading.timestamps import submission_time

#: Set on a notebook by :class:`DropSubmission`, checked by :class:`SandboxedGrade`.
_PLACEHOLDER_KEY = "module6_placeholder"


def _coursedir_of(configurable) -> CourseDirectory:
    """The ``CourseDirectory`` of the nbgrader app or API a preprocessor runs under."""
    node = configurable
    while node is not None:
        coursedir = getattr(node, "coursedir", None)
        if isinstance(coursedir, CourseDirectory):
            return coursedir
        node = getattr(node, "parent", None)
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
                    help="seconds per notebook (as `autograder grade --timeout`; default 60)").tag(config=True)
    memory_mb = Integer(None, allow_none=True,
                        help="memory per sandboxed process in MB (as `autograder grade --memory`)").tag(config=True)
    no_sandbox = Bool(False, help="grade WITHOUT the bubblewrap sandbox (as `autograder grade --no-sandbox`): "
                                  "only for trying the grader where bubblewrap cannot run, never for credit"
                      ).tag(config=True)

    def preprocess(self, nb, resources):
        from autograder.grading.gradebook import assignment_sources, write_outputs
        from autograder.grading.worker import close_sandbox, grade_notebook, limits_for

        if not nb.metadata.get(_PLACEHOLDER_KEY):
            raise RuntimeError("SandboxedGrade needs DropSubmission as Autograde.sanitize_preprocessors: "
                               "use autograder.grading.nbgrader_bridge.install(c) in nbgrader_config.py")
        info = resources["nbgrader"]
        student, assignment, stem = info["student"], info["assignment"], info["notebook"]
        coursedir = _coursedir_of(self)
        specs = assignment_sources(coursedir, assignment)
        if stem not in specs:
            raise RuntimeError(f"notebook {stem!r} is not part of {assignment!r} in the gradebook")
        spec = specs[stem]
        if not self.no_sandbox:
            self._require_sandbox(coursedir, student, assignment)
        submitted = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment)) / f"{stem}.ipynb"
        # The worker opens the file itself, within the limits and without following a symbolic link.
        task = {"student": student, "assignment": assignment, "stem": stem, "source": spec["source"],
                "checksums": spec["checksums"], "path": str(submitted),
                "limits": limits_for(self.timeout, self.memory_mb),
                "options": {"use_bwrap": False if self.no_sandbox else None},
                "digest": None}
        atexit.register(close_sandbox)  # one sandbox per process, reused across notebooks
        result = grade_notebook(task)
        write_outputs(coursedir, assignment, result)
        self.log.info("%s/%s graded in the sandbox (%s)", student, stem, result["reason"])
        return nbformat.reads(result["autograded"], as_version=4), resources


    def _require_sandbox(self, coursedir, student: str, assignment: str) -> None:
        """No sandbox, no grading (the rule of ``autograder grade``), said once for the whole run.

        nbgrader prints a traceback for every student whose notebook raises; a ``SystemExit`` passes
        through its per-student handler, so the command stops at the first notebook with the one
        sentence (formgrader's button shows it as the error of that click). The autograded folder
        nbgrader had just made for this student is removed, as nbgrader removes a failed one, so the
        next run does not skip the student.
        """
        from autograder.grading.sandbox import SandboxError, require_sandbox

        try:
            require_sandbox("set c.SandboxedGrade.no_sandbox = True in nbgrader_config.py")
        except SandboxError as error:
            import shutil
            shutil.rmtree(coursedir.format_path(coursedir.autograded_directory, student, assignment),
                          ignore_errors=True)
            raise SystemExit(f"nbgrader autograde: {error}") from None


class SubmissionExporter(NotebookExporter):
    """nbconvert's notebook exporter, except that an unreadable submission becomes an empty notebook.

    Without it, one file that is not JSON fails the student's whole assignment in nbgrader; with it,
    the notebook is graded as empty (zero points) and said so in the log, as ``autograder grade``
    does. Only reading is forgiven: an error of the grader itself still fails the notebook.
    """

    #: Characters read at the most (None: the grader's ``notebook_bytes`` limit). :class:`DropSubmission`
    #: drops the content anyway (the sandboxed grader reads the file itself, within its limits), so a
    #: larger file is neither read on nor parsed by nbgrader's side.
    max_chars = None

    def from_file(self, file_stream, resources=None, **kw):
        from autograder.grading.worker import DEFAULT_LIMITS

        cap = int(self.max_chars or DEFAULT_LIMITS["notebook_bytes"])
        try:
            text = file_stream.read(cap + 1)
            if len(text) > cap:
                raise ValueError(f"larger than {cap} characters")
            nb = nbformat.reads(text, as_version=4)
        except Exception as error:  # noqa: BLE001 - the file is the student's; grading goes on
            self.log.warning("The submitted notebook could not be read (%s); graded as empty",
                             type(error).__name__)
            nb = nbformat.v4.new_notebook()
        return self.from_notebook_node(nb, resources, **kw)


def _tolerant_timestamp(self, dest_path: str):
    # The same time as `autograder grade`: the exchange's receipt when there is one (see receipts.py).
    timestamp = submission_time(dest_path)
    if timestamp.problem:
        self.log.warning(timestamp.problem)
    return timestamp.value


def install(c) -> None:
    """Point nbgrader's Autograde (command line and formgrader) at the sandboxed grader, in config ``c``."""
    c.Autograde.sanitize_preprocessors = [DropSubmission]
    c.Autograde.autograde_preprocessors = [SandboxedGrade, SaveStatedGrades, AssignLatePenalties]
    c.Autograde.exporter_class = SubmissionExporter
    CourseDirectory.get_existing_timestamp = _tolerant_timestamp
    from autograder.grading import receipts
    receipts.install(c)
