"""Hidden checks for every exercise of Module 6 (both assignments: see ``autograder.assignment``).

Each exercise's ``autograder/exercises/NN_slug/check.py`` defines ``CHECK``, an :class:`ExerciseCheck`,
from what :mod:`autograder.checks.authoring` exports (the framework's public face: cases, judges, the
concept-answer readers; the ``_*`` modules behind it are private). This package itself is the registry,
which finds each check by its folder (loaded by name on first use: importing the registry loads no check).
Three callers share it:

* hidden test cells (plain ``nbgrader autograde``, inside the student's kernel): :func:`grade`;
* self-study notebooks: :func:`run_check`;
* the batch grader: :func:`plan` in the trusted process, calls performed in a sandbox, then :func:`judge`.
"""

from __future__ import annotations

import importlib
from typing import Iterable, Mapping, Sequence

from autograder.results import METADATA_KEY, GroupVerdict, verdict_text
from autograder.checks._core import (
    Case, Central, CheckResult, ExerciseCheck, Gate, Group, Outcome, Verdict, judge_cases, perform_cases,
)
from autograder.limits import SELFSTUDY_CALL_SECONDS


def _module_names() -> dict:
    """``stem -> module name`` of every exercise folder (``autograder/exercises/<stem>/check.py``)."""
    from autograder import exercises
    return {stem: f"{exercises.__name__}.{stem}.check" for stem in exercises.stems()}


class _Registry(dict):
    """``stem -> ExerciseCheck``, importing a notebook's check module only when it is asked for.

    Grading one notebook therefore never depends on the other 19 modules: a broken or half-edited
    check can only cost its own notebook.
    """

    def __init__(self):
        super().__init__()
        self._modules: dict | None = None

    def _names(self) -> dict:
        if self._modules is None:
            self._modules = _module_names()
        return self._modules

    def __getitem__(self, stem):
        if not dict.__contains__(self, stem):
            module = self._names().get(stem)
            if module is None:  # unknown (a registered check is already in the dict)
                raise KeyError(f"no check for notebook {stem!r}; known: {sorted(self._names())}")
            check = importlib.import_module(module).CHECK
            if check.stem != stem:
                raise RuntimeError(f"{module} defines the check of {check.stem!r}, expected {stem!r}")
            dict.__setitem__(self, stem, check)
        return dict.__getitem__(self, stem)

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def __contains__(self, stem):
        return stem in self._names()

    def keys(self):
        return self._names().keys()

    def items(self):
        return [(stem, self[stem]) for stem in self._names()]

    def values(self):
        return [self[stem] for stem in self._names()]

    def get(self, stem, default=None):
        return self[stem] if stem in self else default

    def register(self, check: ExerciseCheck) -> None:
        """Add a check that has no module here (a test course's, for instance)."""
        self._names()[check.stem] = None
        dict.__setitem__(self, check.stem, check)


CHECKS: Mapping[str, ExerciseCheck] = _Registry()


def plan(stem: str, groups: Iterable[str] | None = None, *, variant=None) -> tuple:
    """The cases (and so the calls) that grading ``stem`` needs, optionally only some groups: their own
    cases, the exercise's central cases, which decide a cap on every group (see ``Central``), and for
    a gated group the valid-input cases that open it (see ``Gate``). ``variant``: the student's
    (:func:`autograder.variants.variant_for`), None for variant 0."""
    return CHECKS[stem].at(variant).planned_cases(groups)


def judge(stem: str, outcomes: Mapping[str, Sequence[Outcome]], groups: Iterable[str] | None = None, *,
          unavailable: Sequence[str] = (), variant=None) -> CheckResult:
    """Judge decoded outcomes in the trusted process (``case name -> outcomes of its calls``);
    ``unavailable`` names the modules a cell could not import in the sandbox (see ``judge_cases``)."""
    return judge_cases(CHECKS[stem].at(variant), outcomes, groups, unavailable=unavailable)


def run_check(stem: str, namespace: dict, groups: Iterable[str] | None = None, *,
              timeout: float | None = SELFSTUDY_CALL_SECONDS.value, variant=None) -> CheckResult:
    """Plan, perform in this process against ``namespace`` (e.g. ``globals()``), and judge.

    Without a ``variant``, a notebook's own ``numbers`` (its :func:`course.variants.your_numbers`)
    say whose numbers to grade: in one's own kernel the check grades the numbers the notebook shows.
    The batch grader never comes here: it states the submission folder's id."""
    if variant is None:
        variant = _variant_shown(stem, namespace)
    cases = plan(stem, groups, variant=variant)
    return judge(stem, perform_cases(cases, namespace, timeout=timeout), groups, variant=variant)


def _variant_shown(stem: str, namespace) -> object:
    from course.variants import Numbers
    numbers = namespace.get("numbers") if isinstance(namespace, Mapping) else None
    if isinstance(numbers, Numbers) and numbers.stem == stem and numbers.identity.student:
        from autograder.variants import variant_for
        # The numbers' own course and term (the released cell's): the check judges what the notebook shows.
        return variant_for(stem, numbers.identity.student, course_term=numbers.course_term)
    return None


class Points(float):
    """The points a hidden test cell returns: a float, shown as one (nbgrader reads that text as partial
    credit), whose display also carries the group's verdict record in the output's metadata, where the
    batch grader puts it (``autograder.results.verdicts_of`` reads it from either)."""

    def __new__(cls, value: float, record: dict):
        points = super().__new__(cls, value)
        points.record = record
        return points

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": repr(float(self))}, {METADATA_KEY: self.record}


def grade(stem: str, group: str, namespace: dict) -> float:
    """Body of a hidden test cell: print the group's feedback and return the points earned.

    nbgrader reads a number as a cell's last expression as partial credit; nothing is raised, so the
    feedback never carries a traceback that would show the test cell's code. The number is a
    :class:`Points`: its output carries the verdict record too, as the batch grader's test cells do.
    """
    result = run_check(stem, namespace, [group])
    record = GroupVerdict.from_result(result.groups[0])
    print(verdict_text(record))
    return Points(float(result.points_earned), record.to_json())


__all__ = ["CHECKS", "Case", "Central", "CheckResult", "ExerciseCheck", "Gate", "Group", "Points", "Verdict", "grade", "judge", "plan",
           "run_check"]
