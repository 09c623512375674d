"""``maka-ref inspect`` / ``inspect_workspace`` (issue 3 item 7; docs/inspect.md).

The central promise (spec 20 §1.8 "reading never writes", spec 30 §10 items 8 and 33): every
file of the workspace — ``runtime.sqlite``, ``-wal`` and ``-shm`` included — stays
byte-identical and nothing is created, for the library call and for a real
``python -m maka_ref inspect`` process, also while a writer holds an un-checkpointed WAL.
Every workspace below is built with the real stores (or raw SQL for corruption), hashed
before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref import build_resume_plan, resolve_recovery
from maka_ref._inspect import FORMAT, inspect_workspace
from maka_ref._store import RuntimeStore, StoreError
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import completed_bundle, parked_bundle, raw, raw_insert, t1_input, t2_input, user_event

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- helpers


def tree_state(root: Path) -> tuple[list[str], dict[str, tuple[str, int]]]:
    """The sorted listing of everything under ``root`` and, per file, (sha256, mtime_ns)."""
    listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    files = {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }
    return listing, files


def run_cli(workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maka_ref", "inspect", "--workspace", str(workspace)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )


def inspect_unchanged(root: Path) -> dict[str, Any]:
    """Library call and CLI process, each leaving the tree identical; both documents equal."""
    before = tree_state(root)
    document = inspect_workspace(root)
    assert tree_state(root) == before
    proc = run_cli(root)
    assert tree_state(root) == before
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.count("\n") == 1, "one JSON document on one line"
    plain = json.loads(json.dumps(document))
    assert json.loads(proc.stdout) == plain
    return plain


def expect_error(root: Path, code: str, *, cli: bool = True) -> StoreError:
    """Library raises ``code``; the CLI exits 2 with the envelope and one stderr line; nothing
    under ``root`` (or next to it, when it does not exist) changes."""
    watch = root if root.is_dir() else root.parent
    before = tree_state(watch)
    with pytest.raises(StoreError) as info:
        inspect_workspace(root)
    assert info.value.code == code
    assert tree_state(watch) == before
    if cli:
        proc = run_cli(root)
        assert tree_state(watch) == before
        assert proc.returncode == 2
        envelope = json.loads(proc.stdout)
        assert envelope["error"]["code"] == code and envelope["error"]["message"]
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"maka-ref: error: {code}: ")
    return info.value


def header(run_id: str = "run-1", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "runId": run_id, "sessionId": "session-1", "turnId": "turn-1", "status": "running",
        "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace",
        "permissionMode": "ask", "createdAt": 1, "updatedAt": 2,
    }
    base.update(overrides)
    return base


def only_run(document: dict[str, Any]) -> dict[str, Any]:
    assert len(document["runs"]) == 1
    return document["runs"][0]


def event_ids(run: dict[str, Any]) -> list[str]:
    return [event["id"] for event in run["events"]]


def store_with(root: Path, *steps: str) -> None:
    """Build a W-family workspace: marker, then T1 / T2 / bundles as named."""
    with RuntimeStore.open(root) as store:
        store.append(fam.w_marker())
        for step in steps:
            if step == "t1":
                store.commit_tool_prepared(t1_input())
            elif step == "t2":
                store.commit_tool_outcome(t2_input())
            elif step == "completed":
                completed_bundle(store)
            elif step == "parked":
                parked_bundle(store)


# --------------------------------------------------------------------------- document shape


def test_t1_t2_document_shape_and_consistency_with_the_core(tmp_path: Path) -> None:
    """Spec 10 §7.7 #67: [M, C, D, O] → completed/matching_response/normal_t2; the document's
    resolution and plan are exactly the core's over the run's immutable events."""
    store_with(tmp_path, "t1", "t2")
    doc = inspect_unchanged(tmp_path)
    assert list(doc) == [
        "inspectFormat", "workspace", "storage", "health", "runs", "unsettledOperations",
        "unattachedToolOperations", "unattachedToolJournalEvents", "importSources",
    ]
    assert doc["inspectFormat"] == FORMAT
    assert doc["workspace"] == str(tmp_path)
    storage = doc["storage"]
    assert storage["kind"] == "sqlite" and storage["schemaVersion"] == 12
    assert storage["agentRunsSchemaVersion"] is None
    assert storage["files"] == ["runtime.sqlite"]
    assert storage["tables"]["runtime_events"] == 4 and list(storage["tables"]) == sorted(storage["tables"])
    assert doc["health"] == {"status": "healthy"}
    run = only_run(doc)
    assert list(run) == [
        "sessionId", "runId", "header", "agentRunEvents", "events", "eventRows", "partialEvents",
        "resolution", "plan", "toolOperations", "toolJournalEvents", "readErrors",
    ]
    assert event_ids(run) == ["initial-1", "call-event-1", "dispatch-event-1", "outcome-event-1"]
    assert [row["eventSeq"] for row in run["eventRows"]] == [1, 2, 3, 4]
    assert [row["committedAt"] for row in run["eventRows"]][1:] == [10, 10, 20]
    decision = run["resolution"]["decisions"][0]
    assert (decision["status"], decision["reason"], decision["settlementOrigin"]) == (
        "completed", "matching_response", "normal_t2")
    assert run["resolution"] == json.loads(json.dumps(resolve_recovery(run["events"]).to_json()))
    assert run["plan"] == json.loads(json.dumps(build_resume_plan(run["events"]).to_json()))
    assert [op["currentState"] for op in run["toolOperations"]] == ["outcome_committed"]
    assert [j["journalEventId"] for j in run["toolJournalEvents"]] == [
        "operation-1_prepared", "operation-1_outcome"]
    assert run["readErrors"] == [] and run["header"] is None
    assert doc["unsettledOperations"] == []


def test_t1_only_is_unsettled_and_blocked(tmp_path: Path) -> None:
    """A kill after T1 ([M, C, D]): indeterminate, blocked with verification (spec 20 §1.5);
    the projection holds the prepared operation and it is listed as unsettled (spec 30 §3)."""
    store_with(tmp_path, "t1")
    run = only_run(doc := inspect_unchanged(tmp_path))
    assert run["plan"]["disposition"] == "blocked" and run["plan"]["requiresVerification"] is True
    assert run["resolution"]["requiresReconciliation"] is True
    assert [op["currentState"] for op in run["toolOperations"]] == ["prepared"]
    assert [j["state"] for j in run["toolJournalEvents"]] == ["prepared"]
    assert doc["unsettledOperations"] == ["operation-1"]


@pytest.mark.parametrize(
    ("bundle", "states", "op_state"),
    [
        ("completed", ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"],
         "recovery_completed"),
        ("parked", ["prepared", "reconcile_observed", "recovery_parked"], "recovery_parked"),
    ],
)
def test_recovery_bundles(tmp_path: Path, bundle: str, states: list[str], op_state: str) -> None:
    """Spec 30 §2.5 / §3.1: bundle journal rows in commit order, camelCase, metadata included."""
    store_with(tmp_path, "t1", bundle)
    run = only_run(inspect_unchanged(tmp_path))
    assert [j["state"] for j in run["toolJournalEvents"]] == states
    assert run["toolJournalEvents"][1]["metadata"]["kind"] == "maka.tool.reconcile_result"
    assert run["toolOperations"][0]["currentState"] == op_state
    decision = run["resolution"]["decisions"][0]
    assert decision["settlementOrigin" if bundle == "completed" else "status"] == (
        "recovery_bundle" if bundle == "completed" else "parked")


def test_corrupt_ledger_is_reported_not_an_error(tmp_path: Path) -> None:
    """A duplicate call inserted raw (spec 30 §9 item 39): exit 0, health corrupt with the
    first scanner issue, the run's resolution hasCorruption."""
    store_with(tmp_path, "t1")
    conn = raw(tmp_path)
    raw_insert(conn, fam.w_call(id="call-event-dup"), 4)
    conn.close()
    doc = inspect_unchanged(tmp_path)
    assert doc["health"]["status"] == "corrupt"
    assert doc["health"]["code"] == "duplicate_call"
    assert doc["health"]["eventId"]
    run = only_run(doc)
    assert run["resolution"]["hasCorruption"] is True
    assert "call-event-dup" in event_ids(run)


