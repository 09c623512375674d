"""The tool writers through the wire protocol (spec 30 §2.3 T1 ``commitToolPrepared``, §2.4 T2
``commitToolOutcome``, their rows of the §2.8 idempotency matrix, §3.1 states; spec 10 §4.6),
and the store-wide health gate they pass first (spec 30 §2.1): STORE-T1-*, STORE-T2-*,
STORE-HEALTH-*.

Why a module of its own: T1 and T2 are the two halves of one tool operation (prepared →
outcome_committed), with their own pre-transaction validation and retry rules; the generic
path is in ``test_store_append.py`` and the recovery bundle (§2.5) in ``test_store_bundle.py``.
Every clause runs in its own workspace (pytest's ``tmp_path``) on the shared protocol session.
Fixture events are spec 30 Appendix A literally; argument hashes are the spec's golden values
(§0.3), never hashes computed by the implementation.

What a rejection clause proves: the answer is ``ok: false`` with the expected code *and*
nothing was written (the run's events and the operation's projection state are unchanged).
Expected codes: scanner / transition codes from spec 10 (§4.3, §4.6); for the spec's
message-only "plain errors" the code ``docs/protocol-codes.md`` assigns.

Spec choice: spec 30 §9 #30 says a function_call appended generically first (a permission
wait) and then committed through T1 is *accepted* (``created: true``, seq 2); what T1 refuses
is a call that already has a generic synthetic response (§9 #13, ``event_order_conflict``).
Both are clauses here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal
from conformance.suite._store_support import (
    IDENT, READ_ARGS, READ_HASH, READ_REPO_HASH, WRITE_HASH, call_event, canonical, dispatch_event, expect_created,
    Store, expect_rejected, ident, new_workspace, nothing_written, open_store, response_event, t1_params, t2_params,
    user_event,
)

# =============================================================================================
# T1 (spec 30 §2.3)
# =============================================================================================


@clause("STORE-T1-001", spec="30 §2.3; 30 §3.1; 30 §9 #28", capability="store",
        title="T1 is created with the dispatch's seq; call+dispatch stored; operation prepared v1; journal points at the dispatch")
def test_t1_created(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 (output seq = the dispatch's ``event_seq``; journal ``<op>_prepared`` →
    dispatch), §3.1 (``prepared`` [1]), §9 #28. Proves the result, the stored events, every
    field of the operation record, the journal row and the unsettled list."""
    store = open_store(maka, tmp_path)
    expect_created(store.t1(), True, "T1", runtimeEventSeq=2)
    expect_equal([canonical(call_event()), canonical(dispatch_event())], store.events(), what="events after T1")
    projection = store.project()
    expect_equal({"operationId": "operation-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1",
                  "providerToolCallId": "provider-call-1", "toolName": "Write", "canonicalArgsHash": WRITE_HASH,
                  "recoveryMode": "reconcile", "currentState": "prepared", "callEventId": "call-event-1",
                  "dispatchEventId": "dispatch-event-1", "version": 1},
                 store.operation("operation-1", projection), what="operation record after T1")
    journal = [{k: row.get(k) for k in ("journalEventId", "state", "runtimeEventId")}
               for row in store.journal("operation-1", projection)]
    expect_equal([{"journalEventId": "operation-1_prepared", "state": "prepared", "runtimeEventId": "dispatch-event-1"}],
                 journal, what="journal after T1")
    expect_equal(["operation-1"], projection.get("unsettledOperations"), what="unsettled operations after T1")
    store.close()


@clause("STORE-T1-002", spec="30 §2.3 step 2; 30 §2.8; 30 §9 #36", capability="store",
        title="an exact T1 retry answers created:false with the dispatch seq and writes nothing")
