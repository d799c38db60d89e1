"""Markdown written by anyone (students' written answers above all) to HTML that carries no active content.

One renderer for every page that shows a written answer: the kit's feedback page, formgrader's grading
view and the page ``nbgrader generate_feedback`` writes. Two steps, neither of which guesses:

1. **CommonMark, parsed as CommonMark.** ``markdown-it-py`` (the ``commonmark`` preset, plus tables and
   strikethrough) decides what is code, a link or a paragraph, exactly as the CommonMark spec does
   (fence indentation, info strings, ``\\r`` line endings, link reference definitions). Raw HTML in the
   text is not interpreted: it is shown as the characters the student typed. Images are not loaded
   (``![alt](url)`` reads as ``!`` and a link). ``$...$`` and ``$$...$$`` are math tokens of the same
   parser (``mdit_py_plugins.dollarmath``), so a dollar inside code stays a dollar; each formula becomes
   MathML (:func:`autograder.feedback.math_markup.mathml`), drawn by the browser with nothing loaded.
2. **An allow-list sanitizer.** The HTML, MathML included, goes through ``nh3`` (the binding of the
   ammonia crate, an html5ever parser): an element, attribute or URL scheme outside :data:`TAGS`,
   :data:`ATTRIBUTES` and :data:`URL_SCHEMES` does not survive, whatever the Markdown said (no
   relative URLs either: a student's answer has no files of its own to point at).

:func:`notebook_cell_source` then freezes that HTML into the source of a Markdown cell that nbconvert's
renderer (mistune, raw HTML allowed) passes through verbatim: see its docstring for why it cannot be
read as Markdown a second time.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from xml.etree import ElementTree

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from autograder.feedback.math_markup import mathml
from autograder.limits import PAGE_FORMULA_CHARS, PAGE_FORMULAS, PAGE_MARKDOWN_COST, PAGE_PLAIN_CHARS, TEXT_FORMULAS

#: Elements MathML needs to draw what ``latex2mathml`` writes (no ``maction``, ``annotation-xml``,
#: ``semantics`` or ``mglyph``: the first links and toggles, the others carry HTML inside MathML).
MATHML_TAGS = frozenset({
    "math", "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "mfrac", "msqrt", "mroot", "mstyle",
    "merror", "mpadded", "mphantom", "msub", "msup", "msubsup", "munder", "mover", "munderover",
    "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd", "mlabeledtr", "menclose",
})
#: Every element a rendered written answer may hold: what CommonMark produces, tables, and MathML.
TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code", "em", "strong", "s",
    "del", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}) | MATHML_TAGS
#: Attributes per element. No ``style``, ``id``, ``class`` (but ``tex`` on code, below) or event handler.
ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "math": {"display", "aria-label"},
    "mo": {"stretchy", "fence", "separator", "lspace", "rspace", "form", "largeop", "movablelimits",
           "minsize", "maxsize", "accent", "symmetric"},
    "mi": {"mathvariant"}, "mn": {"mathvariant"}, "mtext": {"mathvariant"},
    "mstyle": {"displaystyle", "scriptlevel", "mathvariant", "mathsize"},
    "mfrac": {"linethickness"},
    "mover": {"accent"}, "munder": {"accentunder"}, "munderover": {"accent", "accentunder"},
    "mspace": {"width", "height", "depth"},
    "mpadded": {"width", "height", "depth", "lspace", "voffset"},
    "mtable": {"columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines", "frame"},
    "mtr": {"columnalign"}, "mtd": {"columnalign", "columnspan", "rowspan"},
    "menclose": {"notation"},
}
#: URL schemes a link may keep; any other (``javascript:``, ``data:``, ``vbscript:``...) loses its href.
URL_SCHEMES = frozenset({"http", "https", "mailto"})
#: The class the fallback of an unreadable formula carries (``<code class="tex">``), the only class kept.
CLASSES = {"code": {"tex"}}
#: The classes of the wrapper :func:`notebook_cell_source` puts around an answer: MathJax 2 (formgrader's
#: grading view loads it) and MathJax 3 skip elements so marked, so no student TeX ever reaches MathJax
#: (its ``\\href``, ``\\style`` and ``\\unicode`` have been ways in before).
WRAPPER_CLASSES = "module6-written tex2jax_ignore mathjax_ignore"
_WRAPPER = f'<div class="{WRAPPER_CLASSES}">'
# What the written answers of one notebook (one page) may cost to format: the budgets PAGE_MARKDOWN_COST,
# PAGE_FORMULAS, PAGE_FORMULA_CHARS and PAGE_PLAIN_CHARS of :mod:`autograder.limits`. The Markdown cost is in
# units of :func:`markdown_cost`: every character costs 1, and each character at which Markdown syntax can
# start (the inline parser's terminators: ``*``, ``_``, ``[``, ``$``, ``<``, ``&``, ``\\``, the newline and the
# rest of markdown-it's set, plus ``|`` and the tab) 10 more. Formatting runs in the grading process, outside
# the sandbox's clock, and what costs is markdown-it's parse, per syntax character, not per character:
# 10,000 characters of plain words take under a millisecond, 10,000 of ``[*`` or ``1. a`` lines about half a
# second (a class of three took 6.6 times as long with one answer of 190,000 such characters under the
# old 200,000-character budget). An answer over what is left is shown as plain text. An honest answer
# (a tenth of its characters syntax) of 10,000 characters costs some 19,000. ``latex2mathml`` costs per TeX
# character (10,000 characters of formulas took as long as the worst Markdown above): beyond the formula
# budgets a formula is shown as its TeX source. Plain text beyond its budget is named, not shown (the whole
# answer stays in the submitted notebook), so that every page, formgrader's grading view included, stays
# small whatever the answer holds.
#: The extra cost of one syntax character (see :data:`autograder.limits.PAGE_MARKDOWN_COST`).
_SYNTAX_COST = 10


@dataclasses.dataclass
class Budget:
    """What one notebook's written answers may still cost: Markdown formatting (:func:`markdown_cost`),
    formulas made MathML and their TeX characters (one-item lists, shared with the renderer), and
    characters shown as plain text."""

    cost: int = PAGE_MARKDOWN_COST.value
    formulas: list = dataclasses.field(default_factory=lambda: [PAGE_FORMULAS.value])
    tex: list = dataclasses.field(default_factory=lambda: [PAGE_FORMULA_CHARS.value])
    plain: int = PAGE_PLAIN_CHARS.value


@functools.lru_cache(maxsize=1)
def _syntax_characters():
    """The characters at which markdown-it's inline parser stops to try a rule (its own terminator set),
    and those that start block syntax without one (``|`` of tables, the tab)."""
    import re
    terminators = _parser(0).inline.terminator_re.pattern
    return re.compile(terminators[:-1] + re.escape("|\t") + "]")


def markdown_cost(text: str, cap: int | None = None) -> int:
    """What formatting ``text`` as Markdown costs, in the units of :data:`autograder.limits.PAGE_MARKDOWN_COST`.

    With ``cap``, any value over ``cap`` may be returned as soon as the cost is known to exceed it (a
    20 MB answer is not scanned).

    >>> markdown_cost("plain words"), markdown_cost("*a*"), markdown_cost("a\\nb")
    (11, 23, 13)
    """
    if cap is not None and len(text) > cap:
        return len(text)
    return len(text) + _SYNTAX_COST * len(_syntax_characters().findall(text))


def _math(tokens, idx, env, display: bool) -> str:
    budget, tex_budget = env["formulas"], env["tex"]
    budget[0] -= 1
    tex = tokens[idx].content
    tex_budget[0] -= len(tex)
    # Over either budget: the TeX source.
    markup = mathml(tex, display=display) if budget[0] >= 0 and tex_budget[0] >= 0 else ""
    return markup if _is_plain_mathml(markup) else f'<code class="tex">{html.escape(tex.strip())}</code>'


def _is_plain_mathml(markup: str) -> bool:
    """``markup`` is well-formed XML made of MathML elements only.

    ``latex2mathml`` copies ``\\text{...}`` into ``<mtext>`` unescaped, so a formula can carry markup
    (``\\text{</math><img ...>}``). The sanitizer would remove what is not allowed, but markup that closes
    the formula early also moves the rest of the answer inside it: such a formula is shown as its TeX.
    """
    if not markup.startswith("<math"):
        return False
    try:
        root = ElementTree.fromstring(markup)
    except ElementTree.ParseError:
        return False
    return all(element.tag.rpartition("}")[2] in MATHML_TAGS for element in root.iter())


def _plain_fence(self, tokens, idx, options, env) -> str:
    # The info string ("python") would become a class the allow-list drops; code is not highlighted here.
    tokens[idx].info = ""
    return self.fence(tokens, idx, options, env)


@functools.lru_cache(maxsize=8)
def _parser(demote: int) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("image")
    # No space after an opening or before a closing dollar, no digit beside either: "$5 and $10" is money.
    dollarmath_plugin(md, allow_space=False, allow_digits=False, double_inline=True)
    md.add_render_rule("math_inline", lambda self, tokens, idx, options, env: _math(tokens, idx, env, False))
    md.add_render_rule("math_inline_double", lambda self, tokens, idx, options, env: _math(tokens, idx, env, True))
    for name in ("math_block", "math_block_label"):
        md.add_render_rule(name, lambda self, tokens, idx, options, env: _math(tokens, idx, env, True) + "\n")
    md.add_render_rule("fence", _plain_fence)
    if demote:
        def heading(self, tokens, idx, options, env):
            token = tokens[idx]
            token.tag = f"h{min(6, int(token.tag[1]) + demote)}"
            return self.renderToken(tokens, idx, options, env)

        md.add_render_rule("heading_open", heading)
        md.add_render_rule("heading_close", heading)
    return md


def sanitize(fragment: str) -> str:
    """``fragment`` with every element, attribute and URL outside the allow-list removed (text kept).

    >>> sanitize('<p onclick="x()">hi<script>alert(1)</script></p><a href="javascript:alert(1)">a</a>')
    '<p>hi</p><a rel="noopener noreferrer">a</a>'
    """
    return nh3.clean(fragment, tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
                     url_schemes=set(URL_SCHEMES), url_relative="deny", allowed_classes=CLASSES,
                     clean_content_tags={"script", "style"}, strip_comments=True)


def markdown_html(text: str, *, demote: int = 0, formulas: list | None = None, tex: list | None = None) -> str:
    """Sanitized HTML for Markdown ``text``: formulas as MathML, headings ``demote`` levels down.

    ``formulas`` and ``tex`` (one-item lists, shared across calls) are how many formulas, and TeX characters
    in all, may still become MathML; default: :data:`~autograder.limits.TEXT_FORMULAS` and
    :data:`~autograder.limits.PAGE_FORMULA_CHARS` for this text alone. The caller bounds ``text`` itself
    (:func:`written_answer_html` for students' answers; the instructor's cells are the course's own).

    >>> "<math" in markdown_html("Let $y_{<t}$ be the prefix.")
    True
    >>> markdown_html("# Title <script>", demote=2)
    '<h3>Title &lt;script&gt;</h3>\\n'
    """
    if not isinstance(text, str):
        raise TypeError(f"markdown_html: text must be a str, got {type(text).__name__}")
    budget = [TEXT_FORMULAS.value] if formulas is None else formulas
    tex_budget = [PAGE_FORMULA_CHARS.value] if tex is None else tex
    # NUL is replaced as CommonMark says (U+FFFD); markdown-it does it too, html5ever would drop it.
    if not isinstance(demote, int) or not 0 <= demote <= 5:
        raise ValueError(f"markdown_html: demote must be an int from 0 to 5, got {demote!r}")
    return sanitize(_parser(demote).render(text.replace("\x00", "\ufffd"), {"formulas": budget, "tex": tex_budget}))


def written_answer_html(text: str, budget: Budget, *, demote: int = 2) -> str:
    """Sanitized HTML of one written answer, charged to ``budget``; beyond it, the answer as plain text
    (at most ``budget.plain`` characters of it shown, the rest named).

    >>> written_answer_html("*a* <b>", Budget())
    '<p><em>a</em> &lt;b&gt;</p>\\n'
    >>> written_answer_html("*a*", Budget(cost=2))
    '<p>Shown as plain text: too long to format.</p><pre><code>*a*</code></pre>'
    >>> written_answer_html("abcdef", Budget(cost=2, plain=4)).split("</p>", 1)[1]
    '<pre><code>abcd</code></pre><p>[2 more characters not shown: see the submitted notebook.]</p>'
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"written_answer_html: budget must be a Budget, got {type(budget).__name__}")
    cost = markdown_cost(text, cap=budget.cost)
    if cost > budget.cost:
        shown = text[:max(budget.plain, 0)]
        budget.plain -= len(shown)
        rest = len(text) - len(shown)
        more = f"<p>[{rest} more characters not shown: see the submitted notebook.]</p>" if rest else ""
        return f"<p>{TOO_LONG}</p><pre><code>{html.escape(shown, quote=False)}</code></pre>{more}"
    budget.cost -= cost
    return markdown_html(text, demote=demote, formulas=budget.formulas, tex=budget.tex)


