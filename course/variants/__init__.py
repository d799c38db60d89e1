"""Every student their own numbers: the parameters of an exercise, drawn from the student's id.

A concept exercise whose answer is a number, a set or a small table comes in a *family* of variants:
the same question and the same lesson with other numbers. Which variant a notebook holds follows from
the student's nbgrader id and the course's :class:`CourseTerm` (a hash of the scheme, the exercise, the id,
and the course id and term label that the released notebook's numbers cell states), so the student's
kernel, the grader and the instructor all compute the same parameters without asking anyone, and the
same id gets other numbers in another course or another term. The course text's
own numbers are **variant 0**: the documentation, self-study's first view and the instructor's source
notebooks show them.

This package holds parameters only, never answers: the keys are computed from the reference on the
instructor's side (``autograder.variants``), and a parameter is what the question states anyway.

Who the student is:

1. plain ``nbgrader autograde`` (in the kernel, without the course's sandboxed bridge) runs the kernel
   in the submission folder, ``submitted/<student>/<assignment>``: that folder's id, first;
2. the id typed into the notebook's ``STUDENT_ID = "..."`` cell (a laptop, Colab);
3. the hub's sign-in (``JUPYTERHUB_USER``), which is the id nbgrader's exchange submits under there;
   a typed id that differs from it stops the notebook;
4. the id a laptop student gave once for every notebook, :func:`remember_id` (a file in the user's
   configuration folder, :func:`id_file`), read only when none of the above says who the student is.

The course's grader starts each notebook with the submission folder's id as its hub sign-in, so a
graded notebook shows that student's numbers exactly as their hub does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import importlib
import json
import os
import pkgutil
import re
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping

from course._sentence import Sentence

#: Bumped when a family changes its draws: the same id then gets new numbers (and regrades follow).
SCHEME = "module6-variants-1"

#: The grade id of the notebook cell where a laptop or Colab student types their id.
STUDENT_ID_GRADE_ID = "student_id"

#: The text of that cell (source and release alike).
STUDENT_ID_CELL = (
    "# Working on a laptop or in Colab? Type your course (nbgrader) student id between the quotes,\n"
    "# exactly as the course spells it (capitals count): your numbers below follow from it.\n"
    "# Or give it once for every notebook on this computer: run the line below once, in any notebook.\n"
    "#     from course.variants import remember_id; remember_id(\"your id\")\n"
    "# On JupyterHub leave it \"\" (the hub knows who you are).\n"
    "STUDENT_ID = \"\"")

#: Where :func:`id_file` is, when set (tests; an image that keeps the file elsewhere).
ID_FILE_ENV = "MODULE6_STUDENT_ID_FILE"

#: The longest student id, in characters (inside nbgrader's 128-character column). The instructor's
#: table of bounds (``autograder.limits.STUDENT_ID_CHARS``) reads it from here: one value, both sides.
ID_MAX_CHARS = 100
#: What can be a student id: printable, no spaces, none of what nbgrader refuses in one ('*', '+') or
#: what cannot be a folder name ('/', '\\'); accents and apostrophes are fine (josé, o'brien).
_ID_FORM = re.compile(r"[^\s/\\*+]{1,%d}" % ID_MAX_CHARS)


class StudentIdError(Sentence, ValueError):
    """The notebook cannot tell whose numbers to show, or was told two different ids (IPython shows
    the sentence alone: :mod:`course._sentence`)."""

    label = "StudentIdError"


#: The longest course id or term label of a :class:`CourseTerm`, in characters: nbgrader's course id
#: column (``nbgrader.api.Course.id``, ``String(128)``). The instructor's table of bounds
#: (``autograder.limits.COURSE_TERM_CHARS``) reads it from here.
COURSE_TERM_MAX_CHARS = 128


@dataclasses.dataclass(frozen=True)
class CourseTerm:
    """The course and term whose numbers a notebook shows: they enter every draw (:func:`seed_bytes`).

    ``course`` is the nbgrader course id (``c.CourseDirectory.course_id``) and ``term`` a label the
    instructor chose (``c.Module6.term``, such as ``"2027-spring"``). Both reach the student's kernel
    through the released notebook's numbers cell, ``your_numbers(stem, STUDENT_ID, course=..., term=...)``:
    nothing secret, since parameters are not answers. Both empty (:attr:`empty`) is the context of
    variant 0, self-study and every release made before course and term entered the draws: those draw
    exactly the numbers they always did.

    Each value is text of at most :data:`COURSE_TERM_MAX_CHARS` printable characters, without
    surrounding spaces (nbgrader strips a course id's own): anything else is refused with a
    :class:`ValueError` naming the field.

    >>> CourseTerm().empty, CourseTerm("ml-101", "2027-spring").empty
    (True, False)
    >>> CourseTerm("ml-101", " 2027-spring")
    Traceback (most recent call last):
    ...
    ValueError: term = ' 2027-spring' starts or ends with a space: write the course term label without them
    """

    course: str = ""
    term: str = ""

    def __post_init__(self):
        for field in ("course", "term"):
            check_course_term_value(getattr(self, field), field)

    @property
    def empty(self) -> bool:
        """Whether neither a course nor a term enters the draws (the seed of every release before them)."""
        return not self.course and not self.term

    def as_dict(self) -> dict:
        return {"course": self.course, "term": self.term}


def check_course_term_value(value, field: str) -> str:
    """``value`` when it can be the ``field`` ("course" or "term") of a :class:`CourseTerm`, else a
    :class:`ValueError` saying what is expected."""
    what = "course id" if field == "course" else "course term label"
    if not isinstance(value, str):
        raise ValueError(f"{field} should be a string (the {what}, such as \"ml-101\" or \"2027-spring\"), "
                         f"not {type(value).__name__}")
    if len(value) > COURSE_TERM_MAX_CHARS:
        raise ValueError(f"{field} is {len(value):,} characters long: a {what} has at most "
                         f"{COURSE_TERM_MAX_CHARS} (nbgrader's course id column)")
    if not value.isprintable():
        raise ValueError(f"{field} = {value!r} is not a {what}: use printable characters only (no line breaks, "
                         "tabs or control characters)")
    if value != value.strip():
        raise ValueError(f"{field} = {value!r} starts or ends with a space: write the {what} without them")
    return value


def _course_term(course_term) -> "CourseTerm":
    if course_term is None:
        return CourseTerm()
    if not isinstance(course_term, CourseTerm):
        raise TypeError(f"course_term should be a CourseTerm (or None), not {type(course_term).__name__}")
    return course_term


# --------------------------------------------------------------------------- drawing parameters


class Draw:
    """A deterministic source of choices for one (exercise, student): the family's only randomness.

    Built on SHA-256 in counter mode rather than :mod:`random`, whose methods other than ``random()``
    have changed their algorithms between Python releases: the same id must get the same numbers on
    the student's Python 3.11 and the grader's 3.13.
    """

    def __init__(self, seed: bytes):
        self._seed = seed
        self._counter = 0

    def _next(self) -> int:
        self._counter += 1
        block = hashlib.sha256(self._seed + self._counter.to_bytes(8, "big")).digest()
        return int.from_bytes(block[:8], "big")

    def integer(self, low: int, high: int) -> int:
        """An integer in ``[low, high]`` (both included), uniformly (the bias of 2**64 % n is negligible)."""
        if high < low:
            raise ValueError(f"integer: high ({high}) is below low ({low})")
        return low + self._next() % (high - low + 1)

    def choice(self, options):
        """One of ``options`` (a sequence), uniformly."""
        options = list(options)
        if not options:
            raise ValueError("choice: no options")
        return options[self.integer(0, len(options) - 1)]

    def grid(self, low: float, high: float, step: float) -> float:
        """A value of ``low, low + step, ..., high``, rounded to the step's decimals (0.35, not
        0.35000000000000003), so that a question states it exactly as the code holds it."""
        count = round((high - low) / step)
        decimals = max(0, -int(f"{step:e}".split("e")[1]))
        return round(low + step * self.integer(0, count), decimals + 2)

    def shuffled(self, items) -> list:
        items = list(items)
        for i in range(len(items) - 1, 0, -1):  # Fisher-Yates on our own draws
            j = self.integer(0, i)
            items[i], items[j] = items[j], items[i]
        return items

    def distinct(self, draw: Callable[[], Any], count: int, *, tries: int = 1000) -> list:
        """``count`` different values of ``draw()`` in the order drawn."""
        seen: list = []
        for _ in range(tries):
            value = draw()
            if value not in seen:
                seen.append(value)
                if len(seen) == count:
                    return seen
        raise RuntimeError(f"distinct: fewer than {count} different values in {tries} draws")


@dataclasses.dataclass(frozen=True)
class Family:
    """The variants of one exercise.

    ``seed`` is variant 0 (the course text's numbers); ``draw(d)`` returns the parameters of a drawn variant
    (a dict with the same keys), and must keep the exercise's lesson (its tests check that on 500
    draws); ``rows(parameters)`` gives the ``(what, value)`` lines the notebook shows.
    """

    stem: str
    seed: Mapping
    draw: Callable[[Draw], dict]
    rows: Callable[[Mapping], list]


def family_data(stem: str) -> dict:
    """The numbers of family ``stem``, read from its data file ``course/variants/data/<stem>.json``
    (package data: the wheel ships it beside the modules): its ``seed`` (variant 0), the tables it draws
    from, and an ``about`` saying what they are. JSON arrays are read as tuples, the form every
    parameter takes (a question's numbers are compared with ``==``, and ``(0.5, 0.5) != [0.5, 0.5]``).

    A family's module holds only how to draw and show its numbers; the data files hold parameters
    only, never answers (the instructor's side computes those).
    """
    text = resources.files(__name__).joinpath("data").joinpath(f"{stem}.json").read_text(encoding="utf-8")
    return _tuples(json.loads(text))


def _tuples(value):
    if isinstance(value, list):
        return tuple(_tuples(item) for item in value)
    if isinstance(value, dict):
        return {key: _tuples(item) for key, item in value.items()}
    return value


def _family_modules() -> dict:
    """``stem -> module`` of every ``course/variants/family_NN_slug.py``."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("family_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            found[module.FAMILY.stem] = module.FAMILY
    return found


_FAMILIES: dict | None = None


def families() -> dict:
    """``stem -> Family`` of every exercise that varies."""
    global _FAMILIES
    if _FAMILIES is None:
        _FAMILIES = _family_modules()
    return _FAMILIES


def varies(stem: str) -> bool:
    """Whether exercise ``stem`` gives each student their own numbers."""
    return stem in families()


def seed_bytes(stem: str, student: str, course_term: CourseTerm | None = None) -> bytes:
    """What a student's draws for ``stem`` start from (public: parameters are not answers).

    For the empty :class:`CourseTerm` it is, as it always was, ``SHA-256(SCHEME NUL stem NUL student)``
    (UTF-8): every release made before course and term entered the draws, variant 0 and self-study keep
    their numbers bit for bit. Otherwise it is the SHA-256 of the JSON array
    ``[SCHEME, "course-term", stem, student, course, term]`` (UTF-8). JSON spells each string between its
    own quotes, with its own escapes, so two different contexts never give the same bytes (a course id
    ending like a term label cannot pass for one), and no JSON array (it starts with ``[``) equals the
    old form (it starts with ``SCHEME``). SHA-256 then makes the draws of two contexts independent.

    >>> seed_bytes("05_negative_kl", "ada") == seed_bytes("05_negative_kl", "ada", CourseTerm())
    True
    >>> len({seed_bytes("05_negative_kl", "ada", CourseTerm(c, t)) for c in ("a", "b") for t in ("", "x")})
    4
    """
    context = _course_term(course_term)
    if context.empty:
        return hashlib.sha256(f"{SCHEME}\0{stem}\0{student}".encode("utf-8")).digest()
    text = json.dumps([SCHEME, "course-term", stem, student, context.course, context.term], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def parameters(stem: str, student: str | None, course_term: CourseTerm | None = None) -> dict:
    """The parameters of ``stem`` for ``student`` in ``course_term`` (None: the empty context). Variant 0,
    the course text's, when ``student`` is None or empty (whatever the context), or when the exercise
    does not vary."""
    family = families().get(stem)
    if family is None:
        return {}
    context = _course_term(course_term)
    if not student:
        return dict(family.seed)
    d = Draw(seed_bytes(stem, student, context))
    for _ in range(100):
        # Never the example numbers: their answers are the course notes' worked solution, and the
        # notebook tells a student with an id that their numbers differ.
        drawn = dict(family.draw(d))
        if drawn != dict(family.seed):
            return drawn
    raise RuntimeError(f"the family of {stem} drew its example numbers 100 times")


# --------------------------------------------------------------------------- who the student is


@dataclasses.dataclass(frozen=True)
class Identity:
    """Whose numbers a notebook shows, and how it knows."""

    student: str | None
    #: "nbgrader" (plain nbgrader's submission folder), "typed" (the notebook's cell), "hub"
    #: (JUPYTERHUB_USER), "remembered" (:func:`remember_id`) or "none" (variant 0).
    source: str

    @property
    def how(self) -> str:
        if self.source == "remembered":
            return f"the id remembered for every notebook on this computer, in {_shown_path(id_file())}"
        return {"nbgrader": "the submission folder nbgrader grades",
                "typed": "the id typed in this notebook",
                "hub": "your JupyterHub sign-in", "none": "no student id"}[self.source]


#: Whether a notebook with no id shows the example numbers instead of stopping (see :func:`example_numbers`).
_examples = False


def example_numbers(on: bool = True) -> None:
    """Let a notebook that knows no student show variant 0 without stopping: for self-study's first
    view, documentation and tests, never in a notebook that is handed in."""
    global _examples
    _examples = bool(on)


#: The steps of nbgrader's course directory a submission is graded from (``{nbgrader_step}``).
_GRADING_STEPS = ("submitted", "autograded")


def _nbgrader_submission_folder(cwd: str | None = None) -> str | None:
    """The student id when this kernel runs in a submission folder, as plain ``nbgrader autograde``
    runs one (in-kernel, without the course's sandboxed bridge): nbgrader==0.9.6 finds submissions as
    ``{nbgrader_step}/{student_id}/{assignment_id}`` (``BaseConverter.init_single_notebook_resources``)
    and nbconvert starts the kernel in the notebook's folder. None anywhere else."""
    try:
        parts = os.path.normpath(cwd or os.getcwd()).split(os.sep)
    except OSError:
        return None
    if len(parts) >= 3 and parts[-3] in _GRADING_STEPS and _ID_FORM.fullmatch(parts[-2] or ""):
        return parts[-2]
    return None


def check_id_form(student: str, what: str = "STUDENT_ID") -> str:
    """``student`` stripped, or :class:`StudentIdError` saying what an id looks like."""
    if not isinstance(student, str):
        raise StudentIdError(f"{what} should be a string in quotes, such as \"ada\", not {type(student).__name__}")
    text = student.strip()
    if text and not (_ID_FORM.fullmatch(text) and text.isprintable() and text not in (".", "..")):
        raise StudentIdError(
            f"{what} = {student!r} is not a student id: use the id your course gave you, exactly as it "
            "appears in nbgrader (no spaces, no / \\ * or +)")
    return text


# --------------------------------------------------------------------------- the id given once (a laptop)


def id_file(environ: Mapping | None = None) -> Path:
    """The file :func:`remember_id` writes: ``$XDG_CONFIG_HOME/module6/student_id`` (by default
    ``~/.config/module6/student_id``), or ``$MODULE6_STUDENT_ID_FILE`` when set.

    In the user's configuration folder rather than beside the notebooks: a laptop student keeps
    notebooks wherever they like (two assignments, a downloads folder), and one file serves them all.
    On a hub the sign-in says who the student is and the file is never read; the grader signs each
    notebook in as the graded student, so nothing a student writes there changes whose numbers are
    graded. (Colab gives every notebook a fresh machine, whose home does not last: type the id there.)
    """
    environ = os.environ if environ is None else environ
    override = (environ.get(ID_FILE_ENV) or "").strip()
    if override:
        return Path(override).expanduser()
    base = (environ.get("XDG_CONFIG_HOME") or "").strip() or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "module6" / "student_id"


def _shown_path(path: Path) -> str:
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home):] if home not in ("", "/") and text.startswith(home + os.sep) else text


def remembered_id(environ: Mapping | None = None) -> str | None:
    """The id :func:`remember_id` wrote, or None when there is none (no file, an empty or unreadable one).

    Raises :class:`StudentIdError` when the file holds something that is not an id.
    """
    path = id_file(environ)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(1024)
    except OSError:
        return None
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    return check_id_form(text, f"the id remembered in {_shown_path(path)}")


def remember_id(student: str) -> Path:
    """Give your course (nbgrader) student id once for every notebook on this computer.

    Each notebook whose numbers vary then shows the numbers of ``student`` (its own ``STUDENT_ID`` cell
    still wins when you type an id there). Writes :func:`id_file` and returns its path; run
    :func:`forget_id` to remove it.
    """
    text = check_id_form(student, "remember_id's student id")
    if not text:
        raise StudentIdError("remember_id needs your course (nbgrader) student id between the quotes, such "
                             "as remember_id(\"ada\")")
    path = id_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text + "\n", encoding="utf-8")
    os.replace(partial, path)
    print(f"Every notebook of this course on this computer now shows the numbers of {text!r} (unless its "
          f"STUDENT_ID cell says otherwise); saved in {_shown_path(path)}. Run each notebook again from the top.")
    return path


