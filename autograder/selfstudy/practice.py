"""Practice with new numbers: the self-study numbers of an exercise whose numbers vary.

A self-study notebook of an exercise with a family (:mod:`course.variants`) starts on the example
numbers (variant 0: no student id is asked for, since nothing here is submitted). After a first try
the learner may draw fresh numbers, with the panel's "New numbers" button or by calling
:func:`new_numbers`: each draw is a *practice id* ``practice-<n>`` (``n`` counts the draws of that
notebook), whose variant the family draws exactly as it draws a student's. The id is kept in the
notebook's entry of ``selfstudy-progress.json``, so a reopened notebook shows the same numbers; the
local checks grade that variant and the worked solution is filled with its values.

The numbers cell's ``numbers`` object is changed in place by a draw (so a check run right after it
already grades the new numbers), and its table on screen follows; answers computed from
``numbers[...]`` follow once their cells run again, which is why the learner is told to run the
notebook again from the numbers cell.

Entry keys (beside ``tries``, ``parts`` and ``answers`` of :mod:`autograder.selfstudy.progress_file`):
``numbers`` (the current practice id; absent: the example numbers), ``numbers_drawn`` (how many
draws so far, so the next id is new), ``numbers_tries`` (tries since the current numbers were
drawn: the worked solution of new numbers opens with one click only after a try on them) and
``answers_at_draw`` (the answers' fingerprint at the draw, so that a check of those same answers can
say that their cells have not run again).
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import weakref
from pathlib import Path

from course import variants as families_registry
from course.variants import Identity, Numbers

from .progress_file import LIVE_PANELS, PROGRESS_FILE, entry_of, load_progress

#: What a practice id looks like; anything else in the progress file (a hand edit) means the example numbers.
_PRACTICE_ID = re.compile(r"practice-([1-9][0-9]{0,8})")

#: A draw that lands on the numbers shown already is skipped; this many skips in a row is a family bug.
_MAX_SKIPS = 100


def _path(path) -> Path:
    return Path(PROGRESS_FILE if path is None else path)


def current_id(stem: str, path=None) -> str | None:
    """The practice id whose numbers ``stem`` shows now, or None for the example numbers."""
    value = load_progress(_path(path)).get(stem)
    value = value.get("numbers") if isinstance(value, dict) else None
    return value if isinstance(value, str) and _PRACTICE_ID.fullmatch(value) else None


def current_parameters(stem: str, path=None) -> dict:
    """The parameters ``stem`` shows now (the family's draw for the practice id, or variant 0's);
    empty when the exercise does not vary."""
    return families_registry.parameters(stem, current_id(stem, path))


def current_variant(stem: str, path=None):
    """The :class:`autograder.variants.Variant` the local checks of ``stem`` grade now (None: variant 0)."""
    if not families_registry.varies(stem):
        return None
    practice = current_id(stem, path)
    if practice is None:
        return None
    from autograder.variants import variant_for
    return variant_for(stem, practice)


def numbers_tries(stem: str, path=None) -> int:
    """Tries of ``stem`` on the numbers it shows now (all its tries while it shows the example numbers)."""
    entry = entry_of(load_progress(_path(path)), stem)
    if current_id(stem, path) is None:
        return entry["tries"]
    count = entry.get("numbers_tries", 0)
    return count if isinstance(count, int) and count >= 0 else 0


def answers_at_draw(stem: str, path=None) -> str | None:
    """The fingerprint of the answers of the last try before the current numbers were drawn (None: none)."""
    entry = load_progress(_path(path)).get(stem)
    value = entry.get("answers_at_draw") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------- the numbers on show


class PracticeNumbers(Numbers):
    """A self-study notebook's ``numbers``: the table says which numbers these are, and it follows a
    new draw on screen (an ipywidgets view, updated in place) as the object itself does."""

    def __init__(self, stem: str, practice: str | None, values, rows):
        # "none": no student is involved; the practice id is what the draws start from.
        super().__init__(stem, Identity(practice, "none"), values, rows)
        self._views: weakref.WeakSet = weakref.WeakSet()

    @property
    def practice_id(self) -> str | None:
        return self.identity.student

    @property
    def heading(self) -> str:
        if self.practice_id is None:
            return "Example numbers (variant 0): the numbers the task quotes"
        return f"New numbers ({self.practice_id}), drawn for practice"

    def _switch(self, practice: str | None, values, rows) -> None:
        """Become the numbers of ``practice`` (in place, so every name bound to this object follows)."""
        self.clear()
        self.update(values)
        self.rows = list(rows)
        self.identity = Identity(practice, "none")
        for view in list(self._views):
            view.value = self._repr_html_()

    def _ipython_display_(self):
        from IPython.display import HTML, display
        try:
            import ipywidgets as widgets
        except ImportError:  # no widgets: a static table (a draw then says to run this cell again)
            display(HTML(self._repr_html_()))
            return
        view = widgets.HTML(self._repr_html_())
        view.add_class("selfstudy-numbers")
        self._views.add(view)
        display(view)


#: The numbers objects shown in this kernel, by stem (``id -> object``, weakly: a dict is not hashable,
#: so no WeakSet), so that a draw changes them in place.
_SHOWN: dict = {}
#: The exercise whose numbers this kernel showed last: what a bare ``new_numbers()`` means.
_LAST_STEM: list = []


def _numbers_of(stem: str, practice: str | None) -> tuple:
    family = families_registry.families()[stem]
    values = families_registry.parameters(stem, practice)
    return values, family.rows(values)


def practice_numbers(stem: str, path=None) -> PracticeNumbers:
    """The numbers cell of a self-study notebook: the numbers ``stem`` shows now (example numbers
    until the learner draws new ones), never asking for a student id."""
    if not families_registry.varies(stem):
        raise KeyError(f"exercise {stem!r} has no variants; known: {sorted(families_registry.families())}")
    practice = current_id(stem, path)
    numbers = PracticeNumbers(stem, practice, *_numbers_of(stem, practice))
    _SHOWN.setdefault(stem, weakref.WeakValueDictionary())[id(numbers)] = numbers
    _LAST_STEM[:] = [stem]
    return numbers


# --------------------------------------------------------------------------- drawing new numbers


class NotYet(Exception):
    """New numbers are offered only after a first try (the message says so)."""


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A draw of new numbers: the practice id, its numbers (as the notebook shows them), the old id."""

    stem: str
    practice_id: str
    numbers: Numbers
    previous: str | None


