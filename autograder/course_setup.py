"""The one switch: the Module 6 kit on, in an nbgrader course's config, for the kit's own assignments only.

``use_module6(c)`` is what a course's ``nbgrader_config.py`` calls: this repository's own (the kit's course)
and the marked block ``autograder add-to-course`` writes into another instructor's course. It sets only what
the kit needs for ``module6`` and ``module6_further`` (:data:`autograder.assignment.ASSIGNMENTS`); everything
the instructor owns stays theirs: course id, root, exchange root, ``db_url``, ``ignore``, ``Execute``,
``Validator``, their ``c.ClearSolutions`` stubs, their ``c.Autograde`` and ``c.GenerateFeedback`` settings.

Per assignment (the kit's get the kit, the others nbgrader's own behaviour, in the same run):

* ``nbgrader autograde`` and formgrader's Autograde button: the sandboxed grader
  (:class:`~autograder.grading.nbgrader_bridge.SandboxedAutograde`) for the kit's assignments, nbgrader's
  in-kernel ``Autograde`` for the others (:class:`~autograder.grading.nbgrader_bridge.ScopedAutograde`);
* ``nbgrader generate_assignment``: the kit's release steps and stubs act on the kit's notebooks only
  (:func:`~autograder.authoring.release_preprocessors.release_steps`);
* ``nbgrader generate_feedback`` / ``release_feedback`` (and formgrader's button): the kit's readable,
  redacted page, made again before release, for the kit's assignments; nbgrader's page and release for
  the others (:class:`~autograder.feedback.converters.ScopedGenerateFeedback`).

Course-wide, on purpose: they protect the hub and the instructor's session, whatever the assignment:

* the exchange (:mod:`autograder.grading.exchange`): collect takes a submission only from the student's own
  Unix account and only for a student of the gradebook, by received time; release makes the inbox
  sticky. A submission of ``ps1`` forged in a classmate's name is as harmful as one of ``module6``;
* submission times read from the exchange's receipt (an unreadable ``timestamp.txt`` is a warning);
* formgrader's pages and grading view (:mod:`autograder.feedback.formgrader_guard`,
  ``c.HTMLExporter.preprocessors``): student text shown as text in the instructor's browser.
"""

from __future__ import annotations


def use_module6(c) -> None:
    """Turn the Module 6 kit on in nbgrader config ``c`` for its assignments only (module docstring)."""
    from autograder.assignment import ASSIGNMENTS
    from autograder.authoring.release_preprocessors import release_steps
    from autograder.feedback import nbgrader_pages
    from autograder.grading import nbgrader_bridge

    c.Module6Scope.assignments = list(ASSIGNMENTS)
    nbgrader_bridge.install(c)
    c.GenerateAssignment.preprocessors = release_steps()
    nbgrader_pages.configure(c)


__all__ = ["use_module6"]
