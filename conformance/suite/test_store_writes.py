"""Store writes through the wire protocol (spec 30 §1–§2, §2.8; spec 10 §4.2, §4.6, §5.3, §5.6):
opening, schema refusal, generic append, T1, T2 and the recovery bundle.

Every clause runs in its own workspace (pytest's ``tmp_path``) on the shared protocol session,
except the schema clauses, which need fresh processes (the files are edited between them).
Fixture events are spec 30 Appendix A literally; argument hashes are the spec's golden values
(§0.3), never hashes computed by the implementation.

What a rejection clause proves: the answer is ``ok: false`` with the expected code *and*
nothing was written (the run's events and the operation's projection state are unchanged).
Expected codes: scanner / transition / bundle codes from spec 10 (§4.3, §4.6, §5.3) and the
generic-append vectors (``conformance/vectors/lanes.json``); for the spec's message-only
"plain errors" the code ``docs/protocol-codes.md`` assigns. A lane conflict on the generic
path is ``semantic_lane_conflict`` (spec 10 §4.2, the vectors).

Schema clauses (STORE-SCHEMA-*): a newer/older schema can only be produced through the files
when the store is SQLite (spec 30 §1.3 keeps the version in ``PRAGMA user_version``). When
``ledgerFiles`` has no ``runtime.sqlite`` the clause is *skipped* with "not applicable: …",
which the report shows as **not run** — deliberately not a vacuous pass: a user certifying a
non-SQLite store must see that the fail-closed schema rule was not checked for it.

Spec choice: spec 30 §9 #30 says a function_call appended generically first (a permission
wait) and then committed through T1 is *accepted* (``created: true``, seq 2); what T1 refuses
is a call that already has a generic synthetic response (§9 #13, ``event_order_conflict``).
Both are clauses here.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite._store_support import (
    IDENT, LANE_CONFLICT_CODES, READ_ARGS, READ_HASH, READ_REPO_HASH, WRITE_HASH, Store,
    bundle_params, call_event, canonical, decision_event, dispatch_event, expect_created, expect_rejected,
    expect_same_bytes, ident, ledger_bytes, new_workspace, nothing_written, reconcile_event, response_event,
    t1_params, t2_params, terminal_event, user_event,
)
from conformance.vectors import iter_vectors

# =============================================================================================
# Open and schema (spec 30 §1.1, §1.3)
# =============================================================================================


@clause("STORE-OPEN-001", spec="30 §1.1; 30 §9 #1", capability="store",
        title="store.open creates the store in an empty workspace; a reopen keeps the version and reads empty")
def test_open_creates(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 (a writer open creates the store), §9 #1 (fresh open → version 12; reopen →
    same version, empty reads). Proves: the reported ledger files exist after the open, the
    schema version (when reported for a SQLite store) is 12 and stays 12, and a new store
    projects as healthy with no runs."""
    store = Store(maka, new_workspace(tmp_path))
    first = store.open()
    if not store.ledger_files:
        raise ClauseMismatch("store.open reported no ledgerFiles for a created store", evidence={"result": dict(first)})
    missing = [name for name in store.ledger_files if not os.path.isfile(os.path.join(store.ws, name))]
    if missing:
        raise ClauseMismatch(f"ledgerFiles names files that do not exist: {missing}", evidence={"result": dict(first)})
    if "runtime.sqlite" in store.ledger_files and "schemaVersion" in first:
        expect_equal(12, first["schemaVersion"], what="schemaVersion of a fresh SQLite store (spec 30 §1.3)")
    projection = store.project()
    expect_equal({"status": "healthy"}, projection.get("health"), what="health of a fresh store")
    expect_equal([], projection.get("runs"), what="runs of a fresh store")
    expect_equal([], projection.get("unsettledOperations"), what="unsettled operations of a fresh store")
    store.close()
    second = store.open()
    if "schemaVersion" in first:
        expect_equal(first["schemaVersion"], second.get("schemaVersion"), what="schemaVersion after a reopen")
    expect_equal([], store.events(), what="events of a reopened empty store")
    store.close()


@clause("STORE-OPEN-002", spec="30 §1.1; 30 §10 #33; protocol §4.2", capability="store",
        title="a read-only open of an empty workspace answers store_not_found and creates nothing")
