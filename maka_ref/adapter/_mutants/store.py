"""Store mutants (spec 30 §1–§4: open, generic append, T1/T2 retries, projections, reads)."""

from __future__ import annotations

import sqlite3
from typing import Any

from maka_ref.adapter._mutants._patch import wrap
from maka_ref.adapter._mutants._registry import mutant


@mutant("store-generic-append-accepts-dispatch", layer="store", spec="30 §2.2; 10 §4.2", family="STORE-LANE-004",
        keyword="STORE-LANE")
def apply_generic_append_accepts_dispatch() -> None:
    """The store's generic append path accepts a ``toolDispatch`` event (a durable tool fact)
    instead of refusing it as ``reserved_tool_boundary_fact``.

    Spec 30 §2.2 / spec 10 §4.2: dispatches are written only by T1, atomically with the call
    and the prepared journal. Only the store's path is mutated (the pure ``ledger.generic_append``
    answers correctly). Killed by STORE-LANE-004.
    """
    import importlib

    generic = importlib.import_module("maka_ref._store.writers.generic")
    original = generic.validate_generic_append

    def validate_generic_append(event: Any) -> Any:
        actions = event.get("actions") if hasattr(event, "get") else None
        if hasattr(actions, "get") and actions.get("toolDispatch") is not None:
            return None  # the mutation: a dispatch passes the generic lane check
        return original(event)

    generic.validate_generic_append = validate_generic_append
    original_transition = generic.assert_tool_ledger_transition

    def assert_tool_ledger_transition(conn: Any, gate: Any, events: Any, kind: str) -> Any:
        if kind == "generic_append" and any(hasattr(e.get("actions"), "get") and e["actions"].get("toolDispatch")
                                            is not None for e in events):
            return None  # the mutation: the store's second line of defence is gone too
        return original_transition(conn, gate, events, kind)

    generic.assert_tool_ledger_transition = assert_tool_ledger_transition


@mutant("store-conflicting-retry-accepted", layer="store", spec="30 §2.8; 30 §2.3 step 2", family="STORE-T1-003, STORE-T1-013",
        keyword="STORE-T1")
def apply_conflicting_retry_accepted() -> None:
    """A T1 "retry" that reuses a prepared operation's event ids with *different* content is
    answered like an exact retry (``created: false``) instead of being refused.

    Spec 30 §2.8: only a byte-identical retry is idempotent; a conflicting one is refused
    (``duplicate_event_id`` / ``tool_operation_identity_conflict``). Killed by STORE-T1-003.
    """
    wrap("maka_ref._store.writers.tool", "commit_t1", _conflicting_retry_factory)


def _conflicting_retry_factory(original: Any) -> Any:
    from maka_ref._store.errors import StoreError

    def commit_t1(conn: sqlite3.Connection, gate: Any, prepared: Any) -> Any:
        try:
            return original(conn, gate, prepared)
        except StoreError as exc:
            if exc.code not in ("duplicate_event_id", "tool_operation_identity_conflict", "event_identity_conflict",
                                "duplicate_call"):
                raise
            row = conn.execute("SELECT dispatch_event_id FROM tool_operations WHERE operation_id = ?",
                               (prepared.data.operation_id,)).fetchone()
            if row is None or row[0] is None:
                raise
            seq = conn.execute("SELECT event_seq FROM runtime_events WHERE event_id = ?", (row[0],)).fetchone()
            if seq is None:
                raise
            return original.__globals__["CommitResult"](False, seq[0])  # the mutation: a conflicting retry is "already done"

    return commit_t1


@mutant("store-projection-rebuild-not-equivalent", layer="store", spec="30 §3.2; 30 §3.3", family="STORE-PROJ-006, STORE-PROJ-007, STORE-REOPEN-004",
        keyword="STORE-PROJ or STORE-REOPEN")
