"""Generic append paths: G1–G8, identity, seal, steering, ordinals, canonical form, terminal
barrier (spec 30 §2.1–§2.2, §9 items 9–27)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_ref._errors import RuntimeEventNotSerializableError, RuntimeEventSchemaError
from maka_ref._store import (
    RunSealedError,
    RuntimeStore,
    StoreError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
)
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import ids, open_store, raw, raw_insert, t1_input, user_event

LOSSLESS = (RuntimeEventSchemaError, RuntimeEventNotSerializableError)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = open_store(tmp_path)
    yield s
    s.close()


def _events(store: RuntimeStore, session: str = "session-1", run: str = "run-1") -> list[str]:
    return ids(store.read_run_events(session, run))


def test_item9_reserved_facts_refused_on_generic_path(store: RuntimeStore) -> None:
    """§9 item 9, G5/G6."""
    with pytest.raises(StoreError, match="^Tool recovery facts require the atomic recovery bundle writer$"):
        store.append(fam.w_reconcile())
    with pytest.raises(StoreError, match="atomic recovery bundle writer") as info:
        store.import_batch("session-1", "run-1", [fam.w_call(), fam.w_reconcile()])
    assert info.value.code == "reserved_recovery_fact"
    with pytest.raises(StoreError, match="^Durable tool facts require the atomic tool boundary writer$"):
        store.append(fam.w_dispatch())
    with pytest.raises(StoreError, match="atomic tool boundary writer") as info:
        store.append(fam.w_outcome())  # refs.operationId: an operation-bound outcome
    assert info.value.code == "reserved_tool_boundary_fact"
    assert _events(store) == []


def test_g1_g2_g4_g7(store: RuntimeStore) -> None:
    """§2.2 G1, G2, G4, G7 messages; nothing written."""
    with pytest.raises(StoreError, match="^Workspace facts require the atomic workspace version authority writer$"):
        store.append(user_event(actions={"workspaceFact": {}}))
    with pytest.raises(StoreError, match="^RuntimeEvent targets the reserved workspace authority stream$"):
        store.append(user_event(sessionId="maka_workspace_authority"))
    lane = fam.w_outcome_unbound()
    lane["actions"] = {"endInvocation": True}
    with pytest.raises(StoreError, match="^RuntimeEvent outcome-event-1 violates its semantic lane$"):
        store.append(lane)
    partial_call = fam.w_call()
    partial_call["partial"] = True
    with pytest.raises(StoreError, match="violates its semantic lane"):
        store.append(partial_call)
    with pytest.raises(StoreError, match="^RuntimeEvent store identity does not match event user-event-1$") as info:
        store.import_batch("session-1", "run-2", [user_event()])
    assert info.value.code == "store_identity_mismatch"
    with pytest.raises(StoreError, match="store identity does not match"):
        store.import_event("session-2", "run-1", user_event())
    assert _events(store) == []


def test_g3_continuation_start_reserved(monkeypatch: pytest.MonkeyPatch) -> None:
    """§2.2 G3 (checked on the canonical event, after G1/G2)."""
    from maka_ref._codec.frozen import freeze
    from maka_ref._events.encode import EncodedRuntimeEvent
    from maka_ref._store.writers import generic

    start = freeze(user_event(actions={"continuationStart": {}}))
    monkeypatch.setattr(generic, "canonicalize", lambda raw: EncodedRuntimeEvent(start, "{}"))
    with pytest.raises(StoreError, match="^Continuation start facts require the continuation authority writer$"):
        generic.pre_validate_generic(start)


def test_item10_duplicate_call_rejected(store: RuntimeStore) -> None:
    """§9 item 10."""
    store.append(fam.w_call())
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.append(fam.w_call(id="call-event-2"))
    assert (info.value.code, info.value.event_id) == ("duplicate_call", "call-event-2")
    assert str(info.value) == "Tool ledger transition rejected: duplicate_call at call-event-2"
    assert _events(store) == ["call-event-1"]


@pytest.mark.parametrize("field", ["runId", "turnId", "sessionId"])
def test_item11_invocation_identity_conflict(store: RuntimeStore, field: str) -> None:
    """§9 item 11."""
    store.append(user_event())
    other = user_event("user-event-2", **{field: "other-" + field})
    with pytest.raises(StoreError, match="^RuntimeEvent invocation identity conflict for invocation-1$") as info:
        store.append(other)
    assert info.value.code == "invocation_identity_conflict"
    assert _events(store) == ["user-event-1"]


def test_run_identity_conflict(store: RuntimeStore) -> None:
    """§0.1: one (session, run) maps to one invocation."""
    store.append(user_event())
    with pytest.raises(StoreError, match="^RuntimeEvent run identity conflict for run-1$"):
        store.append(user_event("user-event-2", invocationId="invocation-2"))


def test_item12_unbound_response_after_t1(store: RuntimeStore) -> None:
    """§9 item 12."""
    store.commit_tool_prepared(t1_input())
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.append(fam.w_outcome_unbound())
    assert info.value.code == "identity_conflict"
    assert store.read_tool_operation("operation-1").current_state == "prepared"


def test_item13_t1_after_synthetic_response(store: RuntimeStore) -> None:
    """§9 item 13."""
    store.append(fam.w_call())
    store.append(fam.w_outcome_unbound())
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.commit_tool_prepared(t1_input())
    assert info.value.code == "event_order_conflict"
    assert store.read_tool_operation("operation-1") is None
    assert _events(store) == ["call-event-1", "outcome-event-1"]


def test_item14_batch_is_one_transition(store: RuntimeStore) -> None:
    """§9 item 14: [response, call] → orphan_response, nothing written."""
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.import_batch("session-1", "run-1", [user_event(), fam.w_outcome_unbound(), fam.w_call()])
    assert info.value.code == "orphan_response"
    assert _events(store) == []


def test_batch_import_returns_created_flags(store: RuntimeStore) -> None:
    store.append(user_event())
    created = store.import_batch("session-1", "run-1", [user_event(), fam.w_call(), fam.w_outcome_unbound()])
    assert created == (False, True, True)
    assert _events(store) == ["user-event-1", "call-event-1", "outcome-event-1"]


def test_item15_orphan_response(store: RuntimeStore) -> None:
    """§9 item 15."""
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.append(fam.w_outcome_unbound())
    assert (info.value.code, info.value.event_id) == ("orphan_response", "outcome-event-1")


def test_item16_corruption_in_another_session_fail_stops_tool_writes(tmp_path: Path) -> None:
    """§9 item 16: corruption, not rejection; ordinary appends still allowed."""
    open_store(tmp_path).close()
    conn = raw(tmp_path)
    orphan = fam.w_outcome_unbound(id="orphan-1")
    orphan.update(sessionId="session-2", invocationId="invocation-2", runId="run-2", turnId="turn-2")
    raw_insert(conn, orphan, 1)
    conn.close()
    store = open_store(tmp_path)
    with pytest.raises(ToolLedgerCorruptionError) as info:
        store.append(fam.w_call())
    assert not isinstance(info.value, ToolLedgerRejectionError)
    assert not isinstance(ToolLedgerRejectionError("x", "y"), ToolLedgerCorruptionError)
    assert (info.value.code, info.value.event_id) == ("orphan_response", "orphan-1")
    assert str(info.value) == "Tool ledger is corrupt: orphan_response at orphan-1"
    assert store.append(user_event()).created  # not gated
    store.close()


def test_item17_cross_connection_corruption_detected_via_data_version(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 17, §10 item 24."""
    store.commit_tool_prepared(t1_input())
    conn = raw(tmp_path)
    raw_insert(conn, fam.w_call(id="call-event-dup"), 3)
    conn.close()
    call2 = fam.w_call(id="call-event-s2")
    call2.update(sessionId="session-2", invocationId="invocation-2", runId="run-2", turnId="turn-2")
    with pytest.raises(ToolLedgerCorruptionError) as info:
        store.append(call2)
    assert info.value.code == "duplicate_call"
    assert _events(store, "session-2", "run-2") == []


