"""One corpus of hostile submission folders, through every door that reads student files.

The same tree (links at every path level, FIFOs, a device node, a sparse 25 MB file, 5,000 nested
arrays, 200,000 cells, extra files of every kind) is built three times and graded by ``autograder
grade``, by ``nbgrader autograde`` and by formgrader's API (``NbGraderAPI.autograde``), each in a
subprocess with a deadline: a door that blocks on a FIFO fails the test instead of hanging it.
Every door must give the same points, log or report the same status and sentence, copy nothing of a
submission folder into ``autograded/`` and read nothing through a link. ``autograder similarity`` and
``autograder report`` list the same folders, and the Dask path ships the same refusals.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from hostile import toy
from autograder.grading import intake
from autograder.results import Status

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

TESTS = Path(__file__).resolve().parent
DEADLINE = 600  # seconds for one door on the whole corpus (it takes about 30): past it, a door hangs
STEM = toy.STEM
#: What a door may leave in a student's autograded folder: what the grader itself writes.
WRITTEN = {f"{STEM}.ipynb", "timestamp.txt", "submission_secret.txt", ".autograder-state.json"}
GRADED = ("honest", "extras", "odd_stamps", "linked_stamps")  # each earns every autograded point
REFUSED = {  # student -> (status, words of the sentence every door uses)
    "link_student": (Status.SYMLINK, "submitted/link_student is a symbolic link"),
    "link_assignment": (Status.SYMLINK, "submitted/link_assignment/toy is a symbolic link"),
    "link_notebook": (Status.SYMLINK, f"submitted/link_notebook/toy/{STEM}.ipynb is a symbolic link"),
    "fifo": (Status.REJECTED, "is a FIFO (named pipe)"),
    "huge": (Status.REJECTED, "the notebook file is larger than"),
    "deep": (Status.REJECTED, "nested more than 100 levels deep"),
    "many_cells": (Status.REJECTED, "the notebook has more than 2000 cells"),
    "folder": (Status.REJECTED, "is a folder"),
    "hardlink": (Status.REJECTED, f"submitted/hardlink/toy/{STEM}.ipynb is a hard link to another file"),
}
if os.geteuid() == 0:
    REFUSED["device"] = (Status.REJECTED, "is a device node")

CONFIG = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from hostile import toy as _toy
_toy.register()
from autograder.grading import nbgrader_bridge
nbgrader_bridge.install(c)
"""

API = """
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
coursedir = CourseDirectory(config=config)
coursedir.root = os.getcwd()
api = NbGraderAPI(coursedir, config=config)
results = {student: api.autograde("toy", student) for student in sys.argv[1:]}
print(json.dumps(results))
"""


def _many_cells() -> bytes:
    """A 14 MB notebook of 200,000 markdown cells, written compact as a hand-made file would be."""
    cell = '{"cell_type":"markdown","id":"c%d","metadata":{},"source":"padding"}'
    cells = ",".join(cell % number for number in range(200_000))
    return ('{"cells":[' + cells + '],"metadata":{},"nbformat":4,"nbformat_minor":5}').encode()


