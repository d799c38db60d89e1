"""Shared helpers for the tests of concept exercises 01-07: run a notebook's answer cells and grade them.

The answer cells are executed the way a student's kernel would run them: the source notebook's cells
as written (the instructor's solution), or the released form that nbgrader's ``ClearSolutions``
produces (the template followed by the ``raise NotImplementedError()`` stub).
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograder.checks import CHECKS, run_check

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "module6"


def source_notebook(stem: str):
    return nbformat.read(str(SOURCE / f"{stem}.ipynb"), as_version=4)


def released_notebook(stem: str):
    """The notebook as students receive it: solution regions replaced by nbgrader's stub."""
    from nbgrader.preprocessors import ClearSolutions

    notebook, _ = ClearSolutions().preprocess(copy.deepcopy(source_notebook(stem)), {})
    return notebook


def _runs_before_grading(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and (cell.id == "setup" or (meta.get("solution") and not meta.get("grade")))


def namespace_of(notebook) -> dict:
    """Execute the setup and answer cells in order; a stub's NotImplementedError stops only its cell."""
    namespace: dict = {"__name__": "__main__"}
    for cell in notebook.cells:
        if _runs_before_grading(cell):
            try:
                exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
            except NotImplementedError:
                pass
    return namespace


def namespace_from(source: str) -> dict:
    """A namespace made from answer code written in a test (``math`` and ``np`` available, as in setup)."""
    namespace: dict = {"__name__": "__main__"}
    exec("import math\nimport numpy as np\n" + source, namespace)
    return namespace


def grade(stem: str, namespace: dict):
    return run_check(stem, namespace)


def full_marks(stem: str) -> float:
    return CHECKS[stem].points


def hidden_test_cells(stem: str) -> dict:
    """``grade id -> points`` of the hidden test cells in the source notebook."""
    cells = {}
    for cell in source_notebook(stem).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            cells[meta["grade_id"]] = meta["points"]
    return cells


def manual_points(stem: str) -> float:
    return sum(cell.metadata["nbgrader"]["points"] for cell in source_notebook(stem).cells
               if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade"))


#: Hostile or malformed values for one answer name (``{name}`` is replaced); none may earn that item.
ADVERSARIAL = {
    "object whose __eq__ is always true": (
        "class _AlwaysEqual:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "{name} = _AlwaysEqual()\n"),
    "str subclass equal to everything": (
        "class _EqualStr(str):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = str.__hash__\n"
        "{name} = _EqualStr('?')\n"),
    "dict subclass equal to everything": (
        "class _EqualDict(dict):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "{name} = _EqualDict()\n"),
    "ndarray subclass equal to everything": (
        "class _EqualArray(np.ndarray):\n"
        "    def __eq__(self, other):\n"
        "        return np.ones(np.shape(other), dtype=bool)\n"
        "{name} = np.zeros(3).view(_EqualArray)\n"),
    "generator": "{name} = (item for item in range(3))\n",
    "NaN": "{name} = float('nan')\n",
    "huge list": "{name} = [0] * 200_000\n",
    "a function": "def {name}():\n    return True\n",
    "an exception instance": "{name} = ValueError('no answer')\n",
    "object whose attribute raises": (
        "class _Boom:\n"
        "    def __init__(self):\n"
        "        self.value = 1\n"
        "    def __getattribute__(self, attribute):\n"
        "        raise RuntimeError('boom')\n"
        "{name} = _Boom()\n"),
}


def adversarial_namespace(correct_source: str, name: str, label: str) -> dict:
    """The correct answers, then ``name`` rebound to the hostile value ``label``."""
    return namespace_from(correct_source + "\n" + ADVERSARIAL[label].format(name=name))


# --------------------------------------------------------------------------- shared assertions


def assert_full_marks(stem: str, namespace: dict) -> None:
    result = grade(stem, namespace)
    assert result.points_earned == full_marks(stem), result.feedback()
    assert not result.misconceptions, result.feedback()


def assert_misconception(stem: str, namespace: dict, key: str) -> None:
    """The answer loses points and the feedback names ``key``."""
    result = grade(stem, namespace)
    assert result.points_earned < full_marks(stem), result.feedback()
    assert key in result.misconceptions, (key, result.misconceptions, result.feedback())


def assert_stub_scores_zero(stem: str) -> None:
    result = grade(stem, namespace_of(released_notebook(stem)))
    assert result.points_earned == 0, result.feedback()
    assert all("not implemented" in case.message for case in result.cases), result.feedback()


def assert_notebook_matches_check(stem: str, total_points: float) -> None:
    """Hidden test cells are exactly the check's groups (grade id and points); totals add up."""
    check = CHECKS[stem]
    assert hidden_test_cells(stem) == {group.grade_id: group.points for group in check.groups}
    assert check.points + manual_points(stem) == total_points
    for cell in source_notebook(stem).cells:
        assert not cell.get("outputs"), f"{cell.id} stores outputs"
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            group = cell.metadata["nbgrader"]["grade_id"][len("test_"):]
            assert f'grade("{stem}", "{group}", globals())' in cell.source
            assert cell.source.startswith('"""') and "### BEGIN HIDDEN TESTS" in cell.source


def assert_hostile_value_fails(stem: str, correct_source: str, name: str, label: str) -> None:
    """Every case that reads ``name`` fails with a message; every other case still passes."""
    result = grade(stem, adversarial_namespace(correct_source, name, label))
    reads = {case.name for case in CHECKS[stem].cases() if any(call.target == name for call in case.calls)}
    assert reads, f"no case reads {name}"
    for case in result.cases:
        if case.name in reads:
            assert not case.passed and case.message, (label, case)
        else:
            assert case.passed, (label, case)
