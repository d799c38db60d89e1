"""Exercise 11 (k1, k2, k3): right values in any numeric form pass, the classic slips (sign of k1,
inverted ratio, missing half, thinking k3 can go negative) are named, hostile values never score."""

import re

import pytest

from check_support import ConceptCheckTests, result_of

STEM = "11_k_estimators"

SIGNS = 'changes_sign = {"k1"}\nnever_negative = {"k2", "k3"}\n'
FORMULAS = """
def estimators(r):
    return {"k1": -math.log(r), "k2": 0.5 * math.log(r) ** 2, "k3": r - 1 - math.log(r)}
k_at_2 = estimators(2)
k_at_half = estimators(1 / 2)
""" + SIGNS

CORRECT = {
    "formulas": FORMULAS,
    "from log q and log p, numpy": """
def estimators(log_q, log_p):
    log_r = log_p - log_q
    return {"k1": -log_r, "k2": log_r**2 / 2, "k3": np.expm1(log_r) - log_r}
k_at_2 = estimators(np.log(0.25), np.log(0.5))
k_at_half = estimators(np.log(0.5), np.log(0.25))
""" + SIGNS,
    "the worked numbers": """
k_at_2 = {"k1": -0.693147, "k2": 0.240227, "k3": 0.306853}
k_at_half = {"k1": 0.693147, "k2": 0.240227, "k3": 0.193147}
""" + SIGNS,
    "float32, lists and tuples, other case": FORMULAS + """
k_at_2 = {k: np.float32(v) for k, v in k_at_2.items()}
k_at_half = {"k3": [k_at_half["k3"]], "k1": np.array(k_at_half["k1"]), "k2": k_at_half["k2"]}
changes_sign = "K1"
never_negative = ["k3", " k2", "k2"]
""",
    "an extra key is ignored": FORMULAS + 'k_at_2["note"] = "computed by hand"\n',
    # "accept anything within a relative error of 1e-5": fewer digits that land inside it pass.
    "five digits inside the tolerance": FORMULAS + 'k_at_2["k1"] = -0.69315\n',
    "names with other separators": FORMULAS + 'changes_sign = {"K_1"}\nnever_negative = ("k-2", "k 3")\n',
}

WRONG = {
    "k1 sign flipped": (FORMULAS + 'k_at_2["k1"] = math.log(2)\nk_at_half["k1"] = math.log(0.5)\n', "k1-sign"),
    "ratio inverted in k3": (FORMULAS + 'k_at_2["k3"] = (0.5 - 1) + math.log(2)\n', "ratio-inverted"),
    "k2 without the half": (FORMULAS + 'k_at_2["k2"] = math.log(2) ** 2\n', "k2-missing-half"),
    "k3 adds the log": (FORMULAS + 'k_at_half["k3"] = (0.5 - 1) + math.log(0.5)\n', "k3-log-sign"),
    "base-10 logs": (FORMULAS.replace("math.log(", "math.log10("), "log-base"),
    "k3 changes sign too": (FORMULAS + 'changes_sign = {"k1", "k3"}\n', "k3-can-be-negative"),
    "k2 can be negative": (FORMULAS + 'never_negative = {"k3"}\n', "k2-can-be-negative"),
    "k1 never negative": (FORMULAS + 'never_negative = {"k1", "k2", "k3"}\n', "k1-never-negative"),
    "nothing changes sign": (FORMULAS + "changes_sign = set()\n", "k1-never-negative"),
    # Every stated rule of the text, broken alone.
    "base-2 logs": (FORMULAS.replace("math.log(", "math.log2("), "log-base"),
    "ratio inverted throughout (the two dicts swapped)": (
        FORMULAS + "k_at_2, k_at_half = k_at_half, k_at_2\n", "ratio-inverted", "k3 at r = 2"),
    "the log-ratio's sign flipped in every formula": (
        FORMULAS.replace("-math.log(r)", "math.log(r)").replace("r - 1 - math.log(r)", "r - 1 + math.log(r)"),
        "k1-sign"),
    "rounded to three digits": (FORMULAS + 'k_at_2 = {"k1": -0.693, "k2": 0.240, "k3": 0.307}\n',
                                "too-few-digits", "k1 at r = 2"),
    "cut to four digits": (FORMULAS + 'k_at_half["k3"] = 0.1931\n', "too-few-digits", "k3 at r = 1/2"),
    "a number as text": (FORMULAS + 'k_at_2["k2"] = "0.240227"\n', "number-as-text", "k2 at r = 2"),
    "a key left out": (FORMULAS + 'del k_at_half["k2"]\n', "estimators-dict-form", "k2 at r = 1/2"),
    "a list instead of a dict": (FORMULAS + "k_at_2 = [-math.log(2), math.log(2) ** 2 / 2, 1 - math.log(2)]\n",
                                 "estimators-dict-form", "k1 at r = 2"),
    "an estimator name not in the task": (FORMULAS + 'never_negative = {"k2", "k4"}\n', "estimator-names"),
}

