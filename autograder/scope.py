"""Which assignments of an nbgrader course the kit serves; every other one stays nbgrader's own.

The kit lives in someone else's course: beside ``module6`` the instructor has ``ps1``, an nbgrader
assignment with ``assert`` tests graded in a kernel. A converter that nbgrader builds for a whole run
(``nbgrader autograde ASSIGNMENT``, ``nbgrader generate_feedback``, formgrader's buttons) is one class
named in nbgrader's modules, so the kit cannot simply replace it: :class:`Scope` says which assignments
are the kit's (``c.Module6Scope.assignments``, glob patterns; :func:`autograder.course_setup.use_module6`
sets the kit's two), and :func:`dispatch` runs each assignment of the run with the converter it belongs to:
the kit's converter (configured under its own class name, e.g. ``c.SandboxedAutograde``) for the kit's
assignments, nbgrader's own class (with the instructor's ``c.Autograde`` settings) for the others.

Standing alone, a course that installs only :func:`autograder.grading.nbgrader_bridge.install` keeps the
bridge's old scope, every assignment (``["*"]``): the toy courses of the tests are graded that way.
"""

from __future__ import annotations

import fnmatch
import glob
import os

from traitlets import List, Unicode
from traitlets.config import Configurable


class Module6Scope(Configurable):
    """The assignments the kit's converters and exchange steps act on (``c.Module6Scope.assignments``)."""

    assignments = List(Unicode(), default_value=["*"],
                       help="assignment names (glob patterns) the Module 6 kit grades, releases and writes feedback "
                            "for; every other assignment keeps nbgrader's own behaviour").tag(config=True)

    def covers(self, assignment: str) -> bool:
        return any(fnmatch.fnmatchcase(assignment, pattern) for pattern in self.assignments)


def covers(config, assignment: str) -> bool:
    """Whether ``assignment`` is one of the kit's in ``config`` (a traitlets ``Config``)."""
    return Module6Scope(config=config).covers(assignment)


_DEFAULT_LAYOUT = os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}")


def matching_assignments(coursedir, step: str) -> list:
    """The assignment names a run over ``coursedir.assignment_id`` (a name or a glob) meets in folder ``step``.

    A plain name is itself. A glob is matched against ``<root>/<step>/<student>/<assignment>`` folders
    (nbgrader's default layout; names only, nothing is opened or followed); under another layout the
    glob is returned as it is, for nbgrader's own converter to resolve.
    """
    pattern = coursedir.assignment_id
    if not glob.has_magic(pattern):
        return [pattern]
    if coursedir.directory_structure != _DEFAULT_LAYOUT:
        return [pattern]
    base = os.path.join(coursedir.root, step)
    names = set()
    try:
        students = list(os.scandir(base))
    except OSError:
        return []
    for student in students:
        if not fnmatch.fnmatchcase(student.name, coursedir.student_id) or not student.is_dir(follow_symlinks=False):
            continue
        try:
            entries = list(os.scandir(student.path))
        except OSError:
            continue
        names.update(entry.name for entry in entries
                     if fnmatch.fnmatchcase(entry.name, pattern) and entry.is_dir(follow_symlinks=False))
    return sorted(names)


def dispatch(converter, step: str, kit_class, plain_start, carried: tuple = ()) -> None:
    """Run ``converter`` (an nbgrader converter the kit put behind nbgrader's class name) assignment by assignment.

    The kit's assignments go to ``kit_class`` (built with the converter's course directory, parent and the
    attribute values named in ``carried``, which nbgrader's API sets after building it, e.g. ``force``);
    the others to ``plain_start(converter)``, nbgrader's own ``start``. A run whose assignments are all
    of one kind is one run of that kind, over the same name or glob. In a mixed run the kit's assignments
    go first (a refusal of the kit, e.g. no sandbox, stops it before anything was graded) and each
    assignment's failure is reported and the others still run; the run then fails with nbgrader's error.
    """
    from nbgrader.converters.base import NbGraderException
    from nbgrader.utils import temp_attrs

    scope = Module6Scope(parent=converter)
    names = matching_assignments(converter.coursedir, step)
    kit = [name for name in names if scope.covers(name)]
    plain = [name for name in names if not scope.covers(name)]

    def run_kit():
        kit_class(coursedir=converter.coursedir, parent=converter.parent,
                  **{name: getattr(converter, name) for name in carried}).start()

    if not kit:
        plain_start(converter)
        return
    if not plain:
        run_kit()
        return
    failed = []
    for name in kit + plain:
        with temp_attrs(converter.coursedir, assignment_id=name):
            try:
                run_kit() if name in kit else plain_start(converter)
            except NbGraderException as error:
                converter.log.error("%s: %s", name, error)
                failed.append(name)
    if failed:
        raise NbGraderException(f"assignments that failed: {', '.join(failed)} (see the errors above)")


__all__ = ["Module6Scope", "covers", "dispatch", "matching_assignments"]
