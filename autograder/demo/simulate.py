"""A simulated class: ``submitted/<student>/module6/*.ipynb`` built from the release and the source.

Each student follows a *profile*, a ``+``-separated list that starts with an optional base and goes on
with changes to single notebooks or cells:

``solutions``
    every answer cell holds the source solution (the base when none is given);
``untouched``
    every notebook as released (stubs, placeholder text);
``wrong:<stem>:<grade_id>``
    that answer cell does the right work but returns a wrong result of the right form (zeros of the
    right shape, a flipped flag, a changed number or label);
``untouched:<stem>``, ``missing:<stem>``, ``crash:<stem>``
    one notebook left as released, not submitted at all, or killing its kernel in the first answer cell.

Markdown answers get a short text (``solutions``: the source's model answer). Each student also gets
nbgrader's ``timestamp.txt``. The same course and profiles always give byte-identical submissions.

``python -m autograder.demo.simulate COURSE [NAME=PROFILE ...]`` fills ``COURSE/submitted`` (a course
copy in which the release has been generated; default: :func:`default_class`).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import shutil
import sys
from pathlib import Path
from typing import Mapping

import nbformat

from autograder.authoring.scratch_course import ASSIGNMENT, release_dir, source_dir

BEGIN_SOLUTION = "BEGIN SOLUTION"
END_SOLUTION = "END SOLUTION"
#: Submission time of the first student; later students follow a minute apart.
FIRST_TIMESTAMP = datetime.datetime(2025, 3, 1, 12, 0, 0)

#: Appended to an answer cell by ``wrong:``. The student's functions and values stay callable and of
#: the same form, but every result is changed, so the checks see a running answer that is wrong.
MISTAKE_CODE = '''

# --- simulated mistake: the right work, then a wrong result of the same form ---
def _simulated_mistake(value):
    import dataclasses as _dc
    import numpy as _np
    if isinstance(value, (bool, _np.bool_)):
        return not value
    if isinstance(value, _np.ndarray):
        if value.dtype.kind in "fc":
            return _np.ones_like(value) if value.size and not _np.any(value) else _np.zeros_like(value)
        if value.dtype.kind == "b":
            return ~value
        if value.dtype.kind in "iu":
            return value + 1
        return value[::-1].copy() if value.size > 1 else _np.array([str(v) + "?" for v in value.flat])
    if isinstance(value, (int, _np.integer)):
        return value + 1
    if isinstance(value, (float, _np.floating)):
        return 1.0 if value == 0 else 0.0
    if isinstance(value, str):
        return value + "?"
    if value is None:
        return 0
    if _dc.is_dataclass(value) and not isinstance(value, type):
        return _dc.replace(value, **{f.name: _simulated_mistake(getattr(value, f.name))
                                     for f in _dc.fields(value) if f.init})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_simulated_mistake(v) for v in value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_simulated_mistake(v) for v in value)
    if isinstance(value, dict):
        return {k: _simulated_mistake(v) for k, v in value.items()}
    return value


def _simulated_wrong_function(function):
    import functools as _ft

    @_ft.wraps(function)
    def wrong(*args, **kwargs):
        return _simulated_mistake(function(*args, **kwargs))
    return wrong
'''

CRASH_CODE = "import os\nos._exit(1)  # simulated crash: the kernel dies\n"


@dataclasses.dataclass(frozen=True)
class Profile:
    """What one simulated student does; see the module docstring for the text form."""

    base: str = "solutions"
    wrong: tuple = ()  # (stem, grade_id) pairs
    untouched: tuple = ()
    missing: tuple = ()
    crash: tuple = ()

    @classmethod
    def parse(cls, text: str) -> "Profile":
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"profile must be a non-empty string, got {text!r}")
        parts = [part.strip() for part in text.split("+")]
        base = "solutions"
        if parts[0] in ("solutions", "untouched"):
            base = parts.pop(0)
        fields: dict = {"wrong": [], "untouched": [], "missing": [], "crash": []}
        for part in parts:
            kind, _, rest = part.partition(":")
            if kind == "wrong":
                stem, _, grade_id = rest.partition(":")
                if not stem or not grade_id:
                    raise ValueError(f"profile: expected wrong:<stem>:<grade_id>, got {part!r}")
                fields["wrong"].append((stem, grade_id))
            elif kind in ("untouched", "missing", "crash") and rest and ":" not in rest:
                fields[kind].append(rest)
            else:
                raise ValueError(f"profile: unknown part {part!r} (expected solutions, untouched, "
                                 "wrong:<stem>:<grade_id>, untouched:<stem>, missing:<stem> or crash:<stem>)")
        return cls(base, *(tuple(fields[key]) for key in ("wrong", "untouched", "missing", "crash")))

    def stems(self) -> set:
        return {stem for stem, _ in self.wrong} | set(self.untouched) | set(self.missing) | set(self.crash)


def solution_text(source: str) -> str:
    """A source cell's text with the solution markers dropped (what a student who solved it typed)."""
    return "\n".join(line for line in source.split("\n")
                     if BEGIN_SOLUTION not in line and END_SOLUTION not in line)


