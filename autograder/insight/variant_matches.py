"""Answers that fit another student's numbers: the class report's evidence of copied concept answers.

Every student has their own numbers in the exercises that vary (``course.variants``), and the grader
stores, on each test cell of an autograded notebook, the values its cases read (``verdicts["answers"]``,
see ``autograder.grading.worker.read_values``). An answer that is wrong for the student's own numbers
but right for a classmate's is far stronger evidence than similar text: it is that classmate's answer.

How a student's stored answers are tested, per exercise:

1. **Candidates, near-linear.** Every class member's key answers (``autograder.exercises.answers_for``)
   are indexed by variable and *rounded value* (:func:`fingerprint`): a number by its sign and the
   bucket of ``log|x|`` of width :data:`BUCKET` (0.1 % relative, a hundred times the checks'
   tolerance), looked up in its own and both neighbouring buckets, so no value within tolerance is
   missed. Only the values that are *wrong with the student's own numbers* are looked up (a right
   one is no evidence), so an honest class costs one judgement per notebook; the classmates (and
   variant 0) a wrong value hits are the candidates. A bucket
   that more than :func:`common_limit` class members share (a True/False that half the class has) is
   no evidence of *whose* numbers were used and names no candidate. So each student costs a few
   look-ups and a few re-judgements, not one per classmate: 1,000 students stay near-linear.
2. **Re-judged, never guessed.** The stored values are judged again by the exercise's own check with
   the candidate's variant (``autograder.checks.judge(stem, outcomes, variant=variant_for(stem,
   other))``) and with the student's own. The values that pass with the other's numbers and fail
   with one's own *fit* the other's numbers.
3. **Listed.** A student and a source (a classmate, or variant 0: the example numbers that the course's
   documents publish) are listed when at least :data:`MIN_FITTING` values, over all exercises, fit the
   source's numbers. One value alone can land on a classmate's answer by a slip (in a class of
   1,000, a wrong number matches somebody's key within 10^-5 about one time in a hundred); two
   values of the same classmate by chance almost never do.

What it cannot tell: a mistyped number that lands on another variant (the numbers come from small
grids) gives answers that fit that classmate's numbers throughout one exercise; copying usually shows
in several. The finding records how many exercises and values fit, and whether the notebook's own
``STUDENT_ID`` cell named the source (a slip of the id, or the friend's id typed on purpose): the
instructor reads the notebooks and talks to the students. The source of a finding is also never
accused of anything: their answers fit their own numbers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

#: Width of a value bucket, in natural-log units of ``|x|`` (0.1 % relative: a hundred times the
#: concept checks' tolerance, ``NUMBER_RTOL`` = 1e-5, and narrow enough that a bucket holds few keys).
BUCKET = 0.001
#: Values at most this far from zero share the zero bucket (the checks' absolute tolerance is 1e-9).
ZERO = 1e-6
#: Values (over all exercises) that must fit one source's numbers for the pair to be listed.
MIN_FITTING = 2


def common_limit(class_size: int) -> int:
    """A key value shared by more class members than this names no candidate: 10, or 2 % of the class."""
    return max(10, math.ceil(0.02 * class_size))


@dataclasses.dataclass(frozen=True)
class ExerciseFit:
    """One exercise of a finding: which of the student's values fit the source's numbers."""

    stem: str
    #: Names of the cases whose values pass with the source's numbers and fail with the student's own.
    fitting: tuple
    cases: int  # cases of the exercise that read a stored value
    own_points: float  # what the stored values score with the student's own numbers
    source_points: float  # ... and with the source's
    available: float


@dataclasses.dataclass(frozen=True)
class VariantMatch:
    """A student whose answers fit another variant than their own.

    ``source`` is the classmate whose numbers they fit, or None for variant 0 (the example numbers);
    ``typed`` says the student's own notebook typed ``source`` as its ``STUDENT_ID``; ``enrolled``
    whether ``source`` is a member of the class (an id typed in a notebook may be nobody's).
    """

    student: str
    source: str | None
    exercises: tuple  # ExerciseFit, in exercise order
    typed: bool = False
    enrolled: bool = True
    #: Other classmates whose numbers give exactly the same fits (in 09, for instance, the same three
    #: probabilities in another order give the same answers): the answers cannot tell them apart.
    also: tuple = ()

    @property
    def values(self) -> int:
        """How many values fit the source's numbers, over every exercise."""
        return sum(len(fit.fitting) for fit in self.exercises)

    @property
    def stems(self) -> tuple:
        return tuple(fit.stem for fit in self.exercises)


# ----------------------------------------------------------------------------- reading what was stored

def stored_answers(data: Mapping) -> dict:
    """``variable -> channel-encoded value`` of the values an autograded notebook's test cells read
    (``verdicts["answers"]``), the first cell's value winning, as the grader reads a name once."""
    from autograder.results import verdicts_of

    found: dict = {}
    for cell in data.get("cells") or ():
        if not isinstance(cell, dict):
            continue
        record = verdicts_of(cell)
        answers = record.get("answers") if record else None
        if isinstance(answers, dict):
            for name, node in answers.items():
                if isinstance(name, str) and isinstance(node, dict):
                    found.setdefault(name, node)
    return found


def typed_in(data: Mapping) -> str | None:
    """The id the submitted notebook's ``STUDENT_ID`` cell typed (kept in the autograded notebook)."""
    from autograder.variants import typed_id
    from course.variants import STUDENT_ID_GRADE_ID

    for cell in data.get("cells") or ():
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            source = cell.get("source")
            text = source if isinstance(source, str) else "".join(s for s in source or () if isinstance(s, str))
            return typed_id(text)  # over autograder.limits.ID_CELL_CHARS: not read (None), never parsed
    return None


@dataclasses.dataclass(frozen=True)
class Stored:
    """What one autograded notebook holds for this analysis."""

    answers: dict  # variable -> channel-encoded value
    typed: str | None = None


def of_notebook(data: Mapping) -> Stored:
    return Stored(stored_answers(data), typed_in(data))


# ----------------------------------------------------------------------------- the index

def _numbers_in(value: Any) -> list:
    """Every finite number in ``value`` (nested lists, tuples, sets, dicts, arrays, decoded sets)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)] if math.isfinite(value) else []
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _numbers_in(value.tolist())
    if isinstance(value, Mapping):
        return [n for key in sorted(value, key=str) for n in _numbers_in(value[key])]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [n for item in value for n in _numbers_in(item)]
    return []


def _words_in(value: Any) -> list:
    """Every text or truth value in ``value``, compared as the checks compare choices (case, spaces,
    ``_`` and ``-`` ignored)."""
    if isinstance(value, str):
        return ["".join(ch for ch in value.lower() if ch not in " \t\n_-")]
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, Mapping):
        return [w for key in sorted(value, key=str) for w in _words_in(value[key])]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [w for item in value for w in _words_in(item)]
    return []


def _bucket(number: float) -> tuple:
    if abs(number) <= ZERO:
        return ("n", 0, 0)
    return ("n", 1 if number > 0 else -1, math.floor(math.log(abs(number)) / BUCKET))


def fingerprint(value: Any) -> tuple | None:
    """The index entry of a key value: its smallest number's bucket (a table matches within tolerance
    only if its smallest entries do), else its sorted words; None when it holds neither."""
    numbers = _numbers_in(value)
    if numbers:
        return _bucket(min(numbers))
    words = _words_in(value)
    return ("w", tuple(sorted(words))) if words else None


def lookups(value: Any) -> list:
    """The index entries a stored value may match: its bucket and both neighbours (and zero's)."""
    numbers = _numbers_in(value)
    if numbers:
        low = min(numbers)
        kind, sign, bucket = _bucket(low)
        found = [("n", 0, 0)] if abs(low) <= 2 * ZERO else []
        if sign:
            found += [("n", sign, bucket + step) for step in (-1, 0, 1)]
        return found
    entry = fingerprint(value)
    return [entry] if entry is not None else []


# ----------------------------------------------------------------------------- judging

def _outcomes(cases, values: Mapping) -> dict:
    """``case name -> outcomes`` of the cases whose every call reads a stored value."""
    from autograder.channel import Returned

    out = {}
    for case in cases:
        calls = case.calls
        if calls and all(call.read_only and call.target in values for call in calls):
            out[case.name] = tuple(Returned(values[call.target]) for call in calls)
    return out


@dataclasses.dataclass(frozen=True)
class _Judged:
    passed: frozenset
    failed_targets: frozenset  # the variables read by cases that ran and failed
    cases: int
    points: float
    available: float


def _judge(stem: str, values: Mapping, variant) -> _Judged:
    from autograder import checks

    cases = checks.plan(stem, None, variant=variant)
    outcomes = _outcomes(cases, values)
    result = checks.judge(stem, outcomes, variant=variant)
    passed = frozenset(case.name for case in result.cases if case.passed and case.name in outcomes)
    failed = {case.name for case in result.cases if not case.passed and case.name in outcomes}
    targets = frozenset(call.target for case in cases if case.name in failed for call in case.calls)
    return _Judged(passed, targets, len(outcomes), float(result.points_earned), float(result.points_available))


def _decoded(stored: Mapping) -> dict:
    from autograder.channel import decode_value

    values = {}
    for name, node in stored.items():
        try:
            values[name] = decode_value(node)
        except Exception:  # noqa: BLE001 - a value that cannot be read back is no evidence
            continue
    return values


def find_matches(stored: Mapping, class_ids: Iterable[str], stems: Iterable[str], course_term=None) -> tuple:
    """The :class:`VariantMatch` findings of a class, strongest first.

    ``stored``: ``(student, stem) -> Stored`` (the graded notebooks' values); ``class_ids``: every
    class member (whose numbers a student could have used, submitted or not); ``stems``: the exercises
    with numbers, in exercise order; ``course_term``: the course and term the release drew every
    member's numbers in (:func:`autograder.course_settings.released_course_term`; None: the empty context).
    """
    from autograder.exercises import answers_for
    from autograder.variants import variant_for
    from course import variants as registry

    members = sorted(set(class_ids) | {student for student, _ in stored})
    enrolled = set(members)
    limit = common_limit(len(members))
    fits: dict = defaultdict(list)  # (student, source) -> [ExerciseFit]
    typed_sources: set = set()
    order = [stem for stem in stems if registry.varies(stem)]
    for stem in order:
        submitted = {student: item for (student, s), item in stored.items() if s == stem and item.answers}
        if not submitted:
            continue
        parameters = {student: registry.parameters(stem, student, course_term) for student in members}
        index: dict = defaultdict(list)
        for student in [None, *members]:  # None: variant 0, the example numbers
            for name, value in answers_for(stem, student, course_term).items():
                entry = fingerprint(value)
                if entry is not None:
                    index[(name, entry)].append(student)
        seed = json.dumps(registry.families()[stem].seed, sort_keys=True, default=list)
        for student, item in sorted(submitted.items()):
            values = _decoded(item.answers)
            if not values:
                continue
            own = _judge(stem, values, variant_for(stem, student, course_term=course_term))
            hits: Counter = Counter()
            for name, value in values.items():
                if name not in own.failed_targets:
                    continue  # right with the student's own numbers (or not judged): no evidence
                for entry in lookups(value):
                    holders = index.get((name, entry), ())
                    if len(holders) <= limit:
                        hits.update(other for other in holders if other != student)
            sources: dict = defaultdict(list)  # the variant's parameters -> the ids that have them
            own_key = json.dumps(parameters[student], sort_keys=True, default=list)
            for other in hits:
                key = seed if other is None else json.dumps(parameters[other], sort_keys=True, default=list)
                if key != own_key:
                    sources[key].append(other)
            if item.typed and item.typed != student and item.typed not in hits:
                typed_parameters = registry.parameters(stem, item.typed, course_term)
                key = json.dumps(typed_parameters, sort_keys=True, default=list)
                if key != own_key:
                    sources[key].append(item.typed)
            for key, ids in sources.items():
                judged = _judge(stem, values, variant_for(stem, ids[0], course_term=course_term))
                fitting = judged.passed - own.passed
                if not fitting:
                    continue
                names = tuple(name for name in _case_order(stem, ids[0], course_term) if name in fitting)
                fit = ExerciseFit(stem, names, judged.cases, own.points, judged.points, judged.available)
                for other in ids:
                    fits[(student, other)].append(fit)
                    if other is not None and other == item.typed:
                        typed_sources.add((student, other))
    # Sources whose numbers give a student exactly the same fits are one finding (the answers cannot
    # tell them apart): the id the notebook typed first, then the example numbers (published: the
    # likelier source), then a classmate, then in id order.
    same: dict = defaultdict(list)
    for (student, source), exercises in fits.items():
        same[(student, tuple(exercises))].append(source)
    found = []
    for (student, exercises), sources in same.items():
        sources.sort(key=lambda s: ((student, s) not in typed_sources, s is not None, s not in enrolled, s or ""))
        source = sources[0]
        match = VariantMatch(student, source, exercises, typed=(student, source) in typed_sources,
                             enrolled=source is None or source in enrolled, also=tuple(sources[1:]))
        if match.values >= MIN_FITTING:
            found.append(match)
    found.sort(key=lambda m: (-len(m.exercises), -m.values, m.student, m.source is not None, m.source or ""))
    return tuple(found)


def _case_order(stem: str, student: str | None, course_term=None) -> list:
    from autograder import checks
    from autograder.variants import variant_for

    return [case.name for case in checks.plan(stem, None, variant=variant_for(stem, student, course_term=course_term))]


def class_members(course_dir) -> list:
    """The gradebook's student ids (every class member, whether they submitted or not); [] when the
    gradebook cannot be read."""
    from autograder.grading.gradebook import course_directory
    from nbgrader.api import Gradebook

    try:
        coursedir = course_directory(course_dir)
        with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
            return sorted(student.id for student in gb.students)
    except Exception:  # noqa: BLE001 - without the gradebook, the students of the rows are the class
        return []


__all__ = ["BUCKET", "ExerciseFit", "MIN_FITTING", "Stored", "VariantMatch", "class_members", "common_limit",
           "find_matches", "fingerprint", "lookups", "of_notebook", "stored_answers", "typed_in"]
