"""Phase 0 ResumePlan mutants (spec 20 §1)."""

from __future__ import annotations

import dataclasses
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap
from maka_ref.adapter._mutants._registry import mutant

_VEC_PLAN = "LEDGER-VEC and phase0-plan"


def _wrap_plan(transform: Any) -> None:
    def factory(original: Any) -> Any:
        def build_resume_plan(events: Any, expected_runtime_event_high_water: Any = None) -> Any:
            return transform(original(events, expected_runtime_event_high_water))
        return build_resume_plan

    wrap("maka_ref._plan.phase0.plan", "build_resume_plan", factory)


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
        from maka_ref._plan.phase0.plan import _REASON_OF_DIAGNOSTIC

        reasons: list[str] = []
        for d in diagnostics:
            reason = _REASON_OF_DIAGNOSTIC.get(d.code)
            if reason is not None and reason not in reasons:
                reasons.append(reason)
        return dataclasses.replace(plan, diagnostics=diagnostics, rejection_reasons=tuple(reasons))

    _wrap_plan(transform)


@mutant("phase0-high-water-excess-accepted", layer="phase0", spec="20 §1.3 item 1; 20 §1.6", family="LEDGER-VEC:phase0-plan/*",
        keyword=_VEC_PLAN)
def apply_high_water_excess_accepted() -> None:
    """The Phase 0 high-water check only catches a shortfall: an expected high-water *below*
    the committed event count is accepted (no ``runtime_offset_mismatch``).

    Spec 20 §1.3 item 1 / §1.6: any expected high-water that *differs* from ``len(events)``
    blocks the plan. A caller that expected fewer events than are committed is planning on a
    ledger that grew behind its back; the one-sided check lets it replay a prefix it never
    saw. Every earlier vector expected one event *more* than the ledger holds, so the bug
    passed certification. Killed by ``LEDGER-VEC:phase0-plan/high-water-below-committed``.
    """

    def _high_water_mismatch(expected: Any, actual: int) -> bool:
        if expected is None:
            return False
        if type(expected) is not int and type(expected) is not float:
            return True
        return expected > actual  # the mutation: only a shortfall of the ledger is a mismatch

    replace("maka_ref._plan.phase0.plan", "_high_water_mismatch", _high_water_mismatch)


@mutant("phase0-prefix-digest-without-event-seq", layer="phase0", spec="20 §1.9; 30 §2.6",
        family="LEDGER-VEC:prefix-digest/*, LEDGER-ANCHOR-*, STORE-CONT-*", keyword="LEDGER-VEC and prefix-digest")
def apply_prefix_digest_without_event_seq() -> None:
    """The v2 prefix digest leaves each row's ``event_seq`` out of the hash (it hashes
    ``LP(domain) ‖ LP(SJ(identity)) ‖ LP(event JSON)…`` without the ``U64BE(eventSeq)`` prefix).

    Spec 20 §1.9 fixes the byte construction; the digest is written into durable claims and
    continuation starts, so a different one breaks every continuation shared with another
    implementation. The sensitivity properties (same input, same digest; changed events, a
    different one) still hold because ``event_seq`` is dense, which is why only golden values
    can see it. Killed by the golden ``LEDGER-VEC:prefix-digest/*`` vectors (its default
    selection); in the whole suite also by the upstream anchors (``LEDGER-ANCHOR-*``) and by
    ``STORE-CONT-*``, whose claims carry digests the harness computes.
    """
    import hashlib

    from maka_ref._plan.prefix import digests

    def prefix_digest(identity: Any, rows: Any) -> str:
        hasher = hashlib.sha256()
        hasher.update(digests.length_prefixed(digests.PREFIX_DOMAIN.encode("utf-8")))
        hasher.update(digests.length_prefixed(digests.sj(digests._identity_json(identity)).encode("utf-8")))
        for _event_seq, event in rows:  # the mutation: no U64BE(event_seq) before each row
            hasher.update(digests.length_prefixed(digests.prefix_event_json(event).encode("utf-8")))
        return "sha256:" + hasher.hexdigest()

    replace("maka_ref._plan.prefix.digests", "prefix_digest", prefix_digest)
