"""The tool-ledger scanner — spec 10 §4.3–§4.5, scenarios §7.4 (30–37).

Plus robustness: any input → a result (never an exception), input never mutated.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._codec.frozen import freeze
from maka_ref._ledger.bundle import interpret_operation
from maka_ref._ledger.code_mode import build_interrupted_code_mode_outcome_commits
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._ledger.transition import validate_transition
from maka_ref.testing.families import (
    BASH_DO_IT_HASH,
    event,
    r_call,
    r_dispatch,
    r_initial,
    r_response,
    w_call,
    w_decision_completed,
    w_decision_parked,
    w_dispatch,
    w_marker,
    w_outcome,
    w_outcome_unbound,
    w_reconcile,
    with_fields,
)


def issues_of(scan):
    return [i.to_json() for i in scan.issues]


def codes_of(scan):
    return [i.code for i in scan.issues]


def call_for(call_id, *, id, name="Write", args=None, **fields):
    e = w_call(id=id)
    e["content"]["id"] = call_id
    e["content"]["name"] = name
    if args is not None:
        e["content"]["args"] = args
    e.update(fields)
    return e


def dispatch_for(call_id, *, id, operation_id="operation-1", **fields):
    e = w_dispatch(id=id)
    e["actions"]["toolDispatch"]["providerToolCallId"] = call_id
    e["actions"]["toolDispatch"]["operationId"] = operation_id
    e["refs"] = {"operationId": operation_id, "toolCallId": call_id}
    e.update(fields)
    return e


# --- §7.4 scenarios --------------------------------------------------------------------------


def test_30_out_of_order_duplicate_call_and_duplicate_operation():
    """§7.4 #30 [T:auth]+[X]: full issues and the resolver decisions."""
    events = [
        w_dispatch(),
        w_call(),
        w_call(id="call-event-2"),
        call_for("provider-call-2", id="call-event-other"),
        dispatch_for("provider-call-2", id="dispatch-event-other", operation_id="operation-1"),
    ]
    scan = scan_tool_ledger(events)
    assert codes_of(scan) == ["event_order_conflict", "duplicate_call", "duplicate_operation"]
    assert scan.has_corruption is True
    assert issues_of(scan) == [
        {
            "code": "event_order_conflict",
            "eventId": "dispatch-event-1",
            "operationId": "operation-1",
            "toolCallId": "provider-call-1",
        },
        {"code": "duplicate_call", "eventId": "call-event-2", "operationId": "operation-1", "toolCallId": "provider-call-1"},
        {
            "code": "duplicate_operation",
            "eventId": "dispatch-event-other",
            "operationId": "operation-1",
            "toolCallId": "provider-call-2",
        },
    ]
    decisions = [d.to_json() for d in resolve_recovery(events).decisions]
    assert decisions == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "corruption",
            "reason": "duplicate_call",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
        },
        {
            "toolCallId": "provider-call-2",
            "toolName": "Write",
            "status": "corruption",
            "reason": "duplicate_operation",
            "callRuntimeEventId": "call-event-other",
        },
    ]


def test_30_duplicate_operation_issue_is_one_object_on_both_ops_and_the_global_list():
    """§4.3 step 6: one issue object attached to both ops and to the global list."""
    events = [
        w_call(),
        call_for("provider-call-2", id="call-event-2"),
        w_dispatch(),
        dispatch_for("provider-call-2", id="dispatch-2"),
    ]
    scan = scan_tool_ledger(events)
    (issue,) = scan.issues
    first, second = scan.operations
    assert first.issues[-1] is issue and second.issues[-1] is issue
    assert second.operation_id is None and second.dispatch_event is None
    assert first.operation_id == "operation-1"


def test_31_unbound_response_before_dispatch():
    """§7.4 #31 [T:auth]: [C, O_unbound, D] → corrupt; contains event_order_conflict and identity_conflict."""
    scan = scan_tool_ledger([w_call(), w_outcome_unbound(), w_dispatch()])
    assert scan.has_corruption
    assert "event_order_conflict" in codes_of(scan)
    assert "identity_conflict" in codes_of(scan)


