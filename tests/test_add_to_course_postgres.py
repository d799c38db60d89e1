"""tests/test_add_to_course.py with the course's gradebook on PostgreSQL (``MODULE6_PG_URL``; skipped without
it locally, failing under ``CI=true``): the same term, the same checks, a module of its own so that the two
terms run on two workers at once."""

from __future__ import annotations

import pytest

from test_add_to_course import (  # noqa: F401 - the tests and the fixture they share, collected here too
    term_of, test_add_to_course_from_the_wheel_installs_the_module_and_one_block,
    test_ps1_keeps_nbgrader_s_grades_and_export_holds_both_assignments, test_the_kit_s_commands_work_in_the_course,
    test_the_module_is_graded_in_the_sandbox_through_nbgrader, venv,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.xdist_group("wheels")]


@pytest.fixture(scope="module")
def term(venv, tmp_path_factory):  # noqa: F811
    yield from term_of("postgres", venv, tmp_path_factory)
