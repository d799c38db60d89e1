"""What an exercise's ``check.py`` imports: the public face of the check framework for authors.

An exercise lives in ``autograder/exercises/NN_slug/`` (see :mod:`autograder.exercises`); its
``check.py`` imports from this module, from :mod:`autograder.reference` (the truth), from
:mod:`autograder.channel` (``Call``, ``Returned``, ``Raised`` and the data types a call may carry), its
own ``key`` (a concept exercise), NumPy and the standard library, and nothing else (the modules
``autograder.checks._*`` behind these names are the framework's own and may change). It defines::

    STEM = exercise_stem(__name__)      # "NN_slug", the folder's name: never written out
    CHECK = ExerciseCheck(STEM, GROUPS, build_cases, CENTRAL, gate=...)

The registry (:data:`autograder.checks.CHECKS`) finds the check by its folder and refuses one whose
``STEM`` differs (``tests/test_checks_registry.py``). The names, by what they are for:

**The check** (one per notebook)

- :func:`exercise_stem` -- the stem of the exercise whose ``check.py`` is the module ``__name__``.
- :class:`ExerciseCheck` -- all the autograded checks of one notebook: ``(stem, groups, build_cases,
  central=None, gate=())``; ``build_cases(variant)`` returns the cases of one student's variant.
- :class:`Group` -- one hidden test cell: its name, points and title; :func:`coding_groups` gives a
  coding exercise's cells in notebook order (open checks, graded, validation).
- :class:`Case` -- one thing to verify: the calls to make and a judge of their outcomes.
- :class:`Central` -- the idea the exercise is about, and the cap on every part when it is missing.
- :class:`Gate` -- points that count only where other hidden cases show the same function works.
- :class:`Verdict`, :data:`PASS`, :class:`Reject` -- what a judge returns (or raises inside a helper).
- :class:`Misconception` -- a classic mistake recognised by its output (``key``, a sentence that teaches
  without revealing data); ``shared`` holds the ones that show in more than one notebook
  (``shared.NO_MAX_SHIFT``, ``shared.KL_DIRECTION``, ...; one key, one sentence wherever they show).

**Judging a coding answer's returned value**

- :func:`value_of` (the returned value, or a rejection saying what went wrong), :func:`field` (of a
  returned object or mapping), :func:`scalar`, :func:`float_array`, :func:`bool_array`,
  :func:`strict_bool_array`, :func:`finite_floats`.
- :func:`close` and :data:`RTOL`, :data:`ATOL` (the float tolerance), :func:`not_correct` (the plain
  failure's words), :func:`expect_close` (close, else the first misconception whose output matches).
- :func:`mistake_outputs`, :func:`mistakes_later`, :func:`mistakes_part` -- misconceptions' outputs
  computed only when a wrong answer asks.
- :func:`judge_floats` (float results, naming float32 and clipping mistakes: :func:`float32_output`,
  :func:`float32_arithmetic`, :func:`clipped_logs`, :data:`FLOAT32_OUTPUT`, :data:`FLOAT32_ARITHMETIC`,
  :data:`CLIPPED_LOG`, :data:`LOG_OF_SOFTMAX`), :func:`log_softmax` (a trusted max-shifted log-softmax for
  building expected values).
- :func:`judge_key`, :func:`judge_array`, :func:`key_difference`, :func:`overflow_named` -- dict and
  array results, and the large-logit overflow cases.
- :func:`error_case`, :func:`expect_error` -- bad input that must raise.

**Reading a concept answer** (a variable the notebook binds)

- :func:`value_case`, :func:`number_case`, :func:`array_case` -- a case that reads a variable.
- :func:`numeric_judge`, :func:`compare_numbers`, :func:`number_matches` -- numbers within the documented
  tolerance, else the misconception whose value they are.
- Readers that refuse a wrong form by name: :func:`number`, :func:`numbers`, :func:`integer`,
  :func:`int_set`, :func:`int_tuple`, :func:`boolean`, :func:`choice`, :func:`choice_set`,
  :func:`sequence`, :func:`entry`; :func:`blank` (not filled in yet), :func:`has_text` (a number in
  quotes), :func:`same` (canonical values equal, else a misconception).

**Random hidden inputs**

- :func:`redraw` -- draw again from the same generator until a case's property holds (seeds come from
  ``variant.seed(constant)``, so each student gets their own hidden inputs).
"""

from __future__ import annotations

import autograder.checks._misconceptions as shared
from autograder.checks._concept_answers import (
    array_case, blank, boolean, choice, choice_set, compare_numbers, entry, has_text, int_set, int_tuple, integer,
    number, number_case, number_matches, numbers, numeric_judge, same, sequence, value_case,
)
from autograder.checks._core import PASS, Case, Central, ExerciseCheck, Gate, Group, Reject, Verdict, coding_groups
from autograder.checks._dict_results import judge_array, judge_key, key_difference, overflow_named
from autograder.checks._float_results import (
    ATOL, CLIPPED_LOG, FLOAT32_ARITHMETIC, FLOAT32_OUTPUT, LOG_OF_SOFTMAX, RTOL, clipped_logs, finite_floats,
    float32_arithmetic, float32_output, judge_floats, log_softmax,
)
from autograder.checks._judge import (
    Misconception, bool_array, close, error_case, expect_close, expect_error, field, float_array, mistake_outputs,
    mistakes_later, mistakes_part, not_correct, scalar, strict_bool_array, value_of,
)
from autograder.checks._redraw import redraw

#: Where exercises live: ``<EXERCISES>.<stem>.check`` is the check module of notebook ``<stem>``.
EXERCISES = "autograder.exercises"


def exercise_stem(module: str) -> str:
    """The stem of the exercise whose ``check.py`` is the module named ``module`` (pass ``__name__``):
    its folder's name, which is the notebook's.

    >>> exercise_stem("autograder.exercises.16_causal_shift.check")
    '16_causal_shift'
    >>> exercise_stem("check")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: exercise_stem(__name__) is called from an exercise's check.py (...), not from 'check'
    """
    package, _, name = str(module).rpartition(".")
    parent, _, stem = package.rpartition(".")
    if name != "check" or parent != EXERCISES or not stem:
        raise ValueError(f"exercise_stem(__name__) is called from an exercise's check.py (module "
                         f"{EXERCISES}.<stem>.check), not from {module!r}")
    return stem


__all__ = [
    "ATOL", "CLIPPED_LOG", "Case", "Central", "ExerciseCheck", "FLOAT32_ARITHMETIC", "FLOAT32_OUTPUT", "Gate",
    "Group", "LOG_OF_SOFTMAX", "Misconception", "PASS", "RTOL", "Reject", "Verdict", "array_case", "blank",
    "bool_array", "boolean", "choice", "choice_set", "clipped_logs", "close", "coding_groups", "compare_numbers",
    "entry", "error_case", "exercise_stem", "expect_close", "expect_error", "field", "finite_floats",
    "float32_arithmetic", "float32_output", "float_array", "has_text", "int_set", "int_tuple", "integer",
    "judge_array", "judge_floats", "judge_key", "key_difference", "log_softmax", "mistake_outputs",
    "mistakes_later", "mistakes_part", "not_correct", "number", "number_case", "number_matches", "numbers",
    "numeric_judge", "overflow_named", "redraw", "same", "scalar", "sequence", "shared", "strict_bool_array",
    "value_case", "value_of",
]
