"""The hints and worked-solution panel of a self-study notebook: :func:`reveal`.

:class:`Reveal` is the panel's state machine (tested headless); :class:`_View` its ipywidgets view,
whose buttons call it. The material comes from the exercise's ``solution.md`` (:func:`load_solution`).
"""

from __future__ import annotations

import re
import weakref
from pathlib import Path

from autograder.checks import CHECKS

from .practice import NotYet, current_id, current_parameters, draw, drawn_html, numbers_tries
from .progress_file import LIVE_PANELS, PROGRESS_FILE, tries


# --------------------------------------------------------------------------- worked solutions


def load_solution(stem: str, parameters=None) -> dict:
    """The hints, worked solution and key idea of ``stem``, parsed from ``autograder/exercises/<stem>/solution.md``.

    The file has three level-2 sections: ``## Hints`` (one ``### Hint`` subsection each),
    ``## Worked solution`` and ``## Remember``. Its ``{{ name }}`` placeholders are filled with the
    worked values of ``parameters`` (:func:`autograder.exercises.fill`; variant 0's when None).
    """
    if stem not in CHECKS:
        raise KeyError(f"unknown exercise {stem!r}")
    from autograder.exercises import solution_path
    from autograder.exercises import fill
    text = fill(solution_path(stem).read_text(encoding="utf-8"), stem, parameters or None)
    sections = {}
    for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M):
        sections[match.group(1).strip().lower()] = match.group(2).strip()
    missing = {"hints", "worked solution", "remember"} - set(sections)
    if missing:
        raise ValueError(f"exercises/{stem}/solution.md lacks section(s) {sorted(missing)}")
    hints = [h.strip() for h in re.split(r"^### .*\n", sections["hints"], flags=re.M) if h.strip()]
    return {"hints": hints, "solution": sections["worked solution"], "remember": sections["remember"]}


class Reveal:
    """The reveal panel's state machine, separate from its view so it can be tested headless.

    States: hints are shown one by one on demand; the solution opens directly once the exercise has
    been tried (on the numbers it shows now), otherwise the first request asks for confirmation and the
    second one opens it. ``listeners`` are called whenever a check of this notebook records a try,
    ``numbers_listeners`` when new numbers were drawn (:func:`new_numbers`).
    """

    def __init__(self, stem: str, progress_path: Path = PROGRESS_FILE):
        self.stem = stem
        self.progress_path = progress_path
        self.practice_id = current_id(stem, progress_path)
        self.material = load_solution(stem, current_parameters(stem, progress_path))
        self.hints_shown = 0
        self.awaiting_confirmation = False
        self.solution_shown = False
        self.listeners: list = []
        self.numbers_listeners: list = []
        self.last_drawn = None  # the panel's last draw of new numbers (a practice.Drawn)
        LIVE_PANELS.setdefault(stem, weakref.WeakSet()).add(self)

    @property
    def tries(self) -> int:
        return tries(self.stem, self.progress_path)

    @property
    def numbers_tries(self) -> int:
        """Tries on the numbers shown now (every try while they are the example numbers)."""
        return numbers_tries(self.stem, self.progress_path)

    @property
    def varies(self) -> bool:
        """Whether this notebook offers new numbers."""
        from course.variants import varies
        return varies(self.stem)

    def numbers_changed(self) -> None:
        """New numbers were drawn: their hints and solution replace the old, and the solution is gated
        again on a try (of the new numbers)."""
        self.practice_id = current_id(self.stem, self.progress_path)
        self.material = load_solution(self.stem, current_parameters(self.stem, self.progress_path))
        self.solution_shown = False
        self.awaiting_confirmation = False

    def next_hint(self) -> str | None:
        if self.hints_shown >= len(self.material["hints"]):
            return None
        self.hints_shown += 1
        return self.material["hints"][self.hints_shown - 1]

    def request_solution(self) -> str:
        """``"shown"``, or ``"confirm"`` when the learner has not tried yet and must confirm once."""
        if self.solution_shown:
            return "shown"
        if self.numbers_tries > 0 or self.awaiting_confirmation:
            self.solution_shown = True
            self.awaiting_confirmation = False
            return "shown"
        self.awaiting_confirmation = True
        return "confirm"

    def status(self) -> str:
        """One sentence on where the learner stands (plain text, shown above the panel's output)."""
        if self.solution_shown:
            return "The worked solution is shown below."
        if self.practice_id is not None:  # new numbers: the gate is a try on them
            count = self.numbers_tries
            if count:
                return (f"You have tried these numbers {count} {'time' if count == 1 else 'times'}: "
                        "their worked solution opens with one click.")
            if self.awaiting_confirmation:
                return ("You have not tried these new numbers yet. Trying first is how the ideas stick; "
                        "click again to reveal anyway.")
            return ("New numbers: run the notebook again from the numbers cell and check your answers; "
                    "then their worked solution opens with one click.")
        count = self.tries
        if count:
            return (f"You have tried this notebook {count} {'time' if count == 1 else 'times'}: "
                    "the worked solution opens with one click.")
        if self.awaiting_confirmation:
            return ("You have not tried this notebook's checks on an answer yet. Trying first is how the "
                    "ideas stick; click again to reveal anyway.")
        return "Hints are open now; the worked solution opens with one click after your first try."

    def solution_markdown(self) -> str:
        return self.material["solution"] + "\n\n**Remember.** " + self.material["remember"]


