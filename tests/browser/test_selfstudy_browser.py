"""The self-study reveal panel in a real browser: JupyterLab + headless chromium.

The self-study flavour is built into a scratch folder from ``release/module6`` (or, while that
folder is still empty, from a release generated into a scratch folder). Two learners:

* one who solved exercise 15 and ran every cell: the local checks ran (their output is feedback
  only: no echoed return value, no internal tags), so one click on "Reveal the worked solution"
  opens it; its code scrolls instead of wrapping mid-word, and the buttons have names and
  4.5:1 contrast as rendered;
* one who opens exercise 09 and runs the reveal cell first: the first click asks to confirm; a
  check on template answers does not change that; a real try updates the panel by itself, and
  then one click opens the solution.

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
    path = notebook.path.parent / "selfstudy-progress.json"
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
        text = cell.locator(".jp-OutputArea").first.inner_text()
        assert "FAIL" not in text and "What the failures suggest" not in text
        assert cell.locator(".jp-OutputArea-executeResult").count() == 0, f"a value is echoed: {text}"
    progress = _progress(notebook)
    assert progress[SOLVED]["tries"] == 1, progress  # one attempt, however many check cells ran it
    assert {name: part["best"] for name, part in progress[SOLVED]["parts"].items()} == \
        {group.name: group.points for group in groups}

    reveal_cell = notebook.cell(_index(notebook.path, "selfstudy-reveal"))
    button = reveal_cell.locator(".selfstudy-reveal")
    expect(button).to_be_visible(timeout=TIMEOUT)
    expect(button).to_be_enabled()
    _assert_named_and_contrasted(reveal_cell)
    output = reveal_cell.locator(".selfstudy-solution")
    expect(output).to_have_text("", timeout=TIMEOUT)
    expect(reveal_cell.locator(".selfstudy-status")).to_contain_text("one click")
    _shoot(reveal_cell, screenshot_dir, f"{SOLVED}-1-panel-after-checks")

    button.click()
    material = load_solution(SOLVED)
    expect(output).to_contain_text("Worked solution", timeout=TIMEOUT)
    expect(output).to_contain_text("Remember.", timeout=TIMEOUT)
    expect(output).to_contain_text(_plain_start(material["remember"]))
    expect(output).to_contain_text("def stable_log_softmax(")  # the reference code reached the page
    expect(button).to_be_disabled()
    expect(button).to_contain_text("Worked solution shown")
    expect(reveal_cell.locator(".selfstudy-status")).to_contain_text("shown below")
    # Code keeps every line in view (issue 35: it scrolled sideways, and a long block's scrollbar sat
    # below the screen, so lines looked cut at the right edge): on a narrow screen (800 px) a line longer
    # than the panel wraps, its continuation hangs six columns past the line's own indentation, nothing
    # runs past the panel, and the text is the code (copying it gives the code).
    reveal_cell.page.set_viewport_size({"width": 800, "height": 2000})
    reveal_cell.page.wait_for_timeout(500)
    blocks = output.locator("pre.selfstudy-code")
    assert blocks.count() > 0
    code = _worked_code(SOLVED)
    assert "\n".join(blocks.nth(i).inner_text().rstrip("\n") for i in range(blocks.count())).split("\n") == \
        [line for line in code.rstrip("\n").split("\n")]
    wrapped = 0
    for i in range(blocks.count()):
        fit = blocks.nth(i).evaluate("""e => { const panel = e.closest('.jp-OutputArea-output');
            return {right: e.getBoundingClientRect().right, panel: panel.getBoundingClientRect().right,
                    wide: e.scrollWidth > e.clientWidth + 1}; }""")
        assert fit["right"] <= fit["panel"] + 1 and not fit["wide"], fit
        # Each source line: its first line box at the block's left, any wrapped one at indent + 6 columns.
        rows = blocks.nth(i).evaluate("""e => [...e.querySelectorAll('.selfstudy-line')].map(line => {
            const range = document.createRange(); range.selectNodeContents(line);
            const boxes = [...range.getClientRects()].filter(r => r.width > 0);
            const tops = [...new Set(boxes.map(r => Math.round(r.top)))].sort((a, b) => a - b);
            const firstOf = top => Math.min(...boxes.filter(r => Math.round(r.top) === top).map(r => r.left));
            const ch = parseFloat(getComputedStyle(line).paddingLeft) / parseFloat(line.style.paddingLeft);
            return {text: line.textContent, tops: tops.length, block: e.getBoundingClientRect().left
                    + parseFloat(getComputedStyle(e).paddingLeft), ch,
                    starts: tops.map(firstOf)}; })""")
        for row in rows:
            if row["tops"] > 1:
                wrapped += 1
                indent = len(row["text"]) - len(row["text"].lstrip(" "))
                assert abs(row["starts"][1] - (row["block"] + (indent + 6) * row["ch"])) <= 2, row
    assert wrapped, "no line of the worked code wraps at 800 px: the wrapping was not exercised"
    _no_errors(reveal_cell)
    reveal_cell.scroll_into_view_if_needed()
    _shoot(reveal_cell, screenshot_dir, f"{SOLVED}-2-solution-after-one-click")


def _contrast(page, locator) -> float:
    """WCAG contrast ratio of an element's text colour against its background colour, as rendered."""
    return locator.evaluate("""e => {
        const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
        const lum = c => { const [r, g, b] = c.map(v => { v /= 255;
            return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
            return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
        const style = getComputedStyle(e);
        const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    }""")


