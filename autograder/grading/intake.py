"""The one way in for student files: every door that reads a submission reads it here.

``autograder grade`` (its coordinator and workers, on a process pool or Dask), ``nbgrader autograde``
and formgrader's Autograde button (:mod:`autograder.grading.nbgrader_bridge`), ``autograder
similarity`` and ``autograder report`` all find and open student files through this module, so a
hostile submission folder meets the same rules whichever door it comes through:

* a path is a trusted ``root`` (the course's ``submitted/``, or ``autograded/`` for readers of graded
  work) and the names below it; every name is walked from the root with ``O_NOFOLLOW``, so a symbolic
  link in ANY component (student folder, assignment folder, notebook, ``timestamp.txt``) is refused,
  never followed;
* only regular files are opened: a FIFO, device, socket or folder is refused from its ``lstat`` before
  anything is opened, and the open itself is ``O_NONBLOCK`` and checked again with ``fstat`` (a file
  swapped for a FIFO in between cannot block the reader);
* a regular file with more than one link (``st_nlink > 1``, on the ``lstat`` and again on the ``fstat``)
  is refused: ``ln source/.../15.ipynb submitted/<student>/.../15.ipynb`` is no symbolic link, yet it
  would hand the grader the instructor's solution under a student's name. Honest submissions have one
  link: nbgrader==0.9.6 ``exchange/default/collect.py`` ``ExchangeCollect.copy_files`` calls
  ``self.do_copy(src_path, dest_path)``, and ``Exchange.do_copy`` (``exchange/default/exchange.py``) is
  ``shutil.copytree(src, dest, ignore=ignore_patterns(...))``, whose default ``copy_function`` is
  ``shutil.copy2``: every collected file is a new file with a link count of 1;
* the size is capped from ``fstat`` before a byte is read;
* a notebook's JSON nesting and number of cells are measured on the raw bytes, in one linear pass,
  before any parser sees them; then the parse (JSON and nbformat's schema validation) runs under a
  time limit.

Every refusal is a :class:`Refusal`: the report status of :mod:`autograder.results` and
one sentence, the same at every door. Listing a folder (which students, which notebooks) reports
links, FIFOs and devices as what they are instead of following them (:func:`list_folder`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import stat
import sys
import threading
from pathlib import Path

from autograder.limits import FILE
from autograder.results import Status

#: What each limit is called in messages (each limit hit is a ``rejected`` row naming it).
LIMIT_NAMES = {
    "notebook_bytes": "the notebook file is larger than {value} bytes",
    "cells": "the notebook has more than {value} cells",
    "json_depth": "the notebook's JSON is nested more than {value} levels deep",
    "parse_seconds": "the notebook could not be read within {value} s",
}

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a student file was not read: the report ``status``, the ``limit`` (rule) it broke, one sentence.

    ``limit`` is ``symlink``, ``missing``, ``file`` (not a regular file, or not openable), ``hardlink`` (a
    regular file that is also another name's file) or a key of :data:`LIMIT_NAMES`.
    """

    status: Status
    limit: str
    reason: str

    def __str__(self) -> str:
        return self.reason

    @property
    def feedback(self) -> str:
        """What a report row says: a ``rejected`` file was graded as not run (zero points), anything
        else (a link) was not graded at all."""
        return f"{'not run' if self.status in (Status.REJECTED, Status.UNREADABLE) else 'not graded'}: {self.reason}"

    def line(self, student: str, notebook: str) -> str:
        """The one log line every door writes for a refused notebook (status, then the row's feedback)."""
        return f"{student}/{notebook}: {self.status.value}: {self.feedback}"

    def as_dict(self) -> dict:
        return {"status": self.status.value, "limit": self.limit, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict) -> "Refusal":
        return cls(Status(data["status"]), str(data["limit"]), str(data["reason"]))


class Refused(Exception):
    """Raised by the readers below; ``refusal`` says why."""

    def __init__(self, refusal: Refusal):
        super().__init__(refusal.reason)
        self.refusal = refusal


