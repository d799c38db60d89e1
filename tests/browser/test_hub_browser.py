"""The term on a real local JupyterHub (deploy/hub/), in headless chromium, through the hub's login page.

Accounts are Unix users made here with passwords, checked by JupyterHub's PAM authenticator; each
user's server runs as that user from the hub's environments (deploy/hub/build_envs.sh). One student
works in the browser: logs in, fetches ``module6`` from the Assignment List, opens a notebook (its
widget renders), answers its cells, Validates, submits. A second submits with ``nbgrader submit`` as
their Unix user. The instructor logs in, collects (``nbgrader collect`` as the instructor), autogrades
with formgrader's button, grades the written answer by hand in formgrader's grading page, and
generates and releases feedback with formgrader's buttons; the student fetches the feedback in the
Assignment List and opens it. The grader runs in the instructor's server, as the instructor, in
bubblewrap (which works here for an unprivileged user).

Needs root (useradd, PAM, servers started as other users), /usr/bin/chromium, npm's
configurable-http-proxy and the hub environments (``python deploy/hub/localhub.py --install-only``,
which .ci/run runs): skips without them, fails under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from .conftest import CHROMIUM, REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("hub")]

ASSIGNMENT = "module6"
STEM = "06_k3_support"  # two code answers with hidden tests, a widget, a written (manually graded) answer
WRITTEN = "explain_common_support"
ANSWERS = ("answer_support_needed", "answer_counterexamples")
ESSAY = ("Without common support one of the two expectations is taken over points the sampler never "
         "draws, so the estimate can be finite while the true value is infinite.")
HIDDEN_CALL = 'grade("06_k3_support", "conditions", globals())'  # a hidden test line of the source
SPAWN_MS = 240_000  # Playwright timeouts are in ms: a spawn on a busy 2-core machine is slow
STEP_MS = 90_000


def _localhub():
    spec = importlib.util.spec_from_file_location("module6_localhub", REPO / "deploy" / "hub" / "localhub.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _unavailable(localhub) -> str | None:
    if os.geteuid() != 0 or not shutil.which("useradd"):
        return "the hub test creates Unix accounts and starts servers as them: it needs root"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is not installed"
    try:
        import jupyterhub  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as error:
        return f"{error.name} is not installed (pip install -e '.[test]')"
    envs = REPO / "build" / "hub" / "envs"
    if not all((envs / role / ".stamp").is_file() for role in ("student", "instructor")):
        return f"no hub environments under {envs}: run `python deploy/hub/localhub.py --install-only`"
    if not localhub.CHP.exists() and not shutil.which("npm"):
        return "configurable-http-proxy is not installed and there is no npm to install it"
    return None


def _answer(source_nb, grade_id: str) -> str:
    """The source's solution for an answer cell, its solution markers removed (typed by the student)."""
    (cell,) = [c for c in source_nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return "\n".join(line for line in cell.source.splitlines() if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


@pytest.fixture(scope="module")
def hub_term():
    localhub = _localhub()
    reason = _unavailable(localhub)
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true)")
        pytest.skip(reason)
    tag = os.urandom(3).hex()
    made: list = []
    scratch = Path(tempfile.mkdtemp(prefix="module6-hub-"))
    scratch.chmod(0o755)  # the accounts reach the course and the exchange through it
    hub = None
    try:
        envs = REPO / "build" / "hub" / "envs"
        student_env, instructor_env = envs / "student", envs / "instructor"

        def account(name, role):
            home = scratch / "home" / name
            home.parent.mkdir(exist_ok=True)
            home.parent.chmod(0o755)
            made.append(name)
            return localhub.add_account(name, role, home=home)

        instructor = account(f"m6i{tag}", "instructor")
        students = [account(f"m6s{n}{tag}", "student") for n in (1, 2, 3)]
        course, exchange = scratch / "course", scratch / "exchange"
        started = time.monotonic()
        localhub.prepare_course(instructor, instructor_env, course, exchange, stems=[STEM], assignments=(ASSIGNMENT,))
        hub = localhub.start_hub(state=scratch / "state", student_env=student_env, instructor_env=instructor_env,
                                 course=course, exchange=exchange, instructor=instructor.name,
                                 students=[s.name for s in students])
        yield {"localhub": localhub, "hub": hub, "instructor": instructor, "students": students,
               "course": course, "exchange": exchange, "student_env": student_env,
               "instructor_env": instructor_env, "started": started}
    finally:
        if hub is not None:
            hub.stop()
        for name in made:
            localhub.remove_account(name)
        shutil.rmtree(scratch, ignore_errors=True)


def _login(browser, hub, account):
    """A fresh browser context logged in through the hub's login page; its lab is open and ready."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(STEP_MS)
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{account.name}/lab"), timeout=SPAWN_MS)
    page.wait_for_selector(".jp-LauncherCard, .jp-DirListing-item", timeout=SPAWN_MS)
    return context, page


def _open_assignment_list(page) -> list:
    """Open the Assignment List from the Nbgrader menu; return the menu's item labels."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = page.locator(".lm-Menu-content .lm-Menu-item:visible .lm-Menu-itemLabel").all_inner_texts()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.wait_for_selector("#released_assignments_list")
    return items


def test_hub_term_through_the_browser(hub_term, browser, screenshot_dir):
    localhub, hub = hub_term["localhub"], hub_term["hub"]
    ann, ben = hub_term["students"][0], hub_term["students"][1]
    instructor, course = hub_term["instructor"], hub_term["course"]
    source_nb = nbformat.read(str(REPO / "source" / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    timings = {"setup": time.monotonic() - hub_term["started"]}
    began = time.monotonic()

    # --- ann, in the browser: log in, fetch, open, widget, answer, Validate, submit.
    student_ctx, page = _login(browser, hub, ann)
    # nbgrader's menu holds the Assignment List alone: no formgrader, course list or create assignment.
    assert _open_assignment_list(page) == ["Assignment List"]
    released = page.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT)
    released.locator("button", has_text="Fetch").click()
    page.locator("#fetched_assignments_list .list_item", has_text=ASSIGNMENT).wait_for()
    assert (ann.home / ASSIGNMENT / f"{STEM}.ipynb").is_file()
    page.screenshot(path=str(screenshot_dir / "hub-assignment-list.png"))
    timings["student login and fetch"] = time.monotonic() - began

    page.goto(f"{hub.url}/user/{ann.name}/lab/tree/{ASSIGNMENT}/{STEM}.ipynb?reset")
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
    cells = page.locator(".jp-Notebook .jp-Cell")

    # The widget cell on its own (Run All stops at the first unanswered cell).
    widget_cell = page.locator(".jp-Notebook .jp-CodeCell", has_text="kl_explorer(preset=").first
    widget_cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    widget_cell.locator(".jp-OutputArea .widget-slider, .jp-OutputArea .jupyter-widgets").first.wait_for()
    # The two code answers, typed as text (no bracket auto-closing), and the written answer.
    for grade_id in ANSWERS:
        first_line = _answer(source_nb, grade_id).splitlines()[0]  # the cell's own instruction comment
        editor = page.locator(".jp-Notebook .jp-CodeCell", has_text=first_line).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(_answer(source_nb, grade_id))
    essay = cells.filter(has_text="YOUR ANSWER HERE").first
    essay.dblclick()
    essay.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(ESSAY)
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Control+s")
    page.locator(".jp-Notebook .jp-RenderedMarkdown p", has_text=ESSAY).wait_for()  # rendered
    page.wait_for_function("() => !document.title.startsWith('*') && !document.querySelector('.jp-mod-dirty')")
    saved = nbformat.read(str(ann.home / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    assert ESSAY in "".join(c.source for c in saved.cells), "the written answer was not saved"
    page.screenshot(path=str(screenshot_dir / "hub-notebook.png"), full_page=False)

    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    dialog.get_by_text("open checks pass").wait_for()  # the student environment's reworded success
    page.screenshot(path=str(screenshot_dir / "hub-validate.png"))
    dialog.locator("button").last.click()
    timings["student work and validate"] = time.monotonic() - began

    _open_assignment_list(page)
    fetched = page.locator("#fetched_assignments_list .list_item", has_text=ASSIGNMENT).first
    fetched.locator("button", has_text="Submit").click()
    page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT).first.wait_for()

    # --- ben: fetch and submit the untouched notebook with nbgrader, as his Unix user.
    ben_env = localhub.user_env(ben, hub_term["student_env"], "student", hub_term["exchange"])
    nbgrader_ben = [str(hub_term["student_env"] / "bin" / "nbgrader")]
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "fetch_assignment", ASSIGNMENT], ben.home)
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "submit", ASSIGNMENT], ben.home)
    timings["submissions"] = time.monotonic() - began

    # --- the instructor: log in, collect, autograde with the button, grade by hand, release feedback.
    inst_ctx, ipage = _login(browser, hub, instructor)
    inst_env = localhub.user_env(instructor, hub_term["instructor_env"], "instructor", hub_term["exchange"], course)
    localhub.run_as(instructor, inst_env, [str(hub_term["instructor_env"] / "bin" / "nbgrader"), "collect",
                                           ASSIGNMENT], course)
    assert {p.name for p in (course / "submitted").iterdir()} == {ann.name, ben.name}
    formgrader = f"{hub.url}/user/{instructor.name}/formgrader"
    ipage.goto(f"{formgrader}/manage_submissions/{ASSIGNMENT}")
    row = ipage.locator("tr", has_text=ann.name)
    row.locator(".autograde a").click()
    ipage.locator("#success-modal").wait_for()
    ipage.screenshot(path=str(screenshot_dir / "hub-autograde.png"))
    timings["autograde"] = time.monotonic() - began

    api = ipage.request
    (record,) = [n for n in api.get(f"{formgrader}/api/submitted_notebooks/{ASSIGNMENT}/{STEM}").json()
                 if n["student"] == ann.name]
    auto = {g["name"]: g for g in api.get(f"{formgrader}/api/grades?submission_id={record['id']}").json()}
    assert auto[WRITTEN]["needs_manual_grade"] and auto[WRITTEN]["manual_score"] is None
    coded = [g for name, g in auto.items() if name != WRITTEN]
    assert coded and all(g["auto_score"] == g["max_score"] for g in coded), coded

    ipage.goto(f"{formgrader}/submissions/{record['id']}/")
    score = ipage.locator(f"input.score#{WRITTEN}")
    score.fill(str(auto[WRITTEN]["max_score"]))
    score.press("Tab")
    grades_url = f"{formgrader}/api/grades?submission_id={record['id']}"
    deadline = time.monotonic() + 60
    while api.get(grades_url).json() == list(auto.values()):  # the page saves on change, asynchronously
        assert time.monotonic() < deadline, "formgrader's page did not save the manual score"
        ipage.wait_for_timeout(250)
    ipage.screenshot(path=str(screenshot_dir / "hub-manual-grade.png"))
    manual = {g["name"]: g for g in api.get(grades_url).json()}
    assert manual[WRITTEN]["manual_score"] == auto[WRITTEN]["max_score"]

    ipage.goto(f"{formgrader}/manage_assignments")
    assignment_row = ipage.locator("tr", has_text=ASSIGNMENT).first
    for button in (".generate-feedback a", ".release-feedback a"):
        assignment_row.locator(button).click()
        modal = ipage.locator("#success-modal")
        modal.wait_for()
        modal.locator("button").last.click()
        modal.wait_for(state="detached")
        assignment_row = ipage.locator("tr", has_text=ASSIGNMENT).first
    timings["manual grade and feedback"] = time.monotonic() - began

    # --- ann fetches her feedback in the Assignment List and opens it.
    page.bring_to_front()
    _open_assignment_list(page)
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT).first
    submitted.locator("button", has_text=re.compile("fetch feedback", re.I)).click()
    page.get_by_text("(view feedback)").first.wait_for()
    (html,) = sorted((ann.home / ASSIGNMENT / "feedback").rglob(f"{STEM}.html"))
    relative = html.relative_to(ann.home).as_posix()
    page.goto(f"{hub.url}/user/{ann.name}/files/{relative}")
    page.get_by_text(ESSAY).wait_for()
    page.screenshot(path=str(screenshot_dir / "hub-feedback.png"), full_page=True)
    text = page.content()
    assert HIDDEN_CALL not in text and "BEGIN HIDDEN TESTS" not in text
    total = sum(g["max_score"] for g in manual.values())
    assert re.search(rf"Score:\s*{total:g}(\.0)?\s*/\s*{total:g}", page.inner_text("body")), page.inner_text("body")[:800]
    timings["feedback"] = time.monotonic() - began
    student_ctx.close()
    inst_ctx.close()

    # The students' servers ran the student environment: no instructor package, no formgrader.
    probe = subprocess.run([str(hub_term["student_env"] / "bin" / "python"), "-c", "import autograder"],
                           cwd="/", capture_output=True)
    assert probe.returncode != 0
    print("hub term timings (s):", {k: round(v, 1) for k, v in timings.items()}, file=sys.stderr)
