"""Hidden checks for exercise 26: the response mask of sampled completions, the loss mask of a rendered
multi-turn transcript, and transformers' assistant mask from ``{% generation %}`` spans.

Expected values come from :mod:`autograder.reference.chat`; transcripts are rendered with the
notebook's template and tokenized with :class:`course.chat.ToyTokenizer`, as the notebook does. The
classic mistakes (EOS left out, the last EOS instead of the first, tokens after the EOS trained, a
truncated row dropped or ``mask_truncated`` ignored, the generation prompt trained, the mask one token
early or late, tool turns trained, character positions used as token positions) are recognised from
their outputs. Missing the first-EOS rule or training the generation prompt or tool output caps the
notebook at a third; bad-input points need valid input accepted (the gate).
"""

from __future__ import annotations

import numpy as np

from autograder.channel import Call
from autograder.checks.authoring import (
    PASS, Case, Central, ExerciseCheck, Gate, Group, Misconception, Verdict, bool_array, coding_groups, error_case,
    exercise_stem, value_of,
)
from autograder.reference import chat
from course.chat import CHATML_TEMPLATE, ToyTokenizer, render_chat

STEM = exercise_stem(__name__)
TOK = ToyTokenizer()
EOS = TOK.eos_token_id
PAD = TOK.pad_token_id
HEADER = list(TOK.encode("<|im_start|>assistant\n").ids)

GROUPS = coding_groups(
    1,
    Group("response", 3, "response_mask: sampled tokens through the first EOS, truncated rows by the stated rule"),
    Group("transcript", 2, "transcript_mask: assistant tokens after each header through the turn's EOS, tool "
                           "and user turns out"),
    Group("spans", 1, "assistant_mask: tokens overlapping a {% generation %} span (transformers' rule)"),
    validation=(1, "The functions reject bad shapes, negative ids, an empty EOS list or header, a header holding "
                   "the EOS id, and spans that end before they start"),
)

EOS_EXCLUDED = Misconception(
    "eos-excluded",
    "The EOS token is left out of the mask: the model sampled it, and it is the only token that teaches the "
    "model to stop, so TRL and verl train it (mask up to and including the first EOS).")
LAST_EOS = Misconception(
    "last-eos",
    "The mask runs to the last EOS of the row: everything after the first EOS was never part of the response "
    "(the sampler stopped there), so the mask ends at the first one.")
AFTER_EOS = Misconception(
    "after-eos-trained",
    "Tokens after the first EOS are trained: the mask is 1 up to and including the first EOS and 0 after it.")
TRUNCATED_DROPPED = Misconception(
    "truncated-dropped",
    "A row without any EOS (a truncated response) got no mask: by default TRL and verl train all its tokens; "
    "only mask_truncated=True drops the row.")
TRUNCATED_KEPT = Misconception(
    "mask-truncated-ignored",
    "mask_truncated=True was ignored: a row without any EOS is then masked out entirely (TRL's "
    "mask_truncated_completions).")
FIRST_EOS_ID_ONLY = Misconception(
    "one-eos-id",
    "Only one of the EOS ids was looked for: any id in eos_ids ends the response.")
START_LATE = Misconception(
    "mask-starts-late",
    "The mask starts one token late: the first sampled token is trained too.")
HEADER_TRAINED = Misconception(
    "generation-prompt-trained",
    "The assistant header (the generation prompt the template adds, <|im_start|>assistant and its newline) is "
    "trained: the sampler was given those tokens, it did not draw them; the mask starts right after the header.")
START_EARLY = Misconception(
    "mask-starts-early",
    "The mask starts one token early: it includes the header's last token; the first trained token is the "
    "first one after the header.")
NEWLINE_TRAINED = Misconception(
    "after-turn-eos-trained",
    "The token the template writes after the turn's EOS (the newline) is trained: each assistant turn ends "
    "with its first EOS.")
TOOL_TRAINED = Misconception(
    "tool-trained",
    "Tool output is trained: the tool wrote those tokens, not the policy, so they are masked out like a "
    "user turn (TRL's tool_mask, verl's response_mask of 0 for tool responses).")
EVERYTHING_AFTER_HEADER = Misconception(
    "all-after-first-header",
    "Everything after the first assistant header is trained: user and tool turns between assistant turns "
    "are not the policy's tokens.")
TRUNCATED_TURN = Misconception(
    "truncated-turn-dropped",
    "A last assistant turn without EOS (truncated) was not trained: it runs from its header to the end.")