@dataclasses.dataclass(frozen=True)
class Entry:
    """One name in a listed folder, as ``lstat`` sees it (a link is a ``symlink``, never its target)."""

    name: str
    kind: str  # directory, file, symlink, fifo, device, socket, other
    size: int


@dataclasses.dataclass(frozen=True)
class Listing:
    """A folder's entries (sorted by name), or the refusal that kept it from being opened."""

    path: str
    entries: tuple = ()
    refusal: Refusal | None = None

    def named(self, kind: str) -> list:
        return [entry.name for entry in self.entries if entry.kind == kind]


@dataclasses.dataclass(frozen=True)
class NotebookRead:
    """A submitted notebook: ``notebook`` (parsed and validated), or ``refusal``, or ``problem``.

    ``problem`` is for a file that was read within every limit but is not a notebook (not JSON, not
    nbformat): graded as empty, which is nbgrader's own treatment of a missing answer.
    """

    path: str
    notebook: object | None = None
    refusal: Refusal | None = None
    problem: str | None = None


def _shown(root, parts) -> str:
    return "/".join((Path(root).name, *parts))


def _check_parts(parts) -> tuple:
    parts = tuple(parts)
    for part in parts:
        if not isinstance(part, str) or part in ("", ".", "..") or "/" in part or "\0" in part:
            raise ValueError(f"parts: expected plain file or folder names below the root, got {part!r}")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


_NOT_A_FILE = {"directory": "a folder", "fifo": "a FIFO (named pipe)", "device": "a device node",
               "socket": "a socket", "other": "not a file"}


def _refuse_kind(kind: str, shown: str, want: str) -> Refusal | None:
    """The refusal for finding ``kind`` where a ``want`` (``file`` or ``directory``) was expected."""
    if kind == want:
        return None
    if kind == "symlink":
        return Refusal(Status.SYMLINK, "symlink", f"{shown} is a symbolic link")
    if want == "directory":
        return Refusal(Status.REJECTED, "file", f"{shown} is not a folder")
    return Refusal(Status.REJECTED, "file", f"the submission is not a regular file ({shown} is {_NOT_A_FILE[kind]})")


def _refuse_file(info, shown: str) -> Refusal | None:
    """The refusal for ``info`` (an ``lstat`` or ``fstat``) where a regular file of the submission's own is wanted."""
    refusal = _refuse_kind(_kind(info.st_mode), shown, "file")
    if refusal is None and info.st_nlink > 1:
        # A hard link shares its inode with a file outside the submission (the instructor's source notebook,
        # another student's work): reading it would grade that file under this student's name.
        refusal = Refusal(Status.REJECTED, "hardlink", f"{shown} is a hard link to another file: the grader "
                          "reads only files of the submission's own")
    return refusal


def _lstat_at(fd: int, name: str):
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_failed(error: OSError, shown: str) -> Refusal:
    if error.errno in (errno.ELOOP, errno.EMLINK):
        # O_NOFOLLOW met a link that was put there after the lstat: still a link, still refused.
        return Refusal(Status.SYMLINK, "symlink", f"{shown} is a symbolic link")
    if error.errno == errno.ENOENT:
        return Refusal(Status.MISSING, "missing", f"{shown} does not exist")
    return Refusal(Status.REJECTED, "file", f"{shown} could not be opened ({error.strerror})")


def _walk(root, parts: tuple) -> int:
    """A descriptor of ``root/parts...`` (a folder), no link followed below ``root``; :class:`Refused` else."""
    try:
        # The root is the course's own folder: opened as it is (the instructor may have linked it).
        fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC)
    except FileNotFoundError:
        raise Refused(Refusal(Status.MISSING, "missing", f"{Path(root).name} does not exist")) from None
    try:
        for depth, name in enumerate(parts):
            shown = _shown(root, parts[:depth + 1])
            info = _lstat_at(fd, name)
            if info is None:
                raise Refused(Refusal(Status.MISSING, "missing", f"{shown} does not exist"))
            refusal = _refuse_kind(_kind(info.st_mode), shown, "directory")
            if refusal is not None:
                raise Refused(refusal)
            try:
                inner = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as error:
                raise Refused(_open_failed(error, shown)) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def locate(root, parts, *, folder: bool = False) -> Refusal | None:
    """None when ``root/parts`` is a regular file (a folder if ``folder``) reached without a link; else why not.

    Opens nothing at the last component: a FIFO or device is only looked at.
    """
    parts = _check_parts(parts)
    try:
        fd = _walk(root, parts[:-1])
    except Refused as refused:
        return refused.refusal
    try:
        info = _lstat_at(fd, parts[-1])
    finally:
        os.close(fd)
    shown = _shown(root, parts)
    if info is None:
        return Refusal(Status.MISSING, "missing", f"{shown} does not exist")
    return _refuse_kind(_kind(info.st_mode), shown, "directory") if folder else _refuse_file(info, shown)


