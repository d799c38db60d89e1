"""An explorer shows, it does not answer (docs/DESIGN.md, "Widgets"; issue 32, item 7).

``course.widgets`` computed exercise 07's and 10's graded answers for any numbers: a notebook that only
called the explorers scored full marks on those parts. Now the truncation explorer takes no logits, the
chain-rule sliders and the KL explorer's p and q move in steps of 0.05, and no family draws a graded
question's input on that grid. These tests are the notebook that tries anyway: every answer it gives
comes from the explorers' public API and the state it reads back, with the student's own numbers as
close as the API lets them in; it scores 0 on every part those answers are graded in, for each of 24 students.
"""

from __future__ import annotations

import math

import pytest

from autograder.checks import CHECKS, run_check
from autograder.variants import variant_for
from course.variants import Identity, Numbers, families, parameters

STUDENTS = [f"s{i}" for i in range(24)]

# What such a notebook runs in its answer cells, with ``numbers`` as the notebook's numbers cell made it.
EXPLORER_ONLY_07 = '''
import math
from course import widgets

# Straight in: the student's logits and settings (the explorer refuses logits from outside).
tried = []
for attempt in (lambda: widgets.truncation_explorer(numbers["logits"]),
                lambda: widgets.TruncationExplorer(numbers["logits"]),
                lambda: widgets.truncation_preset_state("default", logits=numbers["logits"])):
    try:
        attempt()
    except (TypeError, ValueError) as refused:
        tried.append(str(refused))
explorer = EXPLORER  # widgets.truncation_explorer(), built once for the class (a figure each is slow)
try:
    explorer.logits = numbers["logits"]
except AttributeError as refused:
    tried.append(str(refused))

try:  # the student's own temperature: refused, it is off the explorer's grid
    widgets.truncation_preset_state("default", temperature=numbers["temperature"])
except ValueError as refused:
    tried.append(str(refused))

# As close as the API allows: each preset with the student's settings (the temperature on the
# explorer's grid, as its slider puts it), and its readouts as the answers.
explorer.controls["temperature"].value = numbers["temperature"]
def answers_from(preset):
    state = widgets.truncation_preset_state(preset, temperature=explorer.controls["temperature"].value,
                                            banned=tuple(numbers["banned"]), top_p=numbers["top_p"],
                                            chosen=numbers["token"])
    return state.base_logprob, state.behaviour_logprob, math.exp(state.behaviour_logprob - state.base_logprob)

ratio_error = None  # no explorer says what goes wrong in a PPO ratio
stored_logprob, behaviour_logprob_token_1, first_step_ratio = answers_from(PRESET)
behaviour_metadata = None
'''

EXPLORER_ONLY_10 = '''
from course import widgets

p0, q0, p_next, q_next = numbers["p0"], numbers["q0"], numbers["p_next"], numbers["q_next"]
tried = []
for attempt in (lambda: widgets.chain_rule_explorer(p0, q0, p_next, q_next),
                lambda: widgets.chain_rule_state(p0, q0, p_next, q_next),
                lambda: widgets.chain_rule_from_controls(p0[0], q0[0], (p_next[0][0], p_next[1][0]),
                                                         (q_next[0][0], q_next[1][0])),
                lambda: widgets.kl_state(p0, q0),
                lambda: widgets.kl_state(p_next[0], q_next[0])):
    try:
        attempt()
    except (TypeError, ValueError) as refused:
        tried.append(str(refused))

# As close as the API allows: the explorer's sliders moved to the student's tree (they land on the
# explorer's grid), and every answer read from its state.
explorer = EXPLORER  # widgets.chain_rule_explorer(), built once for the class (a figure each is slow)
for name, value in (("p0", p0[0]), ("q0", q0[0]), ("p_given_0", p_next[0][0]), ("p_given_1", p_next[1][0]),
                    ("q_given_0", q_next[0][0]), ("q_given_1", q_next[1][0])):
    explorer.controls[name].value = value
state = explorer.state
root_kl = state.root
conditional_kls = tuple(state.conditional)
expected_conditional_kl = state.expected_conditional
total_kl = state.total
joint_p, joint_q, joint_kl = state.joint_p, state.joint_q, state.joint
'''


def _numbers(stem: str, student: str) -> Numbers:
    values = parameters(stem, student)
    return Numbers(stem, Identity(student, "typed"), values, families()[stem].rows(values))


