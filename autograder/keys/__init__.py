"""Answer keys of the concept exercises (instructor-only: the checks import them, students never see them).

One module per notebook, ``exNN_<slug>.py``. Numeric answers are computed from the seed's data by
``course.reference`` rather than typed in, so the key and the reference cannot drift apart.
"""
