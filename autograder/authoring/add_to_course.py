"""``autograder add-to-course COURSE_DIR``: Module 6 in an nbgrader course someone already runs.

What it installs, from the installed kit alone (no checkout; :mod:`autograder.kit_files`):

* ``source/module6/`` and ``source/module6_further/``: the source notebooks (nbgrader's layout, so
  ``nbgrader generate_assignment module6`` finds them);
* ``module6_kit/rubrics/NN_slug.md``: the written answers' rubrics, for the instructor to read. They live
  beside ``source/``, not in it: nbgrader copies every file of ``source/<assignment>/`` into the release
  unless the course's ``CourseDirectory.ignore`` (the instructor's setting, which the kit never sets)
  excludes it, and it never releases or collects anything outside ``source/<assignment>/`` (the grader
  puts each rubric into formgrader's view from the kit itself);
* ``module6_kit/manifest.json``: the kit's version and the SHA-256 of every file above, as installed;
* one marked block at the end of the course's ``nbgrader_config.py`` (``c.Module6.term`` and
  ``use_module6(c)``, :mod:`autograder.course_setup`).

Rules (every check runs before anything is written, so a refusal changes nothing):

* the course is a course: ``COURSE_DIR/nbgrader_config.py`` exists, parses, and nbgrader's own loader
  loads it (:func:`autograder.grading.gradebook.load_config`); the config with the block added loads too;
* a file the kit would write that is already there and not recorded by the manifest as the kit's, with the
  digest the manifest recorded, is the instructor's (theirs, or edited): refused, naming it;
* a block between the kit's markers that is not exactly what the kit writes, two blocks, or a
  ``use_module6`` outside a block (written by hand): refused;
* run again with the same kit: nothing is written (no byte, no modification time);
* a different kit (``--upgrade``): the module's files are replaced, what changed is printed (notebooks
  added, changed, removed), and an assignment already released to students is left alone (refused) unless
  ``--include-released``. Released means: nbgrader's exchange has ``<root>/<course id>/outbound/<assignment>``,
  or ``release/<assignment>`` holds a notebook (what every route to students copies: the exchange, an LMS
  upload, a hub's shared folder), or a student has a ``submitted/<student>/<assignment>`` folder;
* every file is written to a temporary file beside it and moved into place (``os.replace``); the
  gradebook, the exchange, students and other assignments are never touched.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from autograder.assignment import ASSIGNMENTS

KIT_FOLDER = "module6_kit"
MANIFEST = f"{KIT_FOLDER}/manifest.json"
BEGIN = "# >>> Module 6 kit"
END = "# <<< Module 6 kit"
HEADER = f"{BEGIN} (managed by `autograder add-to-course`: change it with --term and --upgrade, not by hand)"
#: The only paths a manifest may name (anything else is not the manifest the kit writes: never read or removed).
KIT_PATH = re.compile(r"(?:source/(?:%s)/[A-Za-z0-9][A-Za-z0-9_.-]*\.ipynb|%s/rubrics/[A-Za-z0-9][A-Za-z0-9_.-]*\.md)"
                      % ("|".join(map(re.escape, ASSIGNMENTS)), KIT_FOLDER))
#: What Jupyter and Python leave in a folder of notebooks (nbgrader's own default ignore list): not a file of the course's.
DEBRIS = (".ipynb_checkpoints", "__pycache__")


class Refused(Exception):
    """Why ``add-to-course`` changed nothing (one sentence the user can act on)."""


@dataclasses.dataclass(frozen=True)
class Kit:
    """What a kit installs: its version and ``course-relative path -> bytes``."""

    version: str
    files: dict

    @classmethod
    def installed(cls) -> "Kit":
        from autograder.kit_files import kit_source, rubrics

        files = {}
        for assignment in ASSIGNMENTS:
            for path in sorted(kit_source(assignment).glob("*.ipynb")):
                files[f"source/{assignment}/{path.name}"] = path.read_bytes()
        for name, path in rubrics().items():
            files[f"{KIT_FOLDER}/rubrics/{name}.md"] = path.read_bytes()
        return cls(version=_kit_version(), files=files)

    def manifest(self) -> bytes:
        record = {"kit": "module6-instructor", "version": self.version,
                  "files": {path: _digest(data) for path, data in sorted(self.files.items())}}
        return (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a run did (or, refused, would have done): paths written and removed, and the lines it printed."""

    written: tuple = ()
    removed: tuple = ()
    lines: tuple = ()


def _kit_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("module6-instructor")
    except metadata.PackageNotFoundError:
        return "0+checkout"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def block(term: str) -> str:
    """The config block the kit writes for ``term`` (H38_COMMON point 4)."""
    return (f"{HEADER}\n"
            f"c.Module6.term = {json.dumps(term)}\n"
            "from autograder.course_setup import use_module6\n"
            "use_module6(c)\n"
            f"{END}\n")


