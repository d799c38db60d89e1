"""The written-answer payload corpus opened in headless chromium on every page that shows it (issue 20).

A scratch course (exercise 15 only) is graded by ``autograder grade``; each student's written answer
holds a group of payloads from ``tests/hostile/markdown_payloads.py`` (many per notebook, so one page
load tests many; a payload that would swallow the rest of the answer, an unclosed fence say, ends its
group). Each answer is then opened (a) in formgrader's grading view (a real ``jupyter server`` with
nbgrader's formgrader, in the course directory), (b) on the page ``nbgrader generate_feedback`` wrote and
(c) on the kit's own feedback page. On each: no dialog opens, ``window.__pwned`` is never set, nothing is
requested from ``evil.invalid``, no ``href`` anywhere names a scheme other than http, https or mailto
(or is relative), every element of the answer is on the allow-list, and every payload's marker is shown.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from hostile.markdown_payloads import EVIL_HOST, PAYLOADS, SENTINEL

from autograder.feedback.markdown import ATTRIBUTES, TAGS, URL_SCHEMES, markdown_html

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

STEM = "15_stable_log_softmax"
END = "M6ENDOFPAYLOAD"


def marker(payload) -> str:
    return f"M6MARK{payload.name.replace('-', '')}"


def groups() -> list:
    """Payloads in order, cut after each one that turns the rest of an answer into code (or a formula)."""
    found, current = [], []
    for payload in PAYLOADS:
        current.append(payload)
        if f"<p>{END}</p>" not in markdown_html(payload.text + "\n\n" + END):
            found.append(current)
            current = []
    return found + ([current] if current else [])


def answer(group) -> str:
    return "\n\n".join(f"{marker(p)}\n\n{p.text}" for p in group)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict:
    from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy
    from autograder.demo.simulate import write_class

    chunks = groups()
    students = {f"p{number:02d}": group for number, group in enumerate(chunks)}
    course = make_course_copy(tmp_path_factory.mktemp("inert") / "course", stems=[STEM])
    generate_release(course)
    write_class(course, {student: "untouched" for student in students})
    for student, group in students.items():
        path = course / "submitted" / student / ASSIGNMENT / f"{STEM}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        (cell,) = [c for c in nb.cells if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")]
        cell.source = answer(group)
        nbformat.write(nb, str(path))
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    for command in (["-m", "autograder.cli", "grade", ASSIGNMENT, "--no-progress", "--jobs", "2", "--timeout", "8"],
                    None,
                    ["-m", "nbgrader", "generate_feedback", ASSIGNMENT, "--force"]):
        if command is None:  # generate_feedback replaces the grader's pages in feedback/: keep them
            shutil.copytree(course / "feedback", course / "grader-feedback")
            continue
        proc = subprocess.run([sys.executable, *command], cwd=course, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"course": course, "students": students, "assignment": ASSIGNMENT}


@pytest.fixture(scope="module")
def formgrader(course):
    from test_term import Formgrader

    server = Formgrader(course["course"], course["course"].parent / "formgrader.log")
    try:
        records = server.call("GET", f"/formgrader/api/submitted_notebooks/{course['assignment']}/{STEM}")
        server.ids = {record["student"]: record["id"] for record in records}
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def context(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    # Anything a payload makes the page do: a dialog, the sentinel, a request to the payloads' host.
    context.add_init_script(f"window.{SENTINEL}Hits = []; Object.defineProperty(window, '{SENTINEL}', "
                            f"{{configurable: false, get() {{ return undefined; }}, "
                            f"set(v) {{ window.{SENTINEL}Hits.push(String(v)); }}}});")

    def route(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "http://127.0.0.1")):
            route.continue_()
        else:  # nothing leaves the machine (formgrader's MathJax comes from a CDN: not loaded here)
            route.abort()

    context.route("**/*", route)
    yield context
    context.close()


#: Run in the page: what a payload managed to put into it (an empty list when nothing).
INSPECT = """([selector, tags, attributes, schemes, sentinel]) => {
  const bad = [];
  const inert = (value) => {
    const v = value.replace(/[\\u0000-\\u0020]/g, '').toLowerCase();
    const scheme = v.match(/^([a-z][a-z0-9+.-]*):/);
    return !scheme || schemes.includes(scheme[1]);
  };
  for (const el of document.querySelectorAll('[href], [src], [action], [formaction], [xlink\\\\:href]')) {
    for (const name of ['href', 'action', 'formaction', 'xlink:href']) {
      const value = el.getAttribute(name);
      if (value !== null && !inert(value)) bad.push(`${el.tagName} ${name}=${value}`);
    }
  }
  const answers = [...document.querySelectorAll(selector)];
  for (const root of answers) {
    for (const el of root.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (el.classList.contains('label') && el.parentElement === root) continue;  // the page's own label
      if (!tags.includes(tag)) bad.push(`element ${tag}`);
      for (const attr of el.attributes) {
        // formgrader's formgrade.js gives every link of its page tabindex=-1 (its own keyboard navigation).
        const ok = (attributes[tag] || []).includes(attr.name) || (tag === 'a' && attr.name === 'rel')
                   || (attr.name === 'tabindex' && attr.value === '-1')
                   || (tag === 'code' && attr.name === 'class' && ['tex', ''].includes(attr.value));
        if (!ok) bad.push(`${tag} ${attr.name}=${attr.value}`);
      }
    }
  }
  const hits = window[sentinel + 'Hits'] || [];
  if (hits.length) bad.push(`sentinel set: ${hits}`);
  return {bad, answers: answers.length, text: answers.map(a => a.innerText).join('\\n')};
}"""


def _inspect(page, selector: str, group, dialogs: list, requests: list) -> None:
    page.wait_for_load_state("load")
    seen = page.evaluate(INSPECT, [selector, sorted(TAGS), {k: sorted(v) for k, v in ATTRIBUTES.items()},
                                   sorted(URL_SCHEMES), SENTINEL])
    assert seen["answers"] == 1, seen
    assert seen["bad"] == [], seen["bad"]
    for frame in page.frames[1:]:  # an iframe a payload managed to make
        pytest.fail(f"a frame was created: {frame.url}")
    assert dialogs == [], dialogs
    assert not [url for url in requests if EVIL_HOST in url], requests
    missing = [marker(p) for p in group if marker(p) not in seen["text"]]
    assert missing == [], missing
    if any(p.name == "mathjax-href" for p in group):  # formulas are drawn (MathML), not left as TeX
        heights = page.eval_on_selector_all(f"{selector} math", "els => els.map(e => e.getBoundingClientRect().height)")
        assert sum(h > 5 for h in heights) >= 4, heights  # (a formula the allow-list emptied may be flat)


def _shoot(page, selector: str, number: int, name: str, screenshot_dir) -> None:
    """The whole first page, and the answer holding most payloads (formulas among them)."""
    if number == 0:
        page.screenshot(path=str(screenshot_dir / f"inert-{name}.png"), full_page=True)
    if number == len(groups()) - 1:
        page.locator(selector).first.screenshot(path=str(screenshot_dir / f"inert-{name}-answer.png"))


@pytest.fixture
def page(context):
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.dialogs, page.requests = [], []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    page.close()


def test_formgrader_grading_view_runs_no_payload(course, formgrader, page, screenshot_dir):
    for number, (student, group) in enumerate(course["students"].items()):
        page.goto(f"http://127.0.0.1:{formgrader.port}/formgrader/submissions/{formgrader.ids[student]}/"
                  f"?token={formgrader.token}")
        page.locator(".nbgrader_cell").first.wait_for()
        _inspect(page, ".module6-written", group, page.dialogs, page.requests)
        _shoot(page, ".module6-written", number, "formgrader", screenshot_dir)


def test_nbgrader_feedback_page_runs_no_payload(course, page, screenshot_dir):
    for number, (student, group) in enumerate(course["students"].items()):
        path = course["course"] / "feedback" / student / course["assignment"] / f"{STEM}.html"
        page.goto(path.as_uri())
        _inspect(page, ".module6-written", group, page.dialogs, page.requests)
        _shoot(page, ".module6-written", number, "nbgrader-feedback", screenshot_dir)


def test_kit_feedback_page_runs_no_payload(course, page, screenshot_dir):
    for number, (student, group) in enumerate(course["students"].items()):
        path = course["course"] / "grader-feedback" / student / course["assignment"] / f"{STEM}.html"
        page.goto(path.as_uri())
        _inspect(page, ".cell.manual", group, page.dialogs, page.requests)
        _shoot(page, ".cell.manual", number, "kit-feedback", screenshot_dir)


def test_every_payload_is_tried():
    assert [p for group in groups() for p in group] == list(PAYLOADS)
    assert len(groups()) < len(PAYLOADS) // 3  # many payloads per page load