def defined_names(code: str) -> tuple:
    """Public top-level functions and assigned names of ``code``: ``(functions, values)``."""
    functions, values = [], []
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        values.append(name.id)
    public = lambda names: tuple(dict.fromkeys(n for n in names if not n.startswith("_")))  # noqa: E731
    return public(functions), tuple(n for n in public(values) if n not in functions)


def wrong_version(code: str) -> str:
    """``code`` (a solved answer cell) followed by :data:`MISTAKE_CODE` applied to what it defines."""
    functions, values = defined_names(code)
    if not functions and not values:
        raise ValueError("code: the answer cell defines no public function or value to get wrong")
    lines = [code.rstrip("\n"), MISTAKE_CODE.rstrip("\n")]
    lines += [f"{name} = _simulated_wrong_function({name})" for name in functions]
    lines += [f"{name} = _simulated_mistake({name})" for name in values]
    return "\n".join(lines)


def _is_answer(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def _grade_id(cell) -> str:
    return cell["metadata"]["nbgrader"]["grade_id"]


def answer_cells(stem: str, course: Path, assignment: str = ASSIGNMENT) -> list:
    """``(grade_id, cell_type)`` of the answer cells of a released notebook, in order."""
    nb = nbformat.read(str(release_dir(course, assignment) / f"{stem}.ipynb"), as_version=4)
    return [(_grade_id(cell), cell.cell_type) for cell in nb.cells if _is_answer(cell)]


def exercise_code_answers(stem: str, course: Path, assignment: str = ASSIGNMENT) -> list:
    """Grade ids of the code answer cells of the exercise itself, in order: not the typed-id cell of a
    notebook that varies (an answer cell to nbgrader, but no exercise's answer; a "wrong answer" put
    there is a wrong id, which is graded as a different mistake)."""
    from course.variants import STUDENT_ID_GRADE_ID
    return [grade_id for grade_id, kind in answer_cells(stem, course, assignment)
            if kind == "code" and grade_id != STUDENT_ID_GRADE_ID]


def submission(stem: str, course: Path, profile: Profile, student: str,
               assignment: str = ASSIGNMENT) -> nbformat.NotebookNode | None:
    """The notebook ``student`` hands in for ``stem`` (None: not submitted)."""
    if stem in profile.missing:
        return None
    nb = nbformat.read(str(release_dir(course, assignment) / f"{stem}.ipynb"), as_version=4)
    if profile.base == "untouched" and stem not in profile.stems() or stem in profile.untouched:
        return nb
    source = nbformat.read(str(source_dir(course, assignment) / f"{stem}.ipynb"), as_version=4)
    solutions = {_grade_id(cell): cell for cell in source.cells if _is_answer(cell)}
    wrong = {grade_id for s, grade_id in profile.wrong if s == stem}
    unknown = wrong - set(solutions)
    if unknown:
        raise ValueError(f"profile of {student}: {stem} has no answer cell {sorted(unknown)}")
    crash_pending = stem in profile.crash
    for cell in nb.cells:
        if not _is_answer(cell):
            continue
        grade_id = _grade_id(cell)
        solved = solution_text(solutions[grade_id].source)
        if cell.cell_type == "markdown":
            if grade_id in wrong:
                raise ValueError(f"profile of {student}: {stem}:{grade_id} is a written answer, not code")
            cell.source = solved if profile.base == "solutions" else \
                f"{student} writes a short answer for {grade_id}: the reasoning goes here."
        elif crash_pending:
            cell.source, crash_pending = CRASH_CODE + solved, False
        elif grade_id in wrong:
            cell.source = wrong_version(solved)
        else:
            cell.source = solved
    return nb


def write_class(course: Path, students: Mapping[str, str], assignment: str = ASSIGNMENT) -> dict:
    """Write ``course/submitted/<student>/<assignment>`` for each ``name -> profile text``.

    Returns ``name -> Profile``. Existing submissions of these students (for this assignment) are replaced.
    """
    course = Path(course)
    stems = sorted(path.stem for path in release_dir(course, assignment).glob("*.ipynb"))
    if not stems:
        raise ValueError(f"course: no release notebooks in {release_dir(course, assignment)} "
                         "(generate the release first)")
    profiles = {}
    for index, (student, text) in enumerate(sorted(students.items())):
        if not student.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"students: name must be letters, digits, '-' or '_', got {student!r}")
        profile = Profile.parse(text)
        stray = profile.stems() - set(stems)
        if stray:
            raise ValueError(f"profile of {student}: unknown notebooks {sorted(stray)}")
        folder = course / "submitted" / student / assignment
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for stem in stems:
            nb = submission(stem, course, profile, student, assignment)
            if nb is not None:
                nbformat.write(nb, str(folder / f"{stem}.ipynb"))
        stamp = FIRST_TIMESTAMP + datetime.timedelta(minutes=index)
        (folder / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f UTC") + "\n")
        profiles[student] = profile
    return profiles


def default_class(course: Path, assignment: str = ASSIGNMENT) -> dict:
    """Five students covering the profiles, chosen from the notebooks of ``assignment`` present in ``course``."""
    stems = sorted(path.stem for path in release_dir(course, assignment).glob("*.ipynb"))
    coding = [s for s in stems if s[:2].isdigit() and int(s[:2]) >= 15] or stems
    concept = [s for s in stems if s not in coding] or stems

    def first_code_answer(stem):
        ids = exercise_code_answers(stem, course, assignment)
        return ids[0] if ids else None

    wrong_coding = next(((s, first_code_answer(s)) for s in coding if first_code_answer(s)), None)
    wrong_concept = next(((s, first_code_answer(s)) for s in concept if first_code_answer(s)), None)
    cls = {"ada": "solutions", "ben": "untouched"}
    if wrong_coding:
        cls["cai"] = "wrong:%s:%s" % wrong_coding
    mixed = ["solutions", f"untouched:{concept[-1]}"]
    if wrong_concept and wrong_concept[0] != concept[-1]:
        mixed.append("wrong:%s:%s" % wrong_concept)
    cls["dee"] = "+".join(mixed)
    cls["eli"] = "+".join(["solutions", f"crash:{stems[-1]}"] + ([f"missing:{stems[-2]}"] if len(stems) > 1 else []))
    return cls


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.demo.simulate", description=__doc__.splitlines()[0])
    parser.add_argument("course", type=Path, help="a course copy whose release/module6 has been generated")
    parser.add_argument("students", nargs="*", metavar="NAME=PROFILE")
    args = parser.parse_args(argv)
    students = dict(item.split("=", 1) for item in args.students) if args.students else default_class(args.course)
    for name, profile in write_class(args.course, students).items():
        print(f"{name}: {students[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
