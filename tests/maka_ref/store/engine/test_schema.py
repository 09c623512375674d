"""SQLite file, connection, schema migrations and capability gate (spec 30 §1, §9 items 1–8,
§10 items 1–7, 33)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maka_ref._store.engine import schema
from maka_ref._store.engine.connection import connect, read_transaction, write_transaction
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import db_file, file_sha256, ids, open_store, raw, raw_insert

EXPECTED_TABLES = {
    "runtime_events",
    "tool_journal_events",
    "tool_operations",
    "runtime_partial_snapshots",
    "runtime_partial_segments",
    "runtime_capabilities",
    "runtime_continuation_claims",
    "runtime_workspace_epochs",
    "runtime_workspace_versions",
    "runtime_workspace_heads",
    "runtime_storage_root_binding",
    "runtime_session_event_ordinals",
    # Phase 3: the scope tool_evidence and its registry, created by writer opens (spec-phase3 §3.2)
    "operational_schema_migrations",
    "runtime_tool_evidence",
}


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
    return {row[0] for row in rows}


def _build_at(root: Path, version: int) -> None:
    """A database migrated only up to ``version`` (a historical schema)."""
    conn = connect(db_file(root), read_only=False)
    try:
        schema.migrate(conn, target=version)
    finally:
        conn.close()


def test_item1_fresh_open_pragmas_and_reopen(tmp_path: Path) -> None:
    """§9 item 1, §10 item 7: user_version 12, WAL, synchronous FULL (2), foreign keys on."""
    store = open_store(tmp_path)
    conn = store.connection
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 12
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert _tables(conn) == EXPECTED_TABLES
    capabilities = dict(conn.execute("SELECT capability, version FROM runtime_capabilities").fetchall())
    assert capabilities == {
        "runtime_recovery_authority": 1,
        "runtime_continuation_authority": 1,
        "runtime_workspace_version_authority": 1,
    }
    store.close()
    before = file_sha256(db_file(tmp_path))
    again = open_store(tmp_path)
    assert again.schema_version() == 12
    assert again.read_run_events("session-1", "run-1") == []
    assert again.list_unsettled_operations() == []
    again.close()
    assert file_sha256(db_file(tmp_path)) == before  # reopen did not rewrite anything


def test_item1_established_database_takes_no_write_lock(tmp_path: Path) -> None:
    """§1.3 step 3: at version 12 migrate() only reads user_version (no BEGIN IMMEDIATE)."""
    open_store(tmp_path).close()
    conn = connect(db_file(tmp_path), read_only=False)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    schema.migrate(conn)
    conn.close()
    assert statements == ["PRAGMA user_version"]


def test_item2_locked_reread_sees_concurrent_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§9 item 2: optimistic read says 4, the re-read under the lock says 12 → no DDL."""
    open_store(tmp_path).close()
    conn = connect(db_file(tmp_path), read_only=False)
    real = schema.read_user_version
    calls = {"n": 0}

    def stale_first(c: sqlite3.Connection) -> int:
        calls["n"] += 1
        return 4 if calls["n"] == 1 else real(c)

    monkeypatch.setattr(schema, "read_user_version", stale_first)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    schema.migrate(conn)
    conn.close()
    assert statements == ["BEGIN IMMEDIATE", "PRAGMA user_version", "COMMIT"]


def test_item3_reread_happens_under_lock_before_first_create(tmp_path: Path) -> None:
    """§9 item 3: BEGIN IMMEDIATE → re-read user_version → first CREATE TABLE; one step per version."""
    conn = connect(db_file(tmp_path), read_only=False)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    schema.migrate(conn)
    conn.close()
    begin = statements.index("BEGIN IMMEDIATE")
    assert statements[0] == "PRAGMA user_version"
    assert statements[begin + 1] == "PRAGMA user_version"
    first_create = next(i for i, s in enumerate(statements) if s.startswith("CREATE TABLE"))
    assert begin < begin + 1 < first_create
    assert [s for s in statements if s.startswith("PRAGMA user_version =")] == [
        f"PRAGMA user_version = {v}" for v in range(1, 13)
    ]
    assert statements[-1] == "COMMIT"


