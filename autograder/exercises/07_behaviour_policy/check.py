"""Hidden checks for exercise 07: the behaviour policy's log-probability and the metadata that pins it down.

Answers (documented in the notebook): ``ratio_error`` (one option), the numbers ``stored_logprob``,
``behaviour_logprob_token_1`` and ``first_step_ratio`` (relative 1e-5 plus 1e-9 absolute), and
``behaviour_metadata`` (a set of field names, whose sampling part is ``SamplingConfig.as_record()`` plus
the engine's min-p and penalties).
The key is :mod:`autograder.exercises.07_behaviour_policy.key`.
"""

from __future__ import annotations

from autograder.checks._concept_answers import choice, choice_set, number_case, same, value_case
from autograder.checks._core import PASS, ExerciseCheck, Group, Verdict
from autograder.checks._judge import Misconception
from . import key

STEM = "07_behaviour_policy"
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
    return Verdict(False, f"{METADATA} leaves out a setting of the sampling chain: the record holds every "
                          "setting the engine has, including those switched off in this example")


def _provenance_fields(answer) -> Verdict:
    chosen = choice_set(answer, key.METADATA_OPTIONS, METADATA)
    missing = key.PROVENANCE_FIELDS - chosen
    if not missing:
        return PASS
    if "behaviour_logprob" in missing:
        return Verdict(False, RECOMPUTE_LATER.sentence, RECOMPUTE_LATER.key)
    return Verdict(False, f"{METADATA} leaves out something outside the sampling settings that decides which "
                          "policy produced the tokens, or how the text became tokens")


def _no_distractors(answer) -> Verdict:
    chosen = choice_set(answer, key.METADATA_OPTIONS, METADATA)
    for option in key.METADATA_OPTIONS:
        if option in chosen and option in DISTRACTOR_MISTAKES:
            mistake = DISTRACTOR_MISTAKES[option]
            return Verdict(False, mistake.sentence, mistake.key)
    if not chosen & key.REQUIRED_METADATA:
        return Verdict(False, f"{METADATA} should name the fields that are needed")
    return PASS


def build_cases() -> list:
    return [
        value_case("what goes wrong in the ratio", "ratio", "ratio_error", _ratio_error),
        number_case("the log-probability the trainer stored", "ratio", "stored_logprob", key.STORED_LOGPROB),
        number_case("the behaviour log-probability of the sampled token", "ratio", "behaviour_logprob_token_1",
                    key.BEHAVIOUR_LOGPROB, [
                        (key.STORED_LOGPROB, BASE_AS_BEHAVIOUR),
                        (key.TEMPERATURE_ONLY, TEMPERATURE_ONLY),
                        (key.NO_TOP_P.behaviour_logprob, FORGOT_TOP_P),
                        (key.NO_BANS.behaviour_logprob, FORGOT_BANS),
                        (key.NO_TEMPERATURE.behaviour_logprob, FORGOT_TEMPERATURE),
                    ]),
        number_case("the ratio at the first update", "ratio", "first_step_ratio", key.FIRST_STEP_RATIO, [
            (1.0, TRANSFORMS_CANCEL),
            (1.0 / key.FIRST_STEP_RATIO, RATIO_UPSIDE_DOWN),
        ]),
        value_case("every sampling setting is recorded", "metadata", METADATA, _sampling_fields),
        value_case("weights, tokenizer, template, stops, seed and old log-prob are recorded", "metadata",
                   METADATA, _provenance_fields),
        value_case("nothing irrelevant is recorded as behaviour", "metadata", METADATA, _no_distractors),
    ]


CHECK = ExerciseCheck(
    STEM,
    [Group("ratio", 1, "The behaviour log-probability and the PPO ratio"),
     Group("metadata", 1, "What must be recorded to reconstruct the behaviour policy")],
    build_cases,
)
