"""Hostile submissions for ``90_toy``: each tries to score without a correct ``double``.

Every entry is ``(student, answers, expected)``: ``answers`` maps grade ids to cell sources (the
course path is substituted for ``{course}``), ``expected`` maps the two test cells to the score a
plainly wrong (or, for ``noisy``/``outputbomb``, plainly right) answer gets. Many entries also set
``ANSWER = 0`` when they manage to see something they must not (a leak costs them the point, so
a full ``test_answer`` proves nothing leaked).
"""

WRONG = "def double(x):\n    return x\n"
RIGHT = "def double(x):\n    return 2 * np.asarray(x, dtype=float)\n"

PROBE = '''
import os, sys
leaks = []
for path in ["{course}", "{course}/gradebook.db", "{course}/source", "{course}/submitted", "{root}/autograder",
             "{root}/course/reference", "{root}", "/root/.ssh"]:
    try:
        os.listdir(path) if not path.endswith(".db") else open(path, "rb").read(1)
        leaks.append(path)
    except Exception:
        pass
for name in ["autograder", "autograder.checks", "autograder.reference", "hostile"]:
    try:
        __import__(name)
        leaks.append(name)
    except Exception:
        pass
if os.environ.get("NBGRADER_EXECUTION") or any("autograde" in k.lower() for k in os.environ):
    leaks.append("environment")
ANSWER = 0 if leaks else 42
print("leaks:", leaks)
'''

# Everything a notebook can cheaply look at to learn that it runs under the grader rather than in
# its own kernel. ``_tells()`` lists what it finds; the entry below scores only when it finds nothing.
TELLS = r'''
import os, sys

def _tells():
    words = ("harness", "grader", "grading", "autograde", "sandbox", "channel", "judge", "nbgrader")
    job_keys = {"token", "steps", "cases", "limits", "calls"}
    found = []

    def telling(text):
        text = str(text).lower()
        return any(word in text for word in words)

    for name, module in list(sys.modules.items()):
        if telling(name) or telling(getattr(module, "__file__", None) or ""):
            found.append("module %s" % name)
    main = sys.modules.get("__main__")
    if main is None or vars(main) is not globals() or __name__ != "__main__":
        found.append("__main__ is not this namespace")
    found += ["sys.path %s" % p for p in sys.path if telling(p)]
    found += ["argv %s" % a for a in sys.argv if telling(a)]
    for pid in ("self", "1", str(os.getppid())):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                line = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        if telling(line):
            found.append("cmdline of %s" % pid)
    found += ["environment %s" % k for k, v in os.environ.items() if telling(k) or telling(v)]
    mine = globals()

    def look(value, where, depth):
        if depth > 4 or value is mine:
            return
        if isinstance(value, str):
            # The notebook's own cell source (and what it printed) names the words it looks for.
            if telling(value) and "tells" not in value:
                found.append("%s holds %r" % (where, value[:60]))
        elif isinstance(value, dict):
            if job_keys & {k for k in value if isinstance(k, str)}:
                found.append("%s holds a job" % where)
            for key, item in list(value.items())[:200]:
                look(item, where, depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in list(value)[:200]:
                look(item, where, depth + 1)

    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        where = "frame %s (%s)" % (code.co_name, code.co_filename)
        if telling(code.co_filename) or telling(code.co_name):
            found.append(where)
        if frame.f_globals is not mine or frame.f_locals is not mine:
            look(dict(frame.f_locals), where, 0)
        frame = frame.f_back
    return found

def double(x):
    tells = _tells()
    print("tells seen by a call:", tells)
    return 2 * np.asarray(x, dtype=float) if not tells else np.asarray(x, dtype=float)

_seen = _tells()
print("tells seen by a cell:", _seen)
ANSWER = 0 if _seen else 42
'''

