"""The students' side of a course as a tree of its own: a hub image and a Binder repository that hold no answer.

``autograder student-distribution DEST --course-dir COURSE_DIR`` writes, into the empty folder ``DEST``,
what the students of an nbgrader course that added Module 6 (``autograder add-to-course``) get:

* ``module6/``, ``module6_further/``: the release notebooks, as ``nbgrader generate_assignment`` wrote
  them in that course (nbgrader's ``CourseDirectory.release_directory``, from the course's own
  configuration, read as nbgrader's commands read it): their course id and term are in the numbers cells;
* ``wheels/module6_course-VERSION-py3-none-any.whl``: the student package, the one installed next to
  this instructor package (the exact files of that installed wheel, each checked against its RECORD);
* ``tools/``: the student-side scripts (:data:`TOOLS`); ``tools/student_nbgrader_config.py`` carries the
  course's id and exchange root, and becomes the environment's ``nbgrader_config.py``;
* ``requirements.txt`` and ``postBuild`` (what Binder, repo2docker, runs), ``Dockerfile`` (a single-user
  image for a JupyterHub, running the same two steps) and ``README.md`` (the course id and term it is for).

Nothing else of the course is read: not ``source/`` (solutions, hidden tests), ``submitted/``,
``autograded/``, ``feedback/``, the gradebook or the course's secret, and nothing of this package but the
student-side scripts. A release folder that holds anything but regular files (a symbolic link, a FIFO, a
folder) is refused, named, and nothing is written.

``tools/student_distribution.py`` builds the kit's own tree from git objects of its repository with
the same pieces (:func:`requirements`, :func:`post_build`, :func:`dockerfile`, :func:`write_steps`).

Flavours: ``hub`` (the default) keeps nbgrader's Assignment List, through which students fetch and
submit on a hub with an exchange; ``binder`` switches it off too (a Binder session has no exchange).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import io
import json
import os
import re
import stat
import sys
import textwrap
import zipfile
from pathlib import Path

from autograder.assignment import ASSIGNMENTS

#: An upstream image of the Jupyter Docker Stacks, pinned by its Python: what the hub's pods run.
BASE_IMAGE = "quay.io/jupyter/minimal-notebook:python-3.11"
#: The student-side scripts the tree carries (no answer in any of them), in :data:`TOOLS_DIR`.
TOOLS = ("student_lab_config.py", "student_nbgrader_config.py", "student_validate_message.py")
#: Where they live in this package (``tools/`` of the repository links to them).
TOOLS_DIR = Path(__file__).resolve().parent / "student_tools"
FLAVOURS = ("hub", "binder")
#: The student distribution and the folder of the tree its wheel goes into.
STUDENT_DISTRIBUTION = "module6-course"
WHEELS = "wheels"
#: The course's secret of per-student hidden inputs (autograder.variants): never read, never copied.
NEVER_READ = ("source", "submitted", "autograded", "feedback", "gradebook.db", ".module6_variant_secret")


class DistributionError(Exception):
    """A tree that cannot be built as asked; the message says what to do. Nothing was written."""


def requirements(student_package: str = "./course") -> str:
    """The pip requirements of the students' environment (nbgrader pinned as the instructor's is)."""
    return textwrap.dedent(f"""\
        # The students' environment: the student package, JupyterLab and nbgrader's student tools.
        {student_package}
        jupyterlab>=4.2,<5
        nbgrader==0.9.6
        """)


def post_build(flavour: str) -> str:
    """The shell steps after the pip install (Binder runs the file; the image runs it too)."""
    config = "python tools/student_lab_config.py sys_prefix" + (" --keep-assignment-list" if flavour == "hub" else "")
    return textwrap.dedent("""\
        #!/bin/sh
        # After the pip install: nbgrader's instructor tools off, Validate's success message made true.
        set -e
        {config}
        python tools/student_validate_message.py "$(python -c 'import sys; print(sys.prefix)')"
        """).format(config=config)


def dockerfile() -> str:
    return textwrap.dedent(f"""\
        # Single-user image for a JupyterHub: the student package and the release notebooks, nothing graded.
        FROM {BASE_IMAGE}
        COPY --chown=${{NB_UID}}:${{NB_GID}} . /opt/module6
        WORKDIR /opt/module6
        RUN python -m pip install --no-cache-dir -r requirements.txt && sh postBuild
        WORKDIR /home/${{NB_USER}}
        """)


def check_flavour(flavour: str) -> None:
    if flavour not in FLAVOURS:
        raise DistributionError(f"--flavour must be one of {FLAVOURS}, got {flavour!r}")


def check_new_folder(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise DistributionError(f"{dest} is not an empty folder: give a new folder")


def write_steps(dest: Path, flavour: str, readme: str, student_package: str) -> None:
    """The files every tree has besides its content: requirements.txt, postBuild, Dockerfile, README.md."""
    (dest / "requirements.txt").write_text(requirements(student_package))
    (dest / "postBuild").write_text(post_build(flavour))
    (dest / "postBuild").chmod(0o755)
    (dest / "Dockerfile").write_text(dockerfile())
    (dest / "README.md").write_text(readme)


# --- The course: its id, term, exchange and release folders, as nbgrader reads its configuration ---


@dataclasses.dataclass(frozen=True)
class Course:
    """What the tree needs of a course directory: its ids and the release folder of each assignment."""

    root: Path
    course_id: str
    term: str
    exchange_root: str
    releases: dict  # assignment -> Path of its release folder
    path_includes_course: bool = False  # nbgrader's Exchange setting for students in several courses


def read_course(course_dir: str | Path, assignments=ASSIGNMENTS) -> Course:
    """The course at ``course_dir``, with nbgrader's whole configuration chain applied (as its commands do)."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.exchange import Exchange
    from traitlets import TraitError

    from autograder.course_settings import configured_course_term, release_folder
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import load_config
    from autograder.grading.preflight import check_course_root

    try:
        root = check_course_root(course_dir)
        config = load_config(root)
    except GradingError as error:
        raise DistributionError(str(error)) from None
    coursedir = CourseDirectory(config=config)
    coursedir.root = str(root)
    try:
        term = configured_course_term(coursedir, config).term
    except (ValueError, TraitError) as error:  # a bad course id; a bad c.Module6.term (the trait's check)
        raise DistributionError(f"the course's {error}") from None
    exchange_root = config.Exchange.get("root", Exchange.class_traits()["root"].default_value)
    releases = {name: release_folder(coursedir, name) for name in assignments}
    for what, value in (("course id", coursedir.course_id), ("c.Module6.term", term), ("c.Exchange.root", exchange_root)):
        if not isinstance(value, str) or not value.isprintable():
            raise DistributionError(f"the course's {what} must be one line of printable text, got {value!r}")
    return Course(root, coursedir.course_id, term, exchange_root, releases,
                  bool(config.Exchange.get("path_includes_course", False)))


