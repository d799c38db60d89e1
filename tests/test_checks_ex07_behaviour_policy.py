"""Exercise 07 (behaviour policy): correct answers earn full marks, each partial replay of the chain is named."""

from __future__ import annotations

import re

import pytest

import check_support as support
from check_support import ConceptCheckTests, hostile_grid

STEM = "07_behaviour_policy"
NAMES = ("ratio_error", "stored_logprob", "behaviour_logprob_token_1", "first_step_ratio", "behaviour_metadata")

# Closed forms: temperature 0.7, token 3 banned, top-p 0.85 keeps tokens 0 and 1.
CANONICAL = """
z = [2.0, 1.0, 0.5, 1.5, -0.5]
log_z = math.log(sum(math.exp(v) for v in z))
ratio_error = "wrong_denominator"
stored_logprob = z[1] - log_z
behaviour_logprob_token_1 = z[1] / 0.7 - math.log(math.exp(z[0] / 0.7) + math.exp(z[1] / 0.7))
first_step_ratio = math.exp(behaviour_logprob_token_1 - stored_logprob)
behaviour_metadata = {"policy_version", "tokenizer_version", "chat_template", "temperature", "banned_token_ids",
                      "top_k", "top_p", "min_tokens_to_keep", "min_p", "penalties", "order", "stop_rules",
                      "sampling_seed", "behaviour_logprob"}
"""

CORRECT = {
    "canonical": CANONICAL,
    "rounded to six significant digits": """
ratio_error = "Wrong denominator"
stored_logprob = -1.82401
behaviour_logprob_token_1 = -1.64340
first_step_ratio = 1.19795
behaviour_metadata = ["policy_version", "tokenizer_version", "chat_template", "temperature", "banned_token_ids",
                      "top_k", "top_p", "min_tokens_to_keep", "min_p", "penalties", "order", "stop_rules",
                      "sampling_seed", "behaviour_logprob"]
""",
    # "token 3 gets probability zero, and the rest are renormalised": a -inf logit does exactly that
    "the ban as a -inf logit, the ratio from probabilities": CANONICAL + """
masked = np.array(z) / 0.7
masked[3] = -np.inf
probs = np.exp(masked - masked.max()); probs /= probs.sum()
nucleus = np.isin(np.arange(5), [0, 1])  # ranked 0, 1, ...: the running sum reaches 0.85 at token 1
behaviour = np.where(nucleus, probs, 0.0); behaviour /= behaviour.sum()
behaviour_logprob_token_1 = float(np.log(behaviour[1]))
base = np.exp(np.array(z)) / np.exp(np.array(z)).sum()
first_step_ratio = behaviour[1] / base[1]
""",
    "float32 numpy pipeline, metadata built from a config record": """
z = np.array([2.0, 1.0, 0.5, 1.5, -0.5], dtype=np.float32)
p = np.exp(z / np.float32(0.7)); p = p / p.sum()
p[3] = 0; p = p / p.sum()
kept = np.argsort(-p, kind="stable")[:2]
ratio_error = "wrong-denominator"
stored_logprob = np.float32(z[1] - np.log(np.exp(z).sum()))
behaviour_logprob_token_1 = np.log(p[1] / p[kept].sum())
first_step_ratio = np.exp(behaviour_logprob_token_1 - stored_logprob)
record = {"temperature": 0.7, "banned_token_ids": [3], "top_k": None, "top_p": 0.85, "min_tokens_to_keep": 1,
          "min_p": None, "penalties": None, "order": ["temperature", "banned_tokens", "top_k", "top_p"]}
behaviour_metadata = frozenset(record) | {"policy_version", "tokenizer_version", "chat_template", "stop_rules",
                                          "sampling_seed", "behaviour_logprob"}
print(behaviour_metadata)
""",
}

