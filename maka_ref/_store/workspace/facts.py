"""Workspace baseline authority facts: identity, event shapes, envelope and lane checks (spec 30
§1.2, §2.7). Pure functions; no database access (the writer is ``workspace.authority``).

Why a separate module: the baseline authority has two halves with different failure modes.
This half decides *what* the two authority RuntimeEvents look like and *what a stored authority
stream means*; ``workspace.authority`` decides *how* they are written atomically. The spec names
the writer's steps but not the ``actions.workspaceFact`` envelope; the shapes below were learnt
by reading the upstream TypeScript (never copied) and are recorded in
``docs/choices/workspace-authority.md``:

* envelope ``{kind, version: 1, payload}``; kinds ``maka.workspace.epoch_opened`` (payload
  protocol ``workspace_epoch_opened_v1``) and ``maka.workspace.baseline_accepted`` (payload
  protocol ``workspace_baseline_accepted_v1``), exact key sets, typed identifiers;
* the authority lane: session ``maka_workspace_authority``, invocation/run/turn derived from the
  epoch id, system/system, non-partial, no content/status/refs/branch, actions exactly
  ``{workspaceFact}``; the epoch-opened event is the stream's seq 1, the baseline its seq 2.

The canonical scan over stored rows is ``workspace.scan.scan_authority``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maka_ref._store.writers.generic import WORKSPACE_AUTHORITY_SESSION_ID

__all__ = [
    "BASELINE_ACCEPTED_KIND",
    "EPOCH_OPENED_KIND",
    "MATERIALIZATION_SEMANTICS",
    "WORKSPACE_AUTHORITY_SESSION_ID",
    "WorkspaceBaselineDescriptor",
    "WorkspaceBaselineInput",
    "WorkspaceEpochDescriptor",
    "authority_identity",
    "build_baseline_events",
    "fact_of",
    "is_workspace_fact_envelope",
    "lane_ok",
    "pair_issue",
    "touches_authority",
]

EPOCH_OPENED_KIND = "maka.workspace.epoch_opened"
BASELINE_ACCEPTED_KIND = "maka.workspace.baseline_accepted"
EPOCH_PROTOCOL = "workspace_epoch_opened_v1"
BASELINE_PROTOCOL = "workspace_baseline_accepted_v1"
MATERIALIZATION_SEMANTICS = "git_tree_materialized_with_fixed_config_v1"

_IDS = {
    "repositoryId": re.compile(r"repository_[a-f0-9]{32}"),
    "workspaceId": re.compile(r"workspace_[a-f0-9]{32}"),
    "workspaceEpochId": re.compile(r"epoch_[a-f0-9]{32}"),
    "workspaceInstanceId": re.compile(r"instance_[a-f0-9]{32}"),
    "workspaceVersionId": re.compile(r"version_[a-f0-9]{32}"),
}
_EVENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_SHA256 = re.compile(r"sha256:[a-f0-9]{64}")
_OID = {"sha1": re.compile(r"[a-f0-9]{40}"), "sha256": re.compile(r"[a-f0-9]{64}")}
_MAX_SAFE = 2**53 - 1

_EPOCH_KEYS = frozenset(
    ("protocol", "repositoryId", "workspaceId", "workspaceEpochId", "workspaceInstanceId", "initialWorkspaceVersionId",
     "mode", "objectFormat", "sourceCommitOid", "sourceTreeOid", "materializationProfileDigest",
     "materializationSemantics", "policyHash")
)
_BASELINE_KEYS = frozenset(
    ("protocol", "repositoryId", "workspaceId", "workspaceEpochId", "workspaceVersionId", "objectFormat", "parents",
     "origin", "commitOid", "treeOid", "policyHash", "treeDeltaDigest", "changedFileCount", "deletedFileCount")
)


@dataclass(frozen=True, slots=True)
class WorkspaceEpochDescriptor:
    repository_id: str
    workspace_id: str
    workspace_epoch_id: str
    workspace_instance_id: str
    object_format: str
    source_commit_oid: str
    source_tree_oid: str
    materialization_profile_digest: str
    policy_hash: str
    mode: str = "managed_worktree"
    materialization_semantics: str = MATERIALIZATION_SEMANTICS


@dataclass(frozen=True, slots=True)
class WorkspaceBaselineDescriptor:
    workspace_version_id: str
    commit_oid: str
    tree_oid: str
    tree_delta_digest: str
    changed_file_count: int
    deleted_file_count: int = 0


@dataclass(frozen=True, slots=True)
class WorkspaceBaselineInput:
    """The writer's input (upstream ``WorkspaceBaselineAuthorityInput``)."""

    epoch_opened_event_id: str
    baseline_accepted_event_id: str
    committed_at: int
    epoch: WorkspaceEpochDescriptor
    baseline: WorkspaceBaselineDescriptor


