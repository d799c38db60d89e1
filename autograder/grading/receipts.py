"""When the exchange received a submission: a time the student cannot set.

``nbgrader submit`` runs as the student and writes ``timestamp.txt`` itself, so that file (and the
time in the exchange folder's name) is only the student's claim: an edited file paid no late penalty.
What the student cannot choose is the *change time* (ctime) of the files in the exchange inbox:
the kernel sets it to the current time whenever a file is created, written, renamed, linked or has
its mode changed, and no system call sets it to another value (only the clock's owner, root, could).
So the latest ctime of a submission's inbox folder and everything in it is no earlier than the
moment its content was last put in place.

:class:`autograder.grading.exchange.KitCollect` (``c.ExchangeFactory.collect``) measures that time when it
copies a submission and writes it beside the copy, as ``submitted/<student>/<assignment>.received.json`` (outside the folder the student's files are copied
into; students cannot write in ``submitted/``). :func:`autograder.grading.timestamps.submission_time`
then takes the submission's time from the receipt and treats ``timestamp.txt`` as a claim, reported
when it disagrees. The guarantee holds for submissions collected through the exchange with this
course's config (``nbgrader collect`` or formgrader's Collect button) before anyone changes the inbox
files; a submission put into ``submitted/`` by other means has no receipt and is timed by its claim,
as nbgrader does.
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from pathlib import Path

from autograder.limits import RECEIPT_ENTRIES


RECEIPT_SUFFIX = ".received.json"


def receipt_path(submitted_folder: str | os.PathLike) -> Path:
    """Where the receipt of ``submitted/<student>/<assignment>`` lives: beside it, not inside it."""
    folder = Path(submitted_folder)
    return folder.parent / f"{folder.name}{RECEIPT_SUFFIX}"


def received_time(inbox_folder: str | os.PathLike) -> datetime.datetime:
    """The latest change time of ``inbox_folder`` and of every entry beneath it (naive UTC).

    Links are not followed (``lstat``): a link's own change time counts, never its target's.
    """
    latest = os.lstat(inbox_folder).st_ctime
    seen = 0
    for directory, folders, files in os.walk(inbox_folder, followlinks=False):
        for name in folders + files:
            seen += 1
            if seen > RECEIPT_ENTRIES.value:
                raise ValueError(f"{inbox_folder} holds more than {RECEIPT_ENTRIES.value} entries")
            info = os.lstat(os.path.join(directory, name))
            latest = max(latest, info.st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)


def write_receipt(submitted_folder: str | os.PathLike, received: datetime.datetime, inbox_name: str) -> Path:
    path = receipt_path(submitted_folder)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps({"received": received.isoformat(), "inbox": inbox_name}) + "\n")
    os.replace(temporary, path)
    return path


def read_receipt(submitted_folder: str | os.PathLike) -> datetime.datetime | None:
    """The received time recorded for ``submitted_folder``, or None when there is no usable receipt."""
    path = receipt_path(submitted_folder)
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4096:
            return None
        value = json.loads(path.read_text(encoding="utf-8"))["received"]
        return datetime.datetime.fromisoformat(value)
    except (OSError, ValueError, KeyError, TypeError):
        return None


__all__ = ["RECEIPT_SUFFIX", "read_receipt", "receipt_path", "received_time", "write_receipt"]
