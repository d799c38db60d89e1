"""One home for limits (issue 37): every bound of the grader is a row of ``autograder.limits.TABLE``.

Fails when a bound is defined anywhere else in ``autograder/`` (a module-level numeric constant named
like a bound, or a dict of them), when a help string restates a default as a number, when a row has no
unit or no one-line why, and when ``autograder grade --help`` does not show the table's values.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autograder import limits
from autograder.limits import Limit

PACKAGE = Path(limits.__file__).resolve().parent

#: A module-level name that says "bound": MAX_..., or ..._BYTES, ..._SECONDS, ..._CHARS and the like.
BOUND_NAME = re.compile(r"^MAX_|_(BYTES|SECONDS|CHARS|TOKENS|ENTRIES|ROWS|DAYS|TIMEOUT|LIMITS?|MAX|CELLS|FORMULAS|COST|"
                        r"NODES|IMAGES|DEPTH|LENGTH|ITEMS|MB|KB|SIZE|ATTEMPTS|WINDOW|ELEMENTS|DIGITS|FRAME)$")

#: Files that keep their own bounds, and why (each named in autograder/limits.py's docstring).
OWN_BOUNDS = {
    "limits.py": "the table itself",
    # Copied into the sandbox alone, where ``autograder`` cannot be imported (sandbox.py, CHANNEL/HARNESS):
    "channel.py": "the codec, copied into the sandbox as the harness' codec",
    "grading/harness.py": "the harness, run in the sandbox from its own file",
}

#: Module-level numbers whose names look like bounds but that are not limits an instructor or an input hits.
NOT_LIMITS = {
    ("feedback/markdown.py", "_SYNTAX_COST"): "a weight of markdown_cost, not a budget",
    ("reference/_special.py", "_SERIES_LIMIT"): "where a series expansion switches formula (numerics)",
    ("selfstudy/checking.py", "_FINGERPRINT_DEPTH"): "how deep a self-study answer's fingerprint looks",
    ("selfstudy/practice.py", "_MAX_SKIPS"): "a family bug detector (a draw repeating the numbers shown)",
    ("reference/causal.py", "_CHUNK_ELEMENTS"): "rows per chunk of a reference computation (memory tuning)",
    ("insight/similarity.py", "MIN_TOKENS"): "the similarity tool's threshold: shorter cells say nothing",
    ("insight/similarity.py", "MIN_TEXT_TOKENS"): "the same threshold for written answers",
    ("grading/batch.py", "COMMIT_SECONDS"): "gradebook commit cadence (throughput tuning)",
    ("grading/batch.py", "COMMIT_CHARS"): "gradebook commit cadence (throughput tuning)",
    ("grading/batch.py", "HEAVY_BYTES"): "scheduling: heavy submissions are graded last",
    ("grading/batch.py", "MAX_ATTEMPTS"): "retries of a notebook the grader itself failed",
    ("grading/batch.py", "DASK_WINDOW"): "submissions in flight on a Dask cluster (throughput tuning)",
}

#: A help text that restates a default as a number: "default 60", "default: 1024", "default 0.8".
RESTATED_DEFAULT = re.compile(r"\bdefault:?\s+[0-9]")
#: Help texts that state another system's default, not one of the kit's (file, words of the text).
OTHERS_DEFAULTS = {
    ("lms/base.py", "(default 100, a new grade item's maximum)"): "Moodle's maximum for a new grade item",
}


def _python_files():
    return sorted(PACKAGE.rglob("*.py"))


def _numeric(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.Dict):
        return any(value is not None and _numeric(value) for value in node.values)
    return False


def _module_bounds(tree) -> list:
    """``(name, line)`` of the module-level numeric constants (or dicts of numbers) named like a bound."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        pairs = []
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                pairs += zip(target.elts, value.elts)  # A_MAX, B_MAX = 8, 3 * 1024
            else:
                pairs.append((target, value))
        for target, assigned in pairs:
            if isinstance(target, ast.Name) and BOUND_NAME.search(target.id.lstrip("_")) and _numeric(assigned):
                found.append((target.id, node.lineno))
    return found


