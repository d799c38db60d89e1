"""Formgrader's pages in chromium with student-controlled text in every place it can reach (issue 32).

A scratch course (exercise 09) is graded; its gradebook then holds, as a door that missed the id rule would
leave it, students whose ids are hostile, and a graded student whose first and last names are (a roster or an
LMS lets students choose their names). Every formgrader page that shows ids or names is opened, stored (from
the gradebook) and reflected (the id or assignment in the URL). On each: no dialog, ``window.__pwned`` never
set, nothing requested from ``evil.invalid``, and the page's own script ran (its table or form is there).

Then the second layer alone: a server in which the templates are *not* escaped (as if escaping were missed)
runs none of the injected elements, because the Content-Security-Policy runs only scripts carrying the page's nonce; the
page reports each blocked script (``securitypolicyviolation``), so the payloads were there and were stopped.
The one payload a policy cannot stop, an id that closes a JavaScript string in a page's own script, runs
there: the first layer is what stops it.
"""

from __future__ import annotations

import urllib.parse

import pytest
from hostile.markdown_payloads import EVIL_HOST, SENTINEL

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]

STEM = "09_sequence_ppl"
IDS = ['<img src=x onerror="window.__pwned=1">', '";window.__pwned=2;//', "</script><script>window.__pwned=3</script>",
       f'<svg onload="fetch(\'http://{EVIL_HOST}/\')">']
NAMES = ('<img src=x onerror="window.__pwned=4">', "</script><script>window.__pwned=5</script>")


def _graded(folder):
    """Exercise 09 released and ann's solutions graded, in ``folder / "course"`` (built once per run)."""
    import subprocess
    import sys

    from autograder.authoring.scratch_course import ASSIGNMENT, generate_release, make_course_copy
    from autograder.demo.simulate import write_class

    course = make_course_copy(folder / "course", stems=[STEM])
    generate_release(course)
    write_class(course, {"ann": "solutions"})
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", ASSIGNMENT, "--no-progress"], cwd=course,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def _course(tmp_path_factory, *, escaped: bool):
    """A copy of the graded course whose gradebook then gets the hostile ids and names.

    Both servers serve a copy of one graded course: formgrader renders every page (and, through
    ``formgrader_guard``, with or without escaping) when it is asked for, from the gradebook and
    ``autograded/``, neither of which the escaping setting changes."""
    from nbgrader.api import Gradebook

    from autograder.authoring.scratch_course import COURSE_ID
    from run_cache import built_once, writable_copy

    course = writable_copy(built_once(tmp_path_factory, "guard-graded", _graded) / "course",
                           tmp_path_factory.mktemp("guard") / "course")
    if not escaped:  # the first layer missed everywhere: only the policy stands
        config = course / "nbgrader_config.py"
        config.write_text("import autograder.feedback.formgrader_guard as _guard\n"
                          "_guard.ESCAPE = False\n" + config.read_text())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        ann = gb.find_student("ann")
        ann.first_name, ann.last_name = NAMES
        gb.db.commit()
        for student in IDS:
            gb.add_student(student, first_name=NAMES[0], last_name=NAMES[1])
    return course


def _server(course):
    from test_term import Formgrader

    return Formgrader(course, course.parent / "formgrader.log")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    server = _server(_course(tmp_path_factory, escaped=True))
    yield server
    server.close()


@pytest.fixture(scope="module")
def policy_only(tmp_path_factory):
    server = _server(_course(tmp_path_factory, escaped=False))
    yield server
    server.close()


