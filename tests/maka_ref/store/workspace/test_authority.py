"""Workspace baseline authority: root binding, the one-transaction baseline writer, its
failpoints and two real SIGKILL crash modes (spec 30 §1.2, §2.7, §2.8, §6.2, §7.3 C9/C10,
§9 items 95–96, §10 items 8–10, 36–37)."""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from maka_ref._events.schema import decode_runtime_event
from maka_ref._store import RuntimeStore, StoreError
from maka_ref._store.engine.failpoints import FailpointTriggered, arm, disarm
from maka_ref._store.workspace.authority import WorkspaceAuthority
from maka_ref._events.encode import encode_runtime_event
from maka_ref._store.engine.rows import StoredEvent
from maka_ref._store.workspace.facts import WORKSPACE_AUTHORITY_SESSION_ID, build_baseline_events
from maka_ref._store.workspace.scan import scan_authority
from maka_ref.testing.workspace_baseline import (
    FIXTURE_EPOCH_ID as EPOCH,
    FIXTURE_ROOT_ID as ROOT,
    FIXTURE_VERSION_ID as VERSION,
    FIXTURE_WORKSPACE_ID as WORKSPACE,
    baseline_fixture_input as fixture,
)

from tests.maka_ref.store.support import raw, user_event

REPO = Path(__file__).resolve().parents[4]
AUTHORITY_RUN = "workspace_run_" + "3" * 32
PROJECTIONS = ("runtime_workspace_epochs", "runtime_workspace_versions", "runtime_workspace_heads")


@pytest.fixture(autouse=True)
def _disarmed() -> Any:
    disarm()
    yield
    disarm()


def _bound(root: Path) -> tuple[RuntimeStore, WorkspaceAuthority]:
    store = RuntimeStore.open(root)
    authority = WorkspaceAuthority(store)
    authority.bind_storage_root(ROOT)
    return store, authority


def _counts(store: RuntimeStore) -> list[int]:
    conn = store.connection
    return [conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in PROJECTIONS]


def _authority_ids(store: RuntimeStore) -> list[str]:
    return [event["id"] for event in store.read_run_events(WORKSPACE_AUTHORITY_SESSION_ID, AUTHORITY_RUN)]


# -- created / existing / conflict ---------------------------------------------------------------


def test_created_then_exact_retry_then_conflict(tmp_path: Path) -> None:
    """§2.8 row "workspace baseline": exact retry created:false; other version → conflict."""
    store, authority = _bound(tmp_path)
    first = authority.commit_workspace_baseline(fixture())
    assert first.created is True
    head = first.head
    assert (head.workspace_id, head.workspace_epoch_id, head.workspace_version_id) == (WORKSPACE, EPOCH, VERSION)
    assert (head.accepted_event_id, head.revision, head.commit_oid, head.tree_oid) == (
        "workspace-version-event-1", 1, "5" * 40, "2" * 40)
    assert authority.read_workspace_head(WORKSPACE, EPOCH) == head
    assert authority.commit_workspace_baseline(fixture()) == dataclasses.replace(first, created=False)
    with pytest.raises(StoreError, match="Workspace baseline authority conflict"):
        authority.commit_workspace_baseline(fixture("9"))
    other_ids = dataclasses.replace(fixture("9"), baseline_accepted_event_id="workspace-version-event-conflict")
    with pytest.raises(StoreError, match="Workspace baseline authority conflict"):
        authority.commit_workspace_baseline(other_ids)
    assert _counts(store) == [1, 1, 1]
    assert _authority_ids(store) == ["workspace-epoch-event-1", "workspace-version-event-1"]
    assert authority.read_workspace_head(WORKSPACE, "epoch_" + "7" * 32) is None
    store.close()
    reader = RuntimeStore.open_read_only(tmp_path)  # reads never write: works read-only
    assert WorkspaceAuthority(reader).read_workspace_head(WORKSPACE, EPOCH) == head
    reader.close()


