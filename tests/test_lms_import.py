"""The kit's grade files "uploaded" into a fake Canvas course and a fake Moodle site built from the
importers' own rules (``tests/lms_fake.py``: Canvas's ``GradebookImporter#parse!`` / ``process_student`` /
``process_submissions`` in ``app/models/gradebook_importer.rb``, ``populateGradeDataPerSubmission`` in
``ui/features/gradebook_uploads/jquery/process_gradebook_upload.js``, ``Assignment#interpret_grade``;
Moodle's ``gradeimport_csv_load_data::prepare_import_grade_data`` / ``check_user_exists`` /
``update_grade_item`` in ``grade/import/csv/classes/load_data.php`` and ``grade_import_commit`` in
``grade/import/lib.php``; commits in that module's docstring). Each test checks every student's
resulting grade: the nbgrader total after the late penalty on the LMS assignment's scale, unchanged
where the kit has none, never another student's.

The class (``tests/lms_support.py``): a 100-point and an 80-point assignment; a late student; a penalty
larger than the score; three students named "Kim Lee" (one not in the LMS); a name that is a
spreadsheet formula; a gradebook id in NFD whose LMS login is NFC; a gradebook id "Eve" whose LMS
username is "eve"; two accounts sharing an email (differing in case); a student with no submission
who is Excused in Canvas; a roster-only student with a grade in the LMS; two gradebook students no
LMS knows (one with an invented formula id). The Canvas course has an existing 10-point ``module6``.
"""

from __future__ import annotations

import shutil

import pytest

import lms_fake as fake
from autograder.lms import CanvasExport, ExportRefused, MoodleExport
from lms_support import (CLASS, FORMULA_ID, NFD_JOSE, add_extra_credit, build_gradebook, canvas_course, expected_score, export,
                         mark_pending, moodle_site, nbgrader_scores, read_csv)

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: nbgrader id -> Canvas user id (kim3, zed and the formula id have no Canvas account; dee has no gradebook entry)
CANVAS_IDS = {"ada": 101, "ben": 102, "cai": 103, "kim1": 104, "kim2": 105, "frm": 106, NFD_JOSE: 107, "nos": 108,
              "dee": 109, "Eve": 110, "twin1": 111, "twin2": 112}
MOODLE_IDS = {"ada": 1, "ben": 2, "cai": 3, "kim1": 4, "kim2": 5, "frm": 6, NFD_JOSE: 7, "nos": 8, "dee": 9,
              "Eve": 10, "twin1": 11, "twin2": 12}
IN_GRADEBOOK = {s.id for s in CLASS}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms-import")
    return build_gradebook(root / "gradebook.db")


def _roster(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _spreadsheet_safe(rows: list) -> None:
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_STARTS), f"a spreadsheet would run {cell!r} as a formula"


def _expected(student: str, assignment: str, points: float, missing, before):
    """What the LMS must hold afterwards: the score on ``points``, ``missing`` for no submission
    (``"leave"``: whatever it had), and ``before`` wherever the kit has no grade."""
    if student not in IN_GRADEBOOK:
        return missing if missing != "leave" else before
    score = expected_score(student, assignment)
    if score is None:
        return missing if missing != "leave" else before
    maximum = 100.0 if assignment == "module6" else 80.0
    return score * points / maximum


def test_the_class_totals_are_nbgraders_own(gradebook, tmp_path):
    """The expected totals (the spec's arithmetic) are what nbgrader's CsvExportPlugin writes."""
    theirs = nbgrader_scores(gradebook, tmp_path)
    checked = 0
    for student in CLASS:
        for assignment in ("module6", "module6_further"):
            if (student.id, assignment) in theirs and assignment in student.subs:
                assert theirs[(student.id, assignment)] == pytest.approx(expected_score(student.id, assignment))
                checked += 1
    assert checked >= 12


# ---- Canvas -------------------------------------------------------------------------------------

