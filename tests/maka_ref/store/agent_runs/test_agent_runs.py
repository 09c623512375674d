"""AgentRun SQLite operational store (spec 20 §5.3, §5.2; spec 30 §1.1, §1.3 registry rules).

Every test opens a real ``<root>/runtime.sqlite`` under ``tmp_path``. Expected values come
from the spec (codes, messages, ordering rules), never from the code under test.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.errors import StoreError
from maka_ref._store.agent_runs.header import RunEventSchemaError, RunHeaderSchemaError

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def header(**overrides: object) -> dict:
    base: dict = {
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "status": "created",
        "backendKind": "fake",
        "llmConnectionSlug": "fake",
        "modelId": "fake-model",
        "cwd": "/workspace",
        "permissionMode": "ask",
        "createdAt": 1,
        "updatedAt": 1,
    }
    base.update(overrides)
    return base


def event(seq_id: str = "e-1", **overrides: object) -> dict:
    base: dict = {"type": "run_created", "id": seq_id, "runId": "run-1", "sessionId": "session-1",
                  "turnId": "turn-1", "ts": 1}
    base.update(overrides)
    return base


@pytest.fixture()
def store(tmp_path: Path):
    s = AgentRunStore.open(tmp_path)
    yield s
    s.close()


def db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / "runtime.sqlite", isolation_level=None)


def digest_db(root: Path) -> str:
    """The main database file's bytes (SQLite's own ``-wal``/``-shm`` index files are not data)."""
    return hashlib.sha256((root / "runtime.sqlite").read_bytes()).hexdigest()


def code_of(excinfo: pytest.ExceptionInfo) -> str:
    return excinfo.value.code


# ------------------------------------------------------------------ createRun (§5.3)


def test_create_then_read_round_trip(store: AgentRunStore) -> None:
    """§5.3 createRun / readRun: the stored header deep-equals the decoded header."""
    created = store.create_run(header())
    assert created == header()
    assert store.read_run("session-1", "run-1") == header()


def test_create_stores_the_folded_header(store: AgentRunStore) -> None:
    """§5.3: "the header is normalized/strictly decoded" (§5.1 folds applied before storing)."""
    store.create_run(header(status="waiting_permission", automationId="auto-1", permissionMode="execute"))
    stored = store.read_run("session-1", "run-1")
    assert stored["status"] == "waiting_for_user"
    assert stored["legacyAutomationId"] == "auto-1" and "automationId" not in stored
    assert stored["permissionMode"] == "ask"


def test_create_is_insert_only(store: AgentRunStore) -> None:
    """§5.3: an existing (sessionId, runId) → error ("already exists"); the original is kept."""
    store.create_run(header())
    with pytest.raises(StoreError) as info:
        store.create_run(header(modelId="other-model"))
    assert code_of(info) == "run_already_exists"
    assert "already exists" in info.value.message
    assert store.read_run("session-1", "run-1")["modelId"] == "fake-model"


@pytest.mark.parametrize(
    ("session_id", "run_id"),
    [("session/1", "run-1"), ("session-1", "run.1"), ("", "run-1"), ("session-1", "r" * 129),
     ("session-1", "run-1\n"), ("séance", "run-1")],
)
def test_create_requires_safe_ids(store: AgentRunStore, tmp_path: Path, session_id: str, run_id: str) -> None:
    """§5.3: sessionId and runId must match ^[A-Za-z0-9_-]{1,128}$; nothing is written."""
    with pytest.raises(StoreError) as info:
        store.create_run(header(sessionId=session_id, runId=run_id))
    assert code_of(info) == "invalid_agent_run_id"
    assert db(tmp_path).execute("SELECT COUNT(*) FROM agent_runs").fetchone()[0] == 0


def test_create_accepts_128_char_ids(store: AgentRunStore) -> None:
    long_id = "A_z-9" * 25 + "abc"
    assert len(long_id) == 128
    store.create_run(header(runId=long_id))
    assert store.read_run("session-1", long_id)["runId"] == long_id


def test_create_rejects_invalid_header(store: AgentRunStore, tmp_path: Path) -> None:
    """§5.1 via §5.3: a header that does not decode is refused with the spec message."""
    with pytest.raises(RunHeaderSchemaError) as info:
        store.create_run(header(extra=1))
    assert info.value.message == "Invalid AgentRun header schema"
    assert db(tmp_path).execute("SELECT COUNT(*) FROM agent_runs").fetchone()[0] == 0


@pytest.mark.parametrize(
    "source",
    [
        {"sourceInvocationId": "i", "sourceRunId": "r", "sourceTurnId": "t", "sourceRuntimeEventHighWater": 4},
        {"protocol": "continuation_source_v2", "claimId": "claim-1", "boundaryDigest": DIGEST_A,
         "sourceInvocationId": "i", "sourceRunId": "run-0", "sourceTurnId": "t",
         "sourceRuntimeEventHighWater": 7, "sourcePrefixDigest": DIGEST_B, "replayManifestDigest": DIGEST_A},
    ],
    ids=["v1", "v2"],
)
def test_continuation_source_round_trips_through_the_store(tmp_path: Path, source: dict) -> None:
    """§5.1 continuationSource v1/v2 survive create → close → reopen → read unchanged."""
    value = header(parentRunId="run-0", parentTurnId="t", continuationSource=source)
    with AgentRunStore.open(tmp_path) as s:
        s.create_run(value)
    with AgentRunStore.open_read_only(tmp_path) as ro:
        assert ro.read_run("session-1", "run-1") == value


# ------------------------------------------------------------------ updateRun (§5.3)


def test_update_mutable_fields(store: AgentRunStore) -> None:
    """§5.3 / §4.1 step 3: terminal header write through mutable fields only."""
    store.create_run(header(status="running"))
    updated = store.update_run(
        "session-1", "run-1",
        {"status": "failed", "updatedAt": 9, "completedAt": 9, "failureClass": "app_restarted",
         "failureMessage": "host restarted", "traceWriteError": "x"},
    )
    assert updated == header(status="failed", updatedAt=9, completedAt=9, failureClass="app_restarted",
                             failureMessage="host restarted", traceWriteError="x")
    assert store.read_run("session-1", "run-1") == updated


@pytest.mark.parametrize(
    ("key", "value"),
    [("cwd", "/elsewhere"), ("runId", "run-2"), ("sessionId", "session-2"), ("turnId", "turn-2"),
     ("modelId", "m2"), ("workspaceIdentity", "workspace:v1:x"), ("invocationId", "inv-2"),
     ("parentRunId", "run-0"), ("createdAt", 5), ("permissionMode", "bypass"), ("agentId", "a")],
)
def test_update_refuses_admission_identity(store: AgentRunStore, key: str, value: object) -> None:
    """§5.3: any non-mutable key → error ("admission identity is immutable"); header unchanged."""
    store.create_run(header())
    with pytest.raises(StoreError) as info:
        store.update_run("session-1", "run-1", {"status": "running", key: value})
    assert code_of(info) == "run_admission_identity_immutable"
    assert "admission identity is immutable" in info.value.message
    assert store.read_run("session-1", "run-1") == header()


def test_run_composition_set_once(store: AgentRunStore) -> None:
    """§5.3: runComposition can be set once and never cleared or changed."""
    store.create_run(header())
    composition = {"prompt": {"digest": DIGEST_A}, "tools": ["Bash", "Write"]}
    assert store.update_run("session-1", "run-1", {"runComposition": composition})["runComposition"] == composition
    # the identical value again is not a change
    store.update_run("session-1", "run-1", {"runComposition": dict(composition), "updatedAt": 2})
    for attempt in ({"runComposition": {"prompt": {"digest": DIGEST_B}}}, {"runComposition": None}):
        with pytest.raises(StoreError) as info:
            store.update_run("session-1", "run-1", attempt)
        assert code_of(info) == "run_composition_immutable"
    stored = store.read_run("session-1", "run-1")
    assert stored["runComposition"] == composition and stored["updatedAt"] == 2


def test_update_none_removes_an_optional_mutable_field(store: AgentRunStore) -> None:
    """Documented choice: ``None`` in a patch means "absent" (JavaScript ``undefined``)."""
    store.create_run(header(status="failed", failureClass="x", completedAt=3))
    updated = store.update_run("session-1", "run-1", {"failureClass": None, "completedAt": None, "status": "running"})
    assert "failureClass" not in updated and "completedAt" not in updated


def test_update_re_decodes_the_merged_header(store: AgentRunStore) -> None:
    """§5.3: the merged header must still decode; otherwise nothing changes."""
    store.create_run(header())
    for patch in ({"status": "exploded"}, {"updatedAt": True}, {"status": None}):
        with pytest.raises(RunHeaderSchemaError):
            store.update_run("session-1", "run-1", patch)
    assert store.read_run("session-1", "run-1") == header()


def test_update_folds_retired_status(store: AgentRunStore) -> None:
    store.create_run(header(status="running"))
    assert store.update_run("session-1", "run-1", {"status": "waiting_permission"})["status"] == "waiting_for_user"


def test_update_missing_run_is_enoent(store: AgentRunStore) -> None:
    with pytest.raises(StoreError) as info:
        store.update_run("session-1", "nope", {"status": "running"})
    assert code_of(info) == "ENOENT"


# ------------------------------------------------------------------ readRun / listSessionRuns (§5.3)


def test_read_missing_is_enoent(store: AgentRunStore) -> None:
    """§5.3: missing → not-found error (code ``ENOENT``)."""
    with pytest.raises(StoreError) as info:
        store.read_run("session-1", "run-404")
    assert code_of(info) == "ENOENT"
    assert "not found" in info.value.message


def test_stored_identity_must_match_the_key(store: AgentRunStore, tmp_path: Path) -> None:
    """§5.3: "stored identity must match the path" — a row holding another run's header fails closed."""
    store.create_run(header())
    store.create_run(header(runId="run-2"))
    import json

    conn = db(tmp_path)
    conn.execute(
        "UPDATE agent_runs SET header_json = ? WHERE run_id = 'run-2'",
        (json.dumps(header(runId="run-1")),),
    )
    with pytest.raises(StoreError) as info:
        store.read_run("session-1", "run-2")
    assert code_of(info) == "agent_run_identity_mismatch"
    with pytest.raises(StoreError):
        store.list_session_runs("session-1")


