"""deploy/hub/podlike.py: a process under it cannot make namespaces (so the grader's bubblewrap
cannot run, as in a container pod), and everything else it starts works as before."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PODLIKE = REPO / "deploy" / "hub" / "podlike.py"

pytestmark = pytest.mark.skipif(sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"),
                                reason="podlike.py's seccomp filter is for Linux on x86_64 and aarch64")


def _podlike(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PODLIKE), "--", *command], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_processes_threads_and_subprocesses_still_run():
    code = ("import os, subprocess, threading\n"
            "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
            "pid = os.fork()\n"
            "if pid == 0: os._exit(7)\n"
            "print(os.waitpid(pid, 0)[1] >> 8, subprocess.run(['true']).returncode)\n")
    proc = _podlike(sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["7", "0"]


@pytest.mark.parametrize("flag", ["--user", "--pid", "--net", "--mount"])
def test_no_new_namespace_of_any_kind(flag):
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("util-linux unshare is not installed")
    proc = _podlike(unshare, flag, "true")
    assert proc.returncode != 0
    assert "Operation not permitted" in proc.stderr


def test_the_graders_sandbox_probe_fails_under_it_and_works_without():
    probe = "from autograder.grading.sandbox import _probe_bubblewrap; print(repr(_probe_bubblewrap()))"
    outside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    if outside.returncode != 0 or outside.stdout.startswith("(None"):
        pytest.skip(f"bubblewrap does not run here even without podlike.py: {outside.stdout}{outside.stderr}")
    inside = _podlike(sys.executable, "-c", probe)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.startswith("(None, 'bubblewrap cannot create its namespaces here"), inside.stdout


def test_a_command_is_required():
    proc = subprocess.run([sys.executable, str(PODLIKE), "--"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "COMMAND is required" in proc.stderr
