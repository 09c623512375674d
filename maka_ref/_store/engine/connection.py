"""Opening SQLite connections and running transactions (spec 30 §1.1, §10 items 1–6).

Why each rule:

* **Autocommit mode** (``isolation_level=None``): Python's ``sqlite3`` otherwise opens
  implicit deferred transactions, and a deferred transaction that reads then writes can fail
  with BUSY on lock upgrade where the busy handler cannot help. We issue ``BEGIN IMMEDIATE``,
  ``COMMIT`` and ``ROLLBACK`` ourselves.
* **Writer pragmas in the spec's order**: ``busy_timeout`` first (before touching persistent
  journal state), then WAL (retried every 10 ms for 5 s on BUSY, because switching needs an
  exclusive moment that concurrent first openers contend for), ``synchronous=FULL``,
  ``foreign_keys=ON`` (ignored inside a transaction, so it is set at connect).
* **On macOS, ``fullfsync`` and ``checkpoint_fullfsync``** (:func:`durability_pragmas`): there
  ``fsync`` does not reach the disk, and ``synchronous=FULL`` alone would make a commit durable
  only as far as the drive's cache. With these two pragmas SQLite syncs commits and checkpoints
  with ``fcntl(F_FULLFSYNC)`` (docs/crashlab-powerloss.md, "What durable means per platform").
  Elsewhere they are no-ops, so they are not issued.
* **Read-only** connections never create a file (§1.1, §10 item 33) and ``query_only`` makes
  any write attempt fail. The URI depends on what lies next to the database
  (:func:`read_only_uri`):

  - **no ``-wal`` and no ``-journal``: ``mode=ro&immutable=1``.** A plain ``mode=ro`` open of
    a WAL database *creates* ``<db>-wal`` and ``<db>-shm`` (SQLite needs the WAL index to
    read), so it is not side-effect free. ``immutable=1`` reads the main file only, takes no
    locks and creates nothing (``mode=ro`` stays: ``immutable`` alone would still *create* a
    missing database file). It is safe here because SQLite deletes ``-wal`` when the last
    connection closes cleanly after checkpointing everything into the main file, so *no
    ``-wal`` file means every committed frame is already in the main file*; and no
    ``-journal`` means no rollback-mode transaction is half-written into it. Residual risk, by construction of
    ``immutable``: the handle is a snapshot of the main file. It does not see commits of a
    writer that opens *after* it, and a checkpoint by such a writer into the main file while
    the handle reads can make it see torn pages (SQLite then reports corruption). Read-only
    handles are for short-lived inspection; ``maka-ref inspect`` goes further and reads a
    private copy of the files (``maka_ref._inspect.snapshot``).
  - **a ``-wal`` (or ``-journal``) exists: ``mode=ro``.** A live or killed writer may hold
    committed frames that are only in the WAL; they must be read through the WAL index, so
    the reader takes part in SQLite's locking protocol. A writer (live or killed) leaves the
    ``-shm`` next to its ``-wal``, so normally nothing is created (only a ``-wal`` left
    without its ``-shm`` makes SQLite create the ``-shm``); but the reader does write read
    marks into ``-shm``: SQLite offers no way to read un-checkpointed frames without that,
    which is why ``inspect`` never opens the workspace's files with SQLite at all. A hot
    rollback ``-journal`` cannot be rolled back by a read-only handle, so SQLite refuses
    to read rather than show a half-written transaction.
  - **an empty (0- or 1-byte) main file with a ``-wal`` is refused**, by readers and writers
    alike (:func:`maka_ref._store.engine.faults.check_store_files`, ``database_corrupt``): SQLite
    would delete that ``-wal`` even through a read-only handle. The same check refuses a
    store file that is a symbolic link or not a regular file.
* **Writer faults are coded** (:func:`maka_ref._store.engine.faults.fault_of`): a store locked by
  another writer past ``busy_timeout`` is ``store_busy``, a read-only file or mount
  ``store_read_only``, a full disk ``storage_full``, a damaged file ``database_corrupt``.
* **Rollback keeps the original error**: a failing ROLLBACK is swallowed so it cannot mask
  the cause (including ``KeyboardInterrupt`` / failpoint exceptions).

Nested use is flattened: a ``write_transaction`` opened while the connection is already in a
transaction runs inside the caller's transaction (the outer owner commits or rolls back).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NoReturn, TypeVar

from maka_ref._store.engine.faults import BUSY_WAIT_S, check_store_files, fault_of
from maka_ref._store.errors import StoreError

__all__ = [
    "BUSY_RETRY_DEADLINE_S",
    "BUSY_RETRY_STEP_S",
    "BUSY_TIMEOUT_MS",
    "check_json_support",
    "connect",
    "durability_pragmas",
    "is_busy_error",
    "read_only_uri",
    "read_transaction",
    "write_transaction",
]

BUSY_TIMEOUT_MS = int(BUSY_WAIT_S * 1000)
BUSY_RETRY_STEP_S = 0.010
BUSY_RETRY_DEADLINE_S = 5.0

_T = TypeVar("_T")


def is_busy_error(error: BaseException) -> bool:
    """SQLITE_BUSY by extended code (low byte 5) or by message ("database is locked/busy")."""
    if not isinstance(error, sqlite3.Error):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == 5:
        return True
    text = str(error).lower()
    return "database is locked" in text or "database is busy" in text


def _retry_busy(operation: Callable[[], _T], deadline: float) -> _T:
    while True:
        try:
            return operation()
        except sqlite3.OperationalError as error:
            if not is_busy_error(error) or time.monotonic() >= deadline:
                raise
            time.sleep(BUSY_RETRY_STEP_S)


def _pragma_value(conn: sqlite3.Connection, sql: str) -> object:
    row = conn.execute(sql).fetchone()
    return row[0] if row is not None else None


def check_json_support(conn: sqlite3.Connection) -> None:
    """The run-seal check uses ``json_extract`` (§10 item 32): refuse a build without JSON1."""
    try:
        value = _pragma_value(conn, "SELECT json_extract('{\"a\":1}', '$.a')")
    except sqlite3.Error as error:
        raise StoreError(
            f"SQLite {sqlite3.sqlite_version} lacks the JSON functions the runtime store requires",
            code="sqlite_json_unavailable",
        ) from error
    if value != 1:
        raise StoreError("SQLite JSON functions returned an unexpected value", code="sqlite_json_unavailable")


def durability_pragmas() -> tuple[str, ...]:
    """The pragmas a writer connection issues after ``synchronous=FULL`` so a commit reaches the
    disk on this platform: on macOS ``fullfsync`` (commits) and ``checkpoint_fullfsync``
    (checkpoints), since its ``fsync`` stops at the drive's volatile cache; none elsewhere."""
    if sys.platform == "darwin":
        return ("PRAGMA fullfsync = ON", "PRAGMA checkpoint_fullfsync = ON")
    return ()