CHARACTERS_AS_TOKENS = Misconception(
    "characters-as-tokens",
    "The spans' character positions were used as token positions: a span says which characters the "
    "generation block rendered; a token is trained when its own (start, end) characters overlap it.")
CONTAINED_ONLY = Misconception(
    "contained-only",
    "Only tokens entirely inside a span were kept: transformers keeps every token that overlaps a span, so a "
    "token cut by a span's edge is trained.")
TOUCHING = Misconception(
    "touching-counted",
    "Tokens that only touch a span (end == span start, or start == span end) were counted: spans and offsets "
    "are half-open, [start, end).")


def _judge(function, expected, wrong):
    def judge(outcomes):
        value = value_of(outcomes[0], function)
        actual = bool_array(value, "the mask", shape=expected.shape)
        if np.array_equal(actual, expected):
            return PASS
        for candidate, mistake in wrong:
            if candidate.shape == expected.shape and not np.array_equal(candidate, expected) \
                    and np.array_equal(actual, candidate):
                return Verdict(False, mistake.sentence, mistake.key)
        return Verdict(False, f"the mask is not correct for this input ({function})")

    return judge


# ----------------------------------------------------------------------------- response_mask


def _response_wrong(ids, eos, mask_truncated):
    eos = np.atleast_1d(eos)
    is_eos = np.isin(ids, eos)
    before = np.cumsum(is_eos, axis=1) - is_eos
    has = is_eos.any(axis=1, keepdims=True)
    right = chat.response_mask(ids, eos.tolist(), mask_truncated)
    T = ids.shape[1]
    last = np.where(has, T - 1 - np.argmax(is_eos[:, ::-1], axis=1)[:, None], T - 1)
    t = np.arange(T)[None, :]
    # The truncated-row rule first: where the flag's other reading happens to equal "train every non-pad
    # token" (a truncated row with no padding), the flag is the mistake to name, not the EOS.
    wrong = [
        (right & has, TRUNCATED_DROPPED if not mask_truncated else TRUNCATED_KEPT),
        (chat.response_mask(ids, eos.tolist(), not mask_truncated), TRUNCATED_DROPPED if not mask_truncated
         else TRUNCATED_KEPT),
        ((before == 0) & ~is_eos & (has | ~np.array(mask_truncated)), EOS_EXCLUDED),
        ((t <= last) & (has | ~np.array(mask_truncated)), LAST_EOS),
        (np.broadcast_to(has | ~np.array(mask_truncated), ids.shape), AFTER_EOS),
        (ids != PAD, AFTER_EOS),
        (chat.response_mask(ids, [int(eos[0])], mask_truncated), FIRST_EOS_ID_ONLY),
        (np.concatenate([np.zeros((ids.shape[0], 1), bool), right[:, 1:]], axis=1), START_LATE),
    ]
    return [(np.asarray(m, dtype=bool), k) for m, k in wrong]


def _response_case(name, ids, eos=EOS, mask_truncated=None, *, group="response", as_lists=False):
    ids = np.asarray(ids, dtype=np.int64)
    expected = chat.response_mask(ids, eos, bool(mask_truncated))
    kwargs = {} if mask_truncated is None else {"mask_truncated": mask_truncated}
    args = (ids.tolist() if as_lists else ids, eos)
    return Case(f"response, {name}", group, (Call("response_mask", args, kwargs),),
                _judge("response_mask", expected, _response_wrong(ids, eos, bool(mask_truncated))))


def _sampled(text, *, eos=True, pad_to=None):
    """A sampled row: ``text`` (or ids) then EOS, right-padded to ``pad_to`` with the pad id."""
    ids = (list(TOK.encode(text).ids) if isinstance(text, str) else list(text)) + ([EOS] if eos else [])
    return ids + [PAD] * ((pad_to or len(ids)) - len(ids))


# ----------------------------------------------------------------------------- transcript_mask


def _transcript_ids(messages, sampled_tail=None):
    """A rendered transcript's ids; ``sampled_tail`` appends a truncated turn after the generation prompt."""
    if sampled_tail is None:
        return np.array(TOK.encode(render_chat(CHATML_TEMPLATE, messages).text).ids)
    prompt = render_chat(CHATML_TEMPLATE, messages, add_generation_prompt=True).text
    return np.array(list(TOK.encode(prompt).ids) + list(TOK.encode(sampled_tail).ids))


