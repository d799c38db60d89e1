"""Every misconception key the checks can report, with the sentence that teaches it.

A check names a misconception with an :class:`autograder.checks.authoring.Misconception`
(``key``, ``sentence``) defined in its exercise's ``check.py``, at module level or inside a
module-level dict, list or tuple, or in a module of the check framework (``autograder/checks/``:
:func:`shared`), whose helpers report some keys for every exercise that uses them
(``silent-bad-input``, ``value-error-expected``, ``float32-arithmetic``, ...) without the exercise's
module naming them. This module collects both, so that the class report can print the teaching
sentence beside a key's count (:func:`sentence_of`: the exercise's own sentence first, then the
framework's) and the design note can list the keys.
"""

from __future__ import annotations

import dataclasses
import importlib

from autograder.checks.authoring import Misconception


@dataclasses.dataclass(frozen=True)
class Entry:
    """One misconception of one notebook."""

    stem: str
    key: str
    sentence: str


def _found(value, depth: int = 0):
    if isinstance(value, Misconception):
        yield value
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _found(item, depth + 1)
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _found(item, depth + 1)


def of_notebook(stem: str) -> tuple:
    """The :class:`Entry` of each key ``stem``'s check defines, in order of definition, once each."""
    from autograder import exercises

    exercises.exercise_dir(stem)  # a clear KeyError for an unknown stem
    module = importlib.import_module(f"{exercises.__name__}.{stem}.check")
    seen: dict = {}
    for value in vars(module).values():
        for item in _found(value):
            seen.setdefault(item.key, Entry(stem, item.key, item.sentence))
    return tuple(seen.values())


def shared() -> dict:
    """``key -> Entry`` (stem "") of every Misconception a module of the check framework defines."""
    import pkgutil

    from autograder import checks

    out: dict = {}
    for info in sorted(pkgutil.iter_modules(checks.__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{checks.__name__}.{info.name}")
        for value in vars(module).values():
            for item in _found(value):
                out.setdefault(item.key, Entry("", item.key, item.sentence))
    return out


def sentence_of(stem: str, key: str, entries: dict | None = None, framework: dict | None = None) -> str:
    """The sentence ``stem``'s check teaches for ``key``: its own, else the check framework's; "" if none.

    ``entries`` (:func:`catalogue`) and ``framework`` (:func:`shared`) may be passed to look many up.
    """
    entries = catalogue([stem]) if entries is None and _is_stem(stem) else (entries or {})
    own = entries.get((stem, key))
    if own is not None:
        return own.sentence
    found = (shared() if framework is None else framework).get(key)
    return found.sentence if found is not None else ""


def _is_stem(stem: str) -> bool:
    from autograder import exercises
    return stem in exercises.stems()


def catalogue(stems=None) -> dict:
    """``(stem, key) -> Entry`` for every exercise (or only ``stems``)."""
    from autograder import exercises

    out: dict = {}
    for stem in exercises.stems() if stems is None else stems:
        for entry in of_notebook(stem):
            out[(stem, entry.key)] = entry
    return out


def markdown_table() -> str:
    """The keys as a Markdown table (notebook, key, what it teaches), for docs/DESIGN.md."""
    lines = ["| notebook | key | what the student is told |", "|---|---|---|"]
    for (stem, key), entry in sorted(catalogue().items()):
        lines.append(f"| {stem[:2]} | `{key}` | {entry.sentence.replace('|', '/')} |")
    return "\n".join(lines)


def key_lines() -> str:
    """One Markdown line per notebook listing its keys, then one for the check framework's (the form
    docs/DESIGN.md keeps, checked by a test)."""
    by_stem: dict = {}
    for (stem, key) in sorted(catalogue()):
        by_stem.setdefault(stem, []).append(key)
    lines = [f"- `{stem}`: " + ", ".join(f"`{key}`" for key in keys) for stem, keys in by_stem.items()]
    lines.append("- `autograder/checks/` (the check framework: any notebook whose check uses it): "
                 + ", ".join(f"`{key}`" for key in sorted(shared())))
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(key_lines() if "--keys" in sys.argv else markdown_table())
