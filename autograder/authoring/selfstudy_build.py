"""Build the self-study flavour of the notebooks: ``python -m autograder.authoring.selfstudy_build [OUT]``.

Every assignment's release ``release/<assignment>`` becomes ``OUT/<assignment>`` (default OUT: ``selfstudy/``).

It starts from the committed student release (solutions already replaced by stubs, hidden tests
already removed), so the self-study notebooks can never contain more than a student gets, and:

* drops nbgrader's cell metadata (these notebooks are not submitted; ids and tags stay);
* turns every hidden test cell into a local check of the same group (public and hidden cases,
  misconception feedback, points);
* appends a hints and worked-solution panel whose reveal is gated on a first try;
* in a notebook whose numbers vary, drops the ``student-id`` cell (nothing here is submitted, so no
  id is asked for) and turns the ``your-numbers`` cell into the practice numbers
  (:func:`autograder.selfstudy.practice_numbers`: the example numbers, until the learner draws new
  ones after a first try), with a note on drawing them just above it; and where the task says of the
  example numbers that "yours differ" (true of a student's numbers, not of self-study's first view,
  which shows the example's), it says that yours are these until you draw new ones.

The output folder (default ``build/lab/selfstudy/<assignment>``, the one ``make lab`` serves and the README names)
is generated, ignored by git, and never part of ``release/``. Building again never loses work: a
notebook already there that differs from the fresh build (a learner edited or ran it) is kept as it
is and named in the report; to get a fresh copy, move or delete that notebook and build again.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import re
import sys
from pathlib import Path

import nbformat

from autograder.exercises import solution_path
from autograder.assignment import ASSIGNMENT, ASSIGNMENTS, REPO_ROOT, release_dir
from autograder.course_settings import METADATA_KEY as COURSE_TERM_KEY
from autograder.course_settings import NUMBERS_CELL as _NUMBERS_CELL

ROOT = REPO_ROOT
RELEASE = release_dir()
DEFAULT_ROOT = ROOT / "build" / "lab" / "selfstudy"
DEFAULT_OUT = DEFAULT_ROOT / ASSIGNMENT

BANNER = """\
> **Self-study flavour.** The check cells below run *every* case of the grader locally, hidden ones
> included, and explain what a failure suggests. When you have tried, the panel at the end offers
> hints and the worked solution. A try is one run through this notebook: checking its parts one after
> the other counts once, and checking a part again with changed answers starts the next try (checks on
> the template's answers, or on the same answers again, add none). Your tries and the best score of each part are
> kept in `selfstudy-progress.json` in this folder (run
> `from autograder.selfstudy import progress; progress()` to see them). Validate says "Success" only
> when every check here passes, hidden cases included."""


#: The open checks' first call (``course.grading_environment``), and its self-study form.
_DESK_CALL = "check_imports(globals())"
_SELFSTUDY_DESK_CALL = 'check_imports(globals(), provided=("autograder",))'


def _docstring(source: str) -> str:
    first = source.strip().splitlines()[0] if source.strip() else ""
    return first if first.startswith('"""') else '"""Check this part."""'


def _without_validate(markdown: str) -> str:
    """The release's "How this notebook works" note without its paragraph on nbgrader's Validate."""
    paragraphs = markdown.split("\n\n")
    return "\n\n".join(p for p in paragraphs if not p.lstrip().startswith("**Validate**"))


#: The release's identity cells (``tools/nbbuild.identity_cells``), by cell id.
_STUDENT_ID_CELL = "student-id"

NUMBERS_NOTE = """\
**Your numbers in self-study.** This notebook starts on the example numbers (variant 0), the ones the
task quotes, so no student id is needed. After your first try you can practise on fresh numbers: click
**New numbers** in the panel at the end, or run `new_numbers()` in a cell of your own. The notebook
keeps them (in `selfstudy-progress.json`), also when you reopen it. Then run the notebook again from
the numbers cell below (click it, then *Run > Run Selected Cell and All Below*): answers that compute
from `numbers[...]` follow the new numbers, the checks grade them, and the worked solution shows them
once you have tried them."""


def _numbers_source(stem: str) -> str:
    return ("from autograder.selfstudy import new_numbers, practice_numbers\n"
            "# The numbers this notebook shows: the example numbers until you draw new ones (new_numbers()).\n"
            f'numbers = practice_numbers("{stem}")\n'
            "numbers")


#: The release's word that a student's numbers are not the example's, and what self-study says instead.
_YOURS_DIFFER = re.compile(r"\b([Yy])ours differ\b")
_YOURS_IN_SELFSTUDY = r"\1ours are these until you draw new numbers (which differ)"


def convert(notebook: nbformat.NotebookNode, stem: str) -> nbformat.NotebookNode:
    """The self-study version of one release notebook."""
    nb = copy.deepcopy(notebook)
    # Self-study draws practice numbers in no course or term: the release's record of its own is not this notebook's.
    nb.metadata.pop(COURSE_TERM_KEY, None)
    varies = any(cell.get("id") == _NUMBERS_CELL for cell in nb.cells)
    cells = []
    for cell in nb.cells:
        if varies and cell.cell_type == "markdown":
            cell.source = _YOURS_DIFFER.sub(_YOURS_IN_SELFSTUDY, cell.source)
        if cell.get("id") == _STUDENT_ID_CELL:
            continue  # self-study is never submitted: its numbers need nobody's id
        if cell.get("id") == _NUMBERS_CELL:
            cells.append(nbformat.v4.new_markdown_cell(NUMBERS_NOTE, id="selfstudy-numbers-note"))
            cell.source = _numbers_source(stem)
        meta = cell.metadata.pop("nbgrader", None)
        if cell.get("id") == "how-this-works":
            cell.source = _without_validate(cell.source)
        if cell.cell_type == "code" and _DESK_CALL in cell.source:
            # The check cells of this flavour import autograder for the learner: not the learner's import.
            cell.source = cell.source.replace(_DESK_CALL, _SELFSTUDY_DESK_CALL)
        if meta and meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            group = meta["grade_id"].removeprefix("test_")
            cell.source = (f"{_docstring(cell.source)}\n"
                           "from autograder.selfstudy import check\n"
                           f'check("{stem}", "{group}", globals())')
        cells.append(cell)
    cells.insert(1, nbformat.v4.new_markdown_cell(BANNER, id="selfstudy-banner"))
    cells.append(nbformat.v4.new_markdown_cell(
        "## Hints and worked solution\n\nRun the checks above first: the solution opens with one click "
        "after your first try (before that it asks you to confirm).", id="selfstudy-reveal-intro"))
    cells.append(nbformat.v4.new_code_cell(
        f'from autograder.selfstudy import reveal\nreveal("{stem}")', id="selfstudy-reveal"))
    nb.cells = cells
    nbformat.validate(nb)
    return nb


@dataclasses.dataclass(frozen=True)
class BuildReport:
    """What a build did: notebooks written (new or unchanged), and notebooks kept because they hold work."""

    out: Path
    written: tuple
    kept: tuple

    def summary(self) -> str:
        lines = [f"self-study notebooks in {self.out}: {len(self.written)} written"]
        if self.kept:
            lines.append(f"kept {len(self.kept)} notebook(s) that differ from a fresh build (your work is safe): "
                         + ", ".join(path.name for path in self.kept))
            lines.append("to get a fresh copy of one, move or delete it and build again")
        return "\n".join(lines)


def build(out: Path = DEFAULT_OUT, release: Path = RELEASE) -> BuildReport:
    """Write one self-study notebook per release notebook into ``out``.

    A notebook already in ``out`` is replaced only when it is byte for byte what this build writes;
    one that differs (a learner's edits or outputs) is kept and listed in the report.
    """
    sources = sorted(Path(release).glob("[0-9][0-9]_*.ipynb"))
    if not sources:
        raise SystemExit(f"no release notebooks in {release}: run `make release` first")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for path in sources:
        if not solution_path(path.stem).is_file():
            raise SystemExit(f"missing worked solution {solution_path(path.stem)}")
        target = out / path.name
        fresh = nbformat.writes(convert(nbformat.read(path, as_version=4), path.stem))
        fresh += "" if fresh.endswith("\n") else "\n"  # as nbformat.write and JupyterLab store it
        if target.exists() and target.read_text(encoding="utf-8") != fresh:
            kept.append(target)
            continue
        target.write_text(fresh, encoding="utf-8")
        written.append(target)
    return BuildReport(out, tuple(written), tuple(kept))


def build_all(root: Path = DEFAULT_ROOT) -> dict:
    """``assignment -> BuildReport``: every assignment's release built into ``root/<assignment>``."""
    return {assignment: build(Path(root) / assignment, release_dir(REPO_ROOT, assignment))
            for assignment in ASSIGNMENTS}


def main(argv: list | None = None, prog: str = "python -m autograder.authoring.selfstudy_build") -> int:
    # ``autograder selfstudy`` passes its own name, so --help shows the command that was typed.
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_ROOT,
                        help="output folder (one subfolder per assignment)")
    args = parser.parse_args(argv)
    for report in build_all(args.out).values():
        print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
