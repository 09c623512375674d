"""Reopening a store in a fresh process (spec 30 §3.3, §4, §6.1; protocol §4.2).

The whole point of a durable store: a *new* process, opening the same workspace files, sees
exactly what the writer committed. Each clause writes with one dedicated process
(``maka.fresh()``), ends it (normally, or by SIGKILL while idle), and reads with another.
Expected values: the spec's (§3.1 states) and the reference resolver/planner on the events
read back; the writer's online projection is compared with the reopened one only because
spec 30 §3.3 requires them to be identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.clauses import ClauseMismatch, clause, expect_equal
from conformance.suite._store_support import (
    Store, expect_resolution_and_plan, expect_same_bytes, new_workspace, workspace_snapshot,
)
from conformance.suite.store.test_projections import SCENARIOS, VERSIONS, build_scenarios


def _write(maka: Any, ws: str, *, kill: bool = False) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Write the five §3.1 scenarios in a process of their own; returns (online projection, identities)."""
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        identities = build_scenarios(store)
        online = dict(store.project())
        if kill:
            proof = client.kill()
            _expect_real_kill(proof)
        else:
            store.close()
    return online, identities


def _expect_real_kill(proof: Any) -> None:
    if not proof.killed_by_sigkill or proof.survivors:
        raise ClauseMismatch("the SIGKILL of the implementation was not real",
                             evidence={"pid": proof.pid, "returncode": proof.returncode,
                                       "killedBySigkill": proof.killed_by_sigkill, "survivors": list(proof.survivors)})


@clause("STORE-REOPEN-001", spec="30 §3.3; 30 §4; 30 §9 #1, #41", capability="store",
        title="a fresh process sees the same events and the same projection as the writer saw online")
def test_reopen_identical(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.3 (records identical "after closing and reopening the database"), §4, §9 #41
    ("reopen identical"). A fresh process's ``store.project`` equals the writer's online
    projection (events, tool records, journals, unsettled, resolutions)."""
    ws = new_workspace(tmp_path)
    online, identities = _write(maka, ws)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        reopened = store.project()
        expect_equal(online, dict(reopened), what="projection in a fresh process")
        for op, identity in identities.items():
            expect_equal(store.run(identity, reopened).get("events"), store.events(identity),
                         what=f"read_events of {op}'s run in a fresh process")
        store.close()


@clause("STORE-REOPEN-002", spec="30 §6.1; 30 §10 #7, #8", capability="store",
        title="committed writes survive a SIGKILL of the idle writer: a fresh process sees every event and state")
def test_reopen_after_sigkill(maka: Any, tmp_path: Path) -> None:
    """spec 30 §6.1 (kill, then reopen with a new store instance), §10 #8 (a killed writer leaves
    WAL files; committed frames are read at the next open). The writer is SIGKILLed while idle
    after its last commit (the kill must be real: killed by SIGKILL, no survivors); a fresh
    process must project exactly the writer's online projection and the §3.1 states."""
    ws = new_workspace(tmp_path)
    online, _ = _write(maka, ws, kill=True)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        reopened = store.project()
        expect_equal(online, dict(reopened), what="projection after SIGKILL and reopen")
        expected = {op: {"currentState": state, "version": VERSIONS[state]} for op, state in SCENARIOS.items()}
        actual = {op: {k: (store.operation(op, reopened) or {}).get(k) for k in ("currentState", "version")}
                  for op in SCENARIOS}
        expect_equal(expected, actual, what="states after SIGKILL and reopen")
        store.close()


@clause("STORE-REOPEN-003", spec="30 §3.3; 10 §6; 20 §1", capability="store",
        title="after reopening, each run's resolution and plan equal the reference's on the events read back")
def test_reopen_resolution(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.3 (the resolver's interpretation is the same before and after reopening),
    spec 10 §6 / spec 20 §1 (the reference is the oracle)."""
    ws = new_workspace(tmp_path)
    _, identities = _write(maka, ws)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        projection = store.project()
        for op, identity in identities.items():
            expect_resolution_and_plan(store.run(identity, projection), store.events(identity), f"reopened run of {op}")
        store.close()


@clause("STORE-REOPEN-004", spec="30 §3.2; 30 §3.3", capability="store",
        title="a rebuild in a fresh process reproduces the writer's online tool projection")
def test_reopen_rebuild(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.3: online, after reopen, and after ``rebuildToolProjectionsFromRuntimeEvents``
    the records are identical; here the rebuild runs in a different process than the writes
    (so nothing cached in the writer can help)."""
    ws = new_workspace(tmp_path)
    online, _ = _write(maka, ws)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        expect_equal({"operations": 5, "journalEvents": 12},
                     dict(store.ok("store.rebuild_projections", {"workspace": ws})), what="rebuild counts")
        rebuilt = store.project()
        expect_equal(store.tool_projection(online), store.tool_projection(rebuilt), what="projection rebuilt in a fresh process")
        store.close()


@clause("STORE-REOPEN-005", spec="30 §1.1; 30 §4; protocol §4.2", capability="store",
        title="a read-only reopen projects the same store and leaves the ledger files byte-identical")
def test_reopen_read_only(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 (read-only connections never migrate or write), protocol §4.2 (read-only open
    MUST NOT modify any file; reading leaves ``ledgerFiles`` byte-identical). A fresh process
    opens read-only, projects twice and reads every run; every file of the workspace is
    byte-identical and none was created (spec 30 §10 #33) — the snapshot is taken *before* the
    read-only open, so a file the open itself creates is seen — and the projection equals the
    writer's."""
    ws = new_workspace(tmp_path)
    online, identities = _write(maka, ws)
    before = workspace_snapshot(ws)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open(read_only=True)
        first = store.project()
        for identity in identities.values():
            store.events(identity)
        second = store.project()
        expect_same_bytes(before, workspace_snapshot(ws), "a read-only reopen")
        expect_equal(first, second, what="second read-only projection")
        expect_equal(online, dict(first), what="read-only projection")
        store.close()
    expect_same_bytes(before, workspace_snapshot(ws), "closing a read-only store")