def test_fixture_events_are_the_expected_canonical_rows(tmp_path: Path) -> None:
    """§6.2 fixture values; the loose ``workspaceFact`` decoder accepts the real shape."""
    store, authority = _bound(tmp_path)
    authority.commit_workspace_baseline(fixture())
    rows = store.connection.execute(
        "SELECT event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, committed_at "
        "FROM runtime_events ORDER BY event_seq").fetchall()
    suffix = "3" * 32
    identity = ("maka_workspace_authority", f"workspace_inv_{suffix}", f"workspace_run_{suffix}",
                f"workspace_turn_{suffix}")
    assert rows == [("workspace-epoch-event-1", *identity, 1, "workspace_fact", 1_700_000_000_000),
                    ("workspace-version-event-1", *identity, 2, "workspace_fact", 1_700_000_000_000)]
    opened, accepted = store.read_run_events(WORKSPACE_AUTHORITY_SESSION_ID, AUTHORITY_RUN)
    assert decode_runtime_event(opened) == opened
    epoch_fact, baseline_fact = opened["actions"]["workspaceFact"], accepted["actions"]["workspaceFact"]
    assert (epoch_fact["kind"], epoch_fact["version"]) == ("maka.workspace.epoch_opened", 1)
    assert epoch_fact["payload"]["initialWorkspaceVersionId"] == VERSION
    assert (baseline_fact["kind"], baseline_fact["payload"]["protocol"]) == (
        "maka.workspace.baseline_accepted", "workspace_baseline_accepted_v1")
    assert baseline_fact["payload"]["origin"] == {"kind": "baseline", "epochOpenedEventId": "workspace-epoch-event-1"}
    assert (opened["role"], opened["author"], opened["ts"], set(opened["actions"])) == (
        "system", "system", 1_700_000_000_000, {"workspaceFact"})
    store.close()


def test_generic_paths_refuse_the_authority_events(tmp_path: Path) -> None:
    """G1 / G2: only this writer may persist workspace facts or use the reserved stream."""
    store, _ = _bound(tmp_path)
    epoch_event, _ = build_baseline_events(fixture())
    with pytest.raises(StoreError, match="atomic workspace version authority writer"):
        store.append(epoch_event)
    ordinary = user_event("ordinary-authority-event", sessionId=WORKSPACE_AUTHORITY_SESSION_ID)
    with pytest.raises(StoreError, match="reserved workspace authority stream"):
        store.append(ordinary)
    store.close()


