"""Phase 0 ResumePlan mutants (spec 20 §1)."""

from __future__ import annotations

import dataclasses
from typing import Any

from maka_ref.adapter._mutants._patch import wrap
from maka_ref.adapter._mutants._registry import mutant

_VEC_PLAN = "LEDGER-VEC and phase0-plan"


def _wrap_plan(transform: Any) -> None:
    def factory(original: Any) -> Any:
        def build_resume_plan(events: Any, expected_runtime_event_high_water: Any = None) -> Any:
            return transform(original(events, expected_runtime_event_high_water))
        return build_resume_plan

    wrap("maka_ref._plan.resume_plan", "build_resume_plan", factory)


def _is_call(event: Any) -> bool:
    content = event.get("content") if isinstance(event, dict) else None
    return isinstance(content, dict) and content.get("kind") == "function_call"


@mutant("phase0-unresolved-call-replayed", layer="phase0", spec="20 §1.7", family="LEDGER-VEC:phase0-plan/*",
        keyword=_VEC_PLAN)
def apply_unresolved_call_replayed() -> None:
    """A function_call without a committed response is kept in ``replayRuntimeEvents``.

    Spec 20 §1.7: the provider-replay subset drops every call that has no matching response
    (a provider would reject a dangling call, and replaying it invites a re-run). Killed by
    the Phase 0 plan vectors (``s4-unresolved-call-not-replayed``).
    """

    def transform(plan: Any) -> Any:
        kept = {id(e) for e in plan.replay_runtime_events}
        replay = tuple(e for e in plan.runtime_events if id(e) in kept or _is_call(e))
        return dataclasses.replace(plan, replay_runtime_events=replay)

    _wrap_plan(transform)


@mutant("phase0-wrong-high-water", layer="phase0", spec="20 §1.1; 20 §1.9", family="LEDGER-VEC:phase0-plan/*",
        keyword=_VEC_PLAN)
def apply_wrong_high_water() -> None:
    """``sourceRuntimeEventHighWater`` is one less than the number of committed events
    (partials not counted / off by one).

    Spec 20 §1.1: the high-water is the count of the committed prefix the plan was built on;
    the continuation's offset check depends on it. Killed by every Phase 0 plan vector.
    """

    def transform(plan: Any) -> Any:
        return dataclasses.replace(plan, source_runtime_event_high_water=max(0, plan.source_runtime_event_high_water - 1))

    _wrap_plan(transform)


@mutant("phase0-diagnostics-out-of-order", layer="phase0", spec="20 §1.3", family="LEDGER-VEC:phase0-plan/*",
        keyword=_VEC_PLAN)
def apply_diagnostics_out_of_order() -> None:
    """Diagnostics are listed in reverse order (and the reasons derived in that order).

    Spec 20 §1.3 fixes the order (offset mismatch, per operation, per issue, call-less
    corruption, hidden calls, unmatched responses) and §1.4 derives first-seen reasons from
    it. Killed by the Phase 0 plan vectors with several diagnostics.
    """

    def transform(plan: Any) -> Any:
        if len(plan.diagnostics) < 2:
            return plan
        diagnostics = tuple(reversed(plan.diagnostics))
        from maka_ref._plan.resume_plan import _REASON_OF_DIAGNOSTIC

        reasons: list[str] = []
        for d in diagnostics:
            reason = _REASON_OF_DIAGNOSTIC.get(d.code)
            if reason is not None and reason not in reasons:
                reasons.append(reason)
        return dataclasses.replace(plan, diagnostics=diagnostics, rejection_reasons=tuple(reasons))

    _wrap_plan(transform)