def _run(source: str, stem: str, student: str, **extra) -> dict:
    namespace = {"__name__": "__main__", "numbers": _numbers(stem, student), **extra}
    exec(compile(source, f"<{stem}: answers from the explorers only>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("preset", ["default", "nucleus", "truncation_correction"])
def test_exercise_07s_ratio_part_scores_nothing_from_the_truncation_explorer(preset):
    from course.widgets import truncation_explorer

    explorer = truncation_explorer()
    for student in STUDENTS:
        namespace = _run(EXPLORER_ONLY_07, "07_behaviour_policy", student, PRESET=preset, EXPLORER=explorer)
        assert len(namespace["tried"]) == 5, namespace["tried"]  # each way in was refused, with a reason
        assert all(word in reason for reason, word in zip(
            namespace["tried"], ("logits", "logits", "logits", "setter", "not a multiple of 0.05")))
        result = run_check("07_behaviour_policy", namespace, variant=variant_for("07_behaviour_policy", student))
        ratio = next(group for group in result.groups if group.name == "ratio")
        assert ratio.points_earned == 0, (student, preset, result.feedback())
        assert not any(case.passed for case in ratio.cases), (student, preset, result.feedback())


def test_exercise_10s_chain_rule_and_joint_parts_score_nothing_from_the_explorers():
    from course.widgets import chain_rule_explorer

    explorer = chain_rule_explorer()
    for student in STUDENTS:
        namespace = _run(EXPLORER_ONLY_10, "10_kl_chain_rule", student, EXPLORER=explorer)
        assert len(namespace["tried"]) == 5 and all("multiple of 0.05" in r for r in namespace["tried"])
        tree = parameters("10_kl_chain_rule", student)
        assert namespace["explorer"].state.first_p[0] != tree["p0"][0]  # the slider landed on its grid
        result = run_check("10_kl_chain_rule", namespace, variant=variant_for("10_kl_chain_rule", student))
        assert result.points_earned == 0, (student, result.feedback())
        assert not any(case.passed for group in result.groups for case in group.cases), result.feedback()
    assert CHECKS["10_kl_chain_rule"].points == 2


def test_before_the_rule_the_same_notebook_would_have_scored():
    """The private arithmetic the explorers draw with still computes the answers (it is the model the
    instructor's tests compare with the reference): what the rule closes is the door, not the maths."""
    from course.widgets._chain_rule_model import _chain_rule_state
    from course.widgets._truncation_model import _truncation_state

    student = STUDENTS[0]
    numbers = parameters("07_behaviour_policy", student)
    state = _truncation_state(numbers["logits"], temperature=numbers["temperature"], banned=numbers["banned"],
                              top_p=numbers["top_p"], chosen=1)
    namespace = {"ratio_error": "wrong_denominator", "stored_logprob": state.base_logprob,
                 "behaviour_logprob_token_1": state.behaviour_logprob,
                 "first_step_ratio": math.exp(state.behaviour_logprob - state.base_logprob)}
    result = run_check("07_behaviour_policy", namespace, variant=variant_for("07_behaviour_policy", student))
    assert next(g for g in result.groups if g.name == "ratio").points_earned == 1, result.feedback()
    tree = parameters("10_kl_chain_rule", student)
    state = _chain_rule_state(tree["p0"], tree["q0"], tree["p_next"], tree["q_next"])
    namespace = {"root_kl": state.root, "conditional_kls": tuple(state.conditional),
                 "expected_conditional_kl": state.expected_conditional, "total_kl": state.total,
                 "joint_p": state.joint_p, "joint_q": state.joint_q, "joint_kl": state.joint}
    result = run_check("10_kl_chain_rule", namespace, variant=variant_for("10_kl_chain_rule", student))
    assert result.points_earned == CHECKS["10_kl_chain_rule"].points, result.feedback()


@pytest.mark.parametrize("stem", sorted(families()))
def test_no_explorer_can_be_set_to_a_students_numbers(stem):
    """The rule, family by family: the inputs of every graded quantity an explorer computes are off the
    explorers' grid for every student of a class (the truncation explorer takes no input at all)."""
    from fractions import Fraction

    def on_grid(x) -> bool:
        return Fraction(str(float(x))) % Fraction(1, 20) == 0

    for student in (f"s{i}" for i in range(300)):
        values = parameters(stem, student)
        if stem == "05_negative_kl":  # the KL explorer's exact KL and k1 at action 1
            assert not all(on_grid(x) for x in values["pi"] + values["pi_ref"])
            ratio = Fraction(str(values["pi"][1])) / Fraction(str(values["pi_ref"][1]))
            assert ratio.numerator > 19 or ratio.denominator > 19
        elif stem == "06_k3_support":  # E_q[p/q] of example 1
            assert not on_grid(values["p1"][0]) and not on_grid(values["q2"][0])
        elif stem == "10_kl_chain_rule":  # root, conditionals, joints: p0 and q's conditionals
            assert not on_grid(values["p0"][0])
            assert not any(on_grid(x) for row in values["q_next"] for x in row)
        elif stem == "11_k_estimators":  # k at r: p/q on the grid is i/j with i, j <= 19
            ratio = Fraction(str(values["r"]))
            assert ratio.numerator > 19 or ratio.denominator > 19
        elif stem == "12_top_p_nucleus":  # a nucleus renormalised: p0 (and so p1) and p2 off the grid
            assert not on_grid(values["p"][0]) and not on_grid(values["p"][2])
        elif stem == "14_support_violation":  # the ratios pi/mu and E_mu[pi/mu]
            assert not any(on_grid(x) for x in values["pi"])
        elif stem == "07_behaviour_policy":  # no logits taken, and a temperature off the explorer's
            assert not on_grid(values["temperature"])
        else:  # 13 (the truncation explorer takes no logits), 09 (no explorer computes it)
            assert stem in ("09_sequence_ppl", "13_truncation_correction"), stem
