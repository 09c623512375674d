"""The library behind ``maka-ref run --checkpoints``, ``resume`` with the boundary gate and
``maka-ref checkpoint list|verify|restore`` (spec-phase4 §3.5, §3.6, §3.8, §5.1, §6.2).

Why here and not in the CLI: the CLI stays a parser and a printer (project rule); tests call
these functions directly. Every function returns a JSON-ready document or raises
:class:`CommandError` with a stable code: the carrier's code (spec-phase4 §11.2) or the
store's, never a traceback.

Reading never writes: ``list`` and ``verify`` open the store read-only (when it exists) and
read the workspace identity without creating a marker.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from maka_ref._boundary.capture import (
    CapturingProvider,
    default_carrier,
    workspace_path,
)
from maka_ref._boundary.gate import check_workspace_boundary
from maka_ref._checkpoint import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_POLICY_HASH,
    CheckpointError,
    GitCheckpointCarrier,
)
from maka_ref._errors import MakaRefError
from maka_ref._plan.continuation.shapes import park
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.identity import (
    read_workspace_identity,
    resolve_workspace_identity,
)

__all__ = [
    "CommandError",
    "WorkspaceCheckpointChanged",
    "checkpoint_collect",
    "checkpoint_list",
    "checkpoint_restore",
    "checkpoint_verify",
    "live_refs",
    "make_revalidation",
    "make_workspace_gate",
    "resume_with_intent",
    "run_with_checkpoints",
]


class CommandError(MakaRefError):
    """A refused checkpoint command: ``code`` is the carrier's or the store's."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = dict(details or {})


def _carrier_error(error: CheckpointError) -> CommandError:
    return CommandError(error.code, error.message, error.details)


def live_refs(root: str) -> dict[str, list[str]]:
    """``checkpointRef`` → ids of the committed facts naming it (read-only; empty without a store)."""
    if not os.path.isfile(os.path.join(root, "runtime.sqlite")):
        return {}
    store = RuntimeStore.open_read_only(root)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT event_id, json_extract(payload_json, '$.actions.workspaceBoundary.payload.boundary.checkpointRef') "
                "FROM runtime_events WHERE json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL "
                "ORDER BY event_id").fetchall()
    finally:
        store.close()
    out: dict[str, list[str]] = {}
    for event_id, ref in rows:
        out.setdefault(str(ref), []).append(str(event_id))
    return out


def checkpoint_list(workspace: str, carrier: GitCheckpointCarrier | None = None) -> dict[str, Any]:
    """Every checkpoint ref of this workspace's identity (all of ``refs/maka/checkpoints/`` when
    the workspace has no marker), each with the facts that name it (``orphan`` when none)."""
    carrier = carrier or default_carrier()
    root = workspace_path(workspace)
    try:
        identity = read_workspace_identity(root)
    except MakaRefError as error:
        raise CommandError(error.code, error.message) from None
    try:
        listed = carrier.list(root, identity.identity if identity is not None else None)
    except CheckpointError as error:
        raise _carrier_error(error) from None
    named = live_refs(root)
    items = []
    for item in listed:
        entry = item.to_json()
        entry["facts"] = named.get(item.checkpoint_ref, [])
        entry["orphan"] = not entry["facts"]
        items.append(entry)
    missing = sorted(ref for ref in named if ref not in {item.checkpoint_ref for item in listed})
    return {"workspace": root, "workspaceIdentity": identity.identity if identity else None,
            "checkpoints": items, "factsWithMissingArtifact": missing}


def checkpoint_verify(workspace: str, ref: str, policy_hash: str = DEFAULT_POLICY_HASH,
                      carrier: GitCheckpointCarrier | None = None) -> dict[str, Any]:
    carrier = carrier or default_carrier()
    try:
        verified = carrier.verify(workspace_path(workspace), ref, policy_hash)
    except CheckpointError as error:
        raise _carrier_error(error) from None
    return {"checkpointRef": ref, "commitOid": verified.commit_oid, "treeOid": verified.tree_oid,
            "fileCount": verified.file_count, "totalBytes": verified.total_bytes, "policyHash": policy_hash}