def check_term(term: str) -> str:
    """``term`` as given, or ``ValueError`` naming ``--term`` and the form expected ("" is no term).

    The one rule of a term label is the student package's (:func:`course.variants.check_course_term_value`,
    which ``c.Module6.term`` and the released numbers cell apply too): what this command writes, nbgrader
    then accepts, and the other way round.
    """
    from course.variants import check_course_term_value

    try:
        return check_course_term_value(term, "term")
    except ValueError as error:
        raise ValueError(f"--term: {error} (for example --term 2026-fall)") from None


def _config_block(text: str) -> tuple:
    """``(start, end, term)`` of the kit's block in a config text, or None; :class:`Refused` for a hand-written one."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN)]
    ends = [i for i, line in enumerate(lines) if line.startswith(END)]
    if not begins and not ends:
        if re.search(r"\buse_module6\b", text):
            raise Refused("nbgrader_config.py already turns the kit on outside the kit's marked block (written by "
                          "hand): remove those lines, then run `autograder add-to-course` again")
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise Refused(f"nbgrader_config.py has {len(begins)} '{BEGIN}' and {len(ends)} '{END}' lines: keep one block "
                      "as the kit wrote it (or none), then run again")
    start, stop = begins[0], ends[0] + 1
    found = "".join(lines[start:stop])
    term_line = lines[start + 1] if start + 1 < stop else ""
    match = re.fullmatch(r'c\.Module6\.term = ("(?:[^"\\]|\\.)*")\n', term_line)
    term = None
    if match:
        try:
            term = json.loads(match.group(1))
        except ValueError:
            term = None
    if term is None or found != block(term) or re.search(r"\buse_module6\b", "".join(lines[:start] + lines[stop:])):
        raise Refused("nbgrader_config.py holds a Module 6 kit block that the kit did not write as it stands (edited "
                      "by hand): restore it or remove it, then run again")
    return sum(map(len, lines[:start])), sum(map(len, lines[:stop])), term


def _released(root: Path, config, assignment: str) -> list:
    """Why ``assignment`` counts as released to students (empty: it does not)."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.exchange import Exchange

    from autograder.course_settings import release_folder

    reasons = []
    coursedir = CourseDirectory(config=config)
    coursedir.root = str(root)
    outbound = Path(Exchange(config=config).root) / coursedir.course_id / "outbound" / assignment
    if outbound.is_dir():
        reasons.append(f"nbgrader's exchange has {outbound}")
    release = release_folder(coursedir, assignment)
    if release.is_dir() and any(release.glob("*.ipynb")):
        reasons.append(f"{release.relative_to(root) if release.is_relative_to(root) else release} holds the students' notebooks")
    submitted = root / "submitted"
    if submitted.is_dir() and any((student / assignment).is_dir() for student in submitted.iterdir()):
        reasons.append(f"students handed it in (submitted/*/{assignment})")
    return reasons


def _read_manifest(root: Path) -> dict | None:
    path = root / MANIFEST
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        files = record["files"]
        if not isinstance(files, dict) or not all(isinstance(k, str) and KIT_PATH.fullmatch(k) and isinstance(v, str)
                                                  for k, v in files.items()):
            raise ValueError("files")
        return {"version": str(record["version"]), "files": dict(files)}
    except (ValueError, KeyError, TypeError):
        raise Refused(f"{MANIFEST} is not the manifest the kit writes (edited or damaged): restore it, or move "
                      f"{KIT_FOLDER}/ and the kit's source folders away and run again") from None


def _installed_files(root: Path, manifest: dict | None) -> dict:
    """The kit's files as they are in the course, checked against the manifest (:class:`Refused` when not the kit's)."""
    recorded = manifest["files"] if manifest else {}
    for folder in [f"source/{a}" for a in ASSIGNMENTS] + [f"{KIT_FOLDER}/rubrics"]:
        path = root / folder
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise Refused(f"{folder} is not a folder the kit made: move it away, then run again")
        if not path.is_dir():
            continue
        for entry in sorted(path.iterdir()):
            if entry.name in DEBRIS and entry.is_dir() and not entry.is_symlink():
                continue
            name = f"{folder}/{entry.name}"
            if name not in recorded:
                owner = "is not the kit's (no manifest)" if manifest is None else "was not installed by the kit"
                raise Refused(f"{name} {owner}: the course has its own {folder}; nothing was changed")
    current = {}
    for name, digest in recorded.items():
        path = root / name
        if path.is_symlink() or not path.is_file():
            raise Refused(f"{name}, installed by the kit, is missing or not a file: restore it, then run again")
        data = path.read_bytes()
        if _digest(data) != digest:
            raise Refused(f"{name} was edited since the kit installed it (its digest is not the manifest's): "
                          "nothing was changed; move your version away or restore the kit's, then run again")
        current[name] = data
    return current


