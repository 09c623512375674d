"""The canonical scan of the workspace authority stream (spec 30 §2.7 "canonical scan").

Why: the two authority RuntimeEvents are the only fact; the epoch / version / head tables are
projections that must equal what this scan derives. The scan reads rows ordered by
(invocation_id, event_seq, event_id), ignores rows that do not touch the authority, and reports
every issue (the writer and the reader fail closed on the first; nothing is ever repaired):
``duplicate_event_id``, ``authority_stream_contamination`` (a reserved-stream row without a
fact), ``semantic_lane_conflict`` (a fact off its lane, or an invalid envelope),
``duplicate_workspace_version``, ``orphan_baseline_version``, ``duplicate_epoch_opened``,
``missing_baseline_version``, ``duplicate_baseline_version``, ``event_order_conflict`` (not
seq 1 and 2), ``baseline_contract_conflict`` (the pair does not describe one boundary).
Pure: no database access.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable

from maka_ref._store.engine.rows import StoredEvent
from maka_ref._store.workspace.facts import (
    EPOCH_OPENED_KIND,
    authority_identity,
    fact_of,
    lane_ok,
    pair_issue,
    touches_authority,
)

__all__ = ["AuthorityIssue", "ScannedBaseline", "scan_authority"]


@dataclass(frozen=True, slots=True)
class AuthorityIssue:
    code: str
    event_id: str


@dataclass(frozen=True, slots=True)
class ScannedBaseline:
    """One valid (epoch-opened, baseline-accepted) pair of the canonical stream."""

    epoch: Mapping[str, Any]
    baseline: Mapping[str, Any]
    epoch_opened_event_id: str
    baseline_accepted_event_id: str
    #: max(committed_at) of the two rows: the projections' ``committed_at``.
    committed_at: int
    authority: Mapping[str, str]


def scan_authority(rows: Iterable[StoredEvent]) -> tuple[list[ScannedBaseline], list[AuthorityIssue]]:
    """The canonical scan over rows ordered by (invocation_id, event_seq, event_id).

    Rows that do not touch the authority are ignored. Returns ``(baselines, issues)``;
    ``baselines`` is empty whenever there is any issue (the caller fails closed)."""
    issues: list[AuthorityIssue] = []
    seen: set[str] = set()
    opened: dict[str, list[StoredEvent]] = {}
    accepted: dict[str, list[StoredEvent]] = {}
    version_epoch: dict[str, str] = {}
    for row in rows:
        event = row.event
        if not touches_authority(event):
            continue
        if event["id"] in seen:
            issues.append(AuthorityIssue("duplicate_event_id", event["id"]))
            continue
        seen.add(event["id"])
        fact = fact_of(event)
        if fact is None:
            issues.append(AuthorityIssue("authority_stream_contamination", event["id"]))
            continue
        if not lane_ok(event):
            issues.append(AuthorityIssue("semantic_lane_conflict", event["id"]))
            continue
        epoch_id = fact["payload"]["workspaceEpochId"]
        if fact["kind"] == EPOCH_OPENED_KIND:
            opened.setdefault(epoch_id, []).append(row)
            continue
        accepted.setdefault(epoch_id, []).append(row)
        prior = version_epoch.setdefault(fact["payload"]["workspaceVersionId"], epoch_id)
        if prior != epoch_id:
            issues.append(AuthorityIssue("duplicate_workspace_version", event["id"]))
    baselines: list[ScannedBaseline] = []
    for epoch_id in sorted(set(opened) | set(accepted)):
        first, second = opened.get(epoch_id, []), accepted.get(epoch_id, [])
        if not first:
            issues.append(AuthorityIssue("orphan_baseline_version", second[0].event_id))
        elif len(first) > 1:
            issues.append(AuthorityIssue("duplicate_epoch_opened", first[1].event_id))
        elif not second:
            issues.append(AuthorityIssue("missing_baseline_version", first[0].event_id))
        elif len(second) > 1:
            issues.append(AuthorityIssue("duplicate_baseline_version", second[1].event_id))
        else:
            o, a = first[0], second[0]
            code = pair_issue(o.event, a.event, o.event_seq, a.event_seq)
            if code is not None:
                issues.append(AuthorityIssue(code, a.event_id))
                continue
            baselines.append(ScannedBaseline(
                epoch=fact_of(o.event)["payload"], baseline=fact_of(a.event)["payload"],
                epoch_opened_event_id=o.event_id, baseline_accepted_event_id=a.event_id,
                committed_at=max(o.committed_at, a.committed_at), authority=authority_identity(epoch_id),
            ))
    return (baselines if not issues else []), issues
