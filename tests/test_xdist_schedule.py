"""The suite's xdist scheduler (tests/xdist_schedule.py): a module per work unit, longest first."""

from __future__ import annotations

from tests.xdist_schedule import COST, ROOT, costs_from_junit, order, unit_of


def test_a_unit_is_the_test_file_whatever_follows_it():
    assert unit_of("tests/test_a.py::test_b") == "tests/test_a.py"
    assert unit_of("tests/test_a.py::Case::test_b[x::y]") == "tests/test_a.py"
    assert unit_of("tests/test_a.py::test_b[1]@nbgrader") == "tests/test_a.py"  # a group suffix, if xdist adds one
    assert unit_of("autograder/reference/kl.py::autograder.reference.kl.k3") == "autograder/reference/kl.py"


def test_measured_units_go_first_longest_first_and_the_rest_keep_their_order():
    units = ["a.py", "slow.py", "b.py", "slower.py", "tie1.py", "tie2.py", "c.py"]
    cost = {"slow.py": 50, "slower.py": 300, "tie1.py": 10, "tie2.py": 10}
    assert order(units, cost) == ["slower.py", "slow.py", "tie1.py", "tie2.py", "a.py", "b.py", "c.py"]
    assert order([], cost) == []


def test_every_costed_module_exists():
    # A renamed or deleted module would silently lose its place at the front of the queue.
    assert COST and not [module for module in COST if not (ROOT / module).is_file()]


def test_costs_are_read_from_a_junit_report_by_module(tmp_path):
    report = tmp_path / "run.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_pipeline" name="test_a" time="100.5"/>'
        '<testcase classname="tests.test_pipeline" name="test_b" time="0.5"/>'
        '<testcase classname="tests.browser.test_inert_browser" name="test_c" time="3"/>'
        '<testcase classname="tests.test_xdist_schedule" name="test_d" time="1"/>'
        '</testsuite></testsuites>')
    assert costs_from_junit(str(report)) == {"tests/test_pipeline.py": 101.0, "tests/browser/test_inert_browser.py": 3.0,
                                             "tests/test_xdist_schedule.py": 1.0}
