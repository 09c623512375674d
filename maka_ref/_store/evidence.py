"""The carrier of Phase 3's file evidence: its schema scope, its row, its reads (spec-phase3 §3).

Why a table of its own and not a RuntimeEvent field: ``actions.toolDispatch`` and ``actions``
are closed key sets (spec 10 §1.3, §1.3.1), so any extra key would make every spec-10 reader
refuse the whole ledger; a row in the same ``BEGIN IMMEDIATE`` transaction as T1's call and
dispatch (spec 30 §2.3) is durable exactly when T1 is and changes no codec or vector
(spec-phase3 §3.1). The scope ``tool_evidence`` is versioned in ``operational_schema_migrations``
(like ``agent_runs``), never in ``PRAGMA user_version``, so the runtime scope stays at 12 and its
capability gate is unchanged (spec-phase3 §3.2).

What this module holds: the DDL and the writer-open migration of the scope
(:func:`migrate_tool_evidence`; a read-only open never calls it), the pre-transaction check of a
candidate record against its T1 events (:func:`prepare_evidence`: §2.2 decode, §2.3 binding), the
in-transaction insert and exact-retry comparison (:func:`insert_evidence`,
:func:`stored_evidence_text`), and :func:`read_tool_evidence` (§3.4). Nothing here updates or
deletes a row: evidence is written once, inside T1, and never later (``evidence_requires_t1``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Final

from maka_ref._codec import stable_json
from maka_ref._reconcile import (
    FileEvidence,
    Invalid,
    check_binding,
    decode_evidence,
    decode_evidence_text,
)
from maka_ref._reconcile.evidence import EVIDENCE_DIGEST_DOMAIN, domain_digest
from maka_ref._store.engine.connection import write_transaction
from maka_ref._store.engine.schema import (
    OPERATIONAL_REGISTRY_DDL,
    read_scope_version,
    record_scope_version,
    refuse_newer_scope,
)
from maka_ref._store.errors import StoreError

__all__ = [
    "TOOL_EVIDENCE_SCHEMA_VERSION",
    "TOOL_EVIDENCE_SCOPE",
    "PreparedEvidence",
    "has_evidence_table",
    "insert_evidence",
    "migrate_tool_evidence",
    "prepare_evidence",
    "read_tool_evidence",
    "stored_evidence_text",
]

TOOL_EVIDENCE_SCOPE: Final = "tool_evidence"
TOOL_EVIDENCE_SCHEMA_VERSION: Final = 1

_DDL: Final = (
    OPERATIONAL_REGISTRY_DDL,
    """CREATE TABLE IF NOT EXISTS runtime_tool_evidence (
  operation_id TEXT PRIMARY KEY,
  dispatch_event_id TEXT NOT NULL UNIQUE,
  protocol TEXT NOT NULL CHECK (protocol = 'file_evidence_v1'),
  evidence_digest TEXT NOT NULL,
  evidence_json TEXT NOT NULL,
  committed_at INTEGER NOT NULL,
  FOREIGN KEY (dispatch_event_id) REFERENCES runtime_events(event_id)
)""",
)


@dataclass(frozen=True, slots=True)
class PreparedEvidence:
    """A record that decodes and binds to its T1 events: its canonical text and digest."""

    evidence: FileEvidence
    text: str
    digest: str


def _refused(invalid: Invalid) -> StoreError:
    return StoreError(f"T1 file evidence refused: {invalid.code} ({invalid.detail})", code=invalid.code)


def has_evidence_table(conn: sqlite3.Connection) -> bool:
    """Whether the scope's table exists (a database never opened by a Phase 3 writer has none)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runtime_tool_evidence'"
    ).fetchone()
    return row is not None


def _scope_version(conn: sqlite3.Connection) -> int:
    return read_scope_version(conn, TOOL_EVIDENCE_SCOPE, invalid_message="Invalid tool_evidence operational schema version")


def _refuse_newer(version: int) -> None:
    refuse_newer_scope(TOOL_EVIDENCE_SCOPE, version, TOOL_EVIDENCE_SCHEMA_VERSION)


def migrate_tool_evidence(conn: sqlite3.Connection) -> None:
    """Writer open: create the scope at version 1 if absent (spec-phase3 §3.2); refuse a newer one.

    The optimistic read outside a transaction keeps an already-migrated open free of the write
    lock; the decision is re-made under it."""
    version = _scope_version(conn)
    _refuse_newer(version)
    if version == TOOL_EVIDENCE_SCHEMA_VERSION and has_evidence_table(conn):
        return
    with write_transaction(conn):
        version = _scope_version(conn)
        _refuse_newer(version)
        for statement in _DDL:
            conn.execute(statement)
        record_scope_version(conn, TOOL_EVIDENCE_SCOPE, TOOL_EVIDENCE_SCHEMA_VERSION)


def prepare_evidence(evidence: Any, call_event: Any, dispatch_event: Any) -> PreparedEvidence:
    """spec-phase3 §3.3 step 9 (before the write lock): decode (§2.2) and bind (§2.3).

    ``evidence`` is a :class:`FileEvidence` or its JSON object; any code refuses T1 with that
    code (:class:`StoreError`), so nothing is written and the tool never runs."""
    decoded = decode_evidence(evidence.to_json() if isinstance(evidence, FileEvidence) else evidence)
    if isinstance(decoded, Invalid):
        raise _refused(decoded)
    problem = check_binding(decoded, call_event, dispatch_event)
    if problem is not None:
        raise _refused(problem)
    # The record decoded once: its canonical text and digest are those of spec-phase3 §2.1
    # (what ``encode_evidence``/``evidence_digest`` give, without decoding it twice more).
    text = stable_json(decoded.to_json())
    return PreparedEvidence(decoded, text, domain_digest(EVIDENCE_DIGEST_DOMAIN, text))


def stored_evidence_text(conn: sqlite3.Connection, operation_id: str) -> str | None:
    """The stored canonical text of ``operation_id``'s evidence (None: no row, or no table)."""
    if not has_evidence_table(conn):
        return None
    row = conn.execute(
        "SELECT evidence_json FROM runtime_tool_evidence WHERE operation_id = ?", (operation_id,)
    ).fetchone()
    return None if row is None else row[0]


def insert_evidence(conn: sqlite3.Connection, prepared: PreparedEvidence, committed_at: int) -> None:
    """The row, inside T1's transaction after the dispatch insert (spec-phase3 §3.3)."""
    record = prepared.evidence
    conn.execute(
        "INSERT INTO runtime_tool_evidence (operation_id, dispatch_event_id, protocol, evidence_digest, evidence_json, "
        "committed_at) VALUES (?, ?, 'file_evidence_v1', ?, ?, ?)",
        (record.operation_id, record.dispatch_event_id, prepared.digest, prepared.text, committed_at),
    )


def read_tool_evidence(conn: sqlite3.Connection, operation_id: str) -> FileEvidence | Invalid | None:
    """spec-phase3 §3.4: the decoded record, None, or the §2.2 code of a damaged row."""
    text = stored_evidence_text(conn, operation_id)
    if text is None:
        return None
    return decode_evidence_text(text)