def test_corrupt_stored_header_fails_closed(store: AgentRunStore, tmp_path: Path) -> None:
    store.create_run(header())
    db(tmp_path).execute("UPDATE agent_runs SET header_json = '{\"runId\":' WHERE run_id = 'run-1'")
    with pytest.raises(RunHeaderSchemaError):
        store.read_run("session-1", "run-1")


def test_list_session_runs_orders_by_created_at_then_run_id(store: AgentRunStore) -> None:
    """§5.3: listSessionRuns ordered by ``createdAt``, then ``runId``."""
    store.create_run(header(runId="run-b", createdAt=2, updatedAt=2))
    store.create_run(header(runId="run-c", createdAt=1.5, updatedAt=9))
    store.create_run(header(runId="run-a", createdAt=2, updatedAt=2))
    store.create_run(header(runId="Run-Z", createdAt=2, updatedAt=2))  # "R" < "r" in code-unit order
    store.create_run(header(runId="run-0", createdAt=10, updatedAt=10))
    store.create_run(header(sessionId="session-2", runId="run-x", createdAt=0, updatedAt=0))
    assert [h["runId"] for h in store.list_session_runs("session-1")] == ["run-c", "Run-Z", "run-a", "run-b", "run-0"]
    assert [h["runId"] for h in store.list_session_runs("session-2")] == ["run-x"]
    assert store.list_session_runs("session-3") == []