def test_undecodable_row_is_reported_on_its_run(tmp_path: Path) -> None:
    """Spec 20 §1.8 / spec 30 §1.2: a row whose payload disagrees with its identity columns is
    storage corruption: no events, no resolution, no plan, a readError; other runs unaffected."""
    with RuntimeStore.open(tmp_path) as store:
        store.append(user_event())
        store.append(user_event("user-event-2", sessionId="session-2", invocationId="inv-2", runId="run-2"))
    conn = raw(tmp_path)
    conn.execute("UPDATE runtime_events SET run_id = 'run-9' WHERE event_id = 'user-event-1'")
    conn.close()
    doc = inspect_unchanged(tmp_path)
    assert doc["health"]["status"] == "unreadable"
    assert doc["health"]["code"] == "row_payload_identity_mismatch"
    broken, fine = doc["runs"]
    assert (broken["sessionId"], broken["runId"]) == ("session-1", "run-9")
    assert broken["events"] is None and broken["resolution"] is None and broken["plan"] is None
    assert broken["readErrors"][0]["source"] == "events"
    assert broken["readErrors"][0]["code"] == "row_payload_identity_mismatch"
    assert event_ids(fine) == ["user-event-2"] and fine["readErrors"] == []


def test_agent_run_headers_and_discovered_runs(tmp_path: Path) -> None:
    """Runs are the union of AgentRun headers and runtime_events runs, ordered by (sessionId,
    runId): a header-only run has no events; an event-only run has header null."""
    with RuntimeStore.open(tmp_path) as store:
        store.append(user_event())
        store.append(user_event("user-event-3", invocationId="inv-3", runId="run-3"))
    with AgentRunStore.open(tmp_path) as runs:
        runs.create_run(header("run-1"))
        runs.append_event("session-1", "run-1", {"type": "run_created", "id": "e-1", "runId": "run-1",
                                                 "sessionId": "session-1", "turnId": "turn-1", "ts": 1})
        runs.create_run(header("run-2", createdAt=0))
    doc = inspect_unchanged(tmp_path)
    assert doc["storage"]["agentRunsSchemaVersion"] == 1
    assert [(r["runId"], r["header"] is not None) for r in doc["runs"]] == [
        ("run-1", True), ("run-2", True), ("run-3", False)]
    run1, run2, run3 = doc["runs"]
    assert run1["header"]["status"] == "running" and run1["agentRunEvents"][0]["id"] == "e-1"
    assert event_ids(run1) == ["user-event-1"]
    assert run2["events"] == [] and run2["eventRows"] == []
    assert event_ids(run3) == ["user-event-3"] and run3["agentRunEvents"] == []


