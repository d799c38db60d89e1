"""The term on a real local JupyterHub (deploy/hub/), in headless chromium, through the hub's login page.

Accounts are Unix users made here with passwords, checked by JupyterHub's PAM authenticator; each
user's server runs as that user from the hub's environments (deploy/hub/build_envs.sh). One student
works in the browser: logs in, fetches both assignments from the Assignment List, opens a notebook of
``module6`` (its widget renders), answers it and Validates, opens a notebook of ``module6_further``
and answers it, and submits both. A second student submits ``module6`` with ``nbgrader submit`` as their
Unix user.

The instructor grades the two assignments the two ways the README gives:

- ``module6`` in the instructor's server, which can run bubblewrap (a bare-metal or VM hub like this
  one): ``nbgrader collect`` as the instructor, then formgrader's Autograde button.
- ``module6_further`` as on a container hub whose pods cannot sandbox (README, "A hub whose pods
  cannot sandbox"). The instructor's named server ``pod`` runs under ``deploy/hub/podlike.py``'s
  seccomp filter (no new namespaces, as a pod's default seccomp profile): its Autograde button
  refuses, naming the grading host route, and grades nothing. A "grading host", a process started
  outside the hub as the instructor's Unix user (as a grading VM with the course directory mounted
  would be), runs ``nbgrader collect`` and ``autograder grade`` on the same course directory and
  gradebook, in bubblewrap. Formgrader in the ``pod`` server then shows those grades; the instructor
  grades the written answer by hand there and generates and releases feedback with its buttons; the
  student fetches the feedback in the Assignment List and opens it.

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
from urllib.parse import urlencode

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
# The assignment graded on the grading host (the split of a hub whose pods cannot sandbox).
FURTHER = "module6_further"
FURTHER_STEM = "23_loss_aggregation"  # two code answers with hidden tests, a written answer
FURTHER_WRITTEN = "explain_bias"
FURTHER_ANSWERS = ("token_weights", "aggregate_loss")
FURTHER_ESSAY = ("Under sequence_mean each response weighs 1/B in total, so a long wrong answer's tokens are "
                 "each pushed down less than a short right answer's tokens are pushed up.")
HIDDEN_CALL = 'grade("23_loss_aggregation", "weights", globals())'  # a hidden test line of the source
POD = "pod"  # the instructor's named server that cannot sandbox
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
        localhub.prepare_course(instructor, instructor_env, course, exchange, stems=[STEM, FURTHER_STEM],
                                 assignments=(ASSIGNMENT, FURTHER))
        hub = localhub.start_hub(state=scratch / "state", student_env=student_env, instructor_env=instructor_env,
                                 course=course, exchange=exchange, instructor=instructor.name,
                                 students=[s.name for s in students], pod_server=POD)
        yield {"localhub": localhub, "hub": hub, "instructor": instructor, "students": students,
               "course": course, "exchange": exchange, "student_env": student_env,
               "instructor_env": instructor_env, "started": started}
    finally:
        if hub is not None:
            hub.stop()
        for name in made:
            localhub.remove_account(name)
        shutil.rmtree(scratch, ignore_errors=True)


def _start_login(browser, hub, account, then: str = ""):
    """A fresh browser context that has sent the hub's login form (the server then starts); ``then``
    is the hub's ``next`` (where the browser goes once logged in; default: the user's JupyterLab)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(STEP_MS)
    page.goto(f"{hub.url}/hub/login" + (f"?{urlencode({'next': then})}" if then else ""))
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    page.click("#login_submit")
    return context, page


def _wait_lab(page, account):
    page.wait_for_url(re.compile(re.escape(f"/user/{account.name}/lab")), timeout=SPAWN_MS)
    page.wait_for_selector(".jp-LauncherCard, .jp-DirListing-item", timeout=SPAWN_MS)


def _login(browser, hub, account):
    """A fresh browser context logged in through the hub's login page; its lab is open and ready."""
    context, page = _start_login(browser, hub, account)
    _wait_lab(page, account)
    return context, page


