"""The fake LMSs of ``tests/lms_fake.py`` behave as the importers' source says, hazards included.

Each test feeds a hand-written file (the shapes the kit used to write, among others) and checks the rule
ported from the source: without these, a fake that accepted anything would make every export test
pass. Sources (commits in ``tests/lms_fake.py``):

* Canvas, ``app/models/gradebook_importer.rb``: ``GradebookImporter#process_student`` (ID, SIS ids,
  then ``name`` / ``sortable_name``), ``check_for_non_student_row`` ("Points Possible" row), ``header?``
  (the "Section" column), the ``decimal_comma_to_period`` converter; ``process_gradebook_upload.js``
  ``populateGradeDataPerSubmission`` (only changed cells; ``EX`` excuses; a blank is a posted grade);
  ``Assignment#interpret_grade`` (``87%`` of the points possible; ``87`` is 87 points).
* Moodle, ``grade/import/csv/classes/load_data.php``: ``prepare_import_grade_data`` (the matched user
  is reset once, before the loop), ``map_user_data_with_value`` (``!empty($value)``),
  ``check_user_exists`` (a miss aborts; the first of several accounts), ``update_grade_item`` (blank is
  "no grade"; ``unformat_float`` strict), ``insert_grade_record`` (above 100 aborts);
  ``grade/import/lib.php`` ``grade_import_commit`` (a new item's maximum is 100, grades bounded).
"""

from __future__ import annotations

import pytest

import lms_fake as fake

# ---- Canvas ------------------------------------------------------------------------------------


def course() -> fake.FakeCanvasCourse:
    S = fake.CanvasStudent
    return fake.FakeCanvasCourse(
        [S(1, "Kim Lee", "Lee, Kim", "S-1", "kim1"), S(2, "Kim Lee", "Lee, Kim", "S-2", "kim2"),
         S(3, "Ada Lovelace", "Lovelace, Ada", "S-3", "ada")],
        [fake.CanvasAssignment(10, "module6", 10.0)],
        {(1, 10): fake.CanvasSubmission(6.0), (2, 10): fake.CanvasSubmission(None, excused=True),
         (3, 10): fake.CanvasSubmission(9.0)})


HEAD = "Student,ID,SIS User ID,SIS Login ID,Section,module6 (10)\n    Points Possible,,,,,10\n"


def test_canvas_matches_a_row_without_ids_by_name_to_the_first_same_named_student():
    c = course()
    result = c.import_csv((HEAD + '"Lee, Kim",,,,,3\n').encode())
    assert result.unmatched == [] and c.grade(1, "module6") == 3.0  # kim2's row, if it was kim2's, went to kim1


def test_canvas_matches_by_id_then_sis_user_id_then_login_then_lists_the_rest_as_unmatched():
    c = course()
    rows = ('"x",2,,,,1\n'  # ID
            '"y",,S-3,,,2\n'  # SIS User ID
            '"z",,,kim1,,4\n'  # SIS Login ID
            '"Lee, Kim (nbgrader: kim9)",999,,,,5\n')  # a stale ID and a name no one has
    result = c.import_csv((HEAD + rows).encode())
    assert (c.grade(2, "module6"), c.grade(3, "module6"), c.grade(1, "module6")) == (1.0, 2.0, 4.0)
    assert result.unmatched == ["Lee, Kim (nbgrader: kim9)"]


def test_canvas_blank_clears_a_score_and_an_excused_grade_ex_excuses_and_unchanged_is_skipped():
    c = course()
    result = c.import_csv((HEAD + '"a",1,,,,\n"b",2,,,,\n"c",3,,,,EX\n').encode())
    assert c.grade(1, "module6") is None and c.grade(2, "module6") is None and c.grade(3, "module6") == "EX"
    c = course()
    result = c.import_csv((HEAD + '"b",2,,,,EX\n').encode())
    assert result.changed == [] and c.grade(2, "module6") == "EX"  # EX over EX: no change posted


def test_canvas_reads_percentages_on_the_assignments_points_and_raw_numbers_as_points():
    c = course()
    c.import_csv((HEAD + '"a",1,,,,87%\n"b",3,,,,87\n"c",2,,,,"8,5"\n').encode())
    assert c.grade(1, "module6") == pytest.approx(8.7)  # 87% of a 10-point assignment
    assert c.grade(3, "module6") == 87.0  # the kit's old raw points: 87 out of 10
    assert c.grade(2, "module6") == pytest.approx(8.5)  # decimal_comma_to_period


def test_canvas_creates_an_unknown_assignment_with_the_points_possible_row():
    c = course()
    result = c.import_csv(("Student,ID,SIS User ID,SIS Login ID,Section,module6_further\n"
                           "    Points Possible,,,,,80\n\"a\",3,,,,90%\n").encode())
    assert result.created == [("module6_further", 80.0)] and c.grade(3, "module6_further") == pytest.approx(72.0)


