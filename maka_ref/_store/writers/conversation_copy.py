"""Conversation-copy import: several runs of one session copied verbatim (spec 30 §2.2).

Why it may carry reserved tool facts (dispatches, operation-bound outcomes, recovery facts)
that the generic path refuses: a copy re-creates a ledger that an authority writer already
validated elsewhere, and it must scan clean *as a whole* before anything is written. Per run
the copy is all-or-nothing idempotent: the stored run must be empty or exactly equal. The
session's tool projections are then rebuilt from the copied events in the same transaction,
so they are by construction what rebuild would produce.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Iterable

from maka_ref._events.encode import EncodedRuntimeEvent, json_strict_equal
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._store.engine.rows import is_tool_bearing
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.health import HealthGate
from maka_ref._store.insert.primitive import insert_event
from maka_ref._store.partials import is_safe_id
from maka_ref._store.projections import rebuild
from maka_ref._store.reads import read_run_events
from maka_ref._store.writers.generic import canonicalize, check_reserved_authority

__all__ = ["CopyBatch", "import_copy", "prepare"]

CopyBatch = tuple[str, list[EncodedRuntimeEvent]]


def prepare(session_id: str, runs: Iterable[tuple[str, Iterable[Any]]]) -> list[CopyBatch]:
    """Pre-transaction checks: safe ids, distinct runs, identity, no partials, clean scan."""
    if not is_safe_id(session_id):
        raise StoreError("Conversation copy requires a safe session id", code="copy_invalid_id")
    batches: list[CopyBatch] = []
    seen: set[str] = set()
    for run_id, events in runs:
        if not is_safe_id(run_id):
            raise StoreError("Conversation copy requires safe run ids", code="copy_invalid_id")
        if run_id in seen:
            raise StoreError(f"Conversation copy contains run {run_id} more than once", code="copy_duplicate_run")
        seen.add(run_id)
        encoded = [canonicalize(event) for event in events]
        for item in encoded:
            event = item.event
            check_reserved_authority(event)
            if event["sessionId"] != session_id or event["runId"] != run_id:
                raise StoreError(
                    f"RuntimeEvent store identity does not match event {event['id']}", code="store_identity_mismatch"
                )
            if event.get("partial") is True:
                raise StoreError("Conversation copy cannot import partial RuntimeEvents", code="copy_partial_event")
        batches.append((run_id, encoded))
    scan = scan_tool_ledger([item.event for _, encoded in batches for item in encoded])
    if scan.issues:
        raise StoreError(
            f"Conversation copy RuntimeEvent ledger is corrupt: {scan.issues[0].code}", code="copy_ledger_corrupt"
        )
    return batches


def import_copy(conn: sqlite3.Connection, gate: HealthGate, session_id: str, batches: list[CopyBatch]) -> None:
    """Inside the caller's write transaction: per run equal-or-empty, insert, then rebuild."""
    if any(is_tool_bearing(item.event) for _, encoded in batches for item in encoded):
        gate.check()
    for run_id, encoded in batches:
        stored = read_run_events(conn, session_id, run_id)
        if stored:
            same = len(stored) == len(encoded) and all(
                json_strict_equal(left, right.event) for left, right in zip(stored, encoded)
            )
            if not same:
                raise StoreError(
                    f"Conversation copy RuntimeEvent identity conflict for run {run_id}", code="copy_identity_conflict"
                )
            continue
        for item in encoded:
            insert_event(conn, item, item.event["ts"], allow_exact_duplicate=False)
    rebuild(conn, session_id)
