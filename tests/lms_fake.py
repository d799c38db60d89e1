"""Fake Canvas and Moodle courses whose CSV grade imports follow the importers' own source, rule by rule.

The kit's export is tested by "uploading" its files here and reading every student's resulting grade.
Nothing here imports the kit: each rule is ported from the LMS's source, cited where it is used.

Canvas (instructure/canvas-lms, master as stored in the search index in 2025; the versions read:
``app/models/gradebook_importer.rb`` (index id 398797707, the version with ``custom_grade_statuses`` and
``Override Status`` columns), ``ui/features/gradebook_uploads/jquery/process_gradebook_upload.js`` at
commit 0a4d8b88119f0fbc3bfccf010d54cff86f6e61c2, ``app/models/abstract_assignment.rb``
``interpret_grade(grade, prefer_points_over_scheme:)`` (index id 52389705; ``Assignment.title_and_id`` in
the same file), ``lib/gradebook_exporter.rb`` at commit 0140a2effa6366ea3b73aeefa4bbc384b943934f):

* the upload is parsed by ``GradebookImporter#parse!``, then the instructor's browser sends only the
  changed cells (``ProcessGradebookUpload.populateGradeDataPerSubmission``), each graded by
  ``Assignment#grade_to_score`` / ``interpret_grade``.

Moodle (moodle/moodle: ``grade/import/csv/classes/load_data.php`` at commits
0289d8c7665458f8ffc47e34527598e15523f104 and 162f42f0dae3758c9e9b9973749b0a7cd28d9312 (the same rules),
``grade/import/lib.php`` ``grade_import_commit`` at 9b77dc8db238e73fec3ee78e5ba296614ccacf6f,
``lib/csvlib.class.php`` ``csv_import_reader::load_csv_content`` (index id 71755172),
``lib/moodlelib.php`` ``unformat_float`` at 001247f3c9f700287d997f653c63e31766b8c9ba, and
``lib/grade/grade_item.php`` ``update_final_grade`` (index id 1690631) / ``bounded_grade``):

* ``gradeimport_csv_load_data::prepare_import_grade_data`` buffers the rows (or aborts the whole
  import), then ``grade_import_commit`` writes them.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import unicodedata

# =============================================================================================
# Canvas
# =============================================================================================


@dataclasses.dataclass
class CanvasStudent:
    id: int
    name: str  # "Ada Lovelace"
    sortable_name: str  # "Lovelace, Ada"
    sis_user_id: str | None = None
    login_id: str | None = None  # the pseudonym's unique_id, Canvas's "SIS Login ID"
    section: str = "Section A"
    active: bool = True  # a concluded enrollment is False


@dataclasses.dataclass
class CanvasAssignment:
    id: int
    title: str
    points_possible: float | None


@dataclasses.dataclass
class CanvasSubmission:
    score: float | None = None
    excused: bool = False


@dataclasses.dataclass
class CanvasImport:
    """What an upload did: ``failed`` (a message) or the rows Canvas could not match and what changed."""

    failed: str = ""
    unmatched: list = dataclasses.field(default_factory=list)  # names of rows matched to no student
    created: list = dataclasses.field(default_factory=list)  # (title, points_possible) of new assignments
    changed: list = dataclasses.field(default_factory=list)  # (student id, assignment title, grade string)
    errors: list = dataclasses.field(default_factory=list)


def ruby_to_i(text: str | None) -> int:
    """Ruby's ``String#to_i``: leading whitespace, a sign, digits (``_`` between digits); else 0."""
    match = re.match(r"\s*([+-]?\d+(?:_\d+)*)", text or "")
    return int(match.group(1).replace("_", "")) if match else 0


def ruby_present(text: str | None) -> bool:
    """Rails' ``present?`` for a string: not nil and not only whitespace."""
    return text is not None and text.strip() != ""


def decimal_comma_to_period(field: str | None) -> str | None:
    """``GradebookImporter``'s CSV converter ``:decimal_comma_to_period`` (applied to every cell)."""
    if field is not None and re.search(r"^-?[0-9.,]+%?$", field, re.M):
        number_parts = re.split(r"[,.]", field)
        last = number_parts.pop()
        return last if not number_parts else "".join(number_parts) + "." + last
    return field


def ruby_float_to_s(value: float) -> str:
    text = repr(float(value))
    return text if "e" in text or "." in text else text + ".0"


