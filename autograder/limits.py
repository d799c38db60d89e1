"""Every bound of the grader, in one table: what an instructor may raise and what a hostile input hits.

Each bound is a :class:`Limit` (its name, value, unit and one line of why), defined here once and read
where it applies: the sandbox job (:func:`job`, the limits each notebook runs under), the intake's
file limits, the feedback pages' budgets, the exchange's and the class tools' bounds, the command
line's help and defaults (``autograder grade --help``) and the nbgrader traits of
``autograder.grading.nbgrader_bridge.SandboxedGrade``. ``tests/test_limits.py`` fails when a bound is
defined anywhere else.

Two modules keep their own bounds because they are copied into the sandbox alone and cannot import
``autograder`` there: the codec ``autograder/channel.py`` (``MAX_ARRAY_BYTES``, ``MAX_ITEMS``,
``MAX_DEPTH``, ``MAX_STRING``, ``MAX_MESSAGE``, ``MAX_DECODED_ELEMENTS``, ``MAX_EXACT_DIGITS``) and the
harness ``autograder/grading/harness.py`` (``MAX_FRAME``, ``FIGURES_PER_CELL``, ``FIGURE_BYTES``). The
job's ``decoded_elements`` is the codec's ``MAX_DECODED_ELEMENTS`` (``grading.task.default_limits``), and what
the coordinator takes of a reply (:data:`REPLY_FIGURES`, :data:`REPLY_FIGURE_CHARS`) is tested to hold
what the harness may send.

This module is the bottom floor: it imports nothing of ``autograder`` (only the student package's longest id,
``course.variants.ID_MAX_CHARS``, and its longest course id or term label,
``course.variants.COURSE_TERM_MAX_CHARS``, which the student package checks on its own).

>>> WALL_SECONDS.shown()
'60 s'
>>> NOTEBOOK_BYTES.shown()
'20 MiB'
>>> job()["wall_seconds"], job(wall_seconds=5)["wall_seconds"]
(60, 5)
"""

from __future__ import annotations

import dataclasses

# The student package keeps its own check of an id's form (it never imports autograder): its length is read
# from there, not written twice.
from course.variants import COURSE_TERM_MAX_CHARS as _COURSE_TERM_MAX_CHARS
from course.variants import ID_MAX_CHARS as _STUDENT_ID_MAX_CHARS

_MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Limit:
    """One bound: ``name`` (the key a job or message uses), ``value``, ``unit`` and one line of ``why``."""

    name: str
    value: int | float
    unit: str
    why: str

    def shown(self) -> str:
        """The value and its unit as help and messages print them (bytes in MiB or MB when whole or large).

        >>> Limit("a", 3_500_000, "bytes", "").shown(), Limit("b", 1024, "bytes", "").shown()
        ('3.5 MB', '1,024 bytes')
        """
        if self.unit == "bytes" and self.value >= _MIB:
            return f"{self.value // _MIB} MiB" if self.value % _MIB == 0 else f"{self.value / 1e6:g} MB"
        number = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:g}"
        return f"{number} {self.unit}"


# -- The sandbox: what each notebook runs under (``autograder grade --timeout`` and ``--memory``, and the
#    traits ``SandboxedGrade.timeout`` and ``memory_mb``, change the seconds and the memory) ------------
WALL_SECONDS = Limit("wall_seconds", 60, "s", "the whole notebook, first cell to last (--timeout)")
CPU_SECONDS = Limit("cpu_seconds", 60, "s", "CPU time of the notebook's processes (--timeout sets it to the wall time + 1)")
CELL_SECONDS = Limit("cell_seconds", 30, "s", "one cell, as nbgrader's per-cell timeout")
CALL_SECONDS = Limit("call_seconds", 10, "s", "one call of a check on the student's function")
MEMORY_MB = Limit("memory_mb", 1024, "MiB", "address space of each sandboxed process and the sandbox's memory cgroup (--memory)")
PROCESSES = Limit("processes", 32, "processes", "processes the sandbox's uid may have (a fork bomb stops here)")
FILE_BYTES = Limit("file_bytes", 16 * _MIB, "bytes", "largest file (and fd-level output) a notebook may write")
TMP_MB = Limit("tmp_mb", 256, "MiB", "each notebook's private /tmp and /dev/shm (Sandbox(tmp_mb=...)), tmpfs in the machine's memory")
STREAM_CHARS = Limit("stream_chars", 10_000, "characters", "printed text kept per cell (enforced again by the coordinator)")
FRAME_BYTES = Limit("frame_bytes", 64 * _MIB, "bytes", "everything one notebook may send back to the grader")
REPLY_BYTES = Limit("reply_bytes", 32 * _MIB, "bytes", "one reply: one cell's output or one call's outcome")

