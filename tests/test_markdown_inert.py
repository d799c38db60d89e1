"""Written answers are inert on every page that shows them (issue 20): the payload corpus, rendered.

Each payload of ``tests/hostile/markdown_payloads.py`` goes through the kit's renderer, through
nbconvert's renderer of the autograded notebook's cell (mistune, raw HTML allowed: what formgrader's
grading view and ``nbgrader generate_feedback`` use), through formgrader's real exporter and template and
nbgrader's feedback exporter, and through the kit's own feedback page. The HTML that comes out is parsed
with ``html.parser`` and must hold no element, attribute or URL scheme outside the allow-list.
The browser half is ``tests/browser/test_inert_browser.py``.
"""

from __future__ import annotations

import html

import nbformat
import pytest
from hostile.markdown_payloads import PAYLOADS
from inert_support import ancestors, has_class, regions, violations
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from autograder.feedback import page as feedback
from autograder.feedback.markdown import (TOO_LONG, WRAPPER_CLASSES, Budget, frozen_html, inert_cell_source,
                                          markdown_html, notebook_cell_source, sanitize)

IDS = [p.name for p in PAYLOADS]


def _manual_cell(source: str, number: int):
    cell = nbformat.v4.new_markdown_cell(source, id=f"written-{number}")
    # score and comment are what nbgrader's GetGrades adds before the feedback template reads them.
    cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 1,
                                 "grade_id": f"explain_{number}", "schema_version": 3, "score": 0, "comment": None}
    return cell


def test_the_corpus_is_large_and_sourced():
    assert len(PAYLOADS) >= 30
    assert all(p.source.strip() and p.text.strip() for p in PAYLOADS)


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_renderer_output_is_on_the_allow_list(payload):
    body = markdown_html(payload.text)
    assert violations(body) == [], body
    # What the student typed is still there to read, as text (the words survive, the markup does not run).
    words = [w for w in payload.text.replace("\x00", " ").split() if w.isalpha() and len(w) > 3]
    shown = html.unescape(body)
    assert all(w in shown for w in words[:3]), (words[:3], body)


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_no_payload_moves_the_rest_of_the_answer(payload):
    # What follows a payload is a paragraph of its own, or code when CommonMark says the payload opened
    # a fence that never closes; never inside a formula, a link or a table (a formula whose TeX carried
    # markup that closed it early did that: such a formula is shown as TeX).
    assert ancestors(markdown_html(payload.text + "\n\nM6NEXT"), "M6NEXT") in (["p"], ["pre", "code"])


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_nbconvert_shows_the_autograded_cell_verbatim(payload):
    source = notebook_cell_source(payload.text)
    assert "\n" not in source and "$" not in source and "\\" not in source
    rendered = markdown2html_mistune(source)
    assert rendered.strip() == source  # one HTML block: mistune never reads it as Markdown again
    assert violations(rendered) == [], rendered
    # The second layer changes nothing in what the grader wrote (it is sanitized HTML already).
    assert inert_cell_source(source) == source


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_second_layer_renders_an_unfrozen_answer(payload):
    # An autograded notebook written before this renderer holds the student's Markdown as it was.
    source = inert_cell_source(payload.text)
    assert source.startswith(f'<div class="{WRAPPER_CLASSES}">')
    assert violations(markdown2html_mistune(source)) == []


def test_renderer_keeps_math_code_and_prose_readable():
    text = ("We have $\\log p(y_{<t})$ and\n\n$$\\mathrm{KL}(q\\|p)=\\sum_x q(x)\\log\\frac{q(x)}{p(x)}$$\n\n"
            "It costs $5 or $10.\n\nCode: `p[$i]`\n\n```python\nx = '$y$'\n\nprint(x)\n```\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n# Heading\n\n- **bold** and [a link](https://example.org)")
    body = markdown_html(text, demote=2)
    assert body.count("<math") == 2 and 'display="block"' in body
    assert "It costs $5 or $10." in body and "<code>p[$i]</code>" in body
    assert "<pre><code>x = '$y$'\n\nprint(x)\n</code></pre>" in html.unescape(body)
    assert "<table>" in body and "<h3>Heading</h3>" in body and "<strong>bold</strong>" in body
    assert '<a href="https://example.org" rel="noopener noreferrer">a link</a>' in body
    frozen = notebook_cell_source(text)
    assert frozen_html(frozen) == body.strip()


def test_sanitizer_drops_what_the_renderer_never_makes():
    assert sanitize('<p style="x" id="y" class="z">a</p><script>b</script><style>c</style>') == "<p>a</p>"
    assert sanitize('<a href="/relative">r</a><a href="//evil.invalid/">p</a>') == \
        '<a rel="noopener noreferrer">r</a><a rel="noopener noreferrer">p</a>'
    assert sanitize('<code class="tex">x</code><code class="other">y</code>') == \
        '<code class="tex">x</code><code class="">y</code>'  # an empty class: nothing the page can style


def test_written_answer_budget_is_shared_and_falls_back_to_plain_text():
    budget = Budget(cost=10 + 4 * 10, formulas=[1])  # "$x$ $y$": 7 characters, 4 of them syntax
    first = notebook_cell_source("$x$ $y$", budget)
    assert frozen_html(first).count("<math") == 1 and '<code class="tex">y</code>' in frozen_html(first)
    second = notebook_cell_source("*far too long*", budget)
    assert TOO_LONG in second and "<em>" not in second and "*far too long*" in second


