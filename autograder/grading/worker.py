"""Grade one notebook: a pure function from a :class:`~autograder.grading.task.GradingTask` to results.

:func:`grade_notebook` takes a frozen task (made only by :func:`autograder.grading.task.student_tasks`)
and returns plain data, so it runs the same in a process pool or on a Dask worker. It never touches
the course directory or the gradebook: the coordinator writes the results. Student code runs only in
the sandbox; the checks plan the calls and judge the decoded outcomes here, in the trusted process.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time

import nbformat
from nbgrader import utils as nbutils

from autograder.channel import Unreadable, decode_outcome
from autograder.feedback import page as feedback_html
from autograder.feedback.withheld import withhold_after_hidden_tests
from autograder.grading.outcome_text import trusted_outcome
from autograder.grading import intake
from autograder.grading.state import cell_digests
from autograder.feedback.markdown import Budget as WrittenBudget
from autograder.feedback.markdown import notebook_cell_source
from autograder.feedback.rubric import rubric_cell
from autograder.grading.sandbox import Run, Sandbox
from autograder.grading.task import GradingTask, default_limits
from autograder.limits import ID_CELL_CHARS, READ_VALUES_CHARS
from autograder.results import METADATA_KEY, GroupVerdict, Status, misconceptions_of, verdict_text
from autograder.grading.submission import (
    Extraction, extract, group_of, kind_of, plan_steps, read_notebook, test_docstring, utf8,
)
from autograder.course_settings import NUMBERS_CELL
from autograder.course_settings import is_numbers_cell, released_numbers_source
from course.variants import STUDENT_ID_GRADE_ID, CourseTerm

_local = threading.local()


def _sandbox(use_bwrap: bool | None) -> Sandbox:
    """One sandbox per worker thread, started on first use and reused for every notebook."""
    key = use_bwrap
    box = getattr(_local, "sandbox", None)
    if box is None or getattr(_local, "key", None) != key:
        if box is not None:
            box.close()
        box = Sandbox(use_bwrap=use_bwrap)
        _local.sandbox, _local.key = box, key
    return box


def close_sandbox() -> None:
    box = getattr(_local, "sandbox", None)
    if box is not None:
        box.close()
        _local.sandbox = None


def _new_output(output_type: str, data=None, **fields):
    """``nbformat.v4.new_output`` without its schema validation of each node: the autograded notebook is
    validated once, whole, when ``nbformat.writes`` writes it. One validation per cell and output cost a
    notebook of 2,000 extra cells 5 s of the grading process (nbformat 5, ``v4/nbbase.py``)."""
    output = nbformat.NotebookNode(output_type=output_type)
    if output_type == "stream":
        output.name, output.text = "stdout", ""
    elif output_type in ("display_data", "execute_result"):
        output.metadata, output.data = nbformat.NotebookNode(), nbformat.NotebookNode()
        if output_type == "execute_result":
            output.execution_count = None
    elif output_type == "error":
        output.ename, output.evalue, output.traceback = "NotImplementedError", "", []
    output.update(fields)
    if data is not None:
        output.data = data
    return output


def _new_code_cell(source: str, id: str):
    """``nbformat.v4.new_code_cell(source, id=id)`` without its per-cell validation (see :func:`_new_output`)."""
    return nbformat.NotebookNode(id=id, cell_type="code", metadata=nbformat.NotebookNode(), execution_count=None,
                                 source=source, outputs=[])


def _stream(name: str, text: str) -> dict:
    return _new_output("stream", name=name, text=text)


def _types_own_id(source: str, student: str) -> bool:
    """Whether a submitted ``student_id`` cell only types the graded student's own id (read, bounded, never run)."""
    from autograder.variants import only_an_id, typed_id

    return only_an_id(source) and typed_id(source) == student




