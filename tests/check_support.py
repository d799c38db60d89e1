"""What the tests of the hidden checks (both assignments) share: running notebooks and answers, and the generic tests.

Each ``tests/test_checks_exNN_*.py`` declares one test class that inherits the generic tests from
:class:`ConceptCheckTests` (exercises 01-14) or :class:`CodingCheckTests` (15-20) and fills in its
exercise's facts and corpora; the class collects, for that exercise:

* every correct answer earns full marks and names no misconception;
* every mistake loses points and its feedback names the expected misconception;
* every hostile answer earns nothing in what it attacks, and each failure says why;
* the notebook's own solution passes its public checks and earns every autograded point;
* the released notebook (nbgrader's stub) earns nothing and every case says "not implemented";
* the notebook's hidden test cells are the check's groups (grade id, points, order), the
  autograded and manual points make the exercise's total, and nothing is stored or leaked.

Answers are written in the tests as Python source, the way a student fills an answer cell, and run
in a namespace where ``math`` and ``np`` already exist, as after a notebook's setup cell.
"""

from __future__ import annotations

import contextlib

import copy
import re
import textwrap
from pathlib import Path
from typing import Sequence

import nbformat
import pytest

from autograder.channel import Call
from autograder.checks import CHECKS, grade, run_check

from autograder.assignment import assignment_of, source_dir

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- notebooks and answers


