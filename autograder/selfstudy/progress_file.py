"""The self-study progress file, ``selfstudy-progress.json``: tries and best scores per notebook, and the
panels on screen that a recorded try refreshes.

One entry per notebook: ``tries``, ``parts`` (per part the best and last score out of its points),
``answers`` and ``try_parts`` (fingerprints that tell a new try from a rerun: :func:`record_try`), and the
practice keys of :mod:`autograder.selfstudy.practice`. A file that cannot be read is an empty one, and
one that cannot be written never fails a check.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The progress file, relative to the kernel's working directory (JupyterLab starts a notebook's kernel
#: in the notebook's folder, so it sits beside the notebooks). Visible on purpose: learners may read it.
PROGRESS_FILE = Path("selfstudy-progress.json")


def load_progress(path: Path = PROGRESS_FILE) -> dict:
    """The whole file as ``stem -> entry``; an unreadable or malformed file reads as empty."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def entry_of(progress: dict, stem: str) -> dict:
    """``stem``'s entry of ``progress``, repaired where a hand edit broke it (``parts`` a dict, ``tries`` a count)."""
    entry = progress.get(stem)
    entry = entry if isinstance(entry, dict) else {}
    parts = entry.get("parts")
    entry["parts"] = parts if isinstance(parts, dict) else {}
    entry["tries"] = int(entry.get("tries", 0)) if str(entry.get("tries", 0)).isdigit() else 0
    return entry


def _new_try(entry: dict, answers: str | None, parts: dict | None) -> bool:
    """Whether a check of these answers starts a new try (see :func:`record_try`)."""
    if answers is None:
        return True
    if parts is None:  # the whole notebook's answers, compared with the last try's
        return entry.get("answers") != answers
    current = entry.get("try_parts")
    if not isinstance(current, dict) or not current:
        return True
    # A part checked again with other answers is another attempt; a part not checked yet in this try
    # joins it (a run through the notebook checks one part after the other, each answer cell changing
    # its own answers just before its check).
    return any(name in current and current[name] != fingerprint for name, fingerprint in parts.items())


def record_try(stem: str, group_results, path: Path = PROGRESS_FILE, answers: str | None = None,
               parts: dict | None = None) -> dict:
    """Record the scores of ``group_results`` for ``stem``; count a try when these answers start one.

    ``group_results`` are :class:`autograder.checks._core.GroupResult` objects; ``answers`` is the
    fingerprint of the notebook's answers (:func:`autograder.selfstudy.checking.answers_fingerprint`);
    ``None`` always counts.
    ``parts`` (``group name -> fingerprint of that part's answers``) makes a try one run through the
    notebook: a part checked for the first time in the current try joins it, and a part checked again
    with answers other than that try's starts a new one; without ``parts`` a try is counted whenever
    ``answers`` differ from the last try's. Per part the best and the last score out of that part's
    points are kept. Returns the notebook's updated entry. A disk that refuses the write never fails
    the check (the entry is still returned).
    """
    progress = load_progress(path)
    entry = entry_of(progress, stem)
    if _new_try(entry, answers, parts):
        entry["tries"] += 1
        entry["try_parts"] = {}
        if entry.get("numbers") is not None:  # a try on drawn numbers (see autograder.selfstudy.practice)
            count = entry.get("numbers_tries", 0)
            entry["numbers_tries"] = (count if isinstance(count, int) and count >= 0 else 0) + 1
    if parts is not None:
        current = entry.get("try_parts")
        entry["try_parts"] = {**(current if isinstance(current, dict) else {}), **parts}
    if answers is not None:
        entry["answers"] = answers
    for group in group_results:
        part = entry["parts"].get(group.name)
        part = part if isinstance(part, dict) else {}
        try:
            best = float(part.get("best", 0.0))
        except (TypeError, ValueError):
            best = 0.0
        entry["parts"][group.name] = {
            "title": group.title,
            "best": max(best, float(group.points_earned)),
            "last": float(group.points_earned),
            "points": float(group.points_available),
        }
    progress[stem] = entry
    try:
        Path(path).write_text(json.dumps(progress, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError:
        pass
    return entry


def tries(stem: str, path: Path = PROGRESS_FILE) -> int:
    """How many tries of ``stem`` were recorded here."""
    return entry_of(load_progress(path), stem)["tries"]


def has_attempted(stem: str, path: Path = PROGRESS_FILE) -> bool:
    """True once a check of ``stem`` has run here on an answer that differs from the template."""
    return tries(stem, path) > 0


#: Live reveal states by notebook stem, so that a check can refresh panels already on screen.
LIVE_PANELS: dict = {}


def notify_panels(stem: str) -> None:
    """Call the listeners of every live panel of ``stem`` (a try was recorded)."""
    for state in list(LIVE_PANELS.get(stem, ())):
        for listener in list(state.listeners):
            try:
                listener()
            except Exception:  # a broken panel must never break a check
                pass


__all__ = ["LIVE_PANELS", "PROGRESS_FILE", "entry_of", "has_attempted", "load_progress", "notify_panels", "record_try",
           "tries"]
