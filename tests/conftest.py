"""Suite-wide settings: how ``make test`` shares the tests between xdist workers.

`make test` runs pytest with ``-n auto --dist loadgroup``. Under ``loadgroup`` the scheduler of
:mod:`tests.xdist_schedule` replaces pytest-xdist's: each test module is one work unit (its
module-scoped fixtures, such as a course graded with nbgrader or a JupyterLab server, are built once,
on one worker) and the longest modules are handed out first, so the two longest chains run side by
side from the start. pytest-xdist's own ``xdist_group`` marks have no effect under pytest 9 (see
that module); the module is the unit whatever they say.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# No test sees an id remembered on this machine (course.variants.remember_id, in the user's
# configuration folder): a notebook with no id must stop, whoever runs the suite. Kernels and
# subprocesses inherit it; the tests of remember_id point it at a file of their own.
os.environ["MODULE6_STUDENT_ID_FILE"] = "/nonexistent/module6-tests/student_id"

#: Stand-ins that only defer work, first on the path of this process and of every process it starts
#: (tests/lazy_imports/rfc3987_syntax.py: the 1.6 s parser build that every nbgrader, autograder and
#: Jupyter process paid at start is done on first use, which none of them makes). A test that gives a
#: subprocess an environment of its own can add it with :func:`with_lazy_imports`.
LAZY_IMPORTS = str(Path(__file__).resolve().parent / "lazy_imports")
collect_ignore = ["lazy_imports"]


def with_lazy_imports(pythonpath: str = "") -> str:
    """``pythonpath`` (a PYTHONPATH value) with :data:`LAZY_IMPORTS` first."""
    return os.pathsep.join([LAZY_IMPORTS, *(p for p in pythonpath.split(os.pathsep) if p and p != LAZY_IMPORTS)])


def as_users_run_it() -> dict:
    """This process's environment without :data:`LAZY_IMPORTS`: for a test that measures a command's cost
    as a ratio, where the stand-in would take a cost every user pays out of the baseline."""
    env = dict(os.environ)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != LAZY_IMPORTS]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


os.environ["PYTHONPATH"] = with_lazy_imports(os.environ.get("PYTHONPATH", ""))
if LAZY_IMPORTS not in sys.path:
    sys.path.insert(0, LAZY_IMPORTS)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist asked for explicitly: pytest-xdist's own scheduler
    from tests.xdist_schedule import scheduler_class

    return scheduler_class()(config, log)


@pytest.fixture(autouse=True, scope="module")
def _checks_registered_in_a_module_stay_in_it():
    """Forget, when a module ends, the checks its tests registered (the toy course's, tests/hostile/toy.py).

    ``CHECKS`` lives as long as the worker process, which runs many modules: a toy check left behind
    made a later module that lists every exercise (``for stem in CHECKS``) see one more, which
    happened or not depending on which worker ran which module first. Each module now starts from
    the course's own exercises, as it does when run alone.
    """
    from autograder import exercises
    from autograder.checks import CHECKS

    def forget_all_but_the_course_s_own() -> None:
        # The registry has no unregister: undo what _Registry.register did (name and check). The course's
        # own exercises are its folders, read afresh: a check registered before this module began (by a
        # session-wide fixture, say, which pytest sets up before any module's) goes too.
        for stem in set(CHECKS) - set(exercises.stems()):
            CHECKS._names().pop(stem, None)
            dict.pop(CHECKS, stem, None)

    forget_all_but_the_course_s_own()
    yield
    forget_all_but_the_course_s_own()
