"""Answer key for exercise 02: when the prefix is a Markov state, and who produces each item."""

#: The two processes of the exercise, as the notebook names them.
PROCESSES = ("plain_text", "web_search")

#: Is s_t = (x, y_<t) a sufficient (Markov) state? Plain generation: yes, with a fixed template and
#: fixed generation constraints; with a web search in the loop: no.
PREFIX_IS_SUFFICIENT = {"plain_text": True, "web_search": False}

#: After a token in plain generation the next state is the prefix with the token appended.
PLAIN_TEXT_TRANSITION_IS_DETERMINISTIC = True

#: The roles the notebook offers (public) and the items to classify (public).
ROLE_OPTIONS = ("action", "observation", "hidden_state")
ITEMS = ("sampled_token", "search_call", "returned_document", "network_state")
ITEM_ROLES = {
    "sampled_token": "action",
    "search_call": "action",
    "returned_document": "observation",
    "network_state": "hidden_state",
}

#: What has to join (x, y_<t) in the second process: the tool output and the external state it depends on.
STATE_ADDITIONS = frozenset({"returned_document", "network_state"})

#: Both fair readings of "the prefix". Read as the model's own tokens, the prefix lacks the pasted
#: document, so it must be added; read as the transcript so far (the notebook's intro), the document is
#: already in it. Either way the web's persistent state must join: that is what the question tests.
STATE_ADDITIONS_ACCEPTED = (STATE_ADDITIONS, frozenset({"network_state"}))

if set(ITEM_ROLES) != set(ITEMS) or not set(ITEM_ROLES.values()) <= set(ROLE_OPTIONS):
    raise RuntimeError("ITEM_ROLES must classify every item with an offered role")
if not all(accepted <= set(ITEMS) for accepted in STATE_ADDITIONS_ACCEPTED):
    raise RuntimeError("STATE_ADDITIONS must be chosen from the offered items")
