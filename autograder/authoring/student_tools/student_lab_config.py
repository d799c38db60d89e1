"""Switch off nbgrader's instructor tools for a student's JupyterLab: ``python tools/student_lab_config.py LEVEL``.

Both flavours of ``make lab`` are for learners: the graded one (``.venv-student``, nbgrader's Validate
as its one nbgrader tool) and the self-study one (the full environment, whose nbgrader would otherwise
show the instructor's "Nbgrader" menu, the Create Assignment sidebar and formgrader). This script is the
one list of what a learner does not get, written where the jupyter commands would write it:

* ``LEVEL`` is ``sys_prefix`` (the environment of the running Python: ``.venv-student``, a hub image)
  or ``user`` (``$JUPYTER_CONFIG_DIR``: the self-study server and the browser tests give each server a
  config folder of its own, so the instructor's environment keeps its tools);
* the lab plugins in :data:`LAB_OFF` are disabled and locked, the server extensions in
  :data:`SERVER_OFF` disabled (the exchange-based Assignment/Course lists only show errors here: there
  is no exchange), and ``tools/student_nbgrader_config.py`` becomes that level's ``nbgrader_config.py``
  (Validate then fails on a failing open check or an answer cell that raises).

``jupyter labextension disable`` accepts any name, so ``tests/test_student_env.py`` checks these
lists against the installed nbgrader.

It also gives the lab a stylesheet of its own (:data:`LEARNER_CSS`, JupyterLab's custom CSS, served from
that level's ``custom/custom.css``): nbgrader's Validate dialog shows the failing cell and its output in
``<pre>`` blocks that cut long lines at the dialog's right edge (nbgrader==0.9.6, its lab extension's
validate dialog), and there they wrap.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

#: nbgrader's lab plugins a learner does not get (only ``validate-assignment`` stays).
LAB_OFF = ("menu", "create-assignment", "assignment-list", "course-list", "formgrader")
#: nbgrader's server extensions a learner does not get (only ``validate_assignment`` stays).
SERVER_OFF = ("formgrader", "assignment_list", "course_list")

HERE = Path(__file__).resolve().parent

#: The learner's lab stylesheet: the Validate dialog's blocks (``.validation-*``, nbgrader's classes for
#: the dialog's body) wrap long lines instead of cutting them, keeping them as they are.
LEARNER_CSS = """/* Written by tools/student_lab_config.py: the learner's lab. */
.validation-failed pre, .validation-passed pre, .validation-changed pre, .validation-success pre,
.validation-type-changed pre {
  white-space: pre-wrap !important;
  overflow-wrap: anywhere;
}
"""


def config_dir(level: str) -> Path:
    """The folder that ``level``'s configuration lives in, for the running Python."""
    if level == "sys_prefix":
        return Path(sys.prefix) / "etc" / "jupyter"
    if level == "user":
        from jupyter_core.paths import jupyter_config_dir
        return Path(jupyter_config_dir())
    raise SystemExit(f"level must be sys_prefix or user, got {level!r}")


def _merge_json(path: Path, update: dict) -> None:
    """Merge ``update`` (two levels deep) into the JSON object at ``path``, as the jupyter commands do."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    for key, value in update.items():
        section = data.get(key) if isinstance(data.get(key), dict) else {}
        for inner, inner_value in value.items():
            if isinstance(inner_value, dict) and isinstance(section.get(inner), dict):
                section[inner] = {**section[inner], **inner_value}
            else:
                section[inner] = inner_value
        data[key] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


#: What a student on a hub keeps besides Validate: the Assignment List fetches and submits through
#: nbgrader's exchange (the menu opens it), so ``--keep-assignment-list`` leaves these on.
HUB_KEEPS_LAB = ("menu", "assignment-list")
HUB_KEEPS_SERVER = ("assignment_list",)


def apply(level: str, target: Path | None = None, keep_assignment_list: bool = False) -> Path:
    """Switch the tools off at ``level`` (or in the config folder ``target``); return the folder written to.

    ``keep_assignment_list`` is for a hub with an exchange (the student image): the Assignment List and
    the menu that opens it stay.

    Writes the files ``jupyter labextension disable/lock --level=LEVEL`` and ``jupyter server extension
    disable`` write (``labconfig/page_config.json``, ``jupyter_server_config.json``), directly: those
    commands import every extension to validate it, which took over a minute on a busy machine.
    """
    target = config_dir(level) if target is None else Path(target)
    lab_off = [name for name in LAB_OFF if not (keep_assignment_list and name in HUB_KEEPS_LAB)]
    server_off = [name for name in SERVER_OFF if not (keep_assignment_list and name in HUB_KEEPS_SERVER)]
    plugins = {f"@jupyter/nbgrader:{name}": True for name in lab_off}
    _merge_json(target / "labconfig" / "page_config.json",
                {"disabledExtensions": plugins, "lockedExtensions": plugins})
    custom = target / "custom"
    custom.mkdir(parents=True, exist_ok=True)
    (custom / "custom.css").write_text(LEARNER_CSS, encoding="utf-8")
    _merge_json(target / "jupyter_server_config.json",
                {"ServerApp": {"jpserver_extensions": {f"nbgrader.server_extensions.{name}": False
                                                        for name in server_off},
                               # JupyterLab serves custom.css from here (by default: the user's config
                               # folder, which is not this level's at sys_prefix)
                               "static_custom_path": [str(custom)]},
                 "LabApp": {"custom_css": True}})
    shutil.copyfile(HERE / "student_nbgrader_config.py", target / "nbgrader_config.py")
    return target


if __name__ == "__main__":
    args = sys.argv[1:]
    keep = "--keep-assignment-list" in args
    args = [arg for arg in args if arg != "--keep-assignment-list"]
    if len(args) != 1:
        raise SystemExit(__doc__.splitlines()[0] + " [--keep-assignment-list]")
    print(f"nbgrader's instructor tools switched off in {apply(args[0], keep_assignment_list=keep)}")
