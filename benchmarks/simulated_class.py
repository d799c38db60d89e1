"""What both grading benchmarks share: a scratch folder, and a simulated class cycling through three kinds.

Student ``sNN`` works on notebook ``stems[NN % len(stems)]`` and is, in turn, a student who submits
the solutions, one who gets that notebook's first code answer wrong, and one who submits the release
untouched (see :func:`autograder.demo.simulate.write_class` for the profiles' syntax).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from autograder.authoring import scratch_course
from autograder.demo.simulate import exercise_code_answers


def released_stems(course: Path) -> list:
    """Stems of the notebooks released in ``course``, in exercise order."""
    return sorted(path.stem for path in scratch_course.release_dir(course).glob("*.ipynb"))


def cycling_class(course: Path, count: int, stems: list | None = None) -> dict:
    """``student -> profile`` for ``count`` students over ``stems`` (default: every released notebook)."""
    stems = list(stems) if stems else released_stems(course)
    if count < 0:
        raise ValueError(f"count must be a number of students >= 0, got {count}")
    profiles = {}
    for index in range(count):
        stem = stems[index % len(stems)]
        code = exercise_code_answers(stem, course)
        choice = index % 3
        if choice == 0 or not code:
            profiles[f"s{index:02d}"] = "solutions"
        elif choice == 1:
            profiles[f"s{index:02d}"] = f"solutions+wrong:{stem}:{code[0]}"
        else:
            profiles[f"s{index:02d}"] = "untouched"
    return profiles


@contextlib.contextmanager
def scratch_folder(prefix: str, *, keep: bool, holds: str = ""):
    """A new temporary folder for the courses of one run, removed afterwards unless ``keep``
    (then its path is printed, with ``holds`` saying what is in it)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield base
    finally:
        if keep:
            print(f"kept: {base}" + (f" ({holds})" if holds else ""))
        else:
            shutil.rmtree(base, ignore_errors=True)
