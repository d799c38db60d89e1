"""The program that runs inside the sandbox: a zygote that forks one fresh notebook per job.

The coordinator copies this file as ``ipykernel_launcher.py`` next to a copy of
``autograder/channel.py`` (the codec, under a private name) into a read-only directory of the
sandbox and starts it there as ``python -S -m ipykernel_launcher -f /tmp/kernel-<uuid>.json``: the
command line of a notebook kernel. It imports only the standard library, NumPy and (when present)
IPython: never ``autograder``.

Three kinds of process, from the most trusted to the least:

* the **zygote** (PID 1 of the sandbox, not dumpable): talks to the coordinator over a Unix socket
  (fd 0) in small JSON messages. It never sees a notebook's cells, calls or results: for each
  notebook it receives two pipe ends by ``SCM_RIGHTS`` and forks a watcher with them; when the
  coordinator says ``end`` it kills the notebook and reports whether anything survived. Its memory
  (copied into every notebook by ``fork``) therefore holds nothing of any job, past or present.
* the **watcher**, one per notebook, outside the notebook's namespaces: it unshares a new PID, IPC
  and mount namespace, mounts a fresh size-capped ``/tmp`` and ``/dev/shm``, forks the notebook
  process and waits for it. Nothing in the notebook can see or signal it.
* the **notebook process**, PID 1 of its own PID namespace (when it ends, the kernel kills every
  process it left). It drops every capability, installs a seccomp filter (no new user namespaces, no
  keyrings, no SysV shared memory or message queues, no memfd), applies the resource limits and then
  serves one unit at a time: it reads a unit (run this cell, or perform this call) from its input
  pipe and writes one reply frame to its output pipe. It holds no plan, no case names, no token and
  no fd of the zygote: the coordinator sends the next unit only after the previous reply, in an order
  that says nothing about which test cell a call serves (see :mod:`autograder.grading.sandbox`).

Frames (both pipes and the socket): a 4-byte big-endian length, then UTF-8 JSON.
"""

import ctypes
import functools
import json
import os
import signal
import socket
import struct
import sys

HEADER = struct.Struct(">I")
MAX_FRAME = 96 * 1024 * 1024

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_NOSUID, MS_NODEV = 2, 4

_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _prctl(option, value, arg3=0):
    try:
        return _libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                             ctypes.c_ulong(0))
    except Exception:  # noqa: BLE001 - best effort outside Linux
        return -1


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, "%s: %s" % (what, os.strerror(error)))


def _read_exact(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_frame(fd):
    head = _read_exact(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    body = _read_exact(fd, size)
    return None if body is None else json.loads(body.decode("utf-8"))


def frame_bytes(message):
    body = json.dumps(message, allow_nan=False).encode("utf-8")
    return HEADER.pack(len(body)) + body


# --------------------------------------------------------------------------- kernel plumbing


def _seccomp_filter():
    """A seccomp program (as bytes) for this machine, or None when the architecture is unknown.

    Denied with EPERM: ``unshare``; ``clone`` with ``CLONE_NEWUSER``; ``setns``; the keyring calls
    (``add_key``, ``request_key``, ``keyctl``: the user keyring would outlive the notebook); SysV shared
    memory and message queues (``shmget``, ``msgget``: memory outside every rlimit) and ``memfd_create``.
    ``clone3`` gets ENOSYS (its flags are out of a filter's reach; the C library then uses ``clone``).
    """
    import platform
    machine = platform.machine()
    if machine == "x86_64":
        arch = 0xC000003E
        numbers = {"unshare": 272, "clone": 56, "clone3": 435, "setns": 308, "add_key": 248,
                   "request_key": 249, "keyctl": 250, "shmget": 29, "msgget": 68, "memfd_create": 319}
    elif machine == "aarch64":
        arch = 0xC00000B7
        numbers = {"unshare": 97, "clone": 220, "clone3": 435, "setns": 268, "add_key": 217,
                   "request_key": 218, "keyctl": 219, "shmget": 194, "msgget": 186, "memfd_create": 279}
    else:
        return None
    # struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]
    LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
    ALLOW, KILL, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
    EPERM, ENOSYS = 1, 38
    JGE = 0x35
    # The right architecture, and no x32 system call numbers (they would bypass the numbers below).
    program = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0),
               (JGE, 0, 1, 0x40000000), (RET, 0, 0, ERRNO | ENOSYS)]
    denied = ["unshare", "setns", "add_key", "request_key", "keyctl", "shmget", "msgget", "memfd_create"]
    for name in denied:
        program += [(JEQ, 0, 1, numbers[name]), (RET, 0, 0, ERRNO | EPERM)]
    program += [(JEQ, 0, 1, numbers["clone3"]), (RET, 0, 0, ERRNO | ENOSYS)]
    # clone: flags are the first argument (low 32 bits at offset 16 on little-endian machines).
    program += [(JEQ, 0, 3, numbers["clone"]), (LD, 0, 0, 16), (JSET, 0, 1, CLONE_NEWUSER),
                (RET, 0, 0, ERRNO | EPERM), (RET, 0, 0, ALLOW)]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)


