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
    from tests.nbrun_support import FURTHER_STEMS, STEMS

    assert len(stems) == len(STEMS) + len(FURTHER_STEMS) and sorted(CHECKS) == stems
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


# --------------------------------------------------------------------------- the authoring API


def _check_sources() -> dict:
    from autograder import exercises

    return {stem: (exercises.exercise_dir(stem) / "check.py") for stem in exercises.stems()}


def test_every_check_takes_its_stem_from_its_folder():
    """``STEM = exercise_stem(__name__)``: the folder names the exercise, and no check.py restates it (a copied
    folder cannot keep its model's stem)."""
    import ast

    from autograder.exercises import load_check

    for stem, path in _check_sources().items():
        module = load_check(stem)
        assert module.STEM == module.CHECK.stem == stem, path
        restated = [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.Constant) and node.value == stem]
        assert not restated, (f"{path}: the stem {stem!r} is written out at line(s) {restated}; "
                              "use exercise_stem(__name__)")


def test_a_check_whose_stem_disagrees_with_its_folder_is_refused(monkeypatch):
    """The registry loads a folder's check and refuses it when its stem is another's."""
    from autograder.checks.authoring import ExerciseCheck, Group

    impostor = types.ModuleType("autograder.exercises.98_impostor.check")
    impostor.CHECK = ExerciseCheck("15_stable_log_softmax", [Group("graded", 1, "Graded")], lambda: [])
    monkeypatch.setitem(sys.modules, impostor.__name__, impostor)
    registry = checks._Registry()
    registry._names()["98_impostor"] = impostor.__name__
    with pytest.raises(RuntimeError, match="defines the check of '15_stable_log_softmax', expected '98_impostor'"):
        registry["98_impostor"]


def test_exercise_stem_is_the_folder_of_a_check_module():
    from autograder.checks.authoring import exercise_stem

    assert exercise_stem("autograder.exercises.27_sequence_ratios.check") == "27_sequence_ratios"
    for wrong in ("autograder.exercises.27_sequence_ratios.key", "somewhere.27_sequence_ratios.check", "check", ""):
        with pytest.raises(ValueError, match="exercise_stem"):
            exercise_stem(wrong)


def test_check_modules_import_only_the_authoring_api():
    """A check.py imports ``autograder.checks.authoring``, the reference, the channel, its own key, the student
    package (what the notebook itself uses), NumPy and the standard library: nothing of the framework's
    private modules, nothing above it."""
    import ast

    allowed = ("autograder.checks.authoring", "autograder.reference", "autograder.channel", "course", "numpy")
    for stem, path in _check_sources().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and ((node.module is None and [a.name for a in node.names] == ["key"])
                                            or node.module == "key"), f"{path}:{node.lineno}"
                continue
            if isinstance(node, ast.ImportFrom):
                names = [node.module] if node.module != "autograder" else [f"autograder.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                ok = name.split(".")[0] in sys.stdlib_module_names or any(
                    name == prefix or name.startswith(prefix + ".") for prefix in allowed)
                assert ok, f"{path}:{node.lineno} imports {name}: a check imports autograder.checks.authoring"
