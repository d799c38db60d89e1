"""TeX formulas to MathML, made offline at grading time, and heading levels fitted for a page.

Feedback pages must read without network access, so no MathJax from a CDN: ``$...$`` and
``$$...$$`` are converted to MathML by ``latex2mathml`` (pure Python) and browsers draw MathML
natively. A formula the converter cannot read is shown as its TeX source in ``<code>``, never dropped.

:func:`mathml` serves :mod:`autograder.feedback.markdown` (which renders and sanitizes written answers
and notebook prose for every page). :func:`substitute_math` puts MathML into the Markdown source of the
course's own cells for ``nbgrader generate_feedback``'s page (instructors' text, not students').
"""

from __future__ import annotations

import html
import re
import secrets

from autograder.limits import TEXT_FORMULAS

try:
    from latex2mathml.converter import convert as _to_mathml
except ImportError:  # pragma: no cover - a declared dependency; TeX source is the fallback
    _to_mathml = None

# Display math first ($$...$$, \[...\]), then inline ($...$ on one line, \(...\) on one line). A
# dollar that is escaped or followed by a space does not open inline math (prices, shell prompts).
# A form is (opening, closing, spans lines, least inside) or (pattern, None, ...): see _spans.
_DISPLAY = (("$$", "$$", True, 1), ("\\[", "\\]", True, 1))
_INLINE = ((re.compile(r"(?<![\\$])\$(?![\s$])([^$\n]+?)(?<!\s)\$(?!\$)"), None, False, 1),
           ("\\(", "\\)", False, 1))
# Code spans and fenced blocks keep their dollars.
_CODE = (("```", "```", True, 0), (re.compile(r"`[^`\n]*`"), None, False, 0))
_CODE_SLOT = re.compile(r"CODESLOT[0-9a-f]{12}X")


class _Form:
    """Where the next span of one delimited form starts, from a position that only moves forward.

    Every search resumes where the last one stopped (opening, closing and newline positions are
    remembered), so finding all spans is linear in the text, however many openings lack a closing.
    """

    def __init__(self, text: str, form: tuple):
        self.text = text
        self.opening, self.closing, self.multiline, self.least = form
        self.match = None  # pattern forms: the last match found
        self.start = self.close = self.newline = -1

    def next(self, position: int):
        """``(start, end, inside)`` of the first span at or after ``position``; None when there is none."""
        text = self.text
        if self.closing is None:
            if self.match is None or self.match.start() < position:
                self.match = self.opening.search(text, position)
            if self.match is None:
                return None
            match = self.match
            return match.start(), match.end(), match.group(1) if self.opening.groups else match.group(0)
        width = len(self.opening)
        if self.start < position:
            self.start = text.find(self.opening, position)
        while self.start >= 0:
            inside = self.start + width
            if self.close < inside + self.least:
                self.close = text.find(self.closing, inside + self.least)
                if self.close < 0:
                    return None  # no closing after this opening, nor after any later one
            if not self.multiline and self.newline < inside:
                found = text.find("\n", inside)
                self.newline = found if found >= 0 else len(text)
            if self.multiline or self.newline >= self.close:
                return self.start, self.close + len(self.closing), text[inside:self.close]
            self.start = text.find(self.opening, self.start + 1)
        return None


def _spans(text: str, forms) -> list:
    """``(start, end, inside)`` of each delimited span of ``text``, leftmost first, as one regular
    expression alternating over ``forms`` would find them: ``opening(.+?)closing`` (``.*?`` when the
    least inside is 0; ``.`` matching newlines when the form spans lines), or a pattern's group 1.

    Linear: a regular expression would scan to the end of the text from every opening that has no
    closing (quadratic on a written answer made of openings).
    """
    spans, position, live = [], 0, [_Form(text, form) for form in forms]
    while live:
        found = [(form, form.next(position)) for form in live]
        live = [form for form, span in found if span is not None]
        if not live:
            break
        best = min((span for _, span in found if span is not None), key=lambda span: span[0])
        spans.append(best)
        position = best[1]
    return spans


def _replace(text: str, spans: list, make) -> str:
    parts, last = [], 0
    for start, end, inside in spans:
        parts += [text[last:start], make(text[start:end], inside)]
        last = end
    return "".join(parts + [text[last:]])


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
    render = render or _budgeted_mathml()
    codes: dict = {}

    def keep_code(whole: str, inside: str) -> str:
        key = f"CODESLOT{secrets.token_hex(6)}X"
        codes[key] = whole
        return key

    text = _replace(text, _spans(text, _CODE), keep_code)
    text = _replace(text, _spans(text, _DISPLAY), lambda whole, tex: "\n\n" + render(tex, True) + "\n\n")
    text = _replace(text, _spans(text, _INLINE), lambda whole, tex: render(tex, False))
    return _CODE_SLOT.sub(lambda m: codes.get(m.group(0), m.group(0)), text) if codes else text


def _budgeted_mathml(budget: list | None = None):
    """``render(tex, display)``: MathML for the first ``budget[0]`` formulas, TeX source after that."""
    budget = [TEXT_FORMULAS.value] if budget is None else budget

    def render(tex: str, display: bool) -> str:
        budget[0] -= 1
        if budget[0] < 0:
            return f'<code class="tex">{html.escape(tex.strip())}</code>'
        return mathml(tex, display=display)

    return render


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


__all__ = ["fit_heading_levels", "fit_markdown_headings", "mathml", "substitute_math"]
