"""The continuation claim saga (spec 20 §4.5) as the default ``claim_saga`` of startup repair.

Covers §8 items 88 and 89, the §4.9 crash-matrix rows set up in-process by committing a claim
(+ header / + start / + terminal / + terminal header) through the real store, the durable
states items 102–106 leave behind (as far as repair is concerned), §9 items 15–17 and 33,
idempotency (a second pass writes nothing: every row of every table identical), convergence
after a crash between any two of the saga's commits (store failpoints armed with ``raise`` and
a crash injected after each commit), and "a live start is never terminated".

Expected values are written from the spec; the deterministic ids are recomputed here with
``hashlib`` from the §4.5 construction.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._plan.continuation.claims import classify_existing_claim
from maka_ref._plan.continuation.terminal import terminal_repair_succeeded
from maka_ref._repair import NO_CLAIM_SAGA, repair_workspace
from maka_ref._repair.claim_saga import ClaimSagaRefused
from maka_ref._store.engine import failpoints
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref.testing import race_worker as rw

S = "session-1"
TARGET = ("target-invocation", "target-run", "target-turn")
TARGET_RUN = TARGET[1]
CLAIM_ID = "claim-1"
CLAIMED_AT = 20
ABANDONED = "continuation_abandoned_before_provider_dispatch"


def clock() -> int:
    return 5_000


def spec_id(kind: str, claim_id: str = CLAIM_ID) -> str:
    text = f"maka.continuation-repair.{kind}.v1\0{claim_id}"
    return f"continuation-repair-{kind}-" + hashlib.sha256(text.encode()).hexdigest()[:32]


# --------------------------------------------------------------------------- fixtures


def source_header() -> dict[str, Any]:
    ident = rw.SOURCE_IDENTITY
    return {
        "runId": ident["runId"], "sessionId": S, "turnId": ident["turnId"], "invocationId": ident["invocationId"],
        "status": "failed", "failureClass": "runtime_interrupted", "backendKind": "fake",
        "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace", "permissionMode": "ask",
        "createdAt": 1, "updatedAt": 11, "completedAt": 11,
    }


def live_start(claim: dict[str, Any], ts: int = 21) -> dict[str, Any]:
    from maka_ref._plan.continuation.claims import expected_continuation_start

    return {
        "id": "live-start", **claim["target"], "ts": ts, "partial": False, "role": "system", "author": "system",
        "actions": {
            "continuationStart": expected_continuation_start(claim, "runtime_admission"),
            "runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"},
        },
    }


def live_terminal(claim: dict[str, Any], status: str = "completed", **delta: Any) -> dict[str, Any]:
    actions: dict[str, Any] = {"endInvocation": True}
    if delta:
        actions["stateDelta"] = delta
    return {"id": "live-terminal", **claim["target"], "ts": 30, "partial": False, "role": "system",
            "author": "system", "status": status, "actions": actions}


def prepare(root: Path, stage: str) -> dict[str, Any]:
    """A workspace with the §4.9 source run and a claim, advanced to ``stage``:
    ``claim`` | ``header`` | ``live_start`` | ``live_terminal`` | ``live_header``."""
    rw.prepare_database(root, with_t1=False, with_continuation_source=True)
    with RuntimeStore.open(root) as store, AgentRunStore.open(root) as runs:
        runs.create_run(source_header())
        claim = rw.continuation_claim(store, CLAIM_ID, TARGET, claimed_at=CLAIMED_AT)
        assert store.claim_continuation(claim).kind == "acquired"
        stages = ["claim", "header", "live_start", "live_terminal", "live_header"]
        upto = stages.index(stage)
        if upto >= 1:
            runs.create_run(claim["targetRunHeader"])
        if upto >= 2:
            assert store.commit_continuation_start(claim, live_start(claim)).created
            runs.update_run(S, TARGET_RUN, {"status": "running", "updatedAt": 21})
        if upto >= 3:
            store.ensure_terminal_durable(live_terminal(claim))
        if upto >= 4:
            runs.update_run(S, TARGET_RUN, {"status": "completed", "updatedAt": 30, "completedAt": 30})
    return claim


def db_content(root: Path) -> str:
    """SHA-256 over every row of every table (claims, events, headers, operational events, …)."""
    conn = sqlite3.connect(f"file:{root / 'runtime.sqlite'}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
            if table == "operational_schema_migrations":
                continue  # applied_at wall time, not logical content
            rows = sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
            digest.update(json.dumps([table, rows]).encode())
        return digest.hexdigest()
    finally:
        conn.close()


def read_target(root: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    from maka_ref._codec.frozen import thaw

    with RuntimeStore.open_read_only(root) as store, AgentRunStore.open_read_only(root) as runs:
        try:
            header = thaw(runs.read_run(S, TARGET_RUN))
            ops = [thaw(e) for e in runs.read_events(S, TARGET_RUN)]
        except StoreError:
            header, ops = None, []
        events = [thaw(e) for e in store.read_run_events(S, TARGET_RUN)]
        state = store.read_claim(CLAIM_ID).to_json()
    return header, events, ops, state


def terminals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if "status" in e or (e.get("actions") or {}).get("endInvocation") is True]


def replan(root: Path) -> str:
    """The planner's §3.5 classification of the existing claim (the "re-plan" column of §4.9)."""
    header, events, _, state = read_target(root)
    return classify_existing_claim(state, header, events).reason


