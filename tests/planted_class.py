"""A small class with known mistakes, graded by ``autograder grade`` in a scratch course.

Students start from the worked solutions; :data:`PLANTS` then edits one answer cell of some of them
so that a known misconception shows (the edit is a plain text replacement of the solution), and a
few notebooks crash or loop forever. Used by the report's and the feedback pages' tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy
from autograder.demo.simulate import write_class

STEMS = ("15_stable_log_softmax", "19_sampling_transforms")

#: (stem, grade_id, old text, new text, misconception key the checks must report)
NO_MAX_SHIFT = ("15_stable_log_softmax", "stable_log_softmax",
                "shifted = z - z.max(axis=axis, keepdims=True)", "shifted = z", "no-max-shift")
TEMPERATURE_MULTIPLIED = ("19_sampling_transforms", "temperature_distribution",
                          "scaled = z / temperature", "scaled = z * temperature", "temperature-multiplied")
#: No check for NaN or infinities: the check framework's own key (its sentence is not in 15's check.py).
NO_VALIDATION = ("15_stable_log_softmax", "stable_log_softmax",
                 '    if not np.all(np.isfinite(z)):\n        raise ValueError("logits must be finite: found NaN or an infinity")\n',
                 "", "silent-bad-input")
LOOP_FOREVER = ("15_stable_log_softmax", "stable_log_softmax",
                "def stable_log_softmax(", "while True:\n    pass\n\ndef stable_log_softmax(", None)

#: student -> the edits made to their notebooks ("crash" kills the kernel in the notebook's first answer).
PLANTS = {
    "honest1": [], "honest2": [], "honest3": [],
    "temp1": [TEMPERATURE_MULTIPLIED], "temp2": [TEMPERATURE_MULTIPLIED], "temp3": [TEMPERATURE_MULTIPLIED],
    "shift1": [NO_MAX_SHIFT], "shift2": [NO_MAX_SHIFT],
    "both1": [NO_MAX_SHIFT, TEMPERATURE_MULTIPLIED],
    "lax1": [NO_VALIDATION],
    "crash1": ["crash:19_sampling_transforms"],
    "loop1": [LOOP_FOREVER],
}


def planted_count(key: str) -> int:
    return sum(1 for edits in PLANTS.values() for edit in edits if isinstance(edit, tuple) and edit[4] == key)


def _edit(course: Path, student: str, stem: str, grade_id: str, old: str, new: str) -> None:
    path = course / "submitted" / student / ASSIGNMENT / f"{stem}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert old in cell.source, (stem, grade_id, old)
    cell.source = cell.source.replace(old, new, 1)
    nbformat.write(nb, str(path))


def build(dest: Path, plants: dict | None = None, stems=STEMS, timeout: float = 8.0) -> Path:
    """Copy the course to ``dest``, release, write and edit the class, grade it; returns the course."""
    plants = PLANTS if plants is None else plants
    course = make_course_copy(dest, stems=stems)
    generate_release(course)
    profiles = {}
    for student, edits in plants.items():
        crashes = [e for e in edits if isinstance(e, str)]
        profiles[student] = "+".join(["solutions", *crashes])
    write_class(course, profiles)
    for student, edits in plants.items():
        for edit in edits:
            if isinstance(edit, tuple):
                _edit(course, student, *edit[:4])
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", ASSIGNMENT, "--no-progress", "--jobs", "2",
                           "--timeout", str(timeout), "--report", "grades.jsonl"],
                          cwd=course, env=env, text=True, capture_output=True, timeout=900)
    assert (course / "grades.jsonl").exists(), proc.stdout + proc.stderr
    return course
