"""The store-wide tool-ledger health gate (spec 30 §2.1, §10 items 24–25).

Why workspace-wide: a ledger that scans as corrupt anywhere means the store can no longer be
trusted to keep tool boundaries exclusive, so *every* tool-bearing write fails closed
(ordinary appends are not gated). Exact retries are not a bypass.

Why ``PRAGMA data_version``: scanning every event on every write would be quadratic; the
pragma changes exactly when *another* connection committed, which is the only way the
ledger can change behind our back (our own commits passed the transition check). So the
result of the last full scan is cached and recomputed only when that number moves.

The per-invocation transition check of T1/T2 reuses the scanned invocation through the
gate's :class:`TransitionCache` (same ``data_version`` trigger, see ``insert.transitions``).
"""

from __future__ import annotations

import sqlite3

from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._ledger.transition import validate_transition
from maka_ref._store.engine.gc_pause import cyclic_gc_paused
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row
from maka_ref._store.errors import ToolLedgerCorruptionError, ToolLedgerRejectionError
from maka_ref._store.insert.facts import InsertFacts
from maka_ref._store.insert.run_rows import RunRows
from maka_ref._store.insert.transitions import TransitionCache

__all__ = ["CACHED_KINDS", "HealthGate", "assert_tool_ledger_transition", "scan_store"]


def scan_store(conn: sqlite3.Connection) -> BaseException | None:
    """Full scan of ``runtime_events`` in (invocation_id, event_seq, event_id) order.

    Returns the failure (a decode error, or a :class:`ToolLedgerCorruptionError` for the first
    scanner issue) or None when healthy. Never raises for ledger content.
    """
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events ORDER BY invocation_id ASC, event_seq ASC, event_id ASC"
    ).fetchall()
    with cyclic_gc_paused(len(rows)):
        events = []
        for row in rows:
            try:
                events.append(decode_event_row(row).event)
            except Exception as error:  # noqa: BLE001 - cached and re-thrown by check()
                return error
        scan = scan_tool_ledger(events)
    if scan.issues:
        first = scan.issues[0]
        return ToolLedgerCorruptionError(first.code, first.event_id)
    return None


class HealthGate:
    """Caches :func:`scan_store` per connection, keyed by ``PRAGMA data_version``."""

    __slots__ = ("_conn", "_data_version", "_failure", "_scanned", "facts", "fresh_changes", "rows", "transitions")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._data_version: object = None
        self._failure: BaseException | None = None
        self._scanned = False
        #: Scanned invocation ledgers for the T1/T2 transition check (same connection).
        self.transitions = TransitionCache()
        #: Passing identity / seal / claim verdicts of the insert primitive for T1/T2.
        self.facts = InsertFacts()
        #: Rows this connection inserted itself, for the terminal barrier (``run_rows``).
        self.rows = RunRows()
        #: ``conn.total_changes`` at the ``BEGIN IMMEDIATE`` of the store's own open write
        #: transaction; None outside one and inside a joined one (set by ``RuntimeStore.write``).
        self.fresh_changes: int | None = None

    @property
    def data_version(self) -> object:
        """``PRAGMA data_version`` as read by the last :meth:`check` / :meth:`refresh`."""
        return self._data_version

    def refresh(self) -> None:
        """Rescan now (at open, and whenever another connection committed)."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        self._failure = scan_store(self._conn)
        self._data_version = version
        self._scanned = True

    def failure(self) -> BaseException | None:
        """The cached failure after rescanning if ``data_version`` moved."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        self.rows.seen_version(version)
        if not self._scanned or version != self._data_version:
            self._failure = scan_store(self._conn)
            self._data_version = version
            self._scanned = True
        return self._failure

    def check(self) -> None:
        """Raise the cached failure: decode errors as themselves, scan issues as
        :class:`ToolLedgerCorruptionError` (a fresh instance each time)."""
        failure = self.failure()
        if failure is None:
            return
        if isinstance(failure, ToolLedgerCorruptionError):
            raise ToolLedgerCorruptionError(failure.code, failure.event_id)
        raise failure.with_traceback(None)


#: Transition kinds whose writers settle the cached state after their inserts (T1, T2).
CACHED_KINDS = frozenset({"t1_prepare", "t2_outcome"})


def assert_tool_ledger_transition(
    conn: sqlite3.Connection, gate: HealthGate, candidates: list, kind: str
) -> tuple:
    """§2.1 transition check: the health gate, then the existing events of the candidate
    invocations only, then ``validate_transition``. Returns the non-retry candidates.

    T1/T2 (one invocation) validate against the gate's cached scanned invocation when it is
    still valid for the durable rows (``insert.transitions``); the writer then calls
    ``gate.transitions.settle(conn)`` after its inserts. The verdict is the same either way.

    A refusal raises :class:`ToolLedgerRejectionError` (the store stays healthy).
    """
    gate.check()
    invocation_ids = sorted({candidate["invocationId"] for candidate in candidates})
    if kind in CACHED_KINDS and len(invocation_ids) == 1:
        cache = gate.transitions
        state = cache.state_for(conn, gate.data_version, invocation_ids[0])
        result = state.advance(candidates, kind)  # type: ignore[arg-type]
        if not result.ok:
            assert result.issue is not None
            raise ToolLedgerRejectionError(result.issue.code, result.issue.event_id)
        cache.hold(state, len(result.remaining))
        return result.remaining
    existing = []
    for invocation_id in invocation_ids:
        rows = conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE invocation_id = ? ORDER BY event_seq ASC, event_id ASC",
            (invocation_id,),
        ).fetchall()
        existing.extend(decode_event_row(row).event for row in rows)
    result = validate_transition(existing, candidates, kind)  # type: ignore[arg-type]
    if not result.ok:
        assert result.issue is not None
        raise ToolLedgerRejectionError(result.issue.code, result.issue.event_id)
    return result.remaining
