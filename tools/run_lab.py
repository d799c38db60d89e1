"""Serve both flavours of the lab and say where they are: what ``make lab`` runs after its set-up.

``python tools/run_lab.py GRADED_JUPYTER GRADED_DIR GRADED_PORT SELFSTUDY_JUPYTER SELFSTUDY_DIR SELFSTUDY_PORT [LAB_ARGS]``

Each server's own output goes to ``<its folder>/../<flavour>-server.log`` (JupyterLab prints a page of
start-up lines, which buried the addresses under the install output). Once both answer, the two
addresses (with their tokens) are printed last, with what "submit" means here. Ctrl+C (or SIGTERM)
stops both.

The token: a fresh random one per server, unless the learner chose one. A token in ``LAB_ARGS``
(``--IdentityProvider.token=...``, or jupyter_server's deprecated ``--ServerApp.token`` /
``--NotebookApp.token``, with ``=`` or as the next word) or in ``$JUPYTER_TOKEN`` /
``$JUPYTER_TOKEN_FILE`` is used for both servers, waited on and printed: passing our own
``--IdentityProvider.token`` beside it made jupyter_server ignore theirs ("Ignoring deprecated
ServerApp.token config": jupyter_server==2.21.1, ``ServerApp.init_configurables``), and the
address they typed answered 403. An empty token (``--IdentityProvider.token=``) means no token.
The self-study server gets a Jupyter config folder of its own (``$JUPYTER_CONFIG_DIR``, set by the
Makefile), where ``tools/student_lab_config.py`` switched off nbgrader's instructor tools.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


#: Options that set the server's token (the first is jupyter_server 2's; the others its deprecated names).
TOKEN_OPTIONS = ("--IdentityProvider.token", "--ServerApp.token", "--NotebookApp.token")


def chosen_token(extra: list, environ) -> tuple:
    """``(token or None, extra without its token options)``: the token the learner asked for, in
    ``LAB_ARGS`` (the last one given wins, as in traitlets) or else in the environment."""
    token, rest, i = None, [], 0
    while i < len(extra):
        option, equals, value = extra[i].partition("=")
        if option in TOKEN_OPTIONS:
            if not equals:  # "--ServerApp.token abc"
                if i + 1 >= len(extra):
                    raise SystemExit(f"LAB_ARGS: {option} needs a value (such as {option}=mytoken)")
                value, i = extra[i + 1], i + 1
            token = value
        else:
            rest.append(extra[i])
        i += 1
    if token is None and environ.get("JUPYTER_TOKEN"):
        token = environ["JUPYTER_TOKEN"]
    elif token is None and environ.get("JUPYTER_TOKEN_FILE"):
        token = Path(environ["JUPYTER_TOKEN_FILE"]).read_text().strip()
    return token, rest


def _start(jupyter: str, folder: Path, port: int, token: str, extra: list, log: Path, env: dict):
    command = [jupyter, "lab", f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", *extra]
    handle = open(log, "wb")
    # Its own process group, so stopping it also stops the kernels it started.
    return subprocess.Popen(command, cwd=folder, stdout=handle, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


def _wait(process, port: int, token: str, log: Path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                     headers={"Authorization": f"token {token}"} if token else {})
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server on port {port} stopped (exit {process.returncode}); "
                             f"its last lines, from {log}:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            urllib.request.urlopen(request, timeout=5).read()
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise SystemExit(f"the server on port {port} did not answer in {timeout:.0f} s: see {log}")
            time.sleep(0.5)


def address(port, token: str) -> str:
    """The lab's address with its token (none when the token is empty: no token asked)."""
    return f"http://127.0.0.1:{port}/lab" + (f"?{urllib.parse.urlencode({'token': token})}" if token else "")


def banner(graded: tuple, selfstudy: tuple) -> str:
    """The closing lines: both addresses, and what submitting means in this lab."""
    (g_dir, g_port, g_token), (s_dir, s_port, s_token) = graded, selfstudy
    rule = "=" * 78
    return "\n".join([
        "", rule,
        "The lab is running. Open one of these addresses in your browser:",
        "",
        f"  Graded flavour (fill in and submit):  {address(g_port, g_token)}",
        f"      notebooks in {g_dir}",
        f"  Self-study flavour (every check, hints, worked solutions):",
        f"                                         {address(s_port, s_token)}",
        f"      notebooks in {s_dir}",
        "",
        "Submitting: this lab has no submit button and sends nothing anywhere. Validate (in the graded",
        "flavour's toolbar) runs a notebook and its open checks; the hidden tests run only when your",
        "work is graded. To submit, hand in the saved .ipynb files of the graded folders the way your",
        "course collects work (its hub or upload page); your instructor grades them there.",
        "In a container, add LAB_ARGS=\"--allow-root --no-browser --ServerApp.ip=0.0.0.0\" and publish",
        f"ports {g_port} and {s_port}. Server output: build/lab/*-server.log. Ctrl+C stops both servers.",
        rule, "",
    ])


def main(argv: list) -> int:
    if len(argv) not in (6, 7):
        raise SystemExit(__doc__.split("\n\n")[1])
    g_jupyter, g_dir, g_port, s_jupyter, s_dir, s_port = argv[:6]
    chosen, extra = chosen_token(shlex.split(argv[6]) if len(argv) == 7 else [], os.environ)
    g_dir, s_dir = Path(g_dir).resolve(), Path(s_dir).resolve()
    tokens = (chosen, chosen) if chosen is not None else (secrets.token_hex(16), secrets.token_hex(16))
    logs = g_dir.parent / "graded-server.log", s_dir.parent / "selfstudy-server.log"
    graded_env = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_DIR"}
    graded_env["PATH"] = str(Path(g_jupyter).parent) + os.pathsep + os.environ.get("PATH", "")
    selfstudy_env = dict(os.environ)
    selfstudy_env["PATH"] = str(Path(s_jupyter).parent) + os.pathsep + os.environ.get("PATH", "")
    processes = []
    # `kill` or a closing terminal (SIGTERM, SIGHUP) stops both servers as Ctrl+C does.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.default_int_handler)
    try:
        processes.append(_start(g_jupyter, g_dir, int(g_port), tokens[0], extra, logs[0], graded_env))
        processes.append(_start(s_jupyter, s_dir, int(s_port), tokens[1], extra, logs[1], selfstudy_env))
        for process, port, token, log in zip(processes, (g_port, s_port), tokens, logs):
            _wait(process, int(port), token, log)
        print(banner((g_dir, g_port, tokens[0]), (s_dir, s_port, tokens[1])), flush=True)
        while all(process.poll() is None for process in processes):
            time.sleep(1)
        return 1  # a server stopped by itself: its log says why
    except KeyboardInterrupt:
        return 0
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
