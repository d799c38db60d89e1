"""``autograder report ASSIGNMENT``: what a graded class tells the instructor, as HTML and CSV.

From the report rows (:mod:`autograder.insight.results`) it computes, per notebook and per case
group, the score distribution (no points, some, all) and the pass rate (the share of graded
submissions with full points); the misconceptions most students' failed cases matched, with the
sentence the checks teach; and the notebooks that most often crashed, ran out of time or could not be read. It writes
one self-contained HTML page (plots are PNG data URIs, no scripts, no network) and three CSV files.
It also lists the students whose answers fit another student's numbers, or the example numbers,
rather than their own (:mod:`autograder.insight.variant_matches`), re-judged from the values the
grader stored.

Everything is counted from the rows as data: statuses and misconception keys, never feedback text.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import datetime
import html
import io
import time
from collections import Counter, defaultdict
from pathlib import Path

from autograder.results import NOT_GRADED, Status
from autograder.insight import catalogue as catalogue_module


@dataclasses.dataclass(frozen=True)
class GroupStats:
    """One graded cell (case group or written answer) over the class."""

    notebook: str
    grade_id: str
    max_score: float
    graded: int  # submissions with a score
    mean: float  # mean score of those
    zero: int
    partial: int
    full: int
    not_run: int  # rows whose notebook crashed, timed out or was never run (unreadable, refused, a link)
    pending: int  # written answers still waiting for a person

    @property
    def pass_rate(self) -> float:
        """Share of graded submissions with full points (0 when none was graded)."""
        return self.full / self.graded if self.graded else 0.0


@dataclasses.dataclass(frozen=True)
class NotebookStats:
    notebook: str
    submitted: int
    missing: int
    mean_percent: float  # mean over submitted notebooks of points earned / points available
    full_marks: int  # submissions with every autograded point
    crashed: int  # submissions that stopped with an error before the end
    timed_out: int
    unreadable: int = 0  # submitted files that are not a readable notebook (never run)
    not_run: int = 0  # submissions refused by a limit, submitted as a symbolic link, or lost to the grader

    @property
    def pass_rate(self) -> float:
        return self.full_marks / self.submitted if self.submitted else 0.0


@dataclasses.dataclass(frozen=True)
class MisconceptionCount:
    notebook: str
    key: str
    students: int
    sentence: str  # the key's teaching sentence (the exercise's check, else the check framework's)
    #: What the failed cases with this key told the students, as ``(message, cases)``, most frequent first
    #: (from the autograded notebooks' verdict records; empty when the rows came from a results file).
    told: tuple = ()


@dataclasses.dataclass(frozen=True)
class ClassReport:
    assignment: str
    students: tuple
    notebooks: tuple  # NotebookStats, exercise order
    groups: tuple  # GroupStats, exercise then notebook order
    misconceptions: tuple  # MisconceptionCount, most frequent first
    totals: tuple  # per student: percent of the autograded points available
    #: Students whose answers fit another variant than their own (``variant_matches.VariantMatch``),
    #: strongest first; filled by :func:`build`, which reads the stored answers.
    matches: tuple = ()

    @property
    def copied(self) -> tuple:
        """The findings whose source is another student (a classmate, or an id a notebook typed)."""
        return tuple(m for m in self.matches if m.source is not None)

    @property
    def example_numbers(self) -> tuple:
        """The findings whose answers fit variant 0, the example numbers the course publishes."""
        return tuple(m for m in self.matches if m.source is None)

    def misconception(self, notebook: str, key: str) -> int:
        """Students whose failed cases in ``notebook`` matched ``key`` (0 when none)."""
        return next((m.students for m in self.misconceptions if m.notebook == notebook and m.key == key), 0)


def summarise(rows: list, assignment: str, sentences: dict | None = None, told: dict | None = None) -> ClassReport:
    """Aggregate report rows into a :class:`ClassReport`.

    ``sentences`` maps ``(notebook, key)`` to the teaching sentence (default: the checks' catalogue, with
    the check framework's sentence for a key the exercise's own check does not define); ``told`` maps it
    to a ``Counter`` of the messages the students got (:func:`autograder.insight.results.read_graded`).
    """
    if sentences is None:
        sentences = _sentences({(row["notebook"], key) for row in rows for key in row.get("misconceptions") or ()})
    told = told or {}
    students = sorted({row["student"] for row in rows})
    by_cell: dict = defaultdict(list)
    by_notebook: dict = defaultdict(lambda: defaultdict(list))
    keys: dict = defaultdict(set)
    # A timestamp row stands for the submission's timestamp.txt, not for a notebook or a cell.
    rows = [row for row in rows if row["status"] != Status.BAD_TIMESTAMP]
    for row in rows:
        by_notebook[row["notebook"]][row["student"]].append(row)
        if row["grade_id"] is not None:
            by_cell[(row["notebook"], row["grade_id"])].append(row)
        for key in row.get("misconceptions") or ():
            keys[(row["notebook"], key)].add(row["student"])

    groups = []
    for (notebook, grade_id), cell_rows in sorted(by_cell.items()):
        max_score = max((r["max_score"] or 0.0) for r in cell_rows)
        present = [r for r in cell_rows if r["status"] != Status.MISSING]
        scored = [r["score"] for r in present if r["score"] is not None]
        zero = sum(1 for s in scored if s <= 0)
        full = sum(1 for s in scored if max_score and s >= max_score - 1e-9)
        groups.append(GroupStats(
            notebook, grade_id, max_score, len(scored), sum(scored) / len(scored) if scored else 0.0,
            zero, len(scored) - zero - full, full,
            sum(1 for r in present if r["status"] in _STOPPED),  # did not run to the end
            sum(1 for r in present if r["status"] == Status.NEEDS_MANUAL_GRADE)))

    notebooks = []
    totals: dict = defaultdict(lambda: [0.0, 0.0])
    for notebook in sorted(by_notebook):
        per_student = by_notebook[notebook]
        submitted = missing = full = crashed = timed_out = unreadable = not_run = 0
        percents = []
        for student, student_rows in per_student.items():
            auto = [r for r in student_rows if r["status"] != Status.NEEDS_MANUAL_GRADE and r["max_score"]]
            earned = sum(r["score"] or 0.0 for r in auto)
            available = sum(r["max_score"] for r in auto)
            totals[student][0] += earned
            totals[student][1] += available
            if all(r["status"] == Status.MISSING for r in student_rows):
                missing += 1
                continue
            submitted += 1
            statuses = {r["status"] for r in student_rows}
            crashed += Status.ERROR in statuses
            timed_out += Status.TIMEOUT in statuses
            unreadable += Status.UNREADABLE in statuses
            not_run += bool(statuses & (NOT_GRADED - {Status.UNREADABLE}))
            if available:
                percents.append(100.0 * earned / available)
                full += earned >= available - 1e-9
        notebooks.append(NotebookStats(notebook, submitted, missing,
                                       sum(percents) / len(percents) if percents else 0.0, full, crashed, timed_out,
                                       unreadable, not_run))

    counts = [MisconceptionCount(notebook, key, len(names), sentences.get((notebook, key), ""),
                                 tuple(sorted(told.get((notebook, key), Counter()).items(), key=lambda m: (-m[1], m[0]))))
              for (notebook, key), names in keys.items()]
    counts.sort(key=lambda m: (-m.students, m.notebook, m.key))
    percent = tuple(100.0 * totals[s][0] / totals[s][1] if totals[s][1] else 0.0 for s in students)
    return ClassReport(assignment, tuple(students), tuple(notebooks), tuple(groups), tuple(counts), percent)


def _sentences(wanted: set) -> dict:
    """``(notebook, key) -> sentence`` for the pairs the rows name (see :func:`summarise`)."""
    try:
        entries = catalogue_module.catalogue(sorted({stem for stem, _ in wanted if _known(stem)}))
        framework = catalogue_module.shared()
    except Exception:  # noqa: BLE001 - the report still counts keys when a check cannot be loaded
        return {}
    return {(stem, key): catalogue_module.sentence_of(stem, key, entries, framework) for stem, key in wanted}


#: Row statuses of cells that did not run to the end (crashed, timed out, or the notebook never ran).
_STOPPED = frozenset({Status.ERROR, Status.TIMEOUT}) | NOT_GRADED


def _known(stem: str) -> bool:
    from autograder import exercises
    return stem in exercises.stems()


# ----------------------------------------------------------------------------- CSV

def write_csv(report: ClassReport, folder: Path) -> tuple:
    """``groups.csv`` (one row per notebook and graded cell) and ``misconceptions.csv``; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    groups_path = folder / f"{report.assignment}-groups.csv"
    with open(groups_path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["notebook", "grade_id", "max_score", "graded", "mean_score", "pass_rate", "no_points",
                      "some_points", "full_points", "did_not_run", "awaiting_manual_grade"])
        for g in report.groups:
            out.writerow([g.notebook, g.grade_id, f"{g.max_score:g}", g.graded, f"{g.mean:.4f}",
                          f"{g.pass_rate:.4f}", g.zero, g.partial, g.full, g.not_run, g.pending])
    mis_path = folder / f"{report.assignment}-misconceptions.csv"
    with open(mis_path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["notebook", "key", "students", "share_of_class", "teaching_sentence", "told"])
        for m in report.misconceptions:
            share = m.students / len(report.students) if report.students else 0.0
            told = " | ".join(f"{message} ({cases} cases)" for message, cases in m.told)
            out.writerow([m.notebook, m.key, m.students, f"{share:.4f}", m.sentence, told])
    return groups_path, mis_path


