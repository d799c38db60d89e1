"""Does an HTML fragment hold only what :mod:`autograder.feedback.markdown`'s allow-list allows?

Parsed with the standard library's ``html.parser`` (not with the sanitizer under test): every element
must be in ``TAGS``, every attribute in ``ATTRIBUTES`` (plus the ``rel`` the sanitizer sets on links,
``class="tex"`` on the code of an unreadable formula and the frozen cell's wrapper), and every URL an
``http:``, ``https:`` or ``mailto:`` one.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

from autograder.feedback.markdown import ATTRIBUTES, TAGS, URL_SCHEMES, WRAPPER_CLASSES

VOID = {"br", "hr", "img", "input", "meta", "link", "base", "area", "col", "embed", "source", "track", "wbr"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "srcdoc", "background", "poster"}


def url_is_inert(value: str) -> bool:
    """``value`` (an attribute value, references already decoded) names an allowed scheme."""
    cleaned = "".join(ch for ch in html.unescape(value) if ch > " ").lower()
    return any(cleaned.startswith(scheme + ":") for scheme in URL_SCHEMES)


def attribute_allowed(tag: str, name: str, value: str | None) -> bool:
    if name in ATTRIBUTES.get(tag, ()):
        return name not in URL_ATTRIBUTES or url_is_inert(value or "")
    if tag == "a" and name == "rel":
        return value == "noopener noreferrer"
    if tag == "code" and name == "class":
        return value in ("tex", "")  # the one class kept, or what is left when another was dropped
    return tag == "div" and name == "class" and value == WRAPPER_CLASSES


class _Collector(HTMLParser):
    def __init__(self, inside=None):
        super().__init__(convert_charrefs=True)
        self.inside = inside  # None: the whole fragment; else a predicate on (tag, attrs) opening a region
        self.depth = 0 if inside is not None else 1
        self.stack: list = []
        self.elements: list = []
        self.regions = 0

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.elements.append((tag, attrs))
            if tag not in VOID:
                self.depth += 1
        elif self.inside(tag, dict(attrs)):
            self.regions += 1
            if tag not in VOID:
                self.depth = 1

    def handle_startendtag(self, tag, attrs):
        if self.depth:
            self.elements.append((tag, attrs))

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID:
            self.depth -= 1
            if self.inside is None:
                self.depth = max(self.depth, 1)


def violations(fragment: str, inside=None) -> list:
    """Every element or attribute of ``fragment`` (or of the regions ``inside`` opens) off the allow-list."""
    collector = _Collector(inside)
    collector.feed(fragment)
    collector.close()
    found = []
    for tag, attrs in collector.elements:
        if tag not in TAGS and not (tag == "div" and dict(attrs).get("class") == WRAPPER_CLASSES):
            found.append(f"<{tag}>")
        for name, value in attrs:
            if not attribute_allowed(tag, name, value):
                found.append(f"<{tag} {name}={value!r}>")
    return found


def regions(fragment: str, inside) -> int:
    """How many regions ``inside`` opens in ``fragment`` (so a test knows it looked at each answer)."""
    collector = _Collector(inside)
    collector.feed(fragment)
    collector.close()
    return collector.regions


def has_class(name: str):
    return lambda tag, attrs: name in (attrs.get("class") or "").split()


class _Ancestors(HTMLParser):
    def __init__(self, needle: str):
        super().__init__(convert_charrefs=True)
        self.needle, self.stack, self.found = needle, [], None

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if self.found is None and self.needle in data:
            self.found = list(self.stack)


def ancestors(fragment: str, needle: str) -> list | None:
    """The open elements around the first text holding ``needle`` (None when it is not shown)."""
    parser = _Ancestors(needle)
    parser.feed(fragment)
    parser.close()
    return parser.found