# -- The submitted file, checked by the intake before anything of it is parsed or run ----------------
NOTEBOOK_BYTES = Limit("notebook_bytes", 20 * _MIB, "bytes", "size of a submitted .ipynb file")
CELLS = Limit("cells", 2_000, "cells", "cells in a submitted notebook (an honest one of this course has at most 32)")
JSON_DEPTH = Limit("json_depth", 100, "levels", "nesting of a submitted notebook's JSON, measured on the raw bytes (the parser recurses per level)")
PARSE_SECONDS = Limit("parse_seconds", 20, "s", "time to parse and validate a submitted notebook")

#: The limits a sandbox job carries, in the order the job dict has always had.
SANDBOX_JOB = (MEMORY_MB, PROCESSES, FILE_BYTES, CPU_SECONDS, WALL_SECONDS, CELL_SECONDS, CALL_SECONDS,
               STREAM_CHARS, FRAME_BYTES, REPLY_BYTES)
#: The limits of the submitted file (``autograder.grading.intake``).
FILE = (NOTEBOOK_BYTES, CELLS, JSON_DEPTH, PARSE_SECONDS)

# -- The trusted side: what the grading process spends on one notebook, whatever it holds ------------
ID_CELL_CHARS = Limit("id_cell_chars", 10_000, "characters",
                      "a submitted STUDENT_ID cell read for the id (the released one has 253; ast.parse of a 4 MB "
                      "list took 10 s and 1.4 GB)")
READ_VALUES_CHARS = Limit("read_values_chars", 20_000, "characters",
                          "read answers kept per test cell as the class report's evidence")
AUTOGRADED_SOURCE_CELLS = Limit("autograded_source_cells", 1_000, "cells",
                                "cells the source notebook adds to a student's, in an autograded notebook the "
                                "class report reads (its bytes may grow by frame_bytes)")
REPLY_FIGURES = Limit("reply_figures", 8, "figures", "figures taken from one cell's reply (the harness sends its first 8)")
REPLY_FIGURE_CHARS = Limit("reply_figure_chars", 3 * _MIB, "characters",
                           "one figure's base64 taken from a reply (the harness' 2 MiB PNG cap is 2.7 MiB as base64)")
FRAME_NODES = Limit("frame_nodes", 1_000_000, "nodes",
                    "JSON containers and separators in one reply from the sandbox (a few MB of Python objects)")

# -- nbgrader's door on a Dask cluster (``c.SandboxedGrade.dask_scheduler``, autograder.grading.remote) ----
DASK_CONNECT_SECONDS = Limit("dask_connect_seconds", 30, "s",
                             "reaching the Dask scheduler over TLS, then finding a worker there (nothing is written "
                             "before)")
DASK_STALL_SECONDS = Limit("dask_stall_seconds", 120, "s",
                           "waiting for one notebook's result beyond twice its wall time (a cluster that stalls)")

# -- The class report and the similarity pages (autograder.insight), on what students wrote ----------
REPORT_TOLD_CHARS = Limit("report_told_chars", 400, "characters",
                          "one case's message kept for the class report (the checks' sentences are far shorter)")
SIMILARITY_CELL_CHARS = Limit("similarity_cell_chars", 50_000, "characters",
                              "one cell parsed for similarity at the most (the longest worked solution has 3,634)")
SIMILARITY_STUDENT_TOKENS = Limit("similarity_student_tokens", 20_000, "tokens",
                                  "one student's cells parsed for similarity per assignment (the worked solutions: "
                                  "10,700 and 13,100)")
SIMILARITY_SHOWN_CHARS = Limit("similarity_shown_chars", 8_000, "characters",
                               "a cell shown on the similarity page (side by side; the rest is cut, and says so)")

# -- Feedback pages (the grader's page, nbgrader's generate_feedback page, formgrader's view) ---------
PAGE_TEXT_CHARS = Limit("page_text_chars", 10_000, "characters", "printed text shown per output on the grader's page")
PAGE_IMAGE_BYTES = Limit("page_image_bytes", 2 * _MIB, "bytes", "largest figure (decoded) shown on the grader's page")
PAGE_IMAGES = Limit("page_images", 20, "figures", "figures shown per grader's page")
HIGHLIGHT_CELL_CHARS = Limit("highlight_cell_chars", 20_000, "characters",
                             "code Pygments highlights per cell, on every page (the rest is escaped plain text)")
HIGHLIGHT_PAGE_CHARS = Limit("highlight_page_chars", 50_000, "characters",
                             "code Pygments highlights per page (an honest notebook has under 10,000 in all)")
HIGHLIGHT_CELL_TOKENS = Limit("highlight_cell_tokens", 5_000, "tokens",
                              "tokens highlighted per cell: Pygments costs ~30 us a token (an honest cell has <= 2,600)")
HIGHLIGHT_PAGE_TOKENS = Limit("highlight_page_tokens", 12_000, "tokens",
                              "tokens highlighted per page (an honest notebook has at most 6,400)")
