"""Self-study mode: full local checks, progress, gated reveal, and no leak into release/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder import selfstudy
from autograder.checks import CHECKS, run_check
from autograder.checks._judge import raised_messages_quoted
from autograder.authoring import selfstudy_build as build
from autograder.assignment import ASSIGNMENTS, assignment_of, notebook_stems, release_dir, source_dir
from autograder.selfstudy import Reveal, panel
from tests.check_support import example_numbers
from course.variants import STUDENT_ID_GRADE_ID

ROOT = Path(__file__).resolve().parents[1]
STEMS = sorted(CHECKS)


@pytest.fixture
def progress(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path / "selfstudy-progress.json"


def _results(stem: str, answers: dict, groups=None):
    return run_check(stem, answers, groups).groups


def test_every_exercise_has_hints_a_worked_solution_and_an_idea():
    assert STEMS == sorted(stem for assignment in ASSIGNMENTS for stem in notebook_stems(ROOT, assignment))
    for stem in STEMS:
        material = selfstudy.load_solution(stem)
        assert material["hints"], f"{stem}: no hints"
        assert len(material["solution"]) > 200, f"{stem}: the worked solution is too thin"
        assert material["remember"].strip(), f"{stem}: no idea to remember"


def test_reveal_asks_for_confirmation_before_a_first_attempt(progress):
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    assert state.request_solution() == "confirm"
    assert not state.solution_shown
    assert state.request_solution() == "shown"
    assert state.solution_shown


def test_reveal_opens_at_once_after_a_check_ran(progress):
    selfstudy.record_try("15_stable_log_softmax", _results("15_stable_log_softmax", {}), path=progress)
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    assert state.request_solution() == "shown"
    other = Reveal("16_causal_shift", progress_path=progress)
    assert other.request_solution() == "confirm", "an attempt at one exercise must not open another"


def test_hints_come_one_at_a_time_then_stop(progress):
    state = Reveal("15_stable_log_softmax", progress_path=progress)
    hints = [state.next_hint() for _ in range(len(state.material["hints"]))]
    assert hints == state.material["hints"]
    assert state.next_hint() is None


def test_a_check_on_the_untouched_stub_is_not_a_try(progress, capsys):
    def stable_log_softmax(logits, axis=-1):
        raise NotImplementedError

    assert selfstudy.check("15_stable_log_softmax", "numerics", {"stable_log_softmax": stable_log_softmax}) is None
    out = capsys.readouterr().out
    assert "not implemented" in out and "Not counted as a try" in out
    assert not selfstudy.has_attempted("15_stable_log_softmax", progress)
    assert not progress.exists()


def test_template_values_are_not_a_try_but_one_filled_value_is(progress, capsys):
    template = {"sequence_logprob": None, "mean_nll": None, "perplexity": None}
    selfstudy.check("09_sequence_ppl", None, dict(template))
    assert selfstudy.tries("09_sequence_ppl", progress) == 0
    selfstudy.check("09_sequence_ppl", None, {**template, "mean_nll": 1.0})
    assert selfstudy.tries("09_sequence_ppl", progress) == 1
    nested = {"stop_flags": {"response_1": {"stop_reason": None, "terminated": None, "truncated": None}}}
    selfstudy.check("01_stop_reasons", None, nested)
    assert selfstudy.tries("01_stop_reasons", progress) == 0
    assert "Not counted as a try" in capsys.readouterr().out


def test_a_wrong_answer_is_a_try_and_the_progress_file_keeps_one_score_per_part(progress, capsys):
    import numpy as np

    def stable_log_softmax(logits, axis=-1):
        return np.asarray(logits, dtype=float)  # wrong: passes nothing

    def reference(logits, axis=-1):
        from autograder.reference import stable_log_softmax
        return stable_log_softmax(logits, axis)

    stem = "15_stable_log_softmax"
    groups = CHECKS[stem].groups
    selfstudy.check(stem, groups[0].name, {"stable_log_softmax": stable_log_softmax})
    selfstudy.check(stem, groups[1].name, {"stable_log_softmax": reference})
    selfstudy.check(stem, groups[0].name, {"stable_log_softmax": reference})  # same answer: no new try
    selfstudy.check(stem, groups[0].name, {"stable_log_softmax": stable_log_softmax})  # best is kept
    entry = json.loads(progress.read_text())[stem]
    assert entry["tries"] == 3
    assert set(entry["parts"]) == {groups[0].name, groups[1].name}
    for group in groups[:2]:
        part = entry["parts"][group.name]
        assert part["points"] == group.points and part["best"] == group.points, part
        assert part["best"] <= part["points"]
    assert entry["parts"][groups[0].name]["last"] == 0.0
    out = capsys.readouterr().out
    assert "What the failures suggest" not in out
    selfstudy.progress(stem, path=progress)
    table = capsys.readouterr().out
    assert "Exercise 15 (stable log softmax): 3 tries" in table
    assert f"  1. {groups[0].title}: best {groups[0].points:g} / {groups[0].points:g}" in table


def test_feedback_tells_a_repeated_failure_once():
    def stable_log_softmax(logits, axis=-1):
        return np.asarray(logits)  # noqa: F821 -- the missing import is the point

    with raised_messages_quoted():  # as selfstudy.check judges
        result = run_check("15_stable_log_softmax", {"stable_log_softmax": stable_log_softmax})
    text = result.feedback()
    message = "raised NameError: name 'np' is not defined"
    failing = [case for case in result.cases if message in case.message]
    assert len(failing) > 10
    assert text.count(message) == len({case.group for case in failing}), text
    assert re.search(r"and \d+ more cases: stable_log_softmax raised NameError", text), text
    assert len(text.splitlines()) < len(result.cases)


def test_check_gives_full_points_to_the_reference(progress, capsys):
    from autograder.reference import stable_log_softmax

    selfstudy.check("15_stable_log_softmax", None, {"stable_log_softmax": stable_log_softmax})
    assert "FAIL" not in capsys.readouterr().out
    entry = json.loads(progress.read_text())["15_stable_log_softmax"]
    assert sum(part["best"] for part in entry["parts"].values()) == CHECKS["15_stable_log_softmax"].points


def test_reveal_widget_confirms_then_shows_the_solution(progress):
    panel = selfstudy.reveal("15_stable_log_softmax")
    state = panel._reveal_state
    solution_button = panel.children[1].children[1]
    solution_button.click()
    assert "click again" in panel.children[2].value and not state.solution_shown
    solution_button.click()
    assert state.solution_shown and solution_button.disabled


def test_force_opens_the_panel_with_the_solution_shown(progress):
    panel = selfstudy.reveal("16_causal_shift", force=True)
    assert panel._reveal_state.solution_shown and panel._reveal_button.disabled
    assert not selfstudy.has_attempted("16_causal_shift", progress), "forcing is not a try"


def test_the_panel_updates_itself_when_a_check_records_a_try(progress):
    from autograder.reference import stable_log_softmax

    panel = selfstudy.reveal("15_stable_log_softmax")
    status, solution_button = panel.children[2], panel.children[1].children[1]
    solution_button.click()  # before any try: asks to confirm
    assert "click again" in status.value and solution_button.description == "Reveal anyway"
    selfstudy.check("15_stable_log_softmax", "public", {"stable_log_softmax": stable_log_softmax})
    assert "You have not" not in status.value
    assert "tried this notebook 1 time" in status.value
    assert solution_button.description == "Reveal the worked solution"
    assert not panel._reveal_state.solution_shown
    solution_button.click()  # one click now
    assert panel._reveal_state.solution_shown


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted([_luminance(a), _luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_panel_buttons_have_names_and_enough_contrast(progress):
    panel = selfstudy.reveal("15_stable_log_softmax")
    for button in panel.children[1].children:
        assert button.description and button.tooltip
        assert _contrast(button.style.button_color, button.style.text_color) >= 4.5, button.description
    assert 'role="status"' in panel.children[2].value


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_build_turns_hidden_tests_into_local_checks(tmp_path, assignment):
    written = build.build_all(tmp_path / "selfstudy")[assignment].written
    release_folder = release_dir(ROOT, assignment)
    assert [p.name for p in written] == sorted(p.name for p in release_folder.glob("*.ipynb"))
    assert all(p.parent == tmp_path / "selfstudy" / assignment for p in written)
    for path in written:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert not any("nbgrader" in cell.metadata for cell in nb.cells), f"{path.name}: nbgrader metadata left"
        release = nbformat.read(release_folder / path.name, as_version=4)
        groups = [c.metadata["nbgrader"]["grade_id"].removeprefix("test_") for c in release.cells
                  if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
        calls = re.findall(r'check\("([^"]+)", "([^"]+)", globals\(\)\)', "\n".join(c.source for c in nb.cells))
        assert calls == [(path.stem, group) for group in groups]
        assert {g.name for g in CHECKS[path.stem].groups} == set(groups)
        assert nb.cells[-1].source.endswith(f'reveal("{path.stem}")')
        how = next(c for c in nb.cells if c.get("id") == "how-this-works")
        assert "Run All" in how.source and "Validate" not in how.source
        # The open checks' import check knows this flavour's own check cells import autograder.
        desk = [c.source for c in nb.cells if "check_imports(" in c.source]
        assert desk and len(desk) == sum("check_imports(" in c.source for c in release.cells)
        assert all('check_imports(globals(), provided=("autograder",))' in source for source in desk)


def test_the_default_build_location_is_the_one_the_readme_names():
    assert build.DEFAULT_ROOT == ROOT / "build" / "lab" / "selfstudy"
    assert build.DEFAULT_OUT == build.DEFAULT_ROOT / "module6"
    assert "build/lab/selfstudy/module6/" in (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "SELFSTUDY      ?= build/lab/selfstudy\n" in makefile
    # `make lab` and `make selfstudy` build into the same folder
    assert makefile.count("-m autograder.authoring.selfstudy_build $(SELFSTUDY)\n") == 2


def test_building_again_keeps_a_learners_work_and_says_so(tmp_path, capsys):
    root = tmp_path / "selfstudy"
    out = root / "module6"
    first = build.build(out)
    assert len(first.written) == 20 and not first.kept
    edited = out / "15_stable_log_softmax.ipynb"
    nb = nbformat.read(edited, as_version=4)
    answer = next(c for c in nb.cells if c.get("id") == "answer-stable-log-softmax")
    answer.source = "def stable_log_softmax(logits, axis=-1):\n    return 'my work'\n"
    nbformat.write(nb, str(edited))
    before = edited.read_bytes()
    assert build.main([str(root)]) == 0  # every assignment, each into root/<assignment>
    report = capsys.readouterr().out
    assert edited.read_bytes() == before, "a rebuild overwrote the learner's notebook"
    assert "kept 1 notebook" in report and "15_stable_log_softmax.ipynb" in report and "your work is safe" in report
    again = build.build(out)
    assert edited in again.kept and len(again.written) == 19


def _paragraphs(text: str) -> list:
    """Substantive lines of the self-study material (long enough to be a real leak if found)."""
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    return [line for line in lines if len(line) >= 40 and not line.startswith("#")]


def test_no_self_study_material_reaches_the_release():
    released = "\n".join(re.sub(r"\s+", " ", p.read_text(encoding="utf-8"))
                         for p in (ROOT / "release").rglob("*") if p.is_file())
    released = released.replace("\\n", " ")
    from autograder.exercises import solution_path, stems
    for path in [solution_path(stem) for stem in stems()]:
        for line in _paragraphs(path.read_text(encoding="utf-8")):
            assert line not in released, f"{path.name} leaks into release/: {line[:60]!r}"


# --------------------------------------------------------------------------- the worked solutions themselves

def _given_code_cells(stem: str) -> tuple:
    """The notebook's own code a learner runs around the answers: (setup and data cells, open checks)."""
    nb = nbformat.read(source_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb", as_version=4)
    given, open_checks = [], []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade_id") == STUDENT_ID_GRADE_ID:
            given.append(cell.source)  # the id cell is released as written: it is given, not answered
            continue
        if cell.cell_type != "code" or meta.get("solution") or meta.get("grade"):
            continue
        if "widget" in cell.metadata.get("tags", []):
            continue
        (open_checks if cell.get("id", "").startswith("check") else given).append(cell.source)
    return given, open_checks


def _worked_code(stem: str) -> list:
    return re.findall(r"```python\n(.*?)```", selfstudy.load_solution(stem)["solution"], flags=re.S)


@pytest.mark.parametrize("stem", STEMS)
def test_the_worked_solution_passes_the_open_checks_and_earns_every_autograded_point(stem, capsys):
    given, open_checks = _given_code_cells(stem)
    blocks = _worked_code(stem)
    assert blocks, f"{stem}: the worked solution states no answer as Python code"
    # STUDENT_ID is an answer cell (not given): nobody typed an id, so a notebook whose numbers vary
    # shows variant 0, the numbers the worked solution quotes.
    namespace = {"__name__": "__main__", "STUDENT_ID": ""}
    with example_numbers():
        for source in given:
            exec(compile(source, f"<{stem} given cell>", "exec"), namespace)
        for block in blocks:
            exec(compile(block, f"<{stem} worked solution>", "exec"), namespace)
        for source in open_checks:
            exec(compile(source, f"<{stem} open check>", "exec"), namespace)
        result = run_check(stem, namespace)
    assert result.points_earned == CHECKS[stem].points, result.feedback()


def test_each_exercise_offers_two_or_three_hints_and_a_short_idea():
    for stem in STEMS:
        material = selfstudy.load_solution(stem)
        assert 2 <= len(material["hints"]) <= 3, f"{stem}: {len(material['hints'])} hints"
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", material["remember"].strip()) if s]
        assert len(sentences) <= 2, f"{stem}: the idea to remember runs to {len(sentences)} sentences"


def test_selfstudy_check_quotes_the_error_text(progress, capsys):
    def stable_log_softmax(logits, axis=-1):
        raise ValueError(f"LEAK {list(logits)!r}")

    selfstudy.check("15_stable_log_softmax", None, {"stable_log_softmax": stable_log_softmax})
    assert "raised ValueError: LEAK [" in capsys.readouterr().out


def _fifteen(body: str):
    """A learner's stable_log_softmax defined the way a notebook cell defines it (module ``__main__``)."""
    namespace = {"__name__": "__main__", "np": __import__("numpy")}
    exec(f"def stable_log_softmax(logits, axis=-1):\n    {body}", namespace)
    return namespace


def test_a_try_is_one_attempt_at_the_notebook_not_one_check_cell(progress, capsys):
    stem = "15_stable_log_softmax"
    attempts = ["return np.asarray(logits, dtype=float)",
                "z = np.asarray(logits, dtype=float)\n    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))",
                "z = np.asarray(logits, dtype=float)\n    z = z - z.max(axis=axis, keepdims=True)\n"
                "    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))"]
    for body in attempts:  # three attempts, each checked in all four check cells, the last one run twice
        for _ in range(2 if body is attempts[-1] else 1):
            namespace = _fifteen(body)
            for group in CHECKS[stem].groups:
                selfstudy.check(stem, group.name, namespace)
    capsys.readouterr()
    assert selfstudy.tries(stem, progress) == 3
    # The same code defined again (a kernel restart, another cell file name) is the same answer.
    assert selfstudy.answers_fingerprint(stem, _fifteen(attempts[0])) == \
        selfstudy.answers_fingerprint(stem, _fifteen(attempts[0]))
    assert selfstudy.answers_fingerprint(stem, _fifteen(attempts[0])) != \
        selfstudy.answers_fingerprint(stem, _fifteen(attempts[1]))


def test_a_changed_helper_is_a_changed_answer():
    stem = "15_stable_log_softmax"
    def with_helper(helper_body):
        namespace = {"__name__": "__main__", "np": __import__("numpy")}
        exec(f"def shift(z):\n    {helper_body}\n"
             "def stable_log_softmax(logits, axis=-1):\n    return shift(np.asarray(logits, dtype=float))", namespace)
        return namespace
    assert selfstudy.answers_fingerprint(stem, with_helper("return z")) != \
        selfstudy.answers_fingerprint(stem, with_helper("return z - z.max()"))


def test_validate_counts_no_try_and_reports_a_failing_part_on_stderr(progress, capsys, monkeypatch):
    stem = "15_stable_log_softmax"
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    selfstudy.check(stem, "public", _fifteen("return np.asarray(logits, dtype=float)"))
    captured = capsys.readouterr()
    assert CHECKS[stem].groups[0].title in captured.err and not captured.out.strip()
    assert not progress.exists(), "Validate's own kernel must not count a try"
    reference = {"stable_log_softmax": __import__("autograder.reference", fromlist=["x"]).stable_log_softmax}
    selfstudy.check(stem, "public", reference)
    captured = capsys.readouterr()
    assert captured.out.strip() and not captured.err, "a part that passes every case writes nothing to stderr"


def test_progress_lists_parts_in_the_notebooks_order_by_title_with_a_total(progress, capsys):
    stem = "15_stable_log_softmax"
    groups = CHECKS[stem].groups
    reference = {"stable_log_softmax": __import__("autograder.reference", fromlist=["x"]).stable_log_softmax}
    for group in reversed(groups[1:]):  # checked out of order; the first part never
        selfstudy.check(stem, group.name, reference)
    capsys.readouterr()
    selfstudy.progress(path=progress)
    lines = capsys.readouterr().out.splitlines()
    earned = sum(g.points for g in groups[1:])
    total = sum(g.points for g in groups)
    assert lines[0] == f"Exercise 15 (stable log softmax): 1 try, best {earned:g} / {total:g} autograded points"
    assert lines[1:] == [f"  1. {groups[0].title}: not checked yet (0 / {groups[0].points:g})"] + [
        f"  {i}. {g.title}: best {g.points:g} / {g.points:g}" for i, g in enumerate(groups[1:], 2)]


# --------------------------------------------------------------------------- issue 35: the self-study polish


def _exec(namespace: dict, source: str) -> dict:
    exec(compile(source, "<answer cell>", "exec"), namespace)
    return namespace


def test_a_run_through_the_notebook_is_one_try_however_many_parts_it_checks(progress, capsys):
    """Run All in a fresh kernel: Part A's check runs before Part B's answer cell has run, and Part B's
    check after it. One attempt, one try; a second run with Part A changed is the second."""
    stem = "09_sequence_ppl"
    namespace = {"__name__": "__main__", "math": __import__("math")}
    first_a = "sequence_logprob = -2.0\nmean_nll = 2.0 / 3\nperplexity = math.exp(2.0 / 3)"
    for answer_a in (first_a, first_a.replace("-2.0", "-2.5").replace("2.0 / 3", "2.5 / 3")):
        _exec(namespace, answer_a)
        selfstudy.check(stem, "three_tokens", namespace)
        _exec(namespace, "sequence_logprob_4 = sequence_logprob\nperplexity_4 = math.exp(-sequence_logprob / 4)")
        selfstudy.check(stem, "fourth_token", namespace)
    capsys.readouterr()
    assert selfstudy.tries(stem, progress) == 2
    selfstudy.check(stem, "fourth_token", namespace)  # a part checked again on the same answers: no try
    assert selfstudy.tries(stem, progress) == 2


def test_a_run_through_after_new_numbers_is_one_try_on_them(progress, capsys, monkeypatch):
    from autograder.selfstudy import practice

    monkeypatch.setattr(practice, "_SHOWN", {})
    monkeypatch.setattr(practice, "_LAST_STEM", [])
    stem = "09_sequence_ppl"
    cells = ["sequence_logprob = sum(math.log(p) for p in numbers['p'])\n"
             "mean_nll = -sequence_logprob / 3\nperplexity = math.exp(mean_nll)",
             "sequence_logprob_4 = sequence_logprob + math.log(numbers['p4'])\n"
             "perplexity_4 = math.exp(-sequence_logprob_4 / 4)"]

    def run_through(namespace):
        namespace["numbers"] = practice.practice_numbers(stem)
        for cell, group in zip(cells, ("three_tokens", "fourth_token")):
            _exec(namespace, cell)
            selfstudy.check(stem, group, namespace)

    namespace = {"__name__": "__main__", "math": __import__("math")}
    run_through(namespace)
    practice.draw(stem)
    run_through(namespace)  # as the panel says: again from the numbers cell
    out = capsys.readouterr().out
    entry = json.loads(progress.read_text())[stem]
    assert entry["tries"] == 2 and entry["numbers_tries"] == 1, entry
    groups = CHECKS[stem].groups
    for group in groups:  # both runs earned every point, on the example's numbers and then on the new ones
        assert out.count(f"{group.title}: {group.points:g} / {group.points:g} points") == 2, out


def test_the_cap_is_told_once_where_the_central_mistake_shows(progress):
    """Exercise 24 with the shift backwards in the loss: the check of the loss says the central idea
    is missing and its [FAIL] line says how; the other parts' checks say in one line that their points
    are capped because of `causal_lm_loss`, without quoting that function's mistake as their own."""
    import io
    import contextlib
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from test_checks_ex24_labels_and_shifting import answer

    stem = "24_labels_and_shifting"
    namespace = _exec({"__name__": "__main__", "np": __import__("numpy")}, answer(pair="p, t = lp[:, 1:], y[:, :-1]"))
    outputs = {}
    for group in CHECKS[stem].groups:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            selfstudy.check(stem, group.name, namespace)
        outputs[group.name] = printed.getvalue()
    mistake = "The shift goes the wrong way"
    idea = "the central idea (the shift inside the loss"
    assert sum(text.count(mistake) for text in outputs.values()) == 1, outputs  # its own [FAIL] line only
    assert sum(text.count(idea) for text in outputs.values()) == 1, outputs
    assert idea in outputs["loss"] and "[FAIL] loss, a [3, 7] batch" in outputs["loss"]
    for name, text in outputs.items():
        assert "[CAPPED]" in text, name
        if name != "loss":
            assert "missing in `causal_lm_loss` (the check of \"causal_lm_loss:" in text, text
    # The whole notebook at once: the same, with the notebook's total first.
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        selfstudy.check(stem, None, namespace)
    whole = printed.getvalue()
    assert whole.startswith(f"{stem}: ") and whole.count(mistake) == 1 and whole.count(idea) == 1, whole


def test_a_check_of_template_answers_says_to_run_the_cells_a_learner_filled_in(progress, capsys):
    """17 said "the answers are still the template's" of an answer written but not run: the kernel
    cannot tell the two apart, so the sentence names both."""
    def sequence_logprobs(*args, **kwargs):
        raise NotImplementedError

    stem = "17_sequence_metrics"
    group = CHECKS[stem].groups[0].name
    selfstudy.check(stem, group, {"sequence_logprobs": sequence_logprobs})
    out = capsys.readouterr().out
    assert "Not counted as a try" in out and "still holds the template's answers" in out
    assert "run their cells first (Shift+Enter), then this check again" in out


def test_selfstudys_first_view_does_not_say_the_numbers_shown_differ_from_the_examples():
    from course.variants import varies

    for stem in STEMS:
        source = nbformat.read(release_dir(ROOT, assignment_of(stem, ROOT)) / f"{stem}.ipynb", as_version=4)
        markdown = " ".join(c.source for c in build.convert(source, stem).cells if c.cell_type == "markdown")
        said = "".join(c.source for c in source.cells if c.cell_type == "markdown").lower().count("yours differ")
        if varies(stem):
            assert "yours differ" not in markdown.lower(), stem
            assert markdown.count("ours are these until you draw new numbers (which differ)") == said, stem
        else:
            assert "ours are these until you draw" not in markdown, stem


def test_exercise_07s_hints_help_with_every_part():
    hints = selfstudy.load_solution("07_behaviour_policy")["hints"]
    assert [hint.split(".", 1)[0] for hint in hints] == ["**Part A", "**Part B", "**Part C"], hints


def test_worked_solution_code_wraps_with_a_hanging_indent_and_copies_as_the_code():
    import html as html_module

    code = ('def f(x):\n    return {"a": x, "b": x}  # a comment that makes this line long\n'
            '\n        deeper = 1\n')
    rendered = panel._code_html(code)
    lines = re.findall(r'<span class="selfstudy-line" style="padding-left: (\d+)ch; text-indent: -(\d+)ch">(.*?)</span>'
                       r'(?=<span class="selfstudy-line"|</pre>)', rendered)
    assert [(int(a), int(b)) for a, b, _ in lines] == [(6, 6), (10, 10), (6, 6), (14, 14)]
    text = [html_module.unescape(re.sub(r"<[^>]+>", "", body)) for _, _, body in lines]
    assert text == code.rstrip("\n").split("\n")  # the text is the code, spaces included
    parts = panel._solution_parts("Prose $x$.\n\n```python\nx = 1\n```\n\nMore.\n```python\ny = 2\n```\n")
    assert [kind for kind, _ in parts] == ["markdown", "code", "markdown", "code"]
    assert parts[1][1] == "x = 1\n" and parts[3][1] == "y = 2\n"
