"""The program that runs inside the sandbox: a zygote that forks one child per notebook.

The coordinator copies this file as ``ipykernel_launcher.py`` next to a copy of
``autograder/channel.py`` (the codec, under a private name) into a read-only directory of the
sandbox and starts it there as ``python -S -m ipykernel_launcher -f /tmp/kernel-<uuid>.json``: the
command line of a notebook kernel. The configuration arrives as the first frame on fd 0. It imports
only the standard library, NumPy and (when present) IPython: never ``autograder``.

Protocol (both directions): frames of a 4-byte big-endian length followed by UTF-8 JSON, on the
file descriptors the sandbox received as 0 (configuration, then jobs in) and 1 (frames out). They
are moved to private numbers at start-up; fd 0/1/2 then point at ``/dev/null`` or a capped file,
so nothing a student prints can ever be read as a frame.

For every job the zygote

1. forks a child that runs the job's steps (``exec`` a cell, or perform a group's ``calls``) and
   writes one frame per step, every frame carrying the job's random token;
2. relays the child's complete frames, enforcing the wall-clock deadline and the output budget;
3. when the child is gone (or killed), kills every other process of the sandbox's PID namespace,
   wipes the writable directories, and writes a ``finished`` frame.

Student code must not be able to tell a graded run from its own kernel, so the child leaves no
trace of the job where a notebook cheaply looks: the codec is not in ``sys.modules``, the zygote's
frames are gone from the child's stack (``main`` returns the child's work to the module level), the
job's remaining steps and token live only in closures of functions that are not running, and every
student function is called through a cell-like trampoline whose frame holds only the function and
its own arguments.

The zygote is trusted only to keep notebooks apart; the judging happens outside the sandbox.
"""

import ctypes
import functools
import json
import os
import select
import signal
import struct
import sys
import time

HEADER = struct.Struct(">I")
MAX_FRAME = 96 * 1024 * 1024

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38


def _prctl(option, value):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort outside Linux
        return -1


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


# --------------------------------------------------------------------------- the child (student code)


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


def _job_feed(job, out_fd):
    """Split ``job`` into ``(take, reply)``, so that no running frame holds the job itself.

    ``take()`` returns the next unit of work (``("exec", (source, cell name))``, ``("call", raw call)``
    or ``(None, None)``); ``reply(message)`` sends its result addressed to that unit. The remaining
    units and the token are cells of these two closures: this function has returned before any
    student code runs, so they are in no frame's locals.
    """
    import builtins

    token = job["token"]
    pending = []
    for number, step in enumerate(job["steps"]):
        if step["kind"] == "exec":
            pending.append(({"type": "cell", "step": number, "id": step["id"]},
                            "exec", (step["source"], "<cell %s>" % step["id"])))
        elif step["kind"] == "calls":
            for case in step["cases"]:
                for index, raw in enumerate(case["calls"]):
                    pending.append(({"type": "outcome", "step": number, "case": case["name"], "index": index},
                                    "call", raw))
    pending.reverse()
    address = {}
    pristine = dict(vars(builtins))
    encode = json.JSONEncoder(allow_nan=False).encode
    pack = HEADER.pack

    def take():
        # Student code may rebind builtins (isinstance, len...): put the originals back before the
        # child reads or encodes anything, so such tricks break only the student's own code.
        vars(builtins).update(pristine)
        address.clear()
        if not pending:
            address.update(type="done")
            return None, None
        where, kind, work = pending.pop()
        address.update(where)
        return kind, work

    def reply(message):
        vars(builtins).update(pristine)
        message.update(address)
        message["token"] = token
        body = encode(message).encode("utf-8")
        _write_all(out_fd, pack(len(body)) + body)

    return take, reply


def _child_limits(limits, config):
    """Apply the child's resource limits, working directory and output sink (the zygote stays
    unlimited so that it can always clean up)."""
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


