"""Build step of the instructor wheel that pyproject.toml cannot say: the source notebooks go in, from ``source/``.

``autograder add-to-course`` (autograder/authoring/add_to_course.py) installs ``module6`` and
``module6_further`` into another instructor's course from the installed wheel, with no checkout. The
notebooks' one home stays ``source/<assignment>/`` in this repository: no second copy is committed; at
build time every ``source/<assignment>/*.ipynb`` of the kit's assignments is copied into the wheel as
``autograder/kit_source/<assignment>/`` (read with :func:`autograder.kit_files.kit_source`). An editable
install reads ``source/`` itself. ``MANIFEST.in`` puts the notebooks into an sdist, for a wheel built from it.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: autograder.assignment.ASSIGNMENTS (not imported here: the build runs before the package is installed).
ASSIGNMENTS = ("module6", "module6_further")
PACKAGED = Path("autograder") / "kit_source"


class BuildWithSourceNotebooks(build_py):
    """``build_py``, then the kit's source notebooks into ``<build_lib>/autograder/kit_source/<assignment>/``."""

    def run(self):
        super().run()
        for assignment in ASSIGNMENTS:
            folder = ROOT / "source" / assignment
            notebooks = sorted(folder.glob("*.ipynb"))
            if not notebooks:
                raise SystemExit(f"setup.py: no source notebooks in {folder}: the instructor wheel needs them")
            target = Path(self.build_lib) / PACKAGED / assignment
            self.mkpath(str(target))
            for notebook in notebooks:
                self.copy_file(str(notebook), str(target / notebook.name), preserve_mode=False)


setup(cmdclass={"build_py": BuildWithSourceNotebooks})