def _configure_wal(conn: sqlite3.Connection) -> None:
    deadline = time.monotonic() + BUSY_RETRY_DEADLINE_S
    mode = str(_retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode"), deadline)).lower()
    if mode in ("wal", "memory"):
        return
    _retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode = WAL"), deadline)
    mode = str(_retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode"), deadline)).lower()
    if mode != "wal":
        raise StoreError(f"SQLite runtime requires WAL journal mode, received {mode}", code="wal_unavailable")


def read_only_uri(db_path: str | Path) -> str:
    """The ``file:`` URI of a read-only open: ``mode=ro&immutable=1`` when neither ``<db>-wal`` nor
    ``<db>-journal`` exists (nothing is created, every committed page is in the main file),
    else ``mode=ro`` (committed frames may live only in the WAL). See the module docstring."""
    path = Path(db_path).absolute()
    base = path.as_uri()
    sidecars = (Path(f"{path}-wal"), Path(f"{path}-journal"))
    if any(os.path.lexists(sidecar) for sidecar in sidecars):
        return base + "?mode=ro"
    return base + "?mode=ro&immutable=1"


def connect(db_path: str | Path, *, read_only: bool) -> sqlite3.Connection:
    """Open ``db_path`` configured as a writer (§1.1 steps 1–4) or as a read-only reader.

    The writer creates the parent directory; the reader never creates anything (see
    :func:`read_only_uri`) and raises ``sqlite3.OperationalError`` when the file does not
    exist. Migration and capability checks (§1.1 step 5) are the caller's job
    (``schema.migrate`` / ``schema.check_capabilities``).
    """
    path = Path(db_path)
    check_store_files(path)
    if read_only:
        uri = read_only_uri(path)
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=5.0)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA query_only = ON")
            check_json_support(conn)
        except BaseException:
            conn.close()
            raise
        return conn
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_WAIT_S)
    except (OSError, sqlite3.Error) as error:
        _raise_coded(error, path)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _configure_wal(conn)
        conn.execute("PRAGMA synchronous = FULL")
        for pragma in durability_pragmas():
            conn.execute(pragma)
        conn.execute("PRAGMA foreign_keys = ON")
        check_json_support(conn)
    except BaseException as error:
        conn.close()
        if isinstance(error, (OSError, sqlite3.Error)):
            _raise_coded(error, path)
        raise
    return conn


def _raise_coded(error: BaseException, path: Path) -> NoReturn:
    """Raise the coded store fault for ``error`` (:func:`fault_of`), else ``error`` itself."""
    fault = fault_of(error, path.name)
    if fault is None:
        raise error
    raise fault from None


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except BaseException:  # noqa: BLE001 - never mask the original error (§10 item 6)
        pass


def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
    """``begin`` … ``COMMIT``; any exception (even ``BaseException``) rolls back and propagates
    unchanged. Inside an already open transaction the body simply joins it."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute(begin)
    try:
        yield conn
    except BaseException:
        _rollback_quietly(conn)
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        _rollback_quietly(conn)
        raise


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (see :func:`_transaction`)."""
    yield from _transaction(conn, "BEGIN IMMEDIATE")


@contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Plain ``BEGIN`` … ``COMMIT`` so multi-statement reads see one snapshot."""
    yield from _transaction(conn, "BEGIN")