def write_matches_csv(report: ClassReport, folder: Path) -> Path:
    """``<assignment>-variant-matches.csv``: one row per finding and exercise (student ids are the
    instructor's data: this file stays with the course)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{report.assignment}-variant-matches.csv"
    with open(path, "w", newline="", encoding="utf-8", errors="replace") as handle:
        out = csv.writer(handle)
        out.writerow(["student", "fits_numbers_of", "also_fits", "source_enrolled", "notebook_typed_source", "notebook",
                      "fitting_values", "values_read", "points_with_own_numbers", "points_with_source_numbers",
                      "points_available", "fitting_cases"])
        for m in report.matches:
            for fit in m.exercises:
                out.writerow([m.student, m.source if m.source is not None else "(example numbers, variant 0)",
                              " ".join(other or "(example-numbers)" for other in m.also), "yes" if m.enrolled else "no", "yes" if m.typed else "no", fit.stem,
                              len(fit.fitting), fit.cases, f"{fit.own_points:g}", f"{fit.source_points:g}",
                              f"{fit.available:g}", "; ".join(fit.fitting)])
    return path


# ----------------------------------------------------------------------------- plots

def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def plots(report: ClassReport) -> dict:
    """``name -> (base64 PNG, alt text)``: totals histogram, pass rate per notebook, top misconceptions."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure  # no pyplot: no global state, nothing to close

    out = {}
    figure = Figure(figsize=(6.4, 2.6))
    axes = figure.subplots()
    axes.hist(report.totals, bins=[i * 10 for i in range(11)], color="#3a6fb0", edgecolor="white")
    axes.set_xlabel("autograded points earned (% of those available)")
    axes.set_ylabel("students")
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_title("Students by total autograded score")
    out["totals"] = (_png(figure), "Histogram of the students' total autograded scores in bins of 10 percent; "
                     "the numbers are in the tables of this page.")

    if report.notebooks:
        figure = Figure(figsize=(6.4, 0.28 * len(report.notebooks) + 1.0))
        axes = figure.subplots()
        names = [n.notebook for n in report.notebooks][::-1]
        rates = [100.0 * n.pass_rate for n in report.notebooks][::-1]
        means = [n.mean_percent for n in report.notebooks][::-1]
        positions = range(len(names))
        axes.barh([p + 0.2 for p in positions], means, height=0.4, color="#9ab7e0", label="mean score %")
        axes.barh([p - 0.2 for p in positions], rates, height=0.4, color="#1f4e8c", hatch="//",
                  edgecolor="white", label="full marks %")
        axes.set_yticks(list(positions), names, fontsize=8)
        axes.set_xlim(0, 100)
        axes.set_xlabel("percent of submissions")
        axes.legend(loc="lower right", fontsize=8)
        axes.set_title("Mean score and share with full marks, per notebook")
        out["notebooks"] = (_png(figure), "Horizontal bars per notebook: mean autograded score and share of "
                            "submissions with full marks; the same numbers are in the table 'Notebooks'.")

    top = report.misconceptions[:12]
    if top:
        figure = Figure(figsize=(6.4, 0.32 * len(top) + 1.0))
        axes = figure.subplots()
        labels = [f"{m.notebook[:2]} {m.key}" for m in top][::-1]
        axes.barh(range(len(top)), [m.students for m in top][::-1], color="#b3261e")
        axes.set_yticks(range(len(top)), labels, fontsize=8)
        axes.set_xlabel("students")
        axes.xaxis.get_major_locator().set_params(integer=True)
        axes.set_title("Most frequent misconceptions")
        out["misconceptions"] = (_png(figure), "Bar chart of the most frequent misconceptions by number of "
                                 "students; the table 'What to reteach' lists them with their counts.")
    return out


