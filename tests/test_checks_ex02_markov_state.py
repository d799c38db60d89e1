"""Exercise 02 (is the prefix a sufficient state?): correct answers earn full marks, mistakes are named."""

from __future__ import annotations

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "02_markov_state"
NAMES = ("prefix_is_sufficient", "plain_text_transition_is_deterministic", "item_roles", "state_additions")

CANONICAL = """
prefix_is_sufficient = {"plain_text": True, "web_search": False}
plain_text_transition_is_deterministic = True
item_roles = {"sampled_token": "action", "search_call": "action",
              "returned_document": "observation", "network_state": "hidden_state"}
state_additions = {"returned_document", "network_state"}
"""

CORRECT = {
    "canonical": CANONICAL,
    "other spellings and containers": """
prefix_is_sufficient = dict(web_search=False, plain_text=True)
plain_text_transition_is_deterministic = 1
item_roles = {"sampled_token": "Action", "search_call": " action ",
              "returned_document": "OBSERVATION", "network_state": "hidden state"}
state_additions = ["network_state", "returned_document", "network_state"]
""",
    "numpy booleans, tuples and frozensets": """
prefix_is_sufficient = {"plain_text": np.bool_(True), "web_search": np.bool_(False)}
plain_text_transition_is_deterministic = np.True_
item_roles = {"sampled_token": "action", "search_call": "action",
              "returned_document": "observation", "network_state": "hidden-state", "note": "extra key"}
state_additions = frozenset(("returned_document", "network_state"))
""",
    # The fair reading: the prefix is the transcript so far, so the pasted document is already in it.
    "the transcript reading: only the network state": CANONICAL + 'state_additions = {"network_state"}',
    "words for booleans, printing and warning": CANONICAL + """
import warnings
prefix_is_sufficient = {"plain_text": "yes", "web_search": "False"}
print("my answers", item_roles)
warnings.warn("a harmless warning")
state_additions = ("returned_document", "network_state")
""",
}

WRONG = [
    ("plain prefix insufficient", CANONICAL + 'prefix_is_sufficient = {"plain_text": False, "web_search": False}',
     "prefix-insufficient-plain"),
    ("tool prefix sufficient", CANONICAL + 'prefix_is_sufficient = {"plain_text": True, "web_search": True}',
     "prefix-sufficient-with-tools"),
    ("plain transition random", CANONICAL + "plain_text_transition_is_deterministic = False",
     "plain-transition-random"),
    ("document as action", CANONICAL + 'item_roles["returned_document"] = "action"', "tool-output-as-action"),
    ("call as observation", CANONICAL + 'item_roles["search_call"] = "observation"', "tool-call-as-observation"),
    ("network state observed", CANONICAL + 'item_roles["network_state"] = "observation"',
     "hidden-state-as-observation"),
    ("adds the call", CANONICAL + 'state_additions = {"search_call", "returned_document", "network_state"}',
     "already-in-prefix"),
    ("only the document", CANONICAL + 'state_additions = {"returned_document"}', "missing-external-state"),
    ("nothing added", CANONICAL + 'state_additions = set()', "missing-external-state"),
    ("the model's own tokens", CANONICAL + 'state_additions = {"sampled_token", "network_state"}', "already-in-prefix"),
    # Every rule the text states (RULES.md lists them with their cases).
    ("document as hidden state", CANONICAL + 'item_roles["returned_document"] = "hidden_state"',
     "document-as-hidden-state"),
    ("both prefixes insufficient, tool reading kept",
     CANONICAL + 'prefix_is_sufficient = {"plain_text": False, "web_search": False}\n'
     'state_additions = {"network_state"}',
     "prefix-insufficient-plain"),
    ("prose token observed", CANONICAL + 'item_roles["sampled_token"] = "observation"', "sampled-token-not-action"),
    ("prose token hidden", CANONICAL + 'item_roles["sampled_token"] = "hidden_state"', "sampled-token-not-action"),
    ("call hidden", CANONICAL + 'item_roles["search_call"] = "hidden_state"', "tool-call-as-hidden-state"),
    ("network state as action", CANONICAL + 'item_roles["network_state"] = "action"', "network-state-as-action"),
    ("two roles for one item", CANONICAL + 'item_roles["search_call"] = ["action", "observation"]', None,
     "role of search_call"),
    ("a role outside the table", CANONICAL + 'item_roles["network_state"] = "environment"', None,
     "role of network_state"),
    ("an item left out", CANONICAL + 'del item_roles["sampled_token"]', None, "role of sampled_token"),
    ("a process left out", CANONICAL + 'prefix_is_sufficient = {"plain_text": True}', None,
     "web_search: is (x, y_<t) a sufficient state"),
    ("the addition as a bare string", CANONICAL + 'state_additions = "network_state"', None,
     "what the state must add in the tool process"),
    ("an item outside the list", CANONICAL + 'state_additions = {"network_state", "search_results"}', None,
     "what the state must add in the tool process"),
]


@pytest.mark.filterwarnings("ignore:a harmless warning")
class TestMarkovState(ConceptCheckTests):
    stem = STEM
    central_mistakes = ("plain prefix insufficient", "tool prefix sufficient", "document as action",
                        "both prefixes insufficient, tool reading kept")
    groups = ("sufficiency", "roles")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    hostile = hostile_grid(CANONICAL, NAMES)


def test_unknown_role_is_explained_without_revealing_the_answer():
    result = support.result_of(STEM, CANONICAL + 'item_roles["sampled_token"] = "policy"')
    message = next(case.message for case in result.cases if not case.passed)
    assert "'action', 'observation', 'hidden_state'" in message and "not an option" in message


def _open_check(cell_id: str) -> str:
    return next(cell.source for cell in support.source_notebook(STEM).cells if cell.id == cell_id)


def test_the_open_check_ties_part_a_to_part_b_without_giving_either_away():
    namespace = support.namespace_from(CANONICAL + 'prefix_is_sufficient["web_search"] = True')
    with pytest.raises(AssertionError, match="Parts A and B disagree"):
        exec(_open_check("check-roles"), namespace)
    for reading in ('{"network_state"}', '{"returned_document", "network_state"}'):  # both fair readings pass
        exec(_open_check("check-roles"), support.namespace_from(CANONICAL + f"state_additions = {reading}"))
