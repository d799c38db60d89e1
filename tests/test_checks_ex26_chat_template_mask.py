"""The hidden checks of exercise 26 against a corpus of correct, mistaken and hostile answers, and the
numbers its written answer cites (the drift cell's)."""

from __future__ import annotations

import pytest

from check_support import CodingCheckTests, full_marks, result_of

STEM = "26_chat_template_mask"

RESPONSE = """
import numpy as np

def response_mask(response_ids, eos_ids, mask_truncated=False):
    ids = np.asarray(response_ids)
    eos = np.atleast_1d(np.asarray(eos_ids))
    if ids.ndim != 2 or ids.size == 0 or ids.dtype.kind not in "iu" or ids.min() < 0:
        raise ValueError("response_ids must be a [B, T] array of token ids")
    if eos.ndim != 1 or eos.size == 0 or eos.dtype.kind not in "iu" or eos.min() < 0:
        raise ValueError("eos_ids must be a non-empty list of token ids")
    is_eos = np.isin(ids, EOS_SET)
    MASK
    if mask_truncated:
        TRUNCATED
    return mask
"""

GOOD_MASK = "mask = (np.cumsum(is_eos, axis=1) - is_eos) == 0"
GOOD_TRUNCATED = "mask &= is_eos.any(axis=1, keepdims=True)"

TRANSCRIPT = """
def transcript_mask(input_ids, header, eos_id):
    ids, head = np.asarray(input_ids), np.asarray(header)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu" or ids.min() < 0:
        raise ValueError("input_ids must be 1-D token ids")
    if head.ndim != 1 or head.size == 0 or eos_id in head.tolist():
        raise ValueError("header must be non-empty and hold no eos_id")
    mask = np.zeros(ids.shape, dtype=bool)
    n, h, at = ids.size, head.size, 0
    while at + h <= n:
        if not np.array_equal(ids[at:at + h], head):
            at += 1
            continue
        start = at + h
        ends = np.flatnonzero(ids[start:] == eos_id)
        stop = n if ends.size == 0 else start + ends[0] + 1
        mask[START:STOP] = True
        at = stop
    return mask
"""

SPANS = """
def assistant_mask(offsets, spans):
    tok, sp = np.asarray(offsets), np.asarray(spans)
    if sp.size == 0:
        sp = np.zeros((0, 2), dtype=int)
    if tok.ndim != 2 or tok.shape[1] != 2 or tok.shape[0] == 0 or sp.ndim != 2 or sp.shape[1] != 2:
        raise ValueError("offsets must be [N, 2], spans [S, 2]")
    for pairs in (tok, sp):
        if pairs.size and ((pairs[:, 0] < 0).any() or (pairs[:, 1] < pairs[:, 0]).any()):
            raise ValueError("pairs need 0 <= start <= end")
    return (OVERLAP).any(axis=1)
"""

GOOD_OVERLAP = "(tok[:, None, 1] > sp[None, :, 0]) & (tok[:, None, 0] < sp[None, :, 1])"


def answer(mask=GOOD_MASK, truncated=GOOD_TRUNCATED, eos_set="eos", start="start", stop="stop",
           overlap=GOOD_OVERLAP):
    return (RESPONSE.replace("MASK", mask).replace("TRUNCATED", truncated).replace("EOS_SET", eos_set)
            + TRANSCRIPT.replace("START", start).replace("STOP", stop) + SPANS.replace("OVERLAP", overlap))


