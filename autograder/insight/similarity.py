"""``autograder similarity ASSIGNMENT``: pairs of students whose answer cells are near-identical.

A signal for the instructor to look at, never a verdict: short functions have few natural
solutions, and students may legitimately work from the same lecture code.

How a pair is scored, per answer cell:

1. **Normalise.** The cell is parsed (:mod:`ast`); docstrings are dropped and the tree is printed
   back (:func:`ast.unparse`), which removes comments and formatting. Its tokens are then renamed:
   every name that is not a keyword, a builtin or an attribute after a dot becomes ``_1``, ``_2``,
   ... in order of first use, and every string or number literal keeps only its kind. Renaming
   variables, editing comments or reformatting therefore changes nothing.
2. **Fingerprint.** The normalised tokens are cut into overlapping runs of :data:`K` tokens
   (shingles).
3. **Weigh by rarity.** A shingle that many students share says nothing about copying (the
   function's signature, the idiom everyone learnt): each shingle weighs ``log((N + 1) / df)``,
   ``df`` being the number of students whose cell has it, so what the whole class writes weighs
   almost nothing. The cell similarity is the weighted Jaccard index of the two shingle sets, and
   its **evidence** is the weight of the shingles shared by at most :func:`rare_limit` students.
4. **Rank.** A pair is listed when a cell of theirs reaches ``min_similarity`` with at least
   ``min_evidence`` rare weight; pairs are ranked by the sum, over their listed cells, of
   similarity times evidence. Cells of fewer than :data:`MIN_TOKENS` tokens (one-liners) and cells
   still equal to the released stub are never compared.

So independent correct solutions of a short function, which share mostly common shingles, stay
below the line, while a renamed copy of an unusual solution shares rare shingles and rises to the
top. ``tests/test_similarity.py`` calibrates both on planted classes.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import html
import io
import keyword
import math
import time
import tokenize
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import nbformat

from autograder.grading import intake

#: Tokens per shingle.
K = 5
#: Cells with fewer normalised tokens are not compared (too short to say anything).
MIN_TOKENS = 20
#: Defaults of :func:`find_pairs`.
MIN_SIMILARITY = 0.8
MIN_EVIDENCE = 25.0
_BUILTINS = frozenset(dir(builtins))


def rare_limit(students: int) -> int:
    """A shingle is rare when at most this many students have it: 2, or 5% of the class.

    >>> rare_limit(5), rare_limit(500)
    (2, 25)
    """
    return max(2, math.ceil(0.05 * students))


def normalise(code: str) -> list | None:
    """The normalised token list of ``code`` (None when it is not valid Python).

    >>> normalise("def f(x):\\n    # twice\\n    return 2*x") == normalise("def g(y): return 2 * y  # double")
    True
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    try:
        text = ast.unparse(tree)
    except Exception:  # noqa: BLE001 - a tree ast cannot print back: treat as unreadable
        return None
    names: dict = {}
    out = []
    previous = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, value = token.type, token.string
            if kind in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if kind == tokenize.NAME and not keyword.iskeyword(value) and value not in _BUILTINS \
                    and previous != ".":
                value = names.setdefault(value, f"_{len(names) + 1}")
            elif kind == tokenize.STRING:
                value = "STR"
            elif kind == tokenize.NUMBER:
                value = "NUM"
            elif kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                value = tokenize.tok_name[kind]
            out.append(value)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return out


def shingles(tokens: list, k: int = K) -> frozenset:
    if len(tokens) < k:
        return frozenset([tuple(tokens)])
    return frozenset(tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1))


@dataclasses.dataclass(frozen=True)
class CellMatch:
    notebook: str
    grade_id: str
    similarity: float  # weighted Jaccard, 0..1
    evidence: float  # weight of the rare shingles both cells have
    left: str  # the two cells as submitted
    right: str


@dataclasses.dataclass(frozen=True)
class Pair:
    left: str
    right: str
    score: float
    cells: tuple  # CellMatch, strongest first


