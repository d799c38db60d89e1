"""The kit's side of nbgrader's exchange: its collect and its release (``c.ExchangeFactory``, set by :func:`install`).

**Collect**: only what a student submitted from their own account, by received time.

nbgrader==0.9.6's collect (``nbgrader/exchange/default/collect.py``, ``ExchangeCollect``) trusts the inbox
folder's name, ``<student>+<assignment>+<time>+<random>``, which the submitting account chooses:

- its ``check_owner`` only *warns* when the folder's Unix owner is not the named student, so
  ``nbgrader submit --student <classmate>`` replaces a classmate's submission;
- it picks a student's newest submission by the time in the name, so a claimed time in 2099 wins;
- a name whose time part is not a time raises in ``parse_utc`` and stops the collect of the whole class;
- ``shutil.copytree`` follows symbolic links, so a link in an inbox folder copies whatever the
  instructor's account can read into ``submitted/``;
- any id becomes a folder of ``submitted/`` (and, autograded, a gradebook student).

:class:`KitCollect` (``c.ExchangeFactory.collect``) keeps nbgrader's options and layout and decides each
inbox entry on what the student cannot choose:

1. the entry's name has nbgrader's form and its id has the kit's safe form
   (:func:`autograder.student_ids.check_student_id`);
2. the id is a student of the gradebook (``nbgrader db student add``, or ``autograder roster``): collect
   never makes students;
3. with ``check_owner`` (nbgrader's option, on by default) the entry's Unix owner *is* that id, and so is
   the owner of everything in it (on a hub whose accounts are Unix users the account name is the
   nbgrader id);
4. it holds only directories and regular files (no link, FIFO or device), within nbgrader's size limits;
5. among a student's entries the newest by *received time* (the change times only the kernel sets,
   :mod:`autograder.grading.receipts`) counts, never the claimed time in the name.

Every entry that fails a rule is reported (a warning naming the entry and the rule, a summary, and
``reports/collect-<assignment>.csv`` in the course) and skipped; the rest of the class is collected. A submission is copied beside its destination first and
put in place only when the copy is whole, so a refusal or a failure never removes what was collected before.

**Release**: nbgrader's own (:class:`KitReleaseAssignment`), which also sets the sticky bit on the
course's ``inbound`` folder. nbgrader makes it mode 2733 (everyone may create an entry, nobody but the
instructor may list it); without the sticky bit anyone who learnt an entry's name could rename or remove
it. With it, only an entry's owner (and the instructor, the folder's owner) can.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import fnmatch
import os
import pwd
import shutil
import stat
import tempfile

from nbgrader.api import Gradebook
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.utils import parse_utc

from autograder.grading import receipts
from autograder.limits import INBOX_ENTRIES, SUBMISSION_ENTRIES
from autograder.student_ids import check_student_id

_READ_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class Refused:
    """An inbox entry that was not collected, and why (one sentence, written by the kit)."""

    entry: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Candidate:
    """An inbox entry that passed the checks on its name, its id and its owner."""

    student: str
    entry: str
    path: str
    received: datetime.datetime


class SubmissionRefused(Exception):
    """The content of an inbox entry breaks a rule (a link, a FIFO, a file of another account, too large)."""


def _printable(name: str, limit: int = 120) -> str:
    """An entry name as the log shows it: escaped, never longer than ``limit``."""
    shown = name.encode("unicode_escape", "backslashreplace").decode("ascii")
    return shown if len(shown) <= limit else shown[:limit] + "..."


class KitCollect(ExchangeCollect):
    """nbgrader's collect, deciding every inbox entry on its owner and received time (module docstring)."""

    def _gradebook_students(self) -> set:
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            return {student.id for student in gb.students}

    def _refuse(self, entry: str, reason: str) -> None:
        self.refused.append(Refused(entry, reason))
        self.log.warning("Not collected: %s: %s", _printable(entry), reason)

    def _judge_entry(self, name: str, students: set) -> Candidate | None:
        """The entry as a candidate, or None after reporting the rule it breaks."""
        parts = name.split("+")
        if len(parts) not in (3, 4) or parts[1] != self.coursedir.assignment_id:
            self._refuse(name, "the name is not <student>+<assignment>+<time>[+<random>] as nbgrader submit writes it")
            return None
        try:
            student = check_student_id(parts[0])
        except ValueError as error:
            self._refuse(name, f"{error}")
            return None
        if student != parts[0]:
            self._refuse(name, "the student id is not in Unicode NFC form")
            return None
        try:
            parse_utc(parts[2])
        except (ValueError, OverflowError, TypeError):  # the claim is never used; a malformed one is still malformed
            self._refuse(name, "the time part of the name is not a time")
            return None
        if student not in students:
            self._refuse(name, f"{student} is not a student of this course's gradebook (add them with "
                               f"`nbgrader db student add {student}` or `autograder roster`, then collect again)")
            return None
        path = os.path.join(self.inbound_path, name)
        try:
            info = os.lstat(path)
        except OSError as error:
            self._refuse(name, f"it cannot be read ({error.strerror})")
            return None
        if not stat.S_ISDIR(info.st_mode):
            self._refuse(name, "it is not a folder (a link, a file or a device)")
            return None
        if self.check_owner:
            owner = _owner_name(info.st_uid)
            if owner != student:
                self._refuse(name, f"it is owned by the account {owner}, not by {student}: a submission is "
                                   f"collected only from the student's own account")
                return None
        try:
            received = receipts.received_time(path)
        except (OSError, ValueError) as error:
            self._refuse(name, f"its content cannot be listed ({error})")
            return None
        return Candidate(student, name, path, received)

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.refused: list = []
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail("Course not found: {}".format(self.inbound_path))
        try:
            names = []
            with os.scandir(self.inbound_path) as entries:
                for entry in entries:
                    names.append(entry.name)
                    if len(names) > INBOX_ENTRIES.value:
                        self.fail(f"{self.inbound_path} holds more than {INBOX_ENTRIES.value} entries")
        except PermissionError:
            self.fail("You don't have read permissions for the directory: {}".format(self.inbound_path))
        wanted = self.coursedir.student_id if self.coursedir.student_id else "*"
        mine = [name for name in sorted(names)
                if name.split("+")[1:2] == [self.coursedir.assignment_id] and fnmatch.fnmatchcase(name.split("+")[0], wanted)]
        # Entries whose name does not even name this assignment belong to other assignments: not reported.
        students = self._gradebook_students()
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except Exception:  # nbgrader's MissingEntry: an assignment not in the gradebook has no due date
                self.duedate = None
        by_student: dict = {}
        for name in mine:
            candidate = self._judge_entry(name, students)
            if candidate is not None:
                by_student.setdefault(candidate.student, []).append(candidate)
        self.src_records = []
        for student, candidates in sorted(by_student.items()):
            newest_first = sorted(candidates, key=lambda c: (c.received, c.entry), reverse=True)
            chosen = newest_first[0]
            if self.before_duedate and self.duedate is not None:
                on_time = [c for c in newest_first if c.received <= self.duedate]
                chosen = on_time[0] if on_time else chosen
            self.src_records.append(chosen)

    def copy_files(self):
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect",
                             self.coursedir.assignment_id, self.coursedir.course_id)
        else:
            self.log.info("Processing %d submissions of '%s' for course '%s'", len(self.src_records),
                          self.coursedir.assignment_id, self.coursedir.course_id)
        for candidate in self.src_records:
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, candidate.student,
                                              self.coursedir.assignment_id)
            if os.path.isdir(dest):
                # nbgrader's rules, on received times: --update takes a newer submission, --before-duedate
                # the one it chose (the newest on time) whenever it is not the one collected.
                existing = receipts.read_receipt(dest)
                newer = existing is None or candidate.received > existing
                if not ((self.update and newer) or (self.before_duedate and existing != candidate.received)):
                    if self.update:
                        self.log.info("No newer submission to collect: %s %s", candidate.student,
                                      self.coursedir.assignment_id)
                    continue
                self.log.info("Updating submission: %s %s", candidate.student, self.coursedir.assignment_id)
            else:
                self.log.info("Collecting submission: %s %s", candidate.student, self.coursedir.assignment_id)
            try:
                self._collect_one(candidate, dest)
            except SubmissionRefused as why:
                self._refuse(candidate.entry, str(why))
        if self.refused:
            self.log.warning("%d inbox entr%s of '%s' not collected (each named above; listed in %s)",
                             len(self.refused), "y" if len(self.refused) == 1 else "ies",
                             self.coursedir.assignment_id, self.write_refusals())

    def write_refusals(self) -> str:
        """``reports/collect-<assignment>.csv`` in the course: this run's refused entries, and why."""
        folder = os.path.join(self.coursedir.root, "reports")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"collect-{self.coursedir.assignment_id}.csv")
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["collected_at_utc", "inbox_entry", "reason"])
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")
            for refused in self.refused:
                writer.writerow([now, _printable(refused.entry), refused.reason])
        return path

    def _collect_one(self, candidate: Candidate, dest: str) -> None:
        """Copy into a new folder beside ``dest``; replace ``dest`` only once the copy is whole."""
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        incoming = tempfile.mkdtemp(prefix=f".{os.path.basename(dest)}.incoming-", dir=parent)
        try:
            owner = os.lstat(candidate.path).st_uid if self.check_owner else None
            copy_submission(candidate.path, os.path.join(incoming, "copy"), owner=owner, coursedir=self.coursedir,
                            log=self.log)
            # Measured again after the copy: a change during the copy makes the receipt later, never earlier.
            received = max(candidate.received, receipts.received_time(candidate.path))
            if os.path.isdir(dest):
                retired = os.path.join(incoming, "previous")
                os.rename(dest, retired)
            os.rename(os.path.join(incoming, "copy"), dest)
            receipts.write_receipt(dest, received, candidate.entry)
            self.log.info("Received %s at %s UTC (exchange change time)", _printable(candidate.entry), received)
        except (OSError, ValueError) as error:
            raise SubmissionRefused(f"it could not be copied ({error})") from None
        finally:
            shutil.rmtree(incoming, ignore_errors=True)


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def copy_submission(src: str, dest: str, *, owner: int | None, coursedir, log=None) -> None:
    """Copy the inbox folder ``src`` into the new folder ``dest``, never following a link.

    Only directories and regular files are copied, each opened relative to its parent's descriptor with
    ``O_NOFOLLOW`` (a link swapped in during the copy is refused, not followed) and checked after opening;
    with ``owner`` every entry must belong to that uid. nbgrader's ``CourseDirectory.ignore``, ``include``,
    ``max_file_size`` and ``max_dir_size`` apply as in nbgrader's own copy. Raises
    :class:`SubmissionRefused` naming the first entry that breaks a rule.
    """
    budget = {"entries": 0, "bytes": 0}
    limit = 1000 * coursedir.max_dir_size if coursedir.max_dir_size else None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    try:
        top = os.open(src, flags)
    except OSError as error:
        raise SubmissionRefused(f"it cannot be opened as a folder ({error.strerror})") from None
    try:
        os.mkdir(dest, 0o755)
        _copy_tree(top, dest, "", owner, coursedir, budget, limit, log)
    finally:
        os.close(top)


