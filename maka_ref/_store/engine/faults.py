"""Store faults as stable codes: the store fails closed, and says why (issue 13 item 1).

Why a module of its own: SQLite reports a damaged, locked, read-only or full store as
``sqlite3`` exceptions whose text varies by version and whose meaning is in the *primary
result code*. Every path that touches ``runtime.sqlite`` (``run``, ``resume``, ``repair``,
``inspect``, the adapter's ``store.*``) must refuse such a store with the same code and
without writing, so the mapping and the checks that precede every open live here once:

* :func:`check_store_files` — before SQLite opens anything: the store's own files
  (``runtime.sqlite`` and its ``-wal`` / ``-shm`` / ``-journal``) must not be symbolic links
  (``store_file_symlink``: SQLite follows them, so a link puts the store, or its WAL,
  outside the workspace), must be regular files (``store_file_not_regular``: on a FIFO
  SQLite would hang reading, a device feeds it garbage, a directory it cannot open) and must
  have one name (``store_file_hardlinked``: a second hard link, possibly outside the
  workspace, would see every write). An empty
  (0- or 1-byte) main file beside a ``-wal`` is ``database_corrupt``: SQLite treats that WAL
  as stale and *deletes* it on open, even through a read-only handle, destroying every
  committed frame it holds.
* :func:`check_integrity` — ``PRAGMA integrity_check`` on every writer open, before the
  first write (migration, repair, the run header). A flipped byte in an index page leaves
  ``quick_check`` silent (it does not compare index entries with their table rows) while
  reads through the index return a wrong history — a completed run without its terminal —
  which ``repair`` would then "fix" by appending a second terminal. ``integrity_check`` sees
  it. Its cost is measured against the open it guards (``python -m benchmarks.integrity``,
  docs/performance.md "Integrity check on open": about a seventh of the open).
* :func:`fault_of` — a ``sqlite3`` error (or the ``OSError`` of a directory/file the store
  creates) as a :class:`StoreError` with a stable code: ``store_busy`` (another writer held
  the write lock past the bounded wait, :data:`BUSY_WAIT_S`), ``store_read_only``,
  ``storage_full``, ``database_corrupt``, ``store_unopenable`` (SQLite cannot open the file
  at all: a path component that is not a directory, a directory it may not search); None when the error is none of these (a bug, left
  to the caller's ``internal_error``).

Residual risk, stated: the file checks are ``lstat`` before SQLite's ``open``; a link
swapped in between is followed (SQLite offers no ``O_NOFOLLOW`` for the sidecar files it
opens itself). The workspace directory is the caller's trust boundary.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Iterator

from maka_ref._store.errors import StoreError

__all__ = [
    "BUSY_WAIT_S",
    "INTEGRITY_PRAGMA",
    "STORE_FAULT_CODES",
    "STORE_FILE_SUFFIXES",
    "check_integrity",
    "check_store_files",
    "fault_of",
    "integrity_failure",
    "store_faults_coded",
]

#: How long a writer waits for another writer's lock before ``store_busy`` (SQLite's busy
#: handler, ``PRAGMA busy_timeout`` of :mod:`maka_ref._store.engine.connection`).
BUSY_WAIT_S: Final = 5.0

#: Codes of faults of the *store as a whole* (not of one run or one write): a best-effort
#: caller that skips a failed item (``repair``) stops on these instead, because every later
#: write would meet the same fault and a report of skips with exit 0 would hide it.
STORE_FAULT_CODES: Final = frozenset({"store_busy", "store_read_only", "storage_full", "database_corrupt"})

#: The store's own files: the main database (``""``) and what SQLite names ``<db><suffix>``.
STORE_FILE_SUFFIXES: Final = ("", "-wal", "-shm", "-journal")

#: What every writer open runs before its first write (see the module docstring).
INTEGRITY_PRAGMA: Final = "PRAGMA integrity_check"

# SQLite primary result codes (https://sqlite.org/rescode.html).
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
_SQLITE_READONLY: Final = 8
_SQLITE_CORRUPT: Final = 11
_SQLITE_FULL: Final = 13
_SQLITE_CANTOPEN: Final = 14
_SQLITE_NOTADB: Final = 26
_SQLITE_IOERR: Final = 10
#: ``SQLITE_IOERR_SHORT_READ`` family members that mean "the file is shorter than SQLite
#: expects" (a truncated main database) rather than a device failure.
_SQLITE_IOERR_SHORT_READ: Final = _SQLITE_IOERR | (2 << 8)

_FULL_ERRNOS: Final = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def _primary_code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _busy_message(db_name: str) -> str:
    return (f"{db_name} is busy: another writer held its write lock for longer than "
            f"{BUSY_WAIT_S:g} s (retry when it has finished)")


def fault_of(error: BaseException, db_name: str = "runtime.sqlite") -> StoreError | None:
    """``error`` as a coded :class:`StoreError`, or None when it is not a store fault."""
    if isinstance(error, StoreError):
        return error
    if isinstance(error, OSError) and not isinstance(error, sqlite3.Error):
        if error.errno in _FULL_ERRNOS:
            return StoreError(f"no space left for {db_name}: {error.strerror or error}", code="storage_full")
        if error.errno == errno.EROFS:
            return StoreError(f"{db_name} cannot be written: {error.strerror or error}", code="store_read_only")
        return None
    if not isinstance(error, sqlite3.Error):
        return None
    primary = _primary_code(error)
    text = str(error).lower()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in text or "database is busy" in text:
        return StoreError(_busy_message(db_name), code="store_busy")
    if primary == _SQLITE_READONLY or "readonly database" in text:
        return StoreError(f"{db_name} cannot be written (read-only): {error}", code="store_read_only")
    if primary == _SQLITE_FULL or "database or disk is full" in text:
        return StoreError(f"no space left for {db_name}: {error}", code="storage_full")
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
        return StoreError(f"{db_name} is not a readable SQLite database: {error}", code="database_corrupt")
    if primary == _SQLITE_CANTOPEN:
        return StoreError(f"{db_name} cannot be opened: {error}", code="store_unopenable")
    if getattr(error, "sqlite_errorcode", None) == _SQLITE_IOERR_SHORT_READ:
        return StoreError(f"{db_name} is shorter than its own header says: {error}", code="database_corrupt")
    return None


def check_store_files(db_path: str | os.PathLike[str]) -> None:
    """Refuse a store whose own files are links or not regular files, or whose main file is
    empty beside a ``-wal`` (module docstring). Never creates or changes anything."""
    path = Path(db_path)
    for suffix in STORE_FILE_SUFFIXES:
        candidate = Path(f"{path}{suffix}")
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            continue
        except OSError:
            continue  # unreadable directory: SQLite reports it on open, mapped by fault_of
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(f"{candidate.name} is a symbolic link; the store never follows a link for its own "
                             "files (it would live outside the workspace)", code="store_file_symlink")
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{candidate.name} is not a regular file", code="store_file_not_regular")
        if info.st_nlink > 1:
            raise StoreError(f"{candidate.name} has {info.st_nlink} hard links; the store never writes a file "
                             "another name shares (it may live outside the workspace)", code="store_file_hardlinked")
    try:
        main_size = os.lstat(path).st_size
    except OSError:
        return
    if main_size <= 1 and os.path.lexists(f"{path}-wal"):  # SQLite's unix VFS reads a 1-byte file as empty
        raise StoreError(f"{path.name} is empty but {path.name}-wal exists; refusing to open it (SQLite would "
                         "delete the WAL and every committed transaction in it)", code="database_corrupt")


def integrity_failure(conn: sqlite3.Connection, pragma: str = INTEGRITY_PRAGMA) -> str | None:
    """The first problem ``pragma`` reports, or None when it answers ``ok``. A store too
    damaged to run the check at all is a problem too (its ``sqlite3`` message)."""
    try:
        rows = conn.execute(pragma).fetchall()
    except sqlite3.DatabaseError as error:
        fault = fault_of(error)
        if fault is None or fault.code != "database_corrupt":
            raise  # busy, read-only, full: not a verdict on the file's content
        return str(error)
    if len(rows) == 1 and rows[0][0] == "ok":
        return None
    return "; ".join(str(row[0]) for row in rows[:3])


def check_integrity(conn: sqlite3.Connection, db_name: str = "runtime.sqlite") -> None:
    """``database_corrupt`` unless :data:`INTEGRITY_PRAGMA` answers ``ok``."""
    problem = integrity_failure(conn)
    if problem is not None:
        raise StoreError(f"{db_name} failed {INTEGRITY_PRAGMA}: {problem}", code="database_corrupt")


@contextmanager
def store_faults_coded(db_name: str = "runtime.sqlite") -> Iterator[None]:
    """Re-raise a store fault raised in the body as its coded :class:`StoreError`; anything
    else (a bug, an interrupt) passes through unchanged."""
    try:
        yield
    except (OSError, sqlite3.Error) as error:
        fault = fault_of(error, db_name)
        if fault is None:
            raise
        raise fault from None
