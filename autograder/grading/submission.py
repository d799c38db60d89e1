"""Read a submission against its source notebook: take the answers, trust nothing else.

The notebook that gets run is built from ``source/``: its locked cells, its order, its metadata.
From the submitted file only the student's own code is taken:

* answer cells, found by their ``grade_id`` (or, when the metadata was lost, by the source cell's id);
  duplicates all run, in submission order, where the source has the answer;
* extra code cells the student added, run right after the recognised cell they follow (an honest
  helper cell keeps working, as it would under nbgrader);
* manually graded markdown answers, by ``grade_id``.

Locked cells, tests, outputs and metadata of the submission are ignored; anything odd is reported
as a note, never fatal.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import nbformat

WIDGET_TAG = "widget"
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def kind_of(cell) -> str:
    """``answer``, ``manual``, ``test``, ``widget``, ``code`` (locked/plain code) or ``markdown``."""
    meta = _nbgrader(cell)
    if meta.get("solution"):
        return "answer" if cell.cell_type == "code" else "manual"
    if meta.get("grade") and cell.cell_type == "code":
        return "test"
    if cell.cell_type == "code":
        tags = cell.get("metadata", {}).get("tags", [])
        return "widget" if WIDGET_TAG in tags else "code"
    return "markdown"


def test_docstring(source: str) -> str:
    """The visible part of a hidden test cell: its docstring only (never the test code)."""
    try:
        tree = ast.parse(source)
        doc = ast.get_docstring(tree, clean=True)
    except SyntaxError:
        doc = None
    if doc:
        return '"""' + doc.replace('"""', "'''") + '"""'
    return '"""Hidden tests."""'


def utf8(text: str) -> str:
    """``text`` with every lone surrogate replaced by ``?``: text that can be hashed and written as UTF-8.

    Untrusted text may carry lone surrogates (a ``\\ud800`` escape in a submission's JSON, or printed by
    its code); nbgrader's checksums and the coordinator's file writes would raise on them.
    """
    return text.encode("utf-8", "replace").decode("utf-8")


def group_of(grade_id: str) -> str | None:
    return grade_id[len("test_"):] if grade_id.startswith("test_") else None


@dataclasses.dataclass
class Extraction:
    """What was taken from a submission, keyed by source ``grade_id``."""

    answers: dict  # grade_id -> list of source strings (code answers, submission order)
    manual: dict  # grade_id -> markdown text
    extras: dict  # source cell id (or "") -> list of code sources to run after it
    notes: list


