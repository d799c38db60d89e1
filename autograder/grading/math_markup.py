"""Markdown with TeX mathematics to HTML whose formulas are MathML, made offline at grading time.

Feedback pages must read without network access, so no MathJax from a CDN: ``$...$`` and
``$$...$$`` are converted to MathML by ``latex2mathml`` (pure Python) and browsers draw MathML
natively. The formulas are cut out before the Markdown renderer sees them (it would read ``_`` and
``*`` inside them as emphasis) and put back afterwards. A formula the converter cannot read is shown
as its TeX source in ``<code>``, never dropped.
"""

from __future__ import annotations

import html
import re
import secrets

try:
    from latex2mathml.converter import convert as _to_mathml
except ImportError:  # pragma: no cover - a declared dependency; TeX source is the fallback
    _to_mathml = None

try:  # nbconvert's Markdown renderer (a dependency of nbgrader)
    import mistune

    _markdown = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
except Exception:  # noqa: BLE001 - plain text is the fallback
    _markdown = None

# Display math first ($$...$$, \[...\]), then inline ($...$ on one line, \(...\)). A dollar that
# is escaped or followed by a space does not open inline math (prices, shell prompts).
_DISPLAY = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.S)
_INLINE = re.compile(r"(?<![\\$])\$(?![\s$])([^$\n]+?)(?<!\s)\$(?!\$)|\\\((.+?)\\\)")
# Code spans and fenced blocks keep their dollars.
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_HEADING = re.compile(r"<(/?)h([1-6])([ >])")


def mathml(tex: str, *, display: bool = False) -> str:
    """MathML for the TeX ``tex`` (``<code class="tex">`` with the source when it cannot be converted).

    >>> mathml("x^2").startswith('<math')
    True
    >>> mathml(r"\\frac{1}{")  # unbalanced: shown as source
    '<code class="tex">\\\\frac{1}{</code>'
    """
    tex = tex.strip()
    if _to_mathml is not None:
        try:
            markup = _to_mathml(tex, display="block" if display else "inline")
        except Exception:  # noqa: BLE001 - any parse failure falls back to the source
            markup = None
        if markup:
            # The TeX source as an annotation: screen readers and copy-paste get something readable.
            return markup.replace("<math ", f'<math aria-label="{html.escape(tex)}" ', 1)
    return f'<code class="tex">{html.escape(tex)}</code>'


def substitute_math(text: str, render=None) -> str:
    """``text`` with each formula replaced by ``render(tex, display)`` (default: its MathML).

    Code spans and fenced code keep their dollars.

    >>> substitute_math("`$HOME` costs $5 and $x^2$", lambda tex, display: f"[{tex}]")
    '`$HOME` costs $5 and [x^2]'
    """
    render = render or (lambda tex, display: mathml(tex, display=display))
    codes: dict = {}

    def keep_code(match) -> str:
        key = f"CODESLOT{secrets.token_hex(6)}X"
        codes[key] = match.group(0)
        return key

    text = _CODE.sub(keep_code, text)
    text = _DISPLAY.sub(lambda m: "\n\n" + render(m.group(1) or m.group(2), True) + "\n\n", text)
    text = _INLINE.sub(lambda m: render(m.group(1) or m.group(2), False), text)
    for key, code in codes.items():
        text = text.replace(key, code)
    return text


def markdown_html(text: str, *, demote: int = 0) -> str:
    """HTML for Markdown ``text``, its formulas as MathML, its headings moved ``demote`` levels down.

    >>> "<math" in markdown_html("Let $y_{<t}$ be the prefix.")
    True
    >>> markdown_html("# Title", demote=2)
    '<h3>Title</h3>\\n'
    """
    slots: dict = {}

    def keep(tex: str, display: bool) -> str:
        # Formulas are cut out before the Markdown renderer sees them: it would read _ and * as emphasis.
        key = f"MATHSLOT{secrets.token_hex(6)}X"
        slots[key] = mathml(tex, display=display)
        return key

    text = substitute_math(text, keep)
    body = _markdown(text) if _markdown is not None else f"<pre>{html.escape(text)}</pre>"
    for key, markup in slots.items():
        body = body.replace(f"<p>{key}</p>", markup).replace(key, markup)
    if demote:
        body = _HEADING.sub(lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + demote)}{m.group(3)}", body)
    return body


_ANY_HEADING = re.compile(r"<(/?)h([1-6])(?=[\s>])", re.IGNORECASE)


def fit_heading_levels(page: str) -> str:
    """``page`` with every HTML heading at most one level below the one before it (WCAG: no skips).

    Notebook cells bring their own levels (a ``###`` note right under a ``#`` title, say); going back
    up is fine, going down more than one level is moved up to the next level.

    >>> fit_heading_levels("<h1>a</h1><h3>b</h3><h5 id='c'>c</h5><h2>d</h2>")
    "<h1>a</h1><h2>b</h2><h3 id='c'>c</h3><h2>d</h2>"
    """
    opened: list = []
    current = 0

    def fit(match) -> str:
        nonlocal current
        closing, level = match.group(1), int(match.group(2))
        if closing:
            level = opened.pop() if opened else level
        else:
            level = min(level, current + 1)
            current = level
            opened.append(level)
        return f"<{closing}h{level}"

    return _ANY_HEADING.sub(fit, page)


def fit_markdown_headings(source: str, current: int) -> tuple[str, int]:
    """Markdown ``source`` with its ``#`` headings fitted below level ``current`` (fences untouched);
    returns the text and the last heading level."""
    lines, fenced = [], False
    for line in source.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{1,6})(\s.*)$", line)
        if match:
            current = min(len(match.group(1)), current + 1)
            line = "#" * current + match.group(2)
        lines.append(line)
    return "\n".join(lines), current


__all__ = ["fit_heading_levels", "fit_markdown_headings", "markdown_html", "mathml", "substitute_math"]