def _install_seccomp():
    program = _seccomp_filter()
    if program is None:
        return False

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    prog = Program(len(program) // 8, program)
    return _libc().prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                         ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0


def _drop_capabilities():
    """No capability survives into student code (the uid is not 0, so exec gives none back)."""
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    _check(_libc().capset(ctypes.byref(header), data), "capset")


def _fresh_namespaces(tmp_bytes):
    """New PID, IPC and mount namespaces, with an empty size-capped ``/tmp`` and ``/dev/shm``."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    options = ("size=%d,mode=1777" % tmp_bytes).encode()
    for target in (b"/tmp", b"/dev/shm"):
        _check(libc.mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount tmpfs")


# --------------------------------------------------------------------------- the notebook process


class OutStream:
    """A text stream that keeps the first ``limit`` characters and counts the rest.

    Named (and placed) like the kernel's own stream class: ``type(sys.stdout)`` is the first thing
    a curious notebook prints.
    """

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.dropped = 0

    def write(self, text):
        if not isinstance(text, str):
            text = str(text)
        room = self.limit - self.size
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.size += len(piece)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        raise OSError("this stream has no file descriptor")

    def text(self):
        value = "".join(self.parts)
        if self.dropped:
            value += "\n[... %d more characters not shown]\n" % self.dropped
        return value


class _CellTimeout(BaseException):
    pass


def _make_shell():
    """An IPython shell for the cells (magics, display of the last expression), or None."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
    except Exception:  # noqa: BLE001 - plain exec is the fallback
        return None
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.InteractiveShell.xmode = "Plain"
    try:
        shell = InteractiveShell.instance(config=config)
    except Exception:  # noqa: BLE001
        return None
    return shell


def _warm(shell):
    """Run IPython's cell path once here, so that no notebook pays for its first use.

    A shell's first cell costs a notebook about 10 ms more than its second (the interpreter
    specialising IPython's code, lazily made objects, the display formatters' first value); done
    once in the zygote, every fork inherits the result. The cells are statements that bind nothing,
    in no history: the user namespace is untouched, and the one attribute they set is put back.
    """
    if shell is None:
        return
    last_line = getattr(shell, "_last_input_line", None)
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout = sys.stderr = OutStream(0)
        for _ in range(2):
            shell.run_cell("pass", store_history=False)
            shell.run_cell("None", store_history=False)
            shell.display_formatter.format(0)
    except Exception:  # noqa: BLE001 - a shell that cannot run this gets no head start, nothing else
        pass
    finally:
        sys.stdout, sys.stderr = saved
        shell._last_input_line = last_line


def _exec_plain(source, namespace, cell_name):
    import ast
    tree = ast.parse(source, filename=cell_name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, cell_name, "exec"), namespace)
    if last is not None:
        value = eval(compile(last, cell_name, "eval"), namespace)
        if value is not None:
            print(repr(value))


#: Figures kept per cell, and the largest PNG kept (bytes); the feedback page caps them again.
FIGURES_PER_CELL = 8
FIGURE_BYTES = 2 * 1024 * 1024


