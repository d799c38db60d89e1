"""Before a batch starts: is this a course directory, is there a gradebook, can we reach it, is Dask there?

Every problem is a :class:`~autograder.grading.errors.GradingError` with one sentence that names
what is wrong and what to do; nothing here creates a file (nbgrader's ``Gradebook`` creates an empty
``gradebook.db`` wherever it is opened, so the file is looked for first).
"""

from __future__ import annotations

from pathlib import Path

from autograder.grading.errors import GradingError

DISTRIBUTION = "module6-instructor"
#: What puts an assignment (and its notebooks) into the gradebook on a fresh clone. ``--force``: the
#: committed ``release/<assignment>`` makes nbgrader skip the assignment otherwise, recording nothing;
#: forced, it rebuilds that folder byte-identically (the same command ``make release`` runs).
SETUP_COMMAND = "nbgrader generate_assignment {assignment} --force"


def check_course_root(root: str | Path) -> Path:
    """``root`` as an absolute path, if it is a course directory (a folder with ``nbgrader_config.py``)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise GradingError(f"--course-dir: {root} is not a directory")
    if not (path / "nbgrader_config.py").is_file():
        raise GradingError(f"{path.resolve()} is not a course directory (no nbgrader_config.py): run in the "
                           "course directory or pass --course-dir DIR")
    return path.resolve()


def check_gradebook(db_url: str, root: str | Path) -> None:
    """The gradebook at ``db_url`` exists (SQLite) or its driver is installed and it answers (others)."""
    from sqlalchemy import exc
    from sqlalchemy.engine import make_url

    try:
        url = make_url(db_url)
    except exc.ArgumentError:
        raise GradingError(f"CourseDirectory.db_url is not a database URL: {db_url!r}") from None
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        database = url.database
        if not database or database == ":memory:":
            raise GradingError(f"the gradebook {shown} is not a file: set CourseDirectory.db_url to sqlite:///PATH")
        path = Path(database)
        if not path.is_absolute():
            path = Path(root) / path
        if not path.is_file():
            raise GradingError(f"no gradebook at {path}: run `{SETUP_COMMAND.format(assignment='ASSIGNMENT')}` in "
                               f"{Path(root)} first (or check --course-dir)")
        return
    try:
        url.get_dialect().import_dbapi()
    except (ImportError, exc.NoSuchModuleError) as error:
        extra = ""
        if url.get_backend_name() == "postgresql":
            extra = (f" (pip install '{DISTRIBUTION}[postgres]'" +
                     (")" if url.get_driver_name() == "psycopg2" else " and use a postgresql+psycopg2:// URL)"))
        raise GradingError(f"the gradebook is at {shown} but its database driver is missing: "
                           f"{error}{extra}") from None
    from sqlalchemy import create_engine

    engine = create_engine(url)
    try:
        with engine.connect():
            pass
    except exc.SQLAlchemyError as error:
        first = str(getattr(error, "orig", error)).strip().splitlines()
        raise GradingError(f"cannot reach the gradebook at {shown}: {first[0] if first else type(error).__name__}") \
            from None
    finally:
        engine.dispose()


def check_dask() -> None:
    """``distributed`` imports (``--dask`` needs the ``dask`` extra)."""
    try:
        import distributed  # noqa: F401
    except ImportError as error:
        raise GradingError(f"--dask needs Dask's distributed scheduler, which is not installed ({error}): "
                           f"pip install '{DISTRIBUTION}[dask]'") from None