def _notebook_changes(old: dict, new: dict) -> list:
    """Lines saying which notebooks each assignment gains, changes and loses (and how many rubrics change)."""
    lines = []
    for assignment in ASSIGNMENTS:
        prefix = f"source/{assignment}/"
        before = {k[len(prefix):]: v for k, v in old.items() if k.startswith(prefix)}
        after = {k[len(prefix):]: v for k, v in new.items() if k.startswith(prefix)}
        for label, names in (("added", sorted(set(after) - set(before))),
                             ("changed", sorted(n for n in set(after) & set(before) if after[n] != before[n])),
                             ("removed", sorted(set(before) - set(after)))):
            if names:
                lines.append(f"{assignment}: {label} {', '.join(names)}")
    rubric = f"{KIT_FOLDER}/rubrics/"
    changed = sorted(k for k in set(old) | set(new) if k.startswith(rubric) and old.get(k) != new.get(k))
    if changed:
        lines.append(f"rubrics: {len(changed)} updated ({', '.join(Path(k).stem for k in changed)})")
    return lines


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _check_config(root: Path, text: str) -> None:
    """``text`` (the config with the block) parses and loads with nbgrader's loader, with the kit in effect."""
    from traitlets.config.loader import PyFileConfigLoader

    try:
        ast.parse(text)
    except SyntaxError as error:
        raise Refused(f"nbgrader_config.py with the kit's block would not parse ({error.msg}, line {error.lineno})")
    handle, temporary = tempfile.mkstemp(prefix=".nbgrader_config.", suffix=".py", dir=root)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        cwd = os.getcwd()
        try:
            os.chdir(root)
            config = PyFileConfigLoader(os.path.basename(temporary), path=str(root)).load_config()
        finally:
            os.chdir(cwd)
    except Refused:
        raise
    except Exception as error:  # noqa: BLE001 - nbgrader would only log it and grade on its defaults
        raise Refused(f"nbgrader_config.py with the kit's block does not load ({type(error).__name__}: {error}); "
                      "nothing was changed") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    if list(config.Module6Scope.assignments) != list(ASSIGNMENTS):
        raise Refused("nbgrader_config.py sets c.Module6Scope.assignments after the kit's block: remove that line")


def _course_root(course_dir) -> Path:
    root = Path(course_dir).resolve()
    if not root.is_dir():
        raise Refused(f"COURSE_DIR must be an nbgrader course directory, got {course_dir} (not a directory)")
    if not (root / "nbgrader_config.py").is_file():
        raise Refused(f"COURSE_DIR must be an nbgrader course directory (with nbgrader_config.py), got {root}")
    return root


def _plan_config(root: Path, term: str | None, upgrade: bool) -> tuple:
    """``(config, text, new_text, found, term)``: the course's config, loaded by nbgrader's loader, and its text with
    the kit's block for the term in effect (:class:`Refused` for every reason the block cannot be written)."""
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import load_config

    config_path = root / "nbgrader_config.py"
    text = config_path.read_text(encoding="utf-8")
    try:
        ast.parse(text)
    except SyntaxError as error:
        raise Refused(f"{config_path} does not parse ({error.msg}, line {error.lineno}): fix it first") from None
    try:
        config = load_config(root)
    except GradingError as error:
        raise Refused(f"{error}: fix it first") from None
    found = _config_block(text)
    if found is None:
        term = term or ""
        new_text = text + ("" if text.endswith("\n") or not text else "\n") + "\n" + block(term)
    else:
        start, stop, current_term = found
        if term is not None and term != current_term and not upgrade:
            raise Refused(f"the course's kit block has term {current_term!r}; changing it to {term!r} changes the "
                          "numbers of every later release: run with --upgrade to do it")
        term = current_term if term is None else term
        new_text = text[:start] + block(term) + text[stop:]
    if new_text != text:
        _check_config(root, new_text)
    return config, text, new_text, found, term


def _plan_upgrade(root: Path, config, manifest: dict, current: dict, kit: Kit, include_released: bool) -> list:
    """The lines of an upgrade from the course's kit to ``kit``; :class:`Refused` when it would change a released
    assignment without ``include_released``."""
    changes = _notebook_changes(current, kit.files)
    lines = [f"upgrading Module 6 kit {manifest['version']} -> {kit.version}", *(changes or ["notebooks: no change"])]
    for assignment in ASSIGNMENTS:
        prefix = f"source/{assignment}/"
        if all(current.get(k) == kit.files.get(k) for k in set(current) | set(kit.files) if k.startswith(prefix)):
            continue
        reasons = _released(root, config, assignment)
        if reasons and not include_released:
            raise Refused(f"{assignment} is already released to students ({'; '.join(reasons)}): its notebooks "
                          "were not changed (nor anything else); run with --include-released to change them anyway")
        if reasons:
            lines.append(f"{assignment} was already released ({'; '.join(reasons)}): students have the old "
                         f"notebooks until you run `nbgrader generate_assignment {assignment} --force` and release it again")
    return lines


