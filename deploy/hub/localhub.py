"""A local JupyterHub for the Module 6 course on 127.0.0.1: ``make hub`` (as root), or imported by the hub test.

``python deploy/hub/localhub.py [--name m6]`` (root) deploys one hub, named ``--name``:
  1. builds the student and instructor environments (``deploy/hub/build_envs.sh``, under ``--envs``,
     shared by every hub of the machine);
  2. installs configurable-http-proxy from npm into ``~/.cache/module6-hub/chp`` if it is not there;
  3. closes this checkout to other accounts (it holds every solution and key);
  4. lays the hub out under ``--dir`` (default ``/srv/module6-hub/<name>``), one location per role, owned
     and moded for it (:class:`Layout`);
  5. creates the hub's own Unix accounts, ``<name>instructor`` and ``<name>student1..3``, marked as this
     hub's (their comment field), with random passwords for PAM;
  6. copies the course (``nbgrader_config.py``, ``source/``) into the instructor's course directory, adds the
     students to its gradebook and, as the instructor, generates and releases both assignments;
  7. starts JupyterHub with ``deploy/hub/jupyterhub_config.py`` and prints its URL and the accounts.
Every step is done again only when it is not done: a run interrupted anywhere is resumed by running it
again. Ctrl+C stops the hub; ``--remove`` deletes this hub's accounts (only those it marked) and its folder.
A second hub on the same machine takes another ``--name``; an account of the same name that another hub
(or anybody else) made is never touched: the run stops and names its owner.
``--pod-server`` also lets the instructor start a named server ``pod`` that cannot run the grading
sandbox (``podlike.py``), to try the grading-host split of README, "A hub whose pods cannot sandbox";
with ``--grading-cluster`` that server grades on a grading cluster started as README, "Grading from a pod"
says (:func:`start_grading_cluster`). Everything it starts listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
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
#: Where the two environments are built (``--install-only``, ``.ci/run``): outside any checkout, because
#: every account runs from them and no account but root may read the checkout.
ENVS = Path(os.environ.get("MODULE6_HUB_ENVS", "/opt/module6-hub/envs"))
#: Where each hub's folder goes by default: ``/srv/module6-hub/<name>``.
HUBS = Path("/srv/module6-hub")
#: The group whose members may run the instructor environment: every hub's instructor, never a student.
INSTRUCTORS_GROUP = "module6-hub-instructors"
#: The comment (GECOS) of every account a hub makes starts with this; the rest names the hub.
MARK = "module6-hub"
NAME_RULE = re.compile(r"[a-z][a-z0-9]{0,11}")
sys.path.insert(0, str(REPO))

from autograder.assignment import ASSIGNMENTS, COURSE_ID  # noqa: E402
from autograder.authoring.scratch_course import make_course_copy  # noqa: E402


class HubConflict(SystemExit):
    """The machine holds something of the same name this hub did not make: nothing was changed."""


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


def build_envs(dest: Path = ENVS) -> tuple:
    subprocess.run([str(HERE / "build_envs.sh"), str(dest)], check=True)
    return dest / "student", dest / "instructor"


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a hub keeps what, and who may see it.

    ============================  ===============================  =====================================
    path                          owner, mode                      who can read it
    ============================  ===============================  =====================================
    ``<base>``                    root, 0755                       everyone may pass through
    ``<base>/config/student``     root, 0755                       students' servers: exchange, course id
    ``<base>/config/instructor``  root:module6-hub-instructors,    the instructor's server (and terminal,
                                  0750                             podlike.py)
    ``<base>/course``             instructor, 0700                 the instructor alone: source, gradebook,
                                                                   submitted, autograded, feedback, reports
    ``<base>/exchange``           root, 1777 (nbgrader's           everyone creates their own entries;
                                  everyone-writable root, sticky)  nobody renames another's
    ``<base>/state``              root, 0700                       the hub: its database, passwords, log
    ``<envs>/student``            root, 0755                       everyone (the student package only)
    ``<envs>/instructor``         root:module6-hub-instructors,    instructors (the whole kit)
                                  0750
    ============================  ===============================  =====================================
    """

    base: Path

    @property
    def config(self) -> Path:
        return self.base / "config"

    @property
    def course(self) -> Path:
        return self.base / "course"

    @property
    def exchange(self) -> Path:
        return self.base / "exchange"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def marker(self) -> Path:
        return self.base / ".module6-hub"

    @property
    def accounts_file(self) -> Path:
        return self.state / "accounts.json"


