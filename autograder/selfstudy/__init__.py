"""Self-study mode: full local checks with feedback, hints, and worked solutions revealed after a try.

In a self-study notebook each check cell calls :func:`check` (every public and hidden case of that
part, run in this kernel, with feedback and the points) and the last cell calls :func:`reveal`,
which offers hints at once and the worked solution only after the learner has tried. A *try* is one
run through the notebook on answers that differ from the template (a stub that still raises
``NotImplementedError``, variables still ``None``): the parts checked one after the other belong to one
try, and a part checked again with other answers starts the next (see :func:`record_try`). Running
the check cells, or the whole notebook again, on the same answers scores them without counting another
try; nbgrader's Validate (its own kernel) counts none. Progress is kept in
``selfstudy-progress.json`` beside the notebooks (a plain, visible file: one entry per notebook with
the number of tries and the best score of each part), so a restarted kernel remembers; :func:`progress`
prints it as a table. A learner who insists can reveal the solution before trying: the button asks for
one confirmation, and ``reveal(stem, force=True)`` skips it.

An exercise whose numbers vary (a family in :mod:`course.variants`) starts on the example numbers;
after a first try the panel's "New numbers" button, or :func:`new_numbers`, draws a fresh variant
(:mod:`autograder.selfstudy.practice`): from then on the checks grade it and the worked solution is
filled with its values, and the solution of new numbers opens with one click once they were tried.

Modules: :mod:`.progress_file` (the progress file and the panels a try refreshes), :mod:`.practice`
(new numbers), :mod:`.checking` (the check cells and the progress table), :mod:`.panel` (the hints
and worked-solution panel). This package only names what a notebook calls.
"""


from __future__ import annotations

from .checking import NOT_A_TRY, answers_fingerprint, check, progress
from .panel import Reveal, load_solution, reveal
from .practice import new_numbers, practice_numbers
from .progress_file import PROGRESS_FILE, has_attempted, record_try, tries

__all__ = ["NOT_A_TRY", "PROGRESS_FILE", "Reveal", "answers_fingerprint", "check", "has_attempted", "load_solution",
           "new_numbers", "practice_numbers", "progress", "record_try", "reveal", "tries"]
