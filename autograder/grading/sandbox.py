"""Start and talk to the sandboxed zygote that runs student code (see :mod:`autograder.grading.harness`).

With bubblewrap the sandbox sees, read-only: ``/usr`` (and the merged-usr links), the Python
installation, the virtualenv's ``site-packages`` (with the editable finder of this project blanked),
a copy of the harness, and a copy of the student-facing ``course`` package without
``course/reference``. Nothing in it says "grading": the harness is ``/opt/kernel/ipykernel_launcher.py``
started as ``python -S -m ipykernel_launcher -f /tmp/kernel-<uuid>.json`` as the sandbox's PID 1,
site-packages sits where the Python installation keeps its own, and the configuration travels on
stdin rather than on the command line. It has its own PID, network, IPC and UTS namespaces, private size-capped
``/tmp`` and ``/dev/shm``, no network at all, and runs under its own unprivileged uid (so ``RLIMIT_NPROC`` counts
only its processes). Nothing of the course directory, the gradebook or ``autograder`` is visible.

Without bubblewrap the zygote still runs in its own session with the resource limits and a
stripped ``sys.path``, and :class:`Sandbox` warns loudly: files are then NOT hidden.
"""

from __future__ import annotations

import json
import logging
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
import warnings
from pathlib import Path

from autograder.grading.harness import HEADER, MAX_FRAME, frame_bytes

log = logging.getLogger(__name__)

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).with_name("harness.py")
CHANNEL = Path(__file__).resolve().parents[1] / "channel.py"


#: Upper bound on JSON containers and separators in one frame (a few MB of Python objects at most).
MAX_FRAME_NODES = 1_000_000


class SandboxError(RuntimeError):
    """The sandbox could not be started or stopped answering (not the student's fault alone)."""


class SandboxWarning(UserWarning):
    """Grading runs without bubblewrap: limits apply, but the course files are not hidden."""


def bubblewrap() -> str | None:
    """Path of a working ``bwrap``, or None."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if probe.returncode == 0 else None


def _site_packages() -> list[str]:
    """Directories that hold the third-party packages the student's kernel has (NumPy, IPython...)."""
    import numpy
    paths = [str(Path(numpy.__file__).resolve().parents[1])]
    purelib = sysconfig.get_paths()["purelib"]
    if purelib not in paths:
        paths.append(purelib)
    return [path for path in paths if os.path.isdir(path)]


#: Names of the harness and the codec inside the sandbox (a notebook kernel's launcher).
LAUNCHER, CODEC = "ipykernel_launcher", "_wire.py"


def _stage(root: Path) -> Path:
    """Copy the harness, the codec and the student-facing ``course`` package into ``root``."""
    harness = root / "kernel"
    harness.mkdir()
    shutil.copy2(HARNESS, harness / f"{LAUNCHER}.py")
    shutil.copy2(CHANNEL, harness / CODEC)
    course = PACKAGE_ROOT / "course"
    if course.is_dir():
        # The reference solutions (and this project's instructor code) never enter the sandbox.
        shutil.copytree(course, harness / "lib" / "course",
                        ignore=shutil.ignore_patterns("reference", "__pycache__", "*.pyc", "test_*", "tests"))
    else:
        (harness / "lib").mkdir()
    for path in harness.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    harness.chmod(0o755)
    return harness


def _editable_hooks(site_dirs: list[str]) -> list[str]:
    """Files in site-packages that would put this project on ``sys.path`` (blanked in the sandbox)."""
    hooks = []
    for site in site_dirs:
        for entry in os.listdir(site):
            if entry.startswith("__editable__") or (entry.endswith(".pth") and "module6" in entry) \
                    or entry.endswith(".egg-link"):
                hooks.append(os.path.join(site, entry))
            elif entry.endswith(".pth"):
                try:
                    text = Path(site, entry).read_text(errors="replace")
                except OSError:
                    continue
                if str(PACKAGE_ROOT) in text:
                    hooks.append(os.path.join(site, entry))
    return hooks


def _inner_sites(site_dirs: list[str]) -> list[str]:
    """Where the sandbox shows ``site_dirs``: the first over the Python installation's own
    site-packages when that directory exists (as in a plain install), the others under ``/opt``."""
    prefix = os.path.realpath(sys.base_prefix)
    own = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    inner = [own] if os.path.isdir(own) else []
    while len(inner) < len(site_dirs):
        inner.append(f"/opt/site{len(inner)}")
    return inner[:len(site_dirs)]


