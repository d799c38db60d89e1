"""Exercise 04 (what PPL says): correct answers earn full marks, each misreading of PPL is named."""

from __future__ import annotations

import pytest

import concept_notebook_support as support

STEM = "04_what_ppl_says"
NAMES = ("claims", "incomparable_reasons")

CANONICAL = """
claims = {"more_correct_answers": False, "more_useful": False, "better_token_prediction": True}
incomparable_reasons = {"tokenizer", "response_mask", "chat_template", "dataset", "log_base"}
"""

CORRECT = {
    "canonical": CANONICAL,
    "list, other spelling, numpy booleans": """
claims = {"better_token_prediction": np.True_, "more_useful": np.False_, "more_correct_answers": 0}
incomparable_reasons = ["Tokenizer", "response mask", "chat-template", "DATASET", "log_base", "dataset"]
""",
    "tuple of reasons and printing": CANONICAL + """
incomparable_reasons = tuple(sorted(incomparable_reasons))
print("lower PPL means", claims)
""",
}

WRONG = [
    ("ppl means correct", CANONICAL + 'claims["more_correct_answers"] = True', "ppl-measures-correctness"),
    ("ppl means useful", CANONICAL + 'claims["more_useful"] = True', "ppl-measures-utility"),
    ("ppl means nothing", CANONICAL + 'claims["better_token_prediction"] = False', "ppl-says-nothing"),
    ("batch size", CANONICAL + 'incomparable_reasons = incomparable_reasons | {"batch_size"}',
     "batch-size-changes-ppl"),
    ("example order", CANONICAL + 'incomparable_reasons = {"tokenizer", "example_order"}', "order-changes-ppl"),
    ("model size", CANONICAL + 'incomparable_reasons = {"tokenizer", "dataset", "parameter_count"}',
     "size-is-protocol"),
]


@pytest.mark.parametrize("reasons, earned", [
    ('{"tokenizer", "dataset"}', 1.5),        # the seed's "at least two" earns that case
    ('{"tokenizer"}', 1.0),                    # one reason is not enough
    ('set(OPTIONS)', 1.5),                     # everything: complete but with irrelevant reasons
    ('set()', 1.0),
])
def test_partial_selections_earn_partial_credit(reasons, earned):
    source = CANONICAL + ('OPTIONS = ["tokenizer", "response_mask", "chat_template", "dataset", "log_base", '
                          '"batch_size", "example_order", "parameter_count"]\n') + f"incomparable_reasons = {reasons}"
    result = support.grade(STEM, support.namespace_from(source))
    assert result.points_earned == earned, result.feedback()


def test_notebook_solution_gets_full_marks():
    support.assert_full_marks(STEM, support.namespace_of(support.source_notebook(STEM)))


def test_released_stub_scores_zero_with_not_implemented():
    support.assert_stub_scores_zero(STEM)


def test_notebook_cells_match_the_check():
    support.assert_notebook_matches_check(STEM, 3)


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_correct_answers_get_full_marks(label):
    support.assert_full_marks(STEM, support.namespace_from(CORRECT[label]))


@pytest.mark.parametrize("label, source, key", WRONG, ids=[w[0] for w in WRONG])
def test_each_mistake_loses_points_and_is_named(label, source, key):
    support.assert_misconception(STEM, support.namespace_from(source), key)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("label", sorted(support.ADVERSARIAL))
def test_hostile_values_earn_nothing_for_their_item(name, label):
    support.assert_hostile_value_fails(STEM, CANONICAL, name, label)


def test_a_single_string_is_not_read_as_a_set_of_letters():
    result = support.grade(STEM, support.namespace_from(CANONICAL + 'incomparable_reasons = "tokenizer"'))
    messages = [case.message for case in result.cases if not case.passed]
    assert len(messages) == 2 and all("single string" in message for message in messages)
