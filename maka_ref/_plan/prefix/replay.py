"""Continuation segment replay and the composite replay plan (spec 20 §1.10).

Why this exists: a v2 continuation replays the committed history of every run in its
lineage, oldest first, and must never hand the provider an interrupted suffix (an
assistant text, thinking or tool call that was being produced when the run crashed). Each
immutable prefix is projected *on its own* — resolved for tool safety, projected to
provider items, checked for gaps, trimmed back to its last stable anchor — and only then
concatenated, so a suffix trimmed from an ancestor can never reappear in a later
generation (A→B→C).

Per segment (:func:`build_segment_replay`), exactly spec 20 §1.10 steps 1–6:

1. ``resolve_recovery(events)``: corruption → blocked ``tool_recovery_corruption``;
   an ``indeterminate`` or ``parked`` decision → blocked ``tool_recovery_unsettled``
   (``definitely_not_dispatched`` does not block);
2. projection version ≠ 1 → blocked ``provider_replay_unsupported``;
3. provider items via :func:`~maka_ref._plan.provider.project_provider_items`; any
   blocking diagnostic → blocked ``provider_replay_unsupported``;
4. a dropped unmatched call followed (in the ledger) by any provider item → blocked
   ``provider_replay_non_suffix_gap``;
5. anchor = last ``tool_result`` or user ``text`` item; everything after it (items and
   unmatched calls) is trimmed; with no anchor, every item and unmatched call is trimmed;
6. output ``boundary``, ``trimmedSuffixEventIds`` (ledger order), ``replayRuntimeEvents``
   (not hidden, not trimmed — content-less facts are kept) and ``providerItems``.

Before step 1 the prefix is re-derived from its events (:func:`~maka_ref._plan.prefix.immutable.
verified_prefix`); a prefix whose events, position or digest do not rebuild is blocked
with the extension reason ``prefix_unverifiable`` (spec 20 §10 item 9: fail closed). A
prefix made by ``build_immutable_prefix`` always passes, so steps 1–6 decide every real
case. The composite plan adds the extension reason ``boundary_invalid`` for segments that
cannot form one boundary cursor (another session, a repeated run/invocation/turn id).

Neither function raises, whatever the events contain; they return a blocked result.
Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

from maka_ref._errors import PrefixError
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.prefix.digests import (
    PROVIDER_REPLAY_PROJECTION_VERSION,
    provider_replay_digest,
)
from maka_ref._plan.prefix.immutable import (
    RuntimeBoundaryCursor,
    RuntimePrefixSegment,
    cursor_problem,
    manifest_digest,
    verified_prefix,
)
from maka_ref._plan.provider import ReplayDiagnostic, project_provider_items

__all__ = [
    "BLOCK_REASONS",
    "CONTINUATION_REPLAY_PLAN_PROTOCOL",
    "CompositeReplayBlocked",
    "CompositeReplayPlan",
    "SegmentReplay",
    "SegmentReplayBlocked",
    "build_composite_replay_plan",
    "build_segment_replay",
]

CONTINUATION_REPLAY_PLAN_PROTOCOL = "continuation_replay_plan_v1"

BlockReason = Literal[
    "tool_recovery_corruption",
    "tool_recovery_unsettled",
    "provider_replay_unsupported",
    "provider_replay_non_suffix_gap",
    "prefix_unverifiable",
    "boundary_invalid",
]

#: The spec's four reasons (spec 20 §1.10) followed by this implementation's two
#: fail-closed extensions for inputs the anchor would throw on (spec 20 §10 item 9).
BLOCK_REASONS: tuple[str, ...] = (
    "tool_recovery_corruption",
    "tool_recovery_unsettled",
    "provider_replay_unsupported",
    "provider_replay_non_suffix_gap",
    "prefix_unverifiable",
    "boundary_invalid",
)


@dataclass(frozen=True, slots=True)
class SegmentReplay:
    """A replayable segment (spec 20 §1.10 step 6)."""

    boundary: RuntimePrefixSegment
    trimmed_suffix_event_ids: tuple[str, ...]
    replay_runtime_events: tuple[Any, ...]
    provider_items: tuple[Any, ...]
    #: Digest over this segment's ``provider_items`` alone.
    provider_replay_digest: str
    #: The projector's non-blocking diagnostics (informative; not part of ``to_json``).
    diagnostics: tuple[ReplayDiagnostic, ...] = ()
    kind: Literal["replayable"] = "replayable"

    @property
    def blocked(self) -> bool:
        return False

    def segment_json(self) -> dict[str, Any]:
        """The form used inside the composite plan's ``segments`` list."""
        return {
            "boundary": self.boundary.to_json(),
            "replayRuntimeEvents": list(self.replay_runtime_events),
            "trimmedSuffixEventIds": list(self.trimmed_suffix_event_ids),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "boundary": self.boundary.to_json(),
            "trimmedSuffixEventIds": list(self.trimmed_suffix_event_ids),
            "replayRuntimeEvents": list(self.replay_runtime_events),
            "providerItems": list(self.provider_items),
        }


