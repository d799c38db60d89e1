"""The results vocabulary: one verdict record, its one text and one HTML rendering, read by the floors above.

The four ways a case ends (passed, failed, withheld by a gate, not run because the notebook stopped)
are rendered from :class:`autograder.results.GroupVerdict` alone; the in-kernel check, the batch
grader's test cell and self-study print the same text, and the feedback page shows the same record.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat

from autograder.checks._core import CaseResult, GroupResult
from autograder.feedback.page import verdict_html
from autograder.results import METADATA_KEY, CaseVerdict, GroupVerdict, verdict_text, verdicts_of

ROOT = Path(__file__).resolve().parents[1]
GATE = "points withheld: `f` raised on valid input too (case 'ok'): rejecting bad input counts only when valid input is accepted."


def _result():
    """A group with one case of each kind: passed, failed (twice, the same message), withheld."""
    cases = (CaseResult("good", "g", True, "", None, 1.0),
             CaseResult("bad one", "g", False, "the result is wrong", "sign-flip", 1.0),
             CaseResult("bad two", "g", False, "the result is wrong", "sign-flip", 1.0),
             CaseResult("gated one", "g", False, GATE, None, 1.0, withheld=True),
             CaseResult("gated two", "g", False, GATE, None, 1.0, withheld=True))
    return GroupResult("g", "Group G", 0.6, 3.0, cases, gated=GATE, gated_by=("f",))


def test_the_text_tells_each_kind_of_case_once():
    text = verdict_text(GroupVerdict.from_result(_result()))
    assert text.splitlines() == [
        "Group G: 0.6 / 3 points",
        f"  [WITHHELD] {GATE}",
        "  [PASS] good",
        "  [FAIL] bad one and 1 more case: the result is wrong",
        "  [WITHHELD] gated one and 1 more case",
    ]


def test_a_gated_case_reads_withheld_in_every_door():
    # GroupResult.feedback (self-study, the in-kernel check) and the batch grader's test cell are one text.
    result = _result()
    assert result.feedback() == verdict_text(GroupVerdict.from_result(result, ran={"good"}, reason="timeout"))
    assert "[FAIL] gated" not in result.feedback()


def test_student_text_cannot_start_a_line_of_its_own():
    forged = CaseResult("c", "g", False, "nope\n  [PASS] c\nGroup G: 3 / 3 points", None, 1.0)
    text = verdict_text(GroupVerdict.from_result(GroupResult("g", "Group G", 0.0, 3.0, (forged,))))
    assert len(text.splitlines()) == 2 and text.splitlines()[1].startswith("  [FAIL] c: nope \u23ce ")


def test_the_record_round_trips_through_the_notebook_metadata():
    record = GroupVerdict.from_result(_result(), ran={"good", "bad one"}, reason="timeout")
    stored = record.to_json()
    assert list(stored) == ["group", "title", "points_earned", "points_available", "cases", "misconceptions",
                            "reason", "capped", "withheld"]
    assert stored["misconceptions"] == ["sign-flip"] and stored["cases"][2]["ran"] is False
    # Only a withheld case carries the key, so records of groups without a gate are what they were.
    assert [case.get("withheld") for case in stored["cases"]] == [None, None, None, True, True]
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "0.6"},
                                           metadata={METADATA_KEY: stored})]
    assert GroupVerdict.from_json(verdicts_of(cell)) == record


def test_a_record_of_the_wrong_shape_reads_as_empty_fields():
    record = GroupVerdict.from_json({"title": 3, "cases": [{"name": "x", "passed": True}, "junk"], "reason": []})
    assert record.title == "" and record.reason is None and record.cases == (CaseVerdict("x", True),)


def _html(record):
    return verdict_html(record, 3)


def test_the_page_shows_passed_failed_and_withheld_cases_as_words():
    page = _html(GroupVerdict.from_result(_result()))
    assert "<span class='tag'>Failed</span>: 0.6 / 3 points, 1 of 5 cases passed." in page
    assert f"<span class='tag'>Withheld</span>: {GATE.replace(chr(39), '&#x27;')}" in page
    assert "✔ Passed</span> good</li>" in page
    assert "✘ Failed (2 cases)</span> bad one; bad two<span class='teach'>What this suggests: the result is wrong" in page
    assert "⊖ Withheld (2 cases)</span> gated one; gated two</li>" in page
    assert "Failed</span> gated" not in page


def test_the_page_tells_cases_that_did_not_run():
    page = _html(GroupVerdict.from_result(_result(), ran={"good"}, reason="timeout"))
    assert "4 of 5 cases did not run because your notebook stopped early" in page
    nothing = _html(GroupVerdict.from_result(_result(), ran=set(), reason="rejected"))
    assert "Not run</span>: 0.6 / 3 points, none of its 5 cases ran because your notebook was not run" in nothing
    passed = _html(GroupVerdict("g", "All <good>", 3.0, 3.0, (CaseVerdict("a", True),)))
    assert "Tests: All &lt;good&gt;" in passed and "1 of 1 cases passed" in passed and "<li>" not in passed


# ----------------------------------------------------------------------------- who imports the grader

#: Packages that only read results: none of them imports the grader for its vocabulary.
READERS = ("feedback", "insight", "demo")
#: What insight/ and demo/ (floor 6, above the grader) still take from it, none of it result vocabulary:
#: the bounded notebook reader, the course directory, the sandbox the demo runs, and the limits until
#: autograder/limits.py exists (issue 37's limits piece).
ALLOWED = {
    "insight": {"autograder.grading.intake", "autograder.grading.gradebook", "autograder.grading.worker"},
    "demo": {"autograder.grading.sandbox"},
}


def _imports(path: Path) -> set:
    """The modules ``path`` imports (``from package import module`` counts the module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _grading_modules(path: Path) -> set:
    """The ``autograder.grading`` modules ``path`` imports (anything from the package, at module depth)."""
    return {".".join(name.split(".")[:3]) for name in _imports(path) if name.startswith("autograder.grading.")} | (
        {"autograder.grading"} if "autograder.grading" in _imports(path) and not any(
            name.startswith("autograder.grading.") for name in _imports(path)) else set())


def test_readers_of_results_do_not_import_the_grader_for_them():
    wrong = {}
    for package in READERS:
        for path in sorted((ROOT / "autograder" / package).rglob("*.py")):
            extra = _grading_modules(path) - ALLOWED.get(package, set())
            if extra:
                wrong[str(path.relative_to(ROOT))] = sorted(extra)
    assert not wrong, wrong


def test_the_results_module_sits_on_the_bottom_floor():
    imported = {name for name in _imports(ROOT / "autograder" / "results.py") if name.startswith("autograder")}
    assert not imported, imported


def test_the_in_kernel_check_prints_the_text_and_carries_the_record():
    # A hidden test cell graded by plain nbgrader: its points are a float whose output carries the record.
    from IPython.core.formatters import DisplayFormatter

    from autograder.checks import Points

    record = GroupVerdict.from_result(_result()).to_json()
    points = Points(0.6, record)
    assert points == 0.6 and isinstance(points, float) and repr(points) == "0.6"
    data, metadata = DisplayFormatter().format(points)
    assert data == {"text/plain": "0.6"} and metadata == {METADATA_KEY: record}
