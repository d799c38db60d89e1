"""``autograder similarity ASSIGNMENT``: pairs of students whose answer cells are near-identical.

A signal for the instructor to look at, never a verdict: short functions have few natural
solutions, and students may legitimately work from the same lecture code.

Both kinds of answer cell are compared: code answers, and written answers (the Markdown cells a
person grades in formgrader). How a pair is scored, per answer cell:

1. **Normalise.** A code cell is parsed (:mod:`ast`); docstrings are dropped and the tree is printed
   back (:func:`ast.unparse`), which removes comments and formatting. Its tokens are then renamed:
   every name that is not a keyword, a builtin or an attribute after a dot becomes ``_1``, ``_2``,
   ... in order of first use, and every string or number literal keeps only its kind. Renaming
   variables, editing comments or reformatting therefore changes nothing. A written answer becomes
   its words (:func:`text_tokens`: Unicode NFKC, case folded, punctuation, Markdown and LaTeX markup
   dropped, every number one token ``NUM``), so layout, emphasis and a changed number change nothing.
2. **Fingerprint.** The normalised tokens are cut into overlapping runs of :data:`K` tokens
   (shingles; :data:`TEXT_K` words for a written answer).
3. **Weigh by rarity.** A shingle that many students share says nothing about copying (the
   function's signature, the idiom everyone learnt): each shingle weighs ``log((N + 1) / df)``,
   ``df`` being the number of students whose cell has it, so what the whole class writes weighs
   almost nothing. The cell similarity is the weighted Jaccard index of the two shingle sets, and
   its **evidence** is the weight of the shingles shared by at most :func:`rare_limit` students.
4. **Rank.** A pair is listed when a cell of theirs reaches ``min_similarity`` with at least
   ``min_evidence`` rare weight; pairs are ranked by the sum, over their listed cells, of
   similarity times evidence. Cells of fewer than :data:`MIN_TOKENS` tokens (one-liners) and cells
   still equal to the released stub are never compared. Written answers have thresholds of their own
   (:data:`MIN_TEXT_TOKENS` words, :data:`MIN_TEXT_SIMILARITY`, :data:`MIN_TEXT_EVIDENCE`): a run of
   four words two students share by chance is much rarer than a run of five code tokens (after
   renaming, code has a small vocabulary: ``_1 = np . asarray`` is everyone's), so less rare material
   is evidence (in a class of three, two answers of 12 identical words reach it), and less overlap is
   near-identical: eight independent answers to 15's Part B overlap at most 3% pairwise, a copy with
   two words swapped for synonyms 74%, a word-for-word copy 100% (``tests/test_similarity.py``).
   ``--min-similarity`` sets both kinds' threshold.

**Every cell costs at most its own row, every student at most their budget.** Parsing runs in this
process with no sandbox around it, on text a student wrote: a cell longer than :data:`~autograder.limits.SIMILARITY_CELL_CHARS`
is never parsed; a student's cells are parsed up to :data:`~autograder.limits.SIMILARITY_STUDENT_TOKENS` tokens in all (counted by one
regular expression before any parser runs, in notebook order: what the parser, the printer and the
tokenizer cost is per token, some 5 microseconds for honest code and 33 for ``a+1;`` repeated, so
20 notebooks of 50,000-character cells once cost a class minutes for one student); and whatever
the parser or the printer raise on the rest (``RecursionError`` for ``a+a+...+a``,
``MemoryError`` for 100,000 unary minus signs, the parser's own "too many nested parentheses",
NUL bytes, lone surrogates) makes that one cell :class:`Uncomparable`: it is listed on the page
and in ``<assignment>-similarity-not-compared.csv`` with the reason, and every other cell is
compared as usual. Below the cap, parsing and printing are linear in the cell (measured: the
worst shapes of 50,000 characters take under 0.25 s and 20 MB), so the cap is also the time bound.

So independent correct solutions of a short function, which share mostly common shingles, stay
below the line, while a renamed copy of an unusual solution shares rare shingles and rises to the
top. ``tests/test_similarity.py`` calibrates both on planted classes.
"""

from __future__ import annotations

import ast
import builtins
import csv
import dataclasses
import html
import io
import keyword
import math
import re
import time
import tokenize
import unicodedata
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import nbformat

from autograder.grading import intake
from autograder.limits import SIMILARITY_CELL_CHARS, SIMILARITY_SHOWN_CHARS, SIMILARITY_STUDENT_TOKENS
from autograder.results import Status

