"""Module 6, student side (distribution ``module6-course``): what a student's kernel imports.

* :mod:`course.widgets`: interactive explorers of truncation, KL and the KL chain rule.
* :mod:`course.grading_environment`: what graded code may import, checked at the desk by the open checks.
* :mod:`course.chat`: a chat template rendered as transformers renders one, and a toy tokenizer (exercise 26).

This package holds no exercise answer: no function with a graded name, no key, no worked solution.
It never imports the instructor's package (:mod:`autograder`), which depends on it, not the reverse.
"""
