"""Exercise 14 (support violation): the right diagnosis and remedies pass in any container, the
numbering slip and each hiding remedy (clipping, epsilon, more samples, skipping) are named."""

import pytest

from autograder.checks import CHECKS
from autograder.keys import ex14_support_violation as key
from concept_corpus_support import (
    assert_full_marks_for, assert_mistake, check_notebook_contract, check_stub_scores_zero, failure_messages,
    namespace_from, result_of, run_visible_cells,
)
from concept_notebook_support import source_notebook

STEM = "14_support_violation"

GOOD = '"full_support_behaviour", "more_exploration", "restrict_target"'
RIGHT = f"ratios_work = False\nproblem_action = 3\nremedies = {{{GOOD}}}\n"

CORRECT = {
    "as in the notebook": RIGHT,
    "computed from the table": f"""
mu, pi = np.array([0.7, 0.3, 0.0]), np.array([0.6, 0.2, 0.2])
ratios_work = bool(np.all(mu[pi > 0] > 0))
problem_action = int(np.flatnonzero((pi > 0) & (mu == 0))[0]) + 1
remedies = [{GOOD}]
""",
    "numpy bool and int, tuple, other case": (
        "ratios_work = np.bool_(False)\nproblem_action = np.int64(3)\n"
        f"remedies = tuple(n.title() for n in [{GOOD}])\n"),
    "a one-element set for the action": f"ratios_work = False\nproblem_action = {{3}}\nremedies = {{{GOOD}}}\n",
}

WRONG = {
    "ratios said to work": (RIGHT + "ratios_work = True\n", "ratios-defined"),
    "counted from zero": (RIGHT + "problem_action = 2\n", "action-numbering"),
    "clip the ratio": (RIGHT + "remedies = remedies | {'clip_ratio'}\n", "clipping-creates-no-data"),
    "more samples from mu": (RIGHT + "remedies = remedies | {'more_samples'}\n", "more-samples-same-policy"),
    "epsilon in the denominator": (RIGHT + "remedies = {'epsilon_denominator', 'restrict_target'}\n",
                                   "epsilon-denominator"),
    "skip the action": (RIGHT + "remedies = remedies | {'skip_action'}\n", "drop-unsupported-term"),
    "missing a real remedy": (RIGHT + "remedies = {'restrict_target'}\n", None),
    "the wrong action": (RIGHT + "problem_action = 1\n", None),
}


@pytest.mark.parametrize("source", CORRECT.values(), ids=CORRECT.keys())
def test_correct_answers_get_full_marks(source):
    assert_full_marks_for(STEM, source)


@pytest.mark.parametrize(("source", "mistake"), WRONG.values(), ids=WRONG.keys())
def test_each_mistake_loses_points_and_is_named(source, mistake):
    assert_mistake(STEM, source, mistake)


def test_remedy_credit_is_not_won_by_choosing_everything_or_nothing():
    everything = result_of(STEM, namespace_from(RIGHT + f"remedies = set({key.REMEDY_CHOICES!r})\n"))
    nothing = result_of(STEM, namespace_from(RIGHT + "remedies = set()\n"))
    one_good = result_of(STEM, namespace_from(RIGHT + "remedies = {'more_exploration'}\n"))
    points = {name: next(g.points_earned for g in r.groups if g.name == "remedies")
              for name, r in (("everything", everything), ("nothing", nothing), ("one", one_good))}
    assert points["nothing"] == 0
    assert points["everything"] <= 0.5
    assert points["everything"] < points["one"] < 1


ADVERSARIAL = {
    "a string for the flag": "ratios_work = 'False'",
    "0 for the flag": "ratios_work = 0",
    "a float action": "problem_action = 3.0",
    "a string action": "problem_action = '3'",
    "True as the action": "problem_action = True",
    "an action object with a custom __eq__": (
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "problem_action = Any()"),
    "an unknown remedy": "remedies = {'restrict_target', 'pray'}",
    "a generator of remedies": f"remedies = (name for name in [{GOOD}])",
}


@pytest.mark.parametrize("source", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_adversarial_values_never_score(source):
    result = result_of(STEM, namespace_from(RIGHT + source + "\n"))
    assert result.points_earned < CHECKS[STEM].points, result.feedback()
    assert all(failure_messages(result))


def test_the_notebook_offers_the_same_remedies_as_the_key():
    namespace = run_visible_cells(source_notebook(STEM))
    assert tuple(namespace["REMEDY_CHOICES"]) == key.REMEDY_CHOICES
    assert key.PROBLEM_ACTIONS == {3} and key.RATIOS_WORK is False


def test_notebook_solution_earns_every_point_and_totals_two():
    check_notebook_contract(STEM, 2)


def test_released_stub_scores_zero_with_not_implemented():
    check_stub_scores_zero(STEM)