def repair_twice(root: Path) -> dict[str, Any]:
    """Repair, then prove idempotency: the second pass reports no repair and changes no row."""
    first = repair_workspace(root, clock=clock).to_json()
    after_first = db_content(root)
    second = repair_workspace(root, clock=clock).to_json()
    assert second["repairs"] == [] and second["recoveredSessions"] == []
    assert second["skipped"] == first["skipped"]
    assert db_content(root) == after_first
    return first


def assert_abandoned(root: Path, claim: dict[str, Any]) -> None:
    """The converged post-repair state of a claim without a live start (§4.5 step 6, §4.9 rows 1–2)."""
    header, events, ops, state = read_target(root)
    assert header is not None
    assert header["status"] == "failed"
    assert header["failureClass"] == ABANDONED and header["failureMessage"] == ABANDONED
    assert header["continuationSource"]["protocol"] == "continuation_source_v2"
    assert header["continuationSource"]["claimId"] == CLAIM_ID
    assert header["completedAt"] == header["updatedAt"] == CLAIMED_AT + 1
    assert {k: v for k, v in header.items() if k not in ("status", "updatedAt", "completedAt", "failureClass", "failureMessage")} == {
        k: v for k, v in claim["targetRunHeader"].items() if k not in ("status", "updatedAt")
    }
    start, terminal = events  # events = [repair start, terminal]
    assert start["id"] == spec_id("start") and state["startEventId"] == start["id"]
    assert state["startKind"] == "claim_repair"
    assert start["ts"] == CLAIMED_AT
    assert start["actions"]["continuationStart"]["provenance"] == "claim_repair"
    assert start["actions"]["continuationStart"]["claimId"] == CLAIM_ID
    assert "runtimeProtocol" not in start["actions"]  # a repair start never carries the T1 marker
    assert terminal["id"] == spec_id("terminal")
    assert terminal["status"] == "failed" and terminal["ts"] == CLAIMED_AT + 1
    assert terminal["invocationId"] == TARGET[0]
    assert terminal["actions"]["endInvocation"] is True
    assert terminal["actions"]["stateDelta"] == {"recovered": True, "recoveryReason": ABANDONED, "failureClass": ABANDONED}
    assert terminal["content"]["message"] == ABANDONED
    assert len(terminals(events)) == 1
    [op] = ops
    assert op["type"] == "run_failed" and op["id"] == spec_id("run-terminal")
    assert op["data"] == {
        "failureClass": ABANDONED, "recovered": True, "recoveryReason": ABANDONED,
        "continuationClaimId": CLAIM_ID, "terminalEventId": spec_id("terminal"),
    }
    assert terminal_repair_succeeded(header, events)  # the target is a valid continuation source
    assert replan(root) == "continuation_already_exists"


