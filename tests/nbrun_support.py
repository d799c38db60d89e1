"""Helpers for the notebook tests: the expected exercise list, notebook text, and kernel runs in a small pool.

Kernels are started by worker processes (at most two at a time: the machine's two cores are shared),
each with its notebook's folder as working directory.
"""

from __future__ import annotations

import concurrent.futures
import copy
import os
import re
import time
from pathlib import Path

import nbformat

from autograder.assignment import ASSIGNMENT, ASSIGNMENTS, assignment_of
from autograder.authoring.scratch_course import REPO_ROOT, release_dir, source_dir

#: The 20 exercises in the seed's order (docs/DESIGN.md).
STEMS = (
    "01_stop_reasons", "02_markov_state", "03_one_token_error", "04_what_ppl_says", "05_negative_kl",
    "06_k3_support", "07_behaviour_policy", "08_rollout_contract", "09_sequence_ppl", "10_kl_chain_rule",
    "11_k_estimators", "12_top_p_nucleus", "13_truncation_correction", "14_support_violation",
    "15_stable_log_softmax", "16_causal_shift", "17_sequence_metrics", "18_kl_estimators",
    "19_sampling_transforms", "20_rollout_validation",
)
CONCEPT = STEMS[:14]
CODING = STEMS[14:]
#: The exercises of the second assignment, ``module6_further`` (coding, 10 points each).
FURTHER_STEMS = ("21_sampler_trainer_mismatch", "22_kl_reward_vs_loss", "23_loss_aggregation", "24_labels_and_shifting",
                 "25_logprob_precision", "26_chat_template_mask", "27_sequence_ratios", "28_kl_across_response",
                 "29_clipping_and_gating", "30_asynchronous_rollouts")
#: ``assignment -> its exercises``.
ASSIGNMENT_STEMS = {"module6": STEMS, "module6_further": FURTHER_STEMS}
WORKERS = 2

HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
SOLUTION_BEGIN, SOLUTION_END = "BEGIN SOLUTION", "END SOLUTION"


def present_stems(assignment: str = ASSIGNMENT) -> list:
    """Source notebooks of ``assignment`` that exist now (the notebooks land one by one)."""
    return sorted(p.stem for p in source_dir(REPO_ROOT, assignment).glob("*.ipynb"))


def all_present_stems() -> list:
    """Source notebooks of every assignment (stems are unique across assignments)."""
    return sorted(stem for assignment in ASSIGNMENTS for stem in present_stems(assignment))


def source_path(stem: str) -> Path:
    """``source/<assignment>/<stem>.ipynb``, in whichever assignment holds ``stem``."""
    return source_dir(REPO_ROOT, assignment_of(stem)) / f"{stem}.ipynb"


def release_path(stem: str) -> Path:
    """``release/<assignment>/<stem>.ipynb``, in whichever assignment holds ``stem``."""
    return release_dir(REPO_ROOT, assignment_of(stem)) / f"{stem}.ipynb"


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_test_cell(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_answer_cell(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def regions(source: str, begin: str, end: str) -> list:
    """The text between each ``begin`` and ``end`` marker line (markers excluded)."""
    found, current = [], None
    for line in source.split("\n"):
        if begin in line:
            current = []
        elif end in line and current is not None:
            found.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return found


def config():
    """The course's nbgrader config, as nbgrader loads it."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()


def in_pool(function, items, workers: int = WORKERS) -> dict:
    """``item -> function(item)`` computed in at most ``workers`` processes."""
    items = list(items)
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(workers, max(1, len(items)))) as pool:
        return dict(zip(items, pool.map(function, items)))


#: Who the kernels these tests start are signed in as: a student on a hub (course.variants reads
#: JUPYTERHUB_USER), so that a notebook whose numbers vary shows that student's, as on the course's hub.
HUB_STUDENT = "hub-student"


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 120) -> tuple:
    """Run every cell (errors recorded, not raised); returns ``(executed notebook, seconds)``."""
    from nbclient import NotebookClient

    nb = copy.deepcopy(nb)
    start = time.perf_counter()
    env = dict(os.environ, JUPYTERHUB_USER=HUB_STUDENT)
    from autograder.kernel_manager import PrivateSocketKernelManager

    # Unix sockets, not TCP ports: a busy machine must not make kernels die (autograder/kernel_manager.py).
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            kernel_manager_class=PrivateSocketKernelManager,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)
    return nb, time.perf_counter() - start


def errors(cell) -> list:
    """``(ename, evalue)`` of the error outputs of an executed cell."""
    return [(o.get("ename"), o.get("evalue")) for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def stderr_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stderr")


def validate(path: str, invert: bool = False, ignore_checksums: bool = False) -> dict:
    """nbgrader's Validator (with the course config) on ``path``: ``{}`` when nothing is reported."""
    from nbgrader.validator import Validator

    validator = Validator(config=config())
    validator.invert = invert
    validator.ignore_checksums = ignore_checksums
    os.environ["JUPYTERHUB_USER"] = HUB_STUDENT  # the kernel inherits it (these run in pool processes)
    try:
        return validator.validate(str(path))
    finally:
        os.environ.pop("JUPYTERHUB_USER", None)


def release_with_hidden_tests(stem: str) -> nbformat.NotebookNode:
    """The released notebook with its test cells restored from the source, as ``autograde`` restores them."""
    source = {nbgrader_meta(c).get("grade_id"): c for c in read(source_path(stem)).cells}
    nb = read(release_path(stem))
    for cell in nb.cells:
        if is_test_cell(cell):
            cell.source = source[nbgrader_meta(cell)["grade_id"]].source
    return nb


def normalise(text: str) -> str:
    """Lower case, whitespace collapsed: leak scans compare text, not layout."""
    return re.sub(r"\s+", " ", text).strip().lower()
