"""A lazy stand-in for ``rfc3987_syntax`` in the suite's processes (put first on their path by tests/conftest.py).

jsonschema imports ``rfc3987_syntax`` when it is installed (``jsonschema/_format.py``, 4.26.0: ``from
rfc3987_syntax import is_valid_syntax``), and nbformat imports jsonschema: so does every nbgrader and
autograder command, Jupyter server and test worker. ``rfc3987_syntax`` 1.1.0 builds an Earley parser of
RFC 3987's grammar when it is imported (``syntax_helpers.py``: ``syntax_parser = Lark(...)``): 1.5-1.8 s
of CPU in each process, about half of what an ``nbgrader`` command costs before it does any work, and
the suite starts hundreds of them. jsonschema calls it only to check a string of format ``iri`` or
``iri-reference``.

This module has the real package's public functions and loads the real package (the next
``rfc3987_syntax`` on ``sys.path``) the first time one is called, so every answer is the real one; a
process that never checks an IRI never builds the parser. Where no real package is installed, importing
this one fails as importing the real one would, so jsonschema registers no IRI check, as without it.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))
_SPEC = importlib.machinery.PathFinder.find_spec(
    __name__, [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != _HERE])
if _SPEC is None:
    raise ImportError(f"No module named {__name__!r}", name=__name__)

_real = None


def _load():
    """The real package, imported once (its own relative imports need it under its own name)."""
    global _real
    if _real is None:
        stand_in = sys.modules.get(__name__)
        module = importlib.util.module_from_spec(_SPEC)
        sys.modules[__name__] = module
        try:
            _SPEC.loader.exec_module(module)
        except BaseException:
            if stand_in is not None:
                sys.modules[__name__] = stand_in
            raise
        _real = module
    return _real


def is_valid_syntax(term, value):
    return _load().is_valid_syntax(term, value)


def parse(term, value):
    return _load().parse(term, value)


def __getattr__(name):
    if name.startswith("__"):  # the import system asks for __path__ and the like: not a reason to load
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_load(), name)