def size_of(root, parts) -> int:
    """The size of the regular file ``root/parts...`` from its ``lstat`` (0 for anything else); opens nothing.

    For scheduling only (which submissions are heavy): the reader checks everything again.
    """
    parts = _check_parts(parts)
    try:
        fd = _walk(root, parts[:-1])
    except Refused:
        return 0
    try:
        info = _lstat_at(fd, parts[-1])
    finally:
        os.close(fd)
    return int(info.st_size) if info is not None and stat.S_ISREG(info.st_mode) else 0


def list_folder(root, parts=()) -> Listing:
    """The entries of ``root/parts...``, each with its kind as ``lstat`` says (links are not followed)."""
    parts = _check_parts(parts)
    shown = _shown(root, parts)
    try:
        fd = _walk(root, parts)
    except Refused as refused:
        return Listing(shown, (), refused.refusal)
    entries = []
    try:
        for name in sorted(os.listdir(fd)):
            info = _lstat_at(fd, name)
            if info is not None:
                entries.append(Entry(name, _kind(info.st_mode), int(info.st_size)))
    finally:
        os.close(fd)
    return Listing(shown, tuple(entries))


@contextlib.contextmanager
def open_file(root, parts, cap: int):
    """``(binary file, size)`` of the regular file ``root/parts...`` no larger than ``cap`` bytes; :class:`Refused` else.

    ``cap`` is checked on ``fstat`` before anything is read (a sparse 100 GB file costs one call).
    """
    parts = _check_parts(parts)
    if not parts:
        raise ValueError("parts: expected at least the file's name")
    shown = _shown(root, parts)
    folder = _walk(root, parts[:-1])
    try:
        info = _lstat_at(folder, parts[-1])
        if info is None:
            raise Refused(Refusal(Status.MISSING, "missing", f"{shown} does not exist"))
        refusal = _refuse_file(info, shown)
        if refusal is not None:
            raise Refused(refusal)
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError as error:
            raise Refused(_open_failed(error, shown)) from None
    finally:
        os.close(folder)
    handle = os.fdopen(fd, "rb")
    with handle:
        info = os.fstat(fd)
        refusal = _refuse_file(info, shown)  # swapped (or linked) after the lstat
        if refusal is not None:
            raise Refused(refusal)
        if info.st_size > cap:
            raise Refused(_too_large(cap, shown, info.st_size))
        yield handle, int(info.st_size)


def _too_large(cap: int, shown: str, size: int | None = None) -> Refusal:
    reason = LIMIT_NAMES["notebook_bytes"].format(value=cap) if shown.endswith(".ipynb") else \
        f"{shown} is larger than {cap} bytes" + (f" ({size} bytes)" if size is not None else "")
    return Refusal(Status.REJECTED, "notebook_bytes", reason)


def read_bytes(root, parts, cap: int) -> bytes:
    """The bytes of a regular file below ``root`` (see :func:`open_file`); :class:`Refused` otherwise."""
    with open_file(root, parts, cap) as (handle, _):
        data = handle.read(cap + 1)
    if len(data) > cap:  # it grew after the fstat
        raise Refused(_too_large(cap, _shown(root, parts)))
    return data


