"""Exercise 14 (support violation): the right diagnosis and remedies pass in any container, the
numbering slip and each hiding remedy (clipping, epsilon, more samples, skipping) are named."""

import pytest

from autograder.exercises import load_key
key = load_key('14_support_violation')
from check_support import ConceptCheckTests, hostile_rebinds, result_of, run_cells, source_notebook

STEM = "14_support_violation"

GOOD = '"full_support_behaviour", "more_exploration", "restrict_target"'
NUMBERS = "ratios = (0.6 / 0.7, 0.2 / 0.3, math.inf)\nratio_mean = 0.8\n"
RIGHT = f"ratios_work = False\nproblem_action = 3\n{NUMBERS}remedies = {{{GOOD}}}\n"

CORRECT = {
    "as in the notebook": RIGHT,
    "computed from the table": f"""
mu, pi = np.array([0.7, 0.3, 0.0]), np.array([0.6, 0.2, 0.2])
ratios_work = bool(np.all(mu[pi > 0] > 0))
problem_action = int(np.flatnonzero((pi > 0) & (mu == 0))[0]) + 1
with np.errstate(divide="ignore"):
    ratios = pi / mu
ratio_mean = float(np.sum(pi[mu > 0]))
remedies = [{GOOD}]
""",
    "numpy bool and int, tuple, other case": (
        "ratios_work = np.bool_(False)\nproblem_action = np.int64(3)\n"
        "ratios = [np.float64(6 / 7), 2 / 3, float('inf')]\nratio_mean = np.float64(0.6 + 0.2)\n"
        f"remedies = tuple(n.title() for n in [{GOOD}])\n"),
    "a one-element set for the action": f"ratios_work = False\nproblem_action = {{3}}\n{NUMBERS}remedies = {{{GOOD}}}\n",
    "the ratios as fractions, to six digits": RIGHT + "ratios = [0.857143, 0.666667, math.inf]\n",
    # The fair reading: only fixes that add information (restricting the target adds none).
    "only the fixes that add information": RIGHT + "remedies = {'full_support_behaviour', 'more_exploration'}\n",
    # "the number (1, 2 or 3)": 3.0 is that number too.
    "an integral float for the action": RIGHT + "problem_action = 3.0\n",
}

WRONG = {
    "ratios said to work": (RIGHT + "ratios_work = True\n", "ratios-defined"),
    "counted from zero": (RIGHT + "problem_action = 2\n", "action-numbering"),
    "clip the ratio": (RIGHT + "remedies = remedies | {'clip_ratio'}\n", "clipping-creates-no-data"),
    "more samples from mu": (RIGHT + "remedies = remedies | {'more_samples'}\n", "more-samples-same-policy"),
    "epsilon in the denominator": (RIGHT + "remedies = {'epsilon_denominator', 'restrict_target'}\n",
                                   "epsilon-denominator"),
    "skip the action": (RIGHT + "remedies = remedies | {'skip_action'}\n", "drop-unsupported-term"),
    "missing a real remedy": (RIGHT + "remedies = {'restrict_target'}\n", "data-fix-left-out"),
    "exploration left out": (RIGHT + "remedies = {'full_support_behaviour', 'restrict_target'}\n",
                             "data-fix-left-out", "decision on more_exploration"),
    "an action the behaviour policy takes": (RIGHT + "problem_action = 1\n", "supported-action"),
    "ratios upside down": (RIGHT + "ratios = (0.7 / 0.6, 0.3 / 0.2, 0.0)\n", "ratios-inverted"),
    "the missing ratio as 0": (RIGHT + "ratios = (0.6 / 0.7, 0.2 / 0.3, 0.0)\n", "missing-ratio-finite"),
    "the missing ratio as nan": (RIGHT + "ratios = (0.6 / 0.7, 0.2 / 0.3, float('nan'))\n", "missing-ratio-finite"),
    "the mean ratio is one": (RIGHT + "ratio_mean = 1.0\n", "ratio-mean-one"),
    "the missed mass as the mean": (RIGHT + "ratio_mean = 0.2\n", "missed-mass-as-mean"),
    "the ratios as text": (RIGHT + "ratios = ('0.857143', '0.666667', 'inf')\n", "number-as-text"),
    # Every stated form rule, broken alone.
    "the flag as a string": (RIGHT + "ratios_work = 'False'\n", "ratios-work-not-boolean"),
    "0 for the flag": (RIGHT + "ratios_work = 0\n", "ratios-work-not-boolean"),
    "the action as text": (RIGHT + "problem_action = '3'\n", "number-as-text"),
    "True as the action": (RIGHT + "problem_action = True\n", "action-number-form"),
    "a fractional action": (RIGHT + "problem_action = 2.5\n", "action-number-form"),
    "a remedy name not in the table": (RIGHT + "remedies = {'full_support_behaviour', 'more_exploration', 'pray'}\n",
                                       "remedy-names"),
    "both numerical tricks": (RIGHT + "remedies = {'clip_ratio', 'epsilon_denominator', 'more_exploration'}\n",
                              "clipping-creates-no-data"),
}