LOOPS = """
import numpy as np

def response_mask(response_ids, eos_ids, mask_truncated=False):
    if isinstance(eos_ids, (int, np.integer)):
        eos_ids = [eos_ids]
    eos_ids = [int(e) for e in eos_ids]
    rows = [list(map(int, row)) for row in np.asarray(response_ids).tolist()] if np.ndim(response_ids) == 2 else None
    if rows is None or not rows or not rows[0] or not eos_ids or np.asarray(response_ids).dtype.kind not in "iu":
        raise ValueError("response_ids must be [B, T] ids and eos_ids non-empty")
    if min(min(r) for r in rows) < 0 or min(eos_ids) < 0:
        raise ValueError("ids must be >= 0")
    out = []
    for row in rows:
        keep, finished = [], False
        for token in row:
            keep.append(not finished)
            if token in eos_ids:
                finished = True
        if mask_truncated and not finished:
            keep = [False] * len(row)
        out.append(keep)
    return np.array(out, dtype=bool)

def transcript_mask(input_ids, header, eos_id):
    ids, head = list(np.asarray(input_ids).ravel()), list(header)
    if np.ndim(input_ids) != 1 or not ids or not head or eos_id in head or min(ids) < 0 \\
            or np.asarray(input_ids).dtype.kind not in "iu":
        raise ValueError("bad transcript")
    mask, inside, t = [0] * len(ids), False, 0
    while t < len(ids):
        if not inside and ids[t:t + len(head)] == head:
            inside, t = True, t + len(head)
            continue
        if inside:
            mask[t] = 1
            if ids[t] == eos_id:
                inside = False
        t += 1
    return mask

def assistant_mask(offsets, spans):
    offsets = [tuple(o) for o in offsets]
    spans = [tuple(s) for s in spans]
    if not offsets or any(len(o) != 2 for o in offsets) or any(len(s) != 2 for s in spans):
        raise ValueError("pairs expected")
    if any(a < 0 or b < a for a, b in offsets + spans):
        raise ValueError("start <= end expected")
    return [int(any(b > s and a < e for s, e in spans)) for a, b in offsets]
"""

CORRECT = {
    "vectorised": answer(),
    "argmax_like_trl": answer(mask=(
        "T = ids.shape[1]\n"
        "    first = np.where(is_eos.any(axis=1), is_eos.argmax(axis=1), T)\n"
        "    mask = np.arange(T)[None, :] <= first[:, None]")),
    "loops_and_lists": LOOPS,
}

