"""Suite-wide settings: how ``make test`` shares the tests between xdist workers.

`make test` runs pytest with ``-n auto --dist loadgroup``. Under ``loadgroup`` the scheduler of
:mod:`tests.xdist_schedule` replaces pytest-xdist's: each test module is one work unit (its
module-scoped fixtures, such as a course graded with nbgrader or a JupyterLab server, are built once,
on one worker) and the longest modules are handed out first, so the two longest chains run side by
side from the start. pytest-xdist's own ``xdist_group`` marks have no effect under pytest 9 (see
that module); the module is the unit whatever they say.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist asked for explicitly: pytest-xdist's own scheduler
    from tests.xdist_schedule import scheduler_class

    return scheduler_class()(config, log)
