"""Store projections through the wire protocol (spec 30 §3, §4; protocol §4.2.1 ``store.project``).

What these clauses prove: the ``toolOperations`` / ``toolJournalEvents`` projection follows
the state machine of spec 30 §3.1 for every writer path; ``unsettledOperations`` is exactly
the §3.1 definition; the resolution and plan that ``store.project`` reports equal the
reference resolver's (``maka_ref`` in this process) on the events read back; reading never
writes (``ledgerFiles`` byte-identical across ``store.project`` and ``store.read_events``, two
projections identical); ``store.rebuild_projections`` reproduces the online projection
(spec 30 §3.2, §3.3).

The oracle is the spec's state table (§3.1) and the reference resolver on the events the
implementation returns — never the implementation's own earlier answer for the value under
test (a projection is compared with an earlier projection only where the spec requires
equality: reading twice, rebuilding).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.clauses import clause, expect_equal
from conformance.suite._store_support import (
    Store, call_event, canonical, decision_event, dispatch_event, expect_same_bytes, ident, open_store,
    reconcile_event, response_event, expect_resolution_and_plan, tool_states, user_event,
)

#: Five operations, one per §3.1 end state, each in its own run of session-p.
SCENARIOS = {
    "op-prepared": "prepared",
    "op-success": "outcome_committed",
    "op-error": "outcome_committed",
    "op-parked": "recovery_parked",
    "op-completed": "recovery_completed",
}
#: §3.1 versions and journal states per end state; §3.2 journal counts.
VERSIONS = {"prepared": 1, "outcome_committed": 2, "recovery_parked": 3, "recovery_completed": 4}
JOURNAL_STATES = {
    "prepared": ["prepared"],
    "outcome_committed": ["prepared", "outcome_committed"],
    "recovery_parked": ["prepared", "reconcile_observed", "recovery_parked"],
    "recovery_completed": ["prepared", "reconcile_observed", "outcome_committed", "recovery_completed"],
}
#: spec 30 §9 #57 / spec 10 §6.3: what the resolver says of each end state.
RESOLVER_STATUS = {"op-prepared": "indeterminate", "op-success": "completed", "op-error": "completed",
                   "op-parked": "parked", "op-completed": "completed"}


def _identity(n: int) -> dict[str, str]:
    return ident(n, sessionId="session-p")


def build_scenarios(store: Store) -> dict[str, dict[str, str]]:
    """Write the five operations (each after a user event in its own run); returns op → identity."""
    out = {}
    for n, op in enumerate(SCENARIOS, start=1):
        identity = _identity(n)
        out[op] = identity
        call_id = f"provider-{op}"
        names = {"call_eid": f"{op}-call", "dispatch_eid": f"{op}-dispatch", "reconcile_eid": f"{op}-reconcile"}
        store.append(user_event(f"{op}-user", ts=1, identity=identity))
        store.t1(op=op, call=call_event(names["call_eid"], call_id=call_id, ts=2, identity=identity),
                 dispatch=dispatch_event(names["dispatch_eid"], op=op, call_id=call_id, ts=2, identity=identity),
                 call_id=call_id, committed_at=100 + n)
        response = response_event(f"{op}-outcome", op=op, call_id=call_id, ts=4, identity=identity,
                                  is_error=(op == "op-error"), result=("boom" if op == "op-error" else "ok"))
        if op in ("op-success", "op-error"):
            store.t2(op=op, response=response, committed_at=200 + n)
        elif op == "op-parked":
            store.bundle(op=op, parked=True,
                         reconcile=reconcile_event(names["reconcile_eid"], op=op, call_id=call_id,
                                                   observation="diverged", ts=3, identity=identity),
                         decision=decision_event(f"{op}-decision", op=op, call_id=call_id, disposition="parked",
                                                 ts=4, identity=identity, **names))
        elif op == "op-completed":
            store.bundle(op=op, outcome=response,
                         reconcile=reconcile_event(names["reconcile_eid"], op=op, call_id=call_id, ts=3,
                                                   identity=identity),
                         decision=decision_event(f"{op}-decision", op=op, call_id=call_id, ts=5, identity=identity,
                                                 outcome_id=f"{op}-outcome", **names))
    return out


@clause("STORE-PROJ-001", spec="30 §3.1", capability="store",
        title="toolOperations currentState and version follow §3.1 for T1, T2 (success and error), park and completed recovery")
def test_states(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.1: prepared [1]; T2 → outcome_committed [2] (an ``isError`` outcome too);
    parked bundle → recovery_parked [3]; completed bundle → recovery_completed [4]. Also the
    record's ``resultEventId`` (set exactly when an outcome exists) and ``dispatchEventId``."""
    store = open_store(maka, tmp_path)
    build_scenarios(store)
    projection = store.project()
    expected = {op: {"currentState": state, "version": VERSIONS[state]} for op, state in SCENARIOS.items()}
    expect_equal(expected, tool_states(store, SCENARIOS, projection), what="operation states")
    results = {op: (store.operation(op, projection) or {}).get("resultEventId") for op in SCENARIOS}
    expect_equal({"op-prepared": None, "op-success": "op-success-outcome", "op-error": "op-error-outcome",
                  "op-parked": None, "op-completed": "op-completed-outcome"}, results, what="resultEventId")
    dispatches = {op: (store.operation(op, projection) or {}).get("dispatchEventId") for op in SCENARIOS}
    expect_equal({op: f"{op}-dispatch" for op in SCENARIOS}, dispatches, what="dispatchEventId")
    store.close()


