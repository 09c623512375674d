"""Property-based tests of the scanner and the RecoveryResolver (spec 10 §3, §4, §5, §6).

The oracle is the ground truth that ``maka_ref.testing.strategies`` knows *by construction*
(which events each operation has), never the code under test. Every property cites the
spec rule it checks.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref.testing.strategies import (
    CORRUPTIONS,
    T1,
    CorruptLedger,
    Ledger,
    add_marker,
    append_response,
    corrupt_ledgers,
    garbage_event_lists,
    ledgers,
    strip_marker,
)

# Per-test settings (no shared profile): the whole property suite must run in < 60 s.
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _resolve_checked(events: list[Any]) -> dict[str, Any]:
    """Resolve twice: never raises, deterministic, input untouched (spec 10 §6: "Pure
    function ... No I/O, no mutation"; docs/architecture.md "never raise")."""
    snapshot = copy.deepcopy(events)
    first = resolve_recovery(events).to_json()
    second = resolve_recovery(events).to_json()
    assert first == second, "resolve_recovery is not deterministic"
    assert events == snapshot, "resolve_recovery mutated its input"
    return first


# ---------------------------------------------------------------------------------------
# Totality, determinism, non-mutation (spec 10 §6 preamble, §8.22)
# ---------------------------------------------------------------------------------------


@MANY
@given(garbage_event_lists())
def test_resolver_total_on_garbage(events: list[Any]) -> None:
    """Spec 10 §6: the resolver "must behave as specified for any list" (tests feed partial
    and un-decoded events); it reports corruption, it never raises."""
    out = _resolve_checked(events)
    assert isinstance(out["hasCorruption"], bool)
    if out["requiresReconciliation"]:
        assert not out["hasCorruption"]  # §6.2 step 6


@SOME
@given(corrupt_ledgers())
def test_resolver_total_on_corrupt_ledgers(c: CorruptLedger) -> None:
    _resolve_checked(c.event_list())


@SOME
@given(ledgers())
def test_resolver_total_on_healthy_ledgers(ledger: Ledger) -> None:
    _resolve_checked(ledger.event_list())


# ---------------------------------------------------------------------------------------
# Corruption always blocks
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_corruption_is_detected(corruption: str, data: st.DataObject) -> None:
    """Spec 10 §4.4 / §5.5 / §6.2 step 5: each corruption makes ``hasCorruption`` true, with
    the issue (or decision reason) the spec names; §6.2 step 6 / §8.8: a corrupt ledger never
    requires reconciliation. (One parametrized case per corruption, so none goes untested.)"""
    c = data.draw(corrupt_ledgers(corruptions=(corruption,)), label="corrupt ledger")
    out = resolve_recovery(c.event_list()).to_json()
    assert out["hasCorruption"] is True, (c.corruption, c.detail)
    assert out["requiresReconciliation"] is False, (c.corruption, c.detail)
    kind, code, event_id = c.witness
    if kind == "issue":
        assert {"code": code, "eventId": event_id} in out["issues"], (c.corruption, c.detail, out["issues"])
    else:
        reasons = [(d["reason"], d.get("callRuntimeEventId")) for d in out["decisions"]]
        assert (code, event_id) in reasons, (c.corruption, c.detail, reasons)


# ---------------------------------------------------------------------------------------
# Ground truth
# ---------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(call_id_reuse=None))
def test_healthy_ledger_resolution_matches_construction(ledger: Ledger) -> None:
    """Spec 10 §4.3 (a healthy ledger has no scanner issue) and §6.1–§6.3: every decision is
    exactly what the construction implies — completed (response: ``normal_t2`` with a
    dispatch, ``pre_t1_synthetic`` without; completed bundle: ``recovery_bundle``), parked
    (parked bundle, the decision's reasonCode), indeterminate (dispatch without response, or
    legacy call-only), definitely_not_dispatched (T1 call-only)."""
    events = ledger.event_list()
    scan = scan_tool_ledger(events)
    assert scan.to_json()["issues"] == []
    assert [op.tool_call_id for op in scan.operations] == [op.tool_call_id for op in ledger.operations]
    assert resolve_recovery(events).to_json() == ledger.expected_resolution()


@SOME
@given(ledgers())
def test_decoded_events_resolve_like_raw_events(ledger: Ledger) -> None:
    """Spec 10 §2.1: decoding only normalises text content, so decoded (frozen) events and
    the raw dicts they came from resolve identically."""
    raw = ledger.event_list()
    decoded = [decode_runtime_event(e) for e in raw]
    assert resolve_recovery(decoded).to_json() == resolve_recovery(raw).to_json()


# ---------------------------------------------------------------------------------------
# The marker changes exactly one cell (spec 10 §3, §6.4)
# ---------------------------------------------------------------------------------------

CALL_ONLY_T1 = ("definitely_not_dispatched", "new_protocol_before_dispatch")
CALL_ONLY_LEGACY = ("indeterminate", "legacy_dispatch_unknown")


@MANY
@given(ledgers())
def test_marker_changes_only_the_call_only_cell(ledger: Ledger) -> None:
    """Spec 10 §6.4: with vs without the marker on event 0, decisions are identical except
    for call-only operations (``definitely_not_dispatched/new_protocol_before_dispatch`` ↔
    ``indeterminate/legacy_dispatch_unknown``); ``toolBoundaryProtocol`` (§6.1) and
    ``requiresReconciliation`` (§6.2 step 6) follow."""
    assume(ledger.events)
    with_marker, without = add_marker(ledger), strip_marker(ledger)  # either is the drawn ledger itself
    new = resolve_recovery(with_marker.event_list()).to_json()
    old = resolve_recovery(without.event_list()).to_json()

    assert new.get("toolBoundaryProtocol") == T1
    assert "toolBoundaryProtocol" not in old
    assert new["issues"] == old["issues"] == []
    assert new["hasCorruption"] is old["hasCorruption"] is False
    assert len(new["decisions"]) == len(old["decisions"]) == len(ledger.operations)
    any_call_only = False
    for truth, d_new, d_old in zip(ledger.operations, new["decisions"], old["decisions"]):
        if truth.call_only:
            any_call_only = True
            assert (d_new["status"], d_new["reason"]) == CALL_ONLY_T1
            assert (d_old["status"], d_old["reason"]) == CALL_ONLY_LEGACY
            rest_new = {k: v for k, v in d_new.items() if k not in ("status", "reason")}
            rest_old = {k: v for k, v in d_old.items() if k not in ("status", "reason")}
            assert rest_new == rest_old
        else:
            assert d_new == d_old
    assert old["requiresReconciliation"] == (new["requiresReconciliation"] or any_call_only)


# ---------------------------------------------------------------------------------------
# Completing an unsettled operation (spec 10 §6.3 row 4a)
# ---------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(ledgers(), st.data())
def test_appending_the_matching_response_completes_the_operation(ledger: Ledger, data: st.DataObject) -> None:
    """Spec 10 §6.3 row 4a: an indeterminate dispatched operation plus its T2 response
    (bound refs, appended at the end) becomes ``completed/matching_response/normal_t2``; a
    call-only operation plus an unbound synthetic response becomes ``pre_t1_synthetic``.
    No other decision changes and the ledger stays healthy."""
    open_ops = [op for op in ledger.operations if not op.resolved and op.bundle is None]
    assume(open_ops)
    op = data.draw(st.sampled_from(open_ops))
    is_error = data.draw(st.booleans())
    completed = append_response(ledger, op, is_error=is_error)
    before = resolve_recovery(ledger.event_list()).to_json()
    after = resolve_recovery(completed.event_list()).to_json()

    assert after == completed.expected_resolution()
    i = ledger.operations.index(op)
    d = after["decisions"][i]
    assert d["status"] == "completed" and d["reason"] == "matching_response"
    assert d["settlementOrigin"] == ("normal_t2" if op.has_dispatch else "pre_t1_synthetic")
    assert d["responseIsError"] is is_error
    for j, (b, a) in enumerate(zip(before["decisions"], after["decisions"])):
        if j != i:
            assert a == b
    assert after["hasCorruption"] is False


# ---------------------------------------------------------------------------------------
# Internal consistency of the Resolution on any input (spec 10 §6.1, §6.2)
# ---------------------------------------------------------------------------------------


@MANY
@given(st.one_of(garbage_event_lists(), corrupt_ledgers().map(lambda c: c.event_list()), ledgers().map(lambda l: l.event_list())))
def test_resolution_is_consistent_with_the_scan(events: list[Any]) -> None:
    """Spec 10 §6.2: issues are the ``protocol_marker_invalid`` issues (event 0 first, then
    later events in order) followed by every scanner issue reduced to ``{code, eventId}``;
    one decision per scanned operation, in scan order (§6.1); ``hasCorruption`` = issues or
    a corruption decision (step 5); ``requiresReconciliation`` = not corrupt and some
    decision indeterminate (step 6)."""
    scan = scan_tool_ledger(events).to_json()
    out = resolve_recovery(events).to_json()
    scanner_issues = [{k: i[k] for k in ("code", "eventId") if k in i} for i in scan["issues"]]
    k = len(out["issues"]) - len(scanner_issues)
    assert k >= 0 and out["issues"][k:] == scanner_issues
    assert all(i["code"] == "protocol_marker_invalid" for i in out["issues"][:k])
    assert [d.get("toolCallId") for d in out["decisions"]] == [op.get("toolCallId") for op in scan["operations"]]
    corrupt = bool(out["issues"]) or any(d["status"] == "corruption" for d in out["decisions"])
    assert out["hasCorruption"] is corrupt
    assert out["requiresReconciliation"] is (not corrupt and any(d["status"] == "indeterminate" for d in out["decisions"]))
    for d in out["decisions"]:
        # §6.1: a response id comes with its error flag (a response without an id has only the flag)
        assert "responseIsError" in d or "responseRuntimeEventId" not in d
        assert None not in d.values()  # absent, never null (§6.1)


@SOME
@given(ledgers(), st.data())
def test_dropping_ordinary_events_changes_nothing(ledger: Ledger, data: st.DataObject) -> None:
    """Spec 10 §4.1/§4.3: only tool-lane events build operations, so removing ordinary
    events (user/assistant text, thinking, partial chunks, token usage, terminal facts) from
    a healthy ledger — keeping event 0, the marker's place (§3) — changes no decision and
    never corrupts."""
    events = ledger.event_list()
    ordinary = [
        i
        for i, e in enumerate(events)
        if i > 0
        and (e.get("content") or {}).get("kind") not in ("function_call", "function_response")
        and not {"toolDispatch", "toolRecovery"} & set(e.get("actions") or {})
    ]
    assume(ordinary)
    drop = set(data.draw(st.lists(st.sampled_from(ordinary), min_size=1, unique=True)))
    kept = [e for i, e in enumerate(events) if i not in drop]
    assert resolve_recovery(kept).to_json() == resolve_recovery(events).to_json() == ledger.expected_resolution()
