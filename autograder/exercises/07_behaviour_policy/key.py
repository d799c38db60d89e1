"""Answer key for exercise 07: which policy generated the token, and what must be recorded to know it.

The log-probabilities come from ``autograder.reference.behaviour_logprob`` (temperature -> banned tokens ->
top-k -> top-p, renormalised on the retained support); the sampling fields are the keys of
``SamplingConfig.as_record()`` (so the key follows the reference if its record grows) plus the engine
settings the course's sampler does not implement but a real engine records (the seed lists penalties and
min-p among what must be recorded; vLLM's sampler applies both).
"""

import math

from autograder.reference import SamplingConfig, behaviour_logprob

#: The notebook's base logits, engine settings and sampled token (public).
LOGITS = (2.0, 1.0, 0.5, 1.5, -0.5)
TEMPERATURE = 0.7
BANNED = (3,)
TOP_P = 0.85
TOKEN = 1
CONFIG = SamplingConfig(temperature=TEMPERATURE, banned_token_ids=BANNED, top_p=TOP_P)

RECORD = behaviour_logprob(LOGITS, TOKEN, CONFIG)
#: What the buggy trainer stored, and what it should have stored.
STORED_LOGPROB = RECORD.base_logprob
BEHAVIOUR_LOGPROB = RECORD.behaviour_logprob
#: First update, weights unchanged, numerator computed with the same transforms: the correct ratio is 1,
#: the buggy one is pi_beh(a) / pi_base(a).
FIRST_STEP_RATIO = math.exp(BEHAVIOUR_LOGPROB - STORED_LOGPROB)

#: What a partial replay of the chain gives instead (each one a classic mistake).
TEMPERATURE_ONLY = RECORD.tempered_logprob
NO_TOP_P = behaviour_logprob(LOGITS, TOKEN, SamplingConfig(temperature=TEMPERATURE, banned_token_ids=BANNED))
NO_BANS = behaviour_logprob(LOGITS, TOKEN, SamplingConfig(temperature=TEMPERATURE, top_p=TOP_P))
NO_TEMPERATURE = behaviour_logprob(LOGITS, TOKEN, SamplingConfig(banned_token_ids=BANNED, top_p=TOP_P))

#: A nucleus that drops the threshold token leaves the sampled token outside the support (log 0).
THRESHOLD_DROPPED = -math.inf
#: The nucleus one token too large: ranking after the ban but keeping one token past the threshold, or
#: applying temperature last (ban and top-p on the base softmax, then temperature on the survivors)
#: both keep tokens 0, 1 and 2. Computed from the tempered logits of that set.
_EXTRA = (0, 1, 2)
NUCLEUS_TOO_LARGE = LOGITS[TOKEN] / TEMPERATURE - math.log(sum(math.exp(LOGITS[i] / TEMPERATURE) for i in _EXTRA))

#: What goes wrong in the PPO ratio (options are public).
RATIO_OPTIONS = ("wrong_denominator", "wrong_numerator", "averages_out", "cancels")
RATIO_ERROR = "wrong_denominator"

#: Metadata options the notebook offers (public).
#: Settings a real engine has (vLLM: repetition/presence/frequency penalties, min_p) that SamplingConfig
#: does not model; the notebook says they are off in this example and must be recorded all the same.
ENGINE_ONLY_FIELDS = frozenset({"min_p", "penalties"})
SAMPLING_FIELDS = frozenset(SamplingConfig().as_record()) | ENGINE_ONLY_FIELDS
PROVENANCE_FIELDS = frozenset({"policy_version", "tokenizer_version", "chat_template", "stop_rules",
                               "sampling_seed", "behaviour_logprob"})
DISTRACTORS = frozenset({"ui_colour", "learning_rate", "reward_raw"})
METADATA_OPTIONS = ("policy_version", "tokenizer_version", "chat_template", "temperature", "banned_token_ids",
                    "top_k", "top_p", "min_tokens_to_keep", "min_p", "penalties", "order", "stop_rules", "sampling_seed",
                    "behaviour_logprob", "ui_colour", "learning_rate", "reward_raw")
REQUIRED_METADATA = SAMPLING_FIELDS | PROVENANCE_FIELDS
#: Sampling settings that are switched off (or at their default) in this example, recorded all the same.
OFF_IN_THIS_EXAMPLE = SAMPLING_FIELDS - {"temperature", "banned_token_ids", "top_p", "order"}

if set(METADATA_OPTIONS) != REQUIRED_METADATA | DISTRACTORS or len(METADATA_OPTIONS) != len(set(METADATA_OPTIONS)):
    raise RuntimeError("the notebook's metadata options must be exactly SamplingConfig.as_record() keys, "
                       "the engine-only settings, the provenance fields and the distractors")
if not RECORD.support[TOKEN]:
    raise RuntimeError("the sampled token must lie inside the behaviour support")