@dataclasses.dataclass
class Account:
    name: str
    password: str
    home: Path
    role: str  # "student" or "instructor"


@dataclasses.dataclass(frozen=True)
class HubId:
    """One hub of this machine: its name (the prefix of its accounts) and its folder."""

    name: str
    base: Path

    @property
    def mark(self) -> str:
        """The comment of the hub's accounts: ``module6-hub <name> <folder>``."""
        return f"{MARK} {self.name} {self.base}"

    @property
    def instructor(self) -> str:
        return f"{self.name}instructor"

    @property
    def students(self) -> list:
        return [f"{self.name}student{n}" for n in (1, 2, 3)]


def check_hub(name: str, base: Path) -> HubId:
    if not NAME_RULE.fullmatch(name):
        raise SystemExit(f"--name {name!r}: expected 1 to 12 lower-case letters and digits, starting with a letter "
                         f"(it prefixes the hub's account names)")
    base = Path(base).resolve()
    if any(char in str(base) for char in ":,=\n"):
        raise SystemExit(f"--dir {base}: the path may not hold ':', ',' or '=' (it is written into account comments)")
    return HubId(name, base)


def account_comment(name: str) -> str | None:
    """The comment (GECOS) of account ``name``, or None when there is no such account."""
    try:
        return pwd.getpwnam(name).pw_gecos
    except KeyError:
        return None


def check_account_free(hub: HubId, name: str) -> None:
    """Raise :class:`HubConflict` naming its owner when account ``name`` exists and is not this hub's."""
    comment = account_comment(name)
    if comment is not None and comment != hub.mark:
        owner = f"another Module 6 hub ({comment[len(MARK) + 1:]})" if comment.startswith(MARK + " ") \
            else "someone else (it is not marked as a Module 6 hub account)"
        raise HubConflict(f"make hub: the account {name} already exists and belongs to {owner}; nothing was "
                          f"changed. Give this hub another name: make hub HUB_ARGS='--name NAME'")


def claim_account(hub: HubId, name: str, role: str, home: Path | None = None) -> Account:
    """This hub's account ``name``: made and marked if missing, given a new password if it is this hub's.

    An account of that name that this hub did not mark raises :class:`HubConflict` naming who made it,
    before anything is changed.
    """
    if os.geteuid() != 0:
        raise SystemExit("creating the hub's Unix accounts needs root (useradd, chpasswd)")
    check_account_free(hub, name)
    if account_comment(name) is None:
        args = ["useradd", "--shell", "/bin/bash", "--comment", hub.mark]
        args += ["--create-home"] if home is None else ["--no-create-home", "--home-dir", str(home)]
        subprocess.run([*args, name], check=True, capture_output=True)
    record = pwd.getpwnam(name)
    home = Path(record.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, record.pw_uid, record.pw_gid)
    home.chmod(0o700)
    password = secrets.token_urlsafe(12)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
    return Account(name, password, home, role)


