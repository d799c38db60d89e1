"""What only the instructor has, as text to look for in anything a student receives.

The release leak scan (``tests/test_release.py``), the student-wheel scan
(``tests/test_distributions.py``) and the widget first-view scan share these collectors: solution
regions and hidden tests of the source notebooks, rubric sentences, answer-key values, self-study
worked solutions and the numbers those worked solutions derive. Every collector must find
something (``secrets()`` asserts it), so a moved folder can never turn a scan into a no-op.
"""

from __future__ import annotations

import math
import re

import nbformat

from autograder.assignment import REPO_ROOT
from autograder.exercises import exercise_dir, load_key, solution_path, stems
from autograder.exercises import fill
from tests.nbrun_support import (
    HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END, all_present_stems, normalise, read, regions, release_path,
    source_path,
)

#: The one file of the student package that holds answers: the worked example's (variant 0) to the
#: questions whose answers vary, which the course notes publish and nobody with an id is graded on (the
#: open checks name answers computed from the example's numbers, ``course.open_checks.not_the_example``).
#: A scan holds it to the generator's output (``autograder.authoring.worked_example.render``, which keeps
#: variant 0's varying answers only: tests/test_open_checks_example.py) and scans it for everything else.
WORKED_EXAMPLE = "course/variants/worked_example.py"

#: Every source notebook of every assignment.
PRESENT = all_present_stems()
RELEASE_ROOT = REPO_ROOT / "release"

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
        for cell in read(source_path(stem)).cells:
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


def _markdown_secrets(paths, label: str) -> list:
    found = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("#", "Question:")):
                continue  # headings and the restated (public) question
            found += [(f"{label} {path.parent.name}/{path.name}", s) for s in _sentences(line, 7)]
    return found


def _number_forms(value: float) -> list:
    if not math.isfinite(value) or abs(value - round(value, 3)) < 1e-9:
        return []  # integers, halves, 0.2 (even as 0.19999999999999996): too common to mean anything
    return [repr(value), f"{value:.6g}", f"{value:.5f}"]


def _key_values(value, label):
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # a NumPy array or scalar of a key
        value = value.tolist()
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
        numbers = [float(item) for item in value if isinstance(item, (int, float)) and not isinstance(item, bool)]
        if isinstance(value, (list, tuple)) and len(numbers) == len(value) >= 3 \
                and any(abs(number - round(number, 2)) > 1e-9 for number in numbers):
            # A whole vector of answers (a distribution, say) is telling even when each entry is short.
            yield label, ", ".join(f"{number:.6g}" for number in numbers)
            yield label, ", ".join(f"{number:.1f}" if number == round(number) else f"{number:.6g}" for number in numbers)


def _key_secrets() -> list:
    found = []
    for stem in stems():
        path = exercise_dir(stem) / "key.py"
        if not path.is_file():
            continue  # coding exercises have no key: their answers are functions
        module = load_key(stem)
        for name, value in vars(module).items():
            if name.isupper():
                found += list(_key_values(value, f"key {stem}.{name}"))
        # The explanations written next to the values ("#: ...") are key text too.
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("#:"):
                found += [(f"key {stem} comment", s) for s in _sentences(line.strip()[2:], 8)]
    return found


def _self_study_secrets() -> list:
    return _markdown_secrets([solution_path(stem) for stem in stems()], "self-study")


def _rubric_secrets() -> list:
    return _markdown_secrets([exercise_dir(stem) / "rubric.md" for stem in stems()
                              if (exercise_dir(stem) / "rubric.md").is_file()], "rubric")


def release_texts() -> dict:
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
    "rubrics": _rubric_secrets,
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


def student_side_leaks(texts: dict) -> list:
    """:func:`find_leaks` over what a student receives (``path -> normalised text``, holding the student
    package): every kind of secret everywhere, but in :data:`WORKED_EXAMPLE`, held to its generator's output
    (its own answers to the example's numbers are published), every kind but the keys' values."""
    from autograder.authoring.worked_example import render

    texts = dict(texts)
    example = texts.pop(WORKED_EXAMPLE)
    assert example == normalise(render()), f"{WORKED_EXAMPLE} is not the worked-example generator's output"
    return find_leaks(secrets(), texts) + find_leaks(
        secrets(["solutions and hidden tests", "rubrics", "self-study"]), {WORKED_EXAMPLE: example})


#: Significant digits a number must show to count as a derived answer rather than task data.
_DERIVED = re.compile(r"(?<![\w.])-?\d+\.\d{4,}")


def _numbers(text: str) -> set:
    return {match.group(0).lstrip("-") for match in _DERIVED.finditer(text)}


def worked_numbers() -> dict:
    """``stem -> numbers`` with at least 4 decimals that a worked solution derives and its own release
    notebook does not print (the notebook's task data and open checks are public, the rest is answer)."""
    found = {}
    for stem in stems():
        try:
            path = release_path(stem)
        except KeyError:  # an exercise folder whose notebook has not landed yet
            path = None
        public = _numbers(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else set()
        # As the self-study panel shows it first: {{ name }} placeholders filled with variant 0's values.
        derived = _numbers(fill(solution_path(stem).read_text(encoding="utf-8"), stem)) - public
        found[stem] = {number for number in derived if len(number.replace(".", "").lstrip("0")) >= 4}
    return found


def secrets(kinds=None) -> list:
    """``(origin, snippet)`` of every kind (or of ``kinds``); each kind must yield something."""
    found = []
    for kind in sorted(SECRET_KINDS) if kinds is None else kinds:
        of_kind = SECRET_KINDS[kind]()
        assert of_kind, f"the {kind!r} collector found nothing: did its files move?"
        found += of_kind
    return found