def answer_ids(course_dir: Path, assignment: str) -> dict:
    """``notebook -> [grade_id of each code answer cell]`` from the release (or the source)."""
    out = {}
    for folder in (Path(course_dir) / "release" / assignment, Path(course_dir) / "source" / assignment):
        for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
            if path.stem in out:
                continue
            nb = nbformat.read(str(path), as_version=4)
            out[path.stem] = [(c.metadata["nbgrader"]["grade_id"], c.source) for c in nb.cells
                              if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
                              and c.metadata["nbgrader"].get("grade_id")]
    return out


def read_answers(course_dir: str | Path, assignment: str) -> dict:
    """``(notebook, grade_id) -> {student: code}`` of the submitted code answer cells.

    A cell equal to the released stub (not attempted) is left out; so is a second cell claiming the
    same grade id (the first one counts, as for grading).
    """
    course_dir = Path(course_dir)
    wanted = answer_ids(course_dir, assignment)
    if not wanted:
        raise FileNotFoundError(f"course_dir: no release/{assignment} or source/{assignment} notebooks in "
                                f"{course_dir.resolve()} (run in the course directory)")
    answers: dict = defaultdict(dict)
    # Student files are found and read through the grader's intake: no link followed at any level,
    # a FIFO or device never opened, the grader's size, nesting, cell and parse-time limits first.
    root = course_dir / "submitted"
    for student in intake.list_folder(root).named("directory"):
        if intake.locate(root, (student, assignment), folder=True) is not None:
            continue
        for notebook, cells in wanted.items():
            read = intake.read_notebook(root, (student, assignment, f"{notebook}.ipynb"))
            if read.notebook is None:
                continue  # a refused or unreadable notebook has no cells to compare
            nb = read.notebook
            stubs = dict(cells)
            for cell in nb.cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
                if cell.get("cell_type") != "code" or grade_id not in stubs:
                    continue
                if student in answers[(notebook, grade_id)] or cell.source.strip() == stubs[grade_id].strip():
                    continue
                answers[(notebook, grade_id)][student] = cell.source
    return dict(answers)


def cell_matches(notebook: str, grade_id: str, codes: dict, *, min_similarity: float = MIN_SIMILARITY,
                 min_evidence: float = MIN_EVIDENCE, class_size: int | None = None) -> list:
    """``(left, right, CellMatch)`` for the pairs of students whose cells match (see the module doc)."""
    prints = {}
    for student, code in codes.items():
        tokens = normalise(code)
        if tokens is not None and len(tokens) >= MIN_TOKENS:
            prints[student] = shingles(tokens)
    n = class_size or len(prints)
    df = Counter(s for p in prints.values() for s in p)
    weight = {s: math.log((n + 1) / d) for s, d in df.items()}
    rare = rare_limit(n)
    # Candidate pairs share at least one rare shingle (an inverted index, not all N^2 pairs).
    holders: dict = defaultdict(list)
    for student, p in prints.items():
        for s in p:
            if df[s] <= rare:
                holders[s].append(student)
    candidates = {tuple(sorted(pair)) for names in holders.values() for pair in combinations(names, 2)}
    # Identical fingerprints shared by a few students are candidates even without rare shingles.
    same: dict = defaultdict(list)
    for student, p in prints.items():
        same[p].append(student)
    for names in same.values():
        if 1 < len(names) <= rare:
            candidates |= {tuple(sorted(pair)) for pair in combinations(names, 2)}
    out = []
    for left, right in sorted(candidates):
        a, b = prints[left], prints[right]
        shared = a & b
        union_weight = sum(weight[s] for s in a | b)
        if not union_weight:
            continue
        similarity = sum(weight[s] for s in shared) / union_weight
        evidence = sum(weight[s] for s in shared if df[s] <= rare)
        if len(same[a]) > 1 and a == b and len(same[a]) <= rare:
            evidence = max(evidence, sum(weight[s] for s in shared))
        if similarity >= min_similarity and evidence >= min_evidence:
            out.append((left, right, CellMatch(notebook, grade_id, similarity, evidence, codes[left], codes[right])))
    return out