# ----------------------------------------------------------------------------- HTML

STYLE = """
body{font-family:system-ui,sans-serif;line-height:1.45;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #bbb;padding:.2rem .5rem;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}caption{text-align:left;font-weight:bold;padding:.3rem 0}
.bar{display:flex;width:12rem;height:1rem;border:1px solid #888}.bar span{display:block;height:100%}
.zero{background:#b3261e}.partial{background:repeating-linear-gradient(45deg,#e0a100,#e0a100 3px,#fff3c4 3px,#fff3c4 6px)}
.full{background:#1a7f37}
td code{white-space:nowrap}figure{margin:1rem 0}figure img{max-width:100%}figcaption{font-size:.9rem;color:#444}
.note{color:#444}
"""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


#: Distinct messages shown per key (the CSV has them all).
SHOWN_TOLD = 3


def _told_html(m: MisconceptionCount) -> str:
    """The "what the students were told" cell: the messages the failed cases gave (the checks word some
    per input, so a key may have several), else the key's teaching sentence."""
    if not m.told:
        return html.escape(m.sentence) if m.sentence else "<em>(no sentence on record)</em>"
    many = len(m.told) > 1
    lines = [html.escape(message) + (f" <span class='n'>({cases} cases)</span>" if many else "")
             for message, cases in m.told[:SHOWN_TOLD]]
    if len(m.told) > SHOWN_TOLD:
        lines.append(f"<em>and {len(m.told) - SHOWN_TOLD} other wordings (in the CSV file)</em>")
    return "<br>".join(lines)