def reveal(stem: str, *, force: bool = False):
    """Show the hints and worked-solution panel of ``stem`` (one click once you have tried).

    With ``force=True`` the panel opens with the worked solution already shown (no confirmation).
    """
    from IPython.display import Markdown, display

    state = Reveal(stem)
    panel = _View(state, Markdown, display).panel
    if force:
        state.awaiting_confirmation = True
        panel._reveal_button.click()
    return panel


# Colours chosen for at least 4.5:1 contrast (WCAG 2.1 AA) on the button and against the page:
# white on #0b5394 is 7.9:1, #1a1a1a on #e8e8e8 is 14:1 (Pygments' default style, used for the code,
# keeps 4.5:1 on white since Pygments 2.11).
#
# Code in the worked solution keeps every line in view: a line longer than the panel wraps at a space
# (a word is broken only when nothing else fits), and its continuation is indented six columns past
# the line's own indentation, so it reads as the rest of that line (each source line is a block with a
# hanging indent of its own: :func:`_code_html`). It used to scroll sideways instead, and a long block's
# scrollbar sat below the screen: the lines looked cut at the right edge. The text is the code as it
# is, spaces included, so copying it gives the code.
_PANEL_CSS = """<style>
.selfstudy-panel .selfstudy-code { white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal;
  font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);
  line-height: var(--jp-code-line-height, 1.3077); max-width: 100%; box-sizing: border-box;
  margin: 0.6em 0 1em 0; padding: 4px 0 4px 1em; border-left: 3px solid #e8e8e8; }
.selfstudy-panel .selfstudy-code .selfstudy-line { display: block; min-height: 1.3em; }
.selfstudy-panel .selfstudy-solution { border-top: 2px solid #595959; margin-top: 0.75em; padding-top: 0.5em; }
.selfstudy-panel .selfstudy-status { color: #1a1a1a; }
CODE_COLOURS
</style>"""


def _code_style() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".selfstudy-code")


