"""Hidden checks for exercise 07: the behaviour policy's log-probability and the metadata that pins it down.

Answers (documented in the notebook): ``ratio_error`` (one option), the numbers ``stored_logprob``,
``behaviour_logprob_token_1`` and ``first_step_ratio`` (relative 1e-5 plus 1e-9 absolute), and
``behaviour_metadata`` (a set of field names, whose sampling part is ``SamplingConfig.as_record()`` plus
the engine's min-p and penalties).
The key is :mod:`autograder.exercises.07_behaviour_policy.key`; the logits and engine settings are each
student's (``course.variants.family_07_behaviour_policy``), and every slip is recomputed from them. Taking the base softmax for the behaviour
policy, or calling the stored value harmless, is the central mistake (:data:`CENTRAL`).
"""

from __future__ import annotations

import math

import numpy as np

from autograder.checks.authoring import (
    PASS, Central, ExerciseCheck, Group, Misconception, Verdict, choice, choice_set, exercise_stem, number_case, same,
    shared as _shared, value_case,
)
from . import key

STEM = exercise_stem(__name__)
METADATA = "behaviour_metadata"

BASE_AS_BEHAVIOUR = Misconception(
    "base-softmax-as-behaviour",
    "That is the probability under the unmodified softmax, but the token was sampled after temperature, "
    "bans and top-p: the behaviour policy is the distribution at the end of that chain.")
TEMPERATURE_ONLY = Misconception(
    "temperature-only",
    "Temperature is only the first step: banned tokens and top-p then remove tokens, and the survivors are "
    "renormalised, which changes the sampled token's probability again.")
FORGOT_TOP_P = Misconception(
    "forgot-top-p",
    "After the bans, top-p keeps only the smallest set of most likely tokens reaching the threshold, and "
    "renormalises over that set.")
FORGOT_BANS = Misconception(
    "forgot-bans",
    "The banned token is removed before top-p, so the nucleus and its normalising mass are computed "
    "without it.")
FORGOT_TEMPERATURE = Misconception(
    "forgot-temperature",
    "Bans and top-p act on the tempered distribution: divide the logits by the temperature first.")
ERROR_IS_NOISE = Misconception(
    "error-is-noise",
    "The stored value is off by a factor that the transforms fix for each token, so every ratio is biased "
    "the same way, step after step: nothing averages out.")
TRANSFORMS_CANCEL = Misconception(
    "transforms-cancel",
    "Temperature, bans and top-p change different tokens' probabilities by different factors (and remove "
    "some tokens entirely), so no common factor cancels in the ratio.")
NUMERATOR_BLAMED = Misconception(
    "numerator-blamed",
    "In this scenario the numerator is computed with the engine's transforms, as the task states, so it "
    "is right; the stored denominator is the value that does not belong to the policy that drew the token.")
RATIO_UPSIDE_DOWN = Misconception(
    "ratio-upside-down",
    "The ratio is new over old: the correctly computed numerator divided by the stored value.")
ORDER_IRRELEVANT = Misconception(
    "order-irrelevant",
    "The same settings applied in another order can give a different distribution (top-p before or after "
    "a ban keeps different tokens), so the order is part of the behaviour policy.")
RECOMPUTE_LATER = Misconception(
    "recompute-later",
    "The engine's post-transform log-probability is the only record of what the sampler actually did: "
    "even a trainer that recomputes old log-probabilities with its own forward pass needs it, to measure "
    "and correct the sampler-trainer gap (truncated importance sampling).")
NUCLEUS_TOO_LARGE = Misconception(
    "nucleus-too-large",
    "The nucleus holds one token too many: the engine applies temperature first, then the ban, and top-p "
    "ranks that distribution and stops at the first token whose running sum reaches the threshold.")
PROBABILITY_NOT_LOG = Misconception(
    "probability-not-log",
    "That is a probability; the answer asks for its log-probability (natural log).")
LOG_RATIO_NOT_RATIO = Misconception(
    "log-ratio-not-ratio",
    "That is the log of the ratio; the PPO ratio itself is exp(log pi_new - log pi_old).")
OFF_SETTINGS_LEFT_OUT = Misconception(
    "off-settings-left-out",
    "A setting that is switched off is still a setting: the record is the engine's log format for every "
    "rollout, and \"off\" (no top-k, no min-p, neutral penalties, the default minimum) is a value someone "
    "must be able to read back.")
SAMPLING_SETTING_LEFT_OUT = Misconception(
    "sampling-setting-left-out",
    "Every transform between the logits and the sampled token (here temperature, the ban and top-p) changes "
    "the behaviour probabilities, so each of its settings must be recorded.")
CONTEXT_LEFT_OUT = Misconception(
    "context-left-out",
    "The policy conditioned on token ids: the tokenizer and the chat template decide which ids the prompt "
    "and the response became, so without them the same text can mean another context and other "
    "probabilities.")