WRONG = [
    ("base softmax stored as behaviour", CANONICAL + "behaviour_logprob_token_1 = stored_logprob",
     "base-softmax-as-behaviour"),
    ("temperature only", CANONICAL + "behaviour_logprob_token_1 = z[1] / 0.7 - math.log(sum(math.exp(v / 0.7) "
     "for v in z))", "temperature-only"),
    ("no top-p", CANONICAL + "behaviour_logprob_token_1 = z[1] / 0.7 - math.log(sum(math.exp(v / 0.7) "
     "for i, v in enumerate(z) if i != 3))", "forgot-top-p"),
    # Without the ban, top-p 0.85 keeps tokens 0, 3 and 1 of the tempered distribution.
    ("no ban", CANONICAL + "t = [math.exp(v / 0.7) for v in z]\n"
     "behaviour_logprob_token_1 = math.log(t[1] / (t[0] + t[3] + t[1]))", "forgot-bans"),
    ("no temperature", CANONICAL + "behaviour_logprob_token_1 = z[1] - math.log(sum(math.exp(v) for v in z[:3]))",
     "forgot-temperature"),
    ("noise that averages out", CANONICAL + 'ratio_error = "averages_out"', "error-is-noise"),
    ("transforms cancel", CANONICAL + 'ratio_error = "cancels"', "transforms-cancel"),
    ("ratio of one", CANONICAL + "first_step_ratio = 1.0", "transforms-cancel"),
    ("numerator blamed", CANONICAL + 'ratio_error = "wrong_numerator"', "numerator-blamed"),
    ("ratio upside down", CANONICAL + "first_step_ratio = 1 / first_step_ratio", "ratio-upside-down"),
    ("order not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"order"}', "order-irrelevant"),
    ("old log-prob to be recomputed", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"behaviour_logprob"}',
     "recompute-later"),
    ("ui colour", CANONICAL + 'behaviour_metadata = behaviour_metadata | {"ui_colour"}', "irrelevant-metadata"),
    ("learning rate", CANONICAL + 'behaviour_metadata = behaviour_metadata | {"learning_rate"}',
     "trainer-setting-as-behaviour"),
    ("reward", CANONICAL + 'behaviour_metadata = behaviour_metadata | {"reward_raw"}', "reward-as-behaviour"),
    # "natural logarithms": the same log-probabilities in bits or decimal digits
    ("stored value in bits", CANONICAL + "stored_logprob = stored_logprob / math.log(2)", "log-base"),
    ("behaviour value in base 10", CANONICAL + "behaviour_logprob_token_1 = behaviour_logprob_token_1 / math.log(10)",
     "log-base"),
    # log-probabilities, not probabilities, and not their negatives
    ("stored probability", CANONICAL + "stored_logprob = math.exp(stored_logprob)", "probability-not-log"),
    ("behaviour probability", CANONICAL + "behaviour_logprob_token_1 = math.exp(behaviour_logprob_token_1)",
     "probability-not-log"),
    ("stored NLL", CANONICAL + "stored_logprob = -stored_logprob", "negated-log-probs"),
    ("behaviour NLL", CANONICAL + "behaviour_logprob_token_1 = -behaviour_logprob_token_1", "negated-log-probs"),
    # "keep the shortest prefix whose total probability reaches 0.85": the threshold token is kept ...
    ("nucleus without the threshold token", CANONICAL + "behaviour_logprob_token_1 = -math.inf",
     "top-p-drops-threshold-token"),
    # ... and nothing after it; temperature first ("in this order"): top-p on the untempered
    # distribution keeps tokens 0, 1 and 2
    ("temperature applied last", CANONICAL + (
        "behaviour_logprob_token_1 = z[1] / 0.7 - math.log(sum(math.exp(z[i] / 0.7) for i in (0, 1, 2)))"),
     "nucleus-too-large"),
    # "What ratio": the ratio, not its log
    ("log of the ratio", CANONICAL + "first_step_ratio = math.log(first_step_ratio)", "log-ratio-not-ratio"),
    # "at least 6 significant digits": a rounding to 4 is named, and a number in quotes is text
    ("rounded to 4 digits", CANONICAL + "first_step_ratio = 1.198", "too-few-digits"),
    ("a number in quotes", CANONICAL + 'stored_logprob = "-1.824011"', "number-as-text"),
    # Part B: every field, each with its own reason
    ("a switched-off setting left out", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"min_tokens_to_keep"}',
     "off-settings-left-out"),
    ("temperature not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"temperature"}',
     "sampling-setting-left-out"),
    ("ban not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"banned_token_ids"}',
     "sampling-setting-left-out"),
    ("top-p not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"top_p"}',
     "sampling-setting-left-out"),
    ("weights not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"policy_version"}',
     "weights-left-out"),
    ("tokenizer not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"tokenizer_version"}',
     "context-left-out"),
    ("template not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"chat_template"}',
     "context-left-out"),
    ("seed not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"sampling_seed"}', "draws-left-out"),
    ("stop rules not recorded", CANONICAL + 'behaviour_metadata = behaviour_metadata - {"stop_rules"}',
     "draws-left-out"),
    # form: a set of names from the table (an unknown name, or one string, is refused)
    ("a name not in the table", CANONICAL + 'behaviour_metadata = behaviour_metadata | {"logits"}', None,
     "every sampling setting is recorded"),
    ("one string", CANONICAL + 'behaviour_metadata = "temperature"', None, "every sampling setting is recorded"),
    ("an option not offered", CANONICAL + 'ratio_error = "wrong_ratio"', None, "what goes wrong in the ratio"),
]