GRADER_PAGE_STUDENT_BYTES = Limit("grader_page_student_bytes", 3_500_000, "bytes",
                                  "the student's code and outputs on the grader's page, which stays under 5 MB "
                                  "(4.1 MB at the limits)")
NBCONVERT_PAGE_STUDENT_BYTES = Limit("nbconvert_page_student_bytes", 3_000_000, "bytes",
                                     "the same on nbconvert's pages (generate_feedback, formgrader's view), whose "
                                     "markup per cell is heavier: under 5 MB (3.6 MB at the limits)")
PAGE_MARKDOWN_COST = Limit("page_markdown_cost", 20_000, "cost units",
                           "written answers formatted as Markdown per page (1 a character, 11 a syntax character: "
                           "markdown-it pays per syntax character)")
PAGE_FORMULAS = Limit("page_formulas", 300, "formulas", "formulas made MathML per page (the rest stay TeX)")
PAGE_FORMULA_CHARS = Limit("page_formula_chars", 3_000, "characters",
                           "TeX made MathML per page (latex2mathml costs per character)")
PAGE_PLAIN_CHARS = Limit("page_plain_chars", 200_000, "characters",
                         "written answers shown as plain text per page beyond the Markdown budget (the rest named)")
TEXT_FORMULAS = Limit("text_formulas", 500, "formulas",
                      "formulas made MathML in one text given no page budget; the rest stay TeX (a million $x$ cost bounded time)")

# -- The exchange, the class and its tools -------------------------------------------------------------
INBOX_ENTRIES = Limit("inbox_entries", 200_000, "entries",
                      "entries of the exchange's inbox looked at by collect (a class of thousands submits a few times each)")
SUBMISSION_ENTRIES = Limit("submission_entries", 10_000, "files and folders",
                           "inside one collected submission (an honest one holds tens)")
RECEIPT_ENTRIES = Limit("receipt_entries", 100_000, "entries",
                        "entries of one inbox folder walked for its receipt time (a submission holds tens)")
TIMESTAMP_BYTES = Limit("timestamp_bytes", 1024, "bytes",
                        "a submission's timestamp.txt or secret read (nbgrader writes ~30 bytes, the secret 128)")
STUDENT_ID_CHARS = Limit("student_id_chars", _STUDENT_ID_MAX_CHARS, "characters",
                         "a student id: what course.variants.check_id_form takes, inside nbgrader's 128-character column")
COURSE_TERM_CHARS = Limit("course_term_chars", _COURSE_TERM_MAX_CHARS, "characters",
                          "a course id or term label entering the draws (course.variants.CourseTerm): nbgrader's "
                          "course id column, String(128)")
ROSTER_FIELD_CHARS = Limit("roster_field_chars", 128, "characters",
                           "a name or e-mail of the roster: nbgrader's gradebook columns (String(128), api.Student)")
LMS_ROSTER_BYTES = Limit("lms_roster_bytes", 20 * _MIB, "bytes", "a roster CSV exported from Canvas or Moodle, read whole")
LMS_ROSTER_ROWS = Limit("lms_roster_rows", 100_000, "rows", "lines of a roster CSV exported from Canvas or Moodle")
EXTENSION_DAYS = Limit("extension_days", 366, "days", "the longest extension taken (more is surely a typo)")
SELFSTUDY_CALL_SECONDS = Limit("selfstudy_call_seconds", 10.0, "s",
                               "one call of an open or self-study check in the student's own kernel")

#: Every bound, in the order above.
TABLE = tuple(value for value in dict(globals()).values() if isinstance(value, Limit))


def table_text(limits=None, indent: str = "  ") -> str:
    """``limits`` (default: the whole :data:`TABLE`) as aligned lines: name, value and unit, why.

    >>> print(table_text((WALL_SECONDS, CELLS)))
      wall_seconds  60 s         the whole notebook, first cell to last (--timeout)
      cells         2,000 cells  cells in a submitted notebook (an honest one of this course has at most 32)
    """
    limits = TABLE if limits is None else tuple(limits)
    names = max(len(limit.name) for limit in limits)
    values = max(len(limit.shown()) for limit in limits)
    return "\n".join(f"{indent}{limit.name:<{names}}  {limit.shown():<{values}}  {limit.why}" for limit in limits)


def job(**overrides) -> dict:
    """A fresh dict of the sandbox job's limits and the file's (name -> value), with ``overrides``."""
    made = {limit.name: limit.value for limit in SANDBOX_JOB + FILE}
    unknown = set(overrides) - set(made)
    if unknown:
        raise KeyError(f"not a limit of the sandbox job: {', '.join(sorted(unknown))}")
    made.update(overrides)
    return made


__all__ = ["FILE", "Limit", "SANDBOX_JOB", "TABLE", "job", "table_text"] + [
    constant for constant, value in dict(globals()).items() if isinstance(value, Limit)]
