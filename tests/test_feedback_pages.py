"""The grader's feedback page and nbgrader's feedback, from notebooks whose content is known."""

from __future__ import annotations

import base64
import html
import re

import nbformat
import pytest

from autograder.checks._core import CaseResult, GroupResult
from autograder.feedback import page as feedback
from autograder.feedback.markdown import markdown_html
from autograder.limits import PAGE_FORMULAS, PAGE_IMAGES, PAGE_MARKDOWN_COST, PAGE_TEXT_CHARS
from autograder.feedback.math_markup import mathml
from autograder.results import METADATA_KEY, GroupVerdict, misconceptions_of

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()


def _group(passed_flags, *, misconception="top-p-keeps-extra", ran=None):
    cases = tuple(CaseResult(f"case {i}", "top_p", ok, "" if ok else "One token too many was kept.",
                             None if ok else misconception, 1.0) for i, ok in enumerate(passed_flags))
    group = GroupResult("top_p", "top_p_distribution: the nucleus", 1.0, 3.0, cases)
    names = {c.name for c in cases} if ran is None else set(ran)
    return GroupVerdict.from_result(group, ran=names, reason="exited").to_json()


def _notebook(record, *, answer_outputs=()):
    md = nbformat.v4.new_markdown_cell("# Exercise 19: Top-p\n\n## Part A (3 points)\n\n"
                                       "The nucleus keeps $\\sum_{i \\le k} p_{(i)} \\ge p$ and\n\n"
                                       "$$\\log\\operatorname{softmax}(z)_i = z_i - \\log\\sum_j e^{z_j}$$")
    answer = nbformat.v4.new_code_cell("def top_p(logits, p):\n    return logits  # mine")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "top_p", "locked": False}
    answer.outputs = list(answer_outputs)
    test = nbformat.v4.new_code_cell('"""Hidden tests of top_p."""')
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_top_p", "points": 3}
    test.outputs = [nbformat.v4.new_output("stream", name="stdout", text="printed summary\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "1.0"},
                                           metadata={METADATA_KEY: record})]
    return nbformat.v4.new_notebook(cells=[md, answer, test])


TASK = {"assignment": "module6", "stem": "19_sampling_transforms", "student": "ann"}
ROWS = [{"grade_id": "test_top_p", "score": 1.0, "max_score": 3.0, "status": "graded"}]


def _headings(page):
    return [int(n) for n in re.findall(r"<h([1-6])[ >]", page)]


def test_page_renders_math_code_verdicts_and_keeps_headings_in_order():
    page = feedback.render(_notebook(_group([True, False, False])), TASK, ROWS, [])
    assert page.count("<math") == 2 and "display=\"block\"" in page
    assert "$$" not in page and "\\operatorname{softmax}(z)" not in page.split("aria-label")[0]
    assert "class=\"hl\"" in page or "class='hl'" in page  # Pygments
    assert "Failed (2 cases)" in page and "What this suggests: One token too many was kept." in page
    assert "✔ Passed</span> case 0</li>" in page and "1 of 3 cases passed" in page
    levels = _headings(page)
    assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:])), levels
    assert "printed summary" not in page  # the verdicts come from data, not from the printed text
    assert "What happened" not in page


def test_a_group_that_passed_is_one_line():
    page = feedback.render(_notebook(_group([True, True, True])), TASK, ROWS, [])
    assert "3 of 3 cases passed" in page and "case 1" not in page


def test_misconception_keys_come_from_the_data():
    record = _group([False, True, False])
    assert record["misconceptions"] == ["top-p-keeps-extra"]
    cell = _notebook(record).cells[2]
    assert misconceptions_of(cell) == ["top-p-keeps-extra"]
    assert misconceptions_of(nbformat.v4.new_code_cell("x")) == []
    passed = _group([True, True])
    assert passed["misconceptions"] == []


