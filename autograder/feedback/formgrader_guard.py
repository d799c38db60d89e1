"""Formgrader's pages show what students control as text, and run no script they did not bring.

nbgrader==0.9.6's formgrader renders its pages with templates that escape nothing:

- ``server_extensions/formgrader/formgrader.py``, ``FormgradeExtension.init_tornado_settings``, makes its
  Jinja environment with ``Environment(loader=FileSystemLoader(...))`` (no ``autoescape``), and its pages put
  ids into script blocks as ``var student_id = "{{ student_id }}";`` (``manage_students_assignments.tpl``
  and others), from the gradebook or from the URL (``/formgrader/manage_students/<id>``);
- its grading view is nbconvert's ``HTMLExporter`` with the ``formgrade`` template, which writes the
  student's id and names (``{{ resources.student }}``, ``last_name``, ``first_name``, ``notebook_path``) raw.

So an id or a name holding HTML runs script in the instructor's session, with the instructor's Jupyter API.
Ids of the kit's safe form never hold any (:mod:`autograder.student_ids`, enforced where ids enter), but
names come from rosters (and LMSs let students set their names), and a guard that depends on every door
being right is one mistake from failing. Two layers, each on its own:

1. Escaping (:data:`ESCAPE`): the templates are read through :class:`SafeTemplateLoader`, which turns
   every JavaScript string built from a template value into ``{{ ...|tojson }}`` (a JSON string, with
   ``<``, ``>``, ``&`` and quotes escaped) and, in nbconvert's templates, every ``{{ resources.NAME }}``
   outside a script into ``{{ resources.NAME|e }}``; formgrader's own pages also get Jinja's ``autoescape``.
2. The policy (:func:`add_content_security_policy`): every formgrader page is sent with a
   Content-Security-Policy whose scripts are only those carrying the page's one-time nonce (the same
   loader adds it to each ``<script`` of the templates, never to template *values*, escaping or not)
   or loaded by them (``'strict-dynamic'``),
   and the few fixed event handlers of nbgrader's templates by their hash (``'unsafe-hashes'``). An
   injected ``<script>`` or ``onerror=`` does not run, even where escaping were missed. (Text that
   closes a JavaScript string inside one of the page's own scripts runs in that script, nonce and all:
   no policy can stop it; layer 1 does.)

Both are installed from the course's ``nbgrader_config.py`` (:func:`install`, through
:func:`autograder.feedback.nbgrader_pages.configure`): the Jupyter server loads that file while formgrader
starts, before it makes its environment and handlers, which the two layers wrap. On the command line
(no formgrader module loaded) :func:`install` does nothing.
"""

from __future__ import annotations

import base64
import contextvars
import functools
import hashlib
import json
import re
import secrets
import sys
from pathlib import Path

import jinja2

