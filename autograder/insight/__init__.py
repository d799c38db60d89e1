"""What a graded class tells the instructor: the class report and the similarity signal.

* :mod:`autograder.insight.catalogue`: every misconception key a check can report, with its sentence;
* :mod:`autograder.insight.results`: reading the grading results (report rows) and the gradebook;
* :mod:`autograder.insight.report`: ``autograder report ASSIGNMENT`` (one HTML page and CSV files);
* :mod:`autograder.insight.variant_matches`: answers that fit another student's numbers (or the example
  numbers) rather than their own, re-judged from the values the grader stored (a section of the report);
* :mod:`autograder.insight.similarity`: ``autograder similarity ASSIGNMENT`` (near-identical answers).
"""
