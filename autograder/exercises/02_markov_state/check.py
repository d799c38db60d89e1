"""Hidden checks for exercise 02: is the prefix a sufficient state, and who produces each item?

Answers (documented in the notebook): ``prefix_is_sufficient`` (dict process -> bool),
``plain_text_transition_is_deterministic`` (bool), ``item_roles`` (dict item -> role) and
``state_additions`` (set of items). The key is :mod:`autograder.exercises.02_markov_state.key`.
``state_additions`` accepts both readings of the prefix (with or without the pasted document).
The prefix questions and the document's role are the central idea: a mistake there caps both parts at a
third (see ``CENTRAL``).
"""

from __future__ import annotations

from autograder.checks.authoring import (
    PASS, Central, ExerciseCheck, Group, Misconception, Verdict, boolean, choice, choice_set, entry, exercise_stem,
    same, value_case,
)
from . import key

STEM = exercise_stem(__name__)

PLAIN_PREFIX_INSUFFICIENT = Misconception(
    "prefix-insufficient-plain",
    "Without outside calls nothing but the policy's own choice changes the transcript: the prompt and the "
    "tokens so far carry everything the next step depends on (given a fixed template and fixed constraints).")
TOOL_PREFIX_SUFFICIENT = Misconception(
    "prefix-sufficient-with-tools",
    "Once a tool answers, the next state contains text that the model did not choose and that depends on "
    "the world at the time of the call, so the model's own prefix no longer determines what comes next.")
PLAIN_TRANSITION_RANDOM = Misconception(
    "plain-transition-random",
    "The randomness of plain generation lives in the policy's choice of token; once the token is chosen, "
    "appending it to the prefix leaves nothing to chance.")
TOOL_OUTPUT_AS_ACTION = Misconception(
    "tool-output-as-action",
    "The returned document is written by the environment, not sampled from the policy: sitting in the same "
    "transcript as the model's tokens does not make it an action.")
TOOL_CALL_AS_OBSERVATION = Misconception(
    "tool-call-as-observation",
    "The search call is text the model emitted token by token, so it is the policy's action; only what the "
    "tool sends back is observed.")
HIDDEN_STATE_AS_OBSERVATION = Misconception(
    "hidden-state-as-observation",
    "The model never sees the state of the network itself, only the document it produced; the state "
    "shapes the transition without appearing in the transcript.")
DOCUMENT_AS_HIDDEN = Misconception(
    "document-as-hidden-state",
    "The returned document is pasted into the transcript, so the model reads it: it is observed, not "
    "hidden. What stays hidden is the outside state that produced it.")
TOKEN_NOT_ACTION = Misconception(
    "sampled-token-not-action",
    "A token the model samples from pi(. | s_t) is, by the table's own definition, the policy's action.")
CALL_AS_HIDDEN = Misconception(
    "tool-call-as-hidden-state",
    "The search call is text the model itself writes into the transcript: nothing about it is hidden "
    "from the model, and the policy chose it, so it is an action.")
NETWORK_AS_ACTION = Misconception(
    "network-state-as-action",
    "The model does not choose the state of the web: it belongs to the environment, shapes the reply and "
    "never appears in the transcript.")
ALREADY_IN_PREFIX = Misconception(
    "already-in-prefix",
    "Everything the model emitted, the search call included, is already part of y_<t; the state only "
    "needs what the model did not write.")
MISSING_EXTERNAL_STATE = Misconception(
    "missing-external-state",
    "The document explains what happened at this call, but a later call can return something else: the "
    "transition also depends on the outside state that produced it.")
ROLE_MISTAKES = {
    "sampled_token": {"observation": TOKEN_NOT_ACTION, "hidden_state": TOKEN_NOT_ACTION},
    "returned_document": {"action": TOOL_OUTPUT_AS_ACTION, "hidden_state": DOCUMENT_AS_HIDDEN},
    "search_call": {"observation": TOOL_CALL_AS_OBSERVATION, "hidden_state": CALL_AS_HIDDEN},
    "network_state": {"observation": HIDDEN_STATE_AS_OBSERVATION, "action": NETWORK_AS_ACTION},
}
if any(set(ROLE_MISTAKES[item]) != set(key.ROLE_OPTIONS) - {key.ITEM_ROLES[item]} for item in key.ITEMS):
    raise RuntimeError("every wrong role of every item needs its misconception")
PREFIX_MISTAKES = {"plain_text": {False: PLAIN_PREFIX_INSUFFICIENT}, "web_search": {True: TOOL_PREFIX_SUFFICIENT}}


def _prefix_case(process: str):
    def judge(answer) -> Verdict:
        what = f"prefix_is_sufficient[{process!r}]"
        got = boolean(entry(answer, process, "prefix_is_sufficient"), what)
        return same(got, key.PREFIX_IS_SUFFICIENT[process], what, PREFIX_MISTAKES[process])

    return value_case(f"{process}: is (x, y_<t) a sufficient state", "sufficiency", "prefix_is_sufficient", judge)


def _transition(answer) -> Verdict:
    what = "plain_text_transition_is_deterministic"
    return same(boolean(answer, what), key.PLAIN_TEXT_TRANSITION_IS_DETERMINISTIC, what,
                {False: PLAIN_TRANSITION_RANDOM})


def _role_case(item: str):
    def judge(answer) -> Verdict:
        what = f"item_roles[{item!r}]"
        got = choice(entry(answer, item, "item_roles"), key.ROLE_OPTIONS, what)
        return same(got, key.ITEM_ROLES[item], what, ROLE_MISTAKES[item])

    return value_case(f"role of {item}", "roles", "item_roles", judge)


def _additions(answer) -> Verdict:
    chosen = choice_set(answer, key.ITEMS, "state_additions")
    if chosen in key.STATE_ADDITIONS_ACCEPTED:
        return PASS
    for mistake, applies in (
        (ALREADY_IN_PREFIX, bool(chosen - key.STATE_ADDITIONS)),
        (MISSING_EXTERNAL_STATE, "network_state" not in chosen),
    ):
        if applies:
            return Verdict(False, mistake.sentence, mistake.key)
    return Verdict(False, "state_additions is not correct")  # unreachable: kept for safety


def build_cases() -> list:
    cases = [_prefix_case(process) for process in key.PROCESSES]
    cases.append(value_case("plain text: the transition after a token", "sufficiency",
                            "plain_text_transition_is_deterministic", _transition))
    cases += [_role_case(item) for item in key.ITEMS]
    cases.append(value_case("what the state must add in the tool process", "roles", "state_additions",
                            _additions, weight=2.0))
    return cases


#: The exercise's central idea: what the environment contributes is neither in the model's own prefix nor
#: among its actions. Getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the split between the model's own prefix and actions and what the environment contributes",
    {"prefix-insufficient-plain", "prefix-sufficient-with-tools", "tool-output-as-action"},
    tuple(f"{process}: is (x, y_<t) a sufficient state" for process in key.PROCESSES) + ("role of returned_document",))

CHECK = ExerciseCheck(
    STEM,
    [Group("sufficiency", 1, "When the prefix is a sufficient state"),
     Group("roles", 1, "Actions, observations and the state a tool adds")],
    build_cases,
    CENTRAL,
)
