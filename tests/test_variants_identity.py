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
