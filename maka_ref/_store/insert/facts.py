"""Per-connection cache of the insert primitive's *passing* verdicts for T1 and T2.

Why: for every new event ``insert_event`` re-proves three facts with queries whose cost
grows with the run (docs/performance.md, "Durable writes"): the §0.1 identity rule (four
``SELECT DISTINCT`` over the invocation and the run, events and partial snapshots), the run
seal (``json_extract`` over every row of the run) and the continuation-claim effects (the
session's claim rows). In a tool loop the same (session, invocation, run, turn) writes
call after call, so the answers never change. This cache remembers, per connection:

* ``identity``: tuples ``(session, invocation, run, turn)`` for which :func:`check_identity`
  passed — *every* stored event / partial row of the invocation has that (session, run,
  turn) and every row of (session, run) has that (invocation, turn);
* ``unsealed``: ``(session, run)`` pairs holding *no* terminal row (the seal query found
  nothing);
* ``unclaimed``: sessions with *no* continuation-claim row as source or target (the built-in
  continuation guard then has nothing to check);
* ``no_partials``: True when ``runtime_partial_snapshots`` holds *no* row at all (an immutable
  final then has no snapshot to delete, so neither its stream key nor the ``DELETE`` is
  needed). False or None: unknown, the ``DELETE`` runs as always.

Each is a universal statement over rows ("every row … / no row …"), which is what makes it
cheap to keep valid. It stays true when rows are removed, and T1/T2 only add rows that keep
it true: rows of the very identity that was checked (the writer checked it), never a claim
or a partial snapshot (they only delete snapshots), and a terminal row drops its run from ``unsealed`` right after its INSERT. Cached tuples
never overlap (a freshly checked tuple evicts every tuple sharing its invocation or its
(session, run)), so a row written for one tuple cannot falsify another.

Validity discipline (the same triggers as ``insert.transitions``), checked by :meth:`begin`
inside the writer's own ``BEGIN IMMEDIATE``, before the writer changed anything:

* ``PRAGMA data_version`` unchanged: no other connection or process committed;
* ``conn.total_changes`` equal to the value :meth:`settle` recorded: this connection changed
  no row since (raw SQL, generic appends, claims, rebuilds... all move it);
* the transaction was begun by the store's own ``write()`` and has changed nothing yet
  (``fresh``); a joined transaction (the caller's ``BEGIN``) neither uses nor feeds the cache.

A fact learnt by a query is recorded only while the transaction has still changed nothing,
so it describes the state at ``BEGIN``. A rollback (of a settled transaction too) returns to
that state or to an earlier valid one, where every recorded fact held: rollbacks need no
detection. Anything else — a refusal, an exception before :meth:`settle` — leaves the cache
unsettled, and the next :meth:`begin` drops it.
"""

from __future__ import annotations

import sqlite3

__all__ = ["InsertFacts"]

#: Bound on remembered tuples / runs / sessions (a runtime writes to few at a time).
DEFAULT_CAPACITY = 64

#: Tests switch this off to compare with the uncached queries.
ENABLED = True


class InsertFacts:
    """Passing verdicts of ``insert_event``'s identity, seal and claim checks (see module doc)."""

    __slots__ = ("_capacity", "_clean", "_data_version", "_settled", "identity", "no_partials", "unclaimed", "unsealed")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._data_version: object = None
        self._settled: int | None = None  # total_changes at the last settle; None: unsettled
        self._clean: int | None = None  # total_changes at begin of a fresh transaction
        self.identity: set[tuple[str, str, str, str]] = set()
        self.unsealed: set[tuple[str, str]] = set()
        self.unclaimed: set[str] = set()
        #: True: no partial snapshot row exists (see the module docstring); None: not asked.
        self.no_partials: bool | None = None

    def __len__(self) -> int:
        return len(self.identity) + len(self.unsealed) + len(self.unclaimed)

    def clear(self) -> None:
        self.identity.clear()
        self.unsealed.clear()
        self.unclaimed.clear()
        self.no_partials = None

    def begin(self, conn: sqlite3.Connection, data_version: object, fresh_changes: int | None) -> None:
        """Start of a cached writer's in-transaction work. ``data_version`` was read inside this
        transaction; ``fresh_changes`` is ``conn.total_changes`` at the store's own ``BEGIN``
        (None for a joined transaction)."""
        changes = conn.total_changes
        fresh = ENABLED and fresh_changes is not None and fresh_changes == changes
        if not fresh or data_version != self._data_version or changes != self._settled:
            self.clear()
        self._data_version = data_version
        self._settled = None
        self._clean = changes if fresh else None

    def learning(self, conn: sqlite3.Connection) -> bool:
        """May a verdict just obtained by a query be recorded (nothing changed yet)?"""
        return self._clean is not None and conn.total_changes == self._clean

    def learn_partials(self, conn: sqlite3.Connection) -> None:
        """Ask once (per validity period) whether any partial snapshot row exists; recorded only
        while the transaction has changed nothing (:meth:`learning`)."""
        if self.no_partials is None and self.learning(conn):
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM runtime_partial_snapshots)").fetchone()
            self.no_partials = row[0] == 0

    def add_identity(self, key: tuple[str, str, str, str]) -> None:
        session_id, invocation_id, run_id, _turn_id = key
        stale = [
            other for other in self.identity
            if other[1] == invocation_id or (other[0] == session_id and other[2] == run_id)
        ]
        for other in stale:
            self.identity.discard(other)
        if len(self.identity) >= self._capacity:
            self.identity.clear()
        self.identity.add(key)

    def add_unsealed(self, key: tuple[str, str]) -> None:
        if len(self.unsealed) >= self._capacity:
            self.unsealed.clear()
        self.unsealed.add(key)

    def add_unclaimed(self, session_id: str) -> None:
        if len(self.unclaimed) >= self._capacity:
            self.unclaimed.clear()
        self.unclaimed.add(session_id)

    def settle(self, conn: sqlite3.Connection) -> None:
        """The writer's inserts are done (still inside its transaction): keep the facts, keyed
        by this connection's current ``total_changes``. Only after a fresh :meth:`begin`."""
        if self._clean is None:
            self.clear()
            self._settled = None
            return
        self._settled = conn.total_changes
        self._clean = None
