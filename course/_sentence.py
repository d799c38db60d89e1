"""Errors a student reads as a sentence, not as a traceback of this package's internals.

The notebooks stop with an error where something needs the student: an open check that fails, a
package the grader will not have, a notebook that does not know whose numbers to show. The error's
message is the one sentence that says what happened and what to do; the frames of the code that
found out (this package, NumPy) would only push that sentence below the fold. IPython shows an
exception through its ``_render_traceback_`` method when it has one (``InteractiveShell.showtraceback``,
IPython >= 7: the hook ipyparallel's remote errors use), so such an error shows its sentence alone,
in the notebook and in nbgrader's Validate (which prints the error output's traceback lines). Outside
IPython (plain Python, a test) it is an ordinary exception with the same message.

Standard library only: :mod:`course.grading_environment` and :mod:`course.variants` use it too.
"""

from __future__ import annotations

import textwrap

#: Width the sentence is wrapped to: error outputs and Validate's dialog show lines as they are.
WIDTH = 100

_RED, _RESET = "\x1b[1;31m", "\x1b[0m"


def rendered(label: str, message: str, more: list | None = None) -> list:
    """The lines IPython shows for an error: ``label`` in red, then ``message`` wrapped, then ``more``."""
    lines = []
    for number, paragraph in enumerate(str(message).split("\n")):
        head = f"{label}: " if number == 0 else ""
        wrapped = textwrap.wrap(head + paragraph, WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
        if number == 0:
            wrapped[0] = _RED + label + ":" + _RESET + wrapped[0][len(label) + 1:]
        lines += wrapped
    return ["\n".join(lines)] + list(more or [])


class Sentence:
    """Mixin for an exception whose message is the whole story: IPython shows ``LABEL: message``.

    ``label`` names what happened in words ("Open check failed"); the class name stays the
    exception's type (``ename`` of the notebook's error output).
    """

    label = "Error"

    def _render_traceback_(self) -> list:
        return rendered(self.label, str(self))


__all__ = ["Sentence", "WIDTH", "rendered"]
