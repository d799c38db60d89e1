"""The similarity signal: planted renamed copies rank on top, independent correct solutions stay off the list."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder.authoring.scratch_course import make_course_copy
from autograder.insight import similarity
from autograder.limits import SIMILARITY_CELL_CHARS, SIMILARITY_STUDENT_TOKENS

STEM, CELL = "15_stable_log_softmax", "stable_log_softmax"

# Eight independent, correct solutions of the same short function, written in different styles.
HONEST = [
    '''def stable_log_softmax(logits, axis=-1):
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.size == 0:
        raise ValueError("logits must be a non-empty array")
    if not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite")
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))
''',
    '''def stable_log_softmax(logits, axis=-1):
    x = np.array(logits, dtype=float)
    if x.size == 0 or x.ndim == 0 or np.isnan(x).any() or np.isinf(x).any():
        raise ValueError("bad logits")
    shifted = x - np.max(x, axis=axis, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return shifted - lse
''',
    '''def stable_log_softmax(logits, axis=-1):
    """log softmax via the log-sum-exp trick"""
    arr = np.asarray(logits, np.float64)
    if arr.ndim < 1 or arr.size < 1:
        raise ValueError("need at least one logit")
    if not np.isfinite(arr).all():
        raise ValueError("non-finite logits")
    if type(axis) is not int:
        raise TypeError("axis must be int")
    top = np.amax(arr, axis=axis, keepdims=True)
    total = np.add.reduce(np.exp(arr - top), axis=axis, keepdims=True)
    return (arr - top) - np.log(total)
''',
    '''def stable_log_softmax(logits, axis=-1):
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 0:
        raise ValueError("0-d")
    if logits.size == 0:
        raise ValueError("empty")
    if np.any(~np.isfinite(logits)):
        raise ValueError("nan or inf")
    axis = int(axis)
    out = np.empty_like(logits)
    moved = np.moveaxis(logits, axis, -1)
    peak = moved.max(-1)[..., None]
    res = moved - peak - np.log(np.exp(moved - peak).sum(-1))[..., None]
    return np.moveaxis(res, -1, axis)
''',
    '''import math

def stable_log_softmax(logits, axis=-1):
    values = np.asarray(logits, dtype="float64")
    bad = values.size == 0 or values.ndim == 0
    if bad or not np.isfinite(values).all():
        raise ValueError("logits must be a finite, non-empty array")
    c = np.max(values, axis=axis, keepdims=True)
    log_norm = c + np.log(np.sum(np.exp(values - c), axis=axis, keepdims=True))
    return values - log_norm
''',
    '''def stable_log_softmax(logits, axis=-1):
    a = np.asarray(logits, dtype=np.float64)
    if a.ndim == 0 or not a.size:
        raise ValueError("empty logits")
    if np.isnan(a).any():
        raise ValueError("NaN in logits")
    if np.isinf(a).any():
        raise ValueError("inf in logits")
    def lse(v):
        k = v.max(axis=axis, keepdims=True)
        return k + np.log(np.exp(v - k).sum(axis=axis, keepdims=True))
    return a - lse(a)
''',
    '''def stable_log_softmax(logits, axis=-1):
    t = np.asarray(logits, dtype=np.float64)
    if t.shape == () or 0 in t.shape:
        raise ValueError("logits need a dimension and an entry")
    finite = np.isfinite(t)
    if not finite.all():
        raise ValueError("logits contain NaN or infinity")
    t = t - t.max(axis=axis, keepdims=True)
    t -= np.log(np.exp(t).sum(axis=axis, keepdims=True))
    return t
''',
    '''def stable_log_softmax(logits, axis=-1):
    data = np.asarray(logits).astype(np.float64)
    if data.ndim == 0 or data.size == 0 or not np.all(np.isfinite(data)):
        raise ValueError("invalid logits")
    ax = axis if axis >= 0 else data.ndim + axis
    if not 0 <= ax < data.ndim:
        raise ValueError("axis out of range")
    biggest = np.expand_dims(np.max(data, axis=ax), ax)
    sums = np.expand_dims(np.sum(np.exp(data - biggest), axis=ax), ax)
    return data - biggest - np.log(sums)
''',
]

# Copies of honest solutions 2 and 5 with every name changed, comments added, formatting redone.
COPY_OF_2 = '''def stable_log_softmax(scores, axis = -1):
    # convert the scores first
    vals = np.asarray(scores,   np.float64)
    if vals.ndim < 1 or vals.size < 1:
        raise ValueError("there must be at least one logit")
    if not np.isfinite(vals).all():   # NaN / inf are rejected
        raise ValueError("logits are not finite")
    if type(axis) is not int:
        raise TypeError("the axis has to be an int")
    mx = np.amax(vals, axis=axis, keepdims=True)
    s = np.add.reduce(np.exp(vals - mx), axis=axis, keepdims=True)
    return (vals - mx) - np.log(s)   # log-sum-exp
'''
COPY_OF_5 = '''def stable_log_softmax(logits, axis=-1):
    """My own log-softmax."""
    arr = np.asarray(logits, dtype=np.float64)
    if arr.ndim == 0 or not arr.size: raise ValueError("no logits given")
    if np.isnan(arr).any(): raise ValueError("found a NaN")
    if np.isinf(arr).any(): raise ValueError("found an inf")
    def logsumexp(x):
        # shift by the max first
        mx = x.max(axis=axis, keepdims=True)
        return mx + np.log(np.exp(x - mx).sum(axis=axis, keepdims=True))
    return arr - logsumexp(arr)
'''


def _reference() -> str:
    from autograder.authoring.scratch_course import source_dir
    from autograder.demo.simulate import solution_text
    nb = nbformat.read(str(source_dir() / f"{STEM}.ipynb"), as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == CELL]
    return solution_text(cell.source)


def planted_class() -> dict:
    """student -> code: 12 with the worked solution, 8 honest variants, 2 renamed copies."""
    codes = {f"ref{i:02d}": _reference() for i in range(12)}
    codes.update({f"honest{i}": code for i, code in enumerate(HONEST)})
    codes.update({"copier2": COPY_OF_2, "copier5": COPY_OF_5})
    return codes


def test_normalisation_ignores_names_comments_and_layout():
    assert similarity.normalise(HONEST[2]) == similarity.normalise(COPY_OF_2.replace(
        '"there must be at least one logit"', '"need at least one logit"'))
    assert similarity.normalise(HONEST[0]) != similarity.normalise(HONEST[1])
    assert similarity.normalise("def f(:") is None


def test_planted_copies_rank_on_top_and_honest_solutions_stay_below():
    pairs = similarity.find_pairs({(STEM, CELL): planted_class()})
    top = [(p.left, p.right) for p in pairs[:2]]
    assert set(top) == {("copier2", "honest2"), ("copier5", "honest5")}
    # Nothing else is listed: not the twelve copies of the worked solution (what the class shares
    # carries no weight), not any two of the independent variants.
    assert len(pairs) == 2, [(p.left, p.right, round(p.score)) for p in pairs]
    match = pairs[0].cells[0]
    assert match.similarity > 0.9 and match.notebook == STEM and match.grade_id == CELL


def test_calibration_holds_in_a_large_class():
    # 150 students hand in the worked solution (as if all had learnt it from the same lecture): the
    # list still holds only the two planted copies.
    codes = planted_class()
    codes.update({f"lecture{i:03d}": _reference() for i in range(150)})
    pairs = similarity.find_pairs({(STEM, CELL): codes})
    assert {(p.left, p.right) for p in pairs} == {("copier2", "honest2"), ("copier5", "honest5")}


def test_short_cells_and_unparsable_cells_are_not_compared():
    codes = {"a": "x = 1\n", "b": "x = 1\n", "c": "def f(:\n", "d": "def f(:\n"}
    assert similarity.find_pairs({(STEM, CELL): codes}) == []


def _course(tmp_path, codes: dict) -> tuple:
    """A course whose release holds the exercise and whose students submitted ``codes`` (student ->
    code for the answer cell, or ``bytes``: the whole file as written)."""
    course = make_course_copy(tmp_path / "course", stems=[STEM])
    release = course / "release" / "module6"
    release.mkdir(parents=True)
    source = nbformat.read(str(course / "source" / "module6" / f"{STEM}.ipynb"), as_version=4)
    nbformat.write(source, str(release / f"{STEM}.ipynb"))  # answer ids are read from the release
    for student, code in codes.items():
        folder = course / "submitted" / student / "module6"
        folder.mkdir(parents=True)
        if isinstance(code, bytes):
            (folder / f"{STEM}.ipynb").write_bytes(code)
            continue
        nb = nbformat.from_dict(source)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == CELL:
                cell.source = code
        nbformat.write(nb, str(folder / f"{STEM}.ipynb"))
    return course, source


def test_cli_writes_a_side_by_side_page(tmp_path):
    course, _ = _course(tmp_path, planted_class())
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "similarity", "module6",
                           "--course-dir", str(course)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "2 pairs among 22 students" in proc.stdout
    page = (course / "reports" / "module6-similarity.html").read_text()
    assert "A signal, not a verdict" in page
    assert page.index("copier") < page.index("</main>") and "np.add.reduce" in page
    bad = subprocess.run([sys.executable, "-m", "autograder.cli", "similarity", "module6", "--course-dir",
                          str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "course directory" in bad.stderr


def _hostile_file(source, text: str, replace: bytes = b"", by: bytes = b"") -> bytes:
    nb = nbformat.from_dict(source)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == CELL:
            cell.source = text
    return nbformat.writes(nb).encode("utf-8").replace(replace, by) if replace else nbformat.writes(nb).encode()


def test_one_hostile_cell_costs_only_its_own_row(tmp_path):
    """Each cell below once stopped the whole command (RecursionError, MemoryError) or could: now
    each is listed with its reason, and the planted copies are still found on the page."""
    import json
    import os

    hostile = {
        # under the size cap and a student's tokens: parsed, refused
        "plus": ("x = " + "a+" * 9_990 + "a\n", "RecursionError"),
        "minus": ("x = " + "-" * 19_990 + "a\n", "MemoryError"),
        "dense": ("x = " + "a+" * 24_990 + "a\n", "past this student's 20,000 tokens of cells compared"),
        "deep": ("x = " + "[" * 5_000 + "]" * 5_000 + "\n", "not valid Python"),  # the parser's own nesting limit
        "huge": ("s = '" + "a" * 3_000_000 + "'\n", "longer than 50,000 characters"),
        "nul": ("def f(x):\n    return x\0\n" * 5, "NUL"),
        "syntax": ("def stable_log_softmax(:\n", "not valid Python (SyntaxError on line 1)"),
    }
    codes = {**planted_class(), **{name: text for name, (text, _) in hostile.items()}}
    course, source = _course(tmp_path, codes)
    files = {  # whole files a student could hand in
        "surrogate": (_hostile_file(source, "MARK", b'"MARK"', json.dumps("\ud800 = 1").encode()), "surrogate"),
        "latin1": (_hostile_file(source, "MARK", b"MARK", "caf\xe9 = 1".encode("latin-1")), "not valid Python"),
        "notjson": (b"\xff\xfe{{{ not a notebook", "could not be read"),
        # a cell source that is a number: nbformat cannot load the file, as for grading: the notebook's row
        "number": (_hostile_file(source, "MARK", b'"MARK"', b"12345"), "could not be read (TypeError)"),
    }
    for name, (data, _) in files.items():
        folder = course / "submitted" / name / "module6"
        folder.mkdir(parents=True)
        (folder / f"{STEM}.ipynb").write_bytes(data)
    fifo = course / "submitted" / "fifo" / "module6"
    fifo.mkdir(parents=True)
    os.mkfifo(fifo / f"{STEM}.ipynb")  # a reader that opened it would wait for ever
    made = similarity.build(course, "module6")
    assert {(p.left, p.right) for p in made["pairs"]} == {("copier2", "honest2"), ("copier5", "honest5")}
    reasons = {item.student: item.reason for item in made["not_compared"]}
    expected = {name: words for name, (_, words) in {**hostile, **files}.items()} | {"fifo": "not a regular file"}
    assert set(reasons) == set(expected), reasons
    for name, words in expected.items():
        assert words in reasons[name], (name, reasons[name])
    assert all(item.grade_id == CELL for item in made["not_compared"] if item.student in hostile)
    page = made["html"].read_text(encoding="utf-8")
    assert page.index("copier2") < page.index("Not compared") < page.index("RecursionError")
    assert len(page) < 1_000_000 and "\0" not in page
    with open(made["not_compared_csv"], newline="", encoding="utf-8") as handle:
        assert {row["student"] for row in csv.DictReader(handle)} == set(expected)


@pytest.mark.parametrize("students,expected", [(1, 2), (40, 2), (41, 3), (500, 25)])
def test_rare_limit(students, expected):
    assert similarity.rare_limit(students) == expected


# --------------------------------------------------------------------------- written answers (issue 33, F13)

WRITTEN = "explain_max_shift"

# Eight independent answers to Part B of 15 (why the shift is free; what the unshifted formula does to
# [1000, 1001, 999]), each in its own words: right, partly right, terse or long.
HONEST_WRITTEN = [
    "Subtracting m inside is the same as dividing every exp by e^m, and the log of that factor cancels the -m "
    "outside. Without the shift exp(1000) is already inf in float64, so the log-sum-exp is inf and every entry "
    "becomes -inf.",
    "log softmax(z - m) = (z_i - m) - log sum exp(z_j - m) = z_i - log sum exp(z_j) because e^{-m} factors out. "
    "Unshifted: all three exponentials overflow to infinity, the normaliser is infinite, the output is -inf "
    "everywhere (NaN if we divide first).",
    "The shift does not change anything since softmax is invariant to adding a constant to all logits. In "
    "double precision e^1000 overflows; we get inf/inf which is nan, so the probabilities are garbage.",
    "Pull e^{-m} out of the sum: log of the sum drops by m, which is exactly the m we subtracted, so the "
    "result is identical. For [1000, 1001, 999] numpy computes exp(1001) = inf (with an overflow warning), "
    "then log(inf) = inf and z - inf = -inf for each position.",
    "Because log(sum exp(z - m)) = log(sum exp(z)) - m the two m terms cancel. If you do not shift, the "
    "largest value exp(1001) is far beyond the float64 maximum of about 1.8e308, it becomes infinity and the "
    "whole row is lost.",
    "Mathematically it is the same expression, the constant cancels between the numerator and the log of the "
    "denominator. Numerically the unshifted version overflows at exponents above roughly 709 so 1000 gives inf "
    "and the answer is -inf or nan.",
    "Shifting by the maximum is free: softmax only depends on differences between logits. Step by step, exp "
    "of 999, 1000 and 1001 each return inf, their sum is inf, log gives inf, and subtracting gives minus "
    "infinity for all three tokens, which is wrong.",
    "With the shift the exponents are -1, 0 and -2 so the biggest term is 1 and nothing overflows. Without it "
    "exp overflows to inf; the normalising constant is inf and each log probability is -inf instead of about "
    "-1.41, -0.41 and -2.41.",
]
WORKED_WRITTEN = (
    "$z_i - m - \\log\\sum_j e^{z_j - m} = z_i - m - (\\log\\sum_j e^{z_j} - m) = z_i - \\log\\sum_j e^{z_j}$: "
    "the factor $e^{-m}$ comes out of the sum and its log cancels the $-m$. Unshifted, `exp(1000)`, `exp(1001)` "
    "and `exp(999)` all overflow to `inf`, so the sum is `inf` and its log is `inf`; each entry becomes "
    "`z_i - inf = -inf`, and the probabilities no longer sum to one.")
# A word-for-word copy of answer 3 (case, punctuation and Markdown changed), and a copy of answer 6 with
# two words swapped for synonyms and a number changed (74% similar; independent answers reach 3%).
COPY_OF_3 = ("**Pull** $e^{-m}$ out of the sum: log of the sum drops by m, which is EXACTLY the m we subtracted, "
             "so the result is identical.\n\nFor `[1000, 1001, 999]` numpy computes `exp(1001) = inf` (with an "
             "overflow warning); then `log(inf) = inf` and `z - inf = -inf` for each position!")
COPY_OF_6 = ("Shifting by the max is free: softmax only depends on differences between logits. Step by step, exp "
             "of 999, 1000 and 1002 each return inf, their sum is inf, log gives inf, and subtracting gives minus "
             "infinity for all three tokens, which is incorrect.")


def written_class() -> dict:
    """student -> written answer: 12 with the worked solution, 8 in their own words, 2 copies."""
    answers = {f"ref{i:02d}": WORKED_WRITTEN for i in range(12)}
    answers.update({f"honest{i}": text for i, text in enumerate(HONEST_WRITTEN)})
    answers.update({"copier3": COPY_OF_3, "copier6": COPY_OF_6})
    return answers


def test_written_answers_are_compared_word_for_word():
    assert similarity.text_tokens(COPY_OF_3) == similarity.text_tokens(HONEST_WRITTEN[3])
    assert similarity.text_tokens("Das Maß") == similarity.text_tokens("DAS MASS")  # NFKC, case folded
    assert similarity.text_tokens(HONEST_WRITTEN[0]) != similarity.text_tokens(HONEST_WRITTEN[1])
    pairs = similarity.find_pairs({(STEM, WRITTEN): written_class()}, kinds={(STEM, WRITTEN): similarity.TEXT})
    # Only the two copies: not the twelve worked solutions (what many share weighs nothing), not any two
    # independent answers, however close in content.
    assert {(p.left, p.right) for p in pairs} == {("copier3", "honest3"), ("copier6", "honest6")}, \
        [(p.left, p.right, round(p.score)) for p in pairs]
    verbatim = next(p for p in pairs if p.left == "copier3").cells[0]
    assert verbatim.similarity == 1.0 and verbatim.kind == similarity.TEXT and verbatim.grade_id == WRITTEN
    # Read as code (as before), written answers were never compared at all.
    assert similarity.find_pairs({(STEM, WRITTEN): written_class()}) == []


def test_two_identical_written_answers_in_a_small_class_are_listed():
    """The hub term's case: three students, two hand in the same written answer word for word."""
    answers = {"m6student1": HONEST_WRITTEN[4], "m6student2": HONEST_WRITTEN[4], "m6student3": HONEST_WRITTEN[1]}
    pairs = similarity.find_pairs({(STEM, WRITTEN): answers}, kinds={(STEM, WRITTEN): similarity.TEXT})
    assert [(p.left, p.right) for p in pairs] == [("m6student1", "m6student2")]
    # Twelve words the same are enough among three; a shorter identical answer is not compared.
    twelve = "the max cancels because exp of minus m factors out of sum"
    assert len(similarity.text_tokens(twelve)) == similarity.MIN_TEXT_TOKENS
    short = {"a": twelve, "b": twelve, "c": HONEST_WRITTEN[1]}
    assert len(similarity.find_pairs({(STEM, WRITTEN): short}, kinds={(STEM, WRITTEN): similarity.TEXT})) == 1
    shorter = {name: " ".join(twelve.split()[:-1]) for name in short}
    assert similarity.find_pairs({(STEM, WRITTEN): shorter}, kinds={(STEM, WRITTEN): similarity.TEXT}) == []


