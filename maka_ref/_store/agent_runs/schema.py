"""Schema scope ``agent_runs`` of the AgentRun operational store: DDL, version check, migration.

Why a module of its own: the scope is versioned in ``operational_schema_migrations`` (never
``PRAGMA user_version``) and its migrate / fail-closed rules are one job, apart from the
header and event reads and writes of :mod:`maka_ref._store.agent_runs.store`.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from maka_ref._store.agent_runs.codec import _error
from maka_ref._store.engine.connection import write_transaction
from maka_ref._store.engine.schema import (
    OPERATIONAL_REGISTRY_DDL,
    read_scope_version,
    record_scope_version,
    refuse_newer_scope,
)

__all__ = [
    "AGENT_RUNS_SCHEMA_VERSION",
    "AGENT_RUNS_SCOPE",
]

AGENT_RUNS_SCOPE: Final = "agent_runs"
AGENT_RUNS_SCHEMA_VERSION: Final = 1

_DDL: Final = (
    OPERATIONAL_REGISTRY_DDL,
    """CREATE TABLE IF NOT EXISTS agent_runs (
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  header_json TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  PRIMARY KEY (session_id, run_id)
)""",
    """CREATE TABLE IF NOT EXISTS agent_run_events (
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 0),
  event_json TEXT NOT NULL,
  PRIMARY KEY (session_id, run_id, seq),
  FOREIGN KEY (session_id, run_id) REFERENCES agent_runs (session_id, run_id)
)""",
)
_TABLES: Final = ("operational_schema_migrations", "agent_runs", "agent_run_events")


def _table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {row[0] for row in rows}


def _read_scope_version(conn: sqlite3.Connection) -> int:
    """The ``agent_runs`` scope version; 0 when the registry or the row is absent."""
    return read_scope_version(conn, AGENT_RUNS_SCOPE, invalid_message="Invalid AgentRun operational schema version")


def _refuse_newer(version: int) -> None:
    refuse_newer_scope(AGENT_RUNS_SCOPE, version, AGENT_RUNS_SCHEMA_VERSION,
                       advice=" Upgrade Maka to open this workspace.")


def _require_tables(conn: sqlite3.Connection) -> None:
    missing = [name for name in _TABLES if name not in _table_names(conn)]
    if missing:
        raise _error(
            "operational_state_migration_blocked",
            f"Operational schema {AGENT_RUNS_SCOPE} is recorded as version "
            f"{AGENT_RUNS_SCHEMA_VERSION} but tables are missing: {', '.join(missing)}",
        )


def _migrate(conn: sqlite3.Connection) -> None:
    version = _read_scope_version(conn)  # optimistic, outside any transaction
    _refuse_newer(version)
    if version == AGENT_RUNS_SCHEMA_VERSION:
        _require_tables(conn)
        return
    with write_transaction(conn):
        version = _read_scope_version(conn)  # re-read under the write lock
        _refuse_newer(version)
        if version < AGENT_RUNS_SCHEMA_VERSION:
            for statement in _DDL:
                conn.execute(statement)
            record_scope_version(conn, AGENT_RUNS_SCOPE, AGENT_RUNS_SCHEMA_VERSION)
        _require_tables(conn)
