"""Answer key for exercise 04: what a lower response perplexity does and does not show."""

#: The three claims about model A (lower response PPL than B), as the notebook names them.
CLAIMS = ("more_correct_answers", "more_useful", "better_token_prediction")
#: Only the last one follows: lower PPL is lower mean negative log-probability of the same tokens.
CLAIM_TRUTH = {"more_correct_answers": False, "more_useful": False, "better_token_prediction": True}

#: The differences between two protocols that the notebook offers (public), split into those that can
#: make PPL values incomparable and those that cannot.
REASON_OPTIONS = ("tokenizer", "response_mask", "chat_template", "dataset", "aggregation", "log_base",
                  "batch_size", "example_order", "parameter_count")
#: "aggregation" (issue 23, item 9): exp of the pooled mean NLL, as 04 and 09 define PPL, or the mean of
#: per-response PPLs, as verl==0.9.1 reports ``training_ppl`` (``compute_offpolicy_metrics``).
VALID_REASONS = frozenset({"tokenizer", "response_mask", "chat_template", "dataset", "aggregation"})
#: Accepted either way. Perplexity itself does not depend on the base (2 ** mean bits == e ** mean nats);
#: what the base changes is a reported NLL or cross-entropy, and "the reported number" can fairly be read
#: as either, so choosing it or not both earn the points.
EITHER_WAY = frozenset({"log_base"})
DISTRACTORS = frozenset(REASON_OPTIONS) - VALID_REASONS - EITHER_WAY

#: The seed asks for at least two reasons.
MIN_REASONS = 2

if not (VALID_REASONS | EITHER_WAY) <= set(REASON_OPTIONS):
    raise RuntimeError("every valid reason must be offered")