@dataclass(frozen=True, slots=True)
class SegmentReplayBlocked:
    """A segment that must not be replayed, with the reason and its diagnostics."""

    reason: BlockReason
    message: str
    diagnostics: tuple[ReplayDiagnostic, ...] = ()
    kind: Literal["blocked"] = "blocked"

    @property
    def blocked(self) -> bool:
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "blocked",
            "reason": self.reason,
            "message": self.message,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


@dataclass(frozen=True, slots=True)
class CompositeReplayPlan:
    """``continuation_replay_plan_v1`` over ``[oldest … immediate source]``."""

    boundary: RuntimeBoundaryCursor
    provider_items: tuple[Any, ...]
    runtime_context: tuple[Any, ...]
    provider_replay_digest: str
    segments: tuple[SegmentReplay, ...]
    provider_projection_version: int = PROVIDER_REPLAY_PROJECTION_VERSION
    protocol: str = CONTINUATION_REPLAY_PLAN_PROTOCOL
    kind: Literal["replayable"] = "replayable"

    @property
    def blocked(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "providerProjectionVersion": self.provider_projection_version,
            "boundary": self.boundary.to_json(),
            "providerReplayDigest": self.provider_replay_digest,
            "segments": [segment.segment_json() for segment in self.segments],
            "runtimeContext": list(self.runtime_context),
            "providerItems": list(self.provider_items),
        }


@dataclass(frozen=True, slots=True)
class CompositeReplayBlocked:
    """The first blocked segment (``segment_index``, 0 = oldest) or a cursor failure.

    ``segment_index`` is None only when there was no segment at all.
    """

    reason: BlockReason
    message: str
    segment_index: int | None
    diagnostics: tuple[ReplayDiagnostic, ...] = ()
    kind: Literal["blocked"] = "blocked"

    @property
    def blocked(self) -> bool:
        return True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "blocked", "reason": self.reason, "message": self.message}
        if self.segment_index is not None:
            out["segmentIndex"] = self.segment_index
        out["diagnostics"] = [d.to_json() for d in self.diagnostics]
        return out


def _is_supported_version(version: object) -> bool:
    """Exactly 1 (a bool is not a number; ``1.0`` is the same JavaScript number as 1)."""
    return not isinstance(version, bool) and isinstance(version, (int, float)) and version == 1


def _event_id(event: Any) -> str | None:
    value = event.get("id") if hasattr(event, "get") else None
    return value if isinstance(value, str) else None


