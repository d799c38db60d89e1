"""Names and spoken values for the explorers' slider handles, which ipywidgets leaves without them.

ipywidgets 8.1 draws a slider with noUiSlider and gives its handle (the element with
``role="slider"`` that a keyboard or screen reader works with) no ``aria-label``, and no option to
set one: ``SliderView.createSlider`` in ``@jupyter-widgets/controls`` 5.0 passes no
``handleAttributes`` to ``noUiSlider.create``. The handle's ``aria-valuetext`` is noUiSlider's
formatting of its internal number, which for a ``SelectionSlider`` is the option's *index*: on the
"draws N" slider a screen reader heard "4" while the readout showed "20".

No widget trait reaches the handle, so the explorers display, once with each explorer, a few lines
of JavaScript (plain ``application/javascript`` output, which JupyterLab, Notebook 7 and Colab run for
outputs of the running session). A ``MutationObserver`` copies, for every slider inside an
explorer, the visible description onto the handle as ``aria-label`` and the visible readout as
``aria-valuetext``, and does it again whenever noUiSlider rewrites them or the readout changes. It
reads and writes only those two attributes of the explorers' own sliders, and stops nothing if a
front end does not run it (the sliders then work as before, only less well named).
"""

from __future__ import annotations

#: Installed once per page (``window.__m6SliderNames``); re-running a cell does not add observers.
SLIDER_NAMES_JS = r"""
(function () {
  if (window.__m6SliderNames) { window.__m6SliderNames(); return; }
  function text(el) { return el ? (el.textContent || '').trim() : ''; }
  function sync() {
    document.querySelectorAll('.m6-explorer .widget-slider').forEach(function (slider) {
      var label = text(slider.querySelector('.widget-label'));
      var readout = slider.querySelector('.widget-readout');
      var shown = readout && getComputedStyle(readout).display !== 'none' ? text(readout) : '';
      slider.querySelectorAll('.noUi-handle[role=slider]').forEach(function (handle) {
        if (label && handle.getAttribute('aria-label') !== label) { handle.setAttribute('aria-label', label); }
        if (shown && handle.getAttribute('aria-valuetext') !== shown) { handle.setAttribute('aria-valuetext', shown); }
      });
    });
  }
  var queued = false;
  function later() { if (!queued) { queued = true; Promise.resolve().then(function () { queued = false; sync(); }); } }
  new MutationObserver(later).observe(document.body, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ['aria-valuetext', 'aria-valuenow', 'class']});
  window.__m6SliderNames = sync;
  sync();
})();
"""


def display_with_slider_names(widget) -> None:
    """Display ``widget`` preceded by the slider-naming script (an explorer's ``_ipython_display_``)."""
    from IPython.display import Javascript, display

    display(Javascript(SLIDER_NAMES_JS))
    display(widget._repr_mimebundle_(), raw=True)
