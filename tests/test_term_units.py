"""Issue 21's smaller pieces, each alone: rubrics for formgrader only, submission times, one
configuration, and the command line's names. The whole term runs in ``tests/test_readme_term.py``."""

from __future__ import annotations

import datetime

import nbformat
import pytest

from autograder.assignment import ASSIGNMENTS
from autograder.authoring.scratch_course import REPO_ROOT
from autograder.feedback.rubric import HEADING, is_rubric_cell, rubric_cell


def _written_answers():
    for assignment in ASSIGNMENTS:
        for path in sorted((REPO_ROOT / "source" / assignment).glob("*.ipynb")):
            nb = nbformat.read(str(path), as_version=4)
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "markdown" and meta.get("grade") and meta.get("solution"):
                    yield path.stem, meta["grade_id"]


def test_every_written_answer_of_both_assignments_has_its_rubric_for_formgrader():
    answers = list(_written_answers())
    assert len(answers) == 27 and {stem[:2] for stem, _ in answers} >= {"01", "20", "21", "24", "25", "26", "27", "28", "29", "30"}
    for stem, grade_id in answers:
        cell = rubric_cell(stem, grade_id)
        assert cell is not None, stem
        assert cell.source.startswith(HEADING) and f"`{grade_id}`" in cell.source, stem
        assert is_rubric_cell(cell) and "nbgrader" not in cell.metadata  # nbgrader neither grades nor checksums it
    assert rubric_cell("11_k_estimators", "explain_nothing") is None  # no written answer, no rubric


def _formgrader_html(nb) -> str:
    """``nb`` rendered as formgrader's grading view renders an autograded notebook: nbconvert's HTMLExporter
    with the course's configuration and nbgrader's ``formgrade`` template (``SubmissionHandler.get``)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from autograder.feedback import nbgrader_pages

    config = Config()
    nbgrader_pages.configure(config)
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": "module6", "notebook_id": "09_sequence_ppl", "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "", "student": "ann", "last_name": None, "first_name": None,
                 "notebook_path": "/x"}
    html, _ = HTMLExporter(config=config).from_notebook_node(nb, resources=resources)
    return html


def test_formgraders_page_shows_each_rubric_criterion_with_its_points_apart():
    """Issue 33, F16: formgrader's page has no table styles (its template drops nbconvert's stylesheet), so
    the rubric's table header read "pointsthe answer says": the criteria are a list, readable anywhere."""
    import re

    from autograder.feedback.rubric import tables_as_lists

    answer = nbformat.v4.new_markdown_cell("My answer.", id="explain")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 0.5,
                                   "grade_id": "explain_mask_dependence", "schema_version": 3}
    html = _formgrader_html(nbformat.v4.new_notebook(cells=[answer, rubric_cell("09_sequence_ppl",
                                                                                  "explain_mask_dependence")]))
    rubric = html[html.index("Rubric for the answer above"):]
    assert "<table" not in rubric and "<th>" not in rubric
    items = [item for item in re.findall(r"<li>(.*?)</li>", rubric, re.S) if "points</strong>" in item]
    assert len(items) == 2, items  # (the other items list the student's numbers)
    assert items[0].startswith("<strong>0.25 points</strong> when the answer says: the sum is unchanged (log 1 = 0)")
    assert items[1].startswith("<strong>0.25 points</strong> when the answer says: PPL depends on which tokens")
    # Every rubric of both assignments: no table left, one item per row of its file, escaped pipes kept.
    for stem, grade_id in _written_answers():
        from autograder.exercises import rubric_path
        rows = [line for line in rubric_path(stem).read_text(encoding="utf-8").splitlines()
                if line.startswith("| ") and not line.startswith("| points")]
        source = rubric_cell(stem, grade_id).source
        assert "|---" not in source and source.count("\n- **") == len(rows), stem
    assert "KL(q||p)" in tables_as_lists("| points | the answer says |\n|---|---|\n| 1 | KL(q\\|\\|p) |")


def test_student_pages_drop_the_rubric():
    from autograder.feedback import page
    from autograder.feedback.redaction import RedactHiddenTests

    answer = nbformat.v4.new_markdown_cell("My answer.", id="explain")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 0.5,
                                   "grade_id": "explain_mask_dependence", "schema_version": 3}
    nb = nbformat.v4.new_notebook(cells=[answer, rubric_cell("09_sequence_ppl", "explain_mask_dependence")])
    secret = "the sum is unchanged (log 1 = 0)"
    assert secret in nb.cells[1].source
    rows = [{"grade_id": "explain_mask_dependence", "score": None, "max_score": 0.5, "status": "needs_manual_grade"}]
    mine = page.render(nb, {"stem": "09_sequence_ppl", "student": "ann", "assignment": "module6"}, rows, [])
    assert "My answer." in mine and secret not in mine and "Rubric" not in mine
    redacted, _ = RedactHiddenTests().preprocess(nbformat.reads(nbformat.writes(nb), as_version=4), {})
    assert [c.source for c in redacted.cells] == ["My answer."]


