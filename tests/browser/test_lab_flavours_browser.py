"""Both flavours of ``make lab`` as a learner meets them, one JupyterLab server per flavour.

Each server is configured the way ``make lab`` configures a learner's lab
(``tools/student_lab_config.py`` through :func:`tests.browser.conftest.learner_config`):

* graded flavour: no nbgrader instructor menu or Create Assignment sidebar (Validate stays); an
  answer that uses SciPy, which works at the desk, is stopped by the open check with a sentence
  naming ``scipy`` as unavailable when graded, and Validate reports the same before submitting;
* self-study flavour: no instructor tools either, and Validate on an answer that passes the open
  check but fails hidden cases does not claim success (its check cells write a losing part's
  feedback where Validate looks), and counts no try.

The instructor's own server (the session's ``jupyter_lab``) still shows the nbgrader menu: the
menu check can fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tests.browser.conftest import NotebookPage, start_jupyter_lab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "release" / "module6"
STEM = "15_stable_log_softmax"
TIMEOUT = 30_000
VALIDATE_TIMEOUT = 180_000

SCIPY_ANSWER = '''import numpy as np
from scipy.special import log_softmax

def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError("logits must be a finite, non-empty array with an axis")
    return log_softmax(z, axis=axis)
'''

# Passes the open check (the max shift is right) but never rejects bad input: only the hidden
# validation cases fail, so a Validate that ignored the self-study checks would say "Success".
HALF_ANSWER = '''import numpy as np

def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
'''

#: What a learner's screen must not offer: nbgrader's instructor menu and its sidebars.
INSTRUCTOR_TOOLS_JS = """() => {
  const menus = [...document.querySelectorAll('.lm-MenuBar-itemLabel')].map(e => e.textContent.trim());
  const tabs = [...document.querySelectorAll('.jp-SideBar .lm-TabBar-tab')]
      .map(e => (e.getAttribute('title') || '') + ' ' + e.textContent.trim());
  return {menus, tabs};
}"""


def _with_answer(source: Path, target: Path, answer: str) -> Path:
    nb = nbformat.read(source, as_version=4)
    next(c for c in nb.cells if c.get("id") == "answer-stable-log-softmax").source = answer
    nbformat.write(nb, str(target))
    return target


def _open(browser, server, path: Path, screenshot_dir: Path):
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.goto(server.lab_url(path.relative_to(server.root_dir).as_posix()))
    notebook = NotebookPage(page, path)
    try:
        notebook.cell(0).wait_for(timeout=60_000)
        notebook.wait_idle()
    except Exception:
        page.screenshot(path=str(screenshot_dir / f"FAILED-open-{path.stem}.png"), full_page=True)
        raise
    return context, notebook


def _instructor_tools(page) -> list:
    page.locator(".lm-MenuBar-itemLabel", has_text="Help").first.wait_for(timeout=TIMEOUT)
    found = page.evaluate(INSTRUCTOR_TOOLS_JS)
    return ([m for m in found["menus"] if "nbgrader" in m.lower()]
            + [t for t in found["tabs"] if "assignment" in t.lower() or "nbgrader" in t.lower()])


def _validate(notebook: NotebookPage, screenshot: Path):
    from playwright.sync_api import expect

    page = notebook.page
    page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Validation Results", timeout=VALIDATE_TIMEOUT)
    dialog.locator(".jp-Dialog-content").screenshot(path=str(screenshot))
    _assert_lines_wrap(dialog)
    return dialog


def _assert_lines_wrap(dialog) -> None:
    """The dialog's blocks (the failing cell, its output) wrap long lines (tools/student_lab_config.py's
    stylesheet): none is cut at the dialog's right edge, and the long ones take several lines."""
    blocks = dialog.locator("pre").evaluate_all("""els => els.map(e => ({
        wide: e.scrollWidth > e.clientWidth + 1, space: getComputedStyle(e).whiteSpace,
        lines: e.innerText.split('\\n').length,
        rows: Math.round(e.scrollHeight / parseFloat(getComputedStyle(e).lineHeight))}))""")
    assert blocks, "the Validate dialog shows no block"
    for block in blocks:
        assert block["space"] == "pre-wrap" and not block["wide"], blocks
    assert any(block["rows"] > block["lines"] for block in blocks), ("no long line was wrapped", blocks)