# ------------------------------------------------------------------ appendEvent / readEvents (§5.2, §5.3)


def test_append_assigns_per_run_sequence(store: AgentRunStore, tmp_path: Path) -> None:
    """§5.3: per-run sequence 0,1,2,… assigned in the same transaction; runs are independent."""
    store.create_run(header())
    store.create_run(header(runId="run-2", turnId="turn-2"))
    assert [store.append_event("session-1", "run-1", event(f"e-{i}")) for i in range(3)] == [0, 1, 2]
    assert store.append_event("session-1", "run-2", event("f-0", runId="run-2", turnId="turn-2")) == 0
    rows = db(tmp_path).execute(
        "SELECT run_id, seq FROM agent_run_events ORDER BY run_id, seq"
    ).fetchall()
    assert rows == [("run-1", 0), ("run-1", 1), ("run-1", 2), ("run-2", 0)]
    assert [e["id"] for e in store.read_events("session-1", "run-1")] == ["e-0", "e-1", "e-2"]


def test_append_accepts_unknown_types_and_round_trips(store: AgentRunStore) -> None:
    """§5.2: readers accept unknown types; optional message/data survive."""
    store.create_run(header())
    value = event(type="brand_new_type", message="m", data={"recovered": True, "nested": {"a": [1, 2.5]}})
    store.append_event("session-1", "run-1", value)
    assert store.read_events("session-1", "run-1") == [value]