WRONG = {
    "eos_excluded": (answer(mask="mask = np.cumsum(is_eos, axis=1) == 0"), "eos-excluded"),
    "last_eos": (answer(mask=(
        "T = ids.shape[1]\n"
        "    last = np.where(is_eos.any(axis=1), T - 1 - is_eos[:, ::-1].argmax(axis=1), T - 1)\n"
        "    mask = np.arange(T)[None, :] <= last[:, None]")), "last-eos"),
    "after_eos_trained": (answer(mask="mask = np.ones(ids.shape, dtype=bool)"), "after-eos-trained"),
    "only_padding_masked": (answer(mask="mask = ids != 0"), "after-eos-trained"),
    "no_eos_untrained": (answer(mask=GOOD_MASK + "\n    mask &= is_eos.any(axis=1, keepdims=True)", truncated="pass"),
                         "truncated-dropped"),
    "mask_truncated_ignored": (answer(truncated="pass"), "mask-truncated-ignored",
                               "response, mask_truncated=True drops the truncated row"),
    "one_eos_id": (answer(eos_set="eos[:1]"), "one-eos-id", "response, two EOS ids (<|im_end|> and <|endoftext|>)"),
    "response_starts_late": (answer(mask=GOOD_MASK + "\n    mask[:, 0] = False"), "mask-starts-late"),
    "header_trained": (answer(start="at"), "generation-prompt-trained"),
    "starts_one_early": (answer(start="start - 1"), "mask-starts-early"),
    "starts_one_late": (answer(start="start + 1"), "mask-starts-late"),
    "turn_eos_excluded": (answer(stop="stop - 1 if ends.size else n"), "eos-excluded",
                          "transcript, system, user, one assistant turn"),
    "newline_after_eos_trained": (answer(stop="min(stop + 1, n)"), "after-turn-eos-trained"),
    # the tool turn has its own header: an answer that trains every non-user turn trains the tool's output
    "tool_trained": (answer().replace(
        "        if not np.array_equal(ids[at:at + h], head):",
        "        if not (np.array_equal(ids[at:at + h], head) or (at + h <= n and ids[at] == head[0] and ids[at + 1] == 6)):"),
        "tool-trained"),
    # trains the later turns' headers and the tool's output too: the stated cap names it by what it trains
    "everything_after_first_header": (answer(stop="n"), "generation-prompt-trained",
                                      "transcript, two assistant turns with a user turn between"),
    "truncated_turn_dropped": (answer().replace("stop = n if ends.size == 0 else", "stop = start if ends.size == 0 else"),
                               "truncated-turn-dropped", "transcript, a truncated last turn (no EOS)"),
    "characters_as_tokens": (answer().replace("    return (" + GOOD_OVERLAP + ").any(axis=1)", """    out = np.zeros(len(tok), dtype=bool)
    for s, e in sp:
        out[s:e] = True
    return out"""), "characters-as-tokens"),
    "contained_only": (answer(overlap="(tok[:, None, 0] >= sp[None, :, 0]) & (tok[:, None, 1] <= sp[None, :, 1])"),
                       "contained-only", "spans, tokens cut by a span's edges and tokens touching it"),
    "touching_counted": (answer(overlap="(tok[:, None, 1] >= sp[None, :, 0]) & (tok[:, None, 0] <= sp[None, :, 1])"),
                         "touching-counted", "spans, tokens cut by a span's edges and tokens touching it"),
    "no_validation": ("""
import numpy as np

def response_mask(response_ids, eos_ids, mask_truncated=False):
    ids = np.atleast_2d(np.asarray(response_ids)).astype(int)
    is_eos = np.isin(ids, np.atleast_1d(eos_ids))
    mask = (np.cumsum(is_eos, axis=1) - is_eos) == 0
    if mask_truncated:
        mask &= is_eos.any(axis=1, keepdims=True)
    return mask

def transcript_mask(input_ids, header, eos_id):
    ids, head = np.ravel(input_ids), list(header)
    mask = np.zeros(ids.shape, dtype=bool)
    at = 0
    while head and at + len(head) <= ids.size:
        if list(ids[at:at + len(head)]) != head:
            at += 1
            continue
        start = at + len(head)
        ends = np.flatnonzero(ids[start:] == eos_id)
        stop = ids.size if ends.size == 0 else start + ends[0] + 1
        mask[start:stop] = True
        at = stop
    return mask

def assistant_mask(offsets, spans):
    tok, sp = np.asarray(offsets).reshape(-1, 2)[:, :2], np.asarray(spans, dtype=int).reshape(-1, 2)
    return ((tok[:, None, 1] > sp[None, :, 0]) & (tok[:, None, 0] < sp[None, :, 1])).any(axis=1)
""", "silent-bad-input"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.ones((1, 5), dtype=bool)
def response_mask(response_ids, eos_ids, mask_truncated=False): return Anything()
def transcript_mask(input_ids, header, eos_id): return Anything()
def assistant_mask(offsets, spans): return Anything()
""", ("public", "response", "transcript", "spans")),
    "everything_true": ("""
import numpy as np
def response_mask(response_ids, eos_ids, mask_truncated=False): return np.ones(np.shape(response_ids), dtype=bool)
def transcript_mask(input_ids, header, eos_id): return np.ones(np.shape(input_ids), dtype=bool)
def assistant_mask(offsets, spans): return np.ones(len(offsets), dtype=bool)
""", ("public", "response", "transcript", "spans")),
    "floats_not_masks": ("""
import numpy as np
def response_mask(response_ids, eos_ids, mask_truncated=False): return np.full(np.shape(response_ids), 0.5)
def transcript_mask(input_ids, header, eos_id): return np.full(np.shape(input_ids), 0.5)
def assistant_mask(offsets, spans): return np.full(len(offsets), 0.5)
""", ("public", "response", "transcript", "spans")),
}


def test_the_drift_cell_shows_what_the_written_answer_cites():
    """Part B's model answer: `1`, `2` re-encode as `12`, the turn is one token shorter (8 instead of 9), and a
    mask laid out by the sampler's 9 tokens over the re-encoding trains the newline after <|im_end|>."""
    from course.chat import CHATML_TEMPLATE, ToyTokenizer, render_chat

    tok = ToyTokenizer()
    chat = [{"role": "system", "content": "You add numbers."}, {"role": "user", "content": "What is 12+1?"}]
    prompt = list(tok.encode(render_chat(CHATML_TEMPLATE, chat, add_generation_prompt=True).text).ids)
    drawn = [tok.token_id(t) for t in ("add", "(", "1", "2", ",", " ", "1", ")")] + [tok.eos_token_id]
    text = tok.decode(drawn)
    history = chat + [{"role": "assistant", "content": text[:-len("<|im_end|>")]}, {"role": "tool", "content": "13"}]
    again = list(tok.encode(render_chat(CHATML_TEMPLATE, history, add_generation_prompt=True).text).ids)
    runtime = prompt + drawn
    first = next(i for i, (a, b) in enumerate(zip(runtime, again)) if a != b)
    assert first == len(prompt) + 2 and tok.tokens[again[first]] == "12" and tok.tokens[runtime[first]] == "1"
    assert len(tok.encode(text).ids) == 8 and len(drawn) == 9
    laid_out = again[len(prompt):len(prompt) + len(drawn)]
    assert laid_out[-2:] == [tok.eos_token_id, tok.token_id("\n")]


def test_course_renders_as_transformers_does():
    """The template's spans, mapped to tokens by transformers' overlap rule, give the transcript mask: the two
    reference rules agree on every rendered transcript the check uses."""
    import numpy as np

    from autograder.checks import CHECKS
    from autograder.reference import chat

    spans = [case for case in CHECKS[STEM].cases(["spans"]) if "rendered" in case.name]
    assert len(spans) == 2
    from course.chat import CHATML_TEMPLATE, ToyTokenizer, render_chat
    tok = ToyTokenizer()
    header = list(tok.encode("<|im_start|>assistant\n").ids)
    for messages in ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
                     [{"role": "system", "content": "s"}, {"role": "user", "content": "12+1?"},
                      {"role": "assistant", "content": "add(12, 1)"}, {"role": "tool", "content": "13"},
                      {"role": "assistant", "content": ""}, {"role": "user", "content": "ok"},
                      {"role": "assistant", "content": "13"}]):
        rendered = render_chat(CHATML_TEMPLATE, messages)
        encoding = tok.encode(rendered.text)
        np.testing.assert_array_equal(chat.assistant_mask(encoding.offsets, rendered.generation_spans),
                                      chat.transcript_mask(encoding.ids, header, tok.eos_token_id))


class TestChatTemplateMask(CodingCheckTests):
    stem = STEM
    groups = ("public", "response", "transcript", "spans", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.chat"
    reference_functions = ("response_mask", "transcript_mask", "assistant_mask")
    quiet_mistakes = ("eos_excluded", "header_trained", "characters_as_tokens")
    central_mistakes = ("eos_excluded", "last_eos", "after_eos_trained", "header_trained", "tool_trained")


# Found by the outside test (answers written from the release notebook alone): masks that train a tool's
# turn or another assistant header without matching any one wrong mask exactly. The notebook's cap names
# what is trained, so each earns at most a third of the 8 points and is told what it trained.
_TRAIN_UNTIL_NEXT_HEADER = '''
def transcript_mask(input_ids, header, eos_id):
    ids, header = np.asarray(input_ids).astype(int), [int(h) for h in header]
    if ids.ndim != 1 or not header or eos_id in header:
        raise ValueError("input_ids must be 1-D and header non-empty without eos_id")
    n, H = len(ids), len(header)
    mask, i = np.zeros(n, dtype=bool), 0
    while i + H <= n:
        if ids[i:i + H].tolist() == header:
            j = i + H
            while j < n and ids[j:j + H].tolist() != header:
                mask[j] = True
                j += 1
            i = j
        else:
            i += 1
    return mask
'''
_ANY_TURN_START_IS_A_HEADER = '''
def transcript_mask(input_ids, header, eos_id):
    ids, header = np.asarray(input_ids).astype(int), [int(h) for h in header]
    if ids.ndim != 1 or not header or eos_id in header:
        raise ValueError("input_ids must be 1-D and header non-empty without eos_id")
    n, H = len(ids), len(header)
    mask, i = np.zeros(n, dtype=bool), 0
    while i + H <= n:
        if ids[i] == header[0]:
            j = i + H
            while j < n and ids[j] != eos_id:
                mask[j] = True
                j += 1
            if j < n:
                mask[j] = True
                j += 1
            i = j
        else:
            i += 1
    return mask
'''


@pytest.mark.parametrize("wrong, key", [(_TRAIN_UNTIL_NEXT_HEADER, "tool-trained"),
                                        (_ANY_TURN_START_IS_A_HEADER, "tool-trained"),
                                        (answer(stop="n"), "tool-trained")],
                         ids=["until_next_header", "any_turn_start", "everything_after_first_header"])
def test_a_mask_that_trains_tool_output_is_capped_at_a_third(wrong, key):
    source = wrong if "def response_mask" in wrong else CORRECT["vectorised"] + "\n" + wrong
    result = result_of(STEM, source)
    assert result.points_earned <= full_marks(STEM) / 3 + 1e-9, result.feedback()
    assert key in result.misconceptions, (result.misconceptions, result.feedback())
