"""One sandbox grades many notebooks in turn: nothing a notebook writes may reach the next one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.grading.sandbox import Sandbox, bubblewrap
from autograder.grading.task import limits_for

# Locally a machine without bubblewrap skips these; under CI (CI=true, which installs it) they must run.
pytestmark = pytest.mark.skipif(bubblewrap() is None and os.environ.get("CI", "").lower() != "true",
                                reason="needs a working bubblewrap")

PLANT = '''
import os
for base in ("/tmp", "/tmp/work", "/dev/shm"):
    for inner in ("kept", "kept/deeper"):
        os.makedirs(base + "/" + inner, exist_ok=True)
        open(base + "/" + inner + "/planted", "w").write("for the next notebook")
    os.chmod(base + "/kept/deeper", 0o000)
    os.chmod(base + "/kept", 0o555)
written = 0
try:
    for index in range(16):
        with open("/dev/shm/fill%d" % index, "wb") as handle:
            handle.write(b"x" * (4 * 2 ** 20))
        written += 4
except OSError:
    pass
print(written)
'''

LOOK = '''
import os
print(sorted(name for base in ("/tmp", "/tmp/work", "/dev/shm") for name in os.listdir(base)))
'''


def _stdout(result):
    (frame,) = result.cells.values()
    assert frame["status"] == "ok", frame
    return frame["stdout"].strip()


def test_files_left_in_read_only_directories_do_not_reach_the_next_notebook():
    box = Sandbox(tmp_mb=32)
    try:
        planted = box.run([{"kind": "exec", "id": "plant", "source": PLANT}], limits_for(timeout=20))
        # /dev/shm is capped like /tmp (bwrap's default would be half the machine's memory).
        assert int(_stdout(planted)) < 32
        seen = box.run([{"kind": "exec", "id": "look", "source": LOOK}], limits_for(timeout=20))
        # Only what the harness itself makes for every notebook: the output sink and the work directory
        # (each notebook has a fresh /tmp and /dev/shm of its own).
        assert _stdout(seen) == str(sorted([".output", "work"]))
    finally:
        box.close()


def test_a_frame_of_millions_of_tiny_containers_is_refused_before_parsing():
    """A forged reply built to cost the coordinator gigabytes to parse is rejected unparsed."""
    import json
    import tracemalloc

    from autograder.grading import sandbox as sandbox_module

    honest = json.dumps({"data": json.dumps({"kind": "returned", "value": [{"t": "int", "v": i}
                                                                          for i in range(10_000)]})}).encode()
    bomb = json.dumps([{}] * 2_000_000).encode()
    deep = b"[" * 100_000 + b"]" * 100_000
    tracemalloc.start()
    try:
        assert "data" in sandbox_module._parse_reply(honest), "an honest 10,000-item answer must pass"
        with pytest.raises(sandbox_module._Protocol, match="too many JSON nodes"):
            sandbox_module._parse_reply(bomb)
        _, peak = tracemalloc.get_traced_memory()
        # Deep nesting is a protocol error of this notebook, never a RecursionError that escapes.
        with pytest.raises(sandbox_module._Protocol):
            sandbox_module._parse_reply(deep)
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(bomb), f"refusing the frame still cost {peak / 1e6:.0f} MB"


def test_student_code_cannot_tell_it_is_graded():
    """No module, path, command line, environment or caller's frame says "grader" to a cell or a call."""
    from autograder.channel import Call, Returned, decode_outcome
    from hostile.corpus import TELLS

    probe = TELLS + "\ndef seen():\n    return _tells()\n"
    calls = [Call("seen").to_json(), Call.value("_seen").to_json()]
    steps = [{"kind": "exec", "id": "probe", "source": probe},
             {"kind": "calls", "cases": [{"name": "first", "calls": calls},
                                         {"name": "other", "calls": [Call("seen", ([1.5, "other case"],)).to_json()]}]}]
    box = Sandbox(tmp_mb=32)
    try:
        result = box.run(steps, limits_for(timeout=20))
    finally:
        box.close()
    outcomes = [decode_outcome(result.outcomes[1][case][index].encode())
                for case, index in (("first", 0), ("first", 1), ("other", 0))]
    assert result.reason == "exited", result
    for outcome in outcomes[:2]:
        assert isinstance(outcome, Returned), outcome
        assert outcome.value == [], "\n".join(map(str, outcome.value))


