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