def find_pairs(answers: dict, *, min_similarity: float = MIN_SIMILARITY, min_evidence: float = MIN_EVIDENCE) -> list:
    """Ranked :class:`Pair` list, strongest signal first, from :func:`read_answers`' mapping."""
    by_pair: dict = defaultdict(list)
    for (notebook, grade_id), codes in sorted(answers.items()):
        for left, right, match in cell_matches(notebook, grade_id, codes, min_similarity=min_similarity,
                                               min_evidence=min_evidence):
            by_pair[(left, right)].append(match)
    pairs = [Pair(left, right, sum(m.similarity * m.evidence for m in matches),
                  tuple(sorted(matches, key=lambda m: -m.similarity * m.evidence)))
             for (left, right), matches in by_pair.items()]
    pairs.sort(key=lambda p: (-p.score, p.left, p.right))
    return pairs


# ----------------------------------------------------------------------------- HTML

STYLE = """
body{font-family:system-ui,sans-serif;line-height:1.45;max-width:90rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
.side{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap;margin:0;font-size:.85rem}
section.pair{border-top:2px solid #ccc;margin-top:1.2rem}
.warn{background:#fff8e1;border:2px solid #9a6700;padding:.4rem 1rem;border-radius:6px}
"""


def render_html(assignment: str, pairs: list, *, students: int, limit: int = 50) -> str:
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Similar answers: "
             f"{html.escape(assignment)}</title><style>{STYLE}</style></head><body><main>",
             f"<h1>Similar answers: {html.escape(assignment)}</h1>",
             "<p class='warn'><strong>A signal, not a verdict.</strong> These pairs wrote code cells that are "
             "near-identical once names, comments and formatting are set aside, and share parts that few other "
             "students wrote. Short exercises have few natural solutions and students may learn from the same "
             "material: read the cells and talk to the students before drawing any conclusion.</p>",
             f"<p>{len(pairs)} pairs listed among {students} students"
             + (f" (the first {limit} shown)" if len(pairs) > limit else "") + ".</p>"]
    if not pairs:
        parts.append("<p>No pair of students wrote near-identical answer cells.</p>")
    for rank, pair in enumerate(pairs[:limit], 1):
        parts.append(f"<section class='pair'><h2>{rank}. {html.escape(pair.left)} and {html.escape(pair.right)}"
                     f"</h2><p>Signal strength {pair.score:.0f}, {len(pair.cells)} matching cell(s).</p>")
        for match in pair.cells:
            parts.append(f"<h3>{html.escape(match.notebook)}, cell {html.escape(match.grade_id)}: similarity "
                         f"{100 * match.similarity:.0f}%, rare shared material {match.evidence:.0f}</h3>"
                         f"<div class='side'><div><p>{html.escape(pair.left)}</p><pre>{html.escape(match.left)}</pre>"
                         f"</div><div><p>{html.escape(pair.right)}</p><pre>{html.escape(match.right)}</pre></div></div>")
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def build(course_dir: str | Path, assignment: str, *, output: str | Path | None = None,
          min_similarity: float = MIN_SIMILARITY, min_evidence: float = MIN_EVIDENCE) -> dict:
    """Read the submissions, write ``<output>/<assignment>-similarity.html``; returns paths and pairs."""
    started = time.perf_counter()
    answers = read_answers(course_dir, assignment)
    students = len({s for codes in answers.values() for s in codes})
    pairs = find_pairs(answers, min_similarity=min_similarity, min_evidence=min_evidence)
    folder = Path(output) if output is not None else Path(course_dir) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / f"{assignment}-similarity.html"
    page.write_text(render_html(assignment, pairs, students=students), encoding="utf-8")
    return {"html": page, "pairs": pairs, "students": students, "seconds": time.perf_counter() - started}
