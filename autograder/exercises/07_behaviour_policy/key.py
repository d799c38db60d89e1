"""Answer key for exercise 07: which policy generated the token, and what must be recorded to know it.

The log-probabilities come from ``autograder.reference.behaviour_logprob`` (temperature -> banned tokens ->
top-k -> top-p, renormalised on the retained support); the sampling fields are the keys of
``SamplingConfig.as_record()`` (so the key follows the reference if its record grows) plus the engine
settings the course's sampler does not implement but a real engine records (the seed lists penalties and
min-p among what must be recorded; vLLM's sampler applies both). The logits and settings vary per student
(``course.variants.family_07_behaviour_policy``): :func:`values` and :func:`answers` compute any
variant's key; the module constants are variant 0's (the seed's). The ratio and metadata questions
are the same for everyone.
"""

import dataclasses
import functools
import math

import numpy as np

from autograder.reference import SamplingConfig, behaviour_logprob
from course.variants.family_07_behaviour_policy import FAMILY

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

@dataclasses.dataclass(frozen=True)
class Values:
    """One variant's numbers: the answers, what partial replays of the chain give instead, and what the
    worked solution quotes."""

    record: object               # the reference's BehaviourLogprob of the sampled token
    stored: float                # log softmax(z)[token]: what the buggy trainer stored
    behaviour: float             # log pi_beh(token): what it should have stored
    first_step_ratio: float      # exp(behaviour - stored): the ratio at the first update (the right one is 1)
    temperature_only: float      # log softmax(z / T)[token]: temperature, no ban, no top-p
    no_top_p: float              # temperature and ban, no top-p
    no_bans: float               # temperature and top-p, no ban
    no_temperature: float        # ban and top-p on the base softmax
    #: The nucleus one token too large: ranking after the ban but keeping one token past the threshold ...
    one_past_threshold: float
    #: ... or applying temperature last (ban and top-p on the base softmax, then temperature on the survivors).
    temperature_last: float


def config_of(parameters) -> SamplingConfig:
    return SamplingConfig(temperature=float(parameters["temperature"]),
                          banned_token_ids=tuple(int(t) for t in parameters["banned"]),
                          top_p=float(parameters["top_p"]))


def _tempered_over(logits, temperature, support, token) -> float:
    """log of the token's tempered weight over the tempered weights of ``support`` (-inf outside it)."""
    if token not in support:
        return -math.inf
    scaled = [logits[i] / temperature for i in support]
    top = max(scaled)
    return logits[token] / temperature - top - math.log(sum(math.exp(v - top) for v in scaled))


def values(parameters) -> Values:
    """The numbers of one variant's ``parameters`` (``logits``, ``temperature``, ``banned``, ``top_p``,
    ``token``), from the reference."""
    return _values(tuple(float(v) for v in parameters["logits"]), float(parameters["temperature"]),
                   tuple(int(t) for t in parameters["banned"]), float(parameters["top_p"]), int(parameters["token"]))


@functools.lru_cache(maxsize=64)  # the key, the check's slips and the worked text of one variant share it
def _values(logits: tuple, temperature: float, banned: tuple, top_p: float, token: int) -> Values:
    config = SamplingConfig(temperature=temperature, banned_token_ids=banned, top_p=top_p)
    record = behaviour_logprob(logits, token, config)
    support = [int(i) for i in np.flatnonzero(record.support)]
    # The next token of the ranking after the ban (the one top-p stops before).
    allowed = [i for i in range(len(logits)) if i not in banned]
    ranked = sorted(allowed, key=lambda i: (-logits[i], i))
    extra = support + [ranked[len(support)]] if len(support) < len(ranked) else support
    base_support = [int(i) for i in np.flatnonzero(
        behaviour_logprob(logits, token, SamplingConfig(banned_token_ids=banned, top_p=top_p)).support)]
    return Values(
        record=record, stored=record.base_logprob, behaviour=record.behaviour_logprob,
        first_step_ratio=math.exp(record.behaviour_logprob - record.base_logprob),
        temperature_only=record.tempered_logprob,
        no_top_p=behaviour_logprob(logits, token, SamplingConfig(temperature=temperature,
                                                                 banned_token_ids=banned)).behaviour_logprob,
        no_bans=behaviour_logprob(logits, token, SamplingConfig(temperature=temperature,
                                                                top_p=top_p)).behaviour_logprob,
        no_temperature=behaviour_logprob(logits, token, SamplingConfig(banned_token_ids=banned,
                                                                       top_p=top_p)).behaviour_logprob,
        one_past_threshold=_tempered_over(logits, temperature, extra, token),
        temperature_last=_tempered_over(logits, temperature, base_support, token))


def answers(parameters) -> dict:
    """The answers of one variant, keyed by the names the notebook's answer cells assign."""
    found = values(parameters)
    return {"ratio_error": RATIO_ERROR, "stored_logprob": found.stored,
            "behaviour_logprob_token_1": found.behaviour, "first_step_ratio": found.first_step_ratio,
            "behaviour_metadata": frozenset(REQUIRED_METADATA)}