def test_partial_snapshots_are_listed_apart_from_events(tmp_path: Path) -> None:
    """Spec 30 §4: partial snapshots are presentation only, never in events or the plan."""
    chunk = fam.event("partial-0", ts=1, partial=True, role="model", author="agent",
                      content={"kind": "text", "text": "hel"}, refs={"providerEventId": "message-1"})
    with RuntimeStore.open(tmp_path) as store:
        store.append(chunk)
    run = only_run(inspect_unchanged(tmp_path))
    assert run["events"] == [] and len(run["partialEvents"]) == 1
    assert run["partialEvents"][0]["event"]["content"]["text"] == "hel"


def test_legacy_files_next_to_a_database_are_never_merged(tmp_path: Path) -> None:
    """Spec 30 §5.2 rule 4: once runtime.sqlite exists, kind is sqlite and JSONL is ignored."""
    store_with(tmp_path)
    legacy = tmp_path / "sessions" / "session-1" / "runs" / "run-7" / "runtime-events.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps(user_event(runId="run-7")) + "\n", encoding="utf-8")
    doc = inspect_unchanged(tmp_path)
    assert doc["storage"]["kind"] == "sqlite" and [r["runId"] for r in doc["runs"]] == ["run-1"]


# --------------------------------------------------------------------------- legacy / empty


def _legacy(root: Path, run_id: str, data: bytes) -> None:
    path = root / "sessions" / "session-1" / "runs" / run_id / "runtime-events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event) + "\n").encode("utf-8")


