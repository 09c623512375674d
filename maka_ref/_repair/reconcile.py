"""The finalize-only reconciler of Phase 3 (spec-phase3 §5).

For an unsettled operation (T1 committed, no T2) that carries file evidence, the reconciler
*observes* the evidence's canonical target (the bounded, no-follow observer of
:mod:`maka_ref._reconcile.observer`, stricter than the tools' own confinement), classifies the
observation (spec-phase3 §4.4) and commits exactly one recovery bundle through the store's
single recovery writer (``RuntimeStore.commit_tool_recovery_bundle``, spec 30 §2.5):

* ``matches_expected_state`` → a *completed* bundle whose outcome is the evidence's
  production-shaped ``result``; the file is **never touched** (finalize means facts only);
* ``matches_prior_state`` → parked ``reconcile_matches_prior_state``: never a redo, because
  ``rename`` is no compare-and-swap (spec-phase3 §5.4);
* ``diverged`` → parked ``reconcile_diverged``: an outside change is never overwritten;
* ``unreadable`` → parked ``reconcile_unreadable`` — except a *transient* reason (the
  observer's own ``EMFILE``…), which commits nothing (``reconcile_observer_unavailable``).

Everything else stops before observing, with one of the closed codes of spec-phase3 §6:
``reconcile_run_sealed``, ``reconcile_no_evidence`` (every generic tool and every pre-Phase-3
operation keeps parking), ``reconcile_evidence_invalid``, ``reconcile_workspace_mismatch``;
a bundle refused because the operation was settled meanwhile (another reconciler, a late T2) is
``reconcile_already_settled``. One operation's stop never prevents the next.

Failpoints (spec-phase3 §5.6): ``reconcile_after_observation``, ``reconcile_after_decision``,
and ``reconcile_inside_bundle`` (the bundle writer's ``after_recovery_reconcile`` reached while
this module commits). Bundle ids are deterministic (``<op>_reconcile``, ``<op>_response``,
``<op>_decision``, §5.2) so racing reconcilers collide in the store instead of adding up.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from maka_ref._reconcile import (
    FileEvidence,
    Invalid,
    ObservedState,
    check_binding,
    classify,
    observation_digest,
    observe_evidence,
)
from maka_ref._store.engine.failpoints import failpoint, reached_by_reconciler
from maka_ref._store.errors import RunSealedError, StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.identity import read_workspace_identity

__all__ = [
    "RECONCILE_CODES",
    "ReconcileResult",
    "reconcile_operation",
    "reconcile_store",
]

#: The reconciler's closed codes (spec-phase3 §6).
RECONCILE_CODES: Final = (
    "reconcile_run_sealed",
    "reconcile_no_evidence",
    "reconcile_evidence_invalid",
    "reconcile_workspace_mismatch",
    "reconcile_observer_unavailable",
    "reconcile_already_settled",
)
_SETTLED_CODES: Final = frozenset({"already_settled", "duplicate_event_id", "compare_and_set_failed"})

Clock = Callable[[], int]


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """One operation's answer (the ``operations[]`` item of spec-phase3 §6 ``runtime.reconcile``).

    ``outcome``: ``completed`` / ``parked`` (a bundle was committed), ``already_settled``, or
    ``skipped`` (nothing committed; ``code`` says why, ``detail`` is for people)."""

    operation_id: str
    outcome: str
    observation: str | None = None
    reason_code: str | None = None
    code: str | None = None
    detail: str | None = None
    observed: ObservedState | None = None

    @property
    def committed(self) -> bool:
        return self.outcome in ("completed", "parked")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operationId": self.operation_id, "outcome": self.outcome}
        if self.observation is not None:
            out["observation"] = self.observation
        if self.reason_code is not None:
            out["reasonCode"] = self.reason_code
        if self.code is not None:
            out["code"] = self.code
        if self.detail is not None:
            out["detail"] = self.detail
        if self.observed is not None:
            out["observed"] = self.observed.to_json()
        return out


def _skip(operation_id: str, code: str, detail: str | None = None, **more: Any) -> ReconcileResult:
    outcome = "already_settled" if code == "reconcile_already_settled" else "skipped"
    return ReconcileResult(operation_id, outcome, code=code, detail=detail, **more)


def _bundle(evidence: FileEvidence, call: Any, observation: str, digest: str, decision: tuple[str, str], ts: int
            ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """The three events of spec-phase3 §5.2 (deterministic ids, the operation's identity)."""
    op = evidence.operation_id
    refs = {"operationId": op, "toolCallId": evidence.provider_tool_call_id}

    def envelope(event_id: str, role: str) -> dict[str, Any]:
        return {
            "id": event_id, "sessionId": call["sessionId"], "invocationId": call["invocationId"],
            "runId": call["runId"], "turnId": call["turnId"], "ts": ts, "partial": False,
            "role": role, "author": role, "refs": dict(refs),
        }

    reconcile = envelope(f"{op}_reconcile", "system")
    reconcile["actions"] = {"toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 1, "payload": {
        "protocol": "tool_reconcile_v1", "operationId": op, "observation": observation,
        "observationSchema": "state_identity_v1", "observationDigest": digest,
    }}}
    disposition, reason = decision
    evidence_ids = [evidence.call_event_id, evidence.dispatch_event_id, reconcile["id"]]
    outcome = None
    payload: dict[str, Any] = {"protocol": "tool_recovery_v1", "operationId": op, "disposition": disposition,
                               "reasonCode": reason}
    if disposition == "completed":
        outcome = envelope(f"{op}_response", "tool")
        outcome["content"] = {"kind": "function_response", "id": evidence.provider_tool_call_id,
                              "name": evidence.tool_name, "result": evidence.to_json()["result"]}
        payload["outcomeEventId"] = outcome["id"]
        evidence_ids.append(outcome["id"])
    payload["evidenceEventIds"] = evidence_ids
    decision_event = envelope(f"{op}_decision", "system")
    decision_event["actions"] = {"toolRecovery": {"kind": "maka.tool.recovery_decision", "version": 1,
                                                  "payload": payload}}
    return reconcile, decision_event, outcome