def source_notebook(stem: str):
    """The source notebook of ``stem``, in whichever assignment holds it."""
    return nbformat.read(str(source_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb"), as_version=4)


def released_notebook(stem: str):
    """The notebook as students receive it: solution regions replaced by nbgrader's stub."""
    from nbgrader.preprocessors import ClearSolutions
    from autograder.authoring.release_preprocessors import TypedIdCell

    notebook, _ = ClearSolutions().preprocess(copy.deepcopy(source_notebook(stem)), {})
    # As the course's release does (the kit's steps act on the kit's assignments only).
    notebook, _ = TypedIdCell().preprocess(notebook, {"nbgrader": {"assignment": assignment_of(stem, ROOT)}})
    return notebook


def run_cells(notebook, *, released: bool = False) -> dict:
    """Execute, in order, the code cells a student runs before the hidden tests; return the namespace.

    Widget and hidden test cells are skipped. In a ``released`` notebook the public check cells are
    skipped too and a stub's ``NotImplementedError`` stops only its own cell; otherwise any error
    (a public check that fails on the solution, say) propagates.
    """
    namespace: dict = {"__name__": "__main__"}
    with example_numbers():  # a notebook with no student id shows (and is graded on) variant 0
        _run_cells(notebook, namespace, released)
    return namespace


@contextlib.contextmanager
def example_numbers():
    """Within: a notebook that knows no student shows variant 0 instead of stopping."""
    from course import variants
    variants.example_numbers(True)
    try:
        yield
    finally:
        variants.example_numbers(False)


def _run_cells(notebook, namespace: dict, released: bool) -> None:
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or "widget" in cell.metadata.get("tags", []):
            continue
        if released and cell.id.startswith("check"):
            continue
        try:
            exec(compile(cell.source, f"<cell {cell.id}>", "exec"), namespace)
        except NotImplementedError:
            if not released:
                raise


def namespace_from(source: str) -> dict:
    """A namespace made from answer code written in a test (``math`` and ``np`` available, as in setup)."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile("import math\nimport numpy as np\n" + textwrap.dedent(source), "<answer>", "exec"), namespace)
    return namespace


def result_of(stem: str, source_or_namespace: str | dict, groups: Sequence[str] | None = None):
    """Grade an answer given as source (see :func:`namespace_from`) or as a ready namespace."""
    namespace = namespace_from(source_or_namespace) if isinstance(source_or_namespace, str) else source_or_namespace
    return run_check(stem, namespace, groups)


def full_marks(stem: str) -> float:
    return CHECKS[stem].points


def failure_messages(result) -> list:
    return [case.message for case in result.cases if not case.passed]


def group_points(result) -> dict:
    """``group name -> (points earned, points available)``."""
    return {group.name: (group.points_earned, group.points_available) for group in result.groups}


# --------------------------------------------------------------------------- assertions


def assert_full_marks(stem: str, source_or_namespace: str | dict) -> None:
    result = result_of(stem, source_or_namespace)
    assert result.points_earned == full_marks(stem), result.feedback()
    assert not result.misconceptions, result.feedback()


def assert_mistake(stem: str, source_or_namespace: str | dict, key: str | None, failing: str | None = None):
    """The answer loses points; its feedback names misconception ``key`` (when given) and the case
    ``failing`` (when given) is among the failed ones. Returns the result."""
    result = result_of(stem, source_or_namespace)
    assert result.points_earned < full_marks(stem), result.feedback()
    if key is not None:
        assert key in result.misconceptions, (key, result.misconceptions, result.feedback())
    if failing is not None:
        failed = {case.name for case in result.cases if not case.passed}
        assert failing in failed, (failing, sorted(failed))
    return result


def assert_capped(stem: str, source_or_namespace: str | dict) -> None:
    """The answer earns at most a third of the autograded points, in total and in every hidden cell
    graded on its own (as nbgrader runs them), and the feedback says why."""
    result = result_of(stem, source_or_namespace)
    assert result.points_earned <= full_marks(stem) / 3 + 1e-9, result.feedback()
    assert all(group.capped for group in result.groups if group.points_earned > 0), result.feedback()
    for group in CHECKS[stem].groups:
        alone = result_of(stem, source_or_namespace, [group.name])
        assert alone.points_earned <= group.points / 3 + 1e-9, alone.feedback()


def attacked_cases(stem: str, target: str) -> set:
    """The cases a hostile answer attacks through ``target``: a group's name (all its cases), an answer
    variable's name (every case that reads it), else the cases whose name ends with ``target``."""
    check = CHECKS[stem]
    if target in {group.name for group in check.groups}:
        cases = check.cases([target])
    else:
        cases = [case for case in check.cases() if any(call.read_only and call.target == target for call in case.calls)]
        cases = cases or [case for case in check.cases() if case.name.endswith(target)]
    assert cases, f"{stem}: nothing is attacked through {target!r}"
    return {case.name for case in cases}


def assert_hostile_fails(stem: str, source: str, targets: Sequence[str], *, isolated: bool) -> None:
    """Every case attacked through ``targets`` fails; every failure says why; with ``isolated`` every
    other case still passes (the hostile value replaced one answer of an otherwise correct set)."""
    result = result_of(stem, source)
    attacked = set().union(*(attacked_cases(stem, target) for target in targets))
    failed = {case.name for case in result.cases if not case.passed}
    assert attacked <= failed, (sorted(attacked - failed), result.feedback())
    assert all(failure_messages(result)), result.feedback()
    if isolated:
        assert failed == attacked, (sorted(failed - attacked), result.feedback())


#: Hostile or malformed values for one answer name (``{name}`` is replaced); none may earn that item.
ADVERSARIAL_VALUES = {
    "object whose __eq__ is always true": (
        "class _AlwaysEqual:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "{name} = _AlwaysEqual()\n"),
    "str subclass equal to everything": (
        "class _EqualStr(str):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = str.__hash__\n"
        "{name} = _EqualStr('?')\n"),
    "dict subclass equal to everything": (
        "class _EqualDict(dict):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "{name} = _EqualDict()\n"),
    "ndarray subclass equal to everything": (
        "class _EqualArray(np.ndarray):\n"
        "    def __eq__(self, other):\n"
        "        return np.ones(np.shape(other), dtype=bool)\n"
        "{name} = np.zeros(3).view(_EqualArray)\n"),
    "generator": "{name} = (item for item in range(3))\n",
    "NaN": "{name} = float('nan')\n",
    "huge list": "{name} = [0] * 200_000\n",
    "a function": "def {name}():\n    return True\n",
    "an exception instance": "{name} = ValueError('no answer')\n",
    "object whose attribute raises": (
        "class _Boom:\n"
        "    def __init__(self):\n"
        "        self.value = 1\n"
        "    def __getattribute__(self, attribute):\n"
        "        raise RuntimeError('boom')\n"
        "{name} = _Boom()\n"),
}


def hostile_rebinds(correct_source: str, answers: dict) -> dict:
    """Hostile answers that each rebind one name after the correct answers (``label -> code`` whose last
    line is ``name = ...``); each attacks the cases that read that name."""
    return {label: (correct_source + "\n" + code + "\n", (code.splitlines()[-1].split(" = ")[0],))
            for label, code in answers.items()}


def hostile_grid(correct_source: str, names: Sequence[str]) -> dict:
    """Every value of :data:`ADVERSARIAL_VALUES` bound to every answer name after the correct answers."""
    return {f"{name}: {label}": (correct_source + "\n" + value.format(name=name), (name,))
            for name in names for label, value in ADVERSARIAL_VALUES.items()}


# --------------------------------------------------------------------------- the generic tests


class CheckTests:
    """The generic tests of one exercise's check; a subclass declares the exercise and its corpora.

    Attributes
    ----------
    stem : str
        The notebook's stem.
    groups : tuple of str
        The check's groups (hidden test cells), in notebook order.
    autograded_points, total_points : float
        The check's points, and the exercise's total with the manually graded answers.
    correct : dict
        ``label -> source`` of answers that must earn full marks.
    wrong : dict
        ``label -> (source, misconception key or None)``, optionally with a third item: the name of
        a case that must fail.
    hostile : dict
        ``label -> (source, targets)``: every case attacked through a target (see
        :func:`attacked_cases`) must fail.
    central_mistakes : tuple of str
        Labels of ``wrong`` that get the exercise's central idea wrong: each earns at most a third of
        the autograded points, in total and in every hidden cell graded on its own.
    """

    stem: str
    groups: tuple
    autograded_points: float
    total_points: float
    correct: dict
    wrong: dict
    hostile: dict
    #: A hostile answer fails exactly the cases it attacks (concept answers are read one by one).
    isolated_hostile = False
    central_mistakes: tuple = ()

    def pytest_generate_tests(self, metafunc):
        for argument, corpus in (("correct_label", self.correct), ("wrong_label", self.wrong),
                                 ("hostile_label", self.hostile),
                                 ("central_label", {label: None for label in self.central_mistakes})):
            if argument in metafunc.fixturenames:
                # an exercise without a central idea runs the central test once, on None
                metafunc.parametrize(argument, sorted(corpus) or [None] if argument == "central_label"
                                     else sorted(corpus))

    def test_correct_answer_gets_full_marks(self, correct_label):
        assert_full_marks(self.stem, self.correct[correct_label])

    def test_mistake_loses_points_and_is_named(self, wrong_label):
        assert_mistake(self.stem, *self.wrong[wrong_label])

    def test_central_mistake_earns_at_most_a_third(self, central_label):
        if central_label is None:  # no central mistakes listed: the check must not declare a central idea
            assert CHECKS[self.stem].central is None
            return
        assert_capped(self.stem, self.wrong[central_label][0])

    def test_every_declared_central_idea_has_a_mistake_in_the_corpus(self):
        central = CHECKS[self.stem].central
        if central is None:
            return
        assert self.central_mistakes, f"{self.stem} declares a central idea: list its mistakes in central_mistakes"
        named = {self.wrong[label][1] for label in self.central_mistakes}
        assert named <= set(central.misconceptions), named

    def test_hostile_answer_earns_nothing_it_attacks(self, hostile_label):
        source, targets = self.hostile[hostile_label]
        assert_hostile_fails(self.stem, source, targets, isolated=self.isolated_hostile)

    def test_notebook_solution_earns_every_point(self):
        namespace = run_cells(source_notebook(self.stem))  # raises if a public check fails on the solution
        for group in CHECKS[self.stem].groups:  # through the hidden test cells' own entry point
            assert grade(self.stem, group.name, dict(namespace)) == group.points, group.name
        assert_full_marks(self.stem, namespace)

    def test_released_stub_scores_zero_with_not_implemented(self):
        result = run_check(self.stem, run_cells(released_notebook(self.stem), released=True))
        assert result.points_earned == 0, result.feedback()
        assert all("not implemented" in case.message for case in result.cases), result.feedback()

    def test_notebook_cells_match_the_check(self):
        notebook = source_notebook(self.stem)
        nbformat.validate(notebook)
        check = CHECKS[self.stem]
        assert [group.name for group in check.groups] == list(self.groups)
        assert check.points == self.autograded_points
        hidden, manual = {}, 0.0
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{cell.id} stores outputs"
            if meta.get("grade") and cell.cell_type == "code":
                hidden[meta["grade_id"]] = meta["points"]
                group = meta["grade_id"][len("test_"):]
                assert f'grade("{self.stem}", "{group}", globals())' in cell.source, cell.id
                assert cell.source.startswith('"""') and "### BEGIN HIDDEN TESTS" in cell.source, cell.id
            elif meta.get("grade"):
                manual += meta["points"]
            elif cell.cell_type == "code":  # what students see must not import the grader or the answers
                assert "autograder" not in cell.source and "autograder.reference" not in cell.source, cell.id
        assert list(hidden.items()) == [(group.grade_id, group.points) for group in check.groups]
        assert check.points + manual == self.total_points


class ConceptCheckTests(CheckTests):
    """Generic tests of a concept exercise (01-14): answers are values bound to documented names."""

    isolated_hostile = True


class CodingCheckTests(CheckTests):
    """Generic tests of a coding exercise (15-20): answers are functions, judged against the reference.

    Attributes
    ----------
    reference_functions : tuple of str
        The functions the exercise asks for, all found in :mod:`autograder.reference`.
    rejecting_groups : tuple of str
        Groups whose every case expects the call to raise ValueError or TypeError.
    quiet_mistakes : tuple of str
        Labels of ``wrong`` whose feedback must not reveal hidden inputs or expected values.
    revealing : str
        A pattern of numbers with enough digits to reveal them.
    """

    reference_functions: tuple
    rejecting_groups: tuple = ("validation",)
    quiet_mistakes: tuple
    revealing = r"\d\.\d{4,}"

    #: Where the reference functions live (the second assignment's are in ``autograder.reference.further``).
    reference_module = "autograder.reference"

    def _reference_namespace(self) -> dict:
        import importlib

        reference = importlib.import_module(self.reference_module)
        return {name: getattr(reference, name) for name in self.reference_functions}

    def test_the_reference_gets_full_marks(self):
        assert_full_marks(self.stem, self._reference_namespace())

    def test_rejecting_cases_are_rejected_by_the_reference_too(self):
        functions = self._reference_namespace()
        for case in CHECKS[self.stem].cases(self.rejecting_groups):
            call = case.calls[0]  # a later call is a control on valid input (20's "all of them are named")
            sent = Call.from_json(call.to_json())  # the arguments as the student's function receives them
            with pytest.raises((ValueError, TypeError)):
                functions[sent.target](*sent.args, **sent.kwargs)

    def test_feedback_never_reveals_hidden_inputs(self):
        for label in self.quiet_mistakes:
            text = result_of(self.stem, self.wrong[label][0]).feedback()
            assert not re.search(self.revealing, text), (label, text)
