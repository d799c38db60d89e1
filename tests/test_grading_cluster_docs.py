"""What the README's "Grading from a pod" tells users to run and deploy (issue 39), checked as written.

* The certificate block, run verbatim with ``openssl`` in an empty folder, makes certificates with which
  Dask's own TLS (``distributed.Security``, as the scheduler and the instructor's server use it) completes
  a mutual handshake, and refuses a client without a certificate of that CA.
* ``deploy/kubernetes/grading.yaml``: the workers get what bubblewrap needs and nothing else, nothing
  mounts the course or the client's credentials, and Dask refuses unencrypted connections everywhere.
* The four ``nbgrader_config.py`` lines name traits that exist, and the README names the limits it cites.
"""

from __future__ import annotations

import re
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
MANIFEST = REPO / "deploy" / "kubernetes" / "grading.yaml"


def _block(marker: str, language: str) -> str:
    start = README.index(marker)
    fence = README.index(f"```{language}", start) + len(f"```{language}")
    return README[fence:README.index("```", fence)]


def _section() -> str:
    start = README.index("**Grading from a pod: a Dask cluster of grading hosts.**")
    return README[start:README.index("**What a production hub needs beyond this one.**", start)]


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> str:
    """A TLS handshake between the two contexts over a local socket: "ok" or the client's error."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    outcome = {}

    def serve():
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"x")
        except (ssl.SSLError, OSError) as error:
            outcome["server"] = repr(error)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with client_ctx.wrap_socket(raw) as tls:
                data = tls.recv(1)
        result = "ok" if data == b"x" and "server" not in outcome else f"refused {outcome}"
    except (ssl.SSLError, OSError) as error:
        result = f"refused {error!r}"
    finally:
        thread.join(timeout=10)
        listener.close()
    return result


def test_the_readmes_certificate_block_makes_what_dasks_tls_accepts(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    from distributed import Security

    block = _block("<!-- grading-tls:", "bash")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    for name in ("ca.pem", "grading-host.pem", "grading-host-key.pem", "instructor.pem", "instructor-key.pem"):
        assert (tmp_path / name).is_file(), name
    assert oct((tmp_path / "instructor-key.pem").stat().st_mode & 0o777) == "0o600"

    def files(*names):
        return [str(tmp_path / name) for name in names]

    ca, host, host_key, client, client_key = files("ca.pem", "grading-host.pem", "grading-host-key.pem",
                                                   "instructor.pem", "instructor-key.pem")
    scheduler = Security(tls_ca_file=ca, tls_scheduler_cert=host, tls_scheduler_key=host_key, require_encryption=True)
    server_ctx = scheduler.get_listen_args("scheduler")["ssl_context"]
    instructor = Security(tls_ca_file=ca, tls_client_cert=client, tls_client_key=client_key, require_encryption=True)
    assert _handshake(server_ctx, instructor.get_connection_args("client")["ssl_context"]) == "ok"
    # A client with the course's CA but no certificate of its own (a student who found ca.pem) is refused.
    bare = ssl.create_default_context(cafile=ca)
    bare.check_hostname = False
    assert _handshake(server_ctx, bare).startswith("refused")


def _documents() -> list:
    yaml = pytest.importorskip("yaml")
    return list(yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")))


def _deployment(role: str) -> dict:
    return next(d for d in _documents() if d["kind"] == "Deployment"
                and d["spec"]["template"]["metadata"]["labels"]["role"] == role)


def test_the_workers_get_what_bubblewrap_needs_and_nothing_else():
    pod = _deployment("worker")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert pod["hostUsers"] is False and pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert context == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                       "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "Unconfined"},
                       "appArmorProfile": {"type": "Unconfined"}, "procMount": "Unmasked"}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(key), key
    assert all("hostPath" not in volume for volume in pod["volumes"])


def test_nothing_mounts_the_course_or_the_clients_credentials_and_dask_refuses_plain_connections():
    text = MANIFEST.read_text(encoding="utf-8")
    assert "instructor-key" not in text and "module6-grading-client" not in text
    for role in ("scheduler", "worker"):
        pod = _deployment(role)["spec"]["template"]["spec"]
        secrets = {volume["secret"]["secretName"] for volume in pod["volumes"] if "secret" in volume}
        assert secrets == {"module6-grading-host"}, role
        assert {volume["name"] for volume in pod["volumes"]} == {"tls", "tmp"}, role
        (container,) = pod["containers"]
        assert {"name": "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "value": "True"} in container["env"]
        command = container["command"]
        assert command[:2] == ["dask", role]
        assert "--tls-ca-file" in command and "--tls-cert" in command and "--tls-key" in command
        assert not container["securityContext"].get("privileged")
    worker = _deployment("worker")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert worker[2].startswith("tls://") and worker[worker.index("--nthreads") + 1] == "1"
    scheduler = _deployment("scheduler")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert scheduler[scheduler.index("--protocol") + 1] == "tls"


def test_the_network_policies_let_the_scheduler_take_only_workers_and_instructors():
    policies = {d["metadata"]["name"]: d["spec"] for d in _documents() if d["kind"] == "NetworkPolicy"}
    scheduler = policies["module6-scheduler"]
    sources = [peer for rule in scheduler["ingress"] for peer in rule["from"]]
    labels = [peer["podSelector"]["matchLabels"] for peer in sources]
    assert labels == [{"app": "module6-grading", "role": "worker"}, {"module6/grading-client": "true"}]
    workers = policies["module6-workers"]
    assert set(workers["policyTypes"]) == {"Ingress", "Egress"}
    reach = [peer["podSelector"]["matchLabels"] for rule in workers["egress"] for peer in rule.get("to", [])]
    assert reach == [{"app": "module6-grading", "role": "scheduler"}]


def test_the_readmes_config_lines_name_real_settings_and_limits():
    from autograder.grading.nbgrader_bridge import SandboxedGrade
    from autograder.grading.remote import TRAITS
    from autograder import limits

    section = _section()
    named = re.findall(r"c\.SandboxedGrade\.(\w+) = ", section)
    assert named == list(TRAITS)
    assert all(SandboxedGrade.class_traits()[name].metadata.get("config") for name in named)
    for limit in (limits.DASK_CONNECT_SECONDS, limits.DASK_STALL_SECONDS):
        assert f"`{limit.name}`" in section
    assert "deploy/kubernetes/grading.yaml" in section