def checkpoint_restore(workspace: str, ref: str, destination: str, policy_hash: str = DEFAULT_POLICY_HASH,
                       carrier: GitCheckpointCarrier | None = None) -> dict[str, Any]:
    """Isolated restore (§3.6) into ``destination``; the workspace itself is never a target."""
    carrier = carrier or default_carrier()
    try:
        result = carrier.restore(workspace_path(workspace), ref, policy_hash, destination)
    except CheckpointError as error:
        raise _carrier_error(error) from None
    return {"path": result.path, "commitOid": result.commit_oid, "treeOid": result.tree_oid,
            "fileCount": result.file_count, "checkpointRef": ref}


def run_with_checkpoints(workspace: str, script: Any, *, seed: str | None = None,
                         carrier: GitCheckpointCarrier | None = None) -> tuple[Any, dict[str, Any]]:
    """``run_turn`` with the §5.1 capture points; returns the summary and the capture report."""
    from maka_ref._runtime import run_turn
    from maka_ref._runtime.provider import ScriptedProvider, load_script

    carrier = carrier or default_carrier()
    identity = resolve_workspace_identity(workspace)
    loaded = load_script(script)
    provider = CapturingProvider(ScriptedProvider(loaded), identity.workspace_path, identity.identity, carrier)
    summary = run_turn(workspace, loaded, seed=seed, provider=provider)
    report = {
        "boundaries": [{"eventId": r.event_id, "eventSeq": r.event_seq} for r in provider.committed],
        "captureFailures": [f.to_json() for f in provider.failures],
    }
    return summary, report


class WorkspaceCheckpointChanged(MakaRefError):
    """§6.2: execution revalidation found the artifact or the files changed since the gate."""

    code = "workspace_checkpoint_changed"


def make_revalidation(gate: Any, carrier: GitCheckpointCarrier | None = None) -> Any:
    """The ``start_transition`` that re-runs (g) and (h) inside the continuation-start's
    transaction, immediately before the provider may be called (§6.2 last paragraph): a
    difference raises ``workspace_checkpoint_changed`` and the start does not commit (the claim
    then follows spec 20 §4.5, claim-only repair)."""
    the_carrier = carrier or default_carrier()

    def revalidate(_conn: Any, _start: Any) -> None:
        boundary = getattr(gate, "boundary", None)
        if boundary is None:  # not a checkpoint-mode session: nothing to revalidate
            return
        ref, policy = boundary["checkpointRef"], boundary["checkpointPolicyHash"]
        try:
            the_carrier.verify(gate.workspace, ref, policy)
            drift = the_carrier.compare(gate.workspace, ref, policy)
        except CheckpointError as error:
            raise WorkspaceCheckpointChanged(f"the checkpoint changed since the resume checks: {error.code}") from None
        if not drift.clean:
            raise WorkspaceCheckpointChanged("the workspace changed since the resume checks")

    return revalidate


def make_workspace_gate(carrier: GitCheckpointCarrier | None = None) -> Any:
    """The ``workspace_gate`` of ``resume_session``: §6.2, a park plan on the first failure.
    The returned callable remembers the passing boundary (``.boundary``) and workspace
    (``.workspace``) for :func:`make_revalidation`."""
    the_carrier = carrier or default_carrier()

    def gate(world: Any, session_id: str, source_run_id: str) -> Any:
        # the session's directory: the store's, or an isolated restore's destination (§7.2)
        root = str(world.read_session_cwd(session_id))
        gate.workspace = root  # type: ignore[attr-defined]
        gate.boundary = None  # type: ignore[attr-defined]  # set again only when every check passes
        try:
            result = check_workspace_boundary(
                world.store, session_id, source_run_id, root, the_carrier,
                lambda path: resolve_workspace_identity(path).identity)
        except StoreError as error:
            return park("workspace_boundary_corrupt", error.message)
        if result.reason is None:
            gate.boundary = result.boundary  # type: ignore[attr-defined]
            return None
        return park(result.reason, result.message, {"check": result.check, **result.detail})

    def observe(world: Any, session_id: str) -> dict[str, Any] | None:
        """spec 20 §3.8's optional checkpoint facts, the planner's ``workspaceCheckpoint``
        (spec-phase4 §6.2): ``{ref, restored: true, runtimeEventHighWater: Hs}`` for the run
        resume will plan from (the newest failed/cancelled run of the session, spec 20 §3.2)
        when every check passes, else None — the gate, which runs after the planner, then parks
        with the reason (so a planner park still comes first). Asked again by execution
        revalidation: a difference there is ``workspace_checkpoint_changed``."""
        from maka_ref._plan.continuation import select_resume_candidate

        candidate = select_resume_candidate(world.list_session_runs(session_id))
        if candidate is None:
            return None
        source_run_id = str(candidate["runId"])
        if gate(world, session_id, source_run_id) is not None or gate.boundary is None:
            return None
        high_water = len(world.store.read_run_events(session_id, source_run_id))
        return {"ref": gate.boundary["checkpointRef"], "restored": True, "runtimeEventHighWater": high_water}

    gate.boundary = None  # type: ignore[attr-defined]
    gate.workspace = None  # type: ignore[attr-defined]
    gate.observe = observe  # type: ignore[attr-defined]
    return gate


