"""The graded flavour as a newcomer meets it, in JupyterLab + headless chromium.

* A release notebook opens unmodified (no "save changes?" for a notebook nobody touched).
* Run All stops at the first unanswered cell, and the notebook says so before that point; the
  explorer cell then runs on its own, as the note says. (The widget notebooks give each student their
  own numbers: with no id known, Run All first stops at the numbers cell, saying how to type one.)
* A released hidden-test cell prints nothing when run (no docstring echoed like a result).
* nbgrader's Validate button, on wrong code that passes nothing, reports failure (the student
  configuration ``tools/student_nbgrader_config.py`` is what ``make lab``'s environment uses).

Screenshots go to the folder printed at the end of the run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from course.variants import STUDENT_ID_GRADE_ID

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "release" / "module6"
TIMEOUT = 30_000
WIDGET_STEM = "12_top_p_nucleus"
CODE_STEM = "15_stable_log_softmax"

WRONG = '''import numpy as np

def stable_log_softmax(logits, axis=-1):
    return np.asarray(logits, dtype=float)  # wrong on purpose: the logits themselves
'''


def _cells(path: Path) -> list:
    return json.loads(path.read_text())["cells"]


def _index(path: Path, predicate) -> int:
    return next(i for i, cell in enumerate(_cells(path)) if predicate(cell))


def _dirty_tabs(page) -> int:
    return page.locator(".lm-TabBar-tab.jp-mod-dirty").count()


def test_a_release_notebook_opens_unmodified_and_run_all_explains_itself(open_notebook, screenshot_dir, tmp_path):
    from playwright.sync_api import expect

    notebook = open_notebook(RELEASE / f"{WIDGET_STEM}.ipynb", run_all=False)
    page = notebook.page
    page.wait_for_timeout(1500)  # the kernel's language_info has arrived by now
    assert _dirty_tabs(page) == 0, "an untouched notebook opened as modified"

    how = _index(notebook.path, lambda c: c.get("id") == "how-this-works")
    typed_id = _index(notebook.path, lambda c: c["metadata"].get("nbgrader", {}).get("grade_id") == STUDENT_ID_GRADE_ID)
    shown = _index(notebook.path, lambda c: c.get("id") == "your-numbers")
    first_answer = _index(notebook.path, lambda c: c["metadata"].get("nbgrader", {}).get("solution")
                          and c["cell_type"] == "code"
                          and c["metadata"]["nbgrader"].get("grade_id") != STUDENT_ID_GRADE_ID)
    assert typed_id < shown < how < first_answer
    expect(notebook.cell(how)).to_contain_text("Run All stops at the first unanswered cell")
    expect(notebook.cell(how)).to_contain_text("Shift+Enter")
    notebook.cell(how).screenshot(path=str(screenshot_dir / f"{WIDGET_STEM}-how-this-works.png"))

    stderr = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    notebook.run_all()  # a laptop with no id typed: the numbers cell stops Run All and says what to do
    expect(notebook.cell(shown).locator(stderr)).to_contain_text("No student id is known", timeout=TIMEOUT)
    notebook.cell(shown).screenshot(path=str(screenshot_dir / f"{WIDGET_STEM}-no-student-id.png"))
    editor = notebook.cell(typed_id).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    # The id, then a gate that holds the kernel until the browser has sent every cell of Run All:
    # ipykernel 7.4.0 (kernelbase.py, Kernel._abort_queues) aborts only the requests already queued
    # when a cell raises, and JupyterLab 4.6.6 sends them all at once (runCells, Promise.all), so on a
    # loaded machine a request still in transit ran after the stub. Queued first, every one is aborted.
    gate = tmp_path / "all-cells-queued"
    page.keyboard.insert_text(f'STUDENT_ID = "ada"\n'
                              f'while not __import__("pathlib").Path({str(gate)!r}).exists(): '
                              f'__import__("time").sleep(0.02)')
    notebook.run_all(gate=gate)
    expect(notebook.cell(shown)).to_contain_text("Numbers of student 'ada'", timeout=TIMEOUT)
    error = notebook.cell(first_answer).locator(stderr)
    expect(error).to_contain_text("NotImplementedError", timeout=TIMEOUT)
    widget = _index(notebook.path, lambda c: "widget" in c["metadata"].get("tags", []))
    widget_cell = notebook.cell(widget)
    assert widget_cell.locator(".jp-OutputArea-output").count() == 0, "Run All went past the stub"

    notebook.run_cell(widget)  # as the note says: the explorer runs on its own
    expect(widget_cell.locator(".widget-slider").first).to_be_visible(timeout=TIMEOUT)
    widget_cell.scroll_into_view_if_needed()
    widget_cell.screenshot(path=str(screenshot_dir / f"{WIDGET_STEM}-explorer-run-on-its-own.png"))

    test_cell = _index(notebook.path, lambda c: c["metadata"].get("nbgrader", {}).get("grade")
                       and c["cell_type"] == "code")
    notebook.run_cell(test_cell)
    cell = notebook.cell(test_cell)
    expect(cell.locator(".jp-InputPrompt")).to_contain_text("[", timeout=TIMEOUT)
    assert cell.locator(".jp-OutputArea-output").count() == 0, cell.locator(".jp-OutputArea").inner_text()
    cell.screenshot(path=str(screenshot_dir / f"{WIDGET_STEM}-released-test-cell-run.png"))


def test_validate_reports_failure_for_wrong_code(open_notebook, jupyter_lab, screenshot_dir, tmp_path):
    from playwright.sync_api import expect

    # The validate handler reads nbgrader_config.py from the server's working directory (its root).
    shutil.copyfile(REPO / "tools" / "student_nbgrader_config.py", jupyter_lab.root_dir / "nbgrader_config.py")
    nb = nbformat.read(RELEASE / f"{CODE_STEM}.ipynb", as_version=4)
    next(c for c in nb.cells if c.get("id") == "answer-stable-log-softmax").source = WRONG
    path = tmp_path / f"{CODE_STEM}.ipynb"
    nbformat.write(nb, str(path))
    notebook = open_notebook(path, run_all=False)
    page = notebook.page
    page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Validation Results", timeout=120_000)
    expect(dialog).to_contain_text("The following cell failed", timeout=120_000)
    expect(dialog).to_contain_text("rows that differ by a constant")
    expect(dialog).not_to_contain_text("Success")
    dialog.locator(".jp-Dialog-content").screenshot(path=str(screenshot_dir / f"{CODE_STEM}-validate-wrong-code.png"))
    page.keyboard.press("Escape")