def _turns(ids):
    """``(start, stop, role_id)`` of every turn: from its <|im_start|> to its <|im_end|> (inclusive)."""
    turns, at = [], 0
    starts = np.flatnonzero(ids == HEADER[0])
    for s in starts:
        ends = np.flatnonzero(ids[s:] == EOS)
        stop = len(ids) if ends.size == 0 else s + int(ends[0]) + 1
        turns.append((int(s), stop, int(ids[s + 1]) if s + 1 < len(ids) else -1))
    return turns


def _transcript_wrong(ids):
    right = chat.transcript_mask(ids, HEADER, EOS)
    n, h = len(ids), len(HEADER)
    header_in, early, late, newline, tool, after_first, untruncated = (np.zeros(n, bool) for _ in range(7))
    for start, stop, role in _turns(ids):
        body = slice(start + h, stop)
        if role == HEADER[1]:
            header_in[start:stop] = True
            early[start + h - 1:stop] = True
            late[start + h + 1:stop] = True
            newline[start + h:min(stop + 1, n)] = True
        if role in (HEADER[1], TOK.token_id("tool")):
            tool[body] = True
    first = next((s for s, _, r in _turns(ids) if r == HEADER[1]), None)
    if first is not None:
        after_first[first + h:] = True
    # the same mask with a truncated last turn dropped
    untruncated[:] = right
    last = _turns(ids)[-1] if _turns(ids) else None
    if last is not None and last[2] == HEADER[1] and ids[last[1] - 1] != EOS:
        untruncated[last[0]:] = False
    no_eos = right & (ids != EOS)
    return [(header_in, HEADER_TRAINED), (early, START_EARLY), (late, START_LATE), (no_eos, EOS_EXCLUDED),
            (newline, NEWLINE_TRAINED), (tool, TOOL_TRAINED), (after_first, EVERYTHING_AFTER_HEADER),
            (untruncated, TRUNCATED_TURN)]


def _trained_where_stated_out(ids):
    """Masks of the tokens the notebook's cap names: a tool turn (header to its EOS) and assistant headers
    (their first tokens)."""
    n, h = len(ids), len(HEADER)
    tool, header = np.zeros(n, bool), np.zeros(n, bool)
    for start, stop, role in _turns(ids):
        if role == TOK.token_id("tool"):
            tool[start:stop] = True
        elif role == HEADER[1]:
            # <|im_start|> and the role: a mask one token early trains only the header's newline, a slip
            # named mask-starts-early rather than the generation prompt trained
            header[start:min(start + h - 1, n)] = True
    return tool, header


def _transcript_judge(ids, expected):
    """The exact-mask judge, then the stated cap as a fact: a mask that trains any token of a tool's turn or
    of an assistant header is named for it (``tool-trained``, ``generation-prompt-trained``), whatever else
    it gets wrong, so the cap follows what the answer trains rather than which wrong mask it happens to be."""
    exact = _judge("transcript_mask", expected, _transcript_wrong(ids))
    tool, header = _trained_where_stated_out(ids)

    def judge(outcomes):
        verdict = exact(outcomes)
        if verdict.passed or verdict.misconception in (TOOL_TRAINED.key, HEADER_TRAINED.key):
            return verdict
        actual = bool_array(value_of(outcomes[0], "transcript_mask"), "the mask", shape=expected.shape)
        for stated_out, mistake in ((tool, TOOL_TRAINED), (header, HEADER_TRAINED)):
            if (actual & stated_out).any():
                named = "" if verdict.misconception is None else verdict.message + " "
                return Verdict(False, named + mistake.sentence, mistake.key)
        return verdict

    return judge


def _transcript_case(name, ids, *, group="transcript", as_lists=False):
    ids = np.asarray(ids, dtype=np.int64)
    expected = chat.transcript_mask(ids, HEADER, EOS)
    args = (ids.tolist() if as_lists else ids, list(HEADER), EOS)
    return Case(f"transcript, {name}", group, (Call("transcript_mask", args),), _transcript_judge(ids, expected))


# ----------------------------------------------------------------------------- assistant_mask


def _spans_wrong(offsets, spans):
    offsets, spans = np.asarray(offsets), np.asarray(spans).reshape(-1, 2)
    n = len(offsets)
    chars = np.zeros(n, bool)
    for s, e in spans:
        chars[min(s, n):min(e, n)] = True
    inside = ((offsets[:, None, 0] >= spans[None, :, 0]) & (offsets[:, None, 1] <= spans[None, :, 1])).any(axis=1)
    touch = ((offsets[:, None, 1] >= spans[None, :, 0]) & (offsets[:, None, 0] <= spans[None, :, 1])).any(axis=1)
    return [(chars, CHARACTERS_AS_TOKENS), (inside, CONTAINED_ONLY), (touch, TOUCHING)]