def test_32_wrong_dispatch_hash():
    """§7.4 #32 [T:auth]: canonical_args_hash_conflict carrying operationId and toolCallId."""
    bad = w_dispatch()
    bad["actions"]["toolDispatch"]["canonicalArgsHash"] = "sha256:wrong"
    scan = scan_tool_ledger([w_call(), bad])
    assert {
        "code": "canonical_args_hash_conflict",
        "eventId": "dispatch-event-1",
        "operationId": "operation-1",
        "toolCallId": "provider-call-1",
    } in issues_of(scan)


def test_33_tool_call_key_is_a_real_tuple():
    """§7.4 #33 [T:auth]: ("a\\0b","c") and ("a","b\\0c") stay distinct → no corruption, 2 ops."""
    first = call_for("c", id="call-a", invocationId="a\0b")
    second = call_for("b\0c", id="call-b", invocationId="a")
    scan = scan_tool_ledger([first, second])
    assert scan.has_corruption is False
    assert len(scan.operations) == 2


def test_34_invocation_identity_conflict():
    """§7.4 #34 [T:auth]: a second call in invocation-1 with another run/turn."""
    other = call_for("provider-call-2", id="call-event-2", name="Read", args={}, runId="run-2", turnId="turn-2")
    assert "invocation_identity_conflict" in codes_of(scan_tool_ledger([w_call(), other]))


def test_35_response_from_another_run():
    """§7.4 #35 [X]: [C, O(runId run-2, refs {toolCallId})] → the two issues at outcome-event-1."""
    response = with_fields(w_outcome_unbound(), runId="run-2")
    scan = scan_tool_ledger([w_call(), response])
    assert [(i.code, i.event_id) for i in scan.issues] == [
        ("invocation_identity_conflict", "outcome-event-1"),
        ("identity_conflict", "outcome-event-1"),
    ]


def test_36_partial_events_are_ignored():
    """§7.4 #36 [X]: partial text is ignored; a partial call → zero operations plus a lane issue."""
    partial_text = event("partial-1", role="model", author="agent", partial=True, content={"kind": "text", "text": "r"})
    scan = scan_tool_ledger([partial_text, w_call()])
    assert scan.issues == () and len(scan.operations) == 1
    scan = scan_tool_ledger([with_fields(w_call(), partial=True)])
    assert scan.operations == ()
    assert issues_of(scan) == [{"code": "semantic_lane_conflict", "eventId": "call-event-1"}]


def test_37_same_call_id_in_two_invocations():
    """§7.4 #37 [X]: two independent operations, no issue."""
    scan = scan_tool_ledger([w_call(), call_for("provider-call-1", id="call-event-2", invocationId="invocation-2")])
    assert scan.issues == ()
    assert [op.tool_call_id for op in scan.operations] == ["provider-call-1", "provider-call-1"]


# --- §4.3 / §4.5 ordering facts --------------------------------------------------------------


def test_45_emission_order_within_one_dispatch():
    """§4.5 [X]: a dispatch with wrong name and wrong hash emits [identity_conflict, canonical_args_hash_conflict]."""
    bad = w_dispatch()
    bad["actions"]["toolDispatch"]["toolName"] = "Read"
    bad["actions"]["toolDispatch"]["canonicalArgsHash"] = "sha256:x"
    assert codes_of(scan_tool_ledger([w_call(), bad])) == ["identity_conflict", "canonical_args_hash_conflict"]


