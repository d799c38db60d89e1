"""What grading produced, as data: the statuses of report rows, a test group's verdict record, the report row.

The grader writes these; the feedback pages, the class report (``autograder.insight``) and the
comparison with plain nbgrader (``autograder.demo.compare``) only read them. Nothing here imports the
grader, the checks or the pages: this module sits on the bottom floor with ``autograder.channel``.

* :class:`Status`: every status a report row can carry, each with a one-sentence meaning. A row is one
  graded cell of one student's notebook (or, for a few statuses, the whole notebook or the submission's
  ``timestamp.txt``: ``grade_id`` is then ``None``). The worker decides the statuses of the cells it
  graded; the coordinator those of the notebooks it never sent to a worker. Whoever reads a report (its
  summary, the class report, the comparison with plain nbgrader, the feedback page) takes the statuses
  and their meanings from here, never from string literals of its own. A ``str`` enum: a member is
  equal to its value, so rows read back from JSON (the report, the grader's state file) compare equal.
* :class:`GroupVerdict` (with :class:`CaseVerdict`): what one test group (one hidden test cell)
  produced, made from the checks' ``GroupResult``. It rides as JSON in the metadata of the test cell's
  points output (:data:`METADATA_KEY`, :func:`verdicts_of`), where the pages and the report read it.
* :func:`verdict_text`: the one text rendering of a verdict (the test cell's printed feedback in every
  door, self-study's and the open checks' feedback). Its one HTML rendering is
  ``autograder.feedback.page.verdict_html``: a fragment of the feedback page, styled by its stylesheet.
  Nothing parses either rendering back: readers take the record.
* The report row: :data:`KEYS`, :func:`normalise`, :func:`write_jsonl` and the :func:`summary` table.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections import defaultdict


# ----------------------------------------------------------------------------- statuses

class Status(enum.StrEnum):
    """The status of a report row; :attr:`meaning` says in one sentence what it means."""

    GRADED = "graded"
    NEEDS_MANUAL_GRADE = "needs_manual_grade"
    TIMEOUT = "timeout"
    ERROR = "error"
    GRADER_ERROR = "grader_error"
    REJECTED = "rejected"
    UNREADABLE = "unreadable"
    SYMLINK = "symlink"
    MISSING = "missing"
    BAD_TIMESTAMP = "bad_timestamp"
    TIMESTAMP_DISPUTED = "timestamp_disputed"

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]

    @property
    def per_cell(self) -> bool:
        """True when the row names a cell (``grade_id``); False when it stands for a whole notebook
        (``symlink``, and ``error`` rows the coordinator writes) or for the timestamp file."""
        return self not in (Status.SYMLINK, Status.BAD_TIMESTAMP, Status.TIMESTAMP_DISPUTED)


_MEANINGS = {
    Status.GRADED: "every test case of the cell ran, and its score is the checks' verdict (or, for an "
                   "answer cell, nbgrader's own grade)",
    Status.NEEDS_MANUAL_GRADE: "a written answer, waiting for a person to grade it in formgrader",
    Status.TIMEOUT: "the notebook ran out of its time limit before some test cases of this cell ran; those "
                    "cases score nothing, the ones that ran are scored",
    Status.ERROR: "some test cases of this cell did not run (the student's process ended, broke the grading "
                  "channel or sent back too much) and score nothing, or the notebook as a whole could not be "
                  "graded or stored (the row then has no grade_id)",
    Status.GRADER_ERROR: "the grader's sandbox stopped, twice, while running this notebook: the grader's "
                         "failure, not the student's; nothing is remembered, the next run grades it again",
    Status.REJECTED: "the submitted file broke one of the grader's limits on what it reads (size, cells, JSON "
                     "nesting, parse time, or not a regular file) and was never run: every cell scores 0",
    Status.SYMLINK: "the submission (its folder or the notebook) is a symbolic link, which the grader never "
                    "follows: the notebook was not read and has no grade",
    Status.MISSING: "the student submitted no such notebook: every graded cell scores 0",
    Status.BAD_TIMESTAMP: "the submission's timestamp.txt could not be read: the notebooks are graded as if it "
                          "had no timestamp, so no late penalty is applied (a row for the file, not a cell)",
    Status.TIMESTAMP_DISPUTED: "the submission's timestamp.txt (written on the student's side) disagrees with the "
                               "time the exchange received the submission: the received time counts, for the late "
                               "penalty too (a row for the file, not a cell)",
    Status.UNREADABLE: "the submitted file is not a readable notebook (not JSON, or not nbformat): nothing in it "
                       "could be graded, so every cell scores 0; the student should submit the notebook again",
}

#: Rows whose notebook was not graded at all; the summary counts them with the errors.
NOT_GRADED = frozenset({Status.REJECTED, Status.UNREADABLE, Status.SYMLINK, Status.GRADER_ERROR})



# ----------------------------------------------------------------------------- the verdict record

#: Key under which a test cell's points output carries its group's verdict record (see :func:`verdicts_of`).
METADATA_KEY = "autograder"


@dataclasses.dataclass(frozen=True)
class CaseVerdict:
    """How one case of a test group went. ``message`` (failed cases only) is the judge's sentence;
    ``ran`` is False when the case's calls never came back (a crash, a timeout); ``withheld``: the
    case's own verdict passed, but a gate withheld its points (the group's ``withheld`` says why)."""

    name: str
    passed: bool
    ran: bool = True
    message: str = ""
    misconception: str | None = None
    withheld: bool = False

    def to_json(self) -> dict:
        out = {"name": self.name, "passed": self.passed, "ran": self.ran, "message": self.message,
               "misconception": self.misconception}
        if self.withheld:  # absent means False, as in every record written before gates were told apart
            out["withheld"] = True
        return out

    @classmethod
    def from_json(cls, data: dict) -> "CaseVerdict":
        misconception = data.get("misconception")
        return cls(str(data.get("name", "")), bool(data.get("passed")), bool(data.get("ran", True)),
                   str(data.get("message") or ""), misconception if isinstance(misconception, str) else None,
                   bool(data.get("withheld", False)))


@dataclasses.dataclass(frozen=True)
class GroupVerdict:
    """What one test group produced: its points, each case's verdict, and why points were capped or
    withheld ("" when they were not). ``reason`` is the sandbox's reason a run ended (None in one's own
    kernel); ``misconceptions`` the keys the failed cases matched, once each, in case order;
    ``answers`` the concept answers' values a varying exercise read (None when not recorded)."""

    group: str
    title: str
    points_earned: float
    points_available: float
    cases: tuple = ()
    misconceptions: tuple = ()
    reason: str | None = None
    capped: str = ""
    withheld: str = ""
    answers: dict | None = None

    @classmethod
    def from_result(cls, group, *, ran=None, reason: str | None = None, cap_told: bool = False) -> "GroupVerdict":
        """The record of a checks ``GroupResult``. ``ran`` holds the names of the cases whose calls came
        back (None: all of them, as in one's own kernel). ``capped`` is the cap's line, in full or (with
        ``cap_told``: said earlier in the same notebook) a pointer to where it was told."""
        cases, keys = [], []
        for case in group.cases:
            cases.append(CaseVerdict(case.name, bool(case.passed), ran is None or case.name in ran,
                                     "" if case.passed else case.message, case.misconception, bool(case.withheld)))
            if not case.passed and case.misconception and case.misconception not in keys:
                keys.append(case.misconception)
        return cls(group.name, group.title, float(group.points_earned), float(group.points_available), tuple(cases),
                   tuple(keys), reason, group.cap_line(cap_told), group.gated)

    def to_json(self) -> dict:
        """The JSON form stored in the points output's metadata."""
        out = {"group": self.group, "title": self.title, "points_earned": self.points_earned,
               "points_available": self.points_available, "cases": [case.to_json() for case in self.cases],
               "misconceptions": list(self.misconceptions), "reason": self.reason, "capped": self.capped,
               "withheld": self.withheld}
        if self.answers is not None:
            out["answers"] = self.answers
        return out

    @classmethod
    def from_json(cls, data: dict) -> "GroupVerdict":
        """The record read back from a notebook (any JSON: fields of the wrong type read as empty)."""
        def text(key):
            value = data.get(key)
            return value if isinstance(value, str) else ""

        def number(key):
            value = data.get(key)
            return float(value) if isinstance(value, (int, float)) else 0.0

        cases = data.get("cases") if isinstance(data.get("cases"), list) else []
        keys = data.get("misconceptions") if isinstance(data.get("misconceptions"), list) else []
        reason = data.get("reason")
        return cls(text("group"), text("title"), number("points_earned"), number("points_available"),
                   tuple(CaseVerdict.from_json(case) for case in cases if isinstance(case, dict)),
                   tuple(key for key in keys if isinstance(key, str)), reason if isinstance(reason, str) else None,
                   text("capped"), text("withheld"),
                   data.get("answers") if isinstance(data.get("answers"), dict) else None)