def _terminal(event_id: str = "terminal-1", **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"ts": 5, "status": "aborted", "actions": {"endInvocation": True}}
    values.update(fields)
    return fam.event(event_id, **values)


def test_item18_sealed_run(store: RuntimeStore) -> None:
    """§9 item 18, §10 item 23: seal before tool semantics; exact retry of the terminal."""
    store.append(user_event())
    store.append(_terminal())
    with pytest.raises(RunSealedError, match="^RuntimeEvent run run-1 is sealed by its terminal fact$") as info:
        store.append(user_event("user-event-2"))
    assert info.value.run_id == "run-1" and info.value.code == "run_sealed"
    with pytest.raises(RunSealedError):
        store.append(fam.w_call())
    assert store.append(_terminal()).created is False
    assert store.append(user_event()).created is False  # exact retries bypass the seal
    assert _events(store) == ["user-event-1", "terminal-1"]


def test_item19_terminal_barrier_requires_tail(tmp_path: Path) -> None:
    """§9 item 19."""
    store = open_store(tmp_path)
    store.append(user_event())
    assert store.ensure_terminal_durable(_terminal()).created is True
    assert store.ensure_terminal_durable(_terminal()).created is False
    store.close()
    conn = raw(tmp_path)
    raw_insert(conn, user_event("suffix-1"), 3)
    conn.close()
    store = open_store(tmp_path)
    with pytest.raises(StoreError, match="^Terminal RuntimeEvent must be the immutable ledger tail$"):
        store.ensure_terminal_durable(_terminal())
    with pytest.raises(RunSealedError, match="sealed by its terminal fact"):
        store.append(user_event("user-event-3"))
    store.close()


