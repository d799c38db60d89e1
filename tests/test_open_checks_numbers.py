"""The open checks read a number the way the grader does (issue 22).

The notebooks ask for "a number ... or a Python expression", and the grader reads ``Fraction``,
``Decimal``, NumPy scalars and 0-d arrays as the number they are worth. Each open check cell that asks
for a number is run here on the source notebook's own answers, with every number answer rewritten in
each of those forms: the check must pass, as the grader's full marks do. True/False, which the grader
refuses, stay refused. The cells are exec'd in a plain namespace (no kernel), so this runs in a second.
"""

from __future__ import annotations

import decimal
import fractions
import math

import nbformat
import numpy as np
import pytest

import check_support as support
from course.answers import as_number

#: The number answers each notebook's open checks read (a dict key after "." names an entry of a dict).
NUMBER_ANSWERS = {
    "05_negative_kl": ("log_ratio_action_1", "exact_kl"),
    "06_k3_support": ("weight_mean_example_1", "kl_example_2"),
    "07_behaviour_policy": ("stored_logprob", "behaviour_logprob_token_1", "first_step_ratio"),
    "09_sequence_ppl": ("sequence_logprob", "mean_nll", "perplexity", "sequence_logprob_4", "perplexity_4"),
    "10_kl_chain_rule": ("root_kl", "expected_conditional_kl", "total_kl"),
    "11_k_estimators": ("k_at_2.k1", "k_at_2.k2", "k_at_2.k3", "k_at_half.k1", "k_at_half.k2", "k_at_half.k3"),
    "13_truncation_correction": ("p_tilde", "log_p_tilde", "log_increase", "ratio_factor"),
    "14_support_violation": ("problem_action",),
}


def _exact_fraction(value: float):
    return fractions.Fraction(repr(value)) if math.isfinite(value) else decimal.Decimal(repr(value))


FORMS = {
    "Fraction": _exact_fraction,  # an infinity has no Fraction: Decimal("Infinity") stands in
    "Decimal": lambda value: decimal.Decimal(repr(value)),
    "np.float64": np.float64,
    "0-d array": np.array,
}


@pytest.fixture(scope="module")
def answered():
    """Each notebook's check cells and the namespace its own solution cells make."""
    found = {}
    for stem in NUMBER_ANSWERS:
        notebook = support.source_notebook(stem)
        namespace = {"__name__": "__main__"}
        with support.example_numbers():  # a notebook whose numbers vary shows (and solves) variant 0's
            for cell in notebook.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code" and (cell.id in ("setup", "your-numbers") or meta.get("solution")):
                    exec(compile(cell.source, f"<{stem}:{cell.id}>", "exec"), namespace)
        checks = [cell.source for cell in notebook.cells
                  if cell.cell_type == "code" and cell.id.startswith("check") and "as_number" in cell.source]
        found[stem] = (checks, namespace)
    return found


def _get(namespace, path):
    name, _, key = path.partition(".")
    return namespace[name][key] if key else namespace[name]


def _set(namespace, path, value):
    name, _, key = path.partition(".")
    if key:
        namespace[name] = {**namespace[name], key: value}
    else:
        namespace[name] = value


def _run(checks, namespace):
    for source in checks:
        exec(source, namespace)


def test_every_open_check_that_asks_for_a_number_reads_it_with_as_number():
    """No open check tests a number's type with isinstance (the form that refused Fraction and Decimal),
    and every check that asks for a number is one this file runs."""
    stale, asking = [], set()
    for path in sorted((support.ROOT / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type != "code" or not cell.id.startswith("check"):
                continue
            if "np.floating" in cell.source:
                stale.append(f"{path.stem}:{cell.id}")
            if "should be a number" in cell.source or "should be a whole number" in cell.source:
                asking.add(path.stem)
                if "as_number(" not in cell.source:
                    stale.append(f"{path.stem}:{cell.id}")
    assert stale == []
    assert asking == set(NUMBER_ANSWERS)


@pytest.mark.parametrize("stem", sorted(NUMBER_ANSWERS))
def test_the_solution_passes_its_open_checks_in_every_number_form(answered, stem):
    checks, solved = answered[stem]
    assert checks, f"{stem}: no open check reads a number with as_number"
    _run(checks, dict(solved))  # the solution as written
    for form, make in FORMS.items():
        namespace = dict(solved)
        for path in NUMBER_ANSWERS[stem]:
            value = as_number(_get(solved, path))
            assert value is not None, f"{stem}: the solution's {path} is not a number"
            _set(namespace, path, make(value))
        try:
            _run(checks, namespace)
        except AssertionError as error:
            pytest.fail(f"{stem}: the open check refuses the answers written as {form}: {error}")


@pytest.mark.parametrize("stem", sorted(NUMBER_ANSWERS))
def test_true_and_false_are_still_not_numbers(answered, stem):
    checks, solved = answered[stem]
    path = NUMBER_ANSWERS[stem][0]
    namespace = dict(solved)
    _set(namespace, path, True)
    with pytest.raises(AssertionError, match="should be a (whole )?number"):
        _run(checks, namespace)


def test_the_testers_answers_to_06_pass():
    """Issue 22's own case: Fraction(4, 5) and Decimal("Infinity") in 06, which the grader marks right."""
    checks = [cell.source for cell in support.source_notebook("06_k3_support").cells
              if cell.cell_type == "code" and cell.id == "check-counterexamples"]
    assert len(checks) == 1
    namespace = support.namespace_from('import fractions, decimal\n'
                                       'weight_mean_example_1 = fractions.Fraction(4, 5)\n'
                                       'kl_example_2 = decimal.Decimal("Infinity")\n')
    _run(checks, namespace)


@pytest.mark.parametrize("value, expected", [
    (fractions.Fraction(4, 5), 0.8), (decimal.Decimal("0.8"), 0.8), (decimal.Decimal("Infinity"), math.inf),
    (decimal.Decimal("-Infinity"), -math.inf), (np.float32(0.5), 0.5), (np.int64(3), 3.0), (np.array(0.8), 0.8),
    (np.array([0.8]), 0.8), ([0.8], 0.8), ((fractions.Fraction(1, 4),), 0.25), (3, 3.0),
    (10 ** 400, math.inf), (fractions.Fraction(-10 ** 400, 3), -math.inf),
])
def test_as_number_reads_what_the_grader_reads(value, expected):
    assert as_number(value) == expected


@pytest.mark.parametrize("value", [True, False, np.True_, np.array(True), None, "0.8", 1j, np.array([1.0, 2.0]),
                                   [1, 2], np.array(["0.8"]), {"v": 0.8}])
def test_as_number_refuses_what_is_not_one_number(value):
    assert as_number(value) is None


def test_nan_forms_are_read_as_nan():
    assert all(math.isnan(as_number(value)) for value in (decimal.Decimal("NaN"), decimal.Decimal("sNaN"),
                                                          math.nan, np.float64("nan")))
