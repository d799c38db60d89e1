"""Where the installed kit keeps what ``autograder add-to-course`` installs into a course.

The source notebooks' one home is ``source/<assignment>/`` of the repository. The instructor wheel carries
a copy made at build time (``setup.py``, ``autograder/kit_source/<assignment>/``); an editable install or a
checkout reads ``source/`` itself. The rubrics live beside each exercise's check
(``autograder/exercises/NN_slug/rubric.md``), in the wheel as package data.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignment import ASSIGNMENTS, REPO_ROOT

PACKAGE = Path(__file__).resolve().parent


def kit_source(assignment: str) -> Path:
    """The folder of ``assignment``'s source notebooks in this installation (the wheel's copy, else the checkout's).

    ``ValueError`` for an assignment that is not the kit's; ``FileNotFoundError`` when neither folder holds a
    notebook (a wheel built without them).
    """
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"assignment must be one of {', '.join(ASSIGNMENTS)}, got {assignment!r}")
    for folder in (PACKAGE / "kit_source" / assignment, REPO_ROOT / "source" / assignment):
        if any(folder.glob("*.ipynb")):
            return folder
    raise FileNotFoundError(f"no source notebooks of {assignment} in this installation of the kit "
                            f"(looked in {PACKAGE / 'kit_source' / assignment} and {REPO_ROOT / 'source' / assignment})")


def rubrics() -> dict:
    """``exercise folder name -> rubric.md path`` for every exercise that has one, in exercise order."""
    found = {}
    for folder in sorted((PACKAGE / "exercises").iterdir()):
        rubric = folder / "rubric.md"
        if rubric.is_file():
            found[folder.name] = rubric
    return found


__all__ = ["kit_source", "rubrics"]