def test_terminal_barrier_rules(store: RuntimeStore) -> None:
    """§2.2 barrier: final terminal only; identical record; one terminal per run."""
    with pytest.raises(StoreError, match="^Only a final terminal RuntimeEvent can cross the terminal durability"):
        store.ensure_terminal_durable(user_event())
    store.append(user_event())
    store.ensure_terminal_durable(_terminal())
    with pytest.raises(StoreError, match="^RuntimeEvent terminal-1 does not match the durable ledger record$"):
        store.ensure_terminal_durable(_terminal(ts=6))
    with pytest.raises(StoreError, match="^Run run-1 already has terminal RuntimeEvent terminal-1$"):
        store.ensure_terminal_durable(_terminal("terminal-2"))


def test_item20_steering_message_identity(store: RuntimeStore) -> None:
    """§9 item 20."""
    steering = fam.event(
        "steering-event-1", role="user", author="user",
        content={"kind": "text", "text": "steer", "steering": True}, refs={"providerEventId": "message-steering"},
    )
    store.append(steering)
    store.append(steering)
    assert _events(store) == ["steering-event-1"]
    proof = store.read_steering_message_proof("session-1", "message-steering")
    assert proof == store.read_run_events("session-1", "run-1")[0]
    conflict = fam.event(
        "steering-event-conflict", invocationId="invocation-2", runId="run-2", turnId="turn-2", role="user",
        author="user", content={"kind": "text", "text": "different", "steering": True},
        refs={"providerEventId": "message-steering"},
    )
    with pytest.raises(StoreError, match="^Immutable steering message identity conflict: message-steering$"):
        store.append(conflict)
    assert _events(store, "session-1", "run-2") == []


def test_item21_session_ordinals_follow_commit_order(tmp_path: Path) -> None:
    """§9 item 21: ordinals A=1, B=2 (commit order, not ts); retries consume none."""
    store = open_store(tmp_path)
    a = user_event("event-a", ts=20)
    b = user_event("event-b", ts=10, invocationId="invocation-2", runId="run-2", turnId="turn-2")
    store.append(a)
    store.append(b)
    store.append(a)
    assert store.session_ordinals("session-1") == {"event-a": 1, "event-b": 2}
    assert ids(store.read_session_events_by_ordinal("session-1")) == ["event-a", "event-b"]
    assert ids(store.read_session_events("session-1")) == ["event-b", "event-a"]  # by ts
    store.close()
    store = open_store(tmp_path)
    assert store.session_ordinals("session-1") == {"event-a": 1, "event-b": 2}
    store.close()


GOLDEN_CANONICAL = (
    '{"author":"user","content":{"kind":"text","text":"write it"},"id":"user-event-1",'
    '"invocationId":"invocation-1","partial":false,"role":"user","runId":"run-1","sessionId":"session-1",'
    '"ts":1,"turnId":"turn-1"}'
)


def test_item22_presentation_noise_is_an_exact_retry(store: RuntimeStore, tmp_path: Path) -> None:
    """§9 item 22, §0.2: displayText = text, empty attachments and quotes are removable noise."""
    noisy = user_event(content={"kind": "text", "text": "write it", "displayText": "write it", "attachments": [],
                                "quotes": []})
    assert store.append(noisy).created is True
    assert store.append(noisy).created is False
    assert store.append(user_event()).created is False
    conn = raw(tmp_path)
    rows = conn.execute("SELECT payload_json, event_kind, committed_at FROM runtime_events").fetchall()
    conn.close()
    assert rows == [(GOLDEN_CANONICAL, "text", 1)]


def test_item22_golden_with_text_provider_options(store: RuntimeStore, tmp_path: Path) -> None:
    """§0.2 golden vector: the raw event carries providerOptions {a:1} on text content."""
    noisy = user_event(content={"kind": "text", "text": "write it", "displayText": "write it", "attachments": [],
                                "quotes": [], "providerOptions": {"a": 1}})
    store.append(noisy)
    conn = raw(tmp_path)
    rows = conn.execute("SELECT payload_json FROM runtime_events").fetchall()
    conn.close()
    assert rows == [(GOLDEN_CANONICAL,)]


