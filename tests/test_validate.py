"""nbgrader's Validate on a student's notebook tells the truth.

Validate (the JupyterLab button, ``nbgrader validate``) runs a student's copy of a release notebook.
The released hidden test cells hold no tests, so what Validate can judge is that the notebook runs
and that its open checks pass (``Validator.validate_all``, set in ``nbgrader_config.py``). These
tests use nbgrader's own ``Validator`` with the course's configuration, as the button does:

* wrong code that passes nothing is reported as failing, never "Success";
* an untouched notebook fails (its stubs raise);
* a correct answer validates, so the failures above are not a Validate that always fails;
* a released hidden-test cell prints nothing when it runs (no docstring echoed as a result).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.authoring.scratch_course import REPO_ROOT, release_dir
from autograder.selfstudy import load_solution

STEM = "15_stable_log_softmax"
ANSWER_ID = "answer-stable-log-softmax"

WRONG = '''
import numpy as np

def stable_log_softmax(logits, axis=-1):
    """Wrong on purpose: the logits themselves, not their log-softmax."""
    return np.asarray(logits, dtype=float)
'''


def _validator():
    from nbgrader.validator import Validator

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    return Validator(config=config)


def _student_copy(tmp_path: Path, answer: str | None) -> Path:
    nb = nbformat.read(release_dir() / f"{STEM}.ipynb", as_version=4)
    if answer is not None:
        cell = next(c for c in nb.cells if c.get("id") == ANSWER_ID)
        cell.source = answer
        for cell in nb.cells:  # the written answers too, so that only the code is judged
            if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = "Subtracting the maximum divides numerator and denominator by the same e^m."
    path = tmp_path / f"{STEM}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _worked_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", load_solution(STEM)["solution"], flags=re.S)
    assert blocks
    return "import numpy as np\n" + "\n".join(blocks)


def test_the_course_config_validates_every_cell_and_quiets_released_tests():
    from autograder.authoring.release_preprocessors import KernelLanguageInfo, QuietReleasedTests
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearHiddenTests

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert _validator().validate_all is True
    steps = GenerateAssignment(config=config).preprocessors
    assert steps.index(QuietReleasedTests) == steps.index(ClearHiddenTests) + 1
    assert steps[-1] is KernelLanguageInfo


@pytest.mark.parametrize("path", sorted(release_dir().glob("*.ipynb")), ids=lambda p: p.stem)
def test_released_notebooks_hold_the_language_info_jupyterlab_would_write(path):
    """Otherwise JupyterLab marks a notebook modified as soon as its kernel starts."""
    from autograder.authoring.release_preprocessors import kernel_language_info

    assert nbformat.read(path, as_version=4).metadata["language_info"] == kernel_language_info()


@pytest.mark.slow
def test_wrong_code_that_passes_nothing_does_not_validate(tmp_path):
    results = _validator().validate(str(_student_copy(tmp_path, WRONG)))
    failed = results.get("failed", [])
    assert failed, f"Validate reported success for wrong code: {results}"
    assert any("rows that differ by a constant" in cell["raw_error"] or "sum to one" in cell["raw_error"]
               for cell in failed), failed
    # Issue 35: the open check's sentence is all the error says, first, and names the call and its input.
    (check,) = [cell for cell in failed if "stable_log_softmax" in cell["raw_error"]]
    error = re.sub(r"\x1b\[[0-9;]*m", "", check["raw_error"])
    assert error.startswith("Open check failed: stable_log_softmax(logits, axis=-1) for logits = "), error
    assert "Traceback" not in error and "site-packages" not in error, error


@pytest.mark.slow
def test_an_untouched_notebook_does_not_validate(tmp_path):
    results = _validator().validate(str(_student_copy(tmp_path, None)))
    assert any("NotImplementedError" in cell["raw_error"] for cell in results.get("failed", [])), results


@pytest.mark.slow
def test_a_correct_answer_validates(tmp_path):
    results = _validator().validate(str(_student_copy(tmp_path, _worked_code())))
    assert results == {}, results


@pytest.mark.parametrize("path", sorted(release_dir().glob("*.ipynb")), ids=lambda p: p.stem)
def test_released_test_cells_end_in_a_statement_so_running_them_shows_nothing(path):
    nb = nbformat.read(path, as_version=4)
    tests = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert tests
    for cell in tests:
        body = ast.parse(cell.source).body
        # IPython shows the value of a cell's last statement only when it is an expression.
        assert not isinstance(body[-1], ast.Expr), f"{path.name} {cell.id} would echo {cell.source[:60]!r}"
        assert ast.get_docstring(ast.Module(body=body, type_ignores=[])), f"{path.name} {cell.id} lost its docstring"


@pytest.mark.slow
def test_a_released_test_cell_prints_nothing_in_a_kernel(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(release_dir() / f"{STEM}.ipynb", as_version=4)
    tests = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    nb.cells = tests
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in nb.cells:
        assert cell.outputs == [], (cell.id, cell.outputs)
