"""Hard-coded open-check values earn nothing in any hidden group of any coding notebook (issue 35).

An outside corpus's ``g_hard`` answers returned the open checks' expected values on the open checks'
inputs and something plausible elsewhere, and still earned points (0.66 in 16, 0.5 in 22). Here every
coding notebook with a corpus (``tests/test_checks_exNN_*.py`` whose test class names its reference
functions: 15-28, and 29-30 when they come) gets the same answer, built from its own reference: on each
input of the open checks (the hidden ``public`` group's calls) the reference's value, and elsewhere

* ``zeros``: the reference's value with every number zero and every flag False (the shape right);
* ``constant``: the open check's own value, whatever the input;
* ``perturbed``: the reference's value with every number moved and every flag flipped;

each either returning something on bad input too, or (``-validating``) raising there what the reference
raises, as an answer that copied the task's input rules would. Each must earn 0 points in every hidden
group, graded together and each group on its own (as nbgrader grades each hidden cell).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest

import check_support as support
from autograder.channel import Call
from autograder.checks import CHECKS

ROOT = Path(__file__).resolve().parents[1]


def _coding_classes() -> dict:
    found = {}
    for path in sorted((ROOT / "tests").glob("test_checks_ex*.py")):
        module = importlib.import_module(path.stem)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, support.CodingCheckTests) \
                    and getattr(value, "stem", None) and getattr(value, "reference_functions", None):
                found[value.stem] = value
    return found


CLASSES = _coding_classes()
KINDS = ("zeros", "constant", "perturbed", "zeros-validating", "constant-validating", "perturbed-validating")


def _same(a, b) -> bool:
    """Whether two call arguments are the same plain data (arrays by dtype, shape and values)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape \
            and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return type(a) is type(b) and a == b


def zeroed(value, text: str):
    """``value`` with every number 0 and every flag False (a text becomes ``text``, the open check's)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return np.zeros_like(value) if value.dtype.kind in "biuf" else value
    if isinstance(value, (int, np.integer)):
        return 0
    if isinstance(value, (float, np.floating)):
        return 0.0
    if isinstance(value, str):
        return text
    return _map(value, lambda item: zeroed(item, text))


def perturbed(value):
    """``value`` with every number moved (x -> 1.37 x + 0.11, n -> n + 1) and every flag flipped."""
    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        return ~value if kind == "b" else value + 1 if kind in "iu" else value * 1.37 + 0.11 if kind == "f" else value
    if isinstance(value, (int, np.integer)):
        return value + 1
    if isinstance(value, (float, np.floating)):
        return value * 1.37 + 0.11
    if isinstance(value, str):
        return value + "?"
    return _map(value, perturbed)


def _map(value, change):
    if isinstance(value, dict):
        return {key: change(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(change(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: change(getattr(value, f.name)) for f in dataclasses.fields(value)})
    return value


def hard_coded(stem: str, kind: str) -> dict:
    """The answer: the reference on the open checks' inputs, ``kind`` elsewhere (see the module text)."""
    reference = CLASSES[stem]()._reference_namespace()
    seen = []
    for case in CHECKS[stem].cases(["public"]):
        for call in case.calls:
            if not call.read_only:
                sent = Call.from_json(call.to_json())  # the arguments as the student's function receives them
                seen.append((sent.target, sent.args, sent.kwargs))
    canned = {}
    for target, args, kwargs in seen:
        if target not in canned:
            try:
                canned[target] = reference[target](*copy.deepcopy(args), **copy.deepcopy(kwargs))
            except Exception:  # noqa: BLE001 - an open check that expects an error has no value to repeat
                pass
    texts = [value for value in canned.values() if isinstance(value, str)]
    base, validating = kind.removesuffix("-validating"), kind.endswith("-validating")

    def make(name):
        def answer(*args, **kwargs):
            for target, known_args, known_kwargs in seen:
                if target == name and len(args) == len(known_args) and kwargs.keys() == known_kwargs.keys() \
                        and all(_same(a, b) for a, b in zip(args, known_args)) \
                        and all(_same(kwargs[key], known_kwargs[key]) for key in kwargs):
                    return reference[name](*args, **kwargs)
            try:
                value = reference[name](*args, **kwargs)
            except Exception:
                if validating:
                    raise
                value = canned.get(name)
            if base == "constant":
                return canned.get(name)
            return zeroed(value, texts[0] if texts else "") if base == "zeros" else perturbed(value)
        answer.__name__ = name
        return answer

    return {name: make(name) for name in reference}


def test_every_coding_notebook_has_its_reference_named():
    from autograder.assignment import ASSIGNMENTS, notebook_stems
    coding = {stem for assignment in ASSIGNMENTS for stem in notebook_stems(assignment=assignment)
              if int(stem[:2]) >= 15}
    assert coding <= set(CLASSES), sorted(coding - set(CLASSES))


@pytest.mark.parametrize("stem", sorted(CLASSES))
def test_hard_coded_open_checks_earn_nothing_in_any_hidden_group(stem):
    from autograder.checks._core import judge_cases, perform_cases

    check = CHECKS[stem]
    earned = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the junk overflows, divides by zero: what it prints is not judged
        for kind in KINDS:
            # Every case's calls once; then judged as the whole check and as each hidden cell on its own
            # (as nbgrader grades each cell: its cases, the central and gate cases it carries).
            outcomes = perform_cases(check.cases(), hard_coded(stem, kind))
            together = judge_cases(check, outcomes)
            earned.update({(kind, group.name): group.points_earned for group in together.groups if group.points_earned})
            for group in check.groups:
                alone = judge_cases(check, outcomes, [group.name])
                if alone.points_earned:
                    earned[(kind, group.name, "alone")] = alone.points_earned
    assert not earned, earned


@pytest.mark.parametrize("stem", sorted(CLASSES))
def test_the_hard_coded_answer_does_pass_the_open_checks(stem):
    """The answer is what it claims: the open-check group's cases pass before any gate decides."""
    from autograder.checks._core import _safe_judge, perform_cases

    cases = CHECKS[stem].cases(["public"])
    outcomes = perform_cases(cases, hard_coded(stem, "zeros"))
    failed = [case.name for case in cases if not _safe_judge(case, outcomes[case.name]).passed]
    assert not failed, failed
