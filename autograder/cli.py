"""``autograder``: the instructor's command line.

``autograder grade ASSIGNMENT`` grades a batch; ``autograder variants ASSIGNMENT --student ID`` prints
one student's numbers and the answers expected for them (:mod:`autograder.variant_listing`);
``autograder roster`` and ``autograder extension`` keep the class and its deadlines in the gradebook
(:mod:`autograder.roster`, :mod:`autograder.extension`); ``autograder release``, ``autograder selfstudy`` and
``autograder demo`` run the authoring and demo tools, and ``autograder student-distribution`` builds the
students' tree of a course (each keeps its code in its own module: :mod:`autograder.authoring.release`,
:mod:`autograder.authoring.selfstudy_build`, :mod:`autograder.demo`,
:mod:`autograder.authoring.student_distribution`). Problems the user can fix print one line ``autograder: error: ...`` and exit
with status 2; see ``autograder grade --help`` for every status.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys

EXIT_STATUSES = """\
exit status:
  0  every notebook was graded (whatever the scores)
  2  nothing was graded: bad arguments, not a course directory, no gradebook, gradebook
     unreachable or its driver missing, assignment unknown, optional dependency missing
  3  the batch ran but some notebooks could not be graded because of the grader itself
     (listed on stderr; they have no grade, run again to retry)
  1  the grader crashed (a bug: the traceback is printed)