def _unnamed(outputs: list, student: str) -> None:
    """The numbers cell's table heading without the student's id: formgrader's grading page hides names
    (blind grading), and this table, run as the student's sign-in, would name them above every answer.
    ``course.variants.Numbers.heading`` writes ``Numbers of student 'ID' (from ...)``."""
    named = f"Numbers of student {student!r} (from "
    for output in outputs:
        if output.get("output_type") == "stream" and named in output.get("text", ""):
            text = output["text"]
            start = text.index(named)
            end = text.find(")", start + len(named))
            output["text"] = text[:start] + "Numbers of the submitting student" + (text[end + 1:] if end >= 0 else "")


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
            outputs.append(_new_output("display_data", data={
                "image/png": figure, "text/plain": f"<Figure {number + 1} of this cell>"}))
    if frame.get("status") in ("error", "timeout"):
        text = frame.get("error") or frame.get("status")
        head = text.strip().splitlines()[-1] if text.strip() else frame["status"]
        outputs.append(_new_output("error", ename=frame["status"], evalue=head[:500],
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
    "unreadable": "the submitted notebook could not be read",
}

#: The run's ``reason`` (and the ``limit`` of its :class:`~autograder.grading.intake.Refusal`) when the submitted file is not a readable notebook.
UNREADABLE = "unreadable"
#: Row status when some cases of a test cell did not run, by the run's reason.
_STATUS_OF_REASON = {"timeout": Status.TIMEOUT, "sandbox": Status.GRADER_ERROR, "rejected": Status.REJECTED,
                     UNREADABLE: Status.UNREADABLE}


def read_submission(task: GradingTask, limits: dict) -> intake.NotebookRead:
    """The task's notebook through the intake: from ``root``/``parts`` (the worker sees the course), from
    ``submission`` (its text, shipped to a Dask worker), or the ``refused`` refusal the coordinator met."""
    if task.refused is not None:
        return intake.NotebookRead("the submission", refusal=task.refused)
    if task.submission is not None:
        return intake.parse_text(task.submission, limits)
    return intake.read_notebook(task.root, task.parts, limits)
#: Notebook metadata key of the autograded notebook naming a state every cell shares (``unreadable``):
#: the gradebook's comments say it (:class:`autograder.grading.gradebook.SaveStatedGrades`).
STATE_KEY = "module6_state"



@functools.lru_cache(maxsize=64)
def _source_notebook(text: str, stem: str = "", course_term: CourseTerm = CourseTerm()):
    """The source notebook parsed once per process: every submission of a notebook has the same source.

    Its numbers cell is the one the students were released (:func:`released_numbers_cell`): the grader
    runs the source's locked cells, never the submission's, so the notebook draws its numbers in the
    release's course and term, the ones the keys are computed for.

    Shared between submissions, so never modified: :func:`_build_notebook` copies every cell and the
    metadata it changes (:func:`_copied`); extraction and planning only read it.
    """
    return released_numbers_cell(read_notebook(text), stem, course_term)


def released_numbers_cell(nb, stem: str, course_term: CourseTerm):
    """``nb`` (a source notebook) with its numbers cell as released in ``course_term``: the
    ``your_numbers`` call of :func:`autograder.course_settings.released_numbers_source`, the text the
    release step wrote and the gradebook stored (so the autograded notebook's locked cell matches its
    checksum). Unchanged for the empty context (the source's call is the released one)."""
    if course_term.empty:
        return nb
    for cell in nb.cells:
        if is_numbers_cell(cell):
            cell.source = released_numbers_source(cell.source, stem, course_term)
    return nb


def _copied(value):
    """A copy of a notebook node built from JSON (dicts, lists and immutable scalars): what
    ``copy.deepcopy`` makes of it, without its memo and dispatch (a tenth of the cost)."""
    if isinstance(value, dict):
        return nbformat.NotebookNode({key: _copied(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


#: The refusal's ``limit`` when the trusted side met a submission it could not process within Python's
#: own limits (nesting deeper than the recursion limit, a parser's MemoryError).
TOO_COMPLEX = "complexity"


def grade_notebook(task: GradingTask) -> dict:
    """Grade one submitted notebook (see :func:`_grade`): whatever the submission holds, a result.

    Every parse of student bytes on this side is bounded before it starts (the intake's limits, the
    ``STUDENT_ID`` cell's :data:`autograder.limits.ID_CELL_CHARS`, the page budgets). Should a shape
    nobody foresaw still make Python's own limits trip while this notebook is processed (a
    ``RecursionError``, a parser's ``MemoryError``), the notebook is refused as ``rejected`` with the reason,
    as an over-limit file is, and the batch goes on: such an exception never stops a batch (it did: exit
    status 3) nor reaches nbgrader's converter, which deletes the student's whole ``autograded/`` folder
    for an exception it catches.
    """
    try:
        return _grade(task)
    except (RecursionError, MemoryError) as error:
        if task.refused is not None:
            raise
        refusal = intake.Refusal(Status.REJECTED, TOO_COMPLEX, "the submission is too complex for the grader to "
                                 f"read ({type(error).__name__}): simplify the notebook and submit it again")
        return _grade(dataclasses.replace(task, refused=refusal))


def _grade(task: GradingTask) -> dict:
    """Grade one submitted notebook.

    Parameters
    ----------
    task : GradingTask
        The notebook, its source and checksums, the limits and the sandbox choice, the student (whose
        numbers and hidden inputs the course secret draws).

    Returns
    -------
    dict
        ``autograded`` (notebook JSON text), ``feedback`` (HTML), ``rows`` (one per graded cell),
        ``notes``, ``reason`` and ``seconds``.
    """
    from autograder import checks

    started = time.perf_counter()
    stem = task.stem
    source_nb = _source_notebook(task.source, stem, task.course_term)
    notes: list = []
    limits = {**default_limits(), **task.limits}
    read = read_submission(task, limits)
    submitted, rejected = read.notebook, read.refusal
    if rejected is not None:
        notes.append(f"your submission was not run: {rejected}")
    if rejected is None and read.problem:
        # Read within every limit but not a notebook (not JSON, not nbformat): its own status, not a
        # zero that looks graded; the rows, the report and the page say so.
        rejected = intake.Refusal(Status.UNREADABLE, UNREADABLE, read.problem)
        notes.append(f"your submission was not run: {rejected}")
    extraction = extract(source_nb, submitted)
    notes.extend(extraction.notes)

    # The student's own variant: their numbers (from the submission folder's id, never the notebook's)
    # and their hidden inputs (from the course secret the coordinator passed).
    variant = student_variant(task)

    def plan_group(group: str):
        return checks.plan(stem, [group], variant=variant)

    steps, slots = plan_steps(source_nb, extraction, plan_group)
    if variant.parameters:
        mismatch = identity_note(task.student, extraction)
        if mismatch:
            notes.append(mismatch)
        run_released_id_cell(steps)
    if rejected is not None:
        run = Run({}, {}, UNREADABLE if rejected.limit == UNREADABLE else "rejected")
    elif not steps:
        run = Run({}, {}, "exited", 0)
    else:
        run = _sandbox(task.use_bwrap).run(steps, limits, notebook_environment(task, variant))
        if run.reason == "sandbox":
            # The sandbox failed (not this notebook's doing as far as we know): once more, fresh.
            close_sandbox()
            run = _sandbox(task.use_bwrap).run(steps, limits, notebook_environment(task, variant))
    reason = run.reason
    if reason in _REASONS and reason not in ("rejected", UNREADABLE):
        notes.append(_REASONS[reason])

    statuses: dict = {}
    autograded = _build_notebook(task, source_nb, extraction, steps, slots, run, checks, limits, statuses, variant)
    if rejected is not None and rejected.limit == UNREADABLE:
        autograded.metadata[STATE_KEY] = {"status": str(Status.UNREADABLE), "comment": f"Not graded: {rejected}."}
    rows = _rows(task, autograded, statuses, rejected)
    # A rejected submission never ran: the page explains it through the notes, not as a crash.
    # The page's heading: whose notebook, and the limits its "what happened" may name.
    heading = {"student": task.student, "assignment": task.assignment, "stem": stem, "limits": task.limits}
    html = feedback_html.render(autograded, heading, rows, notes, reason=None if rejected else reason,
                                exit_status=None if rejected else run.status)
    return {"student": task.student, "assignment": task.assignment, "stem": stem,
            "autograded": utf8(nbformat.writes(autograded)), "feedback": utf8(html), "rows": rows, "notes": notes,
            "reason": reason, "seconds": time.perf_counter() - started, "digest": task.digest,
            # What a person grading each graded cell sees (the state file keeps it: see grading/state.py).
            "cells": cell_digests(autograded),
            "rejected": None if rejected is None else rejected.limit,
            "refusal": None if rejected is None else rejected.as_dict()}


def _build_notebook(task, source_nb, extraction: Extraction, steps, slots, run: Run, checks, limits, statuses,
                    variant=None):
    """The autograded notebook; ``statuses`` receives each test cell's status (grade id -> status)."""
    checksums = task.checksums
    stem = task.stem
    cell_frames = run.cells
    written = WrittenBudget()  # one formatting budget for all of this notebook's written answers
    by_source: dict = {}
    for number, slot in enumerate(slots):
        by_source.setdefault(slot.source_index, []).append((number, slot))

    cells = []
    cap_told: list = []  # the notebook's capped test cells so far: the first tells the cap in full

    def extra_cells(index):
        for number, slot in by_source.get(index, []):
            if slot.kind == "exec-extra":
                cell = _new_code_cell(steps[number]["source"], id=f"extra-{number}")
                cell.outputs = _cell_outputs(cell_frames.get(number))
                cells.append(cell)

    extra_cells(-1)
    for index, original in enumerate(source_nb.cells):
        cell = _copied(original)
        kind = kind_of(cell)
        meta = cell.metadata.get("nbgrader")
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and grade_id in checksums:
            meta["checksum"] = checksums[grade_id]
        if kind == "code":
            number = next((n for n, s in by_source.get(index, []) if s.kind == "exec-source"), None)
            cell.outputs = _cell_outputs(cell_frames.get(number))
            if cell.get("id") == NUMBERS_CELL:
                _unnamed(cell.outputs, task.student)
            cells.append(cell)
        elif kind == "answer":
            runs = [n for n, s in by_source.get(index, []) if s.kind == "exec-answer"]
            texts = extraction.answers.get(grade_id, [])
            cell.source = texts[0] if texts else ""
            if grade_id == STUDENT_ID_GRADE_ID and texts and _types_own_id(texts[0], task.student):
                # The student's own id, typed on a laptop: shown as the release has it (blind grading).
                cell.source = ("# The submitting student typed their own id here (not shown: formgrader hides names).\n"
                               'STUDENT_ID = ""')
            cell.outputs = _cell_outputs(cell_frames.get(runs[0])) if runs else []
            cells.append(cell)
            for number, text in zip(runs[1:], texts[1:]):
                duplicate = _new_code_cell(text, id=f"duplicate-{number}")
                duplicate.outputs = _cell_outputs(cell_frames.get(number))
                cells.append(duplicate)
        elif kind == "manual":
            # The student's words as sanitized HTML that nbconvert shows verbatim (formgrader, nbgrader's
            # feedback and the kit's page): see autograder/feedback/markdown.py. An answer left as the
            # release's stub (its checksum matches: the instructor's words) stays as it is, so that nbgrader
            # still scores it 0, "No response" (nbgrader.utils.determine_grade compares checksums).
            cell.source = extraction.manual.get(grade_id, "")
            if not (isinstance(meta, dict) and meta.get("checksum") == nbutils.compute_checksum(cell)):
                cell.source = notebook_cell_source(cell.source, written)
            cell.pop("attachments", None)
            cells.append(cell)
            # For formgrader's view only (feedback drops it), with this student's numbers, never their id
            # (formgrader's grading page hides names: see rubric_cell).
            rubric = rubric_cell(stem, grade_id, student=task.student if variant is not None and variant.parameters else None,
                                 course_term=task.course_term)
            if rubric is not None:
                cells.append(rubric)
        elif kind == "test":
            cell.source = test_docstring(original.source)
            number = next((n for n, s in by_source.get(index, []) if s.kind == "calls"), None)
            cell.outputs, statuses[grade_id] = _test_outputs(stem, group_of(grade_id or ""), number, steps, run,
                                                             checks, limits, cap_told, variant)
            cells.append(cell)
        else:  # markdown and widgets: the source's cell, untouched
            if kind == "widget":
                cell.outputs = []
            cells.append(cell)
        extra_cells(index)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=_copied(source_nb.metadata))
    info = nb.metadata.get("language_info")
    if isinstance(info, dict) and info.get("name", "python") == "python" and "pygments_lexer" not in info:
        # The cells ran in IPython, and IPython's lexer is the one of nbconvert's (7.17, filters/highlight.py)
        # that honours a cell's ``magics_language``: formgrader's grading view then shows a cell that
        # BoundGradingView marked plain as plain text. With the source's bare "python" every cell was
        # highlighted all the same (a 4 MB answer cell took the view 16 s).
        info["pygments_lexer"] = "ipython3"
    seen: set = set()
    for number, cell in enumerate(nb.cells):
        # Deterministic ids: the source's, or a numbered one for the student's extra cells.
        if not cell.get("id") or cell["id"] in seen:
            cell["id"] = f"submitted-{number}"
        seen.add(cell["id"])
    # Code run after the first hidden call may hold its inputs: none of its output goes back to the student.
    withhold_after_hidden_tests(nb)
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


def unavailable_modules(steps: list, cells: dict) -> tuple:
    """The modules the sandbox lacks that a cell tried to import before any test cell's call ran.

    Only those cells: they ran before any hidden input reached the notebook, so the name (the
    student's own import) carries nothing of a hidden input. A cell after a test cell could
    choose which import fails from what a call saw.
    """
    first_call = next((n for n, step in enumerate(steps) if step.get("kind") == "calls"), len(steps))
    found: list = []
    for number in range(first_call):
        name = (cells.get(number) or {}).get("missing_module") or ""
        if name and name not in found:
            found.append(name)
    return tuple(found[:5])


def _test_outputs(stem, group, number, steps, run: Run, checks, limits, cap_told: list | None = None,
                  variant=None) -> tuple:
    """What ``grade(stem, group, globals())`` would have shown (feedback and points), and the status.

    ``cap_told`` collects whether an earlier test cell of the notebook already told the cap in full."""
    cap_told = [] if cap_told is None else cap_told
    if number is None or group is None:
        text = "This test could not be run: no check is known for it. Ask your instructor.\n"
        return [_stream("stdout", text), _points(0.0)], Status.ERROR
    got = run.outcomes.get(number, {})
    decoded = {}
    budget = int(limits["decoded_elements"])
    for case in steps[number]["cases"]:
        by_index = got.get(case["name"], {})
        if len(by_index) == len(case["calls"]):
            # Every text the notebook chose (class names, reasons) is put in the grader's words before
            # the judge may quote it: the notebook process could have written any of it.
            decoded[case["name"]] = tuple(trusted_outcome(_decode(by_index[i], budget), case["calls"][i], limits)
                                          for i in range(len(case["calls"])))
    result = checks.judge(stem, decoded, [group], unavailable=unavailable_modules(steps, run.cells), variant=variant)
    told = bool(cap_told)
    if result.groups[0].capped:
        cap_told.append(group)
    record = GroupVerdict.from_result(result.groups[0], ran=set(decoded), reason=run.reason, cap_told=told)
    text = verdict_text(record) + "\n"
    status = Status.GRADED
    if len(decoded) < len(steps[number]["cases"]):
        status = _STATUS_OF_REASON.get(run.reason, Status.ERROR)
        if run.reason in _REASONS:
            text += f"(Some cases did not run: {_REASONS[run.reason]}.)\n"
    if variant is not None and variant.parameters:
        # What the concept answers were (values the notebook bound, no hidden input: a value read has no
        # arguments), so that the class report can tell answers that fit another student's numbers.
        values = read_values(steps[number]["cases"], decoded)
        if values:
            record = dataclasses.replace(record, answers=values)
    return [_stream("stdout", text), _points(float(result.points_earned), record.to_json())], status


def student_variant(task: GradingTask):
    """The submitting student's :class:`autograder.variants.Variant` of the task's exercise, drawn in the
    course and term of the release (the task's, from the plan): whatever the submitted notebook says."""
    from autograder.variants import variant_for
    secret = task.variant_secret
    return variant_for(task.stem, task.student, bytes.fromhex(secret) if secret else None, task.course_term)


def notebook_environment(task: GradingTask, variant) -> dict:
    """What the notebook process's environment says about who it is, for an exercise whose numbers
    vary: the submitting student as their hub sign-in (``JUPYTERHUB_USER``), so the numbers cell shows
    the graded student's numbers exactly as it does on their hub, and nothing states that the notebook
    is graded. A submitted STUDENT_ID that names someone else stops the numbers cell as it stopped on
    the hub. Other notebooks get nothing (they need nothing)."""
    return {"JUPYTERHUB_USER": str(task.student)} if variant.parameters else {}


def run_released_id_cell(steps: list) -> None:
    """Run the released ``STUDENT_ID = ""`` where the submitted id cell only typed an id (``steps`` in
    place): the notebook, signed in as the submitting student, then shows that student's numbers as a
    hub does, and answers computed from ``numbers`` follow them. A typed id (a laptop's, maybe a slip)
    does not stop the numbers cell: nobody loses an answer because the id was mistyped, and the
    feedback names the mismatch (:func:`identity_note`). The autograded notebook shows what was typed.

    A cell over :data:`autograder.limits.ID_CELL_CHARS` is neither parsed here nor run: the released
    cell runs in its place too (megabytes in the id cell cost the sandbox seconds to compile and the
    grading process, before this bound, 10 s and 1.4 GB to parse), and the feedback says so. The bound
    is for all of a notebook's id cells together (a copy of the cell is run too, and 2,000 copies of
    9,999 characters must not cost 2,000 parses): copies beyond it are treated alike."""
    from autograder.variants import id_cell_readable, only_an_id
    from course.variants import STUDENT_ID_CELL
    room = ID_CELL_CHARS.value
    for step in steps:
        if step.get("kind") == "exec" and step.get("id") == STUDENT_ID_GRADE_ID:
            source = step["source"]
            readable = id_cell_readable(source) and len(source) <= room
            room -= len(source) if readable else 0
            if not readable or only_an_id(source):
                step["source"] = STUDENT_ID_CELL


def identity_note(student: str, extraction: Extraction) -> str:
    """A note when the submitted notebook typed another student's id (it showed their numbers), or when
    its ``STUDENT_ID`` cell was too long to be read for one (neither parsed nor run: see
    :func:`run_released_id_cell`)."""
    from autograder.variants import id_cell_readable, typed_id
    texts = extraction.answers.get(STUDENT_ID_GRADE_ID) or []
    if texts and not id_cell_readable(texts[0]):
        return (f"the STUDENT_ID cell has more than {ID_CELL_CHARS.value:,} characters, so the grader neither read nor ran "
                f"it: the released cell ran in its place, and the notebook was graded with the numbers of "
                f"{student!r}. Anything else written in that cell did not run: keep it to the line "
                "`STUDENT_ID = \"...\"`.")
    typed = typed_id(texts[0]) if texts else None
    if typed is None or typed == student:
        return ""
    shown = typed if len(typed) <= 40 else typed[:40] + "..."
    return (f"this notebook's STUDENT_ID says {shown!r}, but it was submitted as {student!r} (ids are exact: "
            f"capitals count). It was graded with the numbers of {student!r}, not the ones it showed while you "
            f"worked (those of {shown!r}): answers computed from `numbers` followed {student!r}'s numbers, "
            "values typed in for the other numbers did not. Ask your instructor if that was a slip.")


def read_values(cases: list, decoded: dict) -> dict:
    """``variable -> channel-encoded value`` of the values a test cell's cases read (``Call.value``)."""
    import json
    from autograder.channel import Returned, encode_value
    values: dict = {}
    for case in cases:
        for call, outcome in zip(case["calls"], decoded.get(case["name"], ())):
            if call.get("read_only") and isinstance(outcome, Returned) and call["target"] not in values:
                try:
                    values[call["target"]] = encode_value(outcome.value)
                except Exception:  # a value the channel could not encode again is no evidence
                    continue
    if len(json.dumps(values)) > READ_VALUES_CHARS.value:
        return {}
    return values


def _decode(data: str, budget: int):
    try:
        return decode_outcome(data.encode("utf-8", "replace"), max_elements=budget)
    except MemoryError:
        return Unreadable("the answer is too large to read back")


def _points(value: float, verdicts: dict | None = None) -> dict:
    # The group's verdicts ride along as data in the output's metadata: the feedback pages and the
    # report read them from there (misconception keys, which cases ran), never from the text above.
    metadata = {METADATA_KEY: verdicts} if verdicts is not None else {}
    return _new_output("execute_result", data={"text/plain": repr(float(value))}, execution_count=None,
                                  metadata=metadata)


def _rows(task, nb, statuses: dict, rejected) -> list:
    rows = []
    for cell in nb.cells:
        if not nbutils.is_grade(cell):
            continue
        score, max_score = nbutils.determine_grade(cell)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if rejected is not None:
            status, text = rejected.status, rejected.feedback
            score = 0.0 if score is not None or nbutils.is_solution(cell) else score
        elif score is None:
            status, text = Status.NEEDS_MANUAL_GRADE, "waiting for the instructor"
        elif nbutils.is_solution(cell):
            status, text = Status.GRADED, "No response."
        else:
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream").strip()
            status = statuses.get(grade_id, Status.ERROR)
        rows.append({"student": task.student, "notebook": task.stem, "grade_id": grade_id,
                     "score": None if score is None else float(score), "max_score": float(max_score),
                     "status": status, "feedback": text,
                     "misconceptions": misconceptions_of(cell)})
    return rows