def fingerprint(root, parts, cap: int) -> bytes:
    """SHA-256 of a submitted file, read in chunks; a file over ``cap`` is known by size and time, unread.

    A refused file is known by its refusal (the worker refuses it the same way).
    """
    try:
        with open_file(root, parts, sys.maxsize) as (handle, size):
            if size > cap:
                info = os.fstat(handle.fileno())
                return f"over the size limit: {size} bytes, modified {info.st_mtime_ns}".encode()
            digest = hashlib.sha256()
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
            return digest.digest()
    except Refused as refused:
        return f"refused: {refused.refusal.limit}: {refused.refusal.reason}".encode()


def json_shape(raw: bytes) -> tuple:
    """``(depth, items)`` of JSON text, strings ignored, in one linear NumPy pass (before any parser).

    ``depth`` is the deepest nesting of ``[``/``{``; ``items`` counts the objects that are elements of an
    array directly inside the top-level object (for a notebook, its cells: nbformat allows no other
    top-level array). A quote opens or closes a string unless an odd number of backslashes precedes it;
    a bracket counts when an even number of such quotes precedes it. (A regular expression over the
    strings backtracked quadratically on an unterminated string full of escaped quotes: 32 kB of them
    took half a minute, and this runs before any time limit.)
    """
    import numpy as np
    codes = np.frombuffer(raw, dtype=np.uint8)
    slashes = np.flatnonzero(codes == ord("\\"))
    quotes = np.flatnonzero(codes == ord('"'))
    if slashes.size and quotes.size:
        # Index (in ``slashes``) of the first backslash of the run each backslash belongs to.
        runs = np.maximum.accumulate(np.where(np.diff(slashes, prepend=-2) != 1, np.arange(slashes.size), 0))
        k = np.searchsorted(slashes, quotes)  # backslashes before each quote
        last = np.maximum(k - 1, 0)
        touching = (k > 0) & (slashes[last] == quotes - 1)
        run_length = np.where(touching, last - runs[last] + 1, 0)
        quotes = quotes[run_length % 2 == 0]
    opening = np.flatnonzero((codes == ord("[")) | (codes == ord("{")))
    closing = np.flatnonzero((codes == ord("]")) | (codes == ord("}")))
    opening = opening[np.searchsorted(quotes, opening) % 2 == 0]
    closing = closing[np.searchsorted(quotes, closing) % 2 == 0]
    if not opening.size:
        return 0, 0
    # The nesting level after each bracket, in text order (brackets only: a few per cent of the bytes).
    positions = np.concatenate([opening, closing])
    order = np.argsort(positions, kind="stable")
    signs = np.concatenate([np.ones(opening.size, dtype=np.int32), -np.ones(closing.size, dtype=np.int32)])
    level = np.cumsum(signs[order])
    depth = max(int(level.max()), 0)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    # Depth of each opening bracket once opened: 1 for the top-level value, 2 for its children...
    opened = level[rank[:opening.size]]
    children = opening[opened == 2]  # containers directly inside the top-level value
    grandchildren = opening[(opened == 3) & (codes[opening] == ord("{"))]
    if not children.size or not grandchildren.size:
        return depth, 0
    parent = children[np.maximum(np.searchsorted(children, grandchildren) - 1, 0)]
    items = int(np.count_nonzero((codes[parent] == ord("[")) & (parent < grandchildren)))
    return depth, items


