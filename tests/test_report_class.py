"""The class report counts back exactly what was planted: misconceptions, crashes, time-outs, scores."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest

from autograder.demo.simulated_results import simulated_rows
from autograder.results import KEYS, normalise, write_jsonl
from autograder.insight import report as class_report
from autograder.insight.catalogue import catalogue, of_notebook
from autograder.grading.errors import GradingError
from autograder.insight.results import ResultsError, load_rows, read_jsonl

PLANT = {
    ("19_sampling_transforms", "top_p", "top-p-keeps-extra"): 47,
    ("19_sampling_transforms", "temperature", "temperature-multiplied"): 12,
    ("15_stable_log_softmax", "numerics", "no-max-shift"): 30,
    ("12_top_p_nucleus", "threshold_080", "top-p-keeps-extra"): 5,
}


def test_planted_counts_on_a_simulated_class_of_200():
    rows = simulated_rows(200, seed=3, plant=PLANT, crash={"16_causal_shift": 9},
                          timeout={"18_kl_estimators": 4, "16_causal_shift": 2}, missing={"20_rollout_validation": 6})
    report = class_report.summarise(rows, "module6")
    assert len(report.students) == 200
    for (stem, _group, key), count in PLANT.items():
        assert report.misconception(stem, key) == count, (stem, key)
    # Nothing else was planted: every counted misconception is one of the planted ones.
    assert {(m.notebook, m.key) for m in report.misconceptions} == {(s, k) for s, _, k in PLANT}
    assert [m.students for m in report.misconceptions] == sorted(PLANT.values(), reverse=True)
    # Each key comes with the sentence its check teaches.
    sentences = {e.key: e.sentence for e in of_notebook("19_sampling_transforms")}
    top = report.misconceptions[0]
    assert (top.key, top.sentence) == ("top-p-keeps-extra", sentences["top-p-keeps-extra"])
    by_stem = {nb.notebook: nb for nb in report.notebooks}
    assert (by_stem["16_causal_shift"].crashed, by_stem["16_causal_shift"].timed_out) == (9, 2)
    assert (by_stem["18_kl_estimators"].crashed, by_stem["18_kl_estimators"].timed_out) == (0, 4)
    assert by_stem["20_rollout_validation"].missing == 6 and by_stem["20_rollout_validation"].submitted == 194
    # Score distribution of one group, counted by hand from the rows.
    group_rows = [r for r in rows if r["notebook"] == "19_sampling_transforms" and r["grade_id"] == "test_top_p"]
    (stats,) = [g for g in report.groups if (g.notebook, g.grade_id) == ("19_sampling_transforms", "test_top_p")]
    full = sum(1 for r in group_rows if r["score"] == r["max_score"])
    zero = sum(1 for r in group_rows if r["score"] == 0)
    assert (stats.full, stats.zero, stats.partial, stats.graded) == (full, zero, 200 - full - zero, 200)
    assert stats.pass_rate == pytest.approx(full / 200)
    assert stats.mean == pytest.approx(sum(r["score"] for r in group_rows) / 200)


def test_html_is_self_contained_and_csv_matches(tmp_path):
    rows = simulated_rows(60, seed=1, plant=PLANT | {("19_sampling_transforms", "top_p", "top-p-keeps-extra"): 20},
                          crash={"16_causal_shift": 3})
    results = tmp_path / "grades.jsonl"
    write_jsonl(str(results), rows)
    made = class_report.build(tmp_path, "module6", results=results, output=tmp_path / "out", use_gradebook=False)
    page = made["html"].read_text()
    # One page: no scripts, nothing fetched; plots are PNG data URIs with alt text.
    assert "<script" not in page
    assert not re.search(r"""(src|href)=['"]?(https?:|//)""", page)
    images = re.findall(r"<img src='data:image/png;base64,[A-Za-z0-9+/=]+' alt='([^']+)'", page)
    assert len(images) == 3 and all(images)
    assert "top-p-keeps-extra" in page and "Notebooks that crashed, ran out of time or could not be read" in page
    levels = [int(n) for n in re.findall(r"<h([1-6])", page)]
    assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:]))
    with open(made["misconceptions_csv"], newline="") as handle:
        table = {(r["notebook"], r["key"]): int(r["students"]) for r in csv.DictReader(handle)}
    assert table[("19_sampling_transforms", "top-p-keeps-extra")] == 20
    assert table[("15_stable_log_softmax", "no-max-shift")] == 30
    with open(made["groups_csv"], newline="") as handle:
        groups = list(csv.DictReader(handle))
    assert len(groups) == sum(len(g) for g in simulated_groups().values())
    crashed = [g for g in groups if g["notebook"] == "16_causal_shift"]
    assert all(g["did_not_run"] == "3" for g in crashed)