def test_t1_exact_retry(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 in-transaction step 2 (exact retry path), §2.8 (``committedAt`` is not
    identity), §9 #36. Proves: ``{created:false, runtimeEventSeq:2}``, still 2 events, 1 journal
    row, version 1."""
    store = open_store(maka, tmp_path)
    store.t1()
    expect_created(store.t1(committed_at=99), False, "exact T1 retry", runtimeEventSeq=2)
    projection = store.project()
    expect_equal(["call-event-1", "dispatch-event-1"], store.event_ids(), what="events after the retry")
    expect_equal(1, len(store.journal("operation-1", projection)), what="journal rows after the retry")
    expect_equal(1, (store.operation("operation-1", projection) or {}).get("version"), what="version after the retry")
    store.close()


@clause("STORE-T1-003", spec="30 §2.8; 30 §9 #36", capability="store",
        title="a T1 retry with other arguments on the same event ids is refused (duplicate_event_id)")
def test_t1_conflicting_args(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.8 (T1 conflicting retry: changed args/hash on same ids → ``duplicate_event_id``),
    §9 #36. The retry is self-consistent (``Read`` args with their golden hash on call, dispatch
    and input), so only the ledger can refuse it. Proves the code and an unchanged projection."""
    store = open_store(maka, tmp_path)
    store.t1()
    reply = maka.call("store.commit_tool_prepared", t1_params(
        store.ws, call=call_event(name="Read", args=READ_ARGS), dispatch=dispatch_event(name="Read", args_hash=READ_HASH),
        name="Read", args_hash=READ_HASH))
    expect_rejected(reply, "store.commit_tool_prepared", "duplicate_event_id", "T1 retry with other args")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "conflicting T1", state="prepared")
    expect_equal(WRITE_HASH, (store.operation("operation-1") or {}).get("canonicalArgsHash"), what="stored hash")
    store.close()


@clause("STORE-T1-004", spec="30 §2.8", capability="store",
        title="T1 with fresh event ids for an already prepared call is refused (duplicate_call)")