def _spans_case(name, offsets, spans, *, group="spans"):
    offsets = [tuple(map(int, o)) for o in offsets]
    spans = [tuple(map(int, s)) for s in spans]
    expected = chat.assistant_mask(offsets, spans)
    return Case(f"spans, {name}", group, (Call("assistant_mask", (offsets, spans)),),
                _judge("assistant_mask", expected, _spans_wrong(offsets, spans)))


def _rendered(messages):
    rendered = render_chat(CHATML_TEMPLATE, messages)
    return TOK.encode(rendered.text).offsets, rendered.generation_spans


SYSTEM = {"role": "system", "content": "You add numbers."}


def build_cases():
    cases = []

    # --- public: the notebook's open checks
    cases.append(_response_case("the open check: one EOS, then padding", [[40, 41, EOS, PAD, PAD]], group="public"))
    cases.append(_transcript_case("the open check: one user turn, one assistant turn", _transcript_ids(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]), group="public"))

    # --- response_mask
    width = 14
    batch = [_sampled("The answer is 13.", pad_to=width),
             _sampled(list(TOK.encode("12").ids) + [EOS] + list(TOK.encode(" more").ids), pad_to=width),
             _sampled([], pad_to=width),
             _sampled("add(12, 1) of the sum is 13", eos=False)[:width - 1] + [EOS]]
    assert all(len(row) == width for row in batch), [len(row) for row in batch]
    cases.append(_response_case("four sampled rows: padding, a second EOS, EOS first, EOS last", batch))
    batch = [_sampled("sum is 13", pad_to=10), _sampled("the sum of the 12 is 1200, 13", eos=False)[:10],
             _sampled("13", pad_to=10)]
    cases.append(_response_case("a truncated row (no EOS) among finished ones", batch))
    cases.append(_response_case("mask_truncated=True drops the truncated row", batch, mask_truncated=True))
    cases.append(_response_case("mask_truncated=False given explicitly", batch, mask_truncated=False))
    two = [_sampled("13", eos=False) + [PAD, 40, 41, PAD, 40, 41], _sampled("12", pad_to=8),
           _sampled("What is the sum of 12 and 1200?", eos=False)[:8]]
    cases.append(_response_case("two EOS ids (<|im_end|> and <|endoftext|>)", two, eos=[EOS, PAD]))
    cases.append(_response_case("two EOS ids with mask_truncated=True", two, eos=[EOS, PAD], mask_truncated=True))
    cases.append(_response_case("inputs given as lists", [_sampled("12+1", pad_to=7), _sampled("13 is", pad_to=7)],
                                as_lists=True))

    # --- transcript_mask
    user = {"role": "user", "content": "What is 12+1?"}
    cases.append(_transcript_case("system, user, one assistant turn", _transcript_ids(
        [SYSTEM, user, {"role": "assistant", "content": "The answer is 13."}])))
    tool_chat = [SYSTEM, user, {"role": "assistant", "content": "add(12, 1)"}, {"role": "tool", "content": "13"},
                 {"role": "assistant", "content": "The sum is 13."}]
    cases.append(_transcript_case("a tool call, the tool's output, the final answer", _transcript_ids(tool_chat)))
    cases.append(_transcript_case("two assistant turns with a user turn between", _transcript_ids(
        [user, {"role": "assistant", "content": "13"}, {"role": "user", "content": "and 12+12?"},
         {"role": "assistant", "content": "24"}])))
    cases.append(_transcript_case("a truncated last turn (no EOS)", _transcript_ids(
        tool_chat[:4], sampled_tail="The sum of 12 and 1 is")))
    cases.append(_transcript_case("an empty assistant message (only its EOS is sampled)", _transcript_ids(
        [user, {"role": "assistant", "content": ""}, {"role": "user", "content": "?"},
         {"role": "assistant", "content": "13"}]), as_lists=True))

    # --- assistant_mask
    offsets, spans = _rendered(tool_chat)
    cases.append(_spans_case("a rendered tool transcript", offsets, spans))
    offsets, spans = _rendered([user, {"role": "assistant", "content": "13"}])
    cases.append(_spans_case("a rendered one-turn chat", offsets, spans))
    cases.append(_spans_case("tokens cut by a span's edges and tokens touching it",
                             [(0, 2), (2, 5), (5, 7), (7, 8), (8, 11), (11, 12), (12, 15), (15, 16)],
                             [(3, 8), (12, 14)]))
    cases.append(_spans_case("no generation block at all", [(0, 1), (1, 3), (3, 4)], []))

    # --- validation
    good = np.array(batch)
    transcript = _transcript_ids(tool_chat)
    cases += [
        error_case("response: a 1-D row", "response_mask", (good[0], EOS), "a 1-D response_ids", "response_ids"),
        error_case("response: an empty list of EOS ids", "response_mask", (good, []), "an empty eos_ids", "eos_ids"),
        error_case("response: a negative id", "response_mask", (np.where(good == PAD, -1, good), EOS),
                   "response_ids holding -1", "response_ids"),
        error_case("transcript: a [1, L] batch", "transcript_mask", (transcript[None, :], HEADER, EOS),
                   "input_ids of shape [1, L] (one transcript is 1-D)", "input_ids"),
        error_case("transcript: an empty header", "transcript_mask", (transcript, [], EOS), "an empty header", "header"),
        error_case("transcript: a header holding the EOS id", "transcript_mask", (transcript, HEADER + [EOS], EOS),
                   "a header that contains eos_id", "header"),
        error_case("spans: offsets of shape [N, 3]", "assistant_mask", ([(0, 1, 2), (1, 2, 3)], [(0, 1)]),
                   "offsets of shape [N, 3]", "offsets"),
        error_case("spans: a span that ends before it starts", "assistant_mask", ([(0, 1), (1, 2)], [(2, 1)]),
                   "a span (2, 1)", "spans"),
    ]
    return cases


