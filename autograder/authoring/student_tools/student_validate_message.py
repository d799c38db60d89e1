"""Make nbgrader's Validate button say what it checked, in a student environment: ``python tools/student_validate_message.py PREFIX``.

nbgrader 0.9.6's Validate dialog says "Success! Your notebook passes all the tests." whenever no cell
failed. The text is fixed in its JupyterLab bundle (no setting changes it), and in a released notebook
the hidden tests are absent, so the sentence claims more than was checked: only that the notebook runs
and its open checks pass. This script replaces that sentence in the nbgrader labextension installed
under PREFIX (a virtualenv, a hub image's sys.prefix) with one that says exactly that. It fails loudly
when the sentence is not found exactly once (another nbgrader version), rather than doing nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

NBGRADER_SUCCESS = "Success! Your notebook passes all the tests."
TRUTHFUL_SUCCESS = ("Your notebook runs and its open checks pass. The hidden tests are not in the notebook: "
                    "they run when your work is graded.")


def static_dir(prefix: Path) -> Path:
    return Path(prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"


def patch(prefix: Path) -> Path:
    """Replace the success sentence in the bundle under ``prefix``; return the patched file."""
    files = sorted(static_dir(prefix).glob("*.js"))
    if not files:
        raise SystemExit(f"no nbgrader labextension under {prefix}: is nbgrader installed there?")
    hits = [(path, path.read_text(encoding="utf-8").count(NBGRADER_SUCCESS)) for path in files]
    done = [path for path in files if TRUTHFUL_SUCCESS in path.read_text(encoding="utf-8")]
    found = [(path, count) for path, count in hits if count]
    if not found and len(done) == 1:
        return done[0]  # patched already
    if len(found) != 1 or found[0][1] != 1:
        raise SystemExit(f"expected nbgrader's Validate success sentence exactly once under {static_dir(prefix)}, "
                         f"found {[(p.name, n) for p, n in found]}: this nbgrader version needs a new look")
    path = found[0][0]
    # A new file put in place, never an edit in place: installers such as uv hard-link package files
    # to their cache, and an in-place write would change every environment sharing that file.
    text = path.read_text(encoding="utf-8").replace(NBGRADER_SUCCESS, TRUTHFUL_SUCCESS)
    fresh = path.with_name(path.name + ".module6-tmp")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.splitlines()[0])
    print(f"Validate's success message reworded in {patch(Path(sys.argv[1]))}")