def test_legacy_only_tree_is_jsonl_and_creates_no_database(tmp_path: Path) -> None:
    """Spec 30 §5.2 rule 4, §10 item 33: kind jsonl, no runtime.sqlite (nor -wal/-shm)
    created; a torn tail is reported on its run and in health, never skipped."""
    ledger = [fam.w_marker(), fam.w_call(), fam.w_dispatch(), fam.w_outcome()]
    ledger = [dict(e, runId="run-1", invocationId="invocation-1") for e in ledger]
    _legacy(tmp_path, "run-1", b"".join(_line(e) for e in ledger))
    _legacy(tmp_path, "run-2", _line(user_event("u-2", runId="run-2", invocationId="i-2")) + b'{"id": "u-3", "ro')
    doc = inspect_unchanged(tmp_path)
    assert not any(p.name.startswith("runtime.sqlite") for p in tmp_path.rglob("*"))
    assert doc["storage"] == {
        "kind": "jsonl", "schemaVersion": None, "agentRunsSchemaVersion": None,
        "files": ["sessions/session-1/runs/run-1/runtime-events.jsonl",
                  "sessions/session-1/runs/run-2/runtime-events.jsonl"],
        "tables": {},
    }
    run1, run2 = doc["runs"]
    assert run1["resolution"]["decisions"][0]["status"] == "completed" and run1["eventRows"] is None
    assert run2["events"] is None and run2["readErrors"][0]["code"] == "legacy_jsonl_torn_tail"
    assert run2["readErrors"][0]["line"] == 2
    assert doc["health"]["status"] == "unreadable" and doc["health"]["code"] == "legacy_jsonl_torn_tail"


def test_legacy_health_scans_every_run(tmp_path: Path) -> None:
    """Health over JSONL is the store's scan over the files' events (what an import would hold)."""
    _legacy(tmp_path, "run-1", _line(fam.w_call()) + _line(fam.w_call(id="call-event-2")))
    doc = inspect_unchanged(tmp_path)
    assert doc["health"]["status"] == "corrupt" and doc["health"]["code"] == "duplicate_call"


def test_empty_directory_is_kind_none(tmp_path: Path) -> None:
    doc = inspect_unchanged(tmp_path)
    assert doc["storage"]["kind"] == "none" and doc["runs"] == [] and doc["health"] == {"status": "healthy"}
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- live writer


def test_open_writer_with_uncheckpointed_wal_is_seen_and_untouched(tmp_path: Path) -> None:
    """Spec 30 §10 item 8: committed frames only in the -wal are read (via the copy), and the
    workspace's main file, -wal and -shm stay byte-identical while the writer stays open."""
    store = RuntimeStore.open(tmp_path)
    try:
        store.connection.execute("PRAGMA wal_autocheckpoint = 0")
        store.append(fam.w_marker())
        store.commit_tool_prepared(t1_input())
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == ["runtime.sqlite", "runtime.sqlite-shm", "runtime.sqlite-wal"]
        assert (tmp_path / "runtime.sqlite-wal").stat().st_size > 0
        doc = inspect_unchanged(tmp_path)
        assert doc["storage"]["files"] == names
        assert event_ids(only_run(doc)) == ["initial-1", "call-event-1", "dispatch-event-1"]
        assert doc["unsettledOperations"] == ["operation-1"]
        store.commit_tool_outcome(t2_input())  # the writer is unaffected by the inspection
    finally:
        store.close()