def test_canvas_header_rules_bom_section_and_the_points_possible_row():
    assert course().import_csv(("\ufeff" + HEAD + '"a",3,,,,5\n').encode()).failed == ""  # include?("Student")
    assert course().import_csv(b"Student,ID,SIS User ID,SIS Login ID,module6\n").failed == "Invalid header row"
    c = course()
    c.import_csv((HEAD + '"Points Possible, Mr",3,,,,5\n').encode())  # a name holding "Points Possible"
    assert c.grade(3, "module6") == 9.0  # read as the points row, not as Ada's grade


def test_canvas_root_account_column_is_read():
    c = course()
    head = "Student,ID,SIS User ID,SIS Login ID,Root Account,Section,module6 (10)\n    Points Possible,,,,,,10\n"
    c.import_csv((head + '"q",,,ada,canvas.example,,4\n"r",,,kim1,other.example,,5\n').encode())
    assert c.grade(3, "module6") == 4.0 and c.grade(1, "module6") == 6.0  # another root account: no match


# ---- Moodle -------------------------------------------------------------------------------------


def site(database: str = "postgres") -> fake.FakeMoodleSite:
    U = fake.MoodleUser
    return fake.FakeMoodleSite(
        [U(1, "ada", "ada@uni.example"), U(2, "ben", "ben@uni.example"), U(3, "cai", "Cai@Uni.example"),
         U(4, "twin1", "twin@uni.example"), U(5, "twin2", "twin@uni.example")],
        [fake.GradeItem(7, "module6", grademax=10.0)], {(1, 7): 6.0, (2, 7): 5.0}, database=database)


MAP = {"module6": "7"}


def test_moodle_gives_a_row_with_a_blank_identifier_to_the_previous_rows_student():
    """The hub incident: the kit wrote an empty email for a student missing from the roster."""
    s = site()
    result = s.import_csv(b"Email address,module6\nada@uni.example,8\n,2\n", "Email address", "useremail", MAP)
    assert result.ok and s.grade(1, "module6") == 2.0  # Ada got the unknown student's 2
    s = site()
    s.import_csv(b"Email address,module6\nada@uni.example,8\n0,2\n", "Email address", "useremail", MAP)
    assert s.grade(1, "module6") == 2.0  # "0" is empty() in PHP too


def test_moodle_aborts_the_whole_import_on_an_unknown_identifier():
    s = site()
    result = s.import_csv(b"Email address,module6\nada@uni.example,8\nnobody@x.org,2\n", "Email address",
                          "useremail", MAP)
    assert not result.ok and "usermappingerror" in result.errors[0]
    assert s.grade(1, "module6") == 6.0  # nothing imported


def test_moodle_gives_both_rows_of_a_shared_email_to_the_first_account():
    s = site()
    s.import_csv(b"Email address,module6\ntwin@uni.example,3\ntwin@uni.example,4\n", "Email address",
                 "useremail", MAP)
    assert s.grade(4, "module6") == 4.0 and s.grade(5, "module6") is None


@pytest.mark.parametrize("database, ok", [("postgres", False), ("mysql", True)])
def test_moodle_email_case_matters_on_postgresql_only(database, ok):
    s = site(database)
    result = s.import_csv(b"Email address,module6\ncai@uni.example,3\n", "Email address", "useremail", MAP)
    assert result.ok is ok and (s.grade(3, "module6") == 3.0) is ok


def test_moodle_grade_cells():
    s = site()
    assert not s.import_csv(b"Email address,module6\nada@uni.example,87%\n", "Email address", "useremail",
                            MAP).ok  # badgrade
    s = site()
    s.import_csv(b"Email address,module6\nada@uni.example,\nben@uni.example,87\n", "Email address", "useremail",
                 MAP)
    assert s.grade(1, "module6") is None  # a blank clears Ada's 6
    assert s.grade(2, "module6") == 10.0  # 87 on a 10-point item is cut to 10
    s = site()
    result = s.import_csv(b"Email address,module6_further\nada@uni.example,72\nben@uni.example,120\n",
                          "Email address", "useremail", {"module6_further": "new"})
    assert not result.ok and "gradevaluetoobig" in result.errors[0]  # above 100: the import stops
    s = site()
    s.import_csv(b"Email address,module6_further\nada@uni.example,72\n", "Email address", "useremail",
                 {"module6_further": "new"})
    assert s.grade(1, "module6_further") == 72.0 and s.items[8].grademax == 100.0  # 72 of 100, not of 80


def test_moodle_bom_and_column_count():
    s = site()
    assert s.import_csv("\ufeffEmail address,module6\nada@uni.example,8\n".encode(), "Email address",
                        "useremail", MAP).ok
    assert s.import_csv(b"Email address,module6\nada@uni.example,8,9\n", "Email address", "useremail",
                        MAP).errors == ["csvweirdcolumns"]