#: Tokens per shingle.
K = 5
#: Cells with fewer normalised tokens are not compared (too short to say anything).
MIN_TOKENS = 20
#: Defaults of :func:`find_pairs`.
MIN_SIMILARITY = 0.8
MIN_EVIDENCE = 25.0
#: The same for written answers: words per shingle, fewest words compared, similarity and rare weight needed.
TEXT_K = 4
MIN_TEXT_TOKENS = 12
MIN_TEXT_SIMILARITY = 0.5
MIN_TEXT_EVIDENCE = 6.0
#: The two kinds of answer cell.
CODE, TEXT = "code", "text"
_BUILTINS = frozenset(dir(builtins))


class Uncomparable(ValueError):
    """A cell that cannot be normalised; ``reason`` says why, in words for the instructor."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class NotCompared:
    """One submitted cell (or, with ``grade_id`` None, a whole notebook) left out, and why."""

    student: str
    notebook: str
    grade_id: str | None
    reason: str


def rare_limit(students: int) -> int:
    """A shingle is rare when at most this many students have it: 2, or 5% of the class.

    >>> rare_limit(5), rare_limit(500)
    (2, 25)
    """
    return max(2, math.ceil(0.05 * students))


def normalise(code: str) -> list | None:
    """The normalised token list of ``code`` (None when it cannot be compared: see :func:`tokens_of`).

    >>> normalise("def f(x):\\n    # twice\\n    return 2*x") == normalise("def g(y): return 2 * y  # double")
    True
    """
    try:
        return tokens_of(code)
    except Uncomparable:
        return None


def tokens_of(code) -> list:
    """The normalised token list of ``code``; :class:`Uncomparable` (with the reason) when there is none.

    Bounded: nothing longer than :data:`~autograder.limits.SIMILARITY_CELL_CHARS` is parsed, and every error the parser, the
    printer or the tokenizer can raise on hostile text is this cell's alone.
    """
    if not isinstance(code, str):
        raise Uncomparable("the cell's source is not text")
    if len(code) > SIMILARITY_CELL_CHARS.value:
        raise Uncomparable(f"longer than {SIMILARITY_CELL_CHARS.value:,} characters ({len(code):,}): not parsed")
    if "\0" in code:
        raise Uncomparable("holds a NUL character, which Python source cannot")
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        raise Uncomparable("holds a character that is not valid Unicode (a lone surrogate)") from None
    try:
        tree = ast.parse(code)
        for node in ast.walk(tree):  # iterative: no recursion however deep the tree
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
        text = ast.unparse(tree)
    except SyntaxError as error:  # IndentationError and TabError are SyntaxErrors
        raise Uncomparable(f"not valid Python ({type(error).__name__} on line {error.lineno})") from None
    except RecursionError:
        raise Uncomparable("nested too deeply to parse (RecursionError)") from None
    except MemoryError:  # CPython's parser raises it when its own stack overflows: not the machine's memory
        raise Uncomparable("too complex to parse (MemoryError from the parser)") from None
    except (ValueError, TypeError) as error:
        raise Uncomparable(f"could not be parsed ({type(error).__name__})") from None
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
    except (tokenize.TokenError, SyntaxError, RecursionError, MemoryError, ValueError) as error:
        raise Uncomparable(f"could not be tokenized ({type(error).__name__})") from None
    return out


_WORD = re.compile(r"\w+")


def text_tokens(text) -> list:
    """The words of a written answer as compared: :class:`Uncomparable` (with the reason) when there are none.

    NFKC-normalised and case folded; punctuation, Markdown and LaTeX markup are dropped (``\\frac``
    leaves the word ``frac``; ``_`` separates words), and every word made of digits alone is ``NUM``.
    Bounded like code cells: nothing longer than :data:`~autograder.limits.SIMILARITY_CELL_CHARS` is read.

    >>> text_tokens("The **sum** is unchanged: $\\log 1 = 0$.") == text_tokens("the sum is UNCHANGED, log 7 = 0")
    True
    """
    if not isinstance(text, str):
        raise Uncomparable("the cell's source is not text")
    if len(text) > SIMILARITY_CELL_CHARS.value:
        raise Uncomparable(f"longer than {SIMILARITY_CELL_CHARS.value:,} characters ({len(text):,}): not read")
    if "\0" in text:
        raise Uncomparable("holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Uncomparable("holds a character that is not valid Unicode (a lone surrogate)") from None
    folded = unicodedata.normalize("NFKC", text).casefold()
    return ["NUM" if word.isdigit() else word for word in _WORD.findall(folded.replace("_", " "))]


def shingles(tokens: list, k: int = K) -> frozenset:
    """The cell's runs of ``k`` tokens, each kept as its hash (64 bits: one int instead of a tuple of
    ``k`` strings, so a class of long cells stays small; a collision is as likely as ~2**-40)."""
    if len(tokens) < k:
        return frozenset([hash(tuple(tokens))])
    return frozenset(hash(tuple(tokens[i:i + k])) for i in range(len(tokens) - k + 1))


@dataclasses.dataclass(frozen=True)
class CellMatch:
    notebook: str
    grade_id: str
    similarity: float  # weighted Jaccard, 0..1
    evidence: float  # weight of the rare shingles both cells have
    left: str  # the two cells as submitted
    right: str
    kind: str = CODE  # CODE or TEXT (a written answer)


@dataclasses.dataclass(frozen=True)
class Pair:
    left: str
    right: str
    score: float
    cells: tuple  # CellMatch, strongest first


def answer_ids(course_dir: Path, assignment: str) -> dict:
    """``notebook -> [(grade_id, released source, kind)]`` of each answer cell, from the release (or the
    source): code answers (``CODE``) and written answers (``TEXT``, Markdown cells with ``solution``)."""
    out = {}
    for folder in (Path(course_dir) / "release" / assignment, Path(course_dir) / "source" / assignment):
        for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
            if path.stem in out:
                continue
            nb = nbformat.read(str(path), as_version=4)
            out[path.stem] = [(c.metadata["nbgrader"]["grade_id"], c.source, CODE if c.cell_type == "code" else TEXT)
                              for c in nb.cells
                              if c.cell_type in ("code", "markdown") and c.metadata.get("nbgrader", {}).get("solution")
                              and c.metadata["nbgrader"].get("grade_id")]
    return out


def answer_kinds(course_dir: str | Path, assignment: str) -> dict:
    """``(notebook, grade_id) -> CODE or TEXT`` for every answer cell of the assignment."""
    return {(notebook, grade_id): kind for notebook, cells in answer_ids(Path(course_dir), assignment).items()
            for grade_id, _, kind in cells}


def read_answers(course_dir: str | Path, assignment: str, not_compared: list | None = None) -> dict:
    """``(notebook, grade_id) -> {student: source}`` of the submitted answer cells (code and written:
    :func:`answer_kinds` says which is which).

    A cell equal to the released stub (not attempted) is left out; so is a second cell claiming the
    same grade id (the first one counts, as for grading). A notebook that cannot be read is left
    out whole, and appended to ``not_compared`` as a :class:`NotCompared` with the reason; so is a
    cell past the student's :data:`~autograder.limits.SIMILARITY_STUDENT_TOKENS`, whose code is then None (read, never parsed).
    """
    course_dir = Path(course_dir)
    skipped = not_compared if not_compared is not None else []
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
        budget = [SIMILARITY_STUDENT_TOKENS.value]
        for notebook, cells in wanted.items():
            read = intake.read_notebook(root, (student, assignment, f"{notebook}.ipynb"))
            if read.notebook is None:
                if read.refusal is not None and read.refusal.status == Status.MISSING:
                    continue  # not submitted: nothing to compare
                why = read.refusal.reason if read.refusal is not None else read.problem
                skipped.append(NotCompared(student, notebook, None, f"the notebook was not read: {why}"))
                continue
            nb = read.notebook
            stubs = {grade_id: stub for grade_id, stub, _ in cells}
            for cell in nb.cells:
                if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown"):
                    continue
                meta = cell.get("metadata", {})
                meta = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
                grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
                if not isinstance(grade_id, str) or grade_id not in stubs or student in answers[(notebook, grade_id)]:
                    continue
                source = cell.get("source")
                if isinstance(source, str) and source.strip() == stubs[grade_id].strip():
                    continue
                over = _over_budget(source, budget)
                if over:
                    skipped.append(NotCompared(student, notebook, grade_id, over))
                    answers[(notebook, grade_id)].setdefault(student, None)  # read, first cell counted, not compared
                    continue
                answers[(notebook, grade_id)][student] = source
    return dict(answers)


def _over_budget(source, budget: list) -> str:
    """Why ``source`` is not parsed under the student's remaining ``budget`` (a one-item list of tokens,
    charged here), or "" when it may be. A cell over :data:`~autograder.limits.SIMILARITY_CELL_CHARS` is left to :func:`tokens_of`
    (its own reason, nothing counted); once the budget is spent, nothing more is counted either."""
    from autograder.feedback.page import code_tokens

    if not isinstance(source, str) or len(source) > SIMILARITY_CELL_CHARS.value:
        return ""
    if budget[0] <= 0:
        return f"past this student's {SIMILARITY_STUDENT_TOKENS.value:,} tokens of cells compared: not parsed"
    tokens = code_tokens(source)
    budget[0] -= tokens
    if budget[0] < 0:
        return f"past this student's {SIMILARITY_STUDENT_TOKENS.value:,} tokens of cells compared ({tokens:,} in this one): not parsed"
    return ""


def cell_matches(notebook: str, grade_id: str, codes: dict, *, min_similarity: float | None = None,
                 min_evidence: float | None = None, class_size: int | None = None,
                 not_compared: list | None = None, kind: str = CODE) -> list:
    """``(left, right, CellMatch)`` for the pairs of students whose cells match (see the module doc).

    ``kind`` is ``CODE`` or ``TEXT`` (a written answer: its words, :data:`TEXT_K`, :data:`MIN_TEXT_TOKENS`
    and, unless given, :data:`MIN_TEXT_SIMILARITY` and :data:`MIN_TEXT_EVIDENCE`; code's defaults are
    :data:`MIN_SIMILARITY` and :data:`MIN_EVIDENCE`). A cell that cannot be normalised is appended to
    ``not_compared`` (a :class:`NotCompared`).
    """
    if kind not in (CODE, TEXT):
        raise ValueError(f"kind: expected {CODE!r} or {TEXT!r}, got {kind!r}")
    normalise_cell, k, fewest = (tokens_of, K, MIN_TOKENS) if kind == CODE else (text_tokens, TEXT_K, MIN_TEXT_TOKENS)
    if min_evidence is None:
        min_evidence = MIN_EVIDENCE if kind == CODE else MIN_TEXT_EVIDENCE
    if min_similarity is None:
        min_similarity = MIN_SIMILARITY if kind == CODE else MIN_TEXT_SIMILARITY
    prints = {}
    for student, code in codes.items():
        if code is None:  # not compared: already listed by read_answers
            continue
        try:
            tokens = normalise_cell(code)
        except Uncomparable as problem:
            if not_compared is not None:
                not_compared.append(NotCompared(student, notebook, grade_id, problem.reason))
            continue
        if len(tokens) >= fewest:
            prints[student] = shingles(tokens, k)
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
            out.append((left, right, CellMatch(notebook, grade_id, similarity, evidence, codes[left], codes[right],
                                               kind)))
    return out


def find_pairs(answers: dict, *, min_similarity: float | None = None, min_evidence: float | None = None,
               not_compared: list | None = None, kinds: dict | None = None) -> list:
    """Ranked :class:`Pair` list, strongest signal first, from :func:`read_answers`' mapping.

    ``kinds`` maps ``(notebook, grade_id)`` to ``CODE`` or ``TEXT`` (:func:`answer_kinds`; a cell not
    in it is code). ``min_similarity`` and ``min_evidence`` override both kinds' defaults. Cells that could
    not be compared are appended to ``not_compared``.
    """
    kinds = kinds or {}
    by_pair: dict = defaultdict(list)
    for (notebook, grade_id), codes in sorted(answers.items()):
        for left, right, match in cell_matches(notebook, grade_id, codes, min_similarity=min_similarity,
                                               min_evidence=min_evidence, not_compared=not_compared,
                                               kind=kinds.get((notebook, grade_id), CODE)):
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
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #bbb;padding:.2rem .5rem;text-align:left}
"""
#: Rows of the "not compared" table shown on the page (the CSV has them all).
SHOWN_NOT_COMPARED = 200