def verdicts_of(cell) -> dict | None:
    """The verdict record (its JSON form) stored on a test cell's points output, or None (plain
    nbgrader, old results); :meth:`GroupVerdict.from_json` makes it a record."""
    for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
        record = (output.get("metadata") or {}).get(METADATA_KEY)
        if isinstance(record, dict) and isinstance(record.get("cases"), list):
            return record
    return None


def misconceptions_of(cell) -> list:
    """Misconception keys the failed cases of a test cell matched (``[]`` when none or unknown)."""
    record = verdicts_of(cell)
    return [key for key in record.get("misconceptions", []) if isinstance(key, str)] if record else []


# ----------------------------------------------------------------------------- the one text rendering

def one_line(text: str) -> str:
    """Student-originated text (an exception message) as one line: it can never start a line of its
    own, so it cannot imitate the grader's ``[PASS]`` lines or a points total."""
    return re.sub(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+", " \u23ce ", str(text))


def verdict_text(record: GroupVerdict) -> str:
    """The verdict as text: a points line, then ``[CAPPED]`` and ``[WITHHELD]`` lines saying why, then
    one line per outcome (``[PASS]``, ``[WITHHELD]``, ``[FAIL]``). Every line starts with text the grader
    wrote; messages are flattened to one line each.

    Failures that say the same thing (a missing import fails every case alike) are told once, where
    the first of them would have been, with the number of cases they cover. A case whose own verdict
    passed but whose points a gate withheld reads ``[WITHHELD]``, not ``[FAIL]``: the student's answer
    to it was right, and the group's ``[WITHHELD]`` line says what else must work first.
    """
    lines = [f"{record.title}: {record.points_earned:g} / {record.points_available:g} points"]
    if record.capped:
        lines.append(f"  [CAPPED] {one_line(record.capped)}")
    if record.withheld:
        lines.append(f"  [WITHHELD] {one_line(record.withheld)}")
    rows: list = []  # per line: (mark, case names, message)
    failing: dict = {}
    for case in record.cases:
        if case.passed:
            rows.append(("PASS", [case.name], ""))
        elif case.withheld:  # the group's [WITHHELD] line says why
            if None not in failing:
                failing[None] = ("WITHHELD", [], "")
                rows.append(failing[None])
            failing[None][1].append(case.name)
        elif case.message in failing:
            failing[case.message][1].append(case.name)
        else:
            failing[case.message] = ("FAIL", [case.name], case.message)
            rows.append(failing[case.message])
    for mark, names, message in rows:
        more = len(names) - 1
        text = f"  [{mark}] {names[0]}" + (f" and {more} more case{'s' if more > 1 else ''}" if more else "")
        lines.append(text + (f": {one_line(message)}" if message else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- report rows

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
    """The JSON-lines report: one object per row, in (student, notebook, grade id) order."""
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


__all__ = ["KEYS", "METADATA_KEY", "NOT_GRADED", "CaseVerdict", "GroupVerdict", "Status", "misconceptions_of",
           "normalise", "one_line", "summary", "verdict_text", "verdicts_of", "write_jsonl"]
