"""Everything instructor-only about one exercise, in one folder named like its notebook.

``autograder/exercises/NN_slug/`` holds, for notebook ``source/module6/NN_slug.ipynb``:

* ``check.py``: the hidden checks (defines ``CHECK``, an :class:`autograder.checks.ExerciseCheck`);
* ``key.py``: the answer key of a concept exercise (01-14), computed from :mod:`autograder.reference`;
* ``rubric.md``: the manual-grading rubric of its written answers (when it has any);
* ``solution.md``: the self-study hints and worked solution.

Folder names start with a digit, so modules are loaded by name through :func:`importlib.import_module`
(``autograder.exercises.16_causal_shift.check``); use :func:`load_check` and :func:`load_key`.

A concept exercise with a family of numbers (:mod:`course.variants`) has its answers computed per student
by its key (:func:`answers_for`), and its ``solution.md`` and ``rubric.md`` quote the worked values of the
student's numbers (:func:`fill`).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Mapping

from course import variants as family_registry

HERE = Path(__file__).resolve().parent
_STEM = re.compile(r"^\d\d_[a-z0-9_]+$")


def stems() -> list:
    """Stems of every exercise that has a folder here, in exercise order."""
    return sorted(path.name for path in HERE.iterdir()
                  if path.is_dir() and _STEM.match(path.name) and (path / "check.py").is_file())


def exercise_dir(stem: str) -> Path:
    """The folder of ``stem``; ``KeyError`` naming the known stems when there is none."""
    if not isinstance(stem, str) or not _STEM.match(stem) or not (HERE / stem).is_dir():
        raise KeyError(f"no exercise {stem!r}; known: {stems()}")
    return HERE / stem


def _module(stem: str, name: str) -> ModuleType:
    exercise_dir(stem)
    return importlib.import_module(f"{__name__}.{stem}.{name}")


def load_check(stem: str) -> ModuleType:
    """The check module of ``stem`` (``autograder.exercises.<stem>.check``)."""
    return _module(stem, "check")


def load_key(stem: str) -> ModuleType:
    """The answer-key module of concept exercise ``stem`` (``autograder.exercises.<stem>.key``)."""
    return _module(stem, "key")


def rubric_path(stem: str) -> Path:
    """``rubric.md`` of ``stem`` (``FileNotFoundError`` if it has no written answers)."""
    path = exercise_dir(stem) / "rubric.md"
    if not path.is_file():
        raise FileNotFoundError(f"exercise {stem} has no rubric (no manually graded answers)")
    return path


def solution_path(stem: str) -> Path:
    """``solution.md`` of ``stem``: self-study hints, worked solution and key idea."""
    return exercise_dir(stem) / "solution.md"


def answers_for(stem: str, student: str | None = None, course_term=None) -> dict:
    """``variable -> value`` of ``student``'s answers to concept exercise ``stem`` (the release
    notebook's answer names) in ``course_term`` (a :class:`course.variants.CourseTerm`; None: the empty
    context); empty when the exercise has no family."""
    if not family_registry.varies(stem):
        return {}
    return dict(load_key(stem).answers(family_registry.parameters(stem, student, course_term)))


_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def worked_values(stem: str, parameters: Mapping | None = None) -> dict:
    """``name -> text`` that a worked solution or rubric of ``stem`` quotes for ``parameters`` (variant 0
    when None): ``key.worked(parameters)`` where the key defines it, else nothing."""
    if not family_registry.varies(stem):
        return {}
    key = load_key(stem)
    if parameters is None:
        parameters = family_registry.families()[stem].seed
    worked = getattr(key, "worked", None)
    return {str(name): str(text) for name, text in worked(parameters).items()} if worked is not None else {}


def fill(text: str, stem: str, parameters: Mapping | None = None) -> str:
    """``text`` (a ``solution.md`` or ``rubric.md``) with each ``{{ name }}`` replaced by the worked value
    of ``parameters``; a name the key does not define is a ``KeyError`` naming it (an authoring error)."""
    names = set(_PLACEHOLDER.findall(text))
    if not names:
        return text
    values = worked_values(stem, parameters)
    missing = sorted(names - set(values))
    if missing:
        raise KeyError(f"{stem}: placeholders {missing} have no value in key.worked()")
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)
