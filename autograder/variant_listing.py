"""``autograder variants ASSIGNMENT --student ID``: one student's numbers and the key for them, for the instructor.

What the student's notebooks show (the parameters) and what their answers must be (the expected
answers: keys computed from the reference by :func:`describe`, never anything
the student wrote), for every exercise of the assignment that varies. The answers never leave the
instructor's side: this command reads the course directory (for the secret that draws the coding
exercises' hidden inputs, found exactly as the grader finds it: ``$MODULE6_VARIANT_SECRET``, else
the course directory's secret file) and prints to the instructor's terminal.

The numbers are drawn in the course and term of the assignment's release, read from
``release/<assignment>`` exactly as the grader reads them (:func:`autograder.course_settings.released_course_term`),
not from the configuration: a term changed after release changes neither the grades nor this listing.
Before anything is released, the listing shows the numbers the configured course id and ``c.Module6.term``
would give, and says so.

The id is checked twice: its form (what nbgrader accepts), and, when the course has a gradebook,
that the gradebook knows it, because a mistyped id would print someone else's numbers (or nobody's)
without a word. ``--any-id`` lifts the second check, to see the numbers of a student not yet enrolled.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path


def varying_stems(assignment: str) -> list:
    """The exercises of ``assignment`` that vary: a family of numbers, or hidden inputs drawn per student."""
    from autograder import checks
    from autograder.assignment import ASSIGNMENTS, notebook_stems
    from course import variants as family_registry
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"assignment should be one of {list(ASSIGNMENTS)}, not {assignment!r}")
    return [stem for stem in notebook_stems(assignment=assignment)
            if family_registry.varies(stem) or getattr(checks.CHECKS[stem], "varies", False)]


def describe(assignment: str, student: str, secret: bytes | None = None, course_term=None) -> dict:
    """``{stem: {"parameters": {...}, "answers": {...}}}`` of every exercise of ``assignment`` that
    varies, for ``student`` in ``course_term`` (a :class:`course.variants.CourseTerm`; None: the empty
    context) (``autograder variants``). A coding exercise's parameters name its
    hidden seed (only with a secret) and it has no answers (its answers are functions)."""
    from autograder.exercises import answers_for
    from autograder.variants import variant_for
    from course import variants as family_registry
    out = {}
    for stem in varying_stems(assignment):
        if family_registry.varies(stem):
            out[stem] = {"parameters": json_value(family_registry.parameters(stem, student, course_term)),
                         "answers": json_value(answers_for(stem, student, course_term))}
        else:
            variant = variant_for(stem, student, secret)
            out[stem] = {"parameters": {"hidden_seed": variant.hidden} if variant.hidden is not None else {},
                         "answers": {}}
    return out




def json_value(value):
    """An answer as JSON: a set as ``{"type": "set", "items": [...]}`` (sorted), a tuple as a list, a
    NumPy value as a Python one, an infinity or NaN as the string ``"inf"``, ``"-inf"`` or ``"nan"``."""
    if isinstance(value, (set, frozenset)):
        return {"type": "set", "items": sorted((json_value(item) for item in value), key=repr)}
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [json_value(item) for item in value]
    if hasattr(value, "tolist"):
        return json_value(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        # Strict JSON has no NaN or infinity (Python's json would write Infinity): a string says which.
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return value


class ListingError(ValueError):
    """Bad arguments: the message names the argument and what was expected."""


@dataclasses.dataclass(frozen=True)
class Listing:
    """What the command prints: ``described`` is :func:`describe`'s mapping;
    ``notes`` are lines for stderr (no secret yet, no gradebook)."""

    assignment: str
    student: str
    described: dict
    notes: tuple = ()
    #: The course and term the numbers were drawn in (the release's; before release, the configured ones).
    course_term: object = None


def _enrolled(root: Path) -> list | None:
    """The gradebook's student ids, or None when the course has no gradebook that can be read."""
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import course_directory

    try:
        coursedir = course_directory(root)
    except GradingError:
        return None
    from nbgrader.api import Gradebook

    try:
        with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
            return sorted(student.id for student in gb.students)
    except Exception:  # noqa: BLE001 - an unreadable gradebook only costs the enrolment check (said on stderr)
        return None