def test_item23_function_call_without_args(store: RuntimeStore) -> None:
    """§9 item 23: args absent (JS undefined) → refused before any row."""
    call = fam.w_call()
    del call["content"]["args"]
    with pytest.raises(LOSSLESS):
        store.append(call)
    call = fam.w_call()
    call["content"]["args"] = object()
    with pytest.raises(LOSSLESS):
        store.append(call)
    assert _events(store) == []


def test_item24_response_result_not_lossless(store: RuntimeStore) -> None:
    """§9 item 24: a nested value JSON cannot carry (Python's -0.0 / NaN stand in for undefined)."""
    store.append(fam.w_call())
    for bad in ({"value": -0.0}, {"value": float("nan")}):
        response = fam.w_outcome_unbound()
        response["content"]["result"] = bad
        with pytest.raises(LOSSLESS):
            store.append(response)
    assert _events(store) == ["call-event-1"]


class _LyingStr(str):
    """A string whose serialisation would differ from its value (the analogue of a
    self-rewriting ``toJSON`` hook): the codec must refuse it, never store either form."""

    def __str__(self) -> str:
        return "forged"


class _ForgedIter(list):
    """A list that iterates differently from what it stores."""

    def __iter__(self):  # type: ignore[override]
        return iter(["forged"])


def test_item25_self_rewriting_provider_options(store: RuntimeStore) -> None:
    """§9 item 25: refused before any row; a container subclass is stored by its real contents."""
    call = fam.w_call()
    call["content"]["providerOptions"] = {"a": _LyingStr("x")}
    with pytest.raises(LOSSLESS):
        store.append(call)
    assert _events(store) == []
    call = fam.w_call()
    call["content"]["providerOptions"] = {"a": _ForgedIter([1])}
    store.append(call)
    assert store.read_run_events("session-1", "run-1")[0]["content"]["providerOptions"] == {"a": [1]}


def test_item27_terminal_canonical_via_append_and_barrier(store: RuntimeStore) -> None:
    """§9 item 27."""
    terminal = fam.event(
        "terminal-text", ts=3, role="model", author="agent", status="completed",
        content={"kind": "text", "text": "done", "displayText": "done", "attachments": [], "quotes": []},
    )
    store.append(terminal)
    assert store.ensure_terminal_durable(terminal).created is False
    events = store.read_run_events("session-1", "run-1")
    assert ids(events) == ["terminal-text"]
    assert events[0]["content"] == {"kind": "text", "text": "done"}


def test_event_identity_conflict_for_ordinary_event(store: RuntimeStore) -> None:
    """§2.8: same id, different bytes (ordinary) → identity conflict; tool-bearing → duplicate_event_id."""
    store.append(user_event())
    with pytest.raises(StoreError, match="^RuntimeEvent identity conflict for user-event-1$"):
        store.append(user_event(text="changed"))
    store.append(fam.w_call())
    changed = fam.w_call()
    changed["content"]["args"] = {"path": "other"}
    with pytest.raises(ToolLedgerRejectionError) as info:
        store.append(changed)
    assert info.value.code == "duplicate_event_id"


def test_event_kind_and_committed_at_columns(store: RuntimeStore, tmp_path: Path) -> None:
    """§1.2 event_kind; §10 item 22 generic committed_at = ts."""
    store.append(user_event(ts=7))
    store.append(fam.w_call())
    store.append(fam.event("end-1", ts=9, actions={"endInvocation": True}))
    conn = raw(tmp_path)
    rows = conn.execute("SELECT event_id, event_seq, event_kind, committed_at FROM runtime_events ORDER BY event_seq")
    assert rows.fetchall() == [
        ("user-event-1", 1, "text", 7),
        ("call-event-1", 2, "function_call", 1),
        ("end-1", 3, "invocation_end", 9),
    ]
    conn.close()


def test_event_kind_rules() -> None:
    from maka_ref._store.engine.rows import event_kind

    assert event_kind(fam.w_dispatch()) == "tool_dispatch"
    assert event_kind(fam.w_reconcile()) == "runtime_fact"
    assert event_kind(_terminal()) == "aborted"
    assert event_kind({"actions": {"workspaceFact": {}, "endInvocation": True}}) == "workspace_fact"
    assert event_kind({"actions": {"continuationStart": {}}}) == "runtime_fact"