#: Hostile answers after the right ones, and what each attacks (an answer name or a case).
HOSTILE = {
    "a list instead of a dict": ("k_at_2 = [-0.693147, 0.240227, 0.306853]", "k_at_2"),
    "a missing key": ('k_at_2 = {"k1": -0.693147, "k2": 0.240227}', "k3 at r = 2"),
    "NaN": ('k_at_2 = {"k1": math.nan, "k2": math.nan, "k3": math.nan}', "k_at_2"),
    "strings": ('k_at_2 = {"k1": "-0.693147", "k2": "0.240227", "k3": "0.306853"}', "k_at_2"),
    "a dict subclass that lies on lookup": (
        "class Lying(dict):\n    def __getitem__(self, key):\n        return {'k1': -0.693147, 'k2': 0.240227, "
        "'k3': 0.306853}[key]\nk_at_2 = Lying(k1=9.0, k2=9.0, k3=9.0)", "k_at_2"),
    "an object with fields": ("k_at_2 = type('K', (), {})()\n"
                              "k_at_2.k1, k_at_2.k2, k_at_2.k3 = -0.693147, 0.240227, 0.306853", "k_at_2"),
    "a set of everything": ('changes_sign = {"k1", "k2", "k3", "k4"}', "changes_sign"),
    "numbers as names": ("changes_sign = {1}", "changes_sign"),
    "a generator": ("changes_sign = (name for name in ['k1'])", "changes_sign"),
}


class TestKEstimators(ConceptCheckTests):
    stem = STEM
    central_mistakes = ('k1 sign flipped', 'ratio inverted in k3', 'ratio inverted throughout (the two dicts swapped)',
                        "the log-ratio's sign flipped in every formula")
    groups = ("values", "signs")
    autograded_points, total_points = 3, 3
    correct = CORRECT
    wrong = WRONG
    hostile = {label: (FORMULAS + source + "\n", (target,)) for label, (source, target) in HOSTILE.items()}


def test_a_missing_key_is_named():
    result = result_of(STEM, FORMULAS + 'del k_at_2["k3"]\n')
    failed = [case for case in result.cases if not case.passed]
    assert [case.name for case in failed] == ["k3 at r = 2"]
    assert "'k3'" in failed[0].message


# --------------------------------------------------------------------------- the open checks


def open_checks(source: str) -> None:
    """Run the notebook's open check cells on an answer (raises AssertionError where one fails), with the
    notebook's ``numbers`` as a notebook with no student id shows them (the example numbers, r = 2)."""
    from check_support import example_numbers, namespace_from, source_notebook
    from course.variants import your_numbers

    namespace = namespace_from(source)
    with example_numbers():
        namespace["numbers"] = your_numbers(STEM)
    for cell in source_notebook(STEM).cells:
        if cell.cell_type == "code" and cell.id.startswith("check-"):
            exec(compile(cell.source, cell.id, "exec"), namespace)


@pytest.mark.parametrize("label", ["formulas", "from log q and log p, numpy", "the worked numbers",
                                   "an extra key is ignored", "five digits inside the tolerance",
                                   "names with other separators"])
def test_the_open_checks_accept_the_right_answers_in_the_forms_the_text_asks_for(label):
    open_checks(CORRECT[label])


@pytest.mark.parametrize("label", ["k1 sign flipped", "ratio inverted in k3",
                                   "ratio inverted throughout (the two dicts swapped)"])
def test_the_open_checks_catch_the_central_mistake_without_giving_values(label):
    with pytest.raises(AssertionError) as failure:
        open_checks(WRONG[label][0])
    message = str(failure.value)
    assert "k3 - k1 should equal r - 1" in message
    assert not re.search(r"\d\.\d{3,}", message), message


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
