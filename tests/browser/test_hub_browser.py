"""The term on a real local JupyterHub (deploy/hub/), in headless chromium, through the hub's login page.

The hub is deployed by ``localhub.deploy`` exactly as ``make hub`` deploys it, under a name of its own
(so it runs beside a developer's ``make hub``): its own accounts (Unix users with passwords, checked by
JupyterHub's PAM authenticator, marked as the hub's), its folder laid out per role, this checkout closed
to other accounts (reopened at the end). Each user's server runs as that user from the hub's environments.

Students. One works in the browser: logs in, fetches both assignments from the Assignment List, opens a
notebook of ``module6`` (its widget renders), answers it and Validates, answers a notebook of
``module6_further``. A second student submits ``module6`` with ``nbgrader submit`` as their Unix user.
Then the first student, in a terminal of their own JupyterLab, tries everything issue 32 lists: read the
course directory, the checkout's ``source/`` and keys, the hub's state and the instructor's configuration,
run the instructor environment, enter the classmate's home, list the exchange's inbox, rename the course
in the exchange, rename, write into or read the classmate's submission (whose name they are given, as if
they had learnt it), replace the release; and they leave in the inbox a submission in the classmate's
name, one under an invented id of HTML, one claiming the year 2099 and one whose time is not a time.
Every read, run, rename and write must fail; every planted entry must be refused by collect. They then
submit both assignments from the Assignment List.

The instructor:

- ``module6`` in the instructor's server, which can run bubblewrap: the README's hub block typed line by
  line into a terminal of the instructor's JupyterLab (collect; grade; report; similarity; variants; both
  LMS exports), with formgrader's Autograde button and a written answer graded by hand between collect and
  ``autograder grade``, which must neither regrade what the button graded nor ask for that manual grade
  again. Formgrader's grading view, names hidden, names no student.
- ``module6_further`` as on a container hub whose pods cannot sandbox: the same block's ``nbgrader
  collect`` and ``autograder grade`` lines, typed in the default server's terminal, grade it in that
  server's sandbox. The instructor's named server ``pod`` runs under ``deploy/hub/podlike.py``'s seccomp
  filter, with a grading cluster started as README, "Grading from a pod" says (``localhub.start_grading_cluster``:
  the README's certificate block, a TLS ``dask scheduler`` and a sandboxing ``dask worker`` as the
  instructor, the four ``c.SandboxedGrade.dask_*`` lines for the pod server alone): with the default
  server's state of that notebook forgotten, the pod server's Autograde button grades it on the cluster
  and leaves the same grades, rows, autograded files and feedback page as the default server. Formgrader
  in the ``pod`` server then takes the written answer by hand and generates and releases feedback with its
  buttons; the student fetches it and opens it.

Needs root (useradd, PAM, servers started as other users), /usr/bin/chromium, npm's
configurable-http-proxy and the hub environments (``python deploy/hub/localhub.py --install-only``,
which .ci/run runs): skips without them, fails under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import stat
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
FORGED = "FORGED-BY-THE-CLASSMATE"  # what the student's planted entries hold instead of a notebook
INVENTED = "<img src=x onerror=alert(1)>"  # an id a student invents (no slash: it is a folder name)
POD = "pod"  # the instructor's named server that cannot sandbox
SPAWN_MS = 240_000  # Playwright timeouts are in ms: a spawn on a busy 2-core machine is slow
STEP_MS = 90_000
HUB_BLOCK = "<!-- hub-term:"


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
    if not all((localhub.ENVS / role / ".stamp").is_file() for role in ("student", "instructor")):
        return f"no hub environments under {localhub.ENVS}: run `python deploy/hub/localhub.py --install-only`"
    if not localhub.CHP.exists() and not shutil.which("npm"):
        return "configurable-http-proxy is not installed and there is no npm to install it"
    return None


def readme_hub_block() -> list:
    """The commands of the README's hub block, comments dropped."""
    text = (REPO / "README.md").read_text()
    block = text[text.index(HUB_BLOCK):]
    block = block[block.index("```bash") + len("```bash"):]
    block = block[:block.index("```")]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


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
    scratch = Path(tempfile.mkdtemp(prefix="module6-hub-"))
    scratch.chmod(0o755)  # the accounts reach their homes and the hub's folder through it
    (scratch / "home").mkdir(mode=0o755)
    hub_id = localhub.check_hub(f"t{os.urandom(2).hex()}", scratch / "hub")
    checkout_mode = stat.S_IMODE(os.stat(REPO).st_mode)
    hub = cluster = None
    try:
        started = time.monotonic()
        deployment = localhub.deploy(hub_id, homes=scratch / "home", stems=[STEM, FURTHER_STEM],
                                     assignments=(ASSIGNMENT, FURTHER))
        cluster = localhub.start_grading_cluster(deployment.instructor, deployment.instructor_env)
        hub = localhub.start_hub(layout=deployment.layout, student_env=deployment.student_env,
                                 instructor_env=deployment.instructor_env, instructor=hub_id.instructor,
                                 students=hub_id.students, pod_server=POD)
        yield {"localhub": localhub, "hub": hub, "deployment": deployment, "started": started, "cluster": cluster}
    finally:
        if hub is not None:
            hub.stop()
        if cluster is not None:
            cluster.stop()
        localhub.remove(hub_id)
        os.chmod(REPO, checkout_mode)  # what make hub closed for the hub's students
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


