"""Nothing computed from a hidden input goes back to the student (issue 20, finding 2).

Notebooks 15 and 21, graded with ``autograder grade`` and rendered by ``nbgrader generate_feedback``,
submitted by a student whose answers record every argument they are called with and who prints,
plots, raises, writes to a file and names exception classes after them: in extra cells between and
after the test cells, in a duplicate answer cell at the end, and during the calls themselves. None of
it reaches the autograded notebook, either feedback page or the report; the same notebook's early
output (before the first hidden test) is still shown.

The sentinel is assembled at run time (``"ZQX" + "LEAK"``) so that the student's own code, which the
pages do show, never contains it.
"""

from __future__ import annotations

import json

import nbformat
import pytest

from autograder.authoring import scratch_course
from autograder.demo.simulate import write_class
from autograder.feedback.withheld import RULE
from autograder.grading.batch import Options, run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

SENTINEL = "ZQXLEAK"
STEMS = {"module6": "15_stable_log_softmax", "module6_further": "21_sampler_trainer_mismatch"}

#: Over the per-cell highlighting budget: both pages show it as escaped plain text.
LONG_CELL = "# <b>not bold</b>\n" + "x = 1\n" * 4_000
EARLY = '''import matplotlib
import matplotlib.pyplot as plt
print("EARLY-" + "HONEST")
plt.figure(); plt.plot([0, 1], [1, 0]); plt.title("early")
'''

# Wraps every function the answers defined: records its arguments, writes them to files, prints and
# plots them during the call, and names an exception class after them when the answer raises.
RECORD = '''import functools, os, sys
TAG = "ZQX" + "LEAK"
RECORDED = []
ARMED = []  # set once the open checks (public inputs) have run, just before the first hidden test

def _record(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if not ARMED:
            return function(*args, **kwargs)
        text = repr((args, kwargs))[:300]
        RECORDED.append(text)
        for path in ("echo.txt", "/tmp/echo.txt", os.path.expanduser("~/echo.txt")):
            try:
                with open(path, "a") as handle:
                    handle.write(TAG + "-FILE " + text + "\\n")
            except OSError:
                pass
        print(TAG + "-DURING " + text)
        plt.figure(); plt.title(TAG + text[:40])
        try:
            return function(*args, **kwargs)
        except Exception:
            raise type(TAG + "_" + "".join(c for c in text if c.isalnum())[:60], (Exception,), {})() from None
    return wrapper

for _name, _value in list(globals().items()):
    if callable(_value) and getattr(_value, "__module__", None) == "__main__" and not _name.startswith("_") \\
            and _name not in ("plt",):
        globals()[_name] = _record(_value)
'''

ECHO_PRINT = 'print(TAG + " " + " | ".join(RECORDED)); sys.stderr.write(TAG + "-ERR " + " | ".join(RECORDED))\n'
ECHO_PLOT = 'plt.figure(); plt.title(TAG + RECORDED[0][:40]); plt.plot(range(len(RECORDED)))\n'
ECHO_FILE = 'for _path in ("echo.txt", "/tmp/echo.txt"):\n    print(open(_path).read())\n'
ECHO_RAISE = 'raise ValueError(TAG + "-RAISED " + " | ".join(RECORDED))\n'
ECHO_DISPLAY = 'from IPython.display import display\ndisplay(TAG + "-DISPLAY " + " | ".join(RECORDED))\nTAG + RECORDED[-1]\n'


def _extra(source: str, number: int):
    return nbformat.v4.new_code_cell(source, id=f"echo-extra-{number}")


def _arm(path) -> None:
    """Turn a submitted solution notebook into the recording, echoing one."""
    nb = nbformat.read(str(path), as_version=4)
    cells = []
    number = 0
    answers = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    seen_test = False
    for cell in nb.cells:
        if not cells:
            cells.append(_extra(EARLY, 0))
            cells.append(_extra(LONG_CELL, 100))
        cells.append(cell)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell is answers[-1]:
            number += 1
            cells.append(_extra(RECORD, number))  # before the first hidden test: its (empty) output is kept
        if cell.get("id") == "tests-intro":
            number += 1
            cells.append(_extra("ARMED.append(True)\n", number))
        if grade_id.startswith("test_") and not seen_test:
            seen_test = True
            for source in (ECHO_PRINT, ECHO_PLOT):  # between two test cells
                number += 1
                cells.append(_extra(source, number))
    for source in (ECHO_PRINT, ECHO_PLOT, ECHO_FILE, ECHO_DISPLAY, ECHO_RAISE):  # after the last one
        number += 1
        cells.append(_extra(source, number))
    duplicate = nbformat.from_dict(json.loads(json.dumps(answers[-1])))
    duplicate["id"] = "echo-duplicate"
    duplicate.source += "\n" + ECHO_PRINT.replace("TAG", '("ZQX" + "LEAK")')
    cells.append(duplicate)
    nb.cells = cells
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def echoed(tmp_path_factory):
    course = scratch_course.make_course_copy(tmp_path_factory.mktemp("echo") / "course", stems=STEMS.values())
    for assignment in STEMS:
        scratch_course.generate_release(course, assignment)
        write_class(course, {"echo": "solutions"}, assignment)
        _arm(course / "submitted" / "echo" / assignment / f"{STEMS[assignment]}.ipynb")
    rows = []
    for assignment in STEMS:
        report = course / f"{assignment}.jsonl"
        assert run(Options(assignment=assignment, course_dir=str(course), jobs=1, timeout=30, report=str(report),
                           progress=False, force=True)) == 0
        rows += [json.loads(line) for line in report.read_text().splitlines()]
        feedback = scratch_course.run_nbgrader(course, "generate_feedback", assignment, "--force",
                                               "--student", "echo", check=False)
        assert feedback.ok, feedback.output
    return course, rows