def _text(value) -> str:
    """Student text as it may go into the page: escaped, NUL and lone surrogates replaced, cut to
    :data:`~autograder.limits.SIMILARITY_SHOWN_CHARS` (the page never holds a whole 20 MB cell)."""
    text = str(value)
    cut = len(text) - SIMILARITY_SHOWN_CHARS.value
    text = text[:SIMILARITY_SHOWN_CHARS.value].replace("\0", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return html.escape(text) + (f"\n[... {cut:,} more characters not shown]" if cut > 0 else "")


def render_html(assignment: str, pairs: list, *, students: int, limit: int = 50, not_compared=()) -> str:
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Similar answers: "
             f"{_text(assignment)}</title><style>{STYLE}</style></head><body><main>",
             f"<h1>Similar answers: {_text(assignment)}</h1>",
             "<p class='warn'><strong>A signal, not a verdict.</strong> These pairs wrote answer cells that are "
             "near-identical (code once names, comments and formatting are set aside; written answers word for "
             "word once case, punctuation, markup and numbers are set aside) and share parts that few other "
             "students wrote. Short exercises have few natural solutions and students may learn from the same "
             "material: read the cells and talk to the students before drawing any conclusion.</p>",
             f"<p>{len(pairs)} pairs listed among {students} students"
             + (f" (the first {limit} shown)" if len(pairs) > limit else "")
             + (f"; {len(not_compared)} cells or notebooks could not be compared (listed at the end)"
                if not_compared else "") + ".</p>"]
    if not pairs:
        parts.append("<p>No pair of students wrote near-identical answer cells.</p>")
    for rank, pair in enumerate(pairs[:limit], 1):
        parts.append(f"<section class='pair'><h2>{rank}. {_text(pair.left)} and {_text(pair.right)}"
                     f"</h2><p>Signal strength {pair.score:.0f}, {len(pair.cells)} matching cell(s).</p>")
        for match in pair.cells:
            what = "written answer" if match.kind == TEXT else "cell"
            parts.append(f"<h3>{_text(match.notebook)}, {what} {_text(match.grade_id)}: similarity "
                         f"{100 * match.similarity:.0f}%, rare shared material {match.evidence:.0f}</h3>"
                         f"<div class='side'><div><p>{_text(pair.left)}</p><pre>{_text(match.left)}</pre>"
                         f"</div><div><p>{_text(pair.right)}</p><pre>{_text(match.right)}</pre></div></div>")
        parts.append("</section>")
    if not_compared:
        parts.append("<h2>Not compared</h2><p>These cells (or whole notebooks) were left out of the comparison, "
                     "each for the reason given; everything else was compared."
                     + (f" The first {SHOWN_NOT_COMPARED} of {len(not_compared)} are shown; the CSV file lists "
                        "all." if len(not_compared) > SHOWN_NOT_COMPARED else "") + "</p>"
                     "<table><tr><th scope='col'>student</th><th scope='col'>notebook</th><th scope='col'>cell</th>"
                     "<th scope='col'>why</th></tr>")
        for item in not_compared[:SHOWN_NOT_COMPARED]:
            parts.append(f"<tr><td>{_text(item.student)}</td><td>{_text(item.notebook)}</td>"
                         f"<td>{_text(item.grade_id or '(whole notebook)')}</td><td>{_text(item.reason)}</td></tr>")
        parts.append("</table>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def write_not_compared(path: Path, not_compared) -> None:
    """One row per cell (or notebook) left out: student, notebook, grade_id (empty: whole notebook), reason."""
    with open(path, "w", newline="", encoding="utf-8", errors="replace") as handle:
        out = csv.writer(handle)
        out.writerow(["student", "notebook", "grade_id", "reason"])
        for item in not_compared:
            out.writerow([item.student, item.notebook, item.grade_id or "", item.reason])


def build(course_dir: str | Path, assignment: str, *, output: str | Path | None = None,
          min_similarity: float | None = None, min_evidence: float | None = None) -> dict:
    """Read the submissions, write ``<output>/<assignment>-similarity.html`` and the CSV of the cells
    not compared; returns ``{"html", "not_compared_csv", "pairs", "not_compared", "students", "seconds"}``."""
    started = time.perf_counter()
    not_compared: list = []
    answers = read_answers(course_dir, assignment, not_compared)
    students = len({s for codes in answers.values() for s in codes})
    pairs = find_pairs(answers, min_similarity=min_similarity, min_evidence=min_evidence, not_compared=not_compared,
                       kinds=answer_kinds(course_dir, assignment))
    not_compared.sort(key=lambda item: (item.student, item.notebook, item.grade_id or ""))
    folder = Path(output) if output is not None else Path(course_dir) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / f"{assignment}-similarity.html"
    page.write_text(render_html(assignment, pairs, students=students, not_compared=not_compared), encoding="utf-8")
    table = folder / f"{assignment}-similarity-not-compared.csv"
    write_not_compared(table, not_compared)
    return {"html": page, "not_compared_csv": table, "pairs": pairs, "not_compared": not_compared,
            "students": students, "seconds": time.perf_counter() - started}