def test_operations_keep_creation_order_and_event_references():
    """§4.5: creation order (first call, orphan dispatch or orphan response); events held, not copied."""
    c, d, o = w_call(), w_dispatch(), w_outcome()
    orphan_response = with_fields(w_outcome_unbound(id="o3"))
    orphan_response["content"]["id"] = "p3"
    scan = scan_tool_ledger([c, d, o, orphan_response])
    assert [op.tool_call_id for op in scan.operations] == ["provider-call-1", "p3"]
    op = scan.operations[0]
    assert op.call_event is c and op.dispatch_event is d and op.response_event is o
    assert scan.to_json()["operations"][0] == {
        "toolCallId": "provider-call-1",
        "toolName": "Write",
        "operationId": "operation-1",
        "callEventId": "call-event-1",
        "dispatchEventId": "dispatch-event-1",
        "responseEventId": "outcome-event-1",
        "reconcileEventIds": [],
        "decisionEventIds": [],
        "issues": [],
    }


def test_recovery_facts_bind_by_payload_operation_id():
    """§4.3 step 8: facts bind by payload.operationId; unbound → global event_order_conflict."""
    rc = w_reconcile()
    rc["refs"] = {"operationId": "operation-X", "toolCallId": "zzz"}
    scan = scan_tool_ledger([w_call(), w_dispatch(), rc, w_decision_parked()])
    assert scan.issues == ()
    assert scan.operations[0].reconcile_events == [rc]
    unbound = w_reconcile()
    unbound["actions"]["toolRecovery"]["payload"]["operationId"] = "unknown-operation"
    unbound["refs"] = {"operationId": "unknown-operation", "toolCallId": "unknown-provider-call"}
    assert issues_of(scan_tool_ledger([w_call(), unbound])) == [
        {
            "code": "event_order_conflict",
            "eventId": "reconcile-event-1",
            "operationId": "unknown-operation",
            "toolCallId": "unknown-provider-call",
        }
    ]


def test_r_family_dispatch_hash_is_authentic():
    """§2.6 / §7 family R: DI's hash is hash(Bash, {command: do-it}) → no hash conflict."""
    assert r_dispatch()["actions"]["toolDispatch"]["canonicalArgsHash"] == BASH_DO_IT_HASH
    scan = scan_tool_ledger([r_initial(), r_call(), r_dispatch(), r_response(op="operation-1")])
    assert scan.issues == ()


def test_decoded_frozen_events_scan_like_plain_dicts():
    """Architecture: decoded events are FrozenDicts; the scanner treats them as objects."""
    events = [w_marker(), w_call(), w_dispatch(), w_reconcile(), w_outcome(), w_decision_completed()]
    assert scan_tool_ledger([freeze(e) for e in events]).to_json() == scan_tool_ledger(events).to_json()


# --- robustness (our choices; docs/choices/ledger.md) ---------------------------------------


def test_uninterpretable_entries_become_global_lane_conflicts():
    """Outside the well-typed domain (non-objects, ids or identity fields of the wrong type,
    ``null`` included) → a global semantic_lane_conflict whose eventId is the id when it is a
    string, else absent (our fail-closed choice). An object without an id (``{}``) is in the
    domain: an ordinary event whose id is undefined, as upstream reads it."""
    events = [
        None,
        7,
        "text",
        [w_call()],
        {},
        {"id": 5},
        {"id": ["unhashable"]},
        with_fields(w_call(id="c-bad-inv"), invocationId=["x"]),
        with_fields(event("ordinary-bad-turn"), turnId=None),
        w_call(),
    ]
    before = copy.deepcopy(events)
    scan = scan_tool_ledger(events)
    assert events == before
    assert [(i.code, i.event_id) for i in scan.issues] == [
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", None),
        ("semantic_lane_conflict", "c-bad-inv"),
        ("semantic_lane_conflict", "ordinary-bad-turn"),
    ]
    assert scan.to_json()["issues"][0] == {"code": "semantic_lane_conflict"}
    assert [op.tool_call_id for op in scan.operations] == ["provider-call-1"]


@pytest.mark.parametrize("value", [None, 3, "events", b"x", {"id": "a"}, object()])
def test_non_sequence_inputs_fail_closed(value):
    """Choice: a non-sequence input is one uninterpretable entry (never an exception)."""
    scan = scan_tool_ledger(value)
    assert [(i.code, i.event_id) for i in scan.issues] == [("semantic_lane_conflict", None)]