def simulated_groups():
    from autograder.checks import CHECKS
    return {stem: CHECKS[stem].groups for stem in CHECKS}


def test_rows_carry_misconception_keys_as_a_list():
    row = normalise({"student": "a", "notebook": "n", "grade_id": "test_x", "score": 0.0, "max_score": 1.0,
                     "status": "graded", "feedback": ""})
    assert tuple(row) == KEYS and row["misconceptions"] == []
    assert normalise({**row, "misconceptions": ["k", 3]})["misconceptions"] == ["k"]


def test_catalogue_keys_are_unique_per_notebook_and_have_sentences():
    entries = catalogue()
    assert len(entries) > 100
    for (stem, key), entry in entries.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key), key
        assert entry.sentence.strip() and entry.stem == stem


def test_every_key_a_check_can_report_has_a_sentence():
    """Issue 33, F14: the report's "what the students were told" read "(no sentence on record)" for keys the
    check framework reports (``silent-bad-input`` had no Misconception at all; ``value-error-expected`` and
    ``float32-arithmetic`` are reported by helpers, never named in an exercise's check.py)."""
    import ast
    from pathlib import Path

    from autograder import exercises
    from autograder.checks._judge import Misconception
    from autograder.insight.catalogue import sentence_of, shared

    framework = shared()
    assert {"silent-bad-input", "value-error-expected", "float32-arithmetic"} <= set(framework)
    # Every key literal a check passes to a Verdict or a Reject is a catalogued key with a sentence.
    root = Path(exercises.__file__).parent.parent
    literals = set()
    for path in [*root.glob("checks/*.py"), *root.glob("exercises/*/check.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Verdict", "Reject"):
                for arg in [*node.args[2 if node.func.id == "Verdict" else 1:], *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        literals.add((path, arg.value))
    for path, key in literals:
        stem = path.parent.name if path.name == "check.py" else next(iter(exercises.stems()))
        assert sentence_of(stem, key), (path, key)
    # ... and so is every Misconception any check module holds, for every exercise.
    entries = catalogue()
    for stem in exercises.stems():
        module = __import__(f"autograder.exercises.{stem}.check", fromlist=["CHECK"])
        keys = {v.key for v in vars(module).values() if isinstance(v, Misconception)}
        for key in keys | set(framework):
            assert sentence_of(stem, key, entries, framework), (stem, key)


def test_the_report_names_what_the_students_were_told(tmp_path):
    rows = [normalise({"student": s, "notebook": "15_stable_log_softmax", "grade_id": "test_validation",
                       "score": 0.0, "max_score": 1.0, "status": "graded", "feedback": "",
                       "misconceptions": ["silent-bad-input", "value-error-expected"]}) for s in ("a", "b")]
    from autograder.checks._judge import SILENT_BAD_INPUT, VALUE_ERROR_EXPECTED
    # From a results file (no verdict records): the teaching sentences.
    report = class_report.summarise(rows, "module6")
    sentences = {m.key: m.sentence for m in report.misconceptions}
    assert sentences == {"silent-bad-input": SILENT_BAD_INPUT.sentence,
                         "value-error-expected": VALUE_ERROR_EXPECTED.sentence}
    page = class_report.render_html(report, 0.1)
    assert "(no sentence on record)" not in page and html_escape(SILENT_BAD_INPUT.sentence) in page
    # With the messages the cases gave: those, most frequent first.
    from collections import Counter
    told = {("15_stable_log_softmax", "silent-bad-input"): Counter({
        "logits with a NaN was accepted silently (check `logits`): raise ValueError instead": 2,
        "an empty array was accepted silently: raise ValueError instead": 1})}
    report = class_report.summarise(rows, "module6", told=told)
    page = class_report.render_html(report, 0.1)
    row = page[page.index("<code>silent-bad-input</code>"):]
    row = row[:row.index("</tr>")]
    assert row.index("logits with a NaN") < row.index("an empty array") and "(2 cases)" in row
    # A key nobody knows still says so.
    unknown = class_report.summarise([{**rows[0], "misconceptions": ["made-up-key"]}], "module6")
    assert "(no sentence on record)" in class_report.render_html(unknown, 0.1)


def html_escape(text: str) -> str:
    import html
    return html.escape(text)


def test_bad_results_file_is_named(tmp_path):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"student": "a", "notebook": "n"}\nnot json\n')
    with pytest.raises(ResultsError, match="line 2"):
        read_jsonl(bad)
    with pytest.raises(GradingError, match="not a course directory"):
        load_rows(tmp_path, "module6", use_gradebook=False)


@pytest.mark.slow
def test_report_counts_what_was_planted_in_a_graded_class(tmp_path):
    import planted_class

    course = planted_class.build(tmp_path / "course")
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "report", "module6"], cwd=course,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "class report:" in proc.stdout
    rows = load_rows(course, "module6")  # the grader's own state, the gradebook for manual scores
    assert sorted(map(json.dumps, rows)) == sorted(map(json.dumps, read_jsonl(course / "grades.jsonl")))
    report = class_report.summarise(rows, "module6")
    assert report.misconception("15_stable_log_softmax", "no-max-shift") == planted_class.planted_count("no-max-shift")
    assert report.misconception("19_sampling_transforms", "temperature-multiplied") == \
        planted_class.planted_count("temperature-multiplied")
    honest = {r["student"] for r in rows if r["misconceptions"]}
    assert not honest & {"honest1", "honest2", "honest3", "crash1", "loop1"}
    by_stem = {nb.notebook: nb for nb in report.notebooks}
    assert (by_stem["19_sampling_transforms"].crashed, by_stem["19_sampling_transforms"].timed_out) == (1, 0)
    assert (by_stem["15_stable_log_softmax"].crashed, by_stem["15_stable_log_softmax"].timed_out) == (0, 1)
    page = (course / "reports" / "module6-report.html").read_text()
    assert "no-max-shift" in page and "temperature-multiplied" in page
    # Every key says what the students were told, the check framework's keys too (issue 33, F14): the
    # messages of the failed cases, read from the autograded notebooks.
    assert report.misconception("15_stable_log_softmax", "silent-bad-input") == \
        planted_class.planted_count("silent-bad-input")
    assert "(no sentence on record)" not in page
    row = page[page.index("<code>silent-bad-input</code>"):]
    row = row[:row.index("</tr>")]
    assert "was accepted silently" in row and "raise ValueError instead" in row
    with open(course / "reports" / "module6-misconceptions.csv", newline="") as handle:
        found = {r["key"]: r for r in csv.DictReader(handle)}
    assert found["silent-bad-input"]["teaching_sentence"] and "accepted silently" in found["silent-bad-input"]["told"]


