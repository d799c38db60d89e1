"""Hidden checks for exercise 04: what a lower response perplexity does and does not say.

Answers (documented in the notebook): ``claims`` (claim -> bool) and ``incomparable_reasons`` (a set of
reason names from the notebook's list). The key is :mod:`autograder.exercises.04_what_ppl_says.key`.
``"log_base"`` is accepted chosen or not (perplexity is base-free, a reported NLL is not).
The three claims are the central idea: a wrong claim caps both parts at a third (see ``CENTRAL``).
"""

from __future__ import annotations

from autograder.checks.authoring import (
    PASS, Central, ExerciseCheck, Group, Misconception, Verdict, boolean, choice_set, entry, exercise_stem, same,
    value_case,
)
from . import key

STEM = exercise_stem(__name__)
REASONS = "incomparable_reasons"

CLAIM_MISTAKES = {
    "more_correct_answers": Misconception(
        "ppl-measures-correctness",
        "PPL only says how probable the model found the tokens; a fluent, likely continuation can still be "
        "factually wrong."),
    "more_useful": Misconception(
        "ppl-measures-utility",
        "Usefulness depends on what the answer does for the user, which no average of token "
        "log-probabilities captures."),
    "better_token_prediction": Misconception(
        "ppl-says-nothing",
        "Under one tokenizer, template and mask, on the same responses, PPL is a monotone function of the "
        "mean negative log-probability of the selected tokens."),
}
DISTRACTOR_MISTAKES = {
    "batch_size": Misconception(
        "batch-size-changes-ppl",
        "With padding masked out, PPL averages over the same tokens whatever the batch size, so the batch "
        "size does not move it."),
    "example_order": Misconception(
        "order-changes-ppl",
        "An average does not depend on the order of its terms: shuffling the examples leaves PPL unchanged."),
    "parameter_count": Misconception(
        "size-is-protocol",
        "Models of different sizes are exactly what PPL under one protocol compares: size is the thing being "
        "measured, not a change of the measuring protocol."),
}
MISSING_MISTAKES = {
    "tokenizer": Misconception(
        "tokenizer-irrelevant",
        "The tokenizer decides how many tokens the same text becomes, and PPL is a per-token average: the "
        "same model on the same text gets another PPL under another tokenizer."),
    "response_mask": Misconception(
        "mask-irrelevant",
        "The mask decides which positions enter the average: counting the prompt, the EOS token or padding "
        "changes both the sum and the count, with the model unchanged."),
    "chat_template": Misconception(
        "template-irrelevant",
        "The chat template is text the model conditions on: another template changes the log-probability "
        "of every response token, with the model unchanged."),
    "dataset": Misconception(
        "dataset-irrelevant",
        "PPL on other prompts and responses measures other text: two datasets give two numbers that do not "
        "measure the same thing."),
    "aggregation": Misconception(
        "aggregation-irrelevant",
        "How the responses are combined changes the number: exp of the mean NLL over all tokens pooled weights "
        "long responses more, while the mean of per-response PPLs (verl's training_ppl) weights every response "
        "equally and averages after the exp. They agree only when every response has the same mean NLL."),
}
if set(DISTRACTOR_MISTAKES) != set(key.DISTRACTORS):
    raise RuntimeError("every distractor needs its misconception")
if set(MISSING_MISTAKES) != set(key.VALID_REASONS):
    raise RuntimeError("every valid reason needs the misconception of leaving it out")


def _claim_case(claim: str):
    def judge(answer) -> Verdict:
        what = f"claims[{claim!r}]"
        got = boolean(entry(answer, claim, "claims"), what)
        truth = key.CLAIM_TRUTH[claim]
        return same(got, truth, what, {not truth: CLAIM_MISTAKES[claim]})

    return value_case(f"claim {claim}", "claims", "claims", judge)


def _distractor_verdict(chosen: frozenset):
    for option in key.REASON_OPTIONS:  # notebook order, so the feedback is stable
        if option in chosen and option in DISTRACTOR_MISTAKES:
            mistake = DISTRACTOR_MISTAKES[option]
            return Verdict(False, mistake.sentence, mistake.key)
    return None


def _missing_verdict(chosen: frozenset):
    for option in key.REASON_OPTIONS:  # notebook order, so the feedback is stable
        if option in MISSING_MISTAKES and option not in chosen:
            mistake = MISSING_MISTAKES[option]
            return Verdict(False, mistake.sentence, mistake.key)
    return None


def _valid_reasons(answer) -> Verdict:
    chosen = choice_set(answer, key.REASON_OPTIONS, REASONS)
    wrong = _distractor_verdict(chosen)
    if wrong is not None:
        return wrong
    if len(chosen & (key.VALID_REASONS | key.EITHER_WAY)) < key.MIN_REASONS:
        return _missing_verdict(chosen)  # fewer than two: at least two valid reasons are missing
    return PASS


def _all_reasons(answer) -> Verdict:
    return _missing_verdict(choice_set(answer, key.REASON_OPTIONS, REASONS)) or PASS


def build_cases() -> list:
    cases = [_claim_case(claim) for claim in key.CLAIMS]
    cases += [
        value_case("at least two valid reasons and no irrelevant one", "protocol", REASONS, _valid_reasons),
        value_case("every reason that breaks comparability", "protocol", REASONS, _all_reasons),
    ]
    return cases


#: The exercise's central idea: a lower PPL says how well the tokens are predicted, and nothing more.
#: Getting a claim wrong caps every part at a third of its points.
CENTRAL = Central(
    "the reading of a lower PPL (better prediction of the same tokens, not better answers)",
    {mistake.key for mistake in CLAIM_MISTAKES.values()},
    tuple(f"claim {claim}" for claim in key.CLAIMS))

CHECK = ExerciseCheck(
    STEM,
    [Group("claims", 1, "What a lower PPL does and does not show"),
     Group("protocol", 1, "When two PPL values cannot be compared")],
    build_cases,
    CENTRAL,
)
