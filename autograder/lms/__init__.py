"""Grades into Canvas and Moodle: ``nbgrader export`` plugins written for the importers' own rules.

``nbgrader export --exporter autograder.lms.CanvasExport --assignment=module6 --to canvas.csv`` (or
``MoodleExport``) writes one CSV per assignment that the LMS's import reads exactly as the gradebook
says, or leaves a student out and says why. What holds for every file:

* A row is written only for a student the LMS can match **by an id** (Canvas: ``ID``, SIS User ID, SIS
  Login ID; Moodle: email, username or ID number, ``c.MoodleExport.identifier``), taken from the roster
  (``c.LmsExport.roster``: the LMS's own gradebook export as downloaded, or the kit's CSV). Students
  without one, or sharing one with another account, are left out and listed (the log,
  ``<file>.unmatched.csv``, ``<file>.preview.txt``). No row is ever written with an empty id.
* A student without a grade is left out (no change in the LMS); ``c.LmsExport.missing`` can make that
  ``zero`` or (Canvas) ``excuse``. Grades that still need a manual grade refuse the export unless
  ``c.LmsExport.allow_pending`` (then the file name says ``.partial``).
* Scores are nbgrader's total after the late penalty (as nbgrader's ``CsvExportPlugin``: never below
  0), written on the LMS assignment's scale: percentages by default (Canvas reads ``87.5%``; Moodle, the
  number out of 100, a new grade item's maximum), or points per ``c.LmsExport.points``.
* Only assignments with collected submissions are exported unless ``--assignment`` names them.
* Cells are safe in a spreadsheet (OWASP), UTF-8 with a byte-order mark; ids are compared after NFC.

Modules: :mod:`.cells` (one cell), :mod:`.roster` (the three roster formats), :mod:`.gradebook` (what
nbgrader says), :mod:`.plan` (the export as data), :mod:`.base` (settings and stages),
:mod:`.canvas` and :mod:`.moodle` (each importer's rules), :mod:`.preview` (the reports).
"""

from __future__ import annotations

from .base import LmsExport
from .canvas import CanvasExport
from .moodle import MoodleExport
from .plan import ExportRefused
from .roster import KIT_COLUMNS, Roster, RosterEntry, read_roster

__all__ = ["CanvasExport", "ExportRefused", "KIT_COLUMNS", "LmsExport", "MoodleExport", "Roster", "RosterEntry",
           "read_roster"]
