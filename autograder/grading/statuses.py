"""Every status a row of the batch grader's report can carry, and what each one means.

A row is one graded cell of one student's notebook (or, for a few statuses, the whole notebook or
the submission's ``timestamp.txt``: ``grade_id`` is then ``None``). The worker decides the statuses
of the cells it graded; the coordinator those of the notebooks it never sent to a worker. Whoever
reads a report (its summary, the class report, the comparison with plain nbgrader, the feedback
page) takes the statuses and their meanings from here, never from string literals of its own.

:class:`Status` is a ``str`` enum: a member is equal to its value, so rows read back from JSON
(the report, the grader's state file) compare equal to the members.
"""

from __future__ import annotations

import enum


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

__all__ = ["NOT_GRADED", "Status"]
