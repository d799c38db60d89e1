"""``nbgrader release_feedback`` that never releases a stale page.

nbgrader 0.9.6 releases whatever HTML lies in ``feedback/<student>/<assignment>/``, however old: a page
generated before a manual grade, a comment or a regrade went out as it was, and a page written by
``autograder grade`` (which has no ``timestamp.txt`` beside it) made the command crash with
``FileNotFoundError``. :class:`CurrentReleaseFeedback` (``c.ExchangeFactory.release_feedback``, set by
:func:`autograder.feedback.nbgrader_pages.configure`) first makes the pages of the kit's assignments of the
run again (:class:`~autograder.feedback.converters.Module6Feedback`, for the same students, with ``force``:
each student's feedback folder is emptied and written again from ``autograded/`` and the gradebook), then
releases: what a student fetches holds the scores and comments of the moment of release, whichever commands
ran before and in what order. A notebook whose page cannot be generated is not released (its old page was
removed with the folder). An assignment that is not the kit's (``c.Module6Scope.assignments``) is released
as nbgrader releases it.
"""

from __future__ import annotations

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback


class CurrentReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's release of feedback, after generating every page again from the gradebook."""

    def copy_files(self):
        """Generate the kit's assignments of this run again (:class:`~autograder.feedback.converters.Module6Feedback`,
        always ``force``), then release as nbgrader does. An assignment that is not the kit's is released
        as nbgrader releases it, nothing generated (:mod:`autograder.scope`)."""
        from nbgrader.converters.base import NbGraderException
        from nbgrader.utils import temp_attrs

        from autograder.feedback.converters import Module6Feedback
        from autograder.scope import Module6Scope, matching_assignments

        scope = Module6Scope(parent=self)
        kit = [name for name in matching_assignments(self.coursedir, self.coursedir.autograded_directory)
               if scope.covers(name)]
        for name in kit:
            self.log.info("Generating the feedback of %s again before releasing it (current scores and comments)", name)
            with temp_attrs(self.coursedir, assignment_id=name):
                converter = Module6Feedback(coursedir=self.coursedir, parent=self)
                converter.force = True
                try:
                    converter.start()
                except NbGraderException:
                    # nbgrader has logged which notebooks failed; their folders were emptied, so no stale page goes out.
                    self.log.error("Some feedback could not be generated; only the pages generated now are released")
        super().copy_files()


__all__ = ["CurrentReleaseFeedback"]