class FakeCanvasCourse:
    """A Canvas course: students (with pseudonyms in one root account), assignments, submissions."""

    def __init__(self, students, assignments, submissions=None, domain="canvas.example"):
        self.students = {s.id: s for s in students}
        self.assignments = {a.id: a for a in assignments}
        # (student id, assignment id) -> CanvasSubmission; a missing key is "no submission record"
        self.submissions = dict(submissions or {})
        self.domain = domain
        self._next_assignment = max(self.assignments, default=1000) + 1

    # ---- the state a test reads -------------------------------------------------------------
    def grade(self, student_id: int, title: str):
        """``"EX"``, a float score, or ``None`` (no grade) for a student in the assignment titled ``title``."""
        assignment = next(a for a in self.assignments.values() if a.title == title)
        submission = self.submissions.get((student_id, assignment.id))
        if submission is None:
            return None
        return "EX" if submission.excused else submission.score

    # ---- Canvas's own export (lib/gradebook_exporter.rb), used as the kit's roster ---------------
    def export_csv(self, include_sis_id: bool = True, bom: bool = True) -> bytes:
        buffer = io.StringIO()
        out = csv.writer(buffer)
        assignments = sorted(self.assignments.values(), key=lambda a: a.id)
        header = ["Student", "ID", *(["SIS User ID"] if include_sis_id else []), "SIS Login ID", "Section",
                  *(f"{a.title} ({a.id})" for a in assignments), "Current Score", "Final Score"]
        out.writerow(header)
        fill = [None] * (3 + include_sis_id)
        out.writerow(["    Points Possible", *fill, *(self._fmt(a.points_possible) for a in assignments),
                      "(read only)", "(read only)"])
        for student in sorted(self.students.values(), key=lambda s: s.sortable_name):
            name = student.sortable_name
            if re.match(r"^\s*=", name):  # GradebookExporter#student_name
                name = f'="{name}"'
            cells = []
            for a in assignments:
                sub = self.submissions.get((student.id, a.id))
                cells.append("EX" if sub and sub.excused else self._fmt(sub.score if sub else None))
            out.writerow([name, student.id, *([student.sis_user_id] if include_sis_id else []), student.login_id,
                          student.section, *cells, "", ""])
        return (("\ufeff" if bom else "") + buffer.getvalue()).encode("utf-8")

    @staticmethod
    def _fmt(value):
        return "" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")

    # ---- the import ---------------------------------------------------------------------------
    def import_csv(self, data: bytes) -> CanvasImport:
        """Upload ``data`` as Grades > Import does; unmatched rows are left unresolved (ignored)."""
        result = CanvasImport()
        parsed = self._parse(data, result)
        if parsed is None:
            return result
        assignments, students, importer_grades = parsed
        # ProcessGradebookUpload.createAssignments: new assignments (id <= 0) get created with the points
        # of the "Points Possible" row, then populateGradeDataPerSubmission maps their ids.
        created = {}
        for assignment in assignments:
            if assignment["id"] <= 0:
                points = assignment["points_possible"]
                new = CanvasAssignment(self._next_assignment, assignment["title"],
                                       float(points) if points not in (None, "") else None)
                self._next_assignment += 1
                self.assignments[new.id] = new
                created[assignment["id"]] = new.id
                result.created.append((new.title, new.points_possible))
        for student, row_grades in zip(students, importer_grades):
            if student["id"] is None:
                result.unmatched.append(student["name"])  # needs the instructor's resolution: ignored here
                continue
            for assignment, submission in zip(assignments, row_grades):
                assignment_id = created.get(assignment["id"], assignment["id"])
                if assignment_id <= 0:
                    continue  # unrecognized and ignored assignments
                if submission["original_grade"] == submission["grade"]:
                    continue  # no change
                self._post(student["id"], assignment_id, submission["grade"], result)
        return result

    def _csv_rows(self, data: bytes) -> list:
        """``csv_stream``: the file read as UTF-8 (a byte-order mark stays in the first cell), its separator
        guessed by ``identify_delimiter`` from the first three lines, ``skip_lines: /^[;, ]+$/``, converters
        ``:nil`` (no-op here: an empty cell is nil) and ``:decimal_comma_to_period``."""
        text = data.decode("utf-8")
        first = text.splitlines(keepends=True)[:3]
        counts = {}
        for sep in (";", ","):
            counts[sep] = 0
            try:
                sizes = [len(next(csv.reader([line], delimiter=sep, strict=True), [])) for line in first]
            except csv.Error:
                continue
            if len(set(sizes)) == 1:
                counts[sep] = sizes[0]
        sep = ";" if counts[";"] > counts[","] else ","
        rows = []
        for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep):
            if row and all(c.strip(" ") == "" for c in row) and (len(row) > 1 or row[0] != ""):
                continue  # a line of separators and spaces only
            rows.append([decimal_comma_to_period(cell if cell != "" else None) for cell in row])
        return rows

    def _parse(self, data: bytes, result: CanvasImport):
        """``GradebookImporter#parse!``: header, "Points Possible" row, one student per other row."""
        try:
            rows = self._csv_rows(data)
        except (UnicodeDecodeError, csv.Error) as err:
            result.failed = f"Gradebook import did not parse cleanly ({err})"
            return None
        header = None
        assignments = None
        indices = {}
        students, grades = [], []
        columns = {}
        pp_row = []
        for row in rows:
            if assignments is None:  # check_for_non_student_row: the first row is the header
                header = row
                layout = self._header(row)
                if layout is None:
                    result.failed = "Invalid header row"
                    return None
                columns = layout
                assignments, indices = self._assignments(row, columns)
                continue
            if row and row[0] is not None and "Points Possible" in row[0]:
                pp_row = row  # process_pp
                for a in assignments:
                    idx = indices[a["key"]]
                    if idx < len(row) and row[idx] is not None:
                        a["points_possible"] = row[idx]
                continue
            if all(re.search(r"^\s*(Muted|Manual Posting.*)?\s*$", c, re.I | re.M) for c in row if c is not None):
                continue  # a muted / manual-posting row (or an empty one)
            student = self._process_student(row, columns)
            students.append(student)
            grades.append(self._process_submissions(row, student, assignments, indices))
        del header, pp_row
        # "remove concluded enrollments"
        keep = [i for i, s in enumerate(students) if s["id"] is None or self.students[s["id"]].active]
        return assignments, [students[i] for i in keep], [grades[i] for i in keep]

    @staticmethod
    def _header(row: list):
        """``header?`` = ``row_has_student_headers?`` + ``update_column_count`` + the "Section" check."""
        def has(i, text):
            return i < len(row) and row[i] is not None and text in row[i]

        def matches(i, pattern):
            return i < len(row) and row[i] is not None and re.search(pattern, row[i]) is not None

        if not ((len(row) > 3 and has(0, "Student") and has(1, "ID")) or
                (len(row) > 4 and has(0, "LastName") and has(1, "FirstName") and has(2, "ID"))):
            return None
        if row[0] == "LastName" and row[1] == "FirstName":
            return None  # allow_student_last_first_names? is off in this fake
        n = student_columns = 3
        cols = {"sis_user": None, "sis_login": None, "root_account": None}
        if matches(n - 1, r"SIS\s+Login\s+ID"):
            cols["sis_login"] = n - 1
            student_columns += 1
        elif matches(n - 1, r"SIS\s+User\s+ID") and matches(n, r"SIS\s+Login\s+ID"):
            i = 1 if matches(n + 1, r"Integration\s+ID") else 0
            cols["sis_user"], cols["sis_login"] = n - 1, n
            student_columns += 2 + i
            if matches(n + 1 + i, r"Root\s+Account"):
                student_columns += 1
                cols["root_account"] = n + 1 + i
        if not has(student_columns - 1, "Section"):  # last_student_info_column(row).include?("Section")
            return None
        cols["student_columns"] = student_columns
        return cols

    NON_ASSIGNMENT = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                                "Override Score|Override Grade|Override Status")

    def _assignments(self, row: list, columns: dict):
        """``strip_non_assignment_columns`` + ``parse_assignments`` + ``calc_assignment_indices``."""
        stripped = [h for h in row[columns["student_columns"]:] if not (h and self.NON_ASSIGNMENT.search(h))]
        out, indices, negative = [], {}, 0
        for position, name_and_id in enumerate(stripped):
            match = re.match(r"\A(.*)\s\((\d+)\)\Z", name_and_id or "", re.S)  # Assignment.title_and_id
            title, aid = (match.group(1), match.group(2)) if match else (name_and_id, None)
            found = self.assignments.get(int(aid)) if aid else None
            found = found or next((a for a in self.assignments.values() if a.title == name_and_id), None)
            if found:
                entry = {"id": found.id, "title": found.title, "points_possible": found.points_possible}
            else:
                negative -= 1
                entry = {"id": negative, "title": title or name_and_id, "points_possible": None}
            entry["key"] = position
            indices[position] = row.index(name_and_id)  # original_header_row.index(header_name)
            out.append(entry)
        return out, indices

    def _process_student(self, row: list, columns: dict) -> dict:
        """``process_student``: ID, then SIS User ID, then SIS Login ID (in the row's root account), then name."""
        student_id = row[1] if len(row) > 1 else None
        student = self.students.get(ruby_to_i(student_id)) if ruby_present(student_id) else None
        if student is None:
            ra_domain = None
            if columns["root_account"] is not None and columns["root_account"] < len(row):
                ra_domain = row[columns["root_account"]] if ruby_present(row[columns["root_account"]]) else None
            in_our_account = ra_domain is None or ra_domain == self.domain  # Account.find_by_domain
            by_sis = {s.sis_user_id: s for s in self.students.values() if s.sis_user_id is not None}
            by_login = {s.login_id: s for s in self.students.values() if s.login_id is not None}
            for column, table in (("sis_user", by_sis), ("sis_login", by_login)):
                index = columns[column]
                if student is None and in_our_account and index is not None and index < len(row) \
                        and ruby_present(row[index]):
                    student = table.get(row[index])
        if student is None:
            name = row[0]
            student = next((s for s in self.students.values() if s.name == name or s.sortable_name == name), None)
        if student is None:
            return {"id": None, "name": row[0]}
        return {"id": student.id, "name": student.name}

    def _process_submissions(self, row: list, student: dict, assignments: list, indices: dict) -> list:
        out = []
        for a in assignments:
            idx = indices[a["key"]]
            grade = row[idx].strip() if idx < len(row) and row[idx] is not None else None
            original = None
            if student["id"] is not None and a["id"] > 0:
                sub = self.submissions.get((student["id"], a["id"]))
                if sub is not None:
                    original = "EX" if sub.excused else ("" if sub.score is None else ruby_float_to_s(sub.score))
            out.append({"grade": grade, "original_grade": original})
        return out

    def _post(self, student_id: int, assignment_id: int, grade, result: CanvasImport) -> None:
        """``populateGradeDataPerSubmission`` then the server's ``grade_student``: EX excuses; anything else
        is a ``posted_grade`` through ``grade_to_score`` (blank: no grade)."""
        assignment = self.assignments[assignment_id]
        normalized = str(grade or "").upper()
        if normalized in ("EX", "EXCUSED"):
            self.submissions[(student_id, assignment_id)] = CanvasSubmission(None, excused=True)
        elif grade is None or grade.strip() == "":
            self.submissions[(student_id, assignment_id)] = CanvasSubmission(None, excused=False)
        else:
            score = interpret_grade(grade, assignment.points_possible)
            if score is None:
                result.errors.append(f"{student_id}/{assignment.title}: {grade!r} is not a grade")
                return
            self.submissions[(student_id, assignment_id)] = CanvasSubmission(score, excused=False)
        result.changed.append((student_id, assignment.title, grade))