def _prepare_child(job, out_fd, shell, namespace, wire, config):
    """Set the child up and return its work, a function of no arguments that runs the job's steps."""
    limits = job["limits"]
    _child_limits(limits, config)
    take, reply = _job_feed(job, out_fd)
    width = int(limits["stream_chars"])
    cell_seconds = float(limits["cell_seconds"])
    call_seconds = float(limits["call_seconds"])
    call = _trampoline()
    decode, perform = wire.Call.from_json, wire.perform_call

    def on_alarm(signum, frame):
        raise _CellTimeout()

    def run_cell(source, name):
        out, err = OutStream(width), OutStream(width)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        status, error = "ok", None
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, cell_seconds)
        try:
            if shell is not None:
                result = shell.run_cell(source, store_history=False)
                failure = result.error_before_exec or result.error_in_exec
                if failure is not None:
                    status, error = "error", "%s: %s" % (type(failure).__name__, failure)
            else:
                _exec_plain(source, namespace, name)
        except _CellTimeout:
            status, error = "timeout", "the cell did not finish within %g s" % cell_seconds
        except BaseException as failure:  # noqa: BLE001 - student code may raise anything
            status, error = "error", _format_error(failure)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
        try:
            text_out, text_err = out.text(), err.text()
        except BaseException:  # noqa: BLE001
            text_out, text_err = "", ""
        figures = _take_figures(cell_seconds)
        reply({"status": status, "error": (error or "")[:6000], "stdout": text_out, "stderr": text_err,
               "figures": figures})

    def run_call(raw):
        try:
            request = decode(raw)
            raw = None
            function = namespace.get(request.target, None)
            if not request.read_only and callable(function):
                # The student's function sees a cell-like caller that holds only it and its
                # arguments, never the harness or the job.
                scope = {request.target: functools.partial(call, function)}
            else:
                scope = namespace
            function = None
            payload = perform(request, scope, timeout=call_seconds).decode("utf-8")
        except BaseException as failure:  # noqa: BLE001
            payload = json.dumps({"kind": "unreadable", "reason": "the call failed (%s)" % type(failure).__name__})
        reply({"data": payload})

    def work():
        # Each unit runs in its own frame: nothing of one cell or call stays in a frame the next sees.
        while True:
            kind, unit = take()
            if kind == "exec":
                run_cell(*unit)
            elif kind == "call":
                run_call(unit)
            else:
                reply({})
                return
            kind = unit = None

    return work


# --------------------------------------------------------------------------- the zygote


def _session_of(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[3])  # state, session id
    except (OSError, IndexError, ValueError):
        return None, None


