"""The continuation planner (spec 20 §3.3) and its host wrappers (§3.2), over an injected world.

Why this exists: planning reads a lot — the source header, the immediate prefix, every
ancestor, the durable claim state, other runs' headers — yet its decision must be pure and
testable. All reads go through a :class:`ContinuationWorld` (a protocol: a real store
adapter, or an in-memory dict in tests), fresh ids come from the caller, and the feature flag
is a plain boolean (reading ``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME`` is the host's job). The
planner itself performs no I/O.

``RuntimeContinuationPlanner.plan`` (§3.3), in order; the first failing step parks with a
single reason and one diagnostic of the same code:

1. read the source header → ``source_run_unreadable``;
2. read the immediate prefix at its latest head (failure → ``runtime_ledger_unreadable``,
   step 2') and walk the lineage (:func:`.lineage.walk_lineage`) → the walk's code;
3. immediate prefix ``sessionId``/``runId`` ≠ request → ``runtime_identity_mismatch``;
4. composite replay (``build_composite_replay_plan``) blocked → ``provider_replay_*`` as is;
   ``tool_recovery_unsettled``/``tool_recovery_corruption`` (and this implementation's
   fail-closed ``prefix_unverifiable``/``boundary_invalid``) → ``runtime_ledger_unreadable``;
5. claim state by ``manifestDigest`` raises → ``continuation_authority_unavailable``;
6. a claim that does not authenticate the fresh plan → ``continuation_claim_repair_required``;
7. an authenticated claim → :func:`.claims.classify_existing_claim`;
8. legacy scan: a run whose ``continuationSource`` has this ``sourceRunId`` and high-water →
   ``continuation_already_exists``;
9. the safe-boundary gates (:func:`.gates.build_safe_boundary_continuation_plan`, composite
   mode) with fresh ids drawn in the order ``invocationId``, ``runId``, ``turnId``,
   ``claimId``.

``terminalRepairSucceeded`` = source header terminal AND a §4.3 terminal fact that is the
last immediate event AND the header matches it (:func:`.terminal.terminal_repair_succeeded`).

Host wrappers: :func:`plan_latest` (flag, candidate discovery — newest session-inline
``failed``/``cancelled`` run by ``createdAt`` then ``runId``, §9 item 31) and
:func:`plan_authoritative` (flag, inspector, source header, ``workspaceIdentity``). Lifecycle
events (§7) are not emitted here; the host wraps these calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from maka_ref._codec.frozen import thaw
from maka_ref._plan.prefix.immutable import ImmutableRuntimePrefix
from maka_ref._plan.prefix.replay import (
    CompositeReplayBlocked,
    build_composite_replay_plan,
)

from .claims import ClaimState, classify_existing_claim
from .codes import SEGMENT_BLOCK_TO_PLANNER_REASON
from .gates import build_safe_boundary_continuation_plan
from .lineage import LineageError, walk_lineage
from .shapes import (
    ContinuationIdentity,
    SafeBoundaryContinuationPlan,
    WorkspaceCheckpoint,
    park,
)
from .terminal import terminal_repair_succeeded

__all__ = [
    "ContinuationWorld",
    "RuntimeContinuationPlanner",
    "SafetyObservation",
    "is_session_inline",
    "plan_authoritative",
    "plan_latest",
    "select_resume_candidate",
]


class ContinuationWorld(Protocol):
    """What planning reads. Required: the two readers. Optional (looked up with ``getattr``):

    * ``read_claim_state(boundary_digest) -> ClaimState | mapping | None`` (may raise);
    * ``list_session_runs(session_id) -> iterable of headers`` (legacy scan, candidates);
    * ``read_session_cwd(session_id) -> str`` and ``inspect(session_id) -> SafetyObservation``
      (the host wrappers of §3.2).

    Every reader signals failure by raising.
    """

    def read_run_header(self, session_id: str, run_id: str) -> Mapping[str, Any]: ...

    def read_prefix(
        self, session_id: str, run_id: str, up_to_event_seq: int | None = None
    ) -> ImmutableRuntimePrefix: ...


@dataclass(frozen=True, slots=True)
class SafetyObservation:
    """§3.8 inspector result: trusted host facts."""

    workspace_identity: Any
    background_operations_settled: bool
    available_tool_names: tuple[str, ...]
    workspace_path: str | None = None
    workspace_checkpoint: Any = None

    @classmethod
    def of(cls, value: Any) -> SafetyObservation:
        if isinstance(value, SafetyObservation):
            return value
        if isinstance(value, Mapping):
            return cls(
                value.get("workspaceIdentity"),
                value.get("backgroundOperationsSettled") is True,
                tuple(value.get("availableToolNames") or ()),
                value.get("workspacePath"),
                value.get("workspaceCheckpoint"),
            )
        raise TypeError("safety observation must be a mapping")


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _id_iterator(ids: Callable[[], str] | Iterable[str]) -> Callable[[], str]:
    if callable(ids):
        return ids
    iterator: Iterator[str] = iter(ids)
    return lambda: next(iterator)


def _same_json(a: Any, b: Any) -> bool:
    return thaw(a) == thaw(b)


class RuntimeContinuationPlanner:
    """§3.3 planner over a :class:`ContinuationWorld`; ``new_id`` supplies fresh ids."""

    def __init__(self, world: ContinuationWorld, new_id: Callable[[], str] | Iterable[str]) -> None:
        self._world = world
        self._new_id = _id_iterator(new_id)

    def plan(
        self,
        *,
        session_id: str,
        source_run_id: str,
        current_cwd: Any,
        source_workspace_identity: Any,
        current_workspace_identity: Any,
        background_operations_settled: bool,
        available_tool_names: Iterable[str],
        expected_runtime_event_high_water: Any = None,
        workspace_checkpoint: WorkspaceCheckpoint | Mapping[str, Any] | None = None,
    ) -> SafeBoundaryContinuationPlan:
        world = self._world
        # 1. source header
        try:
            header = world.read_run_header(session_id, source_run_id)
        except Exception as exc:  # noqa: BLE001
            return park("source_run_unreadable", f"source run {source_run_id} is unreadable: {exc}")
        read_claim_state = getattr(world, "read_claim_state", None)

        # 2' immediate prefix at its latest head; 2 lineage
        try:
            immediate = world.read_prefix(session_id, source_run_id, None)
            if not immediate.events:
                raise ValueError("empty prefix")
        except Exception as exc:  # noqa: BLE001
            return park("runtime_ledger_unreadable", f"the runtime ledger of run {source_run_id} is unreadable: {exc}")
        lineage = walk_lineage(
            world, session_id, source_run_id, header, immediate, read_claim_state=read_claim_state
        )
        if isinstance(lineage, LineageError):
            return park(lineage.code, lineage.message)

        # 3. identity of the immediate prefix
        if immediate.identity.session_id != session_id or immediate.identity.run_id != source_run_id:
            return park(
                "runtime_identity_mismatch",
                f"the runtime ledger read for run {source_run_id} belongs to another run",
            )

        # 4. composite replay
        replay = build_composite_replay_plan(lineage.prefixes)
        if isinstance(replay, CompositeReplayBlocked):
            code = SEGMENT_BLOCK_TO_PLANNER_REASON.get(replay.reason, "runtime_ledger_unreadable")
            return park(
                code,
                f"continuation replay segment {replay.segment_index} is blocked: {replay.reason}",
            )
        manifest = replay.boundary.manifest_digest
        high_water = replay.boundary.immediate_source.position.last_event_seq

        # 5.–7. durable claim state
        if read_claim_state is not None:
            try:
                state = ClaimState.of(read_claim_state(manifest))
            except Exception as exc:  # noqa: BLE001
                return park(
                    "continuation_authority_unavailable", f"reading the continuation claim failed: {exc}"
                )
            if state is not None:
                claim = state.claim
                detail = {
                    "continuationClaimId": _get(claim, "claimId"),
                    "continuationRunId": _get(_get(claim, "target"), "runId"),
                }
                version = _get(claim, "providerProjectionVersion")
                if (
                    _get(claim, "boundaryDigest") != manifest
                    or not _same_json(_get(claim, "boundary"), replay.boundary.to_json())
                    or type(version) is bool
                    or version != replay.provider_projection_version
                    or _get(claim, "providerReplayDigest") != replay.provider_replay_digest
                ):
                    return park(
                        "continuation_claim_repair_required",
                        "an existing continuation claim does not match the current replay",
                        detail,
                    )
                classification = self._classify(session_id, state)
                return park(
                    classification.reason,
                    f"an existing continuation claim was classified {classification.reason}",
                    classification.detail(),
                )

        # 8. legacy header scan
        list_runs = getattr(world, "list_session_runs", None)
        if list_runs is not None:
            try:
                runs = list(list_runs(session_id))
            except Exception:  # noqa: BLE001 - the scan is optional and secondary
                runs = []
            for run in runs:
                source = _get(run, "continuationSource")
                if _get(source, "sourceRunId") == source_run_id and _get(
                    source, "sourceRuntimeEventHighWater"
                ) == high_water and type(_get(source, "sourceRuntimeEventHighWater")) is not bool:
                    return park(
                        "continuation_already_exists",
                        f"run {_get(run, 'runId')} already continues this boundary",
                        {"continuationRunId": _get(run, "runId")},
                    )

        # 9. gates, fresh ids in the order invocation, run, turn, claim
        identity = ContinuationIdentity(self._new_id(), self._new_id(), self._new_id())
        claim_id = self._new_id()
        return build_safe_boundary_continuation_plan(
            immediate.events,
            ledger_readable=True,
            terminal_repair_succeeded=terminal_repair_succeeded(header, immediate.events),
            source_cwd=_get(header, "cwd"),
            current_cwd=current_cwd,
            source_workspace_identity=source_workspace_identity,
            current_workspace_identity=current_workspace_identity,
            background_operations_settled=background_operations_settled,
            available_tool_names=available_tool_names,
            continuation_identity=identity,
            continuation_claim_id=claim_id,
            continuation_replay_plan=replay,
            expected_runtime_event_high_water=expected_runtime_event_high_water,
            workspace_checkpoint=workspace_checkpoint,
        )

    def _classify(self, session_id: str, state: ClaimState):  # -> ClaimClassification
        target_run_id = _get(_get(state.claim, "target"), "runId")
        try:
            target_header = self._world.read_run_header(session_id, target_run_id)
        except Exception:  # noqa: BLE001
            target_header = None
        target_events: Sequence[Any] | None
        try:
            target_events = tuple(self._world.read_prefix(session_id, target_run_id, None).events)
        except Exception:  # noqa: BLE001
            target_events = None
        return classify_existing_claim(state, target_header, target_events)


# ---------------------------------------------------------------------------------------
# Host wrappers (§3.2)
# ---------------------------------------------------------------------------------------


def is_session_inline(header: Mapping[str, Any]) -> bool:
    """§5.4: no ``parentRunId``, or a ``continuationSource`` and no ``agentId``."""
    return "parentRunId" not in header or ("continuationSource" in header and "agentId" not in header)


def _utf16(value: Any) -> bytes:
    return value.encode("utf-16-be", "surrogatepass") if type(value) is str else b""


def select_resume_candidate(runs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Newest session-inline ``failed``/``cancelled`` run: ``createdAt`` desc, then ``runId`` desc."""
    candidates = [
        run
        for run in runs
        if isinstance(run, Mapping) and run.get("status") in ("failed", "cancelled") and is_session_inline(run)
    ]
    if not candidates:
        return None

    def key(run: Mapping[str, Any]) -> tuple[float, bytes]:
        created = run.get("createdAt")
        number = created if type(created) in (int, float) else float("-inf")
        return (number, _utf16(run.get("runId")))

    return max(candidates, key=key)