def _write(root: Path, kit: Kit, current: dict, text: str, new_text: str) -> tuple:
    """Changed files, removed files, the manifest, then the config, each atomically; ``(written, removed)``."""
    written, removed = [], []
    for name, data in sorted(kit.files.items()):
        if current.get(name) != data:
            _write_atomic(root / name, data)
            written.append(name)
    for name in sorted(set(current) - set(kit.files)):
        (root / name).unlink()
        removed.append(name)
    manifest_bytes = kit.manifest()
    manifest_path = root / MANIFEST
    if not manifest_path.is_file() or manifest_path.read_bytes() != manifest_bytes:
        _write_atomic(manifest_path, manifest_bytes)
        written.append(MANIFEST)
    if new_text != text:
        config_path = root / "nbgrader_config.py"
        _write_atomic(config_path, new_text.encode("utf-8"), mode=config_path.stat().st_mode & 0o7777)
        written.append("nbgrader_config.py")
    return written, removed


def add_to_course(course_dir, *, term: str | None = None, upgrade: bool = False, include_released: bool = False,
                  kit: Kit | None = None) -> Outcome:
    """Install (or upgrade) the kit in the nbgrader course ``course_dir``; :class:`Refused` changes nothing.

    Stages: the course and its config (:func:`_plan_config`), the files already there
    (:func:`_installed_files`) and an upgrade's changes (:func:`_plan_upgrade`), all checked before
    :func:`_write` writes anything.
    """
    root = _course_root(course_dir)
    if term is not None:
        term = check_term(term)
    kit = kit or Kit.installed()
    config, text, new_text, found, term = _plan_config(root, term, upgrade)
    manifest = _read_manifest(root)
    current = _installed_files(root, manifest)
    lines = []
    if manifest is not None and (current != kit.files or manifest["version"] != kit.version):
        if not upgrade:
            raise Refused(f"the course has Module 6 kit {manifest['version']} and this is kit {kit.version}: run "
                          "with --upgrade to replace the module's files")
        lines = _plan_upgrade(root, config, manifest, current, kit, include_released)
    written, removed = _write(root, kit, current, text, new_text)
    if manifest is None:
        counts = ", ".join(f"source/{a} ({sum(k.startswith(f'source/{a}/') for k in kit.files)} notebooks)"
                           for a in ASSIGNMENTS)
        lines.append(f"added Module 6 kit {kit.version}: {counts}, {KIT_FOLDER}/rubrics, {MANIFEST}")
    if "nbgrader_config.py" in written:
        lines.append(f"nbgrader_config.py: the kit's block {'added' if found is None else 'updated'} (term {term!r})")
    if not written and not removed:
        lines.append(f"nothing to do: the course already has Module 6 kit {kit.version} as installed")
    elif manifest is None:
        lines.append("next, in the course directory: `nbgrader generate_assignment module6` (and module6_further)")
    return Outcome(tuple(written), tuple(removed), tuple(lines))


def main(argv: list | None = None, prog: str = "autograder add-to-course") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=(
        "Add Module 6 (assignments module6 and module6_further) to the nbgrader course in COURSE_DIR: its source "
        "notebooks, its rubrics (module6_kit/), a manifest and one marked block in nbgrader_config.py. Nothing of "
        "the course's own configuration, assignments, students or grades changes; a second run changes nothing."))
    parser.add_argument("course_dir", metavar="COURSE_DIR", help="the course directory (with nbgrader_config.py)")
    parser.add_argument("--term", metavar="LABEL", default=None,
                        help="the term's label (c.Module6.term, e.g. 2026-fall): it enters every student's numbers")
    parser.add_argument("--upgrade", action="store_true",
                        help="replace the module's files with this kit's (a newer version), or change --term")
    parser.add_argument("--include-released", action="store_true",
                        help="with --upgrade: also change an assignment already released to students")
    args = parser.parse_args(argv)
    try:
        outcome = add_to_course(args.course_dir, term=args.term, upgrade=args.upgrade,
                                include_released=args.include_released)
    except (Refused, ValueError, FileNotFoundError) as error:
        print(f"autograder add-to-course: error: {error}", file=sys.stderr)
        return 2
    for line in outcome.lines:
        print(line)
    return 0


__all__ = ["BEGIN", "END", "KIT_FOLDER", "MANIFEST", "Kit", "Outcome", "Refused", "add_to_course", "block",
           "check_term", "main"]
