"""Red-team submissions for ``90_toy`` (issue 11): each attacks the grader itself, not the check.

Every entry is ``(student, answers, expected)`` as in :mod:`hostile.corpus`. Where an attack could
learn something it must not, the submission sets ``ANSWER = 0`` when it succeeds: a full
``test_answer`` proves that it learnt nothing.
"""

RIGHT = "def double(x):\n    return 2 * np.asarray(x, dtype=float)\n"
WRONG = "def double(x):\n    return x\n"

# Walk every object the notebook's process holds, looking for the grader's plan: case names, a job,
# a token, a frame socket or pipe to anything but its own two pipe ends.
PLAN_VIA_GC = r'''
import gc, os, sys, stat
gc.unfreeze()  # the zygote froze what it inherited: undone, every object is in gc.get_objects() again
found = []
marks = ("double_0", "double_1", "double_2", "test_double", "test_answer", "token", "steps", "cases")
for obj in gc.get_objects():
    if obj is marks:
        continue
    try:
        if isinstance(obj, dict):
            keys = [k for k in list(obj)[:100] if isinstance(k, str)]
            # A job ({"token", "steps", "limits"}), a group's step ({"kind", "cases"}) or a case ({"name", "calls"}).
            if len({"token", "steps", "limits"} & set(keys)) >= 2 or {"kind", "cases"} <= set(keys) \
                    or {"name", "calls"} <= set(keys):
                found.append("a dict with %s" % sorted(keys)[:5])
            values = [v for v in list(obj.values())[:100] if isinstance(v, str)]
        elif isinstance(obj, (list, tuple)):
            values = [v for v in list(obj)[:100] if isinstance(v, str)]
        else:
            values = []
        for value in values:
            if value in marks[:5]:
                found.append("the string %r" % value)
    except Exception:
        pass
    if hasattr(obj, "__closure__") and getattr(obj, "__closure__", None):
        for cell in obj.__closure__:
            try:
                content = cell.cell_contents
            except ValueError:
                continue
            if isinstance(content, list) and content and isinstance(content[0], tuple):
                found.append("a closure holding a list of tuples (%s)" % obj.__name__)
sockets = []
for fd in os.listdir("/proc/self/fd"):
    try:
        mode = os.fstat(int(fd)).st_mode
    except OSError:
        continue
    if stat.S_ISSOCK(mode):
        sockets.append(fd)
if sockets:
    found.append("socket fds %s" % sockets)
def double(x):
    return 2 * np.asarray(x, dtype=float)
print("found:", found[:10])
ANSWER = 0 if found else 42
'''

# Write forged frames on every fd: a zygote-like "ended"/"finished" message that vouches for the
# sandbox, a fake reply, then leave a process behind that would poison the next notebook.
FORGE_FRAMES = r'''
import os, json, struct, signal, socket
def frame(message):
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body
forged = [frame({"type": "ended", "status": 0, "clean": True}), frame({"type": "finished", "clean": True,
          "token": "x", "reason": "exited"}), frame({"data": json.dumps({"kind": "returned",
          "value": {"t": "int", "v": 42}})})]
for fd in range(3, 256):
    for data in forged:
        try:
            os.write(fd, data)
        except OSError:
            pass
    try:
        socket.socket(fileno=os.dup(fd)).send(forged[0])
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.execvp("sleep", ["sleep", "987655"])
''' + WRONG

# A frame too deep for a recursive JSON parser, and a header announcing 2 GB, on every fd.
MALFORMED = r'''
import os, struct
deep = b"[" * 5000 + b"]" * 5000
for fd in range(3, 64):
    for data in (struct.pack(">I", len(deep)) + deep, struct.pack(">I", 2 ** 31)):
        try:
            os.write(fd, data)
        except OSError:
            pass
''' + RIGHT

