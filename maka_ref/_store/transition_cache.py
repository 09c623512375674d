"""Per-connection cache of each invocation's scanned tool ledger for the §2.1 transition check.

Why: T1 and T2 validate their candidates against *every* event of the invocation. Re-reading,
re-decoding and re-scanning that invocation for each write costs O(invocation size) per write
(quadratic per invocation) and was most of a tool call's CPU time (docs/performance.md,
"Durable writes"). The cache keeps, per invocation, the :class:`TransitionState` the last
accepted write of this connection left behind, and advances it with the next candidates.

Why it is safe (the verdicts stay those of a fresh ``validate_transition`` over durable rows):
an entry is reused only when, inside the caller's ``BEGIN IMMEDIATE`` transaction (the write
lock: nobody can commit meanwhile), all three still hold:

* ``PRAGMA data_version`` is unchanged: no *other* connection (or process) committed since the
  entry was made (the same trigger the health gate uses; a change drops every entry);
* ``conn.total_changes`` is unchanged: *this* connection changed no row since the entry was
  settled (raw SQL, generic appends, projection rebuilds, … all move it; rolled-back changes
  still count, so a rollback can only invalidate);
* the invocation's ``max(event_seq)`` equals what the entry describes: catches a transaction
  that settled its entry and then rolled back (its rows vanished: they were inserted at
  ``max(event_seq) + 1`` onwards, so the maximum drops). Any other way to remove or renumber
  rows is a write, which the first two triggers see. (The row count used to be compared too;
  it adds nothing to those triggers, and counting costs O(invocation) per write where the
  maximum is one index probe.)

Otherwise the invocation is re-read from durable rows, exactly as without the cache (decode
errors are raised as before). An entry is taken out of the cache while in use and put back
only by :meth:`TransitionCache.settle`, which the writer calls after its inserts; a refusal
or any exception in between simply leaves it out. Only T1 and T2 use the cache; every other
writer takes the uncached path (their writes move ``total_changes``, which invalidates).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass

from maka_ref._ledger.transition import TransitionState
from maka_ref._store.rows import EVENT_COLUMNS, decode_event_row

__all__ = ["TransitionCache"]

#: How many invocations are kept (a runtime writes to few invocations at a time).
DEFAULT_CAPACITY = 8

_FINGERPRINT_SQL = "SELECT COALESCE(MAX(event_seq), 0) FROM runtime_events WHERE invocation_id = ?"
_READ_SQL = f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE invocation_id = ? ORDER BY event_seq ASC, event_id ASC"


@dataclass(slots=True)
class _Entry:
    """The scanned ledger of one invocation and the durable facts it was checked against."""

    invocation_id: str
    state: TransitionState
    count: int  # rows of the invocation the state describes
    max_seq: int  # their max(event_seq) (0 when none)
    data_version: object
    total_changes: int | None  # None while pending (not settled yet)


class TransitionCache:
    """Scanned invocation ledgers of one connection (see the module docstring)."""

    __slots__ = ("_capacity", "_data_version", "_entries", "_pending")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: _Entry | None = None
        self._data_version: object = None

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._pending = None

    def state_for(self, conn: sqlite3.Connection, data_version: object, invocation_id: str) -> TransitionState:
        """The invocation's state, valid for the durable rows as seen inside the caller's write
        transaction: a verified cached entry, else freshly read and decoded. The entry leaves
        the cache; :meth:`hold` + :meth:`settle` put it back."""
        self._pending = None
        if data_version != self._data_version:
            self._entries.clear()
            self._data_version = data_version
        entry = self._entries.pop(invocation_id, None)
        if entry is not None and entry.total_changes == conn.total_changes and entry.state.usable:
            if conn.execute(_FINGERPRINT_SQL, (invocation_id,)).fetchone()[0] == entry.max_seq:
                self._pending = entry
                return entry.state
        rows = conn.execute(_READ_SQL, (invocation_id,)).fetchall()
        state = TransitionState([decode_event_row(row).event for row in rows])
        max_seq = max((row[5] for row in rows), default=0)
        self._pending = _Entry(invocation_id, state, len(rows), max_seq, data_version, None)
        return state

    def hold(self, state: TransitionState, added: int) -> None:
        """``state`` (from :meth:`state_for`) accepted ``added`` new events that the writer
        will now insert, each at ``max(event_seq) + 1``."""
        pending = self._pending
        if pending is None or pending.state is not state:
            self._pending = None
            return
        pending.count += added
        pending.max_seq += added
        pending.total_changes = None

    def settle(self, conn: sqlite3.Connection) -> None:
        """The writer's inserts are done (still inside its transaction): keep the entry, keyed
        by this connection's current ``total_changes``."""
        pending, self._pending = self._pending, None
        if pending is None or not pending.state.usable or not pending.state.healthy:
            return
        pending.total_changes = conn.total_changes
        self._entries[pending.invocation_id] = pending
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
