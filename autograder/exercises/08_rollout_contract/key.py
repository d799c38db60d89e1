"""Answer key for exercise 08: which candidate fields a rollout batch needs to reproduce the objective."""

from autograder.reference import REPRODUCIBILITY_FIELDS

#: The names the notebook offers, in the order it lists them (public: the notebook shows them).
CANDIDATE_FIELDS = (
    "response_text", "response_ids", "response_mask", "old_logprobs", "policy_version",
    "sampling_config", "reward_raw", "terminated", "truncated", "stop_reason", "ui_color",
)

#: The fields needed to recompute the training objective exactly.
REQUIRED_FIELDS = frozenset(REPRODUCIBILITY_FIELDS)

#: Offered but not needed: text is for audit only, the colour is noise.
NOT_REQUIRED_FIELDS = frozenset(CANDIDATE_FIELDS) - REQUIRED_FIELDS

if not REQUIRED_FIELDS <= frozenset(CANDIDATE_FIELDS):
    raise RuntimeError("the notebook's candidate list must contain every reproducibility field")
