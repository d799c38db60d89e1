"""Write (or check) ``course/variants/worked_example.py``: the worked example's answers the open checks know.

The open checks of a notebook whose numbers vary name answers computed from the worked example's
numbers (variant 0, the numbers the task text shows) in a notebook that holds a student's own numbers
(:func:`course.open_checks.not_the_example`). They run in the student's kernel, which holds no key, so
the student package carries those answers itself, and only those:

* variant 0's answers, computed here by each exercise's ``key.answers(seed)`` from the reference: the
  course notes' worked solution, computable by anyone from the numbers every task text shows, and
  graded for nobody (``course.variants.parameters`` never draws the example for an id);
* only the answers that vary: an answer that a class of :data:`CLASS` drawn ids all share with the
  example (a choice of the lesson, a set of claims) is everyone's graded answer and is left out;
* with the numbers each answer depends on (:data:`DEPENDS`; all of the family's by default): an answer
  equal to the example's is named only when the student's numbers differ from the example's there.

``python -m autograder.authoring.worked_example`` writes the module (``make release`` runs it);
``--check`` exits 1 when the committed module is out of date (``tests/test_open_checks_example.py``
checks it too). The output depends on the families and keys alone, so a rerun is byte-identical.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from autograder.assignment import REPO_ROOT
from autograder.checks.authoring import number_matches
from autograder.exercises import answers_for
from course.variants import families

TARGET = REPO_ROOT / "course" / "variants" / "worked_example.py"

#: The ids whose answers decide which of the example's answers vary (fixed: the output is deterministic).
CLASS = tuple(f"worked-example-{i:03d}" for i in range(200))

#: ``stem -> answer -> parameters`` where an answer depends on fewer than all of a family's numbers: a
#: student who shares those numbers with the example shares the answer too, and is not told otherwise.
#: ``"name==0"`` is which entries of the parameter ``name`` are zero (14's problem action is where mu is
#: zero, whatever mu's other masses).
DEPENDS = {
    "06_k3_support": {"weight_mean_example_1": ("p1", "q1")},
    "09_sequence_ppl": {name: ("p",) for name in ("sequence_logprob", "mean_nll", "perplexity")},
    "12_top_p_nucleus": {"nucleus_080": ("p",), "nucleus_081": ("p",)},
    "13_truncation_correction": {"p_tilde": ("z", "p"), "log_p_tilde": ("z", "p"), "log_increase": ("z",),
                                 "ratio_factor": ("z", "n")},
    "14_support_violation": {"problem_action": ("mu==0",)},
}


def _plain(value):
    """A key's value as a Python literal's value: arrays as nested tuples of floats, NumPy scalars as
    Python numbers, sets as frozensets."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist()) if value.ndim else _plain(value.item())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_plain(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def _same(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) or isinstance(b, tuple):
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-5, atol=1e-9, equal_nan=True))
    if isinstance(a, bool) or isinstance(b, bool) or not all(isinstance(v, (int, float)) for v in (a, b)):
        return a == b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return number_matches(a, b)


def examples() -> dict:
    """``stem -> answer name -> {"value", "numbers"}`` of every family's varying answers (variant 0)."""
    out = {}
    for stem, family in sorted(families().items()):
        seed = {name: _plain(value) for name, value in answers_for(stem, None).items()}
        drawn = [{name: _plain(value) for name, value in answers_for(stem, student).items()} for student in CLASS]
        varying = [name for name in seed if any(not _same(answers[name], seed[name]) for answers in drawn)]
        every = tuple(sorted(family.seed))
        out[stem] = {name: {"value": seed[name], "numbers": tuple(DEPENDS.get(stem, {}).get(name, every))}
                     for name in varying}
    return out


def _literal(value) -> str:
    if isinstance(value, float):
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        if math.isnan(value):
            return "math.nan"
        return repr(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(sorted(_literal(v) for v in value)) + "})" if value else "frozenset()"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


HEADER = '''"""The worked example's answers (variant 0) to the questions whose answers vary, and nothing else.

Generated by ``python -m autograder.authoring.worked_example`` (``make release``); do not edit. The open
checks use them to name answers computed from the example's numbers, the numbers every task text shows,
in a notebook that holds a student's own numbers (``course.open_checks.not_the_example``). They are the
course notes' worked solution, and nobody with an id is graded on them (``parameters`` never draws the
example). An answer every variant shares (everyone's graded answer) is never here. ``numbers``: the
parameters an answer depends on.
"""

import math  # noqa: F401  (an infinite answer is written math.inf)

EXAMPLES = {
'''


def render() -> str:
    lines = [HEADER]
    for stem, answers in examples().items():
        lines.append(f"    {stem!r}: {{\n")
        for name, entry in answers.items():
            lines.append(f"        {name!r}: {{\"value\": {_literal(entry['value'])},\n"
                         f"            \"numbers\": {_literal(entry['numbers'])}}},\n")
        lines.append("    },\n")
    lines.append("}\n")
    return "".join(lines)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.authoring.worked_example",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when out of date")
    args = parser.parse_args(argv)
    text = render()
    current = TARGET.read_text(encoding="utf-8") if TARGET.is_file() else None
    if args.check:
        if current != text:
            print(f"{TARGET.relative_to(REPO_ROOT)} is out of date: run python -m autograder.authoring.worked_example",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {TARGET.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