def test_the_command_compares_written_answers_from_the_submissions(tmp_path):
    course, source = _course(tmp_path, {"honest": HONEST[0], "copier": HONEST[1], "other": HONEST[2]})
    texts = {"honest": HONEST_WRITTEN[5], "copier": HONEST_WRITTEN[5].upper(), "other": HONEST_WRITTEN[2]}
    for student, text in texts.items():
        path = course / "submitted" / student / "module6" / f"{STEM}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN]
        assert cell.cell_type == "markdown"
        cell.source = text
        nbformat.write(nb, str(path))
    untouched = course / "submitted" / "stub" / "module6"
    untouched.mkdir(parents=True)
    shutil.copyfile(course / "release" / "module6" / f"{STEM}.ipynb", untouched / f"{STEM}.ipynb")
    made = similarity.build(course, "module6")
    assert [(p.left, p.right, [c.grade_id for c in p.cells]) for p in made["pairs"]] == \
        [("copier", "honest", [WRITTEN])]
    page = made["html"].read_text(encoding="utf-8")
    assert f"written answer {WRITTEN}" in page and "word for word" in page


def test_what_one_student_may_cost_to_parse_is_bounded(tmp_path):
    """Issue 32, item 5: a student's cells are parsed up to STUDENT_TOKENS in all, counted before any
    parser runs; `autograder similarity` on a class of three takes at most 1.5 times as long with one
    student whose cell is the slowest shape to parse (`a+1;`) at that budget as with three honest ones."""
    import resource

    from autograder.feedback.page import code_tokens
    from conftest import as_users_run_it

    dense = "a+1;" * (SIMILARITY_STUDENT_TOKENS.value // 4 - 10)
    assert SIMILARITY_CELL_CHARS.value >= len(dense) and code_tokens(dense) <= SIMILARITY_STUDENT_TOKENS.value
    honest, _ = _course(tmp_path / "honest", {"a": HONEST[0], "b": HONEST[1], "c": HONEST[2]})
    hostile, _ = _course(tmp_path / "hostile", {"a": HONEST[0], "b": HONEST[1], "c": dense})

    def seconds(course):
        """The command's CPU time (its own work, whatever else the machine is doing)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-m", "autograder.cli", "similarity", "module6", "--course-dir",
                               str(course)], capture_output=True, text=True, timeout=300, env=as_users_run_it())
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert proc.returncode == 0, proc.stderr
        return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    best = {"honest": min(seconds(honest) for _ in range(2)), "hostile": min(seconds(hostile) for _ in range(2))}
    print(f"\nsimilarity, CPU seconds of the command: {best}")
    assert best["hostile"] <= 1.5 * best["honest"], best
    over, _ = _course(tmp_path / "over", {"a": HONEST[0], "c": dense + "a+1;" * 20})
    made = similarity.build(over, "module6")
    assert [(item.student, item.reason[:48]) for item in made["not_compared"]] == \
        [("c", "past this student's 20,000 tokens of cells compa")]