@pytest.mark.parametrize(("second", "expected"), [("5", {"created", "existing"}), ("9", {"created", "conflict"})])
def test_c9_c10_shape_two_connections_race(tmp_path: Path, second: str, expected: set[str]) -> None:
    """§7.3 C9 (a + a: one created, one existing) and C10 (a + b: one conflict, head 5 or 9),
    with two store connections racing on real threads; BEGIN IMMEDIATE serialises them."""
    setup, _ = _bound(tmp_path)
    setup.append(user_event())  # §7.2: the prepared DB holds other state too
    setup.close()
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def worker(digit: str) -> None:
        store = RuntimeStore.open(tmp_path)
        authority = WorkspaceAuthority(store)
        try:
            authority.bind_storage_root(ROOT)  # already bound: re-confirmation
            barrier.wait()
            created = authority.commit_workspace_baseline(fixture(digit)).created
            outcomes.append("created" if created else "existing")
        except StoreError as error:
            assert "Workspace baseline authority conflict" in str(error)
            outcomes.append("conflict")
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(digit,)) for digit in ("5", second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == sorted(expected)
    store = RuntimeStore.open_read_only(tmp_path)
    head = WorkspaceAuthority(store).read_workspace_head(WORKSPACE, EPOCH)
    assert head is not None and head.workspace_version_id in {VERSION, "version_" + second * 32}
    store.close()


# -- root binding --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["A" * 64, "a" * 63, "a" * 65, "g" * 64, 7, None])
def test_root_id_must_be_64_lowercase_hex(tmp_path: Path, bad: Any) -> None:
    store = RuntimeStore.open(tmp_path)
    with pytest.raises(StoreError, match="Invalid durable storage-root identity"):
        WorkspaceAuthority(store).bind_storage_root(bad)
    assert store.connection.execute("SELECT COUNT(*) FROM runtime_storage_root_binding").fetchone()[0] == 0
    store.close()


def test_binding_rules(tmp_path: Path) -> None:
    store, authority = _bound(tmp_path)
    authority.bind_storage_root(ROOT)  # idempotent
    assert store.connection.execute("SELECT singleton, root_id, protocol_version FROM runtime_storage_root_binding"
                                    ).fetchall() == [(1, ROOT, 1)]
    with pytest.raises(StoreError, match="belongs to a different durable storage root"):
        WorkspaceAuthority(store).bind_storage_root("b" * 64)
    with pytest.raises(StoreError, match="no durable storage-root binding"):
        WorkspaceAuthority(store).commit_workspace_baseline(fixture())
    authority.commit_workspace_baseline(fixture())
    conn = raw(tmp_path)
    conn.execute("DELETE FROM runtime_storage_root_binding")  # another connection unbinds it
    conn.close()
    with pytest.raises(StoreError, match="durable storage-root binding changed"):
        authority.commit_workspace_baseline(fixture())
    with pytest.raises(StoreError, match="Unbound operational data require explicit storage-root adoption"):
        WorkspaceAuthority(store).bind_storage_root("b" * 64)
    store.close()


def test_binding_refuses_a_database_with_ordinary_state(tmp_path: Path) -> None:
    store = RuntimeStore.open(tmp_path)
    store.append(user_event())
    with pytest.raises(StoreError, match="Unbound operational data require explicit storage-root adoption") as info:
        WorkspaceAuthority(store).bind_storage_root(ROOT)
    assert info.value.code == "storage_root_adoption_required"
    assert store.connection.execute("SELECT COUNT(*) FROM runtime_storage_root_binding").fetchone()[0] == 0
    store.close()


# -- failpoints: full rollback -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hit"),
    [
        ("after_workspace_canonical_scan", 1),  # the first scan, before any insert
        ("after_workspace_epoch_event_insert", 1),
        ("after_workspace_version_event_insert", 1),
        ("after_workspace_canonical_scan", 2),  # the rescan after both event inserts
        ("after_workspace_epoch_projection_insert", 1),
        ("after_workspace_version_projection_insert", 1),
        ("after_workspace_head_projection_insert", 1),
    ],
)
def test_each_failpoint_raise_rolls_back_everything(tmp_path: Path, name: str, hit: int) -> None:
    store, authority = _bound(tmp_path)
    with arm(name, "raise", hit=hit) as point:
        with pytest.raises(FailpointTriggered):
            authority.commit_workspace_baseline(fixture())
        assert point.fired
    assert not store.connection.in_transaction
    assert authority.read_workspace_head(WORKSPACE, EPOCH) is None
    assert _authority_ids(store) == [] and _counts(store) == [0, 0, 0]
    assert store.session_ordinals(WORKSPACE_AUTHORITY_SESSION_ID) == {}
    store.close()
    store, authority = _bound(tmp_path)  # reopened: still nothing, and the retry is "created"
    assert authority.read_workspace_head(WORKSPACE, EPOCH) is None
    assert authority.commit_workspace_baseline(fixture()).created is True
    store.close()


# -- corruption and invalid input fail closed ----------------------------------------------------


def test_projection_loss_and_row_edits_fail_closed(tmp_path: Path) -> None:
    store, authority = _bound(tmp_path)
    authority.commit_workspace_baseline(fixture())
    conn = raw(tmp_path)
    conn.execute("DELETE FROM runtime_workspace_heads")
    with pytest.raises(StoreError, match="projection is incomplete or inconsistent"):
        authority.read_workspace_head(WORKSPACE, EPOCH)
    with pytest.raises(StoreError, match="projection is incomplete or inconsistent"):
        authority.commit_workspace_baseline(fixture())
    conn.execute("UPDATE runtime_events SET run_id = 'workspace_run_corrupt' WHERE event_id = 'workspace-epoch-event-1'")
    with pytest.raises(StoreError, match="row/payload identity mismatch"):
        authority.read_workspace_head(WORKSPACE, EPOCH)
    conn.execute("UPDATE runtime_events SET run_id = ? WHERE event_id = 'workspace-epoch-event-1'", (AUTHORITY_RUN,))
    conn.execute("DELETE FROM runtime_events WHERE event_id = 'workspace-version-event-1'")
    with pytest.raises(StoreError, match="missing_baseline_version at workspace-epoch-event-1"):
        authority.read_workspace_head(WORKSPACE, EPOCH)
    conn.close()
    store.close()