def test_item4_experimental_marker_does_not_satisfy_capability_gate(tmp_path: Path) -> None:
    """§9 item 4, §1.4: only tool_recovery_bundle=1 → the recovery capability is unavailable."""
    open_store(tmp_path).close()
    conn = raw(tmp_path)
    conn.execute("DELETE FROM runtime_capabilities")
    conn.execute("INSERT INTO runtime_capabilities (capability, version) VALUES ('tool_recovery_bundle', 1)")
    conn.close()
    with pytest.raises(StoreError, match="runtime_recovery_authority@1 is unavailable") as info:
        RuntimeStore.open(tmp_path)
    assert str(info.value) == "SQLite runtime recovery capability runtime_recovery_authority@1 is unavailable"
    assert info.value.code == "capability_unavailable"


@pytest.mark.parametrize(
    ("capability", "version"),
    [
        ("runtime_continuation_authority", None),
        ("runtime_workspace_version_authority", None),
        ("runtime_recovery_authority", 2),
    ],
)
def test_capability_gate_each_row_version_exactly_one(tmp_path: Path, capability: str, version: int | None) -> None:
    """§1.4: a missing row or a version other than 1 fails the open (writer and reader)."""
    open_store(tmp_path).close()
    conn = raw(tmp_path)
    if version is None:
        conn.execute("DELETE FROM runtime_capabilities WHERE capability = ?", (capability,))
    else:
        conn.execute("UPDATE runtime_capabilities SET version = ? WHERE capability = ?", (version, capability))
    conn.close()
    with pytest.raises(StoreError, match=f"capability {capability}@1 is unavailable"):
        RuntimeStore.open(tmp_path)
    with pytest.raises(StoreError, match=f"capability {capability}@1 is unavailable"):
        RuntimeStore.open_read_only(tmp_path)


def test_item5_newer_schema_fails_closed_without_writing(tmp_path: Path) -> None:
    """§9 item 5, §1.3 step 2: user_version 13 → "newer than supported"; file bytes unchanged."""
    open_store(tmp_path).close()
    conn = raw(tmp_path)
    conn.execute("PRAGMA user_version = 13")
    conn.close()
    path = db_file(tmp_path)
    before = file_sha256(path)
    with pytest.raises(StoreError, match="SQLite runtime schema 13 is newer than supported version 12") as info:
        RuntimeStore.open(tmp_path)
    assert info.value.code == "schema_too_new"
    assert file_sha256(path) == before
    with pytest.raises(StoreError, match="SQLite runtime schema 13 cannot be read without upgrading to 12"):
        RuntimeStore.open_read_only(tmp_path)
    assert file_sha256(path) == before


def test_invalid_schema_version(tmp_path: Path) -> None:
    """§1.3 step 1: a negative user_version is not a schema version."""
    open_store(tmp_path).close()
    conn = raw(tmp_path)
    conn.execute("PRAGMA user_version = -1")
    conn.close()
    with pytest.raises(StoreError, match="^Invalid SQLite runtime schema version$") as info:
        RuntimeStore.open(tmp_path)
    assert info.value.code == "invalid_schema_version"


