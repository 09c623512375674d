"""The two workspace transitions: rebaseline — "continue from the current files" — and isolated
restore — "continue from the checkpoint, elsewhere" (spec-phase4 §6.3, §7.1–§7.3, §8).

Both are objects handed to ``resume_session``: ``gate`` (the §6.3 disposition checks, after the
Phase 1 plan), and the object itself as ``start_transition`` (called inside the
continuation-start's transaction to insert the fact at seq 2; ``committed()`` right after that
transaction is the §8 point ``after_workspace_transition_committed``). The isolated restore also
has ``authorize``: it moves the continuation to the destination before the claim is taken.

Rebaseline.

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

The model notice (§7.1 step 5): :func:`rebaseline_notice` derives a text from the fact alone
(the affected paths, or "all files" when the list is incomplete), committed as a ``role:
system`` text event at seq 3 in the same transaction and handed to the provider after the start.
Spec 20 §3.14 allows a continuation's provider history only what is materialized from
RuntimeEvents, and never an extra user message; a system text event is a RuntimeEvent, and the
replay projector skips system text (spec 20 §1.10 step 3), so later generations' replays stay
as they were. The reference's tools keep no per-file "read before edit" state, so there is
nothing else to mark stale (docs/spec-phase4.md §14).

Isolated restore (§7.2). Order: the Phase 1 plan; the §6.2 checks (a)–(d) and (g) (a failed (d)
is ``workspace_restore_not_covering``: restoring B's tree would undo effects the history says
happened); ``authorize`` — the continuation's safety snapshot gets the destination's identity and
the world reports the destination as the session's cwd, so the durable claim's target header
names where the continuation will run (``cwd`` = destination, ``workspaceIdentity`` = the new
one); the claim (spec 20 §3.10); then, inside the start's transaction, the carrier restores
(§3.6: ``after_restore_materialized``, ``after_restore_published``), the destination's identity
is resolved (spec 20 §6.2: a new marker) and the ``maka.workspace.restored`` fact is inserted.

Why the new identity is drawn before the destination exists: the claim is taken before the
restore (a loser of the claim never restores, §9) and its target header must already hold the
identity the continuation runs under. The id is a fresh random v4 UUID; §6.2 publishes it as
the destination's marker, and the identity is re-read from disk: anything else there (a marker
someone wrote meanwhile) refuses the transition with ``workspace_identity_changed`` and the
start does not commit.

Store/cwd split (docs/spec-phase4.md §14): the store stays where it is (the original workspace's
``runtime.sqlite``, effect log, sidecars — the runtime's own files, excluded from every
checkpoint, §2.5); the continuation's header records the destination as its ``cwd`` and the
tools act there. The user's files, index and refs in the original directory are not touched.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from maka_ref._boundary.capture import checkpoint_failpoint, ref_resolver
from maka_ref._boundary.gate import check_workspace_boundary, verify_code
from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from maka_ref._errors import MakaRefError
from maka_ref._events.boundary import (
    AFFECTED_PATHS_MAX,
    REBASELINED_KIND,
    RESTORED_KIND,
)
from maka_ref._events.encode import encode_runtime_event
from maka_ref._plan.continuation.shapes import park
from maka_ref._store.reads import read_immutable_prefix
from maka_ref._store.workspace.boundary import (
    current_epoch,
    insert_boundary_fact,
    insert_transition_notice,
)
from maka_ref._store.workspace.identity import resolve_workspace_identity

__all__ = [
    "AFTER_TRANSITION_COMMITTED",
    "NOTICE_PATHS_SHOWN",
    "REBASELINE_ALLOWED",
    "IsolatedRestore",
    "Rebaseline",
    "TransitionRefused",
    "affected_paths",
    "rebaseline_notice",
]

#: How many affected paths the notice names (the fact lists up to 1000; the rest are counted).
NOTICE_PATHS_SHOWN = 200


def rebaseline_notice(payload: Mapping[str, Any]) -> str:
    """§7.1 step 5: the model's notice, derived only from the ``rebaselined`` payload — files
    changed outside the session, which (or "all files" when the list is incomplete), and that
    they must be reread before earlier contents are relied on."""
    count = int(payload["affectedPathCount"])
    if not payload["affectedPathsComplete"]:
        which = ("Affected: all files — the previous checkpoint could not be read in full or the list was "
                 "truncated, so treat every file as changed.")
    elif count == 0:
        which = "Affected: no file differs from the previous checkpoint."
    else:
        shown = list(payload["affectedPaths"])[:NOTICE_PATHS_SHOWN]
        more = count - len(shown)
        which = f"Affected paths ({count}): " + ", ".join(shown) + (f", and {more} more" if more > 0 else "") + "."
    epoch = payload["boundary"]["workspaceEpoch"]
    return (f"Workspace notice (rebaseline, epoch {epoch}): the files in the workspace changed outside this "
            f"session and the user chose to continue from their current state. {which} Reread any of these "
            "files before relying on what you saw of them earlier; earlier reads of them are stale.")


#: spec-phase4 §8: after the start + transition transaction, before the provider call.
AFTER_TRANSITION_COMMITTED = "after_workspace_transition_committed"


class TransitionRefused(MakaRefError):
    """A transition refused inside the start's transaction (nothing commits): ``code`` is the
    carrier's (§11.2) or ``workspace_identity_changed``; ``details`` as the carrier gave them."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = dict(details or {})


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
    #: The committed notice event (§7.1 step 5); the executor adds it to the provider history.
    model_notice: dict[str, Any] | None = None

    def gate(self, world: Any, session_id: str, source_run_id: str) -> Any:
        """§6.3: refused unless (a)–(c), (e), (f) pass and the full check's reason is rebaselinable
        (a workspace that passes every check may be rebaselined too: nothing changed, so the
        new boundary lists no affected path — a choice, §6.3 is silent)."""
        self.workspace = world.read_session_cwd(session_id)  # the lineage's directory (a restore moves it)
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

    def __call__(self, conn: Any, start: Mapping[str, Any]) -> None:
        self.start_transition(conn, start)

    def committed(self) -> None:
        """§8 ``after_workspace_transition_committed``."""
        checkpoint_failpoint(AFTER_TRANSITION_COMMITTED)

    def start_transition(self, conn: Any, start: Mapping[str, Any]) -> None:
        """Inside the start's transaction: capture, build and insert the rebaselined fact."""
        identity = resolve_workspace_identity(self.workspace).identity
        captured = self.carrier.capture(self.workspace, identity)  # step after_rebaseline_captured
        session_id, run_id = start["sessionId"], start["runId"]
        previous = self.previous
        old_tree = None if previous is None else _tree(
            self.carrier, self.workspace, previous["checkpointRef"], previous["checkpointPolicyHash"])
        new_tree = _tree(self.carrier, self.workspace, captured.checkpoint_ref, captured.policy_hash) or {}
        paths, count, complete = affected_paths(old_tree, new_tree)
        boundary = _transition_boundary(conn, start, identity, captured.checkpoint_ref, captured.policy_hash)
        payload: dict[str, Any] = {"protocol": "workspace_rebaselined_v1", "boundary": boundary,
                                   "affectedPaths": paths, "affectedPathCount": count,
                                   "affectedPathsComplete": complete}
        if previous is not None:
            payload["previous"] = dict(previous)
        event = _fact_event(start, "workspace_rebaselined", REBASELINED_KIND, payload)
        insert_boundary_fact(conn, encode_runtime_event(event), start["ts"],
                             ref_resolver(self.carrier, self.workspace, identity, captured.commit_oid))
        # §7.1 step 5: the notice at seq 3, in the same transaction (it exists iff the fact does);
        # a role-system text event: the provider history of this run shows it, and later
        # generations' replay skips system text (spec 20 §1.10 step 3), so no history grows a
        # second user message (spec 20 §3.14)
        notice = {
            "id": f"{run_id}_workspace_notice", "sessionId": session_id, "invocationId": start["invocationId"],
            "runId": run_id, "turnId": start["turnId"], "ts": start["ts"], "partial": False, "role": "system",
            "author": "system", "content": {"kind": "text", "text": rebaseline_notice(payload)},
        }
        insert_transition_notice(conn, notice, start["ts"])
        self.fact = payload
        self.model_notice = notice


