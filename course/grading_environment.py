"""What graded code may import, checked at the student's desk before the work is submitted.

When a notebook is graded, its answer cells run where only the Python standard library, NumPy and
this package (``course``) are promised. A package that works on the student's own machine (SciPy,
say) may not be there, and the answer that relies on it then fails as a whole. The open check cells
call :func:`check_imports` first, so the student hears it at the desk, in the check's output, and
nbgrader's Validate reports that cell as failing.

What is looked at (nothing here knows any answer):

* the code this kernel has run (IPython's input history ``In``): ``import x``, ``from x import y``,
  and ``__import__("x")`` / ``importlib.import_module("x")`` with a literal name;
* the names the notebook has defined: a module bound to a name, or a function, class or value that
  comes from a module (``from scipy.special import log_softmax`` binds a function of ``scipy``);
* the compiled code of the functions and classes the notebook defines, nested ones included: an
  import statement inside a function body, and ``import_module("x")`` / ``__import__("x")`` called
  with a literal name (found even when the input history is missing or was cleared).

The kernel remembers what it has run, so an import that was deleted from a cell is still reported
until the kernel is restarted; the message says so.
"""

from __future__ import annotations

import ast
import dataclasses
import dis
import sys
import types

from course._sentence import Sentence

#: Third-party top-level packages graded code may import, besides the standard library. ``IPython``
#: is the shell that runs every notebook, at the desk and when graded (``display`` comes from it).
ALLOWED_PACKAGES = frozenset({"numpy", "course", "IPython"})

#: What the notebooks tell students, in the same words as this module's messages.
RULE = "the Python standard library, NumPy and `course`"

#: Names IPython itself puts into a notebook's namespace (not the student's doing).
_SHELL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})

#: nbgrader's marker of hidden tests: such a cell is the instructor's (in a source notebook), and no
#: released notebook holds one (nbgrader removes the region), so its imports are never the student's.
HIDDEN_TESTS_MARK = "### BEGIN HIDDEN TESTS"

#: Cells longer than this are not parsed (a pasted data blob holds no import worth the time).
_MAX_CELL_CHARS = 200_000

#: Code objects read per check: a notebook defines tens of functions; a bound keeps a hostile
#: namespace (thousands of generated functions) from making the check slow.
_MAX_CODE_OBJECTS = 5_000

#: Instructions that only set up a call between loading ``import_module`` and its first argument.
_CALL_SETUP = frozenset({"PUSH_NULL", "NOP", "CACHE", "EXTENDED_ARG"})


@dataclasses.dataclass(frozen=True)
class UnavailableImport:
    """One package the notebook uses that graded code may not import."""

    package: str  # the top-level package, e.g. "scipy"
    evidence: str  # where it was seen: "import scipy.special", "name 'log_softmax'"


class UnavailableImportError(Sentence, ImportError):
    """Raised at the desk when the notebook's code uses a package the grader will not have (IPython
    shows its sentences alone, not this module's frames: :mod:`course._sentence`)."""

    label = "UnavailableImportError"

    def __init__(self, found: tuple):
        self.found = tuple(found)
        super().__init__(message(self.found))


def is_allowed(module_name: str) -> bool:
    """Whether ``module_name`` (``"scipy.special"``, ``"math"``) is importable by graded code."""
    if not isinstance(module_name, str) or not module_name:
        return True  # nothing nameable: not the student's import
    top = module_name.split(".", 1)[0]
    return top in ALLOWED_PACKAGES or top in sys.stdlib_module_names or top in ("__main__", "builtins")


def _literal_name(node: ast.AST):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def imports_in_source(source: str) -> list:
    """``[(module, statement)]`` for every absolute import written in ``source`` (unparsable code: none)."""
    if not isinstance(source, str) or len(source) > _MAX_CELL_CHARS:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, f"import {alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            name = _literal_name(node.args[0])
            if called in ("__import__", "import_module") and name:
                found.append((name, f"{called}({name!r})"))
    return found


def _bound_names(source: str) -> set:
    """The names the import statements of ``source`` bind (``grade`` for ``from x import grade``)."""
    if len(source) > _MAX_CELL_CHARS:
        return set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {(alias.asname or alias.name).split(".", 1)[0] for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}


def _own_code(value, own: str) -> list:
    """The code objects of a function or class the notebook defines (its methods too), else none."""
    try:
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            return [code for part in (value.fget, value.fset, value.fdel) for code in _own_code(part, own)]
        if isinstance(value, types.FunctionType):
            if types.FunctionType.__dict__["__module__"].__get__(value) != own:
                return []  # a function of an imported module: its origin is judged by _origin
            return [types.FunctionType.__dict__["__code__"].__get__(value)]
        if isinstance(value, type) and type.__dict__["__module__"].__get__(value) == own:
            return [code for member in type.__dict__["__dict__"].__get__(value).values()
                    if not isinstance(member, type) for code in _own_code(member, own)]
    except Exception:  # a hostile or unusual object: it tells us nothing
        return []
    return []