def test_design_note_lists_every_misconception_key():
    from pathlib import Path

    from autograder.insight.catalogue import key_lines

    design = (Path(__file__).resolve().parents[1] / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    section = design.split("## Misconception keys", 1)[1].split("\n## ", 1)[0]
    listed = [line for line in section.splitlines() if line.startswith("- `")]
    assert listed == key_lines().splitlines(), "regenerate with: python -m autograder.insight.catalogue --keys"


# --------------------------------------------------------------------------- whichever door graded

def _nbgrader_autograde(course, students):
    """Grade as formgrader's Autograde button does (``NbGraderAPI.autograde``, nbgrader's own
    ``Autograde`` converter) with the course's config and the bridge: in this process, where the toy
    check is registered."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.grading import nbgrader_bridge

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    nbgrader_bridge.install(config)
    coursedir = CourseDirectory(config=config, root=str(course))
    api = NbGraderAPI(coursedir=coursedir, config=config)
    for student in students:
        result = api.autograde("toy", student, force=True)
        assert result["success"], result.get("error", "") + result.get("log", "")


def test_report_and_similarity_read_any_door_alike(tmp_path):
    """One class graded by `autograder grade`, then again by nbgrader's Autograde converter (the code of
    `nbgrader autograde` and of formgrader's button): the report's rows are the same, they agree with
    the grader's own --report rows, and a file that is not a notebook has its own status."""
    from hostile import toy

    from autograder.grading.batch import Options, run
    from autograder.grading.gradebook import course_directory
    from autograder.insight import similarity

    course = toy.copy_course(toy.template(), tmp_path / "course")
    toy.submit(course, "honest", toy.honest_answers())
    toy.submit(course, "wrong", {**toy.honest_answers(), "double": "def double(x):\n    return x\n"})
    toy.submit(course, "crash", {**toy.honest_answers(), "answer_value": "import os\nos._exit(3)\n"})
    (course / "submitted" / "garbage" / "toy").mkdir(parents=True)
    (course / "submitted" / "garbage" / "toy" / "90_toy.ipynb").write_bytes(b"\xff{not json")
    (course / "submitted" / "absent" / "toy").mkdir(parents=True)  # handed in nothing
    students = ["absent", "crash", "garbage", "honest", "wrong"]
    assert run(Options("toy", course_dir=str(course), jobs=2, report=str(course / "grades.jsonl"),
                       progress=False)) == 0
    ours = load_rows(course, "toy")
    strip = [{k: v for k, v in row.items() if k != "feedback"} for row in read_jsonl(course / "grades.jsonl")]
    assert sorted(map(json.dumps, [{k: v for k, v in r.items() if k != "feedback"} for r in ours])) == \
        sorted(map(json.dumps, strip))
    status = {(r["student"], r["grade_id"]): r["status"] for r in ours}
    assert status[("garbage", "test_double")] == status[("garbage", "explain_why")] == "unreadable"
    assert status[("absent", "test_double")] == "missing" and status[("crash", "test_answer")] == "error"
    assert status[("honest", "explain_why")] == "needs_manual_grade"
    report = class_report.summarise(ours, "toy")
    (nb,) = report.notebooks
    assert (nb.unreadable, nb.crashed, nb.missing, nb.submitted) == (1, 1, 1, 4)
    page = class_report.build(course, "toy")["html"].read_text()
    assert "not a readable notebook" in page

    # A person grades a written answer; then nbgrader's own door grades the class again.
    from nbgrader.api import Gradebook
    coursedir = course_directory(course)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        gb.find_grade("explain_why", "90_toy", "toy", "honest").manual_score = 1.0
        gb.db.commit()
    before = load_rows(course, "toy")
    (shutil_rm := __import__("shutil").rmtree)(course / "autograded")
    (course / "feedback").exists() and shutil_rm(course / "feedback")
    _nbgrader_autograde(course, [s for s in students if s != "absent"])  # nbgrader refuses an empty folder
    theirs = load_rows(course, "toy")
    assert theirs == before
    assert {(r["student"], r["grade_id"]): (r["status"], r["score"]) for r in theirs}[("honest", "explain_why")] \
        == ("graded", 1.0)
    # Similarity reads the submissions themselves: the same whichever door graded; the unreadable file is named.
    made = similarity.build(course, "toy", output=tmp_path / "out")
    assert [(i.student, i.grade_id) for i in made["not_compared"]] == [("garbage", None)]

    # A damaged autograded notebook (deeply nested JSON, a FIFO) costs only its own rows; the page is written.
    import os
    (course / "autograded" / "wrong" / "toy" / "90_toy.ipynb").write_text("[" * 100_000)
    (course / "autograded" / "crash" / "toy" / "90_toy.ipynb").unlink()
    os.mkfifo(course / "autograded" / "crash" / "toy" / "90_toy.ipynb")
    damaged = load_rows(course, "toy")
    assert [r for r in damaged if r["student"] not in ("wrong", "crash")] == \
        [r for r in theirs if r["student"] not in ("wrong", "crash")]
    for row in (r for r in damaged if r["student"] in ("wrong", "crash")):
        assert row["status"] == "error" and "autograded notebook could not be read" in row["feedback"], row
        assert row["score"] == next(r["score"] for r in theirs if (r["student"], r["grade_id"]) ==
                                    (row["student"], row["grade_id"]))  # the gradebook's score stands
    assert class_report.build(course, "toy", output=tmp_path / "out")["html"].is_file()
