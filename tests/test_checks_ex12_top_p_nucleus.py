"""Exercise 12 (top-p nucleus): the right nucleus in any container passes, the classic slips (dropping
the token that reaches the threshold, one too many, no renormalising, 1-based ids) are named."""

import pytest

from autograder.checks import CHECKS
from check_support import ConceptCheckTests, hostile_rebinds, result_of

STEM = "12_top_p_nucleus"

FRACTIONS = """
kept_080 = {0, 1}
nucleus_080 = [0.50 / 0.80, 0.30 / 0.80, 0.0, 0.0]
kept_081 = {0, 1, 2}
nucleus_081 = [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0.0]
"""

CORRECT = {
    "fractions": FRACTIONS,
    "a rule with a small tolerance": """
p = np.array([0.50, 0.30, 0.15, 0.05])
def nucleus(top_p):
    size = int(np.argmax(np.cumsum(p) >= top_p - 1e-12)) + 1
    kept = np.zeros(4)
    kept[:size] = p[:size]
    return set(range(size)), kept / kept.sum()
kept_080, nucleus_080 = nucleus(0.80)
kept_081, nucleus_081 = nucleus(0.81)
""",
    "the worked numbers, lists, tuples and arrays": """
kept_080 = [1, 0]
nucleus_080 = (0.625, 0.375, 0, 0)
kept_081 = np.array([0, 1, 2])
nucleus_081 = np.array([0.526316, 0.315789, 0.157895, 0.0], dtype=np.float32)
""",
    "numpy ints and a duplicate id": FRACTIONS + "kept_080 = [np.int64(0), np.int32(1), 1]\n",
}

WRONG = {
    "drops the token that reaches 0.80": (FRACTIONS + "kept_080 = {0}\nnucleus_080 = [1.0, 0, 0, 0]\n",
                                          "top-p-drops-threshold-token"),
    "drops the token that reaches 0.81": (FRACTIONS + "kept_081 = {0, 1}\n", "top-p-drops-threshold-token"),
    "one too many at 0.80 (the float sum trap)": (
        FRACTIONS + "kept_080 = {0, 1, 2}\nnucleus_080 = [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0.0]\n",
        "top-p-keeps-extra"),
    "one too many at 0.81": (FRACTIONS + "nucleus_081 = [0.5, 0.3, 0.15, 0.05]\n", "top-p-keeps-extra"),
    "forgot to renormalise": (FRACTIONS + "nucleus_080 = [0.50, 0.30, 0.0, 0.0]\n", "no-renormalise"),
    "1-based ids": (FRACTIONS + "kept_081 = {1, 2, 3}\n", "one-based-ids"),
    "only the kept tokens": (FRACTIONS + "nucleus_081 = [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95]\n",
                             "zeros-left-out"),
    # Every stated rule of the text, broken alone.
    "float ids": (FRACTIONS + "kept_080 = {0.0, 1.0}\n", "kept-ids-form", "token ids kept at top_p = 0.80"),
    "ids as strings": (FRACTIONS + "kept_081 = {'0', '1', '2'}\n", "kept-ids-form"),
    "a bare count instead of a set": (FRACTIONS + "kept_080 = 2\n", "kept-ids-form"),
    "five probabilities": (FRACTIONS + "nucleus_080 = [0.625, 0.375, 0, 0, 0]\n", "zeros-left-out"),
    "rounded to three digits": (FRACTIONS + "nucleus_081 = [0.526, 0.316, 0.158, 0.0]\n", "too-few-digits"),
    "probabilities as text": (FRACTIONS + "nucleus_080 = ['0.625', '0.375', '0', '0']\n", "number-as-text"),
    # The nucleus rule itself applied wrongly, in both parts or in both answers of a part.
    "running sum strictly above top_p (the exact threshold missed)": (
        FRACTIONS + "kept_080 = {0, 1, 2}\nnucleus_080 = [0.50 / 0.95, 0.30 / 0.95, 0.15 / 0.95, 0.0]\n",
        "top-p-keeps-extra"),
    "the threshold token dropped in both parts": (
        "kept_080 = {0}\nnucleus_080 = [1.0, 0, 0, 0]\nkept_081 = {0, 1}\nnucleus_081 = [0.625, 0.375, 0, 0]\n",
        "top-p-drops-threshold-token"),
    "never renormalised": (FRACTIONS + "nucleus_080 = [0.5, 0.3, 0, 0]\nnucleus_081 = [0.5, 0.3, 0.15, 0]\n",
                           "no-renormalise"),
}

