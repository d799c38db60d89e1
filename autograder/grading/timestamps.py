"""The files ``nbgrader submit`` writes beside a submission: ``timestamp.txt`` and ``submission_secret.txt``.

Both are written on the student's side, so both are untrusted data. :func:`read_timestamp` reads the
timestamp the way nbgrader does (:func:`nbgrader.utils.parse_utc`), but a file that is not a date
(free text, invalid UTF-8, a symlink, a directory, megabytes, a time zone that names a file) is
treated as missing, as nbgrader treats an empty one, and the problem is returned for the instructor
to see instead of stopping the batch (nbgrader 0.9.6 itself crashes there: ``CourseDirectory.fail``
does not exist). :func:`carry_submission_files` copies both files into ``autograded/``, as
``nbgrader autograde`` does, so that ``nbgrader generate_feedback`` and ``release_feedback`` work.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from pathlib import Path

from autograder.limits import TIMESTAMP_BYTES

TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"
#: Files of a submission folder that travel into ``autograded/`` (then into ``feedback/``).
CARRIED = (TIMESTAMP_FILE, SECRET_FILE)
#: What nbgrader's own format can contain; anything else is not a timestamp.
_TIMESTAMP_TEXT = re.compile(r"[0-9A-Za-z_:+\-.,/ ]{1,64}")


#: How much earlier than the exchange's receipt an honest ``timestamp.txt`` may be: ``nbgrader submit``
#: writes it before it copies the notebooks, and the last file copied sets the receipt.
CLAIM_LEEWAY = datetime.timedelta(seconds=60)


@dataclasses.dataclass(frozen=True)
class Timestamp:
    """A submission's time: ``value`` (naive UTC, as nbgrader stores it) or ``None`` with ``problem``.

    ``disputed`` is True when ``problem`` says that ``timestamp.txt`` disagrees with the exchange's
    receipt (the receipt's time is then ``value``).
    """

    value: datetime.datetime | None
    problem: str | None = None
    disputed: bool = False


def _below(folder, name: str, root) -> tuple:
    """``(root, parts)`` naming ``folder/name`` for the intake: walked from ``root`` without following a
    link (``root`` None: ``folder`` itself is the trusted root)."""
    if root is None:
        return Path(folder), (name,)
    relative = os.path.relpath(os.path.abspath(folder), os.path.abspath(root))
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        raise ValueError(f"folder: expected a folder inside {root}, got {folder}")
    return Path(root), tuple(part for part in Path(relative).parts if part != os.curdir) + (name,)


def _read_small(folder, name: str, root=None) -> bytes | None:
    """The bytes of the small regular file ``folder/name`` read through the intake, or None if there is none.

    Raises ``ValueError`` for something that is there but is not a small regular file (a link anywhere
    below ``root``, a FIFO, a folder, megabytes).
    """
    from autograder.grading import intake
    from autograder.results import Status

    base, parts = _below(folder, name, root)
    try:
        return intake.read_bytes(base, parts, TIMESTAMP_BYTES.value)
    except intake.Refused as refused:
        if refused.refusal.status == Status.MISSING:
            return None
        if refused.refusal.status == Status.SYMLINK:
            itself = len(parts) == 1 or intake.locate(base, parts[:-1], folder=True) is None
            raise ValueError(f"{'it is a symbolic link' if itself else refused.refusal.reason} (not followed)") from None
        if refused.refusal.limit == "notebook_bytes":
            raise ValueError(f"it holds more than {TIMESTAMP_BYTES.value} bytes") from None
        raise ValueError(refused.refusal.reason) from None


def parse_timestamp(text: str) -> datetime.datetime:
    """nbgrader's :func:`~nbgrader.utils.parse_utc` on text that looks like one of its timestamps.

    >>> parse_timestamp("2026-11-30 20:41:32.000001 UTC")
    datetime.datetime(2026, 11, 30, 20, 41, 32, 1)
    >>> parse_timestamp("2026-11-30 22:00:00 +0100")
    datetime.datetime(2026, 11, 30, 21, 0)
    >>> parse_timestamp("my dog ate it")
    Traceback (most recent call last):
    ...
    ValueError: not a date and time: 'my dog ate it'
    """
    from nbgrader.utils import parse_utc

    text = text.strip()
    # A time zone after the date is looked up with dateutil's gettz, which opens files by name.
    if not _TIMESTAMP_TEXT.fullmatch(text) or ".." in text or " /" in text or text.startswith("/"):
        raise ValueError(f"not a date and time: {text[:80]!r}")
    try:
        value = parse_utc(text)
    except (ValueError, OverflowError, TypeError, LookupError, AttributeError) as error:
        raise ValueError(f"not a date and time: {text[:80]!r}") from error
    if not isinstance(value, datetime.datetime):
        raise ValueError(f"not a date and time: {text[:80]!r}")
    return value


def read_timestamp(folder: str | os.PathLike, *, root: str | os.PathLike | None = None) -> Timestamp:
    """The submission time in ``folder/timestamp.txt``; missing or unusable gives ``Timestamp(None, ...)``.

    ``root`` is the trusted folder ``folder`` lies in (the course's ``submitted/``): no link below it
    is followed (see :mod:`autograder.grading.intake`).

    ``problem`` is None when the file is simply absent (nbgrader's "no timestamp"), a sentence
    otherwise (the file is then treated as missing).
    """
    path = Path(folder) / TIMESTAMP_FILE
    try:
        raw = _read_small(folder, TIMESTAMP_FILE, root)
    except (OSError, ValueError) as error:
        return Timestamp(None, f"{path} is unusable: {error}; treated as missing")
    if raw is None:
        return Timestamp(None)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Timestamp(None, f"{path} is not UTF-8 text; treated as missing")
    if not text.strip():
        return Timestamp(None, f"{path} is empty; treated as missing")
    try:
        return Timestamp(parse_timestamp(text))
    except ValueError as error:
        return Timestamp(None, f"{path} is unusable: {error}; treated as missing")


def submission_time(folder: str | os.PathLike, *, root: str | os.PathLike | None = None) -> Timestamp:
    """The time a submission counts as handed in: the exchange's receipt if there is one, else the claim.

    ``timestamp.txt`` is written on the student's side: with a receipt
    (:mod:`autograder.grading.receipts`, written by the kit's collect) it is only a claim, used when it
    lies within :data:`CLAIM_LEEWAY` before the receipt (the copy takes that long), and reported
    (``disputed``) when it is earlier than that, later than the receipt, or unreadable. Without a
    receipt it is read as nbgrader reads it (:func:`read_timestamp`, through the intake below ``root``).
    """
    from autograder.grading.receipts import read_receipt

    claim = read_timestamp(folder, root=root)
    received = read_receipt(folder)
    if received is None:
        return claim
    if claim.value is None:
        if claim.problem is None:  # no timestamp.txt at all: nothing claimed, nothing to dispute
            return Timestamp(received)
        return Timestamp(received, f"{claim.problem.removesuffix('; treated as missing')}; the exchange received "
                                   f"the submission at {received} UTC, which counts", disputed=True)
    if received - CLAIM_LEEWAY <= claim.value <= received:
        return Timestamp(claim.value)
    gap = received - claim.value
    which = f"{_duration(gap)} before" if gap > datetime.timedelta(0) else f"{_duration(-gap)} after"
    return Timestamp(received, f"{Path(folder) / TIMESTAMP_FILE} claims {claim.value} UTC, {which} the exchange "
                               f"received the submission ({received} UTC); the received time counts", disputed=True)


def _duration(delta: datetime.timedelta) -> str:
    seconds = int(delta.total_seconds())
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


def carry_submission_files(submitted: str | os.PathLike, autograded: str | os.PathLike, *,
                           root: str | os.PathLike | None = None) -> list:
    """Copy ``timestamp.txt`` and ``submission_secret.txt`` from a submission folder into its autograded folder.

    Both are read through the intake (``root``: the course's ``submitted/``, no link below it followed)
    and written here: nothing else of the submission folder is copied. Only small regular files are copied, as they are (``release_feedback`` only logs the timestamp);
    one that is there but unusable (a symlink, a folder, megabytes) is never followed or read: an
    empty file stands in for it, so that ``nbgrader release_feedback`` still runs for everyone (it
    stops at the first student without one). A file that is gone from the submission is removed from
    ``autograded/`` too, so it never describes an older submission. Returns the problems met.
    """
    problems = []
    target = Path(autograded)
    for name in CARRIED:
        try:
            data = _read_small(submitted, name, root)
        except (OSError, ValueError) as error:
            problems.append(f"{Path(submitted) / name} was not copied ({error}); an empty one stands in for it")
            data = b""
        destination = target / name
        if data is None:
            if destination.is_file() and not destination.is_symlink():
                destination.unlink()
            continue
        target.mkdir(parents=True, exist_ok=True)
        temporary = target / f".{name}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, destination)
    return problems
