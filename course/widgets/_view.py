"""What the three explorer views share: labelled values, a status line, safe refresh, layout.

Layout: every explorer is a column whose rows wrap. Controls and values sit side by side when the
notebook is wide and the values drop below the controls when it is narrow (a 1024 px laptop with
the file browser open, or 200% zoom); nothing has a fixed width that could clip a slider's readout.
Figures are images that shrink with the column (``width: 100%`` up to their drawn size).
"""

from __future__ import annotations

import html
import math

import ipywidgets as widgets

from ._aria import display_with_slider_names
from ._figure import FULL
from ._format import value_html

SLIDER_STYLE = {"description_width": "140px"}
# Wide enough for the description, a usable track and the full readout ("0.80"), and narrow
# enough for 200% zoom beside the file browser.
CONTROL_MIN_WIDTH = "250px"
CONTROL_MAX_WIDTH = "440px"
# Text colour of reasons and errors: 7.8:1 on white (WCAG AA asks 4.5:1).
REASON_COLOUR = "#8a3b00"
# Shown instead of a number while the controls cannot be computed (the status line says why).
NO_VALUE = "\u2014"
# Styles that ipywidgets' Layout cannot express. Scoped to the explorers; stale figures are dimmed
# (the status line says why in words, so nothing relies on the dimming alone).
EXPLORER_CSS = """<style>
.m6-explorer .m6-stale img { opacity: 0.35; filter: grayscale(1); }
.m6-explorer .widget-readout { overflow: visible; min-width: 3.2em; }
.m6-explorer .m6-value { overflow-wrap: anywhere; }
</style>"""


def control_layout(**extra) -> widgets.Layout:
    return widgets.Layout(width=FULL, min_width=CONTROL_MIN_WIDTH, max_width=CONTROL_MAX_WIDTH,
                          **extra)


def value_label(css_class: str) -> widgets.HTML:
    """An HTML label carrying its own CSS class, for the browser tests to find."""
    label = widgets.HTML(layout=widgets.Layout(margin="0 0 2px 0", max_width="100%"))
    label.add_class("m6-value")
    label.add_class(css_class)
    return label


def set_value(label: widgets.HTML, name: str, value, reason: str | None = None, *,
              explained: bool = False, **fmt) -> None:
    """Show ``name = value``; a non-finite number always comes with a reason.

    ``explained=True`` is for table cells whose reason the view lists right
    under the table: the cell then shows only the number.
    """
    if not isinstance(value, str) and not math.isfinite(float(value)) and not reason \
            and not explained:
        reason = "not a finite number"
    label.value = value_html(name, value, None if explained else reason, **fmt)


def float_slider(description: str, css_class: str, **kwargs) -> widgets.FloatSlider:
    slider = widgets.FloatSlider(
        description=description, style=SLIDER_STYLE, layout=control_layout(),
        readout_format=".2f", tooltip=description, **kwargs,
    )
    slider.add_class(css_class)
    slider.add_class("m6-control")
    return slider


def int_slider(description: str, css_class: str, **kwargs) -> widgets.IntSlider:
    slider = widgets.IntSlider(description=description, style=SLIDER_STYLE,
                               layout=control_layout(), tooltip=description, **kwargs)
    slider.add_class(css_class)
    slider.add_class("m6-control")
    return slider


def slider_value(slider: widgets.FloatSlider, decimals: int = 2) -> float:
    """The slider's value as the decimal its readout shows.

    The front end steps in binary floating point (0.8 may arrive as
    0.8000000000000002); the model should see the number the learner reads.
    """
    return round(float(slider.value), decimals)


def wrapping_row(children, **extra) -> widgets.HBox:
    """A row whose items wrap onto the next line when the notebook is narrow."""
    layout = dict(display="flex", flex_flow="row wrap", align_items="flex-start", width=FULL,
                  grid_gap="4px 12px")
    layout.update(extra)
    return widgets.HBox(children, layout=widgets.Layout(**layout))


def column(children, *, basis: str, min_width: str, max_width: str | None = None,
           **extra) -> widgets.VBox:
    """A column of a :func:`wrapping_row` that grows from ``basis`` and never below ``min_width``."""
    return widgets.VBox(children, layout=widgets.Layout(
        flex=f"1 1 {basis}", min_width=min_width, max_width=max_width, **extra))


