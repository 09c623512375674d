"""The scanner fed in pieces is the scanner (spec 10 §4.3, §6.2; docs/performance.md).

``LedgerScanner`` lets the ResumePlan builder feed the ledger piece by piece; the resolver's
marker rule (§6.2 steps 1–2) rides on the same pass. The oracle is the one-call API on the
whole ledger: any split into consecutive pieces must give the same scan and resolution.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.resolver import resolution_of_scan, resolve_recovery
from maka_ref._ledger.scanner import LedgerScanner, scan_tool_ledger
from maka_ref.testing import families as f
from maka_ref.testing.strategies import Ledger, corrupt_ledgers, garbage_event_lists, ledgers

SOME = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))


def _pieces(events: list[Any], cuts: list[int]) -> list[list[Any]]:
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in zip(bounds, bounds[1:])]


def _check(events: list[Any], cuts: list[int]) -> None:
    snapshot = copy.deepcopy(events)
    scanner = LedgerScanner(markers=[])
    for piece in _pieces(events, cuts):
        scanner.feed(piece)
    assert scanner.result().to_json() == scan_tool_ledger(events).to_json()
    assert resolution_of_scan(events, scanner).to_json() == resolve_recovery(events).to_json()
    assert events == snapshot


def _decoded(ledger: Ledger) -> list[Any]:
    return [decode_runtime_event(e) for e in ledger.event_list()]


_CUTS = st.lists(st.integers(min_value=0, max_value=200), max_size=6)


@SOME
@given(ledgers(call_id_reuse=None), _CUTS)
def test_pieces_of_healthy_ledgers(ledger: Ledger, cuts: list[int]) -> None:
    _check(ledger.event_list(), cuts)
    _check(_decoded(ledger), cuts)


@SOME
@given(corrupt_ledgers(), _CUTS)
def test_pieces_of_corrupt_ledgers(corrupt: Any, cuts: list[int]) -> None:
    _check(corrupt.event_list(), cuts)


@SOME
@given(garbage_event_lists(), _CUTS)
def test_pieces_of_garbage(events: list[Any], cuts: list[int]) -> None:
    _check(events, cuts)


def test_markers_are_reported_in_order_with_their_ids() -> None:
    """§6.2 steps 1–2: every marker-carrying entry, in order; ``None`` for an unusable id."""
    marker = {"runtimeProtocol": {"toolBoundary": f.T1}}
    events = [
        f.event("first", actions=marker),
        f.event("plain"),
        f.event("late", actions=marker),
        {**f.event("x", actions=marker), "id": 7},
        "not an object",
    ]
    scanner = LedgerScanner(markers=[])
    scanner.feed(events[:2])
    scanner.feed(events[2:])
    assert scanner.markers == ["first", "late", None]
    issues = [i.to_json() for i in resolve_recovery(events).issues]
    assert issues[:2] == [
        {"code": "protocol_marker_invalid", "eventId": "late"},
        {"code": "protocol_marker_invalid"},
    ]


def test_scanner_without_markers_collects_none() -> None:
    scanner = LedgerScanner()
    scanner.feed([f.event("a", actions={"runtimeProtocol": {"toolBoundary": f.T1}})])
    assert scanner.markers is None
