"""Execution revalidation immediately before a continuation claims and runs (spec 20 §3.9
steps 4–7 and 12).

Why: a ``continue`` plan is a proposal, not a lease (§3.1). Between planning and execution the
source may have changed (an H+1 append, a header rewritten to ``completed``), the workspace may
have been swapped, the tool catalog changed. Each check re-reads the stores and raises
:class:`RuntimeContinuationRevalidationError` with the §3.9 code
(``_plan.continuation.codes.REVALIDATION_CODES``); nothing is written before all pass.

Order: boundary (step 5) → source header and ledger (step 6) → safety (step 7). Checkpoint
facts: the reference runtime has no workspace checkpoints, so a snapshot without a checkpoint
skips that check (a snapshot *with* one is compared exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maka_ref._codec.frozen import thaw
from maka_ref._errors import MakaRefError
from maka_ref._events.predicates import is_terminal_event
from maka_ref._plan.continuation import RuntimeContinuation, SafetyObservation, WorkspaceCheckpoint, classify_terminal
from maka_ref._plan.continuation.codes import REVALIDATION_CODES
from maka_ref._plan.continuation.shapes import utf16_sorted_unique
from maka_ref._plan.continuation.terminal import header_matches_fact
from maka_ref._plan.prefix.digests import PROVIDER_REPLAY_PROJECTION_VERSION
from maka_ref._plan.prefix.replay import CompositeReplayPlan, build_composite_replay_plan

__all__ = ["RuntimeContinuationRevalidationError", "revalidate_safety", "revalidate_source"]


class RuntimeContinuationRevalidationError(MakaRefError):
    """§3.9: a stable ``code`` from ``REVALIDATION_CODES``."""

    code = "continuation_revalidation_failed"

    def __init__(self, code: str, message: str) -> None:
        assert code in REVALIDATION_CODES, code
        super().__init__(message)
        self.code = code


def _fail(code: str, message: str) -> RuntimeContinuationRevalidationError:
    return RuntimeContinuationRevalidationError(code, message)


def revalidate_source(world: Any, c: RuntimeContinuation) -> None:
    """§3.9 steps 4–6 against the stores behind ``world`` (a :class:`~.world.StoreWorld`)."""
    boundary = c.boundary
    if boundary is None or c.provider_replay_digest is None or c.provider_projection_version != PROVIDER_REPLAY_PROJECTION_VERSION:
        raise _fail("source_identity_changed", "the continuation carries no v2 boundary")
    # step 5: every segment again — ancestors pinned, the immediate source at its latest head
    prefixes = []
    last = len(boundary.segments) - 1
    for index, segment in enumerate(boundary.segments):
        ident = segment.identity
        try:
            prefix = world.read_prefix(
                ident.session_id, ident.run_id, None if index == last else segment.position.last_event_seq
            )
        except Exception as exc:  # noqa: BLE001
            raise _fail("source_identity_changed", f"boundary segment {index} is unreadable: {exc}") from None
        if (
            prefix.identity != ident
            or prefix.position != segment.position
            or prefix.prefix_digest != segment.prefix_digest
        ):
            raise _fail("source_identity_changed", f"boundary segment {index} ({ident.run_id}) changed since planning")
        prefixes.append(prefix)
    replay = build_composite_replay_plan(prefixes)
    if (
        not isinstance(replay, CompositeReplayPlan)
        or replay.boundary.manifest_digest != boundary.manifest_digest
        or replay.provider_replay_digest != c.provider_replay_digest
        or [thaw(e) for e in replay.runtime_context] != [thaw(e) for e in c.runtime_context]
    ):
        raise _fail("source_replay_changed", "the composite replay of the source changed since planning")
    # step 6: the source header and its ledger
    try:
        header = world.read_run_header(c.session_id, c.source_run_id)
    except Exception as exc:  # noqa: BLE001
        raise _fail("source_identity_changed", f"source run {c.source_run_id} is unreadable: {exc}") from None
    if (
        header.get("runId") != c.source_run_id
        or header.get("turnId") != c.source_turn_id
        or header.get("sessionId") != c.session_id
    ):
        raise _fail("source_identity_changed", "the source run header names another run")
    events = prefixes[-1].events
    terminals = [e for e in events if isinstance(e, Mapping) and e.get("partial") is not True and is_terminal_event(e)]
    fact = classify_terminal(header, events)
    if len(terminals) != 1 or not header_matches_fact(header, fact):
        raise _fail(
            "source_terminal_changed",
            f"the source run's terminal state changed since planning (header status {header.get('status')!r})",
        )
    if len(events) != c.source_runtime_event_high_water:
        raise _fail("source_high_water_changed", "the source ledger length differs from the planned high-water")
    source = (c.session_id, c.source_invocation_id, c.source_run_id, c.source_turn_id)
    for event in events:
        if (event.get("sessionId"), event.get("invocationId"), event.get("runId"), event.get("turnId")) != source:
            raise _fail("source_ledger_identity_changed", f"source event {event.get('id')!r} carries a foreign identity")


def revalidate_safety(world: Any, c: RuntimeContinuation) -> SafetyObservation:
    """§3.9 step 7 (and step 12): fresh trusted facts must equal the planned snapshot."""
    inspect = getattr(world, "inspect", None)
    if inspect is None:
        raise MakaRefError("continuation execution requires an authoritative safety inspector")
    observation = SafetyObservation.of(inspect(c.session_id))
    snapshot = c.safety_snapshot
    if observation.workspace_identity != snapshot.workspace_identity:
        raise _fail("workspace_identity_changed", "the workspace identity changed since planning")
    if not observation.background_operations_settled:
        raise _fail("background_operation_started", "a background operation started since planning")
    if utf16_sorted_unique(observation.available_tool_names) != tuple(snapshot.available_tool_names):
        raise _fail("tool_catalog_changed", "the tool catalog changed since planning")
    if snapshot.workspace_checkpoint is not None:
        ref, high_water = snapshot.workspace_checkpoint
        current = WorkspaceCheckpoint.of(observation.workspace_checkpoint)
        if current is None or not current.restored or current.ref != ref or current.runtime_event_high_water != high_water:
            raise _fail("workspace_checkpoint_changed", "the workspace checkpoint changed since planning")
    return observation
