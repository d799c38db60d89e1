"""Exercise 08 (rollout contract): right selections in any container get full marks, each classic
slip loses points under its own name, and hostile values never score."""

from autograder.exercises import load_key
key = load_key('08_rollout_contract')
from check_support import ConceptCheckTests, failure_messages, hostile_rebinds, result_of, run_cells, source_notebook

STEM = "08_rollout_contract"
NEEDED = ('"response_ids", "response_mask", "old_logprobs", "policy_version", "sampling_config", '
          '"reward_raw", "terminated", "truncated", "stop_reason"')

CORRECT = {
    "set": f"required_fields = {{{NEEDED}}}",
    "list": f"required_fields = [{NEEDED}]",
    "tuple with a duplicate": f"required_fields = ({NEEDED}, 'response_ids')",
    "frozenset": f"required_fields = frozenset([{NEEDED}])",
    "other case and spaces": "required_fields = {n.upper() + ' ' for n in [" + NEEDED + "]}",
    "numpy array of str": f"required_fields = np.array([{NEEDED}])",
    "printing on the way": f"print('choosing'); required_fields = {{{NEEDED}}}",
}

WRONG_FIELDS = {
    "text instead of ids": (NEEDED.replace('"response_ids"', '"response_text"'), "text-instead-of-ids"),
    "text next to ids": (NEEDED + ', "response_text"', "text-is-required"),
    "UI colour": (NEEDED + ', "ui_color"', "irrelevant-field"),
    "only one stop flag": (NEEDED.replace('"truncated", "stop_reason"', '"truncated"'), "stop-fields-split"),
    "every candidate": ('"' + '", "'.join(key.CANDIDATE_FIELDS) + '"', "text-is-required"),
    "no old log-probs": (NEEDED.replace('"old_logprobs", ', ""), "old-logprobs-left-out"),
    # "every field you cannot do without": each needed field left out is named
    "no ids, no text": (NEEDED.replace('"response_ids", ', ""), "ids-left-out"),
    "no mask": (NEEDED.replace('"response_mask", ', ""), "mask-left-out"),
    "no policy version": (NEEDED.replace('"policy_version", ', ""), "policy-version-left-out"),
    "no sampling config": (NEEDED.replace('"sampling_config", ', ""), "sampling-config-left-out"),
    "no raw reward": (NEEDED.replace('"reward_raw", ', ""), "raw-reward-left-out"),
    "no stop fields": (NEEDED.replace(', "terminated", "truncated", "stop_reason"', ""), "stop-fields-left-out"),
    # "the stop flags come from the raw stop reason": the flags without the reason are not enough
    "flags without the raw reason": (NEEDED.replace(', "stop_reason"', ""), "stop-fields-split"),
}


def test_partial_credit_rewards_a_nearly_right_selection_more_than_everything_or_nothing():
    without_reward = NEEDED.replace(', "reward_raw"', "")
    one_missing = result_of(STEM, f"required_fields = {{{without_reward}}}")
    everything = result_of(STEM, f"required_fields = set({key.CANDIDATE_FIELDS!r})")
    nothing = result_of(STEM, "required_fields = set()")
    assert 1.5 < one_missing.points_earned < 2
    assert list(one_missing.misconceptions) == ["raw-reward-left-out"]
    assert everything.points_earned == 1  # half: the two fields to leave out weigh as much as the nine
    assert everything.points_earned < one_missing.points_earned
    assert nothing.points_earned == 0
    # The hint for the missing field teaches without printing the answer list.
    assert any("reward_raw" in message for message in failure_messages(one_missing))


HOSTILE = {
    "unknown name": "required_fields = {'response_ids', 'logits'}",
    "a single string of everything": f"required_fields = ','.join([{NEEDED}])",
    "numbers": "required_fields = {1, 2, 3}",
    "a set subclass that claims to contain everything": (
        "class Everything(set):\n    def __contains__(self, item):\n        return True\n"
        "required_fields = Everything({'ui_color'})"),
    "an object with a custom __eq__": (
        "class Equal:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "required_fields = Equal()"),
    "a generator": f"required_fields = (name for name in [{NEEDED}])",
    "a dict of names": f"required_fields = dict.fromkeys([{NEEDED}])",
    "a huge list": "required_fields = ['response_ids'] * 100_000",
    "a property that raises": (
        "class Boom:\n    @property\n    def fields(self):\n        raise RuntimeError('boom')\n"
        "required_fields = Boom()"),
}


class TestRolloutContract(ConceptCheckTests):
    stem = STEM
    groups = ("fields",)
    autograded_points, total_points = 2, 3
    correct = CORRECT
    wrong = {label: (f"required_fields = {{{fields}}}", mistake) for label, (fields, mistake) in WRONG_FIELDS.items()}
    central_mistakes = ("text instead of ids",)
    hostile = hostile_rebinds("", HOSTILE)  # every case reads the one answer: a hostile value earns nothing


def test_unknown_names_are_reported_by_name():
    result = result_of(STEM, "required_fields = {'response_ids', 'logits'}")
    assert all("'logits'" in message for message in failure_messages(result))


def test_the_notebook_lists_the_same_candidates_as_the_key():
    namespace = run_cells(source_notebook(STEM))
    assert tuple(namespace["CANDIDATE_FIELDS"]) == key.CANDIDATE_FIELDS
    assert key.NOT_REQUIRED_FIELDS == {"response_text", "ui_color"}


def test_text_next_to_the_ids_is_not_capped():
    """Keeping the text for audit beside the ids is a side slip, not the central mistake."""
    result = result_of(STEM, f"required_fields = {{{NEEDED}, 'response_text'}}")
    assert not any(group.capped for group in result.groups), result.feedback()
    assert result.points_earned > 1


def test_open_check_catches_text_in_place_of_the_ids_without_the_key():
    """The open check refuses the text without the ids (what the intro already says) and nothing else."""
    import pytest

    from check_support import namespace_from
    cell = next(cell for cell in source_notebook(STEM).cells if cell.id == "check-fields")
    setup = "CANDIDATE_FIELDS = " + repr(key.CANDIDATE_FIELDS) + "\n"
    with pytest.raises(AssertionError, match="does not fix the actions"):
        exec(cell.source, namespace_from(setup + f"required_fields = {{{NEEDED.replace('response_ids', 'response_text')}}}"))
    for selection in (f"{{{NEEDED}}}", "{'response_ids'}", "{'ui_color'}", "set()"):
        exec(cell.source, namespace_from(setup + f"required_fields = {selection}"))  # no verdict on the content


def test_every_misconception_of_the_check_has_a_wrong_answer_in_the_corpus():
    from autograder.insight.catalogue import of_notebook

    named = {mistake[1] for mistake in TestRolloutContract.wrong.values()}
    assert {entry.key for entry in of_notebook(STEM)} <= named