@pytest.fixture(scope="module")
def graded_lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("graded-flavour")
    with start_jupyter_lab(root, learner=True) as server:
        yield server


@pytest.fixture(scope="module")
def selfstudy_lab(tmp_path_factory):
    from autograder.authoring import selfstudy_build

    root = tmp_path_factory.mktemp("selfstudy-flavour")
    selfstudy_build.build(root / "module6", release=RELEASE)
    with start_jupyter_lab(root, learner=True) as server:
        yield server


def test_instructor_server_shows_the_nbgrader_menu(jupyter_lab, browser, screenshot_dir):
    """The positive control: the check below finds nbgrader's menu where it is installed and on."""
    folder = jupyter_lab.root_dir / "instructor-control"
    folder.mkdir(exist_ok=True)
    path = shutil.copyfile(RELEASE / f"{STEM}.ipynb", folder / f"{STEM}.ipynb")
    context, notebook = _open(browser, jupyter_lab, Path(path), screenshot_dir)
    try:
        assert _instructor_tools(notebook.page), "the instructor's own lab should show nbgrader's menu"
    finally:
        context.close()
        jupyter_lab.shutdown_kernels()


def test_graded_flavour_has_no_instructor_tools_and_names_scipy_before_submitting(
        graded_lab, browser, screenshot_dir):
    from playwright.sync_api import expect

    pytest.importorskip("scipy")  # the desk has SciPy; the grader does not
    path = _with_answer(RELEASE / f"{STEM}.ipynb", graded_lab.root_dir / f"{STEM}.ipynb", SCIPY_ANSWER)
    context, notebook = _open(browser, graded_lab, path, screenshot_dir)
    page = notebook.page
    try:
        assert _instructor_tools(page) == []
        expect(page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True)).to_be_visible()
        notebook.run_all()
        cells = nbformat.read(path, as_version=4).cells
        check = next(i for i, c in enumerate(cells) if c.get("id") == "check-stable-log-softmax")
        output = notebook.cell(check).locator(".jp-OutputArea")
        expect(output).to_contain_text("`scipy` is not available when your work is graded", timeout=TIMEOUT)
        expect(output).to_contain_text("from scipy.special import")
        expect(output).not_to_contain_text("The open check passed")
        notebook.cell(check).screenshot(path=str(screenshot_dir / "graded-open-check-names-scipy.png"))
        dialog = _validate(notebook, screenshot_dir / "graded-validate-names-scipy.png")
        expect(dialog).to_contain_text("`scipy` is not available when your work is graded")
        expect(dialog).not_to_contain_text("Success")
    finally:
        context.close()
        graded_lab.shutdown_kernels()


def test_selfstudy_flavour_has_no_instructor_tools_and_validate_does_not_claim_success(
        selfstudy_lab, browser, screenshot_dir):
    from playwright.sync_api import expect

    folder = selfstudy_lab.root_dir / "module6"
    path = _with_answer(folder / f"{STEM}.ipynb", folder / f"wrong-{STEM}.ipynb", HALF_ANSWER)
    context, notebook = _open(browser, selfstudy_lab, path, screenshot_dir)
    page = notebook.page
    try:
        assert _instructor_tools(page) == []
        dialog = _validate(notebook, screenshot_dir / "selfstudy-validate-wrong-answer.png")
        expect(dialog).to_contain_text("The following cell failed")
        expect(dialog).to_contain_text('check("15_stable_log_softmax", "validation", globals())')
        expect(dialog).not_to_contain_text("Success")
        assert not (folder / "selfstudy-progress.json").exists(), "Validate's run counted as a try"
    finally:
        context.close()
        selfstudy_lab.shutdown_kernels()