#: The sentence above a written answer shown as plain text.
TOO_LONG = "Shown as plain text: too long to format."


def notebook_cell_source(text: str, budget: Budget | None = None, *, demote: int = 2) -> str:
    """The source of a Markdown cell showing ``text`` (a written answer) as :func:`written_answer_html` renders it.

    nbconvert renders Markdown cells with mistune, raw HTML allowed, and reads ``$$``, ``\\[`` and
    ``\\begin{`` as math *before* any other block rule (``nbconvert/filters/markdown_mistune.py``,
    ``MathBlockParser.MULTILINE_MATH``). So the sanitized HTML is written as one HTML block that mistune
    hands to the page unchanged: it starts with ``<div`` (an HTML block of CommonMark's type 6, ended
    only by a blank line), it is one line (every newline, in ``<pre>`` too, is the reference ``&#10;``),
    and it holds no ``$`` or backslash (``&#36;``, ``&#92;``), so no math rule can match inside it. Nor
    does it hold a square bracket (``&#91;``, ``&#93;``): nbconvert's templates pass every Markdown cell's
    HTML through ``strip_files_prefix`` (nbconvert==7.17.2, ``filters/strings.py``), whose
    ``markdown_url_pattern`` scans from each ``[`` to the end of its line for ``](files/``: on this one
    line, 190,000 characters of ``[*`` kept formgrader's grading view busy 272 s. A browser reads the
    references back as the same characters.

    >>> notebook_cell_source("costs $5\\n\\n```\\na\\n\\nb\\n```")
    '<div class="module6-written tex2jax_ignore mathjax_ignore"><p>costs &#36;5</p>&#10;<pre><code>a&#10;&#10;b&#10;</code></pre></div>'
    """
    return freeze(written_answer_html(text, Budget() if budget is None else budget, demote=demote))