class Terminal:
    """A terminal of a user's JupyterLab, opened from the launcher; lines are typed into it as a user types.

    After each line the test types ``echo $? > ~/.m6-done-N``: the shell runs it once the line has finished,
    so the file says when, and with which exit status (the line itself is typed as given).
    """

    def __init__(self, page, url: str, account, name: str):
        self.page, self.account, self.name, self.count = page, account, name, 0
        page.goto(f"{url}?reset")
        page.locator(".jp-LauncherCard", has_text="Terminal").first.click()
        self.xterm = page.locator(".jp-Terminal .xterm").last
        self.xterm.wait_for(timeout=SPAWN_MS)
        self.xterm.click()

    def run(self, line: str, timeout: float = 600) -> int:
        self.count += 1
        done = self.account.home / f".m6-done-{self.count}"
        self.xterm.click()
        self.page.keyboard.type(line)
        self.page.keyboard.press("Enter")
        self.page.keyboard.type(f"echo $? > ~/.m6-done-{self.count}")
        self.page.keyboard.press("Enter")
        deadline = time.monotonic() + timeout
        while not done.is_file() or not done.read_text().strip():
            if time.monotonic() > deadline:
                self.page.screenshot(path=f"/tmp/module6-hub-terminal-{self.name}.png")
                raise AssertionError(f"{self.account.name}'s terminal: {line!r} did not finish in {timeout:.0f} s")
            time.sleep(0.3)
        return int(done.read_text())