def remove_account(hub: HubId, name: str) -> bool:
    """Stop and delete account ``name`` and its home, only if this hub marked it; True when removed."""
    comment = account_comment(name)
    if comment is None:
        return False
    if comment != hub.mark:
        print(f"make hub --remove: {name} is not this hub's account ({comment!r}): left alone", file=sys.stderr)
        return False
    record = pwd.getpwnam(name)
    home = Path(record.pw_dir)
    subprocess.run(["pkill", "-KILL", "-u", name], check=False, capture_output=True)
    subprocess.run(["userdel", name], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        if home.is_dir() and home.stat().st_uid == record.pw_uid:  # the home the account owned, not a shared folder
            shutil.rmtree(home, ignore_errors=True)
    return True


def close_checkout(repo: Path = REPO) -> int | None:
    """Take every permission of other accounts off the checkout's top folder; its old mode if it changed.

    The checkout holds ``source/`` (solutions and hidden tests), the instructor package and the tests'
    answer corpora: no account of the hub may enter it. Nothing under it is needed by a user's server
    (the environments, the hub's configuration and the course live under :class:`Layout`).
    """
    mode = stat.S_IMODE(os.stat(repo).st_mode)
    closed = mode & ~0o007
    if mode != closed:
        os.chmod(repo, closed)
        return mode
    return None


def ensure_group(name: str = INSTRUCTORS_GROUP) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        subprocess.run(["groupadd", "--system", name], check=True, capture_output=True)
        return grp.getgrnam(name).gr_gid


def _owned(path: Path, mode: int, uid: int = 0, gid: int = 0) -> None:
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def secure_envs(envs: Path, gid: int) -> None:
    """Students run the student environment; only instructors enter the instructor environment."""
    _owned(envs, 0o755)
    _owned(envs / "student", 0o755)
    _owned(envs / "instructor", 0o750, gid=gid)


def lay_out(hub: HubId, gid: int) -> Layout:
    """The hub's folder (:class:`Layout`), made or checked: never inside a folder it did not make."""
    layout = Layout(hub.base)
    if layout.base.exists() and any(layout.base.iterdir()) and not layout.marker.is_file():
        raise HubConflict(f"make hub: {layout.base} exists and was not made by make hub; nothing was changed. "
                          f"Choose another --dir or --name")
    if layout.marker.is_file() and layout.marker.read_text().strip() != hub.mark:
        raise HubConflict(f"make hub: {layout.base} belongs to another hub ({layout.marker.read_text().strip()})")
    layout.base.mkdir(parents=True, exist_ok=True)
    _owned(layout.base, 0o755)
    layout.marker.write_text(hub.mark + "\n")
    layout.marker.chmod(0o644)
    for part, mode, group in ((layout.config, 0o755, 0), (layout.config / "student", 0o755, 0),
                              (layout.config / "instructor", 0o750, gid), (layout.state, 0o700, 0)):
        part.mkdir(exist_ok=True)
        _owned(part, mode, gid=group)
    shared = [HERE / "jupyter_server_config.py", HERE / "terminal_rc.sh"]
    for source in [*(HERE / "student").iterdir(), *shared]:
        if source.is_file():
            target = layout.config / "student" / source.name
            shutil.copyfile(source, target)
            _owned(target, 0o644)
    for source in [*(HERE / "instructor").iterdir(), *shared, HERE / "podlike.py"]:
        if source.is_file():
            target = layout.config / "instructor" / source.name
            shutil.copyfile(source, target)
            _owned(target, 0o640, gid=gid)
    layout.exchange.mkdir(exist_ok=True)
    # nbgrader's documented exchange root is writable by everyone (its release resets any other mode of
    # the 0o777 bits); the sticky bit, which it leaves alone, stops anyone renaming what they do not own.
    _owned(layout.exchange, 0o1777)
    return layout


def user_env(account: Account, prefix: Path, config: Path, exchange: Path, course: Path | None = None) -> dict:
    """The environment a user's own commands get: the same as their hub server's (``config``: their role's
    configuration folder, :attr:`Layout.config` ``/ role``)."""
    env = {"HOME": str(account.home), "USER": account.name, "LOGNAME": account.name, "LANG": "C.UTF-8",
           "PATH": f"{prefix}/bin:/usr/local/bin:/usr/bin:/bin", "MODULE6_EXCHANGE": str(exchange),
           "MODULE6_COURSE_ID": COURSE_ID, "JUPYTER_CONFIG_PATH": str(config), "MPLBACKEND": "Agg"}
    if course is not None:
        env["MODULE6_COURSE_DIR"] = str(course)
    return env


def run_as(account: Account, env: dict, args: list, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", account.name, "--", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{account.name}: {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


#: The hub's students' names on its roster (formgrader shows them "Last, First").
NAMES = ("Ada Lovelace", "Alan Turing", "Grace Hopper", "Emmy Noether", "Katherine Johnson", "Edsger Dijkstra")


def write_roster(course: Path, students: list) -> Path:
    """The hub's roster, ``roster.csv`` in the course (the kit's format: ``autograder roster`` puts the class
    and its names into the gradebook; the LMS exports read it as ``c.LmsExport.roster``, set by the hub's
    instructor configuration)."""
    path = course / "roster.csv"
    lines = ["nbgrader_id,name,sis_user_id,email"]
    for number, student in enumerate(students, start=1):
        name = NAMES[(number - 1) % len(NAMES)]
        lines.append(f"{student.name},{name},SIS{number:04d},{student.name}@example.org")
    path.write_text("\n".join(lines) + "\n")
    return path


def prepare_course(instructor: Account, instructor_env: Path, layout: Layout, students: list,
                   stems=None, assignments=ASSIGNMENTS) -> None:
    """The instructor's course directory, its students, and the released assignments in the exchange.

    Done again only where it is not done (no gradebook yet, an assignment not in the exchange).
    """
    course, exchange = layout.course, layout.exchange
    record = pwd.getpwnam(instructor.name)
    if not (course / "nbgrader_config.py").is_file():
        shutil.rmtree(course, ignore_errors=True)  # a copy interrupted half-way (this hub's own folder)
        make_course_copy(course, stems=stems)
        for path in [course, *course.rglob("*")]:
            os.chown(path, record.pw_uid, record.pw_gid, follow_symlinks=False)
    course.chmod(0o700)
    env = user_env(instructor, instructor_env, layout.config / "instructor", exchange, course)
    nbgrader = f"{instructor_env}/bin/nbgrader"
    for assignment in assignments:
        if not (exchange / COURSE_ID / "outbound" / assignment).is_dir():
            run_as(instructor, env, [nbgrader, "generate_assignment", assignment, "--force"], course)
            run_as(instructor, env, [nbgrader, "release_assignment", assignment, "--force"], course)
    roster = write_roster(course, students)
    os.chown(roster, record.pw_uid, record.pw_gid)
    # Collect takes submissions only from students of the gradebook (autograder/grading/exchange.py).
    run_as(instructor, env, [f"{instructor_env}/bin/autograder", "roster", str(roster)], course)


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


def start_hub(*, layout: Layout, student_env: Path, instructor_env: Path, instructor: str, students: list,
              port: int | None = None, pod_server: str = "", timeout: float = 120) -> Hub:
    """Start JupyterHub; ``pod_server`` names the instructor's server that cannot sandbox (podlike.py)."""
    state = layout.state
    port = port or free_port()
    env = dict(os.environ)
    env.update({
        "MODULE6_HUB_STATE": str(state), "MODULE6_HUB_STUDENT_ENV": str(student_env),
        "MODULE6_HUB_INSTRUCTOR_ENV": str(instructor_env), "MODULE6_COURSE_DIR": str(layout.course),
        "MODULE6_EXCHANGE": str(layout.exchange), "MODULE6_HUB_CONFIG": str(layout.config),
        "MODULE6_COURSE_ID": COURSE_ID, "MODULE6_INSTRUCTOR": instructor,
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


#: The README's certificate block (README, "Grading from a pod", step 1), run as written.
GRADING_TLS_BLOCK = "<!-- grading-tls:"
#: Where the instructor's grading cluster keeps its files: in the instructor's home, mode 0700.
GRADING_FOLDER = "grading-tls"


def readme_block(marker: str, language: str = "bash") -> str:
    """The fenced block of the README that follows ``marker``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(marker)
    fence = text.index(f"```{language}", start) + len(f"```{language}")
    return text[fence:text.index("```", fence)]


@dataclasses.dataclass
class GradingCluster:
    address: str
    folder: Path
    processes: list

    def stop(self) -> None:
        """Stop the scheduler and the workers (each started in a session of its own)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 15)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, 9)
                    process.wait()


def start_grading_cluster(instructor: Account, instructor_env: Path, workers: int = 1,
                          timeout: float = 240) -> GradingCluster:
    """README, "Grading from a pod", steps 1 to 3 on this machine, as the instructor (the grading host's
    account here; on a real one, an account that can read nothing of the course):

    1. the README's certificate block, run in ``~/grading-tls`` (mode 0700);
    2. the README's ``dask scheduler`` and ``dask worker`` lines (TLS, encryption required), on 127.0.0.1
       and a free port, from the instructor's environment; bubblewrap works here, so the worker sandboxes;
    3. the four ``c.SandboxedGrade.dask_*`` lines in ``~/grading-tls/cluster.py``, which the hub's
       instructor configuration loads in the named server alone (the pod server: the default server
       keeps grading in its own sandbox, so the two can be compared).
    """
    folder = instructor.home / GRADING_FOLDER
    folder.mkdir(mode=0o700, exist_ok=True)
    uid, gid = pwd.getpwnam(instructor.name).pw_uid, pwd.getpwnam(instructor.name).pw_gid
    os.chown(folder, uid, gid)
    folder.chmod(0o700)
    env = user_env(instructor, instructor_env, folder, folder)
    env["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] = "True"
    if not (folder / "ca.pem").is_file():
        run_as(instructor, env, ["bash", "-euo", "pipefail", "-c", readme_block(GRADING_TLS_BLOCK)], folder)
    address = f"tls://127.0.0.1:{free_port()}"
    tls = ["--tls-ca-file", "ca.pem", "--tls-cert", "grading-host.pem", "--tls-key", "grading-host-key.pem"]
    dask = str(instructor_env / "bin" / "dask")
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    commands = [[dask, "scheduler", "--host", "127.0.0.1", "--protocol", "tls", "--port", address.rsplit(":", 1)[1],
                 "--no-dashboard", *tls],
                [dask, "worker", address, "--nworkers", str(workers), "--nthreads", "1", "--memory-limit", "0",
                 "--no-dashboard", *tls]]
    processes = []
    for command, log in zip(commands, ("scheduler.log", "workers.log")):
        with open(folder / log, "ab") as out:
            processes.append(subprocess.Popen([runuser, "-u", instructor.name, "--", *command], cwd=folder, env=env,
                                              stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
    cluster = GradingCluster(address, folder, processes)
    lines = ("c = get_config()  # noqa: F821\n"
             f"c.SandboxedGrade.dask_scheduler = {address!r}\n"
             f"c.SandboxedGrade.dask_tls_ca_file = {str(folder / 'ca.pem')!r}\n"
             f"c.SandboxedGrade.dask_tls_client_cert = {str(folder / 'instructor.pem')!r}\n"
             f"c.SandboxedGrade.dask_tls_client_key = {str(folder / 'instructor-key.pem')!r}\n")
    wait = ("from distributed import Client, Security\n"
            "security = Security(tls_ca_file='ca.pem', tls_client_cert='instructor.pem',\n"
            "                    tls_client_key='instructor-key.pem', require_encryption=True)\n"
            f"with Client({address!r}, security=security, timeout={timeout}, set_as_default=False) as client:\n"
            f"    client.wait_for_workers({workers}, timeout={timeout})\n")
    try:
        run_as(instructor, env, [str(instructor_env / "bin" / "python"), "-c", wait], folder, timeout=2 * timeout + 30)
        (folder / "cluster.py").write_text(lines)
        os.chown(folder / "cluster.py", uid, gid)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@dataclasses.dataclass
class Deployment:
    hub: HubId
    layout: Layout
    accounts: list
    student_env: Path
    instructor_env: Path

    @property
    def instructor(self) -> Account:
        return next(a for a in self.accounts if a.role == "instructor")

    @property
    def students(self) -> list:
        return [a for a in self.accounts if a.role == "student"]


def deploy(hub: HubId, *, envs: Path = ENVS, homes: Path | None = None, stems=None,
           assignments=ASSIGNMENTS) -> Deployment:
    """Everything but starting the hub: environments, layout, accounts, course (each step resumable).

    Every account name is checked before any account is made or changed, so a conflict changes nothing.
    ``homes``: a folder for the accounts' homes (the tests); default ``/home/<name>``.
    """
    for name in [hub.instructor, *hub.students]:
        check_account_free(hub, name)
    student_env, instructor_env = build_envs(envs)
    ensure_proxy()
    close_checkout(REPO)
    gid = ensure_group()
    secure_envs(envs, gid)
    layout = lay_out(hub, gid)

    def home_of(name):
        return None if homes is None else homes / name

    instructor = claim_account(hub, hub.instructor, "instructor", home_of(hub.instructor))
    subprocess.run(["usermod", "--append", "--groups", INSTRUCTORS_GROUP, instructor.name], check=True,
                   capture_output=True)
    students = [claim_account(hub, name, "student", home_of(name)) for name in hub.students]
    prepare_course(instructor, instructor_env, layout, students, stems=stems, assignments=assignments)
    accounts = [instructor, *students]
    layout.accounts_file.write_text(json.dumps([{**dataclasses.asdict(a), "home": str(a.home)} for a in accounts]))
    layout.accounts_file.chmod(0o600)
    return Deployment(hub, layout, accounts, student_env, instructor_env)


def remove(hub: HubId) -> None:
    """Delete this hub's accounts (those it marked) and its folder; the environments stay."""
    layout = Layout(hub.base)
    if layout.base.exists() and not layout.marker.is_file():
        raise HubConflict(f"make hub --remove: {layout.base} was not made by make hub: left alone")
    for name in [hub.instructor, *hub.students]:
        if remove_account(hub, name):
            print(f"removed the account {name}")
    shutil.rmtree(layout.base, ignore_errors=True)
    if not REPO.stat().st_mode & 0o005:
        print(f"the checkout {REPO} stays closed to other accounts (it holds the solutions): "
              f"`chmod o+rx {REPO}` opens it again")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="m6",
                        help="the hub's name, the prefix of its accounts (default m6: m6instructor, m6student1..3)")
    parser.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1 (default 8000)")
    parser.add_argument("--dir", type=Path, default=None,
                        help=f"the hub's folder: course, exchange, configuration, hub state (default {HUBS}/NAME)")
    parser.add_argument("--envs", type=Path, default=ENVS,
                        help=f"where the two environments are built, shared by the machine's hubs (default {ENVS})")
    parser.add_argument("--remove", action="store_true",
                        help="delete this hub's accounts (only those it made) and its folder (not the environments)")
    parser.add_argument("--pod-server", action="store_true",
                        help="also give the instructor a named server `pod` that cannot run the grading sandbox, "
                             "as in a container hub (deploy/hub/podlike.py; README, \"A hub whose pods cannot sandbox\")")
    parser.add_argument("--grading-cluster", action="store_true",
                        help="with --pod-server: start, as the instructor, the grading cluster of README, "
                             "\"Grading from a pod\" (TLS certificates in ~/grading-tls, a dask scheduler and a "
                             "sandboxing worker) and let the pod server's Autograde button grade on it")
    parser.add_argument("--install-only", action="store_true",
                        help="build the environments and install the proxy, then exit (.ci/run, before the tests)")
    args = parser.parse_args(argv)
    if args.install_only:
        build_envs(args.envs)
        ensure_proxy()
        return 0
    try:
        hub = check_hub(args.name, args.dir or HUBS / args.name)
        if args.remove:
            remove(hub)
            return 0
        mode = stat.S_IMODE(os.stat(REPO).st_mode)
        deployment = deploy(hub, envs=args.envs)
    except HubConflict as conflict:
        print(conflict, file=sys.stderr)
        return 2
    if mode & 0o007:
        print(f"make hub: closed this checkout ({REPO}) to other accounts: mode {mode:o} -> {mode & ~0o007:o} "
              f"(it holds every solution and key)")
    if args.grading_cluster and not args.pod_server:
        print("make hub: --grading-cluster needs --pod-server (the server that cannot sandbox)", file=sys.stderr)
        return 2
    cluster = start_grading_cluster(deployment.instructor, deployment.instructor_env) if args.grading_cluster else None
    running = start_hub(layout=deployment.layout, student_env=deployment.student_env,
                        instructor_env=deployment.instructor_env, instructor=hub.instructor, students=hub.students,
                        port=args.port, pod_server="pod" if args.pod_server else "")
    print(f"\nModule 6 hub {hub.name!r}: {running.url}/hub/login  (folder {hub.base}, log {running.log_path})")
    for account in deployment.accounts:
        print(f"  {account.role:10} {account.name:16} password {account.password}")
    print(f"  formgrader (instructor): {running.url}/user/{hub.instructor}/formgrader")
    if args.pod_server:
        print(f"  formgrader without a sandbox (start it at {running.url}/hub/spawn/{hub.instructor}/pod): "
              f"{running.url}/user/{hub.instructor}/pod/formgrader")
    if cluster is not None:
        print(f"  grading cluster (the pod server's Autograde button grades there): {cluster.address}, "
              f"files and logs in {cluster.folder}")
    print("Ctrl+C stops the hub; running make hub again resumes it with new passwords.")
    # Ctrl+C, or a SIGTERM (a service manager, `kill`), stops the hub and every user's server. SIGINT
    # is set explicitly: a shell that starts this in the background would have it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        running.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
