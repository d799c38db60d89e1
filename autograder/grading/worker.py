"""Grade one notebook: a pure function from (submission, source, options) to results.

:func:`grade_notebook` takes plain data and returns plain data, so it runs the same in a process
pool or on a Dask worker. It never touches the course directory or the gradebook: the coordinator
writes the results. Student code runs only in the sandbox; the checks plan the calls and judge the
decoded outcomes here, in the trusted process.
"""

from __future__ import annotations

import copy
import threading
import time

import nbformat
from nbgrader import utils as nbutils

from autograder.channel import Unreadable, decode_outcome
from autograder.grading import feedback as feedback_html
from autograder.grading.sandbox import Sandbox
from autograder.grading.submission import (
    Extraction, extract, group_of, kind_of, plan_steps, read_notebook, test_docstring, utf8,
)

DEFAULT_LIMITS = {
    "memory_mb": 1024,  # address space of each sandboxed process
    "processes": 32,  # processes the sandbox's uid may have
    "file_bytes": 16 * 1024 * 1024,  # largest file (and fd-level output) a notebook may write
    "cpu_seconds": 60,
    "wall_seconds": 60,  # the whole notebook
    "cell_seconds": 30,  # one cell, as nbgrader's per-cell timeout
    "call_seconds": 10,  # one call of a check
    "stream_chars": 10_000,  # printed text kept per cell
    "frame_bytes": 256 * 1024 * 1024,  # everything the notebook may send back
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


_REASONS = {
    "timeout": "the notebook ran out of time",
    "output": "the notebook sent back too much data",
    "protocol": "the notebook broke the grading channel",
    "sandbox": "the sandbox running this notebook stopped",
}


def grade_notebook(task: dict) -> dict:
    """Grade one submitted notebook.

    Parameters
    ----------
    task : dict
        ``student``, ``assignment``, ``stem``, ``source`` (source notebook JSON text), ``submission``
        (submitted notebook JSON text), ``checksums`` (grade_id -> release checksum from the
        gradebook), ``limits`` and ``options`` (``use_bwrap``, ``ipython``).

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
    try:
        submitted = read_notebook(task["submission"])
    except Exception as error:  # noqa: BLE001 - a broken file is the student's, grading goes on
        submitted = None
        notes.append(f"the submitted notebook could not be read ({type(error).__name__}); graded as empty")
    extraction = extract(source_nb, submitted)
    notes.extend(extraction.notes)

    def plan_group(group: str):
        return checks.plan(stem, [group])

    steps, slots = plan_steps(source_nb, extraction, plan_group)
    limits = dict(task.get("limits") or DEFAULT_LIMITS)
    options = dict(task.get("options") or {})
    run = _sandbox(options).run(steps, limits) if steps else {"frames": [], "reason": "exited", "status": 0}
    reason = run["reason"]
    if reason in _REASONS:
        notes.append(_REASONS[reason])

    # Frames back to steps: cell frames by step number, outcomes by (step, case, index).
    cell_frames: dict = {}
    outcomes: dict = {}
    for frame in run["frames"]:
        step = frame.get("step")
        if not isinstance(step, int) or not 0 <= step < len(steps):
            continue
        if frame.get("type") == "cell" and steps[step]["kind"] == "exec":
            cell_frames[step] = frame
        elif frame.get("type") == "outcome" and steps[step]["kind"] == "calls":
            data = frame.get("data")
            outcome = decode_outcome(data.encode("utf-8")) if isinstance(data, str) else Unreadable("no answer")
            outcomes.setdefault(step, {}).setdefault(frame.get("case"), {})[frame.get("index")] = outcome

    autograded = _build_notebook(task, source_nb, extraction, steps, slots, cell_frames, outcomes, reason, checks)
    rows = _rows(task, autograded, reason)
    html = feedback_html.render(autograded, task, rows, notes, reason=reason, exit_status=run.get("status"))
    return {"student": task["student"], "assignment": task["assignment"], "stem": stem,
            "autograded": utf8(nbformat.writes(autograded)), "feedback": utf8(html), "rows": rows, "notes": notes,
            "reason": reason, "seconds": time.perf_counter() - started, "digest": task.get("digest")}


def _build_notebook(task, source_nb, extraction: Extraction, steps, slots, cell_frames, outcomes, reason, checks):
    checksums = task.get("checksums") or {}
    stem = task["stem"]
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
            cell.source = extraction.manual.get(grade_id, "")
            cells.append(cell)
        elif kind == "test":
            cell.source = test_docstring(original.source)
            number = next((n for n, s in by_source.get(index, []) if s.kind == "calls"), None)
            cell.outputs = _test_outputs(stem, group_of(grade_id or ""), number, steps, outcomes, reason, checks)
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


def _test_outputs(stem, group, number, steps, outcomes, reason, checks) -> list:
    """What ``grade(stem, group, globals())`` would have shown: the feedback and the points."""
    if number is None or group is None:
        text = "This test could not be run: no check is known for it. Ask your instructor.\n"
        return [_stream("stdout", text), _points(0.0)]
    got = outcomes.get(number, {})
    decoded = {}
    for case in steps[number]["cases"]:
        by_index = got.get(case["name"], {})
        if len(by_index) == len(case["calls"]):
            decoded[case["name"]] = tuple(by_index[i] for i in range(len(case["calls"])))
    result = checks.judge(stem, decoded, [group])
    text = result.groups[0].feedback() + "\n"
    if len(decoded) < len(steps[number]["cases"]) and reason in _REASONS:
        text += f"(Some cases did not run: {_REASONS[reason]}.)\n"
    verdicts = feedback_html.group_record(result.groups[0], ran=set(decoded), reason=reason)
    return [_stream("stdout", text), _points(float(result.points_earned), verdicts)]


def _points(value: float, verdicts: dict | None = None) -> dict:
    # The group's verdicts ride along as data in the output's metadata: the feedback pages and the
    # report read them from there (misconception keys, which cases ran), never from the text above.
    metadata = {feedback_html.METADATA_KEY: verdicts} if verdicts is not None else {}
    return nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(value))}, execution_count=None,
                                  metadata=metadata)


def _rows(task, nb, reason) -> list:
    rows = []
    for cell in nb.cells:
        if not nbutils.is_grade(cell):
            continue
        score, max_score = nbutils.determine_grade(cell)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if score is None:
            status, text = "needs_manual_grade", "waiting for the instructor"
        elif nbutils.is_solution(cell):
            status, text = "graded", "No response."
        else:
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream").strip()
            ran = "could not be run" not in text and "Some cases did not run" not in text
            status = "graded" if ran else ("timeout" if reason == "timeout" else "error")
        rows.append({"student": task["student"], "notebook": task["stem"], "grade_id": grade_id,
                     "score": None if score is None else float(score), "max_score": float(max_score),
                     "status": status, "feedback": text,
                     "misconceptions": feedback_html.misconceptions_of(cell)})
    return rows