def test_a_crash_is_explained_in_one_sentence_and_unrun_cases_are_summarised():
    record = _group([False, False, False, False], ran=["case 0"])
    page = feedback.render(_notebook(record), TASK, ROWS, [], reason="exited", exit_status=1)
    section = re.search(r"<section class='what'.*?</section>", page, re.S).group(0)
    sentence = re.search(r"<p>(.*?)</p>", section, re.S).group(1)
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    assert "stopped in the middle (exit status 1)" in sentence and "restart the kernel" in sentence
    assert "3 of 4 cases did not run" in page
    assert page.count("Not run") == 1  # one line for the cases that did not run, not one each


@pytest.mark.parametrize("reason,status,kind", [
    ("timeout", 0, "timeout"), ("output", 0, "output"), ("protocol", 0, "protocol"), ("sandbox", None, "sandbox"),
    ("exited", -9, "memory"), ("exited", -24, "cpu"), ("exited", 1, "crash"), ("unreadable", None, "unreadable"),
    ("rejected", None, "rejected")])
def test_every_way_of_stopping_has_its_sentence(reason, status, kind):
    explanation = feedback.explain(None, reason, status, {"wall_seconds": 60, "memory_mb": 1024})
    assert explanation.kind == kind
    assert explanation.sentence.endswith(".") and ": " in explanation.sentence  # what happened: what to try


@pytest.mark.parametrize("refused", ["unreadable", "rejected"])
def test_a_submission_never_run_is_not_called_a_crash(refused):
    # The worker renders a refused submission with no run reason: its test records say why.
    record = {**_group([False, False, False], ran=[]), "reason": refused}
    page = feedback.render(_notebook(record), TASK, ROWS, [])
    assert feedback.explain(_notebook(record), None).kind == refused
    assert "stopped in the middle" not in page and "because your notebook was not run" in page


def test_memory_error_and_cell_timeout_are_recognised_from_outputs():
    nb = _notebook(_group([True]))
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="error", evalue="MemoryError: ", traceback=[])]
    assert feedback.explain(nb, "exited", 0).kind == "memory"
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="timeout", evalue="the cell did not finish",
                                                  traceback=[])]
    assert feedback.explain(nb, "exited", 0).kind == "cell-timeout"


def test_figures_get_alt_text_and_student_html_is_never_rendered():
    outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 1x1>"}),
               nbformat.v4.new_output("display_data", data={"text/html": "<script>alert(1)</script>",
                                                            "text/plain": "<b>shown as text</b>"})]
    page = feedback.render(_notebook(_group([True]), answer_outputs=outputs), TASK, ROWS, [])
    assert re.search(r"<img src='data:image/png;base64,[^']+' alt='Figure 1 made by your code \(&lt;Figure", page)
    assert "<script>" not in page and "&lt;b&gt;shown as text&lt;/b&gt;" in page


def test_a_forged_image_cannot_inject_markup():
    forged = nbformat.v4.new_output("display_data", data={"image/png": "AAAA' onerror='alert(1)"})
    page = feedback.render(_notebook(_group([True]), answer_outputs=[forged]), TASK, ROWS, [])
    assert "onerror" not in page and "could not be read" in page


def test_output_limits_hold():
    big = nbformat.v4.new_output("stream", name="stdout", text="x" * (PAGE_TEXT_CHARS.value + 500))
    images = [nbformat.v4.new_output("display_data", data={"image/png": PNG})] * (PAGE_IMAGES.value + 3)
    page = feedback.render(_notebook(_group([True]), answer_outputs=[big, *images]), TASK, ROWS, [])
    assert "[... 500 more characters not shown]" in page
    assert page.count("<img ") == PAGE_IMAGES.value and "is not shown" in page


def test_mathml_falls_back_to_source_and_markdown_keeps_code_dollars():
    assert mathml("\\frac{1}{").startswith("<code class=\"tex\">")
    body = markdown_html("Run `echo $HOME $PATH` and pay $5 for $x_1$.")
    assert "$HOME $PATH" in html.unescape(body) and body.count("<math") == 1


