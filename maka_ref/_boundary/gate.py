"""The resume checks against the workspace boundary (spec-phase4 §6.2), as a park or nothing.

A session is in **checkpoint mode** when its lineage holds at least one boundary fact (the B0
capture of its first run committed one, §5.1). Choice where the contract is silent on how the
mode is recorded: the facts themselves are the record, so a session whose B0 capture failed (an
ineligible workspace) is not in checkpoint mode and resumes exactly as before Phase 4 (single-
operation recovery, §3.1), with the diagnostic ``workspace_checkpoint_unavailable``.

Checks in the §6.2 order, first failure wins: (a) a current boundary, (b) every fact decodes,
(c) its digest equals the recomputed prefix digest, (d) it covers the source, (e) the workspace
identity is the boundary's, (f) the workspace is eligible, (g) the artifact verifies, (h) the
workspace equals the checkpoint tree. The carrier's answers are observations only: the
decision is made here, from the committed facts (§3.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from maka_ref._boundary.lineage import (
    BoundaryRef,
    boundary_facts,
    current_boundary,
    first_uncovered,
    lineage_runs,
)
from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from maka_ref._errors import MakaRefError
from maka_ref._events.boundary import WorkspaceBoundaryError
from maka_ref._store.runtime_store import RuntimeStore

__all__ = ["GateResult", "check_workspace_boundary", "verify_code"]

#: §4.2 / §6.2 (g): carrier verify codes → park reasons.
_VERIFY_CODES = {
    "checkpoint_artifact_missing": "workspace_checkpoint_missing",
    "invalid_checkpoint_ref": "workspace_checkpoint_corrupt",
    "checkpoint_corrupt": "workspace_checkpoint_corrupt",
    "checkpoint_policy_violation": "workspace_checkpoint_corrupt",
    "checkpoint_policy_mismatch": "workspace_checkpoint_policy_mismatch",
}


def verify_code(error: CheckpointError) -> str:
    """The park reason of a failed verify; an environment failure (Git gone, timeout) is
    ``workspace_checkpoint_ineligible`` — never approval."""
    return _VERIFY_CODES.get(error.code, "workspace_checkpoint_ineligible")


@dataclass(frozen=True, slots=True)
class GateResult:
    """``reason`` None: all checks passed (or no checkpoint mode: ``checkpoint_mode`` False)."""

    checkpoint_mode: bool
    reason: str | None = None
    message: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)
    boundary: Mapping[str, Any] | None = None
    #: The failed letter of §6.2 (``"a"``…``"h"``), for the dispositions of §6.3.
    check: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"checkpointMode": self.checkpoint_mode}
        if self.reason is not None:
            out.update(reason=self.reason, check=self.check, message=self.message, detail=dict(self.detail))
        if self.boundary is not None:
            out["boundary"] = dict(self.boundary)
        return out


def _fail(check: str, reason: str, message: str, boundary: Mapping[str, Any] | None,
          detail: Mapping[str, Any] | None = None) -> GateResult:
    return GateResult(True, reason, message, dict(detail or {}), boundary, check)


def check_workspace_boundary(
    store: RuntimeStore,
    session_id: str,
    source_run_id: str,
    workspace: str,
    carrier: GitCheckpointCarrier,
    resolve_identity: Callable[[str], str],
    *,
    stop_after: str = "h",
) -> GateResult:
    """§6.2 for the source run ``source_run_id``; ``stop_after`` ends early (``"f"`` for the
    rebaseline checks, which skip (d), (g) and (h) are the caller's to skip)."""
    runs = lineage_runs(lambda run_id: store.read_run_events(session_id, run_id), source_run_id)
    lineage = [(run_id, store.read_run_events(session_id, run_id)) for run_id in runs]
    has_facts = any((e.get("actions") or {}).get("workspaceBoundary") is not None for _, evs in lineage for e in evs)
    if not has_facts:
        return GateResult(False)
    try:
        facts: list[BoundaryRef] = [fact for run_id, events in lineage for fact in boundary_facts(run_id, events)]
    except WorkspaceBoundaryError as error:
        return _fail("b", "workspace_boundary_corrupt", str(error), None, {"pointer": error.pointer})
    current = current_boundary(facts)
    if current is None:  # pragma: no cover - has_facts implies one
        return _fail("a", "workspace_boundary_missing", "the lineage has no boundary", None)
    b = current.boundary
    try:
        prefix = store.read_immutable_prefix(session_id, current.run_id, int(b["immutableRuntimeHighWater"]))
        digest = prefix.prefix_digest
    except MakaRefError as error:
        digest = f"unavailable: {error}"
    if digest != b["immutableRuntimeDigest"]:
        return _fail("c", "workspace_boundary_digest_mismatch", "the boundary's prefix changed", b)
    uncovered = first_uncovered(lineage, current)
    if uncovered is not None:
        return _fail("d", "workspace_boundary_stale", "a mutating tool ran after the last boundary", b,
                     {"eventId": uncovered})
    if stop_after == "d":
        return GateResult(True, boundary=b)
    try:
        identity = resolve_identity(workspace)
    except MakaRefError as error:
        identity = f"unresolved: {error.code}"
    if identity != b["workspaceIdentity"]:
        return _fail("e", "workspace_identity_mismatch", "the workspace is not the boundary's workspace", b,
                     {"expected": b["workspaceIdentity"], "actual": identity})
    eligibility = carrier.eligibility(workspace)
    if not eligibility.eligible:
        assert eligibility.failure is not None
        return _fail("f", "workspace_checkpoint_ineligible", eligibility.failure.message, b,
                     {"code": eligibility.failure.code})
    if stop_after == "f":
        return GateResult(True, boundary=b)
    try:
        carrier.verify(workspace, b["checkpointRef"], b["checkpointPolicyHash"])
        drift = carrier.compare(workspace, b["checkpointRef"], b["checkpointPolicyHash"])
    except CheckpointError as error:
        return _fail("g", verify_code(error), error.message, b, {"code": error.code, **error.details})
    if not drift.clean:
        changes = [{"path": c.path, "kind": c.kind} for c in drift.changes[:20]]
        return _fail("h", "workspace_content_drift", "the workspace differs from the boundary's checkpoint", b,
                     {"counts": dict(drift.counts), "changes": changes})
    return GateResult(True, boundary=b)