def _take_figures(seconds):
    """The cell's open matplotlib figures as base64 PNGs (then closed), as a kernel's inline backend shows them.

    Only when the student's code imported pyplot; bounded in number, size and time (a figure whose
    drawing fails or takes too long is skipped), so plotting can cost only the student's own notebook.
    """
    try:
        return _figures_as_png(seconds)
    except BaseException:  # noqa: BLE001 - student code may have broken anything used here
        signal.setitimer(signal.ITIMER_REAL, 0)
        return []


def _figures_as_png(seconds):
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    import base64
    import io

    figures = []

    def on_alarm(signum, frame):
        raise _CellTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(1.0, float(seconds)))
    try:
        for number in list(pyplot.get_fignums())[:FIGURES_PER_CELL]:
            try:
                figure = pyplot.figure(number)
                buffer = io.BytesIO()
                figure.savefig(buffer, format="png", dpi=72, bbox_inches="tight")
                data = buffer.getvalue()
                if len(data) <= FIGURE_BYTES:
                    figures.append(base64.b64encode(data).decode("ascii"))
            except _CellTimeout:
                break
            except BaseException:  # noqa: BLE001 - a broken figure is the student's, not the grader's
                continue
        pyplot.close("all")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return figures


def _missing_module(error):
    """The top-level name of the module a ``ModuleNotFoundError`` could not find, or "" (a fact the
    grader reports by name: the sandbox has only the standard library, NumPy and the course package)."""
    if not isinstance(error, ModuleNotFoundError):
        return ""
    name = getattr(error, "name", None)
    if not isinstance(name, str):
        return ""
    top = str.partition(str(name), ".")[0]
    return top if 0 < len(top) <= 64 and top.isidentifier() and top.isascii() else ""


def _format_error(error):
    import traceback
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    text = "".join(lines)
    return text[-6000:]


#: Every student function is called from a frame of this code: it looks like a notebook cell that
#: calls the function, and holds nothing but the function and its own arguments.
_CALL_SOURCE = "def call(function, *args, **kwargs):\n    return function(*args, **kwargs)\n"


def _trampoline():
    scope = {"__name__": "__main__"}
    exec(compile(_CALL_SOURCE, "<ipython-input-1-%s>" % format(abs(hash(_CALL_SOURCE)), "x")[:12], "exec"), scope)
    return scope["call"]