def build(course: Path) -> Path:
    """The hostile corpus, beside honest students, in a fresh copy of the toy course."""
    toy.copy_course(toy.template(), course)
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text() + CONFIG)
    source = course / "source" / "toy" / f"{STEM}.ipynb"
    submitted = course / "submitted"
    honest = toy.submit(course, "honest", toy.honest_answers())
    # Extra files of every kind beside an honest notebook: none may be copied (nor opened).
    extras = toy.submit(course, "extras", toy.honest_answers()).parent
    (extras / "notes.txt").write_text("my notes")
    (extras / "solution.ipynb.txt").symlink_to(source)
    (extras / "keys").symlink_to(course / "source")
    os.mkfifo(extras / "data.csv")
    (extras / "sub").mkdir()
    (extras / "sub" / "more.txt").write_text("more")
    (extras / "sub" / "source_link.txt").symlink_to(source)
    # timestamp.txt and submission_secret.txt as a link and a FIFO: read as missing, written empty.
    stamps = toy.submit(course, "odd_stamps", toy.honest_answers()).parent
    (stamps / "timestamp.txt").symlink_to(course / "nbgrader_config.py")
    os.mkfifo(stamps / "submission_secret.txt")
    # Both as hard links to a file outside the submission: refused like the link, an empty one written.
    linked = toy.submit(course, "linked_stamps", toy.honest_answers()).parent
    (course / "claimed.txt").write_text("2020-01-01 00:00:00 UTC")
    for name in ("timestamp.txt", "submission_secret.txt"):
        os.link(course / "claimed.txt", linked / name)
    # Links at every level of the path, each to the honest student's work.
    (submitted / "link_student").symlink_to(submitted / "honest")
    (submitted / "link_assignment").mkdir()
    (submitted / "link_assignment" / "toy").symlink_to(honest.parent)
    (submitted / "link_notebook" / "toy").mkdir(parents=True)
    (submitted / "link_notebook" / "toy" / f"{STEM}.ipynb").symlink_to(honest)
    # Files that are not notebooks a reader may open, and notebooks past each limit.
    for student in ("fifo", "huge", "deep", "many_cells", "folder", "hardlink", *(["device"] if "device" in REFUSED else [])):
        (submitted / student / "toy").mkdir(parents=True)
    target = submitted / "{}" / "toy" / f"{STEM}.ipynb"
    os.mkfifo(str(target).format("fifo"))
    with open(str(target).format("huge"), "wb") as handle:
        handle.truncate(25 * 1024 * 1024)  # sparse: 25 MB by its size, nothing on disk
    Path(str(target).format("deep")).write_text(honest.read_text().replace(
        '"nbformat": 4', '"deep": ' + "[" * 5_000 + "]" * 5_000 + ', "nbformat": 4', 1))
    Path(str(target).format("many_cells")).write_bytes(_many_cells())
    Path(str(target).format("folder")).mkdir()
    os.link(source, str(target).format("hardlink"))  # the instructor's solution, under a student's name
    if "device" in REFUSED:
        os.mknod(str(target).format("device"), 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # as /dev/null
    return course


def _env() -> dict:
    env = toy.nbgrader_env()
    env.pop("JUPYTER_CONFIG_DIR", None)
    return env


def _run(args, cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, cwd=cwd, env=_env(), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=DEADLINE)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{args[2:4]} did not finish within {DEADLINE} s (blocked on a FIFO?):\n{expired.output}")


def _scores(course: Path) -> dict:
    """``student -> grade id -> auto score`` from the gradebook (students without a submission absent)."""
    from nbgrader.api import Gradebook, MissingEntry

    table = {}
    with Gradebook("sqlite:///" + str(course / "gradebook.db"), "toy-course") as gb:
        for student in gb.students:
            try:
                notebook = gb.find_submission_notebook(STEM, "toy", student.id)
            except MissingEntry:
                continue
            table[student.id] = {grade.name: grade.auto_score for grade in notebook.grades}
    return table


def _autograded(course: Path) -> dict:
    root = course / "autograded"
    return {folder.parent.name: sorted(p.name for p in folder.iterdir())
            for folder in sorted(root.glob("*/toy"))}


@pytest.fixture(scope="module")
def doors(tmp_path_factory):
    base = tmp_path_factory.mktemp("doors")
    ours = build(base / "ours")
    proc = _run([sys.executable, "-m", "autograder", "grade", "toy", "--jobs", "2", "--no-progress",
                 "--report", str(ours / "report.jsonl")], ours)
    assert proc.returncode == 0, proc.stdout
    rows = [json.loads(line) for line in (ours / "report.jsonl").read_text().splitlines()]

    theirs = build(base / "nbgrader")
    nbgrader = _run([sys.executable, "-m", "nbgrader", "autograde", "toy", "--force"], theirs)

    button = build(base / "formgrader")
    students = sorted(p.name for p in (button / "submitted").iterdir())
    api = _run([sys.executable, "-c", API, *students], button)
    assert api.returncode == 0, api.stdout
    results = json.loads(api.stdout.strip().splitlines()[-1])
    return {"ours": ours, "rows": rows, "nbgrader": theirs, "nbgrader_log": nbgrader.stdout,
            "nbgrader_status": nbgrader.returncode, "formgrader": button, "api": results}


def _rows(doors, student):
    return [row for row in doors["rows"] if row["student"] == student and row["notebook"] == STEM]


def test_every_door_gives_the_same_points(doors):
    ours = _scores(doors["ours"])
    assert _scores(doors["nbgrader"]) == ours
    assert _scores(doors["formgrader"]) == ours
    for student in GRADED:
        assert ours[student] == {"test_double": 2.0, "test_answer": 1.0, "explain_why": None}, student
    for student, (status, _) in REFUSED.items():
        if student in ("link_student", "link_assignment"):
            assert student not in ours  # never read: no submission recorded
        elif status == Status.SYMLINK:
            assert set(ours[student].values()) == {None}  # not graded: no points, not zero either
        else:
            assert ours[student]["test_double"] == ours[student]["test_answer"] == 0.0, student


@pytest.mark.parametrize("student", sorted(REFUSED))
def test_every_door_says_why_with_the_same_status_and_sentence(doors, student):
    status, words = REFUSED[student]
    rows = _rows(doors, student)
    assert rows and {row["status"] for row in rows} == {status}, rows
    assert {row["feedback"] for row in rows} == {rows[0]["feedback"]} and words in rows[0]["feedback"]
    line = intake.Refusal(status, "", rows[0]["feedback"].split(": ", 1)[1]).line(student, STEM)
    assert line in doors["nbgrader_log"], (line, doors["nbgrader_log"][-3000:])
    assert line in doors["api"][student]["log"], doors["api"][student]


def test_one_refusal_costs_only_that_submission(doors):
    assert doors["nbgrader_status"] == 0, doors["nbgrader_log"][-3000:]
    for student in GRADED:
        result = doors["api"][student]
        assert result["success"], result
    assert not any(row["status"] in ("error", "grader_error") for row in doors["rows"])


@pytest.mark.parametrize("door", ["ours", "nbgrader", "formgrader"])
def test_nothing_of_a_submission_folder_is_copied(doors, door):
    course = doors[door]
    produced = _autograded(course)
    for student, names in produced.items():
        assert set(names) <= WRITTEN, (door, student, names)
    assert "link_student" not in produced and "link_assignment" not in produced
    assert f"{STEM}.ipynb" not in produced.get("link_notebook", [])
    for path in [*(course / "autograded").rglob("*"), *(course / "feedback").rglob("*")]:
        assert not path.is_symlink(), path
        if path.is_file():
            assert "BEGIN SOLUTION" not in path.read_text(errors="replace"), path
    # The odd timestamp and secret: never followed or opened, an empty file stands in for each.
    for student in ("odd_stamps", "linked_stamps"):
        for name in ("timestamp.txt", "submission_secret.txt"):
            assert (course / "autograded" / student / "toy" / name).read_bytes() == b"", (door, student, name)


def test_similarity_and_report_read_through_the_intake(doors, monkeypatch):
    from autograder.insight import results, similarity

    course = doors["ours"]
    answers = similarity.read_answers(course, "toy")
    students = {student for codes in answers.values() for student in codes}
    assert students == set(GRADED)  # nothing through a link, no refused file, no hang on the FIFO
    # An autograded notebook that is a link (to another student's) is not read by the class report:
    # that student's rows say the notebook was not graded, and carry none of the other's verdicts.
    graded = course / "autograded" / "odd_stamps" / "toy" / f"{STEM}.ipynb"
    graded.unlink()
    graded.symlink_to(course / "autograded" / "honest" / "toy" / f"{STEM}.ipynb")
    rows = results.read_graded(course, "toy")
    odd = [row for row in rows if row["student"] == "odd_stamps"]
    assert odd and all(row["status"] != "graded" and not row["misconceptions"] for row in odd), odd
    assert {"honest", "extras"} <= {row["student"] for row in rows if row["status"] == "graded"}
    assert "fifo" in {row["student"] for row in rows}  # refused unopened, and still in the report


def test_the_dask_path_ships_the_same_refusals(doors):
    """On Dask the coordinator reads each file through the intake and ships its text or its refusal."""
    from autograder.grading.task import GradingTask, default_limits
    from autograder.grading.worker import read_submission

    root = doors["ours"] / "submitted"
    for student, (status, words) in REFUSED.items():
        parts = (student, "toy", f"{STEM}.ipynb")
        task = GradingTask(student=student, assignment="toy", stem=STEM, source="", limits=default_limits(),
                           root=str(root), parts=parts)
        shipped = task.shipped()
        assert shipped.root is None and shipped.parts == () and (shipped.submission is None) != (shipped.refused is None)
        on_worker = read_submission(shipped, default_limits())
        here = read_submission(task, default_limits())
        assert on_worker.refusal == here.refusal and here.refusal.status == status, student
        assert words in here.refusal.reason


def test_many_cells_are_refused_before_any_parse(monkeypatch, tmp_path):
    """200,000 cells (14 MB) are refused on the raw bytes: no JSON parser, no schema validation."""
    import json as json_module
    import resource
    import time

    (tmp_path / "a.ipynb").write_bytes(_many_cells())
    assert 13_000_000 < (tmp_path / "a.ipynb").stat().st_size < 15_000_000

    def forbidden(*args, **kwargs):
        raise AssertionError("parsed before the cell limit")

    monkeypatch.setattr(json_module, "loads", forbidden)
    monkeypatch.setattr(nbformat, "reads", forbidden)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    read = intake.read_notebook(tmp_path, ["a.ipynb"])
    assert time.perf_counter() - started < 5
    assert read.refusal is not None and read.refusal.limit == "cells", read
    # The raw pass holds a few arrays of the file's size (about 10 bytes per byte), never a parse tree.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 400_000  # kB


def test_no_component_of_a_path_is_followed(tmp_path):
    root = tmp_path / "submitted"
    (root / "ann" / "toy").mkdir(parents=True)
    (root / "ann" / "toy" / "n.ipynb").write_text("{}")
    (root / "bob").symlink_to(root / "ann")
    (root / "cid").mkdir()
    (root / "cid" / "toy").symlink_to(root / "ann" / "toy")
    for parts, shown in [(("bob", "toy", "n.ipynb"), "submitted/bob"),
                         (("cid", "toy", "n.ipynb"), "submitted/cid/toy")]:
        with pytest.raises(intake.Refused) as refused:
            intake.read_bytes(root, parts, 100)
        assert refused.value.refusal == intake.Refusal(Status.SYMLINK, "symlink", f"{shown} is a symbolic link")
    assert intake.read_bytes(root, ("ann", "toy", "n.ipynb"), 100) == b"{}"
    listing = intake.list_folder(root)
    assert {(e.name, e.kind) for e in listing.entries} == {("ann", "directory"), ("bob", "symlink"),
                                                           ("cid", "directory")}
    assert intake.list_folder(root, ("bob",)).refusal.status == Status.SYMLINK
    for bad in ("..", "a/b", ""):
        with pytest.raises(ValueError, match="parts"):
            intake.locate(root, ("ann", bad))


def test_a_hard_link_is_refused_on_the_lstat_and_on_the_fstat(tmp_path, monkeypatch):
    """A second name for a file outside the submission is refused, even if it was linked after the lstat."""
    root = tmp_path / "submitted"
    (root / "ann" / "toy").mkdir(parents=True)
    own = root / "ann" / "toy" / "own.ipynb"
    own.write_text("{}")
    os.link(tmp_path / "submitted" / "ann" / "toy" / "own.ipynb", tmp_path / "solution.ipynb")
    sentence = ("submitted/ann/toy/own.ipynb is a hard link to another file: the grader reads only files of "
                "the submission's own")
    expected = intake.Refusal(Status.REJECTED, "hardlink", sentence)
    parts = ("ann", "toy", "own.ipynb")
    assert intake.locate(root, parts) == expected
    with pytest.raises(intake.Refused) as refused:
        intake.read_bytes(root, parts, 100)
    assert refused.value.refusal == expected
    assert intake.read_notebook(root, parts).refusal == expected
    assert intake.fingerprint(root, parts, 100) == f"refused: hardlink: {sentence}".encode()
    # Linked between the lstat and the open: the fstat of the opened descriptor still sees two links.
    (tmp_path / "single.txt").write_text("x")
    single = os.stat(tmp_path / "single.txt", follow_symlinks=False)
    assert single.st_nlink == 1
    real = intake._lstat_at
    monkeypatch.setattr(intake, "_lstat_at", lambda fd, name: single if name == "own.ipynb" else real(fd, name))
    with pytest.raises(intake.Refused) as refused:
        intake.read_bytes(root, parts, 100)
    assert refused.value.refusal == expected
    monkeypatch.undo()
    (tmp_path / "solution.ipynb").unlink()  # one name again: read as the student's own
    assert intake.read_bytes(root, parts, 100) == b"{}"