def release_notebooks(course: Course) -> tuple:
    """``({assignment: [notebook paths]}, [other files left out])`` of the release folders.

    Refuses a folder that is missing, has no notebook, or holds anything but regular files.
    """
    found, left_out = {}, []
    for assignment, folder in course.releases.items():
        links = [str(part) for part in (folder, *folder.parents) if part.is_relative_to(course.root)
                 and part != course.root and part.is_symlink()]
        if links:
            raise DistributionError(f"{links[-1]} is a symbolic link: the release notebooks are read from the course "
                                    "directory itself, never through a link (it could point at source/)")
        if not folder.is_dir() or not any(folder.glob("*.ipynb")):
            raise DistributionError(
                f"{assignment} has not been generated in {course.root} ({folder} has no release notebooks): run "
                f"`nbgrader generate_assignment {assignment}` there first (after `autograder add-to-course`)")
        odd = [entry for entry in sorted(folder.iterdir()) if not stat.S_ISREG(entry.lstat().st_mode)]
        if odd:
            raise DistributionError(f"{folder} holds what is not a regular file: "
                                    f"{', '.join(f'{p.name} ({_kind(p)})' for p in odd)}; nothing is written "
                                    "(a link could point at a solution): remove them and generate the assignment again")
        found[assignment] = sorted(entry for entry in folder.iterdir() if entry.suffix == ".ipynb")
        left_out += [f"{assignment}/{entry.name} (not a notebook)" for entry in sorted(folder.iterdir())
                     if entry.suffix != ".ipynb"]
    return found, left_out


def _kind(path: Path) -> str:
    mode = path.lstat().st_mode
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device")


#: The delimiters nbgrader's ClearSolutions and ClearHiddenTests look for and remove (nbgrader==0.9.6,
#: ``begin_solution_delimeter`` and ``begin_test_delimeter``, ``nbgrader/preprocessors/clearsolutions.py`` and
#: ``clearhiddentests.py``): a release notebook that still holds one is a source notebook copied by hand.
_SOURCE_MARKERS = ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS")