def _open_assignment_list(page) -> list:
    """Open the Assignment List from the Nbgrader menu; return the menu's item labels."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = page.locator(".lm-Menu-content .lm-Menu-item:visible .lm-Menu-itemLabel").all_inner_texts()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.wait_for_selector("#released_assignments_list")
    return items


def _listed(page, listing: str, assignment: str):
    """The row of ``assignment`` (its name exactly: ``module6`` is a prefix of ``module6_further``)."""
    name = page.locator(".item_name", has_text=re.compile(rf"^\s*{re.escape(assignment)}\s*$"))
    return page.locator(f"#{listing} .list_item").filter(has=name).first


def _type_answers(page, source_nb, grade_ids, essay: str) -> None:
    """Type the source's solutions into the open notebook's answer cells, and ``essay`` as its written answer."""
    for grade_id in grade_ids:
        first_line = _answer(source_nb, grade_id).splitlines()[0]  # the cell's own first line
        editor = page.locator(".jp-Notebook .jp-CodeCell", has_text=first_line).first.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(_answer(source_nb, grade_id))  # as text: no bracket auto-closing
    cell = page.locator(".jp-Notebook .jp-Cell").filter(has_text="YOUR ANSWER HERE").first
    cell.dblclick()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(essay)
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Control+s")
    page.locator(".jp-Notebook .jp-RenderedMarkdown p", has_text=essay).wait_for()  # rendered
    page.wait_for_function("() => !document.title.startsWith('*') && !document.querySelector('.jp-mod-dirty')")


def _grades(api, formgrader, assignment, stem, student) -> tuple:
    """(submitted notebook id, {grade name: grade}) from formgrader's API."""
    (record,) = [n for n in api.get(f"{formgrader}/api/submitted_notebooks/{assignment}/{stem}").json()
                 if n["student"] == student]
    return record["id"], {g["name"]: g for g in api.get(f"{formgrader}/api/grades?submission_id={record['id']}").json()}