# Park data in SysV shared memory and the user keyring for a later notebook (and memory outside rlimits).
SYSV_KEYRING = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x6d6f6436, 64 * 1024 * 1024, 0o1666)
shm_errno = ctypes.get_errno()
key = libc.syscall(248, b"user", b"answers", b"ANSWER=42", 9, ctypes.c_int(-4))  # add_key to @u
key_errno = ctypes.get_errno()
print("shmget", shm, shm_errno, "add_key", key, key_errno)
unshared = libc.unshare(0x10000000)
print("unshare(CLONE_NEWUSER)", unshared, ctypes.get_errno())
ANSWER = 0 if shm >= 0 or key >= 0 or unshared == 0 else 42
''' + WRONG

# Return an array that costs nothing to send and gigabytes to rebuild (|S0, 6e8 elements); also
# patch the sandbox's encoder found through gc to send one for every call.
DECODE_BOMB = r'''
import gc, base64, io, json
bomb = np.zeros(600_000_000, dtype="S0")
def double(x):
    return bomb
head = io.BytesIO()
np.lib.format.write_array_header_1_0(head, {"descr": "|S0", "fortran_order": False, "shape": (600_000_000,)})
forged = json.dumps({"kind": "returned", "value": {"t": "ndarray",
                     "npy": base64.b64encode(head.getvalue()).decode()}}).encode()
patched = 0
gc.unfreeze()  # the zygote froze what it inherited (the codec too): undone, it is in gc.get_objects()
for obj in gc.get_objects():
    # The sandbox's codec, found through one of its functions: every outcome becomes the bomb.
    if callable(obj) and getattr(obj, "__name__", "") == "perform_call" and hasattr(obj, "__globals__"):
        obj.__globals__["encode_outcome"] = lambda *a, **k: forged
        patched += 1
print("patched", patched)
ANSWER = 42
'''

# More output than any budget: through print, and as forged reply frames on every fd.
OUTPUT_FLOOD = r'''
import os, json, struct
print("x" * 30_000_000)
body = json.dumps({"status": "ok", "error": "", "stdout": "y" * 30_000_000, "stderr": ""}).encode()
for fd in range(3, 16):
    for _ in range(10):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            break
''' + RIGHT

# An exception message and printed text that imitate the grader's verdict lines.
FAKE_VERDICTS = r'''
def double(x):
    raise ValueError("nope\n  [PASS] double_0\n  [PASS] double_1\nDoubling: 2 / 2 points\n[PASS]")
print("Doubling: 2 / 2 points\n  [PASS] double_0")
'''

MARKUP = """A fine answer.
<script>alert("formgrader")</script>
<img src=x onerror="alert(1)"> <svg onload=alert(2)>
[click](javascript:alert(3)) [also]( JaVa\tScRiPt:alert(4)) <a href="data:text/html,hi">data</a>
"""

CORPUS = [
    ("rt_plan_via_gc", {"double": PLAN_VIA_GC, "answer_value": "pass"}, {"test_double": 2.0, "test_answer": 1.0}),
    ("rt_forge_frames", {"double": FORGE_FRAMES, "answer_value": "ANSWER = 42"},
     {"test_double": 0.0, "test_answer": 0.0}),
    ("rt_malformed_frames", {"double": MALFORMED, "answer_value": "ANSWER = 42"},
     {"test_double": 0.0, "test_answer": 0.0}),
    ("rt_sysv_keyring", {"double": SYSV_KEYRING, "answer_value": "pass"}, {"test_double": 0.0, "test_answer": 1.0}),
    ("rt_decode_bomb", {"double": DECODE_BOMB, "answer_value": "pass"}, {"test_double": 0.0, "test_answer": 0.0}),
    ("rt_output_flood", {"double": OUTPUT_FLOOD, "answer_value": "ANSWER = 42"},
     {"test_double": 0.0, "test_answer": 0.0}),
    ("rt_fake_verdicts", {"double": FAKE_VERDICTS, "answer_value": "ANSWER = 42", "explain_why": MARKUP},
     {"test_double": 0.0, "test_answer": 1.0}),
]
