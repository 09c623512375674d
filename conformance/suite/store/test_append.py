"""Generic appends through the wire protocol (spec 30 §1.2, §2.1, §2.2, §2.8; spec 10 §4.2, §4.3):
the shared insert primitive, the generic append lanes and generic exact / conflicting retries —
STORE-APPEND-*, STORE-LANE-*.

Why a module of its own: these clauses exercise ``store.append`` only (the generic path of
§2.2 over the insert primitive of §2.1); the tool writers (§2.3 T1, §2.4 T2) are in
``test_store_tool_writes.py`` and the recovery bundle (§2.5) in ``test_store_bundle.py``.
Every clause runs in its own workspace (pytest's ``tmp_path``) on the shared protocol session.
Fixture events are spec 30 Appendix A literally.

What a rejection clause proves: the answer is ``ok: false`` with the expected code *and*
nothing was written (the run's events and the operation's projection state are unchanged).
Expected codes: scanner codes from spec 10 (§4.3) and the generic-append vectors
(``conformance/vectors/lanes.json``); for the spec's message-only "plain errors" the code
``docs/protocol-codes.md`` assigns. A lane conflict on the generic path is
``semantic_lane_conflict`` (spec 10 §4.2, the vectors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import clause, expect_equal, expect_ok
from conformance.suite._store_support import (
    IDENT, LANE_CONFLICT_CODES, call_event, canonical, expect_created, expect_rejected, ident, nothing_written,
    open_store, response_event, terminal_event, user_event,
)
from conformance.vectors import iter_vectors

# =============================================================================================
# Generic append (spec 30 §2.1, §2.2, §2.8; spec 10 §4.2)
# =============================================================================================


@clause("STORE-APPEND-001", spec="30 §1.2; 30 §2.1; 30 §4", capability="store",
        title="ordinary events are accepted with dense increasing eventSeq and read back canonical, in order")
def test_append_ordinary(maka: Any, tmp_path: Path) -> None:
    """spec 30 §1.2 (``event_seq`` = 1 + max of the invocation, dense from 1), §2.1 step 4,
    §4 (reads in ``event_seq`` order). Proves: three ordinary events get created:true and
    eventSeq 1, 2, 3; a second invocation starts again at 1; read_events returns the canonical
    events (spec 30 §0.2, computed by the reference codec) in order."""
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
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
    store = open_store(maka, tmp_path)
    store.append(user_event())
    expect_created(store.append(terminal_event()), True, "terminal", eventSeq=2)
    for label, event in (("plain straggler", user_event("late-1", ts=10, text="late")),
                         ("tool-bearing straggler", call_event("late-call", ts=10))):
        reply = maka.call("store.append", {"workspace": store.ws, "event": event})
        expect_rejected(reply, "store.append", "run_sealed", label)
    expect_created(store.append(terminal_event()), False, "exact retry of the terminal")
    expect_equal(["user-event-1", "terminal-event-1"], store.event_ids(), what="events of the sealed run")
    store.close()
