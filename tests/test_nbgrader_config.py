"""nbgrader_config.py really configures nbgrader: it loads without error and its values are in effect.

nbgrader logs a failing config file and carries on with defaults, so "nbgrader ran" proves nothing:
these tests ask nbgrader's own app, in a fresh process, what it ended up with.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.feedback.redaction import HIDDEN_MESSAGE, PLACEHOLDER, RedactHiddenTests
from autograder.authoring.scratch_course import COURSE_ID, REPO_ROOT

# Runs in a child process (cwd = a course directory) so that nbgrader's singletons and sys.path
# start clean; it prints what nbgrader's classes resolved from the config.
PROBE = textwrap.dedent("""
    import json
    from nbgrader.apps.nbgraderapp import NbGraderApp
    import nbformat
    import nbgrader.converters
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions, Execute
    from nbgrader.validator import Validator
    from autograder.feedback.converters import Module6Feedback
    from autograder.grading.nbgrader_bridge import SandboxedAutograde

    app = NbGraderApp(raise_config_file_errors=True)
    app.initialize([])
    cd = app.coursedir
    # The stubs of a kit notebook, as the release step that clears solutions writes them.
    (stub_step,) = [p for p in GenerateAssignment(coursedir=cd, parent=app).preprocessors
                    if issubclass(p, ClearSolutions)]
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}})
    meta = {"grade": False, "solution": True, "locked": False, "schema_version": 3}
    nb.cells = [nbformat.v4.new_code_cell("### BEGIN SOLUTION\\nx = 1\\n### END SOLUTION", id="a",
                                          metadata={"nbgrader": dict(meta, grade_id="a")}),
                nbformat.v4.new_markdown_cell("An answer", id="b",
                                              metadata={"nbgrader": dict(meta, grade_id="b", grade=True, points=1)})]
    nb, _ = stub_step(parent=app).preprocess(nb, {"nbgrader": {"assignment": "module6", "notebook": "x"}})
    execute = Execute(parent=app)
    # nbgrader's names run the kit's converters for the kit's assignments (tests/test_course_setup.py: the others).
    feedback = Module6Feedback(coursedir=cd, parent=app)
    autograde = SandboxedAutograde(coursedir=cd, parent=app)
    name = lambda p: p.__module__ + "." + p.__name__
    print(json.dumps({
        "course_id": cd.course_id, "root": cd.root, "ignore": list(cd.ignore),
        "code_stub": {"python": nb.cells[0].source}, "text_stub": nb.cells[1].source,
        "names": [name(nbgrader.converters.Autograde), name(nbgrader.converters.GenerateFeedback)],
        "timeout": execute.timeout, "startup_timeout": execute.startup_timeout,
        "interrupt_on_timeout": execute.interrupt_on_timeout,
        "validate_all": Validator(parent=app).validate_all,
        "feedback_preprocessors": [p.__module__ + "." + p.__name__ for p in feedback.preprocessors],
        "sanitize": [name(p) for p in autograde.sanitize_preprocessors],
        "autograde": [name(p) for p in autograde.autograde_preprocessors],
        "autograde_exporter": name(autograde.exporter_class),
    }))