@pytest.mark.parametrize("missing", ["leave", "zero", "excuse"])
def test_canvas_export_lands_each_students_grade_on_the_existing_10_point_assignment(gradebook, tmp_path, missing):
    course = canvas_course()
    before = {sid: course.grade(cid, "module6") for sid, cid in CANVAS_IDS.items()}
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster, missing=missing)
    rows = read_csv(tmp_path / "canvas.csv")
    _spreadsheet_safe(rows)
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[0][5] == "module6 (201)"  # the roster's Canvas export names the existing assignment
    result = course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert not result.failed and not result.errors and not result.created
    assert result.unmatched == []  # every row written matches by an id
    want = {"zero": 0.0, "excuse": "EX", "leave": "leave"}[missing]
    for student, canvas_id in CANVAS_IDS.items():
        expected = _expected(student, "module6", 10.0, want, before[student])
        got = course.grade(canvas_id, "module6")
        if isinstance(expected, float):
            assert got == pytest.approx(expected, abs=1e-9), (student, got, expected)
        else:
            assert got == expected, (student, got, expected)
    # the checks that matter most, spelled out
    assert course.grade(101, "module6") == pytest.approx(8.35)  # 83.5 of 100 on a 10-point assignment
    assert course.grade(102, "module6") == pytest.approx(6.025)  # late: 60.25 of 100
    assert course.grade(103, "module6") == 0.0  # a penalty above the score stops at 0
    assert course.grade(104, "module6") == pytest.approx(4.0) and course.grade(105, "module6") == pytest.approx(9.0)
    if missing == "leave":
        assert course.grade(108, "module6") == "EX" and course.grade(109, "module6") == 7.0


def test_canvas_creates_the_80_point_assignment_and_leaves_the_rest_alone(gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6_further"], roster=roster)
    rows = read_csv(tmp_path / "canvas.csv")
    assert rows[0][5] == "module6_further" and rows[1][0].strip() == "Points Possible" and rows[1][5] == "80"
    before = {cid: course.grade(cid, "module6") for cid in CANVAS_IDS.values()}
    result = course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert result.created == [("module6_further", 80.0)] and not result.unmatched and not result.errors
    for student, canvas_id in CANVAS_IDS.items():
        expected = _expected(student, "module6_further", 80.0, "leave", None)
        got = course.grade(canvas_id, "module6_further")
        assert got == (pytest.approx(expected) if expected is not None else None), student
        assert course.grade(canvas_id, "module6") == before[canvas_id]  # the other assignment untouched
    assert course.grade(101, "module6_further") == pytest.approx(72.0)  # 90% of 80


def test_canvas_points_setting_writes_raw_points_on_the_lms_scale(gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster, percent=False,
           points={"module6": 10})
    rows = read_csv(tmp_path / "canvas.csv")
    by_id = {row[1]: row[5] for row in rows[2:]}
    assert by_id["101"] == "8.35" and by_id["102"] == "6.025" and "%" not in "".join(by_id.values())
    course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert course.grade(101, "module6") == pytest.approx(8.35)
    # the setting must agree with what Canvas's own export says about the assignment's points
    with pytest.raises(ExportRefused, match="20 points.*says 10"):
        export(CanvasExport, gradebook, tmp_path / "bad.csv", ["module6"], roster=roster, percent=False,
               points={"module6": 20})
    assert not (tmp_path / "bad.csv").exists()


def test_canvas_leaves_out_and_lists_students_it_cannot_match_by_an_id(gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster)
    rows = read_csv(tmp_path / "canvas.csv")
    written_ids = [row[1] for row in rows[2:]]
    assert "" not in written_ids and len(written_ids) == 10  # never a row without an id
    text = (tmp_path / "canvas.csv").read_text(encoding="utf-8-sig")
    assert "kim3" not in text and "zed" not in text and "HYPERLINK(\"http://evil.example\",\"x\")" not in text
    unmatched = read_csv(tmp_path / "canvas.csv.unmatched.csv")
    listed = {row[0] for row in unmatched[1:]}
    assert listed == {"kim3", "zed", "'" + FORMULA_ID}  # the side file is spreadsheet-safe too
    _spreadsheet_safe(unmatched)
    preview = (tmp_path / "canvas.csv.preview.txt").read_text()
    assert "not in the roster" in preview and "ID 101" in preview and "83.5%" in preview
    assert "no submission: left out" in preview  # nos and dee
    # a same-named student no LMS knows never lands on a classmate: kim1 and kim2 keep their own
    course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert course.grade(104, "module6") == pytest.approx(4.0) and course.grade(105, "module6") == pytest.approx(9.0)


def test_canvas_names_cannot_match_anyone_so_a_stale_id_is_listed_not_misdelivered(gradebook, tmp_path):
    """The kit's own roster: kim2's Canvas id is stale (999), a formula SIS login is dropped, and a student
    whose only id is a formula is left out."""
    course = canvas_course()
    roster = tmp_path / "roster.csv"
    roster.write_text("nbgrader_id,name,canvas_id,sis_login_id\n"
                      "ada,\"Lovelace, Ada\",101,ada\n"
                      "kim1,\"Lee, Kim\",104,\n"
                      "kim2,\"Lee, Kim\",999,\n"
                      "frm,Formula,106,=cmd|' /C calc'!A0\n"
                      "zed,\"Nobody, Zed\",,@evil\n", encoding="utf-8")
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=str(roster))
    rows = read_csv(tmp_path / "canvas.csv")
    _spreadsheet_safe(rows)
    by_id = {row[1]: row for row in rows[2:]}
    assert by_id["106"][3] == ""  # the formula login is not written (and ID 106 still matches)
    assert by_id["104"][0] == "Lee, Kim (nbgrader: kim1)" and "zed" not in {r[0] for r in rows}
    assert rows[0][5] == "module6"  # no Canvas export: Canvas matches the title, percentages fit any points
    result = course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert result.unmatched == ["Lee, Kim (nbgrader: kim2)"]  # listed by Canvas, given to nobody
    assert course.grade(104, "module6") == pytest.approx(4.0)  # kim1: its own grade, not kim2's 9.0
    assert course.grade(105, "module6") is None
    assert course.grade(106, "module6") == pytest.approx(5.0)
    unmatched = {row[0]: row[4] for row in read_csv(tmp_path / "canvas.csv.unmatched.csv")[1:]}
    assert "no id Canvas can match" in unmatched["zed"] and "formula" in unmatched["zed"]


