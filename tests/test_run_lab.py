"""``make lab``'s server starter (``tools/run_lab.py``): a token the learner chose is the token used.

A learner who put a token in ``LAB_ARGS`` (or ``$JUPYTER_TOKEN``) got a random one instead, without a
word: the starter passed its own ``--IdentityProvider.token`` too, jupyter_server ignored theirs, and
the address they typed answered 403. The end-to-end test starts both servers as ``make lab`` does.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_lab():
    spec = importlib.util.spec_from_file_location("run_lab", ROOT / "tools" / "run_lab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("args, environ, token, rest", [
    (["--allow-root", "--IdentityProvider.token=abc"], {}, "abc", ["--allow-root"]),
    (["--ServerApp.token=abc", "--no-browser"], {}, "abc", ["--no-browser"]),
    (["--NotebookApp.token", "abc", "--ServerApp.ip=0.0.0.0"], {}, "abc", ["--ServerApp.ip=0.0.0.0"]),
    (["--ServerApp.token=old", "--IdentityProvider.token=new"], {}, "new", []),  # the last one, as traitlets
    (["--IdentityProvider.token="], {"JUPYTER_TOKEN": "env"}, "", []),  # empty: no token at all
    (["--no-browser"], {"JUPYTER_TOKEN": "env"}, "env", ["--no-browser"]),
    (["--no-browser"], {}, None, ["--no-browser"]),  # none chosen: the starter makes its own
])
def test_the_learners_token_is_found_and_taken_out_of_the_arguments(args, environ, token, rest):
    assert _run_lab().chosen_token(args, environ) == (token, rest)


def test_a_token_file_and_a_token_option_without_a_value(tmp_path):
    run_lab = _run_lab()
    (tmp_path / "token").write_text("from-a-file\n")
    assert run_lab.chosen_token([], {"JUPYTER_TOKEN_FILE": str(tmp_path / "token")}) == ("from-a-file", [])
    with pytest.raises(SystemExit, match="--ServerApp.token needs a value"):
        run_lab.chosen_token(["--ServerApp.token"], {})


def test_the_banner_shows_the_chosen_token_or_none():
    run_lab = _run_lab()
    text = run_lab.banner((Path("/x/graded"), "8888", "my token"), (Path("/x/selfstudy"), "8889", ""))
    assert "http://127.0.0.1:8888/lab?token=my+token" in text
    assert "http://127.0.0.1:8889/lab\n" in text  # an empty token: the address has none


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status(port: int, token: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                     headers={"Authorization": f"token {token}"})
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code


def test_make_labs_servers_answer_the_token_given_in_lab_args(tmp_path):
    """Both servers, started as ``make lab`` starts them, with the deprecated spelling a learner is
    likely to copy from an old tutorial: the printed addresses carry that token and it opens both."""
    jupyter = str(Path(sys.executable).parent / "jupyter")
    graded, selfstudy = tmp_path / "lab" / "graded", tmp_path / "lab" / "selfstudy"
    graded.mkdir(parents=True)
    selfstudy.mkdir()
    ports = _free_port(), _free_port()
    lab_args = ("--allow-root --no-browser --ServerApp.token=learners-own-token "
                f"--LabApp.user_settings_dir={tmp_path / 'settings'} --LabApp.workspaces_dir={tmp_path / 'ws'}")
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    env.pop("JUPYTER_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "run_lab.py"), jupyter, str(graded), str(ports[0]),
         jupyter, str(selfstudy), str(ports[1]), lab_args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        lines, deadline = [], time.monotonic() + 240
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                break
            lines.append(line)
            if "Ctrl+C stops both servers" in line:
                break
        text = "".join(lines)
        for port in ports:
            assert f"http://127.0.0.1:{port}/lab?token=learners-own-token" in text, text
            assert _status(port, "learners-own-token") == 200
            assert _status(port, "some-other-token") == 403
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
