"""What the course's texts say: upstream citations, and how long a notebook makes a student read before the task.

Two rules of issue 36, one home each, shared by `tests/test_upstream_citations.py` and `tests/test_task_budget.py`
(and by an author: `python -m tests.notebook_text_support` prints both reports for every notebook, worked
solution and rubric, so a new notebook can be checked before its tests are written).

**Citations.** The texts are every markdown cell of every `source/*/*.ipynb`, every worked solution
(`autograder/exercises/*/solution.md`) and every rubric (`autograder/exercises/*/rubric.md`). Each is cut into
*units*: a paragraph (lines up to a blank line), a list item (a line opening with `-`, `*` or `1.`, with the
lines indented under it), a table row (a line opening with `|`) or a heading. Fenced code blocks and display
math (`$$ ... $$`) are not text and are skipped. A unit *names* a package when its prose (inline code spans
removed) contains one of the names in `NAMES`, or when an inline code span holds a path inside the package
(`trl/...`). A named package is *cited* in the unit when the unit holds `package==version` with the version of
`CURRENT` (the release read) and a code span with a path inside that package (`verl/trainer/ppo/core_algos.py`).
A `package==version` of another version is *stale* wherever it stands. Names without a release in `CURRENT`
(`UNREAD`) cannot be cited: a text either reads a release and adds it to `CURRENT`, or does not state that
project's behaviour. Bug reports of other projects are cited by repository and number (`REPORTS`).

Code cells are not scanned: their comments and labels name what the markdown next to them cites.

**The task budget.** `words_before_first_answer(nb)` counts the words a student reads before the first answer
cell: the whitespace-separated words of every markdown cell above the first cell with nbgrader `solution: true`
other than the typed student id (`student_id`), leaving out the `how-this-works` cell (the same in every
notebook, about the notebook, not the task), fenced code blocks and display math. Tables, inline code and
inline math count. `docs/DESIGN.md` ("Notebook layout") states the budget, `BUDGET` words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The releases read for the texts: a citation names exactly these versions.
CURRENT = {
    "trl": "1.16.0",
    "verl": "0.9.1",
    "openrlhf": "0.11.2",
    "vllm": "0.34.0",
    "transformers": "5.25.0",
    "gymnasium": "1.3.0",
    "jinja2": "3.1.6",
    "ml_dtypes": "0.7.0",
}

#: How the texts name each package in prose (case-insensitive, whole words).
NAMES = {
    "trl": r"trl",
    "verl": r"verl",
    "openrlhf": r"openrlhf",
    "vllm": r"vllm",
    "transformers": r"transformers",
    "gymnasium": r"gymnasium",
    "jinja2": r"jinja2?",
    "ml_dtypes": r"ml[-_]dtypes",
    # No release of these was read: naming one states behaviour nobody checked.
    "deepspeed": r"deepspeed",
    "sglang": r"sglang",
    "megatron": r"megatron(?:-lm)?",
    "pytorch": r"pytorch|torch",
    "fsdp": r"fsdp",
    "triton": r"triton",
    "flashinfer": r"flashinfer",
    "flash-attn": r"flash[-_ ]?attn|flashattention|flash[- ]attention",
    "jax": r"jax",
    "liger": r"liger",
    "maxtext": r"maxtext",
    "prime-rl": r"prime-rl",
}

#: Names that have no release in CURRENT.
UNREAD = sorted(set(NAMES) - set(CURRENT) - {"maxtext", "prime-rl"})

#: Other projects' bug reports, cited by their repository and an issue or pull-request number.
REPORTS = {"maxtext": "AI-Hypercomputer/maxtext", "prime-rl": "PrimeIntellect-ai/prime-rl"}

#: The words of text a student reads before the first answer cell, at most.
BUDGET = 450

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^(\s*)([-*]|\d+\.)\s+")
_CODE_SPAN = re.compile(r"`+([^`]*)`+")
_CITATION = re.compile(r"(?i)(?<![\w-])([a-z][\w-]*)==(\d+(?:\.\d+)*(?:\.post\d+)?)")
_PATH = re.compile(r"^([\w.-]+)/[\w./-]*\.(py|yaml|yml|jinja|json|md)$")


@dataclass(frozen=True)
class Unit:
    """One paragraph, list item, table row or heading of a text."""

    where: str
    text: str


@dataclass(frozen=True)
class Finding:
    """A unit that names a package without citing the release read (or cites another)."""

    where: str
    package: str
    problem: str
    text: str

    def __str__(self) -> str:
        excerpt = " ".join(self.text.split())
        excerpt = excerpt if len(excerpt) <= 160 else excerpt[:157] + "..."
        return f"{self.where}: {self.package}: {self.problem}: {excerpt}"


def markdown_units(text: str, where: str) -> list[Unit]:
    """Cut markdown into paragraphs, list items, table rows and headings; skip fenced code and display math."""
    units: list[Unit] = []
    current: list[str] = []
    item_indent = None

    def close():
        nonlocal current, item_indent
        if current and any(line.strip() for line in current):
            units.append(Unit(where, "\n".join(current)))
        current, item_indent = [], None

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _FENCE.match(line):  # a code block: skip to its closing fence
            close()
            i += 1
            while i < len(lines) and not _FENCE.match(lines[i]):
                i += 1
            i += 1
            continue
        if stripped.startswith("$$") and not (stripped.endswith("$$") and len(stripped) > 2 and
                                              stripped.count("$$") >= 2):
            # display math over several lines: not text
            i += 1
            while i < len(lines) and "$$" not in lines[i]:
                i += 1
            i += 1
            continue
        if stripped.startswith("$$"):
            i += 1
            continue
        if not stripped:
            close()
        elif stripped.startswith("|") or stripped.startswith("#"):
            close()
            units.append(Unit(where, stripped))
        elif _ITEM.match(line):
            close()
            item_indent = len(_ITEM.match(line).group(1))
            current = [line]
        else:
            current.append(line)
        i += 1
    close()
    return units


def _named(unit: str) -> set[str]:
    prose = _CODE_SPAN.sub(" ", unit)
    named = {package for package, pattern in NAMES.items()
             if re.search(rf"(?i)(?<![\w-])(?:{pattern})(?![\w-])", prose)}
    for span in _CODE_SPAN.findall(unit):
        match = _PATH.match(span.strip())
        if match and match.group(1).lower() in CURRENT:
            named.add(match.group(1).lower())
    return named


def _paths(unit: str) -> set[str]:
    return {match.group(1).lower() for span in _CODE_SPAN.findall(unit)
            if (match := _PATH.match(span.strip()))}


def cited_paths(unit: str) -> list[tuple[str, str]]:
    """The (package, path) pairs of the code spans of a unit whose package it cites at the current version."""
    cited = {p.lower() for p, v in _CITATION.findall(unit) if CURRENT.get(p.lower()) == v}
    return [(m.group(1).lower(), m.group(0)) for span in _CODE_SPAN.findall(unit)
            if (m := _PATH.match(span.strip())) and m.group(1).lower() in cited]


def check_unit(unit: Unit) -> list[Finding]:
    """Every problem of one unit: an uncited or uncitable name, a stale version, a citation without a file."""
    findings = []
    citations = {}
    for package, version in _CITATION.findall(unit.text):
        package = package.lower()
        if package in CURRENT and version != CURRENT[package]:
            findings.append(Finding(unit.where, package, f"cites {package}=={version}, the release read is "
                                    f"{package}=={CURRENT[package]}", unit.text))
        citations.setdefault(package, set()).add(version)
    paths = _paths(unit.text)
    for package in sorted(_named(unit.text)):
        if package in REPORTS:
            if REPORTS[package] not in unit.text or not re.search(r"#\d+", unit.text):
                findings.append(Finding(unit.where, package, f"a report of {REPORTS[package]} is cited by its "
                                        "repository and issue or pull-request number", unit.text))
            continue
        if package not in CURRENT:
            findings.append(Finding(unit.where, package, "no release of it was read: read one and add it to "
                                    "CURRENT, or do not state its behaviour", unit.text))
            continue
        if CURRENT[package] not in citations.get(package, ()):
            findings.append(Finding(unit.where, package, f"named without {package}=={CURRENT[package]} in the "
                                    "same paragraph, item or row", unit.text))
        elif package not in paths:
            findings.append(Finding(unit.where, package, f"cites {package}=={CURRENT[package]} without a file "
                                    f"inside it (a code span such as `{package}/...py`)", unit.text))
    return findings


def notebook_texts(path: Path) -> list[tuple[str, str]]:
    """(where, markdown) for every markdown cell of a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT)
    return [(f"{rel} [{cell.get('id')}]", "".join(cell["source"]))
            for cell in nb["cells"] if cell["cell_type"] == "markdown"]


