"""What every family's test checks (tests/test_variants_exNN_*.py): 500 students' parameters are
well formed and deterministic, each student's own key earns full marks, and one student's answers
in another's variant lose points in every group whose answers differ."""

from __future__ import annotations

import json
import math

from autograder.checks import CHECKS, run_check
from autograder.checks._concept_answers import number_matches
from autograder.exercises import answers_for
from autograder.variants import variant_for
from course.variants import families, parameters

#: The students of the 500 draws.
STUDENTS = tuple(f"s{i}" for i in range(500))


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def drawn(stem: str, students=STUDENTS) -> list:
    """``(student, parameters)`` of ``students``, checked to be deterministic, to have the seed's keys
    and to survive JSON unchanged (numbers, strings, lists: what the notebook and the CLI show)."""
    seed = families()[stem].seed
    out = []
    for student in students:
        values = parameters(stem, student)
        assert values == parameters(stem, student), student
        assert set(values) == set(seed), (student, sorted(values))
        assert json.loads(json.dumps(_plain(values))) == _plain(values), (student, values)
        out.append((student, values))
    return out


def same_answer(a, b) -> bool:
    """Whether two key answers are the same answer (numbers within the checks' tolerance)."""
    if isinstance(a, bool) or isinstance(b, bool) or not all(isinstance(v, (int, float)) for v in (a, b)):
        return a == b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return number_matches(a, b)


def assert_full_marks(stem: str, students=STUDENTS) -> None:
    """Each student's own answers, from the reference, earn every point in their own variant."""
    total = CHECKS[stem].points
    for student in students:
        result = run_check(stem, dict(answers_for(stem, student)), variant=variant_for(stem, student))
        assert result.points_earned == total, (student, result.feedback())


def assert_swapped_answers_lose(stem: str, groups: dict, pairs) -> int:
    """For each ``(a, b)``: a's answers graded in b's variant lose points in every group (``groups``:
    group name -> the answer names it reads) where some answer of a differs from b's. Returns how many
    pairs differed at all (so a test can require that most do)."""
    differing = 0
    for a, b in pairs:
        mine, theirs = answers_for(stem, a), answers_for(stem, b)
        result = run_check(stem, dict(mine), variant=variant_for(stem, b))
        by_group = {group.name: group for group in result.groups}
        any_differs = False
        for group, names in groups.items():
            if any(not same_answer(mine[name], theirs[name]) for name in names):
                any_differs = True
                assert by_group[group].points_earned < by_group[group].points_available, (stem, a, b, group)
        differing += any_differs
    return differing


def numbers_of(stem: str, student: str, params: dict):
    """The ``numbers`` a notebook of ``stem`` shows ``student`` (as the numbers cell makes it)."""
    from course.variants import Identity, Numbers
    return Numbers(stem, Identity(student, "typed"), params, families()[stem].rows(params))


def open_check_sources(notebook) -> list:
    """The open-check cells (``check-...``) of a source notebook."""
    return [c.source for c in notebook.cells if c.cell_type == "code" and c.id.startswith("check-")]


def assert_published_answers_lose_every_group(stem: str, published: dict, students) -> None:
    """The example's (variant 0's) answers, which the course notes publish, lose points in every group
    of each of ``students``' variants."""
    for student in students:
        result = run_check(stem, dict(published), variant=variant_for(stem, student))
        assert all(g.points_earned < g.points_available for g in result.groups), (student, result.feedback())


def assert_slips_named(stem: str, slips, draws) -> None:
    """Each ``(value, Misconception)`` of ``slips(parameters)[name]``, put in place of the right answer
    ``name`` of a drawn student, is named by its key."""
    for student, values in draws:
        variant = variant_for(stem, student)
        right = dict(answers_for(stem, student))
        for name, wrong in slips(values).items():
            for value, mistake in wrong:
                result = run_check(stem, dict(right, **{name: value}), variant=variant)
                assert mistake.key in result.misconceptions, (student, name, value, mistake.key)


# --------------------------------------------------------------------------- how much the keys vary

#: A class of 1,000 ids (docs/DESIGN.md, "The families": the minimum below is stated for it).
CLASS = tuple(f"s{i}" for i in range(1000))
#: Every family gives at least this many distinct keys to the 1,000 ids of CLASS.
MIN_DISTINCT_KEYS = 900


def _flat(value):
    """``(shape and non-numbers, numbers)`` of one graded value: what two keys compare on."""
    import numpy as np

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (repr(value),), ()
    if isinstance(value, (int, float)) or (hasattr(value, "dtype") and np.ndim(value) == 0):
        number = float(value)
        return (("inf" if number > 0 else "-inf") if math.isinf(number) else "number",), \
            (() if math.isinf(number) else (number,))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value)))), ()
    if isinstance(value, dict):
        shapes, numbers = ["dict"], []
        for name in sorted(value, key=repr):
            shape, found = _flat(value[name])
            shapes.append((repr(name), shape))
            numbers.extend(found)
        return tuple(shapes), tuple(numbers)
    array = np.asarray(value, dtype=np.float64)
    finite = np.isfinite(array)
    return ("array", array.shape, tuple(np.where(finite, 0.0, array).ravel().tolist())), \
        tuple(array[finite].ravel().tolist())


def key_classes(keys: list) -> list:
    """Group keys (dicts of graded values) into classes of *the same key*: every graded value of one
    earns full marks as the other's (the same choices and sets, every number within the checks'
    tolerance). Returns one class label per key (tolerance closeness is chained, so a class never
    splits a run of keys that are each within tolerance of the next)."""
    import numpy as np

    from autograder.checks._concept_answers import NUMBER_ATOL, NUMBER_RTOL

    flat = []
    for key in keys:
        shapes, numbers = [], []
        for name in sorted(key):
            shape, found = _flat(key[name])
            shapes.append((name, shape))
            numbers.extend(found)
        flat.append((tuple(shapes), np.asarray(numbers, dtype=np.float64)))
    parent = list(range(len(keys)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    groups: dict = {}
    for i, (shape, _) in enumerate(flat):
        groups.setdefault(shape, []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        table = np.stack([flat[i][1] for i in members]) if flat[members[0]][1].size else \
            np.zeros((len(members), 0))
        for a in range(len(members)):
            rest = table[a + 1:]
            close = np.all(np.abs(rest - table[a]) <= NUMBER_ATOL + NUMBER_RTOL * np.abs(table[a]), axis=1) | \
                np.all(np.abs(rest - table[a]) <= NUMBER_ATOL + NUMBER_RTOL * np.abs(rest), axis=1)
            for b in np.flatnonzero(close):
                parent[root(members[a + 1 + b])] = root(members[a])
    return [root(i) for i in range(len(keys))]


def key_spread(stem: str, students=CLASS) -> dict:
    """How much ``stem``'s graded answers vary over ``students``: the number of distinct keys, the
    largest number of students sharing one, and how many got the example's (variant 0's) key."""
    from collections import Counter

    from autograder.exercises import load_key

    keys = [dict(answers_for(stem, student)) for student in students]
    example = dict(load_key(stem).answers(dict(families()[stem].seed)))
    classes = key_classes(keys + [example])
    counts = Counter(classes[:-1])
    return {"distinct": len(counts), "largest": max(counts.values()),
            "example": sum(1 for c in classes[:-1] if c == classes[-1])}