def freeze(fragment: str) -> str:
    """Sanitized HTML ``fragment`` as the one-line Markdown cell source described in :func:`notebook_cell_source`."""
    fragment = fragment.strip()
    for character, reference in (("\r", "&#10;"), ("\n", "&#10;"), ("$", "&#36;"), ("\\", "&#92;"),
                                 ("[", "&#91;"), ("]", "&#93;")):
        fragment = fragment.replace(character, reference)
    return f"{_WRAPPER}{fragment}</div>"


def frozen_html(source: str) -> str | None:
    """The HTML of a cell source made by :func:`freeze`, sanitized again; None for any other source.

    >>> frozen_html(notebook_cell_source("$x$ and <i>"))[:21]
    '<p><math aria-label="'
    >>> frozen_html("*markdown*") is None
    True
    """
    if not (isinstance(source, str) and source.startswith(_WRAPPER)):
        return None
    # Whoever wrote the cell, what it holds goes through the allow-list again (the wrapper goes too).
    return sanitize(source)


def inert_cell_source(source: str) -> str:
    """Any written-answer cell ``source`` as a frozen one: a frozen source is sanitized again, anything
    else (an autograded notebook made before this renderer, say) is rendered as a written answer.

    Idempotent on what :func:`notebook_cell_source` makes (the corpus tests check it).
    """
    again = frozen_html(source)
    return freeze(again) if again is not None else notebook_cell_source(source)


__all__ = ["ATTRIBUTES", "Budget", "TAGS", "TOO_LONG", "URL_SCHEMES",
           "WRAPPER_CLASSES", "freeze", "frozen_html", "inert_cell_source", "markdown_cost", "markdown_html", "notebook_cell_source",
           "sanitize", "written_answer_html"]