def _transition_boundary(conn: Any, start: Mapping[str, Any], identity: str, ref: str, policy: str) -> dict[str, Any]:
    """The new boundary a transition fact carries (§7.1 step 4, §7.2 step 4): the next epoch of
    the lineage (§7.3), the continuation's one-event prefix (its start) and the artifact."""
    session_id = start["sessionId"]
    prefix = read_immutable_prefix(conn, session_id, start["runId"], 1)
    return {
        "workspaceIdentity": identity, "workspaceEpoch": current_epoch(conn, session_id) + 1,
        "immutableRuntimeHighWater": 1, "immutableRuntimeDigest": prefix.prefix_digest,
        "checkpointRef": ref, "checkpointPolicyHash": policy,
    }


def _fact_event(start: Mapping[str, Any], suffix: str, kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The transition fact (§1.3) at the continuation's seq 2, in the start's identity."""
    run_id = start["runId"]
    return {
        "id": f"{run_id}_{suffix}", "sessionId": start["sessionId"], "invocationId": start["invocationId"],
        "runId": run_id, "turnId": start["turnId"], "ts": start["ts"], "partial": False, "role": "system",
        "author": "system", "actions": {"workspaceBoundary": {"kind": kind, "version": 1, "payload": dict(payload)}},
    }


@dataclass
class IsolatedRestore:
    """The gate, the authorization and the start transition of one isolated restore (§7.2)."""

    #: The lineage's current directory (re-read from the world by ``gate``): the checkpoint's repository.
    workspace: str
    #: Absolute, not existing, outside the workspace (§3.6 step 1; checked before the claim).
    destination: str
    carrier: GitCheckpointCarrier
    new_workspace_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    source: Mapping[str, Any] | None = None
    fact: dict[str, Any] | None = None
    #: None: §7.2 asks for no model notice (the destination holds exactly the boundary's tree).
    model_notice: dict[str, Any] | None = None

    @property
    def new_identity(self) -> str:
        return f"workspace:v1:{self.new_workspace_id}"

    def gate(self, world: Any, session_id: str, source_run_id: str) -> Any:
        """§6.3: (a)–(d) from the facts, then (g) on the artifact; (e), (f), (h) are not asked —
        the destination is a new directory holding exactly the checkpoint's tree."""
        self.workspace = world.read_session_cwd(session_id)
        resolve = lambda path: resolve_workspace_identity(path).identity
        checks = check_workspace_boundary(world.store, session_id, source_run_id, self.workspace, self.carrier,
                                          resolve, stop_after="d")
        if not checks.checkpoint_mode:
            return park("workspace_checkpoint_unavailable", "the session has no workspace boundary to restore")
        if checks.check == "d":
            return park("workspace_restore_not_covering", "restoring the boundary's tree would undo effects the "
                        "history records after it; rebaseline instead", dict(checks.detail))
        if checks.reason is not None:
            return park(checks.reason, checks.message, dict(checks.detail))
        boundary = checks.boundary
        assert boundary is not None
        try:
            self.carrier.verify(self.workspace, boundary["checkpointRef"], boundary["checkpointPolicyHash"])
        except CheckpointError as error:
            return park(verify_code(error), error.message, {"code": error.code, **error.details})
        self.source = boundary
        return None

    def authorize(self, world: Any, continuation: Any) -> Any:
        """§7.2 step 5, before the claim: the continuation runs in the destination, under the new
        identity (the transition fact committed with its start is what authorizes the move)."""
        world.transition_workspace = (self.destination, self.new_identity)
        snapshot = dataclasses.replace(continuation.safety_snapshot, workspace_identity=self.new_identity)
        return dataclasses.replace(continuation, safety_snapshot=snapshot)

    def __call__(self, conn: Any, start: Mapping[str, Any]) -> None:
        """Inside the start's transaction: restore, resolve the destination, insert the fact."""
        source = self.source
        assert source is not None
        ref, policy = source["checkpointRef"], source["checkpointPolicyHash"]
        try:
            restored = self.carrier.restore(self.workspace, ref, policy, self.destination)
        except CheckpointError as error:
            raise TransitionRefused(error.code, error.message, error.details) from None
        identity = resolve_workspace_identity(restored.path, new_workspace_id=self.new_workspace_id).identity
        if identity != self.new_identity:
            raise TransitionRefused("workspace_identity_changed", "the destination got another identity than the "
                                    "one the claim names", {"expected": self.new_identity, "actual": identity})
        boundary = _transition_boundary(conn, start, identity, ref, policy)
        payload = {"protocol": "workspace_restored_v1", "from": dict(source), "boundary": boundary}
        event = _fact_event(start, "workspace_restored", RESTORED_KIND, payload)
        insert_boundary_fact(conn, encode_runtime_event(event), start["ts"],
                             ref_resolver(self.carrier, self.workspace, source["workspaceIdentity"], restored.commit_oid))
        self.fact = payload

    def committed(self) -> None:
        """§8 ``after_workspace_transition_committed``."""
        checkpoint_failpoint(AFTER_TRANSITION_COMMITTED)
