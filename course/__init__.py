"""Module 6 course package: what a student's kernel may import.

* :mod:`course.reference`: reference NumPy solutions (the truth the checks compare with);
* :mod:`course.widgets`: interactive explorers of truncation and KL.

Nothing here imports the instructor-only :mod:`autograder` package.
"""