def _submission(tmp_path, claim: str | None, received: datetime.datetime | None):
    from autograder.grading.receipts import write_receipt

    folder = tmp_path / "submitted" / "ann" / "module6"
    folder.mkdir(parents=True)
    if claim is not None:
        (folder / "timestamp.txt").write_text(claim)
    if received is not None:
        write_receipt(folder, received, "ann+module6+x+y")
    return folder


RECEIVED = datetime.datetime(2026, 12, 1, 12, 0, 0)


@pytest.mark.parametrize("claim, value, disputed", [
    ("2026-12-01 11:59:30 UTC", datetime.datetime(2026, 12, 1, 11, 59, 30), False),  # the copy took 30 s
    ("2026-12-01 09:00:00 UTC", RECEIVED, True),  # three hours earlier than the exchange saw it
    ("2026-12-01 12:10:00 UTC", RECEIVED, True),  # after it arrived: not what nbgrader submit writes
    ("my dog ate it", RECEIVED, True),
    (None, RECEIVED, False),
])
def test_the_exchange_receipt_counts_and_the_claim_is_checked(tmp_path, claim, value, disputed):
    from autograder.grading.timestamps import submission_time

    got = submission_time(_submission(tmp_path, claim, RECEIVED))
    assert got.value == value and got.disputed is disputed
    assert (got.problem is not None) is disputed
    if disputed and claim and claim[0].isdigit():
        assert claim.removesuffix(" UTC") in got.problem and "received" in got.problem


def test_without_a_receipt_the_claim_is_read_as_nbgrader_reads_it(tmp_path):
    from autograder.grading.timestamps import submission_time

    got = submission_time(_submission(tmp_path, "2026-12-01 09:00:00 UTC", None))
    assert got.value == datetime.datetime(2026, 12, 1, 9) and not got.disputed and got.problem is None


def test_received_time_is_the_latest_change_time_in_the_inbox(tmp_path):
    import os

    from autograder.grading.receipts import received_time

    inbox = tmp_path / "ann+module6+2026-12-01 09:00:00 UTC+abc"
    inbox.mkdir()
    (inbox / "a.ipynb").write_text("{}")
    os.utime(inbox / "a.ipynb", (0, 0))  # a student may set mtime and atime, never ctime
    got = received_time(inbox)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert abs((now - got).total_seconds()) < 120


def test_grade_reads_the_whole_nbgrader_config_chain(tmp_path, monkeypatch):
    from autograder.grading.gradebook import load_config

    user = tmp_path / "user"
    user.mkdir()
    (user / "nbgrader_config.py").write_text("c = get_config()\nc.LateSubmissionPlugin.penalty_method = 'zero'\n"
                                             "c.CourseDirectory.db_url = 'sqlite:///from-user.db'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'x'\n")
    config = load_config(course)
    assert config.LateSubmissionPlugin.penalty_method == "zero" and config.CourseDirectory.course_id == "x"
    assert config.CourseDirectory.db_url == "sqlite:///from-user.db"
    # The command line comes last, as on nbgrader's.
    config = load_config(course, ["--CourseDirectory.db_url=sqlite:///from-cli.db"])
    assert config.CourseDirectory.db_url == "sqlite:///from-cli.db"
    # A config that raises stops everything instead of leaving nbgrader's defaults in force.
    (user / "nbgrader_config.py").write_text("raise RuntimeError('typo')\n")
    from autograder.grading.errors import GradingError
    with pytest.raises(GradingError, match="could not be loaded"):
        load_config(course)


@pytest.mark.parametrize("tool", ["release", "selfstudy", "demo"])
def test_subcommand_help_names_the_command(tool, capsys):
    from autograder import cli

    with pytest.raises(SystemExit) as stopped:
        cli.main([tool, "--help"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: autograder {tool} ")


def test_only_nbgrader_settings_pass_through(capsys):
    from autograder import cli

    with pytest.raises(SystemExit):
        cli.main(["grade", "module6", "--bogus"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["report", "module6", "--CourseDirectory.db_url=x"])
    assert "unrecognized arguments" in capsys.readouterr().err


def test_the_summary_names_unreadable_notebooks_and_disputed_claims():
    from autograder import results
    from autograder.results import Status

    rows = [{"student": "eve", "notebook": "15_x", "grade_id": "test_a", "score": 0.0, "max_score": 2.0,
             "status": Status.UNREADABLE, "feedback": "not run", "misconceptions": []},
            {"student": "dan", "notebook": "timestamp.txt", "grade_id": None, "score": None, "max_score": None,
             "status": Status.TIMESTAMP_DISPUTED, "feedback": "claims 09:00, received 12:00"}]
    text = results.summary(rows, graded=1, skipped=0, failures=0, seconds=1.0)
    line = next(line for line in text.splitlines() if line.startswith("15_x"))
    assert line.split()[1:] == ["1", "0.0", "0", "1", "0", "0"]  # one student, counted with the errors
    assert "dan: claims 09:00, received 12:00" in text and "timestamp.txt" not in text.split("---")[0]
