"""Per-connection memory of rows this connection inserted itself, for the terminal barrier.

Why: ``ensure_terminal_durable`` decodes every row of the run (JSON parse, schema decode,
row/payload identity re-check) to find other terminals and the ledger tail; in a tool loop
that is O(calls) per turn (docs/performance.md, "Live loop overhead (issue 4)"). A row the
insert primitive wrote itself needs no re-decode: its ``payload_json`` is the canonical JSON
of an event that was decoded and encoded before the insert, and its identity columns were
copied from that event. The barrier therefore still reads every row of the run in the same
order, but decodes only the rows not remembered here (and the matching row), and takes the
terminal predicate of a remembered row from the value computed on the inserted event.

What is remembered: ``runs[(session, run)][event_id] = is_terminal_event(event)`` for each
row inserted by ``insert_event`` inside an owned, validated store write. The statement is
"the row with this id, *if present*, is exactly the row the store inserted": it stays true
when rows vanish (a rollback), and the store never updates a ``runtime_events`` row.

Validity (the same triggers as ``insert.facts`` / ``insert.transitions``):

* ``PRAGMA data_version`` equal to the value read when the facts were learnt: no other
  connection or process committed (read inside the barrier's own transaction);
* ``conn.total_changes`` at the ``BEGIN IMMEDIATE`` of every owned store write equal to its
  value at the end of the previous store write (:meth:`begin` / :meth:`end`, called by
  ``RuntimeStore.write``): nothing but the store's own writers touched this connection in
  between (raw SQL, another store on the same connection...);
* a joined write (the caller's ``BEGIN``) clears the memory and learns nothing.

Any doubt clears the memory; the barrier then decodes every row, as without the cache.
"""

from __future__ import annotations

import sqlite3

__all__ = ["RunRows"]

#: Bound on remembered runs (a runtime writes to few at a time).
DEFAULT_CAPACITY = 16

#: Tests switch this off to compare with the uncached barrier.
ENABLED = True


class RunRows:
    """Inserted-row memory of one connection (see the module docstring)."""

    __slots__ = ("_capacity", "_data_version", "_end_changes", "_learning", "_version_read", "runs")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._data_version: object = None
        self._end_changes: int | None = None  # total_changes at the end of the last store write
        self._learning = False  # inside an owned, validated store write
        self._version_read = False  # data_version checked in the current write
        self.runs: dict[tuple[str, str], dict[str, bool]] = {}

    def clear(self) -> None:
        self.runs.clear()

    def begin(self, conn: sqlite3.Connection, owned: bool) -> None:
        """At the start of a store write (after ``BEGIN IMMEDIATE`` or on joining one)."""
        self._version_read = False
        if not ENABLED or not owned or conn.total_changes != self._end_changes:
            self.clear()
        self._learning = ENABLED and owned

    def end(self, conn: sqlite3.Connection, owned: bool) -> None:
        """After the store write committed or rolled back."""
        self._learning = False
        self._end_changes = conn.total_changes if owned and ENABLED else None
        if not owned:
            self.clear()

    def _check_version(self, conn: sqlite3.Connection) -> None:
        if self._version_read:
            return
        self._note_version(conn.execute("PRAGMA data_version").fetchone()[0])

    def _note_version(self, version: object) -> None:
        if version != self._data_version:
            self.clear()
            self._data_version = version
        self._version_read = True

    def seen_version(self, version: object) -> None:
        """The store just read ``PRAGMA data_version`` on this connection (the health gate).
        Inside an owned write that value holds for the whole transaction (the write lock
        keeps other connections from committing), so the memory can use it instead of a
        second read; outside one it is ignored."""
        if self._learning:
            self._note_version(version)

    def record(self, conn: sqlite3.Connection, session_id: str, run_id: str, event_id: str, terminal: bool) -> None:
        """``insert_event`` just inserted this row (same transaction)."""
        if not self._learning:
            return
        self._check_version(conn)
        key = (session_id, run_id)
        rows = self.runs.get(key)
        if rows is None:
            if len(self.runs) >= self._capacity:
                self.runs.clear()
            rows = self.runs[key] = {}
        rows[event_id] = terminal

    def known(self, conn: sqlite3.Connection, session_id: str, run_id: str) -> dict[str, bool]:
        """The remembered rows of the run, valid for the current owned write (else empty)."""
        if not self._learning:
            return {}
        self._check_version(conn)
        return self.runs.get((session_id, run_id), {})