def forget_id() -> None:
    """Remove the id :func:`remember_id` saved (nothing when there is none)."""
    try:
        id_file().unlink()
    except FileNotFoundError:
        pass


def identify(typed: str = "", environ: Mapping | None = None) -> Identity:
    """Whose numbers to show, from the grader's statement, the typed id, the hub and the remembered id
    (in that order).

    Raises :class:`StudentIdError` when the typed id is not an id, or differs from the hub's sign-in
    (nbgrader would submit the work under the sign-in, and grade it with that student's numbers).
    """
    folder = _nbgrader_submission_folder()
    if folder is not None:
        return Identity(folder, "nbgrader")
    environ = os.environ if environ is None else environ
    typed = check_id_form(typed)
    hub = (environ.get("JUPYTERHUB_USER") or "").strip()
    if typed and hub and typed != hub:
        raise StudentIdError(
            f"You typed STUDENT_ID = {typed!r}, but you are signed in to JupyterHub as {hub!r}, and nbgrader "
            f"submits your work as {hub!r} and grades it with the numbers of {hub!r}. Clear STUDENT_ID (leave it \"\") "
            "or type your own id, then run this notebook again from the top.")
    if typed:
        return Identity(typed, "typed")
    if hub:
        return Identity(hub, "hub")
    remembered = remembered_id(environ)
    if remembered:
        return Identity(remembered, "remembered")
    return Identity(None, "none")


