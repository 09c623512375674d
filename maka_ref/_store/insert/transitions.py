"""Per-connection cache of each invocation's scanned tool ledger for the §2.1 transition check.

Why: T1 and T2 validate their candidates against *every* event of the invocation. Re-reading,
re-decoding and re-scanning that invocation for each write costs O(invocation size) per write
(quadratic per invocation) and was most of a tool call's CPU time (docs/performance.md,
"Durable writes"). The cache keeps, per invocation, the :class:`TransitionState` the last
accepted write of this connection left behind, and advances it with the next candidates.

Why it is safe (the verdicts stay those of a fresh ``validate_transition`` over durable rows):
an entry enters the cache only once the write that produced it has *committed*
(:meth:`TransitionCache.settle` inside the transaction, then :meth:`TransitionCache.end_write`
from ``RuntimeStore.write`` after its own ``COMMIT`` succeeded), so it describes committed rows.
It is reused only when, inside the caller's ``BEGIN IMMEDIATE`` transaction (the write lock:
nobody can commit meanwhile), both still hold:

* ``PRAGMA data_version`` is unchanged: no *other* connection (or process) committed since the
  entry was made (the same trigger the health gate uses; a change drops every entry);
* ``conn.total_changes`` is unchanged: *this* connection changed no row since the entry was
  settled (raw SQL, generic appends, projection rebuilds, … all move it; rolled-back changes
  still count, so a rollback can only invalidate).

No row can then have changed, so the entry is exact. (Entries used to be put back before the
``COMMIT`` and re-verified by a ``max(event_seq)`` probe, to notice a settled write whose
transaction then rolled back; confirming after the commit removes that case and the probe.
Writes that join a caller's transaction are never confirmed: the store cannot see whether the
caller commits.)

Otherwise the invocation is re-read from durable rows, exactly as without the cache (decode
errors are raised as before). An entry is taken out of the cache while in use; a refusal,
any exception or a rollback simply leaves it out. Only T1 and T2 use the cache; every other
writer takes the uncached path (their writes move ``total_changes``, which invalidates).

:meth:`TransitionCache.max_seq` also gives the writer the invocation's ``max(event_seq)`` the
check established, so T1/T2 number their rows without a ``MAX`` query per insert.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass

from maka_ref._ledger.transition import TransitionState
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row

__all__ = ["TransitionCache"]

#: How many invocations are kept (a runtime writes to few invocations at a time).
DEFAULT_CAPACITY = 8

_READ_SQL = f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE invocation_id = ? ORDER BY event_seq ASC, event_id ASC"


@dataclass(slots=True)
class _Entry:
    """The scanned ledger of one invocation and the durable facts it was checked against."""

    invocation_id: str
    state: TransitionState
    max_seq: int  # max(event_seq) of the rows the state describes (0 when none)
    total_changes: int | None  # None while pending (not settled yet)


class TransitionCache:
    """Scanned invocation ledgers of one connection (see the module docstring)."""

    __slots__ = ("_base", "_capacity", "_data_version", "_entries", "_pending", "_settled")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: _Entry | None = None
        self._settled: _Entry | None = None  # settled inside the open write, not yet committed
        self._data_version: object = None
        #: (invocation, its max(event_seq), data_version, total_changes) as of the last
        #: :meth:`state_for`; see :meth:`max_seq`.
        self._base: tuple[str, int, object, int] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._pending = None
        self._settled = None
        self._base = None

    def max_seq(self, conn: sqlite3.Connection, data_version: object, invocation_id: str) -> int | None:
        """The invocation's ``max(event_seq)`` as :meth:`state_for` last established it, while
        still exact: no row changed since, because neither this connection (``total_changes``)
        nor another one (``data_version``, read inside the caller's write transaction) wrote.
        Lets T1/T2 number their inserts without one ``MAX`` query each. None when unknown."""
        base = self._base
        if base is None or base[0] != invocation_id or base[2] != data_version or base[3] != conn.total_changes:
            return None
        return base[1]

    def state_for(self, conn: sqlite3.Connection, data_version: object, invocation_id: str) -> TransitionState:
        """The invocation's state, valid for the durable rows as seen inside the caller's write
        transaction: a verified cached entry, else freshly read and decoded. The entry leaves
        the cache; :meth:`hold` + :meth:`settle` put it back."""
        self._pending = None
        self._settled = None
        self._base = None
        if data_version != self._data_version:
            self._entries.clear()
            self._data_version = data_version
        entry = self._entries.pop(invocation_id, None)
        if entry is not None and entry.total_changes == conn.total_changes and entry.state.usable:
            self._pending = entry
            self._base = (invocation_id, entry.max_seq, data_version, conn.total_changes)
            return entry.state
        rows = conn.execute(_READ_SQL, (invocation_id,)).fetchall()
        state = TransitionState([decode_event_row(row).event for row in rows])
        max_seq = max((row[5] for row in rows), default=0)
        self._pending = _Entry(invocation_id, state, max_seq, None)
        self._base = (invocation_id, max_seq, data_version, conn.total_changes)
        return state

    def hold(self, state: TransitionState, added: int) -> None:
        """``state`` (from :meth:`state_for`) accepted ``added`` new events that the writer
        will now insert, each at ``max(event_seq) + 1``."""
        pending = self._pending
        if pending is None or pending.state is not state:
            self._pending = None
            return
        pending.max_seq += added
        pending.total_changes = None

    def settle(self, conn: sqlite3.Connection) -> None:
        """The writer's inserts are done (still inside its transaction): the entry, keyed by
        this connection's current ``total_changes``, waits for :meth:`end_write`."""
        pending, self._pending = self._pending, None
        self._settled = None
        if pending is None or not pending.state.usable or not pending.state.healthy:
            return
        pending.total_changes = conn.total_changes
        self._settled = pending

    def end_write(self, committed: bool) -> None:
        """End of a store write: ``committed`` is True only after the store's own ``COMMIT``
        succeeded (never for a joined transaction). Only then is the settled entry kept."""
        settled, self._settled = self._settled, None
        self._pending = None
        if not committed or settled is None:
            return
        self._entries[settled.invocation_id] = settled
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
