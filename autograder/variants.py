"""Each student's variant of each exercise, on the instructor's side: parameters, keys, hidden inputs.

Two kinds of variation, one :class:`Variant` per (exercise, student):

* **Numbers** (concept exercises with a family in :mod:`course.variants`): the parameters follow from
  the student's id and the course's :class:`course.variants.CourseTerm` (the course id and term label
  the release wrote into the notebook: ``autograder.course_settings``), so the student's notebook shows them; the answers are computed here, by the
  exercise's ``key.answers(parameters)`` from the reference, and never leave the instructor's side.
* **Hidden inputs** (coding exercises): their random hidden cases are drawn from a seed that mixes the
  course secret (:func:`course_secret`, a file of the course directory that never leaves it) with the
  exercise and the student, so that hidden inputs copied out of one student's run tell nobody else
  anything. Without a secret (the self-study and a check run in one's own kernel) every student gets
  the checks' own seeds.

Variant 0 (``student=None``) is the seed's numbers and the checks' own seeds: documentation,
self-study, the source notebooks and every test that does not name a student.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any, Mapping

from autograder.limits import ID_CELL_CHARS
from course import variants as family_registry

#: The course directory's file that holds the secret (mode 0600, created on first grading, never in git).
SECRET_FILE = ".module6_variant_secret"
#: An environment variable that supplies the secret instead (a grading host that mounts it).
SECRET_ENV = "MODULE6_VARIANT_SECRET"


@dataclasses.dataclass(frozen=True)
class Variant:
    """What varies in one exercise for one student.

    ``parameters``: the family's numbers (empty when the exercise has no family); ``hidden``: an integer
    derived from the course secret, or None (the checks' own seeds); ``course_term``: the course and term
    the numbers were drawn in.
    """

    stem: str
    student: str | None = None
    parameters: Mapping = dataclasses.field(default_factory=dict)
    hidden: int | None = None
    course_term: family_registry.CourseTerm = family_registry.CourseTerm()

    @property
    def key(self) -> tuple:
        """What the cases depend on (hashable: the cache key of a check's cases)."""
        return (json.dumps(_plain(self.parameters), sort_keys=True), self.hidden)

    def seed(self, default: int) -> int:
        """The seed of a check's random hidden cases: ``default`` (the check's own) without a secret,
        else one mixed from the secret-derived number and ``default`` (two generators of one check
        stay different)."""
        if self.hidden is None:
            return default
        return int.from_bytes(hashlib.sha256(f"{self.hidden}:{default}".encode()).digest()[:8], "big")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    return value


def hidden_number(secret: bytes, stem: str, student: str) -> int:
    """The secret-derived number of ``student``'s hidden inputs for ``stem``."""
    mac = hmac.new(secret, f"{family_registry.SCHEME}\0hidden\0{stem}\0{student}".encode(), hashlib.sha256)
    return int.from_bytes(mac.digest()[:8], "big")


def variant_for(stem: str, student: str | None = None, secret: bytes | None = None,
                course_term: family_registry.CourseTerm | None = None) -> Variant:
    """``student``'s variant of ``stem`` (variant 0 for ``student=None``); ``secret`` draws the hidden
    inputs (None: the checks' own seeds); ``course_term`` is the course and term the numbers are drawn in
    (None: the empty context, the numbers of every release before course and term entered the draws).
    The grader passes the context of what was released (``autograder.course_settings.released_course_term``),
    never the configured one. The hidden inputs do not depend on it: the secret is the course directory's own."""
    if student is not None and not isinstance(student, str):
        raise TypeError(f"student should be a string id or None, not {type(student).__name__}")
    context = family_registry.CourseTerm() if course_term is None else course_term
    parameters = family_registry.parameters(stem, student, context)
    hidden = hidden_number(secret, stem, student) if (secret and student) else None
    return Variant(stem, student or None, parameters, hidden, context)


def numbers_lines(stem: str, student: str | None, course_term: family_registry.CourseTerm | None = None) -> list:
    """The ``(what, value)`` lines of ``student``'s numbers of ``stem`` in ``course_term`` (as their notebook shows them)."""
    family = family_registry.families().get(stem)
    if family is None:
        return []
    return list(family.rows(family_registry.parameters(stem, student, course_term)))


# A submitted ``STUDENT_ID`` cell is read for the id up to ``ID_CELL_CHARS`` characters. The released cell
# has 253 (three comment lines and ``STUDENT_ID = ""``), an id at most 100. A longer cell is never parsed on the
# trusted side, and the grader runs the released cell in its place (see the worker). Parsing is what
# costs: ``ast.parse`` builds a Python object per node (a 4 MB list took 10 s and 1.4 GB of the grading
# process), and nesting 1,000 levels deep (``a+a+...``, 6 KB) raises ``RecursionError`` while the tree is
# built (caught: such a cell reads as no id).


def id_cell_readable(source) -> bool:
    """Whether a submitted ``STUDENT_ID`` cell is small enough to be read for an id (:data:`~autograder.limits.ID_CELL_CHARS`)."""
    return isinstance(source, str) and len(source) <= ID_CELL_CHARS.value


def _cell_statements(source: str) -> list | None:
    """The top-level statements of a submitted cell, parsed (never run); None when it does not parse or is
    over :data:`~autograder.limits.ID_CELL_CHARS` (never parsed: bounded before parsing)."""
    import ast
    if not id_cell_readable(source or ""):
        return None
    try:
        return ast.parse(source or "").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # RecursionError and MemoryError: the parser's own limits on nesting (not the machine's memory).
        return None


def _binds_an_id(node) -> bool:
    """Whether a statement is ``STUDENT_ID = "<a string>"``."""
    import ast
    return (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "STUDENT_ID" and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def typed_id(source: str) -> str | None:
    """The id a submitted ``student_id`` cell typed (``STUDENT_ID = "..."``, the last such line), read
    without running it; None when the cell does not say (left "", changed beyond reading, not a string,
    longer than :data:`~autograder.limits.ID_CELL_CHARS`: then it is not read at all).

    >>> typed_id('STUDENT_ID = "ann"'), typed_id('STUDENT_ID = "ann"\\nx = ' + 'a+' * 3000 + 'a')
    ('ann', None)
    """
    found = None
    for node in _cell_statements(source) or ():
        if _binds_an_id(node):
            found = node.value.value.strip()[:100]
    return found or None


def only_an_id(source: str) -> bool:
    """Whether a submitted ``student_id`` cell does nothing but bind ``STUDENT_ID`` to a string (and
    comment): then the grader may run the released cell in its place (see the worker). False for a cell
    over :data:`~autograder.limits.ID_CELL_CHARS` (never parsed here: see :func:`id_cell_readable`)."""
    statements = _cell_statements(source)
    return statements is not None and all(_binds_an_id(node) for node in statements)


def course_secret(root: str | Path | None, *, create: bool = False) -> bytes | None:
    """The course secret: ``$MODULE6_VARIANT_SECRET`` (hex), else the course directory's
    :data:`SECRET_FILE`; with ``create``, a new random one is written there (mode 0600) when neither
    exists. None when there is none and ``create`` is false."""
    text = os.environ.get(SECRET_ENV, "").strip()
    if text:
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError(f"${SECRET_ENV} should be hexadecimal (for example `python -c \"import secrets; "
                             "print(secrets.token_hex(32))\"`), not what it holds") from None
    if root is None:
        return None
    path = Path(root) / SECRET_FILE
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link: the course secret must be a plain file")
    if path.is_file():
        value = path.read_text(encoding="ascii").strip()
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise ValueError(f"{path} should hold the course secret as hexadecimal; delete it to have a new "
                             "one made (every student's hidden inputs then change, and regrades follow)") from None
    if not create:
        return None
    value = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(value + "\n")
    return bytes.fromhex(value)


__all__ = ["SECRET_ENV", "SECRET_FILE", "Variant", "course_secret", "hidden_number", "id_cell_readable",
           "numbers_lines", "only_an_id", "typed_id", "variant_for"]
