"""A chat template rendered as transformers renders one, and a toy tokenizer built in code (exercise 26).

Nothing here is an answer: it renders text and turns text into token ids and back. The masks the
exercise asks for are the student's to build from those ids.

:func:`render_chat` compiles a Jinja2 template in the environment that transformers==5.24.0 builds in
``transformers/utils/chat_template_utils.py`` (``_cached_compile_jinja_template``): an
``ImmutableSandboxedEnvironment`` (a chat template from the Hub is untrusted code) with ``trim_blocks``
and ``lstrip_blocks`` on, the ``loopcontrols`` extension, a ``{% generation %}`` block that records the
character span of what it renders (transformers' ``AssistantTracker``), a ``tojson`` filter that does
not escape HTML, and the ``raise_exception`` and ``strftime_now`` globals (transformers also swaps the
``dict`` and ``namespace`` globals for restricted versions; Jinja2's own are kept here). The template sees
``messages`` and ``add_generation_prompt``, as in ``render_jinja_template``.

:class:`ToyTokenizer` matches its special tokens first, as added tokens are matched, then the longest
piece of its vocabulary at each position (greedy longest match). Every printable ASCII character and
the newline is a piece, so any ASCII text encodes; a few longer pieces (``"12"``, ``" the"``,
``"assistant"``, ...) make two different id sequences decode to the same text.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

#: The special tokens, in id order: padding, the start of a turn, the end of a turn (the EOS a chat
#: model samples to stop).
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

#: Pieces longer than one character. None contains a newline, so a turn's header never merges with
#: the text after it.
MULTI_CHARACTER_PIECES = (
    "system", "user", "assistant", "tool", " the", "the", " is", " of", "ing", "er", "an", "12", "00",
    " 12", "sum", "add", "(", ")", "answer", " answer", "What", " What",
)


#: A ChatML-like template: each turn is ``<|im_start|>ROLE\n CONTENT <|im_end|>\n``; an assistant turn's content
#: and its ``<|im_end|>`` sit in a ``{% generation %}`` block (the characters the model produced), the newline
#: after it does not. ``add_generation_prompt`` appends the header the model continues from.
CHATML_TEMPLATE = r"""{%- for message in messages %}
{{- '<|im_start|>' + message['role'] + '\n' }}
{%- if message['role'] == 'assistant' %}
{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}
{{- '\n' }}
{%- else %}
{{- message['content'] + '<|im_end|>' + '\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %}
"""


def _single_characters() -> tuple:
    return ("\n",) + tuple(chr(code) for code in range(32, 127))


@dataclasses.dataclass(frozen=True)
class Encoding:
    """Token ids and, for each, the ``(start, end)`` characters of the text it covers."""

    ids: tuple
    offsets: tuple


@dataclasses.dataclass(frozen=True)
class RenderedChat:
    """A rendered transcript and the ``(start, end)`` character spans of its ``{% generation %}`` blocks."""

    text: str
    generation_spans: tuple


class ToyTokenizer:
    """Special tokens first, then the greedy longest match over a fixed vocabulary.

    >>> tok = ToyTokenizer()
    >>> tok.decode(tok.encode("<|im_start|>user\\nWhat is 12?<|im_end|>").ids)
    '<|im_start|>user\\nWhat is 12?<|im_end|>'
    >>> [tok.tokens[i] for i in tok.encode("12+1").ids]
    ['12', '+', '1']
    """

    def __init__(self):
        pieces = list(SPECIAL_TOKENS) + list(MULTI_CHARACTER_PIECES)
        pieces += [c for c in _single_characters() if c not in pieces]
        #: Token strings by id.
        self.tokens = tuple(pieces)
        self._ids = {piece: index for index, piece in enumerate(self.tokens)}
        self._longest = max(len(piece) for piece in MULTI_CHARACTER_PIECES)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @property
    def pad_token_id(self) -> int:
        return self._ids["<|endoftext|>"]

    @property
    def eos_token_id(self) -> int:
        """``<|im_end|>``: a chat model ends its turn, and so its response, with it."""
        return self._ids["<|im_end|>"]

    def token_id(self, token: str) -> int:
        """The id of one token string (a special token or a piece)."""
        if not isinstance(token, str) or token not in self._ids:
            raise ValueError(f"token must be one of the tokenizer's tokens, got {token!r}")
        return self._ids[token]

    def encode(self, text: str) -> Encoding:
        """Ids and character offsets of ``text`` (ASCII only)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        ids, offsets, at = [], [], 0
        while at < len(text):
            special = next((s for s in SPECIAL_TOKENS if text.startswith(s, at)), None)
            if special is not None:
                piece = special
            else:
                piece = next((text[at:at + n] for n in range(min(self._longest, len(text) - at), 0, -1)
                              if text[at:at + n] in self._ids and text[at:at + n] not in SPECIAL_TOKENS), None)
                if piece is None:
                    raise ValueError(f"text holds a character the toy vocabulary lacks: {text[at]!r} at {at}")
            ids.append(self._ids[piece])
            offsets.append((at, at + len(piece)))
            at += len(piece)
        return Encoding(tuple(ids), tuple(offsets))

    def decode(self, ids) -> str:
        """The text of a sequence of ids (special tokens written out)."""
        out = []
        for position, token in enumerate(ids):
            if isinstance(token, bool) or not hasattr(token, "__index__") or not 0 <= int(token) < len(self.tokens):
                raise ValueError(f"ids[{position}] must be a token id in [0, {len(self.tokens)}), got {token!r}")
            out.append(self.tokens[int(token)])
        return "".join(out)


def _environment():
    # Imported here so that importing course (the widgets) never needs Jinja2.
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationBlocks(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}``: renders its body and records where it landed.

        transformers' ``AssistantTracker`` measures the text rendered so far from the blocks the
        template has yielded; this one does the same through the ``spans`` and ``blocks`` lists that
        :func:`render_chat` hands it for one rendering."""

        tags = {"generation"}

        def __init__(self, environment):
            super().__init__(environment)
            environment.extend(generation_state=None)

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_track"), [], [], body).set_lineno(lineno)

        def _track(self, caller):
            text = caller()
            state = self.environment.generation_state
            if state is not None:
                blocks, spans = state
                start = sum(len(block) for block in blocks)
                spans.append((start, start + len(text)))
            return text

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlocks, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_chat(template: str, messages: list, *, add_generation_prompt: bool = False) -> RenderedChat:
    """Render ``messages`` (dicts with ``role`` and ``content``) with a Jinja2 chat ``template``.

    Returns the text and the character spans of the template's ``{% generation %}`` blocks, the spans
    from which transformers' ``apply_chat_template(..., return_assistant_tokens_mask=True)`` builds its
    ``assistant_masks``.
    """
    if not isinstance(template, str):
        raise TypeError(f"template must be a string, got {type(template).__name__}")
    if not isinstance(messages, (list, tuple)) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        raise ValueError("messages must be a list of dicts with string 'role' and 'content'")
    if not isinstance(add_generation_prompt, bool):
        raise TypeError(f"add_generation_prompt must be True or False, got {type(add_generation_prompt).__name__}")
    env = _environment()
    compiled = env.from_string(template)
    blocks, spans = [], []
    env.generation_state = (blocks, spans)
    try:
        for block in compiled.generate(messages=[dict(m) for m in messages], add_generation_prompt=add_generation_prompt):
            blocks.append(block)
    finally:
        env.generation_state = None
    return RenderedChat("".join(blocks), tuple(spans))
