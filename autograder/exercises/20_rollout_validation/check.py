"""Hidden checks for exercise 20: structural validation of a rollout batch.

Valid batches (batch sizes 1 to 5, arrays or plain lists) must be accepted and summarised exactly
as :func:`autograder.reference.validate_rollout_batch` does, including rows with ``terminated`` and
``truncated`` both true (the seed: structure and task semantics are separate checks). Every
structural rule is then broken in isolation, on an otherwise valid batch, and must raise
``ValueError`` or ``TypeError``. Several missing fields at once must all be named in the message;
``terminated``/``truncated`` must be booleans; ``mean_response_length`` must be a float.

The exercise's central idea is that the validator stops broken batches: an answer that lets through
most of the rule cases of :data:`CENTRAL` (one per kind of rule) earns at most a third of the points.
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call, Raised, Returned
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Reject, Verdict, exercise_stem, expect_error, field,
    redraw, scalar, shared as _shared, value_of,
)
from autograder import reference

STEM = exercise_stem(__name__)

FIELDS = ("response_ids", "response_mask", "old_logprobs", "ref_logprobs",
          "sequence_rewards", "terminated", "truncated", "stop_reason")
SUMMARY_FIELDS = ("batch_size", "max_response_tokens", "active_tokens", "terminated_sequences",
                  "truncated_sequences", "mean_response_length")

GROUPS = (
    Group("public", 2, "The notebook's open checks: the example batch, and the same batch with a NaN reward"),
    Group("summary", 3, "Valid batches (sizes 1 to 5, arrays or lists, both stop flags set) are summarised"),
    Group("structure", 2, "Missing fields, misaligned shapes and bad response masks are rejected"),
    Group("values", 2, "Non-finite log-probabilities or rewards, finite padding and bad stop reasons are rejected"),
)

FLAGS_EXCLUSIVE = _shared.FLAGS_EXCLUSIVE
PADDING_COUNTED = _shared.PADDING_COUNTED
MISSING_FIELD_KEYERROR = Misconception(
    "missing-field-keyerror",
    "A missing field surfaced as a KeyError from a lookup: check that every required field is present "
    "first and raise ValueError naming the missing ones.")
MISSING_NOT_ALL_NAMED = Misconception(
    "missing-fields-not-all-named",
    "Several fields are missing but the message does not name them all: collect every missing name "
    "first, then raise one ValueError that lists them, so that the caller can fix the batch in one go.")
MEAN_NOT_FLOAT = Misconception(
    "mean-length-not-float",
    "mean_response_length should be a float, active_tokens / B with true division: an integer (from // "
    "or int()) loses the fraction.")
SILENT = "silent-bad-input"
#: Said instead of a rule's misconception where the control call shows that the validator rejects
#: valid batches whatever the rule at hand (a validator that raises on everything has no rule to blame).
REJECTS_VALID_FLAGS = ("validate_rollout_batch raised on this valid batch and also on the same batch with one "
                       "stop flag per response, so its flags are not the cause: a validator must accept every "
                       "batch that breaks no rule.")
REJECTS_VALID_FIELDS = ("the error does not name every missing field, and validate_rollout_batch also raised on "
                        "the same batch with every field present: a validator must accept every batch that "
                        "breaks no rule.")


# ----------------------------------------------------------------------------- batches


def random_batch(rng: np.random.Generator, batch_size: int, max_tokens: int, *, both_flags: bool = False,
                 padded: bool = True) -> dict:
    """A structurally valid batch: right-padded masks, NaN log-probabilities on padding.

    With ``padded`` a batch of two or more responses over two or more positions has a padding position
    (drawn again until it does), so that counting the padded width instead of the active tokens is
    wrong on it; a case that overwrites the mask passes ``padded=False``."""
    if not padded or batch_size < 2 or max_tokens < 2:
        return _draw_batch(rng, batch_size, max_tokens, both_flags)
    return redraw(lambda: _draw_batch(rng, batch_size, max_tokens, both_flags),
                  lambda batch: not batch["response_mask"].all(), "a padding position")


def _draw_batch(rng: np.random.Generator, batch_size: int, max_tokens: int, both_flags: bool) -> dict:
    lengths = rng.integers(1, max_tokens + 1, size=batch_size)
    lengths[rng.integers(batch_size)] = max_tokens  # the padded width is the longest response
    mask = np.arange(max_tokens)[None, :] < lengths[:, None]
    ids = np.where(mask, rng.integers(3, 32_000, size=(batch_size, max_tokens)), 0)
    old = np.where(mask, -rng.exponential(1.0, size=(batch_size, max_tokens)), np.nan)
    ref = np.where(mask, -rng.exponential(1.0, size=(batch_size, max_tokens)), np.nan)
    terminated = rng.random(batch_size) < 0.6
    truncated = rng.random(batch_size) < 0.4
    if both_flags:
        terminated[0] = truncated[0] = True
    reasons = np.array(["eos", "length", "stop", "abort"], dtype=object)[rng.integers(4, size=batch_size)]
    return {
        "response_ids": ids.astype(np.int64),
        "response_mask": mask.astype(np.int64),
        "old_logprobs": old,
        "ref_logprobs": ref,
        "sequence_rewards": rng.normal(size=batch_size),
        "terminated": terminated,
        "truncated": truncated,
        "stop_reason": reasons,
    }


def seed_batch() -> dict:
    return {
        "response_ids": np.array([[5, 6], [7, 8]]),
        "response_mask": np.array([[1, 1], [1, 0]]),
        "old_logprobs": np.array([[-0.1, -0.2], [-0.3, np.nan]]),
        "ref_logprobs": np.array([[-0.2, -0.3], [-0.4, np.nan]]),
        "sequence_rewards": np.array([1.0, 0.0]),
        "terminated": np.array([True, False]),
        "truncated": np.array([False, True]),
        "stop_reason": np.array(["stop_string", "abort"], dtype=object),
    }


def as_lists(batch: dict) -> dict:
    return {name: np.asarray(value).tolist() for name, value in batch.items()}


def _copy(batch: dict) -> dict:
    return {name: np.array(value, copy=True) for name, value in batch.items()}


# ----------------------------------------------------------------------------- judges


def _summary_values(value) -> dict:
    return {name: scalar(field(value, name, "the summary"), name) for name in SUMMARY_FIELDS}


def exclusive_flags(batch: dict) -> dict:
    """The same batch with every response either terminated or truncated, never both (still valid, in
    the same container types): the control that tells a flags rule from a validator that rejects all."""
    twin = {name: (list(value) if isinstance(value, list) else np.array(value, copy=True))
            for name, value in batch.items()}
    terminated = np.asarray(batch["terminated"], dtype=bool)
    truncated = ~terminated
    twin["truncated"] = truncated.tolist() if isinstance(batch["truncated"], list) else truncated
    reference.validate_rollout_batch(_copy(twin))  # the control must be valid
    return twin


def _judge_summary(batch: dict):
    expected = reference.validate_rollout_batch(_copy(batch))
    mask = np.asarray(batch["response_mask"], dtype=bool)
    want = {name: float(getattr(expected, name)) for name in SUMMARY_FIELDS}
    both = bool(np.any(np.asarray(batch["terminated"], dtype=bool) & np.asarray(batch["truncated"], dtype=bool)))

    def judge(outcomes):
        outcome = outcomes[0]
        if isinstance(outcome, Raised) and both and outcome.is_a("ValueError", "TypeError"):
            # Named only when the same batch with exclusive flags (the second call) is accepted: a
            # validator that rejects every batch has no flags rule to blame.
            if len(outcomes) > 1 and isinstance(outcomes[1], Returned):
                raise FLAGS_EXCLUSIVE.reject()
            raise Reject(REJECTS_VALID_FLAGS)
        summary = value_of(outcome, "validate_rollout_batch")
        got = _summary_values(summary)
        mean = field(summary, "mean_response_length", "the summary")
        if isinstance(mean, int) or (isinstance(mean, np.ndarray) and mean.dtype.kind in "biu"):
            raise MEAN_NOT_FLOAT.reject()
        wrong = [name for name in SUMMARY_FIELDS
                 if not abs(got[name] - want[name]) <= 1e-12 * max(1.0, abs(want[name]))]
        if not wrong:
            return PASS
        padded = {"active_tokens": float(mask.size), "mean_response_length": float(mask.shape[1])}
        if any(name in padded and got[name] == padded[name] != want[name] for name in wrong):
            return Verdict(False, PADDING_COUNTED.sentence, PADDING_COUNTED.key)
        return Verdict(False, f"the summary's {', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} "
                              "not correct for this batch")

    return judge


def _judge_missing_named(missing: tuple, problem: str):
    """Rejected with ValueError or TypeError, and every missing field named in the message.

    The second call sends the valid batch the fields were removed from: when that is rejected too, the
    message is no evidence about naming missing fields (the validator rejects everything), so the
    misconception is not named."""
    def judge(outcomes):
        outcome = outcomes[0]
        if isinstance(outcome, Raised) and outcome.is_a("KeyError"):
            raise MISSING_FIELD_KEYERROR.reject()
        verdict = expect_error(outcome, problem=problem)
        if not verdict.passed:
            return verdict
        unnamed = [name for name in missing if name not in (outcome.message or "")]
        if unnamed:
            if len(outcomes) > 1 and not isinstance(outcomes[1], Returned):
                return Verdict(False, REJECTS_VALID_FIELDS)
            return Verdict(False, MISSING_NOT_ALL_NAMED.sentence, MISSING_NOT_ALL_NAMED.key)
        return PASS

    return judge


def _judge_public(outcomes):
    summary = value_of(outcomes[0], "validate_rollout_batch")
    checks = (("batch_size", 2), ("active_tokens", 3), ("terminated_sequences", 1), ("truncated_sequences", 1))
    for name, want in checks:
        if scalar(field(summary, name, "the summary"), name) != want:
            raise Reject(f"summary.{name} should be {want} for the notebook's example batch")
    return PASS


def _judge_rejected(problem: str, *, missing: bool = False):
    def judge(outcomes):
        outcome = outcomes[0]
        if missing and isinstance(outcome, Raised) and outcome.is_a("KeyError"):
            raise MISSING_FIELD_KEYERROR.reject()
        return expect_error(outcome, problem=problem)

    return judge


# ----------------------------------------------------------------------------- cases


def _broken(base: dict, name: str, group: str, problem: str, change, *, missing: bool = False,
            weight: float = 1.0) -> Case:
    batch = _copy(base)
    change(batch)
    # Guard against a mistaken case: the reference must reject what we call invalid.
    try:
        reference.validate_rollout_batch(_copy(batch))
    except (ValueError, TypeError):
        pass
    else:
        raise RuntimeError(f"{STEM}: the reference accepts the batch of case {name!r}")
    return Case(name, group, (Call("validate_rollout_batch", (batch,)),),
                _judge_rejected(problem, missing=missing), weight)


def _set(name: str, value):
    def change(batch):
        batch[name] = value
    return change


def _set_item(name: str, index: tuple, value):
    def change(batch):
        array = np.array(batch[name], dtype=object if name == "stop_reason" else None)
        array[index] = value
        batch[name] = array
    return change


def _drop(name: str):
    def change(batch):
        del batch[name]
    return change


def _cases_public():
    """The notebook's open checks: its example batch, valid and with a NaN reward."""
    cases = [Case("the notebook's example batch", "public",
                  (Call("validate_rollout_batch", (seed_batch(),)),), _judge_public)]
    nan_reward = seed_batch()
    nan_reward["sequence_rewards"] = np.array([1.0, np.nan])
    cases.append(_broken(seed_batch(), "the notebook's example batch with a NaN reward", "public", "a NaN reward",
                         _set("sequence_rewards", nan_reward["sequence_rewards"])))
    return cases