def test_canvas_refuses_two_students_sharing_an_id_with_both_names(gradebook, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("nbgrader_id,name,canvas_id,sis_login_id\n"
                      "twin1,\"Win, Tam\",111,twin\ntwin2,\"Win, Tim\",112,twin\nada,\"Lovelace, Ada\",101,ada\n")
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=str(roster))
    rows = read_csv(tmp_path / "canvas.csv")
    assert [row[1] for row in rows[2:]] == ["101"]
    reasons = {row[0]: row[4] for row in read_csv(tmp_path / "canvas.csv.unmatched.csv")[1:]}
    assert "Win, Tim" in reasons["twin1"] and "Win, Tam" in reasons["twin2"]


# ---- pending manual grades -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pending_gradebook(gradebook, tmp_path_factory):
    copy = tmp_path_factory.mktemp("lms-pending") / "gradebook.db"
    shutil.copy(gradebook.removeprefix("sqlite:///"), copy)
    mark_pending(f"sqlite:///{copy}", [("ada", "module6"), ("kim1", "module6")])
    return f"sqlite:///{copy}"


@pytest.mark.parametrize("cls", [CanvasExport, MoodleExport])
def test_pending_manual_grades_refuse_the_export_and_list_them(pending_gradebook, tmp_path, cls):
    course = canvas_course()
    roster = _roster(tmp_path, "roster.csv", course.export_csv() if cls is CanvasExport else
                     moodle_site().export_csv())
    (tmp_path / "out.csv").write_text("an earlier file\n")
    with pytest.raises(ExportRefused) as refused:
        export(cls, pending_gradebook, tmp_path / "out.csv", ["module6"], roster=roster, points={"module6": 10})
    assert "ada: needs a manual grade in nb: written" in str(refused.value)
    assert "kim1: needs a manual grade" in str(refused.value) and "allow_pending" in str(refused.value)
    # a refusal changes nothing: the earlier file is untouched, no preview, no partial file
    assert (tmp_path / "out.csv").read_text() == "an earlier file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "roster.csv"]


def test_allow_pending_exports_partial_totals_and_says_so(pending_gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, pending_gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster, allow_pending=True)
    assert not (tmp_path / "canvas.csv").exists()
    rows = read_csv(tmp_path / "canvas.partial.csv")
    by_id = {row[1]: row[5] for row in rows[2:]}
    assert by_id["101"] == "75.5%" and by_id["104"] == "36%"  # the written answers are not counted yet
    preview = (tmp_path / "canvas.partial.csv.preview.txt").read_text()
    assert "PARTIAL" in preview and "nb: written" in preview
    site = moodle_site()
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, pending_gradebook, tmp_path / "moodle.csv", ["module6"], roster=roster, allow_pending=True,
           points={"module6": 10})
    rows = read_csv(tmp_path / "moodle.partial.csv")
    feedback = {row[0]: row[2] for row in rows[1:]}
    assert "PARTIAL" in feedback["ada@uni.example"] and "PARTIAL" not in feedback["ben@uni.example"]