def reconcile_operation(
    store: RuntimeStore, root: str | os.PathLike[str], operation_id: str, *, clock: Clock
) -> ReconcileResult:
    """spec-phase3 §5.1 for one operation of ``store`` whose workspace is ``root``."""
    operation = store.read_tool_operation(operation_id)
    if operation is None or operation.dispatch_event_id is None:
        return _skip(operation_id, "reconcile_no_evidence", "no dispatched operation with this id")
    if operation.current_state != "prepared" or operation.result_event_id is not None:
        return _skip(operation_id, "reconcile_already_settled", f"state {operation.current_state}")
    events = store.read_tool_t1_events(operation_id)
    if events is None:
        return _skip(operation_id, "reconcile_no_evidence", "T1 events are missing")
    call, dispatch = events
    if store.is_run_sealed(call["sessionId"], call["runId"]):  # step 1
        return _skip(operation_id, "reconcile_run_sealed")
    evidence = store.read_tool_evidence(operation_id)  # step 2
    if evidence is None:
        return _skip(operation_id, "reconcile_no_evidence")
    if isinstance(evidence, Invalid):  # step 3
        return _skip(operation_id, "reconcile_evidence_invalid", evidence.code)
    problem = check_binding(evidence, call, dispatch)
    if problem is not None:
        return _skip(operation_id, "reconcile_evidence_invalid", problem.code)
    try:  # step 4: read-only, never creating a marker
        identity = read_workspace_identity(root)
    except Exception as exc:  # noqa: BLE001 - an unreadable marker is not this workspace
        return _skip(operation_id, "reconcile_workspace_mismatch", f"{type(exc).__name__}: {exc}")
    if identity is None or identity.identity != evidence.workspace_identity:
        found = None if identity is None else identity.identity
        return _skip(operation_id, "reconcile_workspace_mismatch", f"workspace is {found}")
    observed = observe_evidence(identity.workspace_path, evidence, durable=True)  # step 5
    failpoint("reconcile_after_observation")
    verdict = classify(evidence, observed)  # step 6
    if verdict.transient:
        return _skip(operation_id, "reconcile_observer_unavailable", observed.reason, observed=observed)
    ts = max(clock(), int(dispatch["ts"]))  # step 7
    reconcile, decision, outcome = _bundle(
        evidence, call, verdict.observation, observation_digest(evidence, observed),
        (verdict.disposition, verdict.reason_code), ts,
    )
    failpoint("reconcile_after_decision")
    try:  # step 8
        with reached_by_reconciler():
            store.commit_tool_recovery_bundle(operation_id, reconcile, decision, outcome)
    except RunSealedError:
        return _skip(operation_id, "reconcile_run_sealed", observed=observed)
    except StoreError as exc:
        if exc.code in _SETTLED_CODES or "already settled" in str(exc):
            return _skip(operation_id, "reconcile_already_settled", str(exc), observed=observed)
        raise
    return ReconcileResult(
        operation_id, verdict.disposition, verdict.observation, verdict.reason_code, observed=observed
    )


def reconcile_store(
    store: RuntimeStore,
    root: str | os.PathLike[str],
    *,
    clock: Clock,
    operation_id: str | None = None,
    session_id: str | None = None,
    run_id: str | None = None,
) -> list[ReconcileResult]:
    """Every unsettled operation (or just ``operation_id``), in (invocation, operation) order;
    ``session_id``/``run_id`` narrow it to one run (what repair does before sealing it)."""
    if operation_id is not None:
        return [reconcile_operation(store, root, operation_id, clock=clock)]
    results = []
    for op in store.list_unsettled_operations(session_id):
        if run_id is not None:
            record = store.read_tool_operation(op)
            if record is None or record.run_id != run_id:
                continue
        results.append(reconcile_operation(store, Path(root), op, clock=clock))
    return results