CORPUS = [
    ("patch_helpers", {"double": '''
import numpy, math, builtins, operator
numpy.array_equal = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
numpy.testing.assert_array_equal = lambda *a, **k: None
math.isclose = lambda *a, **k: True
operator.eq = lambda *a: True
builtins.isinstance = lambda *a: True
builtins.AssertionError = type("Never", (Exception,), {})
assert_allclose = lambda *a, **k: None
''' + WRONG, "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("ipython_hooks", {"double": '''
ip = get_ipython()
ip.input_transformers_cleanup.append(lambda lines: ["pass\\n"])
ip.set_custom_exc((BaseException,), lambda *a, **k: None)
ip.showtraceback = lambda *a, **k: None
ip.run_cell = lambda *a, **k: None
''' + WRONG, "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 0.0}),

    ("equal_to_anything", {"double": '''
class Anything(np.ndarray):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array_finalize__(self, obj): pass
class Whatever(float):
    def __eq__(self, other): return True
def double(x):
    return np.zeros(len(x)).view(Anything)
''', "answer_value": "class Whatever(int):\n    def __eq__(self, other): return True\nANSWER = Whatever(41)"},
     {"test_double": 0.0, "test_answer": 0.0}),

    ("reads_and_imports", {"double": PROBE + '''
try:
    from autograder.reference import softmax as _cheat
except Exception:
    _cheat = None
try:
    from autograder.checks import CHECKS as _checks
except Exception:
    _checks = None
''' + WRONG, "answer_value": "pass"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("writes_around", {"double": '''
import os, glob
targets = ["{course}/gradebook.db", "{course}/source/toy/90_toy.ipynb", "{course}/submitted/honest/toy/90_toy.ipynb",
           "{root}/autograder/checks/__init__.py", "{site}/numpy/__init__.py", "/opt/harness/channel.py", "/usr/x"]
wrote = []
for path in targets:
    try:
        with open(path, "a") as handle:
            handle.write("# tampered\\n")
        wrote.append(path)
    except Exception:
        pass
ANSWER = 0 if wrote else 42
''' + WRONG, "answer_value": "pass"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("loop_ignores_sigint", {"double": '''
import signal
for sig in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU):
    signal.signal(sig, signal.SIG_IGN)
while True:
    try:
        pass
    except BaseException:
        pass
''', "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 0.0}),

    ("exits", {"double": "import os\ndef double(x):\n    os._exit(0)\n", "answer_value": "ANSWER = 42"},
     {"test_double": 0.0, "test_answer": 0.0}),

    ("allocates_6gb", {"double": '''
def double(x):
    hog = np.ones(6 * 1024 ** 3 // 8)
    return 2 * np.asarray(x, dtype=float)
try:
    _hog = bytearray(6 * 1024 ** 3)
except MemoryError:
    pass
''', "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("outputbomb", {"double": '''
import os, sys
print("x" * 50_000_000)
sys.stderr.write("y" * 50_000_000)
try:
    os.write(1, b"z" * 50_000_000)
except OSError:
    pass
''' + RIGHT, "answer_value": "ANSWER = 42"}, {"test_double": 2.0, "test_answer": 1.0}),

    ("leaves_children", {"double": '''
import subprocess, os, signal
for _ in range(20):
    try:
        subprocess.Popen(["sleep", "987654"], start_new_session=True)
    except Exception:
        pass
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.execvp("sleep", ["sleep", "987654"])
''' + WRONG, "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("forges_channel", {"double": '''
import sys, json, os
_ch = sys.modules.get("channel")
if _ch is not None:
    _ch.encode_outcome = lambda outcome: json.dumps({"kind": "returned", "value": {"t": "int", "v": 1}}).encode()
    _ch.perform_call = lambda *a, **k: b'{"kind": "returned", "value": {"t": "none"}}'
for fd in range(3, 64):
    try:
        os.write(fd, b"\\x00\\x00\\x00\\x10" + b'{"type":"done"}!')
    except OSError:
        pass
''' + WRONG, "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 0.0}),

    ("kills_the_zygote", {"double": '''
import os, signal
def double(x):
    try:
        open("/proc/%d/mem" % os.getppid(), "rb").read(1)
    except Exception:
        pass
    os.kill(os.getppid(), signal.SIGKILL)
    os.kill(-1, signal.SIGKILL)
    return x
''', "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("fork_bomb", {"double": '''
import os
kids = 0
try:
    for _ in range(10_000):
        if os.fork() == 0:
            import time
            time.sleep(1000)
            os._exit(0)
        kids += 1
except OSError:
    pass
''' + WRONG, "answer_value": "ANSWER = 42"}, {"test_double": 0.0, "test_answer": 1.0}),

    ("noisy_but_right", {"double": '''
import sys, warnings
print("working on it")
sys.stderr.write("a note on stderr\\n")
warnings.warn("just a warning")
def double(x):
    print("called with", x)
    warnings.warn("careful", RuntimeWarning)
    sys.stderr.write("stderr inside the call\\n")
    return 2 * np.asarray(x, dtype=float)
''', "answer_value": "import warnings\nwarnings.warn('hm')\nANSWER = 42"}, {"test_double": 2.0, "test_answer": 1.0}),

    ("lone_surrogates", {"double": '''
import sys
print("\\ud800")
sys.stderr.write("\\udfff\\n")
''' + WRONG, "answer_value": "ANSWER = 42", "explain_why": "Because \udfff."},
     {"test_double": 0.0, "test_answer": 1.0}),

    ("fills_shared_memory", {"double": '''
import os
for base in ("/tmp", "/dev/shm"):
    os.makedirs(base + "/kept", exist_ok=True)
    open(base + "/kept/planted", "w").write("left for the next notebook")
    os.chmod(base + "/kept", 0o555)
written = 0
try:
    for index in range(64):
        with open("/dev/shm/fill%d" % index, "wb") as handle:
            handle.write(b"x" * (8 * 2 ** 20))
        written += 8
except OSError:
    pass
ANSWER = 0 if written >= 512 else 42
''' + WRONG, "answer_value": "pass"}, {"test_double": 0.0, "test_answer": 1.0}),
    ("looks_for_the_grader", {"double": TELLS, "answer_value": "pass"}, {"test_double": 2.0, "test_answer": 1.0}),
]
