"""Readable feedback from ``nbgrader generate_feedback``: formulas, verdicts and crashes, offline.

nbgrader renders feedback with nbconvert, whose page loads MathJax from a CDN and shows each test
cell's printed text. ``nbgrader_config.py`` runs :class:`ReadableFeedback` after the redaction of
hidden tests and renders with the ``module6_feedback`` template (``autograder/feedback/templates``):

* every ``$...$`` / ``$$...$$`` formula of a Markdown cell becomes MathML (no MathJax, no network);
* a test cell graded by ``autograder grade`` carries its group's verdicts as data (see
  :mod:`autograder.feedback.page`): they are shown as the same verdict block as the grader's own
  page (a word, a symbol and a colour per case; the teaching sentence of each failure);
* when the notebook stopped early (crash, time-out, a resource limit), one sentence at the top says
  what happened and what to try.

Code stays highlighted by nbconvert (Pygments) and the student's figures stay as they are.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import default

from autograder.feedback import page as grader_feedback
from autograder.feedback.math_markup import fit_markdown_headings, substitute_math

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
    """Make ``nbgrader generate_feedback`` (command and formgrader's button) write the kit's readable page, in config ``c``."""
    import nbgrader

    from autograder.feedback.redaction import RedactHiddenTests
    from autograder.feedback.release import CurrentReleaseFeedback
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c.GenerateFeedback.preprocessors = [RedactHiddenTests, GetGrades, ReadableFeedback, CSSHTMLHeaderPreprocessor]
    c.GenerateFeedback.exporter_class = FeedbackExporter
    # Feedback is derived data: every run writes each page again from autograded/ and the gradebook
    # (nbgrader would skip a student whose feedback folder exists, keeping a page older than a manual
    # grade, a comment or a regrade), and release_feedback generates it again before releasing.
    c.GenerateFeedback.force = True
    c.ExchangeFactory.release_feedback = CurrentReleaseFeedback
    # Both settings name this class, never HTMLExporter (see FeedbackExporter); nbgrader's feedback
    # template folder comes second, for the index.html.j2 the kit's template extends.
    c.FeedbackExporter.template_name = TEMPLATE_NAME
    c.FeedbackExporter.template_file = f"{TEMPLATE_NAME}.html.j2"
    c.FeedbackExporter.extra_template_basedirs = [
        str(TEMPLATE_DIR),
        str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
    ]


def math_to_mathml(source: str) -> str:
    """Markdown ``source`` with its TeX formulas replaced by MathML (code spans untouched).

    >>> "<math" in math_to_mathml("the prefix $y_{<t}$")
    True
    >>> math_to_mathml("`$HOME` costs $5")
    '`$HOME` costs $5'
    """
    return substitute_math(source)


class ReadableFeedback(NbGraderPreprocessor):
    """MathML formulas, verdict blocks for test cells, and a sentence when the notebook stopped early."""

    def preprocess(self, nb, resources):
        resources["module6_feedback_css"] = CSS
        reason = None
        for cell in nb.cells:
            record = grader_feedback.verdicts_of(cell)
            if record is not None and record.get("reason") and reason is None:
                reason = record["reason"]
        nb, resources = super().preprocess(nb, resources)
        explanation = grader_feedback.explain(nb, reason)
        if explanation is not None:
            banner = nbformat.v4.new_markdown_cell(
                f"<section class='what' aria-labelledby='what-happened'><h2 id='what-happened'>What happened</h2>"
                f"<p>{_escape(explanation.sentence)}</p></section>", id="autograder-what-happened")
            nb.cells.insert(0, banner)
        # The template's title is an h1 (and the banner an h2): notebook headings follow without a skip.
        level = 2 if explanation is not None else 1
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.get("id") != "autograder-what-happened":
                cell.source, level = fit_markdown_headings(cell.source, level)
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "markdown":
            cell.source = math_to_mathml(cell.source)
            return cell, resources
        record = grader_feedback.verdicts_of(cell)
        if record is not None:
            block = grader_feedback.verdict_html(record, 3)
            # The verdict block replaces the printed summary; the points output stays for nbgrader.
            kept = [o for o in cell.outputs if o.get("output_type") != "stream"]
            cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": block})] + kept
        return cell, resources


def _escape(text: str) -> str:
    import html
    return html.escape(text)


__all__ = ["CSS", "FeedbackExporter", "ReadableFeedback", "configure", "TEMPLATE_DIR", "TEMPLATE_NAME", "math_to_mathml"]