def _cases_valid(rng):
    """summary: valid batches of every size and form (both flags, lists, strings, no padding)."""
    cases = []
    valid = []
    for batch_size, max_tokens in ((1, 1), (2, 5), (3, 4), (4, 7), (5, 3)):
        valid.append((f"a valid batch of {batch_size}", random_batch(rng, batch_size, max_tokens)))
    both = random_batch(rng, 3, 5, both_flags=True)
    valid.append(("a response both terminated and truncated is structurally valid", both))
    all_both = random_batch(rng, 2, 3)
    all_both["terminated"][:] = True
    all_both["truncated"][:] = True
    valid.append(("every response both terminated and truncated", all_both))
    valid.append(("the batch given as plain lists", as_lists(random_batch(rng, 4, 6, both_flags=True))))
    unicode_reasons = random_batch(rng, 3, 3)
    unicode_reasons["stop_reason"] = unicode_reasons["stop_reason"].astype(str)
    unicode_reasons["response_mask"] = unicode_reasons["response_mask"].astype(bool)
    valid.append(("a boolean mask and a fixed-width string array of stop reasons", unicode_reasons))
    full = random_batch(rng, 2, 4, padded=False)
    full["response_mask"][:] = 1
    full["old_logprobs"] = -rng.exponential(size=(2, 4))
    full["ref_logprobs"] = -rng.exponential(size=(2, 4))
    valid.append(("no padding at all", full))
    for name, batch in valid:
        calls = (Call("validate_rollout_batch", (batch,)),)
        if np.any(np.asarray(batch["terminated"], dtype=bool) & np.asarray(batch["truncated"], dtype=bool)):
            calls += (Call("validate_rollout_batch", (exclusive_flags(batch),)),)
        cases.append(Case(name, "summary", calls, _judge_summary(batch)))
    return cases