def test_rollback_journal_database_reads_the_last_committed_state(tmp_path: Path) -> None:
    """A rollback-mode database caught mid-transaction (hot -journal, pages spilled into the
    main file): the copy is rolled back privately; the workspace is untouched."""
    with RuntimeStore.open(tmp_path) as store:
        store.append(user_event())
    writer = raw(tmp_path)
    writer.execute("PRAGMA journal_mode = DELETE")
    writer.execute("PRAGMA cache_size = 1")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("CREATE TABLE filler (x TEXT)")
    for _ in range(200):
        writer.execute("INSERT INTO filler VALUES (?)", ("x" * 2000,))
    try:
        assert (tmp_path / "runtime.sqlite-journal").exists()
        doc = inspect_unchanged(tmp_path)
        assert "filler" not in doc["storage"]["tables"]
        assert event_ids(only_run(doc)) == ["user-event-1"]
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_concurrent_writer_gives_a_consistent_document_or_busy(tmp_path: Path) -> None:
    """The copy races with commits and checkpoints (autocheckpoint every page): every result is
    a consistent prefix (event_seq 1..n, healthy) or ``workspace_busy``, never a corrupt read."""
    import threading

    store = RuntimeStore.open(tmp_path)
    store.connection.execute("PRAGMA wal_autocheckpoint = 1")
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set() and n < 3000:
            n += 1
            store.append(user_event(f"user-event-{n}", ts=n))

    thread = threading.Thread(target=write)
    thread.start()
    outcomes: list[str] = []
    try:
        for _ in range(25):
            try:
                doc = inspect_workspace(tmp_path)
            except StoreError as error:
                assert error.code == "workspace_busy", error
                outcomes.append("busy")
                continue
            assert doc["health"] == {"status": "healthy"}
            if doc["runs"]:
                seqs = [row["eventSeq"] for row in only_run(doc)["eventRows"]]
                assert seqs == list(range(1, len(seqs) + 1))
            outcomes.append("ok")
    finally:
        stop.set()
        thread.join()
        store.close()
    assert outcomes


# --------------------------------------------------------------------------- bad workspaces


def test_missing_workspace(tmp_path: Path) -> None:
    expect_error(tmp_path / "absent", "workspace_not_found")
    assert not (tmp_path / "absent").exists()


def test_workspace_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    expect_error(target, "workspace_not_a_directory")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_workspace_real_permissions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0)
    try:
        with pytest.raises(StoreError) as info:
            inspect_workspace(ws)
        assert info.value.code == "workspace_unreadable"
        assert run_cli(ws).returncode == 2
    finally:
        ws.chmod(0o755)


def test_unreadable_workspace_and_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission errors (simulated: the suite may run as root) → ``workspace_unreadable``."""
    from maka_ref._inspect import api, snapshot

    def denied(*_: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    store_with(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(api, "list_directory", denied)
        with pytest.raises(StoreError) as info:
            inspect_workspace(tmp_path)
        assert info.value.code == "workspace_unreadable"
    before = tree_state(tmp_path)
    monkeypatch.setattr(snapshot, "copy_file", denied)
    with pytest.raises(StoreError) as info:
        inspect_workspace(tmp_path)
    assert info.value.code == "workspace_unreadable"
    assert tree_state(tmp_path) == before


def test_truncated_database(tmp_path: Path) -> None:
    store_with(tmp_path, "t1", "t2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.sqlite"]
    with open(tmp_path / "runtime.sqlite", "r+b") as handle:
        handle.truncate(1000)
    expect_error(tmp_path, "database_corrupt")


def test_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "runtime.sqlite").write_bytes(b"this is not an SQLite database, just text\n" * 200)
    expect_error(tmp_path, "database_corrupt")


def test_database_path_is_a_directory(tmp_path: Path) -> None:
    """The store's own code for the fault (issue 13: ``store_file_not_regular``, as a writer)."""
    (tmp_path / "runtime.sqlite").mkdir()
    expect_error(tmp_path, "store_file_not_regular")


def test_newer_schema(tmp_path: Path) -> None:
    """Spec 30 §1.3 step 2: user_version 13 → ``schema_too_new`` (the store's code and message)."""
    store_with(tmp_path)
    conn = raw(tmp_path)
    conn.execute("PRAGMA user_version = 13")
    conn.close()
    error = expect_error(tmp_path, "schema_too_new")
    assert error.message == "SQLite runtime schema 13 is newer than supported version 12"


