"""Suite-wide settings: which tests must share one xdist worker.

`make test` runs pytest with ``-n auto --dist loadgroup``. Tests that start heavy machinery of their
own (a JupyterLab server and chromium; nbgrader with its own kernels) are pinned to one worker per
kind, so two copies never compete for the machine's two cores at once.
"""

from __future__ import annotations

import pytest

_GROUPS = {
    "browser": "browser",
    "test_pipeline.py": "nbgrader",
    "test_release.py": "nbgrader",
    "test_notebooks_source.py": "nbgrader",
    "test_grader_equivalence.py": "nbgrader",
    "test_distributions.py": "wheels",
    "test_term.py": "nbgrader",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = item.path.parts
        for key, group in _GROUPS.items():
            if key in parts or item.path.name == key:
                item.add_marker(pytest.mark.xdist_group(group))
                break
