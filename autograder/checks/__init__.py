"""Hidden checks for the 20 exercises of Module 6.

One module per notebook (``exNN_<slug>.py``) defines ``CHECK``, an :class:`ExerciseCheck`.
Three callers share them:

* hidden test cells (plain ``nbgrader autograde``, inside the student's kernel): :func:`grade`;
* self-study notebooks: :func:`run_check`;
* the batch grader: :func:`plan` in the trusted process, calls performed in a sandbox, then :func:`judge`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable, Mapping, Sequence

from autograder.checks._core import (
    IN_PROCESS_TIMEOUT, Case, CheckResult, ExerciseCheck, Group, Outcome, Verdict, judge_cases, perform_cases,
)


def _discover() -> dict:
    checks = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda item: item.name):
        if info.name.startswith("ex") and info.name[2:4].isdigit():
            module = importlib.import_module(f"{__name__}.{info.name}")
            check = module.CHECK
            checks[check.stem] = check
    return checks


class _Registry(dict):
    """``stem -> ExerciseCheck``, filled on first use so that importing this package stays cheap."""

    _loaded = False

    def _load(self) -> None:
        if not self._loaded:
            self.update(_discover())
            self._loaded = True

    def __getitem__(self, stem):
        self._load()
        try:
            return dict.__getitem__(self, stem)
        except KeyError:
            raise KeyError(f"no check for notebook {stem!r}; known: {sorted(dict.keys(self))}") from None

    def __iter__(self):
        self._load()
        return dict.__iter__(self)

    def __len__(self):
        self._load()
        return dict.__len__(self)

    def __contains__(self, stem):
        self._load()
        return dict.__contains__(self, stem)

    def keys(self):
        self._load()
        return dict.keys(self)

    def items(self):
        self._load()
        return dict.items(self)

    def values(self):
        self._load()
        return dict.values(self)


CHECKS: Mapping[str, ExerciseCheck] = _Registry()


def plan(stem: str, groups: Iterable[str] | None = None) -> tuple:
    """The cases (and so the calls) that grading ``stem`` needs, optionally only some groups."""
    return CHECKS[stem].cases(groups)


def judge(stem: str, outcomes: Mapping[str, Sequence[Outcome]], groups: Iterable[str] | None = None) -> CheckResult:
    """Judge decoded outcomes in the trusted process (``case name -> outcomes of its calls``)."""
    return judge_cases(CHECKS[stem], outcomes, groups)


def run_check(stem: str, namespace: dict, groups: Iterable[str] | None = None, *,
              timeout: float | None = IN_PROCESS_TIMEOUT) -> CheckResult:
    """Plan, perform in this process against ``namespace`` (e.g. ``globals()``), and judge."""
    cases = plan(stem, groups)
    return judge(stem, perform_cases(cases, namespace, timeout=timeout), groups)


def grade(stem: str, group: str, namespace: dict) -> float:
    """Body of a hidden test cell: print the group's feedback and return the points earned.

    nbgrader reads a number as a cell's last expression as partial credit; nothing is raised, so the
    feedback never carries a traceback that would show the test cell's code.
    """
    result = run_check(stem, namespace, [group])
    print(result.groups[0].feedback())
    return float(result.points_earned)


__all__ = ["CHECKS", "Case", "CheckResult", "ExerciseCheck", "Group", "Verdict", "grade", "judge", "plan", "run_check"]