def test_t1_fresh_ids_same_call(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.8 (T1 conflicting retry: fresh event ids for the same call → ``duplicate_call``)."""
    store = open_store(maka, tmp_path)
    store.t1()
    reply = maka.call("store.commit_tool_prepared", t1_params(
        store.ws, call=call_event("call-event-2"), dispatch=dispatch_event("dispatch-event-2")))
    expect_rejected(reply, "store.commit_tool_prepared", "duplicate_call", "T1 with fresh ids")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "T1 with fresh ids", state="prepared")
    store.close()


@clause("STORE-T1-005", spec="30 §2.3 pre-validation step 6; 30 §9 #32; 30 §10 #20", capability="store",
        title="T1 recomputes the args hash from the call: a wrong hash on input and dispatch is refused; nothing stored")
def test_t1_wrong_hash(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 step 6 ("T1 argument hash does not match its canonical function call"), §9 #32,
    §10 #20 (never trust the caller's or the dispatch's hash). Input and dispatch agree on a
    well-formed but wrong hash (the golden hash of *other* args). Code ``t1_args_hash_mismatch``
    (docs/protocol-codes.md §4.3); no event and no operation is stored."""
    store = open_store(maka, tmp_path)
    reply = maka.call("store.commit_tool_prepared", t1_params(
        store.ws, dispatch=dispatch_event(args_hash=READ_REPO_HASH), args_hash=READ_REPO_HASH))
    expect_rejected(reply, "store.commit_tool_prepared", "t1_args_hash_mismatch", "T1 with a wrong hash")
    nothing_written(store, [], "T1 with a wrong hash", state=None)
    store.close()


@pytest.mark.parametrize("case", [
    pytest.param("journal", marks=clause(
        "STORE-T1-006", spec="30 §2.3 pre-validation step 2; 30 §9 #33; 30 §10 #19", capability="store",
        title="T1 with a caller-chosen journal id is refused (t1_journal_identity); nothing stored")),
    pytest.param("not_a_call", marks=clause(
        "STORE-T1-007", spec="30 §2.3 pre-validation step 4", capability="store",
        title="T1 whose call event is not a function_call is refused (t1_function_call_required)")),
    pytest.param("call_id", marks=clause(
        "STORE-T1-008", spec="30 §2.3 pre-validation step 5", capability="store",
        title="T1 whose call names another provider call than the operation is refused (t1_identity_mismatch)")),
    pytest.param("dispatch_mode", marks=clause(
        "STORE-T1-009", spec="30 §2.3 pre-validation step 7", capability="store",
        title="T1 whose dispatch disagrees with the input (recovery mode) is refused (t1_dispatch_mismatch)")),
    pytest.param("turn", marks=clause(
        "STORE-T1-010", spec="30 §2.3 pre-validation step 8", capability="store",
        title="T1 whose call and dispatch are in different turns is refused (t1_execution_identity_mismatch)")),
])
def test_t1_prevalidation(case: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 pre-transaction validation (all MUST, nothing written on failure), one step
    each; codes per docs/protocol-codes.md §4.3 (the spec gives messages). Proves the code and
    that neither event nor an operation row exists afterwards."""
    store = open_store(maka, tmp_path)
    if case == "journal":
        params, code = t1_params(store.ws, journal="caller-selected-id"), "t1_journal_identity"
    elif case == "not_a_call":
        params, code = t1_params(store.ws, call=user_event("call-event-1")), "t1_function_call_required"
    elif case == "call_id":
        params, code = t1_params(store.ws, call=call_event(call_id="provider-call-9")), "t1_identity_mismatch"
    elif case == "dispatch_mode":
        params, code = t1_params(store.ws, dispatch=dispatch_event(mode="replay_safe")), "t1_dispatch_mismatch"
    else:
        params, code = (t1_params(store.ws, dispatch=dispatch_event(identity=dict(IDENT, turnId="turn-2"))),
                        "t1_execution_identity_mismatch")
    reply = maka.call("store.commit_tool_prepared", params)
    expect_rejected(reply, "store.commit_tool_prepared", code, f"T1 ({case})")
    nothing_written(store, [], f"T1 ({case})", state=None)
    store.close()


@clause("STORE-T1-011", spec="30 §2.3 step 3; 30 §9 #30", capability="store",
        title="a call appended generically first (permission wait) is then committed by T1: created, seq 2")
def test_t1_after_generic_call(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 in-transaction step 3 (call insert allows an exact duplicate: "a call may
    already be durable from a permission wait"), §9 #30. Proves created:true, seq 2, events
    [call, dispatch], state prepared."""
    store = open_store(maka, tmp_path)
    store.append(call_event())
    expect_created(store.t1(), True, "T1 after a generic call", runtimeEventSeq=2)
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "T1 after a generic call", state="prepared")
    store.close()


@clause("STORE-T1-012", spec="30 §9 #13; 10 §7.9 #103", capability="store",
        title="T1 for a call that already has a generic synthetic response is refused (event_order_conflict)")
def test_t1_after_generic_response(maka: Any, tmp_path: Path) -> None:
    """spec 30 §9 #13 / spec 10 §7.9 #103: call + unbound synthetic response on the generic lane,
    then T1 for the same call → ``event_order_conflict`` (a dispatch after the call's
    response); no operation row."""
    store = open_store(maka, tmp_path)
    store.append(call_event())
    store.append(response_event(op=None))
    reply = maka.call("store.commit_tool_prepared", t1_params(store.ws))
    expect_rejected(reply, "store.commit_tool_prepared", "event_order_conflict", "T1 after a synthetic response")
    nothing_written(store, ["call-event-1", "outcome-event-1"], "T1 after a synthetic response", state=None)
    store.close()


@clause("STORE-T1-013", spec="30 §2.3 step 2; 30 §2.8; 30 §10 #31", capability="store",
        title="T1 re-using a prepared operation id for a call of another invocation is refused (tool_operation_identity_conflict)")
def test_t1_operation_id_reused(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 in-transaction step 2 (an existing operation row → every identity field must
    match, else "Tool operation identity conflict"), §2.8, §10 #31 (the transition check reads
    only the candidate invocation, so the other invocation's call is not a scanner issue).
    Proves the code and that invocation-2 stays empty."""
    store = open_store(maka, tmp_path)
    store.t1()
    other = ident(2)
    reply = maka.call("store.commit_tool_prepared", t1_params(
        store.ws, call=call_event("call-event-2", identity=other),
        dispatch=dispatch_event("dispatch-event-2", identity=other)))
    expect_rejected(reply, "store.commit_tool_prepared", "tool_operation_identity_conflict", "operation id re-used")
    expect_equal([], store.event_ids(other), what="events of invocation-2")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "operation id re-used", state="prepared")
    store.close()


@clause("STORE-T1-014", spec="30 §0.4; 30 §9 #29; 30 §10 #27", capability="store",
        title="a nested T1 whose dispatch carries the 4-key refs (parent call and operation) is created")
def test_t1_nested_refs(maka: Any, tmp_path: Path) -> None:
    """spec 30 §0.4 (dispatch refs exactly 2 or exactly 4 keys), §9 #29, §10 #27."""
    store = open_store(maka, tmp_path)
    refs = {"operationId": "operation-1", "toolCallId": "provider-call-1", "parentToolCallId": "parent-call",
            "parentOperationId": "parent-operation"}
    expect_created(store.t1(dispatch=dispatch_event(refs=refs)), True, "nested T1", runtimeEventSeq=2)
    expect_equal("prepared", (store.operation("operation-1") or {}).get("currentState"), what="state")
    store.close()


# =============================================================================================
# T2 (spec 30 §2.4)
# =============================================================================================


@clause("STORE-T2-001", spec="30 §2.4; 30 §3.1; 30 §9 #34", capability="store",
        title="T2 is created with the response's seq; state outcome_committed v2; journal [prepared, outcome_committed]")
def test_t2_created(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4, §3.1 (``outcome_committed`` [2]), §9 #34 (seq 3, result id set, unsettled
    empty)."""
    store = open_store(maka, tmp_path)
    store.t1()
    expect_created(store.t2(), True, "T2", runtimeEventSeq=3)
    projection = store.project()
    record = store.operation("operation-1", projection) or {}
    expect_equal({"currentState": "outcome_committed", "version": 2, "resultEventId": "outcome-event-1"},
                 {k: record.get(k) for k in ("currentState", "version", "resultEventId")}, what="operation after T2")
    expect_equal([("operation-1_prepared", "prepared", "dispatch-event-1"),
                  ("operation-1_outcome", "outcome_committed", "outcome-event-1")],
                 [(r.get("journalEventId"), r.get("state"), r.get("runtimeEventId"))
                  for r in store.journal("operation-1", projection)], what="journal after T2")
    expect_equal([], projection.get("unsettledOperations"), what="unsettled operations after T2")
    expect_equal(["call-event-1", "dispatch-event-1", "outcome-event-1"], store.event_ids(), what="events")
    store.close()


@clause("STORE-T2-002", spec="30 §2.4 step 4; 30 §2.8; 30 §9 #36", capability="store",
        title="an exact T2 retry answers created:false and writes nothing")
def test_t2_exact_retry(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 in-transaction step 4, §2.8, §9 #36 (T1 twice and T2 twice → 3 events,
    2 journal rows)."""
    store = open_store(maka, tmp_path)
    store.t1()
    store.t2()
    expect_created(store.t2(committed_at=77), False, "exact T2 retry", runtimeEventSeq=3)
    projection = store.project()
    expect_equal(3, len(store.events()), what="event count after the retry")
    expect_equal(2, len(store.journal("operation-1", projection)), what="journal rows after the retry")
    expect_equal(2, (store.operation("operation-1", projection) or {}).get("version"), what="version after the retry")
    store.close()


@pytest.mark.parametrize("case", [
    pytest.param("other_id", marks=clause(
        "STORE-T2-003", spec="30 §2.4; 30 §2.8", capability="store",
        title="a T2 retry with another response id is refused (duplicate_response)")),
    pytest.param("other_bytes", marks=clause(
        "STORE-T2-004", spec="30 §2.4; 30 §2.8", capability="store",
        title="a T2 retry with the same response id and other bytes is refused (duplicate_event_id)")),
])
def test_t2_conflicting_retry(case: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 ("in practice conflicting T2 retries are caught at step 3"), §2.8. Proves the
    code and that the operation still points at the first response."""
    store = open_store(maka, tmp_path)
    store.t1()
    store.t2()
    if case == "other_id":
        response, code = response_event("outcome-event-2"), "duplicate_response"
    else:
        response, code = response_event(result="different"), "duplicate_event_id"
    reply = maka.call("store.commit_tool_outcome", t2_params(store.ws, response=response))
    expect_rejected(reply, "store.commit_tool_outcome", code, f"conflicting T2 ({case})")
    nothing_written(store, ["call-event-1", "dispatch-event-1", "outcome-event-1"], f"conflicting T2 ({case})",
                    state="outcome_committed")
    expect_equal("outcome-event-1", (store.operation("operation-1") or {}).get("resultEventId"), what="result id")
    store.close()


@clause("STORE-T2-005", spec="30 §2.4 step 1", capability="store",
        title="T2 for an operation that was never prepared is refused (unknown_tool_operation); nothing written")
def test_t2_without_t1(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 in-transaction step 1 ("Unknown tool operation"); code per
    docs/protocol-codes.md §4.3."""
    store = open_store(maka, tmp_path)
    store.append(call_event())
    reply = maka.call("store.commit_tool_outcome", t2_params(store.ws))
    expect_rejected(reply, "store.commit_tool_outcome", "unknown_tool_operation", "T2 without T1")
    nothing_written(store, ["call-event-1"], "T2 without T1", state=None)
    store.close()


@pytest.mark.parametrize("case", [
    pytest.param("journal", marks=clause(
        "STORE-T2-006", spec="30 §2.4 pre-transaction", capability="store",
        title="T2 with a caller-chosen journal id is refused (t2_journal_identity)")),
    pytest.param("refs", marks=clause(
        "STORE-T2-007", spec="30 §2.4 pre-transaction", capability="store",
        title="T2 whose response lacks refs.operationId is refused (t2_refs_required)")),
    pytest.param("end_invocation", marks=clause(
        "STORE-T2-008", spec="30 §2.4 pre-transaction; 30 §9 #37; 10 §7.9 #105", capability="store",
        title="T2 whose response also ends the invocation is refused (t2_lane_invalid); state stays prepared")),
])
def test_t2_prevalidation(case: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 pre-transaction validation; codes per docs/protocol-codes.md §4.3. Proves the
    code, events still [call, dispatch], state still ``prepared``."""
    store = open_store(maka, tmp_path)
    store.t1()
    if case == "journal":
        params, code = t2_params(store.ws, journal="caller-selected-id"), "t2_journal_identity"
    elif case == "refs":
        params, code = t2_params(store.ws, response=response_event(op=None)), "t2_refs_required"
    else:
        params, code = t2_params(store.ws, response=response_event(actions={"endInvocation": True})), "t2_lane_invalid"
    reply = maka.call("store.commit_tool_outcome", params)
    expect_rejected(reply, "store.commit_tool_outcome", code, f"T2 ({case})")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], f"T2 ({case})", state="prepared")
    store.close()


@clause("STORE-T2-009", spec="30 §2.4", capability="store",
        title="an error outcome (isError: true) is a legal T2")
def test_t2_error_outcome(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 ("An error outcome (``isError: true``) is a legal T2"); state
    ``outcome_committed``."""
    store = open_store(maka, tmp_path)
    store.t1()
    expect_created(store.t2(response=response_event(result="boom", is_error=True)), True, "error T2", runtimeEventSeq=3)
    expect_equal("outcome_committed", (store.operation("operation-1") or {}).get("currentState"), what="state")
    store.close()


@clause("STORE-T2-010", spec="30 §2.4 step 7; 30 §2.5; 30 §9 #50; 30 §10 #30", capability="store",
        title="parked is final: T2 after a parked decision is refused (compare_and_set_failed); nothing written")
def test_t2_after_park(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 step 7 (compare-and-set from ``prepared`` only), §2.5 ("parked is terminal in
    v1"), §9 #50, §10 #30. Proves the code and that state and events are those of the park."""
    store = open_store(maka, tmp_path)
    store.t1()
    store.bundle(parked=True)
    before = store.event_ids()
    reply = maka.call("store.commit_tool_outcome", t2_params(store.ws))
    expect_rejected(reply, "store.commit_tool_outcome", "compare_and_set_failed", "T2 after a park")
    nothing_written(store, before, "T2 after a park", state="recovery_parked")
    store.close()


# =============================================================================================
# The store-wide health gate (spec 30 §2.1)
# =============================================================================================


def _foreign_corrupt_row(ws: str) -> str:
    """Commit, from a connection of the harness's own process, an orphan function_response in
    another session (``session-2``): a scanner issue ``orphan_response`` (spec 10 §4.3) that no
    writer of the store would accept. Written into ``runtime_events`` exactly as spec 30 §1.2
    lays out a row (identity columns, dense ``event_seq`` 1, ``event_kind`` = the content kind,
    canonical payload). Returns the event id."""
    event = response_event("foreign-orphan-response", op=None, call_id="provider-call-foreign", identity=ident(2))
    payload = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # ASCII: = spec 30 §0.2
    conn = sqlite3.connect(os.path.join(ws, "runtime.sqlite"), isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
            "payload_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event["id"], event["sessionId"], event["invocationId"], event["runId"], event["turnId"], 1,
             "function_response", payload, event["ts"]))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return event["id"]


@clause("STORE-HEALTH-001", spec="30 §2.1 (health gate); 30 §1.2; 10 §4.3; 10 §4.6", capability="store",
        title="a writer rescans after another process committed: damage in another session refuses its next T2 "
              "(orphan_response)")
def test_health_gate_rescans_after_a_foreign_commit(maka: Any, tmp_path: Path) -> None:
    """Spec 30 §2.1: the store scans *all* ``runtime_events`` at open **and again whenever
    another connection committed** (``PRAGMA data_version`` moved); every tool-bearing write
    consults that result, so damage in an unrelated session fail-stops tool boundaries
    everywhere. Kills ``store-health-gate-scans-once`` (a writer that trusts its first scan).

    Two processes on one workspace: process A (a fresh adapter session) opens the store and
    commits T1 of operation-1 (its gate has scanned a healthy ledger). Then another process —
    the harness, through the normative schema of spec 30 §1.2 — commits an orphan
    function_response in ``session-2``, damage no writer would accept. A's next tool-bearing
    write (T2 of operation-1, in ``session-1``, whose own invocation is untouched) must be
    refused with the scanner code ``orphan_response`` and write nothing. A fresh process B
    then sees the same refusal (the damage is readable, so A's acceptance could only come from
    a stale scan). *Not applicable* (skipped, reported not run) when ``ledgerFiles`` has no
    ``runtime.sqlite``: the foreign commit needs the spec's SQLite layout."""
    ws = new_workspace(tmp_path)
    with maka.fresh() as writer:
        store = Store(writer, ws)
        store.open()
        if "runtime.sqlite" not in store.ledger_files:
            store.close()
            pytest.skip("not applicable: ledgerFiles has no runtime.sqlite, so another process cannot commit a row "
                        "through the spec 30 §1.2 layout")
        expect_created(store.t1(), True, "T1 before the foreign commit", runtimeEventSeq=2)
        foreign = _foreign_corrupt_row(ws)
        reply = writer.call("store.commit_tool_outcome", t2_params(ws))
        if reply.ok:
            raise ClauseMismatch(
                "the writer committed T2 although another process had corrupted the store since its last scan (spec 30 "
                "§2.1: the health gate rescans whenever another connection committed)",
                evidence={"result": dict(reply.result or {}), "foreignEvent": foreign})
        expect_rejected(reply, "store.commit_tool_outcome", "orphan_response",
                        "T2 after another process committed an orphan response in session-2")
        nothing_written(store, ["call-event-1", "dispatch-event-1"], "T2 refused by the health gate",
                        state="prepared")
        store.close()
    with maka.fresh() as other:
        fresh = Store(other, ws)
        fresh.open()
        expect_rejected(other.call("store.commit_tool_outcome", t2_params(ws)), "store.commit_tool_outcome",
                        "orphan_response", "T2 from a fresh process on the damaged store")
        fresh.close()
