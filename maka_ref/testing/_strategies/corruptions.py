"""The corruption catalogue (``CORRUPTIONS``), which corruptions apply to a ledger, and the
``corrupt_ledgers`` strategy.

Only corruptions for which the spec guarantees ``hasCorruption`` are listed; the edits
themselves are in :mod:`maka_ref.testing._strategies.corruption_edits`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hypothesis import assume
from hypothesis import strategies as st

from maka_ref.testing._strategies.corruption_edits import _apply, _lane_of
from maka_ref.testing._strategies.ledger_model import CorruptLedger, Ledger
from maka_ref.testing._strategies.ledgers import ledgers
from maka_ref.testing._strategies.values import _pick

#: Every corruption ``corrupt_ledgers`` can apply. Each is guaranteed by the spec to make
#: ``hasCorruption`` true (spec 10 §4.4, §5.5, §6.2); its witness is the guaranteed signal.
CORRUPTIONS: tuple[str, ...] = (
    "duplicate_event",  # §2.5/§4.3 step 1: duplicate_event_id
    "reorder_dispatch_before_call",  # §4.3 step 6: event_order_conflict
    "reorder_response_before_call",  # §4.3 step 7: orphan_response
    "reorder_response_before_dispatch",  # §4.3 step 6: event_order_conflict (dispatch after response)
    "reorder_reconcile_before_dispatch",  # §4.3 step 8: unbound recovery fact
    "drop_call",  # §4.3 steps 6/7: event_order_conflict / orphan_response
    "drop_dispatch_of_bundle",  # §4.3 step 8: event_order_conflict
    "drop_bundle_event",  # §5.4/§5.5: recovery_fact_corruption
    "identity_drift",  # §4.3 step 2: invocation_identity_conflict
    "misplaced_marker",  # §3 case 2: protocol_marker_invalid
    "invalid_marker",  # §3 case 1: protocol_marker_invalid
    "flipped_hash",  # §4.3 step 6: canonical_args_hash_conflict
    "duplicate_call_id",  # §4.3 step 5: duplicate_call
    "duplicate_response",  # §4.3 step 7: duplicate_response
    "mismatched_names",  # §4.3 steps 6/7: identity_conflict
    "unbound_t2_response",  # §4.3 step 7 / §8.10: identity_conflict
    "reused_operation_id",  # §4.3 step 6: duplicate_operation
    "lane_smuggling",  # §4.1: semantic_lane_conflict
    "partial_tool_fact",  # §4.1: semantic_lane_conflict
)

_NEEDS_BUNDLE = frozenset({"reorder_reconcile_before_dispatch", "drop_dispatch_of_bundle", "drop_bundle_event"})
_NEEDS_TWO_DISPATCHES = frozenset({"reused_operation_id"})


def _applicable(ledger: Ledger) -> list[str]:
    ev = ledger.events
    ops = ledger.operations
    out = ["duplicate_event", "invalid_marker"]
    if len(ev) >= 2:
        out.append("misplaced_marker")
    if any(op.has_dispatch for op in ops):
        out += ["reorder_dispatch_before_call", "flipped_hash"]
    if any(op.has_response for op in ops):
        out += ["reorder_response_before_call", "duplicate_response"]
    if any(op.has_response and op.has_dispatch for op in ops):
        out += ["reorder_response_before_dispatch", "unbound_t2_response"]
    if any(op.bundle for op in ops):
        out += ["reorder_reconcile_before_dispatch", "drop_dispatch_of_bundle", "drop_bundle_event"]
    if any(op.has_dispatch or op.has_response for op in ops):
        out += ["drop_call", "mismatched_names"]
    if ops:
        out.append("duplicate_call_id")
    if sum(op.has_dispatch for op in ops) >= 2:
        out.append("reused_operation_id")
    per_inv: dict[str, int] = {}
    for e in ev:
        per_inv[e["invocationId"]] = per_inv.get(e["invocationId"], 0) + 1
    if any(n >= 2 for n in per_inv.values()):
        out.append("identity_drift")
    if any(_lane_of(e) != "ordinary" for e in ev):
        out += ["lane_smuggling", "partial_tool_fact"]
    return out


@st.composite
def corrupt_ledgers(
    draw: Callable[[Any], Any],
    corruptions: Sequence[str] = CORRUPTIONS,
    **ledger_kwargs: Any,
) -> CorruptLedger:
    """A healthy ledger (``ledger_kwargs`` go to :func:`ledgers`) with one corruption from
    ``corruptions`` applied. The corruption is drawn first, uniformly; a ledger it cannot be
    applied to is rejected (``hypothesis.assume``), so properties using this strategy may
    need ``suppress_health_check=[HealthCheck.filter_too_much]`` for rare corruptions."""
    unknown = set(corruptions) - set(CORRUPTIONS)
    if unknown or not corruptions:
        raise ValueError(f"unknown corruptions: {sorted(unknown)}" if unknown else "no corruption requested")
    # The corruption is chosen first (uniformly), then a ledger it applies to.
    name = draw(_pick(tuple(sorted(set(corruptions), key=CORRUPTIONS.index))))
    kwargs = dict(ledger_kwargs)
    kwargs.setdefault("min_events", 1)
    if name in _NEEDS_BUNDLE:
        kwargs["recovery"] = "always"
    if name in _NEEDS_TWO_DISPATCHES:
        kwargs.setdefault("dispatch_weight", 10)
    base = draw(ledgers(**kwargs))
    assume(name in _applicable(base))
    events, detail, witness = _apply(draw, base, name)
    return CorruptLedger(events=tuple(events), corruption=name, detail=detail, witness=witness, base=base)
