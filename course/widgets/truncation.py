"""Truncation explorer: what temperature, bans, top-k and top-p do to one token's log-prob."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import matplotlib
import numpy as np

from ._figure import OKABE_ITO, STYLE, FigureImage
from ._format import format_number
from ._truncation_model import GRIDS, TruncationState, _truncation_state, preset_named, truncation_preset_state
from ._view import (Explorer, column, control_layout, float_slider, int_slider, set_value,
                    slider_value, value_label, wrapping_row)

NAMES = {
    "support": "Retained support S:",
    "support_mass": "Z<sub>S</sub> (mass of S before renormalising):",
    "base_prob": "base p(chosen):",
    "behaviour_prob": "behaviour p(chosen):",
    "base_logprob": "base log-prob:",
    "tempered_logprob": "tempered log-prob (after T, before truncation):",
    "behaviour_logprob": "behaviour log-prob:",
    "logprob_shift": "behaviour &minus; tempered log-prob:",
    "log_correction": "&minus;log Z<sub>S</sub>:",
    "ratio_error": "ratio error over n positions, 1/Z<sub>S</sub><sup>n</sup>:",
}


def ratio_error_name(positions: int) -> str:
    return f"ratio error over n = {positions} positions, 1/Z<sub>S</sub><sup>n</sup>:"


class TruncationExplorer(Explorer):
    """Base vs behaviour distribution under temperature, bans, top-k and top-p.

    Build it with :func:`truncation_explorer`. ``controls`` and ``labels``
    are dicts of the widgets; ``state`` is the current
    :class:`~course.widgets.TruncationState`.
    """

    css_prefix = "m6-trunc"
    _names = NAMES

    def __init__(self, preset: str = "default", **settings):
        # Validate everything once, through the model, before building controls. The logits are the
        # preset's, and stay so: the explorer takes none from outside (see _truncation_model).
        self._preset = preset_named(preset)
        first = truncation_preset_state(preset, **settings)
        self._logits = np.array(first.logits, dtype=np.float64)
        self._tokens = first.tokens
        size = len(self.tokens)
        self.controls = {
            "temperature": float_slider("temperature T", "m6-trunc-temperature", min=0.05, max=3.0,
                                        step=GRIDS["temperature"], value=first.temperature),
            "top_k": int_slider("top-k (0 = off)", "m6-trunc-top-k", min=0, max=size,
                                value=first.top_k or 0),
            # min 0 keeps every step an exact hundredth in the front end (0.80, not
            # 0.8000000000000002); 0 itself is moved up to 0.01 (top-p must be positive).
            "top_p": float_slider("top-p", "m6-trunc-top-p", min=0.0, max=1.0, step=GRIDS["top_p"],
                                  value=first.top_p),
            "min_tokens_to_keep": int_slider("min_tokens_to_keep", "m6-trunc-min-tokens", min=1,
                                             max=size, value=first.min_tokens_to_keep),
            "positions": int_slider("positions n", "m6-trunc-positions", min=1, max=32,
                                    value=first.positions),
            "banned": widgets.SelectMultiple(
                options=[(t, i) for i, t in enumerate(self.tokens)], value=first.banned,
                description="banned", rows=min(size, 5), style={"description_width": "140px"},
                tooltip="banned tokens (Ctrl-click to select several)", layout=control_layout()),
            "chosen": widgets.Dropdown(
                options=[(t, i) for i, t in enumerate(self.tokens)], value=first.chosen,
                description="chosen token", style={"description_width": "140px"},
                tooltip="the sampled token whose log-probabilities are shown",
                layout=control_layout()),
        }
        self.controls["banned"].add_class("m6-trunc-banned")
        self.controls["chosen"].add_class("m6-trunc-chosen")
        self.labels = {key: value_label(f"m6-trunc-{key.replace('_', '-')}") for key in NAMES}
        self.notes = widgets.HTML()
        self.notes.add_class("m6-trunc-notes")

        self.plot = FigureImage(7.6, 3.3)
        self._build_figure(size)
        controls = column(list(self.controls.values()), basis="360px", min_width="250px",
                          max_width="450px")
        values = column([*self.labels.values(), self.notes], basis="360px", min_width="250px")
        super().__init__(self._preset.title or "Truncation explorer",
                         [wrapping_row([controls, values]), self.plot.view])
        self._observe_controls()
        self.refresh()

    # ---------------------------------------------------------------- model
    @property
    def logits(self) -> np.ndarray:
        """The preset's base logits (a copy: the explorer's own example, which cannot be replaced)."""
        return self._logits.copy()

    @property
    def tokens(self) -> tuple:
        """The preset's token names."""
        return self._tokens

    def parameters(self) -> dict:
        """The current controls as keyword arguments of :func:`truncation_preset_state`."""
        c = self.controls
        return {
            "temperature": slider_value(c["temperature"]),
            "top_k": int(c["top_k"].value) or None,
            "top_p": slider_value(c["top_p"]),
            "min_tokens_to_keep": int(c["min_tokens_to_keep"].value),
            "banned": tuple(c["banned"].value),
            "chosen": int(c["chosen"].value),
            "positions": int(c["positions"].value),
        }

    def _compute(self) -> TruncationState:
        return _truncation_state(self._logits, self._tokens, **self.parameters())

    def _on_change(self, change=None) -> None:
        if change is not None and change["owner"] is self.controls["top_p"] and change["new"] < 0.01:
            self.controls["top_p"].value = 0.01  # the smallest top-p; triggers the refresh
            return
        super()._on_change(change)

    # ---------------------------------------------------------------- view
    def _explanations(self) -> list[widgets.HTML]:
        return [self.notes]

    def _build_figure(self, size: int) -> None:
        with matplotlib.rc_context(STYLE):
            fig = self.plot.figure
            ax = fig.add_axes((0.08, 0.27, 0.9, 0.56))
            self._title = fig.text(0.01, 0.985, "", ha="left", va="top", fontsize=10)
            x = np.arange(size)
            self._x = x
            self._shade = [ax.axvspan(i - 0.5, i + 0.5, color="#e6e6e6", zorder=0, lw=0)
                           for i in x]
            zero = np.zeros(size)
            self._bars = {
                "base": ax.bar(x, zero, 0.4, color=OKABE_ITO["blue"], label="base softmax(z)"),
                "tempered": ax.bar(x, zero, 0.27, color=OKABE_ITO["sky"], hatch="//",
                                   edgecolor="white", label="after temperature"),
                "behaviour": ax.bar(x, zero, 0.4, color=OKABE_ITO["orange"], hatch="..",
                                    edgecolor="black", linewidth=0.6,
                                    label="behaviour (sampled from)"),
            }
            self._texts = {
                key: [ax.text(i, 0, "", ha="center", va="bottom", fontsize=7.5) for i in x]
                for key in ("base", "behaviour")
            }
            ax.set_xticks(x)
            ax.set_xlim(-0.5, size - 0.5)
            ax.set_ylabel("probability")
            ax.set_xlabel("token (grey background: removed from the support)", labelpad=2)
            self._legend_handles = self._bars
            self._ax = ax

    def _layout_bars(self, show_tempered: bool) -> None:
        if getattr(self, "_shown_tempered", None) is show_tempered:
            return
        self._shown_tempered = show_tempered
        groups = ["base", "tempered", "behaviour"] if show_tempered else ["base", "behaviour"]
        width = 0.8 / len(groups)
        for g, key in enumerate(groups):
            offset = (g - (len(groups) - 1) / 2) * width
            for i, rect in enumerate(self._bars[key]):
                rect.set_x(i + offset - width / 2)
                rect.set_width(width)
            if key in self._texts:
                for i, text in enumerate(self._texts[key]):
                    text.set_x(i + offset)
        for rect in self._bars["tempered"]:
            rect.set_visible(show_tempered)
        handles = [self._bars[key] for key in groups]
        with matplotlib.rc_context(STYLE):
            self._ax.legend(handles, [h.get_label() for h in handles], loc="lower right",
                            frameon=False, ncols=len(groups), bbox_to_anchor=(1.0, 1.0),
                            borderaxespad=0.2)

    def _show(self, s: TruncationState) -> None:
        # Figure first: once the numbers show the new state, the picture already does.
        self._draw(s)
        r = s.reasons
        lab = self.labels
        kept = f"{', '.join(s.support_tokens) or '(empty)'} ({int(s.support.sum())} of {len(s.tokens)})"
        set_value(lab["support"], NAMES["support"], kept if s.error is None else "NaN",
                  r.get("support_mass") if s.error else None)
        set_value(lab["support_mass"], NAMES["support_mass"], s.support_mass, r.get("support_mass"))
        set_value(lab["base_prob"], NAMES["base_prob"].replace("chosen", html.escape(s.chosen_token)),
                  s.base_prob)
        set_value(lab["behaviour_prob"],
                  NAMES["behaviour_prob"].replace("chosen", html.escape(s.chosen_token)),
                  s.behaviour_prob, r.get("behaviour_prob"))
        for key in ("base_logprob", "tempered_logprob", "behaviour_logprob", "logprob_shift",
                    "log_correction"):
            set_value(lab[key], NAMES[key], getattr(s, key), r.get(key))
        set_value(lab["ratio_error"], ratio_error_name(s.positions), s.ratio_error,
                  r.get("ratio_error"))
        notes = list(s.notes)
        if s.error is None and math.isfinite(s.ratio_error):
            notes.append(f"Using base instead of behaviour log-probs at {s.positions} positions that "
                         f"each keep Z_S = {format_number(s.support_mass, 4)} multiplies the ratio "
                         f"by {format_number(s.ratio_error, 4)} (or its inverse).")
        self.notes.value = "".join(
            f'<div style="font-size: 90%; line-height: 1.35; margin-top: 4px">{html.escape(n)}</div>'
            for n in notes)
        self.status.value = "" if s.error is None else (
            f'<span class="m6-reason" style="color: #8a3b00">{html.escape(s.error)}</span>')

    def _draw(self, s: TruncationState) -> None:
        show_tempered = s.temperature != 1.0
        self._layout_bars(show_tempered)
        behaviour = np.nan_to_num(s.behaviour_probs, nan=0.0)
        for key, values in (("base", s.base_probs), ("tempered", s.tempered_probs),
                            ("behaviour", behaviour)):
            for rect, v in zip(self._bars[key], values):
                rect.set_height(float(v))
        for key, values in (("base", s.base_probs), ("behaviour", s.behaviour_probs)):
            for text, v in zip(self._texts[key], values):
                text.set_y(0.0 if not math.isfinite(v) else float(v))
                text.set_text("" if (key == "behaviour" and not v > 0) else format_number(v, 3))
        for shade, kept in zip(self._shade, s.support):
            shade.set_visible(not kept)
        top = float(np.nanmax(np.concatenate([s.base_probs, s.tempered_probs, behaviour])))
        self._ax.set_ylim(0, max(top, 0.05) * 1.15)
        labels = []
        for i, token in enumerate(s.tokens):
            why = s.removed_by[i]
            status = "kept" if s.support[i] else f"cut: {why}"
            mark = "\n(chosen)" if i == s.chosen else ""
            labels.append(f"{token}\n{status}{mark}")
        self._ax.set_xticks(self._x, labels)
        for i, tick in enumerate(self._ax.get_xticklabels()):
            tick.set_fontweight("bold" if i == s.chosen else "normal")
        if s.error is None:
            title = (f"T = {s.temperature:g}, top-k = {s.top_k or 'off'}, top-p = {s.top_p:.2f}: "
                     f"S keeps {int(s.support.sum())} of {len(s.tokens)} tokens, "
                     f"Z_S = {format_number(s.support_mass)}")
        else:
            title = "No behaviour distribution: " + s.error
        self._title.set_text(title)
        kept_text = ", ".join(s.support_tokens) or "none"
        self.plot.describe(
            "Bar chart of each token's base probability and behaviour probability (after "
            f"temperature, bans, top-k and top-p). {title}. Kept: {kept_text}. "
            + "; ".join(f"{tok}: base {format_number(b, 3)}, behaviour "
                        f"{format_number(float(np.nan_to_num(h)), 3)}"
                        + ("" if s.support[i] else f" (cut by {s.removed_by[i]})")
                        for i, (tok, b, h) in enumerate(zip(s.tokens, s.base_probs,
                                                            s.behaviour_probs))))
        # The picture does not depend on n: moving that slider only changes the labels.
        self.plot.render(key=(s.temperature, s.top_k, s.top_p, s.min_tokens_to_keep, s.banned,
                              s.chosen, s.error))


def truncation_explorer(preset: str = "default", **settings) -> TruncationExplorer:
    """Build the truncation explorer on one of its own examples.

    Parameters
    ----------
    preset : {"default", "nucleus", "truncation_correction"}
        Starting distribution and controls: each is the explorer's own example
        (``"nucleus"`` opens where two tokens exactly reach top-p;
        ``"truncation_correction"`` on a kept token and n positions). The
        explorer takes no other logits: it shows how the transforms act, and
        never works out an exercise for a notebook's numbers.
    **settings
        Starting controls: ``temperature``, ``top_k``, ``top_p``,
        ``min_tokens_to_keep``, ``banned``, ``chosen``, ``positions``.

    Returns
    -------
    TruncationExplorer
        An ipywidgets container; display it as the last expression of a cell.
    """
    return TruncationExplorer(preset, **settings)