@pytest.mark.parametrize("key", ["sessionId", "runId", "turnId"])
def test_append_requires_identity_equal_to_header(store: AgentRunStore, key: str) -> None:
    """§5.2/§5.3: event identity must equal the header's; nothing is appended otherwise."""
    store.create_run(header())
    with pytest.raises(StoreError) as info:
        store.append_event("session-1", "run-1", event(**{key: "other"}))
    assert code_of(info) == "agent_run_event_identity_mismatch"
    assert store.read_events("session-1", "run-1") == []


def test_append_requires_the_run(store: AgentRunStore) -> None:
    """§5.3: appendEvent — run must exist."""
    with pytest.raises(StoreError) as info:
        store.append_event("session-1", "run-1", event())
    assert code_of(info) == "ENOENT"


def test_append_rejects_bad_envelope(store: AgentRunStore) -> None:
    store.create_run(header())
    with pytest.raises(RunEventSchemaError):
        store.append_event("session-1", "run-1", event(extra=1))


def test_read_events_of_missing_run_is_enoent(store: AgentRunStore) -> None:
    with pytest.raises(StoreError) as info:
        store.read_events("session-1", "run-1")
    assert code_of(info) == "ENOENT"


def test_undecodable_event_becomes_event_corrupt_placeholder(store: AgentRunStore, tmp_path: Path) -> None:
    """§5.2: ``event_corrupt`` is the reader placeholder for an undecodable record; strict raises (§4.4)."""
    store.create_run(header())
    store.append_event("session-1", "run-1", event("e-0"))
    store.append_event("session-1", "run-1", event("e-1"))
    store.append_event("session-1", "run-1", event("e-2"))
    conn = db(tmp_path)
    conn.execute("UPDATE agent_run_events SET event_json = 'torn{' WHERE seq = 1")
    events = store.read_events("session-1", "run-1")
    assert [e["type"] for e in events] == ["run_created", "event_corrupt", "run_created"]
    corrupt = events[1]
    assert (corrupt["sessionId"], corrupt["runId"], corrupt["turnId"]) == ("session-1", "run-1", "turn-1")
    assert corrupt["data"]["seq"] == 1
    with pytest.raises(RunEventSchemaError):
        store.read_events("session-1", "run-1", strict=True)


# ------------------------------------------------------------------ reads never write; read-only


def test_read_only_open_creates_nothing(tmp_path: Path) -> None:
    """Spec 30 §1.1 applied to this scope: a read-only open never creates the file or the directory."""
    missing = tmp_path / "absent"
    with pytest.raises(Exception):
        AgentRunStore.open_read_only(missing)
    assert not missing.exists()
    with pytest.raises(Exception):
        AgentRunStore.open_read_only(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_reads_never_write(tmp_path: Path) -> None:
    """§5.3 brief: reads never write — neither through the writer nor through a reader."""
    with AgentRunStore.open(tmp_path) as s:
        s.create_run(header())
        s.append_event("session-1", "run-1", event())
        before = s.connection.total_changes
        s.read_run("session-1", "run-1")
        s.list_session_runs("session-1")
        s.read_events("session-1", "run-1")
        assert s.connection.total_changes == before
    files = digest_db(tmp_path)
    with AgentRunStore.open_read_only(tmp_path) as ro:
        assert ro.read_run("session-1", "run-1") == header()
        assert len(ro.read_events("session-1", "run-1")) == 1
        assert ro.connection.total_changes == 0
        with pytest.raises(StoreError) as info:
            ro.create_run(header(runId="run-2"))
        assert code_of(info) == "read_only_store"
    assert digest_db(tmp_path) == files


def test_read_only_requires_the_current_scope(tmp_path: Path) -> None:
    """A database without the ``agent_runs`` scope cannot be read without upgrading (fail closed)."""
    conn = db(tmp_path)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    with pytest.raises(StoreError) as info:
        AgentRunStore.open_read_only(tmp_path)
    assert code_of(info) == "agent_runs_schema_unavailable"


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    s = AgentRunStore.open(tmp_path)
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError):
        s.read_run("session-1", "run-1")


