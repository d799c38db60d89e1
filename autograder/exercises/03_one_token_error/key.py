"""Answer key for exercise 03: which target each logits position predicts, and why the bug has no shape error.

The targets are read off ``autograder.reference.causal_response_logprobs`` (the reference's alignment), not
typed in: with random logits, each selected log-probability identifies the one token it was taken for.
"""

import numpy as np

from autograder.reference import causal_response_logprobs, stable_log_softmax

#: The notebook's sizes and its example row of token ids (public).
BATCH, LENGTH, VOCAB = 2, 6, 128
ROW = (101, 7, 42, 9, 13, 2)

#: The slice pairs the notebook offers (public), and the right one.
SLICE_OPTIONS = ("A", "B", "C", "D")
SLICE_CHOICE = "A"
#: What each wrong option does: same-position pairing (C), pairing with the previous token (B),
#: and same-position pairing with both arrays trimmed (D).
SLICE_UNSHIFTED, SLICE_BACKWARDS, SLICE_TRIMMED = "C", "B", "D"


def _reference_targets() -> tuple:
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(1, LENGTH, VOCAB))
    ids = np.array([ROW])
    selected, _ = causal_response_logprobs(logits, ids, np.ones_like(ids, dtype=bool))
    log_probs = stable_log_softmax(logits)
    targets = []
    for position in range(LENGTH):
        if position < selected.shape[1]:
            matches = np.flatnonzero(log_probs[0, position] == selected[0, position])
            if matches.size != 1:
                raise RuntimeError("the random logits must make every selected log-probability unique")
            targets.append(int(matches[0]))
        else:
            targets.append(None)  # the last position's logits predict a token beyond the row
    return tuple(targets)


#: TARGETS[i]: the token id scored with the logits at position i (None: no target inside the row).
TARGETS = _reference_targets()


def _gather_shape(shifted: bool) -> tuple:
    log_probs = np.zeros((BATCH, LENGTH, VOCAB))
    ids = np.tile(np.array(ROW), (BATCH, 1))
    if shifted:
        return np.take_along_axis(log_probs[:, :-1, :], ids[:, 1:, None], axis=-1).shape
    return np.take_along_axis(log_probs, ids[..., None], axis=-1).shape


#: Shapes of the gathered array with and without the shift (the unshifted one is computed, so it
#: also proves that the buggy gather raises nothing).
GATHER_SHAPES = {"unshifted": _gather_shape(False), "shifted": _gather_shape(True)}
UNSHIFTED_RAISES_ERROR = False
