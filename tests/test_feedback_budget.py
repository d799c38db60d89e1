"""What a notebook may cost the trusted side's pages: highlighting, escaping and page size are bounded.

Functional checks only (sizes, which cells are highlighted, the plain-text fallback, the page cap);
how long it takes is measured by hand in ``benchmarks/bench_redteam.py --highlight``.
"""

from __future__ import annotations

import html
import re

import nbformat
import pytest

from autograder.feedback import page
from autograder.feedback.nbgrader_pages import PLAIN_KEY, ReadableFeedback, bound_page
from autograder.limits import (
    GRADER_PAGE_STUDENT_BYTES, HIGHLIGHT_CELL_CHARS, HIGHLIGHT_CELL_TOKENS, HIGHLIGHT_PAGE_CHARS, HIGHLIGHT_PAGE_TOKENS,
    NBCONVERT_PAGE_STUDENT_BYTES, PAGE_TEXT_CHARS,
)

HEAVY = "a+1;" * 2450  # ~9.8 KB of one-character tokens: slow to highlight, 24x its size as markup
TASK = {"student": "ann", "assignment": "module6", "stem": "15_stable_log_softmax"}


def _notebook(sources, *, outputs=None):
    cells = [nbformat.v4.new_code_cell(source, id=f"c{i}") for i, source in enumerate(sources)]
    for cell in cells:
        cell.outputs = list(outputs or [])
    test = nbformat.v4.new_code_cell('"""Hidden tests."""', id="test")
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_x", "points": 1}
    return nbformat.v4.new_notebook(cells=cells + [test])


def _highlighted(markup: str) -> int:
    return markup.count("<div class=\"hl\">")


@pytest.fixture(scope="module")
def at_the_limits():
    """600 cells of 9.8 KB (5.9 MB of code: more than either page's room), ours and nbconvert's page of it.

    The notebook of issue 20 had 1,960 such cells; past the room every cell costs one line, so 600 show
    the same bounds (``tests/test_hidden_input_echo.py`` renders an over-budget cell through nbgrader).
    """
    ours = page.render(_notebook([HEAVY] * 600), TASK, [], [])
    theirs, _ = ReadableFeedback().preprocess(_notebook([HEAVY] * 600), {})
    return ours, theirs


def _fitting(cell: str, count: int) -> int:
    """How many of ``count`` copies of ``cell`` the per-cell and per-page budgets let be highlighted."""
    tokens = page.code_tokens(cell)
    if len(cell) > HIGHLIGHT_CELL_CHARS.value or tokens > HIGHLIGHT_CELL_TOKENS.value:
        return 0
    return min(count, HIGHLIGHT_PAGE_CHARS.value // len(cell), HIGHLIGHT_PAGE_TOKENS.value // tokens)


def test_our_page_highlights_within_the_budget_and_stays_under_5_mb(at_the_limits):
    ours, _ = at_the_limits
    assert len(ours.encode()) < 5_000_000
    assert _highlighted(ours) == _fitting(HEAVY, 600) == 0  # 9,800 tokens: over one cell's budget
    assert "characters of code not shown" in ours and "more characters not shown" in ours
    # the rest as escaped plain text, in full until the page's room is spent
    plain = re.findall(r"<pre>(a\+1;[^<]*)</pre>", ours)
    assert plain and plain[0] == HEAVY


def test_a_cell_over_the_per_cell_budget_is_escaped_plain_text():
    big = "<script>alert(1)</script>\n" + "x = 1\n" * (HIGHLIGHT_CELL_CHARS.value // 6 + 1)
    assert len(big) > HIGHLIGHT_CELL_CHARS.value
    ours = page.render(_notebook([big, "y = 2"]), TASK, [], [])
    assert "<script>" not in ours and "&lt;script&gt;alert(1)&lt;/script&gt;" in ours
    assert _highlighted(ours) == 1  # the small cell only


def test_escaping_is_cut_at_the_room_never_inside_an_entity():
    ours = page.render(_notebook(["&<" * 5_000] * 600), TASK, [], [])
    assert len(ours.encode()) < 5_000_000
    for body in re.findall(r"<pre>([^<]*)</pre>", ours):
        assert html.escape(html.unescape(body), quote=False) == body  # whole entities only


def test_outputs_and_figures_share_the_page_budget():
    text = nbformat.v4.new_output("stream", name="stdout", text="z" * PAGE_TEXT_CHARS.value)
    ours = page.render(_notebook(["print('z')"] * 1900, outputs=[text]), TASK, [], [])
    assert len(ours.encode()) < 5_000_000 and "[Not shown: this page shows at most" in ours
    # The page tells the budget it keeps (3.5 MB), not the budget rounded down (it said 3 MB).
    assert f"shows at most {GRADER_PAGE_STUDENT_BYTES.value / 1e6:g} MB of your code" in ours
    assert "at most 3.5 MB" in ours and "at most 3 MB" not in ours


def test_nbconvert_page_marks_cells_plain_and_cuts_sources(at_the_limits):
    _, theirs = at_the_limits
    code = [c for c in theirs.cells if c.cell_type == "code" and not c.metadata.get("nbgrader")]
    highlighted = [c for c in code if not c.metadata.get(PLAIN_KEY)]
    assert len(highlighted) == _fitting(HEAVY, 600)
    assert sum(len(c.source) for c in code) < NBCONVERT_PAGE_STUDENT_BYTES.value + len(code) * 200
    assert any("more characters not shown" in c.source for c in code)


def test_bound_page_leaves_small_notebooks_alone():
    nb = _notebook(["def f(x):\n    return 2 * x\n"] * 5)
    before = [c.source for c in nb.cells]
    bound_page(nb)
    assert [c.source for c in nb.cells] == before and not any(c.metadata.get(PLAIN_KEY) for c in nb.cells)


@pytest.mark.parametrize("cell,count", [("a+1;" * 600, 40), ("x = 1  # " + "comment " * 40 + "\n", 400)])
def test_highlighting_is_bounded_in_tokens_as_well_as_characters(cell, count):
    """Pygments costs per token: 2,400 tokens of `a+1;` per cell fit 8 times in a page's tokens, though
    20 times in its characters; cells of long comments fit by their characters."""
    expected = _fitting(cell, count)
    assert 0 < expected < count
    ours = page.render(_notebook([cell] * count), TASK, [], [])
    theirs, _ = ReadableFeedback().preprocess(_notebook([cell] * count), {})
    assert _highlighted(ours) == expected
    code = [c for c in theirs.cells if c.cell_type == "code" and not c.metadata.get("nbgrader")]
    assert len([c for c in code if not c.metadata.get(PLAIN_KEY)]) == expected