class Sandbox:
    """One zygote sandbox; :meth:`run` grades one notebook job at a time.

    Parameters
    ----------
    use_bwrap : bool or None
        None: use bubblewrap when it works, warn loudly otherwise. False: never (tests of the fallback).
    tmp_mb : int
        Size of each of the sandbox's private ``/tmp`` and ``/dev/shm``.
    """

    def __init__(self, *, use_bwrap: bool | None = None, tmp_mb: int = 256, ipython: bool = True):
        self._bwrap = bubblewrap() if use_bwrap in (None, True) else None
        if use_bwrap and self._bwrap is None:
            raise SandboxError("bubblewrap (bwrap) was requested but does not work here")
        if self._bwrap is None:
            message = ("bubblewrap (bwrap) is not available: student code runs with resource limits only and "
                       "CAN READ the course files. Install bubblewrap before grading real submissions.")
            warnings.warn(message, SandboxWarning, stacklevel=2)
            log.warning(message)
        self.tmp_mb = int(tmp_mb)
        self.ipython = ipython
        self._proc: subprocess.Popen | None = None
        self._root: Path | None = None
        self._stderr = None
        self.info: dict = {}

    @property
    def isolated(self) -> bool:
        return self._bwrap is not None

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self.close()
        self._root = Path(tempfile.mkdtemp(prefix="jupyter-"))
        self._root.chmod(0o755)
        harness = _stage(self._root)
        site_dirs = _site_packages()
        stdlib = sysconfig.get_paths()["stdlib"]
        platstdlib = sysconfig.get_paths()["platstdlib"]
        python = os.path.realpath(sys.executable)
        uid = gid = None
        if self._bwrap is not None:
            inner = "/opt/kernel"
            scratch, workdir = "/tmp", "/tmp/work"
            uid = gid = 200_000 + random.SystemRandom().randrange(1_000_000)
            # No path of the project exists in the sandbox: site-packages appear where the Python
            # installation keeps its own (or under a neutral name).
            inner_sites = _inner_sites(site_dirs)
            sys_path = [inner + "/lib", *inner_sites]
            command = self._bwrap_command(harness, site_dirs, inner_sites, python)
        else:
            inner = str(harness)
            scratch = str(self._root / "scratch")
            workdir = scratch + "/work"
            os.makedirs(scratch)
            sys_path = [inner + "/lib", *site_dirs]
            command = [python]
        config = {"sys_path": [p for p in dict.fromkeys(sys_path)], "codec": f"{inner}/{CODEC}",
                  "uid": uid, "gid": gid, "scratch": scratch, "workdir": workdir,
                  "writable": [scratch, "/dev/shm"] if self._bwrap else [scratch],
                  "ipython": self.ipython, "pidns": self._bwrap is not None}
        # What a notebook server runs; -S keeps the site-packages' .pth hooks out of the zygote.
        command += ["-S", "-m", LAUNCHER, "-f", f"/tmp/kernel-{uuid.uuid4()}.json"]
        env = self._environment(scratch)
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, env=env, cwd="/" if self._bwrap else inner,
                                      start_new_session=True, close_fds=True,
                                      preexec_fn=None if self._bwrap else _fallback_limits)
        try:
            self._proc.stdin.write(frame_bytes(config))
            self._proc.stdin.flush()
        except OSError:
            pass  # the zygote died at once: reported below with its diagnostics
        ready = self._read(deadline=time.monotonic() + 60)
        if ready is None or ready.get("type") != "ready":
            detail = self._diagnostics()
            self.close()
            raise SandboxError(f"the sandbox did not start: {detail}")
        self.info = ready

    def _environment(self, scratch: str) -> dict:
        # A plain, kernel-like environment: nothing says "grading" (no NBGRADER_EXECUTION, no paths).
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": scratch + "/.matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
               "IPYTHONDIR": "/opt/ipython" if self._bwrap else scratch + "/.ipython"}
        return env

    def _bwrap_command(self, harness: Path, site_dirs: list[str], inner_sites: list[str], python: str) -> list[str]:
        prefix = os.path.realpath(sys.base_prefix)
        # --as-pid-1: the zygote is the namespace's init, so /proc/1/cmdline is the kernel's command
        # line (not bwrap's, with every host path) and nothing inside can kill the zygote.
        command = [self._bwrap, "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                   "--unshare-cgroup-try", "--hostname", "localhost", "--die-with-parent", "--new-session",
                   "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                   "--ro-bind", "/usr", "/usr"]
        for link in ("bin", "lib", "lib64", "sbin"):
            target = Path("/", link)
            if target.is_symlink():
                command += ["--symlink", os.readlink(target), f"/{link}"]
            elif target.is_dir():
                command += ["--ro-bind", str(target), f"/{link}"]
        for name in ("ld.so.cache", "localtime", "nsswitch.conf"):
            command += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        made: set = {"/", "/usr", "/etc", "/opt"}

        def bind(source: str, target: str) -> list:
            # bwrap would create missing parents as root-only (0700): create them world-readable.
            parents = []
            for parent in reversed(Path(target).parents):
                if str(parent) not in made:
                    made.add(str(parent))
                    parents += ["--perms", "0755", "--dir", str(parent)]
            return parents + ["--ro-bind", source, target]

        command += ["--perms", "0755", "--dir", "/opt"]
        if not prefix.startswith("/usr/"):
            command += bind(prefix, prefix)
        if not python.startswith(prefix) and not python.startswith("/usr/"):
            command += bind(python, python)
        for site, inner in zip(site_dirs, inner_sites):
            command += bind(site, inner)
            for hook in _editable_hooks([site]):
                command += ["--ro-bind", "/dev/null", f"{inner}/{os.path.basename(hook)}"]
        command += ["--ro-bind", str(harness), "/opt/kernel", "--dir", "/opt/ipython",
                    "--proc", "/proc", "--dev", "/dev",
                    "--size", str(self.tmp_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/tmp",
                    # /dev/shm is RAM too: bwrap's /dev leaves it at half the machine's memory.
                    "--size", str(self.tmp_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/dev/shm",
                    "--remount-ro", "/", "--chdir", "/opt/kernel", "--clearenv"]
        env = self._environment("/tmp")
        for key, value in env.items():
            command += ["--setenv", key, value]
        return command + ["--", python]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        stderr, self._stderr = getattr(self, "_stderr", None), None
        if stderr is not None:
            stderr.close()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> "Sandbox":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - last resort, close() is the contract
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ frames

    def _diagnostics(self) -> str:
        if self._stderr is None:
            return "no diagnostics"
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-2000:].decode("utf-8", "replace").strip() or "no diagnostics"
        except Exception:
            return "no diagnostics"

    def _read_exact(self, size: int, deadline: float) -> bytes | None:
        import select
        fd = self._proc.stdout.fileno()
        chunks, left = [], size
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read(self, deadline: float) -> dict | None:
        head = self._read_exact(HEADER.size, deadline)
        if head is None:
            return None
        (size,) = HEADER.unpack(head)
        if size > MAX_FRAME:
            raise SandboxError("the sandbox sent an oversized frame")
        body = self._read_exact(size, deadline)
        if body is None:
            return None
        # Any process in the sandbox can write a well-formed frame; a 96 MB one made of tiny
        # containers would cost the coordinator gigabytes to parse. Honest frames carry arrays as
        # base64 strings and need few containers, so count them before parsing.
        if body.count(b"{") + body.count(b"[") + body.count(b",") > MAX_FRAME_NODES:
            raise SandboxError("the sandbox sent a frame with too many JSON nodes")
        return json.loads(body.decode("utf-8"))

    # ------------------------------------------------------------------ jobs

    def run(self, steps: list, limits: dict) -> dict:
        """Run one notebook's steps; return ``{"frames": [...], "reason": ..., "status": ...}``.

        Only frames that carry this job's token are kept. ``reason`` is ``exited`` (normal),
        ``timeout``, ``output`` (frame budget exceeded), ``protocol`` or ``sandbox`` (the zygote died).
        """
        self.start()
        token = secrets.token_hex(16)
        job = {"token": token, "steps": steps, "limits": limits}
        frames: list = []
        wall = float(limits["wall_seconds"])
        try:
            self._proc.stdin.write(frame_bytes(job))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            return {"frames": frames, "reason": "sandbox", "status": None}
        # The zygote enforces the deadline; ours is a backstop in case the zygote itself is stuck.
        deadline = time.monotonic() + wall + 20
        while True:
            try:
                frame = self._read(deadline)
            except (TimeoutError, SandboxError, ValueError):
                self.close()
                return {"frames": frames, "reason": "sandbox", "status": None}
            if frame is None:
                self.close()
                return {"frames": frames, "reason": "sandbox", "status": None}
            if not isinstance(frame, dict) or frame.get("token") != token:
                continue
            if frame.get("type") == "finished":
                if not frame.get("clean", False):
                    # Something survived the clean-up: never reuse this sandbox for another notebook.
                    self.close()
                return {"frames": frames, "reason": frame.get("reason"), "status": frame.get("status")}
            frames.append(frame)


def _fallback_limits() -> None:  # pragma: no cover - runs in the child before exec
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
