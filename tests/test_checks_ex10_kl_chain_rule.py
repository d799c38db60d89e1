"""Exercise 10 (KL chain rule): any correct route to the numbers passes, the classic slips (equal
weights, KL the wrong way round, a transposed joint table) are named, hostile values never score."""

import re

import pytest

from check_support import ConceptCheckTests, hostile_rebinds, namespace_from, result_of, source_notebook

STEM = "10_kl_chain_rule"

DATA = """
p0, q0 = [0.6, 0.4], [0.5, 0.5]
p_next = [[0.7, 0.3], [0.2, 0.8]]
q_next = [[0.4, 0.6], [0.5, 0.5]]
"""

LOOPS = DATA + """
def kl(p, q):
    total = 0.0
    for a, b in zip(p, q):
        total += a * math.log(a / b)
    return total

root_kl = kl(p0, q0)
conditional_kls = [kl(p_next[0], q_next[0]), kl(p_next[1], q_next[1])]
expected_conditional_kl = p0[0] * conditional_kls[0] + p0[1] * conditional_kls[1]
total_kl = root_kl + expected_conditional_kl
joint_p = [[p0[i] * p_next[i][j] for j in range(2)] for i in range(2)]
joint_q = [[q0[i] * q_next[i][j] for j in range(2)] for i in range(2)]
joint_kl = kl(sum(joint_p, []), sum(joint_q, []))
"""

CORRECT = {
    "plain loops and lists": LOOPS,
    "vectorised numpy": DATA + """
P0, Q0, PN, QN = map(np.asarray, (p0, q0, p_next, q_next))
root_kl = float(np.sum(P0 * np.log(P0 / Q0)))
conditional_kls = np.sum(PN * np.log(PN / QN), axis=1)
expected_conditional_kl = P0 @ conditional_kls
total_kl = root_kl + expected_conditional_kl
joint_p = P0[:, None] * PN
joint_q = Q0[:, None] * QN
joint_kl = np.sum(joint_p * (np.log(joint_p) - np.log(joint_q)))
""",
    "the worked numbers to 7 digits": LOOPS + """
root_kl = 0.0201355
expected_conditional_kl = 0.1873700
total_kl = 0.2075056
joint_kl = 0.2075056
""",
    "float32 tables and tuples": LOOPS + """
conditional_kls = tuple(conditional_kls)
joint_p = np.array(joint_p, dtype=np.float32)
joint_q = tuple(tuple(row) for row in joint_q)
""",
}

WRONG = {
    "equal weights on the conditionals": (
        LOOPS + "expected_conditional_kl = sum(conditional_kls) / 2\ntotal_kl = root_kl + expected_conditional_kl\n",
        "unweighted-average"),
    "plain sum of the conditionals": (
        LOOPS + "expected_conditional_kl = sum(conditional_kls)\n", "unweighted-sum"),
    "KL the wrong way round": (
        LOOPS.replace("root_kl = kl(p0, q0)", "root_kl = kl(q0, p0)"), "kl-direction"),
    "conditionals the wrong way round": (
        LOOPS + "conditional_kls = [kl(q_next[0], p_next[0]), kl(q_next[1], p_next[1])]\n", "kl-direction"),
    "joint KL the wrong way round": (
        LOOPS + "joint_kl = kl(sum(joint_q, []), sum(joint_p, []))\n", "kl-direction"),
    "bits instead of nats": (LOOPS.replace("math.log(a / b)", "math.log2(a / b)"), "log-base"),
    "conditionals in the wrong order": (LOOPS + "conditional_kls = conditional_kls[::-1]\n", "conditional-order"),
    "joint table transposed": (LOOPS + "joint_p = np.array(joint_p).T\n", "joint-transposed"),
    "joint table without the first step": (LOOPS + "joint_q = q_next\n", "joint-missing-first-step"),
    # "D_KL(p || q) = sum p log(p / q)": the log-ratio upside down gives minus the KL
    "every KL negated": (LOOPS.replace("math.log(a / b)", "math.log(b / a)"), "kl-negated"),
    # "a relative error of 1e-5": four significant digits are not enough
    "rounded to 4 digits": (LOOPS + "total_kl = 0.2075\n", "too-few-digits", "root plus expected conditional KL"),
    "a number in quotes": (LOOPS + "root_kl = '0.0201355'\n", "number-as-text"),
    "a table of text": (LOOPS + "joint_p = [['0.42', '0.18'], ['0.08', '0.32']]\n", "number-as-text"),
    # "2 x 2 table": a flat list of the four paths is refused by its shape
    "a flat joint table": (LOOPS + "joint_p = sum(joint_p, [])\n", None, "joint table of p"),
    # "for a1 = 0, then a1 = 1": two numbers, not one
    "one conditional KL": (LOOPS + "conditional_kls = conditional_kls[0]\n", None,
                           "conditional KLs, one per first action"),
}