def expected_entry() -> dict[str, Any]:
    return {
        "sessionId": S, "runId": TARGET_RUN, "action": "continuation_claim_abandoned",
        "terminalEventId": spec_id("terminal"), "headerStatus": "failed", "failureClass": ABANDONED,
        "recoveryReason": ABANDONED,
    }


# --------------------------------------------------------------------------- §4.9 crash matrix


@pytest.mark.parametrize("stage", ["claim", "header"])
def test_matrix_claim_only_and_created_without_start(tmp_path: Path, stage: str) -> None:
    """§4.9 rows after_continuation_claim_committed / after_run_created (§9 items 15–17):
    re-plan → repair_required; after repair: target failed/abandoned, events [repair start, terminal]."""
    claim = prepare(tmp_path, stage)
    assert replan(tmp_path) == "continuation_claim_repair_required"
    report = repair_twice(tmp_path)
    assert report == {"repairs": [expected_entry()], "skipped": [], "recoveredSessions": [S]}
    assert_abandoned(tmp_path, claim)


def test_matrix_live_start_is_never_terminated(tmp_path: Path) -> None:
    """§4.9 row after_continuation_start_committed, §9 item 17: a live start without a terminal
    is never auto-terminated — no writes, reported as skipped; re-plan stays indeterminate."""
    prepare(tmp_path, "live_start")
    assert replan(tmp_path) == "continuation_started_indeterminate"
    before = db_content(tmp_path)
    report = repair_twice(tmp_path)
    assert report["repairs"] == [] and report["recoveredSessions"] == []
    assert [(s["runId"], s["reason"]) for s in report["skipped"]] == [(TARGET_RUN, "continuation_started_indeterminate")]
    assert db_content(tmp_path) == before
    header, events, ops, _ = read_target(tmp_path)
    assert header["status"] == "running" and terminals(events) == [] and ops == []
    assert replan(tmp_path) == "continuation_started_indeterminate"
    strict = repair_workspace(tmp_path, strict=True, clock=clock).to_json()
    assert strict["repairs"] == [] and db_content(tmp_path) == before


def test_matrix_terminal_event_committed_header_not(tmp_path: Path) -> None:
    """§4.9 row after_terminal_event_committed: header repaired from the existing event (1 terminal)."""
    prepare(tmp_path, "live_terminal")
    assert replan(tmp_path) == "continuation_claim_repair_required"
    report = repair_twice(tmp_path)
    assert [(r["runId"], r["action"], r["headerStatus"], r["terminalEventId"]) for r in report["repairs"]] == [
        (TARGET_RUN, "header_from_terminal_fact", "completed", "live-terminal")
    ]
    header, events, _, _ = read_target(tmp_path)
    assert header["status"] == "completed" and [e["id"] for e in terminals(events)] == ["live-terminal"]
    assert [e["id"] for e in events] == ["live-start", "live-terminal"]
    assert replan(tmp_path) == "continuation_already_exists"


def test_matrix_terminal_header_committed_unchanged(tmp_path: Path) -> None:
    """§4.9 row after_terminal_header_committed: unchanged (1 terminal, terminal header)."""
    prepare(tmp_path, "live_header")
    assert replan(tmp_path) == "continuation_already_exists"
    before = db_content(tmp_path)
    assert repair_twice(tmp_path) == {"repairs": [], "skipped": [], "recoveredSessions": []}
    assert db_content(tmp_path) == before


# --------------------------------------------------------------------------- §8 items


def test_item_88_start_append_fails(tmp_path: Path) -> None:
    """§8 item 88: the continuation-start append failed → target `created`, no events; after
    recovery: failed/abandoned, events = [repair start with the plan's claimId, terminal] with
    stateDelta {recovered, recoveryReason, failureClass}."""
    claim = prepare(tmp_path, "header")
    with RuntimeStore.open(tmp_path) as store, failpoints.arm("after_continuation_start_insert", "raise"):
        with pytest.raises(failpoints.FailpointTriggered):
            store.commit_continuation_start(claim, live_start(claim))
    header, events, _, state = read_target(tmp_path)
    assert header["status"] == "created" and events == [] and "startEventId" not in state
    repair_twice(tmp_path)
    assert_abandoned(tmp_path, claim)


