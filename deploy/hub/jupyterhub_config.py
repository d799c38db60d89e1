"""JupyterHub configuration of the Module 6 course hub (``jupyterhub -f deploy/hub/jupyterhub_config.py``).

``deploy/hub/localhub.py`` starts the hub with the environment variables below set; a production
hub sets them in its service unit (README, "Run it on a JupyterHub"). Everything listens on 127.0.0.1.

- Accounts are local Unix accounts checked by PAM (JupyterHub's default ``PAMAuthenticator``);
  only the listed students and the instructor may log in.
- Each user's server is started as that Unix user (``LocalProcessSpawner``): students from the
  student environment (the student package, JupyterLab, nbgrader's Validate and Assignment List
  only), the instructor from the instructor environment in the course directory, where formgrader
  runs (nbgrader 0.9.6 docs, configuration/jupyterhub_config.rst, "One Class, One Grader").
- nbgrader's shared exchange is a directory every account can reach (``c.Exchange.root``, set in the
  ``nbgrader_config.py`` of each role from ``MODULE6_EXCHANGE``).
- Each role's configuration is read from the hub's own folder (``MODULE6_HUB_CONFIG``: copies of the
  ``student/`` and ``instructor/`` folders beside this file, laid out and moded by ``localhub.py``), never
  from the checkout, which no account but root may read.
- With ``MODULE6_HUB_POD_SERVER`` set (``localhub.py --pod-server``), the instructor may also start
  one named server of that name, run through ``podlike.py``: a server that cannot run the grading
  sandbox, as in a container pod (README, "A hub whose pods cannot sandbox").
"""

import os
import sys

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file

env = os.environ


def required(name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise SystemExit(f"jupyterhub_config.py: environment variable {name} is not set (see deploy/hub/localhub.py)")
    return value


STATE = required("MODULE6_HUB_STATE")               # the hub's database, cookie secret and logs
STUDENT_ENV = required("MODULE6_HUB_STUDENT_ENV")   # deploy/hub/build_envs.sh's student environment
INSTRUCTOR_ENV = required("MODULE6_HUB_INSTRUCTOR_ENV")
COURSE_DIR = required("MODULE6_COURSE_DIR")         # the instructor's nbgrader course directory
EXCHANGE = required("MODULE6_EXCHANGE")             # nbgrader's shared exchange directory
CONFIG = required("MODULE6_HUB_CONFIG")             # <hub folder>/config: student/ and instructor/
COURSE_ID = required("MODULE6_COURSE_ID")
INSTRUCTOR = required("MODULE6_INSTRUCTOR")
STUDENTS = required("MODULE6_STUDENTS").split(",")
# The instructor's named server started as a default container pod would be (deploy/hub/podlike.py:
# no new namespaces, so no grading sandbox); empty: no named servers at all.
POD_SERVER = env.get("MODULE6_HUB_POD_SERVER", "")

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(required("MODULE6_HUB_PORT"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(required("MODULE6_HUB_API_PORT"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(required('MODULE6_PROXY_API_PORT'))}"
# configurable-http-proxy comes from npm into a cache directory (deploy/hub/localhub.py), never into git.
c.ConfigurableHTTPProxy.command = [required("MODULE6_CHP")]
c.JupyterHub.db_url = "sqlite:///" + os.path.join(STATE, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(STATE, "jupyterhub.pid")

c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(STUDENTS) | {INSTRUCTOR}
# No login session (pam_systemd, utmp) is opened for a hub login: there is no systemd here, and a
# notebook server needs none.
c.PAMAuthenticator.open_sessions = False

c.Spawner.ip = "127.0.0.1"
c.Spawner.default_url = "/lab"
# A busy 2-core machine takes a while to start JupyterLab with its extensions.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
# Users' servers see only what is set here, not the hub's own environment.
c.Spawner.env_keep = ["LANG", "LC_ALL", "TZ"]


def per_user(spawner):
    """Students get the student environment in their home; the instructor the course directory."""
    name = spawner.user.name
    if spawner.name and (name != INSTRUCTOR or spawner.name != POD_SERVER):
        raise RuntimeError(f"{name}: no named server {spawner.name!r} on this hub")
    shared = {"MODULE6_EXCHANGE": EXCHANGE, "MODULE6_COURSE_ID": COURSE_ID, "MPLBACKEND": "Agg"}
    if name == INSTRUCTOR:
        prefix, config = INSTRUCTOR_ENV, os.path.join(CONFIG, "instructor")
        spawner.notebook_dir = COURSE_DIR
        shared["MODULE6_COURSE_DIR"] = COURSE_DIR
    elif name in STUDENTS:
        prefix, config = STUDENT_ENV, os.path.join(CONFIG, "student")
        spawner.notebook_dir = "~"
    else:  # allowed_users already refuses anyone else; never start a server from the wrong environment
        raise RuntimeError(f"{name} is neither the instructor nor a student of this hub")
    spawner.cmd = [os.path.join(prefix, "bin", "jupyterhub-singleuser")]
    if spawner.name:  # the pod server: the same server, under podlike.py's seccomp filter
        spawner.cmd = [os.path.join(prefix, "bin", "python"), os.path.join(config, "podlike.py"), "--", *spawner.cmd]
    shared["MODULE6_HUB_PREFIX"] = prefix
    spawner.environment.update(shared)
    # nbgrader_config.py of this role (exchange, course id) and, for the instructor, jupyter_server_config.py
# (the terminal, formgrader's pages); extra Jupyter config directories come first.
    spawner.environment["JUPYTER_CONFIG_PATH"] = config
    spawner.environment["PATH"] = os.pathsep.join([os.path.join(prefix, "bin"), "/usr/local/bin", "/usr/bin", "/bin"])


c.Spawner.pre_spawn_hook = per_user
if POD_SERVER:
    # README, "A hub whose pods cannot sandbox": formgrader in a server that cannot run bubblewrap,
    # grading on a grading host. Only the instructor may start it (per_user refuses anyone else).
    c.JupyterHub.allow_named_servers = True
    c.JupyterHub.named_server_limit_per_user = 1