def test_no_bound_is_defined_outside_the_table():
    defined = []
    for path in _python_files():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in OWN_BOUNDS:
            continue
        for name, line in _module_bounds(ast.parse(path.read_text(encoding="utf-8"))):
            if (relative, name) not in NOT_LIMITS:
                defined.append(f"autograder/{relative}:{line} {name}")
    assert not defined, "bounds defined outside autograder/limits.py (make them rows of its TABLE):\n" + "\n".join(defined)


def test_the_scan_finds_a_bound_and_a_limits_dict():
    """The scan above is not vacuous: it finds the shapes the grader's bounds used to have."""
    tree = ast.parse("PAGE_BYTES = 3_500_000\nDEFAULT_LIMITS = {'wall_seconds': 60}\nMAX_DAYS = 366\n"
                     "TIMEOUT_SECONDS: float = 2 * 30.0\nNAME = 'x'\nSTUDENT_PAGE = Limit('a', 1, 'b', 'c')\n"
                     "MAX_FIGURES, MAX_FIGURE_CHARS = 8, 3 * 1024 * 1024\n")
    assert [name for name, _ in _module_bounds(tree)] == ["PAGE_BYTES", "DEFAULT_LIMITS", "MAX_DAYS", "TIMEOUT_SECONDS",
                                                          "MAX_FIGURES", "MAX_FIGURE_CHARS"]


def test_the_exemptions_are_still_needed():
    """Every exemption names a constant that exists: a stale one would hide a new bound of the same name."""
    for (relative, name), _ in NOT_LIMITS.items():
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        assert name in [found for found, _ in _module_bounds(tree)], (relative, name)
    for relative in OWN_BOUNDS:
        assert (PACKAGE / relative).is_file(), relative
        if relative != "limits.py":  # the docstring of the table names every file that keeps its own bounds
            assert f"autograder/{relative}" in limits.__doc__, relative


def _help_texts(tree):
    """``(line, literal text)`` of every ``help=`` keyword (argparse arguments, traitlets traits)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "help":
                    parts = [keyword.value] if not isinstance(keyword.value, ast.JoinedStr) else keyword.value.values
                    pieces = [ast.literal_eval(part) for part in parts if isinstance(part, ast.Constant)]
                    # Implicitly joined literals, or literals joined by +, are one string constant or a BinOp.
                    if isinstance(keyword.value, ast.BinOp):
                        pieces = [sub.value for sub in ast.walk(keyword.value)
                                  if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]
                    yield node.lineno, " ".join(str(piece) for piece in pieces)


def test_no_help_text_restates_a_default_as_a_number():
    restated = []
    for path in _python_files():
        for line, text in _help_texts(ast.parse(path.read_text(encoding="utf-8"))):
            relative = path.relative_to(PACKAGE).as_posix()
            if any(relative == where and words in text for where, words in OTHERS_DEFAULTS):
                continue
            if RESTATED_DEFAULT.search(text):
                restated.append(f"autograder/{path.relative_to(PACKAGE).as_posix()}:{line}: {text!r}")
    assert not restated, "help texts that restate a default (format it from autograder.limits):\n" + "\n".join(restated)


def test_the_help_scan_sees_a_restated_default():
    tree = ast.parse('p.add_argument("--t", help="seconds (default 60)")\n'
                     'Float(None, help="memory " "(default: 1024)")\n'
                     'p.add_argument("--m", help=f"memory (default {MEMORY_MB.value})")\n')
    assert [bool(RESTATED_DEFAULT.search(text)) for _, text in _help_texts(tree)] == [True, True, False]


def _restated_job_defaults(tree) -> list:
    """``limits.get("wall_seconds", 60)``: a job limit's name read with a number as its fallback."""
    names = {limit.name for limit in limits.SANDBOX_JOB + limits.FILE} | {"decoded_elements"}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) and node.args[0].value in names
            and _numeric(node.args[1])]


def test_no_job_limit_is_read_with_a_number_as_its_default():
    restated = [f"autograder/{path.relative_to(PACKAGE).as_posix()}:{line}" for path in _python_files()
                if path.relative_to(PACKAGE).as_posix() not in OWN_BOUNDS
                for line in _restated_job_defaults(ast.parse(path.read_text(encoding="utf-8")))]
    assert not restated, "a job limit's default restated (read it from autograder.limits):\n" + "\n".join(restated)
    assert _restated_job_defaults(ast.parse('limits.get("wall_seconds", 60)\nlimits.get("wall_seconds", W.value)')) == [1]


