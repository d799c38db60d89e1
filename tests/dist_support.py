"""Build the two wheels and install them, non-editable, into fresh virtual environments.

Tests that matter for trust use the layout users have: a student's ``pip install module6-course``
and an instructor's ``pip install module6-instructor``, not this checkout's editable install.
Dependencies come from the package index through pip's cache (warm after ``make``'s install).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from tests.run_cache import built_once

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Wheels:
    student: Path
    instructor: Path


# What a wheel build never needs: environments, VCS data, caches and earlier build output.
_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__",
                                     ".pytest_cache", ".hypothesis", "node_modules")


def build_wheels(dest: Path) -> Wheels:
    """``pip wheel --no-deps`` of ``course/`` and of the repository root into ``dest``.

    Each build runs on a private copy of the source tree: setuptools stages files in the project's own
    ``build/lib``, so two builds of one checkout at once (two test workers, or ``make dist`` alongside)
    removed each other's staged files, and a wheel came out missing modules (seen under load).
    """
    dest.mkdir(parents=True, exist_ok=True)
    source = dest.parent / f"{dest.name}-source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    for project in (source / "course", source):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dest), str(project)],
                       check=True, capture_output=True, timeout=600, cwd=dest)
    return _wheels_in(dest)


def shared_wheels(tmp_path_factory) -> Wheels:
    """The two wheels, built once per test run and read by every test (and xdist worker) that needs them.

    Tests only read the wheels (list, unzip, install them into their own fresh venvs), so one build
    serves them all (:func:`tests.run_cache.built_once`).
    """
    def build(folder: Path) -> None:
        build_wheels(folder / "dist")
        shutil.rmtree(folder / "dist-source")  # the build's private copy of the sources

    return _wheels_in(built_once(tmp_path_factory, "wheels", build) / "dist")


def _wheels_in(dest: Path) -> Wheels:
    student = sorted(dest.glob("module6_course-*.whl"))
    instructor = sorted(dest.glob("module6_instructor-*.whl"))
    assert len(student) == 1 and len(instructor) == 1, sorted(p.name for p in dest.iterdir())
    return Wheels(student[0], instructor[0])


def fresh_venv(path: Path, *requirements: str) -> Path:
    """A new virtualenv at ``path`` with ``requirements`` (wheel paths or names) installed; its python.

    uv (a test dependency) installs the instructor wheel's Jupyter stack in seconds where pip takes
    minutes; pip is the fallback. Either way the venv starts empty: nothing of this checkout's
    environment is visible in it.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    python = path / "bin" / "python"
    if shutil.which("uv") or _has_uv():
        env.setdefault("UV_NATIVE_TLS", "1")  # the system's certificates, as pip uses them here
        uv = [sys.executable, "-m", "uv"]
        base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        steps = [[*uv, "venv", "--quiet", "--seed", "--python", base, str(path)],
                 [*uv, "pip", "install", "--quiet", "--python", str(python), *map(str, requirements)]]
    else:
        venv.EnvBuilder(with_pip=True, clear=True, symlinks=True).create(path)
        steps = [[str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  *map(str, requirements)]]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=1200, env=env)
        assert result.returncode == 0, (step, result.stdout[-3000:] + result.stderr[-3000:])
    return python


def _has_uv() -> bool:
    try:
        import uv  # noqa: F401
    except ImportError:
        return False
    return True


def run_python(python: Path, code: str, *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` with ``python`` in ``cwd`` (never this checkout, so nothing of it is importable)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([str(python), "-I", "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)
