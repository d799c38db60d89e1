"""The check registry: every notebook has its check, and each check loads on its own."""

from __future__ import annotations

import sys
import types

import pytest

from autograder import checks
from autograder.checks import CHECKS


def test_each_notebook_of_each_assignment_has_a_check_named_after_it():
    from autograder.assignment import ASSIGNMENTS, TOTAL_POINTS, notebook_stems

    stems = sorted(stem for assignment in ASSIGNMENTS for stem in notebook_stems(assignment=assignment))
    # 20 notebooks in the first assignment; the second's are worth 10 points each
    assert len(stems) == 20 + TOTAL_POINTS["module6_further"] // 10 and sorted(CHECKS) == stems
    for stem in CHECKS:
        assert CHECKS[stem].stem == stem


def test_a_broken_check_module_costs_only_its_own_notebook(monkeypatch):
    broken = types.ModuleType("autograder.exercises.99_broken.check")
    monkeypatch.setitem(sys.modules, "autograder.exercises.99_broken.check", broken)  # no CHECK: an import-time failure
    registry = checks._Registry()
    registry._names()["99_broken"] = "autograder.exercises.99_broken.check"
    with pytest.raises(AttributeError):
        registry["99_broken"]
    assert registry["15_stable_log_softmax"].stem == "15_stable_log_softmax"
    loaded = [name for name in sys.modules if name.startswith("autograder.exercises.")]
    assert "autograder.exercises.15_stable_log_softmax.check" in loaded


def test_unknown_notebooks_are_named_in_the_error():
    with pytest.raises(KeyError, match="99_nothing"):
        CHECKS["99_nothing"]


def test_one_misconception_one_message_in_every_notebook():
    """A key names one mistake with one sentence wherever it shows, in both assignments (shared ones live
    in autograder.checks._misconceptions), and two different keys never share a sentence."""
    import importlib

    from autograder.assignment import ASSIGNMENTS, notebook_stems
    from autograder.checks import _float_results, _misconceptions
    from autograder.checks._judge import Misconception

    modules = [_float_results, _misconceptions]
    modules += [importlib.import_module(f"autograder.exercises.{stem}.check")
                for assignment in ASSIGNMENTS for stem in notebook_stems(assignment=assignment)]
    sentences: dict = {}
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, Misconception):
                sentences.setdefault(value.key, set()).add(value.sentence)
    assert len(sentences) > 100
    assert "ratio-overflow" in sentences  # a key only exercise 22 names: the second assignment is read
    assert {key: found for key, found in sentences.items() if len(found) > 1} == {}
    keys_of: dict = {}
    for key, found in sentences.items():
        for sentence in found:
            keys_of.setdefault(sentence, set()).add(key)
    assert {sentence: keys for sentence, keys in keys_of.items() if len(keys) > 1} == {}


def test_coding_groups_put_the_open_checks_first_and_validation_last():
    from autograder.checks._core import OPEN_CHECKS, PUBLIC, VALIDATION, Group, coding_groups

    groups = coding_groups(1, Group("values", 3, "Values"), validation=(2, "Rejects bad input"))
    assert [(g.name, g.points, g.title) for g in groups] == [
        (PUBLIC, 1, OPEN_CHECKS), ("values", 3, "Values"), (VALIDATION, 2, "Rejects bad input")]
    assert coding_groups((2, "The open check: one row"), validation=(1, "v"))[0].title == "The open check: one row"
    with pytest.raises(ValueError, match="names of their own"):
        coding_groups(1, Group("public", 3, "again"), validation=(1, "v"))
    with pytest.raises(ValueError, match="names of their own"):
        coding_groups(1, ("values", 3, "not a Group"), validation=(1, "v"))
