r"""Reference solutions of exercise 26: which tokens of a chat transcript a trainer trains.

=====================  =====================================================================================
function               rule
=====================  =====================================================================================
:func:`response_mask`  sampled completions ``[B, T]``: every token up to and including the **first** EOS,
                       nothing after it; a row without EOS (truncated) is trained in full, or not at all
                       with ``mask_truncated``
:func:`transcript_mask`  one rendered multi-turn transcript: the tokens after each assistant header
                       through that turn's first EOS; headers, user, system and tool turns untrained
:func:`assistant_mask`   token offsets against the character spans of ``{% generation %}`` blocks: a token is
                       trained when it overlaps a span (transformers' ``assistant_masks``)
=====================  =====================================================================================

Upstream, read in the releases cited:

* TRL==1.16.0, ``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._generate_single_turn``: ``is_eos``,
  ``eos_idx = argmax`` of the first EOS (the row length when there is none) and
  ``completion_mask = (sequence_indices <= eos_idx)``; ``_generate_and_score_completions`` zeroes the
  whole row when ``mask_truncated_completions`` (default False) and the row's last id is neither EOS nor pad.
* verl==0.9.1, ``verl/utils/torch_functional.py``, ``get_response_mask``:
  ``(eos_mask.cumsum(dim=1) - eos_mask).eq(0)``, the same mask (a row without EOS: all ones).
* transformers==5.24.0, ``transformers/tokenization_utils_base.py``, ``apply_chat_template`` with
  ``return_assistant_tokens_mask=True``: a token is 1 when its offsets overlap a span recorded by
  ``AssistantTracker`` (``transformers/utils/chat_template_utils.py``), ``token_end > span_start`` and
  ``token_start < span_end``.

Bad input raises ``TypeError``/``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import as_int_array


def _eos_set(eos_ids, name: str = "eos_ids") -> np.ndarray:
    array = np.atleast_1d(as_int_array(eos_ids, name))
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be one token id or a non-empty list of them, got shape {array.shape}")
    if array.min() < 0:
        raise ValueError(f"{name} must hold token ids (>= 0), got {int(array.min())}")
    return array


def _ids(value, name: str, ndim: int) -> np.ndarray:
    array = as_int_array(value, name, ndim=ndim)
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    if array.min() < 0:
        raise ValueError(f"{name} must hold token ids (>= 0), got {int(array.min())}")
    return array


def response_mask(response_ids, eos_ids, mask_truncated: bool = False) -> np.ndarray:
    r"""Boolean ``[B, T]``: the sampled tokens a trainer scores.

    .. math:: m_{b,t} = [\,t \le e_b\,],\qquad e_b = \min\{t : y_{b,t} \in \mathcal{E}\}

    where :math:`\mathcal{E}` is the set ``eos_ids``. A row with no EOS is truncated: :math:`e_b = T - 1`
    (every token trained, TRL's and verl's default), or an all-False row with ``mask_truncated``
    (TRL's ``mask_truncated_completions=True``).

    >>> response_mask([[5, 6, 2, 7, 2], [5, 6, 7, 8, 9]], 2).astype(int)
    array([[1, 1, 1, 0, 0],
           [1, 1, 1, 1, 1]])
    >>> response_mask([[5, 6, 7]], [2, 0], mask_truncated=True).astype(int)
    array([[0, 0, 0]])
    """
    ids = _ids(response_ids, "response_ids", 2)
    eos = _eos_set(eos_ids)
    if not isinstance(mask_truncated, (bool, np.bool_)):
        raise TypeError(f"mask_truncated must be True or False, got {type(mask_truncated).__name__}")
    is_eos = np.isin(ids, eos)
    # Ones until and including the first EOS: the EOS count before t (exclusive) is 0 (verl's form).
    mask = (np.cumsum(is_eos, axis=1) - is_eos) == 0
    if mask_truncated:
        mask &= is_eos.any(axis=1, keepdims=True)
    return mask


def transcript_mask(input_ids, header, eos_id: int) -> np.ndarray:
    r"""Boolean ``[L]`` over one rendered transcript: the tokens the assistant sampled.

    Each occurrence of ``header`` (the ids of the generation prompt, e.g. ``<|im_start|>assistant\n``)
    opens an assistant turn. The turn's tokens run from the first token **after** the header through
    the first ``eos_id`` after it, inclusive; a last turn without ``eos_id`` (truncated) runs to the end.
    Everything else (system, user and tool turns, the headers themselves, what the template puts after
    the EOS) is False.

    >>> transcript_mask([1, 4, 9, 9, 2, 1, 5, 9, 7, 2, 8, 1, 6, 3, 2, 1, 5, 7], [1, 5], 2).astype(int)
    array([0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1])
    """
    ids = _ids(input_ids, "input_ids", 1)
    head = _ids(header, "header", 1)
    eos = _eos_set(eos_id, "eos_id")
    if eos.size != 1:
        raise ValueError("eos_id must be one token id")
    if np.isin(head, eos).any():
        raise ValueError("header must not contain eos_id (a header ends no turn)")
    n, h = ids.size, head.size
    mask = np.zeros(n, dtype=bool)
    at = 0
    while at + h <= n:
        if not np.array_equal(ids[at:at + h], head):
            at += 1
            continue
        start = at + h
        ends = np.flatnonzero(ids[start:] == eos[0])
        stop = n if ends.size == 0 else start + int(ends[0]) + 1
        mask[start:stop] = True
        at = stop
    return mask


def assistant_mask(offsets, spans) -> np.ndarray:
    r"""Boolean ``[N]``: tokens whose characters overlap a ``{% generation %}`` span.

    Token :math:`i` covers characters :math:`[a_i, b_i)`; a span covers :math:`[s, e)`. The token is
    True when :math:`b_i > s` and :math:`a_i < e` for some span (a token cut by a span's edge counts),
    as transformers builds ``assistant_masks``. Indices are characters, the result is per token.

    >>> assistant_mask([(0, 3), (3, 5), (5, 6), (6, 9)], [(4, 6)]).astype(int)
    array([0, 1, 1, 0])
    """
    tok = as_int_array(offsets, "offsets")
    if tok.ndim != 2 or tok.shape[1] != 2 or tok.shape[0] == 0:
        raise ValueError(f"offsets must be a non-empty [N, 2] array of (start, end) characters, got shape {tok.shape}")
    if (tok[:, 0] < 0).any() or (tok[:, 1] < tok[:, 0]).any():
        raise ValueError("offsets must hold 0 <= start <= end for every token")
    sp = as_int_array(spans, "spans")
    if sp.size == 0:
        sp = sp.reshape(0, 2)  # no generation block at all: nothing is trained
    if sp.ndim != 2 or sp.shape[1] != 2:
        raise ValueError(f"spans must be a [S, 2] array of (start, end) characters, got shape {sp.shape}")
    if sp.size and ((sp[:, 0] < 0).any() or (sp[:, 1] < sp[:, 0]).any()):
        raise ValueError("spans must hold 0 <= start <= end for every span")
    overlaps = (tok[:, None, 1] > sp[None, :, 0]) & (tok[:, None, 0] < sp[None, :, 1])
    return overlaps.any(axis=1)
