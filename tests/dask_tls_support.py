"""A grading host for tests: a course CA, throwaway certificates, and a real Dask scheduler and worker
started with the ``dask`` command over ``tls://`` exactly as the README's "Grading from a pod" starts them.

The certificates are made with the ``cryptography`` package (a dependency of the test environment: it
comes with JupyterHub); a second, unrelated CA signs a "stranger" certificate, as a student could make.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).parent / "dask"
PODLIKE = REPO / "deploy" / "hub" / "podlike.py"


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(folder: Path, stem: str, cert, key) -> tuple:
    from cryptography.hazmat.primitives import serialization
    cert_path, key_path = folder / f"{stem}.pem", folder / f"{stem}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return str(cert_path), str(key_path)


def _authority(common: str):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(common: str, ca_cert, ca_key):
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def make_pki(folder: Path) -> dict:
    """The course's CA, the grading host's certificate (scheduler and workers), the instructor's client
    certificate, and a stranger's CA and client certificate: ``name -> path``."""
    from cryptography.hazmat.primitives import serialization
    folder.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _authority("module6 course CA")
    paths = {"ca": str(folder / "ca.pem")}
    Path(paths["ca"]).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths["host"], paths["host_key"] = _write(folder, "grading-host", *_leaf("grading-host", ca_cert, ca_key))
    paths["client"], paths["client_key"] = _write(folder, "instructor", *_leaf("instructor", ca_cert, ca_key))
    other_cert, other_key = _authority("a student's own CA")
    paths["stranger_ca"] = str(folder / "stranger-ca.pem")
    Path(paths["stranger_ca"]).write_bytes(other_cert.public_bytes(serialization.Encoding.PEM))
    paths["stranger"], paths["stranger_key"] = _write(folder, "stranger", *_leaf("instructor", other_cert, other_key))
    return paths


def dask_env() -> dict:
    """The environment of the grading host's processes: Dask refuses every unencrypted connection."""
    return dict(os.environ, DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION="True",
                DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING="True")


def _start(command: list, log: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env or dask_env(),
                            cwd=log.parent, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    """Stop a process this module started, and its own children (its session)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def start_scheduler(folder: Path, pki: dict, env: dict | None = None) -> tuple:
    """``(process, address)`` of ``dask scheduler`` over TLS on a free port of 127.0.0.1."""
    info = folder / "scheduler.json"
    info.unlink(missing_ok=True)
    proc = _start([str(DASK), "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0",
                   "--no-dashboard", "--scheduler-file", str(info), "--tls-ca-file", pki["ca"],
                   "--tls-cert", pki["host"], "--tls-key", pki["host_key"]], folder / "scheduler.log", env)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if info.is_file():
            with contextlib.suppress(ValueError):
                return proc, json.loads(info.read_text())["address"]
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError("the Dask scheduler did not start: " + (folder / "scheduler.log").read_text()[-2000:])


def start_workers(folder: Path, pki: dict, address: str, n: int = 1, *, podlike: bool = False, name: str = "w",
                  env: dict | None = None) -> subprocess.Popen:
    """``dask worker`` (``n`` processes of one thread, under nannies) on the scheduler at ``address``;
    ``podlike`` starts it as a container pod would (no namespaces: it cannot sandbox)."""
    command = [str(DASK), "worker", address, "--nworkers", str(n), "--nthreads", "1", "--name", name,
               "--no-dashboard", "--memory-limit", "0", "--tls-ca-file", pki["ca"], "--tls-cert", pki["host"],
               "--tls-key", pki["host_key"]]
    if podlike:
        command = [sys.executable, str(PODLIKE), "--", *command]
    return _start(command, folder / f"worker-{name}.log", env)


def client(address: str, pki: dict, **kw):
    from distributed import Client, Security
    security = Security(tls_ca_file=pki["ca"], tls_client_cert=pki["client"], tls_client_key=pki["client_key"],
                        require_encryption=True)
    return Client(address, security=security, set_as_default=False, **kw)


def wait_for_workers(address: str, pki: dict, n: int, timeout: float = 120) -> None:
    with client(address, pki, timeout=30) as c:
        c.wait_for_workers(n, timeout=timeout)


def config_lines(address: str, pki: dict) -> str:
    """The course's ``nbgrader_config.py`` lines of the README (the one setting and its TLS files)."""
    return (f"c.SandboxedGrade.dask_scheduler = {address!r}\n"
            f"c.SandboxedGrade.dask_tls_ca_file = {pki['ca']!r}\n"
            f"c.SandboxedGrade.dask_tls_client_cert = {pki['client']!r}\n"
            f"c.SandboxedGrade.dask_tls_client_key = {pki['client_key']!r}\n")