def _base_batch(rng):
    """A valid batch of 3 responses over 4 positions, whose rules the structure and values cases break one at a time."""
    base = random_batch(rng, 3, 4, padded=False)
    base["response_mask"] = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    base["old_logprobs"] = np.where(base["response_mask"] == 1, -rng.exponential(size=(3, 4)), np.nan)
    base["ref_logprobs"] = np.where(base["response_mask"] == 1, -rng.exponential(size=(3, 4)), np.nan)
    base["response_ids"] = np.where(base["response_mask"] == 1, base["response_ids"], 0)
    reference.validate_rollout_batch(_copy(base))  # the base itself is valid
    return base


def _cases_structure(base):
    """structure: each rule of fields and shapes broken in isolation on the base batch."""
    cases = []
    for name in FIELDS:
        cases.append(_broken(base, f"the field {name!r} is missing", "structure", f"a batch without {name!r}",
                             _drop(name), missing=True, weight=0.25))
    for missing in (("old_logprobs", "truncated", "stop_reason"), FIELDS[1:]):
        batch = _copy(base)
        for name in missing:
            del batch[name]
        label = "three fields are missing" if len(missing) == 3 else "only response_ids is present"
        cases.append(Case(f"{label}: all of them are named", "structure",
                          (Call("validate_rollout_batch", (batch,)), Call("validate_rollout_batch", (_copy(base),))),
                          _judge_missing_named(missing, f"a batch without {', '.join(missing)}"), 0.5))
    cases += [
        _broken(base, "old_logprobs has one more column than response_ids", "structure",
                "an old_logprobs wider than response_ids",
                _set("old_logprobs", np.concatenate([base["old_logprobs"], np.full((3, 1), np.nan)], axis=1))),
        _broken(base, "response_mask has one column fewer", "structure", "a response mask narrower than the ids",
                _set("response_mask", base["response_mask"][:, :3])),
        _broken(base, "ref_logprobs has one row fewer", "structure", "a ref_logprobs with a row missing",
                _set("ref_logprobs", base["ref_logprobs"][:2])),
        _broken(base, "sequence_rewards has B + 1 entries", "structure", "one reward too many",
                _set("sequence_rewards", np.append(base["sequence_rewards"], 0.5))),
        _broken(base, "terminated has shape [B, 1]", "structure", "a terminated of shape [B, 1]",
                _set("terminated", base["terminated"][:, None])),
        _broken(base, "stop_reason has B - 1 entries", "structure", "a stop_reason list one entry short",
                _set("stop_reason", base["stop_reason"][:2])),
        _broken(base, "a response with an empty mask", "structure", "a response without active tokens",
                lambda b: (_set_item("response_mask", (2, 0), 0)(b), _set_item("old_logprobs", (2, 0), np.nan)(b),
                           _set_item("ref_logprobs", (2, 0), np.nan)(b))),
        _broken(base, "a mask with a gap (1, 0, 1, 0)", "structure", "a response mask with a gap",
                lambda b: (_set_item("response_mask", (1,), [1, 0, 1, 0])(b),
                           _set_item("old_logprobs", (1,), [-0.5, np.nan, -0.7, np.nan])(b),
                           _set_item("ref_logprobs", (1,), [-0.6, np.nan, -0.4, np.nan])(b))),
        _broken(base, "a mask that is not a prefix (1, 1, 0, 1)", "structure", "a response mask that is not a prefix",
                lambda b: (_set_item("response_mask", (0,), [1, 1, 0, 1])(b),
                           _set_item("old_logprobs", (0, 2), np.nan)(b),
                           _set_item("ref_logprobs", (0, 2), np.nan)(b))),
    ]
    return cases


