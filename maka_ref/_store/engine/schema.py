"""Runtime schema versions 1..12, the migration algorithm and the capability gate
(spec 30 §1.2–§1.4).

Why the algorithm has this exact shape (§1.3, §10 items 2–4):

* the optimistic ``user_version`` read happens outside any transaction, so an established
  database (already at 12) stays on a read path and never takes the write lock;
* a newer version fails closed *before* anything is written (the file bytes stay unchanged);
* otherwise ``BEGIN IMMEDIATE`` and a **re-read under the lock**: a concurrent first opener may
  have migrated meanwhile, and without the re-read the second process would re-run
  ``CREATE TABLE`` and fail;
* each step runs statement by statement (``executescript`` would COMMIT first) and sets
  ``PRAGMA user_version`` itself; the pragma is transactional, so a failed migration rolls
  everything back, version included.

The DDL is the runtime scope's physical contract (table, column and index names are matched
byte for byte by other implementations and by the harness).
"""

from __future__ import annotations

import sqlite3
import time

from maka_ref._store.engine.connection import write_transaction
from maka_ref._store.errors import (
    CONTINUATION_CAPABILITY,
    CURRENT_SCHEMA_VERSION,
    RECOVERY_CAPABILITY,
    WORKSPACE_CAPABILITY,
    StoreError,
    capability_unavailable,
)

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "MIGRATIONS",
    "OPERATIONAL_REGISTRY_DDL",
    "REQUIRED_CAPABILITIES",
    "apply_migrations",
    "check_capabilities",
    "check_read_only_version",
    "migrate",
    "read_scope_version",
    "read_user_version",
    "record_scope_version",
    "refuse_newer_scope",
]

_M1 = (
    """CREATE TABLE runtime_events (
  event_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  event_seq INTEGER NOT NULL CHECK (event_seq > 0),
  event_kind TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  committed_at INTEGER NOT NULL,
  UNIQUE (invocation_id, event_seq)
)""",
    "CREATE INDEX runtime_events_by_run ON runtime_events(session_id, run_id, event_seq)",
    "CREATE INDEX runtime_events_by_session ON runtime_events(session_id, committed_at, event_id)",
    """CREATE TABLE tool_journal_events (
  journal_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  journal_event_id TEXT NOT NULL UNIQUE,
  operation_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  state TEXT NOT NULL,
  runtime_event_id TEXT,
  canonical_args_hash TEXT,
  recovery_mode TEXT,
  external_handle TEXT,
  metadata_json TEXT,
  committed_at INTEGER NOT NULL,
  FOREIGN KEY (runtime_event_id) REFERENCES runtime_events(event_id)
)""",
    "CREATE INDEX tool_journal_events_by_operation ON tool_journal_events(operation_id, journal_seq)",
    """CREATE TABLE tool_operations (
  operation_id TEXT PRIMARY KEY,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  provider_tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  canonical_args_hash TEXT NOT NULL,
  recovery_mode TEXT NOT NULL,
  current_state TEXT NOT NULL,
  call_event_id TEXT NOT NULL,
  result_event_id TEXT,
  version INTEGER NOT NULL CHECK (version > 0),
  FOREIGN KEY (call_event_id) REFERENCES runtime_events(event_id),
  FOREIGN KEY (result_event_id) REFERENCES runtime_events(event_id),
  UNIQUE (invocation_id, provider_tool_call_id)
)""",
)

_M2 = (
    """CREATE TABLE runtime_partial_snapshots (
  stream_key TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  after_event_id TEXT,
  payload_json TEXT NOT NULL,
  text_content TEXT NOT NULL,
  updated_at INTEGER NOT NULL
)""",
    "CREATE INDEX runtime_partial_snapshots_by_run "
    "ON runtime_partial_snapshots(session_id, run_id, updated_at, stream_key)",
)

_M4 = ("ALTER TABLE tool_operations ADD COLUMN dispatch_event_id TEXT REFERENCES runtime_events(event_id)",)

