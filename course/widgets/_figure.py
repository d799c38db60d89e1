"""A matplotlib figure shown as one ipywidgets ``Image`` that is redrawn in place.

The figure is built without pyplot, so the inline backend never displays a
copy of it at the end of a cell (no figure pile-up), and a redraw replaces
the image's bytes instead of clearing an output area (no flicker).
"""

from __future__ import annotations

import base64
import html
import io

import ipywidgets as widgets
import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Full width less ipywidgets' 2 px margin on each side, so a child never sticks out of its box.
FULL = "calc(100% - 4px)"

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "sky": "#56B4E9",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#999999",
}
# Darker shades of the same hues for text on white: each at least 4.5:1 (WCAG 2.1 AA).
TEXT_SHADES = {
    "blue": "#0072B2",  # 5.2:1
    "orange": "#8A5A00",  # 5.9:1
    "green": "#00795A",  # 5.4:1
    "vermillion": "#A54A00",  # 5.9:1
    "purple": "#8E3F73",
}

STYLE = {
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


class FigureImage:
    """A figure whose artists the views update, shown as one ``<img>`` with a text alternative.

    The PNG travels inside an ``HTML`` widget as ``<img src="data:..." alt="...">``: ipywidgets'
    ``Image`` has no ``alt`` attribute (and its view fails to render when given a tooltip), and a
    picture without a text alternative fails WCAG 1.1.1. The views call :meth:`describe` and then
    :meth:`render`; the widget's value changes once per redraw.

    Parameters
    ----------
    width, height : float
        Figure size in inches.
    dpi : int
        Pixels per inch of the PNG.
    """

    def __init__(self, width: float, height: float, dpi: int = 96):
        self.figure = Figure(figsize=(width, height), dpi=dpi)
        self.canvas = FigureCanvasAgg(self.figure)
        self.pixels = (int(round(width * dpi)), int(round(height * dpi)))
        # Scales down with the notebook column, never up past the size it was drawn at.
        self.image = widgets.HTML(layout=widgets.Layout(width=FULL, max_width=f"{self.pixels[0]}px",
                                                        margin="0"))
        self.image.add_class("m6-figure")
        self.view = self.image
        self.png = b""
        self.text = ""
        self._key = None
        self._shown = None
        self.stale = False

    def describe(self, text: str) -> None:
        """Set the picture's text alternative; it reaches the page with the next :meth:`render`."""
        self.text = text

    def set_stale(self, stale: bool) -> None:
        """Dim the picture while it shows values the controls no longer produce."""
        if stale == self.stale:
            return
        self.stale = stale
        if stale:
            self.image.add_class("m6-stale")
        else:
            self.image.remove_class("m6-stale")

    def render(self, key=None) -> bool:
        """Draw the figure (unless ``key`` says it is unchanged) and publish picture and text.

        Parameters
        ----------
        key : hashable, optional
            The inputs the figure shows. When it equals the key of the last
            render, nothing is drawn (the picture would be the same).

        Returns
        -------
        bool
            Whether the figure was drawn.
        """
        drawn = False
        if key is None or key != self._key or not self.png:
            buffer = io.BytesIO()
            # Unhinted glyphs render about a fifth faster and look the same at this size.
            with matplotlib.rc_context({"text.hinting": "none"}):
                self.canvas.print_png(buffer)
            self.png = buffer.getvalue()
            self._key = key
            drawn = True
        if drawn or self._shown != self.text:
            width, height = self.pixels
            source = base64.b64encode(self.png).decode("ascii")
            self.image.value = (
                f'<img src="data:image/png;base64,{source}" alt="{html.escape(self.text)}" '
                f'width="{width}" height="{height}" '
                'style="display: block; width: 100%; height: auto; max-width: 100%">')
            self._shown = self.text
        return drawn