KILL = """
import os, signal
for pid in (1, os.getppid()):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as error:
        print(type(error).__name__)
print("still here")
"""


def test_a_notebook_cannot_kill_the_zygote_and_a_dead_one_is_reported():
    """Inside, the zygote is PID 1 and survives SIGKILL; killed from outside, the job ends as "sandbox"."""
    import os
    import signal
    import threading

    box = Sandbox(tmp_mb=32)
    try:
        first = box.run([{"kind": "exec", "id": "kill", "source": KILL}], limits_for(timeout=20))
        assert first.reason == "exited" and _stdout(first).endswith("still here")
        zygote = box._proc
        second = box.run([{"kind": "exec", "id": "look", "source": "print(6 * 7)"}], limits_for(timeout=20))
        assert _stdout(second) == "42" and box._proc is zygote, "the same zygote grades the next notebook"

        started = threading.Event()
        result: dict = {}

        def grade_slow_notebook():
            started.set()
            result["run"] = (box.run([{"kind": "exec", "id": "slow", "source": "import time\ntime.sleep(60)"}],
                                  limits_for(timeout=30)))

        outer = zygote.pid  # bwrap; the zygote is its only child
        (inner,) = Path(f"/proc/{outer}/task/{outer}/children").read_text().split()
        worker = threading.Thread(target=grade_slow_notebook)
        worker.start()
        started.wait()
        # Kill the zygote from outside while the job is under way (its frames are not back yet).
        while not result:
            try:
                os.kill(int(inner), signal.SIGKILL)
            except ProcessLookupError:
                break
            worker.join(0.2)
        worker.join()
        assert result["run"].reason == "sandbox" and result["run"].cells == {}
    finally:
        box.close()


def test_a_zygote_that_died_between_notebooks_is_reported_not_replaced():
    """The fact the test above depends on, without its race: the zygote is dead (and bubblewrap has
    exited) before the next notebook's turn. That notebook is "sandbox", never quietly graded by a
    new zygote (which under load turned the test above into a "timeout"); the one after it gets a
    fresh sandbox."""
    import os
    import signal

    box = Sandbox(tmp_mb=32)
    try:
        box.run([{"kind": "exec", "id": "warm", "source": "print(1)"}], limits_for(timeout=20))
        zygote = box._proc
        (inner,) = Path(f"/proc/{zygote.pid}/task/{zygote.pid}/children").read_text().split()
        os.kill(int(inner), signal.SIGKILL)
        zygote.wait(timeout=20)
        dead = box.run([{"kind": "exec", "id": "late", "source": "print(2)"}], limits_for(timeout=20))
        assert dead.reason == "sandbox" and dead.cells == {}
        fresh = box.run([{"kind": "exec", "id": "next", "source": "print(6 * 7)"}], limits_for(timeout=20))
        assert _stdout(fresh) == "42" and box._proc is not zygote
    finally:
        box.close()


