"""autograder/feedback/formgrader_guard.py without a browser: every formgrader page template, rendered with
hostile values, holds them only as text (HTML-escaped, or a JSON string inside a script); every script the
templates hold carries the page's nonce; the policy runs nothing else.

The same pages in chromium, stored and reflected: tests/browser/test_formgrader_guard_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import jinja2
import nbgrader
import pytest
from hostile.markdown_payloads import PAYLOADS

from autograder.feedback import formgrader_guard
from autograder.feedback.formgrader_guard import SafeTemplateLoader, content_security_policy, guard_template

TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
# formgrade_404.tpl imports a 'formgrade_macros.tpl' that nbgrader==0.9.6 does not ship (its macros are
# formgrade/formgrade_macros.html.j2): that page never renders, guarded or not (formgrader answers 500).
PAGES = sorted(p.name for p in TEMPLATES.glob("*.tpl") if not p.name.startswith("base") and p.name != "formgrade_404.tpl")
HOSTILE = [p.text for p in PAYLOADS if "<" in p.text or '"' in p.text][:12] + [
    '"; window.__pwned = 1; //', "</script><script>window.__pwned=1</script>", "\\u0022+alert(1)+\\u0022"]
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=SafeTemplateLoader(jinja2.FileSystemLoader([str(TEMPLATES)]),
                                                               escape_resources=False), autoescape=True)
    environment.globals["csp_nonce"] = lambda: "NONCE"
    return environment


def _values(hostile: str) -> dict:
    keys = ("student_id", "assignment_id", "notebook_id", "base_url", "default_timezone", "exchange",
            "course_dir", "current_config", "error_code")
    return {key: hostile for key in keys} | {"url_prefix": "", "windows": False, "exchange_missing": False}


def test_a_js_string_built_from_a_value_becomes_one_json_string():
    assert guard_template('<script>\nvar a = "{{ x }}";\nvar b = "{{ y }}/formgrader";\n</script>',
                          escape_resources=False) == (
        '<script nonce="{{ csp_nonce() }}">\nvar a = {{ ((x))|tojson }};\nvar b = {{ ((y) ~ "/formgrader")|tojson }};\n'
        '</script>')


def test_without_escaping_the_scripts_still_carry_the_nonce():
    """Layer 2 stands on its own: with escaping off (as the browser test shows the policy alone) the
    template's values stay raw, and each of its scripts still carries the page's nonce."""
    source = '<b>{{ resources.student }}</b><script src="x.js"></script><script>\nvar a = "{{ x }}";\n</script>'
    assert guard_template(source, escape_resources=True, escape=False) == (
        '<b>{{ resources.student }}</b><script nonce="{{ csp_nonce() }}" src="x.js"></script>'
        '<script nonce="{{ csp_nonce() }}">\nvar a = "{{ x }}";\n</script>')


def test_resources_outside_scripts_are_escaped_in_nbconverts_templates():
    source = '<title>{{ resources.notebook_id }}</title><span>{{resources.student}}</span><b>{{ resources.index + 1 }}</b>'
    assert guard_template(source, escape_resources=True) == (
        '<title>{{ resources.notebook_id|e }}</title><span>{{ resources.student|e }}</span>'
        '<b>{{ resources.index + 1 }}</b>')


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_every_formgrader_page_holds_hostile_values_as_text(page, hostile):
    html = _environment().get_template(page).render(**_values(hostile))
    scripts = SCRIPT.findall(html)
    assert scripts and all('nonce="NONCE"' in attributes for attributes, _ in scripts)
    outside = SCRIPT.sub("", html)
    if "<" in hostile:
        assert hostile not in outside and hostile not in html
    for _, body in scripts:  # a value in a script is a JSON string: it parses back to itself, and cannot close the script
        for literal in re.findall(r'=\s*("(?:[^"\\]|\\.)*");', body):
            assert json.loads(literal) in (hostile, hostile + "/formgrader") or "{{" not in literal
        assert "</" not in body.replace("</script>", "")


def test_the_grading_views_templates_escape_the_students_id_and_names():
    exporter = formgrader_guard.guarded_exporter_class()(
        template_name="formgrade", extra_template_basedirs=[str(TEMPLATES)])
    hostile = '<img src=x onerror="window.__pwned=1">'
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("text")])
    resources = {"assignment_id": "ps1", "notebook_id": "nb", "submission_id": "abc", "index": 0, "total": 1,
                 "base_url": "", "student": hostile, "last_name": hostile, "first_name": hostile,
                 "notebook_path": f"autograded/{hostile}/ps1/nb.ipynb"}
    html, _ = exporter.from_notebook_node(nb, resources=resources)
    assert hostile not in html and "&lt;img src=x onerror=" in html
    assert all("nonce=" in attributes for attributes, _ in SCRIPT.findall(html))


def test_the_policy_allows_scripts_by_nonce_and_the_templates_event_handlers_by_hash():
    policy = content_security_policy("abc")
    scripts = next(part for part in policy.split("; ") if part.startswith("script-src "))
    assert "'nonce-abc'" in scripts and "'strict-dynamic'" in scripts and "'self'" not in scripts
    assert "'unsafe-inline'" not in scripts and "'unsafe-eval'" not in scripts
    expected = base64.b64encode(hashlib.sha256(b"toggleAllNames()").digest()).decode()
    assert f"'sha256-{expected}'" in scripts
    assert "object-src 'none'" in policy and "base-uri 'none'" in policy


def test_installing_outside_a_formgrader_server_does_nothing(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, formgrader_guard.FORMGRADER, raising=False)
    assert formgrader_guard.guard_templates() is False and formgrader_guard.add_content_security_policy() is False