def apply_projection_rebuild_not_equivalent() -> None:
    """``rebuild_projections`` resets every operation's ``version`` to 1 (it forgets the journal
    tail), so the rebuilt projection differs from the online one.

    Spec 30 §3.2–§3.3: a rebuild from the RuntimeEvents reproduces the online tool projection
    exactly. Killed by STORE-PROJ-006/007 and STORE-REOPEN-004.
    """

    def factory(original: Any) -> Any:
        def rebuild(conn: sqlite3.Connection, session_id: Any = None) -> Any:
            report = original(conn, session_id)
            conn.execute("UPDATE tool_operations SET version = 1")
            return report
        return rebuild

    wrap("maka_ref._store.projections", "rebuild", factory)


@mutant("store-inspection-writes", layer="store", spec="30 §4; protocol §4.2.1", family="STORE-PROJ-005, STORE-REOPEN-005",
        keyword="STORE-PROJ-005 or STORE-REOPEN-005")
def apply_inspection_writes() -> None:
    """``store.project`` (inspection) writes to the database: it records a "last inspected"
    row in ``runtime.sqlite`` on every read.

    Spec 30 §4 / protocol §4.2.1: reading never writes; ``ledgerFiles`` stay byte-identical
    across ``store.project`` and ``store.read_events``. Killed by STORE-PROJ-005 and STORE-REOPEN-005.
    """
    import os
    import time

    def factory(original: Any) -> Any:
        def inspect_workspace(path: Any, *args: Any, **kwargs: Any) -> Any:
            db = os.path.join(os.fspath(path), "runtime.sqlite")
            if os.path.isfile(db):
                conn = sqlite3.connect(db, timeout=5)
                try:
                    conn.execute("CREATE TABLE IF NOT EXISTS mutant_inspections (at INTEGER)")
                    conn.execute("INSERT INTO mutant_inspections VALUES (?)", (time.time_ns(),))
                    conn.commit()
                finally:
                    conn.close()
            return original(path, *args, **kwargs)
        return inspect_workspace

    wrap("maka_ref._inspect.api", "inspect_workspace", factory)


@mutant("store-newer-schema-opened", layer="store", spec="30 §1.3", family="STORE-SCHEMA-001",
        keyword="STORE-SCHEMA or STORE-OPEN")
def apply_newer_schema_opened() -> None:
    """A writer open of a store whose schema version is newer than supported proceeds as if it
    were current instead of failing closed with ``schema_too_new``.

    Spec 30 §1.3 step 2: a newer schema is refused and left byte-identical. Killed by
    STORE-SCHEMA-001.
    """
    from maka_ref._store.engine import schema

    def factory(original: Any) -> Any:
        def migrate(conn: sqlite3.Connection, *, target: int = schema.CURRENT_SCHEMA_VERSION) -> None:
            if schema.read_user_version(conn) > schema.CURRENT_SCHEMA_VERSION:
                return  # the mutation: treat it as established
            original(conn, target=target)
        return migrate

    wrap("maka_ref._store.engine.schema", "migrate", factory)


@mutant("store-health-gate-scans-once", layer="store", spec="30 §2.1; 10 §4.6", family="STORE-HEALTH-001",
        keyword="STORE-HEALTH")
def apply_health_gate_scans_once() -> None:
    """The store's tool-ledger health gate scans once per connection and never again: after
    another process changed the store, a tool-bearing write still trusts the first scan.

    Spec 30 §2.1: the gate rescans whenever ``PRAGMA data_version`` moved (another connection
    committed), so damage anywhere in the store fail-stops every tool boundary. With the
    cached verdict a writer keeps committing T1/T2 into a ledger another process has already
    corrupted. Killed by STORE-HEALTH-001 (two processes: a writer, then a foreign commit
    that corrupts another session's ledger, then the writer's next T2).
    """
    from maka_ref._store.insert.health import HealthGate, scan_store

    def failure(self: Any) -> Any:
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        self.rows.seen_version(version)
        if not self._scanned:  # the mutation: a moved data_version no longer triggers a rescan
            self._failure = scan_store(self._conn)
            self._data_version = version
            self._scanned = True
        return self._failure

    HealthGate.failure = failure  # type: ignore[method-assign]