def _id(value: Any, kind: str) -> bool:
    return isinstance(value, str) and _IDS[kind].fullmatch(value) is not None


def _sha(value: Any) -> bool:
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def _oid(value: Any, object_format: Any) -> bool:
    pattern = _OID.get(object_format) if isinstance(object_format, str) else None
    return pattern is not None and isinstance(value, str) and pattern.fullmatch(value) is not None


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _MAX_SAFE


def authority_identity(workspace_epoch_id: str) -> dict[str, str]:
    """The reserved stream of an epoch: ``workspace_{inv,run,turn}_<suffix of epoch_<32hex>>``."""
    if not _id(workspace_epoch_id, "workspaceEpochId"):
        raise ValueError(f"Invalid workspace epoch id: {workspace_epoch_id}")
    suffix = workspace_epoch_id[len("epoch_"):]
    return {
        "sessionId": WORKSPACE_AUTHORITY_SESSION_ID,
        "invocationId": f"workspace_inv_{suffix}",
        "runId": f"workspace_run_{suffix}",
        "turnId": f"workspace_turn_{suffix}",
    }


def _epoch_ok(p: Mapping[str, Any]) -> bool:
    return (
        set(p) == _EPOCH_KEYS and p["protocol"] == EPOCH_PROTOCOL and p["mode"] == "managed_worktree"
        and all(_id(p[k], k) for k in ("repositoryId", "workspaceId", "workspaceEpochId", "workspaceInstanceId"))
        and _id(p["initialWorkspaceVersionId"], "workspaceVersionId")
        and _oid(p["sourceCommitOid"], p["objectFormat"]) and _oid(p["sourceTreeOid"], p["objectFormat"])
        and _sha(p["materializationProfileDigest"]) and _sha(p["policyHash"])
        and p["materializationSemantics"] == MATERIALIZATION_SEMANTICS
    )


def _baseline_ok(p: Mapping[str, Any]) -> bool:
    origin = p.get("origin")
    parents = p.get("parents")
    return (
        set(p) == _BASELINE_KEYS and p["protocol"] == BASELINE_PROTOCOL
        and all(_id(p[k], k) for k in ("repositoryId", "workspaceId", "workspaceEpochId", "workspaceVersionId"))
        and isinstance(parents, (list, tuple)) and len(parents) == 0
        and isinstance(origin, Mapping) and set(origin) == {"kind", "epochOpenedEventId"}
        and origin["kind"] == "baseline"
        and isinstance(origin["epochOpenedEventId"], str)
        and _EVENT_ID.fullmatch(origin["epochOpenedEventId"]) is not None
        and _oid(p["commitOid"], p["objectFormat"]) and _oid(p["treeOid"], p["objectFormat"])
        and _sha(p["policyHash"]) and _sha(p["treeDeltaDigest"])
        and _count(p["changedFileCount"]) and type(p["deletedFileCount"]) is int and p["deletedFileCount"] == 0
    )


def is_workspace_fact_envelope(fact: Any) -> bool:
    """Exact ``{kind, version: 1, payload}`` with a valid payload of one of the two kinds."""
    if not isinstance(fact, Mapping) or set(fact) != {"kind", "version", "payload"}:
        return False
    if type(fact["version"]) is not int or fact["version"] != 1 or not isinstance(fact["payload"], Mapping):
        return False
    if fact["kind"] == EPOCH_OPENED_KIND:
        return _epoch_ok(fact["payload"])
    if fact["kind"] == BASELINE_ACCEPTED_KIND:
        return _baseline_ok(fact["payload"])
    return False


def fact_of(event: Mapping[str, Any]) -> Any:
    """``actions.workspaceFact`` of ``event`` or None."""
    actions = event.get("actions")
    return actions.get("workspaceFact") if isinstance(actions, Mapping) else None


def touches_authority(event: Mapping[str, Any]) -> bool:
    return fact_of(event) is not None or event.get("sessionId") == WORKSPACE_AUTHORITY_SESSION_ID


def lane_ok(event: Mapping[str, Any]) -> bool:
    """The authority lane (identity derived from the fact's epoch, system/system, bare fact)."""
    fact = fact_of(event)
    if not is_workspace_fact_envelope(fact):
        return False
    identity = authority_identity(fact["payload"]["workspaceEpochId"])
    return (
        all(event.get(key) == value for key, value in identity.items())
        and event.get("partial") is False and event.get("role") == "system" and event.get("author") == "system"
        and not any(key in event for key in ("branch", "status", "content", "refs", "origin", "modelVisibility"))
        and set(event["actions"]) == {"workspaceFact"}
    )


