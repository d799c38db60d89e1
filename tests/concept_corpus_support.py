"""Shared helpers for the tests of concept exercises 08-14: grade answer corpora and check a notebook's contract.

Answers are written in the tests as Python source (the way a student fills an answer cell) and run
in a namespace where ``math`` and ``np`` exist, as after the notebook's setup cell. Notebook helpers
come from :mod:`concept_notebook_support` (shared with exercises 01-07).
"""

from __future__ import annotations

import nbformat

from autograder.checks import CHECKS, grade, run_check
from concept_notebook_support import namespace_from, namespace_of, released_notebook, source_notebook


def result_of(stem: str, namespace: dict):
    return run_check(stem, namespace)


def assert_full_marks(stem: str, namespace: dict) -> None:
    result = run_check(stem, namespace)
    assert result.points_earned == CHECKS[stem].points, result.feedback()
    assert not result.misconceptions, result.feedback()


def assert_full_marks_for(stem: str, source: str) -> None:
    assert_full_marks(stem, namespace_from(source))


def assert_mistake(stem: str, source_or_namespace, key: str | None) -> object:
    """The answer loses points; when ``key`` is given, its feedback names that misconception."""
    namespace = namespace_from(source_or_namespace) if isinstance(source_or_namespace, str) else source_or_namespace
    result = run_check(stem, namespace)
    assert result.points_earned < CHECKS[stem].points, result.feedback()
    if key is not None:
        assert key in result.misconceptions, result.feedback()
    return result


def failure_messages(result) -> list:
    return [case.message for case in result.cases if not case.passed]


def run_visible_cells(notebook) -> dict:
    """Execute every code cell a student runs before the hidden tests: setup, given data, answers and
    public checks (widget cells and hidden test cells are skipped)."""
    namespace: dict = {"__name__": "__main__"}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or "widget" in cell.metadata.get("tags", []):
            continue
        exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
    return namespace


def check_notebook_contract(stem: str, total_points: float) -> None:
    """The notebook's solution passes its own public checks and earns every hidden group's points, its
    hidden cells match the check's groups, and autograded plus manual points make the exercise's total."""
    notebook = source_notebook(stem)
    nbformat.validate(notebook)
    check = CHECKS[stem]
    namespace = run_visible_cells(notebook)  # raises if a public check fails on the solution
    cells = {}
    manual = 0.0
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        assert not cell.get("outputs"), f"cell {cell.id} has stored outputs"
        if meta.get("grade") and cell.cell_type == "code":
            cells[meta["grade_id"]] = meta["points"]
            assert f'grade("{stem}", "{meta["grade_id"][len("test_"):]}", globals())' in cell.source
        elif meta.get("grade"):
            manual += meta["points"]
    assert cells == {group.grade_id: group.points for group in check.groups}
    assert sum(cells.values()) + manual == total_points
    for group in check.groups:
        assert grade(stem, group.name, dict(namespace)) == group.points


def check_stub_scores_zero(stem: str) -> None:
    """The released notebook (templates plus nbgrader's stub) earns nothing and says "not implemented"."""
    result = run_check(stem, namespace_of(released_notebook(stem)))
    assert result.points_earned == 0, result.feedback()
    assert all("not implemented" in case.message for case in result.cases), result.feedback()


__all__ = ["assert_full_marks", "assert_full_marks_for", "assert_mistake", "check_notebook_contract",
           "check_stub_scores_zero", "failure_messages", "namespace_from", "result_of", "run_visible_cells"]