""")


def probe(course: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=course, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_config_file_loads_without_error():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    assert config.CourseDirectory.course_id == COURSE_ID
    assert Path(config.CourseDirectory.root) == REPO_ROOT


@pytest.mark.parametrize("where", ["repository", "copy"])
def test_values_are_in_effect(where, tmp_path):
    if where == "repository":
        course = REPO_ROOT
    else:
        # A scratch copy holds only the config and its folders: root must follow the file, and the
        # feedback preprocessor must still import.
        course = tmp_path / "course"
        course.mkdir()
        shutil.copyfile(REPO_ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    got = probe(course)
    assert got["course_id"] == COURSE_ID
    assert Path(got["root"]) == course
    assert {".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"} <= set(got["ignore"])
    assert {"rubrics", "keys", "selfstudy"} <= set(got["ignore"])
    stub = got["code_stub"]["python"]
    assert "raise NotImplementedError(" in stub and "Replace this line with your code" in stub
    assert got["text_stub"] != "YOUR ANSWER HERE" and got["text_stub"].startswith("YOUR ANSWER HERE")
    assert got["timeout"] == 60 and got["startup_timeout"] >= 60 and got["interrupt_on_timeout"] is True
    assert got["validate_all"] is True
    assert got["feedback_preprocessors"][0] == "autograder.feedback.redaction.RedactHiddenTests"
    assert "nbgrader.preprocessors.getgrades.GetGrades" in got["feedback_preprocessors"]
    # `nbgrader autograde` and formgrader's button grade in the sandbox: no kernel ever runs student code.
    bridge = "autograder.grading.nbgrader_bridge."
    assert got["sanitize"] == [bridge + "DropSubmission"]
    # nbgrader's SaveAutoGrades, whose comments also name an unreadable notebook (a subclass).
    assert got["autograde"] == [bridge + "SandboxedGrade", "autograder.grading.gradebook.SaveStatedGrades",
                                "nbgrader.preprocessors.latesubmissions.AssignLatePenalties", bridge + "RememberGraded"]
    assert got["autograde_exporter"] == bridge + "SubmissionExporter"
    assert got["names"] == [bridge + "ScopedAutograde", "autograder.feedback.converters.ScopedGenerateFeedback"]


def test_ignore_keeps_instructor_material_out(tmp_path):
    """The ignore globs, applied as nbgrader applies them, drop instructor files and keep data files."""
    from nbgrader.utils import find_all_files

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    names = ["rubrics/ex01.md", "keys/ex01.py", "ex01_key.json", "grading_rubric.md", "selfstudy/a.ipynb",
             "answer_key.txt", "solutions/a.py", "instructor_notes.md", "__pycache__/x.pyc", "gradebook.db",
             "data/tokens.csv", "figure.png"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    kept = {Path(p).relative_to(tmp_path).as_posix()
            for p in find_all_files(str(tmp_path), list(config.CourseDirectory.ignore) + ["*.ipynb"])}
    assert kept == {"data/tokens.csv", "figure.png"}


def _test_cell(source, outputs=()):
    import nbformat

    cell = nbformat.v4.new_code_cell(source, id="test-x")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "test_x",
                                 "points": 1, "schema_version": 3}
    cell.outputs = [nbformat.NotebookNode(o) for o in outputs]
    return cell


def test_redaction_cuts_hidden_regions_and_tracebacks():
    cell = _test_cell('"""doc"""\n### BEGIN HIDDEN TESTS\nsecret_call(42)\n### END HIDDEN TESTS\nvisible()',
                      [{"output_type": "error", "ename": "AssertionError", "evalue": "expected 42",
                        "traceback": ["secret_call(42)"]},
                       {"output_type": "stream", "name": "stdout", "text": "feedback line\n"}])
    cell, _ = RedactHiddenTests().preprocess_cell(cell, {}, 0)
    assert cell.source == f'"""doc"""\n{PLACEHOLDER}\nvisible()'
    error = cell.outputs[0]
    assert "42" not in json.dumps(error) and error["ename"] == "AssertionError" and HIDDEN_MESSAGE in error["traceback"][0]
    assert cell.outputs[1]["text"] == "feedback line\n"  # printed check feedback is meant for the student


def test_redaction_leaves_student_cells_alone():
    import nbformat

    cell = nbformat.v4.new_code_cell("# BEGIN HIDDEN TESTS is just text I typed\nx = 1", id="answer-x")
    cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "grade_id": "x",
                                 "schema_version": 3}
    before = cell.source
    cell, _ = RedactHiddenTests().preprocess_cell(cell, {}, 0)
    assert cell.source == before


def test_unterminated_hidden_region_hides_the_rest():
    cell = _test_cell("### BEGIN HIDDEN TESTS\nsecret()\nmore_secret()")
    cell, _ = RedactHiddenTests().preprocess_cell(cell, {}, 0)
    assert "secret" not in cell.source


# formgrader builds its grading view's exporter as `HTMLExporter(config=...)` from the course config
# plus `HTMLExporter.template_name = 'formgrade'` (nbgrader 0.9.6,
# server_extensions/formgrader/formgrader.py, FormgradeExtension.build_extra_config and
# init_tornado_settings); GenerateFeedback builds `exporter_class(parent=...)`.
TEMPLATES_PROBE = textwrap.dedent("""
    import json, os
    import nbformat
    from nbconvert.exporters import HTMLExporter
    from nbgrader.apps.nbgraderapp import NbGraderApp
    from nbgrader.converters import GenerateFeedback
    from nbgrader.server_extensions.formgrader import handlers

    app = NbGraderApp(raise_config_file_errors=True)
    app.initialize([])
    config = app.config.copy()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    grading_view = HTMLExporter(config=config)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("An answer")])
    # the resources formgrader's SubmissionHandler passes (handlers.py, SubmissionHandler.get)
    resources = {"assignment_id": "module6", "notebook_id": "01", "submission_id": "x", "index": 0, "total": 1,
                 "base_url": "", "student": "ada", "last_name": None, "first_name": None, "notebook_path": "x"}
    html, _ = grading_view.from_notebook_node(nb, resources=resources)
    from autograder.feedback.converters import Module6Feedback
    feedback = Module6Feedback(coursedir=app.coursedir, parent=app)  # what nbgrader's name runs for module6
    exporter = feedback.exporter_class(parent=feedback, config=feedback.config)
    print(json.dumps({"view_template": grading_view.template_name, "view_file": grading_view.template_file,
                      "view_ok": "An answer" in html,
                      "feedback_class": type(exporter).__name__, "feedback_template": exporter.template_name,
                      "feedback_file": exporter.template_file}))