def _cases_values(base):
    """values: each rule of values broken in isolation on the base batch."""
    cases = []
    cases += [
        _broken(base, "NaN log-probability on an active token (old)", "values",
                "a NaN old log-probability on an active token", _set_item("old_logprobs", (1, 1), np.nan)),
        _broken(base, "-inf log-probability on an active token (ref)", "values",
                "an infinite ref log-probability on an active token", _set_item("ref_logprobs", (0, 3), -np.inf)),
        _broken(base, "a finite old log-probability on padding", "values",
                "a finite old log-probability on a padding position", _set_item("old_logprobs", (2, 3), 0.0)),
        _broken(base, "a finite ref log-probability on padding", "values",
                "a finite ref log-probability on a padding position", _set_item("ref_logprobs", (1, 2), -1.0)),
        _broken(base, "a NaN reward", "values", "a NaN reward", _set_item("sequence_rewards", (1,), np.nan)),
        _broken(base, "an infinite reward", "values", "an infinite reward",
                _set_item("sequence_rewards", (0,), np.inf)),
        _broken(base, "an empty stop_reason", "values", "an empty stop_reason", _set_item("stop_reason", (2,), "")),
        _broken(base, "a stop_reason that is not a string", "values", "a stop_reason of None",
                _set_item("stop_reason", (0,), None)),
        _broken(base, "terminated given as 0/1 integers", "values", "a terminated of 0/1 integers",
                _set("terminated", base["terminated"].astype(np.int64))),
        _broken(base, "truncated given as strings", "values", "a truncated of strings",
                _set("truncated", np.array(["no", "yes", "no"], dtype=object))),
    ]
    return cases


