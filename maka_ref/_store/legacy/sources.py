"""The store side of the legacy imports: the ``runtime_import_sources`` table (spec 30 §5.2
rule 2), the one write transaction per file, and the batch-import step.

Why a module of its own: this is the only SQL of the profile; the tree import and the strict
import in ``legacy_jsonl`` orchestrate these steps without touching a connection themselves.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager

from maka_ref._codec.frozen import FrozenDict
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore

__all__ = [
    "IMPORT_SOURCES_DDL",
    "ensure_import_sources_table",
]

#: §5.2 rule 2, verbatim. Created by the legacy profile on writer open (never by a reader).
IMPORT_SOURCES_DDL = (
    "CREATE TABLE IF NOT EXISTS runtime_import_sources ("
    "source_path TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, imported_at INTEGER NOT NULL)"
)


def _transaction(store: RuntimeStore) -> AbstractContextManager[sqlite3.Connection]:
    """One write transaction (``RuntimeStore.write``: ``BEGIN IMMEDIATE`` under the store's
    lock). The store's own writers called inside it (``import_batch``) join it, so the batch
    import and the source-row upsert commit or roll back together."""
    return store.write()


_IMPORT_SOURCES_COLUMNS = (
    ("source_path", "TEXT", 0, 1),
    ("fingerprint", "TEXT", 1, 0),
    ("imported_at", "INTEGER", 1, 0),
)


def _import_sources_columns(store: RuntimeStore) -> tuple[tuple[str, str, int, int], ...]:
    with store.read() as conn:
        rows = conn.execute("PRAGMA table_info(runtime_import_sources)").fetchall()
    # (cid, name, type, notnull, dflt_value, pk)
    return tuple((row[1], str(row[2]).upper(), row[3], row[5]) for row in rows)


def ensure_import_sources_table(store: RuntimeStore) -> None:
    """Create ``runtime_import_sources`` if absent (writer open only, §5.2 rule 2); fail
    closed (``import_sources_shape_mismatch``) if a table of that name has another shape."""
    if not _import_sources_columns(store):
        with _transaction(store) as conn:
            conn.execute(IMPORT_SOURCES_DDL)
    if _import_sources_columns(store) != _IMPORT_SOURCES_COLUMNS:
        raise StoreError(
            "runtime_import_sources does not have the legacy import shape",
            code="import_sources_shape_mismatch",
        )


def _recorded_fingerprint(store: RuntimeStore, source_path: str) -> str | None:
    with store.read() as conn:
        row = conn.execute(
            "SELECT fingerprint FROM runtime_import_sources WHERE source_path = ?", (source_path,)
        ).fetchone()
    return None if row is None else row[0]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _import_events(store: RuntimeStore, session_id: str, run_id: str, events: Sequence[FrozenDict]) -> tuple[int, int]:
    """Batch import inside the caller's transaction; returns (imported, existing)."""
    if not events:
        return 0, 0
    created = store.import_batch(session_id, run_id, list(events))
    imported = sum(1 for flag in created if flag)
    return imported, len(events) - imported