def interpret_grade(grade: str, points_possible: float | None) -> float | None:
    """``Assignment#interpret_grade`` for a points assignment without a grading scheme."""
    if re.search(r"^[+-]?\d*\.?\d+%$", grade, re.M):
        return float(points_possible or 0.0) * (ruby_to_f(grade) / 100.0)
    if re.search(r"^[+-]?\d*\.?\d+$", grade, re.M):
        return ruby_to_f(grade)
    if grade in ("pass", "complete"):
        return float(points_possible or 0.0)
    if grade in ("fail", "incomplete"):
        return 0.0
    return None


def ruby_to_f(text: str) -> float:
    match = re.match(r"\s*[+-]?(\d+(\.\d+)?|\.\d+)", text)
    return float(match.group(0)) if match else 0.0


# =============================================================================================
# Moodle
# =============================================================================================


@dataclasses.dataclass
class MoodleUser:
    id: int
    username: str
    email: str
    idnumber: str = ""
    firstname: str = ""
    lastname: str = ""
    institution: str = ""
    department: str = ""
    enrolled: bool = True


@dataclasses.dataclass
class GradeItem:
    id: int
    itemname: str
    grademax: float = 100.0
    grademin: float = 0.0


@dataclasses.dataclass
class MoodleImport:
    ok: bool = True
    errors: list = dataclasses.field(default_factory=list)


