"""Hidden checks for exercise 08: the fields a rollout batch must carry to reproduce the objective.

The answer is ``required_fields``, a set of names taken from the notebook's candidate list. Each
candidate is one case, so a nearly complete selection earns most of the points. The two fields that
are not needed weigh more (together as much as the nine needed ones), so that selecting every
candidate earns half the points, not nine elevenths; and they only count once the selection names
at least one needed field, so that an empty selection earns nothing. The text in place of the ids is
the central mistake (:data:`CENTRAL`).
"""

from __future__ import annotations

from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Group, Misconception, Verdict, choice_set, exercise_stem, value_case,
)
from . import key

STEM = exercise_stem(__name__)
NAME = "required_fields"

TEXT_INSTEAD_OF_IDS = Misconception(
    "text-instead-of-ids",
    "The response text does not fix the actions: re-tokenising it (another tokenizer version or chat "
    "template) can give different token ids, so store the ids the policy actually sampled.")
TEXT_IS_REQUIRED = Misconception(
    "text-is-required",
    "Ask what the text adds once the token ids are stored: it helps a human audit, but the objective "
    "is computed from ids, masks and log-probabilities.")
UI_COLOUR = Misconception(
    "irrelevant-field",
    "The interface colour changes no action, probability or reward, so it cannot affect the objective.")
STOP_FIELDS_SPLIT = Misconception(
    "stop-fields-split",
    "terminated, truncated and stop_reason answer different questions (did the task end, was it cut off, "
    "and why): the flags come from the raw reason through the task contract, so they travel together.")

# Why a needed field matters, for a student who left it out (the three stop fields share one).
LEFT_OUT = {
    "response_ids": Misconception(
        "ids-left-out",
        "response_ids are the actions the policy took, token by token: without them the objective has "
        "nothing to score."),
    "response_mask": Misconception(
        "mask-left-out",
        "The objective counts only the policy's own tokens: response_mask tells them from prompt and padding "
        "positions."),
    "old_logprobs": Misconception(
        "old-logprobs-left-out",
        "old_logprobs are the ratio's denominator, each token's log-probability under the policy that "
        "sampled it; a later forward pass does not reproduce them exactly."),
    "policy_version": Misconception(
        "policy-version-left-out",
        "policy_version says which weights produced the rollout: the old log-probabilities belong to that "
        "policy, and without it the behaviour policy cannot be identified."),
    "sampling_config": Misconception(
        "sampling-config-left-out",
        "sampling_config holds what turned the logits into the distribution that was sampled (temperature, "
        "bans, truncation): without it the behaviour policy cannot be identified."),
    "reward_raw": Misconception(
        "raw-reward-left-out",
        "reward_raw keeps the task's own reward apart from penalties and regularisers added later, so that "
        "those can be recomputed or changed."),
}
STOP_LEFT_OUT = Misconception(
    "stop-fields-left-out",
    "Where the episode ends, and whether that end is terminal or a cut-off, changes the objective (what a "
    "critic bootstraps from, what is masked or penalised): the stop fields travel with every response.")
STOP_FIELDS = ("terminated", "truncated", "stop_reason")


def _decision_case(field_name: str) -> Case:
    needed = field_name in key.REQUIRED_FIELDS
    # Excluding a distractor earns its (heavier) weight only alongside a real selection.
    weight = len(key.REQUIRED_FIELDS) / len(key.NOT_REQUIRED_FIELDS) if not needed else 1.0

    def judge(answer) -> Verdict:
        chosen = choice_set(answer, key.CANDIDATE_FIELDS, f"`{NAME}`", lone_choice=True)
        if needed:
            if field_name in chosen:
                return PASS
            if field_name == "response_ids" and "response_text" in chosen:
                return Verdict(False, TEXT_INSTEAD_OF_IDS.sentence, TEXT_INSTEAD_OF_IDS.key)
            if field_name in STOP_FIELDS and any(name in chosen for name in STOP_FIELDS):
                return Verdict(False, STOP_FIELDS_SPLIT.sentence, STOP_FIELDS_SPLIT.key)
            mistake = LEFT_OUT.get(field_name, STOP_LEFT_OUT)
            return Verdict(False, mistake.sentence, mistake.key)
        if field_name in chosen:
            if field_name == "response_text":
                mistake = TEXT_INSTEAD_OF_IDS if "response_ids" not in chosen else TEXT_IS_REQUIRED
            else:
                mistake = UI_COLOUR
            return Verdict(False, mistake.sentence, mistake.key)
        if not chosen & key.REQUIRED_FIELDS:
            return Verdict(False, "leaving a field out only counts once your selection names the fields "
                                  "the objective does need")
        return PASS

    return value_case(f"decision on {field_name}", "fields", NAME, judge, weight=weight)


def build_cases() -> list:
    return [_decision_case(field_name) for field_name in key.CANDIDATE_FIELDS]


#: The exercise's central idea: getting it wrong caps the notebook at a third of its points.
CENTRAL = Central(
    "the token ids (not the decoded text) as the record of the actions",
    {TEXT_INSTEAD_OF_IDS.key},
    ("decision on response_ids", "decision on response_text"))

CHECK = ExerciseCheck(
    STEM,
    [Group("fields", 2, "Fields a rollout batch needs to reproduce the training objective")],
    build_cases,
    CENTRAL,
)
