"""Scanner and resolver mutants (spec 10 §4.3 scan, §6 RecoveryResolver)."""

from __future__ import annotations

import dataclasses
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap, wrap_method
from maka_ref.adapter._mutants._registry import mutant

_VEC_RESOLVER = "LEDGER-VEC and (resolver or scanner)"


def _wrap_decide(transform: Any) -> None:
    def factory(original: Any) -> Any:
        def _decide(op: Any, default_status: str, default_reason: str, event_order: Any) -> Any:
            return transform(op, original(op, default_status, default_reason, event_order))
        return _decide

    wrap("maka_ref._ledger.resolver", "_decide", factory)


@mutant("resolver-legacy-call-only-not-dispatched", layer="resolver", spec="10 §6.3 row 4c", family="LEDGER-VEC:resolver/*",
        keyword=_VEC_RESOLVER)
def apply_legacy_call_only_not_dispatched() -> None:
    """A legacy call with no response is read as ``definitely_not_dispatched`` instead of
    ``indeterminate`` / ``legacy_dispatch_unknown``.

    Spec 10 §6.3 row 4c: without the T1 marker nobody knows whether a lone call ran. The
    mutant would let a resume re-run a tool that may already have had its effect. Killed by
    the resolver vectors of legacy call-only ledgers.
    """

    def transform(op: Any, decision: Any) -> Any:
        if decision.reason == "legacy_dispatch_unknown":
            return dataclasses.replace(decision, status="definitely_not_dispatched",
                                       reason="new_protocol_before_dispatch")
        return decision

    _wrap_decide(transform)


@mutant("resolver-orphan-dispatch-not-corruption", layer="resolver", spec="10 §6.3 row 1", family="LEDGER-VEC:resolver/*",
        keyword=_VEC_RESOLVER)
def apply_orphan_dispatch_not_corruption() -> None:
    """A dispatch without its function_call is decided ``indeterminate``
    (``dispatch_without_response``) instead of ``corruption`` / ``orphan_dispatch``.

    Spec 10 §6.3 row 1 (which beats every other row). Killed by the resolver vectors with an
    orphan dispatch.
    """

    def transform(op: Any, decision: Any) -> Any:
        if decision.reason == "orphan_dispatch":
            return dataclasses.replace(decision, status="indeterminate", reason="dispatch_without_response")
        return decision

    _wrap_decide(transform)


@mutant("resolver-duplicate-response-tolerated", layer="resolver", spec="10 §4.3 step 7", family="LEDGER-VEC:scanner/*, LEDGER-VEC:resolver/*",
        keyword=_VEC_RESOLVER)
def apply_duplicate_response_tolerated() -> None:
    """A second function_response for the same call is silently ignored instead of being
    reported as ``duplicate_response`` (scanner issue, corruption).

    Spec 10 §4.3 step 7. Killed by the scanner/resolver vectors with duplicate responses.
    """
    from maka_ref._ledger.scanner import LedgerScanner

    def factory(original: Any) -> Any:
        def feed(self: Any, events: Any) -> None:
            original(self, events)
            self._issues[:] = [i for i in self._issues if i.code != "duplicate_response"]
            for op in self._operations:
                op.issues[:] = [i for i in op.issues if i.code != "duplicate_response"]
        return feed

    wrap_method(LedgerScanner, "feed", factory)


@mutant("resolver-global-issues-ignored", layer="resolver", spec="10 §6.2 (hasCorruption)", family="LEDGER-VEC:resolver/*",
        keyword=_VEC_RESOLVER)
def apply_global_issues_ignored() -> None:
    """``hasCorruption`` is computed from the decisions only: a ledger-level issue that belongs
    to no operation (a duplicate event id, an invalid protocol marker, a lane conflict) no
    longer makes the ledger corrupt.

    Spec 10 §6.2: ``hasCorruption = issues non-empty or any decision is corruption``. Killed by
    the resolver vectors whose only problem is a global issue.
    """

    def factory(original: Any) -> Any:
        def resolution_of_scan(events: Any, scanner: Any) -> Any:
            result = original(events, scanner)
            corrupt = any(d.status == "corruption" for d in result.decisions)
            indeterminate = any(d.status == "indeterminate" for d in result.decisions)
            return dataclasses.replace(result, has_corruption=corrupt,
                                       requires_reconciliation=(not corrupt) and indeterminate)
        return resolution_of_scan

    wrap("maka_ref._ledger.resolver", "resolution_of_scan", factory)


@mutant("resolver-parked-as-completed", layer="resolver", spec="10 §6.3 row 8", family="LEDGER-VEC:resolver/*",
        keyword=_VEC_RESOLVER)
def apply_parked_as_completed() -> None:
    """An operation whose recovery bundle decided ``parked`` is decided ``completed``.

    Spec 10 §6.3 row 8: a park is final and blocks; treating it as completed would replay a
    result nobody has. Killed by the resolver vectors with a parked recovery bundle.
    """

    def transform(op: Any, decision: Any) -> Any:
        if decision.status == "parked":
            return dataclasses.replace(decision, status="completed", reason="recovery_bundle_completed")
        return decision

    _wrap_decide(transform)


@mutant("resolver-event-order-first-occurrence", layer="resolver", spec="10 §6.2 step 3; 10 §5.4",
        family="LEDGER-VEC:resolver/*", keyword=_VEC_RESOLVER)
def apply_event_order_first_occurrence() -> None:
    """The resolver's ``eventOrder`` of a ledger with a repeated event id takes the *first*
    occurrence's index instead of the last.

    Spec 10 §6.2 step 3 (the last index wins) feeds the causal-order check of §5.4: a
    recovery bundle whose call (or reconcile) id reappears after the decision fails that check
    and the operation is ``corruption``/``recovery_fact_corruption`` (row 6); with the first
    index the same operation reads ``completed``/``recovery_bundle_completed``. The ledger is
    corrupt either way (``duplicate_event_id``), but the decisions differ. Killed by
    ``LEDGER-VEC:resolver/duplicate-id-after-bundle-*``.
    """

    def _build_event_order(events: Any) -> dict[Any, int]:
        order: dict[Any, int] = {}
        for index, event in enumerate(events):
            if isinstance(event, dict):
                event_id = event.get("id")
                if (event_id is None or isinstance(event_id, str)) and event_id not in order:
                    order[event_id] = index  # the mutation: the first occurrence wins
        return order

    replace("maka_ref._ledger.resolver", "_build_event_order", _build_event_order)