def build_cases(variant):
    """The cases of one student's hidden inputs: the random ones drawn from ``variant.seed(...)`` (the
    constant is variant 0's seed, the check's own), the hand-made ones fixed."""
    rng = np.random.default_rng(variant.seed(20))
    # one generator, drawn from in this order (the base batch's draws follow the valid batches')
    public, valid = _cases_public(), _cases_valid(rng)
    base = _base_batch(rng)
    return [*public, *valid, *_cases_structure(base), *_cases_values(base)]


#: One broken batch per kind of rule: a validator that lets at least four of these seven through (with
#: no error at all) does not do the exercise's job and earns at most a third of the points.
CENTRAL = Central(
    "stopping broken batches (the validator let most kinds of broken batch through)",
    {SILENT},
    ("the field 'ref_logprobs' is missing", "old_logprobs has one more column than response_ids",
     "sequence_rewards has B + 1 entries", "a mask with a gap (1, 0, 1, 0)",
     "NaN log-probability on an active token (old)", "a NaN reward", "an empty stop_reason"),
    min_failures=4)

#: Bad-input points count only for a function that returns on ordinary hidden valid input: a stub that
#: raises ValueError on everything (or hard-codes the open check and raises on the rest) earns none.
#: The gate's batches have no response both terminated and truncated, so a validator that wrongly
#: rejects both flags loses its summary points (flags-exclusive), not its rule points.
GATE = Gate(groups=("structure", "values"), cases=(
    "a valid batch of 2",
    "a valid batch of 5",
    "no padding at all",
))

#: The open check is a hint, the hidden cases are the evidence: an open-check case earns its points only
#: when the same function passes hidden cases of the same kind, so an answer that recognises the open
#: check's inputs and returns junk (or raises) elsewhere earns nothing there.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("the notebook's example batch",),
         cases=(
             'a valid batch of 2',
             'a valid batch of 5',
             'no padding at all',)),
    Gate(groups=("public",), needs="passed",
         only=("the notebook's example batch with a NaN reward",),
         cases=(
             'a NaN reward',)),
    # Raising on a NaN reward is right, and so is raising on everything: the NaN half also needs
    # valid batches summarised, as the bad-input groups do.
    Gate(groups=("public",), only=("the notebook's example batch with a NaN reward",),
         cases=GATE.cases),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=(GATE,) + OPEN_GATES)