# ---- Moodle -------------------------------------------------------------------------------------

MAPPING_10 = {"module6": "301", "Feedback for module6": "feedback_301"}


@pytest.mark.parametrize("database", ["postgres", "mysql"])
@pytest.mark.parametrize("missing", ["leave", "zero"])
def test_moodle_export_maps_every_row_and_lands_each_grade(gradebook, tmp_path, database, missing):
    site = moodle_site(database)
    before = {sid: site.grade(uid, "module6") for sid, uid in MOODLE_IDS.items()}
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, gradebook, tmp_path / "moodle.csv", ["module6"], roster=roster, points={"module6": 10},
           missing=missing)
    rows = read_csv(tmp_path / "moodle.csv")
    _spreadsheet_safe(rows)
    assert rows[0] == ["Email address", "module6", "Feedback for module6"]
    assert all(row[0] for row in rows[1:])  # every row has an identifier: none goes to the row above
    result = site.import_csv((tmp_path / "moodle.csv").read_bytes(), "Email address", "useremail", MAPPING_10)
    assert result.ok, result.errors
    for student, user_id in MOODLE_IDS.items():
        if student in ("twin1", "twin2"):
            expected = before[student]  # refused: they share an email; Moodle would give both rows to one
        else:
            expected = _expected(student, "module6", 10.0, 0.0 if missing == "zero" else "leave", before[student])
        got = site.grade(user_id, "module6")
        assert got == (pytest.approx(expected) if expected is not None else None), (student, got, expected)
    assert site.grade(10, "module6") == pytest.approx(7.7)  # eve: the email exactly as Moodle stores it
    assert site.feedback[(2, 301)] == "nbgrader module6: 60.25 of 100 points, after a late penalty of 10"
    reasons = {row[0]: row[4] for row in read_csv(tmp_path / "moodle.csv.unmatched.csv")[1:]}
    assert "Tim Win" in reasons["twin1"] and "Tam Win" in reasons["twin2"]


def test_moodle_new_item_gets_grades_out_of_100(gradebook, tmp_path):
    site = moodle_site()
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, gradebook, tmp_path / "moodle.csv", ["module6_further"], roster=roster)
    result = site.import_csv((tmp_path / "moodle.csv").read_bytes(), "Email address", "useremail",
                             {"module6_further": "new", "Feedback for module6_further": "0"})
    assert result.ok, result.errors
    for student, user_id in MOODLE_IDS.items():
        expected = _expected(student, "module6_further", 100.0, "leave", None)
        got = site.grade(user_id, "module6_further")
        assert got == (pytest.approx(expected) if expected is not None else None), student
    assert site.grade(1, "module6_further") == pytest.approx(90.0)  # 72 of 80, not 72 of 100


@pytest.mark.parametrize("identifier, column, mapto", [("username", "Username", "username"),
                                                       ("idnumber", "ID number", "useridnumber")])
def test_moodle_identifier_choices(gradebook, tmp_path, identifier, column, mapto):
    site = moodle_site()
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, gradebook, tmp_path / "moodle.csv", ["module6"], roster=roster, points={"module6": 10},
           identifier=identifier)
    rows = read_csv(tmp_path / "moodle.csv")
    _spreadsheet_safe(rows)
    assert rows[0][0] == column
    result = site.import_csv((tmp_path / "moodle.csv").read_bytes(), column, mapto, MAPPING_10)
    assert result.ok, result.errors
    assert site.grade(7, "module6") == pytest.approx(7.0)  # José: NFD in the gradebook, NFC in Moodle
    assert site.grade(11, "module6") == pytest.approx(6.1) and site.grade(12, "module6") == pytest.approx(6.2)
    if identifier == "idnumber":  # frm's ID number "=1+1" cannot be written safely: listed instead
        assert site.grade(6, "module6") is None
        assert "formula" in {row[0]: row[4] for row in read_csv(tmp_path / "moodle.csv.unmatched.csv")[1:]}["frm"]
    else:
        assert site.grade(6, "module6") == pytest.approx(5.0)


