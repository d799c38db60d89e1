"""The README's "Add Module 6 to your course" block, run verbatim, line by line, in someone else's course.

The block (between ``<!-- add-to-course`` and the end of the next ``bash`` fence of README.md) is read
from the README itself and each line runs as written, with ``bash``, where the instructor runs it:

* ``HOME`` is a scratch home holding ``~/module6-wheels/`` (the two wheels built from this checkout) and
  ``~/courses/stat-490``, the course of ``tests/plain_course.py`` as its instructor had it before the
  module: course id ``stat-490``, its own exchange, a SQLite gradebook, and ``ps1`` (``assert`` tests)
  released, submitted by two students (real Unix accounts), collected and graded by nbgrader in a kernel;
* the environment is the instructor's nbgrader environment without the kit (a fresh virtualenv with
  nbgrader and the kit's other dependencies, its ``bin`` first on ``PATH`` as activation puts it, so the
  block's ``pip install`` needs no download), and the working directory carries from line to line as in a
  terminal (the block's ``cd``);
* between the lines the students do what students do: after ``release_assignment`` they fetch, answer
  two notebooks (one student the solutions, one the untouched release) and submit through the exchange.

What is checked after the block: the kit came from the wheels (``site-packages``); the sandbox graded the
module; the feedback went out under the course's own id; ``grades.csv`` (the block's ``nbgrader export``)
holds both assignments for every student, ``ps1``'s grades as they were before the module.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import plain_course
from test_add_to_course import PROFILES, STEMS, Course, _hand_in, _module6_work, ps1_graded_by_nbgrader
from test_term import Users, _need_root, student_python
from tests.dist_support import fresh_venv, shared_wheels

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheels")]

ROOT = Path(__file__).resolve().parents[1]
HOME_COURSE = Path("courses") / "stat-490"


def readme_block() -> list:
    """The lines of the README's add-to-course block, as written there (comments after ``#`` included)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- add-to-course")
    fence = text.index("```bash", start) + len("```bash")
    return [line.strip() for line in text[fence:text.index("```", fence)].splitlines() if line.strip()]


def _without_the_kit(path: Path, wheels) -> Path:
    """The instructor's nbgrader environment before the kit: the wheels' dependencies, not the wheels."""
    python = fresh_venv(path, wheels.student, wheels.instructor)
    proc = subprocess.run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", "module6-instructor",
                           "module6-course"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    gone = subprocess.run([str(python), "-I", "-c", "import autograder"], capture_output=True, cwd=path)
    assert gone.returncode != 0, "the kit is still importable before the README's pip install"
    return python


class Terminal:
    """The instructor's terminal: one line at a time, in the directory the previous line left."""

    def __init__(self, home: Path, python: Path):
        self.home, self.cwd = home, home
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
        env.update(HOME=str(home), PATH=f"{python.parent}:{env.get('PATH', '')}", VIRTUAL_ENV=str(python.parent.parent),
                   MPLBACKEND="Agg", PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.env = env
        self.log: list = []

    def line(self, line: str) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        marker = "\n__module6_cwd__="
        proc = subprocess.run(["/bin/bash", "-c", f'cd "$1" || exit 97\n{line}\nstatus=$?\nprintf "{marker}%s" "$PWD"\n'
                               "exit $status", "bash", str(self.cwd)], env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1200)
        output, _, where = proc.stdout.rpartition(marker)
        self.log.append((line, proc.returncode, round(time.perf_counter() - started, 1)))
        assert proc.returncode == 0, f"README line failed (exit {proc.returncode}): {line}\n{output[-5000:]}"
        self.cwd = Path(where.strip())
        return proc


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    _need_root()
    started = time.perf_counter()
    base = tmp_path_factory.mktemp("readme-course")
    home = base / "home"
    wheels = shared_wheels(tmp_path_factory)
    (home / "module6-wheels").mkdir(parents=True)
    for wheel in (wheels.student, wheels.instructor):
        shutil.copy2(wheel, home / "module6-wheels" / wheel.name)
    python = _without_the_kit(base / "venv", wheels)
    users = Users()
    exchange = Path(tempfile.mkdtemp(prefix="stat490-readme-exchange-"))
    exchange.chmod(0o777)
    try:
        course = Course(plain_course.write_course(home / HOME_COURSE, extra=f"c.Exchange.root = {str(exchange)!r}\n"),
                        python, exchange)
        students = {role: users.add(role) for role in PROFILES}
        student_py = student_python(*students["ann"])
        before = ps1_graded_by_nbgrader(course, students, student_py)

        terminal = Terminal(home, python)
        outputs = {}
        for line in readme_block():
            outputs[line] = terminal.line(line).stdout
            if "nbgrader release_assignment module6" in line:
                _hand_in(course, students, student_py, "module6", _module6_work(course))
        yield {"course": course, "terminal": terminal, "outputs": outputs, "before": before, "exchange": exchange,
               "ids": {role: user for role, (user, _) in students.items()}}
    finally:
        users.remove()
        shutil.rmtree(exchange, ignore_errors=True)
        print(f"\ntest_readme_course: {time.perf_counter() - started:.0f} s")


def test_the_block_installs_the_kit_from_the_wheels_and_adds_it_to_the_course(term):
    course = term["course"]
    assert term["terminal"].cwd == course.root  # the block's `cd` is where every later line ran
    where = course.run("-I", "-c", "import autograder; print(autograder.__file__)").stdout
    assert "site-packages" in where and str(ROOT) not in where
    config = (course.root / "nbgrader_config.py").read_text()
    assert config.startswith(plain_course.config(extra=f"c.Exchange.root = {str(term['exchange'])!r}\n"))
    assert config.count("# >>> Module 6 kit") == 1 and 'c.Module6.term = "2026-fall"' in config


def test_the_first_submissions_are_graded_in_the_sandbox_and_fed_back(term):
    (autograde,) = [text for line, text in term["outputs"].items() if line.startswith("nbgrader autograde module6")]
    for user in term["ids"].values():
        for stem in STEMS:
            assert f"{user}/{stem} graded in the sandbox" in autograde
    released = list((term["exchange"] / plain_course.COURSE_ID / "feedback").rglob("*.html"))
    assert len(released) == len(term["ids"]) * len(STEMS), released


def test_the_export_holds_both_assignments_and_ps1_as_it_was(term):
    with (term["course"].root / "grades.csv").open() as handle:
        after = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}
    before, ids = term["before"], term["ids"]
    assert {k for k in after if k[0] == "module6"} == {("module6", user) for user in ids.values()}
    for user in ids.values():
        for field in ("raw_score", "score", "max_score"):
            assert after[("ps1", user)][field] == before[("ps1", user)][field], (user, field)
    assert float(after[("module6", ids["ann"])]["raw_score"]) > 0
    assert float(after[("module6", ids["ben"])]["raw_score"]) == 0
