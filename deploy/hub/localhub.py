"""A local JupyterHub for the Module 6 course on 127.0.0.1: ``make hub`` (as root), or imported by the hub test.

``python deploy/hub/localhub.py`` (root):
  1. builds the student and instructor environments (``deploy/hub/build_envs.sh``);
  2. installs configurable-http-proxy from npm into ``~/.cache/module6-hub/chp`` if it is not there;
  3. creates the Unix accounts (three students, one instructor) with random passwords, for PAM;
  4. copies the course (``nbgrader_config.py`` and ``source/``) into the instructor's course directory,
     and, as the instructor, runs ``nbgrader generate_assignment`` and ``release_assignment`` for both
     assignments into a shared exchange;
  5. starts JupyterHub with ``deploy/hub/jupyterhub_config.py`` and prints its URL and the accounts.
Ctrl+C stops the hub; the accounts and the course directory stay (``--remove`` deletes them).
``--pod-server`` also lets the instructor start a named server ``pod`` that cannot run the grading
sandbox (``podlike.py``), to try the grading-host split of README, "A hub whose pods cannot sandbox".
Everything it starts listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHP_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "module6-hub" / "chp"
CHP = CHP_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
CHP_SPEC = "configurable-http-proxy@4.6.3"
sys.path.insert(0, str(REPO))

from autograder.assignment import ASSIGNMENTS, COURSE_ID  # noqa: E402
from autograder.authoring.scratch_course import make_course_copy  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ensure_proxy() -> Path:
    """configurable-http-proxy from the npm registry into the cache directory (once)."""
    if not CHP.exists():
        CHP_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(CHP_DIR), CHP_SPEC],
                       check=True, capture_output=True)
    return CHP


def build_envs(dest: Path) -> tuple:
    subprocess.run([str(HERE / "build_envs.sh"), str(dest)], check=True)
    return dest / "student", dest / "instructor"


@dataclasses.dataclass
class Account:
    name: str
    password: str
    home: Path
    role: str  # "student" or "instructor"


def add_account(name: str, role: str, home: Path | None = None) -> Account:
    """A Unix account with a random password (PAM checks it at the hub's login page)."""
    if os.geteuid() != 0:
        raise SystemExit("creating the hub's Unix accounts needs root (useradd, chpasswd)")
    password = secrets.token_urlsafe(12)
    args = ["useradd", "--shell", "/bin/sh"]
    args += ["--create-home"] if home is None else ["--no-create-home", "--home-dir", str(home)]
    subprocess.run([*args, name], check=True, capture_output=True)
    record = pwd.getpwnam(name)
    home = Path(record.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, record.pw_uid, record.pw_gid)
    home.chmod(0o700)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
    return Account(name, password, home, role)


def remove_account(name: str) -> None:
    with contextlib.suppress(KeyError):
        home = Path(pwd.getpwnam(name).pw_dir)
        subprocess.run(["pkill", "-KILL", "-u", name], check=False, capture_output=True)
        subprocess.run(["userdel", name], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def user_env(account: Account, prefix: Path, config: str, exchange: Path, course: Path | None = None) -> dict:
    """The environment a user's own commands get: the same as their hub server's."""
    env = {"HOME": str(account.home), "USER": account.name, "LOGNAME": account.name, "LANG": "C.UTF-8",
           "PATH": f"{prefix}/bin:/usr/local/bin:/usr/bin:/bin", "MODULE6_EXCHANGE": str(exchange),
           "MODULE6_COURSE_ID": COURSE_ID, "JUPYTER_CONFIG_PATH": str(HERE / config), "MPLBACKEND": "Agg"}
    if course is not None:
        env["MODULE6_COURSE_DIR"] = str(course)
    return env


def run_as(account: Account, env: dict, args: list, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", account.name, "--", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{account.name}: {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def prepare_course(instructor: Account, instructor_env: Path, course: Path, exchange: Path,
                   stems=None, assignments=ASSIGNMENTS) -> None:
    """The instructor's course directory and the released assignments in the exchange."""
    make_course_copy(course, stems=stems)
    record = pwd.getpwnam(instructor.name)
    for path in [course, *course.rglob("*")]:
        os.chown(path, record.pw_uid, record.pw_gid)
    exchange.mkdir(parents=True, exist_ok=True)
    exchange.chmod(0o777)  # nbgrader's exchange: every account creates its own entries in it
    env = user_env(instructor, instructor_env, "instructor", exchange, course)
    for assignment in assignments:
        run_as(instructor, env, [f"{instructor_env}/bin/nbgrader", "generate_assignment", assignment, "--force"], course)
        run_as(instructor, env, [f"{instructor_env}/bin/nbgrader", "release_assignment", assignment, "--force"], course)


@dataclasses.dataclass
class Hub:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        """Stop the hub, its proxy and every user's server (all in the hub's process group)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


def start_hub(*, state: Path, student_env: Path, instructor_env: Path, course: Path, exchange: Path,
              instructor: str, students: list, port: int | None = None, pod_server: str = "",
              timeout: float = 120) -> Hub:
    """Start JupyterHub; ``pod_server`` names the instructor's server that cannot sandbox (podlike.py)."""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    port = port or free_port()
    env = dict(os.environ)
    env.update({
        "MODULE6_HUB_STATE": str(state), "MODULE6_HUB_STUDENT_ENV": str(student_env),
        "MODULE6_HUB_INSTRUCTOR_ENV": str(instructor_env), "MODULE6_COURSE_DIR": str(course),
        "MODULE6_EXCHANGE": str(exchange), "MODULE6_COURSE_ID": COURSE_ID, "MODULE6_INSTRUCTOR": instructor,
        "MODULE6_STUDENTS": ",".join(students), "MODULE6_HUB_PORT": str(port),
        "MODULE6_HUB_API_PORT": str(free_port()), "MODULE6_PROXY_API_PORT": str(free_port()),
        "MODULE6_CHP": str(ensure_proxy()), "MODULE6_HUB_POD_SERVER": pod_server,
        "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
    })
    log_path = state / "jupyterhub.log"
    with open(log_path, "ab") as log:
        # Its own process group: stopping the hub also stops the proxy and the users' servers.
        process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(HERE / "jupyterhub_config.py")],
                                   cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {process.returncode}:\n{hub.log()}")
        try:
            with urllib.request.urlopen(f"{hub.url}/hub/api/", timeout=5) as response:
                json.loads(response.read())
            return hub
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                hub.stop()
                raise RuntimeError(f"jupyterhub did not answer within {timeout:.0f} s:\n{hub.log()}")
            time.sleep(0.5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1 (default 8000)")
    parser.add_argument("--dir", type=Path, default=REPO / "build" / "hub",
                        help="where the environments, course, exchange and hub state go (default build/hub)")
    parser.add_argument("--remove", action="store_true",
                        help="delete the accounts and the course, exchange and hub state under --dir (not the environments)")
    parser.add_argument("--pod-server", action="store_true",
                        help="also give the instructor a named server `pod` that cannot run the grading sandbox, "
                             "as in a container hub (deploy/hub/podlike.py; README, \"A hub whose pods cannot sandbox\")")
    parser.add_argument("--install-only", action="store_true",
                        help="build the environments and install the proxy, then exit (.ci/run, before the tests)")
    args = parser.parse_args(argv)
    names = {"instructor": "m6instructor", "students": ["m6student1", "m6student2", "m6student3"]}
    if args.remove:
        for name in [names["instructor"], *names["students"]]:
            remove_account(name)
        for part in ("course", "exchange", "state"):
            shutil.rmtree(args.dir / part, ignore_errors=True)
        return 0
    base = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)  # every account reaches its environment, the course and the exchange through it
    student_env, instructor_env = build_envs(base / "envs")
    ensure_proxy()
    if args.install_only:
        return 0
    accounts_file = base / "state" / "accounts.json"
    course, exchange = base / "course", base / "exchange"
    if accounts_file.exists():  # a second `make hub`: same accounts, course and exchange
        accounts = [Account(a["name"], a["password"], Path(a["home"]), a["role"])
                    for a in json.loads(accounts_file.read_text())]
    else:
        for name in [names["instructor"], *names["students"]]:
            remove_account(name)
        accounts = [add_account(names["instructor"], "instructor")]
        accounts += [add_account(name, "student") for name in names["students"]]
        prepare_course(accounts[0], instructor_env, course, exchange)
        accounts_file.parent.mkdir(parents=True, exist_ok=True)
        accounts_file.parent.chmod(0o700)
        accounts_file.write_text(json.dumps([{**dataclasses.asdict(a), "home": str(a.home)} for a in accounts]))
        accounts_file.chmod(0o600)
    hub = start_hub(state=base / "state", student_env=student_env, instructor_env=instructor_env, course=course,
                    exchange=exchange, instructor=names["instructor"], students=names["students"], port=args.port,
                    pod_server="pod" if args.pod_server else "")
    print(f"\nModule 6 hub: {hub.url}/hub/login  (log: {hub.log_path})")
    for account in accounts:
        print(f"  {account.role:10} {account.name:14} password {account.password}")
    print(f"  formgrader (instructor): {hub.url}/user/{names['instructor']}/formgrader")
    if args.pod_server:
        print(f"  formgrader without a sandbox (start it at {hub.url}/hub/spawn/{names['instructor']}/pod): "
              f"{hub.url}/user/{names['instructor']}/pod/formgrader")
    print("Ctrl+C stops the hub.")
    # Ctrl+C, or a SIGTERM (a service manager, `kill`), stops the hub and every user's server. SIGINT
    # is set explicitly: a shell that starts this in the background would have it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        hub.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