def test_item6_read_only_open_never_migrates(tmp_path: Path) -> None:
    """§9 item 6: read-only open of a v11 database fails and leaves it at 11."""
    _build_at(tmp_path, 11)
    conn = raw(tmp_path)
    conn.execute("CREATE TABLE headless_task_run_events (x)")  # migration 12 would drop it
    conn.close()
    with pytest.raises(StoreError, match="SQLite runtime schema 11 cannot be read without upgrading to 12") as info:
        RuntimeStore.open_read_only(tmp_path)
    assert info.value.code == "schema_not_current"
    conn = raw(tmp_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 11
    assert "headless_task_run_events" in _tables(conn)
    conn.close()
    store = RuntimeStore.open(tmp_path)  # the writer upgrades: migration 12 drops the table
    assert store.schema_version() == 12
    assert "headless_task_run_events" not in _tables(store.connection)
    store.close()


def test_read_only_open_creates_nothing(tmp_path: Path) -> None:
    """§1.1, §10 item 33: a read-only open never creates the file or its directory."""
    root = tmp_path / "missing" / "root"
    with pytest.raises(StoreError) as info:
        RuntimeStore.open_read_only(root)
    assert info.value.code == "store_missing"
    assert not (tmp_path / "missing").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(sqlite3.OperationalError):
        connect(empty / "runtime.sqlite", read_only=True)
    assert list(empty.iterdir()) == []


def test_read_only_store_reads_and_refuses_writes(tmp_path: Path) -> None:
    """§1.1: query_only reader sees committed events; writes are refused."""
    store = open_store(tmp_path)
    store.append(fam.event("user-event-1", role="user", author="user", content={"kind": "text", "text": "hi"}))
    store.close()
    reader = RuntimeStore.open_read_only(tmp_path)
    assert ids(reader.read_run_events("session-1", "run-1")) == ["user-event-1"]
    assert reader.connection.execute("PRAGMA query_only").fetchone()[0] == 1
    with pytest.raises(StoreError, match="read-only"):
        reader.append(fam.event("user-event-2", role="user", author="user", content={"kind": "text", "text": "x"}))
    with pytest.raises(sqlite3.OperationalError):
        reader.connection.execute("DELETE FROM runtime_events")
    reader.close()


def test_writer_creates_parent_directory(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    open_store(root).close()
    assert (root / "runtime.sqlite").is_file()


def test_item7_v4_database_with_raw_tool_facts_migrates_and_rebuilds(tmp_path: Path) -> None:
    """§9 item 7: v4 with raw call+dispatch (mainline hash of X {required:[b,a]}), no projections."""
    literal = "sha256:0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43"
    _build_at(tmp_path, 4)
    conn = raw(tmp_path)
    call = fam.w_call()
    call["content"] = {"kind": "function_call", "id": "provider-call-1", "name": "X", "args": {"required": ["b", "a"]}}
    dispatch = fam.w_dispatch()
    dispatch["actions"]["toolDispatch"].update(toolName="X", canonicalArgsHash=literal)
    raw_insert(conn, call, 1)
    raw_insert(conn, dispatch, 2)
    conn.close()
    store = open_store(tmp_path)
    assert store.schema_version() == 12
    assert store.session_ordinals("session-1") == {"call-event-1": 1, "dispatch-event-1": 2}  # m11 backfill
    assert store.read_tool_operation("operation-1") is None
    report = store.rebuild_tool_projections()
    assert report.to_json() == {"operations": 1, "journalEvents": 1}
    operation = store.read_tool_operation("operation-1")
    assert operation is not None
    assert (operation.current_state, operation.version, operation.canonical_args_hash) == ("prepared", 1, literal)
    assert store.list_unsettled_operations() == ["operation-1"]
    store.close()


def test_item8_legacy_projections_without_dispatch_are_left_alone(tmp_path: Path) -> None:
    """§9 item 8, §3.2 step 4: dispatch-less rows survive upgrade and rebuild untouched."""
    _build_at(tmp_path, 4)
    conn = raw(tmp_path)
    call1 = fam.w_call()
    call2 = fam.w_call(id="call-event-2")
    call2["content"]["id"] = "provider-call-2"
    response2 = fam.w_outcome_unbound(id="response-event-2")
    response2["content"]["id"] = "provider-call-2"
    response2["refs"] = {"toolCallId": "provider-call-2"}
    for seq, event in enumerate((call1, call2, response2), start=1):
        raw_insert(conn, event, seq)
    legacy = (
        ("legacy-op-1", "provider-call-1", "prepared", "call-event-1", None, 1),
        ("legacy-op-2", "provider-call-2", "outcome_committed", "call-event-2", "response-event-2", 2),
    )
    for op, call_id, state, call_event, result, version in legacy:
        conn.execute(
            "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, "
            "tool_name, canonical_args_hash, recovery_mode, current_state, call_event_id, result_event_id, version) "
            "VALUES (?, 'invocation-1', 'run-1', 'turn-1', ?, 'Write', ?, 'reconcile', ?, ?, ?, ?)",
            (op, call_id, fam.WRITE_NOTES_HASH, state, call_event, result, version),
        )
    conn.close()
    store = open_store(tmp_path)
    before = [store.read_tool_operation(op).to_json() for op in ("legacy-op-1", "legacy-op-2")]
    assert [b["currentState"] for b in before] == ["prepared", "outcome_committed"]
    assert "dispatchEventId" not in before[0]
    assert store.list_unsettled_operations() == []
    assert store.rebuild_tool_projections().to_json() == {"operations": 0, "journalEvents": 0}
    assert [store.read_tool_operation(op).to_json() for op in ("legacy-op-1", "legacy-op-2")] == before
    assert len(store.read_run_events("session-1", "run-1")) == 3
    store.close()


def test_failed_migration_rolls_back_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§1.3 step 4, §10 item 3: a failing step rolls back DDL and user_version together."""
    monkeypatch.setitem(schema.MIGRATIONS, 9, ("CREATE TABLE broken (",))
    conn = connect(db_file(tmp_path), read_only=False)
    with pytest.raises(sqlite3.OperationalError):
        schema.migrate(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert _tables(conn) == set()
    assert not conn.in_transaction
    conn.close()


def test_missing_migration_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(schema.MIGRATIONS, 5)
    conn = connect(db_file(tmp_path), read_only=False)
    with pytest.raises(StoreError, match="^Missing SQLite runtime migration 5$"):
        schema.migrate(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()


def test_write_transaction_rolls_back_and_keeps_the_original_error(tmp_path: Path) -> None:
    """§1.1, §10 items 1, 6: BEGIN IMMEDIATE; any exception (BaseException too) rolls back."""
    open_store(tmp_path).close()
    conn = connect(db_file(tmp_path), read_only=False)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)

    class Boom(BaseException):
        pass

    with pytest.raises(Boom):
        with write_transaction(conn):
            conn.execute("INSERT INTO runtime_capabilities VALUES ('x', 1)")
            raise Boom()
    assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "ROLLBACK"
    assert conn.execute("SELECT COUNT(*) FROM runtime_capabilities WHERE capability = 'x'").fetchone()[0] == 0
    with pytest.raises(ValueError, match="original"):
        with write_transaction(conn):
            conn.execute("ROLLBACK")  # the rollback that follows now fails; it must not mask
            raise ValueError("original")
    with read_transaction(conn):
        assert conn.in_transaction
    assert not conn.in_transaction
    conn.close()


def test_nested_write_transaction_joins_the_outer_one(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    conn = connect(db_file(tmp_path), read_only=False)
    with pytest.raises(RuntimeError):
        with write_transaction(conn):
            with write_transaction(conn):
                conn.execute("INSERT INTO runtime_capabilities VALUES ('y', 1)")
            raise RuntimeError("outer fails")
    assert conn.execute("SELECT COUNT(*) FROM runtime_capabilities WHERE capability = 'y'").fetchone()[0] == 0
    conn.close()


def test_connect_uses_autocommit(tmp_path: Path) -> None:
    """§10 item 2: Python must not open implicit transactions."""
    conn = connect(db_file(tmp_path), read_only=False)
    assert conn.isolation_level is None
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    conn.close()


def test_operational_scopes_fail_closed_with_their_own_messages(tmp_path: Path) -> None:
    """The ``agent_runs`` and ``tool_evidence`` scopes share one registry and its helpers
    (``read_scope_version``, ``refuse_newer_scope``, ``record_scope_version``); each still
    refuses a newer or invalid recorded version with its own message, writing nothing."""
    from maka_ref._store.agent_runs.schema import _migrate as migrate_agent_runs
    from maka_ref._store.errors import StoreError
    from maka_ref._store.evidence import migrate_tool_evidence

    cases = [
        (migrate_agent_runs, "agent_runs", "Operational schema agent_runs is newer than supported version 1; Maka did "
                                           "not migrate or delete the database. Upgrade Maka to open this workspace.",
         "Invalid AgentRun operational schema version"),
        (migrate_tool_evidence, "tool_evidence", "Operational schema tool_evidence is newer than supported version 1; "
                                                 "Maka did not migrate or delete the database.",
         "Invalid tool_evidence operational schema version"),
    ]
    for migrate_scope, scope, newer, invalid in cases:
        for version, message in ((2, newer), (-1, invalid)):
            conn = sqlite3.connect(tmp_path / f"{scope}{version}.sqlite", isolation_level=None)
            conn.execute("CREATE TABLE operational_schema_migrations (scope TEXT PRIMARY KEY, version INTEGER, "
                         "applied_at INTEGER)")
            conn.execute("INSERT INTO operational_schema_migrations VALUES (?, ?, 0)", (scope, version))
            with pytest.raises(StoreError) as refused:
                migrate_scope(conn)
            assert (refused.value.code, refused.value.message) == ("operational_state_migration_blocked", message)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            assert tables == {"operational_schema_migrations"}
            conn.close()
