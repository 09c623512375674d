"""``ResumePlan.resolution`` and the plan's shared, piecewise pass (spec 20 §1.2; docs/performance.md).

``build_resume_plan`` resolves the ledger itself (spec 20 §1.2 step 1), so the plan carries
that Resolution: a restart gets both answers from one call. It is not part of the spec's
plan, so ``to_json()`` is unchanged. The builder walks the ledger in pieces (the resolver's
scan and the replay pass back to back); the oracles are ``resolve_recovery`` and
``phase0_replay_events`` on the whole ledger and the plan built in one piece.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maka_ref._plan.phase0.plan as resume_plan
from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.phase0.replay import ReplayScanner, phase0_replay_events
from maka_ref._plan.phase0.plan import build_resume_plan
from maka_ref.testing import families as f
from maka_ref.testing.strategies import Ledger, corrupt_ledgers, garbage_event_lists, ledgers

SOME = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

#: spec 20 §1.1: the keys of a plan's JSON form (directive only when verification is required).
PLAN_KEYS = {
    "disposition",
    "operations",
    "diagnostics",
    "rejectionReasons",
    "requiresVerification",
    "sourceRuntimeEventHighWater",
    "directive",
    "runtimeEvents",
    "replayRuntimeEvents",
}


def _check_plan(events: Any) -> None:
    plan = build_resume_plan(events)
    assert plan.resolution.to_json() == resolve_recovery(events).to_json()
    assert set(plan.to_json()) <= PLAN_KEYS
    assert "resolution" not in repr(plan)


@SOME
@given(ledgers(call_id_reuse=None))
def test_plan_carries_its_resolution_healthy(ledger: Ledger) -> None:
    _check_plan(ledger.event_list())
    _check_plan([decode_runtime_event(e) for e in ledger.event_list()])


@SOME
@given(corrupt_ledgers())
def test_plan_carries_its_resolution_corrupt(corrupt: Any) -> None:
    _check_plan(corrupt.event_list())


@SOME
@given(garbage_event_lists())
def test_plan_carries_its_resolution_garbage(events: list[Any]) -> None:
    _check_plan(events)


@pytest.mark.parametrize("value", [None, 3, "text", {"id": "x"}, iter([f.event("a")])])
def test_plan_carries_its_resolution_for_non_ledgers(value: Any) -> None:
    plan = build_resume_plan(value)
    assert plan.resolution.to_json()["hasCorruption"] in (True, False)
    assert "resolution" not in plan.to_json()


def test_resolution_does_not_take_part_in_equality() -> None:
    events = [f.w_marker(), f.w_call(), f.w_dispatch()]
    first, second = build_resume_plan(events), build_resume_plan(list(events))
    assert first == second
    assert first.resolution == second.resolution == resolve_recovery(events)


@SOME
@given(ledgers(call_id_reuse=None), st.sampled_from([1, 2, 3, 7]))
def test_piece_size_does_not_change_the_plan(ledger: Ledger, piece: int) -> None:
    events = ledger.event_list()
    whole = build_resume_plan(events)
    saved = resume_plan._PIECE
    resume_plan._PIECE = piece
    try:
        pieced = build_resume_plan(events)
    finally:
        resume_plan._PIECE = saved
    assert pieced.to_json() == whole.to_json()
    assert pieced.resolution == whole.resolution


@SOME
@given(garbage_event_lists(), st.lists(st.integers(min_value=0, max_value=40), max_size=5))
def test_replay_scanner_in_pieces(events: list[Any], cuts: list[int]) -> None:
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    scanner = ReplayScanner(collect_plan_facts=True)
    for a, b in zip(bounds, bounds[1:]):
        scanner.feed(events[a:b])
    replay, _, _ = scanner.result()
    assert replay == phase0_replay_events(events)
    assert all(x is y for x, y in zip(replay, phase0_replay_events(events)))