# --------------------------------------------------------------------------- what the notebook shows


class Numbers(dict):
    """A student's parameters of one exercise (a plain dict of them) that shows itself as a table."""

    def __init__(self, stem: str, identity: Identity, values: Mapping, rows: list,
                 course_term: CourseTerm | None = None):
        super().__init__(values)
        self.stem = stem
        self.identity = identity
        self.rows = list(rows)
        #: The course and term the numbers were drawn in (what the released numbers cell stated), so that a
        #: check run in this kernel judges with the same numbers (``autograder.checks.run_check``).
        self.course_term = _course_term(course_term)

    @property
    def heading(self) -> str:
        who = self.identity.student
        if who is None:
            return "Example numbers (variant 0): no student id is known"
        return f"Numbers of student {who!r} (from {self.identity.how})"

    def __repr__(self) -> str:
        width = max((len(what) for what, _ in self.rows), default=0)
        lines = [self.heading + ":"] + [f"  {what.ljust(width)}  {value}" for what, value in self.rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><td style='text-align:left'>{html.escape(what)}</td>"
                       f"<td style='text-align:left'><code>{html.escape(str(value))}</code></td></tr>"
                       for what, value in self.rows)
        return (f"<div class='module6-numbers'><strong>{html.escape(self.heading)}</strong>"
                f"<table>{body}</table></div>")