def php_is_numeric(text) -> bool:
    """PHP 8's ``is_numeric`` for a string: optional whitespace, sign, decimal or exponent form."""
    return isinstance(text, str) and re.fullmatch(r"[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
                                                  r"[ \t\n\r\v\f]*", text) is not None


def php_empty(value) -> bool:
    """PHP's ``empty()`` for a string: ``''`` and ``'0'`` are empty."""
    return value in (None, "", "0")


def php_trim(text: str) -> str:
    return text.strip(" \t\n\r\0\x0b")


def unformat_float(value: str, decsep: str = ".", strict: bool = True):
    """``unformat_float($localefloat, $strict)``: spaces removed, the language's decimal separator made
    ``.``, then ``is_numeric`` (strict) or a float cast."""
    value = php_trim(str(value))
    if value == "":
        return None
    value = value.replace(" ", "").replace(decsep, ".")
    if strict and not php_is_numeric(value):
        return False
    return float(value)


def _collate(value: str, database: str) -> str:
    """How the database compares a user field: PostgreSQL by bytes, MySQL/MariaDB's default
    ``utf8mb4_*_ci`` collations without case or accents."""
    if database == "postgres":
        return value
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


class FakeMoodleSite:
    """A Moodle site: users (site-wide), one course's grade items and grades."""

    FIELDS = {"userid": "id", "useridnumber": "idnumber", "useremail": "email", "username": "username"}

    def __init__(self, users, items, grades=None, database="postgres", decsep=".", gradepointmax=100.0):
        self.users = sorted(users, key=lambda u: u.id)
        self.items = {i.id: i for i in items}
        self.grades = dict(grades or {})  # (user id, item id) -> finalgrade (None: no grade)
        self.feedback = {}
        self.database = database
        self.decsep = decsep
        self.gradepointmax = gradepointmax

    def grade(self, user_id: int, itemname: str):
        item = next(i for i in self.items.values() if i.itemname == itemname)
        return self.grades.get((user_id, item.id))

    # ---- Moodle's grade export (grade/export/txt), used as the kit's roster ---------------------
    def export_csv(self, with_username: bool = True) -> bytes:
        buffer = io.StringIO()
        out = csv.writer(buffer)
        fields = ["First name", "Last name", "ID number", "Institution", "Department", "Email address"]
        if with_username:
            fields.append("Username")
        items = sorted(self.items.values(), key=lambda i: i.id)
        out.writerow([*fields, *(f"Manual item: {i.itemname} (Real)" for i in items),
                      "Last downloaded from this course"])
        for u in self.users:
            if not u.enrolled:
                continue
            values = [u.firstname, u.lastname, u.idnumber, u.institution, u.department, u.email]
            if with_username:
                values.append(u.username)
            grades = [self.grades.get((u.id, i.id)) for i in items]
            out.writerow([*values, *("-" if g is None else f"{g:.2f}" for g in grades), "1700000000"])
        return buffer.getvalue().encode("utf-8")

    # ---- the import ---------------------------------------------------------------------------
    def import_csv(self, data: bytes, map_from: str, map_to: str, mapping: dict) -> MoodleImport:
        """Grades > Import > CSV file with the form's choices: ``map_from`` (a header) -> ``map_to``
        (``useremail``, ``username``, ``useridnumber``, ``userid``), and ``mapping`` {header: ``'new'``,
        an item id, ``'feedback_<item id>'`` or ``'0'`` (ignore)}."""
        result = MoodleImport()
        lines = self._load_csv_content(data, result)
        if lines is None:
            return result
        headers = [php_trim(h) for h in lines[0]]  # trim_headers
        index_of = {h: i for i, h in reversed(list(enumerate(headers)))}
        form = {index_of[h]: str(v) for h, v in mapping.items()}
        form[index_of[map_from]] = map_to
        targets = [v for v in form.values() if v != "0"]
        if len(targets) != len(set(targets)):
            return self._abort(result, "cannotmapfield")
        buffer = self._prepare(lines, headers, form, result)
        if buffer is None:
            return result
        self._commit(buffer)
        return result

    def _load_csv_content(self, data: bytes, result: MoodleImport):
        """``csv_import_reader::load_csv_content``: UTF-8, byte-order mark trimmed, newlines made ``\\n``,
        the content trimmed, blank lines dropped, every line as many fields as the header."""
        text = data.decode("utf-8")
        if text.startswith("\ufeff"):
            text = text[1:]
        text = php_trim(re.sub(r"\r\n?", "\n", text))
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
        if not rows:
            self._abort(result, "csvemptyfile")
            return None
        if any(len(row) != len(rows[0]) for row in rows):
            self._abort(result, "csvweirdcolumns")
            return None
        return rows

    @staticmethod
    def _abort(result: MoodleImport, message: str) -> MoodleImport:
        result.ok = False
        result.errors.append(message)
        return result

    def _check_user_exists(self, value: str, mapto: str):
        """``check_user_exists``: ``$DB->get_record('user', [field => value])``, site-wide, first match."""
        field = self.FIELDS[mapto]
        for user in self.users:  # get_record returns the first of several (a debugging notice only)
            stored = str(getattr(user, field))
            if _collate(stored, self.database) == _collate(value, self.database):
                return user.id
        return None

    def _prepare(self, lines: list, headers: list, form: dict, result: MoodleImport):
        """``prepare_import_grade_data``: returns the buffer of ``grade_import_values``, or None (aborted)."""
        studentid = None  # reset ONCE, before the loop: a row without an identifier keeps the previous one
        new_items = {}
        buffer = []
        for line in lines[1:]:
            if len(line) <= 1:
                continue
            newgrades, newfeedbacks = [], []
            for key, value in enumerate(line):
                value = php_trim(value)
                mapping = form.get(key, "")
                base = mapping.split("_")
                identifier = base[0]
                feedbackgradeid = int(base[1]) if len(base) > 1 else None
                if identifier in self.FIELDS:
                    if not php_empty(value):  # "Skip invalid row with blank user field."
                        studentid = self._check_user_exists(value, identifier)
                        if studentid is None:
                            self._abort(result, f"usermappingerror: {identifier} {value!r}")
                            return None
                elif identifier == "new":
                    if key not in new_items:
                        new_items[key] = headers[key]
                    grade = {"newitem": key}
                    if php_trim(value) != "-":
                        grade["finalgrade"] = value  # the raw string
                    newgrades.append(grade)
                elif identifier == "feedback":
                    if feedbackgradeid:
                        newfeedbacks.append({"itemid": feedbackgradeid, "feedback": value})
                elif not php_empty(mapping) and mapping != "0":
                    item = self.items.get(int(mapping))
                    if item is None:
                        self._abort(result, "importfailed")
                        return None
                    if value == "" or value == "-":
                        final = None  # "No grade."
                    else:
                        final = unformat_float(value, self.decsep, strict=True)
                        if final is False:
                            self._abort(result, f"badgrade: {value!r}")
                            return None
                    newgrades.append({"itemid": item.id, "finalgrade": final})
            if php_empty(studentid):
                self._abort(result, "usermappingerrorusernotfound")
                return None
            for grade in newgrades:
                if not self._insert_ok(grade, result):
                    return None
                buffer.append({"userid": studentid, **grade})
            for feedback in newfeedbacks:
                for record in buffer:
                    if record["userid"] == studentid and record.get("itemid") == feedback["itemid"]:
                        record["feedback"] = feedback["feedback"]
                        break
                else:
                    buffer.append({"userid": studentid, "itemid": feedback["itemid"],
                                   "feedback": feedback["feedback"]})
        self._new_items = new_items
        return buffer

    def _insert_ok(self, grade: dict, result: MoodleImport) -> bool:
        """``insert_grade_record``: a final grade above the site's maximum (100) aborts the import."""
        if "finalgrade" not in grade or grade["finalgrade"] is None:
            return True
        value = grade["finalgrade"]
        if isinstance(value, str) and not php_is_numeric(value):
            ok = value <= str(int(self.gradepointmax))  # PHP 8 compares a non-numeric string as a string
        else:
            ok = float(value) <= self.gradepointmax
        if not ok:
            self._abort(result, f"gradevaluetoobig: {value!r}")
        return ok

    def _commit(self, buffer: list) -> None:
        """``grade_import_commit``: new items (maximum 100) first, then each grade through
        ``update_final_grade`` (``bounded_grade`` clamps to the item's range; null clears the grade)."""
        created = {}
        for key, name in self._new_items.items():
            if any(r.get("newitem") == key for r in buffer):
                item = GradeItem(max(self.items, default=0) + 1, name)
                self.items[item.id] = item
                created[key] = item.id
        for record in buffer:
            itemid = created[record["newitem"]] if "newitem" in record else record["itemid"]
            item = self.items[itemid]
            # A record without a final grade (a "-" for a new item, or feedback alone) stores null: no grade.
            value = record.get("finalgrade")
            if value is not None:
                value = min(max(float(value), item.grademin), item.grademax)
            self.grades[(record["userid"], itemid)] = value
            if record.get("feedback") is not None:
                self.feedback[(record["userid"], itemid)] = record["feedback"]