#: Hostile tables bound to ``joint_p``.
HOSTILE_TABLES = {
    "NaN in a table": "joint_p = [[math.nan, 0.18], [0.08, 0.32]]",
    "a flat list of four": "joint_p = [0.42, 0.18, 0.08, 0.32]",
    "a 3 x 3 table": "joint_p = np.eye(3)",
    "a table of strings": "joint_p = [['0.42', '0.18'], ['0.08', '0.32']]",
    "a ragged table": "joint_p = [[0.42, 0.18], [0.08]]",
    "a dict": "joint_p = {'00': 0.42, '01': 0.18, '10': 0.08, '11': 0.32}",
    "an ndarray subclass that equals everything": (
        "joint_p = np.zeros((2, 2)).view(type('Equal', (np.ndarray,), {'__eq__': lambda s, o: np.True_}))"),
    "a huge array": "joint_p = np.zeros((3000, 3000))",
    "a generator": "joint_p = (row for row in [[0.42, 0.18], [0.08, 0.32]])",
}


class TestKlChainRule(ConceptCheckTests):
    stem = STEM
    central_mistakes = ('equal weights on the conditionals', 'plain sum of the conditionals', 'KL the wrong way round', 'conditionals the wrong way round')
    groups = ("chain_terms", "joint")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = WRONG
    hostile = hostile_rebinds(LOOPS, HOSTILE_TABLES)


def test_a_single_slip_keeps_the_other_group():
    result = result_of(STEM, LOOPS + "joint_p = np.array(joint_p).T\n")
    groups = {group.name: group.points_earned for group in result.groups}
    assert groups["chain_terms"] == 1.5 and 0 < groups["joint"] < 0.5


def test_rounding_is_named_by_the_precision_rule():
    result = result_of(STEM, LOOPS + "total_kl = 0.2075\n")
    assert any("6 significant digits" in case.message for case in result.cases if not case.passed), result.feedback()


@pytest.mark.parametrize("label", ["equal weights on the conditionals", "plain sum of the conditionals"])
def test_open_check_catches_unweighted_conditionals_without_the_key(label):
    """The open Part A check refuses conditional KLs that are not weighted by p_0, and prints no value."""
    cell = next(cell for cell in source_notebook(STEM).cells if cell.id == "check-chain")
    with pytest.raises(AssertionError, match="p_0") as raised:
        exec(cell.source, example_tree(namespace_from(WRONG[label][0])))
    assert not re.search(r"\d\.\d{3,}", str(raised.value))
    exec(cell.source, example_tree(namespace_from(LOOPS)))


def example_tree(namespace: dict) -> dict:
    """``namespace`` with the notebook's ``numbers`` as a notebook with no student id shows them (the
    example tree, variant 0): the open check weights by the notebook's own p_0."""
    from check_support import example_numbers
    from course.variants import your_numbers

    with example_numbers():
        namespace["numbers"] = your_numbers(STEM)
    return namespace


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in WRONG.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