FORMGRADER = "nbgrader.server_extensions.formgrader.formgrader"
_SCRIPT_BLOCK = re.compile(r"(<script\b)([^>]*>)(.*?)(</script>)", re.S | re.I)
_SCRIPT_OPEN = re.compile(r"<script\b", re.I)
_JS_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*\{\{.*?\}\}(?:[^"\\\n]|\\.)*)"')
_VALUE = re.compile(r"\{\{(.*?)\}\}")
_RESOURCE = re.compile(r"\{\{-?\s*(resources\.[A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
_HANDLER = re.compile(r"""\son[a-z]+=(?:"([^"]*)"|'([^']*)')""", re.I)
#: The nonce of the page being rendered. A function reads it (``{{ csp_nonce() }}``), not a template value:
#: Jinja keeps an imported macro file's module, with the values it saw, from one page to the next.
_NONCE = contextvars.ContextVar("module6_csp_nonce", default="")


def csp_nonce() -> str:
    """The nonce of the page being rendered (a Jinja global of both template environments)."""
    return _NONCE.get()


def _json_string(literal: str) -> str:
    """A JavaScript string literal's template text as one ``tojson`` expression: ``"a{{ x }}b"`` ->
    ``{{ ("a" ~ (x) ~ "b")|tojson }}``."""
    parts = _VALUE.split(literal)
    terms = []
    for index, part in enumerate(parts):
        if index % 2:
            terms.append(f"({part.strip()})")
        elif part:
            terms.append(json.dumps(json.loads(f'"{part}"')))
    return "{{ (" + " ~ ".join(terms) + ")|tojson }}"


def guard_template(source: str, *, escape_resources: bool, escape: bool = True) -> str:
    """A template's source with a nonce on each script and, with ``escape``, its script values as JSON and
    (nbconvert's templates, ``escape_resources``) ``resources`` values escaped outside scripts."""
    escape_resources = escape_resources and escape
    pieces, last = [], 0
    for match in _SCRIPT_BLOCK.finditer(source):
        before = source[last:match.start()]
        pieces.append(_RESOURCE.sub(r"{{ \1|e }}", before) if escape_resources else before)
        opening, rest, body, closing = match.groups()
        if escape:
            body = _JS_STRING.sub(lambda m: _json_string(m.group(1)), body)
        pieces.append(f'{opening} nonce="{{{{ csp_nonce() }}}}"{rest}{body}{closing}')
        last = match.end()
    tail = source[last:]
    pieces.append(_RESOURCE.sub(r"{{ \1|e }}", tail) if escape_resources else tail)
    return "".join(pieces)


class SafeTemplateLoader(jinja2.BaseLoader):
    """Another loader's templates, read through :func:`guard_template`."""

    def __init__(self, inner: jinja2.BaseLoader, *, escape_resources: bool, escape: bool = True):
        self.inner = inner
        self.escape_resources = escape_resources
        self.escape = escape

    def get_source(self, environment, template):
        source, filename, uptodate = self.inner.get_source(environment, template)
        return (guard_template(source, escape_resources=self.escape_resources, escape=self.escape), filename,
                uptodate)

    def list_templates(self):
        return self.inner.list_templates()


@functools.lru_cache(maxsize=1)
def handler_hashes() -> tuple:
    """CSP hashes of the inline event handlers in nbgrader's formgrader templates (``onclick="..."``)."""
    import nbgrader

    root = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    found = set()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".tpl", ".j2"):
            for match in _HANDLER.finditer(path.read_text(encoding="utf-8")):
                code = match.group(1) if match.group(1) is not None else match.group(2)
                digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
                found.add(f"'sha256-{digest}'")
    return tuple(sorted(found))


def content_security_policy(nonce: str) -> str:
    """The policy of a formgrader page whose own scripts carry ``nonce``."""
    scripts = " ".join([f"'nonce-{nonce}'", "'strict-dynamic'", "'unsafe-hashes'", *handler_hashes()])
    return "; ".join([
        "default-src 'self'",
        f"script-src {scripts}",
        "object-src 'none'",
        "base-uri 'none'",
        # formgrader's and nbconvert's inline styles; MathJax (nbconvert's default from a CDN) draws
        # with fonts and styles of its own origin.
        "style-src 'self' 'unsafe-inline' https:",
        "font-src 'self' data: https:",
        "img-src 'self' data:",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


def _formgrader_modules():
    module = sys.modules.get(FORMGRADER)
    if module is None:
        return None
    from nbgrader.server_extensions.formgrader import base

    return module, base


#: Layer 1 on. Only a test switches it off (in the course's ``nbgrader_config.py``), to show layer 2 alone.
ESCAPE = True


def guard_templates() -> bool:
    """Formgrader's two template environments read through :class:`SafeTemplateLoader`: a nonce on each
    script (layer 2's) and, with :data:`ESCAPE`, the values escaped (layer 1). True when formgrader is
    loading in this process and is now guarded."""
    modules = _formgrader_modules()
    if modules is None:
        return False
    module, _ = modules
    extension = module.FormgradeExtension
    if getattr(extension, "_module6_guarded", False):
        return True
    original = extension.init_tornado_settings

    def init_tornado_settings(self, webapp):
        original(self, webapp)
        settings = webapp.settings
        pages = settings["nbgrader_jinja2_env"]
        guarded = jinja2.Environment(loader=SafeTemplateLoader(pages.loader, escape_resources=False, escape=ESCAPE),
                                     autoescape=ESCAPE)
        guarded.globals["csp_nonce"] = csp_nonce
        settings["nbgrader_jinja2_env"] = guarded
        settings["nbgrader_exporter"] = guarded_exporter_class()(config=settings["nbgrader_exporter"].config)

    extension.init_tornado_settings = init_tornado_settings
    extension._module6_guarded = True
    return True


def add_content_security_policy() -> bool:
    """Layer 2 (module docstring). True when formgrader is loading in this process and is now guarded."""
    modules = _formgrader_modules()
    if modules is None:
        return False
    _, base = modules
    handler = base.BaseHandler
    if getattr(handler, "_module6_csp", False):
        return True
    render, exporter = handler.render, handler.exporter

    def page_nonce(self) -> str:
        if getattr(self, "_module6_nonce", None) is None:
            self._module6_nonce = secrets.token_urlsafe(18)
        return self._module6_nonce

    def page_policy(self) -> str:
        return content_security_policy(page_nonce(self))

    def render_with_nonce(self, name, **ns):
        token = _NONCE.set(page_nonce(self))
        try:
            return render(self, name, **ns)
        finally:
            _NONCE.reset(token)

    def nonced_exporter(self):
        return _NoncedExporter(exporter.fget(self), page_nonce(self))

    handler.content_security_policy = property(page_policy)
    handler.render = render_with_nonce
    handler.exporter = property(nonced_exporter)
    handler._module6_csp = True
    return True


def install(c=None) -> None:
    """Both layers, when formgrader is loading in this process (the course's ``nbgrader_config.py``)."""
    guard_templates()
    add_content_security_policy()


class _NoncedExporter:
    """Formgrader's exporter for one request: its templates' ``{{ csp_nonce() }}`` is that request's nonce."""

    def __init__(self, exporter, nonce: str):
        self._exporter, self._nonce = exporter, nonce

    def from_filename(self, filename, resources=None, **kw):
        token = _NONCE.set(self._nonce)
        try:
            return self._exporter.from_filename(filename, resources=resources, **kw)
        finally:
            _NONCE.reset(token)

    def __getattr__(self, name):
        return getattr(self._exporter, name)


@functools.lru_cache(maxsize=1)
def guarded_exporter_class():
    """nbconvert's ``HTMLExporter`` whose templates are read through :class:`SafeTemplateLoader` (nbconvert is
    imported only when formgrader needs it)."""
    from nbconvert.exporters import HTMLExporter

    class GuardedExporter(HTMLExporter):
        """formgrader's ``HTMLExporter`` (the kit's ``c.HTMLExporter`` settings apply), its templates guarded."""

        def _create_environment(self):
            environment = super()._create_environment()
            environment.loader = SafeTemplateLoader(environment.loader, escape_resources=True, escape=ESCAPE)
            environment.globals["csp_nonce"] = csp_nonce
            return environment

    return GuardedExporter


__all__ = ["ESCAPE", "SafeTemplateLoader", "add_content_security_policy", "content_security_policy", "csp_nonce",
           "guard_templates",
           "guard_template", "guarded_exporter_class", "handler_hashes", "install"]