def test_contaminated_authority_stream_fails_closed(tmp_path: Path) -> None:
    store, authority = _bound(tmp_path)
    conn = raw(tmp_path)
    conn.execute(
        "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
        "payload_json, committed_at) VALUES ('intruder', ?, 'i', 'r', 't', 1, 'text', ?, 1)",
        (WORKSPACE_AUTHORITY_SESSION_ID, '{"author":"user","content":{"kind":"text","text":"x"},"id":"intruder",'
         '"invocationId":"i","partial":false,"role":"user","runId":"r","sessionId":"maka_workspace_authority",'
         '"ts":1,"turnId":"t"}'),
    )
    conn.close()
    with pytest.raises(StoreError, match="authority_stream_contamination at intruder"):
        authority.commit_workspace_baseline(fixture())
    assert _counts(store) == [0, 0, 0]
    store.close()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: dataclasses.replace(d, committed_at=True),
        lambda d: dataclasses.replace(d, committed_at=-1),
        lambda d: dataclasses.replace(d, baseline_accepted_event_id=d.epoch_opened_event_id),
        lambda d: dataclasses.replace(d, epoch_opened_event_id="bad id"),
        lambda d: dataclasses.replace(d, epoch=dataclasses.replace(d.epoch, workspace_epoch_id="epoch_XYZ")),
        lambda d: dataclasses.replace(d, epoch=dataclasses.replace(d.epoch, object_format="sha256")),
        lambda d: dataclasses.replace(d, baseline=dataclasses.replace(d.baseline, tree_oid="9" * 40)),
        lambda d: dataclasses.replace(d, baseline=dataclasses.replace(d.baseline, changed_file_count=False)),
        lambda d: dataclasses.replace(d, baseline=dataclasses.replace(d.baseline, deleted_file_count=1)),
    ],
)
def test_invalid_input_writes_nothing(tmp_path: Path, change: Any) -> None:
    store, authority = _bound(tmp_path)
    with pytest.raises(StoreError, match="Invalid workspace baseline authority input"):
        authority.commit_workspace_baseline(change(fixture()))
    assert _authority_ids(store) == [] and _counts(store) == [0, 0, 0]
    store.close()


def _rows(*pairs: tuple[Any, int]) -> list[StoredEvent]:
    out = []
    for raw_event, seq in pairs:
        encoded = encode_runtime_event(raw_event)
        out.append(StoredEvent(encoded.event, seq, 1, encoded.canonical_json))
    return out


def test_scan_issue_codes() -> None:
    """The pure canonical scan: each malformed stream yields its first issue, no baselines."""
    opened, accepted = build_baseline_events(fixture())
    assert [b.baseline_accepted_event_id for b in scan_authority(_rows((opened, 1), (accepted, 2)))[0]] == [
        "workspace-version-event-1"]
    other_epoch = dataclasses.replace(fixture(), epoch=dataclasses.replace(
        fixture().epoch, workspace_epoch_id="epoch_" + "8" * 32), epoch_opened_event_id="e8",
        baseline_accepted_event_id="v8")
    o8, a8 = build_baseline_events(other_epoch)
    cases = {
        "event_order_conflict": _rows((accepted, 1), (opened, 2)),
        "missing_baseline_version": _rows((opened, 1)),
        "orphan_baseline_version": _rows((accepted, 2)),
        "duplicate_workspace_version": _rows((opened, 1), (accepted, 2), (o8, 1), (a8, 2)),
        "semantic_lane_conflict": _rows(({**opened, "role": "user"}, 1), (accepted, 2)),
        "authority_stream_contamination": _rows((user_event(sessionId=WORKSPACE_AUTHORITY_SESSION_ID), 1)),
    }
    for code, rows in cases.items():
        baselines, issues = scan_authority(rows)
        assert baselines == [] and issues[0].code == code, (code, issues)


