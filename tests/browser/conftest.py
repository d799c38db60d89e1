"""A reusable JupyterLab + Playwright harness for tests that drive notebooks in a real browser.

One JupyterLab server per test session serves a scratch directory; tests copy the
notebooks they need into it (never opening ``release/`` itself), open them in
headless Debian chromium and get a Playwright ``Page`` back.

Fixtures
--------
``jupyter_lab``
    The session's :class:`LabServer` (``url``, ``token``, ``root_dir``, ``api()``).
``browser``
    A Playwright chromium ``Browser`` launched from ``/usr/bin/chromium``.
``open_notebook``
    ``open_notebook(path, run_all=True) -> NotebookPage``: copy a notebook into the
    lab's scratch directory, open it, wait for the kernel, optionally Run All.
``screenshot_dir``
    A fresh folder under the system temp dir; printed at the end of the run.

Use :func:`start_jupyter_lab` directly to serve another directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"
LAB_SETTINGS = {
    # A news pop-up would cover part of the page.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    # Render every cell, so locators find cells outside the viewport.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

_screenshot_dirs: list[Path] = []


def _missing_browser_stack() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    """A running JupyterLab server started by :func:`start_jupyter_lab`."""

    url: str
    token: str
    root_dir: Path
    process: subprocess.Popen
    log_path: Path

    def api(self, method: str, path: str) -> object:
        """Call the server's REST API (``path`` like ``/api/sessions``); returns decoded JSON."""
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def lab_url(self, relative: str) -> str:
        # ``reset`` drops the saved workspace, so notebooks of earlier tests do not reopen.
        return f"{self.url}/lab/tree/{relative}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """End every session (and its kernel) so the next test starts clean."""
        for session in self.api("GET", "/api/sessions") or []:
            with contextlib.suppress(urllib.error.URLError):
                self.api("DELETE", f"/api/sessions/{session['id']}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def learner_config(config_dir: Path) -> Path:
    """Switch nbgrader's instructor tools off in ``config_dir`` exactly as ``make lab`` does for both
    flavours (``tools/student_lab_config.py``; Validate then runs with ``validate_all``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("student_lab_config", REPO / "tools" / "student_lab_config.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.apply("user", target=config_dir)


@contextlib.contextmanager
def start_jupyter_lab(root_dir: Path, *, timeout: float = 90.0, learner: bool = False):
    """Serve ``root_dir`` with JupyterLab on a free port with a token; stop it on exit.

    The server (and the kernels it starts) get fresh settings, workspace, runtime
    and IPython directories, and ``PYTHONPATH`` pointing at this checkout. ``learner=True``
    configures it as ``make lab`` configures a learner's server (:func:`learner_config`).
    """
    root_dir = Path(root_dir).resolve()
    state = Path(tempfile.mkdtemp(prefix="m6-lab-state-"))
    settings = state / "settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    if learner:
        learner_config(state / "config")
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "IPYTHONDIR": str(state / "ipython"),
        "MPLBACKEND": "Agg",
    })
    log_path = state / "lab.log"
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}", f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={state / 'workspaces'}", "--ServerApp.port_retries=0",
    ]
    with open(log_path, "wb") as log:
        # Its own process group, so stopping it also stops the kernels it started.
        process = subprocess.Popen(command, cwd=root_dir, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = LabServer(f"http://127.0.0.1:{port}", token, root_dir, process, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n{server.log()}")
            try:
                server.api("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter lab did not answer in {timeout} s:\n{server.log()}")
                time.sleep(0.25)
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.shutdown_kernels()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        shutil.rmtree(state, ignore_errors=True)


@dataclass
class NotebookPage:
    """An open notebook: the Playwright ``page`` plus helpers for cells."""

    page: object
    path: Path
    cells: list = field(default_factory=list)

    def cell(self, index: int):
        """Locator of the ``index``-th cell (all cell types count, as in the .ipynb)."""
        return self.panel.locator(".jp-Notebook .jp-Cell").nth(index)

    @property
    def panel(self):
        """The notebook panel on show (other tabs are hidden)."""
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first

    def wait_idle(self, timeout: float = 60_000) -> None:
        """Wait until the kernel is idle and no cell is queued or running."""
        self.page.get_by_text(KERNEL_IDLE).first.wait_for(timeout=timeout)
        self.page.wait_for_function(
            """() => [...document.querySelectorAll(
                       '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-InputPrompt')]
                       .every(p => !p.textContent.includes('*'))""",
            timeout=timeout)
        self.page.get_by_text(KERNEL_IDLE).first.wait_for(timeout=timeout)

    def run_all(self, gate: Path | None = None) -> None:
        """Run > Run All Cells (JupyterLab stops at the first cell that raises).

        ``gate``: a file that a cell early in the notebook waits for; it is created once the last code
        cell shows as queued (JupyterLab sends Run All's requests in order, in one go), so that every
        request has been sent before any later cell raises.
        """
        started = """() => [...document.querySelectorAll(
                       '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                       .some(p => /\\[(\\d+|\\*)\\]/.test(p.textContent))"""
        for attempt in range(3):
            # A click that lands while the page is still settling can be lost: try again.
            self.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            self.page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(
                "Run All Cells", exact=True).click()
            try:
                self.page.wait_for_function(started, timeout=15_000)
                break
            except Exception:
                if attempt == 2:
                    raise
                self.page.keyboard.press("Escape")
        if gate is not None:
            self.page.wait_for_function(
                """() => [...document.querySelectorAll(
                           '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                           .at(-1).textContent.includes('*')""",
                timeout=60_000)
            gate.touch()
        self.wait_idle()

    def run_cell(self, index: int) -> None:
        """Select the ``index``-th cell and run it (Ctrl+Enter)."""
        self.cell(index).locator(".jp-InputPrompt").first.click()
        self.page.keyboard.press("Control+Enter")
        self.page.wait_for_timeout(200)
        self.wait_idle()


def _require_browser_stack() -> None:
    """Skip locally when chromium/playwright are missing; under CI (``CI=true``) that is a failure."""
    missing = _missing_browser_stack()
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory):
    _require_browser_stack()
    root = tmp_path_factory.mktemp("lab-root")
    with start_jupyter_lab(root) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    _require_browser_stack()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(tempfile.gettempdir()) / "module6-browser-screenshots" / f"{stamp}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    _screenshot_dirs.append(path)
    print(f"\nbrowser screenshots: {path}")
    return path


@pytest.fixture
def open_notebook(jupyter_lab, browser, screenshot_dir, request):
    """Return ``open(path, run_all=True) -> NotebookPage``; pages and kernels end with the test."""
    pages = []
    # Tall enough that a whole explorer fits: the notebook scrolls inside the page, so an
    # element screenshot cannot show what lies below the viewport.
    context = browser.new_context(viewport={"width": 1400, "height": 2000})

    def open_(path: Path | str, *, run_all: bool = True, name: str | None = None) -> NotebookPage:
        source = Path(path)
        folder = jupyter_lab.root_dir / f"{request.node.name}-{len(pages)}".replace("/", "_")
        for bad in "[]":
            folder = folder.with_name(folder.name.replace(bad, "_"))
        folder.mkdir(parents=True, exist_ok=True)
        copy = folder / (name or source.name)
        shutil.copyfile(source, copy)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(jupyter_lab.lab_url(copy.relative_to(jupyter_lab.root_dir).as_posix()))
        notebook = NotebookPage(page, copy, json.loads(copy.read_text())["cells"])
        pages.append(notebook)
        try:
            notebook.cell(0).wait_for(timeout=60_000)
            notebook.wait_idle()
            if run_all:
                notebook.run_all()
        except Exception:
            failure = screenshot_dir / f"FAILED-{copy.stem}-{folder.name}.png"
            page.screenshot(path=str(failure), full_page=True)
            print(f"page at failure: {failure}")
            raise
        return notebook

    yield open_
    for notebook in pages:
        with contextlib.suppress(Exception):
            notebook.page.close()
    context.close()
    jupyter_lab.shutdown_kernels()


def pytest_terminal_summary(terminalreporter):
    for path in _screenshot_dirs:
        terminalreporter.write_line(f"browser screenshots saved in {path}")
