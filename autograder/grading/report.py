"""The JSON-lines report (one object per graded cell) and the summary table printed at the end."""

from __future__ import annotations

import json
from collections import defaultdict

from autograder.grading.statuses import NOT_GRADED, Status

#: Fields of a report row. ``misconceptions`` lists the keys of the misconceptions the row's failed
#: cases matched (``[]`` when none; see "Misconception keys" in docs/DESIGN.md).
KEYS = ("student", "notebook", "grade_id", "score", "max_score", "status", "feedback", "misconceptions")


def normalise(row: dict) -> dict:
    """``row`` with exactly :data:`KEYS`; rows from older results or without a test get ``[]`` keys."""
    out = {key: row.get(key) for key in KEYS}
    keys = out["misconceptions"]
    out["misconceptions"] = [key for key in keys if isinstance(key, str)] if isinstance(keys, list) else []
    return out


def write_jsonl(path: str, rows: list) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in sorted(rows, key=lambda r: (r["student"], r["notebook"], str(r["grade_id"]))):
            handle.write(json.dumps(normalise(row)) + "\n")


def summary(rows: list, *, graded: int, skipped: int, failures: int, seconds: float) -> str:
    """Per notebook: submissions, mean score, cells needing manual grading, errors and timeouts."""
    per = defaultdict(lambda: {"students": set(), "score": 0.0, "max": 0.0, "manual": 0, "error": 0,
                               "timeout": 0, "missing": 0})
    about_timestamps = (Status.BAD_TIMESTAMP, Status.TIMESTAMP_DISPUTED)
    problems = [row for row in rows if row["status"] in about_timestamps]
    for row in rows:
        if row["status"] in about_timestamps:
            continue
        entry = per[row["notebook"]]
        entry["students"].add(row["student"])
        entry["score"] += row["score"] or 0.0
        entry["max"] += row["max_score"] or 0.0
        status = row["status"]
        if status == Status.NEEDS_MANUAL_GRADE:
            entry["manual"] += 1
        elif status in (Status.ERROR, Status.TIMEOUT, Status.MISSING):
            entry[str(status)] += 1
        elif status in NOT_GRADED:  # nothing graded: counted with the errors
            entry["error"] += 1
    head = f"{'notebook':32} {'students':>8} {'mean %':>7} {'manual':>6} {'errors':>6} {'timeouts':>8} {'missing':>7}"
    lines = [head, "-" * len(head)]
    for stem in sorted(per):
        entry = per[stem]
        mean = 100.0 * entry["score"] / entry["max"] if entry["max"] else 0.0
        lines.append(f"{stem[:32]:32} {len(entry['students']):8d} {mean:7.1f} {entry['manual']:6d} "
                     f"{entry['error']:6d} {entry['timeout']:8d} {entry['missing']:7d}")
    rate = f", {graded / seconds:.2f} notebooks/s" if graded and seconds > 0 else ""
    lines.append("-" * len(head))
    for row in problems:
        lines.append(f"{row['student']}: {row['feedback']}")
    lines.append(f"graded {graded} notebooks ({skipped} unchanged, skipped; {failures} failed) "
                 f"in {seconds:.1f} s{rate}")
    return "\n".join(lines)