def _valid_input(data: WorkspaceBaselineInput) -> bool:
    e, b = data.epoch, data.baseline
    return (
        isinstance(data.epoch_opened_event_id, str) and _EVENT_ID.fullmatch(data.epoch_opened_event_id) is not None
        and isinstance(data.baseline_accepted_event_id, str)
        and _EVENT_ID.fullmatch(data.baseline_accepted_event_id) is not None
        and data.epoch_opened_event_id != data.baseline_accepted_event_id
        and _count(data.committed_at)
        and b.tree_oid == e.source_tree_oid
        and _id(b.workspace_version_id, "workspaceVersionId")
    )


def build_baseline_events(data: WorkspaceBaselineInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (epoch-opened, baseline-accepted) RuntimeEvents of ``data`` as plain dicts.

    Raises ``ValueError("Invalid workspace baseline authority input")`` when the input or the
    facts built from it are invalid (the caller maps it to a ``StoreError``)."""
    if not _valid_input(data):
        raise ValueError("Invalid workspace baseline authority input")
    e, b = data.epoch, data.baseline
    identity = authority_identity(e.workspace_epoch_id)
    epoch_payload = {
        "protocol": EPOCH_PROTOCOL, "repositoryId": e.repository_id, "workspaceId": e.workspace_id,
        "workspaceEpochId": e.workspace_epoch_id, "workspaceInstanceId": e.workspace_instance_id,
        "initialWorkspaceVersionId": b.workspace_version_id, "mode": e.mode, "objectFormat": e.object_format,
        "sourceCommitOid": e.source_commit_oid, "sourceTreeOid": e.source_tree_oid,
        "materializationProfileDigest": e.materialization_profile_digest,
        "materializationSemantics": e.materialization_semantics, "policyHash": e.policy_hash,
    }
    baseline_payload = {
        "protocol": BASELINE_PROTOCOL, "repositoryId": e.repository_id, "workspaceId": e.workspace_id,
        "workspaceEpochId": e.workspace_epoch_id, "workspaceVersionId": b.workspace_version_id,
        "objectFormat": e.object_format, "parents": [],
        "origin": {"kind": "baseline", "epochOpenedEventId": data.epoch_opened_event_id},
        "commitOid": b.commit_oid, "treeOid": b.tree_oid, "policyHash": e.policy_hash,
        "treeDeltaDigest": b.tree_delta_digest, "changedFileCount": b.changed_file_count,
        "deletedFileCount": b.deleted_file_count,
    }
    common = {**identity, "ts": data.committed_at, "partial": False, "role": "system", "author": "system"}
    epoch_event = {"id": data.epoch_opened_event_id, **common, "actions": {"workspaceFact": {
        "kind": EPOCH_OPENED_KIND, "version": 1, "payload": epoch_payload}}}
    baseline_event = {"id": data.baseline_accepted_event_id, **common, "actions": {"workspaceFact": {
        "kind": BASELINE_ACCEPTED_KIND, "version": 1, "payload": baseline_payload}}}
    if pair_issue(epoch_event, baseline_event, 1, 2) is not None:
        raise ValueError("Invalid workspace baseline authority input")
    return epoch_event, baseline_event


def pair_issue(opened: Mapping[str, Any], accepted: Mapping[str, Any], seq1: int, seq2: int) -> str | None:
    """None when the pair describes one causal boundary; else the issue code."""
    if not (lane_ok(opened) and lane_ok(accepted)):
        return "baseline_contract_conflict"
    epoch, base = fact_of(opened), fact_of(accepted)
    if epoch["kind"] != EPOCH_OPENED_KIND or base["kind"] != BASELINE_ACCEPTED_KIND:
        return "baseline_contract_conflict"
    if seq1 != 1 or seq2 != 2:
        return "event_order_conflict"
    e, b = epoch["payload"], base["payload"]
    same = all(opened[k] == accepted[k] for k in ("sessionId", "invocationId", "runId", "turnId"))
    if not (
        same and type(opened["ts"]) is type(accepted["ts"]) and opened["ts"] == accepted["ts"]
        and all(e[k] == b[k] for k in ("repositoryId", "workspaceId", "workspaceEpochId", "objectFormat", "policyHash"))
        and e["initialWorkspaceVersionId"] == b["workspaceVersionId"]
        and b["origin"]["epochOpenedEventId"] == opened["id"] and e["sourceTreeOid"] == b["treeOid"]
    ):
        return "baseline_contract_conflict"
    return None