def build_segment_replay(
    prefix: Any, *, provider_projection_version: Any = PROVIDER_REPLAY_PROJECTION_VERSION
) -> SegmentReplay | SegmentReplayBlocked:
    """Replay plan of one immutable prefix (spec 20 §1.10 steps 1–6). Never raises."""
    try:
        verified = verified_prefix(prefix)
    except PrefixError as exc:
        return SegmentReplayBlocked(
            "prefix_unverifiable",
            f"immutable RuntimeEvent prefix does not rebuild: {exc}",
            (ReplayDiagnostic(exc.code, str(exc)),),
        )
    events = verified.events

    # Step 1: tool state.
    resolution = resolve_recovery(events)
    if resolution.has_corruption or any(d.status == "corruption" for d in resolution.decisions):
        return SegmentReplayBlocked(
            "tool_recovery_corruption", "immutable RuntimeEvent segment contains corrupt tool recovery facts"
        )
    if any(d.status in ("indeterminate", "parked") for d in resolution.decisions):
        return SegmentReplayBlocked(
            "tool_recovery_unsettled", "immutable RuntimeEvent segment contains unsettled tool recovery facts"
        )

    # Step 2: projection version.
    if not _is_supported_version(provider_projection_version):
        return SegmentReplayBlocked(
            "provider_replay_unsupported",
            f"provider replay projection {provider_projection_version!r} is unsupported",
        )

    # Step 3: provider items.
    projection = project_provider_items(events)
    blocking = projection.blocking_diagnostics
    if blocking:
        return SegmentReplayBlocked(
            "provider_replay_unsupported",
            f"model-history projection reported {blocking[0].code}",
            blocking,
        )

    # Ledger position of each event id (the last occurrence wins, as a JS Map would).
    event_index: dict[str, int] = {}
    for index, event in enumerate(events):
        event_id = _event_id(event)
        if event_id is not None:
            event_index[event_id] = index
    beyond_ledger = len(events)
    items = projection.items
    unmatched = projection.unmatched_calls

    # Step 4: an unmatched call must be part of the suffix.
    for diagnostic in unmatched:
        call_index = event_index.get(diagnostic.event_id) if diagnostic.event_id is not None else None
        if call_index is None or any(event_index.get(item["eventId"], beyond_ledger) > call_index for item in items):
            return SegmentReplayBlocked(
                "provider_replay_non_suffix_gap",
                "an unmatched tool call is followed by replayable provider items",
                (diagnostic,),
            )

    # Step 5: trim back to the last stable anchor.
    anchor: int | None = None
    for position in range(len(items) - 1, -1, -1):
        item = items[position]
        if item["kind"] == "tool_result" or (item["kind"] == "text" and item["role"] == "user"):
            anchor = position
            break
    trimmed: set[str] = set()
    if anchor is not None:
        trimmed.update(item["eventId"] for item in items[anchor + 1 :])
        anchor_event_index = event_index[items[anchor]["eventId"]]
        for diagnostic in unmatched:
            call_index = event_index.get(diagnostic.event_id)  # type: ignore[arg-type]
            if call_index is not None and call_index > anchor_event_index:
                trimmed.add(diagnostic.event_id)  # type: ignore[arg-type]
    else:
        # A continuation run has no user message of its own: if it crashed before any
        # tool result, its whole model-visible output is an interrupted suffix.
        trimmed.update(item["eventId"] for item in items)
        trimmed.update(d.event_id for d in unmatched if d.event_id is not None)

    # Step 6: output.
    trimmed_ids = tuple(eid for eid in (_event_id(e) for e in events) if eid is not None and eid in trimmed)
    replay_events = tuple(
        event for event in events if event.get("modelVisibility") != "hidden" and _event_id(event) not in trimmed
    )
    provider_items = tuple(item for item in items if item["eventId"] not in trimmed)
    return SegmentReplay(
        boundary=RuntimePrefixSegment(verified.identity, verified.position, verified.prefix_digest),
        trimmed_suffix_event_ids=trimmed_ids,
        replay_runtime_events=replay_events,
        provider_items=provider_items,
        provider_replay_digest=provider_replay_digest(provider_items),
        diagnostics=projection.diagnostics,
    )


def build_composite_replay_plan(
    prefixes: Iterable[Any], *, provider_projection_version: Any = PROVIDER_REPLAY_PROJECTION_VERSION
) -> CompositeReplayPlan | CompositeReplayBlocked:
    """The composite ``continuation_replay_plan_v1`` over ``[oldest … immediate source]``.

    Each prefix is planned independently; the first blocked segment blocks the plan (its
    index is reported). Never raises.
    """
    try:
        prefix_list = list(prefixes)
    except TypeError:
        prefix_list = []
    if not prefix_list:
        return CompositeReplayBlocked(
            "boundary_invalid",
            "a continuation replay plan needs at least one prefix",
            None,
            (ReplayDiagnostic("boundary_empty", "Runtime boundary cursor needs at least one segment"),),
        )

    segments: list[SegmentReplay] = []
    for index, prefix in enumerate(prefix_list):
        result = build_segment_replay(prefix, provider_projection_version=provider_projection_version)
        if isinstance(result, SegmentReplayBlocked):
            return CompositeReplayBlocked(result.reason, result.message, index, result.diagnostics)
        segments.append(result)

    boundaries = tuple(segment.boundary for segment in segments)
    problem = cursor_problem(boundaries)
    if problem is not None:
        index, code, message = problem
        return CompositeReplayBlocked("boundary_invalid", message, index, (ReplayDiagnostic(code, message),))

    provider_items = tuple(item for segment in segments for item in segment.provider_items)
    return CompositeReplayPlan(
        boundary=RuntimeBoundaryCursor(segments=boundaries, manifest_digest=manifest_digest(boundaries)),
        provider_items=provider_items,
        runtime_context=tuple(event for segment in segments for event in segment.replay_runtime_events),
        provider_replay_digest=provider_replay_digest(provider_items),
        segments=tuple(segments),
    )
