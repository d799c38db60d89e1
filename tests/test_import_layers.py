"""The import graph of ``autograder`` and ``course``: no cycle, and every import goes down the layers.

The floors are the table of docs/DESIGN.md's "Layers" section, here as data (:data:`FLOORS`). The graph
is read with :mod:`ast` from the source, every ``import`` statement included: module level, inside a
function, under ``if TYPE_CHECKING``. A package's ``__init__`` is a module of its own (``autograder.lms``
is the file ``autograder/lms/__init__.py``). ``from package import name`` is an edge to the package
(its namespace is read) and, when ``name`` is a submodule, to ``package.name`` as well; so a submodule
imports a sibling as ``from .sibling import x``, never ``from . import sibling`` when the package
``__init__`` imports the submodule back. Importing ``package.sub`` also runs ``package/__init__.py`` in
Python; that implied edge is not counted (else every package whose ``__init__`` re-exports would be a
cycle).

``importlib.import_module("a.b")`` and ``__import__("a.b")`` with a literal name are edges too (an
exercise's check that reuses another's misconceptions). A load by a computed name is not: the check
registry loads each exercise's check so, on first use (docs/DESIGN.md, "Layers"), and the misconception
catalogue scans the modules of ``autograder.checks`` so (from floor 6, downwards).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("autograder", "course")

#: ``module prefix -> floor``: a module's floor is that of its longest prefix here. Imports go to the same
#: floor or lower ones, never up. Kept equal to the "Layers" table of docs/DESIGN.md (a test below).
FLOORS = {
    # 0: the student package and the truth.
    "course": 0,
    "autograder.reference": 0,
    # 1: vocabulary every other floor shares.
    "autograder": 1,  # the (empty) top package
    "autograder.limits": 1,
    "autograder.results": 1,
    "autograder.student_ids": 1,
    "autograder.assignment": 1,
    "autograder.channel": 1,
    "autograder.course_settings": 1,
    # 2: the check protocol (its public face for authors: autograder.checks.authoring) and variants.
    "autograder.checks": 2,
    "autograder.variants": 2,
    # 3: the exercises, and the check registry that lists them (the package ``autograder.checks`` itself:
    # its name is fixed by every hidden test cell's ``from autograder.checks import grade``).
    "autograder.exercises": 3,
    "autograder.checks.__init__": 3,
    # 4: feedback pages.
    "autograder.feedback": 4,
    # 5: the grader and the LMS exports.
    "autograder.grading": 5,
    "autograder.lms": 5,
    # 6: what people run.
    "autograder.insight": 6,
    "autograder.demo": 6,
    "autograder.selfstudy": 6,
    "autograder.authoring": 6,
    "autograder.cli": 6,
    "autograder.__main__": 6,
    "autograder.extension": 6,
    "autograder.variant_listing": 6,
    "autograder.roster": 6,
    "autograder.kernel_manager": 6,
    "autograder.course_setup": 6,
}

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict:
    """``module name -> path`` of every module of :data:`PACKAGES` (package ``__init__`` files included)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).parts
            if any(part.startswith(".") or part in {"build", "__pycache__"} or part.endswith(".egg-info")
                   for part in relative):
                continue
            found[_module_name(path)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve(importer: str, path: Path, node, known: dict) -> list:
    """The modules of :data:`PACKAGES` that one import statement imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
        return [_known_prefix(name, known) for name in targets if _known_prefix(name, known)]
    if node.level:
        base = importer.split(".") if _is_package(path) else importer.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        package = ".".join(base + ([node.module] if node.module else []))
    else:
        package = node.module or ""
    # ``from package import name`` reads the package's namespace (its ``__init__`` runs and is asked for
    # ``name`` first): an edge to the package, and to the submodule ``package.name`` when it is one.
    out = [_known_prefix(package, known)] if _known_prefix(package, known) else []
    out += [f"{package}.{alias.name}" for alias in node.names if f"{package}.{alias.name}" in known]
    return out


def _known_prefix(name: str, known: dict) -> str | None:
    parts = name.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def edges() -> dict:
    """``(importer, imported) -> [file:line, ...]`` over every import statement of every module."""
    known = modules()
    found: dict = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _resolve(name, path, node, known)
            elif isinstance(node, ast.Call):
                targets = [_known_prefix(literal, known)] if (literal := _imported_by_name(node)) else []
            else:
                continue
            for target in targets:
                if target is not None and target != name:
                    found.setdefault((name, target), []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _imported_by_name(node: ast.Call) -> str | None:
    """The module ``importlib.import_module("a.b")`` or ``__import__("a.b")`` loads by a literal name."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called in {"import_module", "__import__"} and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def floor(module: str, path: Path | None = None) -> int | None:
    """The floor of ``module`` (its longest prefix in :data:`FLOORS`); a package ``__init__`` may have its
    own entry ``package.__init__``."""
    if path is not None and _is_package(path) and f"{module}.__init__" in FLOORS:
        return FLOORS[f"{module}.__init__"]
    parts = module.split(".")
    while parts:
        if ".".join(parts) in FLOORS:
            return FLOORS[".".join(parts)]
        parts.pop()
    return None


def strongly_connected(graph: dict) -> list:
    """Tarjan's strongly connected components of ``graph`` (``node -> successors``), iteratively."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _graph(found: dict) -> dict:
    graph: dict = {}
    for importer, imported in found:
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    return graph


def cycles(found: dict) -> list:
    return [component for component in strongly_connected(_graph(found)) if len(component) > 1]


def upward(found: dict) -> list:
    """``(importer, imported, floors, places)`` of every edge that goes up a floor."""
    known = modules()
    out = []
    for (importer, imported), places in sorted(found.items()):
        low, high = floor(importer, known[importer]), floor(imported, known[imported])
        if low is not None and high is not None and high > low:
            out.append((importer, imported, (low, high), places))
    return out


# --- the tests --------------------------------------------------------------------------------------------


def test_the_graph_is_read():
    """The reader finds what it must (so the checks below cannot pass on an empty graph)."""
    found = edges()
    assert ("autograder.checks.authoring", "autograder.checks._core") in found
    assert any(importer.startswith("autograder.exercises.") and imported == "autograder.checks.authoring"
               for importer, imported in found)
    # An import inside a function is an edge (the CLI imports the grader lazily).
    assert any(importer == "autograder.cli" and imported.startswith("autograder.grading")
               for importer, imported in found)
    # A load by a literal name is an edge (exercise 30 reuses 21's misconceptions).
    assert ("autograder.exercises.30_asynchronous_rollouts.check",
            "autograder.exercises.21_sampler_trainer_mismatch.check") in found
    # A relative import resolves (each check.py imports its key so).
    assert ("autograder.exercises.01_stop_reasons.check", "autograder.exercises.01_stop_reasons.key") in found


def test_the_floor_check_sees_an_upward_edge():
    """An edge from the truth up to the grader is reported with its place; one down, or sideways, is not."""
    found = {("autograder.reference.kl", "autograder.grading.worker"): ["autograder/reference/kl.py:9"],
             ("autograder.grading.worker", "autograder.reference.kl"): ["autograder/grading/worker.py:3"],
             ("autograder.grading.worker", "autograder.grading.task"): ["autograder/grading/worker.py:4"]}
    assert upward(found) == [("autograder.reference.kl", "autograder.grading.worker", (0, 5),
                              ["autograder/reference/kl.py:9"])]


def test_the_cycle_finder_finds_cycles():
    """Tarjan's components on a small graph: two cycles (one through three modules), a self-contained
    chain, and an edge between the cycles that joins nothing."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert sorted(c for c in strongly_connected(graph) if len(c) > 1) == [["a", "b", "c"], ["d", "e"]]
    found = {("x", "y"): ["x.py:1"], ("y", "x"): ["y.py:2"], ("y", "z"): ["y.py:3"]}
    assert cycles(found) == [["x", "y"]]


def test_every_module_has_a_floor():
    unplaced = sorted(name for name, path in modules().items() if floor(name, path) is None)
    assert not unplaced, f"place these modules on a floor of FLOORS (and docs/DESIGN.md's Layers): {unplaced}"


def test_no_import_cycle():
    """No two modules import each other, however far round (Tarjan's components of more than one module)."""
    found = edges()
    problems = []
    for component in cycles(found):
        members = set(component)
        inside = [f"  {a} -> {b} ({', '.join(found[(a, b)])})" for (a, b) in sorted(found)
                  if a in members and b in members]
        problems.append(f"cycle of {len(component)} modules: {component}\n" + "\n".join(inside))
    assert not problems, ("import cycles (move what both need down, or import a sibling directly):\n"
                          + "\n\n".join(problems))


def test_imports_only_go_down():
    """Every edge goes to the same floor or a lower one."""
    bad = []
    for importer, imported, (low, high), places in upward(edges()):
        bad.append(f"{importer} (floor {low}) imports {imported} (floor {high}) at {', '.join(places)}")
    assert not bad, "imports that go up a floor (docs/DESIGN.md, Layers):\n" + "\n".join(bad)


def test_course_never_imports_autograder():
    """The student package stands alone (also enforced by the packaging tests, here in the graph)."""
    bad = [f"{a} -> {b} ({', '.join(p)})" for (a, b), p in sorted(edges().items())
           if a.split(".")[0] == "course" and b.split(".")[0] == "autograder"]
    assert not bad, bad


def test_floors_match_the_design_document():
    """docs/DESIGN.md's Layers table names the same modules on the same floors as :data:`FLOORS`."""
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in cells[1].split(","):
                documented[name.strip().strip("`")] = int(cells[0])
    assert documented == FLOORS


if __name__ == "__main__":  # a report while moving things: python tests/test_import_layers.py
    found = edges()
    for component in cycles(found):
        print("CYCLE", component)
    for importer, imported, floors, places in upward(found):
        print("UP", floors, importer, "->", imported, places)
    sys.exit(0)