def _kill_others(pidns, child):
    """Kill what the job left behind; True when nothing is left.

    In the sandbox's own PID namespace that is every process but ourselves and bwrap's init
    (``kill(-1)``). Without a namespace (no bubblewrap) it is the child's session, found in /proc.
    """
    me = os.getpid()
    for _ in range(200):
        if pidns:
            try:
                os.kill(-1, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        others = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in (me, 1):
                continue
            state, session = _session_of(int(entry))
            if state is None or state == b"Z":
                continue
            if pidns or session == child:
                others.append(int(entry))
                if not pidns:
                    try:
                        os.kill(int(entry), signal.SIGKILL)
                    except OSError:
                        pass
        # Reap our own dead children (the job's child); bwrap's init reaps the orphans.
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not others:
            return True
        time.sleep(0.002)
    return False


def _wipe(path):
    """Empty ``path``; True when nothing is left in it.

    A job can take the write bit off its own directories so that a plain ``rmtree`` leaves their files
    behind for the next notebook: such directories are opened up again and removed. Whatever still
    survives makes the job unclean, and the coordinator then starts a fresh sandbox.
    """
    import shutil

    def reopen(function, target, excinfo):
        try:
            os.chmod(os.path.dirname(target), 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
                shutil.rmtree(target, onerror=reopen)
            else:
                os.unlink(target)
        except (OSError, RecursionError):
            pass

    try:
        entries = os.listdir(path)
    except OSError:
        return False
    for entry in entries:
        full = os.path.join(path, entry)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, onerror=reopen)
            else:
                os.unlink(full)
        except (OSError, RecursionError):
            pass
    try:
        return not os.listdir(path)
    except OSError:
        return False


def _pump(read_fd, out_fd, buffer, received, budget):
    """Read once from the child's pipe and forward the complete frames it finishes.

    Returns None (more may come), ``"eof"``, or why relaying must stop: ``"output"`` (more than
    ``budget`` bytes in all; ``received`` is a one-item list holding the running count) or
    ``"protocol"`` (a frame header announces more than ``MAX_FRAME``).
    """
    chunk = os.read(read_fd, 1 << 20)
    if not chunk:
        return "eof"
    received[0] += len(chunk)
    if received[0] > budget:
        return "output"
    buffer += chunk
    while len(buffer) >= HEADER.size:
        (size,) = HEADER.unpack_from(buffer)
        if size > MAX_FRAME:
            return "protocol"
        if len(buffer) < HEADER.size + size:
            break
        _write_all(out_fd, bytes(buffer[:HEADER.size + size]))
        del buffer[:HEADER.size + size]
    return None


def _relay(read_fd, out_fd, pid, deadline, budget, jobs_in):
    """Forward complete frames from the child until it exits; return (reason, exit_status).

    ``jobs_in`` turning readable during a job means the coordinator is gone (it sends the next job
    only after this one's ``finished``): the reason is then ``"orphaned"``. Changing uid cleared
    bwrap's ``--die-with-parent`` for the zygote, so this is how the sandbox's PID 1 learns it must
    end (taking every process of the namespace with it).
    """
    buffer = bytearray()
    received = [0]
    pidfd = os.pidfd_open(pid)
    status = None
    reason = "exited"
    open_pipe = True
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = "timeout"
                break
            watch = [pidfd, jobs_in] + ([read_fd] if open_pipe else [])
            ready, _, _ = select.select(watch, [], [], remaining)
            if jobs_in in ready:
                reason = "orphaned"
                break
            if read_fd in ready:
                problem = _pump(read_fd, out_fd, buffer, received, budget)
                if problem == "eof":
                    open_pipe = False
                elif problem is not None:
                    reason = problem
                    break
            if pidfd in ready and (not open_pipe or read_fd not in ready):
                # The child is gone; frames still in the pipe were written before it died (under
                # the same budget).
                while open_pipe and select.select([read_fd], [], [], 0)[0]:
                    problem = _pump(read_fd, out_fd, buffer, received, budget)
                    if problem == "eof":
                        break
                    if problem is not None:
                        reason = problem
                        break
                break
    finally:
        os.close(pidfd)
    try:
        _, raw = os.waitpid(pid, os.WNOHANG)
        if raw:
            status = os.waitstatus_to_exitcode(raw)
    except ChildProcessError:
        pass
    return reason, status


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
    # What a call's sys.stdout looks like, as the cells' OutStream.
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


def main():
    """Serve jobs until fd 0 closes; in a forked child, return the child's work instead."""
    globals()["__doc__"] = None  # the launcher's globals are visible from the bottom of every stack
    jobs_in = os.dup(0)
    frames_out = os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    os.set_inheritable(jobs_in, False)
    os.set_inheritable(frames_out, False)
    config = read_frame(jobs_in)
    if not isinstance(config, dict):
        return None

    # ``-m`` put this directory first on sys.path: the notebook sees the standard library, then the
    # course package and site-packages, as a kernel would.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    for path in config["sys_path"]:
        if path not in sys.path:
            sys.path.append(path)

    # Drop to the sandbox's own user id (bwrap kept only the capabilities needed for this).
    uid, gid = config.get("uid"), config.get("gid")
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    # Not dumpable: a child with the same uid can neither ptrace us nor read/write our memory.
    _prctl(PR_SET_DUMPABLE, 0)

    import site  # noqa: F401 - a kernel has it loaded; with -S importing it changes nothing else
    import numpy  # noqa: F401 - imported once here, inherited by every child
    shell = _make_shell() if config.get("ipython", True) else None
    namespace = _user_namespace(shell)
    wire = _load_codec(config["codec"])

    writable = config["writable"]
    _write_all(frames_out, frame_bytes({"type": "ready", "ipython": shell is not None,
                                        "uid": os.getuid(), "pid": os.getpid()}))
    while True:
        job = read_frame(jobs_in)
        if job is None:
            return None
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(jobs_in)
                os.close(frames_out)
                os.close(read_fd)
                os.setsid()
                # Returning unwinds this frame (and its job, config, fds) off the child's stack.
                return _prepare_child(job, write_fd, shell, namespace, wire, config)
            except BaseException:  # noqa: BLE001 - a child that cannot start just ends
                os._exit(0)
        os.close(write_fd)
        deadline = time.monotonic() + float(job["limits"]["wall_seconds"])
        reason, status = _relay(read_fd, frames_out, pid, deadline, int(job["limits"]["frame_bytes"]), jobs_in)
        clean = _kill_others(bool(config.get("pidns")), pid)
        if reason == "orphaned":
            os._exit(1)
        os.close(read_fd)
        if status is None:
            try:
                _, raw = os.waitpid(pid, 0)
                status = os.waitstatus_to_exitcode(raw)
            except ChildProcessError:
                pass
        for path in writable:
            clean = _wipe(path) and clean
        _write_all(frames_out, frame_bytes({"type": "finished", "token": job["token"], "reason": reason,
                                            "status": status, "clean": clean}))


if __name__ == "__main__":
    _work = main()
    if _work is not None:
        try:
            _work()
        finally:
            os._exit(0)
