"""The README's instructor block, run verbatim, line by line, in a scratch course: a whole term.

The block (between ``<!-- instructor-term`` and the end of the next ``bash`` fence of README.md) is
read from the README itself and each line runs as written, with ``bash``, in the course directory.
Between its lines the test does what people do: the instructor's roster is in the course directory;
students fetch and submit through nbgrader's exchange (one on time, one late, one late who edits
``timestamp.txt`` to an earlier time, one whose file is not a notebook, one on time with a mistake who
resubmits a corrected notebook after the due date), the instructor sets the due date, runs nbgrader's
own ``autograde`` as a second door, grades a written answer and writes a comment (in formgrader's own
pages, chromium), gives an extension after grading (the block's ``autograder extension`` line),
collects the resubmission (``--update``) and regrades with ``--force``. The instructor's late-penalty
plugin lives in a *user-level* Jupyter config (``JUPYTER_CONFIG_DIR``), never in the course's. What is
checked:

* first steps: on a fresh clone (``release/`` present, no gradebook) ``autograder grade`` names the
  command that makes the gradebook, which is the block's first line; it rebuilds ``release/``
  byte-identically;
* every command gives the same scores and late penalties (``autograder grade``, ``nbgrader
  autograde``), with the user-level plugin; the forged claim pays as the honest late student does
  and is reported; the extension takes effect at once (``nbgrader export``) and without ``--force``;
* the roster's names are what formgrader's student list serves and shows; the resubmission is
  collected by ``collect --update`` (not by a plain collect) and it is what is graded, late;
* ``generate_feedback`` and ``release_feedback`` work without ``--force`` and what the student
  fetches holds the comment and the current total, never the rubric; the non-notebook file has its
  own status in the report, the summary, its feedback and the gradebook's comment;
* formgrader's pages in headless chromium: the assignment list, the grading view of the written
  answer with its rubric right below it (each criterion with its points apart), a score and a comment
  typed there and saved, the students listed by name;
* where bubblewrap cannot run, ``nbgrader autograde`` names ``c.SandboxedGrade.no_sandbox`` once, and the
  grading-host route (``nbgrader collect`` + ``autograder grade`` where bubblewrap works).
"""

from __future__ import annotations

import csv
import datetime
import html
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.assignment import COURSE_ID
from autograder.authoring.scratch_course import REPO_ROOT, make_course_copy
from autograder.demo.simulate import Profile, submission
from conftest import with_lazy_imports

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("nbgrader")]

STEM = "09_sequence_ppl"  # code answers, hidden tests, a written answer with a rubric
FURTHER = "21_sampler_trainer_mismatch"
BIN = str(Path(sys.executable).parent)
COMMENT = "Good: you named the denominator. Say which tokens were compared."
PENALTY = 0.5  # what the user-level plugin takes from a late notebook
#: The instructor's roster (the file of the block's `autograder roster` line).
ROSTER = """nbgrader_id,name,email
ann,"Lovelace, Ada",ann@uni.example
cat,Grace Hopper,cat@uni.example
dan,Alan Turing,
eve,Emmy Noether,
fay,"Johnson, Katherine",fay@uni.example
"""
NAMES = {"ann": ("Lovelace", "Ada"), "cat": ("Hopper", "Grace"), "dan": ("Turing", "Alan"),
         "eve": ("Noether", "Emmy"), "fay": ("Johnson", "Katherine")}
#: fay's first submission: on time, with the fourth-token answer wrong (its test is worth 1 point).
FAY_FIRST = f"solutions+wrong:{STEM}:answer_fourth_token"
PLUGIN = '''from nbgrader.plugins import LateSubmissionPlugin


class HalfPoint(LateSubmissionPlugin):
    """The instructor's own policy: half a point off a late notebook."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return min(0.5, score)
'''