def test_read_only_open_of_empty_workspace(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 ("a read-only open never creates the file or the parent directory"), §10 #33,
    protocol §4.2 (``store_not_found``). Proves: the refusal code, and that the workspace
    directory is still empty afterwards (no database, no WAL, no lock file)."""
    ws = new_workspace(tmp_path)
    reply = maka.call("store.open", {"workspace": ws, "readOnly": True})
    expect_rejected(reply, "store.open", "store_not_found", "read-only open of an empty workspace")
    maka.call("store.close", {"workspace": ws})
    expect_equal([], sorted(os.listdir(ws)), what="files in the workspace after a refused read-only open")


def _sqlite_workspace(maka: Any, tmp_path: Path) -> tuple[str, list[str]]:
    """A workspace with one committed event, written and closed by a process of its own."""
    ws = new_workspace(tmp_path)
    with maka.fresh() as client:
        store = Store(client, ws)
        store.open()
        store.append(user_event())
        store.close()
    if "runtime.sqlite" not in store.ledger_files:
        pytest.skip("not applicable: ledgerFiles has no runtime.sqlite, so the schema version cannot be set "
                    "through the files (spec 30 §1.3 is SQLite's user_version)")
    return ws, store.ledger_files


def _set_user_version(ws: str, version: int) -> None:
    conn = sqlite3.connect(os.path.join(ws, "runtime.sqlite"), isolation_level=None)
    try:
        conn.execute(f"PRAGMA user_version = {int(version)}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _workspace_bytes(ws: str) -> dict[str, bytes | None]:
    names = [n for n in os.listdir(ws) if not n.endswith("-shm")]
    return ledger_bytes(ws, names)


@clause("STORE-SCHEMA-001", spec="30 §1.3; 30 §9 #5", capability="store",
        title="a store whose schema is newer than supported is refused (schema_too_new) and left byte-identical")
def test_newer_schema_refused(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.3 step 2 (``user_version`` > 12 → fail closed, nothing written), §9 #5 (DB bytes
    unchanged). The harness sets ``PRAGMA user_version = 13`` on the closed ``runtime.sqlite``;
    a fresh process must refuse both a writer open and a read-only open, and every durable file
    must be byte-identical afterwards. Read-only: ``schema_too_new`` or ``schema_not_current``
    (spec §1.1 words the read-only refusal as "cannot be read without upgrading")."""
    ws, _ = _sqlite_workspace(maka, tmp_path)
    _set_user_version(ws, 13)
    before = _workspace_bytes(ws)
    with maka.fresh() as client:
        expect_rejected(client.call("store.open", {"workspace": ws}), "store.open", "schema_too_new",
                        "writer open of a schema-13 store")
        expect_rejected(client.call("store.open", {"workspace": ws, "readOnly": True}), "store.open",
                        {"schema_too_new", "schema_not_current"}, "read-only open of a schema-13 store")
        client.call("store.close", {"workspace": ws})
    expect_same_bytes(before, _workspace_bytes(ws), "refusing a newer schema")


@clause("STORE-SCHEMA-002", spec="30 §1.1; 30 §9 #6", capability="store",
        title="a read-only open of an older schema is refused without migrating it")
def test_read_only_older_schema_not_migrated(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.1 (a read-only connection MUST NOT migrate; ``user_version`` ≠ current → "cannot
    be read without upgrading to 12"), §9 #6. The harness rewinds ``user_version`` to 11; a fresh
    process's read-only open must answer ``schema_not_current`` and leave the files
    byte-identical; a writer open afterwards migrates back to 12 and still reads the event."""
    ws, _ = _sqlite_workspace(maka, tmp_path)
    _set_user_version(ws, 11)
    before = _workspace_bytes(ws)
    with maka.fresh() as client:
        expect_rejected(client.call("store.open", {"workspace": ws, "readOnly": True}), "store.open",
                        "schema_not_current", "read-only open of a schema-11 store")
        client.call("store.close", {"workspace": ws})
    expect_same_bytes(before, _workspace_bytes(ws), "a refused read-only open of an older schema")
    with maka.fresh() as client:
        store = Store(client, ws)
        result = store.open()
        if "schemaVersion" in result:
            expect_equal(12, result["schemaVersion"], what="schemaVersion after a writer open migrated the store")
        expect_equal(["user-event-1"], store.event_ids(), what="events after the migration")
        store.close()


# =============================================================================================
# Generic append (spec 30 §2.1, §2.2, §2.8; spec 10 §4.2)
# =============================================================================================


def _open(maka: Any, tmp_path: Path) -> Store:
    store = Store(maka, new_workspace(tmp_path))
    store.open()
    return store


@clause("STORE-APPEND-001", spec="30 §1.2; 30 §2.1; 30 §4", capability="store",
        title="ordinary events are accepted with dense increasing eventSeq and read back canonical, in order")
def test_append_ordinary(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.2 (``event_seq`` = 1 + max of the invocation, dense from 1), §2.1 step 4,
    §4 (reads in ``event_seq`` order). Proves: three ordinary events get created:true and
    eventSeq 1, 2, 3; a second invocation starts again at 1; read_events returns the canonical
    events (spec 30 §0.2, computed by the reference codec) in order."""
    store = _open(maka, tmp_path)
    events = [user_event("e-1", ts=1, text="one"), user_event("e-2", ts=2, text="two"),
              {**user_event("e-3", ts=3, text="three"), "role": "model", "author": "agent"}]
    for seq, event in enumerate(events, start=1):
        expect_created(store.append(event), True, f"append {event['id']}", eventSeq=seq)
    other = ident(2)
    expect_created(store.append(user_event("f-1", identity=other)), True, "first event of another invocation", eventSeq=1)
    expect_equal([canonical(e) for e in events], store.events(), what="events read back")
    store.close()


@clause("STORE-APPEND-002", spec="30 §2.8; 30 §0.2; 30 §9 #22", capability="store",
        title="an exact retry (also a raw form that canonicalises to the stored bytes) is created:false")
def test_append_exact_retry(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.8 (generic exact retry: no-op, ``created=false``), §0.2 consequences and §9 #22
    (presentation noise — ``displayText`` = text, empty ``attachments``/``quotes`` — is stored in
    canonical form, and appending the raw form again is an exact retry). Proves: one stored
    event in canonical form, eventSeq of the retry (when reported) equals the original."""
    store = _open(maka, tmp_path)
    raw = user_event(text="write it")
    raw["content"] = {"kind": "text", "text": "write it", "displayText": "write it", "attachments": [], "quotes": []}
    first = store.append(raw)
    expect_created(first, True, "first append", eventSeq=1)
    again = store.append(raw)
    expect_created(again, False, "raw retry")
    if "eventSeq" in again:
        expect_equal(1, again["eventSeq"], what="eventSeq of the exact retry")
    expect_created(store.append(user_event()), False, "canonical retry")
    expect_equal([canonical(user_event())], store.events(), what="stored events (one, canonical)")
    store.close()


@clause("STORE-APPEND-003", spec="30 §2.1 step 3; 30 §2.8", capability="store",
        title="same event id with different bytes is refused (event_identity_conflict); ledger unchanged")
def test_append_conflicting_retry(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.1 insert step 3 ("RuntimeEvent identity conflict"), §2.8 generic conflicting
    retry. Proves: the code and that the stored event is still the first one."""
    store = _open(maka, tmp_path)
    store.append(user_event())
    reply = maka.call("store.append", {"workspace": store.ws, "event": user_event(text="something else")})
    expect_rejected(reply, "store.append", "event_identity_conflict", "same id, other text")
    expect_equal([canonical(user_event())], store.events(), what="events after the refused conflict")
    store.close()


#: Stable clause ids of the generic-append vectors (spec 10 §4.2), one per vector.
LANE_CLAUSES = {
    "lanes/generic-ordinary": "STORE-LANE-001",
    "lanes/generic-call": "STORE-LANE-002",
    "lanes/generic-bound-call": "STORE-LANE-003",
    "lanes/generic-dispatch": "STORE-LANE-004",
    "lanes/generic-bound-response": "STORE-LANE-005",
    "lanes/generic-reconcile": "STORE-LANE-006",
    "lanes/generic-decision": "STORE-LANE-007",
    "lanes/generic-lane-conflict": "STORE-LANE-008",
    "lanes/generic-response-end-invocation": "STORE-LANE-009",
}


def _lane_params() -> list[Any]:
    out = []
    vectors = {v.id: v for v in iter_vectors(group="lanes") if v.operation == "generic_append"}
    for vector_id, clause_id in LANE_CLAUSES.items():
        vector = vectors[vector_id]
        mark = clause(clause_id, spec=f"30 §2.2; {vector.spec}", capability="store",
                      title=f"store.append of the vector {vector_id}: {vector.description}")
        out.append(pytest.param(vector, id=vector_id, marks=mark))
    return out


@pytest.mark.parametrize("vector", _lane_params())
def test_append_lane_vector(vector: Any, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.2 (G4–G6: generic appends MUST refuse dispatches, operation-bound responses,
    recovery facts and lane smuggling; unbound and bound calls and ordinary events pass),
    spec 10 §4.2 codes as in the vector. Each vector's single event is appended to an empty
    store: accepted ones must be created with eventSeq 1; refused ones must carry the vector's
    code (lane conflicts: see the module docstring) and leave the run empty."""
    store = _open(maka, tmp_path)
    event = dict(vector.input["event"])
    identity = {k: event[k] for k in ("sessionId", "runId")}
    check = vector.expect["appendCheck"]
    reply = maka.call("store.append", {"workspace": store.ws, "event": event})
    if check["ok"]:
        expect_created(expect_ok(reply, "store.append"), True, vector.id, eventSeq=1)
        expect_equal([event["id"]], store.event_ids(identity), what="events after the append")
    else:
        codes = LANE_CONFLICT_CODES if check["code"] == "semantic_lane_conflict" else {check["code"]}
        expect_rejected(reply, "store.append", codes, vector.id)
        expect_equal([], store.event_ids(identity), what="events after the refused append")
    store.close()


@clause("STORE-APPEND-004", spec="30 §2.8; 30 §9 #10; 10 §7.9 #100", capability="store",
        title="a second function_call for the same provider call with a new id is refused (duplicate_call)")
def test_append_duplicate_call(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.8 (new id re-using a provider call → ``duplicate_call``), §9 #10. Proves: the
    code and that the ledger keeps only the first call."""
    store = _open(maka, tmp_path)
    store.append(call_event())
    reply = maka.call("store.append", {"workspace": store.ws, "event": call_event("call-event-duplicate")})
    expect_rejected(reply, "store.append", "duplicate_call", "second call for provider-call-1")
    nothing_written(store, ["call-event-1"], "duplicate call", op=None)
    store.close()


@pytest.mark.parametrize("axis", [
    pytest.param("runId", marks=clause("STORE-APPEND-005", spec="30 §0.1; 30 §2.1; 30 §9 #11", capability="store",
                                        title="the same invocation in another run is refused (invocation_identity_conflict)")),
    pytest.param("turnId", marks=clause("STORE-APPEND-006", spec="30 §0.1; 30 §2.1; 30 §9 #11", capability="store",
                                         title="the same invocation in another turn is refused (invocation_identity_conflict)")),
    pytest.param("sessionId", marks=clause("STORE-APPEND-007", spec="30 §0.1; 30 §2.1; 30 §9 #11", capability="store",
                                            title="the same invocation in another session is refused (invocation_identity_conflict)")),
])
def test_append_invocation_identity_conflict(axis: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §0.1 (one invocationId maps to exactly one (session, run, turn)), §2.1 insert step 1
    ("RuntimeEvent invocation identity conflict"), §9 #11 / spec 10 §7.9 #101. Proves: the code
    for each axis, and that neither run gains an event."""
    store = _open(maka, tmp_path)
    store.append(user_event())
    other = dict(IDENT, **{axis: f"other-{axis}"})
    reply = maka.call("store.append", {"workspace": store.ws, "event": user_event("user-event-2", ts=2, identity=other)})
    expect_rejected(reply, "store.append", "invocation_identity_conflict", f"same invocation, other {axis}")
    nothing_written(store, ["user-event-1"], "invocation identity conflict", op=None)
    if axis != "turnId":  # read_events names a (session, run); another turn shares run-1
        expect_equal([], store.event_ids(other), what="events of the other identity")
    store.close()


@clause("STORE-APPEND-008", spec="30 §0.1; 30 §2.1", capability="store",
        title="another invocation in the same (session, run) is refused (run_identity_conflict)")
def test_append_run_identity_conflict(maka: Any, tmp_path: Path) -> None:
    """spec 30 §0.1 (one (sessionId, runId) maps to exactly one (invocationId, turnId)), §2.1 insert
    step 1 ("RuntimeEvent run identity conflict"). Proves: the code and an unchanged run."""
    store = _open(maka, tmp_path)
    store.append(user_event())
    other = dict(IDENT, invocationId="invocation-other")
    reply = maka.call("store.append", {"workspace": store.ws, "event": user_event("user-event-2", ts=2, identity=other)})
    expect_rejected(reply, "store.append", "run_identity_conflict", "same run, other invocation")
    nothing_written(store, ["user-event-1"], "run identity conflict", op=None)
    store.close()


@clause("STORE-APPEND-009", spec="30 §9 #15; 10 §4.3", capability="store",
        title="an orphan unbound function_response is refused (orphan_response); nothing written")
def test_append_orphan_response(maka: Any, tmp_path: Path) -> None:
    """spec 30 §9 #15 (orphan unbound response → rejection ``orphan_response``), spec 10 §4.3."""
    store = _open(maka, tmp_path)
    store.append(user_event())
    reply = maka.call("store.append", {"workspace": store.ws, "event": response_event(op=None)})
    expect_rejected(reply, "store.append", "orphan_response", "unbound response without a call")
    nothing_written(store, ["user-event-1"], "orphan response", op=None)
    store.close()


@clause("STORE-APPEND-010", spec="30 §9 #12; 10 §7.9 #102", capability="store",
        title="after T1, an unbound response on the generic path is refused (identity_conflict)")
def test_append_unbound_response_after_t1(maka: Any, tmp_path: Path) -> None:
    """spec 30 §9 #12 / spec 10 §7.9 #102: once an operation id is bound, a response without its
    refs is an ``identity_conflict``; the operation stays ``prepared``."""
    store = _open(maka, tmp_path)
    store.t1()
    reply = maka.call("store.append", {"workspace": store.ws, "event": response_event(op=None)})
    expect_rejected(reply, "store.append", "identity_conflict", "unbound response after T1")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "unbound response after T1", state="prepared")
    store.close()


@clause("STORE-APPEND-011", spec="30 §2.1 step 4; 30 §2.2; 30 §9 #18; 30 §10 #23", capability="store",
        title="a sealed run refuses plain and tool-bearing stragglers (run_sealed); the terminal's exact retry succeeds")
def test_append_run_sealed(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.1 insert step 4 (RunSealedError), §2.2 (seal checked before tool semantics, exact
    retries bypass it), §9 #18, §10 #23. Proves: ``run_sealed`` for a text straggler and for a
    function_call straggler; created:false for the terminal's exact retry; the ledger ends at
    the terminal."""
    store = _open(maka, tmp_path)
    store.append(user_event())
    expect_created(store.append(terminal_event()), True, "terminal", eventSeq=2)
    for label, event in (("plain straggler", user_event("late-1", ts=10, text="late")),
                         ("tool-bearing straggler", call_event("late-call", ts=10))):
        reply = maka.call("store.append", {"workspace": store.ws, "event": event})
        expect_rejected(reply, "store.append", "run_sealed", label)
    expect_created(store.append(terminal_event()), False, "exact retry of the terminal")
    expect_equal(["user-event-1", "terminal-event-1"], store.event_ids(), what="events of the sealed run")
    store.close()


# =============================================================================================
# T1 (spec 30 §2.3)
# =============================================================================================


@clause("STORE-T1-001", spec="30 §2.3; 30 §3.1; 30 §9 #28", capability="store",
        title="T1 is created with the dispatch's seq; call+dispatch stored; operation prepared v1; journal points at the dispatch")
def test_t1_created(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.3 (output seq = the dispatch's ``event_seq``; journal ``<op>_prepared`` →
    dispatch), §3.1 (``prepared`` [1]), §9 #28. Proves the result, the stored events, every
    field of the operation record, the journal row and the unsettled list."""
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
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
    store = _open(maka, tmp_path)
    store.t1()
    expect_created(store.t2(response=response_event(result="boom", is_error=True)), True, "error T2", runtimeEventSeq=3)
    expect_equal("outcome_committed", (store.operation("operation-1") or {}).get("currentState"), what="state")
    store.close()


@clause("STORE-T2-010", spec="30 §2.4 step 7; 30 §2.5; 30 §9 #50; 30 §10 #30", capability="store",
        title="parked is final: T2 after a parked decision is refused (compare_and_set_failed); nothing written")
def test_t2_after_park(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.4 step 7 (compare-and-set from ``prepared`` only), §2.5 ("parked is terminal in
    v1"), §9 #50, §10 #30. Proves the code and that state and events are those of the park."""
    store = _open(maka, tmp_path)
    store.t1()
    store.bundle(parked=True)
    before = store.event_ids()
    reply = maka.call("store.commit_tool_outcome", t2_params(store.ws))
    expect_rejected(reply, "store.commit_tool_outcome", "compare_and_set_failed", "T2 after a park")
    nothing_written(store, before, "T2 after a park", state="recovery_parked")
    store.close()


# =============================================================================================
# Recovery bundle (spec 30 §2.5)
# =============================================================================================


@clause("STORE-BUNDLE-001", spec="30 §2.5; 30 §3.1; 30 §9 #41", capability="store",
        title="a completed bundle settles the operation: recovery_completed v4, result = outcome, 4 journal rows; retry is a no-op")
def test_bundle_completed(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 (atomic reconcile + outcome + decision), §3.1 (versions 2, 3, 4; journal
    ``reconcile_observed, outcome_committed, recovery_completed``), §9 #41, §2.8 (exact retry
    no-op). Proves the stored events, the record, the journal (derived ids, runtime event ids)
    and that an exact retry changes nothing."""
    store = _open(maka, tmp_path)
    store.t1()
    store.bundle()
    ids = ["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1", "decision-event-1"]
    expect_equal(ids, store.event_ids(), what="events after the completed bundle")
    projection = store.project()
    record = store.operation("operation-1", projection) or {}
    expect_equal({"currentState": "recovery_completed", "version": 4, "resultEventId": "outcome-event-1"},
                 {k: record.get(k) for k in ("currentState", "version", "resultEventId")}, what="operation")
    expected_journal = [("operation-1_prepared", "prepared", "dispatch-event-1"),
                        ("reconcile-event-1_journal", "reconcile_observed", "reconcile-event-1"),
                        ("operation-1_outcome", "outcome_committed", "outcome-event-1"),
                        ("decision-event-1_journal", "recovery_completed", "decision-event-1")]
    journal = [(r.get("journalEventId"), r.get("state"), r.get("runtimeEventId"))
               for r in store.journal("operation-1", projection)]
    expect_equal(expected_journal, journal, what="journal after the completed bundle")
    expect_equal([], projection.get("unsettledOperations"), what="unsettled operations")
    store.bundle()
    expect_equal(store.tool_projection(projection), store.tool_projection(), what="projection after the exact retry")
    expect_equal(ids, store.event_ids(), what="events after the exact retry")
    store.close()


@clause("STORE-BUNDLE-002", spec="30 §2.5; 30 §2.8; 30 §3.1; 30 §9 #43", capability="store",
        title="a parked bundle twice is one park (recovery_parked v3); a later completed bundle is refused (duplicate_event_id)")
def test_bundle_parked_final(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 ("parked is terminal in v1: only its exact retry succeeds"), §2.8 (parked then
    completed reusing the reconcile id with another observation → ``duplicate_event_id``),
    §3.1, §9 #43."""
    store = _open(maka, tmp_path)
    store.t1()
    store.bundle(parked=True)
    store.bundle(parked=True)
    projection = store.project()
    record = store.operation("operation-1", projection) or {}
    expect_equal({"currentState": "recovery_parked", "version": 3},
                 {k: record.get(k) for k in ("currentState", "version")}, what="operation after the park")
    if record.get("resultEventId") is not None:
        raise ClauseMismatch("a parked operation has a result event", evidence={"record": dict(record)})
    expect_equal(["prepared", "reconcile_observed", "recovery_parked"],
                 [r.get("state") for r in store.journal("operation-1", projection)], what="journal after the park")
    before = store.event_ids()
    reply = maka.call("store.commit_recovery_bundle", bundle_params(store.ws))
    expect_rejected(reply, "store.commit_recovery_bundle", "duplicate_event_id", "completed bundle after a park")
    nothing_written(store, before, "completed bundle after a park", state="recovery_parked")
    store.close()


def _bundle_case(case: str, ws: str) -> tuple[dict[str, Any], str]:
    if case == "outcome_not_successful":
        return bundle_params(ws, outcome=response_event(result="boom", is_error=True)), case
    if case == "evidence_order_conflict":
        decision = decision_event(evidence=["call-event-1", "dispatch-event-1", "reconcile-event-1"])
        return bundle_params(ws, decision=decision), case
    if case == "reconcile_decision_conflict":
        return bundle_params(ws, parked=True, reconcile=reconcile_event(observation="matches_prior_state"),
                             decision=decision_event(disposition="parked", reason="reconcile_diverged", ts=3)), case
    if case == "outcome_required":
        params = bundle_params(ws)
        del params["outcomeEvent"]
        return params, case
    if case == "outcome_for_parked":
        return bundle_params(ws, parked=True, outcome=response_event()), case
    if case == "outcome_reference_conflict":
        decision = decision_event(outcome_id="outcome-event-9",
                                  evidence=["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1"])
        return bundle_params(ws, decision=decision), case
    if case == "operation_identity_conflict":
        reconcile = reconcile_event()
        reconcile["actions"]["toolRecovery"]["payload"]["operationId"] = "operation-9"
        return bundle_params(ws, reconcile=reconcile), case
    if case == "reconcile_fact_invalid":
        return bundle_params(ws, reconcile=user_event("reconcile-event-1", ts=2)), case
    if case == "unknown_tool_operation":
        return bundle_params(ws, op="operation-9"), case
    raise AssertionError(case)


_BUNDLE_CASES = [
    ("STORE-BUNDLE-003", "outcome_not_successful", "30 §2.5; 30 §9 #47; 10 §5.3",
     "a completed decision with an isError outcome is refused (outcome_not_successful)"),
    ("STORE-BUNDLE-004", "evidence_order_conflict", "30 §2.5; 30 §9 #48; 10 §5.3",
     "evidence missing the outcome id is refused (evidence_order_conflict)"),
    ("STORE-BUNDLE-005", "reconcile_decision_conflict", "30 §2.5; 30 §9 #49; 10 §5.3",
     "a park whose reason does not match the observation is refused (reconcile_decision_conflict)"),
    ("STORE-BUNDLE-006", "outcome_required", "30 §2.5; 10 §5.3",
     "a completed decision without an outcome is refused (outcome_required)"),
    ("STORE-BUNDLE-007", "outcome_for_parked", "30 §2.5; 10 §5.3",
     "a parked decision with an outcome is refused (outcome_for_parked)"),
    ("STORE-BUNDLE-008", "outcome_reference_conflict", "30 §2.5; 10 §5.3",
     "a decision naming another outcome id is refused (outcome_reference_conflict)"),
    ("STORE-BUNDLE-009", "operation_identity_conflict", "30 §2.5; 10 §5.3",
     "a reconcile fact naming another operation is refused (operation_identity_conflict)"),
    ("STORE-BUNDLE-010", "reconcile_fact_invalid", "30 §2.5; 10 §5.3",
     "a bundle whose reconcile event is not a reconcile fact is refused (reconcile_fact_invalid)"),
    ("STORE-BUNDLE-011", "unknown_tool_operation", "30 §2.5 step 1",
     "a bundle for an operation that was never prepared is refused (unknown_tool_operation)"),
]


@pytest.mark.parametrize("case", [
    pytest.param(case, id=case, marks=clause(cid, spec=spec, capability="store", title=title))
    for cid, case, spec, title in _BUNDLE_CASES
])
def test_bundle_invalid(case: str, maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 step 2 (bundle validation codes, spec 10 §5.3) and step 1; each invalid bundle
    is refused with its code and rolls back entirely: events [call, dispatch], state
    ``prepared``, journal [prepared]."""
    store = _open(maka, tmp_path)
    store.t1()
    params, code = _bundle_case(case, store.ws)
    reply = maka.call("store.commit_recovery_bundle", params)
    expect_rejected(reply, "store.commit_recovery_bundle", code, case)
    nothing_written(store, ["call-event-1", "dispatch-event-1"], case, state="prepared")
    expect_equal(["prepared"], [r.get("state") for r in store.journal("operation-1")], what="journal")
    store.close()


@clause("STORE-BUNDLE-012", spec="30 §2.5; 30 §9 #46; 30 §10 #30", capability="store",
        title="a bundle on a replay_safe operation is refused (recovery_mode_unsupported)")
def test_bundle_mode_unsupported(maka: Any, tmp_path: Path) -> None:
    """spec 30 §2.5 step 2 (``recovery_mode_unsupported``: only ``reconcile`` operations can be
    recovered), §9 #46, §10 #30."""
    store = _open(maka, tmp_path)
    store.t1(dispatch=dispatch_event(mode="replay_safe"), mode="replay_safe")
    reply = maka.call("store.commit_recovery_bundle", bundle_params(store.ws))
    expect_rejected(reply, "store.commit_recovery_bundle", "recovery_mode_unsupported", "bundle on replay_safe")
    nothing_written(store, ["call-event-1", "dispatch-event-1"], "bundle on replay_safe", state="prepared")
    store.close()