WEIGHTS_LEFT_OUT = Misconception(
    "weights-left-out",
    "The logits come from one version of the weights: without policy_version the behaviour policy cannot "
    "be rebuilt.")
DRAWS_LEFT_OUT = Misconception(
    "draws-left-out",
    "Reproducing the sampled tokens takes more than the distribution: the sampler's seed fixes the draws "
    "and the stop rules fix where the response ends.")
LOG_BASE = _shared.LOG_BASE
NEGATED = _shared.NEGATED
TOP_P_DROPS = _shared.TOP_P_DROPS
DISTRACTOR_MISTAKES = {
    "ui_colour": Misconception(
        "irrelevant-metadata",
        "The interface colour changes no probability: it has no place in the behaviour policy."),
    "learning_rate": Misconception(
        "trainer-setting-as-behaviour",
        "The learning rate acts on the update after sampling; it played no part in how the token was drawn."),
    "reward_raw": Misconception(
        "reward-as-behaviour",
        "The reward scores the sampled tokens afterwards; it plays no part in how they were sampled."),
}
if set(DISTRACTOR_MISTAKES) != set(key.DISTRACTORS):
    raise RuntimeError("every distractor needs its misconception")
#: A provenance field left out, and what it teaches (the engine's log-prob first: it matters most).
PROVENANCE_MISTAKES = ((frozenset({"behaviour_logprob"}), RECOMPUTE_LATER),
                       (frozenset({"policy_version"}), WEIGHTS_LEFT_OUT),
                       (frozenset({"tokenizer_version", "chat_template"}), CONTEXT_LEFT_OUT),
                       (frozenset({"sampling_seed", "stop_rules"}), DRAWS_LEFT_OUT))
if frozenset().union(*(fields for fields, _ in PROVENANCE_MISTAKES)) != key.PROVENANCE_FIELDS:
    raise RuntimeError("every provenance field needs its misconception")



# The shared mistakes of numeric answers, named by the shared number judge (listed here for the catalogue).
ROUNDED = _shared.TOO_FEW_DIGITS
NUMBER_AS_TEXT = _shared.NUMBER_AS_TEXT


def _ratio_error(answer) -> Verdict:
    got = choice(answer, key.RATIO_OPTIONS, "ratio_error")
    return same(got, key.RATIO_ERROR, "ratio_error", {
        "averages_out": ERROR_IS_NOISE, "cancels": TRANSFORMS_CANCEL, "wrong_numerator": NUMERATOR_BLAMED})


def _sampling_fields(answer) -> Verdict:
    chosen = choice_set(answer, key.METADATA_OPTIONS, METADATA)
    missing = key.SAMPLING_FIELDS - chosen
    if not missing:
        return PASS
    if missing == {"order"}:
        return Verdict(False, ORDER_IRRELEVANT.sentence, ORDER_IRRELEVANT.key)
    mistake = OFF_SETTINGS_LEFT_OUT if missing <= key.OFF_IN_THIS_EXAMPLE else SAMPLING_SETTING_LEFT_OUT
    return Verdict(False, mistake.sentence, mistake.key)


def _provenance_fields(answer) -> Verdict:
    chosen = choice_set(answer, key.METADATA_OPTIONS, METADATA)
    missing = key.PROVENANCE_FIELDS - chosen
    if not missing:
        return PASS
    for fields, mistake in PROVENANCE_MISTAKES:
        if missing & fields:
            return Verdict(False, mistake.sentence, mistake.key)
    raise AssertionError("unreachable: every provenance field has a misconception")


def _no_distractors(answer) -> Verdict:
    chosen = choice_set(answer, key.METADATA_OPTIONS, METADATA)
    for option in key.METADATA_OPTIONS:
        if option in chosen and option in DISTRACTOR_MISTAKES:
            mistake = DISTRACTOR_MISTAKES[option]
            return Verdict(False, mistake.sentence, mistake.key)
    if not chosen & key.REQUIRED_METADATA:
        return Verdict(False, f"{METADATA} should name the fields that are needed")
    return PASS


def _unit_slips(logprob: float) -> list:
    """The same log-probability in another base, with its sign flipped, or as a probability."""
    return [(logprob / math.log(10), LOG_BASE), (logprob / math.log(2), LOG_BASE), (-logprob, NEGATED),
            (math.exp(logprob), PROBABILITY_NOT_LOG)]