def _read_regular(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise DistributionError(f"{path} is not a regular file")
        return handle.read()


def _release_body(path: Path) -> bytes:
    body = _read_regular(path)
    text = body.decode("utf-8", errors="replace")
    if any(marker in text for marker in _SOURCE_MARKERS):
        raise DistributionError(f"{path} still holds nbgrader's solution or hidden-test markers: it is a source "
                                "notebook, not a release; run `nbgrader generate_assignment` and build again")
    return body


# --- The student package: the installed module6-course wheel, repacked from its own RECORD ---


def _record_hash(body: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()


#: What a wheel's .dist-info holds as built (PEP 427, PEP 639); the rest of an installed one is the installer's.
_WHEEL_METADATA = re.compile(r"METADATA|WHEEL|top_level\.txt|entry_points\.txt|licenses/[^/].*|LICENSE[^/]*")


def _installed_files(distribution) -> dict:
    """``path in the wheel -> bytes`` of the installed distribution, each checked against its RECORD."""
    dist_info = f"{distribution.metadata['Name'].replace('-', '_')}-{distribution.version}.dist-info"
    files = {}
    for entry in distribution.files or ():
        name = entry.as_posix()
        if "__pycache__" in entry.parts or name.endswith(".pyc"):
            continue  # bytecode the installer compiled
        if name.startswith(dist_info + "/") and not _WHEEL_METADATA.fullmatch(name[len(dist_info) + 1:]):
            continue  # the installer's own notes (RECORD, INSTALLER, REQUESTED, direct_url.json, uv_cache.json)
        if not (name.startswith(("course/", dist_info + "/"))) or ".." in entry.parts:
            raise DistributionError(f"the installed {STUDENT_DISTRIBUTION} lists {name}, outside its package")
        body = _read_regular(Path(distribution.locate_file(entry)))
        if entry.hash is None or _record_hash(body) != f"{entry.hash.mode}={entry.hash.value}":
            raise DistributionError(
                f"{name} of the installed {STUDENT_DISTRIBUTION} is not the file its wheel installed (RECORD's "
                f"hash differs): reinstall it (pip install --force-reinstall {STUDENT_DISTRIBUTION}=="
                f"{distribution.version})")
        files[name] = body
    return files


def _check_installed(distribution) -> None:
    direct = distribution.read_text("direct_url.json")
    if direct and json.loads(direct).get("dir_info", {}).get("editable"):
        raise DistributionError(
            f"{STUDENT_DISTRIBUTION} is installed in editable mode (from a checkout): build the kit's own tree "
            "with `python tools/student_distribution.py DEST` there, or install the wheels (pip install "
            "module6-instructor) to build a course's tree")
    names = {entry.as_posix() for entry in distribution.files or ()}
    if "course/__init__.py" not in names:
        raise DistributionError(f"the installed {STUDENT_DISTRIBUTION} does not list course/__init__.py in its "
                                "RECORD (an editable or broken install): reinstall it from its wheel")


def student_wheel() -> tuple:
    """``(file name, bytes)`` of a wheel of the installed ``module6-course``.

    The wheel holds exactly the files its RECORD lists (bytecode and the installer's own notes aside),
    each checked unchanged since the install, with a new RECORD; entries in a fixed order and time, so
    the same install gives the same bytes.
    """
    from importlib import metadata

    try:
        distribution = metadata.distribution(STUDENT_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise DistributionError(f"{STUDENT_DISTRIBUTION} is not installed: pip install module6-instructor "
                                "installs it") from None
    _check_installed(distribution)
    files = _installed_files(distribution)
    dist_info = f"{STUDENT_DISTRIBUTION.replace('-', '_')}-{distribution.version}.dist-info"
    tags = [line.split(":", 1)[1].strip() for line in files.get(f"{dist_info}/WHEEL", b"").decode().splitlines()
            if line.startswith("Tag:")]
    if tags != ["py3-none-any"]:
        raise DistributionError(f"the installed {STUDENT_DISTRIBUTION} has wheel tags {tags}, not py3-none-any")
    record = "".join(f"{name},{_record_hash(body)},{len(body)}\n" for name, body in sorted(files.items()))
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name in sorted(files, key=lambda n: (n.startswith(dist_info), n)):  # dist-info last, as wheels do
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, files[name])
    return f"{STUDENT_DISTRIBUTION.replace('-', '_')}-{distribution.version}-py3-none-any.whl", buffer.getvalue()


# --- The tree ---


def student_config(base: str, course: Course) -> str:
    """The students' ``nbgrader_config.py``: ``base`` (Validate's settings) and the course's id and exchange."""
    return base.rstrip("\n") + "\n" + textwrap.dedent(f"""
        # The course this environment is for (written by `autograder student-distribution`): nbgrader's
        # Assignment List fetches from and submits to this course in the exchange at this root, which the
        # hub mounts, shared, in every student's server.
        c.CourseDirectory.course_id = {course.course_id!r}
        c.Exchange.root = {course.exchange_root!r}
        """) + ("c.Exchange.path_includes_course = True\n" if course.path_includes_course else "")


def readme(flavour: str, course: Course, wheel: str, version: str) -> str:
    term = f"`{course.term}`" if course.term else "none set (`c.Module6.term`)"
    return textwrap.dedent(f"""\
        # Module 6, the students' side ({flavour}) of course `{course.course_id}`

        Generated by `autograder student-distribution` (module6-instructor {version}) from the course
        directory's release folders; do not edit here. Course id `{course.course_id}`, term {term},
        exchange root `{course.exchange_root}`. It holds the release notebooks ({", ".join(course.releases)}),
        the student package (`{WHEELS}/{wheel}`) and the student-side scripts (`tools/`), never the
        source notebooks, the checks, the worked solutions, the gradebook or the course's secret.

        - A JupyterHub: `docker build -t module6-student .` and use the image for students' servers, with
          nbgrader's exchange mounted at `{course.exchange_root}` in every one (the image's
          `nbgrader_config.py` names that root and the course id).
        - Binder: publish this folder as a repository of its own; Binder runs `requirements.txt` and `postBuild`.
        """)


@dataclasses.dataclass(frozen=True)
class Tree:
    """What :func:`build` wrote: the folder, the course it is for, the files written and those left out."""

    path: Path
    course: Course
    files: tuple
    left_out: tuple = ()


def build(dest: str | Path, course_dir: str | Path, flavour: str = "hub", *, assignments=ASSIGNMENTS) -> Tree:
    """Write the students' tree of the course at ``course_dir`` into ``dest`` (new, or an empty folder).

    Everything is read and checked before anything is written: a refusal leaves ``dest`` as it was.
    """
    from importlib import metadata

    check_flavour(flavour)
    dest = Path(dest)
    check_new_folder(dest)
    unknown = sorted(set(assignments) - set(ASSIGNMENTS))
    if unknown or not assignments:
        raise DistributionError(f"--assignment must name Module 6's assignments {ASSIGNMENTS}, got {unknown or []}")
    course = read_course(course_dir, tuple(assignments))
    if flavour == "hub" and not course.course_id:
        raise DistributionError(f"{course.root}/nbgrader_config.py sets no c.CourseDirectory.course_id: the "
                                "students' Assignment List needs it to find the course in the exchange")
    notebooks, left_out = release_notebooks(course)
    bodies = {f"{assignment}/{path.name}": _release_body(path) for assignment, paths in notebooks.items()
              for path in paths}
    bodies.update({f"tools/{name}": _read_regular(TOOLS_DIR / name) for name in TOOLS})
    bodies["tools/student_nbgrader_config.py"] = student_config(
        bodies["tools/student_nbgrader_config.py"].decode(), course).encode()
    wheel, body = student_wheel()
    bodies[f"{WHEELS}/{wheel}"] = body
    dest.mkdir(parents=True, exist_ok=True)
    for relative, body in bodies.items():
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL and O_NOFOLLOW: the tree is new, and nothing in it may point elsewhere.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
    try:
        version = metadata.version("module6-instructor")
    except metadata.PackageNotFoundError:
        version = "not installed"
    write_steps(dest, flavour, readme(flavour, course, wheel, version), f"./{WHEELS}/{wheel}")
    files = tuple(sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()))
    return Tree(dest, course, files, tuple(left_out))


def main(argv=None, prog: str = "autograder student-distribution") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0],
                                     epilog="Run after `nbgrader generate_assignment module6` (and module6_further) "
                                            "in the course directory.")
    parser.add_argument("dest", type=Path, help="a new (or empty) folder to write the tree into")
    parser.add_argument("--course-dir", default=".", metavar="DIR",
                        help="the nbgrader course directory the module was added to (default: .)")
    parser.add_argument("--flavour", choices=FLAVOURS, default="hub",
                        help="hub (default: keeps the Assignment List, for a hub with an exchange) or binder")
    parser.add_argument("--assignment", action="append", dest="assignments", metavar="NAME",
                        help=f"publish only this assignment (repeatable; default: {' and '.join(ASSIGNMENTS)})")
    args = parser.parse_args(argv)
    try:
        tree = build(args.dest, args.course_dir, args.flavour, assignments=tuple(args.assignments or ASSIGNMENTS))
    except DistributionError as error:
        print(f"{prog.split()[0]}: error: {error}", file=sys.stderr)
        return 2
    course = tree.course
    print(f"students' tree ({args.flavour}) of course {course.course_id!r} (term {course.term!r}, exchange "
          f"{course.exchange_root}) written to {tree.path}: {len(tree.files)} files")
    for what in tree.left_out:
        print(f"left out: {what}")
    return 0
