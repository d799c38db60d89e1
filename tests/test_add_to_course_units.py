"""``autograder add-to-course``: what it writes, that a second run writes nothing, and that a refusal changes nothing.

The course is tests/plain_course.py's ``stat-490`` (the instructor's own config and ``ps1``); the kit is the
one installed here (this checkout). A "newer kit" is made by changing the installed one's files. The whole
term in such a course, from the installed wheel, is tests/test_add_to_course.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import plain_course
from autograder.assignment import ASSIGNMENTS
from autograder.authoring import add_to_course as adding
from autograder.authoring.add_to_course import Kit, Refused, add_to_course


def state(root: Path) -> dict:
    """Every file and folder under ``root``: ``path -> (sha256, mtime_ns, mode)`` (folders: mode only)."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        key = path.relative_to(root).as_posix()
        found[key] = ((hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None),
                      info.st_mtime_ns if path.is_file() else None, info.st_mode)
    return found


@pytest.fixture
def course(tmp_path):
    return plain_course.write_course(tmp_path / "stat-490")


@pytest.fixture(scope="module")
def kit():
    return Kit.installed()


def newer(kit: Kit) -> Kit:
    """The installed kit with one notebook changed, one added and one removed, as version 99.0."""
    files = dict(kit.files)
    stems = sorted(k for k in files if k.startswith("source/module6/"))
    files[stems[0]] = files[stems[0]].replace(b'"cells": [', b'"cells": [', 1) + b"\n"
    del files[stems[-1]]
    files["source/module6_further/99_new_exercise.ipynb"] = files[stems[1]]
    return Kit("99.0", files)


def test_a_first_run_installs_the_module_the_manifest_and_one_block(course, kit):
    before_ps1 = (course / "source" / "ps1" / "ps1.ipynb").read_bytes()
    outcome = add_to_course(course, term="2026-fall", kit=kit)
    for name, data in kit.files.items():
        assert (course / name).read_bytes() == data
    assert sum(name.startswith("source/module6/") for name in kit.files) == 20
    assert sum(name.startswith("source/module6_further/") for name in kit.files) == 10
    assert any(name.startswith("module6_kit/rubrics/") for name in kit.files)
    manifest = json.loads((course / adding.MANIFEST).read_text())
    assert manifest["version"] == kit.version
    assert manifest["files"] == {k: hashlib.sha256(v).hexdigest() for k, v in kit.files.items()}
    config = (course / "nbgrader_config.py").read_text()
    assert config.startswith(plain_course.config())  # the instructor's lines, untouched
    assert config.count(adding.BEGIN) == 1 and config.endswith(adding.block("2026-fall"))
    assert 'c.Module6.term = "2026-fall"' in config and "use_module6(c)" in config
    assert (course / "source" / "ps1" / "ps1.ipynb").read_bytes() == before_ps1
    assert not (course / "gradebook.db").exists() and not (course / "release").exists()
    assert any("added Module 6 kit" in line for line in outcome.lines)
    # nbgrader's own loader reads the course with the kit in effect, the course id still the instructor's.
    from autograder.grading.gradebook import load_config
    loaded = load_config(course)
    assert loaded.CourseDirectory.course_id == plain_course.COURSE_ID
    assert list(loaded.Module6Scope.assignments) == list(ASSIGNMENTS)


def test_a_second_run_changes_no_byte_and_no_time(course, kit):
    add_to_course(course, term="2026-fall", kit=kit)
    before = state(course)
    outcome = add_to_course(course, kit=kit)  # no --term: the block's term is kept
    assert outcome.written == () and outcome.removed == ()
    assert state(course) == before
    assert any("nothing to do" in line for line in outcome.lines)
    assert add_to_course(course, term="2026-fall", kit=kit).written == ()
    assert state(course) == before