def test_remedy_credit_is_not_won_by_choosing_everything_or_nothing():
    everything = result_of(STEM, RIGHT + f"remedies = set({key.REMEDY_CHOICES!r})\n")
    nothing = result_of(STEM, RIGHT + "remedies = set()\n")
    one_good = result_of(STEM, RIGHT + "remedies = {'more_exploration'}\n")
    points = {name: next(g.points_earned for g in r.groups if g.name == "remedies")
              for name, r in (("everything", everything), ("nothing", nothing), ("one", one_good))}
    assert points["nothing"] == 0
    assert points["everything"] <= 0.5
    assert points["everything"] < points["one"] < 1


#: Hostile answers that rebind one of the three.
HOSTILE = {
    "a string for the flag": "ratios_work = 'False'",
    "0 for the flag": "ratios_work = 0",
    "a string action": "problem_action = '3'",
    "True as the action": "problem_action = True",
    "an action object with a custom __eq__": (
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "problem_action = Any()"),
    "an unknown remedy": "remedies = {'restrict_target', 'pray'}",
    "a ratio object with a custom __eq__": (
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "ratios = Any()"),
    "a string mean": "ratio_mean = '0.8'",
    "a generator of remedies": f"remedies = (name for name in [{GOOD}])",
}


class TestSupportViolation(ConceptCheckTests):
    stem = STEM
    groups = ("diagnosis", "remedies")
    central_mistakes = ("ratios said to work", "clip the ratio", "epsilon in the denominator", "both numerical tricks")
    autograded_points, total_points = 2, 2
    correct = CORRECT
    wrong = WRONG
    hostile = hostile_rebinds(RIGHT, HOSTILE)


def test_the_notebook_offers_the_same_remedies_as_the_key():
    namespace = run_cells(source_notebook(STEM))
    assert tuple(namespace["REMEDY_CHOICES"]) == key.REMEDY_CHOICES
    assert key.PROBLEM_ACTIONS == {3} and key.RATIOS_WORK is False


def test_a_hiding_remedy_that_is_no_numerical_trick_is_not_capped():
    # more_samples and skip_action are wrong but are not the central idea: they cost their own cases only.
    result = result_of(STEM, RIGHT + "remedies = remedies | {'more_samples'}\n")
    assert not any(group.capped for group in result.groups), result.feedback()
    assert 1 < result.points_earned < 2, result.feedback()


# --------------------------------------------------------------------------- the open checks


def open_checks(source: str) -> None:
    """Run the notebook's open check cells (after its list of options) on an answer."""
    from check_support import namespace_from

    namespace = namespace_from(source)
    for cell in source_notebook(STEM).cells:
        if cell.cell_type == "code" and (cell.id == "choices" or cell.id.startswith("check-")):
            exec(compile(cell.source, cell.id, "exec"), namespace)


@pytest.mark.parametrize("label", ["as in the notebook", "computed from the table",
                                   "numpy bool and int, tuple, other case", "only the fixes that add information",
                                   "an integral float for the action"])
def test_the_open_checks_accept_the_right_answers(label):
    open_checks(CORRECT[label])


def test_the_open_checks_catch_ratios_said_to_work_with_remedies_chosen():
    with pytest.raises(AssertionError) as failure:
        open_checks(RIGHT + "ratios_work = True\n")
    assert "nothing would need fixing" in str(failure.value)


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