class Explorer(widgets.VBox):
    """Base of the explorers: a title, a status line, and refresh with error display.

    Subclasses set ``self.controls`` and ``self.labels`` (dicts of widgets),
    implement ``_compute()`` (returns the model state) and ``_show(state)``.
    """

    css_prefix = "m6"
    #: Where an explorer with text fields shows why its input cannot be computed (beside the fields).
    error_box: widgets.HTML | None = None

    def __init__(self, title: str, body: list[widgets.Widget]):
        self.title_label = widgets.HTML(f"<b>{html.escape(title)}</b>",
                                        layout=widgets.Layout(max_width="100%"))
        self.title_label.add_class(f"{self.css_prefix}-title")
        self.status = widgets.HTML(layout=widgets.Layout(max_width="100%"))
        self.status.add_class(f"{self.css_prefix}-status")
        self.status.add_class("m6-status")
        self.state = None
        self.error: str | None = None
        style = widgets.HTML(EXPLORER_CSS, layout=widgets.Layout(height="0px", margin="0"))
        style.add_class("m6-style")
        super().__init__([style, self.title_label, *body, self.status],
                         layout=widgets.Layout(width="100%", max_width="1000px"))
        self.add_class("m6-explorer")
        self.add_class(self.css_prefix)

    def _ipython_display_(self) -> None:
        # Shown in a notebook: with the script that names the slider handles (see ``_aria``).
        display_with_slider_names(self)

    def _observe_controls(self) -> None:
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    def _snapped(self, change) -> bool:
        """Put a float slider's value back on its grid: binary round-off (0.8000000000000002) and a
        value typed or set between two steps (0.37 on a slider of step 0.05 becomes 0.35).

        The front end then holds, shows and announces the value the learner reads, and the model
        sees only values of the slider's own grid; the change this makes triggers the one refresh.
        """
        if change is None or not isinstance(change.get("owner"), widgets.FloatSlider):
            return False
        value = change["new"]
        slider = change["owner"]
        snapped = round(float(value), 2)
        step = float(slider.step or 0.0)
        if step > 0 and math.isfinite(float(value)):
            base = float(slider.min)
            snapped = round(base + round((float(value) - base) / step) * step, 2)
            snapped = min(max(snapped, float(slider.min)), float(slider.max))
        if snapped != value:
            change["owner"].value = snapped
            return True
        return False

    def _on_change(self, change=None) -> None:
        if self._snapped(change):
            return
        self.refresh()

    def refresh(self) -> None:
        """Recompute the model from the controls and redraw the view in place."""
        try:
            state = self._compute()
        except (ValueError, TypeError) as exc:
            # One message in the status line; no stale numbers next to controls they do not
            # describe. The figures stay (dimmed, and the status says so) so the learner keeps
            # the picture of the last values that could be computed.
            self.state = None
            self.error = str(exc)
            for key, label in self.labels.items():
                set_value(label, self._names[key], NO_VALUE)
            message = (
                f'<div class="m6-reason m6-error" role="alert" style="color: {REASON_COLOUR}; '
                f'line-height: 1.35"><b>Cannot compute:</b> {html.escape(str(exc))}. '
                "The plots still show the last values that could be computed.</div>")
            # Next to the fields typed into, where the explorer has them; else in the status line.
            if self.error_box is not None:
                self.error_box.value = message
                self.status.value = ""
            else:
                self.status.value = message
            for extra in self._explanations():
                extra.value = ""
            for plot in self.plots():
                plot.set_stale(True)
            return
        self.state = state
        self.error = None
        if self.error_box is not None:
            self.error_box.value = ""
        for plot in self.plots():
            plot.set_stale(False)
        self._show(state)

    def plots(self) -> list:
        """The explorer's :class:`~course.widgets._figure.FigureImage` objects."""
        return [self.plot]

    def _explanations(self) -> list[widgets.HTML]:
        """Widgets of text that describe the current state (cleared when it cannot be computed)."""
        return []

    # Subclasses fill these in.
    _names: dict[str, str] = {}

    def _compute(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _show(self, state) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