#: Hostile answers that rebind kept_080 or nucleus_080.
HOSTILE = {
    "float ids": "kept_080 = {0.0, 1.0}",
    "bool ids": "kept_080 = [True, True]",
    "string ids": "kept_080 = {'0', '1'}",
    "a bare int": "kept_080 = 1",
    "a set subclass that contains everything": (
        "class All(set):\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "kept_080 = All({3})"),
    "NaN in the distribution": "nucleus_080 = [math.nan, 0.375, 0, 0]",
    "a distribution of the wrong length": "nucleus_080 = [0.625, 0.375, 0, 0, 0]",
    "a huge array": "nucleus_080 = np.zeros(20_000_000)",
    "a generator": "nucleus_080 = (x for x in [0.625, 0.375, 0, 0])",
}


class TestTopPNucleus(ConceptCheckTests):
    stem = STEM
    groups = ("threshold_080", "threshold_081")
    central_mistakes = ("drops the token that reaches 0.80", "one too many at 0.80 (the float sum trap)",
                        "running sum strictly above top_p (the exact threshold missed)",
                        "the threshold token dropped in both parts", "never renormalised")
    autograded_points, total_points = 3, 3
    correct = CORRECT
    wrong = WRONG
    hostile = hostile_rebinds(FRACTIONS, HOSTILE)


def test_a_wrong_length_says_the_shape_not_the_answer():
    result = result_of(STEM, FRACTIONS + "nucleus_080 = [0.5, 0.5, 0, 0, 0]\n")
    message = next(case.message for case in result.cases if not case.passed)
    assert "shape" in message and "0.625" not in message


def test_only_the_two_token_nucleus_is_accepted_at_the_exact_threshold():
    # The notebook teaches this exact case, so the float trap's three-token answer must not pass.
    three = result_of(STEM, FRACTIONS + "kept_080 = {0, 1, 2}\n")
    assert three.points_earned < CHECKS[STEM].points


def test_a_slip_in_one_answer_is_not_capped():
    # One wrong answer out of four is a slip, not the rule applied wrongly: it costs that case only.
    result = result_of(STEM, FRACTIONS + "nucleus_081 = [0.5, 0.3, 0.15, 0.05]\n")
    assert not any(group.capped for group in result.groups), result.feedback()
    assert result.points_earned == CHECKS[STEM].points - 0.75, result.feedback()


# --------------------------------------------------------------------------- the open checks


def open_checks(source: str) -> None:
    """Run the notebook's open check cells on an answer (raises AssertionError where one fails)."""
    from check_support import example_numbers, namespace_from, source_notebook
    from course.variants import your_numbers

    namespace = namespace_from(source)
    with example_numbers():  # the check cells read the notebook's numbers: variant 0's, as these answers are
        namespace["numbers"] = your_numbers(STEM)
    for cell in source_notebook(STEM).cells:
        if cell.cell_type == "code" and cell.id.startswith("check-"):
            exec(compile(cell.source, cell.id, "exec"), namespace)


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_the_open_checks_accept_every_right_answer(label):
    open_checks(CORRECT[label])


@pytest.mark.parametrize("label, says", [
    ("drops the token that reaches 0.80", "reach top_p stays in the nucleus"),
    ("the threshold token dropped in both parts", "reach top_p stays in the nucleus"),
    ("drops the token that reaches 0.81", "reach top_p stays in the nucleus"),
    ("never renormalised", "divide the kept probabilities by their total mass"),
    ("forgot to renormalise", "divide the kept probabilities by their total mass"),
])
def test_the_open_checks_catch_the_central_mistakes_without_giving_the_nucleus(label, says):
    with pytest.raises(AssertionError) as failure:
        open_checks(WRONG[label][0])
    assert says in str(failure.value)
    assert "{0, 1}" not in str(failure.value) and "0.625" not in str(failure.value)


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
