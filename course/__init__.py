"""Module 6, student side (distribution ``module6-course``): what a student's kernel imports.

* :mod:`course.widgets`: interactive explorers of truncation, KL and the KL chain rule.
* :mod:`course.grading_environment`: what graded code may import, checked at the desk by the open checks.
* :mod:`course.chat`: a chat template rendered as transformers renders one, and a toy tokenizer (exercise 26).
* :mod:`course.open_checks`: what the open checks fail with, one sentence saying what failed and for which input.
* :mod:`course.variants`: whose numbers a notebook holds (the id typed, the hub's sign-in, or one remembered
  for every notebook), each family's parameters, and the worked example's answers (variant 0's).

This package holds no exercise answer: no function with a graded name, no key, no worked solution (the
worked example's answers, which the course notes publish, excepted).
It never imports the instructor's package (:mod:`autograder`), which depends on it, not the reverse.
"""
