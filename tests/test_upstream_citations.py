"""Every claim about an upstream package cites the release read: package==version and a file inside it.

The scanner and its definitions (what a unit is, what naming and citing mean) are in
`tests/notebook_text_support.py`; `python -m tests.notebook_text_support` prints what this test would list.
"""

from __future__ import annotations

import os
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.notebook_text_support import (
    CURRENT, UNREAD, Unit, all_texts, check_unit, cited_paths, findings, markdown_units,
)


def test_every_upstream_claim_cites_the_release_read():
    found = findings()
    assert not found, f"{len(found)} mention(s) of an upstream package without a citation of the release read:\n" \
        + "\n".join(map(str, found))


def _problems(markdown: str) -> list[str]:
    return [f"{f.package}: {f.problem}" for unit in markdown_units(markdown, "planted") for f in check_unit(unit)]


def test_the_scanner_fails_a_planted_uncited_sentence():
    assert _problems("TRL's GRPO trainer adds k3 to the loss.") == [
        "trl: named without trl==1.16.0 in the same paragraph, item or row"]
    # A citation in the next paragraph, item or row is not nearby.
    assert _problems("verl clamps k3 to 10.\n\nverl==0.9.1, `verl/trainer/ppo/core_algos.py`, `kl_penalty`.")
    assert _problems("- vLLM returns raw log-probs.\n- vllm==0.34.0, `vllm/config/model.py`, `logprobs_mode`.")
    assert _problems("| a | TRL's default |\n| b | trl==1.16.0, `trl/trainer/grpo_config.py` |")
    # A docs link names the package too.
    assert _problems("- TRL documentation, <https://huggingface.co/docs/trl/grpo_trainer>.")
    # A path inside a package names it, even without its name in prose.
    assert _problems("The default is in `trl/trainer/grpo_config.py`.")


def test_the_scanner_passes_a_cited_sentence():
    cited = ("TRL's GRPO trainer adds k3 to the loss (trl==1.16.0, `trl/trainer/grpo_trainer.py`, "
             "`GRPOTrainer._compute_loss`).")
    assert _problems(cited) == []
    item = ("- verl clamps k3 to $[-10, 10]$\n  (verl==0.9.1, `verl/trainer/ppo/core_algos.py`,\n"
            "  `kl_penalty_forward`).")
    assert _problems(item) == []
    # Code blocks and display math are not prose.
    assert _problems("```python\nimport torch  # as in vLLM\n```") == []
    assert _problems("$$\\text{vllm}$$") == []


def test_the_scanner_fails_a_stale_version_and_a_citation_without_a_file():
    assert _problems("vLLM's sampler (vllm==0.33.0, `vllm/v1/sample/sampler.py`).") == [
        "vllm: cites vllm==0.33.0, the release read is vllm==0.34.0",
        "vllm: named without vllm==0.34.0 in the same paragraph, item or row"]
    assert _problems("vLLM's sampler (vllm==0.34.0, `Sampler`).") == [
        "vllm: cites vllm==0.34.0 without a file inside it (a code span such as `vllm/...py`)"]


def test_the_scanner_fails_a_package_no_release_of_which_was_read():
    for sentence in ("DeepSpeed shards the optimizer.", "PyTorch accumulates softmax in float32.",
                     "SGLang samples the rollouts.", "a fused Triton kernel"):
        problems = _problems(sentence)
        assert problems and all("no release of it was read" in p for p in problems), (sentence, problems)
    assert set(UNREAD) >= {"deepspeed", "sglang", "pytorch", "megatron"}


def test_the_scanner_reads_every_text():
    texts = all_texts()
    wheres = {where.split(" [")[0] for where, _ in texts}
    assert any(w.endswith("rubric.md") for w in wheres) and any(w.endswith("solution.md") for w in wheres)
    assert sum(w.endswith(".ipynb") for w in wheres) >= 28
    units = [u for where, text in texts for u in markdown_units(text, where)]
    assert len(units) > 1000 and all(isinstance(u, Unit) and u.text.strip() for u in units)


def _release_files(package: str, version: str) -> set[str] | None:
    """The files of a release, from a wheel in $MODULE6_UPSTREAM_WHEELS or an installed distribution."""
    folder = os.environ.get("MODULE6_UPSTREAM_WHEELS")
    if folder:
        for wheel in Path(folder).glob(f"{package}-{version}-*.whl"):
            names = zipfile.ZipFile(wheel).namelist()
            return {n.split(".data/purelib/", 1)[-1] for n in names}
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != version:
        return None
    return {str(f) for f in dist.files or ()}


def test_cited_files_exist_in_the_release_read():
    """Where the release is at hand (a wheel folder in $MODULE6_UPSTREAM_WHEELS, or installed), its cited files exist."""
    checked, missing = 0, []
    for where, text in all_texts():
        for unit in markdown_units(text, where):
            for package, path in cited_paths(unit.text):
                files = _release_files(package, CURRENT[package])
                if files is None:
                    continue
                checked += 1
                if path not in files:
                    missing.append(f"{where}: {package}=={CURRENT[package]} has no {path}")
    if not checked:
        pytest.skip("no cited release at hand (set MODULE6_UPSTREAM_WHEELS to a folder of the wheels read)")
    assert not missing, "\n".join(missing)
