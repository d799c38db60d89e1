"""The course and term that enter every student's numbers: what the instructor sets, what was released.

Each student's numbers (:mod:`course.variants`) are drawn from their id and a
:class:`course.variants.CourseTerm`: the course's nbgrader id (``c.CourseDirectory.course_id``) and a
term label the instructor chooses (``c.Module6.term``, :class:`Module6`). Two courses, or two terms of
one course, so give the same id different numbers.

Two moments, two readers:

* **Release.** ``nbgrader generate_assignment`` writes the *configured* context
  (:func:`configured_course_term`) into each released numbers cell and into each released notebook's
  metadata (:data:`METADATA_KEY`): ``autograder.authoring.release_preprocessors.CourseTermCell``.
* **Grading and listing.** ``autograder grade``, nbgrader's sandboxed door, ``autograder variants`` and
  the class report read the *released* context (:func:`released_course_term`), never the configured one:
  the students hold the release, so a term label changed in ``nbgrader_config.py`` afterwards changes
  nothing they are graded against. A release made before the context existed has no metadata: the empty
  context, the numbers its students saw.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from traitlets import TraitError, Unicode, validate
from traitlets.config import Configurable

from autograder.assignment import ASSIGNMENTS
from autograder.limits import NOTEBOOK_BYTES
from course.variants import CourseTerm, check_course_term_value

#: The released notebook's metadata key that records its context: ``{"course": ..., "term": ...}``.
METADATA_KEY = "module6_course_term"

#: The numbers cell's cell id and nbgrader grade id (``tools/nbbuild.py`` ``identity_cells``; the worker's
#: ``NUMBERS_CELL``).
NUMBERS_CELL = "your-numbers"


class Module6(Configurable):
    """The Module 6 kit's own settings in a course's ``nbgrader_config.py`` (``c.Module6.term = "..."``)."""

    term = Unicode(
        "",
        help="The term's label, such as \"2027-spring\", chosen by the instructor. It enters every student's "
             "numbers together with the course id (c.CourseDirectory.course_id), so the same student id gets "
             "other numbers in another term. Set it before `nbgrader generate_assignment` and never change it "
             "after release: the release records it, grading reads it from there, and generating the "
             "assignment again with another term is refused. Empty: the course id alone.",
    ).tag(config=True)

    @validate("term")
    def _valid_term(self, proposal):
        try:
            return check_course_term_value(proposal["value"], "term")
        except ValueError as error:
            raise TraitError(f"c.Module6.term: {error}") from None


class ReleaseContextError(ValueError):
    """The released notebooks do not say one context (they disagree, or one cannot be read)."""


def configured_course_term(coursedir, config=None) -> CourseTerm:
    """The :class:`~course.variants.CourseTerm` a course configures: ``coursedir``'s course id (an nbgrader
    ``CourseDirectory``) and ``c.Module6.term`` of ``config`` (default: ``coursedir.config``; pass the
    running app's or converter's own: nbgrader 0.9.6 makes its ``CourseDirectory`` before it reads
    ``nbgrader_config.py``, and the course directory's config then lacks sections of classes it does not
    know, such as ``Module6``). What a release writes; grading never reads it (see :func:`released_course_term`)."""
    term = Module6(config=coursedir.config if config is None else config).term
    try:
        return CourseTerm(str(coursedir.course_id or ""), term)
    except ValueError as error:
        raise ValueError(f"c.CourseDirectory.course_id: {error}") from None


def _literal(value: str) -> str:
    """``value`` as a Python string literal in double quotes (a context value is printable: JSON's
    quoting, which escapes only ``"`` and ``\\`` there, is Python's too)."""
    return json.dumps(value, ensure_ascii=False)


def numbers_call(stem: str, context: CourseTerm) -> str:
    """The call the numbers cell of ``stem`` makes in ``context``: the source's own call for the empty
    context (every release before course and term entered the draws reads exactly so).

    >>> numbers_call("05_negative_kl", CourseTerm())
    'your_numbers("05_negative_kl", STUDENT_ID)'
    >>> numbers_call("05_negative_kl", CourseTerm("ml-101", 'spring "27"'))
    'your_numbers("05_negative_kl", STUDENT_ID, course="ml-101", term="spring \\\\"27\\\\"")'
    """
    if context.empty:
        return f"your_numbers({_literal(stem)}, STUDENT_ID)"
    return f"your_numbers({_literal(stem)}, STUDENT_ID, course={_literal(context.course)}, term={_literal(context.term)})"


def released_numbers_source(source: str, stem: str, context: CourseTerm) -> str:
    """The numbers cell's ``source`` (the source notebook's) as released in ``context``: its one
    ``your_numbers("<stem>", STUDENT_ID)`` call states the course and term. The release step writes it,
    and the grader runs it in place of the source's cell, so both sides draw the same numbers.
    ``ValueError`` when the cell does not hold that call exactly once (a numbers cell edited by hand)."""
    calls = re.findall(re.escape(numbers_call(stem, CourseTerm())), source)
    if len(calls) != 1:
        raise ValueError(f"the numbers cell ({NUMBERS_CELL!r}) of {stem} should call `{numbers_call(stem, CourseTerm())}` "
                         f"exactly once (found {len(calls)}): the release writes the course and term into that call")
    return source.replace(numbers_call(stem, CourseTerm()), numbers_call(stem, context))


def is_numbers_cell(cell) -> bool:
    """Whether a notebook cell is the locked numbers cell (by cell id or nbgrader grade id)."""
    meta = cell.get("metadata", {}).get("nbgrader") or {}
    return cell.get("cell_type") == "code" and (cell.get("id") == NUMBERS_CELL or meta.get("grade_id") == NUMBERS_CELL)


def context_of_metadata(metadata, where: str) -> CourseTerm:
    """The context a notebook's ``metadata`` records (the empty one when it records none: a release made
    before the context existed); :class:`ReleaseContextError` naming ``where`` when the record is malformed."""
    record = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    if record is None:
        return CourseTerm()
    if not isinstance(record, dict) or set(record) != {"course", "term"}:
        raise ReleaseContextError(f"{where}: metadata {METADATA_KEY!r} should be {{\"course\": ..., \"term\": ...}}, "
                                  f"not {str(record)[:200]!r}; generate the release again")
    try:
        return CourseTerm(record["course"], record["term"])
    except ValueError as error:
        raise ReleaseContextError(f"{where}: metadata {METADATA_KEY!r}: {error}") from None


def notebook_course_term(path) -> CourseTerm:
    """The context recorded in the released notebook at ``path``: read whole but bounded by
    :data:`~autograder.limits.NOTEBOOK_BYTES` (the instructor's own file, still never read unbounded), no
    link followed. :class:`ReleaseContextError` when it cannot be read or is not a notebook."""
    path = Path(path)
    limit = int(NOTEBOOK_BYTES.value)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise ReleaseContextError(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(data) > limit:
        raise ReleaseContextError(f"{path}: larger than {NOTEBOOK_BYTES.shown()}, not a released notebook of the kit")
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ReleaseContextError(f"{path}: not a notebook (not JSON)") from None
    return context_of_metadata(notebook.get("metadata") if isinstance(notebook, dict) else None, str(path))


def release_folder(coursedir, assignment: str) -> Path:
    """``release/<assignment>`` of the course (nbgrader's ``release_directory``, with ``student_id`` ".")."""
    return Path(coursedir.format_path(coursedir.release_directory, ".", assignment))


def released_contexts(folder) -> dict:
    """``notebook file name -> CourseTerm`` of every notebook in the release folder ``folder`` (empty when
    it has none)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {path.name: notebook_course_term(path) for path in sorted(folder.glob("*.ipynb")) if path.is_file()}


def released_course_term(coursedir, assignment: str) -> CourseTerm:
    """The context ``assignment``'s students' numbers were drawn in: the one its released notebooks record.

    For an assignment that is not the kit's (no numbers vary), the empty context, unread. For the kit's,
    every notebook of ``release/<assignment>`` must record the same context (a folder mixing two releases
    is refused: :class:`ReleaseContextError` names both). A release without the record (made before the
    context existed) is the empty context. A kit assignment with no release folder is refused too: what
    its students hold cannot be known, and guessing would grade against other numbers without a word.
    """
    if assignment not in ASSIGNMENTS:
        return CourseTerm()
    folder = release_folder(coursedir, assignment)
    found = released_contexts(folder)
    if not found:
        raise ReleaseContextError(
            f"assignment {assignment!r} has no released notebooks in {folder}, where the grader reads the course and "
            "term its students' numbers were drawn in: run `nbgrader generate_assignment "
            f"{assignment}` before grading (with the course id and c.Module6.term of the release the students hold)")
    distinct = sorted(set(found.values()), key=lambda ct: (ct.course, ct.term))
    if len(distinct) > 1:
        examples = [next(name for name, ct in found.items() if ct == one) for one in distinct]
        said = "; ".join(f"{name}: course {ct.course!r}, term {ct.term!r}" for name, ct in zip(examples, distinct))
        raise ReleaseContextError(
            f"the released notebooks of {assignment!r} in {folder} record different courses or terms ({said}): "
            f"one release has one context. Generate the whole assignment again (`nbgrader generate_assignment "
            f"{assignment} --force`) with the context its students hold")
    return distinct[0]


__all__ = ["METADATA_KEY", "NUMBERS_CELL", "Module6", "ReleaseContextError", "configured_course_term",
           "context_of_metadata", "is_numbers_cell", "notebook_course_term", "numbers_call", "released_numbers_source", "release_folder", "released_contexts", "released_course_term"]