def _assert_named_and_contrasted(reveal_cell) -> None:
    page = reveal_cell.page
    for name in ("Show a hint", "Reveal the worked solution"):
        button = reveal_cell.get_by_role("button", name=name)
        assert button.count() == 1, name
        ratio = _contrast(page, button)
        assert ratio >= 4.5, f"{name!r}: contrast {ratio:.2f}:1"


def test_before_a_try_the_panel_asks_to_confirm_and_a_try_updates_it_by_itself(
        open_notebook, selfstudy_dir, screenshot_dir, tmp_path):
    from playwright.sync_api import expect

    # A learner who wrote (wrong) numbers for Part A but has not run anything yet.
    nb = nbformat.read(selfstudy_dir / f"{UNTRIED}.ipynb", as_version=4)
    next(c for c in nb.cells if c.get("id") == "answer-three").source = \
        "sequence_logprob = -1.0\nmean_nll = 0.5\nperplexity = 2.0"
    path = tmp_path / f"{UNTRIED}.ipynb"
    nbformat.write(nb, str(path))
    notebook = open_notebook(path, run_all=False)
    index = _index(notebook.path, "selfstudy-reveal")
    notebook.run_cell(index)  # only the panel: no check of this notebook has run
    assert _progress(notebook) == {}

    reveal_cell = notebook.cell(index)
    _no_errors(reveal_cell)
    button = reveal_cell.locator(".selfstudy-reveal")
    status = reveal_cell.locator(".selfstudy-status")
    hints = reveal_cell.locator(".selfstudy-hints")
    solution = reveal_cell.locator(".selfstudy-solution")
    expect(button).to_be_visible(timeout=TIMEOUT)
    material = load_solution(UNTRIED)

    # Hints come at once, one per click, before any try, under their own heading.
    reveal_cell.locator(".selfstudy-hint").click()
    expect(hints).to_contain_text("Hints", timeout=TIMEOUT)
    expect(hints).to_contain_text("Hint 1.", timeout=TIMEOUT)
    expect(hints).to_contain_text(_plain_start(material["hints"][0]))
    expect(hints).not_to_contain_text("Hint 2.")

    button.click()
    expect(status).to_contain_text("You have not tried", timeout=TIMEOUT)
    expect(status).to_contain_text("click again")
    expect(button).to_contain_text("Reveal anyway")
    expect(button).to_be_enabled()
    expect(solution).not_to_contain_text("Remember.")
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-1-first-click-asks-to-confirm")

    # A check of Part B, whose answers are still the template's, is not a try.
    part_b = _index(notebook.path, "test-fourth-token")
    notebook.run_cell(part_b)
    expect(notebook.cell(part_b).locator(".jp-OutputArea")).to_contain_text("Not counted as a try", timeout=TIMEOUT)
    assert _progress(notebook) == {}
    expect(status).to_contain_text("You have not tried")

    # Part A answered and checked: a try. The panel says so without being clicked.
    notebook.run_cell(_index(notebook.path, "answer-three"))
    part_a = _index(notebook.path, "test-three-tokens")
    notebook.run_cell(part_a)
    expect(notebook.cell(part_a).locator(".jp-OutputArea")).to_contain_text("FAIL", timeout=TIMEOUT)
    expect(status).to_contain_text("tried this notebook 1 time", timeout=TIMEOUT)
    expect(status).not_to_contain_text("You have not")
    expect(button).to_contain_text("Reveal the worked solution")
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-2-panel-updated-by-a-try")
    progress = _progress(notebook)[UNTRIED]
    assert progress["tries"] == 1 and list(progress["parts"]) == ["three_tokens"], progress
    part = progress["parts"]["three_tokens"]
    assert 0 <= part["best"] < part["points"], part

    button.click()  # one click now
    expect(solution).to_contain_text("Remember.", timeout=TIMEOUT)
    expect(solution).to_contain_text(_plain_start(material["remember"]))
    expect(button).to_be_disabled()
    expect(button).to_contain_text("Worked solution shown")
    _no_errors(reveal_cell)
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-3-solution-after-one-click")