def _refused(course: Path, match: str, **kw) -> None:
    before = state(course)
    with pytest.raises(Refused, match=match):
        add_to_course(course, **kw)
    assert state(course) == before, "a refusal changed the course"


def test_an_assignment_of_the_course_with_the_kit_s_name_is_refused(course, kit):
    theirs = course / "source" / "module6"
    theirs.mkdir()
    (theirs / "hw.ipynb").write_text("{}")
    _refused(course, r"source/module6/hw.ipynb is not the kit's", kit=kit)
    # Even a byte-for-byte copy of the kit's notebook is not the kit's without the kit's manifest.
    (theirs / "hw.ipynb").unlink()
    name = next(k for k in kit.files if k.startswith("source/module6/"))
    (course / name).write_bytes(kit.files[name])
    _refused(course, "not the kit's", kit=kit)


def test_an_edited_notebook_or_rubric_is_refused(course, kit):
    add_to_course(course, kit=kit)
    name = next(k for k in kit.files if k.startswith("source/module6_further/"))
    (course / name).write_bytes(kit.files[name] + b" ")
    _refused(course, "was edited since the kit installed it", kit=kit)
    _refused(course, "was edited since the kit installed it", kit=newer(kit), upgrade=True)
    (course / name).write_bytes(kit.files[name])
    rubric = next(k for k in kit.files if k.startswith("module6_kit/rubrics/"))
    (course / rubric).write_text("my own rubric")
    _refused(course, "was edited", kit=kit)
    (course / rubric).write_bytes(kit.files[rubric])
    (course / "source" / "module6" / "extra.ipynb").write_text("{}")
    _refused(course, "extra.ipynb was not installed by the kit", kit=kit)


@pytest.mark.parametrize("text, match", [
    ("c = get_config(\n", "does not parse"),
    ("c = get_config()\nraise RuntimeError('broken on purpose')\n", "could not be loaded"),
    (plain_course.config() + "\nfrom autograder.course_setup import use_module6\nuse_module6(c)\n", "outside the kit's"),
    (plain_course.config() + "\n" + adding.block("x").replace("use_module6(c)\n", "use_module6(c)\nc.Foo.bar = 1\n"),
     "did not write as it stands"),
    (plain_course.config() + "\n" + adding.block("x") + adding.block("x"), "keep one block"),
])
def test_a_config_that_does_not_parse_or_has_a_hand_written_block_is_refused(course, kit, text, match):
    (course / "nbgrader_config.py").write_text(text)
    _refused(course, match, kit=kit)


def test_a_block_that_lost_its_end_marker_is_refused(course, kit):
    add_to_course(course, kit=kit)
    path = course / "nbgrader_config.py"
    path.write_text(path.read_text().replace("# <<< Module 6 kit\n", ""))
    _refused(course, "keep one block", kit=kit)


def test_upgrade_says_what_changed_and_needs_to_be_asked_for(course, kit):
    add_to_course(course, kit=kit)
    later = newer(kit)
    _refused(course, "run with --upgrade", kit=later)
    outcome = add_to_course(course, kit=later, upgrade=True)
    text = "\n".join(outcome.lines)
    changed, removed = sorted(k for k in kit.files if k.startswith("source/module6/"))[0::19][:2]
    assert f"module6: changed {Path(changed).name}" in text
    assert f"module6: removed {Path(removed).name}" in text
    assert "module6_further: added 99_new_exercise.ipynb" in text
    assert not (course / removed).exists() and (course / "source/module6_further/99_new_exercise.ipynb").is_file()
    assert json.loads((course / adding.MANIFEST).read_text())["version"] == "99.0"
    before = state(course)
    assert add_to_course(course, kit=later).written == () and state(course) == before