# ------------------------------------------------------------------ scope versioning


def test_registry_row_and_user_version_untouched(tmp_path: Path) -> None:
    """Brief: versioned by ``operational_schema_migrations`` scope ``agent_runs``; never ``user_version``."""
    conn = db(tmp_path)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    AgentRunStore.open(tmp_path).close()
    conn = db(tmp_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
    rows = conn.execute("SELECT scope, version, applied_at FROM operational_schema_migrations").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("agent_runs", 1)]
    assert isinstance(rows[0][2], int) and rows[0][2] >= 0
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # reopening is a no-op: applied_at unchanged
    AgentRunStore.open(tmp_path).close()
    assert conn.execute("SELECT applied_at FROM operational_schema_migrations").fetchone()[0] == rows[0][2]


def test_newer_scope_version_fails_closed_and_writes_nothing(tmp_path: Path) -> None:
    """Spec 30 §1.3 (product fail-closed rule) for this scope: newer → refuse, nothing written."""
    conn = db(tmp_path)
    conn.execute(
        "CREATE TABLE operational_schema_migrations (scope TEXT PRIMARY KEY, version INTEGER NOT NULL "
        "CHECK (version >= 0), applied_at INTEGER NOT NULL CHECK (applied_at >= 0))"
    )
    conn.execute("INSERT INTO operational_schema_migrations VALUES ('agent_runs', 2, 5)")
    conn.close()
    for opener in (AgentRunStore.open, AgentRunStore.open_read_only):
        with pytest.raises(StoreError) as info:
            opener(tmp_path)
        assert code_of(info) == "operational_state_migration_blocked"
        assert "newer than supported version 1" in info.value.message
    conn = db(tmp_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"operational_schema_migrations"}
    assert conn.execute("SELECT version, applied_at FROM operational_schema_migrations").fetchall() == [(2, 5)]


def test_other_scopes_are_kept(tmp_path: Path) -> None:
    """Other scopes' registry rows are not touched."""
    conn = db(tmp_path)
    conn.execute(
        "CREATE TABLE operational_schema_migrations (scope TEXT PRIMARY KEY, version INTEGER NOT NULL "
        "CHECK (version >= 0), applied_at INTEGER NOT NULL CHECK (applied_at >= 0))"
    )
    conn.execute("INSERT INTO operational_schema_migrations VALUES ('runtime', 12, 3)")
    conn.close()
    AgentRunStore.open(tmp_path).close()
    rows = db(tmp_path).execute("SELECT scope, version FROM operational_schema_migrations ORDER BY scope").fetchall()
    assert rows == [("agent_runs", 1), ("runtime", 12)]


def test_shares_the_file_with_the_runtime_scope(tmp_path: Path) -> None:
    """Brief: same ``<root>/runtime.sqlite`` as the runtime scope, own tables; ``user_version`` stays 12."""
    schema = pytest.importorskip("maka_ref._store.engine.schema")
    connection = pytest.importorskip("maka_ref._store.engine.connection")
    conn = connection.connect(tmp_path / "runtime.sqlite", read_only=False)
    schema.migrate(conn)
    conn.close()
    with AgentRunStore.open(tmp_path) as s:
        s.create_run(header())
    conn = db(tmp_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 12
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runtime_events", "agent_runs", "agent_run_events"} <= tables


def test_two_writers_share_one_database(tmp_path: Path) -> None:
    a = AgentRunStore.open(tmp_path)
    b = AgentRunStore.open(tmp_path)
    try:
        a.create_run(header())
        assert b.append_event("session-1", "run-1", event("e-0")) == 0
        assert a.append_event("session-1", "run-1", event("e-1")) == 1
        with pytest.raises(StoreError):
            b.create_run(header())
    finally:
        a.close()
        b.close()