def read_notebook(text: str):
    nb = nbformat.reads(text, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("the notebook has no cell list")
    return nb


def extract(source_nb, submitted_nb) -> Extraction:
    """Take the student's answers out of ``submitted_nb`` (either may come from untrusted bytes)."""
    by_grade_id, by_cell_id = {}, {}
    for cell in source_nb.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        kind = kind_of(cell)
        if grade_id:
            by_grade_id[grade_id] = (kind, cell)
        if cell.get("id"):
            by_cell_id[cell["id"]] = (kind, cell)

    answers: dict = {}
    manual: dict = {}
    extras: dict = {}
    notes: list = []
    anchor = ""
    seen_order: list = []
    for cell in (submitted_nb.cells if submitted_nb is not None else []):
        if not isinstance(cell, dict) or "cell_type" not in cell:
            continue
        source = cell.get("source", "")
        source = utf8("".join(source) if isinstance(source, list) else str(source))
        meta = _nbgrader(cell)
        grade_id = meta.get("grade_id") if isinstance(meta.get("grade_id"), str) else None
        match = by_grade_id.get(grade_id) if grade_id else None
        if match is None and cell.get("id") in by_cell_id:
            match = by_cell_id[cell.get("id")]
            if match[0] in ("answer", "manual"):
                notes.append(f"cell {cell.get('id')!r}: its grading metadata was changed or removed; "
                             "recognised by its cell id")
        if match is None:
            if cell.get("cell_type") == "code" and source.strip():
                extras.setdefault(anchor, []).append(source)
                notes.append("an extra code cell was run as part of your code"
                             + (f" (after {anchor!r})" if anchor else ""))
            continue
        kind, source_cell = match
        source_id = _nbgrader(source_cell).get("grade_id") or source_cell.get("id")
        if kind == "answer":
            if cell.get("cell_type") != "code":
                notes.append(f"answer cell {source_id!r} was turned into {cell.get('cell_type')}; it was not run")
            else:
                answers.setdefault(source_id, []).append(source)
                if len(answers[source_id]) == 2:
                    notes.append(f"answer cell {source_id!r} appears more than once; all copies ran in order")
            _compare_meta(source_cell, meta, source_id, notes)
        elif kind == "manual":
            if source_id in manual:
                notes.append(f"written answer {source_id!r} appears more than once; the first one is kept")
            else:
                manual[source_id] = source
        seen_order.append(source_id)
        anchor = source_cell.get("id") or source_id

    source_order = [(_nbgrader(c).get("grade_id") or c.get("id")) for c in source_nb.cells]
    expected = [sid for sid in source_order if sid in set(seen_order)]
    if [sid for sid in dict.fromkeys(seen_order)] != expected:
        notes.append("cells were moved; everything ran in the original order")
    for cell in source_nb.cells:
        kind = kind_of(cell)
        grade_id = _nbgrader(cell).get("grade_id")
        if kind == "answer" and grade_id not in answers:
            notes.append(f"answer cell {grade_id!r} is missing from the submission")
        if kind == "manual" and grade_id not in manual:
            notes.append(f"written answer {grade_id!r} is missing from the submission")
    return Extraction(answers, manual, extras, notes)


def _compare_meta(source_cell, meta: dict, grade_id: str, notes: list) -> None:
    wanted = _nbgrader(source_cell)
    for key in ("grade", "solution", "locked", "points"):
        if meta.get(key) != wanted.get(key):
            notes.append(f"the grading metadata of {grade_id!r} was changed; the original was used")
            return


@dataclasses.dataclass(frozen=True)
class Slot:
    """One step of the run and where it belongs in the autograded notebook."""

    kind: str  # "exec-source", "exec-answer", "exec-extra", "calls"
    source_index: int  # index of the source cell it belongs to
    label: str


def plan_steps(source_nb, extraction: Extraction, plan_group) -> tuple[list, list]:
    """The job for the sandbox: ``(steps, slots)`` in source order.

    ``plan_group(group) -> tuple of Case`` gives the cases of a hidden test cell's group, or raises
    ``KeyError`` when no check is known (the cell is then reported as an error, with no calls).
    """
    steps, slots = [], []
    for extra in extraction.extras.get("", []):
        steps.append({"kind": "exec", "id": "extra", "source": extra})
        slots.append(Slot("exec-extra", -1, "extra"))
    for index, cell in enumerate(source_nb.cells):
        kind = kind_of(cell)
        grade_id = _nbgrader(cell).get("grade_id")
        if kind == "code":
            steps.append({"kind": "exec", "id": cell.get("id") or f"cell{index}", "source": cell.source})
            slots.append(Slot("exec-source", index, cell.get("id") or ""))
        elif kind == "answer":
            for number, text in enumerate(extraction.answers.get(grade_id, [])):
                steps.append({"kind": "exec", "id": grade_id, "source": text})
                slots.append(Slot("exec-answer", index, f"{grade_id}#{number}"))
        elif kind == "test":
            group = group_of(grade_id or "")
            try:
                cases = plan_group(group) if group else None
            except KeyError:
                cases = None
            if cases is not None:
                steps.append({"kind": "calls", "group": group,
                              "cases": [{"name": case.name, "calls": [call.to_json() for call in case.calls]}
                                        for case in cases]})
                slots.append(Slot("calls", index, grade_id))
        anchor = cell.get("id") or grade_id
        for extra in extraction.extras.get(anchor, []) if anchor else []:
            steps.append({"kind": "exec", "id": "extra", "source": extra})
            slots.append(Slot("exec-extra", index, "extra"))
    return steps, slots