def test_every_limit_has_a_unit_a_one_line_why_and_one_name():
    assert len(limits.TABLE) >= 40
    names = [limit.name for limit in limits.TABLE]
    assert len(names) == len(set(names)), "a limit named twice"
    defined = {name: value for name, value in vars(limits).items() if isinstance(value, Limit)}
    assert set(defined.values()) <= set(limits.TABLE) and len(defined) == len(limits.TABLE)
    for constant, limit in defined.items():
        assert constant == limit.name.upper(), (constant, limit.name)
        assert isinstance(limit.value, (int, float)) and not isinstance(limit.value, bool) and limit.value > 0, limit
        assert limit.unit.strip() == limit.unit and limit.unit, limit
        assert limit.why.strip() == limit.why and 20 <= len(limit.why) <= 160 and "\n" not in limit.why, limit
    assert set(limits.SANDBOX_JOB + limits.FILE) <= set(limits.TABLE)


def test_a_limit_is_frozen_and_the_job_is_fresh():
    with pytest.raises(AttributeError):
        limits.WALL_SECONDS.value = 1
    made = limits.job()
    made["wall_seconds"] = 1
    assert limits.job()["wall_seconds"] == limits.WALL_SECONDS.value
    assert limits.job(cells=5)["cells"] == 5
    with pytest.raises(KeyError, match="wal_seconds"):
        limits.job(wal_seconds=5)


def test_the_grader_and_the_intake_read_the_table():
    from autograder.channel import MAX_DECODED_ELEMENTS
    from autograder.grading import intake
    from autograder.grading.task import default_limits, limits_for

    assert default_limits() == dict(limits.job(), decoded_elements=MAX_DECODED_ELEMENTS)
    assert limits_for(5, 512)["wall_seconds"] == 5 and limits_for(5, 512)["memory_mb"] == 512
    too_many = limits.NOTEBOOK_BYTES.value + 1
    with pytest.raises(intake.Refused, match=f"larger than {limits.NOTEBOOK_BYTES.value} bytes"):
        intake.check_text(b" " * too_many)


def test_the_trusted_side_takes_what_the_harness_may_send():
    """The harness (which keeps its own bounds in the sandbox) sends no more figures, nor larger, than the
    coordinator takes on receipt."""
    import base64

    from autograder.grading import harness

    assert harness.FIGURES_PER_CELL <= limits.REPLY_FIGURES.value
    assert len(base64.b64encode(b"\0" * harness.FIGURE_BYTES)) <= limits.REPLY_FIGURE_CHARS.value


def test_the_two_page_budgets_are_two_limits():
    """The grader's page and nbconvert's pages give the student's code and outputs different room (nbconvert's
    markup per cell is heavier); both keep a page under 5 MB (benchmarks/README.md, ``--highlight``)."""
    assert limits.NBCONVERT_PAGE_STUDENT_BYTES.value < limits.GRADER_PAGE_STUDENT_BYTES.value < 5_000_000


def test_the_student_package_takes_the_same_longest_id():
    """``course`` never imports ``autograder``: the table reads the student package's longest id, and the
    student package's own check takes exactly that many characters."""
    from course import variants

    longest = "a" * limits.STUDENT_ID_CHARS.value
    assert variants.check_id_form(longest) == longest
    with pytest.raises(variants.StudentIdError):
        variants.check_id_form(longest + "a")


def test_grade_help_shows_the_table(capsys):
    from autograder.cli import main

    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"seconds per notebook (default {limits.WALL_SECONDS.value:g};" in shown
    assert f"memory per sandboxed process (default {limits.MEMORY_MB.value})" in shown
    for limit in limits.SANDBOX_JOB + limits.FILE:
        assert f"{limit.name} {limit.shown()} {limit.why}" in shown, limit.name


def test_the_nbgrader_traits_show_the_table():
    from autograder.grading.nbgrader_bridge import SandboxedGrade

    traits = SandboxedGrade.class_traits()
    assert f"default {limits.WALL_SECONDS.value:g}" in traits["timeout"].help
    assert f"default {limits.MEMORY_MB.value}" in " ".join(traits["memory_mb"].help.split())


def test_the_tables_doctests():
    """``autograder/limits.py`` is outside pytest's doctest paths: its examples run here."""
    import doctest

    result = doctest.testmod(limits, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0
