"""What grading tells a student and an instructor, in one package.

* :mod:`autograder.feedback.page`: the kit's own feedback page (``autograder grade`` writes it) and the
  verdicts each test cell carries as data;
* :mod:`autograder.feedback.nbgrader_pages`: the steps and template that make ``nbgrader
  generate_feedback``'s page say the same thing (``templates/module6_feedback``);
* :mod:`autograder.feedback.redaction`: hidden test code cut out of what nbgrader renders;
* :mod:`autograder.feedback.markdown`: written answers (and notebook prose) rendered as CommonMark and passed
  through an allow-list sanitizer, for every page that shows them, formgrader's included;
* :mod:`autograder.feedback.math_markup`: TeX to MathML, and formulas found in the course's own Markdown.
"""