def plan_authoritative(
    world: Any,
    new_id: Callable[[], str] | Iterable[str],
    session_id: str,
    source_run_id: str,
    *,
    feature_enabled: bool,
    expected_runtime_event_high_water: Any = None,
) -> SafeBoundaryContinuationPlan:
    """§3.2 ``plan_authoritative``: flag, inspector, source header, identity, then the planner.

    ``world`` must provide the planner readers plus ``inspect(session_id)`` and
    ``read_session_cwd(session_id)``; a world without ``inspect`` means "no safety inspector".
    """
    if not feature_enabled:
        return park("resume_feature_disabled", "safe-boundary resume is disabled")
    inspect = getattr(world, "inspect", None)
    if world is None or inspect is None:
        return park("safety_observation_unavailable", "no run store or safety inspector is configured")
    try:
        header = world.read_run_header(session_id, source_run_id)
    except Exception as exc:  # noqa: BLE001
        return park("source_run_unreadable", f"source run {source_run_id} is unreadable: {exc}")
    source_identity = _get(header, "workspaceIdentity")
    if source_identity is None:
        return park("workspace_identity_missing", f"source run {source_run_id} recorded no workspace identity")
    try:
        observation = SafetyObservation.of(inspect(session_id))
        current_cwd = world.read_session_cwd(session_id)
    except Exception as exc:  # noqa: BLE001
        return park("safety_observation_unavailable", f"the safety inspector failed: {exc}")
    return RuntimeContinuationPlanner(world, new_id).plan(
        session_id=session_id,
        source_run_id=source_run_id,
        current_cwd=current_cwd,
        source_workspace_identity=source_identity,
        current_workspace_identity=observation.workspace_identity,
        background_operations_settled=observation.background_operations_settled,
        available_tool_names=observation.available_tool_names,
        expected_runtime_event_high_water=expected_runtime_event_high_water,
        workspace_checkpoint=observation.workspace_checkpoint,
    )


def plan_latest(
    world: Any,
    new_id: Callable[[], str] | Iterable[str],
    session_id: str,
    *,
    feature_enabled: bool,
) -> SafeBoundaryContinuationPlan:
    """§3.2 ``plan_latest``: flag, candidate discovery (§9 item 31), then :func:`plan_authoritative`."""
    if not feature_enabled:
        return park("resume_feature_disabled", "safe-boundary resume is disabled")
    list_runs = getattr(world, "list_session_runs", None)
    if world is None or list_runs is None:
        return park("resume_candidate_missing", "no run store is configured")
    try:
        runs = list(list_runs(session_id))
    except Exception as exc:  # noqa: BLE001
        return park("resume_candidate_missing", f"session runs are unreadable: {exc}")
    candidate = select_resume_candidate(runs)
    if candidate is None:
        return park("resume_candidate_missing", f"session {session_id} has no failed or cancelled run to resume")
    return plan_authoritative(world, new_id, session_id, candidate["runId"], feature_enabled=True)
