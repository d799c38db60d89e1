"""No widget's first view answers a graded question.

For every widget cell of every release notebook, the explorer is built headless exactly as the cell
builds it, and its first view is collected: the text of every HTML/label widget, control
descriptions, options and values, the figures' text (titles, tick labels, annotations), the
figures' text alternatives, and the scalar numbers of its model state. Nothing there may hold:

* a graded number: any number of an answer key (``autograder/exercises/*/key.py``, recursively
  through dicts, tuples, arrays and records) or of a worked solution (``solution.md``) with 4 or
  more significant digits, in any common formatting (a display rounding of it, sign ignored);
* a graded vector: a key vector whose non-trivial entries all appear among the view's numbers
  (e.g. a renormalised nucleus (0.625, 0.375, 0, 0));
* the graded example itself: a key's input distribution as the explorer's starting p, q, base
  distribution or tree;
* a graded statement: a key string that reads as an answer (support conditions such as
  ``q<<p``) or a known answer phrase (``k1 changes sign``, ``KL(q||p) is infinite``).

The public docstrings of ``course.widgets`` are scanned the same way.
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import json
import math
import re
from decimal import Decimal
from pathlib import Path

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import course.widgets as course_widgets  # noqa: E402
from autograder import exercises  # noqa: E402
from autograder.exercises import fill  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RELEASE = REPO / "release" / "module6"
CALL = re.compile(r"\b(truncation_explorer|kl_explorer|chain_rule_explorer)\(.*\)\s*$", re.S)
NUMBER = re.compile(r"(?<![\w.])[-\u2212]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
# Statements of graded answers, normalised like the view's text (lower case, no spaces,
# "<<" for the much-less-than sign, "||" for the double bar).
ANSWER_PHRASES = (
    "k1changessign", "k2andk3donot", "k2andk3neverchangesign", "k2andk3arenevernegative",
    "kl(q||p)isinfinite", "kl(q||p)=inf,", "e_q[p/q]=0.8,", "only if p<<q", "1onlyifp<<q",
    "(q<<pfails)", "(p<<qfails)", "therootklis", "theseed's",
)


# ------------------------------------------------------------------ what counts as graded


def _leaves(value, depth=0):
    """Every scalar (number or string) inside a key value."""
    if depth > 6:
        return
    if isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        yield float(value)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, np.ndarray):
        if value.size <= 64:
            for item in value.ravel().tolist():
                yield from _leaves(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(key, depth + 1)
            yield from _leaves(item, depth + 1)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from _leaves(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), depth + 1)


def _vectors(value, depth=0):
    """Every numeric vector (tuple, list or 1-D array of 2-16 numbers) inside a key value."""
    if depth > 6:
        return
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.ndim >= 1 and value.size <= 64:
        for row in value.reshape(-1, value.shape[-1]):
            if 2 <= row.size <= 16:
                yield tuple(float(x) for x in row)
    elif isinstance(value, (tuple, list)) and 2 <= len(value) <= 16 and all(
            isinstance(x, (float, int)) and not isinstance(x, bool) for x in value):
        yield tuple(float(x) for x in value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _vectors(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _vectors(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _vectors(getattr(value, f.name), depth + 1)


def significant_digits(x: float) -> int:
    """Significant digits of x, ignoring binary round-off (0.19999999999999996 has one)."""
    if x == 0 or not math.isfinite(x):
        return 0
    digits = Decimal(f"{abs(x):.12g}").normalize().as_tuple().digits
    return len(digits)


def _key_modules():
    for stem in exercises.stems():
        try:
            yield stem, exercises.load_key(stem)
        except ModuleNotFoundError:
            continue


def graded_values():
    """(precise numbers, vectors, answer strings) of every key and worked solution."""
    numbers, vectors, strings = {}, set(), set()
    for stem, key in _key_modules():
        for name, value in vars(key).items():
            if name.startswith("_") and name not in {"_CHAIN", "_CORRECTION", "_NUCLEI", "_THREE",
                                                     "_FOUR", "_REPORT"}:
                continue
            if inspect.ismodule(value) or inspect.isclass(value) or callable(value):
                continue
            for leaf in _leaves(value):
                if isinstance(leaf, str):
                    strings.add(leaf)
                elif math.isfinite(leaf) and significant_digits(leaf) >= 4:
                    numbers.setdefault(abs(leaf), f"{stem}.{name}")
            for vector in _vectors(value):
                if len({v for v in vector if v not in (0.0, 1.0)}) >= 2:
                    vectors.add((stem, name, vector))
    for stem in exercises.stems():
        solution = exercises.solution_path(stem)
        if solution.is_file():
            # {{ name }} placeholders filled with variant 0's values, as the self-study panel first shows them.
            for match in NUMBER.findall(fill(solution.read_text(), stem)):
                x = float(match.replace("\u2212", "-"))
                if significant_digits(x) >= 4 and "." in match and len(match.split(".")[1]) >= 3:
                    numbers.setdefault(abs(x), f"{stem}/solution.md")
    # Strings that read as answers: identifiers with "<<" (support conditions), multi-word phrases.
    answer_strings = {s for s in strings if "<<" in s}
    return numbers, vectors, answer_strings


NUMBERS, VECTORS, ANSWER_STRINGS = graded_values()


def test_the_graded_values_were_found():
    # Spot checks that the collection sees what the issue listed, so the leak test has teeth.
    for value in (0.294118, 1.223775, 0.162519, 1.915686, 0.693147, 0.240227, 0.306853, 0.193147,
                  0.0201355, 0.2075056):
        assert any(abs(v - value) < 5e-7 for v in NUMBERS), value
    assert any(np.allclose(vector[:2], (0.625, 0.375)) for _, _, vector in VECTORS)
    assert any(np.allclose(vector, (0.8, 0.2)) for _, _, vector in VECTORS if len(vector) == 2)
    assert "q<<p" in ANSWER_STRINGS


# ------------------------------------------------------------------ what a first view shows


def _normalise(text: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    text = text.replace("\u226a", "<<").replace("\u2016", "||").replace("\u2212", "-")
    return re.sub(r"\s+", "", text.lower())


DATA_URI = re.compile(r'src="data:[^"]*"')


def _widget_texts(widget) -> list[str]:
    """Every text the widget puts on the page (figures: their alt text, not the PNG bytes)."""
    out = []
    for name in ("value", "description", "tooltip", "placeholder"):
        value = getattr(widget, name, None) if name in widget.trait_names() else None
        if isinstance(value, str):
            out.append(DATA_URI.sub("", value))
    if hasattr(widget, "_options_labels"):
        out.extend(widget._options_labels)
    if isinstance(widget, (widgets.FloatSlider, widgets.IntSlider, widgets.BoundedIntText)):
        out.append(str(widget.value))
    for child in getattr(widget, "children", ()):
        out.extend(_widget_texts(child))
    return out


def _figure_texts(explorer) -> list[str]:
    texts = []
    for plot in explorer.plots():
        for text in plot.figure.findobj(matplotlib.text.Text):
            if text.get_visible() and text.get_text():
                texts.append(text.get_text())
    return texts


def _state_numbers(state) -> list[float]:
    """Scalars and short arrays of the model state (long per-draw arrays are only plotted)."""
    out = []
    for f in dataclasses.fields(state):
        if f.name in {"draws", "values", "running_mean", "running_se", "logits"}:
            continue
        value = getattr(state, f.name)
        for leaf in _leaves(value):
            if isinstance(leaf, float) and math.isfinite(leaf):
                out.append(leaf)
    for name in ("bias", "base_prob", "behaviour_prob"):
        if hasattr(type(state), name):
            for leaf in _leaves(getattr(state, name)):
                if isinstance(leaf, float) and math.isfinite(leaf):
                    out.append(leaf)
    return out


def first_view(source: str):
    namespace: dict = {}
    exec(compile(source, "<widget cell>", "exec"), namespace)  # the cell's imports
    call = CALL.search(source.strip()).group(0)
    explorer = eval(call, namespace)
    texts = _widget_texts(explorer) + _figure_texts(explorer)
    return explorer, texts, _state_numbers(explorer.state)


def release_widget_cells():
    cells = []
    for path in sorted(RELEASE.glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            if "widget" in cell.get("metadata", {}).get("tags", []):
                source = "".join(cell["source"])
                cells.append(pytest.param(source, id=f"{path.stem}-cell{index}"))
    return cells


CELLS = release_widget_cells()


def test_release_notebooks_have_widget_cells():
    assert len(CELLS) >= 5


def _text_number_leaks(texts):
    leaks = []
    for text in texts:
        plain = html.unescape(re.sub(r"<[^>]+>", " ", text)).replace("\u2212", "-")
        for token in NUMBER.findall(plain):
            x = abs(float(token.replace("\u2212", "-")))
            if "e" in token.lower():
                mantissa = token.lower().split("e")[0]
                places = len(mantissa.split(".")[1]) if "." in mantissa else 0
                leaks.extend((token, where, value, text[:120]) for value, where in NUMBERS.items()
                             if places >= 2 and math.isclose(x, value, rel_tol=10.0 ** -places))
                continue
            decimals = len(token.split(".")[1]) if "." in token else 0
            if significant_digits(float(token.replace("\u2212", "-"))) < 3:
                continue  # 0.015 or 0.50: too short to single out a graded value
            half = 0.5 * 10.0 ** -decimals
            for value, where in NUMBERS.items():
                if abs(round(value, decimals) - x) < half * 1e-6 or (abs(value - x) <= half and x != 0
                                                                     and decimals >= 3):
                    leaks.append((token, where, value, text[:120]))
    return leaks


@pytest.mark.parametrize("source", CELLS)
def test_first_view_shows_no_graded_number(source):
    _, texts, _ = first_view(source)
    leaks = _text_number_leaks(texts)
    assert not leaks, leaks


@pytest.mark.parametrize("source", CELLS)
def test_first_view_state_holds_no_graded_number(source):
    _, _, numbers = first_view(source)
    leaks = [(x, where) for x in numbers for value, where in NUMBERS.items()
             if math.isclose(abs(x), value, rel_tol=1e-9)]
    assert not leaks, leaks


def _view_vectors(explorer) -> list[tuple[float, ...]]:
    state = explorer.state
    candidates = []
    for name in ("p", "q", "base_probs", "first_p", "first_q", "behaviour_probs", "tempered_probs"):
        if hasattr(state, name):
            candidates.append(tuple(np.asarray(getattr(state, name), dtype=float).tolist()))
    for name in ("cond_p", "cond_q"):
        if hasattr(state, name):
            candidates.extend(tuple(row) for row in np.asarray(getattr(state, name)).tolist())
    return candidates


@pytest.mark.parametrize("source", CELLS)
def test_first_view_is_not_a_graded_example_or_result(source):
    explorer, texts, numbers = first_view(source)
    shown = numbers + [abs(float(t)) for text in texts
                       for t in NUMBER.findall(html.unescape(text).replace("\u2212", "-"))]
    mine = _view_vectors(explorer)
    for stem, name, vector in VECTORS:
        for candidate in mine:
            assert not (len(candidate) == len(vector) and np.allclose(candidate, vector, atol=1e-12)), (
                f"the explorer starts on {stem}'s {name} = {vector}")
        nontrivial = [v for v in vector if v not in (0.0, 1.0)]
        if len(set(nontrivial)) >= 2 and len(nontrivial) >= 2:
            found = all(any(math.isclose(abs(v), s, rel_tol=1e-6) or abs(abs(v) - s) < 5e-4
                            and significant_digits(s) >= 3 for s in shown) for v in nontrivial)
            # A vector of "round" inputs (0.6, 0.4) may coincide with sliders' positions: only
            # derived vectors (results with 3+ significant digits) count as shown results.
            derived = any(significant_digits(v) >= 3 for v in nontrivial)
            assert not (found and derived), f"the first view shows {stem}'s {name} = {vector}"


@pytest.mark.parametrize("source", CELLS)
def test_first_view_states_no_graded_answer(source):
    _, texts, _ = first_view(source)
    joined = _normalise(" ".join(texts))
    for phrase in ANSWER_PHRASES:
        assert phrase not in joined, phrase
    for answer in ANSWER_STRINGS:
        assert _normalise(answer) not in joined, answer


def test_public_docstrings_hold_no_graded_number_or_answer():
    texts = [course_widgets.__doc__ or ""]
    for name in course_widgets.__all__:
        obj = getattr(course_widgets, name)
        texts.append(inspect.getdoc(obj) or "" if callable(obj) else "")
    import course

    texts.append(course.__doc__ or "")
    assert not _text_number_leaks(texts), _text_number_leaks(texts)
    joined = _normalise(" ".join(texts))
    for phrase in ANSWER_PHRASES:
        assert phrase not in joined, phrase


def test_the_leak_check_catches_the_old_openings():
    """The checks above fail on what the widgets used to show (so they are not vacuous)."""
    old_texts = ["<span class='m6-num'>0.294118</span>", "ratio error 1.915686",
                 "\u22121.223775", "bars: 0.307 0.193"]
    assert len(_text_number_leaks(old_texts)) >= 3
    joined = _normalise("Samples have r = 2: k1 changes sign, k2 and k3 do not. "
                        "E<sub>q</sub>[p/q] (1 only if p &#8810; q)")
    assert "k1changessign" in joined and "1onlyifp<<q" in joined


def test_student_package_files_hold_no_graded_number_or_answer():
    """Every file of the student package (code, comments, docstrings, README) is clean too."""
    from autograder.authoring.worked_example import TARGET, render

    root = REPO / "course"
    leaks = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in {".py", ".md", ".toml", ".txt", ".cfg"}:
            continue
        if path == TARGET:
            # The worked example's answers (variant 0), which the open checks need and the course notes
            # publish: exactly the generator's output, nothing else (tests/test_open_checks_example.py).
            assert path.read_text() == render()
            continue
        text = path.read_text()
        leaks.extend((path.name, *leak[:3]) for leak in _text_number_leaks([text]))
        joined = _normalise(text)
        leaks.extend((path.name, phrase) for phrase in ANSWER_PHRASES if phrase in joined)
        leaks.extend((path.name, s) for s in ANSWER_STRINGS if _normalise(s) in joined)
    assert not leaks, leaks
