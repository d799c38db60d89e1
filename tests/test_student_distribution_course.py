"""The students' tree of an instructor's own course: ``autograder student-distribution DEST --course-dir DIR``.

The course is a scratch nbgrader course with a course id, term and exchange root of its own, in which
``nbgrader generate_assignment`` wrote the release folders (one notebook of each assignment, for speed);
it also holds what must never reach a student: ``source/``, a gradebook, ``submitted/``, ``autograded/``,
``feedback/`` and the course's secret, each with a marker. The command runs from the two wheels
installed non-editable in a fresh venv, outside any checkout, as an instructor has them. The tree is then
scanned (every file, the student wheel's members unpacked) and installed as the image installs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.authoring import student_distribution as sd
from autograder.authoring.scratch_course import generate_release, make_course_copy
from tests.dist_support import fresh_venv, shared_wheels
from tests.leak_support import WORKED_EXAMPLE, normalise, student_side_leaks
from tests.test_student_distribution import install_as_the_image_does

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]

STEMS = {"module6": "05_negative_kl", "module6_further": "21_sampler_trainer_mismatch"}
COURSE_ID, TERM, EXCHANGE = "stat-501", "2027-spring", "/srv/stat501/exchange"
#: Put where the course keeps what students must never get; none may appear in the tree.
MARKERS = {".module6_variant_secret": "secret-marker-5501", "submitted/alice/module6/05_negative_kl.ipynb":
           "submitted-marker-5502", "autograded/alice/module6/05_negative_kl.ipynb": "autograded-marker-5503",
           "feedback/alice/module6/05_negative_kl.html": "feedback-marker-5504",
           "source/module6/instructor_notes.md": "source-marker-5505"}


def _scratch_course(dest: Path, **settings) -> Path:
    """A course (a copy of the kit's configuration and one source notebook per assignment) with ``settings``."""
    course = make_course_copy(dest, stems=STEMS.values())
    lines = [f"c.{name} = {value!r}" for name, value in settings.items()]
    with open(course / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write("\n# The instructor's own course (tests/test_student_distribution_course.py)\n"
                     + "\n".join(lines) + "\n")
    return course


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = _scratch_course(tmp_path_factory.mktemp("course") / "stat501", **{
        "CourseDirectory.course_id": COURSE_ID, "Module6.term": TERM, "Exchange.root": EXCHANGE})
    for assignment in STEMS:
        generate_release(course, assignment)
    for name, marker in MARKERS.items():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(marker)
    return course


@pytest.fixture(scope="module")
def instructor(tmp_path_factory):
    """The instructor's environment: both wheels, non-editable, in a fresh venv; its bin folder."""
    wheels = shared_wheels(tmp_path_factory)
    return fresh_venv(tmp_path_factory.mktemp("instructor") / "venv", wheels.student, wheels.instructor).parent


def _run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run([str(bin_dir / "autograder"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module", params=sd.FLAVOURS)
def tree(request, course, instructor, tmp_path_factory):
    dest = tmp_path_factory.mktemp(request.param) / "tree"
    done = _run(instructor, "student-distribution", str(dest), "--course-dir", str(course),
                "--flavour", request.param, cwd=dest.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"students' tree ({request.param}) of course '{COURSE_ID}' (term '{TERM}'" in done.stdout
    return dest, request.param


def _texts(tree: Path) -> dict:
    """``path -> normalised text`` of every file of the tree; the wheel's members as ``course/...`` paths."""
    texts = {}
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                texts.update({name: normalise(wheel.read(name).decode("utf-8", "replace")) for name in wheel.namelist()})
            continue
        raw = path.read_bytes().decode("utf-8", errors="replace")
        if path.suffix == ".ipynb":
            raw += "\n" + "\n".join(cell.source for cell in nbformat.reads(raw, as_version=4).cells)
        texts[path.relative_to(tree).as_posix()] = normalise(raw)
    return texts


def test_the_tree_holds_the_courses_release_notebooks_and_the_installed_student_wheel(tree, course):
    root, _ = tree
    wheel_name = "module6_course-0.2.0-py3-none-any.whl"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())
    assert files == sorted(["Dockerfile", "README.md", "postBuild", "requirements.txt", f"wheels/{wheel_name}",
                            *(f"{a}/{stem}.ipynb" for a, stem in STEMS.items()),
                            *(f"tools/{name}" for name in sd.TOOLS)])
    for assignment, stem in STEMS.items():  # byte for byte what nbgrader wrote in the course
        assert (root / assignment / f"{stem}.ipynb").read_bytes() == \
            (course / "release" / assignment / f"{stem}.ipynb").read_bytes()
    assert not [p for p in root.rglob("*") if p.is_symlink()]
    assert f"./wheels/{wheel_name}" in (root / "requirements.txt").read_text().splitlines()
    with zipfile.ZipFile(root / "wheels" / wheel_name) as repacked:
        assert repacked.testzip() is None
        names = repacked.namelist()
        assert all(n.startswith(("course/", "module6_course-0.2.0.dist-info/")) for n in names), names
        assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", "INSTALLER", "direct_url.json"))]


def test_the_repacked_wheel_is_the_built_wheel_file_for_file(tree, tmp_path_factory):
    """Every member of the student wheel that was installed is in the tree's wheel with the same bytes."""
    root, _ = tree
    built = shared_wheels(tmp_path_factory).student
    with zipfile.ZipFile(built) as original, zipfile.ZipFile(root / "wheels" / built.name) as repacked:
        record = "module6_course-0.2.0.dist-info/RECORD"
        wanted = {n: original.read(n) for n in original.namelist() if n != record}
        got = {n: repacked.read(n) for n in repacked.namelist() if n != record}
        assert got == wanted
        assert sorted(line.split(",")[0] for line in repacked.read(record).decode().splitlines()) == \
            sorted(repacked.namelist())



def test_the_wheel_is_only_what_the_install_recorded_and_a_changed_file_is_refused(tmp_path_factory, tmp_path):
    """A file added to the installed package (a key saved next to it) is not in the wheel; an installed file
    changed since the install (RECORD's hash differs) stops the build."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
                    str(target), str(shared_wheels(tmp_path_factory).student)], check=True, capture_output=True)
    (target / "course" / "answer_key.py").write_text("KEY = 'planted-key-5506'\n")
    probe = ("import sys, zipfile, io; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])\n"
             "from autograder.authoring import student_distribution as sd\n"
             "try:\n    name, body = sd.student_wheel()\nexcept sd.DistributionError as error:\n    print('refused:', error)\n"
             "else:\n    print(name, sorted(zipfile.ZipFile(io.BytesIO(body)).namelist()))\n")
    run = [sys.executable, "-I", "-c", probe, str(target), str(ROOT)]
    done = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("module6_course-0.2.0-py3-none-any.whl"), done.stderr
    assert "course/__init__.py" in done.stdout and "answer_key" not in done.stdout
    with open(target / "course" / "answers.py", "a") as changed:
        changed.write("# edited after the install\n")
    done = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.startswith("refused: course/answers.py of the installed module6-course is not the file its "
                                  "wheel installed"), done.stdout + done.stderr

def test_the_students_config_and_readme_name_the_courses_id_term_and_exchange(tree):
    root, flavour = tree
    config = PyFileConfigLoader("student_nbgrader_config.py", path=str(root / "tools")).load_config()
    assert config.CourseDirectory.course_id == COURSE_ID and config.Exchange.root == EXCHANGE
    assert config.Validator.validate_all is True  # the kit's Validate settings are kept
    readme = (root / "README.md").read_text()
    assert f"of course `{COURSE_ID}`" in readme and f"term `{TERM}`" in readme and f"`{EXCHANGE}`" in readme
    assert f"({flavour})" in readme and "llm-policy-module6" not in readme



def test_the_numbers_cells_draw_with_the_courses_id_and_term(tree):
    """Issue 38's draws (h38-draws): the released numbers cell passes the course and term to ``your_numbers``."""
    from course import variants as student_variants

    if not hasattr(student_variants, "CourseTerm"):
        pytest.skip("course.variants.CourseTerm is not in this branch yet (issue 38's draw context)")
    root, _ = tree
    notebook = nbformat.read(root / "module6" / f"{STEMS['module6']}.ipynb", as_version=4)
    cell = next(c.source for c in notebook.cells if "your_numbers(" in c.source)
    assert re.search(rf"""course=["']{re.escape(COURSE_ID)}["']""", cell), cell
    assert re.search(rf"""term=["']{re.escape(TERM)}["']""", cell), cell

def test_nothing_the_tree_ships_holds_an_answer_a_key_a_source_or_the_courses_files(tree, course):
    root, _ = tree
    texts = _texts(root)
    assert WORKED_EXAMPLE in texts and "course/__init__.py" in texts  # the wheel's members are scanned too
    assert student_side_leaks(texts) == []
    everything = "\n".join(texts.values())
    assert not [marker for marker in MARKERS.values() if marker in everything]
    assert "BEGIN SOLUTION" not in everything and "BEGIN HIDDEN TESTS" not in everything
    sources = {p.read_bytes() for p in (course / "source").rglob("*") if p.is_file()}
    assert not [p for p in root.rglob("*") if p.is_file() and p.read_bytes() in sources]
    # Nothing of the instructor package but its student-side scripts, which import nothing of it.
    package = {p.read_bytes(): p for p in (ROOT / "autograder").rglob("*") if p.is_file() and p.stat().st_size > 200}
    shipped = {p.relative_to(root).as_posix(): package[p.read_bytes()].relative_to(ROOT).as_posix()
               for p in root.rglob("*") if p.is_file() and p.read_bytes() in package}
    assert shipped == {f"tools/{name}": f"autograder/authoring/student_tools/{name}" for name in sd.TOOLS
                       if name != "student_nbgrader_config.py"}  # that one gains the course's lines
    assert not [name for name, text in texts.items() if name.endswith(".py") and
                ("import autograder" in text or "from autograder" in text)]


@pytest.mark.parametrize("tree", ["hub"], indirect=True)  # binder's steps differ in postBuild alone (shared code,
def test_the_image_steps_install_the_trees_wheel_and_the_courses_config(tree, tmp_path):  # run in both flavours
    """pip installs the tree's own wheel file (no name is looked up for the student package), then postBuild
    makes the course's config the environment's: what the Dockerfile's RUN line does."""
    root, flavour = tree
    python = install_as_the_image_does(root, flavour, tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(python.parent.parent / "etc" / "jupyter")).load_config()
    assert config.CourseDirectory.course_id == COURSE_ID and config.Exchange.root == EXCHANGE
    done = subprocess.run([str(python), "-I", "-c", "from importlib import metadata; import course; "
                           "d = metadata.distribution('module6-course'); print(d.version, d.read_text('direct_url.json'))"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("0.2.0 "), done.stderr
    assert "module6_course-0.2.0-py3-none-any.whl" in done.stdout  # installed from the tree's own file


# --- Refusals: each names what is wrong and writes nothing (run in-process: they come before the wheel) ---


def _refused(dest: Path, course_dir: Path, match: str, **kwargs) -> None:
    with pytest.raises(sd.DistributionError, match=match):
        sd.build(dest, course_dir, **kwargs)
    assert not dest.exists()


def test_a_course_that_has_not_generated_the_module_is_refused(tmp_path):
    course = _scratch_course(tmp_path / "course", **{"CourseDirectory.course_id": COURSE_ID})
    _refused(tmp_path / "tree", course, r"module6 has not been generated in .*nbgrader generate_assignment module6")
    _refused(tmp_path / "tree", tmp_path, r"not a course directory")


def test_links_fifos_folders_and_source_notebooks_in_release_are_refused_and_named(course, tmp_path):
    copy = tmp_path / "course"
    subprocess.run(["cp", "-a", str(course), str(copy)], check=True)
    release = copy / "release" / "module6"
    (release / "zz_solution.ipynb").symlink_to(copy / "source" / "module6" / "05_negative_kl.ipynb")
    os.mkfifo(release / "pipe.ipynb")
    (release / ".ipynb_checkpoints").mkdir()
    _refused(tmp_path / "tree", copy, r"\.ipynb_checkpoints \(a folder\), pipe\.ipynb \(a FIFO\), "
                                      r"zz_solution\.ipynb \(a symbolic link\)")
    for odd in ("zz_solution.ipynb", "pipe.ipynb"):
        (release / odd).unlink()
    (release / ".ipynb_checkpoints").rmdir()
    (release / "05_negative_kl.ipynb").write_bytes((copy / "source" / "module6" / "05_negative_kl.ipynb").read_bytes())
    _refused(tmp_path / "tree", copy, r"05_negative_kl.ipynb still holds nbgrader's solution or hidden-test markers")
    (release / "05_negative_kl.ipynb").unlink()
    release.rmdir()
    release.symlink_to(copy / "source" / "module6")
    _refused(tmp_path / "tree", copy, r"release/module6 is a symbolic link")


def test_one_assignment_can_be_published_alone(course, tmp_path):
    copy = tmp_path / "course"
    subprocess.run(["cp", "-a", str(course), str(copy)], check=True)
    subprocess.run(["rm", "-r", str(copy / "release" / "module6_further")], check=True)
    _refused(tmp_path / "tree", copy, r"module6_further has not been generated")
    # With --assignment module6 the release passes; this checkout's editable install is what stops it here.
    _refused(tmp_path / "tree", copy, r"editable mode", assignments=("module6",))
    _refused(tmp_path / "tree", copy, r"--assignment must name Module 6's assignments", assignments=("ps1",))


def test_a_hub_tree_needs_a_course_id_and_an_editable_install_is_sent_to_the_git_build(course, tmp_path):
    copy = tmp_path / "course"
    subprocess.run(["cp", "-a", str(course), str(copy)], check=True)
    with open(copy / "nbgrader_config.py", "a") as config:
        config.write("c.CourseDirectory.course_id = ''\n")
    _refused(tmp_path / "tree", copy, r"sets no c\.CourseDirectory\.course_id")
    # This checkout's environment has module6-course editable: the course's tree is built from wheels only.
    _refused(tmp_path / "tree", course, r"editable mode .*tools/student_distribution\.py")


def test_the_command_reports_a_refusal_in_one_line(tmp_path, capsys):
    from autograder.cli import main

    assert main(["student-distribution", str(tmp_path / "tree"), "--course-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograder: error: ") and "not a course directory" in err and err.count("\n") == 1
    assert not (tmp_path / "tree").exists()


# --- The README's section on Zero to JupyterHub: its YAML parses and names what the tree really writes ---


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n### {title}\n")
    return text[start:text.index("\n## ", start)]


def _yaml_blocks(section: str) -> list:
    import yaml

    blocks = section.split("```yaml\n")[1:]
    assert blocks, "the section has no YAML block"
    return [yaml.safe_load(block[:block.index("```")]) for block in blocks]


def test_the_readmes_z2jh_yaml_parses_and_mounts_the_exchange_where_the_tree_points_nbgrader(tmp_path):
    section = _readme_section("Pointing Zero to JupyterHub at it")
    claim, values = _yaml_blocks(section)
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    single = values["singleuser"]
    assert isinstance(single["image"]["name"], str) and isinstance(single["image"]["tag"], str)
    volumes, mounts = single["storage"]["extraVolumes"], single["storage"]["extraVolumeMounts"]
    assert [v["name"] for v in volumes] == [m["name"] for m in mounts]
    assert volumes[0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # A course that sets no exchange root: the tree's config names nbgrader's default, where the README mounts.
    course = sd.read_course(_scratch_course(tmp_path / "course", **{"CourseDirectory.course_id": COURSE_ID}))
    assert mounts[0]["mountPath"] == course.exchange_root == "/usr/local/share/nbgrader/exchange"
    config = tmp_path / "student_nbgrader_config.py"
    config.write_text(sd.student_config((sd.TOOLS_DIR / "student_nbgrader_config.py").read_text(), course))
    assert PyFileConfigLoader(config.name, path=str(tmp_path)).load_config().Exchange.root == mounts[0]["mountPath"]
    # The files it names are the tree's; the config lands where student_lab_config.py writes it.
    for name in ("tools/student_nbgrader_config.py", "etc/jupyter/nbgrader_config.py", "postBuild", "wheels/"):
        assert name in section, name
    assert 'shutil.copyfile(HERE / "student_nbgrader_config.py", target / "nbgrader_config.py")' in \
        (sd.TOOLS_DIR / "student_lab_config.py").read_text()
    for never in ("module6-instructor", "source/", ".module6_variant_secret", "gradebook"):
        assert never in section.split("Never in a student's pod:")[1], never


def test_the_readme_names_every_part_of_a_courses_tree():
    section = _readme_section("Your own course's tree")
    for name in ("Dockerfile", "README.md", "postBuild", "requirements.txt", f"`{sd.WHEELS}/module6_course-",
                 "`tools/`", *(f"`{a}/`" for a in sd.ASSIGNMENTS)):
        assert name in section, name
    assert "autograder student-distribution DEST --course-dir COURSE_DIR" in section