def json_depth(raw: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text, strings ignored (see :func:`json_shape`)."""
    return json_shape(raw)[0]


#: The bounds on a submitted notebook (:data:`autograder.limits.FILE`), checked before anything of it is
#: parsed or run, by name.
_FILE_LIMITS = {limit.name: limit.value for limit in FILE}


def _limit(limits: dict, name: str):
    return (limits or {}).get(name, _FILE_LIMITS[name])


def check_text(raw: bytes, limits: dict | None = None) -> str:
    """Notebook bytes checked for size, nesting and cell count without parsing; :class:`Refused` otherwise."""
    cap = int(_limit(limits, "notebook_bytes"))
    if len(raw) > cap:
        raise Refused(Refusal(Status.REJECTED, "notebook_bytes", LIMIT_NAMES["notebook_bytes"].format(value=cap)))
    depth, items = json_shape(raw)
    if depth > int(_limit(limits, "json_depth")):
        value = _limit(limits, "json_depth")
        raise Refused(Refusal(Status.REJECTED, "json_depth", LIMIT_NAMES["json_depth"].format(value=value)))
    if items > int(_limit(limits, "cells")):
        raise Refused(Refusal(Status.REJECTED, "cells", LIMIT_NAMES["cells"].format(value=_limit(limits, "cells"))))
    return raw.decode("utf-8", "replace")


def read_text(root, parts, limits: dict | None = None) -> str:
    """A submitted notebook's text, read and checked within the limits (nothing parsed); :class:`Refused` else."""
    return check_text(read_bytes(root, parts, int(_limit(limits, "notebook_bytes"))), limits)


class _ParseTimeout(BaseException):
    pass


def parse(text: str, limits: dict | None = None):
    """Parse and validate notebook text within ``parse_seconds`` (enforced in a process's main thread)
    and ``cells``; :class:`Refused` for a broken limit, the parser's own error for a file that is not a
    notebook."""
    import json
    import signal

    from autograder.grading.submission import read_notebook

    seconds = float(_limit(limits, "parse_seconds"))
    cells_cap = int(_limit(limits, "cells"))
    timed = threading.current_thread() is threading.main_thread()

    def expire(signum, frame):
        raise _ParseTimeout()

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        # Count the cells on the plain parse (fast, in C) before nbformat validates them one by one:
        # the raw count of check_text sees only objects, a list of 10^6 numbers is caught here.
        data = json.loads(text)
        cells = data.get("cells") if isinstance(data, dict) else None
        if isinstance(cells, list) and len(cells) > cells_cap:
            raise Refused(Refusal(Status.REJECTED, "cells", LIMIT_NAMES["cells"].format(value=cells_cap)))
        data = cells = None
        return read_notebook(text)
    except _ParseTimeout:
        raise Refused(Refusal(Status.REJECTED, "parse_seconds",
                              LIMIT_NAMES["parse_seconds"].format(value=seconds))) from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def parse_text(text: str, limits: dict | None = None, *, path: str = "the submission") -> NotebookRead:
    """:func:`check_text` then :func:`parse` on notebook text shipped without its file (Dask workers)."""
    try:
        return NotebookRead(path, notebook=parse(check_text(text.encode("utf-8", "surrogatepass"), limits), limits))
    except Refused as refused:
        return NotebookRead(path, refusal=refused.refusal)
    except Exception as error:  # noqa: BLE001 - a broken file is the student's: graded as empty
        return NotebookRead(path, problem=_not_a_notebook(error))


def _not_a_notebook(error: BaseException) -> str:
    return f"the submitted file is not a readable notebook: it could not be read ({type(error).__name__}); submit the notebook again"


def read_notebook(root, parts, limits: dict | None = None) -> NotebookRead:
    """A submitted notebook, read from ``root/parts...`` within every limit: what was read, or why not."""
    shown = _shown(root, _check_parts(parts))
    try:
        text = read_text(root, parts, limits)
    except Refused as refused:
        return NotebookRead(shown, refusal=refused.refusal)
    except OSError as error:  # unreadable (permissions, I/O): that submission's problem, not the batch's
        return NotebookRead(shown, refusal=Refusal(Status.REJECTED, "file",
                                                   f"{shown} could not be opened ({error.strerror})"))
    try:
        return NotebookRead(shown, notebook=parse(text, limits))
    except Refused as refused:
        return NotebookRead(shown, refusal=refused.refusal)
    except Exception as error:  # noqa: BLE001 - a broken file is the student's: graded as empty
        return NotebookRead(shown, problem=_not_a_notebook(error))


__all__ = ["Entry", "LIMIT_NAMES", "Listing", "NotebookRead", "Refusal", "Refused", "check_text",
           "fingerprint", "json_depth", "json_shape", "list_folder", "locate", "open_file", "parse", "parse_text",
           "read_bytes", "read_notebook", "read_text"]