def test_item_89_header_write_fails_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§8 item 89: claim-only crash + the first repair's header write fails once → first pass:
    session not reported, events [start, terminal], header `created`; second pass: header failed
    with the v2 source and the claim id; third pass: byte-identical; the target is a valid
    continuation source (§3.3 terminalRepairSucceeded; re-plan of the claim: already_exists)."""
    claim = prepare(tmp_path, "claim")
    original = AgentRunStore.update_run

    def fail_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(AgentRunStore, "update_run", original)
        raise StoreError("header write failed", code="io_error")

    monkeypatch.setattr(AgentRunStore, "update_run", fail_once)
    first = repair_workspace(tmp_path, clock=clock).to_json()
    assert first["repairs"] == [] and first["recoveredSessions"] == []
    assert first["skipped"] == [{"sessionId": S, "reason": "continuation_claim_repair_failed",
                                 "detail": f"continuation claim {CLAIM_ID}: io_error: header write failed"}]
    header, events, ops, _ = read_target(tmp_path)
    assert header["status"] == "created" and ops == []
    assert [e["id"] for e in events] == [spec_id("start"), spec_id("terminal")]
    second = repair_twice(tmp_path)  # second pass repairs, third pass is byte-identical
    assert second == {"repairs": [expected_entry()], "skipped": [], "recoveredSessions": [S]}
    assert_abandoned(tmp_path, claim)


def test_item_89_strict_mode_raises_the_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(tmp_path, "claim")

    def fail(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise StoreError("header write failed", code="io_error")

    monkeypatch.setattr(AgentRunStore, "update_run", fail)
    with pytest.raises(StoreError) as excinfo:
        repair_workspace(tmp_path, strict=True, clock=clock)
    assert excinfo.value.code == "io_error"


@pytest.mark.parametrize("stage", ["claim", "header"])
def test_items_102_105_failure_after_claim_is_repaired(tmp_path: Path, stage: str) -> None:
    """§8 items 102–105 (and §9 item 15): execution fails after the claim (identity / tool catalog
    changed, no inspector) with backend 0× — durable state claim-only (104: target not created)
    or claim + `created` header; the next startup converges it to failed/abandoned, and the
    target then is the newest failed inline run (a valid continuation source)."""
    claim = prepare(tmp_path, stage)
    repair_twice(tmp_path)
    assert_abandoned(tmp_path, claim)


def test_item_106_stopped_live_continuation_unchanged(tmp_path: Path) -> None:
    """§8 item 106: stop after the live start → target `cancelled`, one start, one terminal;
    repair leaves it alone."""
    claim = prepare(tmp_path, "live_start")
    with RuntimeStore.open(tmp_path) as store, AgentRunStore.open(tmp_path) as runs:
        store.ensure_terminal_durable(live_terminal(claim, "aborted", abortSource="user"))
        runs.update_run(S, TARGET_RUN, {"status": "cancelled", "abortSource": "user", "updatedAt": 30, "completedAt": 30})
    before = db_content(tmp_path)
    assert repair_twice(tmp_path) == {"repairs": [], "skipped": [], "recoveredSessions": []}
    assert db_content(tmp_path) == before
    assert replan(tmp_path) == "continuation_already_exists"


# --------------------------------------------------------------------------- convergence


def reference_state(tmp_path: Path, stage: str) -> str:
    ref = tmp_path / "reference"
    ref.mkdir()
    prepare(ref, stage)
    repair_workspace(ref, clock=clock)
    return db_content(ref)


@pytest.mark.parametrize("name", ["after_continuation_start_insert", "P10"])
@pytest.mark.parametrize("stage", ["claim", "header"])
def test_store_failpoint_raise_then_converges(tmp_path: Path, stage: str, name: str) -> None:
    """§4.8 / §4.5: a store failpoint armed with `raise` inside the saga's writes (the start
    transaction rolls back; P10 fires between the terminal event and the header) → the next
    passes converge on exactly the state of an uninterrupted repair."""
    expected = reference_state(tmp_path, stage)
    root = tmp_path / "ws"
    root.mkdir()
    claim = prepare(root, stage)
    with failpoints.arm(name, "raise"):
        with pytest.raises(failpoints.FailpointTriggered):
            repair_workspace(root, clock=clock)
    _, events, _, _ = read_target(root)
    assert len(events) == (0 if name == "after_continuation_start_insert" else 2)
    report = repair_twice(root)
    assert report["repairs"] == [expected_entry()]
    assert_abandoned(root, claim)
    assert db_content(root) == expected


WRITERS: list[tuple[type, str]] = [
    (AgentRunStore, "create_run"),
    (RuntimeStore, "commit_continuation_start"),
    (RuntimeStore, "ensure_terminal_durable"),
    (AgentRunStore, "update_run"),
    (AgentRunStore, "append_event"),
]


def crash_after(monkeypatch: pytest.MonkeyPatch, n: int) -> list[str]:
    """Make the n-th committed write of the saga be followed by a crash (FailpointTriggered)."""
    calls: list[str] = []
    for owner, method in WRITERS:
        original = getattr(owner, method)

        def wrapped(self: Any, *args: Any, __original: Callable[..., Any] = original, __name: str = method, **kw: Any) -> Any:
            result = __original(self, *args, **kw)
            calls.append(__name)
            if len(calls) == n:
                raise failpoints.FailpointTriggered(f"crash-after-{__name}")
            return result

        monkeypatch.setattr(owner, method, wrapped)
    return calls


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_crash_between_any_two_commits_converges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """A crash after each of the saga's five commits (header, repair start, terminal event,
    terminal header, run_failed) → the next pass finishes, the one after writes nothing, and the
    database equals that of an uninterrupted repair (deterministic ids and values)."""
    expected = reference_state(tmp_path, "claim")
    root = tmp_path / "ws"
    root.mkdir()
    claim = prepare(root, "claim")
    calls = crash_after(monkeypatch, n)
    with pytest.raises(failpoints.FailpointTriggered):
        repair_workspace(root, clock=clock)
    assert calls == [name for _, name in WRITERS][:n]
    monkeypatch.undo()
    report = repair_twice(root)
    assert report["repairs"] == ([expected_entry()] if n < 5 else [])  # n = 5: nothing left to write
    assert_abandoned(root, claim)
    assert db_content(root) == expected


def test_uninterrupted_repair_makes_exactly_five_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(tmp_path, "claim")
    calls = crash_after(monkeypatch, 0)
    repair_workspace(tmp_path, clock=clock)
    assert calls == [name for _, name in WRITERS]
    calls.clear()
    repair_workspace(tmp_path, clock=clock)
    assert calls == []


# --------------------------------------------------------------------------- refusals, wiring


def test_foreign_header_without_start_quarantines_session(tmp_path: Path) -> None:
    """§4.5 step 2 (no start: the header must be exactly the claimed one) and §9 item 33: the
    whole session is quarantined — no generic repair, no writes; strict raises."""
    claim = prepare(tmp_path, "claim")
    with AgentRunStore.open(tmp_path) as runs:
        runs.create_run({**claim["targetRunHeader"], "modelId": "other-model"})
        other = {k: v for k, v in source_header().items() if k not in ("failureClass", "completedAt")}
        runs.create_run({**other, "runId": "other-run", "turnId": "other-turn", "invocationId": "other-inv",
                         "status": "running"})  # generic repair would terminate it
    before = db_content(tmp_path)
    report = repair_twice(tmp_path)
    assert report["repairs"] == []
    assert [(s.get("runId"), s["reason"]) for s in report["skipped"]] == [(None, "continuation_claim_repair_refused")]
    assert db_content(tmp_path) == before
    with pytest.raises(ClaimSagaRefused):
        repair_workspace(tmp_path, strict=True, clock=clock)


def test_no_claim_saga_still_available(tmp_path: Path) -> None:
    """The saga is the default; `NO_CLAIM_SAGA` turns it off (generic repair then skips nothing
    it does not own, so a claim-only state stays as it is)."""
    prepare(tmp_path, "claim")
    before = db_content(tmp_path)
    assert repair_workspace(tmp_path, claim_saga=NO_CLAIM_SAGA, clock=clock).to_json()["repairs"] == []
    assert db_content(tmp_path) == before
