"""Grading on a Dask cluster gives the same results as the local process pool."""

from __future__ import annotations

import json
import shutil

import pytest

from autograder.authoring import scratch_course
from autograder.grading.batch import Options, run
from autograder.demo.simulate import write_class
from run_cache import released_course, writable_copy

STEM = "15_stable_log_softmax"
#: A concept exercise whose numbers vary per student: Dask's workers must grade each student's own.
VARYING = "09_sequence_ppl"


@pytest.mark.slow
def test_dask_cluster_matches_process_pool(tmp_path, tmp_path_factory):
    distributed = pytest.importorskip("distributed")
    if STEM not in scratch_course.notebook_stems():
        pytest.fail(f"source notebook {STEM} is missing")
    local = writable_copy(released_course(tmp_path_factory, [VARYING, STEM]), tmp_path / "local")
    write_class(local, {"ada": "solutions", "ben": "untouched", "cai": "solutions"})
    # One course secret for both copies, so that both draw the same hidden inputs per student.
    from autograder.variants import course_secret
    course_secret(local, create=True)
    remote = tmp_path / "remote"
    shutil.copytree(local, remote)
    assert run(Options(scratch_course.ASSIGNMENT, course_dir=str(local), jobs=2, report=str(local / "r.jsonl"),
                       progress=False)) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert run(Options(scratch_course.ASSIGNMENT, course_dir=str(remote), dask=cluster.scheduler_address,
                           report=str(remote / "r.jsonl"), progress=False)) == 0
    rows = [json.loads(line) for line in (local / "r.jsonl").read_text().splitlines()]
    assert rows == [json.loads(line) for line in (remote / "r.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} >= {"graded"}
    from autograder.checks import CHECKS
    graded = scratch_course.read_gradebook(remote)
    for student in ("ada", "cai"):  # solutions computed from numbers: each graded on their own, in full
        assert graded[student][VARYING].auto_score == CHECKS[VARYING].points
    assert scratch_course.read_gradebook(local) == scratch_course.read_gradebook(remote)
