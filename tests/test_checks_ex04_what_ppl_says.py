"""Exercise 04 (what PPL says): correct answers earn full marks, each misreading of PPL is named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "04_what_ppl_says"
NAMES = ("claims", "incomparable_reasons")

CANONICAL = """
claims = {"more_correct_answers": False, "more_useful": False, "better_token_prediction": True}
incomparable_reasons = {"tokenizer", "response_mask", "chat_template", "dataset", "aggregation", "log_base"}
"""

CORRECT = {
    "canonical": CANONICAL,
    "list, other spelling, numpy booleans": """
claims = {"better_token_prediction": np.True_, "more_useful": np.False_, "more_correct_answers": 0}
incomparable_reasons = ["Tokenizer", "response mask", "chat-template", "DATASET", "log_base", "dataset", "Aggregation"]
""",
    "tuple of reasons and printing": CANONICAL + """
incomparable_reasons = tuple(sorted(incomparable_reasons))
print("lower PPL means", claims)
""",
}

# Perplexity does not depend on the log base, so leaving "log_base" out is as right as choosing it.
CORRECT["without the log base"] = CANONICAL + 'incomparable_reasons = {"tokenizer", "response_mask", "chat_template", "dataset", "aggregation"}'

WRONG = [
    ("misses the mask", CANONICAL + 'incomparable_reasons = {"tokenizer", "chat_template", "dataset", "aggregation", "log_base"}',
     "mask-irrelevant"),
    ("misses the tokenizer", CANONICAL + 'incomparable_reasons = {"response_mask", "chat_template", "dataset", "aggregation"}',
     "tokenizer-irrelevant"),
    ("misses the template", CANONICAL + 'incomparable_reasons = {"tokenizer", "response_mask", "dataset", "aggregation"}',
     "template-irrelevant"),
    ("misses the dataset", CANONICAL + 'incomparable_reasons = {"tokenizer", "response_mask", "chat_template", "aggregation"}',
     "dataset-irrelevant"),
    # the previous answer key (before issue 23, item 9): pooled and per-response means taken as one number
    ("misses the aggregation", CANONICAL + 'incomparable_reasons = {"tokenizer", "response_mask", "chat_template", "dataset", "log_base"}',
     "aggregation-irrelevant"),
    ("a single reason", CANONICAL + 'incomparable_reasons = {"dataset"}', "tokenizer-irrelevant",
     "at least two valid reasons and no irrelevant one"),
    ("a reason outside the table", CANONICAL + 'incomparable_reasons = incomparable_reasons | {"model_family"}', None,
     "every reason that breaks comparability"),
    ("reasons as one string", CANONICAL + 'incomparable_reasons = "tokenizer, response_mask"', None,
     "every reason that breaks comparability"),
    ("a claim left out", CANONICAL + 'del claims["more_useful"]', None, "claim more_useful"),
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
    ('{"tokenizer", "log_base"}', 1.5),        # the log base counts towards "at least two"
    ('set(OPTIONS)', 1.5),                     # everything: complete but with irrelevant reasons
    ('set()', 1.0),
])
def test_partial_selections_earn_partial_credit(reasons, earned):
    source = CANONICAL + ('OPTIONS = ["tokenizer", "response_mask", "chat_template", "dataset", "aggregation", '
                          '"log_base", "batch_size", "example_order", "parameter_count"]\n') + f"incomparable_reasons = {reasons}"
    result = support.result_of(STEM, source)
    assert result.points_earned == earned, result.feedback()


class TestWhatPplSays(ConceptCheckTests):
    stem = STEM
    central_mistakes = ("ppl means correct", "ppl means useful", "ppl means nothing")
    groups = ("claims", "protocol")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


def test_a_single_string_is_not_read_as_a_set_of_letters():
    result = support.result_of(STEM, CANONICAL + 'incomparable_reasons = "tokenizer"')
    messages = [case.message for case in result.cases if not case.passed]
    assert len(messages) == 2 and all("single string" in message for message in messages)


def _open_check(cell_id: str) -> str:
    return next(cell.source for cell in support.source_notebook(STEM).cells if cell.id == cell_id)


@pytest.mark.parametrize("reasons", ['{"tokenizer", "response_mask", "chat_template", "dataset", "aggregation"}',
                                     '{"tokenizer", "response_mask", "chat_template", "dataset", "aggregation", '
                                     '"log_base"}'])
def test_both_readings_of_the_log_base_pass_the_open_check(reasons):
    exec(_open_check("check-reasons"), support.namespace_from(CANONICAL + f"incomparable_reasons = {reasons}"))