_M5 = (
    """CREATE TABLE runtime_capabilities (
  capability TEXT PRIMARY KEY,
  version INTEGER NOT NULL CHECK (version > 0)
)""",
    f"INSERT INTO runtime_capabilities(capability, version) VALUES ('{RECOVERY_CAPABILITY}', 1)",
)

_M6 = (
    """CREATE TABLE runtime_continuation_claims (
  claim_id TEXT PRIMARY KEY,
  source_session_id TEXT NOT NULL,
  source_invocation_id TEXT NOT NULL,
  source_run_id TEXT NOT NULL,
  source_turn_id TEXT NOT NULL,
  source_event_high_water INTEGER NOT NULL CHECK (source_event_high_water > 0),
  source_prefix_digest TEXT NOT NULL,
  boundary_digest TEXT NOT NULL UNIQUE,
  boundary_json TEXT NOT NULL,
  provider_projection_version INTEGER NOT NULL CHECK (provider_projection_version = 1),
  provider_replay_digest TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  target_invocation_id TEXT NOT NULL UNIQUE,
  target_run_id TEXT NOT NULL UNIQUE,
  target_turn_id TEXT NOT NULL,
  target_run_header_json TEXT NOT NULL,
  claimed_at INTEGER NOT NULL,
  start_event_id TEXT UNIQUE REFERENCES runtime_events(event_id),
  start_kind TEXT CHECK (start_kind IS NULL OR start_kind IN ('runtime_admission', 'claim_repair')),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1),
  UNIQUE (source_session_id, source_run_id, source_event_high_water, source_prefix_digest),
  UNIQUE (target_session_id, target_turn_id)
)""",
    f"INSERT INTO runtime_capabilities(capability, version) VALUES ('{CONTINUATION_CAPABILITY}', 1)",
)

_M7 = (
    """CREATE TABLE runtime_workspace_epochs (
  workspace_id TEXT NOT NULL,
  workspace_epoch_id TEXT NOT NULL UNIQUE,
  repository_id TEXT NOT NULL,
  workspace_instance_id TEXT NOT NULL UNIQUE,
  mode TEXT NOT NULL CHECK (mode = 'managed_worktree'),
  object_format TEXT NOT NULL CHECK (object_format IN ('sha1', 'sha256')),
  source_commit_oid TEXT NOT NULL,
  source_tree_oid TEXT NOT NULL,
  initial_workspace_version_id TEXT NOT NULL UNIQUE,
  materialization_profile_digest TEXT NOT NULL,
  materialization_semantics TEXT NOT NULL
    CHECK (materialization_semantics = 'git_tree_materialized_with_fixed_config_v1'),
  policy_hash TEXT NOT NULL,
  authority_session_id TEXT NOT NULL CHECK (authority_session_id = 'maka_workspace_authority'),
  authority_invocation_id TEXT NOT NULL UNIQUE,
  authority_run_id TEXT NOT NULL UNIQUE,
  authority_turn_id TEXT NOT NULL UNIQUE,
  epoch_opened_event_id TEXT NOT NULL UNIQUE REFERENCES runtime_events(event_id),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1),
  committed_at INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, workspace_epoch_id)
)""",
    """CREATE TABLE runtime_workspace_versions (
  workspace_version_id TEXT PRIMARY KEY,
  repository_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  workspace_epoch_id TEXT NOT NULL,
  object_format TEXT NOT NULL CHECK (object_format IN ('sha1', 'sha256')),
  origin_kind TEXT NOT NULL CHECK (origin_kind = 'baseline'),
  origin_event_id TEXT NOT NULL,
  parents_json TEXT NOT NULL CHECK (parents_json = '[]'),
  commit_oid TEXT NOT NULL,
  tree_oid TEXT NOT NULL,
  policy_hash TEXT NOT NULL,
  tree_delta_digest TEXT NOT NULL,
  changed_file_count INTEGER NOT NULL CHECK (changed_file_count >= 0),
  deleted_file_count INTEGER NOT NULL CHECK (deleted_file_count = 0),
  accepted_event_id TEXT NOT NULL UNIQUE REFERENCES runtime_events(event_id),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1),
  committed_at INTEGER NOT NULL,
  FOREIGN KEY (workspace_id, workspace_epoch_id)
    REFERENCES runtime_workspace_epochs(workspace_id, workspace_epoch_id),
  UNIQUE (workspace_id, workspace_epoch_id, workspace_version_id, accepted_event_id)
)""",
    """CREATE TABLE runtime_workspace_heads (
  workspace_id TEXT NOT NULL,
  workspace_epoch_id TEXT NOT NULL,
  repository_id TEXT NOT NULL,
  workspace_version_id TEXT NOT NULL,
  accepted_event_id TEXT NOT NULL,
  commit_oid TEXT NOT NULL,
  tree_oid TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision > 0),
  PRIMARY KEY (workspace_id, workspace_epoch_id),
  FOREIGN KEY (workspace_id, workspace_epoch_id)
    REFERENCES runtime_workspace_epochs(workspace_id, workspace_epoch_id),
  FOREIGN KEY (workspace_id, workspace_epoch_id, workspace_version_id, accepted_event_id)
    REFERENCES runtime_workspace_versions(workspace_id, workspace_epoch_id, workspace_version_id, accepted_event_id)
)""",
    f"INSERT INTO runtime_capabilities(capability, version) VALUES ('{WORKSPACE_CAPABILITY}', 1)",
)

