"""The self-study reveal panel in a real browser: JupyterLab + headless chromium.

The self-study flavour is built into a scratch folder from ``release/module6`` (or, while that
folder is still empty, from a release generated into a scratch folder). Two learners:

* one who solved exercise 15 and ran every cell: the local checks ran, so one click on
  "Reveal the worked solution" opens it;
* one who opens exercise 09 and runs only the reveal cell: the first click asks to confirm,
  the second opens the solution.

Screenshots of the panel before and after each click go to the folder printed at the end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder.checks import CHECKS
from autograder.authoring import selfstudy_build as build
from autograder.selfstudy import load_solution

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "release" / "module6"
TIMEOUT = 30_000

SOLVED = "15_stable_log_softmax"
UNTRIED = "09_sequence_ppl"


@pytest.fixture(scope="module")
def selfstudy_dir(tmp_path_factory) -> Path:
    """The self-study notebooks, built the way a learner gets them."""
    release = RELEASE
    if not any(RELEASE.glob("[0-9][0-9]_*.ipynb")):
        from autograder.authoring.release import build_release

        release = build_release(tmp_path_factory.mktemp("release") / "module6")
    out = tmp_path_factory.mktemp("selfstudy") / "module6"
    build.build(out, release=release)
    return out


def _plain_start(markdown: str, words: int = 6) -> str:
    """The opening words of ``markdown`` before any math, code or emphasis: text a browser shows as is."""
    plain = re.split(r"[$`*_\[\\]", markdown.strip(), maxsplit=1)[0]
    chosen = " ".join(plain.split()[:words]).rstrip(",;:")
    assert len(chosen.split()) >= 3, f"no plain opening words in {markdown[:60]!r}"
    return chosen


def _worked_code(stem: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", load_solution(stem)["solution"], flags=re.S)
    assert blocks, f"{stem}: the worked solution has no code"
    return "\n".join(blocks)


def _solved_copy(source: Path, target: Path, stem: str) -> Path:
    """``source`` with its answer cells replaced by the worked code, as a learner who solved it."""
    nb = nbformat.read(source, as_version=4)
    answers = [cell for cell in nb.cells if cell.cell_type == "code" and cell.get("id", "").startswith("answer-")]
    assert answers, f"{source.name}: no answer cell"
    answers[0].source = _worked_code(stem)
    for cell in answers[1:]:
        cell.source = "# solved in the first answer cell"
    nbformat.write(nb, str(target))
    return target


def _index(path: Path, cell_id: str) -> int:
    cells = json.loads(path.read_text())["cells"]
    return next(i for i, cell in enumerate(cells) if cell.get("id") == cell_id)


def _progress(notebook) -> dict:
    path = notebook.path.parent / ".selfstudy-progress.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _shoot(locator, directory: Path, name: str) -> None:
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(directory / f"{name}.png"))


def _no_errors(cell) -> None:
    errors = cell.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"], '
                          '[data-mime-type="application/vnd.jupyter.stderr"]')
    assert errors.count() == 0, errors.first.inner_text()


def test_after_the_checks_ran_one_click_reveals_the_worked_solution(
        open_notebook, selfstudy_dir, screenshot_dir, tmp_path):
    from playwright.sync_api import expect

    solved = _solved_copy(selfstudy_dir / f"{SOLVED}.ipynb", tmp_path / f"{SOLVED}.ipynb", SOLVED)
    notebook = open_notebook(solved)  # Run All: the answer, the open check, every local check, the panel

    cells = json.loads(notebook.path.read_text())["cells"]
    check_cells = [i for i, cell in enumerate(cells) if "from autograder.selfstudy import check" in "".join(cell["source"])]
    assert check_cells, "the self-study notebook has no local check cell"
    groups = CHECKS[SOLVED].groups
    assert len(check_cells) == len(groups)
    for index, group in zip(check_cells, groups):
        cell = notebook.cell(index)
        # The local check prints its group's feedback: full points, every case passed.
        expect(cell.locator(".jp-OutputArea").first).to_contain_text(
            f"{group.title}: {group.points:g} / {group.points:g} points", timeout=TIMEOUT)
        _no_errors(cell)
        assert "FAIL" not in cell.locator(".jp-OutputArea").first.inner_text()
    progress = _progress(notebook)
    assert progress[SOLVED]["attempts"] == len(check_cells), progress
    assert progress[SOLVED]["best"] > 0

    reveal_cell = notebook.cell(_index(notebook.path, "selfstudy-reveal"))
    button = reveal_cell.locator(".selfstudy-reveal")
    expect(button).to_be_visible(timeout=TIMEOUT)
    expect(button).to_be_enabled()
    output = reveal_cell.locator(".selfstudy-output")
    expect(output).to_have_text("", timeout=TIMEOUT)
    _shoot(reveal_cell, screenshot_dir, f"{SOLVED}-1-panel-after-checks")

    button.click()
    material = load_solution(SOLVED)
    expect(output).to_contain_text("Remember.", timeout=TIMEOUT)
    expect(output).to_contain_text(_plain_start(material["remember"]))
    expect(output).to_contain_text("def stable_log_softmax(")  # the reference code reached the page
    expect(button).to_be_disabled()
    expect(button).to_contain_text("Worked solution shown")
    expect(reveal_cell.locator(".selfstudy-status")).to_have_text("")
    _no_errors(reveal_cell)
    _shoot(reveal_cell, screenshot_dir, f"{SOLVED}-2-solution-after-one-click")


def test_before_any_check_the_first_click_asks_to_confirm_and_the_second_reveals(
        open_notebook, selfstudy_dir, screenshot_dir):
    from playwright.sync_api import expect

    notebook = open_notebook(selfstudy_dir / f"{UNTRIED}.ipynb", run_all=False)
    index = _index(notebook.path, "selfstudy-reveal")
    notebook.run_cell(index)  # only the panel: no check of this notebook has run
    assert _progress(notebook) == {}

    reveal_cell = notebook.cell(index)
    _no_errors(reveal_cell)
    button = reveal_cell.locator(".selfstudy-reveal")
    status = reveal_cell.locator(".selfstudy-status")
    output = reveal_cell.locator(".selfstudy-output")
    expect(button).to_be_visible(timeout=TIMEOUT)
    material = load_solution(UNTRIED)

    # Hints come at once, one per click, before any attempt.
    reveal_cell.locator(".selfstudy-hint").click()
    expect(output).to_contain_text("Hint 1.", timeout=TIMEOUT)
    expect(output).to_contain_text(_plain_start(material["hints"][0]))
    expect(output).not_to_contain_text("Hint 2.")

    button.click()
    expect(status).to_contain_text("You have not run this notebook's checks yet", timeout=TIMEOUT)
    expect(status).to_contain_text("click again")
    expect(button).to_contain_text("Reveal anyway")
    expect(button).to_be_enabled()
    expect(output).not_to_contain_text("Remember.")
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-1-first-click-asks-to-confirm")

    button.click()
    expect(output).to_contain_text("Remember.", timeout=TIMEOUT)
    expect(output).to_contain_text(_plain_start(material["remember"]))
    expect(status).to_have_text("")
    expect(button).to_be_disabled()
    expect(button).to_contain_text("Worked solution shown")
    _no_errors(reveal_cell)
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-2-second-click-reveals")
    assert _progress(notebook) == {}, "revealing must not count as an attempt"
