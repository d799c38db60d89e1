"""How ``make test`` (``pytest -n auto --dist loadgroup``) shares the suite between xdist workers.

Why a scheduler of our own: pytest-xdist 3.8's ``loadgroup`` marks a test's group by rewriting
``item._nodeid``, an attribute pytest 9 no longer reads (its node ids live in ``Node._id``). Under
pytest 9 every ``xdist_group`` mark is silently ignored and every test is its own work unit, so a
module-scoped fixture (a course built and graded with nbgrader, a JupyterLab server) is built again
on each worker that runs one of the module's tests: the nbgrader pipeline, the release runs, the
source validations and the intake corpus were all built twice.

:class:`CostOrderedModules` fixes both halves:

* the work unit is the test module (the file part of the node id), so a module's fixtures are
  built once, on one worker, whatever pytest-xdist does with marks;
* units are handed out longest first (:data:`COST`: only the order of its numbers matters),
  then the rest in collection order, so the longest chains start at once on different workers and
  the many short modules fill in at the end (longest-processing-time-first scheduling).

Tests inside a module still run in their collection order. A module missing from :data:`COST` is
scheduled after the measured ones; only modules above a few seconds need an entry. Refresh the
table from a run's JUnit file: ``python -m tests.xdist_schedule run.xml``.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Test module -> seconds it takes on one worker (setup, calls and teardown); only their order matters.
#: Measured by the whole suite on 2 cores (2026-12-06, `-n 2`, with a hub being tried on the same machine);
#: the four marked "scaled" were measured again alone before and after the lazy rfc3987_syntax stand-in
#: and the run-wide builds (tests/conftest.py, tests/run_cache.py) and are that number times after/before.
COST = {
    # Skipped in that run (its environments were stale): 423 s in a 4-worker run on the same machine,
    # where every module took 1.8x its 2-worker time.
    'tests/browser/test_hub_browser.py': 230,
    # Measured alone (2026-12-06, an idle worker; wheels built by the module that needs them first).
    'tests/test_add_to_course.py': 185,
    'tests/test_add_to_course_postgres.py': 185,
    'tests/test_readme_course.py': 185,
    'tests/test_course_setup.py': 65,
    'tests/test_add_to_course_units.py': 35,
    'tests/browser/test_widgets_browser.py': 203,
    'tests/test_readme_term.py': 152,  # scaled: 219 -> 105 s alone
    'tests/test_sandbox_wheel_install.py': 152,
    # Issue 39, measured alone (2026-12-06, load ~8): a TLS grading host, four nbgrader runs, two killed hosts.
    'tests/test_grader_remote.py': 150,
    'tests/browser/test_formgrader_guard_browser.py': 89,  # scaled: 131 -> 118 s alone
    'tests/test_variants_pipeline.py': 82,
    'tests/test_variants_hidden_inputs.py': 80,
    'tests/test_pipeline.py': 77,
    'tests/test_term.py': 71,  # scaled: 214 -> 119 s alone
    'tests/test_release.py': 67,
    'tests/test_grader_doors_state.py': 66,  # scaled: 90 -> 60 s alone
    'tests/test_student_distribution_course.py': 62,  # alone, with the run's wheels built in it
    'tests/browser/test_inert_browser.py': 58,
    'tests/test_notebooks_source.py': 58,
    'tests/test_grader_doors_refusals.py': 54,
    'tests/test_demo_without_bubblewrap.py': 53,
    'tests/test_grader_term_rules.py': 52,
    'tests/browser/test_lab_flavours_browser.py': 51,
    'tests/browser/test_feedback_browser.py': 50,
    'tests/test_grader_dask.py': 48,
    'tests/test_widgets_views.py': 46,
    'tests/test_grader_trusted_bounds.py': 44,
    'tests/test_hidden_input_echo.py': 43,
    'tests/test_student_distribution.py': 43,
    'tests/test_report_class.py': 42,
    'tests/test_grader_further.py': 38,
    'tests/test_grader_equivalence.py': 36,
    'tests/test_open_checks_speak.py': 36,
    'tests/browser/test_selfstudy_browser.py': 36,
    'tests/test_lms_export.py': 35,
    'tests/test_nbgrader_config.py': 31,
    'tests/test_intake_doors.py': 29,
    'tests/test_checks_ex30_asynchronous_rollouts.py': 28,
    'tests/browser/test_learner_browser.py': 27,
    'tests/test_variants_ex12_top_p_nucleus.py': 26,
    'tests/test_widgets_answer_nothing.py': 26,
    'tests/test_similarity.py': 25,
    'tests/test_distributions.py': 23,
    'tests/test_checks_ex28_kl_across_response.py': 22,
    'tests/test_grader_cli.py': 22,
    'tests/test_open_checks_example.py': 21,
    'tests/test_extension.py': 20,
    'tests/test_widgets_leak.py': 19,
    'tests/test_checks_ex29_clipping_and_gating.py': 19,
    'tests/test_redteam_batch.py': 17,
    'tests/test_roster.py': 13,
    'tests/test_variants_ex10_kl_chain_rule.py': 13,
    'tests/test_reference_fuzz.py': 13,
    'tests/test_checks_hard_coded.py': 11,
    'tests/test_grader_hostile.py': 11,
    'tests/test_run_lab.py': 10,
    'tests/test_exchange_collect.py': 10,
    'tests/test_variants_ex05_negative_kl.py': 10,
    'tests/test_checks_ex19_sampling_transforms.py': 10,
    'tests/test_checks_ex27_sequence_ratios.py': 9,
    'tests/test_variants_ex07_behaviour_policy.py': 8,
    'tests/test_grader_sandbox.py': 8,
    'tests/test_variants_distinct_keys.py': 8,
    'tests/test_validate.py': 7,
    'tests/test_lms_import.py': 6,
    'tests/test_packaging.py': 6,
    'tests/test_reference_numerics.py': 6,
    'tests/test_variants_ex11_k_estimators.py': 5,
    'tests/test_selfstudy.py': 5,
    'tests/test_reference_extras.py': 5,
    'tests/test_checks_exception_text.py': 4,
    'tests/test_variants_ex06_k3_support.py': 4,
    'tests/test_checks_ex21_sampler_trainer_mismatch.py': 4,
    'tests/test_checks_ex20_rollout_validation.py': 4,
    'tests/test_variants_identity.py': 4,
    'tests/test_checks_ex17_sequence_metrics.py': 4,
    'tests/test_checks_ex18_kl_estimators.py': 4,
    'tests/test_checks_ex16_causal_shift.py': 3,
    'tests/test_variants_remembered_id.py': 3,
    'tests/test_kernel_manager.py': 3,
    'tests/test_checks_open_gate.py': 3,
}


def unit_of(nodeid: str) -> str:
    """The work unit of a test: its file (``tests/test_x.py::test_y[1]`` -> ``tests/test_x.py``)."""
    return nodeid.split("::", 1)[0]


def order(units, cost: dict = COST) -> list:
    """``units`` (in collection order), the measured ones first, longest first; ties keep their order."""
    units = list(units)
    position = {unit: index for index, unit in enumerate(units)}
    return sorted(units, key=lambda unit: (-cost.get(unit, 0.0), position[unit]))


def scheduler_class():
    """The scheduler, built on pytest-xdist's ``LoadScopeScheduling`` (imported only under xdist)."""
    from xdist.scheduler import LoadScopeScheduling

    class CostOrderedModules(LoadScopeScheduling):
        """``LoadScopeScheduling`` with a module per work unit and the work queue ordered by cost."""

        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            # The parent fills the work queue and assigns the first units in one method (schedule):
            # the queue is put in cost order once, just before the first unit leaves it.
            if not self._ordered:
                self.workqueue = collections.OrderedDict(
                    (unit, self.workqueue[unit]) for unit in order(self.workqueue))
                self._ordered = True
            super()._assign_work_unit(node)

    return CostOrderedModules


def costs_from_junit(path: str) -> dict:
    """``module -> seconds`` summed over a JUnit XML report's test cases (setup and teardown included)."""
    import xml.etree.ElementTree as ElementTree

    totals: dict = collections.defaultdict(float)
    for case in ElementTree.parse(path).iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is the dotted path of the module (and class): find the file it names.
        for end in range(len(module), 0, -1):
            candidate = "/".join(module[:end]) + ".py"
            if (ROOT / candidate).is_file():
                totals[candidate] += float(case.get("time", 0))
                break
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


if __name__ == "__main__":
    for module, seconds in costs_from_junit(sys.argv[1]).items():
        if seconds >= float(sys.argv[2] if len(sys.argv) > 2 else 3):
            print(f"    {module!r}: {seconds:.0f},")