def _where(code: types.CodeType) -> str:
    name = getattr(code, "co_qualname", code.co_name)  # Python 3.11+: "C.m.<locals>.inner"
    return f"the code of {name}"


def imports_in_code(code: types.CodeType) -> list:
    """``[(module, statement)]`` for every import ``code`` (and the code nested in it) performs: the
    ``IMPORT_NAME`` instructions, and ``import_module`` / ``__import__`` loaded just before a literal
    string argument. Reading bytecode finds what the source in the history may no longer show."""
    found, pending, seen = [], [code], 0
    while pending and seen < _MAX_CODE_OBJECTS:
        current = pending.pop()
        seen += 1
        pending += [const for const in current.co_consts if isinstance(const, types.CodeType)]
        importer = None  # "import_module" or "__import__" just loaded, awaiting its argument
        for instruction in dis.get_instructions(current):
            if instruction.opname == "IMPORT_NAME" and isinstance(instruction.argval, str):
                found.append((instruction.argval, f"import {instruction.argval} in {_where(current)}"))
            elif instruction.argval in ("import_module", "__import__") and instruction.opname.startswith("LOAD"):
                importer = instruction.argval
                continue
            elif importer and instruction.opname in _CALL_SETUP:
                continue
            elif importer and instruction.opname == "LOAD_CONST" and isinstance(instruction.argval, str):
                found.append((instruction.argval, f"{importer}({instruction.argval!r}) in {_where(current)}"))
            importer = None
    return found


def _origin(value) -> str | None:
    """The module a value comes from, without running anything the value could have overridden."""
    if isinstance(value, types.ModuleType):
        name = value.__dict__.get("__name__")
        return name if isinstance(name, str) else None
    try:
        # Looked up on the type for instances (a DataFrame's class), on the object for functions and
        # classes; never through a __getattr__ the object defines.
        owner = value if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)) else type(value)
        name = type.__getattribute__(owner, "__module__") if isinstance(owner, type) else owner.__module__
    except Exception:  # a hostile or unusual object: it tells us nothing
        return None
    return name if isinstance(name, str) else None


def unavailable_imports(namespace: dict, provided: tuple = ()) -> tuple:
    """The packages ``namespace`` (a notebook's ``globals()``) uses that graded code may not import.

    ``provided`` names top-level packages that the notebook's own flavour imports for the student (the
    self-study notebooks' check cells import ``autograder``), which are therefore not the student's.
    Returns :class:`UnavailableImport` records, one per package (the first evidence seen), in the
    order found: the kernel's input history first, then the namespace's names.
    """
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be the notebook's globals() (a dict), got {type(namespace).__name__}")
    if isinstance(provided, str) or not all(isinstance(p, str) for p in provided):
        raise TypeError(f"provided must be a tuple of package names, got {provided!r}")
    found: dict = {}
    own = namespace.get("__name__", "__main__")  # functions the notebook defines come from its own module
    history = namespace.get("In")
    instructors = set()  # names bound by the instructor's hidden tests (source notebooks only)
    if isinstance(history, list):
        for source in history:
            if isinstance(source, str) and HIDDEN_TESTS_MARK in source:
                instructors |= _bound_names(source)
                continue
            for module, statement in imports_in_source(source):
                if not is_allowed(module) and module.split(".", 1)[0] not in provided:
                    found.setdefault(module.split(".", 1)[0], statement)
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or name in _SHELL_NAMES or name in instructors:
            continue
        for code in _own_code(value, own):
            for module, statement in imports_in_code(code):
                if not is_allowed(module) and module.split(".", 1)[0] not in provided:
                    found.setdefault(module.split(".", 1)[0], statement)
        module = _origin(value)
        if module is None or module == own or is_allowed(module) or module.split(".", 1)[0] in provided:
            continue
        found.setdefault(module.split(".", 1)[0], f"the name {name!r}")
    return tuple(UnavailableImport(package, evidence) for package, evidence in found.items())


def message(found: tuple) -> str:
    """What the student is told about ``found`` (one sentence per package, then what to do)."""
    lines = [f"`{item.package}` is not available when your work is graded (seen in: {item.evidence})."
             for item in found]
    lines.append(f"Graded code may import {RULE} only: rewrite that part with NumPy. "
                 "If you have already removed the import, restart the kernel and run all cells again "
                 "(the kernel remembers code it has run).")
    return "\n".join(lines)


def check_imports(namespace: dict, provided: tuple = ()) -> None:
    """Raise :class:`UnavailableImportError` naming every package the grader will not have; else nothing."""
    found = unavailable_imports(namespace, provided)
    if found:
        raise UnavailableImportError(found)


__all__ = ["ALLOWED_PACKAGES", "RULE", "UnavailableImport", "UnavailableImportError", "check_imports",
           "imports_in_code", "imports_in_source", "is_allowed", "message", "unavailable_imports"]
