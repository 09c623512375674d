"""``checkpoint.*``: the ``workspace.checkpoint`` capability (``docs/protocol.md`` §4.6,
docs/spec-phase4.md §10).

Why two kinds of operation under one capability:

* the **carrier** operations (``capture``, ``verify``, ``compare``, ``restore``, ``list``,
  ``collect``, ``eligibility``) are the Git carrier of spec-phase4 §3 exactly: they read no
  facts and never resolve a workspace marker (a marker file would itself change the user's
  worktree, which §3.9 forbids), so the harness names the workspace identity;
* the **runtime** operations (``run_turn``, ``resume``) are ``maka-ref run --checkpoints`` and
  ``maka-ref resume [--rebaseline]``: a turn with the §5.1 capture points, and a resume behind
  the §6.2 gate — the only place that decides whether a workspace may be resumed (§3.1).

Every failure is a §11 code (``CheckpointError`` and the boundary room's ``CommandError`` are
both ``MakaRefError``-like values the dispatcher turns into error values).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from maka_ref.adapter._errors import OpError, invalid_params
from maka_ref.adapter._params import opt_str, req_object, req_str, workspace
from maka_ref.adapter._workspace import owned_workspace

__all__ = ["CHECKPOINT_OPERATIONS"]

Params = Mapping[str, Any]


def _carrier(params: Params | None = None) -> Any:
    """The reference carrier, its §8 steps wired to the failpoint registry (``faults.arm``).

    With ``params.policy`` (spec-phase4 §10.2 ``policy?``) it holds that §2.1 document instead
    of the default one: the harness passes small limits to reach the §3.3 check 17 codes and
    the limit reasons of ``checkpoint_policy_violation`` without writing gigabytes. A bad
    document is ``invalid_checkpoint_policy``, before anything is read.
    """
    from maka_ref._boundary.capture import carrier_failpoints, default_carrier

    if params is None or "policy" not in params:
        return default_carrier()
    from maka_ref._checkpoint import GitCheckpointCarrier, decode_policy

    policy = _coded(lambda: decode_policy(params["policy"]))
    return GitCheckpointCarrier(policy=policy, on_step=carrier_failpoints)


def _coded(call: Callable[[], Any]) -> Any:
    from maka_ref._checkpoint import CheckpointError

    try:
        return call()
    except CheckpointError as error:
        raise OpError(error.code, error.message, dict(error.details) or None) from None


def policy_hash(params: Params) -> dict[str, Any]:
    """§2.4 (pure): the hash of a §2.1 policy document, or ``invalid_checkpoint_policy``."""
    from maka_ref._checkpoint import decode_policy
    from maka_ref._checkpoint import policy_hash as hash_of

    if "policy" not in params:
        raise invalid_params("params.policy is required")
    return {"policyHash": _coded(lambda: hash_of(decode_policy(params["policy"])))}


def boundary_encode(params: Params) -> dict[str, Any]:
    """§1.2 (pure): the canonical text of a boundary, or ``invalid_workspace_boundary``."""
    from maka_ref._events.boundary import encode_workspace_boundary

    if "boundary" not in params:
        raise invalid_params("params.boundary is required")
    return {"canonical": _pointed(lambda: encode_workspace_boundary(params["boundary"]))}


def boundary_decode(params: Params) -> dict[str, Any]:
    """§1.2 (pure): the boundary a text holds, or ``invalid_workspace_boundary`` with a pointer."""
    from maka_ref._codec import thaw
    from maka_ref._events.boundary import decode_workspace_boundary

    text = req_str(params, "text")
    return {"boundary": thaw(_pointed(lambda: decode_workspace_boundary(text)))}


def _pointed(call: Callable[[], Any]) -> Any:
    """§1.2: the pointer is ``details.detail`` even when it is ``""`` (the object itself)."""
    from maka_ref._events.boundary import WorkspaceBoundaryError

    try:
        return call()
    except WorkspaceBoundaryError as error:
        raise OpError(error.code, error.message, {"detail": error.pointer}) from None


def eligibility(params: Params) -> dict[str, Any]:
    return _coded(lambda: _carrier(params).eligibility(workspace(params)).as_json())


def capture(params: Params) -> dict[str, Any]:
    ws, identity = workspace(params), req_str(params, "workspaceIdentity")
    result = _coded(lambda: _carrier(params).capture(ws, identity))
    out: dict[str, Any] = {"checkpointRef": result.checkpoint_ref, "commitOid": result.commit_oid,
                           "treeOid": result.tree_oid, "policyHash": result.policy_hash,
                           "fileCount": result.file_count, "totalBytes": result.total_bytes}
    if result.base_commit_oid is not None:
        out["baseCommitOid"] = result.base_commit_oid
    return out


def verify(params: Params) -> dict[str, Any]:
    ws, ref, policy = workspace(params), req_str(params, "checkpointRef"), req_str(params, "policyHash")
    verified = _coded(lambda: _carrier(params).verify(ws, ref, policy))
    return {"commitOid": verified.commit_oid, "treeOid": verified.tree_oid, "fileCount": verified.file_count,
            "totalBytes": verified.total_bytes}


def compare(params: Params) -> dict[str, Any]:
    ws, ref, policy = workspace(params), req_str(params, "checkpointRef"), req_str(params, "policyHash")
    drift = _coded(lambda: _carrier(params).compare(ws, ref, policy))
    return drift.as_json()


def restore(params: Params) -> dict[str, Any]:
    ws, ref, policy = workspace(params), req_str(params, "checkpointRef"), req_str(params, "policyHash")
    destination = req_str(params, "destination")
    result = _coded(lambda: _carrier(params).restore(ws, ref, policy, destination))
    return {"path": result.path, "commitOid": result.commit_oid, "treeOid": result.tree_oid,
            "fileCount": result.file_count}


def list_(params: Params) -> dict[str, Any]:
    ws, identity = workspace(params), opt_str(params, "workspaceIdentity")
    listed = _coded(lambda: _carrier().list(ws, identity))
    return {"checkpoints": [item.to_json() for item in listed]}


def collect(params: Params) -> dict[str, Any]:
    ws, identity = workspace(params), req_str(params, "workspaceIdentity")
    live = params.get("liveRefs")
    if not isinstance(live, list) or not all(isinstance(ref, str) for ref in live):
        raise invalid_params("params.liveRefs must be an array of strings")
    grace, now = params.get("graceSeconds"), params.get("nowMs")
    if not isinstance(grace, (int, float)) or isinstance(grace, bool) or grace < 0:
        raise invalid_params("params.graceSeconds must be a number >= 0")
    if not isinstance(now, int) or isinstance(now, bool):
        raise invalid_params("params.nowMs must be an integer")
    result = _coded(lambda: _carrier().collect(ws, identity, live, grace_seconds=grace, now_ms=now))
    return {"collected": list(result.collected), "kept": list(result.kept)}


def run_turn(params: Params) -> dict[str, Any]:
    """``maka-ref run --checkpoints``: B0/B1 captured and committed as boundary facts (§5.1)."""
    from maka_ref._boundary.commands import run_with_checkpoints
    from maka_ref._continuation.sidecar import write_script_sidecar
    from maka_ref._runtime import ScriptError, load_script, new_seed

    root = owned_workspace(workspace(params))
    raw = req_object(params, "script")
    try:
        load_script(raw)
    except ScriptError as exc:
        error = invalid_params(f"params.script: {exc.message}")
        error.details = {"code": exc.code}
        raise error from None
    seed = new_seed()
    write_script_sidecar(os.path.realpath(root), f"run_{seed}", load_script(raw))
    summary, report = run_with_checkpoints(root, raw, seed=seed)
    out = summary.to_json()
    out["workspaceCheckpoints"] = report
    return out


def resume(params: Params) -> dict[str, Any]:
    """``maka-ref resume [--rebaseline | --restore-into DEST]``: the §6.2 gate decides; the carrier
    only observes. ``workspaceIntent`` is ``"none"``, ``"rebaseline"`` (§7.1) or
    ``{"isolatedRestore": DEST}`` (§7.2, §10.3); a committed transition's fact payload is answered
    under ``rebaseline`` or ``isolatedRestore``. A bad DEST is refused before anything is claimed
    with the §3.6 step 1 code (``restore_target_invalid``/``_exists``/``_inside_workspace``)."""
    from maka_ref._boundary.commands import resume_with_intent

    root = owned_workspace(workspace(params))
    intent = params.get("workspaceIntent", "none")
    destination: str | None = None
    if isinstance(intent, Mapping):
        destination = intent.get("isolatedRestore")
        if set(intent) != {"isolatedRestore"} or not isinstance(destination, str) or not destination:
            raise invalid_params('params.workspaceIntent must be "none", "rebaseline" or {"isolatedRestore": DEST}')
        intent = "restore"
    elif intent not in ("none", "rebaseline"):
        raise invalid_params('params.workspaceIntent must be "none", "rebaseline" or {"isolatedRestore": DEST}')
    outcome, fact = resume_with_intent(root, opt_str(params, "sessionId"), intent=intent, destination=destination,
                                       flag=True)
    out = outcome.to_json()
    if fact is not None:
        out["isolatedRestore" if intent == "restore" else "rebaseline"] = fact
    return out


CHECKPOINT_OPERATIONS: dict[str, Callable[[Params], dict[str, Any]]] = {
    "checkpoint.policy_hash": policy_hash,
    "checkpoint.boundary_encode": boundary_encode,
    "checkpoint.boundary_decode": boundary_decode,
    "checkpoint.eligibility": eligibility,
    "checkpoint.capture": capture,
    "checkpoint.verify": verify,
    "checkpoint.compare": compare,
    "checkpoint.restore": restore,
    "checkpoint.list": list_,
    "checkpoint.collect": collect,
    "checkpoint.run_turn": run_turn,
    "checkpoint.resume": resume,
}