def test_hub_term_through_the_browser(hub_term, browser, screenshot_dir):
    localhub, hub = hub_term["localhub"], hub_term["hub"]
    ann, ben = hub_term["students"][0], hub_term["students"][1]
    instructor, course = hub_term["instructor"], hub_term["course"]
    source_nb = nbformat.read(str(REPO / "source" / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    further_nb = nbformat.read(str(REPO / "source" / FURTHER / f"{FURTHER_STEM}.ipynb"), as_version=4)
    timings = {"setup": time.monotonic() - hub_term["started"]}
    began = time.monotonic()

    # The instructor logs in first and starts both servers (the default one and ``pod``): they start
    # while the students work. Each tab goes straight to formgrader once its server is up (not
    # through JupyterLab, whose page costs the browser seconds of CPU and is not used here).
    formgrader = f"/user/{instructor.name}/formgrader"
    pod_formgrader = f"/user/{instructor.name}/{POD}/formgrader"
    inst_ctx, ipage = _start_login(browser, hub, instructor,
                                   then=f"/hub/spawn/{instructor.name}?{urlencode({'next': formgrader + '/'})}")
    ipage.wait_for_url(re.compile(r"/(spawn-pending|user)/"), timeout=SPAWN_MS)
    podpage = inst_ctx.new_page()
    podpage.set_default_timeout(STEP_MS)
    podpage.goto(f"{hub.url}/hub/spawn/{instructor.name}/{POD}?{urlencode({'next': pod_formgrader + '/'})}",
                 wait_until="commit")
    formgrader, pod_formgrader = hub.url + formgrader, hub.url + pod_formgrader

    # --- ann, in the browser: log in, fetch both assignments.
    student_ctx, page = _login(browser, hub, ann)
    # nbgrader's menu holds the Assignment List alone: no formgrader, course list or create assignment.
    assert _open_assignment_list(page) == ["Assignment List"]
    for assignment in (ASSIGNMENT, FURTHER):
        _listed(page, "released_assignments_list", assignment).locator("button", has_text="Fetch").click()
        _listed(page, "fetched_assignments_list", assignment).wait_for()
    assert (ann.home / ASSIGNMENT / f"{STEM}.ipynb").is_file()
    assert (ann.home / FURTHER / f"{FURTHER_STEM}.ipynb").is_file()
    page.screenshot(path=str(screenshot_dir / "hub-assignment-list.png"))
    timings["student login and fetch"] = time.monotonic() - began

    # module6: the widget, the answers, Validate.
    page.goto(f"{hub.url}/user/{ann.name}/lab/tree/{ASSIGNMENT}/{STEM}.ipynb?reset")
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
    # The widget cell on its own (Run All stops at the first unanswered cell).
    widget_cell = page.locator(".jp-Notebook .jp-CodeCell", has_text="kl_explorer(preset=").first
    widget_cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    widget_cell.locator(".jp-OutputArea .widget-slider, .jp-OutputArea .jupyter-widgets").first.wait_for()
    _type_answers(page, source_nb, ANSWERS, ESSAY)
    saved = nbformat.read(str(ann.home / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    assert ESSAY in "".join(c.source for c in saved.cells), "the written answer was not saved"
    page.screenshot(path=str(screenshot_dir / "hub-notebook.png"), full_page=False)
    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    dialog.get_by_text("open checks pass").wait_for()  # the student environment's reworded success
    page.screenshot(path=str(screenshot_dir / "hub-validate.png"))
    dialog.locator("button").last.click()

    # module6_further: open a notebook of it and answer.
    page.goto(f"{hub.url}/user/{ann.name}/lab/tree/{FURTHER}/{FURTHER_STEM}.ipynb?reset")  # typing needs no kernel
    _type_answers(page, further_nb, FURTHER_ANSWERS, FURTHER_ESSAY)
    saved = nbformat.read(str(ann.home / FURTHER / f"{FURTHER_STEM}.ipynb"), as_version=4)
    assert FURTHER_ESSAY in "".join(c.source for c in saved.cells), "the written answer was not saved"
    page.screenshot(path=str(screenshot_dir / "hub-further-notebook.png"), full_page=False)
    timings["student work and validate"] = time.monotonic() - began

    _open_assignment_list(page)
    for assignment in (ASSIGNMENT, FURTHER):
        _listed(page, "fetched_assignments_list", assignment).locator("button", has_text="Submit").click()
        _listed(page, "submitted_assignments_list", assignment).wait_for()

    # --- ben: fetch and submit module6 untouched, with nbgrader as his Unix user (module6_further is
    # left to ann: each nbgrader command costs seconds, and the grading host grades whoever submitted).
    ben_env = localhub.user_env(ben, hub_term["student_env"], "student", hub_term["exchange"])
    nbgrader_ben = [str(hub_term["student_env"] / "bin" / "nbgrader")]
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "fetch_assignment", ASSIGNMENT], ben.home)
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "submit", ASSIGNMENT], ben.home)
    timings["submissions"] = time.monotonic() - began

    # --- module6, in the instructor's server (bubblewrap works): collect, formgrader's Autograde button.
    ipage.wait_for_url(re.compile(re.escape(formgrader)), timeout=SPAWN_MS)
    inst_env = localhub.user_env(instructor, hub_term["instructor_env"], "instructor", hub_term["exchange"], course)
    inst_bin = hub_term["instructor_env"] / "bin"
    localhub.run_as(instructor, inst_env, [str(inst_bin / "nbgrader"), "collect", ASSIGNMENT], course)
    assert {p.name for p in (course / "submitted").iterdir()} == {ann.name, ben.name}
    ipage.goto(f"{formgrader}/manage_submissions/{ASSIGNMENT}")
    ipage.locator("tr", has_text=ann.name).locator(".autograde a").click()
    ipage.locator("#success-modal").wait_for()
    ipage.screenshot(path=str(screenshot_dir / "hub-autograde.png"))
    _, auto = _grades(ipage.request, formgrader, ASSIGNMENT, STEM, ann.name)
    assert auto[WRITTEN]["needs_manual_grade"] and auto[WRITTEN]["manual_score"] is None
    coded = [g for name, g in auto.items() if name != WRITTEN]
    assert coded and all(g["auto_score"] == g["max_score"] for g in coded), coded
    timings["autograde in the hub"] = time.monotonic() - began

    # --- module6_further, as on a hub whose pods cannot sandbox.
    # The grading host (outside the hub: a process of the instructor's account, not a child of any
    # hub server) collects, on the same course directory and exchange.
    localhub.run_as(instructor, inst_env, [str(inst_bin / "nbgrader"), "collect", FURTHER], course)
    # The ``pod`` server's Autograde button refuses, names the grading host route, and grades nothing.
    podpage.wait_for_url(re.compile(re.escape(pod_formgrader)), timeout=SPAWN_MS)
    podpage.goto(f"{pod_formgrader}/manage_submissions/{FURTHER}")
    podpage.locator("tr", has_text=ann.name).locator(".autograde a").click()
    refusal = podpage.locator("#error-modal")
    refusal.wait_for()
    said = refusal.inner_text()
    assert "the grading sandbox cannot run" in said and "namespace" in said, said[-2000:]
    assert "grade on a grading host where bubblewrap works" in said, said[-2000:]
    assert f"`nbgrader collect {FURTHER}` then `autograder grade {FURTHER}`" in said, said[-2000:]
    # For the screenshot: formgrader's traceback panel scrolls sideways; wrap it and show its end (the reason).
    refusal.locator(".panel-danger pre").evaluate(
        "pre => { pre.style.whiteSpace = 'pre-wrap'; pre.scrollTop = pre.scrollHeight; }")
    podpage.screenshot(path=str(screenshot_dir / "hub-pod-refuses.png"))
    refusal.locator("button").last.click()
    refusal.wait_for(state="detached")
    assert not (course / "autograded" / ann.name / FURTHER).exists(), "the pod server graded without a sandbox"
    timings["pod refuses"] = time.monotonic() - began

    # The grading host grades the class in bubblewrap, into the course's gradebook.
    graded = localhub.run_as(instructor, inst_env, [str(inst_bin / "autograder"), "grade", FURTHER, "--no-progress"],
                             course)
    assert (course / "autograded" / ann.name / FURTHER / f"{FURTHER_STEM}.ipynb").is_file(), graded.stdout
    timings["grading host"] = time.monotonic() - began

    # Formgrader in the pod server shows those grades; the written answer is graded by hand there.
    podpage.goto(f"{pod_formgrader}/manage_submissions/{FURTHER}")
    podpage.locator("tr", has_text=ann.name).wait_for()
    podpage.screenshot(path=str(screenshot_dir / "hub-pod-grades.png"))
    api = podpage.request
    record, auto = _grades(api, pod_formgrader, FURTHER, FURTHER_STEM, ann.name)
    assert auto[FURTHER_WRITTEN]["needs_manual_grade"] and auto[FURTHER_WRITTEN]["manual_score"] is None
    coded = [g for name, g in auto.items() if name != FURTHER_WRITTEN]
    assert coded and all(g["auto_score"] == g["max_score"] for g in coded), coded
    podpage.goto(f"{pod_formgrader}/submissions/{record}/")
    score = podpage.locator(f"input.score#{FURTHER_WRITTEN}")
    score.fill(str(auto[FURTHER_WRITTEN]["max_score"]))
    score.press("Tab")
    grades_url = f"{pod_formgrader}/api/grades?submission_id={record}"
    deadline = time.monotonic() + 60
    while api.get(grades_url).json() == list(auto.values()):  # the page saves on change, asynchronously
        assert time.monotonic() < deadline, "formgrader's page did not save the manual score"
        podpage.wait_for_timeout(250)
    podpage.screenshot(path=str(screenshot_dir / "hub-manual-grade.png"))
    manual = {g["name"]: g for g in api.get(grades_url).json()}
    assert manual[FURTHER_WRITTEN]["manual_score"] == auto[FURTHER_WRITTEN]["max_score"]

    podpage.goto(f"{pod_formgrader}/manage_assignments")
    assignment_row = podpage.locator("tr", has_text=FURTHER).first
    for button in (".generate-feedback a", ".release-feedback a"):
        assignment_row.locator(button).click()
        modal = podpage.locator("#success-modal")
        modal.wait_for()
        modal.locator("button").last.click()
        modal.wait_for(state="detached")
        assignment_row = podpage.locator("tr", has_text=FURTHER).first
    timings["manual grade and feedback"] = time.monotonic() - began

    # --- ann fetches her module6_further feedback in the Assignment List and opens it.
    page.bring_to_front()
    _open_assignment_list(page)
    submitted = _listed(page, "submitted_assignments_list", FURTHER)
    submitted.locator("button", has_text=re.compile("fetch feedback", re.I)).click()
    submitted.get_by_text("(view feedback)").first.wait_for()
    (html,) = sorted((ann.home / FURTHER / "feedback").rglob(f"{FURTHER_STEM}.html"))
    relative = html.relative_to(ann.home).as_posix()
    page.goto(f"{hub.url}/user/{ann.name}/files/{relative}")
    page.get_by_text(FURTHER_ESSAY).wait_for()
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