def listing_course_term(root: Path, assignment: str) -> tuple:
    """``(CourseTerm, note)``: the context of ``assignment``'s release in the course at ``root`` (note None),
    or, when nothing is released yet, the configured course id and ``c.Module6.term`` with a note saying so.
    :class:`ListingError` when the release cannot say (its notebooks disagree) or the config cannot be read."""
    from nbgrader.coursedir import CourseDirectory

    from autograder.course_settings import (ReleaseContextError, configured_course_term, release_folder,
                                            released_contexts, released_course_term)
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import load_config

    try:
        config = load_config(root)
    except GradingError as error:
        raise ListingError(str(error)) from None
    coursedir = CourseDirectory(config=config)
    coursedir.root = str(root)
    try:
        if released_contexts(release_folder(coursedir, assignment)):
            return released_course_term(coursedir, assignment), None
        configured = configured_course_term(coursedir, config)
    except (ReleaseContextError, ValueError) as error:
        raise ListingError(str(error)) from None
    return configured, (f"{assignment} is not released yet in {root} (no {release_folder(coursedir, assignment)}): "
                        f"these are the numbers of the configured course {configured.course!r} and term "
                        f"{configured.term!r}, which a release made now would give")


def listing(course_dir: str | Path, assignment: str, student: str, *, any_id: bool = False) -> Listing:
    """The numbers and answers of ``student`` for ``assignment`` in the course at ``course_dir``."""
    from autograder.assignment import ASSIGNMENTS
    from autograder.grading import preflight
    from autograder.grading.errors import GradingError
    from autograder.variants import course_secret
    from course.variants import StudentIdError, check_id_form

    if assignment not in ASSIGNMENTS:
        raise ListingError(f"ASSIGNMENT should be one of {', '.join(ASSIGNMENTS)}, not {assignment!r}")
    try:
        student = check_id_form(student, "--student")
    except StudentIdError as error:
        raise ListingError(str(error)) from None
    if not student:
        raise ListingError("--student should name a student id (an nbgrader id such as ada), not an empty string")
    try:
        root = preflight.check_course_root(course_dir)
    except GradingError as error:
        raise ListingError(str(error)) from None
    course_term, note = listing_course_term(root, assignment)
    notes = [note] if note else []
    enrolled = _enrolled(root)
    if enrolled is None:
        notes.append(f"no gradebook could be read in {root}: {student!r} was not checked against the class")
    elif student not in enrolled and not any_id:
        import difflib
        close = difflib.get_close_matches(student, enrolled, n=3, cutoff=0.6)
        raise ListingError(
            f"--student {student!r} is not in the gradebook of {root}"
            + (f" (did you mean {', '.join(map(repr, close))}?)" if close else f" ({len(enrolled)} students)")
            + "; pass --any-id to see the numbers of an id the gradebook does not have yet")
    try:
        secret = course_secret(root)
    except ValueError as error:
        raise ListingError(str(error)) from None
    described = describe(assignment, student, secret, course_term)
    if secret is None and any(not entry["answers"] for entry in described.values()):
        notes.append("the course has no variant secret yet (the first grading run makes it): the coding "
                     "exercises' hidden inputs are not shown")
    return Listing(assignment, student, described, tuple(notes), course_term)


def _shown(value) -> str:
    """A parameter or answer as one line: floats with every digit (they are keys), sets as {a, b}."""
    if isinstance(value, dict) and value.get("type") == "set" and isinstance(value.get("items"), list):
        return "{" + ", ".join(_shown(item) for item in value["items"]) + "}"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_shown(item)}" for key, item in value.items()) + "}"
    return json.dumps(value) if isinstance(value, str) else str(value)


#: What the listing's second kind of row is: the key for the student's numbers, never the student's work.
EXPECTED_NOTE = ("'expected' rows are the answer key for these numbers (what the grader accepts), "
                 "not the student's answers: their submission is in submitted/ and formgrader")


def text(made: Listing) -> str:
    """The readable table: per exercise, each parameter (the student's numbers), then each expected answer
    (the key for those numbers: computed from the reference, never read from the student's work)."""
    count = "1 exercise varies" if len(made.described) == 1 else f"{len(made.described)} exercises vary"
    lines = [f"The numbers of student {made.student!r} in {made.assignment} and the answers the grader expects "
             f"for them ({count}):", f"  {EXPECTED_NOTE}"]
    if made.course_term is not None:
        lines.append(f"  numbers drawn in course {made.course_term.course!r}, term {made.course_term.term!r}")
    if not made.described:
        lines.append("  (no exercise of this assignment varies)")
    for stem, entry in made.described.items():
        rows = [("parameter", name, value) for name, value in entry["parameters"].items()]
        rows += [("expected", name, value) for name, value in entry["answers"].items()]
        width = max((len(name) for _, name, _ in rows), default=0)
        lines.append("")
        lines.append(stem)
        if not rows:
            lines.append("  (hidden inputs drawn per student; nothing to show without the course secret)")
        for kind, name, value in rows:
            lines.append(f"  {kind:<9}  {name.ljust(width)}  {_shown(value)}")
    return "\n".join(lines)


def as_json(made: Listing) -> str:
    return json.dumps(made.described, indent=2, sort_keys=False, allow_nan=False)  # strict JSON (json_value)