def _pages(server) -> list:
    """(path, selector of what the page's own script draws) for every page showing ids or names."""
    (record,) = server.call("GET", f"/formgrader/api/submitted_notebooks/module6/{STEM}")
    quoted = [urllib.parse.quote(student, safe="") for student in IDS]
    pages = [("/formgrader/manage_students", "td.id"),
             ("/formgrader/manage_submissions/module6", "td"),
             ("/formgrader/gradebook/module6", "td"),
             (f"/formgrader/gradebook/module6/{STEM}", "td.name"),
             (f"/formgrader/submissions/{record['id']}/", ".nbgrader_cell")]
    for student in quoted:
        pages += [(f"/formgrader/manage_students/{student}", "li.active"),
                  (f"/formgrader/manage_students/{student}/module6", "li.active"),
                  (f"/formgrader/gradebook/{student}", "li.active"),
                  (f"/formgrader/manage_submissions/{student}", "li.active")]
    return pages


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.add_init_script(
        f"window.{SENTINEL}Hits = []; Object.defineProperty(window, '{SENTINEL}', {{configurable: false, "
        f"get() {{ return undefined; }}, set(v) {{ window.{SENTINEL}Hits.push(String(v)); }}}});"
        "window.__blocked = []; document.addEventListener('securitypolicyviolation', "
        "e => window.__blocked.push(e.violatedDirective + ' ' + (e.sample || '')));")
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
                  else route.abort())
    yield context
    context.close()


def _reveal_names(page) -> None:
    """Press formgrader's "show the names" controls (they must show names as text); its scripts attach them
    once their data has loaded, so press until the page says the names are shown."""
    for toggle, shown in (("#toggle_names", "() => document.querySelector('#toggle_names').innerText.includes('Hide')"),
                          ("span.glyphicon.name-hidden", "() => [...document.querySelectorAll('.name-shown')].some(e => e.getClientRects().length > 0)")):
        if not page.locator(toggle).count():
            continue
        # No waiting for the control to be visible: once the names are shown (by the control before),
        # formgrader hides it.
        for _ in range(120):
            if page.evaluate(shown):
                break
            if page.locator(toggle).first.is_visible():
                page.locator(toggle).first.click()
            page.wait_for_timeout(250)
        assert page.evaluate(shown), f"{toggle} did not show the names"


def _visit(context, server, path: str, selector: str) -> dict:
    page = context.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    context.set_extra_http_headers({"Authorization": f"token {server.token}"})
    page.goto(f"http://127.0.0.1:{server.port}{path}")
    page.locator(selector).first.wait_for(timeout=30_000)
    page.wait_for_timeout(300)  # the page's own scripts draw the rest
    _reveal_names(page)
    seen = {"path": path, "dialogs": dialogs, "hits": page.evaluate(f"window.{SENTINEL}Hits"),
            "evil": [url for url in requests if urllib.parse.urlsplit(url).hostname == EVIL_HOST], "blocked": page.evaluate("window.__blocked"),
            "text": page.inner_text("body")}
    page.close()
    return seen


def test_every_page_shows_hostile_ids_and_names_as_text(guarded, context, screenshot_dir):
    for path, selector in _pages(guarded):
        seen = _visit(context, guarded, path, selector)
        assert seen["dialogs"] == [] and seen["hits"] == [] and seen["evil"] == [], seen
        assert seen["blocked"] == [], seen  # escaped: nothing of the payloads even reached the policy
        if path == "/formgrader/manage_students":
            assert all(student in seen["text"] for student in IDS), seen["text"][:2000]
        if path.endswith("/module6/" + STEM) or "/submissions/" in path:
            assert NAMES[0] in seen["text"] and NAMES[1] in seen["text"], seen["text"][:2000]


def test_where_escaping_were_missed_the_policy_runs_no_injected_script(policy_only, context):
    """Every injected element (``<script>``, ``onerror=``, ``onload=``) is refused. What no policy can refuse
    is text that closes a JavaScript string inside one of the page's own scripts (IDS[1] in ``var student_id =
    "{{ student_id }}";``): that script carries the nonce. Only escaping (layer 1) stops it, and the test
    above shows it does; here it is the one payload that runs, on the pages that put the URL's id in a
    script, and nowhere else."""
    blocked, string_breakouts = 0, 0
    for path, selector in _pages(policy_only):
        seen = _visit(context, policy_only, path, selector)
        js_string_payload = urllib.parse.quote(IDS[1], safe="") in path
        assert seen["dialogs"] == [] and seen["evil"] == [], seen
        assert set(seen["hits"]) <= ({"2"} if js_string_payload else set()), seen
        string_breakouts += bool(seen["hits"])
        blocked += len(seen["blocked"])
    assert string_breakouts >= 1  # the limit of a policy is real: layer 1 is not optional
    # The unescaped templates did put the payloads into the pages, and the browser refused each one.
    assert blocked >= len(IDS), blocked
