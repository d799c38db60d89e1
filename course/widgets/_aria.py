"""Names and spoken values for the explorers' slider handles, which ipywidgets leaves without them.

ipywidgets 8.1 draws a slider with noUiSlider and gives its handle (the element with
``role="slider"`` that a keyboard or screen reader works with) no ``aria-label``, and no option to
set one: ``SliderView.createSlider`` in ``@jupyter-widgets/controls`` 5.0 passes no
``handleAttributes`` to ``noUiSlider.create``. The handle's ``aria-valuetext`` is noUiSlider's
formatting of its internal number, which for a ``SelectionSlider`` is the option's *index*: on the
"draws N" slider a screen reader heard "4" while the readout showed "20".

noUiSlider also writes ``aria-valuenow``, ``aria-valuemin`` and ``aria-valuemax`` with
``toFixed(1)`` (nouislider 15, ``setHandleAttributes``), so a top-p of 0.85 was announced as "0.8"
by anything that reads the number rather than the text. And the slider's readout, which ipywidgets
makes ``contenteditable`` so that a value can be typed, is a tab stop with no name.

No widget trait reaches the handle, so the explorers display, once with each explorer, a few lines
of JavaScript (plain ``application/javascript`` output, which JupyterLab, Notebook 7 and Colab run for
outputs of the running session). A ``MutationObserver`` does, for every slider inside an explorer,
and again whenever noUiSlider rewrites the handle or the readout changes:

* the handle: the visible description as ``aria-label``, the visible readout as ``aria-valuetext``;
  for a numeric slider (its readout holds the handle's own value) the readout's number as
  ``aria-valuenow`` and the slider's exact range (noUiSlider's ``options.range``) as
  ``aria-valuemin`` and ``aria-valuemax``. A ``SelectionSlider`` keeps noUiSlider's option indices
  there (its range is indices; its spoken value is the readout, in ``aria-valuetext``);
* an editable readout: ``role="textbox"`` and an ``aria-label`` naming the slider it sets.

It touches only those attributes of the explorers' own sliders, and stops nothing if a front end
does not run it (the sliders then work as before, only less well named).
"""

from __future__ import annotations

#: Installed once per page (``window.__m6SliderNames``); re-running a cell does not add observers.
SLIDER_NAMES_JS = r"""
(function () {
  if (window.__m6SliderNames) { window.__m6SliderNames(); return; }
  function text(el) { return el ? (el.textContent || '').trim() : ''; }
  function set(el, name, value) { if (el.getAttribute(name) !== value) { el.setAttribute(name, value); } }
  function number(value) {
    var n = Number(String(value).replace('\u2212', '-'));
    return isFinite(n) ? n : null;
  }
  function bound(value) { return Array.isArray(value) ? value[0] : value; }
  function sync() {
    document.querySelectorAll('.m6-explorer .widget-slider').forEach(function (slider) {
      var label = text(slider.querySelector('.widget-label'));
      var readout = slider.querySelector('.widget-readout');
      var shown = readout && getComputedStyle(readout).display !== 'none' ? text(readout) : '';
      var target = slider.querySelector('.noUi-target');
      var api = target && target.noUiSlider;
      var now = api ? number(api.get()) : null;
      var typed = number(shown);
      var step = api && api.options && api.options.step ? Number(api.options.step) : 0;
      // Numeric when the readout shows the handle's own value (to its display rounding);
      // a selection slider shows an option while the handle holds its index.
      var numeric = typed !== null && now !== null && Math.abs(typed - now) <= Math.max(step / 2, 1e-9);
      slider.querySelectorAll('.noUi-handle[role=slider]').forEach(function (handle) {
        if (label) { set(handle, 'aria-label', label); }
        if (shown) { set(handle, 'aria-valuetext', shown); }
        if (numeric) {
          set(handle, 'aria-valuenow', String(typed));
          var range = api.options.range || {};
          if (number(bound(range.min)) !== null) { set(handle, 'aria-valuemin', String(number(bound(range.min)))); }
          if (number(bound(range.max)) !== null) { set(handle, 'aria-valuemax', String(number(bound(range.max)))); }
        }
      });
      if (readout && readout.isContentEditable && label) {
        set(readout, 'role', 'textbox');
        set(readout, 'aria-label', label + ' (type a value)');
      }
    });
  }
  var queued = false;
  function later() { if (!queued) { queued = true; Promise.resolve().then(function () { queued = false; sync(); }); } }
  new MutationObserver(later).observe(document.body, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ['aria-valuetext', 'aria-valuenow', 'aria-valuemin', 'aria-valuemax',
                                        'class', 'contenteditable']});
  window.__m6SliderNames = sync;
  sync();
})();
"""


def display_with_slider_names(widget) -> None:
    """Display ``widget`` preceded by the slider-naming script (an explorer's ``_ipython_display_``)."""
    from IPython.display import Javascript, display

    display(Javascript(SLIDER_NAMES_JS))
    display(widget._repr_mimebundle_(), raw=True)
