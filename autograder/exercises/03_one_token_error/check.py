"""Hidden checks for exercise 03: the one-token alignment error between logits and targets.

Answers (documented in the notebook): ``targets`` (the token id scored at each logits position of the
example row, ``None`` where there is none), ``slice_choice`` (one of the offered slice pairs),
``gather_shapes`` (dict unshifted/shifted -> shape tuple) and ``unshifted_raises_error`` (bool).
The key is :mod:`autograder.exercises.03_one_token_error.key`.
"""

from __future__ import annotations

from autograder.checks.authoring import (
    PASS, Central, ExerciseCheck, Group, Misconception, Reject, Verdict, blank, boolean, choice, entry, exercise_stem,
    int_tuple, integer, same, sequence, shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)

SAME_POSITION = _shared.SAME_POSITION
PREDICTS_THE_PAST = _shared.SHIFT_BACKWARDS
WRAP_AROUND = Misconception(
    "wrap-around",
    "Rolling the ids wraps the first token round to the end: the last logits position has no target "
    "inside the row, so nothing should be scored there.")
NO_SLOT_FOR_LAST = Misconception(
    "no-slot-for-last",
    "Give one entry per logits position, six in all: the last position has logits too, it simply has no "
    "target inside the row (write None there).")
TARGET_BEYOND_ROW = Misconception(
    "target-beyond-row",
    "The last position has read the whole row: the token its logits predict comes after the row, so "
    "nothing inside the row is its target (write None there).")
TRIMMED_SAME_POSITION = _shared.SAME_POSITION
SHIFT_KEEPS_LENGTH = Misconception(
    "shift-keeps-length",
    "After the shift, count the positions that still have both logits and a target inside the row: the "
    "shift changes the length of the position axis.")
NO_TRAILING_AXIS = Misconception(
    "no-trailing-axis",
    "`input_ids[..., None]` gives the index array a trailing axis of size 1, and take_along_axis (like "
    "torch's gather) keeps it: the gathered array has three axes until it is squeezed.")
GATHER_KEEPS_VOCAB = Misconception(
    "gather-keeps-vocab",
    "The gather picks one entry of the vocabulary axis per index, so that axis has size 1 in the result, "
    "not V: that is the whole point of selecting each token's log-probability.")
ONE_ROW = Misconception(
    "batch-axis-size",
    "The gather runs on the whole batch, so the batch axis keeps all B = 2 rows, not only the example row.")
EXPECTS_SHAPE_ERROR = Misconception(
    "expects-shape-error",
    "Every id is a valid index into the vocabulary axis and the batch and position axes line up, so NumPy "
    "(or torch) gathers without complaint: that is exactly why this bug survives.")


def _targets(answer) -> Verdict:
    items = sequence(answer, "targets")
    got = []
    for position, item in enumerate(items):
        if item is None:
            got.append(None)
            continue
        try:
            got.append(integer(item, f"targets[{position}]"))
        except Reject:
            raise Reject(f"targets[{position}] should be a token id (an int) or None") from None
    got = tuple(got)
    row = key.ROW
    if got == tuple(row[1:]):
        return Verdict(False, NO_SLOT_FOR_LAST.sentence, NO_SLOT_FOR_LAST.key)
    if len(got) != len(row):
        return Verdict(False, f"targets should have {len(row)} entries, one per logits position")
    if all(item is None for item in got):
        raise blank("every entry of `targets`")
    verdict = same(got, key.TARGETS, "targets", {
        tuple(row): SAME_POSITION,
        (None,) + tuple(row[:-1]): PREDICTS_THE_PAST,
        tuple(row[1:]) + (row[0],): WRAP_AROUND,
    })
    if not verdict.passed and verdict.misconception is None and got[:-1] == key.TARGETS[:-1]:
        return Verdict(False, TARGET_BEYOND_ROW.sentence, TARGET_BEYOND_ROW.key)
    return verdict


def _slices(answer) -> Verdict:
    got = choice(answer, key.SLICE_OPTIONS, "slice_choice")
    return same(got, key.SLICE_CHOICE, "slice_choice", {
        key.SLICE_UNSHIFTED: SAME_POSITION,
        key.SLICE_BACKWARDS: PREDICTS_THE_PAST,
        key.SLICE_TRIMMED: TRIMMED_SAME_POSITION,
    })


def _shape_case(which: str):
    truth = key.GATHER_SHAPES[which]

    def judge(answer) -> Verdict:
        what = f"gather_shapes[{which!r}]"
        got = int_tuple(entry(answer, which, "gather_shapes"), what)
        if got == truth:
            return PASS
        if which == "shifted" and got == key.GATHER_SHAPES["unshifted"]:
            return Verdict(False, SHIFT_KEEPS_LENGTH.sentence, SHIFT_KEEPS_LENGTH.key)
        if len(got) == len(truth) and got[0] != truth[0] and got[1:] in (truth[1:], key.GATHER_SHAPES["unshifted"][1:]):
            return Verdict(False, ONE_ROW.sentence, ONE_ROW.key)
        if got[:-1] == truth[:-1] and got[-1:] == (key.VOCAB,):
            return Verdict(False, GATHER_KEEPS_VOCAB.sentence, GATHER_KEEPS_VOCAB.key)
        if got in (truth[:-1], key.GATHER_SHAPES["unshifted"][:-1]):  # squeezed (a shifted one may keep L too)
            return Verdict(False, NO_TRAILING_AXIS.sentence, NO_TRAILING_AXIS.key)
        return Verdict(False, f"{what} is not correct")

    return value_case(f"shape of the {which} gather", "shapes", "gather_shapes", judge)


def _raises(answer) -> Verdict:
    what = "unshifted_raises_error"
    return same(boolean(answer, what), key.UNSHIFTED_RAISES_ERROR, what, {True: EXPECTS_SHAPE_ERROR})


def build_cases() -> list:
    return [
        value_case("target of every logits position", "alignment", "targets", _targets),
        value_case("the slices that align logits and targets", "alignment", "slice_choice", _slices),
        _shape_case("unshifted"),
        _shape_case("shifted"),
        value_case("does the unshifted gather raise", "shapes", "unshifted_raises_error", _raises),
    ]



#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the alignment (the logits at t score the token at t + 1)",
    {"same-position", "shift-backwards"},
    ("target of every logits position", "the slices that align logits and targets"))

CHECK = ExerciseCheck(
    STEM,
    [Group("alignment", 1, "Which target each logits position predicts"),
     Group("shapes", 1, "Why the unshifted gather looks plausible")],
    build_cases,
    CENTRAL,
)