def test_nbgrader_feedback_preprocessor_makes_mathml_and_verdict_blocks():
    from autograder.feedback.nbgrader_pages import ReadableFeedback

    nb = _notebook(_group([False, False], ran=["case 0"]))
    nb, resources = ReadableFeedback().preprocess(nb, {})
    assert nb.cells[0].source.startswith("<section class='what'")  # the notebook stopped early
    assert "<math" in nb.cells[1].source and "$$" not in nb.cells[1].source
    test_outputs = nb.cells[-1].outputs
    assert test_outputs[0]["output_type"] == "display_data"
    assert "Failed" in test_outputs[0]["data"]["text/html"]
    assert [o["output_type"] for o in test_outputs] == ["display_data", "execute_result"]
    assert "module6_feedback_css" in resources


def test_nbgrader_config_renders_feedback_with_the_offline_template():
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.assignment import REPO_ROOT
    from autograder.feedback.nbgrader_pages import TEMPLATE_DIR, TEMPLATE_NAME, FeedbackExporter, ReadableFeedback
    from autograder.feedback.redaction import RedactHiddenTests

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    # The kit's feedback converter (nbgrader's GenerateFeedback name runs it for the kit's assignments).
    chain = list(config.Module6Feedback.preprocessors)
    assert chain.index(RedactHiddenTests) < chain.index(ReadableFeedback)  # redact first, then render
    # The template is the feedback exporter's own: formgrader's grading view renders with HTMLExporter.
    assert config.Module6Feedback.exporter_class is FeedbackExporter
    assert "template_name" not in config.HTMLExporter and "template_file" not in config.HTMLExporter
    assert config.FeedbackExporter.template_name == TEMPLATE_NAME
    assert str(TEMPLATE_DIR) in config.FeedbackExporter.extra_template_basedirs
    folder = TEMPLATE_DIR / TEMPLATE_NAME
    assert (folder / config.FeedbackExporter.template_file).is_file()
    # nbconvert's MathJax macro is shadowed by one that loads nothing.
    assert "<script" not in (folder / "mathjax.html.j2").read_text()


# --------------------------------------------------------------------------- what a written answer may cost

def _with_answers(*texts):
    cells = []
    for number, text in enumerate(texts):
        cell = nbformat.v4.new_markdown_cell(text)
        cell.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": f"why_{number}", "points": 1}
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def test_formula_spans_are_found_as_the_regular_expressions_would_find_them():
    """The linear scanner gives what the (quadratic) regular expressions it replaced gave."""
    import random

    from autograder.feedback import math_markup

    display = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.S)
    inline = re.compile(r"(?<![\\$])\$(?![\s$])([^$\n]+?)(?<!\s)\$(?!\$)|\\\((.+?)\\\)")
    code = re.compile(r"```.*?```|`[^`\n]*`", re.S)
    pieces = ["$", "$$", "\\(", "\\)", "\\[", "\\]", "`", "```", "a", " ", "\n", "x^2", "\\$"]
    rng = random.Random(6)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for pattern, forms in ((display, math_markup._DISPLAY), (inline, math_markup._INLINE),
                               (code, math_markup._CODE)):
            expected = [(m.start(), m.end()) for m in pattern.finditer(text)]
            assert [span[:2] for span in math_markup._spans(text, forms)] == expected, (text, pattern.pattern)


def test_a_written_answer_of_unclosed_delimiters_costs_one_pass():
    # 400 kB of "\(" with no "\)": the regular expression scanned to the end from each of them
    # (16 kB took 7 s, so this would have taken hours, with no time limit around the page).
    page = feedback.render(_with_answers("\\(" * 100_000, "\\[" * 100_000), TASK, [], [])
    assert "Your written answer" in page and "<math" not in page


def test_formulas_and_formatted_text_per_page_are_bounded():
    many = "$x$ " * (PAGE_FORMULAS.value + 500)
    page = feedback.render(_with_answers(many), TASK, [], [])
    assert page.count("<math") == PAGE_FORMULAS.value
    assert page.count('<code class="tex">x</code>') == 500  # the rest stay TeX source, never dropped
    from autograder.feedback.markdown import markdown_cost
    huge = "*emphasis* " * (PAGE_MARKDOWN_COST.value // markdown_cost("*emphasis* ") + 1)
    page = feedback.render(_with_answers("**short**", huge), TASK, [], [])
    assert "<strong>short</strong>" in page and "as plain text: too long to format" in page
    assert page.count("<em>") == 0
