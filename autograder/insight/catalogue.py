"""Every misconception key the checks can report, with the sentence that teaches it.

A check names a misconception with an :class:`autograder.checks._judge.Misconception`
(``key``, ``sentence``) defined in its exercise's ``check.py``, at module level or inside a
module-level dict, list or tuple. This module collects them, so that the class report can print the
teaching sentence beside a key's count and the design note can list the keys.
"""

from __future__ import annotations

import dataclasses
import importlib

from autograder.checks._judge import Misconception


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
    """One Markdown line per notebook listing its keys (the form docs/DESIGN.md keeps, checked by a test)."""
    by_stem: dict = {}
    for (stem, key) in sorted(catalogue()):
        by_stem.setdefault(stem, []).append(key)
    return "\n".join(f"- `{stem}`: " + ", ".join(f"`{key}`" for key in keys) for stem, keys in by_stem.items())


if __name__ == "__main__":
    import sys

    print(key_lines() if "--keys" in sys.argv else markdown_table())