def _attack_script(layout, deployment, ben, ben_entry: str, localhub) -> tuple:
    """What the first student tries in their terminal, and the paths it names (each must exist: a read
    that fails because the path is wrong proves nothing). Each line of ~/attacks.txt names an attempt and
    says whether it worked. Every path is given to them: nothing relies on a path being unguessable."""
    course_id = localhub.COURSE_ID
    inbound = layout.exchange / course_id / "inbound"
    (site,) = (deployment.instructor_env / "lib").glob("python3*/site-packages")
    q = shlex.quote
    targets = {  # attempt -> (command, the path it names)
        "read the course's source notebook": ("cat", layout.course / "source" / ASSIGNMENT / f"{STEM}.ipynb"),
        "list the course directory": ("ls", layout.course),
        "read the gradebook": ("cat", layout.course / "gradebook.db"),
        "read the checkout's source": ("cat", REPO / "source" / ASSIGNMENT / f"{STEM}.ipynb"),
        "read the checkout's keys": ("cat", REPO / "autograder" / "exercises" / "05_negative_kl" / "key.py"),
        "list the checkout": ("ls", REPO),
        "run the instructor environment": ("", deployment.instructor_env / "bin" / "python"),
        "run autograder variants": ("", deployment.instructor_env / "bin" / "autograder"),
        "import the kit from the instructor environment": ("PYTHONPATH", site),
        "list the instructor environment": ("ls", deployment.instructor_env),
        "read the instructor's configuration": ("cat", layout.config / "instructor" / "nbgrader_config.py"),
        "list the hub's state": ("ls", layout.state),
        "read the hub's accounts": ("cat", layout.accounts_file),
        "enter the classmate's home": ("ls", ben.home),
        "list the exchange's inbox": ("ls", inbound),
        "rename the course in the exchange": ("mv", layout.exchange / course_id),
        "remove the course in the exchange": ("rm -rf", layout.exchange / course_id),
        "rename the classmate's submission": ("mv", inbound / ben_entry),
        "write into the classmate's submission": ("touch", inbound / ben_entry / f"{STEM}.ipynb"),
        "add a file to the classmate's submission": ("touch", inbound / ben_entry / "planted.ipynb"),
        "read the classmate's submission": ("cat", inbound / ben_entry / f"{STEM}.ipynb"),
        "replace the release": ("touch", layout.exchange / course_id / "outbound" / ASSIGNMENT / f"{STEM}.ipynb"),
    }
    lines = ["#!/bin/bash", "out=~/attacks.txt; : > $out", "me=$(id -un)", f"inbox={q(str(inbound))}",
             "attempt() { if bash -c \"$2\" >/dev/null 2>&1; then echo \"WORKED: $1\" >> $out; "
             "else echo \"refused: $1\" >> $out; fi; }"]
    for name, (verb, path) in targets.items():
        if verb == "":
            command = f"{q(str(path))} -c 'import autograder'" if path.name == "python" else \
                f"{q(str(path))} variants {ASSIGNMENT} --any-id --student x"
        elif verb == "PYTHONPATH":
            command = f"PYTHONPATH={q(str(path))} python3 -c 'import autograder'"
        elif verb == "mv":
            command = f"mv {q(str(path))} {q(str(path.parent / 'moved'))}"
        else:
            command = f"{verb} {q(str(path))}"
        lines.append(f"attempt {q(name)} {q(command)}")
    # Entries collect must refuse (making an entry in the inbox is everyone's right).
    lines += [
        f"(cd ~ && nbgrader submit {ASSIGNMENT} --student {ben.name}) >/dev/null 2>&1; echo 'planted: as the classmate' >> $out",
        f'mkdir "$inbox/{INVENTED}+{ASSIGNMENT}+2026-01-01 00:00:00.000000 UTC+x"; echo "planted: an invented id" >> $out',
    ]
    for claim in ("2099-01-01 00:00:00.000000 UTC", "not a time"):
        entry = f'"$inbox/$me+{ASSIGNMENT}+{claim}+x"'
        lines.append(f"mkdir {entry} && echo {FORGED} > {entry}/{STEM}.ipynb; echo 'planted: {claim}' >> $out")
    # What must exist for the attempt to mean anything: the path, or for a file to be made, its folder.
    return "\n".join(lines) + "\n", [path.parent if path.name == "planted.ipynb" else path
                                     for _, path in targets.values()]


def _grades(api, formgrader, assignment, stem, student) -> tuple:
    """(submitted notebook id, {grade name: grade}) from formgrader's API."""
    (record,) = [n for n in api.get(f"{formgrader}/api/submitted_notebooks/{assignment}/{stem}").json()
                 if n["student"] == student]
    return record["id"], {g["name"]: g for g in api.get(f"{formgrader}/api/grades?submission_id={record['id']}").json()}


def _grade_by_hand(page, formgrader, record: str, written: str, score: float) -> dict:
    """Give ``written`` its score on formgrader's grading page; the grades once formgrader saved it."""
    api = page.request
    grades_url = f"{formgrader}/api/grades?submission_id={record}"
    before = api.get(grades_url).json()
    page.goto(f"{formgrader}/submissions/{record}/")
    box = page.locator(f"input.score#{written}")
    box.fill(str(score))
    box.press("Tab")
    deadline = time.monotonic() + 60
    while api.get(grades_url).json() == before:  # the page saves on change, asynchronously
        assert time.monotonic() < deadline, "formgrader's page did not save the manual score"
        page.wait_for_timeout(250)
    return {g["name"]: g for g in api.get(grades_url).json()}


def _state_of(course: Path, student: str, assignment: str) -> dict:
    """Every file of a student's autograded folder and every gradebook row of the submission."""
    from nbgrader.api import Gradebook

    files = {str(p.relative_to(course)): p.read_bytes()
             for p in sorted((course / "autograded" / student / assignment).rglob("*")) if p.is_file()}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "llm-policy-module6") as gb:
        submission = gb.find_submission(assignment, student)
        rows = {(n.name, g.name): (g.auto_score, g.manual_score, g.needs_manual_grade)
                for n in submission.notebooks for g in n.grades}
        rows["timestamp"] = str(submission.timestamp)
    return {"files": files, "rows": rows}


