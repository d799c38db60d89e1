"""Exercise 13 (truncation correction): exact expressions and 6-digit roundings pass, the classic
slips (inverted factor, base-10 logs, multiplying by the mass, one position only) are named."""

import pytest

from check_support import ConceptCheckTests, failure_messages, hostile_rebinds, result_of

STEM = "13_truncation_correction"

EXACT = """
p_tilde = 0.25 / 0.85
log_p_tilde = math.log(0.25) - math.log(0.85)
log_increase = -math.log(0.85)
ratio_factor = 1 / 0.85 ** 4
"""

CORRECT = {
    "exact expressions": EXACT,
    "logs first": """
log_increase = -np.log(0.85)
log_p_tilde = np.log(0.25) + log_increase
p_tilde = np.exp(log_p_tilde)
ratio_factor = np.exp(4 * log_increase)
""",
    "the worked numbers": """
p_tilde = 0.294118
log_p_tilde = -1.223775
log_increase = 0.162519
ratio_factor = 1.915686
""",
    "float32 and one-element arrays": EXACT + """
p_tilde = np.float32(p_tilde)
ratio_factor = np.array([ratio_factor])
""",
}

WRONG = {
    "factor inverted": (EXACT + "ratio_factor = 0.85 ** 4\n", "factor-inverted"),
    "base-10 logs": (EXACT.replace("math.log(", "math.log10("), "log-base"),
    "base-2 logs": (EXACT.replace("math.log(", "math.log2("), "log-base", "increase of the log-probability"),
    "base-10 log exponentiated with exp": (EXACT + "ratio_factor = math.exp(-4 * math.log10(0.85))\n", "log-base"),
    "multiplied by the mass": (EXACT + "p_tilde = 0.25 * 0.85\n", "multiplied-by-mass"),
    "not renormalised": (EXACT + "log_p_tilde = math.log(0.25)\n", "no-renormalise"),
    "divided by the dropped mass": (EXACT + "p_tilde = 0.25 / 0.15\n", "divided-by-dropped-mass"),
    "sign of the correction": (EXACT + "log_increase = math.log(0.85)\n", "correction-sign"),
    "difference of probabilities": (EXACT + "log_increase = 0.25 / 0.85 - 0.25\n", "difference-not-log"),
    "log error not exponentiated": (EXACT + "ratio_factor = -4 * math.log(0.85)\n", "log-not-exponentiated"),
    "one position only": (EXACT + "ratio_factor = 1 / 0.85\n", "one-position"),
    "rounded to three digits": (EXACT + "p_tilde = 0.294\n", "too-few-digits",
                                "probability after renormalisation"),
    "cut to four digits": (EXACT + "ratio_factor = 1.915\n", "too-few-digits"),
    "a number as text": (EXACT + "log_increase = '0.162519'\n", "number-as-text"),
    "multiplied by the mass in both answers": (
        EXACT + "p_tilde = 0.25 * 0.85\nlog_p_tilde = math.log(0.25 * 0.85)\n", "multiplied-by-mass"),
}

#: Hostile values for ``ratio_factor``.
HOSTILE_VALUES = {
    "infinity": "math.inf",
    "NaN": "math.nan",
    "a string": "'1.915686'",
    "None left in the template": "None",
    "a float subclass that equals everything": (
        "type('Equal', (float,), {'__eq__': lambda self, other: True, '__hash__': float.__hash__})(0.5)"),
    "two numbers": "(1.915686, 0.522006)",
    "an exception object": "ValueError('1.915686')",
}


class TestTruncationCorrection(ConceptCheckTests):
    stem = STEM
    central_mistakes = ('multiplied by the mass', 'not renormalised', 'divided by the dropped mass',
                        'multiplied by the mass in both answers')
    groups = ("renormalised", "correction")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = WRONG
    hostile = hostile_rebinds(EXACT, {label: f"ratio_factor = {value}" for label, value in HOSTILE_VALUES.items()})


def test_feedback_never_reveals_the_expected_numbers():
    result = result_of(STEM, EXACT.replace("math.log(", "math.log10(") + "ratio_factor = 0.85**4\n")
    for message in failure_messages(result):
        assert "1.91" not in message and "0.162" not in message and "0.294" not in message


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


@pytest.mark.parametrize("label", ["exact expressions", "logs first", "the worked numbers"])
def test_the_open_checks_accept_the_right_answers(label):
    open_checks(CORRECT[label])


@pytest.mark.parametrize("label", ["multiplied by the mass in both answers", "not renormalised",
                                   "divided by the dropped mass"])
def test_the_open_checks_catch_the_central_mistake_without_giving_values(label):
    source = WRONG[label][0]
    if label == "not renormalised":  # the whole answer without renormalising, as a student would write it
        source = EXACT + "p_tilde = 0.25\nlog_p_tilde = math.log(0.25)\n"
    with pytest.raises(AssertionError) as failure:
        open_checks(source)
    message = str(failure.value)
    assert "p_tilde" in message and "0.294" not in message and "1.22" not in message


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