_M9 = (
    """CREATE TABLE runtime_storage_root_binding (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  root_id TEXT NOT NULL CHECK (length(root_id) = 64 AND root_id NOT GLOB '*[^0-9a-f]*'),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1)
)""",
)

_M10 = (
    """CREATE TABLE runtime_partial_segments (
  stream_key TEXT NOT NULL,
  segment_seq INTEGER NOT NULL CHECK (segment_seq > 0),
  text_content TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (stream_key, segment_seq),
  FOREIGN KEY (stream_key) REFERENCES runtime_partial_snapshots(stream_key) ON DELETE CASCADE
)""",
)

_M11 = (
    """CREATE TABLE runtime_session_event_ordinals (
  session_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal > 0),
  event_id TEXT NOT NULL UNIQUE,
  PRIMARY KEY (session_id, ordinal),
  FOREIGN KEY (event_id) REFERENCES runtime_events(event_id) ON DELETE CASCADE
) WITHOUT ROWID""",
    # Backfill: one ordinal per event, per session, in physical (rowid) commit order.
    """INSERT INTO runtime_session_event_ordinals(session_id, ordinal, event_id)
SELECT session_id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY rowid ASC), event_id
FROM runtime_events""",
)

_M12 = ("DROP TABLE IF EXISTS headless_task_run_events",)

#: version -> its statements, run one by one (3 and 8 are historical no-ops).
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: _M1,
    2: _M2,
    3: (),
    4: _M4,
    5: _M5,
    6: _M6,
    7: _M7,
    8: (),
    9: _M9,
    10: _M10,
    11: _M11,
    12: _M12,
}

REQUIRED_CAPABILITIES: tuple[str, ...] = (RECOVERY_CAPABILITY, CONTINUATION_CAPABILITY, WORKSPACE_CAPABILITY)


def read_user_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA user_version`` as a non-negative integer (booleans are not integers, §10 item 17)."""
    row = conn.execute("PRAGMA user_version").fetchone()
    value = row[0] if row is not None else None
    if type(value) is not int or value < 0:
        raise StoreError("Invalid SQLite runtime schema version", code="invalid_schema_version")
    return value


def _newer(version: int) -> StoreError:
    return StoreError(
        f"SQLite runtime schema {version} is newer than supported version {CURRENT_SCHEMA_VERSION}",
        code="schema_too_new",
    )


def apply_migrations(conn: sqlite3.Connection, current: int, target: int = CURRENT_SCHEMA_VERSION) -> None:
    """Run steps ``current+1 … target`` inside the caller's open transaction (§1.3 step 4/5)."""
    for version in range(current + 1, target + 1):
        statements = MIGRATIONS.get(version)
        if statements is None:
            raise StoreError(f"Missing SQLite runtime migration {version}", code="missing_migration")
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")


