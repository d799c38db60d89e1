"""No function over 100 lines outside the tests (issue 37): a long function is read as its stages.

Every ``def`` (methods and nested functions included) of the Python files under the folders below is
measured from its ``def`` line to its last line, with the standard library's ``ast``; one over the limit
fails this test by name. Split such a function by what its parts are about, not by line counts.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The folders whose code is measured (everything outside ``tests/`` that is ours).
FOLDERS = ("autograder", "course", "tools", "deploy", "benchmarks")

#: The most lines a function may take.
LIMIT = 100

def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


@functools.cache
def long_functions(root: Path = ROOT, limit: int = LIMIT) -> dict:
    """``"path:qualified name" -> lines`` of every function over ``limit`` lines under :data:`FOLDERS`."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if ".venv" in path.parts or "node_modules" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, node in _functions(tree):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found[f"{path.relative_to(root).as_posix()}:{name}"] = lines
    return found


def test_no_function_outside_the_tests_is_over_100_lines():
    over = long_functions()
    assert not over, "functions over 100 lines (split each by what its parts are about): " + ", ".join(
        f"{name} ({lines} lines)" for name, lines in sorted(over.items()))


def test_the_measure_sees_a_long_function(tmp_path):
    """The walk finds a long method in a nested folder, and a function of exactly the limit passes."""
    (tmp_path / "autograder" / "deep").mkdir(parents=True)
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "autograder" / "deep" / "mod.py").write_text(
        f"class Holder:\n    def long(self):\n{body}\n\n\ndef short():\n" + "\n".join(f"    y{i} = {i}" for i in range(LIMIT - 1)) + "\n")
    for folder in FOLDERS[1:]:
        (tmp_path / folder).mkdir()
    assert long_functions(tmp_path) == {"autograder/deep/mod.py:Holder.long": LIMIT + 1}