def slips(parameters) -> dict:
    """``answer name -> ((value, misconception), ...)``: what each classic slip gives for one variant.
    -inf is read (not refused) so that a nucleus without the threshold token is named: the sampled token
    then has behaviour probability zero, although the engine sampled it."""
    found = key.values(parameters)
    return {
        "stored_logprob": tuple(_unit_slips(found.stored)),
        "behaviour_logprob_token_1": (
            (found.stored, BASE_AS_BEHAVIOUR),
            (found.temperature_only, TEMPERATURE_ONLY),
            (found.no_top_p, FORGOT_TOP_P),
            (found.no_bans, FORGOT_BANS),
            (found.no_temperature, FORGOT_TEMPERATURE),
            (key.THRESHOLD_DROPPED, TOP_P_DROPS),
            (found.one_past_threshold, NUCLEUS_TOO_LARGE),
            (found.temperature_last, NUCLEUS_TOO_LARGE),
            *_unit_slips(found.behaviour),
        ),
        "first_step_ratio": (
            (1.0, TRANSFORMS_CANCEL),
            (1.0 / found.first_step_ratio, RATIO_UPSIDE_DOWN),
            (math.log(found.first_step_ratio), LOG_RATIO_NOT_RATIO),
        ),
    }


#: How far apart (relative) the key and every slip of one answer must be, in every variant.
SEPARATION = 1e-3


def lesson_holds(parameters) -> bool:
    """Whether a variant keeps the lesson: the sampled token survives the ban and is the token at which
    top-p's running sum crosses the threshold (by a margin of 0.02 either side, so that nothing hangs on
    rounding), top-p drops at least one token, and the key and each answer's slips are pairwise more
    than :data:`SEPARATION` apart (equal slips of one mistake may coincide)."""
    token = int(parameters["token"])
    banned = tuple(int(t) for t in parameters["banned"])
    logits = tuple(float(v) for v in parameters["logits"])
    if token in banned or len(set(logits)) != len(logits) or float(parameters["temperature"]) == 1.0:
        return False
    found = key.values(parameters)
    support = [int(i) for i in np.flatnonzero(found.record.support)]
    allowed = [i for i in range(len(logits)) if i not in banned]
    ranked = sorted(allowed, key=lambda i: (-logits[i], i))
    if token not in support or ranked[len(support) - 1] != token or len(support) >= len(allowed):
        return False
    scaled = [logits[i] / float(parameters["temperature"]) for i in allowed]
    weights = [math.exp(v - max(scaled)) for v in scaled]
    probability = {i: w / sum(weights) for i, w in zip(allowed, weights)}
    before = sum(probability[i] for i in ranked[:len(support) - 1])
    top_p = float(parameters["top_p"])
    if not (before <= top_p - 0.02 and before + probability[token] >= top_p + 0.02):
        return False
    right = key.answers(parameters)
    for name, wrong in slips(parameters).items():
        numbers = [(right[name], None)] + [(value, mistake.key) for value, mistake in wrong]
        for i, (a, mistake_a) in enumerate(numbers):
            for b, mistake_b in numbers[i + 1:]:
                if mistake_a == mistake_b and mistake_a is not None:
                    continue
                if math.isinf(a) or math.isinf(b):
                    if a == b:
                        return False
                    continue
                if abs(a - b) <= SEPARATION * max(abs(a), abs(b)):
                    return False
    return True


def build_cases(variant) -> list:
    """The cases of one student's variant (``variant.parameters``: their logits and engine settings)."""
    answers = key.answers(variant.parameters)
    wrong = slips(variant.parameters)
    return [
        value_case("what goes wrong in the ratio", "ratio", "ratio_error", _ratio_error),
        number_case("the log-probability the trainer stored", "ratio", "stored_logprob", answers["stored_logprob"],
                    wrong["stored_logprob"]),
        number_case("the behaviour log-probability of the sampled token", "ratio", "behaviour_logprob_token_1",
                    answers["behaviour_logprob_token_1"], wrong["behaviour_logprob_token_1"], allow_infinite=True),
        number_case("the ratio at the first update", "ratio", "first_step_ratio", answers["first_step_ratio"],
                    wrong["first_step_ratio"]),
        value_case("every sampling setting is recorded", "metadata", METADATA, _sampling_fields),
        value_case("weights, tokenizer, template, stops, seed and old log-prob are recorded", "metadata",
                   METADATA, _provenance_fields),
        value_case("nothing irrelevant is recorded as behaviour", "metadata", METADATA, _no_distractors),
    ]


#: The exercise's central idea: getting it wrong caps every part at a third of its points.
CENTRAL = Central(
    "the behaviour policy (the distribution after temperature, the ban and top-p) as the one whose "
    "log-probability the ratio's denominator needs",
    {BASE_AS_BEHAVIOUR.key, TRANSFORMS_CANCEL.key, ERROR_IS_NOISE.key, NUMERATOR_BLAMED.key},
    ("what goes wrong in the ratio", "the behaviour log-probability of the sampled token",
     "the ratio at the first update"))

CHECK = ExerciseCheck(
    STEM,
    [Group("ratio", 1, "The behaviour log-probability and the PPO ratio"),
     Group("metadata", 1, "What must be recorded to reconstruct the behaviour policy")],
    build_cases,
    CENTRAL,
)
