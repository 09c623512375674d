"""Safe-boundary gates: ``build_safe_boundary_continuation_plan`` (spec 20 §3.6).

Why this exists: this is the one pure decision "may this committed boundary be continued
*now*, in *this* workspace, with *this* tool catalog?". Everything it needs is a plain fact
handed in by the caller (the planner of :mod:`.planner`, or a test); it reads nothing.

Two modes:

* **composite (v2)** — ``continuation_replay_plan`` is a replayable
  :class:`~maka_ref._plan.prefix.replay.CompositeReplayPlan`. Phase 0 is *not* run: the
  composite replay is the only tool-state/suffix gate (a trimmed
  ``definitely_not_dispatched`` call is not re-flagged).
* **legacy** — no composite plan: the Phase 0 plan over ``events`` (with the effective
  expected high-water) runs first; its reasons and diagnostics are prepended, and a
  non-``safe_replay`` Phase 0 forces ``park``.

Effective expected high-water = the checkpoint's ``runtimeEventHighWater`` when a
checkpoint is given, else ``expected_runtime_event_high_water`` (§9 item 12).

Phase-1 checks in this exact order (reasons appended in this order, all applicable ones
reported together; §9 item 11):

====  =========================================================  ==================================
 a    pending non-partial ``permissionRequest`` in the immediate  ``pending_permission`` (one
      source events, not later cleared                            diagnostic per request)
 b    composite, expected high-water ≠ last ``lastEventSeq``      ``runtime_offset_mismatch``
 c    no events                                                   ``runtime_ledger_empty``
 d    an event whose identity differs from the first event's      ``runtime_identity_mismatch``
 e    a target id equals the source's                             ``continuation_identity_reused``
 f    ``ledger_readable`` false                                   ``runtime_ledger_unreadable``
 g    ``terminal_repair_succeeded`` false                         ``terminal_repair_failed``
 h    normalized cwd differs                                      diagnostic ``workspace_location_changed``
 i    workspace identities differ                                 ``workspace_identity_mismatch``
 j    background operations not settled                           ``background_operation_pending``
 k    checkpoint without ref / not restored                       ``workspace_ref_missing`` /
                                                                  ``checkpoint_restore_failed``
 l    a ``function_call`` name of the runtime context missing     ``tool_catalog_mismatch``
      from ``available_tool_names`` (superset allowed)
 m    first provider role ≠ ``user``                              ``provider_resume_head_unsupported``
 n    last provider role ∉ {``user``, ``tool``}                   ``provider_resume_boundary_unsupported``
====  =========================================================  ==================================

(m)/(n) need events and no identity mismatch (§9 item 10). Roles: composite → provider
items (``text`` → its role, ``tool_result`` → ``tool``, ``thinking``/``tool_call`` →
``assistant``); legacy → the RuntimeEvent role of the first/last event with model-visible
content in the runtime context (prior context ++ Phase 0 replay).

Workspace: identity is the gate, cwd only a diagnostic (§6.4, §9 item 8); the cwd
normalization is :func:`normalize_cwd`, the same rule as ``_store.workspace.normalize_cwd``
(the pure core does not import the store layer; a test pins the two together).

Never raises for odd event values; never mutates its input. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maka_ref._events.predicates import has_model_visible_content, is_partial_event
from maka_ref._plan.phase0.plan import PlanDiagnostic, build_resume_plan
from maka_ref._plan.prefix.replay import CompositeReplayPlan

from .shapes import (
    ContinuationIdentity,
    RuntimeContinuation,
    SafeBoundaryContinuationPlan,
    SafetySnapshot,
    WorkspaceCheckpoint,
    utf16_sorted_unique,
)

__all__ = ["build_safe_boundary_continuation_plan", "normalize_cwd", "provider_item_role"]

_CLEARING_ACTIONS = ("permissionDecision", "permissionAnswerAccepted", "permissionClosureAccepted")
_DRIVE = re.compile(r"[A-Za-z]:/")


def normalize_cwd(cwd: Any) -> Any:
    """§3.6 (h): ``\\`` → ``/``, trailing ``/`` stripped, lower-cased if it starts ``X:/``."""
    if type(cwd) is not str:
        return cwd
    normalized = cwd.replace("\\", "/").rstrip("/")
    if _DRIVE.match(normalized):
        normalized = normalized.lower()
    return normalized


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _identity(event: Any) -> tuple[Any, Any, Any, Any]:
    return (_get(event, "sessionId"), _get(event, "invocationId"), _get(event, "runId"), _get(event, "turnId"))


def provider_item_role(item: Any) -> str | None:
    """§3.6 (m)/(n) composite role of a provider item."""
    kind = _get(item, "kind")
    if kind == "text":
        role = _get(item, "role")
        return role if type(role) is str else None
    if kind == "tool_result":
        return "tool"
    if kind in ("thinking", "tool_call"):
        return "assistant"
    return None


def _pending_permissions(events: Sequence[Any]) -> list[tuple[str, Any]]:
    """(a): ``(requestId, request event)`` pairs not later cleared, in request order."""
    pending: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, Mapping) or is_partial_event(event):
            continue
        actions = _get(event, "actions")
        if not isinstance(actions, Mapping):
            continue
        for key in _CLEARING_ACTIONS:
            request_id = _get(actions.get(key), "requestId")
            if type(request_id) is str:
                pending.pop(request_id, None)
        request_id = _get(actions.get("permissionRequest"), "requestId")
        if type(request_id) is str and request_id not in pending:
            pending[request_id] = event
    return list(pending.items())


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _diag(code: str, message: str, event: Any = None, detail: Mapping[str, Any] | None = None) -> PlanDiagnostic:
    event_id = _get(event, "id")
    return PlanDiagnostic(code, message, event_id=event_id if type(event_id) is str and event_id else None, detail=detail)


def build_safe_boundary_continuation_plan(
    events: Iterable[Any],
    *,
    ledger_readable: bool,
    terminal_repair_succeeded: bool,
    source_cwd: Any,
    current_cwd: Any,
    source_workspace_identity: Any,
    current_workspace_identity: Any,
    background_operations_settled: bool,
    available_tool_names: Iterable[str],
    continuation_identity: ContinuationIdentity | Mapping[str, str],
    continuation_claim_id: str | None = None,
    prior_runtime_context: Iterable[Any] = (),
    continuation_replay_plan: CompositeReplayPlan | None = None,
    expected_runtime_event_high_water: Any = None,
    workspace_checkpoint: WorkspaceCheckpoint | Mapping[str, Any] | None = None,
) -> SafeBoundaryContinuationPlan:
    """Gate one boundary (spec 20 §3.6); see the module docstring for the exact order.

    ``events`` are the immediate source run's events (in composite mode, the immediate
    prefix's events). Returns ``park`` with every applicable reason, or ``continue`` with the
    proposed :class:`RuntimeContinuation`.
    """
    event_list = tuple(events) if not isinstance(events, tuple) else events
    prior = tuple(prior_runtime_context or ())
    if isinstance(continuation_identity, Mapping):
        continuation_identity = ContinuationIdentity(
            continuation_identity.get("invocationId"),  # type: ignore[arg-type]
            continuation_identity.get("runId"),  # type: ignore[arg-type]
            continuation_identity.get("turnId"),  # type: ignore[arg-type]
        )
    checkpoint = WorkspaceCheckpoint.of(workspace_checkpoint)
    expected = checkpoint.runtime_event_high_water if checkpoint is not None else expected_runtime_event_high_water
    composite = continuation_replay_plan if isinstance(continuation_replay_plan, CompositeReplayPlan) else None
    tools = utf16_sorted_unique(available_tool_names)

    # Legacy mode: Phase 0 first.
    phase0 = None
    if composite is None:
        phase0 = build_resume_plan(event_list, expected)
        runtime_context = prior + tuple(phase0.replay_runtime_events)
    else:
        runtime_context = tuple(composite.runtime_context)

    reasons: list[str] = []
    diagnostics: list[PlanDiagnostic] = []

    def reject(code: str, message: str, event: Any = None, detail: Mapping[str, Any] | None = None) -> None:
        reasons.append(code)
        diagnostics.append(_diag(code, message, event, detail))

    # (a) pending permission requests (immediate source only).
    for request_id, event in _pending_permissions(event_list):
        if "pending_permission" not in reasons:
            reasons.append("pending_permission")
        diagnostics.append(
            _diag(
                "pending_permission",
                f"Permission request {request_id} is still pending.",
                event,
                {"requestId": request_id},
            )
        )

    # (b) composite high-water.
    if composite is not None and expected is not None:
        actual = composite.boundary.immediate_source.position.last_event_seq
        if not _is_number(expected) or expected != actual:
            reject(
                "runtime_offset_mismatch",
                "The expected runtime event high-water does not match the immediate source prefix.",
                detail={"expected": expected, "actual": actual},
            )

    # (c) empty ledger.
    if not event_list:
        reject("runtime_ledger_empty", "The source run has no committed runtime events.")

    # (d) identity drift inside the immediate source.
    identity_mismatch = False
    source = _identity(event_list[0]) if event_list else (None, None, None, None)
    for event in event_list[1:]:
        if _identity(event) != source:
            identity_mismatch = True
            reject(
                "runtime_identity_mismatch",
                "A runtime event of the source run carries another session, invocation, run or turn.",
                event,
            )
            break

    # (e) fresh ids must differ from the source ids.
    if event_list and (
        continuation_identity.invocation_id == source[1]
        or continuation_identity.run_id == source[2]
        or continuation_identity.turn_id == source[3]
    ):
        reject("continuation_identity_reused", "The continuation reuses an id of its source run.")

    # (f), (g).
    if not ledger_readable:
        reject("runtime_ledger_unreadable", "The source runtime ledger is unreadable.")
    if not terminal_repair_succeeded:
        reject("terminal_repair_failed", "The source run has no settled terminal state.")

    # (h) cwd: diagnostic only.
    if normalize_cwd(source_cwd) != normalize_cwd(current_cwd):
        diagnostics.append(
            PlanDiagnostic(
                "workspace_location_changed",
                "The workspace path changed since the source run; the workspace identity is unchanged.",
                detail={"sourceCwd": source_cwd, "currentCwd": current_cwd},
            )
        )

    # (i) workspace identity: the hard gate.
    if source_workspace_identity != current_workspace_identity:
        reject(
            "workspace_identity_mismatch",
            "The current workspace is not the workspace of the source run.",
            detail={
                "sourceWorkspaceIdentity": source_workspace_identity,
                "currentWorkspaceIdentity": current_workspace_identity,
            },
        )

    # (j) background operations.
    if background_operations_settled is not True:
        reject("background_operation_pending", "Background operations of the session are still running.")

    # (k) checkpoint.
    if checkpoint is not None:
        if not checkpoint.ref:
            reject("workspace_ref_missing", "The workspace checkpoint has no ref.")
        elif not checkpoint.restored:
            reject(
                "checkpoint_restore_failed",
                "The workspace checkpoint was not restored.",
                detail={"workspaceRef": checkpoint.ref},
            )

    # (l) tool catalog: a superset is fine.
    available = set(tools)
    missing: set[str] = set()
    for event in runtime_context:
        content = _get(event, "content")
        if _get(content, "kind") == "function_call":
            name = _get(content, "name")
            if type(name) is not str or name not in available:
                missing.add(name if type(name) is str else str(name))
    if missing:
        reject(
            "tool_catalog_mismatch",
            "The runtime context calls tools that are not available now.",
            detail={"unavailableToolNames": list(utf16_sorted_unique(missing))},
        )

    # (m), (n) provider head / boundary.
    if event_list and not identity_mismatch:
        if composite is not None:
            roles = [provider_item_role(item) for item in composite.provider_items]
        else:
            roles = [
                _get(event, "role")
                for event in runtime_context
                if not is_partial_event(event) and has_model_visible_content(event)
            ]
        first_role = roles[0] if roles else None
        last_role = roles[-1] if roles else None
        if first_role != "user":
            reject(
                "provider_resume_head_unsupported",
                "The provider history does not start with a user message.",
                detail={"firstRole": first_role},
            )
        if last_role not in ("user", "tool"):
            reject(
                "provider_resume_boundary_unsupported",
                "The provider history does not end at a user message or a tool result.",
                detail={"lastRole": last_role},
            )

    phase0_blocked = phase0 is not None and phase0.disposition != "safe_replay"
    if phase0_blocked or reasons or not event_list:
        head_reasons = tuple(phase0.rejection_reasons) if phase0 is not None else ()
        head_diagnostics = tuple(phase0.diagnostics) if phase0 is not None else ()
        return SafeBoundaryContinuationPlan(
            "park", head_reasons + tuple(reasons), head_diagnostics + tuple(diagnostics)
        )

    first = event_list[0]
    snapshot_checkpoint = (
        (checkpoint.ref, checkpoint.runtime_event_high_water) if checkpoint is not None and checkpoint.ref else None
    )
    snapshot = SafetySnapshot(current_workspace_identity, tools, snapshot_checkpoint)
    if composite is not None:
        immediate = composite.boundary.immediate_source
        source_context = tuple(composite.segments[-1].replay_runtime_events) if len(composite.segments) > 1 else None
        continuation = RuntimeContinuation(
            session_id=immediate.identity.session_id,
            invocation_id=continuation_identity.invocation_id,
            run_id=continuation_identity.run_id,
            turn_id=continuation_identity.turn_id,
            source_invocation_id=immediate.identity.invocation_id,
            source_run_id=immediate.identity.run_id,
            source_turn_id=immediate.identity.turn_id,
            source_runtime_event_high_water=immediate.position.last_event_seq,
            runtime_context=runtime_context,
            safety_snapshot=snapshot,
            source_runtime_context=source_context,
            claim_id=continuation_claim_id,
            boundary=composite.boundary,
            provider_replay_digest=composite.provider_replay_digest,
            provider_projection_version=composite.provider_projection_version,
        )
    else:
        assert phase0 is not None
        continuation = RuntimeContinuation(
            session_id=_get(first, "sessionId"),
            invocation_id=continuation_identity.invocation_id,
            run_id=continuation_identity.run_id,
            turn_id=continuation_identity.turn_id,
            source_invocation_id=_get(first, "invocationId"),
            source_run_id=_get(first, "runId"),
            source_turn_id=_get(first, "turnId"),
            source_runtime_event_high_water=len(event_list),
            runtime_context=runtime_context,
            safety_snapshot=snapshot,
            source_runtime_context=tuple(phase0.replay_runtime_events) if prior else None,
            claim_id=continuation_claim_id,
        )
    return SafeBoundaryContinuationPlan("continue", (), tuple(diagnostics), continuation)

