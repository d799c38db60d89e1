"""A student whose notebook does not know who they are is told before submitting, by Validate.

nbgrader's own ``Validator`` (the course's configuration, as the Validate button runs it) on a release
notebook whose numbers vary: on a hub with a typed id that is not the sign-in, and on a laptop with no
id at all. Both stop at the numbers cell, and Validate reports the sentence that says what to do.
"""

from __future__ import annotations

import html
import os
import re

import nbformat
import pytest

from course.variants import NO_ID, STUDENT_ID_GRADE_ID, families
from tests.nbrun_support import HUB_STUDENT, config, release_path

STEM = sorted(families())[0]


def _copy(tmp_path, typed: str):
    nb = nbformat.read(str(release_path(STEM)), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == STUDENT_ID_GRADE_ID]
    assert 'STUDENT_ID = ""' in cell.source
    cell.source = cell.source.replace('STUDENT_ID = ""', f'STUDENT_ID = "{typed}"')
    path = tmp_path / f"{STEM}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _validate(path, hub_user: str | None) -> str:
    """What Validate reports (the failed cells' errors, as plain text), with or without a hub sign-in."""
    from nbgrader.validator import Validator

    saved = os.environ.pop("JUPYTERHUB_USER", None)
    if hub_user is not None:
        os.environ["JUPYTERHUB_USER"] = hub_user  # the kernel inherits it
    try:
        result = Validator(config=config()).validate(str(path))
    finally:
        os.environ.pop("JUPYTERHUB_USER", None)
        if saved is not None:
            os.environ["JUPYTERHUB_USER"] = saved
    failed = result.get("failed") or []
    assert failed, result
    first = failed[0]
    assert "your_numbers(" in first["source"]  # it stops at the numbers cell, before any answer
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", first["error"])))


@pytest.mark.slow
def test_wrong_typed_id_on_a_hub_is_reported(tmp_path):
    text = _validate(_copy(tmp_path, "someone-else"), HUB_STUDENT)
    assert "StudentIdError" in text
    assert (f"You typed STUDENT_ID = 'someone-else', but you are signed in to JupyterHub as '{HUB_STUDENT}'"
            in text), text[-1500:]


@pytest.mark.slow
def test_no_id_on_a_laptop_is_reported(tmp_path):
    text = _validate(_copy(tmp_path, ""), None)
    assert "StudentIdError" in text and re.sub(r"\s+", " ", NO_ID) in text, text[-1500:]
    # Issue 35: the sentence is all the error says (no traceback of library internals), and it names the
    # cell to fill in, which is the one above the numbers cell (not "the first cell").
    assert text.strip() == "StudentIdError: " + re.sub(r"\s+", " ", NO_ID), text[-1500:]
    assert 'STUDENT_ID = "" in the cell just above this one' in text


EXAMPLE_ANSWERS = {
    "answer_three_tokens": ("p1, p2, p3 = 0.5, 0.25, 0.8  # the table of the task text\n"
                            "sequence_logprob = math.log(p1) + math.log(p2) + math.log(p3)\n"
                            "mean_nll = -sequence_logprob / 3\n"
                            "perplexity = math.exp(mean_nll)\n"),
    "answer_fourth_token": ("sequence_logprob_4 = sequence_logprob + math.log(1.0)\n"
                            "perplexity_4 = math.exp(-sequence_logprob_4 / 4)\n"),
}


@pytest.mark.slow
def test_answers_from_the_example_numbers_are_named_by_validate(tmp_path):
    """Issue 35: a laptop student with an id who works from the example's table (the numbers the task text
    shows) hears it from Validate, before submitting, in one sentence and no traceback."""
    from nbgrader.validator import Validator

    nb = nbformat.read(str(release_path("09_sequence_ppl")), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == STUDENT_ID_GRADE_ID:
            cell.source = cell.source.replace('STUDENT_ID = ""', 'STUDENT_ID = "ada"')
        elif grade_id in EXAMPLE_ANSWERS:
            cell.source = EXAMPLE_ANSWERS[grade_id]
    path = tmp_path / "09_sequence_ppl.ipynb"
    nbformat.write(nb, str(path))
    saved = os.environ.pop("JUPYTERHUB_USER", None)
    try:
        result = Validator(config=config()).validate(str(path))
    finally:
        if saved is not None:
            os.environ["JUPYTERHUB_USER"] = saved
    failed = [cell for cell in result.get("failed") or [] if "not_the_example(" in cell["source"]]
    assert len(failed) == 2, result  # Part A's check and Part B's
    for cell in failed:
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", cell["error"])))
        assert text.startswith("Open check failed: These are the worked example's numbers, not yours: "), text
        assert "Traceback" not in text and "File " not in text, text
