"""``runtime.*``: the live loop, startup repair and Phase 1 resume (``docs/protocol.md`` §4.3).

Why these wrappers are thin: the reference already has one entry point per operation
(``run_turn``, ``repair_workspace``, ``resume_session``, the same ones ``maka-ref run`` /
``repair`` / ``resume`` call). The adapter only adds what the protocol fixes:

* ``runtime.run_turn`` writes the script sidecar first (exactly like ``maka-ref run``), so a
  later ``runtime.resume`` — possibly in a new process after a kill — can replay the script;
  its ``toolCalls`` entries gain the protocol keys ``toolName`` and ``status`` (``ok``,
  ``error`` for an ``isError`` result, ``refused`` for a call refused before T1) next to the
  reference's own keys;
* ``runtime.resume`` runs with the safe-boundary flag on (protocol §4.3), whatever the
  environment says;
* ``runtime.reconcile`` (capability ``runtime.reconcile``, protocol §4.3.1, spec-phase3 §6)
  runs the finalize-only reconciler ``maka-ref reconcile`` runs, over one operation or every
  unsettled one; ``runtime.repair`` reconciles before sealing only when asked
  (``"reconcile": true``), so that the spec 20 §4 meaning of a plain repair — which the
  recovery level's clauses rely on — does not change for a runtime that claims reconcile.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from maka_ref.adapter._errors import invalid_params
from maka_ref.adapter._params import opt_bool, opt_str, req_object, workspace
from maka_ref.adapter._workspace import owned_workspace

__all__ = ["RUNTIME_OPERATIONS", "reconcile", "repair", "resume", "run_turn"]

Params = Mapping[str, Any]


def _tool_call(outcome: Mapping[str, Any]) -> dict[str, Any]:
    if outcome.get("boundary") == "pre_t1_synthetic":
        status = "refused"
    else:
        status = "error" if outcome.get("isError") else "ok"
    return {"operationId": outcome["operationId"], "toolName": outcome["name"], "status": status, **outcome}


def run_turn(params: Params) -> dict[str, Any]:
    from maka_ref._continuation.sidecar import write_script_sidecar
    from maka_ref._runtime import ScriptError, load_script, new_seed
    from maka_ref._runtime import run_turn as _run_turn

    root = owned_workspace(workspace(params))
    try:
        script = load_script(req_object(params, "script"))
    except ScriptError as exc:
        error = invalid_params(f"params.script: {exc.message}")
        error.details = {"code": exc.code}
        raise error from None
    seed = new_seed()
    write_script_sidecar(os.path.realpath(root), f"run_{seed}", script)  # what a later resume replays
    summary = _run_turn(root, script, seed=seed).to_json()
    summary["toolCalls"] = [_tool_call(call) for call in summary["toolCalls"]]
    return summary


def repair(params: Params) -> dict[str, Any]:
    from maka_ref._repair import repair_workspace

    # spec-phase3 §5.5/§6: reconciling before sealing is asked for explicitly (protocol §4.3.1);
    # without ``reconcile`` a repair stays spec 20 §4 exactly. The dispatcher refuses the
    # parameter when runtime.reconcile is not claimed.
    return repair_workspace(owned_workspace(workspace(params)), reconcile=opt_bool(params, "reconcile", False)).to_json()


def reconcile(params: Params) -> dict[str, Any]:
    """spec-phase3 §6 ``runtime.reconcile``: the items of ``maka-ref reconcile`` (docs/reconcile.md)."""
    from maka_ref._repair import reconcile_workspace

    root = owned_workspace(workspace(params))
    results = reconcile_workspace(root, operation_id=opt_str(params, "operationId"))
    return {"operations": [result.to_json() for result in results]}


def resume(params: Params) -> dict[str, Any]:
    from maka_ref._continuation import resume_session

    return resume_session(owned_workspace(workspace(params)), opt_str(params, "sessionId"), flag=True).to_json()


RUNTIME_OPERATIONS: dict[str, Callable[[Params], dict[str, Any]]] = {
    "runtime.run_turn": run_turn,
    "runtime.repair": repair,
    "runtime.resume": resume,
    "runtime.reconcile": reconcile,
}
