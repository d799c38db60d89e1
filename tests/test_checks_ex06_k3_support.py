"""Exercise 06 (k3 support conditions): correct answers earn full marks, swapped conditions and wrong KLs are named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "06_k3_support"
NAMES = ("support_needed", "k3_identity_needs", "smoothing_recovers_support", "weight_mean_example_1",
         "kl_example_2")

CANONICAL = """
support_needed = {"finite_log_ratio": "q<<p", "weights_average_to_one": "p<<q"}
k3_identity_needs = "both"
smoothing_recovers_support = False
weight_mean_example_1 = 0.8
kl_example_2 = math.inf
"""

CORRECT = {
    "canonical": CANONICAL,
    "spaces and capitals, numpy infinity": """
support_needed = {"finite_log_ratio": " q << p ", "weights_average_to_one": "P<<Q"}
k3_identity_needs = "Both"
smoothing_recovers_support = "no"
weight_mean_example_1 = 4 / 5
kl_example_2 = np.inf
""",
    "computed with numpy": """
q1, p1 = np.array([1.0, 0.0]), np.array([0.8, 0.2])
weight_mean_example_1 = np.float32(np.sum(p1[q1 > 0]))
q2, p2 = np.array([0.8, 0.2]), np.array([1.0, 0.0])
with np.errstate(divide="ignore"):
    kl_example_2 = float(np.sum(q2 * (np.log(q2) - np.log(p2))))
support_needed = dict(weights_average_to_one="p<<q", finite_log_ratio="q<<p")
k3_identity_needs = "both"
smoothing_recovers_support = np.False_
print("KL(q||p) =", kl_example_2)
""",
    # "for fact 1 and fact 2": both keys are needed; a key beyond them is ignored (the text never forbids one)
    "an extra key beside the two facts": CANONICAL + 'support_needed["why"] = "see Part C"\n',
    # "a number": exact numbers and NumPy's are numbers too (the channel reads them as their value)
    "a Fraction": CANONICAL + "from fractions import Fraction\nweight_mean_example_1 = Fraction(4, 5)\n",
    "a Decimal and a Decimal infinity": CANONICAL + """
from decimal import Decimal
weight_mean_example_1 = Decimal("0.8")
kl_example_2 = Decimal("Infinity")
""",
    "a 0-d array and a NumPy infinity scalar": CANONICAL + """
weight_mean_example_1 = np.array(0.8)
kl_example_2 = np.float64(np.inf)
""",
    "float('inf') and a one-element array": CANONICAL + """
