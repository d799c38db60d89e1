"""The one place that names the assignments, the course and the folders they live in.

Everything that needs an assignment name (``module6``, ``module6_further``), the nbgrader course id or
the course directory's layout imports it from here: ``nbgrader_config.py``, the grader, the authoring
tools, the demo and the tests. Functions default to :data:`ASSIGNMENT`, the module's main assignment.
"""

from __future__ import annotations

from pathlib import Path

#: nbgrader's assignment name: ``source/module6``, ``release/module6``, ``submitted/<student>/module6``.
ASSIGNMENT = "module6"
#: Every assignment of the course, in term order: the twenty exercises, then the "going further" ones
#: (exercises 21 on). Notebook stems are unique across assignments (their numbers never repeat).
ASSIGNMENTS = ("module6", "module6_further")
#: Total points of each assignment (autograded and manually graded together).
TOTAL_POINTS = {"module6": 100, "module6_further": 100}
#: nbgrader's course id (``CourseDirectory.course_id``), also the exchange's folder name.
COURSE_ID = "llm-policy-module6"
#: The repository root in a source checkout (the default course directory of the authoring tools).
REPO_ROOT = Path(__file__).resolve().parents[1]


def source_dir(root: Path = REPO_ROOT, assignment: str = ASSIGNMENT) -> Path:
    """``<root>/source/<assignment>``: the nbgrader source notebooks (solutions and hidden tests)."""
    return Path(root) / "source" / assignment


def release_dir(root: Path = REPO_ROOT, assignment: str = ASSIGNMENT) -> Path:
    """``<root>/release/<assignment>``: the generated student notebooks."""
    return Path(root) / "release" / assignment


def notebook_stems(root: Path = REPO_ROOT, assignment: str = ASSIGNMENT) -> list:
    """Stems of the source notebooks (``01_stop_reasons``, ...), in exercise order."""
    return sorted(path.stem for path in source_dir(root, assignment).glob("[0-9][0-9]_*.ipynb"))


def assignment_of(stem: str, root: Path = REPO_ROOT) -> str:
    """The assignment whose source folder holds notebook ``stem``; ``KeyError`` naming them when none does."""
    for assignment in ASSIGNMENTS:
        if (source_dir(root, assignment) / f"{stem}.ipynb").is_file():
            return assignment
    raise KeyError(f"no source notebook {stem!r} in any assignment {ASSIGNMENTS}")