def _pct(value: float) -> str:
    return f"{100.0 * value:.0f}%"


def render_html(report: ClassReport, seconds: float | None = None) -> str:
    images = plots(report)
    n = len(report.students)
    title = f"Class report: {report.assignment}"
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body><main><h1>{html.escape(title)}</h1>",
             f"<p>{_count(n, 'student')}, {_count(len(report.notebooks), 'notebook')}. Made "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
             + (f" in {seconds:.1f} s" if seconds is not None else "") + ". Pass rate = share of graded "
             "submissions with full points for that cell; counts of misconceptions are students, each counted "
             "once per notebook.</p>"]

    def figure(name):
        if name in images:
            data, alt = images[name]
            parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(alt, quote=True)}'>"
                         f"<figcaption>{html.escape(alt)}</figcaption></figure>")

    parts.append("<h2 id='reteach'>What to reteach</h2>")
    if report.misconceptions:
        figure("misconceptions")
        parts.append("<table><caption>Misconceptions the failed cases matched, most frequent first</caption>"
                     "<tr><th scope='col'>notebook</th><th scope='col'>key</th><th scope='col'>students</th>"
                     "<th scope='col'>share</th><th scope='col'>what the students were told</th></tr>")
        for m in report.misconceptions:
            parts.append(f"<tr><td>{html.escape(m.notebook)}</td><td><code>{html.escape(m.key)}</code></td>"
                         f"<td class='n'>{m.students}</td><td class='n'>{_pct(m.students / n if n else 0)}</td>"
                         f"<td>{_told_html(m)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No failed case matched a known misconception.</p>")

    parts.append("<h2 id='stopped'>Notebooks that crashed, ran out of time or could not be read</h2>")

    def trouble(nb):
        return nb.crashed + nb.timed_out + nb.unreadable + nb.not_run

    stopped = sorted((nb for nb in report.notebooks if trouble(nb)), key=lambda nb: (-trouble(nb), nb.notebook))
    if stopped:
        parts.append("<table><caption>Submissions that did not run to the end, most first</caption>"
                     "<tr><th scope='col'>notebook</th><th scope='col'>crashed</th><th scope='col'>timed out</th>"
                     f"<th scope='col' title='{html.escape(Status.UNREADABLE.meaning, quote=True)}'>not a readable "
                     "notebook</th><th scope='col'>not run (a limit, a symbolic link, the grader)</th>"
                     "<th scope='col'>submitted</th></tr>")
        for nb in stopped:
            parts.append(f"<tr><td>{html.escape(nb.notebook)}</td><td class='n'>{nb.crashed}</td>"
                         f"<td class='n'>{nb.timed_out}</td><td class='n'>{nb.unreadable}</td>"
                         f"<td class='n'>{nb.not_run}</td><td class='n'>{nb.submitted}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>Every submitted notebook ran to the end.</p>")

    parts.extend(_matches_html(report))

    parts.append("<h2 id='notebooks'>Notebooks</h2>")
    figure("totals")
    figure("notebooks")
    parts.append("<table><caption>Per notebook (autograded points)</caption><tr><th scope='col'>notebook</th>"
                 "<th scope='col'>submitted</th><th scope='col'>missing</th><th scope='col'>mean score</th>"
                 "<th scope='col'>full marks</th></tr>")
    for nb in report.notebooks:
        parts.append(f"<tr><td>{html.escape(nb.notebook)}</td><td class='n'>{nb.submitted}</td>"
                     f"<td class='n'>{nb.missing}</td><td class='n'>{nb.mean_percent:.0f}%</td>"
                     f"<td class='n'>{_pct(nb.pass_rate)}</td></tr>")
    parts.append("</table>")

    parts.append("<h2 id='groups'>Case groups</h2><p class='note'>Distribution bars: red = no points, "
                 "striped amber = some points, green = full points; the counts are in the columns beside.</p>")
    by_notebook: dict = defaultdict(list)
    for g in report.groups:
        by_notebook[g.notebook].append(g)
    for notebook, groups in by_notebook.items():
        parts.append(f"<h3>{html.escape(notebook)}</h3><table><tr><th scope='col'>cell</th>"
                     "<th scope='col'>points</th><th scope='col'>graded</th><th scope='col'>mean</th>"
                     "<th scope='col'>pass rate</th><th scope='col'>no / some / full points</th>"
                     "<th scope='col'>distribution</th><th scope='col'>did not run</th>"
                     "<th scope='col'>awaiting a person</th></tr>")
        for g in groups:
            total = max(g.graded, 1)
            bar = "".join(f"<span class='{css}' style='width:{100.0 * count / total:.1f}%'></span>"
                          for css, count in (("zero", g.zero), ("partial", g.partial), ("full", g.full)))
            label = f"{g.zero} with no points, {g.partial} with some, {g.full} with full points"
            parts.append(f"<tr><td>{html.escape(g.grade_id)}</td><td class='n'>{g.max_score:g}</td>"
                         f"<td class='n'>{g.graded}</td><td class='n'>{g.mean:.2f}</td>"
                         f"<td class='n'>{_pct(g.pass_rate)}</td><td class='n'>{g.zero} / {g.partial} / {g.full}</td>"
                         f"<td><div class='bar' role='img' aria-label='{label}'>{bar}</div></td>"
                         f"<td class='n'>{g.not_run}</td><td class='n'>{g.pending}</td></tr>")
        parts.append("</table>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _fit_text(fit) -> str:
    return (f"<li>{html.escape(fit.stem)}: {len(fit.fitting)} of {fit.cases} values fit "
            f"({html.escape('; '.join(fit.fitting))}); {fit.own_points:g} of {fit.available:g} points with "
            f"the student's own numbers, {fit.source_points:g} with those numbers</li>")


def _matches_html(report: ClassReport) -> list:
    """The section on answers that fit another variant: ids escaped (they are data, not markup)."""
    from autograder.insight.variant_matches import MIN_FITTING

    parts = ["<h2 id='other-numbers'>Answers that fit another student's numbers</h2>",
             "<p class='note'>Each student's exercises with numbers hold their own numbers; the values their "
             "test cells read are judged again with a classmate's numbers and with the example numbers "
             f"(variant 0). Listed: at least {MIN_FITTING} values, over all exercises, that are wrong with the "
             "student's own numbers and right with those. A mistyped number can land on a classmate's numbers "
             "in one exercise; copying usually shows in several. Read the notebooks and talk to the students "
             "before concluding anything; the classmate named is not accused of anything.</p>"]
    copied = report.copied
    if copied:
        parts.append("<table><caption>Students whose answers fit another student's numbers, most exercises "
                     "first</caption><tr><th scope='col'>student</th><th scope='col'>whose numbers the answers "
                     "fit</th><th scope='col'>exercises</th><th scope='col'>values</th>"
                     "<th scope='col'>what fits</th></tr>")
        for m in copied:
            who = html.escape(m.source)
            if m.typed:
                who += " <em>(the student's notebook typed this id as its STUDENT_ID)</em>"
            if not m.enrolled:
                who += " <em>(not a member of the class)</em>"
            if m.also:
                who += (" <em>(the same answers fit the numbers of "
                        + ", ".join(html.escape(other) if other is not None else "the example numbers"
                                    for other in m.also) + ")</em>")
            parts.append(f"<tr><td>{html.escape(m.student)}</td><td>{who}</td><td class='n'>{len(m.exercises)}</td>"
                         f"<td class='n'>{m.values}</td><td><ul>{''.join(_fit_text(f) for f in m.exercises)}"
                         "</ul></td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No student's answers fit another student's numbers.</p>")
    examples = report.example_numbers
    if examples:
        parts.append("<table><caption>Students whose answers fit the example numbers (variant 0, published in the "
                     "course's documents) instead of their own</caption><tr><th scope='col'>student</th>"
                     "<th scope='col'>exercises</th><th scope='col'>values</th><th scope='col'>what fits</th></tr>")
        for m in examples:
            parts.append(f"<tr><td>{html.escape(m.student)}</td><td class='n'>{len(m.exercises)}</td>"
                         f"<td class='n'>{m.values}</td><td><ul>{''.join(_fit_text(f) for f in m.exercises)}"
                         "</ul></td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No student's answers fit the example numbers instead of their own.</p>")
    return parts


def variant_matches(course_dir: str | Path, assignment: str, students, stored: dict | None) -> tuple:
    """The findings of :mod:`autograder.insight.variant_matches` for the class: ``stored`` as
    :func:`autograder.insight.results.read_graded` collected it, or (rows from a results file) read
    from the autograded notebooks; the class is the gradebook's students and the rows'."""
    from autograder.assignment import ASSIGNMENTS, notebook_stems
    from autograder.insight import variant_matches as matching
    from autograder.insight.results import read_stored
    from course.variants import varies

    stems = [stem for stem in notebook_stems(assignment=assignment) if varies(stem)] \
        if assignment in ASSIGNMENTS else sorted({stem for _, stem in (stored or {})})
    if not stems:
        return ()
    members = matching.class_members(course_dir)
    if stored is None:
        try:
            stored = read_stored(course_dir, assignment, sorted(set(students) | set(members)), stems)
        except Exception:  # noqa: BLE001 - no course directory to read: the rows alone hold no values
            stored = {}
    # The numbers every member was graded with: drawn in the release's course and term, as the grader drew them.
    course_term = None
    if assignment in ASSIGNMENTS:
        from autograder.variant_listing import listing_course_term
        course_term, _ = listing_course_term(Path(course_dir), assignment)
    return matching.find_matches(stored, set(members) | set(students), stems, course_term)


def build(course_dir: str | Path, assignment: str, *, results: str | Path | None = None,
          output: str | Path | None = None, use_gradebook: bool = True) -> dict:
    """Read the results, write ``<output>/<assignment>-report.html`` and the CSV files.

    Returns ``{"html", "groups_csv", "misconceptions_csv", "matches_csv", "report", "seconds"}``.
    """
    from autograder.insight.results import load_rows

    started = time.perf_counter()
    stored: dict | None = {} if results is None else None
    told: dict | None = {} if results is None else None
    rows = load_rows(course_dir, assignment, results, use_gradebook=use_gradebook, stored=stored, told=told)
    report = summarise(rows, assignment, told=told)
    report = dataclasses.replace(report, matches=variant_matches(course_dir, assignment, report.students, stored))
    folder = Path(output) if output is not None else Path(course_dir) / "reports"
    groups_csv, mis_csv = write_csv(report, folder)
    matches_csv = write_matches_csv(report, folder)
    page = folder / f"{assignment}-report.html"
    seconds = time.perf_counter() - started
    page.write_text(render_html(report, seconds), encoding="utf-8")
    return {"html": page, "groups_csv": groups_csv, "misconceptions_csv": mis_csv, "matches_csv": matches_csv,
            "report": report,
            "seconds": time.perf_counter() - started}
