"""What every door remembers of a graded notebook: one state file per student and assignment.

``autograder grade`` and nbgrader's door (``nbgrader autograde``, formgrader's Autograde button,
through :mod:`autograder.grading.nbgrader_bridge`) write the same file,
``autograded/<student>/<assignment>/.autograder-state.json``, with the same entry per notebook:

* ``digest``: :func:`notebook_digest`, of everything the notebook's grade depends on (the submitted
  file's bytes, the source notebook and its checksums, the grader, the answer keys and the student
  package, the course's ``nbgrader_config.py``, the versions, the sandbox choice, the course secret and
  the limits), so whichever door graded a notebook, the other one knows that grading it again would
  change nothing and skips it ("unchanged");
* ``rows``: the report's rows of the notebook (what a skipped notebook reports again);
* ``cells``: :func:`cell_digests`, what a person grading each graded cell sees (a written answer's
  text; a test cell's text and outputs), so that a real regrade keeps "graded by hand" where that did
  not change (:class:`autograder.grading.gradebook.SaveStatedGrades`).

The entry is written only after the notebook's gradebook rows are committed, so a state file never
names a grade the gradebook lacks. A file that cannot be read counts as empty: everything is graded.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from autograder.grading import intake

#: The state file's name, in each ``autograded/<student>/<assignment>/`` folder.
STATE_FILE = ".autograder-state.json"

#: What a score can depend on, relative to the ``autograder`` package: the grader, the checks, the
#: answer keys and every other file of the exercises, the reference, the codec. Authoring, demo and
#: CLI code never run while grading and are left out.
_FINGERPRINTED = ("grading", "feedback", "checks", "exercises", "reference", "channel.py", "assignment.py")
#: Never read while grading (rubrics and worked solutions are for people; bytecode follows the source).
_NOT_FINGERPRINTED = (".md", ".pyc", ".pyo")


def _package_roots() -> list:
    """The installed ``autograder`` package and the student package ``course`` the notebooks import."""
    import course

    return [Path(__file__).resolve().parents[1], Path(course.__file__).resolve().parent]


def _versions() -> dict:
    """Versions a score may depend on: both distributions, nbgrader, NumPy and Python."""
    from importlib import metadata

    import numpy

    found = {"python": sys.version, "numpy": numpy.__version__}
    for name in ("module6-instructor", "module6-course", "nbgrader"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def grader_fingerprint(course_root: str | Path | None = None) -> str:
    """Changes whenever anything a score depends on changes, so that no result is reused across it.

    Covers the grader, the checks, the answer keys (``exercises/NN_slug/key.py`` and any data file
    there), the reference, the student package, the course's ``nbgrader_config.py`` and the versions
    of :func:`_versions`. The source notebooks and the limits enter each notebook's own digest.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps(_versions(), sort_keys=True).encode())
    package, student_package = _package_roots()
    entries = [package / name for name in _FINGERPRINTED] + [student_package]
    for entry in entries:
        root = entry.parent
        paths = [entry] if entry.is_file() else sorted(entry.rglob("*"))
        for path in paths:
            inside = path.relative_to(root).parts
            # setuptools' in-tree build copies and metadata of a source checkout are not the package
            if not path.is_file() or path.suffix in _NOT_FINGERPRINTED or any(
                    part in ("__pycache__", "build", "dist") or part.endswith(".egg-info") for part in inside):
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    config = Path(course_root) / "nbgrader_config.py" if course_root is not None else None
    digest.update(config.read_bytes() if config is not None and config.is_file() else b"no config")
    return digest.hexdigest()


def digest_of(*parts) -> str:
    """SHA-256 of ``parts`` (bytes as they are, anything else as sorted JSON), each ended by a NUL."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def grader_digest(course_root, task_options: dict) -> str:
    """The part of every notebook's digest that is the same for a whole run: the grader and its options."""
    return digest_of(grader_fingerprint(course_root), task_options)


def notebook_digest(root, parts, spec: dict, grader: str, limits: dict) -> str:
    """The digest of one submitted notebook (``root``/``parts``, read through the intake: a file over the
    size limit is known by its size and time, a refused one by its refusal) against its ``spec``
    (``source`` and ``checksums``), ``grader`` (:func:`grader_digest`) and ``limits``."""
    submitted = intake.fingerprint(root, parts, int(limits["notebook_bytes"]))
    return digest_of(submitted, spec["source"], spec["checksums"], grader, limits)


def state_path(coursedir, student: str, assignment: str) -> Path:
    """``autograded/<student>/<assignment>/.autograder-state.json`` of the course."""
    return Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / STATE_FILE


def read_state(path: Path) -> dict:
    """The state file's entries (``stem -> entry``); empty when it is missing or cannot be read."""
    try:
        state = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def write_state(path: Path, state: dict) -> None:
    """Write the state file whole, atomically (a reader sees the old file or the new one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(temporary, path)


def unchanged(entry, digest: str, produced: Path) -> bool:
    """Whether a notebook whose state ``entry`` is this may be left as it is: same ``digest``, and its
    autograded notebook ``produced`` still there."""
    return isinstance(entry, dict) and entry.get("digest") == digest and Path(produced).exists()


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value if value is not None else "")


def cell_digest(cell) -> str:
    """What a person grading ``cell`` sees, as a digest: its type and text, and for a code cell its outputs."""
    outputs = cell.get("outputs", []) if cell.get("cell_type") == "code" else []
    return digest_of(str(cell.get("cell_type")), _text(cell.get("source")), json.loads(json.dumps(outputs)))


def cell_digests(nb) -> dict:
    """``grade_id -> cell_digest`` of every graded cell (nbgrader's ``grade``) of an autograded notebook."""
    found = {}
    for cell in nb.get("cells", []):
        meta = (cell.get("metadata") or {}).get("nbgrader")
        if isinstance(meta, dict) and meta.get("grade") and isinstance(meta.get("grade_id"), str):
            found.setdefault(meta["grade_id"], cell_digest(cell))
    return found


def entry(result: dict) -> dict:
    """The state entry of a graded notebook, from the worker's result."""
    return {"digest": result["digest"], "rows": result["rows"], "cells": result.get("cells") or {}}


__all__ = ["STATE_FILE", "cell_digest", "cell_digests", "digest_of", "entry", "grader_digest", "grader_fingerprint",
           "notebook_digest", "read_state", "state_path", "unchanged", "write_state"]