""")


def test_formgrader_view_and_feedback_page_each_keep_their_template():
    """The feedback template configured for `generate_feedback` must not take over formgrader's grading
    view (it did: HTTP 500, TemplateNotFound: bootstrap.min.css), nor nbgrader's 'feedback' default ours."""
    proc = subprocess.run([sys.executable, "-c", TEMPLATES_PROBE], cwd=REPO_ROOT, text=True, capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["view_template"] == "formgrade" and got["view_file"] in (None, "index.html.j2"), got
    assert got["view_ok"]
    assert got["feedback_class"] == "FeedbackExporter"
    assert got["feedback_template"] == "module6_feedback" and got["feedback_file"] == "module6_feedback.html.j2"


BOUNDED_VIEW_PROBE = TEMPLATES_PROBE.split("nb = nbformat")[0] + textwrap.dedent("""
    import hashlib, sys, time
    # The red team's notebook: 1,960 extra code cells of 10 KB, slow to highlight, after four of 2 KB.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("An answer")] + [
        nbformat.v4.new_code_cell("a+1;" * 500) for _ in range(4)] + [
        nbformat.v4.new_code_cell("a+1;" * 2_500) for _ in range(1_960)])
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    path = os.path.join(sys.argv[1], "autograded.ipynb")
    nbformat.write(nb, path)
    before = hashlib.sha256(open(path, "rb").read()).hexdigest()
    resources = {"assignment_id": "module6", "notebook_id": "01", "submission_id": "x", "index": 0, "total": 1,
                 "base_url": "", "student": "ada", "last_name": None, "first_name": None, "notebook_path": "x"}
    started = time.perf_counter()
    html, _ = grading_view.from_filename(path, resources=resources)
    seconds = time.perf_counter() - started
    print(json.dumps({"bytes": len(html.encode()), "seconds": seconds, "view_ok": "An answer" in html,
                      "formgrade": "nbgrader_cell" in html or "formgrade" in html,
                      "highlighted": html.count('<span class="mi">1</span>'),
                      "cut": html.count("more characters not shown"),
                      "untouched": hashlib.sha256(open(path, "rb").read()).hexdigest() == before}))
""")


def test_formgrader_view_of_a_huge_notebook_is_bounded(tmp_path):
    """formgrader's exporter (built as in the probe above) renders many large code cells in under 5 MB."""
    proc = subprocess.run([sys.executable, "-c", BOUNDED_VIEW_PROBE, str(tmp_path)], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["bytes"] < 5_000_000, got
    assert got["view_ok"] and got["untouched"], got
    # The four small cells are still highlighted (2,000 tokens each: within a cell's and the page's budgets);
    # a cell of 10,000 one-character tokens is over a cell's HIGHLIGHT_CELL_TOKENS: plain text, cut with a note.
    assert got["highlighted"] == 4 * 500, got
    assert got["cut"] > 1_900, got
