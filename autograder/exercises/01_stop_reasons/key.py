"""Answer key for exercise 01: raw stop reasons, the episode flags, and what a length cannot tell.

The flags are not typed in: they come from ``autograder.reference.map_stop_reason`` under the contract
the notebook states (``EOS_IS_TERMINAL``), and from a second contract for the fixed-budget task.
"""

from autograder.reference import EOS_IS_TERMINAL, TaskContract, map_stop_reason

#: The raw reasons the notebook's engine can report (public: the notebook lists and explains them).
REASON_OPTIONS = ("eos", "length", "stop_string", "timeout", "abort")

#: The two responses of the exercise and the raw reason each one stopped for.
RESPONSE_REASONS = {"response_1": "eos", "response_2": "length"}

#: (stop_reason, terminated, truncated) per response under the exercise's contract.
STOP_FLAGS = {name: map_stop_reason(reason, EOS_IS_TERMINAL) for name, reason in RESPONSE_REASONS.items()}

#: With max_new_tokens = 64, a 47-token response cannot have been stopped by the budget; anything else can.
POSSIBLE_REASONS_AT_47 = frozenset(REASON_OPTIONS) - {"length"}
#: A 64-token response: the budget, or any other mechanism firing on the 64th token (EOS included).
POSSIBLE_REASONS_AT_64 = frozenset(REASON_OPTIONS)

#: A generic validator must not reject terminated and truncated together (a terminal event can fall
#: on a buffer boundary).
VALIDATOR_SHOULD_REJECT_BOTH_FLAGS = False

#: The second task: writing until the 64-token budget is the task's own rule, so "length" is terminal.
FIXED_BUDGET = TaskContract("fixed-budget", frozenset({"eos", "length"}), frozenset())
FIXED_BUDGET_FLAGS = FIXED_BUDGET.map("length")

if not set(RESPONSE_REASONS.values()) <= set(REASON_OPTIONS):
    raise RuntimeError("the responses' reasons must be among the offered options")