def _code_html(code: str) -> str:
    """A worked solution's code block as HTML: Pygments' colours, one block per source line with a hanging
    indent of its own (wrapped continuations start six columns past the line's indentation: four would
    align them with the body of a line ending in a colon)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    raw = code.rstrip("\n").split("\n")
    # nowrap: one output line per source line, each with its spans closed (a string over two lines too).
    coloured = highlight(code, PythonLexer(), HtmlFormatter(nowrap=True)).rstrip("\n").split("\n")
    lines = []
    for source, html_line in zip(raw, coloured):
        hang = len(source) - len(source.lstrip(" ")) + 6
        lines.append(f'<span class="selfstudy-line" style="padding-left: {hang}ch; text-indent: -{hang}ch">'
                     f"{html_line}</span>")
    return '<pre class="selfstudy-code">' + "".join(lines) + "</pre>"


def _solution_parts(markdown: str) -> list:
    """``[(kind, text), ...]``: the worked solution's prose (``"markdown"``) and its Python code blocks
    (``"code"``), in order."""
    parts, position = [], 0
    for match in re.finditer(r"^```python\n(.*?)^```[ \t]*$", markdown, flags=re.S | re.M):
        if markdown[position:match.start()].strip():
            parts.append(("markdown", markdown[position:match.start()]))
        parts.append(("code", match.group(1)))
        position = match.end()
    if markdown[position:].strip():
        parts.append(("markdown", markdown[position:]))
    return parts

_PRIMARY = {"button_color": "#0b5394", "text_color": "#ffffff"}
_SECONDARY = {"button_color": "#e8e8e8", "text_color": "#1a1a1a"}


def _status_html(text: str) -> str:
    import html

    return f'<div role="status" aria-live="polite">{html.escape(text)}</div>'


class _View:
    """The panel's widgets and what each click does; what the panel knows is ``state``'s (a :class:`Reveal`).

    ``Markdown`` and ``display`` are IPython's (passed in, so that the panel is built where they are).
    """

    def __init__(self, state: Reveal, Markdown, display):
        import ipywidgets as widgets
        from IPython.display import HTML

        self.state, self.Markdown, self.display, self.HTML = state, Markdown, display, HTML
        self._make_buttons(widgets)
        self._make_outputs(widgets)
        self.numbers_gate()
        self._classify()
        state.listeners.append(self.refresh)
        state.numbers_listeners.append(self.numbers_changed)
        self.hint_button.on_click(self.on_hint)
        self.solution_button.on_click(self.on_solution)
        self.numbers_button.on_click(self.on_new_numbers)
        self.panel = self._assemble(widgets)

    # -- the widgets

    def _make_buttons(self, widgets) -> None:
        self.hint_button = widgets.Button(description="Show a hint", icon="lightbulb-o", tooltip="Show the next hint",
                                          layout=widgets.Layout(width="auto"), style=_SECONDARY)
        self.solution_button = widgets.Button(description="Reveal the worked solution", icon="eye",
                                              tooltip="Reveal the worked solution", layout=widgets.Layout(width="auto"),
                                              style=_PRIMARY)
        self.status = widgets.HTML(_status_html(self.state.status()))

    def _make_outputs(self, widgets) -> None:
        self.hints_output = widgets.Output()
        self.solution_output = widgets.Output()
        # New numbers (exercises whose numbers vary): open after a first try, like the one-click solution.
        self.numbers_button = widgets.Button(description="New numbers", icon="refresh",
                                             layout=widgets.Layout(width="auto"), style=_SECONDARY)
        self.numbers_output = widgets.Output()
        self.numbers_button.add_class("selfstudy-new-numbers")
        self.numbers_output.add_class("selfstudy-output")
        self.numbers_output.add_class("selfstudy-drawn-numbers")

    def _classify(self) -> None:
        """The CSS classes the page's style and the browser tests find the widgets by."""
        self.hint_button.add_class("selfstudy-hint")
        self.solution_button.add_class("selfstudy-reveal")
        self.status.add_class("selfstudy-status")
        self.hints_output.add_class("selfstudy-output")
        self.hints_output.add_class("selfstudy-hints")
        self.solution_output.add_class("selfstudy-output")
        self.solution_output.add_class("selfstudy-solution")
        self.solution_output.layout.display = "none"
        if not self.state.material["hints"]:
            self.hint_button.disabled = True

    def _assemble(self, widgets):
        state = self.state
        buttons = [self.hint_button, self.solution_button] + ([self.numbers_button] if state.varies else [])
        drawn = [self.numbers_output] if state.varies else []  # right under the status: what a click drew
        panel = widgets.VBox([widgets.HTML(_PANEL_CSS.replace("CODE_COLOURS", _code_style())), widgets.HBox(buttons),
                              self.status] + drawn + [self.hints_output, self.solution_output])
        panel.add_class("selfstudy-panel")
        panel._reveal_state = state  # for tests and curious learners
        panel._reveal_button = self.solution_button
        panel._numbers_button = self.numbers_button if state.varies else None
        return panel

    # -- what happens

    def numbers_gate(self) -> None:
        self.numbers_button.disabled = not self.state.tries
        self.numbers_button.tooltip = ("Draw fresh numbers for this exercise and practise on them" if self.state.tries
                                       else "New numbers open after your first try")

    def refresh(self) -> None:
        state, button = self.state, self.solution_button
        self.numbers_gate()
        self.status.value = _status_html(state.status())
        if not state.solution_shown and not state.awaiting_confirmation:
            button.description = "Reveal the worked solution"
            button.tooltip = "Reveal the worked solution"
            button.style.button_color = _PRIMARY["button_color"]
            button.style.text_color = _PRIMARY["text_color"]
        elif state.awaiting_confirmation and state.numbers_tries:
            # A try arrived while the panel asked for confirmation: no confirmation is needed any more.
            state.awaiting_confirmation = False
            self.refresh()

    def on_hint(self, _) -> None:
        state, display, Markdown = self.state, self.display, self.Markdown
        hint = state.next_hint()
        if hint is None:
            return
        with self.hints_output:
            if state.hints_shown == 1:
                display(Markdown("### Hints"))
            display(Markdown(f"**Hint {state.hints_shown}.** {hint}"))
        if state.hints_shown >= len(state.material["hints"]):
            self.hint_button.disabled = True
            self.hint_button.description = "No more hints"

    def on_solution(self, _) -> None:
        state, button, display = self.state, self.solution_button, self.display
        if button.disabled:
            return
        outcome = state.request_solution()
        self.status.value = _status_html(state.status())
        if outcome == "confirm":
            button.description = "Reveal anyway"
            button.tooltip = "Reveal the worked solution without trying first"
            return
        button.disabled = True
        button.description = "Worked solution shown"
        self.solution_output.layout.display = None
        with self.solution_output:
            display(self.Markdown("### Worked solution"))
            for kind, text in _solution_parts(state.solution_markdown()):
                display(self.HTML(_code_html(text)) if kind == "code" else self.Markdown(text))

    def on_new_numbers(self, _) -> None:
        if self.numbers_button.disabled:
            return
        self.numbers_output.clear_output()
        try:
            drawn = draw(self.state.stem, self.state.progress_path)
        except (NotYet, OSError) as refusal:
            with self.numbers_output:
                print(refusal)
            return
        # What the panel shows (tests read it: an Output records nothing outside a kernel).
        self.state.last_drawn = drawn
        with self.numbers_output:
            self.display(self.HTML(drawn_html(drawn)))

    def numbers_changed(self) -> None:
        # The old numbers' hints and solution are no longer this notebook's: show the new ones' instead.
        state = self.state
        state.numbers_changed()
        shown = state.hints_shown
        state.hints_shown = 0
        self.hints_output.clear_output()
        for _ in range(shown):
            self.on_hint(None)
        self.solution_output.clear_output()
        self.solution_output.layout.display = "none"
        self.solution_button.disabled = False
        self.refresh()