def test_hub_term_through_the_browser(hub_term, browser, screenshot_dir):
    localhub, hub, deployment = hub_term["localhub"], hub_term["hub"], hub_term["deployment"]
    layout, instructor = deployment.layout, deployment.instructor
    ann, ben = deployment.students[0], deployment.students[1]
    course = layout.course
    source_nb = nbformat.read(str(REPO / "source" / ASSIGNMENT / f"{STEM}.ipynb"), as_version=4)
    further_nb = nbformat.read(str(REPO / "source" / FURTHER / f"{FURTHER_STEM}.ipynb"), as_version=4)
    timings = {"setup": time.monotonic() - hub_term["started"]}
    began = time.monotonic()

    # The instructor logs in first and starts both servers (the default one and ``pod``): they start
    # while the students work. Each tab goes straight to formgrader once its server is up.
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
    widget_cell = page.locator(".jp-Notebook .jp-CodeCell", has_text="kl_explorer(preset=").first
    widget_cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    widget_cell.locator(".jp-OutputArea .widget-slider, .jp-OutputArea .jupyter-widgets").first.wait_for()
    _type_answers(page, source_nb, ANSWERS, ESSAY)
    page.screenshot(path=str(screenshot_dir / "hub-notebook.png"), full_page=False)
    page.locator(".validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    dialog.get_by_text("open checks pass").wait_for()  # the student environment's reworded success
    dialog.locator("button").last.click()
    page.goto(f"{hub.url}/user/{ann.name}/lab/tree/{FURTHER}/{FURTHER_STEM}.ipynb?reset")  # typing needs no kernel
    _type_answers(page, further_nb, FURTHER_ANSWERS, FURTHER_ESSAY)
    timings["student work and validate"] = time.monotonic() - began

    # --- ben fetches and submits module6 untouched, with nbgrader as his Unix user.
    ben_env = localhub.user_env(ben, deployment.student_env, layout.config / "student", layout.exchange)
    nbgrader_ben = [str(deployment.student_env / "bin" / "nbgrader")]
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "fetch_assignment", ASSIGNMENT], ben.home)
    localhub.run_as(ben, ben_env, [*nbgrader_ben, "submit", ASSIGNMENT], ben.home)
    inbound = layout.exchange / localhub.COURSE_ID / "inbound"
    (ben_entry,) = [p.name for p in inbound.iterdir() if p.name.startswith(f"{ben.name}+")]

    # --- ann, in a terminal of her JupyterLab, tries what is not hers.
    script, named = _attack_script(layout, deployment, ben, ben_entry, localhub)
    assert [path for path in named if not path.exists()] == []
    (ann.home / "attacks.sh").write_text(script)
    os.chown(ann.home / "attacks.sh", *_ids(ann.name))
    terminal = Terminal(page, f"{hub.url}/user/{ann.name}/lab", ann, "student")
    assert terminal.run("bash ~/attacks.sh") == 0
    page.screenshot(path=str(screenshot_dir / "hub-student-terminal.png"))
    attempts = (ann.home / "attacks.txt").read_text().splitlines()
    planted = {p.name.split("+")[0]: p.owner() for p in inbound.iterdir() if p.owner() == ann.name}
    assert planted.get(ben.name) == ann.name and INVENTED in planted, planted  # each planted entry is there
    assert len([p for p in inbound.iterdir() if p.name.startswith(f"{ann.name}+")]) == 2, list(inbound.iterdir())
    assert len(attempts) == len(named) + 4 and not [line for line in attempts if line.startswith("WORKED")], attempts
    timings["student attacks"] = time.monotonic() - began

    _open_assignment_list(page)
    for assignment in (ASSIGNMENT, FURTHER):
        _listed(page, "fetched_assignments_list", assignment).locator("button", has_text="Submit").click()
        _listed(page, "submitted_assignments_list", assignment).wait_for()

    # --- module6, in the instructor's server (bubblewrap works): the README's block in its terminal,
    # formgrader's Autograde button and a manual grade after collect.
    commands = readme_hub_block()
    names = {"m6student1": ann.name, "m6student2": ben.name, "m6instructor": instructor.name}
    commands = [re.sub(r"\bm6(student\d|instructor)\b", lambda m: names[m.group(0)], line) for line in commands]
    assert commands[:4] == [f"nbgrader collect {ASSIGNMENT}", f"autograder grade {ASSIGNMENT}",
                            f"nbgrader collect {FURTHER}", f"autograder grade {FURTHER}"], commands
    ipage.wait_for_url(re.compile(re.escape(formgrader)), timeout=SPAWN_MS)
    terminal_page = inst_ctx.new_page()
    terminal_page.set_default_timeout(STEP_MS)
    iterm = Terminal(terminal_page, f"{hub.url}/user/{instructor.name}/lab", instructor, "instructor")
    assert iterm.run(commands[0]) == 0
    # Collected: each student's own last submission, nothing of what ann planted.
    assert {p.name for p in (course / "submitted").iterdir() if p.is_dir()} == {ann.name, ben.name}
    refused = (course / "reports" / f"collect-{ASSIGNMENT}.csv").read_text()
    folders = {s: course / "submitted" / s / ASSIGNMENT for s in (ann.name, ben.name)}
    assert all((f / f"{STEM}.ipynb").is_file() for f in folders.values()), refused
    # Each planted entry is named with its reason (the invented id, the classmate's name, the bad time).
    assert refused.count("\n") == 4 and "not a time" in refused and f"not by {ben.name}" in refused, refused
    assert "which HTML reads as markup" in refused, refused
    submitted = {s: (f / f"{STEM}.ipynb").read_text() for s, f in folders.items()}
    assert ESSAY in submitted[ann.name] and FORGED not in submitted[ann.name]
    assert ESSAY not in submitted[ben.name] and FORGED not in submitted[ben.name]

    ipage.goto(f"{formgrader}/manage_submissions/{ASSIGNMENT}")
    ipage.locator("tr", has_text=ann.name).locator(".autograde a").click()
    ipage.locator("#success-modal").wait_for()
    ipage.screenshot(path=str(screenshot_dir / "hub-autograde.png"))
    ipage.locator("#success-modal button").last.click()
    record, auto = _grades(ipage.request, formgrader, ASSIGNMENT, STEM, ann.name)
    assert auto[WRITTEN]["needs_manual_grade"] and auto[WRITTEN]["manual_score"] is None
    coded = [g for name, g in auto.items() if name != WRITTEN]
    assert coded and all(g["auto_score"] == g["max_score"] for g in coded), coded
    # Blind grading: with the names hidden, nothing on the grading page names the student.
    ipage.goto(f"{formgrader}/submissions/{record}/")
    ipage.locator(".nbgrader_cell").first.wait_for()
    assert ann.name not in ipage.evaluate("() => document.body.innerText"), "the grading page names the student"
    manual = _grade_by_hand(ipage, formgrader, record, WRITTEN, auto[WRITTEN]["max_score"])
    assert manual[WRITTEN]["manual_score"] == auto[WRITTEN]["max_score"]
    graded_by_button = _state_of(course, ann.name, ASSIGNMENT)
    timings["collect, autograde button, manual grade"] = time.monotonic() - began

    # The rest of the block: grade (ben; ann's work is unchanged and stays as the button graded it, her
    # manual grade kept), report, similarity, variants, the two exports.
    for line in commands[1:]:
        if iterm.run(line) != 0:  # the same line again, outside the browser, for what it printed
            again = subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", instructor.name, "--", "bash", "-c", line], cwd=course,
                                   env=localhub.user_env(instructor, deployment.instructor_env,
                                                         layout.config / "instructor", layout.exchange, course),
                                   capture_output=True, text=True, timeout=600)
            raise AssertionError(f"{line!r} failed in the instructor's terminal:\n{again.stdout[-3000:]}\n{again.stderr[-3000:]}")
    terminal_page.screenshot(path=str(screenshot_dir / "hub-instructor-terminal.png"))
    assert _state_of(course, ann.name, ASSIGNMENT) == graded_by_button
    assert (course / "autograded" / ben.name / ASSIGNMENT / f"{STEM}.ipynb").is_file()
    for made in ("canvas-module6.csv", "moodle-module6.csv"):
        assert ann.name in (course / made).read_text(encoding="utf-8-sig"), made
    assert any((course / "reports").glob("*")), "autograder report wrote nothing"
    timings["the README's block in the terminal"] = time.monotonic() - began

    # --- module6_further, as on a hub whose pods cannot sandbox: the block above collected it and graded it in
    # the default server's terminal (its own sandbox). The pod server grades it again on the grading cluster.
    feedback_page = course / "feedback" / ann.name / FURTHER / f"{FURTHER_STEM}.html"
    assert (course / "autograded" / ann.name / FURTHER / f"{FURTHER_STEM}.ipynb").is_file()
    by_default = _state_of(course, ann.name, FURTHER)
    page_by_default = feedback_page.read_bytes()
    _, grades_by_default = _grades(ipage.request, formgrader, FURTHER, FURTHER_STEM, ann.name)
    # Forget that the default server graded it (its state entry), so that the pod server's button grades it.
    (course / "autograded" / ann.name / FURTHER / ".autograder-state.json").unlink()
    podpage.wait_for_url(re.compile(re.escape(pod_formgrader)), timeout=SPAWN_MS)
    podpage.bring_to_front()  # a background tab never ends Bootstrap's fade: the screenshot showed no modal
    podpage.goto(f"{pod_formgrader}/manage_submissions/{FURTHER}")
    podpage.locator("tr", has_text=ann.name).locator(".autograde a").click()
    done = podpage.locator("#success-modal, #error-modal").first
    done.wait_for(timeout=SPAWN_MS)
    said = done.inner_text()
    assert done.get_attribute("id") == "success-modal", said[-3000:]
    # The button's log says where it was graded: on the course's cluster, by a worker's sandbox.
    assert "Grading on the Dask cluster at tls://127.0.0.1:" in said, said[-3000:]
    assert f"{ann.name}/{FURTHER_STEM} graded in the sandbox of a grading worker" in said, said[-3000:]
    podpage.locator("#success-modal.in").wait_for()  # Bootstrap's fade has begun; it lasts 300 ms
    podpage.wait_for_timeout(500)
    done.locator("pre").first.evaluate("pre => { pre.style.whiteSpace = 'pre-wrap'; pre.scrollTop = pre.scrollHeight; }")
    podpage.screenshot(path=str(screenshot_dir / "hub-pod-cluster-autograde.png"))
    done.locator("button").last.click()
    done.wait_for(state="detached")
    assert _state_of(course, ann.name, FURTHER) == by_default, "the cluster graded otherwise than the default server"
    assert feedback_page.read_bytes() == page_by_default
    assert _grades(podpage.request, pod_formgrader, FURTHER, FURTHER_STEM, ann.name)[1] == grades_by_default
    timings["pod server grades on the cluster"] = time.monotonic() - began

    # Formgrader in the pod server shows those grades; the written answer is graded by hand there.
    podpage.goto(f"{pod_formgrader}/manage_submissions/{FURTHER}")
    podpage.locator("tr", has_text=ann.name).wait_for()
    record, auto = _grades(podpage.request, pod_formgrader, FURTHER, FURTHER_STEM, ann.name)
    assert auto[FURTHER_WRITTEN]["needs_manual_grade"] and auto[FURTHER_WRITTEN]["manual_score"] is None
    coded = [g for name, g in auto.items() if name != FURTHER_WRITTEN]
    assert coded and all(g["auto_score"] == g["max_score"] for g in coded), coded
    manual = _grade_by_hand(podpage, pod_formgrader, record, FURTHER_WRITTEN, auto[FURTHER_WRITTEN]["max_score"])
    podpage.screenshot(path=str(screenshot_dir / "hub-manual-grade.png"))
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
    page.goto(f"{hub.url}/user/{ann.name}/lab?reset")
    _wait_lab(page, ann)
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
    print("hub term timings (s):", {k: round(v, 1) for k, v in timings.items()}, file=sys.stderr)


def _ids(name: str) -> tuple:
    import pwd

    record = pwd.getpwnam(name)
    return record.pw_uid, record.pw_gid


def test_a_second_hub_of_the_same_name_changes_nothing_and_names_the_first(hub_term):
    """Another hub folder under the test hub's name: it stops before touching any account."""
    localhub, deployment = hub_term["localhub"], hub_term["deployment"]
    other = localhub.check_hub(deployment.hub.name, deployment.layout.base.parent / "other")
    before = {a.name: (a.home.stat().st_mtime, json.dumps(localhub.account_comment(a.name)))
              for a in deployment.accounts}
    with pytest.raises(localhub.HubConflict, match=re.escape(str(deployment.layout.base))):
        localhub.deploy(other, homes=deployment.layout.base.parent / "home")
    after = {a.name: (a.home.stat().st_mtime, json.dumps(localhub.account_comment(a.name)))
             for a in deployment.accounts}
    assert after == before and not other.base.exists()