RERUN = ("Run the notebook again from the numbers cell (click that cell, then Run > Run Selected Cell "
         "and All Below): answers that compute from numbers[...] then follow, the checks grade these "
         "numbers, and the worked solution shows them once you have tried them.")


def draw(stem: str, path=None) -> Drawn:
    """Draw new numbers for ``stem`` and keep them in the progress file: :class:`NotYet` before a
    first try, ``OSError`` when the file cannot be written (the numbers then stay as they were)."""
    if not families_registry.varies(stem):
        raise KeyError(f"exercise {stem!r} has the same numbers for everyone: there are no new numbers to draw")
    path = _path(path)
    progress = load_progress(path)
    entry = entry_of(progress, stem)
    if entry["tries"] == 0:
        raise NotYet("New numbers open after your first try: answer a part with the numbers shown, run its "
                     "check cell, then ask again.")
    previous = current_id(stem, path)
    shown = families_registry.parameters(stem, previous)
    drawn = entry.get("numbers_drawn", 0)
    count = drawn if isinstance(drawn, int) and drawn >= 0 else 0
    for _ in range(_MAX_SKIPS):
        count += 1
        practice = f"practice-{count}"
        values = families_registry.parameters(stem, practice)
        if values != shown and values != dict(families_registry.families()[stem].seed):
            break
    else:
        raise RuntimeError(f"{stem}: {_MAX_SKIPS} draws in a row repeated the numbers shown (a family that cannot vary)")
    # New numbers begin a new attempt: the next check of changed answers starts a try, and the parts
    # checked after it in the same run join that try (progress_file.record_try).
    entry.update({"numbers": practice, "numbers_drawn": count, "numbers_tries": 0,
                  "answers_at_draw": entry.get("answers"), "try_parts": {}})
    progress[stem] = entry
    path.write_text(json.dumps(progress, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    values, rows = _numbers_of(stem, practice)
    for numbers in list(_SHOWN.get(stem, {}).values()):
        numbers._switch(practice, values, rows)
    for state in list(LIVE_PANELS.get(stem, ())):
        for listener in list(getattr(state, "numbers_listeners", ())):
            try:
                listener()
            except Exception:  # a broken panel must never stop a draw
                pass
    return Drawn(stem, practice, Numbers(stem, Identity(practice, "none"), values, rows), previous)


def drawn_html(drawn: Drawn) -> str:
    """What a draw shows: the new numbers and what to run next (HTML)."""
    rows = "".join(f"<tr><td style='text-align:left'>{html.escape(what)}</td>"
                   f"<td style='text-align:left'><code>{html.escape(str(value))}</code></td></tr>"
                   for what, value in drawn.numbers.rows)
    return (f"<div class='selfstudy-drawn'><strong>New numbers ({html.escape(drawn.practice_id)}):</strong>"
            f"<table>{rows}</table><p>{html.escape(RERUN)}</p></div>")


def drawn_text(drawn: Drawn) -> str:
    width = max((len(what) for what, _ in drawn.numbers.rows), default=0)
    lines = [f"New numbers ({drawn.practice_id}):"]
    lines += [f"  {what.ljust(width)}  {value}" for what, value in drawn.numbers.rows]
    return "\n".join(lines + ["", RERUN])


def new_numbers(stem: str | None = None, *, path=None) -> None:
    """Draw new numbers for this notebook (after a first try), show them and say what to run next.

    ``stem`` defaults to the exercise whose numbers this kernel showed last (the notebook's numbers
    cell). Nothing is returned, so the cell shows no stray value.
    """
    if stem is None:
        if not _LAST_STEM:
            raise TypeError("new_numbers() needs to know the exercise: run the notebook's numbers cell "
                            "first, or name it, as in new_numbers(\"09_sequence_ppl\")")
        stem = _LAST_STEM[0]
    try:
        drawn = draw(stem, path)
    except NotYet as refusal:
        print(refusal)
        return None
    except OSError as error:
        print(f"The new numbers could not be kept ({error}), so the numbers stay as they are: "
              f"{_path(path)} must be writable for self-study to remember them.")
        return None
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
        in_notebook = get_ipython() is not None
    except ImportError:
        in_notebook = False
    if in_notebook:
        display(HTML(drawn_html(drawn)))
    else:
        print(drawn_text(drawn))
    return None


__all__ = ["Drawn", "NotYet", "PracticeNumbers", "RERUN", "answers_at_draw", "current_id", "current_parameters", "current_variant",
           "draw", "new_numbers", "numbers_tries", "practice_numbers"]
