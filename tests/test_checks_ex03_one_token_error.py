"""Exercise 03 (the one-token error): correct answers earn full marks, each alignment mistake is named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "03_one_token_error"
NAMES = ("targets", "slice_choice", "gather_shapes", "unshifted_raises_error")

CANONICAL = """
targets = [7, 42, 9, 13, 2, None]
slice_choice = "A"
gather_shapes = {"unshifted": (2, 6, 1), "shifted": (2, 5, 1)}
unshifted_raises_error = False
"""

CORRECT = {
    "canonical": CANONICAL,
    "computed with numpy": """
row = np.array([101, 7, 42, 9, 13, 2])
targets = [int(t) for t in row[1:]] + [None]
slice_choice = " a "
logits = np.zeros((2, 6, 128))
ids = np.tile(row, (2, 1))
gather_shapes = {
    "unshifted": np.take_along_axis(logits, ids[..., None], axis=-1).shape,
    "shifted": list(np.take_along_axis(logits[:, :-1], ids[:, 1:, None], axis=-1).shape),
}
unshifted_raises_error = 0
""",
    "numpy integers, a tuple and an integer array": """
targets = (np.int64(7), np.int32(42), 9.0, 13, 2, None)
slice_choice = "A"
gather_shapes = {"shifted": np.array([2, 5, 1]), "unshifted": (np.int64(2), 6, 1)}
unshifted_raises_error = "false"
print("done")
""",
}

WRONG = [
    ("same-position targets", CANONICAL + "targets = [101, 7, 42, 9, 13, 2]", "same-position"),
    ("targets shifted backwards", CANONICAL + "targets = [None, 101, 7, 42, 9, 13]", "shift-backwards"),
    ("np.roll wraps around", CANONICAL + "targets = [7, 42, 9, 13, 2, 101]", "wrap-around"),
    ("no entry for the last position", CANONICAL + "targets = [7, 42, 9, 13, 2]", "no-slot-for-last"),
    ("unshifted slices", CANONICAL + 'slice_choice = "C"', "same-position"),
    ("slices shifted backwards", CANONICAL + 'slice_choice = "B"', "shift-backwards"),
    ("both trimmed at the end", CANONICAL + 'slice_choice = "D"', "same-position"),
    ("shift keeps the length", CANONICAL + 'gather_shapes["shifted"] = (2, 6, 1)', "shift-keeps-length"),
    ("expects an error", CANONICAL + "unshifted_raises_error = True", "expects-shape-error"),
    # Every rule the text states (RULES.md lists them with their cases).
    ("trailing axis dropped", CANONICAL + 'gather_shapes = {"unshifted": (2, 6), "shifted": (2, 5)}',
     "no-trailing-axis"),
    ("the vocabulary axis kept", CANONICAL + 'gather_shapes = {"unshifted": (2, 6, 128), "shifted": (2, 5, 128)}',
     "gather-keeps-vocab"),
    ("the last position given a target", CANONICAL + "targets = [7, 42, 9, 13, 2, 2]", "target-beyond-row"),
    ("seven entries", CANONICAL + "targets = [7, 42, 9, 13, 2, None, None]", None, "target of every logits position"),
    ("a target that is not a token id", CANONICAL + 'targets = [7, 42, 9, 13, "2", None]', None,
     "target of every logits position"),
    ("a slice option outside the table", CANONICAL + 'slice_choice = "E"', None,
     "the slices that align logits and targets"),
    ("a shape as a string", CANONICAL + 'gather_shapes["shifted"] = "(2, 5, 1)"', None, "shape of the shifted gather"),
    ("one row only", CANONICAL + 'gather_shapes = {"unshifted": (1, 6, 1), "shifted": (1, 5, 1)}', "batch-axis-size",
     "shape of the shifted gather"),
]


def test_key_targets_come_from_the_reference_alignment():
    from autograder.exercises import load_key
    key = load_key('03_one_token_error')

    assert key.TARGETS == tuple(key.ROW[1:]) + (None,)
    assert key.GATHER_SHAPES == {"unshifted": (2, 6, 1), "shifted": (2, 5, 1)}


class TestOneTokenError(ConceptCheckTests):
    stem = STEM
    central_mistakes = ('same-position targets', 'targets shifted backwards', 'unshifted slices', 'slices shifted backwards', 'both trimmed at the end')
    groups = ("alignment", "shapes")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


@pytest.mark.parametrize("bad", ["[7, 42, 9, 13, 2, -1]", "[7, 42, 9, 13, 2, float('nan')]",
                                 "[7, 42, 9, 13, 2, True]", "'7 42 9 13 2'", "{7, 42, 9, 13, 2}"])
def test_malformed_targets_fail_with_a_message(bad):
    result = support.result_of(STEM, CANONICAL + f"targets = {bad}")
    case = next(case for case in result.cases if case.name == "target of every logits position")
    assert not case.passed and case.message


def test_a_shape_without_the_trailing_axis_gets_a_hint():
    result = support.result_of(STEM, CANONICAL + 'gather_shapes["unshifted"] = (2, 6)')
    case = next(case for case in result.cases if case.name == "shape of the unshifted gather")
    assert not case.passed and case.misconception == "no-trailing-axis" and "trailing axis" in case.message


def _open_check(cell_id: str) -> str:
    return next(cell.source for cell in support.source_notebook(STEM).cells if cell.id == cell_id)


@pytest.mark.parametrize("targets", ["[101, 7, 42, 9, 13, 2]", "[None, 101, 7, 42, 9, 13]", "[7, 42, 9, 13, 2, 101]"])
def test_the_open_check_refuses_a_target_already_read_without_printing_the_answer(targets):
    namespace = support.namespace_from(CANONICAL + f"targets = {targets}")
    with pytest.raises(AssertionError, match="already read") as raised:
        exec(_open_check("check-alignment"), namespace)
    assert "[7, 42, 9, 13, 2" not in str(raised.value)