#: Mistakes that get the central idea wrong: the base softmax taken for the behaviour policy, or the stored
#: value called harmless.
CENTRAL_MISTAKES = ("base softmax stored as behaviour", "noise that averages out", "transforms cancel", "ratio of one",
                    "numerator blamed")


def test_forgetting_the_ban_is_named():
    # Without the ban, top-p 0.85 keeps tokens 0, 3 and 1 of the tempered distribution.
    source = CANONICAL + ("t = [math.exp(v / 0.7) for v in z]\n"
                          "behaviour_logprob_token_1 = math.log(t[1] / (t[0] + t[3] + t[1]))")
    support.assert_mistake(STEM, source, "forgot-bans")


def test_key_metadata_follows_the_reference_record():
    from autograder.exercises import load_key
    key = load_key('07_behaviour_policy')
    from autograder.reference import SamplingConfig

    assert set(SamplingConfig().as_record()) <= set(key.METADATA_OPTIONS)
    assert set(key.CONFIG.as_record()) <= key.REQUIRED_METADATA


def test_settings_switched_off_here_are_still_required():
    """min-p and the penalties are off in the notebook's example, yet the record needs them (the seed lists both)."""
    for dropped, in (("min_p",), ("penalties",), ("top_k",)):
        result = support.result_of(STEM, CANONICAL + f'behaviour_metadata = behaviour_metadata - {{"{dropped}"}}')
        metadata = next(group for group in result.groups if group.name == "metadata")
        assert metadata.points_earned < 1, (dropped, result.feedback())
        assert "switched off" in result.feedback(), result.feedback()


class TestBehaviourPolicy(ConceptCheckTests):
    stem = STEM
    groups = ("ratio", "metadata")
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: tuple(rest) for label, *rest in WRONG}
    central_mistakes = CENTRAL_MISTAKES
    hostile = hostile_grid(CANONICAL, NAMES)


def test_selecting_every_field_earns_only_the_completeness_cases():
    source = CANONICAL + ("behaviour_metadata = behaviour_metadata | "
                          '{"ui_colour", "learning_rate", "reward_raw"}')
    result = support.result_of(STEM, source)
    metadata = next(group for group in result.groups if group.name == "metadata")
    assert metadata.points_earned == pytest.approx(0.66), result.feedback()


def test_a_side_slip_is_not_capped():
    """Forgetting one transform, or one field, costs its case only: the central idea is intact."""
    for source in (CANONICAL + 'behaviour_metadata = behaviour_metadata - {"order"}',
                   CANONICAL + "first_step_ratio = 1 / first_step_ratio"):
        result = support.result_of(STEM, source)
        assert not any(group.capped for group in result.groups), result.feedback()
        assert result.points_earned > 1.5, result.feedback()


def test_open_checks_catch_the_central_mistake_without_the_key():
    """The open check refuses the base softmax as the behaviour policy and an inconsistent ratio, with a
    teaching message, and never prints an expected value."""
    cell = next(cell for cell in support.source_notebook(STEM).cells if cell.id == "check-ratio")
    for source, message in ((CANONICAL + "behaviour_logprob_token_1 = stored_logprob\nfirst_step_ratio = 1.0",
                             "not the base softmax"),
                            (CANONICAL + "first_step_ratio = 1.0", "exp\\(numerator log-prob"),
                            (CANONICAL + "first_step_ratio = 1 / first_step_ratio", "exp\\(numerator log-prob")):
        namespace = support.namespace_from(source)
        with pytest.raises(AssertionError, match=message) as raised:
            exec(cell.source, namespace)
        assert not re.search(r"\d\.\d{3,}", str(raised.value)), str(raised.value)
    exec(cell.source, support.namespace_from(CANONICAL))


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in TestBehaviourPolicy.wrong.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