#: Where the mask starts and ends is the exercise: a response mask without the first EOS (or with every
#: token after it), or a transcript mask that trains the generation prompt or the tool's output, caps the
#: notebook at a third of its autograded points.
CENTRAL = Central(
    "the mask from the first sampled token through the first EOS, prompt, header and tool output out",
    {"eos-excluded", "last-eos", "after-eos-trained", "generation-prompt-trained", "tool-trained"},
    ("response, four sampled rows: padding, a second EOS, EOS first, EOS last",
     "transcript, a tool call, the tool's output, the final answer",
     "transcript, system, user, one assistant turn"))

#: Bad-input points count only for a function that returns on an ordinary hidden valid input.
#: Its twin (bad input counts only for a function that also answers valid input) asks for masks that are
#: right: a junk mask is easily read as a mistake (every header trained, character positions as tokens).
GATE = Gate(cases=("response, a truncated row (no EOS) among finished ones",
                   "transcript, system, user, one assistant turn", "spans, a rendered one-turn chat"),
            attempt_needs="passed",
            attempt_cases=("response, four sampled rows: padding, a second EOS, EOS first, EOS last",
                           "response, a truncated row (no EOS) among finished ones",
                           "response, two EOS ids (<|im_end|> and <|endoftext|>)",
                           "transcript, system, user, one assistant turn",
                           "transcript, a tool call, the tool's output, the final answer",
                           "transcript, two assistant turns with a user turn between",
                           "spans, a rendered tool transcript", "spans, a rendered one-turn chat",
                           "spans, tokens cut by a span's edges and tokens touching it"))

#: An open-check case earns its points only when the same function passes hidden cases of the same kind.
OPEN_GATES = (
    Gate(groups=("public",), needs="passed",
         only=("response, the open check: one EOS, then padding",),
         cases=("response, four sampled rows: padding, a second EOS, EOS first, EOS last",
                "response, a truncated row (no EOS) among finished ones")),
    Gate(groups=("public",), needs="passed",
         only=("transcript, the open check: one user turn, one assistant turn",),
         cases=("transcript, system, user, one assistant turn",
                "transcript, a tool call, the tool's output, the final answer")),
)

#: A transcript with no generation block has no assistant token: the all-zero mask, which an answer of
#: zeros gives too. It counts only when the function also finds the tokens of a real generation span.
CONSTANT_GATES = (
    Gate(groups=("spans",), needs="passed", quorum=1, only=("spans, no generation block at all",),
         cases=("spans, a rendered tool transcript", "spans, a rendered one-turn chat",
                "spans, tokens cut by a span's edges and tokens touching it"),
         why="a mask of zeros where there is no span counts only when the function also finds the tokens of a "
             "span right"),
)

CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, (GATE,) + OPEN_GATES + CONSTANT_GATES)