def source_notebooks() -> list[Path]:
    return sorted(ROOT.glob("source/*/*.ipynb"))


def exercise_texts() -> list[Path]:
    exercises = ROOT / "autograder" / "exercises"
    return sorted([*exercises.glob("*/solution.md"), *exercises.glob("*/rubric.md")])


def all_texts() -> list[tuple[str, str]]:
    texts = [text for path in source_notebooks() for text in notebook_texts(path)]
    texts += [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in exercise_texts()]
    return texts


def findings(texts: list[tuple[str, str]] | None = None) -> list[Finding]:
    """Every uncited, uncitable or stale mention of an upstream package in the texts."""
    texts = all_texts() if texts is None else texts
    return [f for where, text in texts for unit in markdown_units(text, where) for f in check_unit(unit)]


# --- the task budget -------------------------------------------------------------------------------------------

def _prose(markdown: str) -> str:
    """Markdown without fenced code blocks and display math."""
    kept, in_fence = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            kept.append(line)
    return re.sub(r"\$\$.*?\$\$", " ", "\n".join(kept), flags=re.S)


def words_before_first_answer(nb: dict) -> int:
    """Words of the markdown above the first answer cell (see the module docstring for what counts)."""
    words = 0
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") != "student_id":
            return words
        if cell["cell_type"] == "markdown" and cell.get("id") != "how-this-works":
            words += len(_prose("".join(cell["source"])).split())
    raise ValueError("the notebook has no answer cell")


def budget_report() -> dict[str, int]:
    return {str(p.relative_to(ROOT)): words_before_first_answer(json.loads(p.read_text(encoding="utf-8")))
            for p in source_notebooks()}


if __name__ == "__main__":  # pragma: no cover - an author's report
    for stem, words in budget_report().items():
        print(f"{words:5d}{' OVER' if words > BUDGET else '     '}  {stem}")
    found = findings()
    for finding in found:
        print(finding)
    print(f"{len(found)} uncited mention(s)")
