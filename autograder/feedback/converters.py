"""The converters behind nbgrader's ``GenerateFeedback`` name: the kit's for its assignments, nbgrader's for the rest.

:func:`autograder.feedback.nbgrader_pages.configure` points nbgrader's name (command, formgrader's button)
at :class:`ScopedGenerateFeedback` and configures :class:`Module6Feedback` under its own name
(``c.Module6Feedback``: the kit's steps, exporter and ``force``); ``nbgrader release_feedback``
(:class:`autograder.feedback.release.CurrentReleaseFeedback`) makes the kit's pages again with it.
"""

from __future__ import annotations

# The defining module's class: nbgrader.converters.GenerateFeedback is the name configure() repoints.
from nbgrader.converters.generate_feedback import GenerateFeedback as _NbgraderGenerateFeedback


class Module6Feedback(_NbgraderGenerateFeedback):
    """``nbgrader generate_feedback`` for the kit's assignments: the kit's steps and exporter (``c.Module6Feedback``)."""


class ScopedGenerateFeedback(_NbgraderGenerateFeedback):
    """The converter behind nbgrader's ``GenerateFeedback`` name (command, formgrader's button).

    Each assignment of the run goes to :class:`Module6Feedback` when ``c.Module6Scope.assignments`` covers it,
    and to nbgrader's own ``GenerateFeedback.start`` (the course's ``c.GenerateFeedback`` settings) when it
    does not (:func:`autograder.scope.dispatch`).
    """

    def start(self) -> None:
        from autograder.scope import dispatch

        dispatch(self, self.coursedir.autograded_directory, Module6Feedback, _NbgraderGenerateFeedback.start)


__all__ = ["Module6Feedback", "ScopedGenerateFeedback"]