kl_example_2 = float("inf")
weight_mean_example_1 = np.array([0.8000001])
""",
}

WRONG = [
    ("swapped (finite log r)", CANONICAL + 'support_needed["finite_log_ratio"] = "p<<q"', "swapped-support"),
    ("swapped (weights)", CANONICAL + 'support_needed["weights_average_to_one"] = "q<<p"', "swapped-support"),
    ("one condition is enough", CANONICAL + 'k3_identity_needs = "q<<p"', "one-condition-enough"),
    ("smoothing fixes it", CANONICAL + "smoothing_recovers_support = True", "smoothing-fixes-support"),
    ("identity assumed", CANONICAL + "weight_mean_example_1 = 1.0", "assumed-identity"),
    ("missed mass reported", CANONICAL + "weight_mean_example_1 = 0.2", "reported-missed-mass"),
    ("other KL direction", CANONICAL + "kl_example_2 = -math.log(0.8)", "kl-direction"),
    ("infinite term dropped", CANONICAL + "kl_example_2 = 0.8 * math.log(0.8)", "dropped-infinite-term"),
    # "Give numbers ... or as a Python expression": a number in quotes is text
    ("a number in quotes", CANONICAL + 'weight_mean_example_1 = "0.8"', "number-as-text"),
    ("sign of the infinite KL flipped", CANONICAL + "kl_example_2 = -math.inf", "kl-negated"),
    # "the weakest condition that guarantees it": "both" guarantees each fact but is not the weakest
    ("both for finite log r", CANONICAL + 'support_needed["finite_log_ratio"] = "both"', "stronger-than-needed"),
    ("both for the weights", CANONICAL + 'support_needed["weights_average_to_one"] = "both"', "stronger-than-needed"),
    ("no condition for finite log r", CANONICAL + 'support_needed["finite_log_ratio"] = "neither"',
     "needs-no-condition"),
    ("no condition for the weights", CANONICAL + 'support_needed["weights_average_to_one"] = "neither"',
     "needs-no-condition"),
    ("the other single condition is enough", CANONICAL + 'k3_identity_needs = "p<<q"', "one-condition-enough"),
    ("the identity needs nothing", CANONICAL + 'k3_identity_needs = "neither"', "needs-no-condition"),
    ("both conditions swapped", CANONICAL + 'support_needed = {"finite_log_ratio": "p<<q", '
     '"weights_average_to_one": "q<<p"}', "swapped-support"),
    # "for fact 1 and fact 2": both keys must be there (a missing key is refused by name)
    ("a fact left out", CANONICAL + 'support_needed = {"finite_log_ratio": "q<<p"}', None,
     "support condition for weights_average_to_one"),
    # "(True or False)": an option string is not a truth value
    ("smoothing answered with an option", CANONICAL + 'smoothing_recovers_support = "both"', None,
     "does smoothing recover support"),
    # the four options only
    ("an option that is not offered", CANONICAL + 'k3_identity_needs = "q=p"', None, "support the k3 identity needs"),
]

#: Mistakes that get the central idea wrong (which condition each fact needs, and that the identity needs both).
CENTRAL_MISTAKES = ("swapped (finite log r)", "swapped (weights)", "both conditions swapped", "one condition is enough",
                    "the other single condition is enough", "the identity needs nothing",
                    "no condition for finite log r", "no condition for the weights")


def test_key_numbers_come_from_the_reference():
    import math

    from autograder.exercises import load_key
    key = load_key('06_k3_support')

    assert key.WEIGHT_MEAN_1 == pytest.approx(0.8, rel=1e-12)
    assert key.KL_2 == math.inf
    assert key.KL_2_OTHER_DIRECTION == pytest.approx(-math.log(0.8), rel=1e-12)


def test_notebook_has_the_support_explorer_widget():
    cells = [cell for cell in support.source_notebook(STEM).cells if "widget" in cell.metadata.get("tags", [])]
    assert [cell.source for cell in cells] == ['from course.widgets import kl_explorer\nkl_explorer(preset="support")']


class TestK3Support(ConceptCheckTests):
    stem = STEM
    groups = ("conditions", "counterexamples")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    central_mistakes = CENTRAL_MISTAKES
    hostile = hostile_grid(CANONICAL, NAMES)


@pytest.mark.parametrize("value", ["'inf'", "-math.inf", "1e308", "float('nan')", "None"])
def test_an_infinite_kl_must_be_plus_infinity(value):
    result = support.result_of(STEM, CANONICAL + f"kl_example_2 = {value}")
    case = next(case for case in result.cases if case.name == "D_KL(q || p) in the second counterexample")
    assert not case.passed and case.message


def test_missing_a_side_point_keeps_the_rest():
    """A slip outside the central idea (a "both" that is not the weakest) is not capped."""
    result = support.result_of(STEM, CANONICAL + 'support_needed["finite_log_ratio"] = "both"')
    assert not any(group.capped for group in result.groups), result.feedback()
    assert support.group_points(result)["counterexamples"] == (1, 1)


def test_open_checks_catch_the_central_mistakes_without_the_key():
    """The open check cell refuses one condition for the identity and equal conditions for the two facts,
    with a teaching message, and lets a swapped (but consistent) answer through: it never reveals the key."""
    notebook = support.source_notebook(STEM)
    check_cell = next(cell for cell in notebook.cells if cell.id == "check-conditions")
    answers = {
        "one condition for the identity": (CANONICAL + 'k3_identity_needs = "q<<p"', "guarantee every condition"),
        "the same condition twice": (CANONICAL + 'support_needed["weights_average_to_one"] = "q<<p"',
                                     "two different support conditions"),
    }
    for label, (source, message) in answers.items():
        namespace = support.namespace_from(source)
        with pytest.raises(AssertionError, match=message):
            exec(check_cell.source, namespace)
    swapped = support.namespace_from(CANONICAL + 'support_needed = {"finite_log_ratio": "p<<q", '
                                     '"weights_average_to_one": "q<<p"}')
    exec(check_cell.source, swapped)  # consistent, so the open check says nothing about which is which


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in TestK3Support.wrong.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named


def test_open_checks_accept_the_right_answers_in_the_stated_forms():
    """The open checks pass the canonical answer and a computed one (numpy bool, numpy float): the forms the
    text asks for. (They ask for the option spellings the text gives; the hidden readers also accept case
    and spacing variants, see docs/RULES.md.)"""
    cells = [cell for cell in support.source_notebook(STEM).cells if cell.id.startswith("check")]
    computed = CANONICAL + "smoothing_recovers_support = np.False_\nweight_mean_example_1 = np.float64(0.8)\n"
    for source in (CANONICAL, computed):
        namespace = support.namespace_from(source)
        for cell in cells:
            exec(cell.source, namespace)