def test_formulas_carrying_markup_are_shown_as_tex():
    body = markdown_html("$\\text{</math><b>x</b>}$ and $\\text{ok}$")
    assert body.count("<math") == 1 and '<code class="tex">\\text{&lt;/math&gt;&lt;b&gt;x&lt;/b&gt;}</code>' in body


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="text must be a str"):
        markdown_html(None)
    with pytest.raises(ValueError, match="demote must be"):
        markdown_html("x", demote=9)
    with pytest.raises(TypeError, match="budget must be a Budget"):
        notebook_cell_source("x", [1])


@pytest.fixture(scope="module")
def corpus_notebook():
    """One notebook of every payload twice: as the grader freezes it, and as raw Markdown (older notebooks)."""
    cells = [nbformat.v4.new_markdown_cell("# The course's own heading with $x^2$", id="course-prose")]
    for number, payload in enumerate(PAYLOADS):
        cells.append(_manual_cell(notebook_cell_source(payload.text), 2 * number))
        cells.append(_manual_cell(payload.text, 2 * number + 1))
    return nbformat.v4.new_notebook(cells=cells)


def _course_config():
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.assignment import REPO_ROOT

    return PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()


def test_formgrader_grading_view_is_inert(corpus_notebook):
    """formgrader's exporter, built as formgrader builds it (nbgrader 0.9.6, formgrader.py,
    ``FormgradeExtension.build_extra_config``) from the course config, with its ``formgrade`` template."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    config = _course_config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    exporter = HTMLExporter(config=config)
    resources = {"assignment_id": "module6", "notebook_id": "01", "submission_id": "x", "index": 0, "total": 1,
                 "base_url": "", "student": "ada", "last_name": None, "first_name": None, "notebook_path": "x"}
    page, _ = exporter.from_notebook_node(corpus_notebook, resources=resources)
    answers = lambda tag, attrs: tag == "div" and "text_cell_render" in (attrs.get("class") or "")  # noqa: E731
    assert regions(page, answers) == len(corpus_notebook.cells)
    found = violations(page, has_class("module6-written"))
    assert found == [], found[:20]
    # Every answer arrived inside its wrapper (none was left as Markdown for mistune to read).
    assert regions(page, has_class("module6-written")) == 2 * len(PAYLOADS)
    # nbconvert re-serializes the page after the Markdown filter (bs4): the references a frozen cell uses
    # for newlines, dollars, backslashes and square brackets come back as the characters; the rest is
    # byte for byte.
    for payload in PAYLOADS:
        frozen = notebook_cell_source(payload.text)
        assert _characters(frozen) in page, payload.name


def _characters(frozen: str) -> str:
    return (frozen.replace("&#10;", "\n").replace("&#36;", "$").replace("&#92;", "\\")
            .replace("&#91;", "[").replace("&#93;", "]"))


def test_nbgrader_feedback_page_is_inert(corpus_notebook):
    """nbgrader generate_feedback's exporter and steps as the course config sets them."""
    import copy

    from autograder.feedback.nbgrader_pages import FeedbackExporter, ReadableFeedback

    import os

    import nbgrader

    config = _course_config()
    # GenerateFeedback adds the folder of the bootstrap CSS its template inlines (nbgrader 0.9.6,
    # converters/generate_feedback.py, GenerateFeedback._load_config).
    config.HTMLExporter.extra_template_paths = [os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions",
                                                             "formgrader", "static", "node_modules", "bootstrap",
                                                             "dist", "css")]
    exporter = FeedbackExporter(config=config)
    exporter.register_preprocessor(ReadableFeedback(), enabled=True)
    resources = {"nbgrader": {"notebook": "01", "score": 0, "max_score": 1, "late_penalty": 0}}
    page, _ = exporter.from_notebook_node(copy.deepcopy(corpus_notebook), resources=resources)
    assert "<math" in page  # the course's own formula became MathML
    assert regions(page, has_class("module6-written")) == 2 * len(PAYLOADS)
    found = violations(page, has_class("module6-written"))
    assert found == [], found[:20]


def test_kit_feedback_page_is_inert(corpus_notebook):
    task = {"stem": "01", "student": "ada", "assignment": "module6"}
    # The page's own label above each answer is not the student's: take its class off before looking.
    page = feedback.render(corpus_notebook, task, [], []).replace("<p class='label'>Your written answer", "<p>")
    manual = lambda tag, attrs: tag == "div" and (attrs.get("class") or "").split() == ["cell", "manual"]  # noqa: E731
    assert regions(page, manual) == 2 * len(PAYLOADS)
    found = violations(page, manual)
    assert found == [], found[:20]


def test_a_frozen_answer_costs_nbconverts_filters_one_pass():
    """nbconvert's ``strip_files_prefix`` (every Markdown cell of formgrader's view and of nbgrader's
    feedback page) scans from each ``[`` to the end of its line: a frozen answer is one line, and
    190,000 characters of ``[*`` took 272 s. A frozen answer holds no square bracket."""
    import time

    from nbconvert.filters.strings import strip_files_prefix

    frozen = notebook_cell_source("[*" * 95_000 + " [a](files/x) ]")
    assert "[" not in frozen and "]" not in frozen
    started = time.perf_counter()
    assert strip_files_prefix(frozen) == frozen
    assert time.perf_counter() - started < 1.0
    assert "[*[*" in frozen_html(frozen) and inert_cell_source(frozen) == frozen
