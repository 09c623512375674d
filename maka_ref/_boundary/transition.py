"""The rebaseline transition — "continue from the current files" (spec-phase4 §6.3, §7.1, §7.3).

Order (§7.1): the Phase 1 plan and the durable claim come first (``resume_session``); the §6.2
checks (a)–(c), (e), (f) replace the full list, and only the park reasons §6.3 lists may be
rebaselined; then, inside the continuation executor, the current workspace is captured (the
carrier's ``after_checkpoint_ref_created`` is the step ``after_rebaseline_captured``), and the
``maka.workspace.rebaselined`` fact is inserted at seq 2 **in the transaction of the
continuation-start** (seq 1) with ``workspaceEpoch`` = previous + 1, high-water 1 and the
digest of the target's prefix ``[continuation-start]`` — the store recomputes it (§1.3 rule 2).

``affectedPaths``: the paths whose entry (mode or blob) differs between the previous boundary's
tree and the new one, sorted by UTF-8 bytes, at most 1000; ``affectedPathsComplete`` is false
when the previous tree cannot be read (its artifact is missing or corrupt: every file must be
reread, §4.2) or the list is truncated.

Not done here (stated): the model notice of §7.1 step 5 (the scripted provider reads no
notices), and isolated restore as a transition (§7.2; ``checkpoint restore`` materializes only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from maka_ref._boundary.capture import ref_resolver
from maka_ref._boundary.gate import check_workspace_boundary
from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from maka_ref._events.boundary import AFFECTED_PATHS_MAX, REBASELINED_KIND
from maka_ref._events.encode import encode_runtime_event
from maka_ref._plan.continuation.shapes import park
from maka_ref._store.reads import read_immutable_prefix
from maka_ref._store.workspace.boundary import current_epoch, insert_boundary_fact
from maka_ref._store.workspace.identity import resolve_workspace_identity

__all__ = ["REBASELINE_ALLOWED", "Rebaseline", "affected_paths"]

#: §6.3: the park reasons a user may rebaseline.
REBASELINE_ALLOWED = frozenset({
    "workspace_content_drift", "workspace_boundary_stale", "workspace_checkpoint_missing",
    "workspace_checkpoint_corrupt", "workspace_checkpoint_policy_mismatch",
})


def affected_paths(previous: Mapping[bytes, tuple[int, str]] | None,
                   current: Mapping[bytes, tuple[int, str]]) -> tuple[list[str], int, bool]:
    """``(paths, count, complete)`` of §7.1 step 3 from two ``path → (mode, oid)`` maps."""
    if previous is None:
        return [], 0, False
    changed = sorted(p for p in set(previous) | set(current) if previous.get(p) != current.get(p))
    listed = changed[:AFFECTED_PATHS_MAX]
    return [p.decode("utf-8") for p in listed], len(changed), len(changed) == len(listed)


def _tree(carrier: GitCheckpointCarrier, workspace: str, ref: str, policy_hash: str) -> dict[bytes, tuple[int, str]] | None:
    try:
        verified = carrier.verify(workspace, ref, policy_hash)
    except CheckpointError:
        return None
    return {entry.path: (entry.mode, entry.oid) for entry in verified.entries}


@dataclass
class Rebaseline:
    """The gate and the start transition of one rebaseline (pass both to ``resume_session``)."""

    workspace: str
    carrier: GitCheckpointCarrier
    previous: Mapping[str, Any] | None = None
    checks: Any = None
    fact: dict[str, Any] | None = field(default=None)

    def gate(self, world: Any, session_id: str, source_run_id: str) -> Any:
        """§6.3: refused unless (a)–(c), (e), (f) pass and the full check's reason is rebaselinable
        (a workspace that passes every check may be rebaselined too: nothing changed, so the
        new boundary lists no affected path — a choice, §6.3 is silent)."""
        resolve = lambda path: resolve_workspace_identity(path).identity
        full = check_workspace_boundary(world.store, session_id, source_run_id, self.workspace, self.carrier, resolve)
        self.checks = full
        if not full.checkpoint_mode:
            return park("workspace_checkpoint_unavailable", "the session has no workspace boundary to rebaseline")
        if full.check == "e":
            return park("workspace_rebaseline_identity_mismatch", "rebaseline binds the current directory only")
        if full.reason is not None and full.reason not in REBASELINE_ALLOWED:
            return park(full.reason, full.message, full.detail)
        self.previous = full.boundary
        return None

    def start_transition(self, conn: Any, start: Mapping[str, Any]) -> None:
        """Inside the start's transaction: capture, build and insert the rebaselined fact."""
        identity = resolve_workspace_identity(self.workspace).identity
        captured = self.carrier.capture(self.workspace, identity)  # step after_rebaseline_captured
        session_id, run_id = start["sessionId"], start["runId"]
        prefix = read_immutable_prefix(conn, session_id, run_id, 1)
        previous = self.previous
        old_tree = None if previous is None else _tree(
            self.carrier, self.workspace, previous["checkpointRef"], previous["checkpointPolicyHash"])
        new_tree = _tree(self.carrier, self.workspace, captured.checkpoint_ref, captured.policy_hash) or {}
        paths, count, complete = affected_paths(old_tree, new_tree)
        boundary = {
            "workspaceIdentity": identity, "workspaceEpoch": current_epoch(conn, session_id) + 1,
            "immutableRuntimeHighWater": 1, "immutableRuntimeDigest": prefix.prefix_digest,
            "checkpointRef": captured.checkpoint_ref, "checkpointPolicyHash": captured.policy_hash,
        }
        payload: dict[str, Any] = {"protocol": "workspace_rebaselined_v1", "boundary": boundary,
                                   "affectedPaths": paths, "affectedPathCount": count,
                                   "affectedPathsComplete": complete}
        if previous is not None:
            payload["previous"] = dict(previous)
        event = {
            "id": f"{run_id}_workspace_rebaselined", "sessionId": session_id,
            "invocationId": start["invocationId"], "runId": run_id, "turnId": start["turnId"],
            "ts": start["ts"], "partial": False, "role": "system", "author": "system",
            "actions": {"workspaceBoundary": {"kind": REBASELINED_KIND, "version": 1, "payload": payload}},
        }
        insert_boundary_fact(conn, encode_runtime_event(event), start["ts"],
                             ref_resolver(self.carrier, self.workspace, identity, captured.commit_oid))
        self.fact = payload