SHARED_STATE = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
seen = {}
seen["shmget"] = (libc.shmget(0x6d6f6436, 4096, 0o1666), ctypes.get_errno())
seen["msgget"] = (libc.msgget(0x6d6f6437, 0o1666), ctypes.get_errno())
seen["add_key"] = (libc.syscall(248, b"user", b"answers", b"x", 1, ctypes.c_int(-4)), ctypes.get_errno())
seen["unshare_user"] = (libc.unshare(0x10000000), ctypes.get_errno())
seen["memfd"] = (libc.syscall(319, b"x", 0), ctypes.get_errno())
seen["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
fd = os.open("/dev/shm/planted", os.O_CREAT | os.O_WRONLY, 0o644)
os.close(fd)
print(repr(seen))
'''


def test_no_ipc_keyring_or_user_namespace_reaches_the_next_notebook():
    """SysV IPC, keyrings, memfd and new user namespaces are refused; each notebook starts empty."""
    import ast
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the probe uses x86_64 system call numbers")
    box = Sandbox(tmp_mb=32)
    try:
        first = ast.literal_eval(_stdout(box.run([{"kind": "exec", "id": "a", "source": SHARED_STATE}],
                                                 limits_for(timeout=20))))
        second = box.run([{"kind": "exec", "id": "b", "source": "import os\nprint(os.listdir('/dev/shm'))"}],
                         limits_for(timeout=20))
    finally:
        box.close()
    for call in ("shmget", "msgget", "add_key", "unshare_user", "memfd"):
        assert first[call][0] == -1 and first[call][1] == 1, (call, first[call])  # EPERM
    assert _stdout(second) == "[]"


def test_calls_reach_the_notebook_deduplicated_and_in_no_telling_order():
    """Consecutive test cells' calls are merged, made once each, and shuffled; cells keep their place."""
    import random

    from autograder.channel import Call
    from autograder.grading.sandbox import plan_units

    call = lambda x: Call("f", (x,)).to_json()  # noqa: E731
    steps = [{"kind": "exec", "id": "a", "source": "A"},
             {"kind": "calls", "cases": [{"name": "one", "calls": [call(1), call(2)]}]},
             {"kind": "calls", "cases": [{"name": "two", "calls": [call(2), call(3)]}]},
             {"kind": "exec", "id": "b", "source": "B"},
             {"kind": "calls", "cases": [{"name": "three", "calls": [call(1)]}]}]
    orders = set()
    for seed in range(30):
        units = plan_units(steps, random.Random(seed))
        kinds = [unit["k"] for unit, _ in units]
        assert kinds == ["exec", "call", "call", "call", "exec", "call"]
        assert all("case" not in json_text and "one" not in json_text
                   for json_text in (str(unit) for unit, _ in units))
        merged = {unit["call"]["args"]["items"][0]["v"]: targets for unit, targets in units[1:4]}
        assert merged == {1: [("call", 1, "one", 0)], 2: [("call", 1, "one", 1), ("call", 2, "two", 0)],
                          3: [("call", 2, "two", 1)]}
        orders.add(tuple(unit["call"]["args"]["items"][0]["v"] for unit, _ in units[1:4]))
    assert len(orders) > 1, "the order of the calls never changes"


def test_a_notebook_that_does_not_exit_after_its_work_gets_no_exit_status_of_ours():
    """Every unit ran; the notebook then hangs instead of exiting (its read of the next unit is
    patched to sleep). The grader ends it after its grace: that SIGKILL is the grader's, so the run
    has no exit status, and the student's page does not say that a cell ran out of memory."""
    from autograder.feedback.page import explain

    hang = "import os, time\nos.read = lambda fd, n: time.sleep(60) or b''\nprint('done')"
    box = Sandbox(tmp_mb=32)
    try:
        result = box.run([{"kind": "exec", "id": "hang", "source": hang}], limits_for(timeout=20))
    finally:
        box.close()
    assert _stdout(result) == "done" and result.reason == "exited"
    assert result.status is None
    assert explain(None, result.reason, result.status) is None


SHELL_STATE = '''
ip = get_ipython()
print(sorted(k for k in ip.user_ns if not k.startswith("__")), ip.execution_count,
      list(ip.user_ns["In"]), dict(ip.user_ns["Out"]), repr(ip.user_ns["_"]), ip.displayhook.prompt_count)
'''


def test_a_notebooks_first_cell_finds_the_shell_as_a_fresh_one_leaves_it():
    """The zygote runs IPython's cell path once before forking (a head start for every notebook):
    that leaves nothing a notebook can see, no names, no history, no last value, no count."""
    import subprocess
    import sys

    fresh = subprocess.run(
        [sys.executable, "-c",
         "from IPython.core.interactiveshell import InteractiveShell\n"
         "from traitlets.config import Config\n"
         "config = Config(); config.HistoryManager.enabled = False\n"
         f"InteractiveShell.instance(config=config).run_cell({SHELL_STATE!r}, store_history=False)\n"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    box = Sandbox()
    try:
        graded = box.run([{"kind": "exec", "id": "state", "source": SHELL_STATE}], limits_for(timeout=20))
        assert _stdout(graded) == fresh
    finally:
        box.close()