"""

#: An nbgrader setting on the command line, as nbgrader's apps take it: ``--Class.trait=value``.
_NBGRADER_SETTING = re.compile(r"--[A-Za-z_]\w*(\.[A-Za-z_]\w*)+=.*", re.S)

#: Subcommands that read nbgrader's configuration and take ``--Class.trait=value`` settings after it.
_TAKE_NBGRADER_SETTINGS = ("grade", "roster", "extension")

#: Subcommands that hand their arguments to a module's own ``main(argv)``.
TOOLS = {
    "release": ("autograder.authoring.release", "regenerate release/ from source/ with nbgrader"),
    "selfstudy": ("autograder.authoring.selfstudy_build", "build the self-study notebooks"),
    "demo": ("autograder.demo.__main__", "grade a simulated class in a scratch course and print the table"),
    "student-distribution": ("autograder.authoring.student_distribution",
                             "build the students' tree (hub image, Binder) of a course's release notebooks"),
    "add-to-course": ("autograder.authoring.add_to_course",
                      "add module6 and module6_further to an nbgrader course you already run"),
}


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("module6-instructor")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown (not installed)"


def _grade_limits() -> str:
    """The limits every notebook is graded under, from the one table (:mod:`autograder.limits`)."""
    from autograder.limits import FILE, SANDBOX_JOB, TABLE, table_text

    return ("limits (autograder/limits.py; --timeout sets the seconds, --memory the memory):\n"
            + table_text(limit for limit in TABLE if limit in SANDBOX_JOB + FILE))


def _parser() -> argparse.ArgumentParser:
    from autograder.limits import CALL_SECONDS, CELL_SECONDS, MEMORY_MB, WALL_SECONDS

    parser = argparse.ArgumentParser(prog="autograder", description="The Module 6 course kit for instructors.")
    parser.add_argument("--version", action="version", version=f"autograder (module6-instructor) {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    grade = commands.add_parser(
        "grade", help="grade submitted/<student>/ASSIGNMENT/*.ipynb into the gradebook, autograded/ and feedback/",
        description="Grade every submission in the sandbox. Run in the course directory (the one with "
                    "nbgrader_config.py), after `nbgrader generate_assignment` and `nbgrader collect`. "
                    "The configuration is nbgrader's own, read as its commands read it (every "
                    "nbgrader_config.py of `jupyter --paths`, then the course's); nbgrader settings given "
                    "as --Class.trait=value (e.g. --CourseDirectory.db_url=sqlite:///other.db) come last.",
        epilog=_grade_limits() + "\n\n" + EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    grade.add_argument("assignment", help="assignment name, e.g. module6")
    grade.add_argument("--student", action="append", dest="students", metavar="ID",
                       help="grade only this student (repeatable)")
    grade.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="worker processes (default: the number of cores)")
    grade.add_argument("--dask", metavar="ADDRESS",
                       help="grade on a Dask cluster, e.g. tcp://scheduler:8786 (pip install 'module6-instructor[dask]')")
    grade.add_argument("--report", metavar="FILE", help="write one JSON object per graded cell to FILE")
    grade.add_argument("--timeout", type=float, default=None, metavar="S",
                       help=f"seconds per notebook (default {WALL_SECONDS.value:g}; each cell at most "
                            f"{CELL_SECONDS.value:g}, each call of a check at most {CALL_SECONDS.value:g})")
    grade.add_argument("--memory", type=int, default=None, metavar="MB",
                       help=f"memory per sandboxed process (default {MEMORY_MB.value})")
    grade.add_argument("--force", action="store_true", help="grade again even unchanged submissions")
    grade.add_argument("--course-dir", default=".", metavar="DIR", help="course directory (default: .)")
    grade.add_argument("--no-progress", action="store_true", help="no progress bar")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run student code WITHOUT the bubblewrap sandbox (it can then read the reference "
                            "solutions and the course files); only for trying the grader where bubblewrap "
                            "cannot run, never for credit")
    _add_insight_commands(commands)
    _add_variants_command(commands)
    _add_class_commands(commands)
    for name, (module, summary) in TOOLS.items():
        commands.add_parser(name, help=f"{summary} (`autograder {name} --help` for its options)", add_help=False)
    return parser


def _add_insight_commands(commands) -> None:
    """``autograder report`` and ``autograder similarity`` (see :mod:`autograder.insight`)."""
    from autograder.insight.similarity import MIN_SIMILARITY, MIN_TEXT_SIMILARITY

    report = commands.add_parser(
        "report", help="a class report (HTML page and CSV files): scores, pass rates, misconceptions, crashes",
        description="Run in the course directory once ASSIGNMENT is graded, by `autograder grade`, "
                    "`nbgrader autograde` or formgrader's Autograde button (the gradebook and autograded/ are read).")
    report.add_argument("assignment", help="assignment name, e.g. module6")
    report.add_argument("--results", metavar="FILE",
                        help="rows written by `autograder grade --report FILE` (default: the gradebook and the "
                             "autograded notebooks)")
    report.add_argument("--no-gradebook", action="store_true", help="ignore scores a person gave in formgrader")
    similarity = commands.add_parser(
        "similarity", help="pairs of students with near-identical answer cells (a signal to look at, not a verdict)",
        description="Run in the course directory; compares submitted/<student>/ASSIGNMENT/*.ipynb.")
    similarity.add_argument("assignment", help="assignment name, e.g. module6")
    similarity.add_argument("--min-similarity", type=float, default=None, metavar="F",
                            help=f"weighted similarity a cell pair must reach, between 0 and 1 (default "
                                 f"{MIN_SIMILARITY:g} for code, {MIN_TEXT_SIMILARITY:g} for written answers, "
                                 "compared word for word)")
    for sub in (report, similarity):
        sub.add_argument("--course-dir", default=".", metavar="DIR", help="course directory (default: .)")
        sub.add_argument("--output", metavar="DIR", help="folder for the pages (default: COURSE_DIR/reports)")


def _add_variants_command(commands) -> None:
    """``autograder variants`` (see :mod:`autograder.variant_listing`)."""
    variants = commands.add_parser(
        "variants", help="one student's numbers, and the answers expected for them (the key), for every exercise "
                         "of ASSIGNMENT that varies",
        description="Prints, for every exercise of ASSIGNMENT whose numbers or hidden inputs vary per student, "
                    "the student's parameters and the answers the grader expects for them (instructor only: "
                    "those are keys, computed from the reference, not the student's answers). Run in the course "
                    "directory: its secret draws the hidden inputs.")
    variants.add_argument("assignment", help="assignment name, e.g. module6")
    variants.add_argument("--student", required=True, metavar="ID", help="the student's nbgrader id")
    variants.add_argument("--json", action="store_true",
                          help='print {stem: {"parameters": {...}, "answers": {variable: expected value}}} as '
                               'JSON ("answers" holds the key for the numbers, not what the student answered)')
    variants.add_argument("--any-id", action="store_true",
                          help="show the numbers of an id the gradebook does not have (yet)")
    variants.add_argument("--course-dir", default=".", metavar="DIR", help="course directory (default: .)")


def _add_class_commands(commands) -> None:
    """``autograder roster`` and ``autograder extension`` (:mod:`autograder.roster`, :mod:`autograder.extension`)."""
    from autograder.extension import UNTIL_FORMS

    roster = commands.add_parser(
        "roster", help="add the class to the gradebook from the roster CSV, with names (formgrader shows them)",
        description="Adds or updates every student of ROSTER (the CSV of c.LmsExport.roster: nbgrader_id, name, "
                    "email, ...) in the course's gradebook, after checking every id, name and e-mail; a roster "
                    "with any bad row changes nothing. Names: 'Family, Given' is split at the comma, otherwise "
                    "the last word is the last name. Students missing from the roster are left as they are. "
                    "nbgrader settings given as --Class.trait=value come last, as for `autograder grade`.")
    roster.add_argument("roster", nargs="?", metavar="ROSTER.csv",
                        help="the roster (default: c.LmsExport.roster of the course's configuration)")
    roster.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    roster.add_argument("--course-dir", default=".", metavar="DIR", help="course directory (default: .)")
    extension = commands.add_parser(
        "extension", help="give one student more time (or take it back); late penalties follow everywhere",
        description="Records STUDENT's extension for ASSIGNMENT in the course's gradebook (nbgrader's "
                    "SubmittedAssignment.extension, added to the assignment's due date) and applies the late "
                    "penalties of a graded submission again with the course's LateSubmissionPlugin, so "
                    "`nbgrader export`, formgrader, `autograder grade` and `nbgrader autograde` all count from "
                    "the new deadline. Without --until, --days or --remove it shows the student's deadline. "
                    f"Times are UTC unless they name a zone: {UNTIL_FORMS}. nbgrader settings given as "
                    "--Class.trait=value come last, as for `autograder grade`.")
    extension.add_argument("assignment", help="assignment name, e.g. module6")
    extension.add_argument("--student", required=True, metavar="ID", help="the student's nbgrader id")
    given = extension.add_mutually_exclusive_group()
    given.add_argument("--until", metavar="TIME", help='the new deadline, e.g. "2026-12-20 17:00 Europe/Berlin"')
    given.add_argument("--days", type=float, metavar="N", help="the due date plus N days (fractions allowed: 0.5)")
    given.add_argument("--remove", action="store_true", help="take the extension back")
    extension.add_argument("--course-dir", default=".", metavar="DIR", help="course directory (default: .)")


def _run_roster(args) -> int:
    from autograder import roster
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import course_directory, open_gradebook

    try:
        coursedir = course_directory(args.course_dir, args.nbgrader_args)
        path = args.roster
        if path is None:
            path = roster.configured_roster(coursedir.config, coursedir.root)
            if path is None:
                return _usage_error("give the roster file (autograder roster ROSTER.csv), or set "
                                    "c.LmsExport.roster in nbgrader_config.py")
        link_column = coursedir.config.get("LmsExport", {}).get("roster_id_column", "")
        students = roster.read(path, link_column)
        with open_gradebook(coursedir) as gb:
            done = roster.apply(gb, students, dry_run=args.dry_run)
    except (GradingError, roster.RosterError) as error:
        return _usage_error(str(error))
    from sqlalchemy.engine import make_url
    where = make_url(coursedir.db_url).render_as_string(hide_password=True)
    verb = "would be" if args.dry_run else "were"
    print(f"{path}: {len(students)} students; {len(done.added)} {verb} added to the gradebook, "
          f"{len(done.updated)} updated, {len(done.unchanged)} unchanged ({where})")
    if done.not_in_roster:  # ids through repr: an odd one stays visible
        print(f"in the gradebook but not in the roster (left as they are): "
              f"{', '.join(map(repr, done.not_in_roster[:50]))}" + (" ..." if len(done.not_in_roster) > 50 else ""))
    return 0


def _run_extension(args) -> int:
    from autograder import extension
    from autograder.grading.errors import GradingError
    from autograder.grading.gradebook import course_directory

    try:
        until = extension.parse_until(args.until) if args.until is not None else None
        coursedir = course_directory(args.course_dir, args.nbgrader_args)
        made = extension.give(coursedir, args.assignment, args.student, until=until, days=args.days,
                              remove=args.remove)
    except (GradingError, extension.ExtensionError) as error:
        return _usage_error(str(error))
    zone = coursedir.config.NbGraderAPI.get("timezone", "UTC")  # the zone formgrader shows times in
    print(extension.describe(made, removed=args.remove, display_zone=str(zone)))
    return 0


def _run_variants(args) -> int:
    from autograder import variant_listing

    try:
        made = variant_listing.listing(args.course_dir, args.assignment, args.student, any_id=args.any_id)
    except variant_listing.ListingError as error:
        return _usage_error(str(error))
    for note in made.notes:
        print(f"autograder: note: {note}", file=sys.stderr)
    print(variant_listing.as_json(made) if args.json else variant_listing.text(made))
    return 0


def _run_insight(args) -> int:
    from autograder.grading.errors import GradingError
    from autograder.insight.results import ResultsError

    try:
        if args.command == "report":
            from autograder.insight import report
            made = report.build(args.course_dir, args.assignment, results=args.results, output=args.output,
                                use_gradebook=not args.no_gradebook)
            found = made["report"]
            print(f"class report: {made['html']}\nCSV: {made['groups_csv']}, {made['misconceptions_csv']}, "
                  f"{made['matches_csv']}\n{len(found.students)} students in {made['seconds']:.2f} s")
            if found.matches:
                print(f"answers that fit other numbers than the student's own: {len(found.copied)} fit another "
                      f"student's, {len(found.example_numbers)} the example numbers (see the report's section)")
                for match in found.matches[:10]:  # ids through repr: a control character stays visible
                    whose = "the example numbers" if match.source is None else f"the numbers of {match.source!r}"
                    print(f"  {match.student!r}: {match.values} values fit {whose} in {', '.join(match.stems)}")
            return 0
        from autograder.insight import similarity
        if args.min_similarity is not None and not 0.0 < args.min_similarity <= 1.0:
            print("autograder: --min-similarity must be in (0, 1]", file=sys.stderr)
            return 2
        made = similarity.build(args.course_dir, args.assignment, output=args.output,
                                **({"min_similarity": args.min_similarity} if args.min_similarity else {}))
        print(f"similar answers: {made['html']}\n{len(made['pairs'])} pairs among {made['students']} students "
              f"in {made['seconds']:.2f} s" + (f"; {len(made['not_compared'])} cells not compared, listed in "
                                               f"{made['not_compared_csv']}" if made["not_compared"] else ""))
        return 0
    except (ResultsError, FileNotFoundError, GradingError) as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        return 2


def _usage_error(message: str) -> int:
    print(f"autograder: error: {message}", file=sys.stderr)
    return 2


def _check_grade_arguments(args) -> str | None:
    if args.jobs is not None and args.jobs < 1:
        return f"--jobs must be at least 1, got {args.jobs}"
    if args.timeout is not None and not args.timeout > 0:
        return f"--timeout must be a positive number of seconds, got {args.timeout:g}"
    if args.memory is not None and args.memory < 64:
        return f"--memory must be at least 64 (MB), got {args.memory}"
    if args.report is not None and os.path.isdir(args.report):
        return f"--report must name a file, got the directory {args.report}"
    if args.report is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.report))):
        # Found out before grading, not after: the rows of the whole batch would have nowhere to go.
        return f"--report must name a file in an existing folder, got {args.report}"
    return None


def grade(args) -> int:
    """``autograder grade``: preflight checks, then :func:`autograder.grading.batch.run`."""
    from autograder.grading import preflight
    from autograder.grading.errors import GradingError
    from autograder.grading.sandbox import SandboxError

    problem = _check_grade_arguments(args)
    if problem:
        return _usage_error(problem)
    try:
        if args.dask:
            preflight.check_dask()
        from autograder.grading.batch import Options, run

        options = Options(assignment=args.assignment, students=args.students, jobs=args.jobs, dask=args.dask,
                          report=args.report, timeout=args.timeout, memory_mb=args.memory, force=args.force,
                          course_dir=args.course_dir, progress=not args.no_progress,
                          nbgrader_args=tuple(args.nbgrader_args))
        if args.no_sandbox:  # explicit only: the summary then says the run was not sandboxed
            options.use_bwrap = False
        return run(options)
    except (GradingError, SandboxError) as error:
        return _usage_error(str(error))


def main(argv: list | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TOOLS:
        module = importlib.import_module(TOOLS[argv[0]][0])
        return module.main(argv[1:], prog=f"autograder {argv[0]}")
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    settings = [item for item in extra if _NBGRADER_SETTING.fullmatch(item)]
    configured = args.command in _TAKE_NBGRADER_SETTINGS
    if not configured and extra or len(settings) != len(extra):
        unknown = [item for item in extra if item not in settings or not configured]
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.nbgrader_args = settings
    logging.basicConfig(level=logging.WARNING, format="autograder: %(levelname)s: %(message)s")
    if args.command in ("report", "similarity"):
        return _run_insight(args)
    if args.command == "variants":
        return _run_variants(args)
    if args.command == "roster":
        return _run_roster(args)
    if args.command == "extension":
        return _run_extension(args)
    try:
        return grade(args)
    except KeyboardInterrupt:
        print("autograder: interrupted; notebooks already stored keep their grades", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
