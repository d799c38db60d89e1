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
]


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
    wrong = {label: (source, key) for label, source, key in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


@pytest.mark.parametrize("value", ["'inf'", "-math.inf", "1e308", "float('nan')", "None"])
def test_an_infinite_kl_must_be_plus_infinity(value):
    result = support.result_of(STEM, CANONICAL + f"kl_example_2 = {value}")
    case = next(case for case in result.cases if case.name == "D_KL(q || p) in the second counterexample")
    assert not case.passed and case.message
