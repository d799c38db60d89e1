"""Readable feedback from ``nbgrader generate_feedback``: formulas, verdicts and crashes, offline.

nbgrader renders feedback with nbconvert, whose page loads MathJax from a CDN and shows each test
cell's printed text. ``nbgrader_config.py`` runs :class:`ReadableFeedback` after the redaction of
hidden tests and renders with the ``module6_feedback`` template (``autograder/feedback/templates``):

* every ``$...$`` / ``$$...$$`` formula of a Markdown cell becomes MathML (no MathJax, no network);
* a test cell graded by ``autograder grade`` carries its group's verdicts as data (see
  :mod:`autograder.feedback.page`): they are shown as the same verdict block as the grader's own
  page (a word, a symbol and a colour per case; the teaching sentence of each failure);
* when the notebook stopped early (crash, time-out, a resource limit), one sentence at the top says
  what happened and what to try;
* the outputs of cells that ran after the first hidden test are dropped and the page says so in one
  sentence (:mod:`autograder.feedback.withheld`: the same rule as the grader's own page);
* what nbconvert spends on the page is bounded whatever the notebook holds (:func:`bound_page`): code
  is highlighted by Pygments within the same budgets as the grader's own page (``HIGHLIGHT_*`` of
  :mod:`autograder.limits`: characters and tokens per cell and per page; Pygments
  costs per token), the rest is shown as escaped plain text (the template's
  ``input`` block), and the student's code and outputs fill at most ``NBCONVERT_PAGE_STUDENT_BYTES`` of the
  page; beyond, the page says what was left out. The autograded notebook itself is not changed
  (this runs on nbconvert's copy) and the student's file stays in ``submitted/``.

Written answers are shown as the grader froze them in the autograded notebook (sanitized HTML that
nbconvert passes through verbatim: :mod:`autograder.feedback.markdown`). :class:`InertWrittenAnswers` is
a second layer on nbconvert's side, for formgrader's grading view and for this page alike: every
written-answer cell is sanitized again, or rendered by the kit's renderer when it holds anything else
(an autograded notebook made before that renderer). nbconvert's own ``HTMLExporter.sanitize_html``
(nbconvert 7.17, ``filters/strings.py``, ``clean_html``) is not used: formgrader's ``formgrade``
template does not apply it to Markdown cells, and its bleach allow-list (no ``p``, headings or MathML)
escapes the rest into visible tags.
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import default

from autograder.feedback import page as grader_feedback
from autograder.feedback import withheld
from autograder.feedback.markdown import inert_cell_source
from autograder.feedback.math_markup import fit_markdown_headings, substitute_math
from autograder.results import GroupVerdict, verdicts_of
from autograder.limits import HIGHLIGHT_PAGE_CHARS, HIGHLIGHT_PAGE_TOKENS, NBCONVERT_PAGE_STUDENT_BYTES

#: The folder holding the ``module6_feedback`` nbconvert template.
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "module6_feedback"

CSS = """
.verdict{border:1px solid #d0d7de;border-radius:6px;padding:.2rem .9rem .5rem;margin:.6rem 0;font-size:14px}
.verdict h2,.verdict h3,.verdict h4,.verdict h5,.verdict h6{font-size:16px;font-weight:bold;margin:.4rem 0}
.verdict .tag{font-weight:bold}.verdict.passed .tag,.tag.passed{color:#1a7f37}
.verdict.failed .tag,.tag.failed{color:#b3261e}.verdict.notrun .tag,.tag.notrun{color:#6b5b00}
.verdict .cases{list-style:none;padding-left:0}.verdict .teach{display:block;margin-left:1.6rem}
.what{background:#fff8e1;border:2px solid #9a6700;border-radius:6px;padding:.4rem 1rem;margin:.5rem 0}
math[display=block]{margin:.6rem 0}
"""

#: Upper bound of the markup Pygments makes per character of code (measured: 24 for ``a+1;``).
_MARKUP_PER_CHAR = 30
PLAIN_KEY = "module6_plain"
_CUT_NOTE = "\n[... {count} more characters not shown: this page shows at most {mb} MB of your code and its outputs]"


def _cost(text: str) -> int:
    return len(html.escape(text, quote=False).encode("utf-8", "replace"))


def _cut(text: str, room: int) -> tuple:
    """``text`` cut so that its escaped form fits ``room`` bytes (with a note), and what it costs."""
    note = _CUT_NOTE.format(count="{count}", mb=f"{NBCONVERT_PAGE_STUDENT_BYTES.value / 1e6:g}")
    if room <= 0:
        return note.format(count=len(text)).lstrip("\n"), 0
    # Each character costs at least one byte: no more than ``room`` of them can fit. Escaped once,
    # cut at ``room`` bytes (never inside an entity), and read back as the text the template escapes.
    escaped = html.escape(text[:room], quote=False)
    raw = escaped.encode("utf-8", "replace")
    if len(raw) <= room and len(text) <= room:
        return text, len(raw)
    cut = raw[:room].decode("utf-8", "ignore")
    amp = cut.rfind("&")
    if amp > cut.rfind(";"):
        cut = cut[:amp]
    shown = html.unescape(cut)
    return shown + note.format(count=len(text) - len(shown)), room


def _output_cost(output) -> int:
    kind = output.get("output_type")
    if kind == "stream":
        return _cost(str(output.get("text", "")))
    if kind == "error":
        return sum(_cost(str(line)) for line in output.get("traceback", [])) + _cost(str(output.get("evalue", "")))
    data = output.get("data") or {}
    return sum(len(value) if isinstance(value, str) else sum(len(str(v)) for v in value) for value in data.values())


def bound_page(nb, *, plain_markup_per_char: int = 1) -> None:
    """Bound (in place) what nbconvert will spend on ``nb``'s code cells: see the module docstring.

    ``plain_markup_per_char`` is what one character of a cell marked plain costs on the page: 1 where the
    template shows it as escaped text (``module6_feedback``), :data:`_MARKUP_PER_CHAR` where it may be
    highlighted all the same (formgrader's ``formgrade`` template highlights every code cell).
    """
    if not isinstance(plain_markup_per_char, int) or plain_markup_per_char < 1:
        raise ValueError(f"plain_markup_per_char: expected a whole number >= 1, got {plain_markup_per_char!r}")
    highlight_room, token_room = HIGHLIGHT_PAGE_CHARS.value, HIGHLIGHT_PAGE_TOKENS.value
    room = NBCONVERT_PAGE_STUDENT_BYTES.value
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or withheld.is_hidden_test(cell):
            continue  # test cells hold a docstring and the grader's verdicts
        source = str(cell.get("source", ""))
        highlighted = False
        if len(source) * _MARKUP_PER_CHAR <= room:
            # Characters are charged whether the tokens fit or not: counting them is bounded per page too.
            chars, tokens, highlighted = grader_feedback.highlightable(source, highlight_room, token_room)
            highlight_room -= chars
            token_room -= tokens
        if highlighted:
            room -= len(source) * _MARKUP_PER_CHAR
        else:
            cell.source, cost = _cut(source, room // plain_markup_per_char)
            room -= cost * plain_markup_per_char
            cell.metadata[PLAIN_KEY] = True
        kept = []
        for output in cell.get("outputs", []):
            cost = _output_cost(output)
            if cost <= room:
                room -= cost
                kept.append(output)
        if len(kept) < len(cell.get("outputs", [])):
            kept.append(nbformat.v4.new_output("stream", name="stdout", text=(
                f"[Outputs not shown: this page shows at most {NBCONVERT_PAGE_STUDENT_BYTES.value / 1e6:g} MB of your code "
                "and its outputs.]\n")))
        cell.outputs = kept


class FeedbackExporter(HTMLExporter):
    """The exporter of ``nbgrader generate_feedback`` only: nbconvert's HTML with the ``module6_feedback`` template.

    The template is this class's own default, not ``HTMLExporter``'s configuration: formgrader renders its
    manual grading view with a plain ``HTMLExporter`` and its ``formgrade`` template, and a course config
    that set ``HTMLExporter.template_file`` took that view over (an HTTP 500, ``TemplateNotFound:
    bootstrap.min.css``). Configuration sections for this class (``c.FeedbackExporter``) outrank those
    for ``HTMLExporter``, so nbgrader's own ``HTMLExporter.template_name = 'feedback'`` (set by
    ``GenerateFeedback`` and by formgrader's Generate Feedback button) does not replace it either.
    """

    @default("template_name")
    def _template_name_default(self):
        return TEMPLATE_NAME

    @default("template_file")
    def _template_file_default(self):
        return f"{TEMPLATE_NAME}.html.j2"  # extends nbgrader's feedback/index.html.j2


def configure(c) -> None:
    """Make ``nbgrader generate_feedback`` (command and formgrader's button) write the kit's readable page, in config ``c``.

    For the assignments of ``c.Module6Scope.assignments`` (every one unless set; see :mod:`autograder.scope`):
    their feedback is made by :class:`~autograder.feedback.converters.Module6Feedback`, configured under its own name, and released only
    after it is made again (:class:`~autograder.feedback.release.CurrentReleaseFeedback`); other assignments
    keep nbgrader's ``GenerateFeedback`` and release. Course-wide, because they protect the instructor's
    session whatever the assignment: formgrader's grading view (``c.HTMLExporter.preprocessors``: written
    answers inert, pages bounded) and formgrader's own pages (:mod:`autograder.feedback.formgrader_guard`).
    """
    import nbgrader
    import nbgrader.apps.api
    import nbgrader.apps.generatefeedbackapp
    import nbgrader.converters

    from autograder.feedback.converters import ScopedGenerateFeedback
    from autograder.feedback.redaction import RedactHiddenTests
    from autograder.feedback.release import CurrentReleaseFeedback
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c.Module6Feedback.preprocessors = [RedactHiddenTests, GetGrades, ReadableFeedback, CSSHTMLHeaderPreprocessor]
    # formgrader's grading view renders with HTMLExporter(config=...) from this config; FeedbackExporter is
    # an HTMLExporter and reads the same section: both run the second layer first.
    c.HTMLExporter.preprocessors = [InertWrittenAnswers, BoundGradingView]
    # The feedback page keeps only the first: its budget is applied by ReadableFeedback, after the hidden
    # tests are redacted and late outputs withheld (this section outranks HTMLExporter's, as below).
    c.FeedbackExporter.preprocessors = [InertWrittenAnswers]
    c.Module6Feedback.exporter_class = FeedbackExporter
    # Feedback is derived data: every run writes each page again from autograded/ and the gradebook
    # (nbgrader would skip a student whose feedback folder exists, keeping a page older than a manual
    # grade, a comment or a regrade), and release_feedback generates it again before releasing.
    c.Module6Feedback.force = True
    for module in (nbgrader.apps.generatefeedbackapp, nbgrader.apps.api, nbgrader.converters):
        module.GenerateFeedback = ScopedGenerateFeedback
    c.ExchangeFactory.release_feedback = CurrentReleaseFeedback
    # Both settings name this class, never HTMLExporter (see FeedbackExporter); nbgrader's feedback
    # template folder comes second, for the index.html.j2 the kit's template extends.
    c.FeedbackExporter.template_name = TEMPLATE_NAME
    c.FeedbackExporter.template_file = f"{TEMPLATE_NAME}.html.j2"
    c.FeedbackExporter.extra_template_basedirs = [
        str(TEMPLATE_DIR),
        str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
    ]
    # formgrader's own pages (in a Jupyter server that is loading formgrader): student text as text, and a
    # Content-Security-Policy that runs only the templates' scripts.
    from autograder.feedback import formgrader_guard

    formgrader_guard.install(c)


def math_to_mathml(source: str) -> str:
    """Markdown ``source`` with its TeX formulas replaced by MathML (code spans untouched).

    >>> "<math" in math_to_mathml("the prefix $y_{<t}$")
    True
    >>> math_to_mathml("`$HOME` costs $5")
    '`$HOME` costs $5'
    """
    return substitute_math(source)


class InertWrittenAnswers(Preprocessor):
    """Every written-answer cell (Markdown with ``nbgrader.solution``) as sanitized HTML nbconvert shows verbatim."""

    def preprocess_cell(self, cell, resources, cell_index):
        meta = cell.metadata.get("nbgrader")
        if cell.cell_type == "markdown" and isinstance(meta, dict) and meta.get("solution"):
            cell.source = inert_cell_source(cell.source)
            cell.pop("attachments", None)
        return cell, resources


class BoundGradingView(Preprocessor):
    """formgrader's grading view bounded like the feedback pages (:func:`bound_page`), on nbconvert's copy.

    formgrader (nbgrader 0.9.6, ``server_extensions/formgrader/handlers.py``, ``SubmissionHandler.get``)
    renders the autograded notebook with ``HTMLExporter(config=...)`` and the ``formgrade`` template,
    whose ``input`` block runs ``highlight_code`` on every code cell: unbounded, 1,960 cells of 10 KB made
    26 MB of HTML in 55 s. Cells over the budget are cut as if they were highlighted, and asked to be lexed
    as plain text (nbconvert 7.17 ``filters/highlight.py`` ``_pygments_highlight`` honours a cell's
    ``magics_language`` when the notebook's lexer is IPython's). The file on disk is not changed: the
    instructor can open the whole notebook in Jupyter.
    """

    def preprocess(self, nb, resources):
        bound_page(nb, plain_markup_per_char=_MARKUP_PER_CHAR)
        for cell in nb.cells:
            if cell.get("cell_type") == "code" and cell.metadata.get(PLAIN_KEY):
                cell.metadata["magics_language"] = "text"
        return nb, resources


class ReadableFeedback(NbGraderPreprocessor):
    """MathML formulas, verdict blocks for test cells, and a sentence when the notebook stopped early."""

    def preprocess(self, nb, resources):
        resources["module6_feedback_css"] = CSS
        reason = None
        for cell in nb.cells:
            record = verdicts_of(cell)
            if record is not None and record.get("reason") and reason is None:
                reason = record["reason"]
        # Whatever notebook this page is made from: nothing that ran after a hidden test is shown.
        withheld.withhold_after_hidden_tests(nb)
        nb, resources = super().preprocess(nb, resources)
        bound_page(nb)
        first = withheld.first_hidden_test(nb)
        if first is not None:  # the rule in one sentence, just above the first hidden test
            nb.cells.insert(first, nbformat.v4.new_markdown_cell(f"<p class='rule'>{_escape(withheld.RULE)}</p>",
                                                                 id="autograder-outputs-rule"))
        explanation = grader_feedback.explain(nb, reason)
        if explanation is not None:
            banner = nbformat.v4.new_markdown_cell(
                f"<section class='what' aria-labelledby='what-happened'><h2 id='what-happened'>What happened</h2>"
                f"<p>{_escape(explanation.sentence)}</p></section>", id="autograder-what-happened")
            nb.cells.insert(0, banner)
        # The template's title is an h1 (and the banner an h2): notebook headings follow without a skip.
        level = 2 if explanation is not None else 1
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.get("id") not in ("autograder-what-happened",
                                                                         "autograder-outputs-rule"):
                cell.source, level = fit_markdown_headings(cell.source, level)
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "markdown":
            cell.source = math_to_mathml(cell.source)
            return cell, resources
        record = verdicts_of(cell)
        if record is not None:
            block = grader_feedback.verdict_html(GroupVerdict.from_json(record), 3)
            # The verdict block replaces the printed summary; the points output stays for nbgrader.
            kept = [o for o in cell.outputs if o.get("output_type") != "stream"]
            cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": block})] + kept
        return cell, resources


def _escape(text: str) -> str:
    import html
    return html.escape(text)


__all__ = ["BoundGradingView", "CSS", "FeedbackExporter", "InertWrittenAnswers", "PLAIN_KEY",
           "ReadableFeedback", "TEMPLATE_DIR", "TEMPLATE_NAME", "bound_page", "configure",
           "math_to_mathml"]
