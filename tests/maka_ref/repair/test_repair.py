"""Startup repair (spec 20 §4 minus the §4.5 claim saga; issue 4 item 5).

Covers spec 20 §8 items 83–87, 90, 108–109 (items 88–89 are the claim saga: only the
extension point is tested here), the §4.6 cases A/B/C and the no-write cases, §4.7, §4.8
(second crash between the two commits, via failpoint P10), §9 items 21–24, idempotency of
every case (a second pass reports no repair and leaves the logical DB content — every row of
every table — identical), the ``maka-ref repair`` CLI, and a real-process SIGKILL at P3 and
P9 of the live loop followed by ``python -m maka_ref repair`` in a fresh process.

Expected values are written from the spec; deterministic ids are recomputed here with
``hashlib`` from the documented construction (docs/choices/repair.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._cli.main import run as cli_run
from maka_ref._repair import (
    ClaimAuthorityUnavailable,
    ClaimSagaContext,
    ClaimSagaOutcome,
    RepairSkipped,
    repair_terminal_header,
    repair_workspace,
)
from maka_ref._repair.classify import classify_terminal
from maka_ref._repair.diagnose import diagnose_interrupted_run
from maka_ref._store.engine import failpoints
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore

from tests.maka_ref.store.support import raw, raw_insert

REPO = Path(__file__).resolve().parents[3]
S = "session-1"
CLOCK_MS = 5_000


def clock() -> int:
    return CLOCK_MS


def spec_repair_id(kind: str, session_id: str, run_id: str) -> str:
    text = f"maka.agent-run-repair.{kind}.v1\0{session_id}\0{run_id}"
    return f"agent-run-repair-{kind}-" + hashlib.sha256(text.encode()).hexdigest()[:32]


# --------------------------------------------------------------------------- fixtures


def header(run_id: str, status: str = "running", **extra: Any) -> dict[str, Any]:
    out = {
        "runId": run_id, "sessionId": S, "turnId": f"turn-{run_id}", "invocationId": f"inv-{run_id}",
        "status": status, "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model",
        "cwd": "/w", "permissionMode": "ask", "createdAt": 1, "updatedAt": 1,
    }
    out.update(extra)
    return out


def event(run_id: str, suffix: str, ts: int = 2, **fields: Any) -> dict[str, Any]:
    out = {
        "id": f"{run_id}-{suffix}", "invocationId": f"inv-{run_id}", "runId": run_id, "sessionId": S,
        "turnId": f"turn-{run_id}", "ts": ts, "partial": False,
    }
    out.update(fields)
    return out


def user(run_id: str) -> dict[str, Any]:
    return event(run_id, "user", 2, role="user", author="user", content={"kind": "text", "text": "hi"})


def terminal(run_id: str, status: str | None, suffix: str = "terminal", ts: int = 3, **actions: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"role": "system", "author": "system", "actions": {"endInvocation": True, **actions}}
    if status is not None:
        fields["status"] = status
    return event(run_id, suffix, ts, **fields)


def setup(root: Path, runs: list[tuple[dict[str, Any], list[dict[str, Any]]]], op_events: dict[str, list[dict[str, Any]]] | None = None) -> None:
    with RuntimeStore.open(root) as store, AgentRunStore.open(root) as agent_runs:
        for head, events in runs:
            agent_runs.create_run(head)
            for item in events:
                store.append(item)
            for op in (op_events or {}).get(head["runId"], []):
                agent_runs.append_event(S, head["runId"], op)


def op(run_id: str, seq: int, kind: str) -> dict[str, Any]:
    return {"type": kind, "id": f"{run_id}-op{seq}", "runId": run_id, "sessionId": S, "turnId": f"turn-{run_id}", "ts": 1}


def db_content(root: Path) -> str:
    """SHA-256 over every row of every table (events, headers, operational events, …)."""
    conn = sqlite3.connect(f"file:{root / 'runtime.sqlite'}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            if table == "operational_schema_migrations":
                continue  # holds applied_at wall time of the scope migration, not logical content
            rows = sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
            digest.update(json.dumps([table, rows]).encode())
        return digest.hexdigest()
    finally:
        conn.close()


def read(root: Path, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    with RuntimeStore.open_read_only(root) as store, AgentRunStore.open_read_only(root) as agent_runs:
        return (
            dict(agent_runs.read_run(S, run_id)),
            [dict(e) for e in store.read_run_events(S, run_id)],
            [dict(e) for e in agent_runs.read_events(S, run_id)],
        )


def terminals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("status") in ("completed", "failed", "aborted", "cancelled") or (e.get("actions") or {}).get("endInvocation") is True]


def repair_twice(root: Path) -> dict[str, Any]:
    """Repair, then prove idempotency: second pass repairs nothing and changes no row."""
    first = repair_workspace(root, clock=clock).to_json()
    after_first = db_content(root)
    second = repair_workspace(root, clock=clock).to_json()
    assert second["repairs"] == []
    assert second["recoveredSessions"] == []
    assert second["skipped"] == first["skipped"]
    assert db_content(root) == after_first
    return first


def unchanged(root: Path) -> dict[str, Any]:
    before = db_content(root)
    report = repair_twice(root)
    assert report["repairs"] == []
    assert db_content(root) == before
    return report


# --------------------------------------------------------------------------- spec 20 §8 items


def test_item_83_stale_user_wait(tmp_path: Path) -> None:
    """§8 item 83: waiting_for_user header (graph wake ids), no events → failed/app_restarted, stale_user_wait."""
    setup(tmp_path, [(header("r1", "waiting_for_user", agentGraphWakeId="w1", agentGraphWakeAttemptId="a1"), [])])
    report = repair_twice(tmp_path)
    term_id = spec_repair_id("terminal", S, "r1")
    assert report["repairs"] == [{
        "sessionId": S, "runId": "r1", "action": "failed_terminal_appended", "terminalEventId": term_id,
        "headerStatus": "failed", "failureClass": "app_restarted", "recoveryReason": "stale_user_wait",
    }]
    assert report["recoveredSessions"] == [S]
    head, events, ops = read(tmp_path, "r1")
    assert (head["status"], head["failureClass"], head["completedAt"], head["updatedAt"]) == ("failed", "app_restarted", CLOCK_MS, CLOCK_MS)
    assert head["agentGraphWakeId"] == "w1"
    [term] = events
    assert term["id"] == term_id and term["status"] == "failed" and term["invocationId"] == "inv-r1"
    assert (term["role"], term["author"]) == ("system", "system")
    assert term["actions"] == {"endInvocation": True, "stateDelta": {"recovered": True, "recoveryReason": "stale_user_wait", "failureClass": "app_restarted"}}
    assert term["content"]["kind"] == "error" and term["content"]["code"] == "app_restarted"
    assert [o["type"] for o in ops] == ["run_failed"]
    assert ops[0]["id"] == spec_repair_id("run_failed", S, "r1")
    assert ops[0]["data"]["failureClass"] == "app_restarted" and ops[0]["data"]["recoveryReason"] == "stale_user_wait"
    assert ops[0]["data"]["terminalEventId"] == term_id


def test_item_84_failed_terminal_without_class(tmp_path: Path) -> None:
    """§8 item 84 / §4.6 case B: header failed/app_restarted, the same single terminal, fact class app_restarted."""
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", "failed")])])
    report = repair_twice(tmp_path)
    assert report["repairs"] == [{
        "sessionId": S, "runId": "r1", "action": "header_from_incomplete_terminal", "terminalEventId": "r1-terminal",
        "headerStatus": "failed", "failureClass": "app_restarted", "recoveryReason": "runtime_event_terminal_fact",
    }]
    head, events, _ = read(tmp_path, "r1")
    assert [e["id"] for e in terminals(events)] == ["r1-terminal"]
    assert (head["status"], head["failureClass"], head["completedAt"]) == ("failed", "app_restarted", 3)
    fact = classify_terminal(head, events)  # read model: the class falls back to the header (§9 item 24)
    assert (fact.kind, fact.run_status, fact.failure_class) == ("fact", "failed", "app_restarted")


def test_item_85_aborted_terminal_without_source(tmp_path: Path) -> None:
    """§8 item 85 / §9 item 23: aborted → header cancelled, abortSource unknown, one terminal."""
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", "aborted")])])
    report = repair_twice(tmp_path)
    assert report["repairs"][0]["headerStatus"] == "cancelled"
    assert report["repairs"][0]["abortSource"] == "unknown"
    head, events, ops = read(tmp_path, "r1")
    assert (head["status"], head["abortSource"]) == ("cancelled", "unknown")
    assert "failureClass" not in head
    assert len(terminals(events)) == 1
    assert [o["type"] for o in ops] == ["run_cancelled"]
    fact = classify_terminal(head, events)
    assert (fact.kind, fact.run_status, fact.turn_status, fact.abort_source) == ("fact", "cancelled", "aborted", "unknown")


def test_item_86_two_terminals_ambiguous_no_writes(tmp_path: Path) -> None:
    """§8 item 86 / §9 item 21: completed + failed terminals → nothing recovered, header running."""
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", "completed")])])
    conn = raw(tmp_path)
    raw_insert(conn, terminal("r1", "failed", suffix="terminal-2", ts=4), 3)
    conn.close()
    report = unchanged(tmp_path)
    assert report["recoveredSessions"] == []
    assert report["skipped"] == [{"sessionId": S, "runId": "r1", "reason": "ambiguous_terminal_ledger",
                                  "detail": "run session-1/r1 has 2 terminal RuntimeEvents; no writes"}]
    head, events, _ = read(tmp_path, "r1")
    assert head["status"] == "running" and len(terminals(events)) == 2
    with pytest.raises(RepairSkipped) as info:
        repair_workspace(tmp_path, strict=True)
    assert info.value.code == "ambiguous_terminal_ledger"


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_item_87_terminal_header_empty_ledger(tmp_path: Path, status: str) -> None:
    """§8 item 87 / §4.7 step 4 / §9 item 22: one failed terminal, failed/missing_terminal_event."""
    extra = {"abortSource": "user_stop"} if status == "cancelled" else {}
    setup(tmp_path, [(header("r1", status, completedAt=1, **extra), [])])
    report = repair_twice(tmp_path)
    assert report["repairs"][0]["action"] == "missing_terminal_event_repaired"
    head, events, ops = read(tmp_path, "r1")
    [term] = events
    assert term["status"] == "failed"
    assert term["actions"]["stateDelta"] == {"recovered": True, "recoveryReason": "missing_terminal_event", "failureClass": "missing_terminal_event"}
    assert term["content"]["message"] == "terminal run header had no terminal RuntimeEvent"
    assert (head["status"], head["failureClass"]) == ("failed", "missing_terminal_event")
    assert "abortSource" not in head
    fact = classify_terminal(head, events)
    assert (fact.kind, fact.run_status, fact.failure_class) == ("fact", "failed", "missing_terminal_event")
    assert [o["type"] for o in ops] == ["run_failed"]
    assert ops[0]["data"]["previousStatus"] == status


def test_items_88_89_claim_saga_extension_point(tmp_path: Path) -> None:
    """§8 items 88–89 belong to the claim saga (§4.5, built elsewhere). Here: the extension point —
    the saga runs first, its entries lead the report, claim-owned runs without a terminal are skipped."""
    setup(tmp_path, [(header("target"), []), (header("other"), [])])
    seen: list[str] = []

    class Saga:
        def repair_claims(self, context: ClaimSagaContext) -> ClaimSagaOutcome:
            seen.append(context.session_id)
            return ClaimSagaOutcome(owned_run_ids=frozenset({"target"}))

    report = repair_workspace(tmp_path, claim_saga=Saga(), clock=clock).to_json()
    assert seen == [S]
    assert [r["runId"] for r in report["repairs"]] == ["other"]
    assert report["skipped"][0]["reason"] == "continuation_claim_owned"
    assert read(tmp_path, "target")[0]["status"] == "running"


def test_claim_authority_unreadable_quarantines_session(tmp_path: Path) -> None:
    """§4.4 step 4: unreadable claim authority → the whole session is skipped (best-effort) / raises (strict)."""
    setup(tmp_path, [(header("r1"), [])])

    class Broken:
        def repair_claims(self, context: ClaimSagaContext) -> ClaimSagaOutcome:
            raise ClaimAuthorityUnavailable("claims unreadable")

    before = db_content(tmp_path)
    report = repair_workspace(tmp_path, claim_saga=Broken()).to_json()
    assert report == {"repairs": [], "skipped": [{"sessionId": S, "reason": "continuation_claims_unreadable", "detail": "claims unreadable"}], "recoveredSessions": []}
    assert db_content(tmp_path) == before
    with pytest.raises(ClaimAuthorityUnavailable):
        repair_workspace(tmp_path, claim_saga=Broken(), strict=True)


def test_item_90_imported_transcript(tmp_path: Path) -> None:
    """§8 item 90: imported transcript without terminal state → failed/missing_terminal_event;
    imported cutoff recorded aborted/external_session_snapshot → cancelled."""
    text = event("imp", "text", 3, role="model", author="agent", content={"kind": "text", "text": "answer"})
    cut_delta = {"stateDelta": {"abortSource": "external_session_snapshot"}}
    setup(tmp_path, [
        (header("imp", "completed", completedAt=1), [user("imp"), text]),
        (header("cut", "running", createdAt=2, updatedAt=2), [user("cut"), terminal("cut", "aborted", **cut_delta)]),
    ])
    report = repair_twice(tmp_path)
    assert [(r["runId"], r["action"]) for r in report["repairs"]] == [
        ("imp", "missing_terminal_event_repaired"), ("cut", "header_from_terminal_fact")]
    head, events, _ = read(tmp_path, "imp")
    assert (head["status"], head["failureClass"]) == ("failed", "missing_terminal_event")
    assert [e["id"] for e in events] == ["imp-user", "imp-text", spec_repair_id("terminal", S, "imp")]
    head, events, _ = read(tmp_path, "cut")
    assert (head["status"], head["abortSource"]) == ("cancelled", "external_session_snapshot")
    assert len(terminals(events)) == 1


def test_item_108_read_path_repairs_disagreeing_header(tmp_path: Path) -> None:
    """§8 item 108: failed header without class + terminal tool_failed → startup writes nothing
    (§4.6 last case); the read path (§4.7) repairs the header to tool_failed, still one event."""
    setup(tmp_path, [(header("r1", "failed", completedAt=3), [user("r1"), terminal("r1", "failed", stateDelta={"failureClass": "tool_failed"})])])
    report = unchanged(tmp_path)
    assert report["skipped"][0]["reason"] == "terminal_header_mismatch"
    with RuntimeStore.open(tmp_path) as store, AgentRunStore.open(tmp_path) as runs:
        entry = repair_terminal_header(store, runs, S, "r1")
        assert entry is not None and entry.action == "header_repaired_from_terminal_event"
        assert repair_terminal_header(store, runs, S, "r1") is None  # idempotent
    head, events, _ = read(tmp_path, "r1")
    assert (head["status"], head["failureClass"]) == ("failed", "tool_failed")
    assert len(terminals(events)) == 1
    assert classify_terminal(head, events).turn_status == "failed"
    assert unchanged(tmp_path)["skipped"] == []


def test_item_109_terminal_without_class_on_failed_header(tmp_path: Path) -> None:
    """§8 item 109: same, but the terminal has no class → header failed/missing_terminal_event, one event."""
    setup(tmp_path, [(header("r1", "failed", completedAt=3), [user("r1"), terminal("r1", "failed")])])
    report = repair_twice(tmp_path)
    assert report["repairs"][0]["action"] == "header_repaired_from_terminal_event"
    assert report["repairs"][0]["terminalEventId"] == "r1-terminal"
    head, events, _ = read(tmp_path, "r1")
    assert (head["status"], head["failureClass"]) == ("failed", "missing_terminal_event")
    assert [e["id"] for e in terminals(events)] == ["r1-terminal"]


# --------------------------------------------------------------------------- §4.6 cases


def test_case_a_header_lags_completed_fact(tmp_path: Path) -> None:
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", "completed", ts=7)])])
    report = repair_twice(tmp_path)
    assert report["repairs"] == [{"sessionId": S, "runId": "r1", "action": "header_from_terminal_fact", "terminalEventId": "r1-terminal",
                                  "headerStatus": "completed", "recoveryReason": "runtime_event_terminal_fact"}]
    head, events, ops = read(tmp_path, "r1")
    assert (head["status"], head["completedAt"], head["updatedAt"]) == ("completed", 7, 7)
    assert len(events) == 2
    assert [o["type"] for o in ops] == ["run_completed"]
    assert ops[0]["data"] == {"recovered": True, "recoveryReason": "runtime_event_terminal_fact", "runtimeEventId": "r1-terminal",
                              "runtimeEventStatus": "completed", "terminalEventId": "r1-terminal"}


def test_case_a_failure_class_from_error_content(tmp_path: Path) -> None:
    """§4.3 derivation order: no stateDelta class → error-content reason."""
    term = terminal("r1", "failed")
    term["content"] = {"kind": "error", "reason": "tool_crashed", "code": "other", "message": "boom"}
    setup(tmp_path, [(header("r1"), [user("r1"), term])])
    repair_twice(tmp_path)
    head = read(tmp_path, "r1")[0]
    assert (head["failureClass"], head["failureMessage"]) == ("tool_crashed", "boom")


def test_case_a_operational_event_not_duplicated(tmp_path: Path) -> None:
    """§4.1 step 4: the terminal operational event is appended only if none of that type exists."""
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", "completed")])], {"r1": [op("r1", 0, "run_completed")]})
    repair_twice(tmp_path)
    assert [o["type"] for o in read(tmp_path, "r1")[2]] == ["run_completed"]


def test_case_c_running_with_ledger(tmp_path: Path) -> None:
    setup(tmp_path, [(header("r1"), [user("r1")])], {"r1": [op("r1", 0, "run_started"), op("r1", 1, "tool_started")]})
    report = repair_twice(tmp_path)
    assert report["repairs"][0]["recoveryReason"] == "tool_interrupted"
    head, events, _ = read(tmp_path, "r1")
    assert [e["id"] for e in events] == ["r1-user", spec_repair_id("terminal", S, "r1")]
    assert events[-1]["actions"]["stateDelta"] == {"recovered": True, "recoveryReason": "tool_interrupted", "lastEventType": "tool_started", "failureClass": "app_restarted"}
    assert (head["status"], head["failureClass"]) == ("failed", "app_restarted")


def test_case_c_invocation_fallbacks(tmp_path: Path) -> None:
    """§4.2: invocationId = header's, else the first ledger event's, else recovery-<runId>."""
    legacy = header("r1")
    del legacy["invocationId"]
    legacy2 = header("r2", createdAt=2)
    del legacy2["invocationId"]
    setup(tmp_path, [(legacy, [user("r1")]), (legacy2, [])])
    repair_twice(tmp_path)
    assert read(tmp_path, "r1")[1][-1]["invocationId"] == "inv-r1"
    assert read(tmp_path, "r2")[1][-1]["invocationId"] == "recovery-r2"


@pytest.mark.parametrize(
    ("status", "types", "expected"),
    [
        ("running", ["run_started", "model_stream_completed"], {"recoveryReason": "model_stream_completed_without_runtime_terminal", "lastEventType": "model_stream_completed"}),
        ("running", ["permission_requested"], {"recoveryReason": "stale_user_wait", "lastEventType": "permission_requested"}),
        ("running", ["permission_failed"], {"recoveryReason": "stale_user_wait", "lastEventType": "permission_failed"}),
        ("waiting_for_user", [], {"recoveryReason": "stale_user_wait"}),
        ("running", ["tool_started"], {"recoveryReason": "tool_interrupted", "lastEventType": "tool_started"}),
        ("running", [], {"recoveryReason": "run_interrupted"}),
        ("created", ["run_created"], {"recoveryReason": "run_interrupted", "lastEventType": "run_created"}),
        ("running", ["model_stream_started"], {"recoveryReason": "run_interrupted", "lastEventType": "model_stream_started"}),
        ("running", ["tool_completed"], {"recoveryReason": "non_terminal_run_recovered", "lastEventType": "tool_completed"}),
        ("running", ["tool_started", "event_corrupt"], {"recoveryReason": "tool_interrupted", "lastEventType": "tool_started", "eventCorrupt": True}),
    ],
)
def test_case_c_diagnostic(status: str, types: list[str], expected: dict[str, Any]) -> None:
    """§4.6 case C rules (event_corrupt ignored for "last event", flagged with eventCorrupt)."""
    assert diagnose_interrupted_run({"status": status}, [{"type": t} for t in types]) == expected


def test_terminal_header_matching_fact_untouched(tmp_path: Path) -> None:
    """§4.6: header already terminal and matching → nothing (§9 item 24: class falls back to the header)."""
    setup(tmp_path, [
        (header("r1", "failed", failureClass="x", completedAt=3), [user("r1"), terminal("r1", "failed")]),
        (header("r2", "completed", createdAt=2, completedAt=3), [user("r2"), terminal("r2", "completed")]),
    ])
    assert unchanged(tmp_path)["skipped"] == []


def test_terminal_header_disagreeing_status_untouched_at_startup(tmp_path: Path) -> None:
    setup(tmp_path, [(header("r1", "completed", completedAt=3), [user("r1"), terminal("r1", "failed", stateDelta={"failureClass": "x"})])])
    assert unchanged(tmp_path)["skipped"][0]["reason"] == "terminal_header_mismatch"


def test_end_invocation_only_terminal_never_gets_a_second(tmp_path: Path) -> None:
    """§4.3: endInvocation without status is not a fact; §9 item 21: never a second terminal → no writes."""
    setup(tmp_path, [(header("r1"), [user("r1"), terminal("r1", None)])])
    assert unchanged(tmp_path)["skipped"][0]["reason"] == "terminal_event_without_status"


def test_active_runs_are_skipped(tmp_path: Path) -> None:
    """§4.4 step 2."""
    setup(tmp_path, [(header("r1"), [])])
    before = db_content(tmp_path)
    report = repair_workspace(tmp_path, active_runs={(S, "r1")})
    assert report.to_json()["skipped"] == [{"sessionId": S, "reason": "session_has_active_run"}]
    assert db_content(tmp_path) == before


def test_runs_repaired_in_created_order(tmp_path: Path) -> None:
    setup(tmp_path, [(header("b", createdAt=1), []), (header("a", createdAt=2), [])])
    assert [r["runId"] for r in repair_twice(tmp_path)["repairs"]] == ["b", "a"]


# --------------------------------------------------------------------------- §4.8 second crash


@pytest.mark.parametrize("initial", ["running", "completed"])
def test_second_crash_between_event_and_header_converges(tmp_path: Path, initial: str) -> None:
    """§4.8: repair's own event commits, the header does not (P10) → the next pass reuses that
    event (deterministic id), header-only repair, exactly one terminal."""
    setup(tmp_path, [(header("r1", initial, **({"completedAt": 1} if initial == "completed" else {})), [user("r1")])])
    with failpoints.arm("P10", "raise"):
        with pytest.raises(failpoints.FailpointTriggered):
            repair_workspace(tmp_path, clock=clock)
    head, events, ops = read(tmp_path, "r1")
    term_id = spec_repair_id("terminal", S, "r1")
    assert head["status"] == initial and ops == []
    assert [e["id"] for e in terminals(events)] == [term_id]
    report = repair_twice(tmp_path)
    [entry] = report["repairs"]
    assert entry["terminalEventId"] == term_id
    head, events, ops = read(tmp_path, "r1")
    assert len(terminals(events)) == 1
    assert head["status"] == "failed"
    assert head["failureClass"] == ("app_restarted" if initial == "running" else "missing_terminal_event")
    assert [o["type"] for o in ops] == ["run_failed"]


def test_failure_before_event_leaves_no_fact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§4.8 converse: a failed event commit writes nothing (best-effort: run skipped, session not
    reported; strict: raises); the next pass (case C) writes the terminal."""
    from maka_ref._store.errors import StoreError

    setup(tmp_path, [(header("r1"), [user("r1")])])
    before = db_content(tmp_path)

    def boom(self: Any, event: Any) -> Any:
        raise StoreError("disk full", code="io_error")

    monkeypatch.setattr(RuntimeStore, "ensure_terminal_durable", boom)
    report = repair_workspace(tmp_path, clock=clock).to_json()
    assert report["repairs"] == [] and report["recoveredSessions"] == []
    assert report["skipped"] == [{"sessionId": S, "runId": "r1", "reason": "repair_failed", "detail": "io_error: disk full"}]
    assert db_content(tmp_path) == before
    with pytest.raises(StoreError):
        repair_workspace(tmp_path, strict=True)
    monkeypatch.undo()
    assert repair_twice(tmp_path)["repairs"][0]["action"] == "failed_terminal_appended"


