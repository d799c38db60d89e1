"""Feedback HTML for one graded notebook: the student's cells, a verdict per test group, the points.

Rendered from the autograded notebook the grader built, whose test cells hold only their docstring:
hidden test code, inputs and expected values never reach this page (they never existed in the
notebook). Each test cell's points output carries the group's verdict record as data
(:class:`autograder.results.GroupVerdict`, in the metadata under ``autograder.results.METADATA_KEY``);
the page and the class report read it from there, never from the printed text. :func:`verdict_html`
is the one HTML rendering of a verdict (the text one is ``autograder.results.verdict_text``): it
lives here because it is a fragment of this page, styled by :data:`STYLE` and pointing to its
"What happened" section.

The page is one self-contained file that reads offline: written answers and notebook prose are
CommonMark rendered and sanitized by :mod:`autograder.feedback.markdown` (formulas are MathML made at
grading time), code is highlighted by Pygments with inline CSS, figures are
data URIs. Accessibility: headings never skip a level, figures carry alt text, and every verdict is
a word ("Passed", "Failed", "Not run") as well as a colour and a symbol.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import re

from autograder.feedback import withheld
from autograder.feedback.markdown import Budget as WrittenBudget
from autograder.feedback.markdown import frozen_html, markdown_html, written_answer_html
from autograder.feedback.math_markup import fit_heading_levels
from autograder.feedback.content_cache import PAGES
from autograder.feedback.rubric import is_rubric_cell
from autograder.results import GroupVerdict, Status, verdicts_of
from autograder.limits import (
    CELL_SECONDS, GRADER_PAGE_STUDENT_BYTES, HIGHLIGHT_CELL_CHARS, HIGHLIGHT_CELL_TOKENS, HIGHLIGHT_PAGE_CHARS,
    HIGHLIGHT_PAGE_TOKENS, MEMORY_MB, PAGE_IMAGE_BYTES, PAGE_IMAGES, PAGE_TEXT_CHARS, WALL_SECONDS,
)

try:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    _FORMATTER = HtmlFormatter(cssclass="hl", nowrap=False)
    _LEXER = PythonLexer()
    _PYGMENTS_CSS = _FORMATTER.get_style_defs(".hl")
except ImportError:  # pragma: no cover - pygments comes with nbconvert
    highlight = None
    _PYGMENTS_CSS = ""

# Every budget of this page is a bound of :mod:`autograder.limits` (one table): printed text per output
# (PAGE_TEXT_CHARS), figures (PAGE_IMAGES, PAGE_IMAGE_BYTES), the student's bytes (GRADER_PAGE_STUDENT_BYTES),
# code highlighted by Pygments, per cell and per page, in characters and in tokens (HIGHLIGHT_*: Pygments
# costs about 6 microseconds and up to 25 bytes of markup per character of code made of tiny tokens, and
# about 30 microseconds per token, so that 50,000 characters of ``a+1;`` cost 1.5 s where 50,000 of comments
# cost 30 ms; beyond, code is escaped plain text), and what the written answers may cost to format
# (PAGE_MARKDOWN_COST, PAGE_FORMULAS, PAGE_FORMULA_CHARS, PAGE_PLAIN_CHARS: see autograder/feedback/markdown.py).
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def code_tokens(source: str) -> int:
    """How many tokens highlighting ``source`` may cost: runs of word characters, runs of white space and
    every other character one each (at least as many as Pygments' Python lexers make, which keep a
    comment or a string whole). Counted by one regular expression in C, before any lexer runs.

    >>> code_tokens("x = f(1)  # twice"), code_tokens("a+1;" * 3)
    (12, 12)
    """
    return _TOKEN.subn("", source)[1]


def highlightable(source: str, chars_left: int, tokens_left: int) -> tuple:
    """``(chars, tokens)`` that deciding whether to highlight ``source`` costs a page's budgets (what is left
    of them: ``chars_left``, ``tokens_left``), and whether it is highlighted: ``(chars, tokens, True)``,
    or shown as plain text: ``(chars, 0, False)``.

    A cell within the characters' budgets is charged its characters whether or not its tokens fit, so
    that counting them too is bounded per page (else 2,000 cells of 9,800 one-character tokens, each over
    a cell's budget, would all be counted: some 8 s); one over them costs nothing and is plain text.
    """
    if len(source) > min(HIGHLIGHT_CELL_CHARS.value, chars_left):
        return 0, 0, False
    tokens = code_tokens(source)
    if tokens <= min(HIGHLIGHT_CELL_TOKENS.value, tokens_left):
        return len(source), tokens, True
    return len(source), 0, False
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

STYLE = """
:root{--pass:#1a7f37;--fail:#b3261e;--skip:#6b5b00;--line:#d0d7de}
body{font-family:system-ui,sans-serif;line-height:1.5;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap;margin:.3rem 0}
.cell{border-left:4px solid var(--line);margin:1rem 0;padding-left:.8rem}
.cell.answer{border-left-color:#3a6fb0}.cell.manual{border-left-color:#9a6700}
.label{font-size:.8rem;color:#555;text-transform:uppercase;letter-spacing:.04em;margin:0}
.out{background:#fff;border:1px solid #e5e5e5}.err{color:#8a1c14;background:#fff5f5}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #bbb;padding:.25rem .6rem;text-align:left}
.verdict{border:1px solid var(--line);border-radius:6px;padding:.2rem .9rem .5rem;margin:.6rem 0}
.verdict h3,.verdict h4,.verdict h5,.verdict h6{margin:.4rem 0;font-size:1.05rem}
.tag{font-weight:bold;white-space:nowrap}
.passed .tag,.tag.passed{color:var(--pass)}.failed .tag,.tag.failed{color:var(--fail)}
.notrun .tag,.tag.notrun{color:var(--skip)}
.cases{list-style:none;padding-left:0}.cases li{margin:.25rem 0}
.what{background:#fff8e1;border:2px solid #9a6700;border-radius:6px;padding:.4rem 1rem}
.teach{display:block;margin-left:1.6rem}
figure{margin:.5rem 0}figure img{max-width:100%;border:1px solid #eee}
math[display=block]{margin:.6rem 0}
code.tex{background:#f6f8fa}
"""


# ----------------------------------------------------------------------------- what went wrong

@dataclasses.dataclass(frozen=True)
class Explanation:
    """One sentence for the student: what stopped their notebook and what to try."""

    kind: str  # "crash", "timeout", "cell-timeout", "memory", "cpu", "output", "protocol", "sandbox",
    # "unreadable", "rejected"
    sentence: str


def _exception_name(output: dict) -> str:
    head = str(output.get("evalue", "")).strip()
    return head.split(":", 1)[0].strip() if head else ""


#: Run reasons of a submission the grader never ran (see ``autograder.grading.worker``).
_REFUSED = ("rejected", "unreadable")


def explain(nb, reason: str | None, exit_status=None, limits: dict | None = None, *,
            incomplete: bool | None = None) -> Explanation | None:
    """Why (part of) a notebook did not run, as one sentence, or None when it ran to the end.

    >>> explain(None, "timeout", limits={"wall_seconds": 60}).kind
    'timeout'
    >>> explain(None, "exited", 0) is None
    True
    """
    limits = limits or {}
    # A submission the grader refused never ran: its test records say so (the page is rendered with
    # no run reason), and it is not a crash.
    refused = reason if reason in _REFUSED else next(
        (record["reason"] for cell in (nb.cells if nb is not None else []) for record in [verdicts_of(cell)]
         if record and record.get("reason") in _REFUSED), None)
    if refused == "unreadable":
        return Explanation("unreadable", "Your submitted file is not a notebook the grader can read, so nothing in "
                           "it was run and every test scores 0: open it in Jupyter (if it does not open, it is "
                           "damaged or not the notebook you worked on), save it and submit it again.")
    if refused == "rejected":
        return Explanation("rejected", "Your submitted file breaks one of the grader's limits (see the notes "
                           "below), so nothing in it was run and every test scores 0: clear large outputs, "
                           "remove extra cells, save it and submit it again.")
    if incomplete is None:  # some test cases never ran: the notebook stopped before them
        incomplete = any(not case.get("ran", True) for cell in (nb.cells if nb is not None else [])
                         for case in (verdicts_of(cell) or {}).get("cases", []))
    wall = limits.get("wall_seconds", WALL_SECONDS.value)
    cell_seconds = limits.get("cell_seconds", CELL_SECONDS.value)
    memory = limits.get("memory_mb", MEMORY_MB.value)
    errors = [output for cell in (nb.cells if nb is not None else []) if cell.get("cell_type") == "code"
              for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    restart = "then restart the kernel, run all cells from the top and submit again"
    if reason == "timeout":
        return Explanation("timeout", f"Your notebook did not finish within the {wall:g} seconds the grader allows "
                           "it, so the tests after that point did not run: look for a loop that never ends or a "
                           f"computation far bigger than the exercise needs, {restart}.")
    if reason == "output":
        return Explanation("output", "Your notebook sent back more data than the grader accepts, so grading stopped "
                           "there: remove large prints and check that your functions return results of the size "
                           f"the exercise asks for, {restart}.")
    if reason == "protocol":
        return Explanation("protocol", "Your notebook wrote to the grader's own channel, so grading stopped there: "
                           f"remove code that writes to low-level file descriptors or replaces sys.stdout, {restart}.")
    if reason == "sandbox":
        return Explanation("sandbox", "The grader's sandbox stopped while running your notebook, so some tests did "
                           "not run: if your notebook runs from top to bottom on your machine, tell your "
                           "instructor, who can grade it again.")
    if any(_exception_name(o) == "MemoryError" for o in errors) or exit_status in (-9, 137):
        return Explanation("memory", f"A cell ran out of memory (each notebook may use {memory:g} MB), so the "
                           "tests that needed it did not run: use arrays of the sizes the exercise gives, process "
                           f"large inputs in chunks, {restart}.")
    if exit_status in (-24, 152):
        return Explanation("cpu", "Your notebook used up its processor time, so it was stopped and the tests after "
                           f"that point did not run: look for a loop that never ends, {restart}.")
    if any(o.get("ename") == "timeout" for o in errors):
        return Explanation("cell-timeout", f"A cell did not finish within {cell_seconds:g} seconds and was stopped "
                           "(marked below), so the tests that needed it did not run: look for a loop that never "
                           f"ends or a computation far bigger than the exercise needs, {restart}.")
    if reason not in (None, "exited") or exit_status not in (None, 0) or incomplete:
        status = f" (exit status {exit_status})" if exit_status not in (None, 0) else ""
        return Explanation("crash", f"The Python process running your notebook stopped in the middle{status}, so "
                           "the cells and tests after that point did not run: remove anything that ends the process "
                           f"(os._exit, sys.exit(), exit(), os.kill), {restart}.")
    return None


# ----------------------------------------------------------------------------- pieces of the page

def _fmt(value) -> str:
    return "pending" if value is None else f"{value:g}"


def _size(markup: str) -> int:
    return len(markup.encode("utf-8", "replace"))


def _plain(text: str, room: int, css: str = "") -> str:
    """``text`` escaped in a ``<pre>``, cut to ``room`` bytes (never inside an entity) with a note of what was cut."""
    attribute = f" class='{css}'" if css else ""
    # A character costs at least one byte: no more than ``room`` of them can fit (escaping 20 MB is a bill too).
    escaped = html.escape(text[:max(room, 0)], quote=False)  # element content: quotes need no escaping
    if len(text) <= room and _size(escaped) <= room:
        return f"<pre{attribute}>{escaped}</pre>"
    cut = escaped.encode("utf-8", "replace")[:max(room, 0)].decode("utf-8", "ignore")
    amp = cut.rfind("&")
    if amp > cut.rfind(";"):
        cut = cut[:amp]
    shown = len(html.unescape(cut))
    return (f"<pre{attribute}>{cut}</pre><p class='label'>[... {len(text) - shown} more characters not shown: "
            f"this page shows at most {GRADER_PAGE_STUDENT_BYTES.value / 1e6:g} MB of your code and its outputs]</p>")


def _text(text: str, css: str = "out") -> str:
    text = _ANSI.sub("", text)
    if len(text) > PAGE_TEXT_CHARS.value:
        text = text[:PAGE_TEXT_CHARS.value] + f"\n[... {len(text) - PAGE_TEXT_CHARS.value} more characters not shown]"
    return f"<pre class='{css}'>{html.escape(text)}</pre>"


def _highlighted(source: str) -> str:
    return highlight(source, _LEXER, _FORMATTER)


def _instructor_markdown(source: str) -> str:
    return markdown_html(source, demote=2)


class _Page:
    """Collects the page's parts; tracks the images shown so far and what the student's parts may still cost.

    ``room`` is what is left of :data:`~autograder.limits.GRADER_PAGE_STUDENT_BYTES`, ``highlight_room`` of
    :data:`~autograder.limits.HIGHLIGHT_PAGE_CHARS` and ``token_room`` of
    :data:`~autograder.limits.HIGHLIGHT_PAGE_TOKENS`.
    """

    def __init__(self):
        self.parts: list = []
        self.images = 0
        self.figure_number = 0
        self.room = GRADER_PAGE_STUDENT_BYTES.value
        self.highlight_room = HIGHLIGHT_PAGE_CHARS.value
        self.token_room = HIGHLIGHT_PAGE_TOKENS.value

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def student(self, markup: str) -> None:
        """Add a part made of the student's code or output, if it fits; else one line saying it does not."""
        size = _size(markup)
        if size <= self.room:
            self.room -= size
            self.parts.append(markup)
        elif self.room > 0:
            self.room = 0
            self.parts.append(f"<p class='label'>[Not shown: this page shows at most "
                              f"{GRADER_PAGE_STUDENT_BYTES.value / 1e6:g} MB of your code and its outputs.]</p>")

    def code(self, source: str) -> str:
        """The cell's code: highlighted within the budgets, else as escaped plain text (cut to the room left)."""
        chars, tokens, highlighted = highlightable(source, self.highlight_room, self.token_room) \
            if highlight is not None else (0, 0, False)
        self.highlight_room -= chars
        self.token_room -= tokens
        if highlighted:
            # Pure in ``source``: the same locked cell (or the same answer) on every page is lexed once.
            markup = PAGES.get("pygments", source, _highlighted)
            if _size(markup) <= self.room:
                self.room -= _size(markup)
                return markup
        if self.room <= 0:  # spent: the code is named, not escaped (escaping 20 MB is a bill too)
            return f"<p class='label'>[{len(source)} characters of code not shown: this page shows at most " \
                   f"{GRADER_PAGE_STUDENT_BYTES.value / 1e6:g} MB of your code and its outputs]</p>"
        markup = _plain(source, self.room)
        self.room = max(0, self.room - _size(markup))
        return markup

    def output(self, output: dict, *, label: str) -> None:
        kind = output.get("output_type")
        if kind == "stream":
            self.student(_text(str(output.get("text", "")), "out err" if output.get("name") == "stderr" else "out"))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            image_type = next((t for t in _IMAGE_TYPES if t in data), None)
            if image_type is not None:
                self.image(image_type, data)
            elif "text/plain" in data:
                # Student HTML is never rendered (it could script the page): its plain-text form is.
                self.student(_text(f"{label}{_joined(data['text/plain'])}"))
        elif kind == "error":
            trace = "\n".join(str(line) for line in output.get("traceback", [])) or \
                f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
            self.student(_text(trace, "out err"))

    def image(self, image_type: str, data: dict) -> None:
        payload = _joined(data[image_type])
        try:
            # Decoded strictly and encoded again: what goes into the page is base64 we made, so a
            # forged "image" cannot close the attribute and inject markup.
            raw = payload.encode("utf-8") if image_type == "image/svg+xml" else \
                base64.b64decode("".join(payload.split()), validate=True)
        except Exception:  # noqa: BLE001 - a broken image is reported, not shown
            self.student("<p>(A figure could not be read and is not shown.)</p>")
            return
        size = len(raw)
        if self.images >= PAGE_IMAGES.value or size > PAGE_IMAGE_BYTES.value:
            self.student(f"<p>(A figure is not shown: the page keeps at most {PAGE_IMAGES.value} figures of up to "
                         f"{PAGE_IMAGE_BYTES.value // 1024 // 1024} MB each.)</p>")
            return
        encoded = base64.b64encode(raw).decode("ascii")
        if len(encoded) + 400 > self.room:
            self.student(f"<p>(A figure is not shown: this page shows at most {GRADER_PAGE_STUDENT_BYTES.value / 1e6:g} MB "
                         "of your code and its outputs.)</p>")
            return
        self.room -= len(encoded)
        self.images += 1
        self.figure_number += 1
        # An <img> never runs scripts, so even an SVG the student made is safe here.
        described = _joined(data.get("text/plain", "")).strip()
        alt = f"Figure {self.figure_number} made by your code" + (f" ({described})" if described else "")
        self.add(f"<figure><img src='data:{image_type};base64,{encoded}' alt='{html.escape(alt, quote=True)}'>"
                 f"<figcaption>Figure {self.figure_number}, output of your code.</figcaption></figure>")


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def verdict_html(record: GroupVerdict, level: int) -> str:
    """The verdict as an HTML section under a heading of ``level``: a headline (passed, failed or not
    run, with the points), the cap's and the gate's sentences, then one item per outcome. Failures
    that teach the same thing are listed once with the names of all their cases; cases whose points
    a gate withheld (their own verdict passed) are listed together as withheld, as the text says."""
    cases = record.cases
    passed = sum(1 for c in cases if c.passed)
    not_run = [c for c in cases if not c.ran]
    if passed == len(cases):
        css, word, symbol = "passed", "Passed", "✔"
    elif not_run and len(not_run) == len(cases):
        css, word, symbol = "notrun", "Not run", "⊘"
    else:
        css, word, symbol = "failed", "Failed", "✘"
    title = html.escape(record.title or record.group or "Tests")
    points = f"{_fmt(record.points_earned)} / {_fmt(record.points_available)} points"
    why = "was not run" if record.reason in _REFUSED else "stopped early"
    see = f"because your notebook {why} (see <a href='#what-happened'>What happened</a> at the top)"
    detail = (f"none of its {len(cases)} cases ran {see}" if css == "notrun"
              else f"{passed} of {len(cases)} cases passed")
    lines = [f"<section class='verdict {css}' aria-label='Tests: {title}'>",
             f"<h{level}><span class='tag' aria-hidden='true'>{symbol}</span> Tests: {title}</h{level}>",
             f"<p><span class='tag'>{word}</span>: {points}, {detail}.</p>"]
    for tag, sentence in (("Capped", record.capped), ("Withheld", record.withheld)):
        if sentence:
            lines.append(f"<p><span class='tag'>{tag}</span>: {html.escape(sentence)}</p>")
    items = []
    # Failures that teach the same thing are listed once, with the names of all their cases.
    failed: dict = {}
    for case in cases:
        if not case.ran:
            continue  # summarised below in one line, not one line each
        name = html.escape(case.name)
        item = "passed" if case.passed else "withheld" if case.withheld else (
            case.message or "the result is not what was expected", case.misconception)
        if item not in failed:  # every passed (withheld) case on one line, where the first one was
            failed[item] = []
            items.append(item)
        failed[item].append(name)
    rendered = []
    for item in items:
        names = failed[item]
        many = f" ({len(names)} cases)" if len(names) > 1 else ""
        if item == "passed":
            if len(names) < len(cases):  # when all passed, the summary line says it all
                rendered.append(f"<li><span class='tag passed'>✔ Passed{many}</span> {'; '.join(names)}</li>")
            continue
        if item == "withheld":  # the Withheld line above says why
            rendered.append(f"<li><span class='tag notrun'>⊖ Withheld{many}</span> {'; '.join(names)}</li>")
            continue
        teach, misconception = item
        lead = "What this suggests" if misconception else "Why"
        rendered.append(f"<li><span class='tag failed'>✘ Failed{many}</span> {'; '.join(names)}"
                        f"<span class='teach'>{lead}: {html.escape(teach)}</span></li>")
    if rendered:
        lines.append("<ul class='cases'>" + "".join(rendered) + "</ul>")
    if not_run and css != "notrun":
        lines.append(f"<p><span class='tag notrun'>⊘ Not run</span>: {len(not_run)} of {len(cases)} cases did not "
                     f"run {see}.</p>")
    lines.append("</section>")
    return "\n".join(lines)


def _already_printed(output: dict, printed: str) -> bool:
    lines = [_ANSI.sub("", str(line)).strip() for line in output.get("traceback", [])]
    lines = [line for line in lines if line]
    return bool(lines) and all(line in printed for line in lines[-3:])


def _kind(cell) -> str:
    meta = cell.metadata.get("nbgrader") if isinstance(cell.metadata.get("nbgrader"), dict) else {}
    if cell.cell_type == "markdown":
        return "manual" if meta.get("solution") else "markdown"
    if meta.get("grade") and not meta.get("solution"):
        return "test"
    return "answer" if meta.get("solution") else "code"


# ----------------------------------------------------------------------------- the page

#: How the summary table words each row status for the student.
STATUS_WORDS = {
    Status.GRADED: "graded", Status.NEEDS_MANUAL_GRADE: "waiting for a person", Status.ERROR: "did not run",
    Status.TIMEOUT: "ran out of time", Status.MISSING: "not submitted", Status.REJECTED: "not run (see the notes)",
    Status.GRADER_ERROR: "not graded: the grader failed", Status.SYMLINK: "not read (a symbolic link)",
    Status.BAD_TIMESTAMP: "timestamp unreadable",
    Status.TIMESTAMP_DISPUTED: "timestamp not the received time",
    Status.UNREADABLE: "not a readable notebook: resubmit it",
}


def render(nb, task: dict, rows: list, notes: list, *, reason: str | None = None, exit_status=None) -> str:
    """The feedback page for ``nb`` (an autograded notebook node)."""
    total = sum(r["score"] for r in rows if r["score"] is not None)
    available = sum(r["max_score"] for r in rows)
    pending = any(r["score"] is None for r in rows)
    stem = str(task["stem"])
    title = f"Feedback on {stem} for {task['student']}"
    page = _Page()
    page.add(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>{html.escape(title)}</title><style>{STYLE}{_PYGMENTS_CSS}</style></head><body><main>")
    page.add(f"<h1>{html.escape(title)}</h1>")
    page.add(f"<p>Assignment {html.escape(str(task['assignment']))}. <strong>Score: {total:g} / {available:g}</strong>"
             + (" (written answers are still to be graded by a person)." if pending else ".") + "</p>")

    explanation = explain(nb, reason, exit_status, task.get("limits"))
    if explanation is not None:
        page.add(f"<section class='what' aria-labelledby='what-happened'><h2 id='what-happened'>What happened</h2>"
                 f"<p>{html.escape(explanation.sentence)}</p></section>")

    page.add("<h2>Summary</h2><table><caption class='label'>Points per graded cell</caption>"
             "<tr><th scope='col'>cell</th><th scope='col'>points</th><th scope='col'>result</th></tr>")
    for row in rows:
        status = STATUS_WORDS.get(row["status"], row["status"])
        if row["status"] == Status.GRADED and row["score"] is not None and row["max_score"]:
            status = ("full marks" if row["score"] >= row["max_score"] else
                      "no points" if row["score"] <= 0 else "some points lost")
        page.add(f"<tr><td>{html.escape(str(row['grade_id']))}</td><td>{_fmt(row['score'])} / "
                 f"{row['max_score']:g}</td><td>{html.escape(status)}</td></tr>")
    page.add("</table>")
    if notes:
        page.add("<h2>Notes on your submission</h2><ul>")
        page.add("".join(f"<li>{html.escape(note)}</li>" for note in notes))
        page.add("</ul>")

    page.add("<h2>Your notebook, cell by cell</h2>")
    page.add(f"<p class='rule'>{html.escape(withheld.RULE)}</p>")
    # Applied again here, whatever notebook this page is given (see autograder.feedback.withheld).
    quiet = set(withheld.after_hidden_tests(nb))
    level = 2  # the deepest heading so far; a verdict heading goes one below it
    written = WrittenBudget()  # for written answers the grader did not freeze (an older autograded notebook)
    for index, cell in enumerate(nb.cells):
        if is_rubric_cell(cell):
            continue  # the rubric is for the person grading (formgrader), never on the student's page
        kind = _kind(cell)
        if kind in ("markdown", "manual"):
            # A written answer of the grader's autograded notebook was rendered and sanitized when it was
            # graded (charged to that notebook's budget): here it only goes through the allow-list again.
            body = frozen_html(cell.source) if kind == "manual" else None
            if body is None:
                # Notebook headings start at h1 ("# Exercise"): two levels down, under this page's h2.
                if kind == "manual":
                    body = written_answer_html(cell.source, written, demote=2)
                else:
                    # An instructor's cell, the same on every page: rendered once (with no shared formula
                    # budget the markup is a function of the text alone).
                    body = PAGES.get("markdown-demote-2", cell.source, _instructor_markdown)
            found = [int(n) for n in re.findall(r"<h([1-6])[ >]", body)]
            if found:
                level = found[-1]
            label = "<p class='label'>Your written answer</p>" if kind == "manual" else ""
            page.add(f"<div class='cell {kind}'>{label}{body}</div>")
            continue
        if kind == "test":
            record = verdicts_of(cell)
            if record is not None:
                page.add(verdict_html(GroupVerdict.from_json(record), min(6, level + 1)))
            else:  # graded elsewhere (plain nbgrader): its printed feedback, as text
                page.add("<div class='cell test'><p class='label'>Tests</p>")
                for output in cell.get("outputs", []):
                    page.output(output, label="points: ")
                page.add("</div>")
            continue
        label = "Your answer" if kind == "answer" else "Code"
        if index in quiet:
            label += " (ran after a hidden test: its outputs are not shown)"
        page.add(f"<div class='cell {kind}'><p class='label'>{label}</p>{page.code(str(cell.source))}")
        if index in quiet:
            page.add("</div>")
            continue
        printed = _ANSI.sub("", "".join(_joined(o.get("text", "")) for o in cell.get("outputs", [])
                                        if o.get("output_type") == "stream"))
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and _already_printed(output, printed):
                continue  # the traceback was already printed in full by the cell
            page.output(output, label="Out: ")
        page.add("</div>")
    page.add("</main></body></html>")
    # Notebook cells bring their own heading levels: never let the page skip one on the way down.
    return fit_heading_levels("\n".join(page.parts))


__all__ = ["Explanation", "STATUS_WORDS", "explain", "render", "verdict_html"]