def _check_owner(info: os.stat_result, owner: int | None, where: str) -> None:
    if owner is not None and info.st_uid != owner:
        raise SubmissionRefused(f"{where or 'the folder'} belongs to the account {_owner_name(info.st_uid)}, "
                                f"not to the submitting student")


def _copy_tree(dir_fd: int, dest: str, where: str, owner, coursedir, budget, limit, log) -> None:
    _check_owner(os.fstat(dir_fd), owner, where)
    for name in sorted(os.listdir(dir_fd)):
        budget["entries"] += 1
        if budget["entries"] > SUBMISSION_ENTRIES.value:
            raise SubmissionRefused(f"it holds more than {SUBMISSION_ENTRIES.value} files and folders")
        relative = f"{where}/{name}" if where else name
        if coursedir.ignore and any(fnmatch.fnmatch(name, pattern) for pattern in coursedir.ignore):
            continue
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        _check_owner(info, owner, relative)
        if stat.S_ISDIR(info.st_mode):
            sub = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0),
                          dir_fd=dir_fd)
            try:
                os.mkdir(os.path.join(dest, name), 0o755)
                _copy_tree(sub, os.path.join(dest, name), relative, owner, coursedir, budget, limit, log)
            finally:
                os.close(sub)
        elif stat.S_ISREG(info.st_mode):
            if coursedir.include and not any(fnmatch.fnmatch(name, pattern) for pattern in coursedir.include):
                continue
            if coursedir.max_file_size and info.st_size > 1000 * coursedir.max_file_size:
                if log is not None:
                    log.warning("Ignoring file too large '%s' (see config option CourseDirectory.max_file_size)",
                                _printable(relative))
                continue
            _copy_file(dir_fd, name, os.path.join(dest, name), relative, owner, budget, limit)
        else:
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file or folder"
            raise SubmissionRefused(f"{_printable(relative)} is {kind}: a submission holds files and folders only")


