"""Start the sandboxed zygote (see :mod:`autograder.grading.harness`) and run notebooks in it.

What the sandbox sees (bubblewrap, read-only): ``/usr`` and the Python installation, a copy of the
harness, and **one site-packages directory built from an allow-list**: the student distribution
``module6-course`` and the distributions it requires (NumPy, matplotlib, ipywidgets and theirs,
IPython among them), found from installed distribution metadata (:func:`student_view`). Every
other site-packages directory the Python installation knows is covered by an empty tmpfs, so the
instructor's package (``autograder``: reference, checks, keys), nbgrader, JupyterLab and anything else
installed are neither importable nor readable, whatever the layout (editable checkout, wheel in a
venv, a conda-like prefix). The course directory, the gradebook and the submissions are never mounted.

The sandbox has its own user (as root: no user namespace, and each notebook runs under a fresh
random uid; otherwise a user namespace with uid 1000 and ``--disable-userns``), PID,
network (none), IPC and UTS namespaces and dies with its parent. Each notebook then gets fresh PID,
IPC and mount namespaces, a fresh ``/tmp`` and ``/dev/shm`` (see the harness) and, where a memory
cgroup can be made, the whole sandbox is charged to one with a hard limit (:class:`MemoryCgroup`).

The coordinator side (:meth:`Sandbox.run`) is the only place that knows a notebook's plan: it sends
one unit at a time to the notebook process and reads one reply per unit, bounded in size, count, time
and JSON shape. Calls of consecutive test cells are deduplicated and shuffled together, so neither
their order nor their number tells a notebook which test cell a call serves.

Without bubblewrap nothing above holds but the resource limits: :class:`Sandbox` refuses to start
unless told ``use_bwrap=False`` explicitly (``autograder grade --no-sandbox``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata as metadata
import importlib.util
import json
import logging
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path

from autograder.grading.harness import HEADER, MAX_FRAME, frame_bytes
from autograder.limits import FRAME_NODES, REPLY_FIGURE_CHARS, REPLY_FIGURES, TMP_MB

log = logging.getLogger(__name__)

HARNESS = Path(__file__).with_name("harness.py")
CHANNEL = Path(__file__).resolve().parents[1] / "channel.py"

#: The student's distribution: what the sandbox may show, with what it requires.
STUDENT_DISTRIBUTION = "module6-course"
#: Needed by the harness itself (IPython runs the cells); both are in a student's kernel anyway.
HARNESS_DISTRIBUTIONS = ("numpy", "ipython")
#: Never shown, even if something required them.
FORBIDDEN_DISTRIBUTIONS = {"module6-instructor", "nbgrader"}
FORBIDDEN_NAMES = {"autograder", "nbgrader"}
#: The uid that notebooks run under inside the sandbox's user namespace.
SANDBOX_UID = 1000
#: How to go on when bubblewrap does not work (shown by ``autograder grade``).
INSTALL_HELP = ("Install bubblewrap (Debian/Ubuntu: apt install bubblewrap) and allow unprivileged user "
                "namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0; "
                "in a container, run it with user namespaces allowed).")
NO_SANDBOX_HELP = (INSTALL_HELP + " To grade anyway WITHOUT isolation (student code can then read every file the "
                   "grader can), pass --no-sandbox.")


class SandboxError(RuntimeError):
    """The sandbox could not be started or stopped answering (not the student's fault alone)."""


class SandboxWarning(UserWarning):
    """Grading runs without bubblewrap: limits apply, but the course files are not hidden."""


def bubblewrap() -> str | None:
    """Path of a working ``bwrap`` (with the namespaces the sandbox needs), or None."""
    path, _ = _probe_bubblewrap()
    return path


_PROBE: dict = {}


def _probe_bubblewrap() -> tuple[str | None, str]:
    """``(path, why)``: a working bwrap and an empty string, or None and what went wrong."""
    if "result" in _PROBE:
        return _PROBE["result"]
    path = shutil.which("bwrap")
    if path is None:
        result = (None, "bubblewrap (bwrap) is not installed")
    else:
        try:
            probe = subprocess.run([path, *_user_options(), "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                                    "true"], capture_output=True, timeout=20)
            ok = probe.returncode == 0
            why = "" if ok else ("bubblewrap cannot create its namespaces here: "
                                 + probe.stderr.decode("utf-8", "replace").strip()[-300:])
        except (OSError, subprocess.TimeoutExpired) as error:
            ok, why = False, f"bubblewrap did not run ({type(error).__name__}: {error})"
        result = (path if ok else None, why)
    _PROBE["result"] = result
    return result


def _privileged() -> bool:
    """True when the grader runs as root: bubblewrap then needs no user namespace, and each notebook
    runs under a uid of its own (fresh process count, fresh keyring) instead of the sandbox's uid 1000."""
    return os.geteuid() == 0


def _user_options() -> list:
    if _privileged():
        return ["--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--cap-add", "CAP_KILL"]
    # Unprivileged: a user namespace with one uid; CAP_SYS_ADMIN there lets the watcher make each
    # notebook's namespaces and mounts; nothing inside may make another user namespace.
    return ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns",
            "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN"]


def require_sandbox(how_to_skip: str = "pass --no-sandbox") -> None:
    """Raise :class:`SandboxError` saying why and what to do when bubblewrap cannot run here.

    ``how_to_skip`` names the way to grade without isolation of the command that asks (a flag of
    ``autograder grade``, a config setting under ``nbgrader autograde``).
    """
    path, why = _probe_bubblewrap()
    if path is None:
        help_text = NO_SANDBOX_HELP.replace("pass --no-sandbox", how_to_skip)
        # bubblewrap's own message may end with a full stop: one sentence end, not two
        raise SandboxError(f"the grading sandbox cannot run: {why.rstrip().rstrip('.')}. {help_text}")


# --------------------------------------------------------------------------- what a student has


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist) -> list:
    """Names of what ``dist`` requires unconditionally on this machine (no extras)."""
    names = []
    for text in dist.requires or []:
        try:
            from packaging.requirements import Requirement
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            names.append(requirement.name)
        except ImportError:  # pragma: no cover - packaging ships with pip/setuptools-based installs
            name, _, marker = text.partition(";")
            if "extra" in marker:
                continue
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
            if match:
                names.append(match.group(1))
        except Exception:  # noqa: BLE001 - an unparsable requirement is skipped, never guessed
            continue
    return names


def student_distributions() -> list:
    """The installed distributions a student's kernel has: ``module6-course``, NumPy and IPython,
    with everything they require (transitively), minus the instructor's."""
    seen: dict = {}
    queue = [STUDENT_DISTRIBUTION, *HARNESS_DISTRIBUTIONS]
    while queue:
        name = _normal(queue.pop())
        if name in seen or name in FORBIDDEN_DISTRIBUTIONS:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            seen[name] = None
            continue
        seen[name] = dist
        queue.extend(_requirements(dist))
    return [dist for dist in seen.values() if dist is not None]


def _import_names(dist) -> list:
    names = []
    try:
        text = dist.read_text("top_level.txt")
    except Exception:  # noqa: BLE001
        text = None
    if text:
        names += [line.strip() for line in text.splitlines() if line.strip()]
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if len(parts) >= 1 and not parts[0].startswith("..") and not parts[0].endswith((".dist-info", ".pth")):
            top = parts[0]
            if top.endswith(".py") and not top.startswith("__editable__"):
                names.append(top[:-3])
            elif len(parts) > 1 and parts[-1] == "__init__.py":
                names.append(top)
    return list(dict.fromkeys(names))


def _located(name: str) -> Path | None:
    """Where ``name`` imports from in this process (a package directory or a module file)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = [p for p in spec.submodule_search_locations if os.path.isdir(p)]
        return Path(locations[0]) if locations else None
    if spec.origin and os.path.isfile(spec.origin):
        return Path(spec.origin)
    return None


@functools.lru_cache(maxsize=1)
def _cached_view() -> tuple:
    return tuple(student_view().items())


def student_view() -> dict:
    """``{entry name: host path}``: what the sandbox's one site-packages directory holds.

    For each allowed distribution, the top-level entries its RECORD lists in its own site directory
    (packages, modules, compiled libraries such as ``numpy.libs``, its ``.dist-info``), skipping
    ``.pth`` hooks; packages installed elsewhere (editable installs) are found by their import name.
    """
    entries: dict = {}
    for dist in student_distributions():
        base = Path(str(dist.locate_file("")))
        for file in dist.files or []:
            parts = Path(str(file)).parts
            if not parts or parts[0].startswith("..") or os.path.isabs(str(file)):
                continue
            top = parts[0]
            if top.endswith(".pth") or top.startswith("__editable__") or top == "__pycache__":
                continue
            path = base / top
            if path.exists() and top not in entries:
                entries[top] = path
        for name in _import_names(dist):
            if name in entries or f"{name}.py" in entries or not name.isidentifier():
                continue
            location = _located(name)
            if location is not None:
                entries[location.name if location.is_file() else name] = location
    for name in list(entries):
        stem = name.split(".")[0].split("-")[0]
        if stem in FORBIDDEN_NAMES or _normal(name).startswith("module6-instructor") \
                or _normal(name).startswith("module6_instructor"):
            del entries[name]
    return dict(sorted(entries.items()))


def _linked_view(site: Path, view: dict) -> Path:
    """``site``, made to hold a symbolic link per entry of the student ``view`` (``--no-sandbox``: the
    notebook's one site-packages directory, as bubblewrap binds it inside the sandbox)."""
    site.mkdir(mode=0o755)
    for name, source in view.items():
        (site / name).symlink_to(source)
    return site


def _site_like_dirs() -> list:
    """Every directory this Python might import third-party code from (all hidden in the sandbox)."""
    import site
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    stdlib = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}
    candidates = list(sys.path)
    try:
        candidates += site.getsitepackages()
    except AttributeError:  # pragma: no cover
        pass
    try:
        candidates.append(site.getusersitepackages())
    except AttributeError:  # pragma: no cover
        pass
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/usr", "/usr/local"}:
        for lib in ("lib", "lib64"):
            for name in ("site-packages", "dist-packages"):
                candidates.append(os.path.join(prefix, lib, f"python{version}", name))
            candidates.append(os.path.join(prefix, lib, "python3", "dist-packages"))
    for key in ("purelib", "platlib"):
        candidates.append(sysconfig.get_paths()[key])
    found = []
    for path in candidates:
        if not path or not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        if real in stdlib or real.endswith("lib-dynload") or any(real == s or s.startswith(real + "/") for s in stdlib):
            continue
        found.append(real)
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------- memory


class MemoryCgroup:
    """A memory cgroup (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``) holding one sandbox.

    Made as a child of this process's own cgroup when that is writable (a root container, a systemd
    delegated scope); otherwise :meth:`create` returns None and only the per-process rlimits apply.
    """

    def __init__(self, path: Path, kind: str):
        self.path, self.kind = path, kind

    @classmethod
    def create(cls, limit_bytes: int) -> "MemoryCgroup | None":
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        candidates = []
        for line in lines:
            hierarchy, controllers, relative = line.split(":", 2)
            if "memory" in controllers.split(","):
                candidates.append((Path("/sys/fs/cgroup/memory") / relative.lstrip("/"), "v1"))
            elif hierarchy == "0":
                for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                    if (root / "cgroup.controllers").exists():
                        candidates.append((root / relative.lstrip("/"), "v2"))
                        break
        for base, kind in candidates:
            try:
                if kind == "v2" and "memory" not in (base / "cgroup.subtree_control").read_text().split():
                    continue
                path = base / f"autograder-{uuid.uuid4().hex[:12]}"
                path.mkdir()
            except OSError:
                continue
            group = cls(path, kind)
            try:
                if kind == "v2":
                    (path / "memory.max").write_text(str(limit_bytes))
                    if (path / "memory.swap.max").exists():
                        (path / "memory.swap.max").write_text("0")
                else:
                    (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                    if (path / "memory.memsw.limit_in_bytes").exists():
                        (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
                return group
            except OSError:
                group.remove()
        return None

    def remove(self) -> None:
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


# --------------------------------------------------------------------------- staging


#: Names of the harness and the codec inside the sandbox (a notebook kernel's launcher).
LAUNCHER, CODEC = "ipykernel_launcher", "_wire.py"


def _stage(root: Path) -> Path:
    """Copy the harness and the codec into ``root``."""
    harness = root / "kernel"
    harness.mkdir()
    shutil.copy2(HARNESS, harness / f"{LAUNCHER}.py")
    shutil.copy2(CHANNEL, harness / CODEC)
    for path in harness.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    harness.chmod(0o755)
    return harness


@dataclasses.dataclass
class Run:
    """What one notebook's run produced, addressed by the coordinator (never by the notebook).

    ``cells``: step -> the cell's reply (``status``, ``error``, ``stdout``, ``stderr``, ``figures`` and
    ``missing_module``: the top-level module a failed import could not find, or "");
    ``outcomes``: step -> case -> call index -> encoded outcome (text, decoded by the judge);
    ``reason``: ``exited`` (normal), ``timeout``, ``output`` (reply budget exceeded), ``protocol``
    (a malformed reply), ``ended`` (the notebook process ended before its last unit) or ``sandbox``
    (the sandbox itself failed); ``status``: the notebook process's exit status when known (None
    when the grader had to end a notebook that had done its work but did not exit by itself).
    """

    cells: dict
    outcomes: dict
    reason: str
    status: int | None = None


def plan_units(steps: list, rng: random.Random | None = None) -> list:
    """The units the notebook process gets, in order: ``[(unit, targets)]``.

    ``unit`` is ``{"k": "exec", "source", "name"}`` or ``{"k": "call", "call"}``; ``targets`` says where
    its reply goes: ``[("cell", step)]`` or ``[("call", step, case, index), ...]``. The calls of
    consecutive test cells (no cell runs between them, so the namespace is the same) are merged,
    identical calls are made once, and the order is shuffled.
    """
    rng = rng or random.SystemRandom()
    units: list = []
    pending: dict = {}

    def flush():
        keys = list(pending)
        rng.shuffle(keys)
        for key in keys:
            units.append(({"k": "call", "call": json.loads(key)}, pending[key]))
        pending.clear()

    for number, step in enumerate(steps):
        if step["kind"] == "exec":
            flush()
            units.append(({"k": "exec", "source": step["source"], "name": f"<cell {step['id']}>"},
                          [("cell", number)]))
        elif step["kind"] == "calls":
            for case in step["cases"]:
                for index, call in enumerate(case["calls"]):
                    key = json.dumps(call, sort_keys=True)
                    pending.setdefault(key, []).append(("call", number, case["name"], index))
    flush()
    return units


def _figures(value) -> list:
    if not isinstance(value, list):
        return []
    return [item for item in value[:REPLY_FIGURES.value] if isinstance(item, str) and len(item) <= REPLY_FIGURE_CHARS.value]


def _clip(text, limit: int) -> str:
    text = text if isinstance(text, str) else ""
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]\n"


def _module_name(name) -> str:
    """A top-level module name as the notebook reported it, or "" (anything else the notebook wrote)."""
    return name if isinstance(name, str) and 0 < len(name) <= 64 and name.isidentifier() and name.isascii() else ""


class _Protocol(Exception):
    """A reply that breaks the protocol (size, JSON, shape)."""


class Sandbox:
    """One zygote sandbox; :meth:`run` grades one notebook at a time, each in fresh namespaces.

    Parameters
    ----------
    use_bwrap : bool or None
        True or None: bubblewrap, or :class:`SandboxError` when it cannot run. False: no sandbox at
        all (explicit ``--no-sandbox``; a :class:`SandboxWarning` says what that means).
    tmp_mb : int
        Size of each notebook's private ``/tmp`` and ``/dev/shm``.
    """

    def __init__(self, *, use_bwrap: bool | None = None, tmp_mb: int = TMP_MB.value, ipython: bool = True):
        if use_bwrap is False:
            self._bwrap = None
            import warnings
            message = ("grading WITHOUT the sandbox (--no-sandbox): student code runs with resource limits only "
                       "and CAN READ every file the grader can, the reference solutions included.")
            warnings.warn(message, SandboxWarning, stacklevel=2)
            log.warning(message)
        else:
            require_sandbox()
            self._bwrap = bubblewrap()
        self.tmp_mb = int(tmp_mb)
        self.ipython = ipython
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._root: Path | None = None
        self._stderr = None
        self._cgroup: MemoryCgroup | None = None
        self._memory_mb: int | None = None
        self.info: dict = {}

    @property
    def isolated(self) -> bool:
        return self._bwrap is not None

    # ------------------------------------------------------------------ life cycle

    def start(self, memory_mb: int | None = None) -> None:
        if self._proc is not None and self._proc.poll() is None and memory_mb in (None, self._memory_mb):
            return
        self.close()
        self._memory_mb = memory_mb
        self._root = Path(tempfile.mkdtemp(prefix="jupyter-"))
        self._root.chmod(0o755)
        harness = _stage(self._root)
        python = os.path.realpath(sys.executable)
        if self._bwrap is not None:
            inner = "/opt/kernel"
            scratch, workdir = "/tmp", "/tmp/work"
            view = dict(_cached_view())  # read once per process (workers inherit it from the coordinator)
            hidden = _site_like_dirs()
            site_inner = self._inner_site(hidden)
            sys_path = [site_inner]
            command = self._bwrap_command(harness, view, hidden, site_inner, python)
        else:
            inner = str(harness)
            scratch = str(self._root / "scratch")
            workdir = scratch + "/work"
            os.makedirs(scratch)
            # The same site-packages the sandbox shows (the student view, as links), so that a
            # notebook imports what it imports when sandboxed: the grader's own sys.path lacks the
            # student package of an editable install (its finder is a .pth hook, which -S skips), and
            # holds packages a student's kernel does not have.
            sys_path = [str(_linked_view(self._root / "site", dict(_cached_view())))]
            command = [python]
        config = {"sys_path": list(dict.fromkeys(sys_path)), "codec": f"{inner}/{CODEC}",
                  "scratch": scratch, "workdir": workdir, "ipython": self.ipython, "isolated": self.isolated,
                  "privileged": self.isolated and _privileged()}
        # What a notebook server runs; -S keeps the site-packages' .pth hooks out of the zygote.
        command += ["-S", "-m", LAUNCHER, "-f", f"/tmp/kernel-{uuid.uuid4()}.json"]
        if memory_mb is not None and self._bwrap is not None:
            # The whole sandbox (zygote included) in one memory cgroup: SysV or POSIX shared memory,
            # tmpfs files, page tables... whatever a notebook holds is charged and capped.
            self._cgroup = MemoryCgroup.create((int(memory_mb) + 512) * 1024 * 1024)
            if self._cgroup is not None:
                command = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self._cgroup.path),
                           *command]
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(command, stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                          stderr=self._stderr, env=self._environment(scratch),
                                          cwd="/" if self._bwrap else inner, start_new_session=True,
                                          close_fds=True, preexec_fn=None if self._bwrap else _fallback_limits)
        finally:
            theirs.close()
        self._sock = mine
        try:
            self._sock.settimeout(60)
            self._sock.sendall(frame_bytes(config))
            ready = self._message()
        except (OSError, ValueError, _Protocol):
            ready = None
        if not isinstance(ready, dict) or ready.get("type") != "ready":
            detail = self._diagnostics()
            self.close()
            raise SandboxError(f"the sandbox did not start: {detail}")
        self.info = {**ready, "memory": "cgroup " + self._cgroup.kind if self._cgroup else "rlimits only"}

    @staticmethod
    def _inner_site(hidden: list) -> str:
        """Where the allowed entries appear: the Python installation's own site-packages when that is
        one of the hidden directories (as in a plain install), a neutral ``/opt/site`` otherwise."""
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        prefix = os.path.realpath(sys.base_prefix)
        for name in ("site-packages", "dist-packages"):
            own = os.path.join(prefix, "lib", f"python{version}", name)
            if own in hidden and (own.startswith("/usr/") or own.startswith(prefix + "/")):
                return own
        return "/opt/site"

    def _environment(self, scratch: str) -> dict:
        # A plain, kernel-like environment: nothing says "grading" (no NBGRADER_EXECUTION, no paths).
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "MPLBACKEND": "Agg", "MPLCONFIGDIR": scratch + "/.matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
                "IPYTHONDIR": "/opt/ipython" if self._bwrap else scratch + "/.ipython"}

    def _bwrap_command(self, harness: Path, view: dict, hidden: list, site_inner: str, python: str) -> list:
        prefix = os.path.realpath(sys.base_prefix)
        command = [self._bwrap, *_user_options(), "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc",
                   "--unshare-uts", "--unshare-cgroup-try", "--hostname", "localhost", "--die-with-parent",
                   "--new-session", "--ro-bind", "/usr", "/usr"]
        for link in ("bin", "lib", "lib64", "sbin"):
            target = Path("/", link)
            if target.is_symlink():
                command += ["--symlink", os.readlink(target), f"/{link}"]
            elif target.is_dir():
                command += ["--ro-bind", str(target), f"/{link}"]
        for name in ("ld.so.cache", "localtime", "nsswitch.conf"):
            command += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        made: set = {"/", "/usr", "/etc", "/opt"}
        visible = ["/usr/"]

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
            visible.append(prefix + "/")
        if not python.startswith(prefix + "/") and not python.startswith("/usr/"):
            command += bind(python, python)
        # Hide every site-packages that the bound trees contain, then show the allowed entries.
        for path in hidden:
            if any((path + "/").startswith(root) for root in visible):
                command += ["--perms", "0755", "--tmpfs", path]
        if site_inner == "/opt/site":
            command += ["--perms", "0755", "--dir", site_inner]
        for name, source in view.items():
            command += ["--ro-bind", str(source), f"{site_inner}/{name}"]
        command += ["--ro-bind", str(harness), "/opt/kernel", "--dir", "/opt/ipython",
                    "--proc", "/proc", "--dev", "/dev",
                    "--size", str(16 * 1024 * 1024), "--perms", "1777", "--tmpfs", "/tmp",
                    "--size", str(1024 * 1024), "--perms", "1777", "--tmpfs", "/dev/shm",
                    "--remount-ro", "/", "--chdir", "/opt/kernel", "--clearenv"]
        for key, value in self._environment("/tmp").items():
            command += ["--setenv", key, value]
        return command + ["--", python]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        if proc is not None:
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
        group, self._cgroup = getattr(self, "_cgroup", None), None
        if group is not None:
            group.remove()

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

    # ------------------------------------------------------------------ the zygote's channel

    def _diagnostics(self) -> str:
        if self._stderr is None:
            return "no diagnostics"
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-2000:].decode("utf-8", "replace").strip() or "no diagnostics"
        except Exception:
            return "no diagnostics"

    def _message(self) -> dict | None:
        """One message from the zygote (small JSON that only the zygote can write)."""
        data = self._sock.recv(1 << 20)
        if not data:
            return None
        if len(data) < HEADER.size:
            raise _Protocol("short message")
        (size,) = HEADER.unpack_from(data)
        try:
            return json.loads(data[HEADER.size:HEADER.size + size].decode("utf-8"))
        except (ValueError, RecursionError) as error:
            raise _Protocol(str(error)) from None

    # ------------------------------------------------------------------ jobs

    def run(self, steps: list, limits: dict, environ: dict | None = None) -> Run:
        """Run one notebook's steps in a fresh notebook process; return its :class:`Run`.

        ``environ``: variables of the notebook's environment, among the harness's ``JOB_ENVIRONMENT``
        (the hub sign-in of the student whose work it is)."""
        if self._proc is not None and self._proc.poll() is not None:
            # The zygote this sandbox started has ended without close(): killed from outside, out of
            # memory, a crash. That fact is the sandbox's failure, reported as such; starting a new
            # zygote silently would instead grade this notebook as if nothing happened (and how the
            # death was reported would depend on whether bubblewrap had exited yet: a timing).
            self.close()
            return Run({}, {}, "sandbox")
        self.start(limits.get("memory_mb"))
        cells: dict = {}
        outcomes: dict = {}
        units = plan_units(steps)
        units_r, units_w = os.pipe()
        replies_r, replies_w = os.pipe()
        # A uid of its own for every notebook (used when the sandbox runs privileged).
        uid = 200_000 + random.SystemRandom().randrange(1_000_000)
        job = {"op": "start", "uid": uid, "limits": {**limits, "tmp_bytes": self.tmp_mb * 1024 * 1024},
               "environ": dict(environ or {})}
        try:
            socket.send_fds(self._sock, [frame_bytes(job)], [units_r, replies_w])
            started = self._message()
        except (OSError, ValueError, _Protocol):
            started = None
        finally:
            os.close(units_r)
            os.close(replies_w)
        if not isinstance(started, dict) or started.get("type") != "started" or not started.get("ok"):
            os.close(units_w)
            os.close(replies_r)
            self.close()
            return Run(cells, outcomes, "sandbox")
        reason = "exited"
        try:
            reason = self._converse(units, units_w, replies_r, limits, cells, outcomes)
        finally:
            for fd in (units_w, replies_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
        status, clean = None, False
        try:
            self._sock.settimeout(60)
            # After a normal end the notebook process exits by itself as soon as its input closes: give it
            # a moment, so that its exit status is its own (not the kill that ends every notebook).
            self._sock.sendall(frame_bytes({"op": "end", "grace": 2.0 if reason == "exited" else 0.0}))
            ended = self._message()
            if isinstance(ended, dict) and ended.get("type") == "ended":
                status, clean = ended.get("status"), bool(ended.get("clean"))
        except (OSError, ValueError, _Protocol):
            ended = None
        if ended is None:
            log.warning("the sandbox stopped answering: %s", self._diagnostics())
            self.close()
            # The zygote is out of every notebook's reach: its failure is the grader's, never a grade.
            return Run(cells, outcomes, "sandbox", status)
        if not clean or reason == "protocol":
            # Something outlived the notebook, or its replies broke the protocol: never reuse.
            self.close()
        return Run(cells, outcomes, reason, status)

    def _converse(self, units, units_w, replies_r, limits, cells, outcomes) -> str:
        """Send each unit, read its reply; return why the conversation ended."""
        deadline = time.monotonic() + float(limits["wall_seconds"])
        budget = int(limits["frame_bytes"])
        width = int(limits["stream_chars"])
        frame_max = min(MAX_FRAME, int(limits.get("reply_bytes", MAX_FRAME)))
        os.set_blocking(units_w, False)
        received = [0]
        buffer = bytearray()
        for unit, targets in units:
            body = json.dumps(unit, allow_nan=False).encode("utf-8")
            try:
                if not self._write(units_w, HEADER.pack(len(body)) + body, deadline):
                    return "timeout"
            except BrokenPipeError:
                return "ended"
            try:
                reply = self._reply(replies_r, buffer, deadline, frame_max, budget, received)
            except TimeoutError:
                return "timeout"
            except _Protocol:
                return "protocol"
            except OverflowError:
                return "output"
            if reply is None:
                return "ended"
            if targets[0][0] == "cell":
                cells[targets[0][1]] = {
                    "status": reply.get("status") if reply.get("status") in ("ok", "error", "timeout") else "error",
                    "error": _clip(reply.get("error"), 6000), "stdout": _clip(reply.get("stdout"), width),
                    "stderr": _clip(reply.get("stderr"), width), "figures": _figures(reply.get("figures")),
                    "missing_module": _module_name(reply.get("missing_module"))}
            else:
                data = reply.get("data")
                if not isinstance(data, str):
                    return "protocol"
                for _, step, case, index in targets:
                    outcomes.setdefault(step, {}).setdefault(case, {})[index] = data
        return "exited"

    @staticmethod
    def _write(fd: int, data: bytes, deadline: float) -> bool:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            _, ready, _ = select.select([], [fd], [], remaining)
            if ready:
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    continue
        return True

    @staticmethod
    def _reply(fd: int, buffer: bytearray, deadline: float, frame_max: int, budget: int, received: list):
        """The next complete reply frame, parsed; None at EOF."""
        while True:
            if len(buffer) >= HEADER.size:
                (size,) = HEADER.unpack_from(buffer)
                if size > frame_max:
                    raise _Protocol("oversized reply")
                if len(buffer) >= HEADER.size + size:
                    body = bytes(buffer[HEADER.size:HEADER.size + size])
                    del buffer[:HEADER.size + size]
                    return _parse_reply(body)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            received[0] += len(chunk)
            if received[0] > budget:
                raise OverflowError
            buffer += chunk


def _parse_reply(body: bytes) -> dict:
    """A reply as a dict; anything else (too many nodes, too deep, not JSON, not an object) is a
    :class:`_Protocol` error, never an exception that escapes."""
    # Any process in the notebook can write a well-formed frame; a 96 MB one made of tiny
    # containers would cost the coordinator gigabytes to parse. Honest replies carry arrays as
    # base64 strings and need few containers, so count them before parsing.
    if body.count(b"{") + body.count(b"[") + body.count(b",") > FRAME_NODES.value:
        raise _Protocol("a reply with too many JSON nodes")
    try:
        reply = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError, MemoryError) as error:
        raise _Protocol(f"an unreadable reply ({type(error).__name__})") from None
    if not isinstance(reply, dict):
        raise _Protocol("a reply that is not an object")
    return reply


def _fallback_limits() -> None:  # pragma: no cover - runs in the child before exec
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
    except Exception:  # noqa: BLE001
        pass