def test_header_write_fails_once_then_converges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§4.8 (generic analogue of §8 item 89): first pass commits the terminal event but the header
    write fails → run skipped, session not reported, header running; second pass: header-only
    repair from the same event; third pass: no change."""
    from maka_ref._store.errors import StoreError

    setup(tmp_path, [(header("r1"), [user("r1")])])
    original = AgentRunStore.update_run

    def fail_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(AgentRunStore, "update_run", original)
        raise StoreError("header write failed", code="io_error")

    monkeypatch.setattr(AgentRunStore, "update_run", fail_once)
    first = repair_workspace(tmp_path, clock=clock).to_json()
    assert first["repairs"] == [] and first["recoveredSessions"] == []
    head, events, _ = read(tmp_path, "r1")
    assert head["status"] == "running" and [e["id"] for e in terminals(events)] == [spec_repair_id("terminal", S, "r1")]
    second = repair_twice(tmp_path)
    assert second["repairs"][0]["action"] == "header_from_terminal_fact"
    assert second["repairs"][0]["failureClass"] == "app_restarted"
    assert second["recoveredSessions"] == [S]
    assert len(terminals(read(tmp_path, "r1")[1])) == 1


# --------------------------------------------------------------------------- CLI


def cli(*argv: str) -> tuple[int, Any]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_run(list(argv), stdout=out, stderr=err)
    return code, json.loads(out.getvalue())


def test_cli_repair_prints_report(tmp_path: Path) -> None:
    setup(tmp_path, [(header("r1"), [])])
    code, document = cli("repair", "--workspace", str(tmp_path))
    assert code == 0
    assert document["repairs"][0]["action"] == "failed_terminal_appended"
    assert cli("repair", "--workspace", str(tmp_path)) == (0, {"repairs": [], "skipped": [], "recoveredSessions": []})


def test_cli_repair_bad_workspace(tmp_path: Path) -> None:
    code, document = cli("repair", "--workspace", str(tmp_path / "missing"))
    assert code == 2 and document["error"]["code"] == "workspace_not_found"
    (tmp_path / "file").write_text("x")
    code, document = cli("repair", "--workspace", str(tmp_path / "file"))
    assert code == 2 and document["error"]["code"] == "workspace_not_a_directory"


def test_cli_repair_corrupt_database(tmp_path: Path) -> None:
    (tmp_path / "runtime.sqlite").write_bytes(b"not a database" * 20)
    code, document = cli("repair", "--workspace", str(tmp_path))
    assert code == 2 and document["error"]["code"] == "database_corrupt"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.sqlite"]


def test_cli_repair_empty_workspace_creates_nothing(tmp_path: Path) -> None:
    assert cli("repair", "--workspace", str(tmp_path)) == (0, {"repairs": [], "skipped": [], "recoveredSessions": []})
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- real process


def _python(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maka_ref", *argv], cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO), **env),
        capture_output=True, text=True, timeout=60,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
@pytest.mark.parametrize("point", ["P3", "P9"])
def test_sigkilled_live_run_is_repaired_in_a_fresh_process(tmp_path: Path, point: str) -> None:
    from tests.maka_ref.runtime.support import T1, only_run, script, write_script
    from tests.maka_ref.runtime.support import kill_and_reap, run_until_failpoint

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script_path = write_script(tmp_path, script(T1))
    child = run_until_failpoint(workspace, script_path, point)
    kill_and_reap(child)  # asserts returncode == -SIGKILL
    session_id, run_id, before = only_run(workspace)
    assert before["status"] == "running"

    done = _python("repair", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [entry] = report["repairs"]
    assert (entry["sessionId"], entry["runId"]) == (session_id, run_id)

    with RuntimeStore.open_read_only(workspace) as store, AgentRunStore.open_read_only(workspace) as runs:
        head = dict(runs.read_run(session_id, run_id))
        events = [dict(e) for e in store.read_run_events(session_id, run_id)]
    [term] = terminals(events)
    assert events[-1]["id"] == term["id"] == entry["terminalEventId"]
    fact = classify_terminal(head, events)
    assert fact.kind == "fact" and head["status"] == fact.run_status == entry["headerStatus"]
    if point == "P3":  # no terminal: case C
        assert entry["action"] == "failed_terminal_appended"
        assert (head["status"], head["failureClass"], entry["recoveryReason"]) == ("failed", "app_restarted", "run_interrupted")
        assert term["id"] == spec_repair_id("terminal", session_id, run_id)
    else:  # the live terminal is durable, the header lagged: case A
        assert entry["action"] == "header_from_terminal_fact"
        assert head["status"] == "completed" and term["id"] == f"{run_id}_terminal"

    content = db_content(workspace)
    again = _python("repair", "--workspace", str(workspace))
    assert again.returncode == 0 and json.loads(again.stdout) == {"repairs": [], "skipped": [], "recoveredSessions": []}
    assert db_content(workspace) == content

    inspected = _python("inspect", "--workspace", str(workspace))
    assert inspected.returncode == 0, inspected.stderr
    [run] = [r for r in json.loads(inspected.stdout)["runs"] if r["runId"] == run_id]
    assert run["header"]["status"] == head["status"]
    assert len(terminals(run["events"])) == 1
    [decision] = run["resolution"]["decisions"]
    [operation] = run["toolOperations"]
    if point == "P3":  # repair never invents a tool outcome: the Write's file is still in its prior
        # state, so the Phase 3 reconciler (run by repair before sealing) parks it, never redoes it
        assert (decision["status"], decision["reason"]) == ("parked", "reconcile_matches_prior_state")
        assert not [e for e in run["events"] if (e.get("content") or {}).get("kind") == "function_response"]
        assert operation["currentState"] != "outcome_committed"
    else:
        assert decision["status"] == "completed"
        assert operation["currentState"] == "outcome_committed"