def _copy_file(dir_fd: int, name: str, dest: str, relative: str, owner, budget, limit) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError as error:
        raise SubmissionRefused(f"{_printable(relative)} cannot be opened ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for a FIFO or device after it was listed
            raise SubmissionRefused(f"{_printable(relative)} is not a regular file")
        _check_owner(info, owner, relative)
        with open(dest, "xb") as out:
            while True:
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    break
                budget["bytes"] += len(chunk)
                if limit is not None and budget["bytes"] > limit:
                    raise SubmissionRefused(f"it is larger than CourseDirectory.max_dir_size ({limit} bytes)")
                out.write(chunk)
    finally:
        os.close(fd)


class KitReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release; the course's inbox folder then sticky (module docstring)."""

    def init_dest(self):
        super().init_dest()
        info = os.stat(self.inbound_path)
        if info.st_uid == os.geteuid() and not info.st_mode & stat.S_ISVTX:
            os.chmod(self.inbound_path, stat.S_IMODE(info.st_mode) | stat.S_ISVTX)


def install(c) -> None:
    """Put the kit's collect and release behind ``nbgrader collect`` / ``release_assignment`` and formgrader."""
    c.ExchangeFactory.collect = KitCollect
    c.ExchangeFactory.release_assignment = KitReleaseAssignment


__all__ = ["Candidate", "KitCollect", "KitReleaseAssignment", "Refused", "SubmissionRefused", "copy_submission",
           "install"]