NO_ID = ("No student id is known, so this notebook stops here: the table above shows the example numbers, "
         "not yours, and your work is graded with the numbers of your id. Type your course (nbgrader) "
         "student id between the quotes of STUDENT_ID = \"\" in the cell just above this one and run both "
         "cells (or, once for every notebook on this computer, run "
         "from course.variants import remember_id; remember_id(\"your id\")).")


def your_numbers(stem: str, typed: str = "", *, course: str = "", term: str = "",
                 require_id: bool = True) -> Numbers:
    """The cell at the top of a notebook that varies: whose numbers, and the numbers.

    ``course`` and ``term`` are the :class:`CourseTerm` the release wrote into this cell (the course's
    nbgrader id and the instructor's term label): the same id gets other numbers in another course or
    term. A source notebook, and a release made before they entered the draws, states neither.

    With no id at all (no typed id, no hub, no submission folder) the example numbers are printed and
    :class:`StudentIdError` stops the notebook (``require_id``), so that nobody answers someone else's
    question without knowing it; Validate shows that message before anything is submitted.
    """
    family = families().get(stem)
    if family is None:
        raise KeyError(f"exercise {stem!r} has no variants; known: {sorted(families())}")
    context = CourseTerm(course, term)
    identity = identify(typed)
    values = parameters(stem, identity.student, context)
    numbers = Numbers(stem, identity, values, family.rows(values), context)
    if identity.student is None and require_id and not _examples:
        print(repr(numbers))
        raise StudentIdError(NO_ID)
    return numbers


__all__ = ["COURSE_TERM_MAX_CHARS", "CourseTerm", "check_course_term_value", "ID_FILE_ENV", "ID_MAX_CHARS", "NO_ID", "STUDENT_ID_CELL", "STUDENT_ID_GRADE_ID", "Draw", "Family", "Identity", "Numbers",
           "SCHEME", "StudentIdError", "check_id_form", "example_numbers", "families", "family_data", "forget_id", "id_file",
           "identify", "parameters", "remember_id", "remembered_id", "seed_bytes", "varies", "your_numbers"]
