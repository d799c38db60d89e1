"""Exercise 26's reference (autograder.reference.chat) against independent formulations: TRL==1.16.0's
argmax form of the completion mask, a token-by-token loop, transformers==5.24.0's single pass over token
offsets and spans, and the course's renderer (course.chat) against Jinja2 rendering by hand."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from autograder.reference import chat
from course import chat as course_chat


def trl_completion_mask(ids, eos_ids):
    """TRL's ``_generate_single_turn``: ``eos_idx`` is the first EOS (the row length without one)."""
    is_eos = np.isin(ids, eos_ids)
    eos_idx = np.full(ids.shape[0], ids.shape[1])
    rows = is_eos.any(axis=1)
    eos_idx[rows] = is_eos.argmax(axis=1)[rows]
    return np.arange(ids.shape[1])[None, :] <= eos_idx[:, None]


def transformers_assistant_masks(offsets, spans):
    """``apply_chat_template``'s loop: spans and offsets in order, one pass, token_end > span start."""
    mask, span = [0] * len(offsets), 0
    for index, (start, end) in enumerate(offsets):
        while span < len(spans) and start >= spans[span][1]:
            span += 1
        if span == len(spans):
            break
        if end > spans[span][0]:
            mask[index] = 1
    return np.array(mask, dtype=bool)


@pytest.mark.parametrize("seed", range(6))
def test_response_mask_is_trl_and_verl(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 6, size=(7, 9))
    eos = [2] if seed % 2 else [2, 5]
    expected = trl_completion_mask(ids, eos)
    np.testing.assert_array_equal(chat.response_mask(ids, eos), expected)
    truncated = ~np.isin(ids, eos).any(axis=1)
    dropped = chat.response_mask(ids, eos, mask_truncated=True)
    assert not dropped[truncated].any() and np.array_equal(dropped[~truncated], expected[~truncated])


def test_response_mask_by_hand():
    mask = chat.response_mask([[2, 2, 7], [7, 7, 7], [7, 2, 2]], 2).astype(int).tolist()
    assert mask == [[1, 0, 0], [1, 1, 1], [1, 1, 0]]


def _loop_transcript(ids, header, eos):
    out, inside, t = [False] * len(ids), False, 0
    while t < len(ids):
        if not inside and list(ids[t:t + len(header)]) == list(header):
            inside, t = True, t + len(header)
            continue
        if inside:
            out[t] = True
            inside = ids[t] != eos
        t += 1
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
def test_transcript_mask_is_a_token_loop(seed):
    rng = np.random.default_rng(100 + seed)
    ids = rng.integers(0, 5, size=60)  # header [1, 3], eos 2: many turns, some cut short
    np.testing.assert_array_equal(chat.transcript_mask(ids, [1, 3], 2), _loop_transcript(ids, [1, 3], 2))


@pytest.mark.parametrize("seed", range(6))
def test_assistant_mask_is_transformers_single_pass(seed):
    rng = np.random.default_rng(200 + seed)
    cuts = np.cumsum(rng.integers(1, 4, size=25))
    offsets = list(zip([0, *cuts[:-1]], cuts))
    edges = np.sort(rng.choice(np.arange(int(cuts[-1])), size=6, replace=False))
    spans = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]
    np.testing.assert_array_equal(chat.assistant_mask(offsets, spans), transformers_assistant_masks(offsets, spans))


def test_render_chat_matches_plain_jinja_with_transformers_settings():
    """course.chat's environment against one built here from Jinja2 directly (generation block stripped)."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "What is 12+1?"},
                {"role": "assistant", "content": "add(12, 1)"}, {"role": "tool", "content": "13"}]
    plain = course_chat.CHATML_TEMPLATE.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    for prompt in (False, True):
        rendered = course_chat.render_chat(course_chat.CHATML_TEMPLATE, messages, add_generation_prompt=prompt)
        assert rendered.text == env.from_string(plain).render(messages=messages, add_generation_prompt=prompt)
    rendered = course_chat.render_chat(course_chat.CHATML_TEMPLATE, messages)
    assert [rendered.text[a:b] for a, b in rendered.generation_spans] == ["add(12, 1)<|im_end|>"]
    assert rendered.text.endswith("<|im_start|>tool\n13<|im_end|>\n")


def test_the_sandbox_refuses_what_transformers_refuses():
    from jinja2.exceptions import SecurityError

    with pytest.raises(SecurityError):
        course_chat.render_chat("{{ messages.append(1) }}", [])  # immutable sandbox: no mutation
    with pytest.raises(Exception, match="no tools"):
        course_chat.render_chat("{{ raise_exception('no tools') }}", [])


def test_toy_tokenizer_round_trips_and_merges_greedily():
    tok = course_chat.ToyTokenizer()
    text = "<|im_start|>assistant\nThe sum of 12 is 1200<|im_end|>\n"
    encoding = tok.encode(text)
    assert tok.decode(encoding.ids) == text
    assert [text[a:b] for a, b in encoding.offsets] == [tok.tokens[i] for i in encoding.ids]
    assert [tok.tokens[i] for i in tok.encode("1200").ids] == ["12", "00"]
    with pytest.raises(ValueError, match="character"):
        tok.encode("é")


@pytest.mark.parametrize("module", [chat, course_chat])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0
