"""What the three explorer views share: labelled values, a status line, safe refresh."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets

from ._format import value_html

SLIDER_STYLE = {"description_width": "150px"}
SLIDER_LAYOUT = widgets.Layout(width="400px")


def value_label(css_class: str) -> widgets.HTML:
    """An HTML label carrying its own CSS class, for the browser tests to find."""
    label = widgets.HTML(layout=widgets.Layout(margin="0 0 2px 0"))
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
        description=description, style=SLIDER_STYLE, layout=SLIDER_LAYOUT, readout_format=".2f",
        **kwargs,
    )
    slider.add_class(css_class)
    return slider


def int_slider(description: str, css_class: str, **kwargs) -> widgets.IntSlider:
    slider = widgets.IntSlider(description=description, style=SLIDER_STYLE, layout=SLIDER_LAYOUT,
                               **kwargs)
    slider.add_class(css_class)
    return slider


def slider_value(slider: widgets.FloatSlider, decimals: int = 2) -> float:
    """The slider's value as the decimal its readout shows.

    The front end steps in binary floating point (0.8 may arrive as
    0.8000000000000002); the model should see the number the learner reads.
    """
    return round(float(slider.value), decimals)


class Explorer(widgets.VBox):
    """Base of the explorers: a title, a status line, and refresh with error display.

    Subclasses set ``self.controls`` and ``self.labels`` (dicts of widgets),
    implement ``_compute()`` (returns the model state) and ``_show(state)``.
    """

    css_prefix = "m6"

    def __init__(self, title: str, body: list[widgets.Widget]):
        self.title_label = widgets.HTML(f"<b>{html.escape(title)}</b>")
        self.title_label.add_class(f"{self.css_prefix}-title")
        self.status = widgets.HTML()
        self.status.add_class(f"{self.css_prefix}-status")
        self.state = None
        self.error: str | None = None
        super().__init__([self.title_label, *body, self.status],
                         layout=widgets.Layout(width="100%", max_width="980px"))
        self.add_class("m6-explorer")
        self.add_class(self.css_prefix)

    def _observe_controls(self) -> None:
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    def _on_change(self, _change=None) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Recompute the model from the controls and redraw the view in place."""
        try:
            state = self._compute()
        except (ValueError, TypeError) as exc:
            # Never leave the previous numbers on screen for controls they do not describe.
            self.state = None
            self.error = str(exc)
            for key, label in self.labels.items():
                set_value(label, self._names[key], math.nan, f"cannot compute: {exc}")
            self.status.value = (f'<span class="m6-reason" style="color: #8a3b00">'
                                 f"Cannot compute: {html.escape(str(exc))}</span>")
            for extra in self._explanations():
                extra.value = ""
            # The figures still show the previous controls: hide them rather than mislead.
            for plot in self.plots():
                plot.image.layout.visibility = "hidden"
            return
        self.state = state
        self.error = None
        for plot in self.plots():
            plot.image.layout.visibility = "visible"
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