def _texts(course) -> dict:
    """Every file the grader or nbgrader wrote for the student (autograded notebooks, both pages, state)."""
    found = {}
    for top in ("autograded", "feedback"):
        for path in sorted((course / top / "echo").rglob("*")):
            if path.is_file():
                found[str(path.relative_to(course))] = path.read_bytes().decode("utf-8", "replace")
    return found


def test_no_recorded_input_reaches_any_file_page_or_row(echoed):
    course, rows = echoed
    texts = _texts(course)
    pages = [name for name in texts if name.endswith(".html")]
    # ours (feedback/<student>/<assignment>/<stem>.html) is overwritten by nbgrader's: both were made
    assert len(pages) == 2 and len([n for n in texts if n.endswith(".ipynb")]) == 2, sorted(texts)
    for name, text in texts.items():
        assert SENTINEL not in text, name
    for row in rows:
        assert SENTINEL not in json.dumps(row), row
    # the answers still ran and were graded (recording does not change a returned value)
    public = [r for r in rows if r["grade_id"] == "test_public"]
    assert len(public) == 2 and all(r["score"] == r["max_score"] for r in public), public


def test_the_autograded_notebook_keeps_only_what_ran_before_the_first_hidden_test(echoed):
    course, _ = echoed
    for assignment, stem in STEMS.items():
        nb = nbformat.read(str(course / "autograded" / "echo" / assignment / f"{stem}.ipynb"), as_version=4)
        first = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id", "")
                     .startswith("test_"))
        early = "".join(o.get("text", "") for c in nb.cells[:first] if c.cell_type == "code" for o in c.outputs)
        assert "EARLY-HONEST" in early
        assert any("image/png" in o.get("data", {}) for c in nb.cells[:first] if c.cell_type == "code"
                   for o in c.outputs)
        for cell in nb.cells[first:]:
            if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
                assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


def test_our_page_shows_the_early_output_and_states_the_rule(tmp_path, echoed):
    # nbgrader's page overwrote ours: ours is rendered again from the autograded notebook, as the grader did
    from autograder.feedback import page

    course, rows = echoed
    for assignment, stem in STEMS.items():
        nb = nbformat.read(str(course / "autograded" / "echo" / assignment / f"{stem}.ipynb"), as_version=4)
        html = page.render(nb, {"student": "echo", "assignment": assignment, "stem": stem},
                           [r for r in rows if r["notebook"] == stem], [])
        assert SENTINEL not in html and "EARLY-HONEST" in html and RULE in html
        assert html.count("<img ") == 1  # the early figure; none of those plotted during or after the calls
        assert "ran after a hidden test: its outputs are not shown" in html


def test_nbgrader_page_states_the_rule(echoed):
    course, _ = echoed
    for assignment, stem in STEMS.items():
        html = (course / "feedback" / "echo" / assignment / f"{stem}.html").read_text()
        assert RULE in html and "EARLY-HONEST" in html and SENTINEL not in html
        # the long cell went through the template's plain block, escaped, not through Pygments
        assert "# &lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html


def test_outcome_texts_the_notebook_chose_are_put_in_the_graders_words():
    from autograder.channel import ObjectData, Raised, Returned, Unreadable
    from autograder.grading.outcome_text import OTHER_EXCEPTION, UNKNOWN_REASON, trusted_outcome

    call = {"target": "f", "read_only": False}
    forged = Raised("ZQXLEAK_0_25", ("ZQXLEAK_0_25", "ValueError"), "0.25")
    assert trusted_outcome(forged, call).type_name == OTHER_EXCEPTION
    assert trusted_outcome(forged, call).is_a("ValueError")  # still judged as what it claims to be
    assert trusted_outcome(Raised("ValueError", ("ValueError",), ""), call).type_name == "ValueError"
    assert trusted_outcome(Unreadable("ZQXLEAK 0.25"), call).reason == UNKNOWN_REASON
    assert trusted_outcome(Unreadable("a container with 12345 items is too large"), call).reason == \
        "the returned value is too large"
    kept = "no function named 'f' is defined: run the cell that defines it"
    assert trusted_outcome(Unreadable(kept), call).reason == kept
    assert trusted_outcome(Unreadable(kept.replace("'f'", "'ZQXLEAK'")), call).reason == UNKNOWN_REASON
    assert trusted_outcome(Unreadable("the call did not finish within 123.456 s"), call,
                           {"call_seconds": 10}).reason == "the call did not finish within 10 s"
    nested = trusted_outcome(Returned([ObjectData("ZQXLEAK", {"x": ObjectData("ZQXLEAK2", {"y": 1})})]), call)
    assert "ZQXLEAK" not in repr(nested) and nested.value[0].fields["x"].fields == {"y": 1}


def test_dict_keys_the_answer_chose_are_neither_counted_nor_quoted():
    import numpy as np

    from autograder.channel import Returned
    from autograder.checks._core import Reject
    from autograder.checks._dict_results import judge_key

    judge = judge_key("f", "a", {"a": np.zeros(2)}, ["a", "b"], exact=True)
    with pytest.raises(Reject) as refused:
        judge((Returned({"a": [0.0, 0.0], "ZQXLEAK_0_25": 1.0, "ZQXLEAK_2": 2.0}),))
    message = refused.value.message
    assert SENTINEL not in message and "some are missing" in message and "it has other keys" in message
    assert "2" not in message  # neither how many keys it added nor which expected ones it left out
