"""Grade one notebook: a pure function from (submission, source, options) to results.

:func:`grade_notebook` takes plain data and returns plain data, so it runs the same in a process
pool or on a Dask worker. It never touches the course directory or the gradebook: the coordinator
writes the results. Student code runs only in the sandbox; the checks plan the calls and judge the
decoded outcomes here, in the trusted process.
"""

from __future__ import annotations

import copy
import os
import re
import threading
import time

import nbformat
from nbgrader import utils as nbutils

from autograder.channel import Unreadable, decode_outcome
from autograder.feedback import page as feedback_html
from autograder.feedback.rubric import rubric_cell
from autograder.grading.sandbox import Run, Sandbox
from autograder.grading.statuses import Status
from autograder.grading.submission import (
    Extraction, extract, group_of, kind_of, plan_steps, read_notebook, test_docstring, utf8,
)

DEFAULT_LIMITS = {
    "memory_mb": 1024,  # address space of each sandboxed process (and the sandbox's memory cgroup)
    "processes": 32,  # processes the sandbox's uid may have
    "file_bytes": 16 * 1024 * 1024,  # largest file (and fd-level output) a notebook may write
    "cpu_seconds": 60,
    "wall_seconds": 60,  # the whole notebook
    "cell_seconds": 30,  # one cell, as nbgrader's per-cell timeout
    "call_seconds": 10,  # one call of a check
    "stream_chars": 10_000,  # printed text kept per cell (enforced again by the coordinator)
    "frame_bytes": 64 * 1024 * 1024,  # everything the notebook may send back
    "reply_bytes": 32 * 1024 * 1024,  # one reply (one cell's output or one call's outcome)
    # Bounds on the submitted file, checked by the coordinator before anything runs:
    "notebook_bytes": 20 * 1024 * 1024,  # size of the .ipynb file
    "cells": 2_000,  # cells in it
    "json_depth": 100,  # nesting of its JSON
    "parse_seconds": 20,  # time to parse it
    # Bounds on what the judge decodes from one call's outcome (array elements plus other values):
    "decoded_elements": 4_000_000,
}

#: What the coordinator's limits are called in messages (each limit hit has its own status).
LIMIT_NAMES = {
    "notebook_bytes": "the notebook file is larger than {value} bytes",
    "cells": "the notebook has more than {value} cells",
    "json_depth": "the notebook's JSON is nested more than {value} levels deep",
    "parse_seconds": "the notebook could not be read within {value} s",
}

_local = threading.local()


def limits_for(timeout: float | None = None, memory_mb: int | None = None) -> dict:
    limits = dict(DEFAULT_LIMITS)
    if timeout is not None:
        limits["wall_seconds"] = float(timeout)
        limits["cpu_seconds"] = max(1, int(timeout) + 1)
        limits["cell_seconds"] = min(limits["cell_seconds"], float(timeout))
        limits["call_seconds"] = min(limits["call_seconds"], float(timeout))
    if memory_mb is not None:
        limits["memory_mb"] = int(memory_mb)
    return limits


def _sandbox(options: dict) -> Sandbox:
    """One sandbox per worker thread, started on first use and reused for every notebook."""
    key = (options.get("use_bwrap"), options.get("ipython", True))
    box = getattr(_local, "sandbox", None)
    if box is None or getattr(_local, "key", None) != key:
        if box is not None:
            box.close()
        box = Sandbox(use_bwrap=options.get("use_bwrap"), ipython=options.get("ipython", True))
        _local.sandbox, _local.key = box, key
    return box


def close_sandbox() -> None:
    box = getattr(_local, "sandbox", None)
    if box is not None:
        box.close()
        _local.sandbox = None


def _stream(name: str, text: str) -> dict:
    return nbformat.v4.new_output("stream", name=name, text=text)


def _cell_outputs(frame: dict | None) -> list:
    if frame is None:
        return []
    outputs = []
    if frame.get("stdout"):
        outputs.append(_stream("stdout", frame["stdout"]))
    if frame.get("stderr"):
        outputs.append(_stream("stderr", frame["stderr"]))
    figures = frame.get("figures")
    for number, figure in enumerate(figures[:8] if isinstance(figures, list) else []):
        if isinstance(figure, str) and len(figure) <= 3 * 1024 * 1024:  # base64 of the harness' 2 MB cap
            # The page and nbgrader's feedback show it as an <img>: a PNG can carry no script.
            outputs.append(nbformat.v4.new_output("display_data", data={
                "image/png": figure, "text/plain": f"<Figure {number + 1} of this cell>"}))
    if frame.get("status") in ("error", "timeout"):
        text = frame.get("error") or frame.get("status")
        head = text.strip().splitlines()[-1] if text.strip() else frame["status"]
        outputs.append(nbformat.v4.new_output("error", ename=frame["status"], evalue=head[:500],
                                              traceback=text.splitlines()[-40:]))
    return outputs


