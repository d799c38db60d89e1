"""Build the self-study flavour of the notebooks: ``python -m autograder.authoring.selfstudy_build [OUT]``.

Every assignment's release ``release/<assignment>`` becomes ``OUT/<assignment>`` (default OUT: ``selfstudy/``).

It starts from the committed student release (solutions already replaced by stubs, hidden tests
already removed), so the self-study notebooks can never contain more than a student gets, and:

* drops nbgrader's cell metadata (these notebooks are not submitted; ids and tags stay);
* turns every hidden test cell into a local check of the same group (public and hidden cases,
  misconception feedback, points);
* appends a hints and worked-solution panel whose reveal is gated on a first attempt.

The output folders are generated, ignored by git, and never part of ``release/``.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

from autograder.exercises import solution_path
from autograder.assignment import ASSIGNMENT, ASSIGNMENTS, REPO_ROOT, release_dir

ROOT = REPO_ROOT
RELEASE = release_dir()
DEFAULT_ROOT = ROOT / "selfstudy"
DEFAULT_OUT = DEFAULT_ROOT / ASSIGNMENT

BANNER = """\
> **Self-study flavour.** The check cells below run *every* case of the grader locally, hidden ones
> included, and explain what a failure suggests. When you have tried, the panel at the end offers
> hints and the worked solution. Your progress is kept in `.selfstudy-progress.json` next to this notebook."""


def _docstring(source: str) -> str:
    first = source.strip().splitlines()[0] if source.strip() else ""
    return first if first.startswith('"""') else '"""Check this part."""'


def convert(notebook: nbformat.NotebookNode, stem: str) -> nbformat.NotebookNode:
    """The self-study version of one release notebook."""
    nb = copy.deepcopy(notebook)
    cells = []
    for cell in nb.cells:
        meta = cell.metadata.pop("nbgrader", None)
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


def build(out: Path = DEFAULT_OUT, release: Path = RELEASE, *, keep_existing: bool = False) -> list:
    """Write one self-study notebook per release notebook; return the written paths.

    With ``keep_existing`` a notebook already in ``out`` is left alone (it may hold a learner's work).
    """
    sources = sorted(release.glob("[0-9][0-9]_*.ipynb"))
    if not sources:
        raise SystemExit(f"no release notebooks in {release}: run `make release` first")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sources:
        if not solution_path(path.stem).is_file():
            raise SystemExit(f"missing worked solution {solution_path(path.stem)}")
        target = out / path.name
        if keep_existing and target.exists():
            continue
        nb = convert(nbformat.read(path, as_version=4), path.stem)
        nbformat.write(nb, str(target))
        written.append(target)
    return written


def build_all(root: Path = DEFAULT_ROOT, *, keep_existing: bool = False) -> dict:
    """``assignment -> written paths``: every assignment's release built into ``root/<assignment>``."""
    return {assignment: build(Path(root) / assignment, release_dir(REPO_ROOT, assignment), keep_existing=keep_existing)
            for assignment in ASSIGNMENTS}


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_ROOT,
                        help="output folder (one subfolder per assignment)")
    parser.add_argument("--keep-existing", action="store_true",
                        help="leave notebooks that already exist in OUT untouched (a learner's work)")
    args = parser.parse_args(argv)
    for assignment, written in build_all(args.out, keep_existing=args.keep_existing).items():
        print(f"wrote {len(written)} self-study notebooks to {args.out / assignment}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
