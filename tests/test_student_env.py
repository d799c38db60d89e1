"""The learner's labs ``make lab`` creates: the nbgrader parts they switch off exist and are the right ones.

A disabled plugin id is any string, so a misspelt one would leave an instructor menu on a learner's
screen without a word. These tests read the one list (``tools/student_lab_config.py``, applied to the
student environment and to the self-study server's config folder) and compare it with the plugins and
server extensions that the installed nbgrader really has.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text()


def _tool():
    spec = importlib.util.spec_from_file_location("student_lab_config", ROOT / "tools" / "student_lab_config.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nbgrader_plugin_ids() -> set:
    static = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"
    text = "\n".join(path.read_text(errors="replace") for path in static.glob("*.js"))
    return set(re.findall(r'"@jupyter/nbgrader:([a-z-]+)"', text))


def test_the_lab_plugins_switched_off_exist_and_validate_stays():
    plugins = _nbgrader_plugin_ids()
    assert "validate-assignment" in plugins, plugins
    off = set(_tool().LAB_OFF)
    assert off <= plugins, off - plugins
    assert plugins - off == {"validate-assignment"}, "students keep exactly one nbgrader plugin: Validate"


def test_the_server_extensions_switched_off_exist_and_validate_stays():
    off = list(_tool().SERVER_OFF)
    assert "validate_assignment" not in off
    for name in off + ["validate_assignment"]:
        assert importlib.util.find_spec(f"nbgrader.server_extensions.{name}"), name
    assert {"formgrader", "assignment_list", "course_list"} <= set(off)


def test_the_student_config_makes_validate_run_the_open_checks():
    config = PyFileConfigLoader("student_nbgrader_config.py", path=str(ROOT / "tools")).load_config()
    assert config.Validator.validate_all is True
    assert "$(STUDENT_VENV)/bin/python tools/student_lab_config.py sys_prefix" in MAKEFILE
    assert "JUPYTER_CONFIG_DIR=$(CURDIR)/$(SELFSTUDY_JUPYTER) $(PY) tools/student_lab_config.py user" in MAKEFILE


def test_the_config_written_switches_the_tools_off_and_keeps_other_settings(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    page = tmp_path / "labconfig" / "page_config.json"
    page.parent.mkdir()
    page.write_text(json.dumps({"disabledExtensions": {"some-other:plugin": True}, "other": 1}))
    tool = _tool()
    assert tool.apply("user") == tmp_path
    written = json.loads(page.read_text())
    assert written["other"] == 1 and written["disabledExtensions"]["some-other:plugin"] is True
    for name in tool.LAB_OFF:
        assert written["disabledExtensions"][f"@jupyter/nbgrader:{name}"] is True
        assert written["lockedExtensions"][f"@jupyter/nbgrader:{name}"] is True
    server = json.loads((tmp_path / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert server == {f"nbgrader.server_extensions.{name}": False for name in tool.SERVER_OFF}
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.Validator.validate_all is True


def test_the_student_environment_installs_the_student_package_not_the_instructor_one():
    install = re.search(r"^\t\$\(STUDENT_VENV\)/bin/python -m pip install --quiet (\./course .+)$", MAKEFILE, flags=re.M)
    assert install, "the student environment's install line is missing"
    words = install.group(1).split()
    assert "./course" in words and "." not in words and not any("instructor" in w for w in words), words


def _load_patcher():
    spec = importlib.util.spec_from_file_location("student_validate_message", ROOT / "tools" / "student_validate_message.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_validate_sentence_to_reword_is_in_the_installed_nbgrader_exactly_once():
    patcher = _load_patcher()
    texts = [p.read_text(errors="replace") for p in patcher.static_dir(Path(sys.prefix)).glob("*.js")]
    assert sum(text.count(patcher.NBGRADER_SUCCESS) for text in texts) == 1


def test_rewording_validate_replaces_the_claim_once_and_fails_loudly_elsewhere(tmp_path):
    import pytest

    patcher = _load_patcher()
    target = patcher.static_dir(tmp_path)
    shutil.copytree(patcher.static_dir(Path(sys.prefix)), target)
    patched = patcher.patch(tmp_path)
    text = patched.read_text()
    assert patcher.NBGRADER_SUCCESS not in text and text.count(patcher.TRUTHFUL_SUCCESS) == 1
    assert "passes all the tests" not in patcher.TRUTHFUL_SUCCESS
    assert patcher.patch(tmp_path) == patched and patched.read_text() == text  # a rerun changes nothing
    with pytest.raises(SystemExit, match="no nbgrader labextension"):
        patcher.patch(tmp_path / "elsewhere")
    patched.write_text(text.replace(patcher.TRUTHFUL_SUCCESS, "something else"))
    with pytest.raises(SystemExit, match="exactly once"):
        patcher.patch(tmp_path)
    assert "tools/student_validate_message.py $(STUDENT_VENV)" in MAKEFILE


def test_make_lab_prints_both_addresses_last_with_what_submitting_means():
    spec = importlib.util.spec_from_file_location("run_lab", ROOT / "tools" / "run_lab.py")
    run_lab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_lab)
    text = run_lab.banner((Path("/x/graded"), "8888", "aa"), (Path("/x/selfstudy"), "8889", "bb"))
    lines = text.strip().splitlines()
    assert "http://127.0.0.1:8888/lab?token=aa" in text and "http://127.0.0.1:8889/lab?token=bb" in text
    assert "Submitting: this lab has no submit button" in text
    assert 'LAB_ARGS="--allow-root --no-browser' in text
    assert lines[-1] == lines[0] == "=" * 78  # one framed block, printed after the servers answered
    assert "tools/run_lab.py" in MAKEFILE and 'LAB_ARGS="--allow-root --no-browser' in (ROOT / "README.md").read_text()
