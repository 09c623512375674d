"""Lineage walk: multi-generation ancestor replay (spec 20 §3.4, §3.15).

Why this exists: a continuation run can itself be continued. Its header's
``continuationSource`` points at the run it continued (v1: 4 fields; v2: 9 fields with a
claim and digests), and the next continuation must replay *every* generation, oldest
first, each segment pinned at exactly the high-water that was continued. The walk follows
those edges back, refuses cycles, over-deep chains, missing or drifted ancestors, and — for
v2 edges — any start, replay or claim that does not authenticate the edge.

The walk is pure: all reads go through a :class:`LineageReader` the caller supplies
(headers, pinned prefixes, claim states). A reader method signals failure by raising; the
walk turns that into the spec's park code and never raises itself.

Walk (§3.4), from the immediate source (read at its latest head by the caller):

1. ``current = child.continuationSource``; ``start = childPrefix.events[0].actions.continuationStart``;
2. a start without a v2 source → ``runtime_lineage_start_mismatch`` (no downgrade);
3. v2: the start must name the same claim, boundary, manifest and immediate source
   ``{sessionId, invocationId, runId, turnId, highWater, prefixDigest}`` → else
   ``runtime_lineage_start_mismatch``; record an edge;
4. no ``current`` → stop;
5. ``current.sourceRunId`` already seen → ``runtime_lineage_cycle`` (before depth, §9 item 25);
6. depth ≥ 64 → ``runtime_lineage_depth_exceeded`` (even if the 65th does not exist);
7. read the ancestor header and its prefix pinned at ``sourceRuntimeEventHighWater``;
   any failure → ``runtime_lineage_missing``;
8. ancestor identity ≠ (session, sourceInvocationId, sourceRunId, sourceTurnId) or
   ``lastEventSeq`` ≠ high-water → ``runtime_identity_mismatch``;
9. v2: ``sourcePrefixDigest`` ≠ ancestor digest → ``source_prefix_digest_mismatch``;
10. prepend the ancestor and continue with it as the child.

Then, per recorded v2 edge (walk order): the child's segment index must be > 0
(``runtime_lineage_missing``); the composite replay of ``segments[0:childIndex]`` with the
edge's projection version must be replayable with the edge's manifest and replay digests
(``runtime_lineage_replay_mismatch``); the claim reader must exist and not raise
(``continuation_authority_unavailable``); the claim state must exist and match claim id,
boundary digest, start event id, start kind, target header compatibility and the start
event (``runtime_lineage_claim_mismatch``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from maka_ref._codec.frozen import thaw
from maka_ref._plan.prefix.immutable import ImmutableRuntimePrefix
from maka_ref._plan.prefix.replay import (
    CompositeReplayPlan,
    build_composite_replay_plan,
)

from .claims import ClaimState, start_matches_claim, target_header_compatible

__all__ = [
    "MAX_LINEAGE_SEGMENTS",
    "LineageEdge",
    "LineageError",
    "LineageReader",
    "LineageResult",
    "walk_lineage",
]

#: §3.4 step 6: at most 64 segments.
MAX_LINEAGE_SEGMENTS = 64
CONTINUATION_SOURCE_V2 = "continuation_source_v2"


class LineageReader(Protocol):
    """What the walk reads. Every method raises on failure (any exception)."""

    def read_run_header(self, session_id: str, run_id: str) -> Mapping[str, Any]: ...

    def read_prefix(self, session_id: str, run_id: str, up_to_event_seq: int | None = None) -> ImmutableRuntimePrefix: ...


#: Optional claim-state dependency: boundary digest → claim state (or None); may raise.
ClaimStateReader = Callable[[str], "ClaimState | Mapping[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class LineageEdge:
    """A recorded v2 edge: the child run and the start/claim that authorise it."""

    child_run_id: str
    child_header: Mapping[str, Any]
    start_event: Mapping[str, Any]
    start_provenance: Any
    claim_id: str
    boundary_digest: str
    provider_projection_version: Any
    provider_replay_digest: Any


@dataclass(frozen=True, slots=True)
class LineageResult:
    """A walk that succeeded: prefixes oldest-first (the immediate source last)."""

    prefixes: tuple[ImmutableRuntimePrefix, ...]
    edges: tuple[LineageEdge, ...]
    kind: str = "ok"


@dataclass(frozen=True, slots=True)
class LineageError:
    """A walk that failed with one park code."""

    code: str
    message: str
    kind: str = "error"


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _events(prefix: Any) -> tuple[Any, ...]:
    events = getattr(prefix, "events", None)
    if events is None:
        events = _get(prefix, "events")
    return tuple(events) if isinstance(events, (list, tuple)) else ()


def walk_lineage(
    reader: LineageReader,
    session_id: str,
    source_run_id: str,
    source_header: Mapping[str, Any],
    immediate_prefix: ImmutableRuntimePrefix,
    *,
    read_claim_state: ClaimStateReader | None = None,
) -> LineageResult | LineageError:
    """Walk the lineage of ``source_run_id`` (spec 20 §3.4). Never raises."""
    prefixes: list[ImmutableRuntimePrefix] = [immediate_prefix]
    seen = {source_run_id}
    depth = 1
    child_header: Mapping[str, Any] = source_header
    child_prefix: ImmutableRuntimePrefix = immediate_prefix
    child_run_id = source_run_id
    edges: list[LineageEdge] = []
    # (edge, child prefix object) so the child's index can be found after prepending.
    edge_children: list[tuple[LineageEdge, ImmutableRuntimePrefix]] = []

    while True:
        current = _get(child_header, "continuationSource")
        child_events = _events(child_prefix)
        first = child_events[0] if child_events else None
        start = _get(_get(first, "actions"), "continuationStart")
        current_v2 = current if _get(current, "protocol") == CONTINUATION_SOURCE_V2 else None
        if start is not None and current_v2 is None:
            return LineageError(
                "runtime_lineage_start_mismatch",
                f"run {child_run_id} starts with a continuation_start_v2 but has no v2 continuationSource",
            )
        if current_v2 is not None:
            expected_source = {
                "sessionId": session_id,
                "invocationId": current_v2.get("sourceInvocationId"),
                "runId": current_v2.get("sourceRunId"),
                "turnId": current_v2.get("sourceTurnId"),
                "highWater": current_v2.get("sourceRuntimeEventHighWater"),
                "prefixDigest": current_v2.get("sourcePrefixDigest"),
            }
            if (
                not isinstance(start, Mapping)
                or start.get("claimId") != current_v2.get("claimId")
                or start.get("boundaryDigest") != current_v2.get("boundaryDigest")
                or start.get("replayManifestDigest") != current_v2.get("replayManifestDigest")
                or thaw(start.get("immediateSource")) != expected_source
            ):
                return LineageError(
                    "runtime_lineage_start_mismatch",
                    f"the continuation start of run {child_run_id} does not match its continuationSource",
                )
            edge = LineageEdge(
                child_run_id,
                child_header,
                first,  # type: ignore[arg-type]
                start.get("provenance"),
                current_v2.get("claimId"),
                current_v2.get("boundaryDigest"),
                start.get("providerProjectionVersion"),
                start.get("providerReplayDigest"),
            )
            edges.append(edge)
            edge_children.append((edge, child_prefix))
        if current is None:
            break
        ancestor_run_id = _get(current, "sourceRunId")
        if type(ancestor_run_id) is not str:
            return LineageError("runtime_lineage_missing", f"run {child_run_id} names no readable source run")
        if ancestor_run_id in seen:
            return LineageError("runtime_lineage_cycle", f"the lineage of run {source_run_id} contains a cycle")
        if depth >= MAX_LINEAGE_SEGMENTS:
            return LineageError(
                "runtime_lineage_depth_exceeded",
                f"the lineage of run {source_run_id} exceeds {MAX_LINEAGE_SEGMENTS} segments",
            )
        seen.add(ancestor_run_id)
        high_water = _get(current, "sourceRuntimeEventHighWater")
        try:
            ancestor_header = reader.read_run_header(session_id, ancestor_run_id)
            ancestor_prefix = reader.read_prefix(session_id, ancestor_run_id, high_water)
        except Exception as exc:  # noqa: BLE001 - any read failure parks
            return LineageError("runtime_lineage_missing", f"ancestor run {ancestor_run_id} is unavailable: {exc}")
        identity = getattr(ancestor_prefix, "identity", None)
        position = getattr(ancestor_prefix, "position", None)
        if (
            identity is None
            or position is None
            or (identity.session_id, identity.invocation_id, identity.run_id, identity.turn_id)
            != (session_id, _get(current, "sourceInvocationId"), ancestor_run_id, _get(current, "sourceTurnId"))
            or position.last_event_seq != high_water
        ):
            return LineageError(
                "runtime_identity_mismatch",
                f"ancestor run {ancestor_run_id} does not match the recorded continuation source",
            )
        if current_v2 is not None and current_v2.get("sourcePrefixDigest") != ancestor_prefix.prefix_digest:
            return LineageError(
                "source_prefix_digest_mismatch",
                f"ancestor run {ancestor_run_id} prefix digest differs from the recorded one",
            )
        prefixes.insert(0, ancestor_prefix)
        depth += 1
        child_header, child_prefix, child_run_id = ancestor_header, ancestor_prefix, ancestor_run_id

    for edge, edge_prefix in edge_children:
        child_index = next(i for i, p in enumerate(prefixes) if p is edge_prefix)
        if child_index <= 0:
            return LineageError("runtime_lineage_missing", f"continuation run {edge.child_run_id} has no ancestor")
        replay = build_composite_replay_plan(
            prefixes[:child_index], provider_projection_version=edge.provider_projection_version
        )
        if (
            not isinstance(replay, CompositeReplayPlan)
            or replay.boundary.manifest_digest != edge.boundary_digest
            or replay.provider_replay_digest != edge.provider_replay_digest
        ):
            return LineageError(
                "runtime_lineage_replay_mismatch",
                f"the replay before continuation run {edge.child_run_id} does not rebuild its digests",
            )
        if read_claim_state is None:
            return LineageError(
                "continuation_authority_unavailable", "the continuation claim authority is not available"
            )
        try:
            state = ClaimState.of(read_claim_state(edge.boundary_digest))
        except Exception as exc:  # noqa: BLE001
            return LineageError("continuation_authority_unavailable", f"reading the continuation claim failed: {exc}")
        claim = state.claim if state is not None else None
        if (
            state is None
            or _get(claim, "claimId") != edge.claim_id
            or _get(claim, "boundaryDigest") != edge.boundary_digest
            or state.start_event_id is None
            or state.start_event_id != _get(edge.start_event, "id")
            or state.start_kind != edge.start_provenance
            or not target_header_compatible(edge.child_header, _get(claim, "targetRunHeader"))
            or not start_matches_claim(edge.start_event, claim, state.start_kind)
        ):
            return LineageError(
                "runtime_lineage_claim_mismatch",
                f"the durable claim of continuation run {edge.child_run_id} does not match its start",
            )
    return LineageResult(tuple(prefixes), tuple(edges))