#: Variant 0: the notebook's base logits, engine settings and sampled token (public).
LOGITS = tuple(FAMILY.seed["logits"])
TEMPERATURE = float(FAMILY.seed["temperature"])
BANNED = tuple(FAMILY.seed["banned"])
TOP_P = float(FAMILY.seed["top_p"])
TOKEN = int(FAMILY.seed["token"])
CONFIG = config_of(FAMILY.seed)

_SEED = values(FAMILY.seed)
RECORD = _SEED.record
#: Variant 0: what the buggy trainer stored, and what it should have stored.
STORED_LOGPROB = _SEED.stored
BEHAVIOUR_LOGPROB = _SEED.behaviour
#: Variant 0: first update, weights unchanged, numerator computed with the same transforms: the correct
#: ratio is 1, the buggy one is pi_beh(a) / pi_base(a).
FIRST_STEP_RATIO = _SEED.first_step_ratio
#: Variant 0: what a partial replay of the chain gives instead (each one a classic mistake).
TEMPERATURE_ONLY = _SEED.temperature_only
#: A nucleus that drops the threshold token leaves the sampled token outside the support (log 0).
THRESHOLD_DROPPED = -math.inf

if set(METADATA_OPTIONS) != REQUIRED_METADATA | DISTRACTORS or len(METADATA_OPTIONS) != len(set(METADATA_OPTIONS)):
    raise RuntimeError("the notebook's metadata options must be exactly SamplingConfig.as_record() keys, "
                       "the engine-only settings, the provenance fields and the distractors")
if not RECORD.support[TOKEN]:
    raise RuntimeError("the sampled token must lie inside the behaviour support")


def _vector(values) -> str:
    return "(" + ", ".join("0" if v == 0 else f"{v:.6f}" for v in values) + ")"


def _listed(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def worked(parameters) -> dict:
    """The numbers ``solution.md`` and ``rubric.md`` quote, as text, for one variant."""
    found = values(parameters)
    logits = np.asarray(parameters["logits"], dtype=np.float64)
    temperature, top_p = float(parameters["temperature"]), float(parameters["top_p"])
    banned, token = tuple(int(t) for t in parameters["banned"]), int(parameters["token"])
    base = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    tempered = np.exp(logits / temperature - (logits / temperature).max())
    tempered = tempered / tempered.sum()
    remaining = float(sum(tempered[i] for i in range(logits.size) if i not in banned))
    after_ban = np.array([0.0 if i in banned else tempered[i] / remaining for i in range(logits.size)])
    ranked = sorted((i for i in range(logits.size) if i not in banned), key=lambda i: (-after_ban[i], i))
    support = [int(i) for i in np.flatnonzero(found.record.support)]
    running = np.cumsum([after_ban[i] for i in ranked[:len(support)]])  # in the nucleus's ranking order
    kept = float(sum(tempered[i] for i in support))
    behaviour = np.array([tempered[i] / kept if i in support else 0.0 for i in range(logits.size)])
    gainers = [i for i in range(logits.size) if tempered[i] > base[i]]
    gap = found.behaviour - found.stored
    factor_t = tempered[token] / base[token]
    inside = 0.8 <= found.first_step_ratio <= 1.2
    sums = ", then ".join(f"${v:.6f}$" for v in running[:-1])
    sums = (sums + ", then " if sums else "") + f"${running[-1]:.6f} \\ge {top_p:g}$"
    return {
        "base_softmax": _vector(base), "stored": f"{found.stored:.6f}", "base_token": f"{base[token]:.6f}",
        "temperature": f"{temperature:g}", "tempered": _vector(tempered),
        "tempering_gainers": f"token{'s' if len(gainers) > 1 else ''} {_listed(gainers)} gain{'' if len(gainers) > 1 else 's'}",
        "banned": _listed(banned), "remaining_mass": f"{remaining:.6f}", "after_ban": _vector(after_ban),
        "top_p": f"{top_p:g}", "ranked": ", ".join(str(i) for i in ranked), "running_sums": sums,
        "nucleus": "\\{" + ", ".join(str(i) for i in support) + "\\}", "behaviour_vector": _vector(behaviour),
        "behaviour_probability": f"{behaviour[token]:.6f}", "tempered_token": f"{tempered[token]:.6f}",
        "kept_tempered": " + ".join(f"{tempered[i]:.6f}" for i in support),
        # the sum of the shown six-decimal weights, as a reader adds them up
        "kept_mass": f"{sum(round(float(tempered[i]), 6) for i in support):.6f}", "behaviour_logprob": f"{found.behaviour:.6f}",
        "exponent": f"{found.behaviour:.6f} {'+' if found.stored < 0 else '-'} {abs(found.stored):.6f}",
        "gap": f"{gap:.6f}", "gap_4": f"{gap:+.4f}", "gap_3": f"{gap:+.3f}",
        "ratio": f"{found.first_step_ratio:.6f}", "ratio_3": f"{found.first_step_ratio:.3f}",
        "factor_temperature": f"{factor_t:.3f}", "inverse_mass": f"{1 / kept:.3f}", "kept_mass_3": f"{kept:.3f}",
        "clip_note": ("stays just inside a $[0.8, 1.2]$ clip range, so it skews the update without ever being "
                      "clipped" if inside else "lies outside a $[0.8, 1.2]$ clip range, so the clip already acts "
                      "on the first update, when nothing has changed"),
    }