def test_moodle_refuses_excuse_and_scales_above_its_maximum(gradebook, tmp_path):
    roster = _roster(tmp_path, "moodle-export.csv", moodle_site().export_csv())
    with pytest.raises(ExportRefused, match="no excused grade"):
        export(MoodleExport, gradebook, tmp_path / "m.csv", ["module6"], roster=roster, missing="excuse")
    with pytest.raises(ExportRefused, match="gradepointmax"):
        export(MoodleExport, gradebook, tmp_path / "m.csv", ["module6"], roster=roster, points={"module6": 150})
    assert not (tmp_path / "m.csv").exists()


# ---- the preview ----------------------------------------------------------------------------------

def test_a_dry_run_writes_the_preview_only(gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster, dry_run=True)
    assert not (tmp_path / "canvas.csv").exists()
    preview = (tmp_path / "canvas.csv.preview.txt").read_text()
    assert preview.splitlines()[1].startswith("Status: DRY RUN")
    assert "Lovelace, Ada" in preview and "83.5%" in preview and "Left out" in preview


def test_student_flag_exports_only_the_named_students(gradebook, tmp_path):
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, gradebook, tmp_path / "canvas.csv", ["module6"], students=["ADA", NFD_JOSE], roster=roster)
    assert [row[1] for row in read_csv(tmp_path / "canvas.csv")[2:]] == ["101", "107"]  # ids: NFC, any case


@pytest.fixture(scope="module")
def extra_credit_gradebook(gradebook, tmp_path_factory):
    copy = tmp_path_factory.mktemp("lms-extra") / "gradebook.db"
    shutil.copy(gradebook.removeprefix("sqlite:///"), copy)
    add_extra_credit(f"sqlite:///{copy}", "ada", "module6", 20.0)  # 103.5 of 100
    return f"sqlite:///{copy}"


def test_extra_credit_above_the_maximum(extra_credit_gradebook, tmp_path):
    """Canvas keeps a score above the points possible; Moodle would cut it to the item's maximum, so the
    student is left out there and the preview says why."""
    course = canvas_course()
    roster = _roster(tmp_path, "canvas-export.csv", course.export_csv())
    export(CanvasExport, extra_credit_gradebook, tmp_path / "canvas.csv", ["module6"], roster=roster)
    course.import_csv((tmp_path / "canvas.csv").read_bytes())
    assert course.grade(101, "module6") == pytest.approx(10.35)
    site = moodle_site()
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, extra_credit_gradebook, tmp_path / "moodle.csv", ["module6"], roster=roster,
           points={"module6": 10})
    assert "ada@uni.example" not in {row[0] for row in read_csv(tmp_path / "moodle.csv")}
    assert "10.35 is above the grade item's maximum 10" in (tmp_path / "moodle.csv.preview.txt").read_text()
    assert site.import_csv((tmp_path / "moodle.csv").read_bytes(), "Email address", "useremail", MAPPING_10).ok
    assert site.grade(1, "module6") is None  # left as it was


@pytest.mark.parametrize("cls, header", [(CanvasExport, "Current Score 1"), (CanvasExport, "=1+1"),
                                         (CanvasExport, "Section"), (MoodleExport, "Email address"),
                                         (MoodleExport, "+x")])
def test_a_column_header_the_importer_would_misread_is_refused(gradebook, tmp_path, cls, header):
    roster = _roster(tmp_path, "roster.csv", canvas_course().export_csv() if cls is CanvasExport else
                     moodle_site().export_csv())
    with pytest.raises(ExportRefused, match="assignment_columns"):
        export(cls, gradebook, tmp_path / "out.csv", ["module6"], roster=roster,
               assignment_columns={"module6": header})
    assert not (tmp_path / "out.csv").exists()


def test_moodle_site_with_a_decimal_comma_reads_the_same_grades(gradebook, tmp_path):
    """``unformat_float`` swaps the language's decimal separator for "."; the kit's "6.025" has none to swap."""
    site = moodle_site()
    site.decsep = ","
    roster = _roster(tmp_path, "moodle-export.csv", site.export_csv())
    export(MoodleExport, gradebook, tmp_path / "moodle.csv", ["module6"], roster=roster, points={"module6": 10})
    assert site.import_csv((tmp_path / "moodle.csv").read_bytes(), "Email address", "useremail", MAPPING_10).ok
    assert site.grade(2, "module6") == pytest.approx(6.025) and site.grade(1, "module6") == pytest.approx(8.35)
