"""The committed student release: in sync with the source, free of anything instructor-only, and runnable.

The leak scan reads every file under ``release/`` and looks for text that only the instructor has:
solution regions and hidden tests of the source notebooks, rubric sentences, answer-key values and
self-study worked solutions.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import re
import time
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.release import check_release
from autograder.authoring.scratch_course import REPO_ROOT, release_dir, source_dir
from tests.nbrun_support import (
    HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END, errors, in_pool, is_answer_cell,
    config, is_test_cell, nbgrader_meta, normalise, present_stems, read, regions, release_with_hidden_tests,
    stderr_text,
)

PRESENT = present_stems()
RELEASE_ROOT = REPO_ROOT / "release"
STUB_MESSAGE = "Replace this line with your code, then run the check cell below."


# --------------------------------------------------------------------------- what must never be released


def _sentences(text: str, min_words: int) -> list:
    pieces = re.split(r"(?<=[.!?;:])\s+|\n|\|", text)
    # Questions restate the public task; answers are statements.
    return [p.strip(" *_`>-") for p in pieces if len(p.split()) >= min_words and not p.strip().endswith("?")]


def _is_code_line(line: str) -> bool:
    """A line long enough to be telling, with code in it beyond string literals and punctuation.

    (A continuation line of a literal such as ``"a", "b",`` may well repeat public option names.)
    """
    bare = re.sub(r"(\"[^\"]*\"|'[^']*')", "", line.strip())
    return len(line.strip()) >= 16 and len(re.sub(r"[^A-Za-z0-9]", "", bare)) >= 6


def _solution_secrets() -> list:
    found = []
    for stem in PRESENT:
        for cell in read(source_dir() / f"{stem}.ipynb").cells:
            for region in regions(cell.source, SOLUTION_BEGIN, SOLUTION_END):
                if cell.cell_type == "markdown":
                    found += [(f"{stem} solution {cell.id}", s) for s in _sentences(region, 6)]
                else:
                    found.append((f"{stem} solution {cell.id}", region))
                    found += [(f"{stem} solution {cell.id}", line.strip()) for line in region.splitlines()
                              if _is_code_line(line)]
            for region in regions(cell.source, HIDDEN_BEGIN, HIDDEN_END):
                found += [(f"{stem} hidden test {cell.id}", line.strip()) for line in region.splitlines()
                          if line.strip()]
    return found


def _markdown_secrets(folder: Path, label: str) -> list:
    found = []
    for path in sorted(folder.glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("#", "Question:")):
                continue  # headings and the restated (public) question
            found += [(f"{label} {path.name}", s) for s in _sentences(line, 7)]
    return found


def _number_forms(value: float) -> list:
    if not math.isfinite(value) or abs(value - round(value, 3)) < 1e-9:
        return []  # integers, halves, 0.2 (even as 0.19999999999999996): too common to mean anything
    return [repr(value), f"{value:.6g}", f"{value:.5f}"]


def _key_values(value, label):
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str):
        if len(value.split()) >= 4:  # sentences; single labels are the public option names
            yield label, value
    elif isinstance(value, (int, float)):
        for form in _number_forms(float(value)):
            yield label, form
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _key_values(item, f"{label}[{key!r}]")
        text = repr(value)
        if len(text) >= 20:
            yield label, text
            yield label, text.replace("'", '"')
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _key_values(item, label)


def _key_secrets() -> list:
    found = []
    for path in sorted((REPO_ROOT / "autograder" / "keys").glob("ex*.py")):
        module = importlib.import_module(f"autograder.keys.{path.stem}")
        for name, value in vars(module).items():
            if name.isupper():
                found += list(_key_values(value, f"key {path.stem}.{name}"))
        # The explanations written next to the values ("#: ...") are key text too.
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("#:"):
                found += [(f"key {path.stem} comment", s) for s in _sentences(line.strip()[2:], 8)]
    return found


def _self_study_secrets() -> list:
    folder = REPO_ROOT / "autograder" / "selfstudy" / "solutions"
    return _markdown_secrets(folder, "self-study") if folder.is_dir() else []


def _release_texts() -> dict:
    """``relative path -> normalised text`` of every release file (a notebook also as its cell sources)."""
    texts = {}
    for path in sorted(RELEASE_ROOT.rglob("*")):
        if not path.is_file():
            continue
        raw = path.read_bytes().decode("utf-8", errors="replace")
        if path.suffix == ".ipynb":
            nb = nbformat.reads(raw, as_version=4)
            raw += "\n" + "\n".join(cell.source for cell in nb.cells)
        texts[path.relative_to(REPO_ROOT).as_posix()] = normalise(raw)
    return texts


SECRET_KINDS = {
    "solutions and hidden tests": _solution_secrets,
    "rubrics": lambda: _markdown_secrets(REPO_ROOT / "autograder" / "rubrics", "rubric"),
    "answer keys": _key_secrets,
    "self-study": _self_study_secrets,
}


def find_leaks(secrets, texts) -> list:
    """``(where, origin, snippet)`` for each secret snippet found in a normalised release text."""
    leaks = set()
    for origin, snippet in secrets:
        needle = normalise(snippet)
        leaks |= {(where, origin, snippet) for where, text in texts.items() if needle and needle in text}
    return sorted(leaks)


@pytest.mark.parametrize("kind", sorted(SECRET_KINDS))
def test_nothing_instructor_only_is_released(kind):
    texts = _release_texts()
    assert texts, "release/ is empty"
    leaks = find_leaks(SECRET_KINDS[kind](), texts)
    assert not leaks, "\n".join(f"{where}: {origin}: {snippet!r}" for where, origin, snippet in leaks[:30])


def test_leak_scan_finds_a_planted_secret():
    """The scan is not vacuous: a solution line or a hidden-test line pasted into a release text is found."""
    secrets = _solution_secrets()
    texts = _release_texts()
    for kind in ("solution", "hidden test"):
        origin, snippet = next((o, s) for o, s in secrets if kind in o)
        where = next(iter(texts))
        planted = dict(texts)
        planted[where] = texts[where] + " " + normalise("x = 1\n    " + snippet + "  \n")
        assert (where, origin, snippet) in find_leaks([(origin, snippet)], planted)


def test_release_holds_exactly_the_notebooks():
    files = sorted(p.relative_to(RELEASE_ROOT).as_posix() for p in RELEASE_ROOT.rglob("*") if p.is_file())
    assert files == [f"module6/{stem}.ipynb" for stem in PRESENT]


@pytest.mark.parametrize("stem", PRESENT)
def test_released_cells_are_stubbed_and_checksummed(stem):
    nb = read(release_dir() / f"{stem}.ipynb")
    text = json.dumps(nb)
    for marker in (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END):
        assert marker not in text
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        assert "checksum" in meta, cell.id
        if is_answer_cell(cell) and cell.cell_type == "code":
            assert STUB_MESSAGE in cell.source, cell.id
        if is_test_cell(cell):
            ast.parse(cell.source)  # what is left after the hidden region still runs


# --------------------------------------------------------------------------- regeneration and kernels


@pytest.mark.slow
def test_committed_release_is_a_fresh_build():
    assert check_release() == []


def _run_release(stem: str) -> dict:
    """Run a released notebook, untouched, in its release folder, with its hidden tests restored.

    One kernel run serves two tests: the answer and check cells behave as the plain release (a test
    cell's hidden part only prints feedback and returns points), and nbgrader's inverted Validator
    reads the test cells' grades. (The release itself holds only each test cell's docstring, which
    nbgrader would count as a pass, so inverting the plain release would prove nothing.)
    """
    import os

    from nbgrader.validator import Validator

    validator = Validator(config=config())
    validator.invert = True
    validator.ignore_checksums = True
    os.chdir(release_dir())  # a worker process runs one notebook at a time: the kernel starts here
    start = time.perf_counter()
    executed = validator._preprocess(release_with_hidden_tests(stem))  # what Validator.validate runs
    seconds = time.perf_counter() - start
    cells = [{"id": c.get("id"), "kind": _kind(c), "errors": errors(c), "stderr": stderr_text(c)}
             for c in executed.cells if c.cell_type == "code"]
    passed = [c.source[:80] for c in validator._get_passed_cells(executed)]
    return {"seconds": seconds, "cells": cells, "passed": passed}


def _kind(cell) -> str:
    if is_answer_cell(cell):
        return "answer"
    if is_test_cell(cell):
        return "test"
    return "check" if str(cell.get("id", "")).startswith("check") else "other"


@pytest.fixture(scope="module")
def release_runs():
    runs = in_pool(_run_release, PRESENT)
    print("\nuntouched release with hidden tests, seconds per notebook (kernel start included):")
    for stem, run in runs.items():
        print(f"  {stem}: {run['seconds']:.2f}")
    return runs


ALLOWED = {"answer": {"NotImplementedError"}, "check": {"NotImplementedError", "AssertionError"},
           "test": set(), "other": set()}


@pytest.mark.slow
@pytest.mark.parametrize("stem", PRESENT)
def test_untouched_release_fails_only_at_the_stubs(stem, release_runs, record_property):
    run = release_runs[stem]
    record_property("seconds", round(run["seconds"], 2))
    bad = [(c["id"], c["errors"]) for c in run["cells"] if {e for e, _ in c["errors"]} - ALLOWED[c["kind"]]]
    assert not bad, bad
    # Concept stubs raise in the answer cell, coding stubs when the check cell calls them.
    stopped = [c["id"] for c in run["cells"] if c["kind"] in ("answer", "check")
               and any(e == "NotImplementedError" for e, _ in c["errors"])]
    assert stopped, "an untouched notebook should stop at its stubs"
    noisy = [(c["id"], c["stderr"][:200]) for c in run["cells"] if c["kind"] == "other" and c["stderr"]]
    assert not noisy, noisy


@pytest.mark.slow
@pytest.mark.parametrize("stem", PRESENT)
def test_stubs_fail_every_hidden_test(stem, release_runs):
    """nbgrader's inverted Validator on the release with its hidden tests back: no test cell passes."""
    assert release_runs[stem]["passed"] == []