def readme_block() -> list:
    """The commands of the README's instructor block, as written there."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- instructor-term")
    fence = text.index("```bash", start) + len("```bash")
    return [line.strip() for line in text[fence:text.index("```", fence)].splitlines() if line.strip()]


class Term:
    def __init__(self, base: Path):
        self.base = base
        self.course = make_course_copy(base / "course", stems=[STEM, FURTHER])
        for assignment, stem in (("module6", STEM), ("module6_further", FURTHER)):
            # A fresh clone: the committed release is there, the gradebook is not.
            (self.course / "release" / assignment).mkdir(parents=True)
            shutil.copyfile(REPO_ROOT / "release" / assignment / f"{stem}.ipynb",
                            self.course / "release" / assignment / f"{stem}.ipynb")
        self.exchange = base / "exchange"
        self.exchange.mkdir()
        self.exchange.chmod(0o777)
        with (self.course / "nbgrader_config.py").open("a") as config:
            # The students here are not Unix accounts: this test's process submits for each of them, so an
            # inbox entry's owner cannot say who submitted (the README's setting for such an exchange; the
            # owner rule is tested with real accounts in test_exchange_collect.py and the hub test).
            config.write(f"\nc.Exchange.root = {str(self.exchange)!r}\nc.ExchangeCollect.check_owner = False\n")
        (self.course / "roster.csv").write_text(ROSTER, encoding="utf-8")
        user_config = base / "jupyter"
        user_config.mkdir()
        (user_config / "nbgrader_config.py").write_text(
            "c = get_config()\nc.AssignLatePenalties.plugin_class = 'module6_test_late.HalfPoint'\n")
        (base / "plugins").mkdir()
        (base / "plugins" / "module6_test_late.py").write_text(PLUGIN)
        self.env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "JUPYTER_CONFIG_DIR": str(user_config),
                    "PYTHONPATH": with_lazy_imports(str(base / "plugins")),
                    "JUPYTER_DATA_DIR": str(base / "data")}
        self.log: list = []

    def sh(self, line: str, *, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        proc = subprocess.run(["/bin/bash", "-c", line], cwd=self.course, env=env or self.env, text=True,
                              capture_output=True, timeout=900)
        self.log.append((line, proc.returncode, round(time.perf_counter() - started, 1)))
        if ok:
            assert proc.returncode == 0, f"{line}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        return proc

    def student(self, name: str, *args: str) -> subprocess.CompletedProcess:
        home = self.base / "homes" / name
        home.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--course={COURSE_ID}",
                               f"--Exchange.root={self.exchange}", f"--Exchange.cache={home / 'cache'}",
                               f"--CourseDirectory.student_id={name}"],
                              cwd=home, env=self.env, text=True, capture_output=True, timeout=600)
        assert proc.returncode == 0, f"{name}: nbgrader {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
        return proc

    def hand_in(self, name: str, profile: str | None) -> None:
        home = self.base / "homes" / name
        work = home / "module6"
        work.mkdir(parents=True, exist_ok=True)
        if profile is None:  # a file that is not a notebook
            (work / f"{STEM}.ipynb").write_text("{ this is not JSON", encoding="utf-8")
        else:
            nbformat.write(submission(STEM, self.course, Profile.parse(profile), name), str(work / f"{STEM}.ipynb"))
        self.student(name, "submit", "module6")

    def gradebook(self):
        from nbgrader.api import Gradebook
        return Gradebook("sqlite:///" + str(self.course / "gradebook.db"), COURSE_ID)

    def submitted_stamp(self, name: str) -> str:
        return (self.course / "submitted" / name / "module6" / "timestamp.txt").read_text()

    def snapshot(self) -> dict:
        found = {}
        with self.gradebook() as gb:
            for record in gb.assignment_submissions("module6"):
                for notebook in record.notebooks:
                    found[record.student.id] = {
                        "penalty": notebook.late_submission_penalty, "score": notebook.score,
                        "timestamp": str(record.timestamp),
                        "grades": {g.name: (g.auto_score, g.manual_score) for g in notebook.grades},
                        "comments": {c.name: (c.auto_comment, c.manual_comment) for c in notebook.comments}}
        return found


def _run_term(term: Term) -> dict:
    got: dict = {"block": readme_block()}
    first = term.sh("autograder grade module6", ok=False)
    got["first_error"] = first
    for line in got["block"]:
        proc = term.sh(line)
        command = line.split("#")[0].split()
        if command[:3] == ["nbgrader", "generate_assignment", "module6"]:
            got["release_after_setup"] = (term.course / "release" / "module6" / f"{STEM}.ipynb").read_bytes()
        if command[:2] == ["autograder", "roster"]:
            got["roster_output"] = proc.stdout + proc.stderr
        if command[:3] == ["nbgrader", "release_assignment", "module6"]:
            for name in ("ann", "cat", "dan", "eve", "fay"):
                term.student(name, "fetch_assignment", "module6")
            term.hand_in("ann", "solutions")
            term.hand_in("eve", None)
            term.hand_in("fay", FAY_FIRST)
            time.sleep(1.2)
            due = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            with term.gradebook() as gb:
                gb.update_or_create_assignment("module6", duedate=due)
            time.sleep(1.2)
            term.hand_in("cat", "solutions")
            term.hand_in("dan", "solutions")
            # dan edits the claim in the exchange after submitting: an hour before the due date.
            (inbox,) = (term.exchange / COURSE_ID / "inbound").glob("dan+module6+*")
            (inbox / "timestamp.txt").write_text(f"{due - datetime.timedelta(hours=1)} UTC")
            got["due"] = due
        if command[:3] == ["autograder", "grade", "module6"] and "--report" in command:
            got["grade_output"] = proc.stdout + proc.stderr
            got["report"] = [json.loads(row) for row in (term.course / "grades.jsonl").read_text().splitlines()]
            got["after_ours"] = term.snapshot()
            got["ours_feedback"] = (term.course / "feedback" / "ann" / "module6" / f"{STEM}.html").read_text()
            theirs = term.sh("nbgrader autograde module6 --force")
            got["theirs_output"] = theirs.stdout + theirs.stderr
            got["after_theirs"] = term.snapshot()
            got["autograded"] = nbformat.read(str(term.course / "autograded" / "ann" / "module6" / f"{STEM}.ipynb"),
                                              as_version=4)
        if command[:3] == ["autograder", "grade", "module6_further"]:
            # A person grades ann's written answer and comments in formgrader's pages, in chromium.
            got["formgrader"] = _grade_in_formgrader(term)
            got["after_manual"] = term.snapshot()
            # fay, past the due date, hands in a corrected notebook; a plain collect keeps the first one.
            got["fay_first_stamp"] = term.submitted_stamp("fay")
            term.hand_in("fay", "solutions")
            (newest,) = sorted(p for p in (term.exchange / COURSE_ID / "inbound").glob("fay+module6+*")
                               if p.is_dir())[-1:]
            got["fay_resubmitted_stamp"] = (newest / "timestamp.txt").read_text()
            plain = term.sh("nbgrader collect module6")
            got["plain_collect"] = (plain.stdout + plain.stderr, term.submitted_stamp("fay"))
        if command[:2] == ["autograder", "extension"]:  # cat asked for more time, after grading
            got["extension_output"] = proc.stdout + proc.stderr
            got["after_extension_line"] = term.snapshot()  # the stored penalties nbgrader export reads
        if command[:3] == ["nbgrader", "collect", "--update"]:
            got["update_collect"] = (proc.stdout + proc.stderr, term.submitted_stamp("fay"))
        if command == ["autograder", "grade", "module6"]:
            got["second_grade_output"] = proc.stdout + proc.stderr
            got["after_extension"] = term.snapshot()  # the resubmission graded, the extension counted
            term.sh("autograder grade module6 --force")  # a regrade after the manual grade
            got["after_regrade"] = term.snapshot()
        if command[:2] == ["nbgrader", "generate_feedback"]:
            got["generated"] = proc.stdout + proc.stderr
            got["feedback_dir"] = sorted(p.name for p in (term.course / "feedback" / "ann" / "module6").iterdir())
        if command[:2] == ["nbgrader", "release_feedback"]:
            term.student("ann", "fetch_feedback", "module6")
            pages = sorted((term.base / "homes" / "ann" / "module6" / "feedback").rglob(f"{STEM}.html"))
            got["fetched"] = pages[-1].read_text(encoding="utf-8") if pages else None
        if command[:2] == ["nbgrader", "export"]:
            with (term.course / "grades.csv").open() as handle:
                got["grades"] = {row["student_id"]: row for row in csv.DictReader(handle)}
    # Where bubblewrap cannot run (not on PATH here), nbgrader's door says what to set, once.
    hidden = dict(term.env, PATH=BIN)
    got["no_sandbox"] = term.sh(f"{BIN}/nbgrader autograde module6 --force", env=hidden, ok=False)
    got["log"] = term.log
    return got


def _grade_in_formgrader(term: Term) -> dict:
    """Open formgrader's pages in headless chromium, read the rubric beside ann's written answer, type
    a score and a comment and let the page save them; returns what was seen (and screenshots).

    Runs in a thread of its own: Playwright's sync API refuses a thread with a running asyncio loop,
    and a test that ran earlier on the same pytest worker (kernels, servers) may have left one.
    """
    from browser.conftest import _missing_browser_stack

    missing = _missing_browser_stack()
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the term's browser part cannot run in CI: {missing}")
        pytest.skip(missing)
    import threading

    outcome: dict = {}

    def run():
        try:
            outcome["seen"] = _drive_formgrader(term)
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = error

    worker = threading.Thread(target=run, name="formgrader-browser")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["seen"]


def _drive_formgrader(term: Term) -> dict:
    from browser.conftest import CHROMIUM, CHROMIUM_ARGS, start_jupyter_lab
    from playwright.sync_api import sync_playwright

    seen: dict = {"screens": []}
    shots = term.base / "screens"
    shots.mkdir()
    with start_jupyter_lab(term.course) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{server.url}/formgrader/gradebook?token={server.token}")
            page.get_by_role("link", name="module6", exact=True).wait_for(timeout=60_000)
            seen["assignments"] = page.locator("body").inner_text()
            page.screenshot(path=str(shots / "assignments.png"))
            seen["screens"].append(shots / "assignments.png")
            page.get_by_role("link", name="module6", exact=True).click()
            page.get_by_role("link", name=STEM).click()
            page.get_by_text("Submission #1").first.wait_for(timeout=60_000)  # names are hidden until revealed
            (record,) = [n for n in server.api("GET", f"/formgrader/api/submitted_notebooks/module6/{STEM}")
                         if n["student"] == "ann"]
            page.goto(f"{server.url}/formgrader/submissions/{record['id']}/?token={server.token}")
            score = page.locator("input.score#explain_mask_dependence")
            score.wait_for(timeout=60_000)
            rubric = page.get_by_text("the sum is unchanged (log 1 = 0)").first
            rubric.scroll_into_view_if_needed()
            seen["rubric_visible"] = rubric.is_visible()
            # The rubric sits right below the answer it grades, above the next graded cell.
            seen["rubric_below_answer"] = page.evaluate(
                """() => {
                    const box = document.querySelector('#explain_mask_dependence').closest('.nbgrader_cell');
                    const rubric = [...document.querySelectorAll('.cell')].find(
                        c => c.textContent.includes('the sum is unchanged (log 1 = 0)'));
                    return !!(box && rubric && (box.compareDocumentPosition(rubric) & Node.DOCUMENT_POSITION_FOLLOWING));
                }""")
            # Each criterion of the rubric reads with its points apart (issue 33, F16: "pointsthe answer says").
            seen["rubric_item"] = page.locator("li", has_text="the sum is unchanged (log 1 = 0)").first.inner_text()
            page.screenshot(path=str(shots / "grading.png"), full_page=True)
            seen["screens"].append(shots / "grading.png")
            score.fill("0.5")
            score.press("Tab")
            comment = page.locator("textarea#explain_mask_dependence-comment")
            comment.fill(COMMENT)
            comment.press("Tab")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with term.gradebook() as gb:
                    grade = gb.find_grade("explain_mask_dependence", STEM, "module6", "ann")
                    note = gb.find_comment("explain_mask_dependence", STEM, "module6", "ann")
                    saved = (grade.manual_score, note.manual_comment)
                if saved == (0.5, COMMENT):
                    break
                time.sleep(0.5)
            seen["saved"] = saved
            # The students by the roster's names: formgrader's list and the API its page reads.
            seen["students_api"] = server.api("GET", "/formgrader/api/students")
            page.goto(f"{server.url}/formgrader/manage_students?token={server.token}")
            page.get_by_text("Lovelace, Ada").first.wait_for(timeout=60_000)
            seen["students_page"] = page.locator("body").inner_text()
            page.screenshot(path=str(shots / "students.png"), full_page=True)
            seen["screens"].append(shots / "students.png")
        finally:
            browser.close()
    return seen


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    started = time.perf_counter()
    got = _run_term(Term(tmp_path_factory.mktemp("readme-term")))
    got["seconds"] = time.perf_counter() - started
    print(f"\nREADME term: {got['seconds']:.0f} s; " + "; ".join(f"{line.split('#')[0].strip()} {s} s"
                                                         for line, _, s in got["log"]))
    return got


def test_the_block_is_the_whole_term(term):
    commands = [line.split("#")[0].strip() for line in term["block"]]
    assert commands[0] == "nbgrader generate_assignment module6 --force"
    for needed in ("autograder roster roster.csv", "nbgrader collect module6",
                   "autograder grade module6 --report grades.jsonl", "autograder extension module6 --student cat --days 1",
                   "nbgrader collect --update module6", "autograder grade module6",
                   "nbgrader generate_feedback module6", "nbgrader release_feedback module6", "nbgrader export"):
        assert needed in commands
    # The roster comes before anything is collected; the resubmission is collected with --update and graded.
    assert commands.index("autograder roster roster.csv") < commands.index("nbgrader collect module6")
    assert commands.index("nbgrader collect --update module6") < commands.index("autograder grade module6") \
        < commands.index("nbgrader generate_feedback module6")
    assert not any("formgrader" in command.split()[:2] for command in commands)  # not a command of nbgrader 0.9.6


def test_first_steps_name_the_command_that_works(term):
    first = term["first_error"]
    assert first.returncode == 2 and "Traceback" not in first.stderr
    assert "nbgrader generate_assignment ASSIGNMENT --force" in first.stderr
    # That command (the block's first line) rebuilt the committed release byte for byte.
    assert term["release_after_setup"] == (REPO_ROOT / "release" / "module6" / f"{STEM}.ipynb").read_bytes()


def test_every_door_gives_the_same_scores_and_penalties(term):
    ours, theirs = term["after_ours"], term["after_theirs"]
    assert set(ours) == {"ann", "cat", "dan", "eve", "fay"}
    assert ours == theirs
    assert ours["fay"]["penalty"] is None and ours["fay"]["score"] == ours["ann"]["score"] - 1  # on time, one part wrong
    assert "graded in the sandbox" in term["theirs_output"]
    # The user-level plugin: half a point from each late notebook, by both commands.
    assert ours["ann"]["penalty"] is None and ours["eve"]["penalty"] is None
    assert ours["cat"]["penalty"] == ours["dan"]["penalty"] == PENALTY
    assert ours["cat"]["score"] == ours["dan"]["score"] == ours["ann"]["score"] > PENALTY


def test_a_forged_claim_pays_like_the_honest_late_student_and_is_reported(term):
    ours, due = term["after_ours"], term["due"]
    claimed = due - datetime.timedelta(hours=1)
    assert datetime.datetime.fromisoformat(ours["dan"]["timestamp"]) > due > claimed
    (disputed,) = [r for r in term["report"] if r["status"] == "timestamp_disputed"]
    assert disputed["student"] == "dan" and str(claimed) in disputed["feedback"]
    assert "dan:" in term["grade_output"] and "received" in term["grade_output"]
    assert not [r for r in term["report"] if r["student"] != "dan" and r["status"] == "timestamp_disputed"]


def test_an_extension_after_grading_counts_without_force(term):
    assert term["after_manual"]["cat"]["penalty"] == PENALTY
    # The block's `autograder extension` line: the deadline said, the stored penalty (what nbgrader export
    # writes; tests/test_extension.py runs the export) lifted at once, before any regrade.
    out = term["extension_output"]
    assert "cat (module6): deadline " in out and "+ extension 1 day" in out and "on time with this deadline" in out
    assert f"late penalty of {STEM}: none (was {PENALTY:g} points)" in out
    assert term["after_extension_line"]["cat"]["penalty"] is None
    assert term["after_extension_line"]["dan"]["penalty"] == PENALTY
    assert term["after_extension"]["cat"]["penalty"] is None
    assert term["after_extension"]["dan"]["penalty"] == PENALTY
    assert term["after_regrade"] == term["after_extension"]  # the regrade keeps the manual grade and comment
    assert term["grades"]["cat"]["late_submission_penalty"] in ("0.0", "0")
    assert float(term["grades"]["dan"]["late_submission_penalty"]) == PENALTY


def test_formgrader_shows_the_rubric_and_saves_a_score_and_comment(term):
    seen = term["formgrader"]
    print("formgrader screenshots:", *seen["screens"])
    assert "module6" in seen["assignments"]
    assert seen["rubric_visible"] and seen["rubric_below_answer"]
    assert seen["rubric_item"].startswith("0.25 points when the answer says: the sum is unchanged (log 1 = 0)")
    assert seen["saved"] == (0.5, COMMENT)


def test_the_roster_names_the_students_in_formgrader(term):
    assert "5 students; 5 were added to the gradebook" in term["roster_output"]
    listed = {s["id"]: (s["last_name"], s["first_name"]) for s in term["formgrader"]["students_api"]}
    assert listed == NAMES
    page = term["formgrader"]["students_page"]
    assert "None, None" not in page
    for last, first in NAMES.values():
        assert f"{last}, {first}" in page


def test_a_resubmission_is_collected_with_update_and_the_newer_work_is_graded(term):
    first, newer = term["fay_first_stamp"], term["fay_resubmitted_stamp"]
    assert newer != first
    # A plain collect keeps the copy it has (nbgrader 0.9.6); the block's --update line takes the newer one.
    assert term["plain_collect"][1] == first
    assert term["update_collect"][1] == newer
    before, after = term["after_manual"]["fay"], term["after_extension"]["fay"]
    assert datetime.datetime.fromisoformat(after["timestamp"]) > datetime.datetime.fromisoformat(before["timestamp"])
    assert datetime.datetime.fromisoformat(after["timestamp"]) > term["due"]
    # The newer notebook is what was graded: every autograded point (the first one lost a part), paid late.
    assert after["score"] == term["after_manual"]["cat"]["score"] == before["score"] + 1
    assert before["penalty"] is None and after["penalty"] == PENALTY
    assert term["after_regrade"]["fay"] == after
    assert float(term["grades"]["fay"]["late_submission_penalty"]) == PENALTY


def test_released_feedback_is_current_and_has_no_rubric(term):
    assert "Skipping existing assignment" not in term["generated"]
    assert {"timestamp.txt", "submission_secret.txt", f"{STEM}.html"} <= set(term["feedback_dir"])
    page = term["fetched"]
    assert page is not None, "ann fetched no feedback"
    text = html.unescape(page)
    assert COMMENT in text
    ann = term["after_regrade"]["ann"]
    assert ann["grades"]["explain_mask_dependence"][1] > 0
    assert f"{STEM} (Score: {float(round(ann['score'], 2))} / " in text  # nbgrader's own heading: the current total
    assert float(term["grades"]["ann"]["score"]) == pytest.approx(ann["score"])
    from autograder.feedback.rubric import HEADING
    rubric_line = "the sum is unchanged (log 1 = 0)"
    assert rubric_line not in text and HEADING not in text
    assert rubric_line not in html.unescape(term["ours_feedback"])
    # ... while formgrader's notebook has it, right after the written answer.
    cells = term["autograded"].cells
    (index,) = [i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_mask_dependence"]
    assert cells[index + 1].metadata.get("module6_rubric") == "explain_mask_dependence"
    assert rubric_line in cells[index + 1].source


def test_a_file_that_is_not_a_notebook_has_its_own_status_everywhere(term):
    eve = [r for r in term["report"] if r["student"] == "eve"]
    assert eve and {r["status"] for r in eve} == {"unreadable"}
    assert all(r["score"] in (0.0, None) for r in eve)
    row = [line for line in term["grade_output"].splitlines() if line.startswith(STEM)]
    assert row and row[0].split()[4] == str(len(eve))  # the summary's errors column counts each of its cells
    comments = term["after_regrade"]["eve"]["comments"]
    assert comments and all("not a readable notebook" in (auto or "") for auto, _ in comments.values())


def test_without_a_sandbox_nbgrader_names_the_setting_once(term):
    proc = term["no_sandbox"]
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert out.count("c.SandboxedGrade.no_sandbox = True") == 1, out[-3000:]
    # and the route that grades anyway, sandboxed: a grading host on the same course directory
    assert "grade on a grading host where bubblewrap works" in out and "`autograder grade module6`" in out, out[-3000:]
    assert "--no-sandbox" not in out and "Traceback" not in out