def resume_with_intent(root: str, session_id: str | None = None, *, intent: str = "none",
                       destination: str | None = None, carrier: GitCheckpointCarrier | None = None,
                       **kwargs: Any) -> tuple[Any, dict[str, Any] | None]:
    """``resume_session`` behind the §6.2 gate (``intent="none"``), a rebaseline (§7.1,
    ``intent="rebaseline"``) or an isolated restore into ``destination`` (§7.2,
    ``intent="restore"``). Returns the outcome and, for a transition that committed, its fact's
    payload. A bad destination is refused before anything is planned or claimed
    (:class:`CommandError` with the §3.6 step 1 code)."""
    from maka_ref._boundary.transition import Rebaseline
    from maka_ref._continuation import resume_session

    the_carrier = carrier or default_carrier()
    if "provider" not in kwargs:
        kwargs["provider"] = _continuation_provider(root, the_carrier, kwargs.get("script"))
    if intent == "restore":
        return _resume_restoring(root, session_id, destination, the_carrier, **kwargs)
    if destination is not None:
        raise CommandError("invalid_workspace_intent", "a destination is only meaningful for an isolated restore")
    if intent == "none":
        gate = make_workspace_gate(the_carrier)
        return resume_session(root, session_id, workspace_gate=gate, workspace_checkpoint=gate.observe,
                              start_transition=make_revalidation(gate, the_carrier), **kwargs), None
    if intent != "rebaseline":
        raise CommandError("invalid_workspace_intent", f"unknown workspace intent {intent!r}")
    rebaseline = Rebaseline(workspace_path(root), the_carrier)
    outcome = resume_session(root, session_id, workspace_gate=rebaseline.gate,
                             start_transition=rebaseline, **kwargs)
    if outcome.parked and outcome.rejection_reasons == ("workspace_identity_mismatch",):
        # The Phase 1 planner's own identity gate (spec 20 §3.6 (i)) parked before the boundary
        # gate ran; for a rebaseline request §6.3 names the refusal.
        import dataclasses

        outcome = dataclasses.replace(outcome, plan=park(
            "workspace_rebaseline_identity_mismatch", "rebaseline binds the current directory only; "
            "another directory needs an isolated restore"))
    return outcome, rebaseline.fact


def _resume_restoring(root: str, session_id: str | None, destination: str | None, carrier: GitCheckpointCarrier,
                      **kwargs: Any) -> tuple[Any, dict[str, Any] | None]:
    """§7.2: check the destination (§3.6 step 1, nothing written), then plan, gate, authorize,
    claim and — inside the start's transaction — restore and commit the ``restored`` fact."""
    from maka_ref._boundary.transition import IsolatedRestore
    from maka_ref._continuation import resume_session

    if not isinstance(destination, str) or not destination:
        raise CommandError("restore_target_invalid", "an isolated restore needs a destination directory")
    workspace = workspace_path(root)
    try:
        carrier.check_restore_target(workspace, destination)
    except CheckpointError as error:
        raise _carrier_error(error) from None
    restore = IsolatedRestore(workspace, destination, carrier)
    source_identity = _candidate_identity(workspace, session_id)
    if source_identity is not None and "resolve_identity" not in kwargs:
        # §6.3: an isolated restore is allowed when the current directory's identity differs
        # (it was replaced) — the continuation never runs there. The planner's identity gate
        # (spec 20 §3.6 (i)) is therefore asked about the workspace the lineage recorded; what
        # binds the new directory to the lineage is the transition fact (§7.2 step 5), whose
        # `from` is the boundary the gate checked ((a)–(d), (g)).
        kwargs["resolve_identity"] = lambda _path: source_identity
    outcome = resume_session(root, session_id, workspace_gate=restore.gate, start_transition=restore,
                             authorize_transition=restore.authorize, **kwargs)
    return outcome, restore.fact


