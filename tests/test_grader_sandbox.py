"""One sandbox grades many notebooks in turn: nothing a notebook writes may reach the next one."""

from __future__ import annotations

import pytest

from autograder.grading.sandbox import Sandbox, bubblewrap
from autograder.grading.worker import limits_for

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="needs a working bubblewrap")

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
    (frame,) = [f for f in result["frames"] if f["type"] == "cell"]
    assert frame["status"] == "ok", frame
    return frame["stdout"].strip()


def test_files_left_in_read_only_directories_do_not_reach_the_next_notebook():
    box = Sandbox(tmp_mb=32)
    try:
        planted = box.run([{"kind": "exec", "id": "plant", "source": PLANT}], limits_for(timeout=20))
        # /dev/shm is capped like /tmp (bwrap's default would be half the machine's memory).
        assert int(_stdout(planted)) < 32
        seen = box.run([{"kind": "exec", "id": "look", "source": LOOK}], limits_for(timeout=20))
        # Only what the harness itself makes for every notebook: the output sink and the work directory.
        assert _stdout(seen) == str(sorted([".output", "work"]))
    finally:
        box.close()


def test_a_frame_of_millions_of_tiny_containers_is_refused_before_parsing():
    """A forged frame built to cost the coordinator gigabytes to parse is rejected unparsed."""
    import os
    import time
    import tracemalloc

    from autograder.grading import sandbox as sandbox_module
    from autograder.grading.harness import frame_bytes

    class _Pipe:
        def __init__(self, fd):
            self.fd = fd

        def fileno(self):
            return self.fd

    honest = frame_bytes({"kind": "returned", "value": [{"t": "int", "v": i} for i in range(10_000)]})
    bomb = frame_bytes([{}] * 2_000_000)
    read_fd, write_fd = os.pipe()
    box = sandbox_module.Sandbox.__new__(sandbox_module.Sandbox)
    box._proc = type("P", (), {"stdout": _Pipe(read_fd)})()
    import threading
    writer = threading.Thread(target=lambda: (os.write(write_fd, honest + bomb), os.close(write_fd)))
    writer.start()
    tracemalloc.start()
    try:
        assert box._read(time.monotonic() + 30)["kind"] == "returned", "an honest 10,000-item answer must pass"
        with pytest.raises(sandbox_module.SandboxError, match="too many JSON nodes"):
            box._read(time.monotonic() + 30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        writer.join()
        os.close(read_fd)
    assert peak < 4 * len(bomb), f"refusing the frame still cost {peak / 1e6:.0f} MB"