def migrate(conn: sqlite3.Connection, *, target: int = CURRENT_SCHEMA_VERSION) -> None:
    """§1.3 algorithm. ``target`` below 12 exists only to build historical databases in tests."""
    current = read_user_version(conn)  # 1. optimistic, outside any transaction
    if current > CURRENT_SCHEMA_VERSION:
        raise _newer(current)  # 2. fail closed, nothing written
    if current >= target:
        return  # 3. established database: no write lock taken
    with write_transaction(conn):  # 4. (joins the caller's transaction when it owns one)
        current = read_user_version(conn)
        if current > CURRENT_SCHEMA_VERSION:
            raise _newer(current)
        if current < target:
            apply_migrations(conn, current, target)


def check_read_only_version(conn: sqlite3.Connection) -> None:
    """Read-only opens never migrate: anything but the current version is refused (§1.1)."""
    version = read_user_version(conn)
    if version != CURRENT_SCHEMA_VERSION:
        raise StoreError(
            f"SQLite runtime schema {version} cannot be read without upgrading to {CURRENT_SCHEMA_VERSION}",
            code="schema_not_current",
        )


def check_capabilities(conn: sqlite3.Connection) -> None:
    """§1.4: each required capability row must exist with version exactly 1 (no guessing:
    an experimental marker such as ``tool_recovery_bundle`` satisfies nothing)."""
    for capability in REQUIRED_CAPABILITIES:
        try:
            row = conn.execute(
                "SELECT version FROM runtime_capabilities WHERE capability = ?", (capability,)
            ).fetchone()
        except sqlite3.OperationalError:
            row = None  # no capability table at all
        if row is None or type(row[0]) is not int or row[0] != 1:
            raise capability_unavailable(capability)


# -- operational scopes ----------------------------------------------------------------------
# Stores beside the runtime scope (the AgentRun headers, Phase 3's evidence) are versioned per
# scope in ``operational_schema_migrations``, never in ``PRAGMA user_version`` (the runtime
# scope's): one registry, shared by every scope, whose rows each scope's migration writes.

#: The registry every operational scope creates (first) with its own tables.
OPERATIONAL_REGISTRY_DDL = """CREATE TABLE IF NOT EXISTS operational_schema_migrations (
  scope TEXT PRIMARY KEY,
  version INTEGER NOT NULL CHECK (version >= 0),
  applied_at INTEGER NOT NULL CHECK (applied_at >= 0)
)"""


def read_scope_version(conn: sqlite3.Connection, scope: str, *, invalid_message: str) -> int:
    """The recorded version of ``scope``: 0 when the registry or its row is absent; a value that
    is not a non-negative integer fails closed (``operational_state_migration_blocked``)."""
    registry = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'operational_schema_migrations'"
    ).fetchone()
    if registry is None:
        return 0
    row = conn.execute("SELECT version FROM operational_schema_migrations WHERE scope = ?", (scope,)).fetchone()
    if row is None:
        return 0
    if type(row[0]) is not int or row[0] < 0:
        raise StoreError(invalid_message, code="operational_state_migration_blocked")
    return row[0]


def refuse_newer_scope(scope: str, version: int, supported: int, *, advice: str = "") -> None:
    """A scope recorded newer than this build supports fails closed before anything is written."""
    if version > supported:
        raise StoreError(
            f"Operational schema {scope} is newer than supported version {supported}; "
            f"Maka did not migrate or delete the database.{advice}",
            code="operational_state_migration_blocked",
        )


def record_scope_version(conn: sqlite3.Connection, scope: str, version: int) -> None:
    """Record ``scope`` at ``version`` (inside the caller's write transaction, after its DDL)."""
    conn.execute(
        "INSERT INTO operational_schema_migrations (scope, version, applied_at) VALUES (?, ?, ?) "
        "ON CONFLICT (scope) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at",
        (scope, version, int(time.time() * 1000)),
    )