#: Why a notebook's run ended early, as the student reads it (keys are the run's ``reason``).
_REASONS = {
    "timeout": "the notebook ran out of time",
    "output": "the notebook sent back too much data",
    "protocol": "the notebook broke the grading channel",
    "ended": "the notebook's process ended (os._exit, a crash or a resource limit) before every test ran",
    "sandbox": "the sandbox running this notebook stopped",
    "rejected": "the submission was not run",
}

#: Row status when some cases of a test cell did not run, by the run's reason.
_STATUS_OF_REASON = {"timeout": Status.TIMEOUT, "sandbox": Status.GRADER_ERROR, "rejected": Status.REJECTED}


#: ``Rejected.limit`` of a file that is not a notebook at all (status ``unreadable``, not ``rejected``).
UNREADABLE = "unreadable"
#: Notebook metadata key of the autograded notebook naming a state every cell shares (``unreadable``):
#: the gradebook's comments say it (:class:`autograder.grading.gradebook.SaveStatedGrades`).
STATE_KEY = "module6_state"


class Rejected(Exception):
    """The submitted file breaks one of the coordinator's limits (``limit`` names it)."""

    def __init__(self, limit: str, message: str):
        super().__init__(message)
        self.limit = limit


def _json_depth(raw: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text, strings ignored; O(n log n) time, in NumPy.

    A quote opens or closes a string unless an odd number of backslashes precedes it; a bracket
    counts when an even number of such quotes precedes it. (A regular expression over the strings
    backtracks quadratically on an unterminated string full of escaped quotes: 32 kB of them took
    half a minute, and this runs before any time limit.)
    """
    import numpy as np
    codes = np.frombuffer(raw, dtype=np.uint8)
    slashes = np.flatnonzero(codes == ord("\\"))
    quotes = np.flatnonzero(codes == ord('"'))
    if slashes.size and quotes.size:
        # Index (in ``slashes``) of the first backslash of the run each backslash belongs to.
        runs = np.maximum.accumulate(np.where(np.diff(slashes, prepend=-2) != 1, np.arange(slashes.size), 0))
        k = np.searchsorted(slashes, quotes)  # backslashes before each quote
        last = np.maximum(k - 1, 0)
        touching = (k > 0) & (slashes[last] == quotes - 1)
        run_length = np.where(touching, last - runs[last] + 1, 0)
        quotes = quotes[run_length % 2 == 0]
    opening = np.flatnonzero((codes == ord("[")) | (codes == ord("{")))
    closing = np.flatnonzero((codes == ord("]")) | (codes == ord("}")))
    opening = opening[np.searchsorted(quotes, opening) % 2 == 0]
    closing = closing[np.searchsorted(quotes, closing) % 2 == 0]
    if not opening.size:
        return 0
    steps = np.zeros(codes.size, dtype=np.int8)
    steps[opening], steps[closing] = 1, -1
    return max(int(np.cumsum(steps, dtype=np.int32).max()), 0)


def read_submission(task: dict, limits: dict) -> str:
    """The submitted notebook's text, read within the limits; :class:`Rejected` otherwise.

    A path is opened without following symbolic links and must name a regular file (a FIFO would block).
    """
    import stat
    cap = int(limits["notebook_bytes"])
    if "path" in task:
        fd = os.open(task["path"], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Rejected("file", "the submission is not a regular file")
            if info.st_size > cap:
                raise Rejected("notebook_bytes", LIMIT_NAMES["notebook_bytes"].format(value=cap))
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read(cap + 1)
        finally:
            os.close(fd)
    else:
        raw = task["submission"].encode("utf-8", "surrogatepass")
    if len(raw) > cap:
        raise Rejected("notebook_bytes", LIMIT_NAMES["notebook_bytes"].format(value=cap))
    if _json_depth(raw) > int(limits["json_depth"]):
        raise Rejected("json_depth", LIMIT_NAMES["json_depth"].format(value=limits["json_depth"]))
    return raw.decode("utf-8", "replace")


class _ParseTimeout(BaseException):
    pass


def parse_submission(text: str, limits: dict):
    """Parse within ``parse_seconds`` (enforced when this is a process's main thread) and ``cells``."""
    import signal
    seconds = float(limits["parse_seconds"])
    timed = threading.current_thread() is threading.main_thread()

    def expire(signum, frame):
        raise _ParseTimeout()

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        import json
        # Count the cells on the plain parse (fast, in C) before nbformat validates them one by one.
        data = json.loads(text)
        cells = data.get("cells") if isinstance(data, dict) else None
        if isinstance(cells, list) and len(cells) > int(limits["cells"]):
            raise Rejected("cells", LIMIT_NAMES["cells"].format(value=limits["cells"]))
        data = cells = None
        nb = read_notebook(text)
    except _ParseTimeout:
        raise Rejected("parse_seconds", LIMIT_NAMES["parse_seconds"].format(value=seconds)) from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return nb


def grade_notebook(task: dict) -> dict:
    """Grade one submitted notebook.

    Parameters
    ----------
    task : dict
        ``student``, ``assignment``, ``stem``, ``source`` (source notebook JSON text), ``path`` (the
        submitted file) or ``submission`` (its JSON text), ``checksums`` (grade_id -> release checksum
        from the gradebook), ``limits`` and ``options`` (``use_bwrap``, ``ipython``).

    Returns
    -------
    dict
        ``autograded`` (notebook JSON text), ``feedback`` (HTML), ``rows`` (one per graded cell),
        ``notes``, ``reason`` and ``seconds``.
    """
    from autograder import checks

    started = time.perf_counter()
    stem = task["stem"]
    source_nb = read_notebook(task["source"])
    notes: list = []
    limits = {**DEFAULT_LIMITS, **(task.get("limits") or {})}
    rejected = None
    try:
        submitted = parse_submission(read_submission(task, limits), limits)
    except Rejected as refusal:
        submitted, rejected = None, refusal
        notes.append(f"your submission was not run: {refusal}")
    except OSError as error:
        submitted, rejected = None, Rejected("file", f"the submitted file could not be opened ({error.strerror})")
        notes.append(f"your submission was not run: {rejected}")
    except Exception as error:  # noqa: BLE001 - a broken file is the student's, grading goes on
        # Not a notebook at all (not JSON, not nbformat): nothing in it can be graded, and every page
        # and row says so with its own status instead of treating each answer as not written yet.
        submitted, rejected = None, Rejected(UNREADABLE, f"the submitted file is not a readable notebook "
                                                         f"({type(error).__name__}); submit the notebook again")
        notes.append(f"your submission could not be graded: {rejected}")
    extraction = extract(source_nb, submitted)
    notes.extend(extraction.notes)

    def plan_group(group: str):
        return checks.plan(stem, [group])

    steps, slots = plan_steps(source_nb, extraction, plan_group)
    options = dict(task.get("options") or {})
    if rejected is not None:
        run = Run({}, {}, "rejected")
    elif not steps:
        run = Run({}, {}, "exited", 0)
    else:
        run = _sandbox(options).run(steps, limits)
        if run.reason == "sandbox":
            # The sandbox failed (not this notebook's doing as far as we know): once more, fresh.
            close_sandbox()
            run = _sandbox(options).run(steps, limits)
    reason = run.reason
    if reason in _REASONS and reason != "rejected":
        notes.append(_REASONS[reason])

    statuses: dict = {}
    autograded = _build_notebook(task, source_nb, extraction, steps, slots, run, checks, limits, statuses)
    if rejected is not None and rejected.limit == UNREADABLE:
        autograded.metadata[STATE_KEY] = {"status": str(Status.UNREADABLE), "comment": f"Not graded: {rejected}."}
    rows = _rows(task, autograded, statuses, rejected)
    # A rejected submission never ran: the page explains it through the notes, not as a crash.
    html = feedback_html.render(autograded, task, rows, notes, reason=None if rejected else reason,
                                exit_status=None if rejected else run.status)
    return {"student": task["student"], "assignment": task["assignment"], "stem": stem,
            "autograded": utf8(nbformat.writes(autograded)), "feedback": utf8(html), "rows": rows, "notes": notes,
            "reason": reason, "seconds": time.perf_counter() - started, "digest": task.get("digest"),
            "rejected": None if rejected is None else rejected.limit}


def _build_notebook(task, source_nb, extraction: Extraction, steps, slots, run: Run, checks, limits, statuses):
    """The autograded notebook; ``statuses`` receives each test cell's status (grade id -> status)."""
    checksums = task.get("checksums") or {}
    stem = task["stem"]
    cell_frames = run.cells
    by_source: dict = {}
    for number, slot in enumerate(slots):
        by_source.setdefault(slot.source_index, []).append((number, slot))

    cells = []

    def extra_cells(index):
        for number, slot in by_source.get(index, []):
            if slot.kind == "exec-extra":
                cell = nbformat.v4.new_code_cell(steps[number]["source"], id=f"extra-{number}")
                cell.outputs = _cell_outputs(cell_frames.get(number))
                cells.append(cell)

    extra_cells(-1)
    for index, original in enumerate(source_nb.cells):
        cell = copy.deepcopy(original)
        kind = kind_of(cell)
        meta = cell.metadata.get("nbgrader")
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and grade_id in checksums:
            meta["checksum"] = checksums[grade_id]
        if kind == "code":
            number = next((n for n, s in by_source.get(index, []) if s.kind == "exec-source"), None)
            cell.outputs = _cell_outputs(cell_frames.get(number))
            cells.append(cell)
        elif kind == "answer":
            runs = [n for n, s in by_source.get(index, []) if s.kind == "exec-answer"]
            texts = extraction.answers.get(grade_id, [])
            cell.source = texts[0] if texts else ""
            cell.outputs = _cell_outputs(cell_frames.get(runs[0])) if runs else []
            cells.append(cell)
            for number, text in zip(runs[1:], texts[1:]):
                duplicate = nbformat.v4.new_code_cell(text, id=f"duplicate-{number}")
                duplicate.outputs = _cell_outputs(cell_frames.get(number))
                cells.append(duplicate)
        elif kind == "manual":
            # What formgrader shows the instructor: the student's words, with no active content.
            cell.source = inert_markdown(extraction.manual.get(grade_id, ""))
            cell.pop("attachments", None)
            cells.append(cell)
            rubric = rubric_cell(stem, grade_id)  # for formgrader's view only: feedback drops it
            if rubric is not None:
                cells.append(rubric)
        elif kind == "test":
            cell.source = test_docstring(original.source)
            number = next((n for n, s in by_source.get(index, []) if s.kind == "calls"), None)
            cell.outputs, statuses[grade_id] = _test_outputs(stem, group_of(grade_id or ""), number, steps, run,
                                                             checks, limits)
            cells.append(cell)
        else:  # markdown and widgets: the source's cell, untouched
            if kind == "widget":
                cell.outputs = []
            cells.append(cell)
        extra_cells(index)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(source_nb.metadata))
    seen: set = set()
    for number, cell in enumerate(nb.cells):
        # Deterministic ids: the source's, or a numbered one for the student's extra cells.
        if not cell.get("id") or cell["id"] in seen:
            cell["id"] = f"submitted-{number}"
        seen.add(cell["id"])
    _renumber(nb)
    return nb


_ACTIVE_SCHEME = re.compile(r"(?i)(j[\s\x00-\x1f]*a[\s\x00-\x1f]*v[\s\x00-\x1f]*a[\s\x00-\x1f]*"
                            r"s[\s\x00-\x1f]*c[\s\x00-\x1f]*r[\s\x00-\x1f]*i[\s\x00-\x1f]*p[\s\x00-\x1f]*t"
                            r"|v[\s\x00-\x1f]*b[\s\x00-\x1f]*s[\s\x00-\x1f]*c[\s\x00-\x1f]*r[\s\x00-\x1f]*i"
                            r"[\s\x00-\x1f]*p[\s\x00-\x1f]*t|d[\s\x00-\x1f]*a[\s\x00-\x1f]*t[\s\x00-\x1f]*a)"
                            r"[\s\x00-\x1f]*:")
_CODE = re.compile(r"^(```|~~~)[^\n]*\n.*?(?:^\1[^\n]*$|\Z)", re.S | re.M)


def inert_markdown(text: str) -> str:
    """Student markdown that renders the same words but runs nothing in the instructor's browser.

    Outside fenced code blocks, ``&`` and ``<`` become entities (so no tag, comment,
    autolink or entity trick survives: ``<script>``, ``<img onerror=...>``, ``<svg onload>`` show as
    text), and ``javascript:``, ``vbscript:`` and ``data:`` URL schemes (with any spacing) are broken
    with a visible ``-blocked``. Markdown inside code is shown verbatim by every renderer anyway.
    """
    parts = []
    last = 0
    for match in _CODE.finditer(text):
        parts.append(_inert(text[last:match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_inert(text[last:]))
    return "".join(parts)


def _inert(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _ACTIVE_SCHEME.sub(lambda m: re.sub(r"[\s\x00-\x1f]", "", m.group(1)) + "-blocked:", text)


def _renumber(nb) -> None:
    count = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            if cell.get("outputs"):
                count += 1
                cell.execution_count = count
                for output in cell.outputs:
                    if output.get("output_type") == "execute_result":
                        output["execution_count"] = count
            else:
                cell.execution_count = None
    nb.nbformat_minor = max(nb.get("nbformat_minor", 5), 5)


def _one_line(text: str) -> str:
    """Student-originated text (an exception message) as one line: it can never start a line of its
    own, so it cannot imitate the grader's ``[PASS]`` lines or a points total."""
    return re.sub(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+", " \u23ce ", str(text))


def verdict_text(group) -> str:
    """The test cell's feedback, rendered from the judge's structured result (a ``GroupResult``):
    every line starts with text the grader wrote; messages are flattened to one line each."""
    lines = [f"{group.title}: {group.points_earned:g} / {group.points_available:g} points"]
    for case in group.cases:
        text = f"  [{'PASS' if case.passed else 'FAIL'}] {case.name}"
        if not case.passed and case.message:
            text += f": {_one_line(case.message)}"
        lines.append(text)
    return "\n".join(lines)


def _test_outputs(stem, group, number, steps, run: Run, checks, limits) -> tuple:
    """What ``grade(stem, group, globals())`` would have shown (feedback and points), and the status."""
    if number is None or group is None:
        text = "This test could not be run: no check is known for it. Ask your instructor.\n"
        return [_stream("stdout", text), _points(0.0)], Status.ERROR
    got = run.outcomes.get(number, {})
    decoded = {}
    budget = int(limits["decoded_elements"])
    for case in steps[number]["cases"]:
        by_index = got.get(case["name"], {})
        if len(by_index) == len(case["calls"]):
            decoded[case["name"]] = tuple(_decode(by_index[i], budget) for i in range(len(case["calls"])))
    result = checks.judge(stem, decoded, [group])
    text = verdict_text(result.groups[0]) + "\n"
    status = Status.GRADED
    if len(decoded) < len(steps[number]["cases"]):
        status = _STATUS_OF_REASON.get(run.reason, Status.ERROR)
        if run.reason in _REASONS:
            text += f"(Some cases did not run: {_REASONS[run.reason]}.)\n"
    verdicts = feedback_html.group_record(result.groups[0], ran=set(decoded), reason=run.reason)
    return [_stream("stdout", text), _points(float(result.points_earned), verdicts)], status


def _decode(data: str, budget: int):
    try:
        return decode_outcome(data.encode("utf-8", "replace"), max_elements=budget)
    except MemoryError:
        return Unreadable("the answer is too large to read back")


def _points(value: float, verdicts: dict | None = None) -> dict:
    # The group's verdicts ride along as data in the output's metadata: the feedback pages and the
    # report read them from there (misconception keys, which cases ran), never from the text above.
    metadata = {feedback_html.METADATA_KEY: verdicts} if verdicts is not None else {}
    return nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(value))}, execution_count=None,
                                  metadata=metadata)


def _rows(task, nb, statuses: dict, rejected) -> list:
    rows = []
    for cell in nb.cells:
        if not nbutils.is_grade(cell):
            continue
        score, max_score = nbutils.determine_grade(cell)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if rejected is not None:
            status = Status.UNREADABLE if rejected.limit == UNREADABLE else Status.REJECTED
            text = f"not run: {rejected}"
            score = 0.0 if score is not None or nbutils.is_solution(cell) else score
        elif score is None:
            status, text = Status.NEEDS_MANUAL_GRADE, "waiting for the instructor"
        elif nbutils.is_solution(cell):
            status, text = Status.GRADED, "No response."
        else:
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream").strip()
            status = statuses.get(grade_id, Status.ERROR)
        rows.append({"student": task["student"], "notebook": task["stem"], "grade_id": grade_id,
                     "score": None if score is None else float(score), "max_score": float(max_score),
                     "status": status, "feedback": text,
                     "misconceptions": feedback_html.misconceptions_of(cell)})
    return rows