def test_store_error_codes_pass_through(tmp_path: Path) -> None:
    """Other store refusals keep their code: an older schema, a missing capability, a newer
    AgentRun scope."""
    old, cap, scope = (tmp_path / name for name in ("old", "cap", "scope"))
    for root in (old, cap, scope):
        store_with(root)
    conn = raw(old)
    conn.execute("PRAGMA user_version = 11")
    conn.close()
    expect_error(old, "schema_not_current")
    conn = raw(cap)
    conn.execute("DELETE FROM runtime_capabilities WHERE capability = 'runtime_recovery_authority'")
    conn.close()
    expect_error(cap, "capability_unavailable", cli=False)
    AgentRunStore.open(scope).close()
    conn = raw(scope)
    conn.execute("UPDATE operational_schema_migrations SET version = 2 WHERE scope = 'agent_runs'")
    conn.close()
    expect_error(scope, "operational_state_migration_blocked", cli=False)


def test_busy_database_is_detected_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source that changes during the copy is retried; one that always changes →
    ``workspace_busy``. The private snapshot directory is always removed."""
    from maka_ref._inspect import snapshot

    store_with(tmp_path)
    created: list[Path] = []
    real_mkdtemp = snapshot.tempfile.mkdtemp

    def tracking_mkdtemp(*args: Any, **kwargs: Any) -> str:
        created.append(Path(real_mkdtemp(*args, **kwargs)))
        return str(created[-1])

    monkeypatch.setattr(snapshot.tempfile, "mkdtemp", tracking_mkdtemp)
    monkeypatch.setattr(snapshot, "_BACKOFF_S", 0.0)
    calls = {"n": 0}

    def racing_copy(source: Path, dest: Path, *, times: int) -> None:
        shutil.copyfile(source, dest)
        calls["n"] += 1
        if calls["n"] <= times:
            os.utime(source, ns=(calls["n"], calls["n"]))  # "a writer touched it meanwhile"

    monkeypatch.setattr(snapshot, "copy_file", lambda s, d: racing_copy(s, d, times=1))
    assert inspect_workspace(tmp_path)["storage"]["kind"] == "sqlite"
    calls["n"] = 0
    monkeypatch.setattr(snapshot, "copy_file", lambda s, d: racing_copy(s, d, times=10**6))
    with pytest.raises(StoreError) as info:
        inspect_workspace(tmp_path)
    assert info.value.code == "workspace_busy"
    assert calls["n"] == snapshot.ATTEMPTS
    assert created and not any(path.exists() for path in created)
    assert not any(str(path).startswith(str(tmp_path)) for path in created)


def test_usage_error_without_workspace() -> None:
    from maka_ref._cli.main import run
    import io

    out, err = io.StringIO(), io.StringIO()
    assert run(["inspect"], stdout=out, stderr=err) == 2
    assert json.loads(out.getvalue())["error"]["code"] == "usage"


def test_database_readers_never_open_the_workspace_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite only ever opens the private copy: every sqlite3.connect target is outside the
    workspace."""
    import maka_ref._store.engine.connection as connection

    store_with(tmp_path, "t1")
    targets: list[str] = []
    real_connect = sqlite3.connect

    def spy(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        targets.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(connection.sqlite3, "connect", spy)
    inspect_workspace(tmp_path)
    assert targets
    assert not any(str(tmp_path) in target for target in targets)


def test_the_documented_example_is_what_inspect_prints(tmp_path: Path) -> None:
    """docs/inspect.md's example: [M, C, D] with an AgentRun header, byte for byte as JSON."""
    text = (REPO / "docs" / "inspect.md").read_text(encoding="utf-8")
    block = text.split("<!-- inspect-example -->\n```json\n", 1)[1].split("\n```", 1)[0]
    store_with(tmp_path, "t1")
    with AgentRunStore.open(tmp_path) as runs:
        runs.create_run(header())
    doc = inspect_unchanged(tmp_path)
    doc["workspace"] = "/path/to/workspace"
    assert json.dumps(json.loads(block)) == json.dumps(doc)  # key order included


def test_a_value_that_is_not_json_is_database_corrupt(tmp_path: Path) -> None:
    """A raw edit leaving a BLOB where the stores write JSON values cannot be printed: it is
    refused as ``database_corrupt`` instead of crashing the printer."""
    store_with(tmp_path, "t1")
    conn = raw(tmp_path)
    conn.execute("UPDATE tool_journal_events SET committed_at = x'00ff'")
    conn.close()
    expect_error(tmp_path, "database_corrupt")
