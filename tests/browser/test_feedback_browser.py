"""Feedback pages and the class report in a real browser (headless Debian chromium via Playwright).

A small class is graded by ``autograder grade`` in a scratch course (exercise 15 only): one student
forgot the max shift (a known misconception), one crashes the kernel, one loops forever, one is
right. The pages written by the grader, by ``nbgrader generate_feedback`` and by
``autograder report`` are opened from disk with the network blocked: formulas must be drawn
(MathML boxes with a size), no hidden test text may appear, a crash and a time-out must be
explained, images must load and carry alt text. Screenshots go to the folder printed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STEM = "15_stable_log_softmax"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    import planted_class

    plants = {"shift1": [planted_class.NO_MAX_SHIFT], "crash1": [f"crash:{STEM}"],
              "loop1": [planted_class.LOOP_FOREVER], "honest1": []}
    course = planted_class.build(tmp_path_factory.mktemp("feedback") / "course", plants, stems=[STEM])
    # generate_feedback replaces the grader's pages in feedback/: keep them for the tests.
    shutil.copytree(course / "feedback", course / "grader-feedback")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    for command in (["-m", "nbgrader", "generate_feedback", "module6", "--force"],
                    ["-m", "autograder.cli", "report", "module6"]):
        proc = subprocess.run([sys.executable, *command], cwd=course, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return course


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    requests: list = []
    page.on("request", lambda request: requests.append(request.url))
    # Nothing may come from the network: the pages are read offline.
    page.route("http*://**", lambda route: route.abort())
    page.requests = requests
    yield page
    context.close()


def _hidden_lines(course: Path) -> list:
    """Every line of the hidden test regions of the source notebook, and the lines that call the checks."""
    nb = nbformat.read(str(course / "source" / "module6" / f"{STEM}.ipynb"), as_version=4)
    lines = []
    for cell in nb.cells:
        hiding = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                hiding = True
            if hiding and line.strip():
                lines.append(line.strip())
            if "END HIDDEN TESTS" in line:
                hiding = False
    assert any("grade(" in line for line in lines)
    return lines


def _check_page(page, path: Path, course: Path) -> str:
    page.goto(path.as_uri())
    text = page.inner_text("body")
    for line in _hidden_lines(course):
        assert line not in text, line
    assert "$$" not in text and "\\sum" not in text and "\\log" not in text  # no TeX source left
    boxes = page.eval_on_selector_all("math", "els => els.map(e => e.getBoundingClientRect().height)")
    assert boxes and all(height > 5 for height in boxes), boxes  # MathML drawn by the browser
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    levels = page.eval_on_selector_all("h1,h2,h3,h4,h5,h6", "els => els.map(e => +e.tagName[1])")
    assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:])), levels
    alts = page.eval_on_selector_all("img", "els => els.map(e => e.alt)")
    assert all(alt.strip() for alt in alts)
    return text


def test_grader_page_shows_math_verdicts_and_the_misconception(graded, page, screenshot_dir):
    text = _check_page(page, graded / "grader-feedback" / "shift1" / "module6" / f"{STEM}.html", graded)
    from autograder.checks._misconceptions import NO_MAX_SHIFT

    # The teaching sentence as the checks word it (one message per misconception, wherever it shows).
    assert f"What this suggests: {NO_MAX_SHIFT.sentence.split(':')[0]}" in text
    assert "Failed" in text and "Passed" in text  # words, not only colours
    assert "What happened" not in text
    page.screenshot(path=str(screenshot_dir / "feedback-grader-misconception.png"), full_page=True)


def test_grader_page_explains_a_crash_and_a_timeout(graded, page, screenshot_dir):
    text = _check_page(page, graded / "grader-feedback" / "crash1" / "module6" / f"{STEM}.html", graded)
    banner = page.inner_text("section.what")
    assert "stopped in the middle" in banner and "restart the kernel" in banner
    assert "Not run" in text
    assert text.count("the answer could not be run for this case") == 0  # summarised, not one line per case
    page.screenshot(path=str(screenshot_dir / "feedback-grader-crash.png"), full_page=True)
    _check_page(page, graded / "grader-feedback" / "loop1" / "module6" / f"{STEM}.html", graded)
    assert "did not finish within" in page.inner_text("section.what")


def test_nbgrader_feedback_is_offline_with_math_and_verdicts(graded, page, screenshot_dir):
    # The pages `nbgrader generate_feedback` wrote in feedback/: the same checks apply.
    text = _check_page(page, graded / "feedback" / "crash1" / "module6" / f"{STEM}.html", graded)
    assert "What happened" in text and "stopped in the middle" in text
    assert not page.eval_on_selector_all("script[src]", "els => els.map(e => e.src)")  # no MathJax
    page.screenshot(path=str(screenshot_dir / "feedback-nbgrader-crash.png"), full_page=True)
    text = _check_page(page, graded / "feedback" / "shift1" / "module6" / f"{STEM}.html", graded)
    assert "What this suggests" in text


def test_class_report_loads_its_plots(graded, page, screenshot_dir):
    page.goto((graded / "reports" / "module6-report.html").as_uri())
    widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
    assert len(widths) == 3 and all(w > 100 for w in widths)
    text = page.inner_text("body")
    assert "no-max-shift" in text and "Notebooks that crashed, ran out of time or could not be read" in text
    assert all(url.startswith(("file:", "data:")) for url in page.requests)
    page.screenshot(path=str(screenshot_dir / "class-report.png"), full_page=True)