@clause("STORE-PROJ-002", spec="30 §3.1; 30 §3.3; 30 §2.3–§2.5", capability="store",
        title="toolJournalEvents carry the derived ids, states, runtime event ids, hash, mode and committedAt of §3.1/§3.3")
def test_journal_rows(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.1 (journal states; derived ids ``<op>_prepared``, ``<op>_outcome``,
    ``<eventId>_journal``; ``runtime_event_id`` → dispatch / response / reconcile / decision),
    §3.3 and §10 #22 (``committed_at``: T1/T2 = caller's ``committedAt``; recovery facts = the
    event's ``ts``). ``committedAt`` is compared when the implementation reports it."""
    store = open_store(maka, tmp_path)
    build_scenarios(store)
    projection = store.project()
    for n, (op, state) in enumerate(SCENARIOS.items(), start=1):
        rows = store.journal(op, projection)
        expect_equal(JOURNAL_STATES[state], [r.get("state") for r in rows], what=f"journal states of {op}")
        ids = {"prepared": (f"{op}_prepared", f"{op}-dispatch", 100 + n),
               "outcome_committed": (f"{op}_outcome", f"{op}-outcome", 200 + n if op != "op-completed" else 4),
               "reconcile_observed": (f"{op}-reconcile_journal", f"{op}-reconcile", 3),
               "recovery_parked": (f"{op}-decision_journal", f"{op}-decision", 4),
               "recovery_completed": (f"{op}-decision_journal", f"{op}-decision", 5)}
        for row in rows:
            journal_id, event_id, committed = ids[row.get("state")]
            expect_equal(journal_id, row.get("journalEventId"), what=f"{op} journal id of {row.get('state')}")
            if "runtimeEventId" in row:
                expect_equal(event_id, row.get("runtimeEventId"), what=f"{op} runtimeEventId of {row.get('state')}")
            if "canonicalArgsHash" in row:
                expect_equal((store.operation(op, projection) or {}).get("canonicalArgsHash"), row["canonicalArgsHash"],
                             what=f"{op} journal hash")
            if "committedAt" in row:
                expect_equal(committed, row["committedAt"], what=f"{op} committedAt of {row.get('state')}")
    store.close()


@clause("STORE-PROJ-003", spec="30 §3.1 (Unsettled)", capability="store",
        title="unsettledOperations lists exactly the prepared operations with a dispatch and no result")
def test_unsettled(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.1: unsettled = ``current_state='prepared' AND result_event_id IS NULL AND
    dispatch_event_id IS NOT NULL``, ordered by invocation, operation. Two prepared operations in
    two invocations plus three settled ones → exactly the two, in invocation order."""
    store = open_store(maka, tmp_path)
    build_scenarios(store)
    identity = ident(9, sessionId="session-p")
    store.t1(op="op-late", call=call_event("late-call", call_id="provider-late", identity=identity),
             dispatch=dispatch_event("late-dispatch", op="op-late", call_id="provider-late", identity=identity),
             call_id="provider-late")
    expect_equal(["op-prepared", "op-late"], store.project().get("unsettledOperations"), what="unsettled operations")
    store.close()


@clause("STORE-PROJ-004", spec="30 §3.3; 10 §6; 20 §1; protocol §4.2.1", capability="store",
        title="the resolution and plan of every projected run equal the reference's on the events read back")
def test_resolution_and_plan(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.3 (the resolver's interpretation — completed / indeterminate / parked — must
    agree with the projection), spec 10 §6 and spec 20 §1 (the reference resolver and planner
    are the oracle), §9 #57 (prepared → indeterminate, success/error → completed, parked →
    parked, completed bundle → completed). Also: each run's projected ``events`` equal
    ``store.read_events``."""
    store = open_store(maka, tmp_path)
    identities = build_scenarios(store)
    projection = store.project()
    for op, identity in identities.items():
        events = store.events(identity)
        run = store.run(identity, projection)
        expect_equal(events, run.get("events"), what=f"projected events of {op}'s run")
        expect_resolution_and_plan(run, events, f"run of {op}")
        statuses = [d.get("status") for d in (run.get("resolution") or {}).get("decisions") or []]
        expect_equal([RESOLVER_STATUS[op]], statuses, what=f"resolver status of {op}")
    store.close()


@clause("STORE-PROJ-005", spec="30 §4; protocol §4.2; protocol §4.2.1", capability="store",
        title="reading never writes: ledgerFiles byte-identical across store.project and store.read_events; two projections identical")
def test_reading_never_writes(maka: Any, tmp_path: Path) -> None:
    """protocol §4.2 / §4.2.1 (``store.project`` and ``store.read_events`` MUST leave
    ``ledgerFiles`` byte-identical), spec 30 §4 (reads are reads). Done on a workspace with
    every kind of operation, after the writes, while the writer session is still open."""
    store = open_store(maka, tmp_path)
    identities = build_scenarios(store)
    before = store.file_bytes()
    first = store.project()
    for identity in identities.values():
        store.events(identity)
    second = store.project()
    expect_same_bytes(before, store.file_bytes(), "store.project / store.read_events")
    expect_equal(first, second, what="second projection")
    store.close()


@clause("STORE-PROJ-006", spec="30 §3.2; 30 §3.3; 30 §9 #41, #51", capability="store",
        title="store.rebuild_projections reports {5 operations, 12 journal rows} and reproduces the online projection")
def test_rebuild_equals_online(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.2 (counts: prepared 1/1, T2 1/2, parked 1/3, completed 1/4 → here 5 operations,
    1+2+2+3+4 = 12 journal rows), §3.3 (online and rebuilt records identical field by field;
    ``journal_seq`` is not compared), §9 #41 and #51. The resolutions are unchanged too."""
    store = open_store(maka, tmp_path)
    build_scenarios(store)
    online = store.project()
    result = store.ok("store.rebuild_projections", {"workspace": store.ws})
    expect_equal({"operations": 5, "journalEvents": 12}, dict(result), what="rebuild counts")
    rebuilt = store.project()
    expect_equal(store.tool_projection(online), store.tool_projection(rebuilt), what="projection after the rebuild")
    expect_equal(online.get("unsettledOperations"), rebuilt.get("unsettledOperations"), what="unsettled after the rebuild")
    expect_equal([r.get("resolution") for r in online["runs"]], [r.get("resolution") for r in rebuilt["runs"]],
                 what="resolutions after the rebuild")
    store.close()


@clause("STORE-PROJ-007", spec="30 §3.3; 30 §9 #52; 10 §7.9 #107", capability="store",
        title="interleaved operations (T1 op1, T1 op2, T2 op2, T2 op1) rebuild to identical records and journals")
def test_rebuild_interleaved(maka: Any, tmp_path: Path) -> None:
    """spec 30 §3.3, §9 #52 / spec 10 §7.9 #107: two operations of one invocation whose writes
    interleave; the rebuilt records and journals (in journal order per operation) equal the
    online ones, and both end ``outcome_committed`` [2]."""
    store = open_store(maka, tmp_path)
    store.append(user_event())
    for n in (1, 2):
        store.t1(op=f"operation-{n}", call=call_event(f"call-event-{n}", call_id=f"provider-call-{n}", ts=n),
                 dispatch=dispatch_event(f"dispatch-event-{n}", op=f"operation-{n}", call_id=f"provider-call-{n}", ts=n),
                 call_id=f"provider-call-{n}", committed_at=10 + n)
    for n in (2, 1):
        store.t2(op=f"operation-{n}", response=response_event(f"outcome-event-{n}", op=f"operation-{n}",
                                                               call_id=f"provider-call-{n}", ts=5 + n),
                 committed_at=20 + n)
    online = store.project()
    expect_equal({f"operation-{n}": {"currentState": "outcome_committed", "version": 2} for n in (1, 2)},
                 tool_states(store, ["operation-1", "operation-2"], online), what="states online")
    expect_equal({"operations": 2, "journalEvents": 4},
                 dict(store.ok("store.rebuild_projections", {"workspace": store.ws})), what="rebuild counts")
    rebuilt = store.project()
    for op in ("operation-1", "operation-2"):
        expect_equal(store.operation(op, online), store.operation(op, rebuilt), what=f"{op} record after the rebuild")
        expect_equal(store.journal(op, online), store.journal(op, rebuilt), what=f"{op} journal after the rebuild")
    store.close()


@clause("STORE-PROJ-008", spec="protocol §4.2.1; 30 §4", capability="store",
        title="runs are ordered by (sessionId, runId); a generic-only run has no tool operations; events are canonical")
def test_runs_shape(maka: Any, tmp_path: Path) -> None:
    """protocol §4.2.1 (``runs`` ordered by ``(sessionId, runId)``, ``events`` by ``event_seq``),
    spec 30 §4. Three runs written out of order; a run with only ordinary events projects empty
    ``toolOperations``/``toolJournalEvents``; a healthy store reports ``health: healthy``."""
    store = open_store(maka, tmp_path)
    written = [ident("b"), ident("a"), ident("a", runId="run-0", invocationId="invocation-a0", turnId="turn-a0")]
    for n, identity in enumerate(written):
        store.append(user_event(f"user-{n}", ts=n + 1, identity=identity))
    projection = store.project()
    expect_equal({"status": "healthy"}, projection.get("health"), what="health")
    keys = [(r.get("sessionId"), r.get("runId")) for r in projection.get("runs") or []]
    expect_equal(sorted(keys), keys, what="order of runs")
    expect_equal(3, len(keys), what="number of runs")
    for run, identity in zip(projection["runs"], sorted(written, key=lambda i: (i["sessionId"], i["runId"]))):
        n = written.index(identity)
        expect_equal([canonical(user_event(f"user-{n}", ts=n + 1, identity=identity))], run.get("events"),
                     what=f"events of {identity['sessionId']}/{identity['runId']}")
        expect_equal([], run.get("toolOperations"), what="toolOperations of a generic-only run")
        expect_equal([], run.get("toolJournalEvents"), what="toolJournalEvents of a generic-only run")
    store.close()