def test_new_numbers_redraw_the_numbers_and_the_checks_and_the_solution_follow(
        open_notebook, selfstudy_dir, screenshot_dir, tmp_path):
    """A learner whose answers compute from ``numbers[...]``: the example numbers pass, "New numbers"
    shows practice numbers at once in the numbers cell, and after running the notebook again the checks
    pass on them and the worked solution quotes them."""
    from playwright.sync_api import expect

    from autograder.exercises import worked_values
    from course.variants import parameters

    nb = nbformat.read(selfstudy_dir / f"{UNTRIED}.ipynb", as_version=4)
    answers = {"answer-three": "sequence_logprob = sum(math.log(p) for p in numbers['p'])\n"
                               "mean_nll = -sequence_logprob / 3\nperplexity = math.exp(mean_nll)",
               "answer-four": "sequence_logprob_4 = sequence_logprob + math.log(numbers['p4'])\n"
                              "perplexity_4 = math.exp(-sequence_logprob_4 / 4)"}
    for cell in nb.cells:
        cell.source = answers.get(cell.get("id"), cell.source)
    path = tmp_path / f"{UNTRIED}.ipynb"
    nbformat.write(nb, str(path))
    notebook = open_notebook(path)  # Run All on the example numbers

    numbers_cell = notebook.cell(_index(notebook.path, "your-numbers"))
    shown = numbers_cell.locator(".selfstudy-numbers")
    expect(shown).to_contain_text("Example numbers", timeout=TIMEOUT)
    expect(shown).to_contain_text("0.5, 0.25, 0.8")
    _no_errors(numbers_cell)
    checks = [notebook.cell(_index(notebook.path, f"test-{name}")) for name in ("three-tokens", "fourth-token")]
    for cell, group in zip(checks, CHECKS[UNTRIED].groups):
        expect(cell.locator(".jp-OutputArea").first).to_contain_text(
            f"{group.title}: {group.points:g} / {group.points:g} points", timeout=TIMEOUT)

    reveal_cell = notebook.cell(_index(notebook.path, "selfstudy-reveal"))
    button = reveal_cell.get_by_role("button", name="New numbers")
    expect(button).to_be_enabled(timeout=TIMEOUT)  # the Run All was a try
    assert _contrast(reveal_cell.page, button) >= 4.5
    button.click()
    new = parameters(UNTRIED, "practice-1")
    stated = ", ".join(f"{p:g}" for p in new["p"])
    drawn = reveal_cell.locator(".selfstudy-drawn-numbers")
    expect(drawn).to_contain_text("New numbers (practice-1)", timeout=TIMEOUT)
    expect(drawn).to_contain_text(stated)
    expect(drawn).to_contain_text("Run Selected Cell and All Below")
    expect(shown).to_contain_text("practice-1", timeout=TIMEOUT)  # the numbers cell's table follows at once
    expect(shown).to_contain_text(stated)
    expect(reveal_cell.locator(".selfstudy-status")).to_contain_text("New numbers: run the notebook again")
    assert _progress(notebook)[UNTRIED]["numbers"] == "practice-1"
    _no_errors(reveal_cell)
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-4-new-numbers-drawn")
    _shoot(numbers_cell, screenshot_dir, f"{UNTRIED}-5-numbers-cell-follows")

    notebook.run_all()  # as the panel says (from the top is from the numbers cell too)
    expect(shown).to_contain_text(stated, timeout=TIMEOUT)
    for cell, group in zip(checks, CHECKS[UNTRIED].groups):
        expect(cell.locator(".jp-OutputArea").first).to_contain_text(
            f"{group.title}: {group.points:g} / {group.points:g} points", timeout=TIMEOUT)
    entry = _progress(notebook)[UNTRIED]
    # One run through the notebook is one try (issue 35: each answer cell changing its part's answers
    # before that part's check made it two), on the example numbers and again on the new ones.
    assert entry["numbers"] == "practice-1" and entry["numbers_tries"] == 1 and entry["tries"] == 2, entry
    reveal = reveal_cell.locator(".selfstudy-reveal")
    expect(reveal_cell.locator(".selfstudy-status")).to_contain_text("tried these numbers", timeout=TIMEOUT)
    reveal.click()
    solution = reveal_cell.locator(".selfstudy-solution")
    values = worked_values(UNTRIED, new)
    expect(solution).to_contain_text(f"math.log({values['product']})", timeout=TIMEOUT)
    expect(solution).to_contain_text(f"lowered PPL from about {values['perplexity_3dp']} to about "
                                     f"{values['perplexity_4_3dp']}")
    expect(solution).not_to_contain_text("math.log(0.1)")
    _no_errors(reveal_cell)
    _shoot(reveal_cell, screenshot_dir, f"{UNTRIED}-6-solution-for-the-new-numbers")