def _candidate_identity(workspace: str, session_id: str | None) -> str | None:
    """The recorded ``workspaceIdentity`` of the run ``resume`` will plan from (the newest
    failed/cancelled session-inline run, spec 20 §3.2), read-only; None when there is none."""
    from maka_ref._plan.continuation import select_resume_candidate
    from maka_ref._store.agent_runs.store import DB_FILE_NAME, AgentRunStore

    if not os.path.isfile(os.path.join(workspace, DB_FILE_NAME)):
        return None
    with AgentRunStore.open_read_only(workspace) as runs:
        sessions = [session_id] if session_id is not None else [
            str(row[0]) for row in runs.connection.execute("SELECT DISTINCT session_id FROM agent_runs")]
        candidate = select_resume_candidate([run for sid in sessions for run in runs.list_session_runs(sid)])
    identity = None if candidate is None else candidate.get("workspaceIdentity")
    return identity if isinstance(identity, str) else None


def checkpoint_collect(workspace: str, grace_seconds: float = DEFAULT_GRACE_SECONDS, *,
                       now_ms: int | None = None, carrier: GitCheckpointCarrier | None = None) -> dict[str, Any]:
    """§3.8, §4.1, §9: delete this identity's orphan refs older than the grace period.

    ``liveRefs`` are the refs every committed boundary fact names (retention keeps them all), read
    under the store's write lock, which is held while the carrier collects: a boundary fact
    commits under the same lock after checking that its ref still resolves (§4.2), so a fact can
    never commit naming a ref this collection deletes, nor can a live ref be missed."""
    carrier = carrier or default_carrier()
    root = workspace_path(workspace)
    try:
        identity = read_workspace_identity(root, require=True)
    except MakaRefError as error:
        raise CommandError(error.code, error.message) from None
    assert identity is not None
    store = RuntimeStore.open(root) if os.path.isfile(os.path.join(root, "runtime.sqlite")) else None
    try:
        def collect(live: list[str]) -> Any:
            return carrier.collect(root, identity.identity, live, grace_seconds=grace_seconds, now_ms=now_ms)

        try:
            if store is None:
                result = collect([])
            else:
                with store.write() as conn:
                    rows = conn.execute(
                        "SELECT DISTINCT json_extract(payload_json, "
                        "'$.actions.workspaceBoundary.payload.boundary.checkpointRef') FROM runtime_events "
                        "WHERE json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL").fetchall()
                    result = collect(sorted(str(row[0]) for row in rows))
        except CheckpointError as error:
            raise _carrier_error(error) from None
    finally:
        if store is not None:
            store.close()
    return {"collected": list(result.collected), "kept": list(result.kept)}


def _continuation_provider(root: str, carrier: GitCheckpointCarrier, script: Any) -> CapturingProvider | None:
    """B1 captures inside the continuation run (§5.1) of a Git workspace: the scripted provider
    of the source's sidecar (or ``script``) wrapped in :class:`CapturingProvider`. ``None`` (the
    executor's own provider) when the workspace has no identity marker yet."""
    from maka_ref._continuation.sidecar import read_script_sidecar
    from maka_ref._runtime.provider import ScriptedProvider, load_script

    path = workspace_path(root)
    try:
        identity = read_workspace_identity(path)
    except MakaRefError:
        return None
    if identity is None:
        return None

    def make_inner(history: Any) -> Any:
        if script is not None:
            return ScriptedProvider(load_script(script))
        # the run's start: the newest item carrying one (a rebaseline's notice follows it, §7.1 step 5)
        start = next(item["actions"]["continuationStart"] for item in reversed(history)
                     if "continuationStart" in (item.get("actions") or {}))
        return ScriptedProvider(read_script_sidecar(path, str(start["immediateSource"]["runId"])))

    # the run's own header says where it works (the store's directory, or a restore's destination)
    return CapturingProvider(None, path, identity.identity, carrier, make_inner=make_inner,
                             require_checkpoint_mode=True, store_root=path, from_header=True)
