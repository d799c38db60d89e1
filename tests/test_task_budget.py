"""Every notebook reads as a task first: at most BUDGET words of text before the first answer cell.

How the words are counted is in `tests/notebook_text_support.py` and in `docs/DESIGN.md` ("Notebook layout").
"""

from __future__ import annotations

import json

import pytest

from tests.notebook_text_support import BUDGET, ROOT, source_notebooks, words_before_first_answer

NOTEBOOKS = source_notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_task_text_before_the_first_answer_is_within_budget(path):
    words = words_before_first_answer(json.loads(path.read_text(encoding="utf-8")))
    assert words <= BUDGET, f"{path.relative_to(ROOT)}: {words} words before the first answer cell " \
                            f"(budget {BUDGET}): move practice and citations to the 'In practice' section"


def _md(cell_id, text, **nbgrader):
    return {"cell_type": "markdown", "id": cell_id, "metadata": {"nbgrader": nbgrader}, "source": [text]}


def test_the_count_stops_at_the_first_answer_and_leaves_out_what_is_not_task_text():
    nb = {"cells": [
        _md("intro", "one two three"),
        {"cell_type": "code", "id": "student-id", "source": ["STUDENT_ID = ''"],
         "metadata": {"nbgrader": {"solution": True, "grade_id": "student_id"}}},
        _md("how-this-works", "many words " * 100),
        _md("task", "four five\n\n```python\nnot counted at all\n```\n\n$$x = y + z$$\n\n| six | seven |"),
        {"cell_type": "code", "id": "answer", "source": ["x = 1"],
         "metadata": {"nbgrader": {"solution": True, "grade_id": "answer_x"}}},
        _md("after", "eight " * 1000),
    ]}
    assert words_before_first_answer(nb) == 3 + 2 + 5  # the table row's pipes are words too


def test_every_notebook_has_the_budget_and_the_docs_state_it():
    assert len(NOTEBOOKS) >= 28
    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    assert f"at most {BUDGET} words" in design
