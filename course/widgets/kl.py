"""KL explorer: exact KL in both directions and the k1, k2, k3 sample estimators."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.ticker import NullLocator

from ._figure import FULL, OKABE_ITO, STYLE, TEXT_SHADES, FigureImage
from ._format import format_number
from ._kl_model import (ESTIMATORS, KL_PRESET_GROUPS, KL_PRESETS, SAMPLE_SIZES, KLState, kl_state,
                        parse_distribution)
from ._view import Explorer, column, set_value, value_label, wrapping_row

COLOURS = {"k1": OKABE_ITO["blue"], "k2": OKABE_ITO["orange"], "k3": OKABE_ITO["green"]}
# Text in these hues uses shades with at least 4.5:1 contrast on white.
TEXT_COLOURS = {"k1": TEXT_SHADES["blue"], "k2": TEXT_SHADES["orange"], "k3": TEXT_SHADES["green"]}
# Each estimator is told apart by line style, marker and hatch as well as by colour.
LINE_STYLES = {"k1": "-", "k2": "--", "k3": ":"}
MARKERS = {"k1": "o", "k2": "s", "k3": "^"}
HATCHES = {"k1": None, "k2": "//", "k3": ".."}
FORMULAS = {"k1": "&minus;log r", "k2": "(log r)<sup>2</sup>/2", "k3": "(r &minus; 1) &minus; log r"}
PLAIN_FORMULAS = {"k1": "-log r", "k2": "(log r)^2/2", "k3": "(r-1) - log r"}
NAMES = {
    "kl_qp": "KL(q&#8214;p), the estimators' target:",
    "kl_pq": "KL(p&#8214;q), the other direction:",
    "weight_mean": "E<sub>q</sub>[p/q]:",
}
# Table columns: state attribute, heading, CSS suffix.
COLUMNS = (
    ("sample_mean", "mean of the draws", "mean"),
    ("sample_se", "&plusmn; std. error", "se"),
    ("expected", "exact E<sub>q</sub>[k]", "expected"),
    ("bias", "bias E<sub>q</sub>[k] &minus; KL", "bias"),
    ("sample_min", "smallest draw", "min"),
    ("negative_fraction", "share of draws &lt; 0", "negative"),
)
CUSTOM = "custom"


class KLExplorer(Explorer):
    """Exact KL between p and q against the k1, k2, k3 estimates from draws of q.

    Build it with :func:`kl_explorer`. ``controls`` and ``labels`` are dicts
    of the widgets; ``state`` is the current :class:`~course.widgets.KLState`.
    """

    css_prefix = "m6-kl"

    def __init__(self, preset: str = "k_estimators", *, samples: int = 1000, seed: int = 0):
        start = KL_PRESETS[preset]
        options = [(p.label, key) for key, p in KL_PRESETS.items()] + [
            ("Custom: edit p and q", CUSTOM)]
        self._suspend = False
        self.controls = {
            "preset": widgets.Dropdown(options=options, value=preset, description="preset",
                                       layout=widgets.Layout(width=FULL, max_width="560px")),
            "p": widgets.Text(value=start.p_text, description="p", continuous_update=False,
                              tooltip="p: probabilities such as 0.6, 0.4 or 1/3 2/3",
                              layout=widgets.Layout(flex="1 1 240px", min_width="220px",
                                                    max_width="300px")),
            "q": widgets.Text(value=start.q_text, description="q (draws)",
                              continuous_update=False,
                              tooltip="q, the distribution the draws come from",
                              layout=widgets.Layout(flex="1 1 240px", min_width="220px",
                                                    max_width="300px")),
            "samples": widgets.SelectionSlider(
                options=[(str(n), n) for n in SAMPLE_SIZES], value=samples,
                description="draws N", continuous_update=False, tooltip="number of draws N",
                layout=widgets.Layout(flex="1 1 340px", min_width="250px", max_width="420px")),
            "seed": widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed",
                                           tooltip="random seed of the draws",
                                           layout=widgets.Layout(width="160px")),
        }
        for key, control in self.controls.items():
            control.add_class(f"m6-kl-{key}")
        self._outcomes = start.outcomes
        self._names = dict(NAMES)
        self.labels = {key: value_label(f"m6-kl-{key.replace('_', '-')}") for key in NAMES}
        # One row per statistic, one column per estimator: four columns fit a narrow notebook
        # (seven did not), and reading across a row compares the estimators.
        cells = [widgets.HTML('<div style="line-height: 1.3"><b>statistic</b></div>')]
        for k in ESTIMATORS:
            cells.append(widgets.HTML(
                f'<div style="line-height: 1.3"><span class="m6-kl-name-{k}" style="color: '
                f'{TEXT_COLOURS[k]}; font-weight: 600">{k}</span> = {FORMULAS[k]}</div>'))
        for attribute, heading, suffix in COLUMNS:
            cells.append(widgets.HTML(f'<div style="line-height: 1.3">{heading}</div>'))
            for k in ESTIMATORS:
                key = f"{attribute}.{k}"
                self.labels[key] = value_label(f"m6-kl-{suffix}-{k}")
                self._names[key] = ""
                cells.append(self.labels[key])
        # Columns share the width and never shrink below a readable number; a very narrow
        # notebook (200% zoom beside the file browser) scrolls the table sideways instead of
        # cutting its numbers.
        self.table = widgets.GridBox(cells, layout=widgets.Layout(
            grid_template_columns="minmax(8.5em, 1.2fr) repeat(3, minmax(6.8em, 1fr))",
            grid_gap="2px 10px", margin="6px 0", width=FULL, max_width="640px",
            overflow="auto hidden"))
        self.table.add_class("m6-kl-table")
        self.reasons = widgets.HTML()
        self.reasons.add_class("m6-kl-reasons")
        self.lesson = widgets.HTML()
        self.lesson.add_class("m6-kl-lesson")
        # Two pictures: the one that depends on p and q only is not redrawn when the number
        # of draws or the seed moves.
        self.outcome_plot = FigureImage(5.3, 3.2)
        self.plot = FigureImage(4.4, 3.2)
        self._built_for = None
        self._build_running_figure()
        self.counts = widgets.HTML()
        self.counts.add_class("m6-kl-counts")
        # A p or q that cannot be read is explained right under the two fields, not below the plots.
        self.error_box = widgets.HTML(layout=widgets.Layout(max_width="640px"))
        self.error_box.add_class("m6-kl-error")
        rows = [
            self.controls["preset"],
            wrapping_row([self.controls["p"], self.controls["q"]]),
            self.error_box,
            wrapping_row([self.controls["samples"], self.controls["seed"]]),
            self.lesson,
            widgets.VBox([self.labels[key] for key in NAMES]),
            self.table,
            self.reasons,
            self.counts,
            wrapping_row([column([self.outcome_plot.view], basis="420px", min_width="250px",
                                 max_width="520px"),
                          column([self.plot.view], basis="360px", min_width="250px",
                                 max_width="430px")]),
        ]
        super().__init__("KL explorer: draws x ~ q, ratio r = p(x)/q(x)", rows)
        self.controls["preset"].observe(self._on_preset, names="value")
        for key in ("p", "q", "samples", "seed"):
            self.controls[key].observe(self._on_change, names="value")
        self.refresh()

    # ---------------------------------------------------------------- model
    def select(self, preset: str) -> None:
        """Switch to a preset (same as choosing it in the dropdown)."""
        self.controls["preset"].value = preset

    def _on_preset(self, change) -> None:
        if change["new"] == CUSTOM:
            return
        chosen = KL_PRESETS[change["new"]]
        self._suspend = True
        try:
            self.controls["p"].value = chosen.p_text
            self.controls["q"].value = chosen.q_text
        finally:
            self._suspend = False
        self.refresh()

    def _on_change(self, change=None) -> None:
        if self._suspend:
            return
        if change is not None and change["name"] == "value" and change["owner"] in (
                self.controls["p"], self.controls["q"]):
            preset = self.controls["preset"].value
            if preset != CUSTOM:
                chosen = KL_PRESETS[preset]
                if (self.controls["p"].value, self.controls["q"].value) != (
                        chosen.p_text, chosen.q_text):
                    self._suspend = True
                    try:
                        self.controls["preset"].value = CUSTOM
                    finally:
                        self._suspend = False
        self.refresh()

    def parameters(self) -> dict:
        """The current controls as keyword arguments of :func:`kl_state`."""
        preset = self.controls["preset"].value
        p = parse_distribution(self.controls["p"].value, "p")
        q = parse_distribution(self.controls["q"].value, "q")
        outcomes = KL_PRESETS[preset].outcomes if preset != CUSTOM else None
        if outcomes is not None and len(outcomes) != p.size:
            outcomes = None
        return {"p": p, "q": q, "samples": int(self.controls["samples"].value),
                "seed": int(self.controls["seed"].value), "outcomes": outcomes}

    def _compute(self) -> KLState:
        return kl_state(**self.parameters())

    # ---------------------------------------------------------------- view
    def _explanations(self) -> list[widgets.HTML]:
        return [self.reasons, self.lesson, self.counts]

    def _show(self, s: KLState) -> None:
        # Figure first: once the numbers show the new state, the picture already does.
        self._draw(s)
        r = s.reasons
        for key in NAMES:
            set_value(self.labels[key], NAMES[key], getattr(s, key), r.get(key))
        # One line per column and reason, naming the estimators it applies to.
        explained: dict[tuple[str, str, str], list[str]] = {}
        bias = s.bias
        for k in ESTIMATORS:
            for attribute, heading, _ in COLUMNS:
                key = f"{attribute}.{k}"
                value = bias[k] if attribute == "bias" else getattr(s, attribute)[k]
                reason = r.get(key)
                if attribute == "bias" and not math.isfinite(value):
                    reason = "KL or E_q[k] is infinite, so the bias is undefined"
                if not math.isfinite(value):
                    line = (heading, format_number(value), reason or "not a finite number")
                    explained.setdefault(line, []).append(k)
                digits = 3 if attribute == "negative_fraction" else 6
                set_value(self.labels[key], "", value, explained=True, digits=digits)
        self.reasons.value = "".join(
            f'<div class="m6-reason" style="color: #8a3b00; font-size: 90%; line-height: 1.35">'
            f"{heading} = {html.escape(shown)} for {', '.join(ks)}: {html.escape(reason)}</div>"
            for (heading, shown, reason), ks in explained.items())
        preset = self.controls["preset"].value
        lesson = KL_PRESETS[preset].lesson if preset != CUSTOM else "Your own p and q."
        self.lesson.value = f"<i>{html.escape(lesson)}</i>"
        self.status.value = ""

    def plots(self) -> list[FigureImage]:
        return [self.outcome_plot, self.plot]

    def _build_outcome_figure(self, size: int) -> None:
        """p and q, and the estimators' value at each outcome: depends on p and q only."""
        fig = self.outcome_plot.figure
        fig.clear()
        with matplotlib.rc_context(STYLE):
            ax_dist, ax_k = fig.subplots(1, 2, gridspec_kw={"width_ratios": [0.8, 1.25]})
            fig.subplots_adjust(left=0.11, right=0.99, bottom=0.22, top=0.88, wspace=0.38)
            x = np.arange(size)
            zero = np.zeros(size)
            self._dist_bars = {
                "p": ax_dist.bar(x - 0.2, zero, 0.4, color=OKABE_ITO["purple"], label="p"),
                "q": ax_dist.bar(x + 0.2, zero, 0.4, color=OKABE_ITO["sky"], hatch="..",
                                 edgecolor="white", label="q (draws)"),
            }
            ax_dist.set_ylim(0, 1.3)
            ax_dist.set_ylabel("probability")
            ax_dist.set_title("p and q")
            ax_dist.legend(loc="upper center", frameon=False, ncols=2, fontsize=8)
            width = 0.26
            self._k_bars, self._k_texts = {}, {}
            for j, k in enumerate(ESTIMATORS):
                offset = (j - 1) * width
                self._k_bars[k] = ax_k.bar(x + offset, zero, width, color=COLOURS[k], label=k,
                                           hatch=HATCHES[k], edgecolor="black", linewidth=0.5)
                # Vertical, so the labels of neighbouring bars never overlap.
                self._k_texts[k] = [ax_k.text(i + offset, 0, "", ha="center", fontsize=7,
                                              rotation=90) for i in x]
            ax_k.axhline(0, color="black", lw=0.8)
            ax_k.set_ylabel("value at one draw")
            ax_k.set_title("k1, k2, k3 at each outcome")
            ax_k.legend(loc="upper right", frameon=False, ncols=3, fontsize=8)
            self._outcome_axes = (ax_dist, ax_k)

    def _build_running_figure(self) -> None:
        """Running means and their spread: depends on p, q, the number of draws and the seed."""
        fig = self.plot.figure
        with matplotlib.rc_context(STYLE):
            ax_run = fig.add_axes((0.15, 0.22, 0.82, 0.66))
            self._run_lines, self._bands = {}, {}
            for k in ESTIMATORS:
                (self._run_lines[k],) = ax_run.plot([], [], color=COLOURS[k], lw=1.6,
                                                    ls=LINE_STYLES[k], marker=MARKERS[k],
                                                    markersize=4, markevery=0.1,
                                                    label=f"mean of {k}")
                self._bands[k] = None
            self._kl_line = ax_run.axhline(0, color="black", ls="-.", lw=1.2,
                                           label="exact KL(q\u2016p)")
            ax_run.axhline(0, color="#666666", lw=0.6)
            ax_run.set_xscale("log")
            # Decades only: minor ticks of a log axis cost drawing time and say little here.
            ax_run.xaxis.set_minor_locator(NullLocator())
            ax_run.set_xlabel("number of draws n (log scale)")
            ax_run.set_ylabel("running estimate")
            ax_run.set_title("running means, band = \u00b12 std. errors")
            # A light frame keeps the legend readable over the early, wide bands.
            ax_run.legend(loc="upper right", fontsize=8, ncols=2, frameon=True, framealpha=0.9,
                          edgecolor="none")
            # Notes appear only when the curves stop early, leaving the right side empty.
            self._run_note = ax_run.text(0.97, 0.5, "", transform=ax_run.transAxes, fontsize=8,
                                         ha="right", va="center", color=TEXT_SHADES["vermillion"])
            self._ax_run = ax_run

    def _draw(self, s: KLState) -> None:
        counts = np.bincount(s.draws, minlength=s.p.size)
        self.counts.value = "Draws per outcome: " + ", ".join(
            f"{name}: <b>{counts[i]}</b>" for i, name in enumerate(s.outcomes))
        distributions = (tuple(s.p), tuple(s.q), s.outcomes)
        self._draw_outcomes(s)
        self._draw_running(s)
        self.outcome_plot.render(key=distributions)
        self.plot.render(key=(distributions, s.samples, s.seed))

    def _draw_outcomes(self, s: KLState) -> None:
        size = s.p.size
        if self._built_for != size:
            self._build_outcome_figure(size)
            self._built_for = size
        ax_dist, ax_k = self._outcome_axes
        for key, dist in (("p", s.p), ("q", s.q)):
            for rect, v in zip(self._dist_bars[key], dist):
                rect.set_height(float(v))
        ax_dist.set_xticks(np.arange(size), s.outcomes)
        labels = []
        for i, name in enumerate(s.outcomes):
            ratio = "never drawn" if not s.q[i] > 0 else f"r = {s.ratio[i]:.3g}"
            labels.append(f"{name}\n{ratio}")
        ax_k.set_xticks(np.arange(size), labels)
        finite_values = [v for k in ESTIMATORS for v in s.per_outcome[k] if math.isfinite(v)]
        low = min([0.0, *finite_values])
        high = max([0.05, *finite_values])
        span = high - low
        top = high + 0.75 * span  # head room for the legend and the vertical labels
        infinite_height = high + 0.15 * span
        for k in ESTIMATORS:
            for rect, text, v in zip(self._k_bars[k], self._k_texts[k], s.per_outcome[k]):
                x = text.get_position()[0]
                if math.isnan(v):  # q = 0: never drawn, no value to show
                    rect.set_height(0.0)
                    text.set_text("")
                elif math.isinf(v):
                    # An infinite bar is drawn to the top, hatched, and labelled inf.
                    rect.set_height(infinite_height)
                    rect.set_hatch("xx")
                    text.set_position((x, infinite_height))
                    text.set_va("bottom")
                    text.set_text("inf")
                else:
                    rect.set_height(float(v))
                    rect.set_hatch(HATCHES[k])
                    text.set_position((x, float(v)))
                    text.set_va("bottom" if v >= 0 else "top")
                    text.set_text(f"{v:.3f}")
        ax_k.set_ylim(low - 0.12 * span, top)

    def _draw_running(self, s: KLState) -> None:
        ax_run = self._ax_run
        n_max = s.samples
        # About 300 log-spaced points draw the same curve as all n, much faster.
        idx = np.unique(np.geomspace(1, n_max, num=min(n_max, 300)).astype(np.int64)) - 1
        n = idx + 1.0
        shown = []
        with matplotlib.rc_context(STYLE):
            for k in ESTIMATORS:
                mean = s.running_mean[k][idx]
                spread = s.running_se[k][idx]
                self._run_lines[k].set_data(n, mean)
                if self._bands[k] is not None:
                    self._bands[k].remove()
                ok = np.isfinite(mean) & np.isfinite(spread)
                self._bands[k] = ax_run.fill_between(
                    n, np.where(ok, mean - 2 * spread, np.nan),
                    np.where(ok, mean + 2 * spread, np.nan), color=COLOURS[k], alpha=0.18, lw=0)
                shown.extend(mean[np.isfinite(mean)])
        if math.isfinite(s.kl_qp):
            self._kl_line.set_ydata([s.kl_qp, s.kl_qp])
            self._kl_line.set_visible(True)
            shown.append(s.kl_qp)
        else:
            self._kl_line.set_visible(False)
        ax_run.set_xlim(1, max(n_max, 2))
        if shown:
            lo, hi = min(0.0, min(shown)), max(shown)
            pad = 0.15 * max(hi - lo, 0.05)
            ax_run.set_ylim(lo - pad, hi + 2.2 * pad)
        notes = []
        if not math.isfinite(s.kl_qp):
            notes.append("exact KL(q\u2016p) = inf: no line")
        if any(math.isinf(s.sample_mean[k]) for k in ESTIMATORS):
            first = int(np.argmax(~np.isfinite(s.running_mean["k1"]))) + 1
            notes.append(f"running means are +inf from draw {first} on")
        self._run_note.set_text("\n".join(notes))
        self._describe(s, notes)

    def _describe(self, s: KLState, notes: list[str]) -> None:
        """Text alternatives of both pictures: what they plot, with the values at the end."""
        outcomes = "; ".join(
            f"{name}: p {s.p[i]:.3g}, q {s.q[i]:.3g}, "
            + ("never drawn" if not s.q[i] > 0 else
               ", ".join(f"{k} {format_number(s.per_outcome[k][i], 3)}" for k in ESTIMATORS))
            for i, name in enumerate(s.outcomes))
        self.outcome_plot.describe(
            "Left: bars of p and q per outcome. Right: the value of k1, k2 and k3 at one draw of "
            f"each outcome (k1 solid, k2 hatched //, k3 dotted). {outcomes}.")
        finals = ", ".join(f"{k} {format_number(s.sample_mean[k], 4)}" for k in ESTIMATORS)
        self.plot.describe(
            "Running means of k1 (solid line, circles), k2 (dashed, squares) and k3 (dotted, "
            f"triangles) over n = 1 to {s.samples} draws, log scale, with bands of two standard "
            f"errors; dash-dot line: exact KL(q||p) = {format_number(s.kl_qp, 4)}. After "
            f"{s.samples} draws: {finals}." + (" " + " ".join(notes) if notes else ""))


def kl_explorer(preset: str = "k_estimators", *, samples: int = 1000, seed: int = 0) -> KLExplorer:
    """Build the KL explorer.

    Parameters
    ----------
    preset : str
        ``"k_estimators"`` (draws with r = 3 or 1/3), ``"support"`` (support
        case A: p has mass where q never draws; case B is in the dropdown), or any
        key of :data:`KL_PRESETS`. Every preset is the explorer's own example;
        a notebook's p and q can be typed into the boxes after answering.
    samples : int
        Starting number of draws (one of :data:`SAMPLE_SIZES`).
    seed : int
        Seed of the draws, so the explorer shows the same numbers every time.

    Returns
    -------
    KLExplorer
        An ipywidgets container; display it as the last expression of a cell.
    """
    key = KL_PRESET_GROUPS.get(preset, preset)
    if key not in KL_PRESETS:
        raise ValueError(
            f"preset must be one of {sorted(set(KL_PRESETS) | set(KL_PRESET_GROUPS))}, got {preset!r}")
    if samples not in SAMPLE_SIZES:
        raise ValueError(f"samples must be one of {SAMPLE_SIZES}, got {samples!r}")
    return KLExplorer(key, samples=samples, seed=seed)
