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
    "no old log-probs": (NEEDED.replace('"old_logprobs", ', ""), None),
}


def test_partial_credit_rewards_a_nearly_right_selection_more_than_everything_or_nothing():
    without_reward = NEEDED.replace(', "reward_raw"', "")
    one_missing = result_of(STEM, f"required_fields = {{{without_reward}}}")
    everything = result_of(STEM, f"required_fields = set({key.CANDIDATE_FIELDS!r})")
    nothing = result_of(STEM, "required_fields = set()")
    assert 1.5 < one_missing.points_earned < 2
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
    hostile = hostile_rebinds("", HOSTILE)  # every case reads the one answer: a hostile value earns nothing


def test_unknown_names_are_reported_by_name():
    result = result_of(STEM, "required_fields = {'response_ids', 'logits'}")
    assert all("'logits'" in message for message in failure_messages(result))


def test_the_notebook_lists_the_same_candidates_as_the_key():
    namespace = run_cells(source_notebook(STEM))
    assert tuple(namespace["CANDIDATE_FIELDS"]) == key.CANDIDATE_FIELDS
    assert key.NOT_REQUIRED_FIELDS == {"response_text", "ui_color"}
