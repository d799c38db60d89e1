"""Hostile submissions for the batch grader, and a tiny course to grade them in (see ``toy.py``)."""