def _apply_limits(limits, config):
    """The notebook's resource limits, working directory and fd-level output sink."""
    import resource

    memory = int(limits["memory_mb"]) * 1024 * 1024
    for name, value in (("RLIMIT_AS", memory), ("RLIMIT_NPROC", int(limits["processes"])),
                        ("RLIMIT_FSIZE", int(limits["file_bytes"])), ("RLIMIT_CORE", 0),
                        ("RLIMIT_NOFILE", 256)):
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError):
            pass
    cpu = int(limits["cpu_seconds"])
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    except (ValueError, OSError):
        pass
    workdir = config["workdir"]
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    # fd 1/2 (output that bypasses sys.stdout: C extensions, os.write, child processes) go to a capped
    # file that nobody reads back; the cap is RLIMIT_FSIZE.
    sink_fd = os.open(os.path.join(config["scratch"], ".output"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(sink_fd, 1)
    os.dup2(sink_fd, 2)
    os.close(sink_fd)
    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except (ValueError, OSError):
        pass


def _serve(units_in, replies_out, limits, shell, namespace, wire):
    """Return the notebook's work: a function of no arguments that serves units until told to stop.

    What it closes over is all a student can find with ``gc``: two pipe ends, the limits, the shell
    and the codec. The next unit is not in this process until it is read.
    """
    width = int(limits["stream_chars"])
    cell_seconds = float(limits["cell_seconds"])
    call_seconds = float(limits["call_seconds"])
    call = _trampoline()
    decode, perform = wire.Call.from_json, wire.perform_call
    import builtins
    pristine = dict(vars(builtins))
    encode = json.JSONEncoder(allow_nan=False).encode
    pack = HEADER.pack

    def reply(message):
        body = encode(message).encode("utf-8")
        _write_all(replies_out, pack(len(body)) + body)

    def on_alarm(signum, frame):
        raise _CellTimeout()

    def run_cell(source, name):
        out, err = OutStream(width), OutStream(width)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        status, error, missing = "ok", None, ""
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, cell_seconds)
        try:
            if shell is not None:
                result = shell.run_cell(source, store_history=False)
                failure = result.error_before_exec or result.error_in_exec
                if failure is not None:
                    status, error = "error", "%s: %s" % (type(failure).__name__, failure)
                    missing = _missing_module(failure)
            else:
                _exec_plain(source, namespace, name)
        except _CellTimeout:
            status, error = "timeout", "the cell did not finish within %g s" % cell_seconds
        except BaseException as failure:  # noqa: BLE001 - student code may raise anything
            status, error, missing = "error", _format_error(failure), _missing_module(failure)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
        try:
            text_out, text_err = out.text(), err.text()
        except BaseException:  # noqa: BLE001
            text_out, text_err = "", ""
        vars(builtins).update(pristine)
        figures = _take_figures(cell_seconds)
        vars(builtins).update(pristine)
        reply({"status": status, "error": (error or "")[:6000], "stdout": text_out, "stderr": text_err,
               "figures": figures, "missing_module": missing})

    def run_call(raw):
        try:
            request = decode(raw)
            raw = None
            function = namespace.get(request.target, None)
            if not request.read_only and callable(function):
                # The student's function sees a cell-like caller that holds only it and its arguments.
                scope = {request.target: functools.partial(call, function)}
            else:
                scope = namespace
            function = None
            payload = perform(request, scope, timeout=call_seconds).decode("utf-8")
        except BaseException as failure:  # noqa: BLE001
            payload = json.dumps({"kind": "unreadable", "reason": "the call failed (%s)" % type(failure).__name__})
        vars(builtins).update(pristine)
        reply({"data": payload})

    def work():
        while True:
            # Student code may rebind builtins (isinstance, len...): put the originals back before
            # reading, so such tricks break only the student's own code.
            vars(builtins).update(pristine)
            unit = read_frame(units_in)
            if not isinstance(unit, dict) or unit.get("k") not in ("exec", "call"):
                return
            if unit["k"] == "exec":
                source, name = unit["source"], unit["name"]
                unit = None
                run_cell(source, name)
            else:
                raw = unit["call"]
                unit = None
                run_call(raw)
            source = name = raw = None

    return work


# --------------------------------------------------------------------------- the zygote


def _load_codec(path):
    """The codec, loaded under a private name that does not stay in ``sys.modules``."""
    import builtins
    import importlib.util

    name = "_wire"
    spec = importlib.util.spec_from_file_location(name, path)
    wire = importlib.util.module_from_spec(spec)
    sys.modules[name] = wire  # dataclasses look their module up while the classes are made
    try:
        spec.loader.exec_module(wire)
    finally:
        del sys.modules[name]
    # The codec keeps its own references to the builtins it uses, so that a student who rebinds
    # builtins.isinstance (say) breaks their own code, not the reporting of their answers.
    for attribute in dir(builtins):
        if not attribute.startswith("_") and attribute not in vars(wire):
            setattr(wire, attribute, getattr(builtins, attribute))
    wire._Capture.__name__ = wire._Capture.__qualname__ = "OutStream"
    wire._Capture.__module__ = "ipykernel.iostream"
    return wire


def _user_namespace(shell):
    """The notebook's namespace: IPython's user namespace, or a fresh ``__main__`` module's."""
    if shell is not None:
        return shell.user_ns
    import builtins
    import types
    module = types.ModuleType("__main__")
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    return vars(module)


def _send(sock, message):
    sock.sendall(frame_bytes(message))


def _receive(sock):
    """One message from the coordinator and the fds that came with it; (None, []) at EOF."""
    data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    if not data:
        return None, fds
    (size,) = HEADER.unpack_from(data)
    return json.loads(data[HEADER.size:HEADER.size + size].decode("utf-8")), fds


def _session_members(session):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z" and int(fields[3]) == session:
            found.append(int(entry))
    return found


def _others():
    """Live processes of this PID namespace other than the zygote."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open("/proc/%s/stat" % entry, "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != b"Z":
                found.append(int(entry))
    return found


def _watch(units_in, replies_out, report_w, job, config, shell, namespace, wire):
    """The watcher (a fresh child of the zygote): set the notebook up and return its work in the
    notebook process; in the watcher itself, wait for the notebook and exit with its status."""
    limits = job["limits"]
    isolated = bool(config.get("isolated"))
    if isolated:
        _fresh_namespaces(int(limits["tmp_bytes"]))
    pid = os.fork()
    if pid == 0:
        os.close(report_w)
        if config.get("privileged"):
            # A uid nobody else uses: its own process count (RLIMIT_NPROC) and keyring, and nothing
            # of the zygote's (which stays root in its own PID namespace) is within its reach.
            uid = int(job["uid"])
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        if isolated:
            _drop_capabilities()
        else:
            os.setsid()
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        if isolated and not _install_seccomp():
            os._exit(70)
        _apply_limits(limits, config)
        _set_environment(job.get("environ"))
        # Returning unwinds the zygote's frames (and their locals) off the notebook's stack.
        return _serve(units_in, replies_out, limits, shell, namespace, wire)
    os.close(units_in)
    os.close(replies_out)
    _write_all(report_w, b"%d\n" % pid)
    os.close(report_w)
    status = 0
    while True:
        try:
            _, raw = os.waitpid(pid, 0)
            status = os.waitstatus_to_exitcode(raw)
            break
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    code = 100 + (-status if status < 0 else 0) if status < 0 else min(status, 99)
    os._exit(code)


#: The variables a job may set in its notebook's environment: the hub's sign-in, which a notebook on a
#: hub has too (so a notebook whose numbers vary shows the graded student's, as on their hub).
JOB_ENVIRONMENT = ("JUPYTERHUB_USER",)


def _set_environment(environ) -> None:
    if not isinstance(environ, dict):
        return
    for key, value in environ.items():
        if key in JOB_ENVIRONMENT and isinstance(value, str) and value.isprintable() and len(value) <= 100:
            os.environ[key] = value


def _poll(watcher):
    """``os.waitpid(watcher, WNOHANG)``; a watcher already reaped counts as ended with status 0."""
    try:
        return os.waitpid(watcher, os.WNOHANG)
    except ChildProcessError:
        return watcher, 0


def _kill(pid) -> None:
    """SIGKILL ``pid``; one that is gone already (or not ours to kill) is left alone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _end(watcher, notebook, isolated, grace=0.0):
    """Kill the notebook (and all it left behind) and reap its watcher; return (status, clean).

    With ``grace`` the notebook process first gets that many seconds to exit by itself. One that has
    not exited by then is killed here, and its status is None: a SIGKILL it got from us says nothing
    about the notebook (read as its own, it would be taken for running out of memory).
    """
    import time
    done, raw = 0, 0
    stop = time.monotonic() + grace
    while time.monotonic() < stop:
        done, raw = _poll(watcher)
        if done:
            break
        time.sleep(0.002)
    killed_after_grace = grace > 0 and not done
    for _ in range(2000):
        if done:
            break
        if notebook:
            _kill(notebook)  # PID 1 of its namespace: everything in it dies
            if not isolated:
                for pid in _session_members(notebook):
                    _kill(pid)
        done, raw = _poll(watcher)
        if done:
            break
        time.sleep(0.005)
    else:
        return None, False
    if not isolated and notebook:
        # Without a PID namespace the notebook's leftovers do not die with it: end its session.
        for pid in _session_members(notebook):
            _kill(pid)
    code = os.waitstatus_to_exitcode(raw) if done == watcher and raw else 0
    status = None if killed_after_grace else -(code - 100) if code >= 100 else code
    # Reap everything else that ended (orphans reparented to the zygote, PID 1).
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    if isolated:
        left = _others()
        for _ in range(200):
            if not left:
                break
            for pid in left:
                _kill(pid)
            time.sleep(0.005)
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass
            left = _others()
        clean = not left
    else:
        clean = not _session_members(notebook)
    return status, clean


#: Student-package modules the notebooks' cells import (the open checks' number reader, the numbers
#: cell): imported once here, so each forked notebook inherits them instead of importing them again.
#: Each notebook is its own copy-on-write process, so nothing one changes in them reaches another.
#: (Not ``course.grading_environment``: a module named for grading, loaded before any cell imports
#: it, would tell a notebook it is graded.)
PRELOAD = ("course.answers", "course.variants")


def _preload() -> None:
    import importlib
    for name in PRELOAD:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a course without it: the notebook imports it (or fails) itself
            continue
        families = getattr(module, "families", None)
        if callable(families):
            try:
                families()  # the family modules too
            except Exception:  # noqa: BLE001 - a broken family fails in its own notebook, not here
                pass


def main():
    """Serve the coordinator until its socket closes; in a notebook process, return its work."""
    globals()["__doc__"] = None  # the launcher's globals are visible from the bottom of every stack
    sock = socket.socket(fileno=os.dup(0))
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    sock.set_inheritable(False)
    config, _ = _receive(sock)
    if not isinstance(config, dict):
        return None

    # ``-m`` put this directory first on sys.path: the notebook sees the standard library, then the
    # course package and site-packages, as a kernel would.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    for path in config["sys_path"]:
        if path not in sys.path:
            sys.path.append(path)
    if not config.get("isolated"):
        # Without bubblewrap, die with the coordinator's worker (inside, bwrap does this for us).
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # Not dumpable: a notebook process (same uid) can neither ptrace us nor read our memory.
    _prctl(PR_SET_DUMPABLE, 0)

    import site  # noqa: F401 - a kernel has it loaded; with -S importing it changes nothing else
    import numpy  # noqa: F401 - imported once here, inherited by every notebook
    _preload()
    shell = _make_shell() if config.get("ipython", True) else None
    _warm(shell)
    namespace = _user_namespace(shell)
    wire = _load_codec(config["codec"])
    isolated = bool(config.get("isolated"))
    # Everything made so far (NumPy, IPython, the course modules) goes into the collector's permanent
    # generation: a notebook's collections then never walk, and so never write to, the objects it
    # inherited, whose pages stay shared with the zygote instead of being copied into each notebook.
    import gc
    gc.collect()
    gc.freeze()
    _send(sock, {"type": "ready", "ipython": shell is not None, "uid": os.getuid(), "pid": os.getpid(),
                 "seccomp": _seccomp_filter() is not None})

    while True:
        try:
            message, fds = _receive(sock)
        except (OSError, ValueError):
            message, fds = None, []
        if not isinstance(message, dict) or message.get("op") != "start" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            os._exit(0 if message is None else 3)  # the coordinator is gone, or spoke nonsense
        units_in, replies_out = fds
        report_r, report_w = os.pipe()
        watcher = os.fork()
        if watcher == 0:
            try:
                sock.close()
                os.close(report_r)
                return _watch(units_in, replies_out, report_w, message, config, shell, namespace, wire)
            except BaseException:  # noqa: BLE001 - a notebook that cannot start just ends
                os._exit(71)
        os.close(units_in)
        os.close(replies_out)
        os.close(report_w)
        line = _read_exact_line(report_r)
        os.close(report_r)
        notebook = int(line) if line.isdigit() else 0
        _send(sock, {"type": "started", "ok": bool(notebook)})
        try:
            request, extra = _receive(sock)
        except (OSError, ValueError):
            request, extra = None, []
        for fd in extra:
            os.close(fd)
        grace = float(request.get("grace", 0.0)) if isinstance(request, dict) else 0.0
        status, clean = _end(watcher, notebook, isolated, min(max(grace, 0.0), 10.0))
        if not isinstance(request, dict) or request.get("op") != "end":
            os._exit(0 if request is None else 3)
        _send(sock, {"type": "ended", "status": status, "clean": bool(clean)})


def _read_exact_line(fd):
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 32)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace").strip()


if __name__ == "__main__":
    _work = main()
    if _work is not None:
        try:
            _work()
        finally:
            os._exit(0)