# -- real SIGKILL crash modes (§6.2 inside_workspace_baseline, after_workspace_baseline_commit) ----

_CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path[:0] = [{repo!r}]
    from maka_ref._store import RuntimeStore
    from maka_ref._store.engine.failpoints import block_forever
    from maka_ref._store.workspace.authority import WorkspaceAuthority
    from maka_ref.testing.workspace_baseline import FIXTURE_ROOT_ID, baseline_fixture_input
    store = RuntimeStore.open({root!r})
    try:
        authority = WorkspaceAuthority(store)
        authority.bind_storage_root(FIXTURE_ROOT_ID)
        authority.commit_workspace_baseline(baseline_fixture_input())
        if {mode!r} == "after_workspace_baseline_commit":
            os.write(1, b"READY\\n")
            block_forever()
        raise SystemExit("failpoint missed")
    finally:
        with open({marker!r}, "w") as handle:
            handle.write("finally-ran")
    """
)


def _wait_for(child: subprocess.Popen[bytes], token: bytes) -> None:
    """Accumulate stdout+stderr until ``token`` appears (substring, §10 item 35)."""
    assert child.stdout is not None and child.stderr is not None
    selector = selectors.DefaultSelector()
    for stream in (child.stdout, child.stderr):
        selector.register(stream, selectors.EVENT_READ)
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while token not in seen:
            remaining = deadline - time.monotonic()
            events = selector.select(max(remaining, 0)) if remaining > 0 else []
            if not events:
                raise AssertionError(f"child never printed {token!r}; output so far: {seen!r}")
            for key, _ in events:
                chunk = os.read(key.fileobj.fileno(), 4096)  # type: ignore[union-attr]
                if not chunk:
                    selector.unregister(key.fileobj)
                    if not selector.get_map():
                        raise AssertionError(f"child exited ({child.wait()}) before {token!r}: {seen!r}")
                seen += chunk
    finally:
        selector.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
@pytest.mark.parametrize(
    ("mode", "env_value", "token", "expected_version", "expected_events"),
    [
        ("inside_workspace_baseline", "after_workspace_version_event_insert",
         b"MAKA_FAILPOINT after_workspace_version_event_insert\n", None, []),  # §9 item 95
        ("after_workspace_baseline_commit", "", b"READY\n", VERSION,
         ["workspace-epoch-event-1", "workspace-version-event-1"]),  # §9 item 96
    ],
)
def test_sigkill_crash_modes(
    tmp_path: Path, mode: str, env_value: str, token: bytes, expected_version: str | None,
    expected_events: list[str],
) -> None:
    marker = tmp_path / "child-finally-ran"
    env = dict(os.environ, MAKA_REF_FAILPOINT=env_value)
    script = _CHILD.format(repo=str(REPO), root=str(tmp_path), mode=mode, marker=str(marker))
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(child, token)
        time.sleep(0.05)
        assert child.poll() is None  # still blocked (inside: with the write transaction open)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL  # killed, not a graceful exit (§10 item 36)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert not marker.exists()  # the child's finally never ran: a real kill
    assert not psutil.pid_exists(child.pid)  # reaped: no zombie, nothing survives
    assert child.pid not in {proc.pid for proc in psutil.Process().children(recursive=True)}
    store = RuntimeStore.open(tmp_path)  # a NEW store instance on the same file (WAL replay)
    authority = WorkspaceAuthority(store)
    authority.bind_storage_root(ROOT)  # the binding committed before the baseline transaction
    head = authority.read_workspace_head(WORKSPACE, EPOCH)
    assert (head.workspace_version_id if head else None) == expected_version
    assert _authority_ids(store) == expected_events
    assert _counts(store) == ([1, 1, 1] if expected_version else [0, 0, 0])
    if expected_version is None:  # the rolled-back baseline can be committed afresh
        assert authority.commit_workspace_baseline(fixture()).created is True
    store.close()