def test_generators_and_tuples_are_accepted():
    events = [w_call(), w_dispatch()]
    assert scan_tool_ledger(iter(events)).to_json() == scan_tool_ledger(tuple(events)).to_json()


def test_call_without_args_key_is_a_hash_conflict_not_a_crash():
    """§4.3 step 6 / §8.16: a hash that cannot be computed is canonical_args_hash_conflict."""
    call = w_call()
    del call["content"]["args"]
    nan_args = w_call()
    nan_args["content"]["args"] = {"v": float("nan")}
    empty_name_call = w_call()
    empty_name_call["content"]["name"] = ""
    empty_name_dispatch = w_dispatch()
    empty_name_dispatch["actions"]["toolDispatch"]["toolName"] = ""
    for events in ([call, w_dispatch()], [nan_args, w_dispatch()], [empty_name_call, empty_name_dispatch]):
        assert "canonical_args_hash_conflict" in codes_of(scan_tool_ledger(events))


_JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=3)
)
_JSON = st.recursive(_JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
_FAMILY = [
    w_marker,
    w_call,
    w_dispatch,
    w_reconcile,
    w_outcome,
    w_outcome_unbound,
    w_decision_completed,
    w_decision_parked,
    r_initial,
    r_call,
    r_dispatch,
    r_response,
]
_PATHS = [
    ("id",), ("invocationId",), ("sessionId",), ("runId",), ("turnId",), ("partial",), ("role",), ("author",),
    ("content",), ("content", "id"), ("content", "name"), ("content", "args"), ("content", "isError"),
    ("content", "kind"), ("actions",), ("actions", "toolDispatch"), ("actions", "toolDispatch", "operationId"),
    ("actions", "toolRecovery"), ("actions", "toolRecovery", "payload"),
    ("actions", "toolRecovery", "payload", "operationId"), ("actions", "toolRecovery", "payload", "evidenceEventIds"),
    ("actions", "runtimeProtocol"), ("refs",), ("refs", "operationId"), ("refs", "toolCallId"),
]


def _mutate(value, path, replacement, delete):
    target = value
    for key in path[:-1]:
        if not isinstance(target, dict) or key not in target:
            return
        target = target[key]
    if isinstance(target, dict):
        if delete:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = replacement


@st.composite
def corrupted_ledgers(draw):
    events = []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(st.integers(0, len(_FAMILY) + 1))
        if kind == len(_FAMILY):
            events.append(draw(_JSON))
            continue
        if kind == len(_FAMILY) + 1 and events:
            events.append(events[draw(st.integers(0, len(events) - 1))])  # same object twice
            continue
        e = _FAMILY[kind % len(_FAMILY)]()
        for _ in range(draw(st.integers(0, 3))):
            _mutate(e, draw(st.sampled_from(_PATHS)), draw(_JSON), draw(st.booleans()))
        events.append(e)
    return events


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(corrupted_ledgers())
def test_scanner_and_resolver_never_raise_and_never_mutate(events):
    """Hard rule: any input → a result; the input is unchanged afterwards.

    Also exercises interpret_operation, the Code Mode helper and transition validation."""
    before = copy.deepcopy(events)
    scan = scan_tool_ledger(events)
    scan.to_json()
    resolution = resolve_recovery(events)
    resolution.to_json()
    order = {e["id"]: i for i, e in enumerate(events) if isinstance(e, dict) and isinstance(e.get("id"), str)}
    for op in scan.operations:
        interpret_operation(op, order).to_json()
    build_interrupted_code_mode_outcome_commits(events, 50, "code_mode")
    half = len(events) // 2
    for kind in ("generic_append", "t1_prepare", "t2_outcome", "recovery_bundle"):
        validate_transition(events[:half], events[half:], kind).to_json()
    assert events == before  # deepcopy keeps float objects, so NaN compares by identity
    if scan.issues:
        assert resolution.has_corruption
