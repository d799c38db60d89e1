"""Grading results of a large simulated class, made without grading: report rows with known counts.

Grading 500 students' notebooks in the sandbox takes a while; the class report only reads the rows.
:func:`simulated_rows` writes the rows such a class would produce, for the real notebooks' case
groups and points, with misconceptions, crashes, time-outs and missing notebooks planted in exactly
the numbers asked for. The report's benchmark and its tests count them back.
"""

from __future__ import annotations

import random
from typing import Mapping

from autograder.results import Status


def _groups() -> dict:
    from autograder.checks import CHECKS
    return {stem: CHECKS[stem].groups for stem in sorted(CHECKS)}


def simulated_rows(students: int = 500, *, seed: int = 0,
                   plant: Mapping[tuple, int] | None = None, crash: Mapping[str, int] | None = None,
                   timeout: Mapping[str, int] | None = None, missing: Mapping[str, int] | None = None,
                   groups: Mapping[str, tuple] | None = None) -> list:
    """Report rows of ``students`` simulated students (names ``s0001``, ...).

    Parameters
    ----------
    plant : mapping ``(stem, group, key) -> count``
        That many students (chosen at random) fail part of ``group`` with misconception ``key``.
    crash, timeout, missing : mapping ``stem -> count``
        That many other students' ``stem`` notebooks crashed, ran out of time, or were not handed in.
    groups : mapping ``stem -> Group tuple``
        Default: the real checks' groups.

    Everybody else gets random scores with no misconception: mostly full points, sometimes partial.
    """
    if not isinstance(students, int) or students < 1:
        raise ValueError(f"students must be a positive integer, got {students!r}")
    rng = random.Random(seed)
    groups = dict(groups or _groups())
    names = [f"s{i:04d}" for i in range(1, students + 1)]
    keyed: dict = {}
    for (stem, group, key), count in (plant or {}).items():
        if stem not in groups or group not in {g.name for g in groups[stem]}:
            raise ValueError(f"plant: {stem!r} has no case group {group!r}")
        if not 0 <= count <= students:
            raise ValueError(f"plant: count for {key!r} must lie between 0 and {students}, got {count}")
        for name in rng.sample(names, count):
            keyed.setdefault((name, stem, group), []).append(key)
    stopped: dict = {}
    for status, table in ((Status.ERROR, crash), (Status.TIMEOUT, timeout), (Status.MISSING, missing)):
        for stem, count in (table or {}).items():
            if stem not in groups:
                raise ValueError(f"{status}: unknown notebook {stem!r}")
            free = [n for n in names if (n, stem) not in stopped
                    and not any((n, stem, g.name) in keyed for g in groups[stem])]
            if count > len(free):
                raise ValueError(f"{status}: {count} students for {stem} but only {len(free)} are free")
            for name in rng.sample(free, count):
                stopped[(name, stem)] = status
    rows = []
    for name in names:
        for stem, stem_groups in groups.items():
            status = stopped.get((name, stem))
            for group in stem_groups:
                keys = keyed.get((name, stem, group.name), [])
                if status is not None:
                    score = 0.0
                elif keys:
                    score = round(group.points * rng.choice([0.0, 0.25, 0.5, 0.75]), 2)
                else:
                    score = float(group.points) if rng.random() < 0.8 else round(group.points * rng.random(), 2)
                rows.append({"student": name, "notebook": stem, "grade_id": f"test_{group.name}", "score": score,
                             "max_score": float(group.points), "status": status or Status.GRADED,
                             "feedback": "", "misconceptions": list(keys) if status is None else []})
    return rows
