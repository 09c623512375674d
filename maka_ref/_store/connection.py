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
* **Read-only** connections use a ``file:…?mode=ro`` URI, so inspecting a root never creates
  the database file or its directory; ``query_only`` makes any write attempt fail.
* **Rollback keeps the original error**: a failing ROLLBACK is swallowed so it cannot mask
  the cause (including ``KeyboardInterrupt`` / failpoint exceptions).

Nested use is flattened: a ``write_transaction`` opened while the connection is already in a
transaction runs inside the caller's transaction (the outer owner commits or rolls back).
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from maka_ref._store.errors import StoreError

__all__ = [
    "BUSY_RETRY_DEADLINE_S",
    "BUSY_RETRY_STEP_S",
    "BUSY_TIMEOUT_MS",
    "check_json_support",
    "connect",
    "is_busy_error",
    "read_transaction",
    "write_transaction",
]

BUSY_TIMEOUT_MS = 5000
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


def _configure_wal(conn: sqlite3.Connection) -> None:
    deadline = time.monotonic() + BUSY_RETRY_DEADLINE_S
    mode = str(_retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode"), deadline)).lower()
    if mode in ("wal", "memory"):
        return
    _retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode = WAL"), deadline)
    mode = str(_retry_busy(lambda: _pragma_value(conn, "PRAGMA journal_mode"), deadline)).lower()
    if mode != "wal":
        raise StoreError(f"SQLite runtime requires WAL journal mode, received {mode}", code="wal_unavailable")


def connect(db_path: str | Path, *, read_only: bool) -> sqlite3.Connection:
    """Open ``db_path`` configured as a writer (§1.1 steps 1–4) or as a read-only reader.

    The writer creates the parent directory; the reader never creates anything and raises
    ``sqlite3.OperationalError`` when the file does not exist. Migration and capability checks
    (§1.1 step 5) are the caller's job (``schema.migrate`` / ``schema.check_capabilities``).
    """
    path = Path(db_path)
    if read_only:
        uri = path.absolute().as_uri() + "?mode=ro"
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
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=5.0)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _configure_wal(conn)
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        check_json_support(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except BaseException:  # noqa: BLE001 - never mask the original error (§10 item 6)
        pass


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception (even ``BaseException``) rolls back and
    propagates unchanged. Inside an already open transaction the body simply joins it."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
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
def read_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Plain ``BEGIN`` … ``COMMIT`` so multi-statement reads see one snapshot."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
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