@pytest.mark.parametrize("how", ["release", "exchange", "submitted"])
def test_upgrade_refuses_a_released_assignment_unless_told(course, kit, tmp_path, how):
    exchange = tmp_path / "exchange"
    with (course / "nbgrader_config.py").open("a") as handle:
        handle.write(f"c.Exchange.root = {str(exchange)!r}\n")
    add_to_course(course, kit=kit)
    if how == "release":
        (course / "release" / "module6").mkdir(parents=True)
        (course / "release" / "module6" / "01_stop_reasons.ipynb").write_text("{}")
    elif how == "exchange":
        (exchange / plain_course.COURSE_ID / "outbound" / "module6").mkdir(parents=True)
    else:
        (course / "submitted" / "ann" / "module6").mkdir(parents=True)
    _refused(course, "module6 is already released to students", kit=newer(kit), upgrade=True)
    outcome = add_to_course(course, kit=newer(kit), upgrade=True, include_released=True)
    assert any("students have the old notebooks" in line for line in outcome.lines)


def test_a_released_assignment_the_upgrade_does_not_change_does_not_stop_it(course, kit):
    add_to_course(course, kit=kit)
    (course / "release" / "module6_further").mkdir(parents=True)
    (course / "release" / "module6_further" / "21_x.ipynb").write_text("{}")
    files = dict(kit.files)
    first = sorted(k for k in files if k.startswith("source/module6/"))[0]
    files[first] += b"\n"
    outcome = add_to_course(course, kit=Kit("99.1", files), upgrade=True)
    assert outcome.written == (first, adding.MANIFEST)


def test_the_term_is_checked_and_kept(course, kit):
    before = (course / "nbgrader_config.py").read_bytes()
    for bad in ("fall\nimport os", " 2026-fall", "x" * 129):
        with pytest.raises(ValueError, match="--term: "):
            add_to_course(course, term=bad, kit=kit)
        assert (course / "nbgrader_config.py").read_bytes() == before
    # A label with quotes is data: written as a string literal, read back by nbgrader's loader as itself.
    quoted = "fall'; import os #\""
    add_to_course(course, term=quoted, kit=kit)
    from autograder.grading.gradebook import load_config
    assert load_config(course, []).Module6.term == quoted
    add_to_course(course, term="2026-fall", upgrade=True, kit=kit)
    _refused(course, "run with --upgrade", term="2027-spring", kit=kit)
    add_to_course(course, term="2027-spring", upgrade=True, kit=kit)
    assert (course / "nbgrader_config.py").read_text().endswith(adding.block("2027-spring"))


def test_the_command_line_names_what_is_wrong(course, tmp_path, capsys):
    from autograder.cli import main

    assert main(["add-to-course", str(tmp_path / "nowhere")]) == 2
    assert "COURSE_DIR must be an nbgrader course directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["add-to-course", str(tmp_path / "empty")]) == 2
    assert "with nbgrader_config.py" in capsys.readouterr().err
    assert main(["add-to-course", str(course), "--term", "2026-fall"]) == 0
    assert "added Module 6 kit" in capsys.readouterr().out
    assert main(["add-to-course", str(course)]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_jupyter_s_checkpoints_in_a_kit_folder_are_not_the_instructor_s_files(course, kit):
    add_to_course(course, kit=kit)
    (course / "source" / "module6" / ".ipynb_checkpoints").mkdir()
    before = state(course)
    assert add_to_course(course, kit=kit).written == () and state(course) == before


@pytest.mark.parametrize("name", ["nbgrader_config.py", "source/ps1/ps1.ipynb", "source/module6/../../x.ipynb",
                                  "/etc/hostname"])
def test_a_manifest_naming_a_file_the_kit_never_installs_is_refused(course, kit, name):
    """An upgrade removes the files the manifest names that the new kit lacks: only the kit's own may be named."""
    add_to_course(course, kit=kit)
    path = course / adding.MANIFEST
    record = json.loads(path.read_text())
    record["files"][name] = "0" * 64
    path.write_text(json.dumps(record))
    _refused(course, "not the manifest the kit writes", kit=newer(kit), upgrade=True)
