"""Executing a ``continue`` plan (spec 20 §3.9–§3.14) over the real stores and the live loop.

Order (§3.9; the provider is called only after step 8):

1. snapshot the plan (it is frozen already) and take the in-process guards (one execution per
   source boundary key ``<session>:<sourceRun>:<highWater>``, one continuation per session);
2. revalidate the source boundary, header and ledger, then the safety facts
   (:mod:`.revalidate`);
3. build the exact target run header (§3.11) and the claim (§3.10, ``claimedAt = now``) and
   take the **durable claim**: anything but ``acquired`` → ``continuation_claim_conflict``
   (nothing else is written; no target run exists); crash point
   ``after_continuation_claim_committed``;
4. scan the session's headers: another run continuing the same boundary →
   ``continuation_claim_conflict``; a run with the target id → ``target_run_conflict``;
5. repeat the safety check (the "activation barrier", §3.9 step 12);
6. create the target header **exactly as claimed** (``created``), append ``run_created``,
   failpoint ``P11`` and crash point ``after_run_created``;
7. commit the live ``continuation_start_v2`` (event_seq 1, ``runtime_admission``, the T1 marker
   iff the script's protocol is T1). A failure leaves the target ``created``, without a
   terminal, and the provider uncalled; crash point ``after_continuation_start_committed``;
8. header ``running`` + ``run_started``; then the provider loop of ``maka_ref._runtime`` with
   history = the planned ``runtimeContext`` + the start event (no user message, §3.14); the
   scripted provider counts the model steps already in that history, so it answers the
   source's next step;
9. terminal RuntimeEvent (crash point ``after_terminal_event_committed``, next to the loop's
   ``P9``), then the terminal header (§4.1), like a normal turn; crash point
   ``after_terminal_header_committed``.

The five crash points are those of spec 20 §4.9 (:mod:`.crashpoints`; what a kill at each
leaves and what repair/resume then do: ``docs/failpoints.md`` §4).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_ref._codec.frozen import FrozenDict, thaw
from maka_ref._errors import MakaRefError
from maka_ref._plan.continuation import (
    RuntimeContinuation,
    continuation_envelope_problem,
)
from maka_ref._runtime.effects import EffectLog
from maka_ref._runtime.ids import RunIds
from maka_ref._runtime.provider import T1_PROTOCOL, Script, ScriptedProvider
from maka_ref._runtime.run_turn import (
    BACKEND_KIND,
    LLM_CONNECTION_SLUG,
    MODEL_ID,
    PERMISSION_MODE,
    MillisecondClock,
    RunSummary,
    _summary,
    _Turn,
)
from maka_ref._runtime.tool_runtime import Clock
from maka_ref._runtime.tools import TOOLS, Tool
from maka_ref._store.claims.codec import CLAIM_PROTOCOL, expected_continuation_source
from maka_ref._store.engine.failpoints import failpoint

from .crashpoints import continuation_failpoint
from .revalidate import (
    RuntimeContinuationRevalidationError,
    revalidate_safety,
    revalidate_source,
)
from .sidecar import write_script_sidecar
from .world import StoreWorld

__all__ = [
    "ContinuationExecutionError",
    "ExecutionResult",
    "build_claim",
    "build_target_header",
    "execute_continuation",
]

#: Source-run fields the target inherits (§3.11).
INHERITED_FIELDS = ("orchestrationMode", "orchestrationSource", "agentSwarmAuthorization", "toolMode")


class ContinuationExecutionError(MakaRefError):
    """A non-revalidation execution failure (in-process guard, start not durable, …)."""

    code = "continuation_execution_failed"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    claim_id: str
    start_event_id: str
    summary: RunSummary


_guard_lock = threading.Lock()
_active_boundaries: set[str] = set()
_active_sessions: set[str] = set()


@contextmanager
def _in_process_guard(c: RuntimeContinuation) -> Iterator[None]:
    """§3.9 step 2 (plain errors, not coded)."""
    key = f"{c.session_id}:{c.source_run_id}:{c.source_runtime_event_high_water}"
    with _guard_lock:
        if key in _active_boundaries:
            raise ContinuationExecutionError("this continuation boundary is already executing", code="continuation_in_progress")
        if c.session_id in _active_sessions:
            raise ContinuationExecutionError("another run is active", code="another_run_active")
        _active_boundaries.add(key)
        _active_sessions.add(c.session_id)
    try:
        yield
    finally:
        with _guard_lock:
            _active_boundaries.discard(key)
            _active_sessions.discard(c.session_id)


def build_target_header(
    c: RuntimeContinuation, source_header: Mapping[str, Any], current_cwd: str, claimed_at: int
) -> dict[str, Any]:
    """§3.11: the exact pre-provider header of the target run."""
    assert c.boundary is not None and c.claim_id is not None
    header: dict[str, Any] = {
        "runId": c.run_id,
        "sessionId": c.session_id,
        "turnId": c.turn_id,
        "invocationId": c.invocation_id,
        "status": "created",
        "backendKind": BACKEND_KIND,
        "llmConnectionSlug": LLM_CONNECTION_SLUG,
        "modelId": MODEL_ID,
        "cwd": current_cwd,
        "permissionMode": PERMISSION_MODE,
        "collaborationMode": source_header.get("collaborationMode", "agent"),
        "workspaceIdentity": c.safety_snapshot.workspace_identity,
        "parentRunId": c.source_run_id,
        "parentTurnId": c.source_turn_id,
        "continuationSource": expected_continuation_source(c.claim_id, c.boundary),
        "createdAt": claimed_at,
        "updatedAt": claimed_at,
    }
    for key in INHERITED_FIELDS:
        if key in source_header:
            header[key] = thaw(source_header[key])
    return header


def build_claim(c: RuntimeContinuation, target_header: Mapping[str, Any], claimed_at: int) -> dict[str, Any]:
    """§3.10 ``continuation_claim_v1``."""
    assert c.boundary is not None
    return {
        "protocol": CLAIM_PROTOCOL,
        "claimId": c.claim_id,
        "boundaryDigest": c.boundary.manifest_digest,
        "boundary": c.boundary.to_json(),
        "providerProjectionVersion": c.provider_projection_version,
        "providerReplayDigest": c.provider_replay_digest,
        "target": {"sessionId": c.session_id, "invocationId": c.invocation_id, "runId": c.run_id, "turnId": c.turn_id},
        "targetRunHeader": dict(target_header),
        "claimedAt": claimed_at,
    }


def _start_event(c: RuntimeContinuation, ts: int, t1: bool) -> dict[str, Any]:
    """§3.12 live start (``runtime_admission``)."""
    assert c.boundary is not None
    immediate = c.boundary.immediate_source
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": "runtime_admission",
            "claimId": c.claim_id,
            "boundaryDigest": c.boundary.manifest_digest,
            "immediateSource": {
                **immediate.identity.to_json(),
                "highWater": immediate.position.last_event_seq,
                "prefixDigest": immediate.prefix_digest,
            },
            "replayManifestDigest": c.boundary.manifest_digest,
            "providerProjectionVersion": c.provider_projection_version,
            "providerReplayDigest": c.provider_replay_digest,
        }
    }
    if t1:
        actions["runtimeProtocol"] = {"toolBoundary": T1_PROTOCOL}
    return {
        "id": f"{c.run_id}_start",
        "invocationId": c.invocation_id,
        "runId": c.run_id,
        "sessionId": c.session_id,
        "turnId": c.turn_id,
        "ts": ts,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": actions,
    }


class _TerminalEventHook:
    """The turn's store, with the ``after_terminal_event_committed`` crash point right after
    the terminal barrier (``_Turn.finalize``: terminal event, then the header)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def ensure_terminal_durable(self, event: Any) -> Any:
        result = self._store.ensure_terminal_durable(event)
        continuation_failpoint("after_terminal_event_committed")
        return result


def _op_event(ids: RunIds, seq: int, event_type: str, ts: int, data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": event_type,
        "id": ids.operational_event_id(seq, event_type),
        "runId": ids.run_id,
        "sessionId": ids.session_id,
        "turnId": ids.turn_id,
        "ts": ts,
        "data": dict(data),
    }


def execute_continuation(
    world: StoreWorld,
    c: RuntimeContinuation,
    script: Script,
    seed: str,
    *,
    clock: Clock | None = None,
    provider: ScriptedProvider | None = None,
    tools: Mapping[str, Tool] | None = None,
    start_transition: Callable[[Any, Mapping[str, Any]], None] | None = None,
) -> ExecutionResult:
    """Run the continuation ``c`` (a ``continue`` plan's envelope) — see the module docstring.

    ``start_transition(conn, start_event)`` (Phase 4, docs/spec-phase4.md §4.3, §7): called inside
    the continuation-start's own write transaction, after the start is inserted, to insert a
    workspace transition fact at seq 2; if it raises, neither the start nor the fact commits. Its
    ``committed()`` method, when it has one, is called right after that transaction commits and
    before the provider may be called (the spec-phase4 §8 point
    ``after_workspace_transition_committed``); its ``model_notice``, when set, is an event it
    committed in that transaction and joins the provider history after the start (the
    rebaseline notice, spec-phase4 §7.1 step 5).

    Where the continuation works: the target header's ``cwd`` (the session's current cwd,
    ``world.read_session_cwd``) — the tools act there — while the store, its effect log and the
    script sidecars stay under ``world.root``. They are the same directory except after an
    isolated restore (docs/spec-phase4.md §7.2, §14 "store/cwd split").

    Raises :class:`RuntimeContinuationRevalidationError` (coded, §3.9) or
    :class:`ContinuationExecutionError` before the provider is called; afterwards a failure ends
    the target run ``failed`` (reported in the summary), like a normal turn.
    """
    if c.boundary is None or c.claim_id is None:
        raise ContinuationExecutionError("only v2 (composite) continuations can be executed here")
    problem = continuation_envelope_problem(c)
    if problem is not None:  # §3.7 envelope invariants (§3.13 admission), before any read or write
        raise ContinuationExecutionError(problem, code="continuation_envelope_invalid")
    tick = clock if clock is not None else MillisecondClock()
    store, runs, root = world.store, world.runs, world.root
    with _in_process_guard(c):
        revalidate_source(world, c)
        revalidate_safety(world, c)
        source_header = world.read_run_header(c.session_id, c.source_run_id)
        claimed_at = tick()
        header = build_target_header(c, source_header, world.read_session_cwd(c.session_id), claimed_at)
        claim = build_claim(c, header, claimed_at)
        write_script_sidecar(root, c.run_id, script)  # before the target exists (next generations)
        result = store.claim_continuation(claim)
        if result.kind != "acquired":
            raise RuntimeContinuationRevalidationError(
                "continuation_claim_conflict",
                f"the source boundary is already claimed ({result.kind}: claim {result.claim.claim_id})",
            )
        continuation_failpoint("after_continuation_claim_committed")  # claim only: no target run
        for run in runs.list_session_runs(c.session_id):
            source = run.get("continuationSource")
            if run["runId"] == c.run_id:
                raise RuntimeContinuationRevalidationError("target_run_conflict", f"run {c.run_id} already exists")
            if (
                isinstance(source, Mapping)
                and source.get("sourceRunId") == c.source_run_id
                and source.get("sourceRuntimeEventHighWater") == c.source_runtime_event_high_water
            ):
                raise RuntimeContinuationRevalidationError(
                    "continuation_claim_conflict", f"run {run['runId']} already continues this boundary"
                )
        revalidate_safety(world, c)  # the activation barrier (§3.9 step 12)
        ids = RunIds(seed=seed, session_id=c.session_id, run_id=c.run_id, invocation_id=c.invocation_id, turn_id=c.turn_id)
        runs.create_run(header)
        runs.append_event(c.session_id, c.run_id, _op_event(ids, 0, "run_created", claimed_at, {}))
        failpoint("P11")  # target run created, continuation-start not yet committed
        continuation_failpoint("after_run_created")  # the same boundary, spec 20 §4.9 name
        start = _start_event(c, max(tick(), claimed_at), script.protocol == T1_PROTOCOL)
        refused: MakaRefError | None = None
        try:
            if start_transition is None:
                started = store.commit_continuation_start(c.claim_id, start)
            else:
                with store.write() as conn:  # one transaction: the start, then the transition fact
                    started = store.commit_continuation_start(c.claim_id, start)
                    if started.created:
                        try:
                            start_transition(conn, start)
                        except MakaRefError as exc:  # a coded refusal keeps its code (rolled back)
                            refused = exc
                            raise
        except Exception as exc:
            if refused is not None:
                raise
            raise ContinuationExecutionError(
                f"continuation start not durably committed: {exc}", code="continuation_start_not_committed"
            ) from exc
        if not started.created:
            raise ContinuationExecutionError("continuation start already existed: no provider authority")
        committed = getattr(start_transition, "committed", None)
        if committed is not None:
            committed()
        continuation_failpoint("after_continuation_start_committed")  # start durable, header `created`
        now = tick()
        runs.update_run(c.session_id, c.run_id, {"status": "running", "updatedAt": now})
        runs.append_event(c.session_id, c.run_id, _op_event(ids, 1, "run_started", now, {"startEventId": started.start_event_id}))
        the_provider = provider if provider is not None else ScriptedProvider(script)
        cwd = Path(header["cwd"])
        turn = _Turn(script, cwd, c.safety_snapshot.workspace_identity, ids, store, runs, tick, the_provider,
                     tools or TOOLS, effect_log=EffectLog(root))
        turn.op_seq = 2
        turn.store = _TerminalEventHook(store)  # type: ignore[assignment]  # the tool runtime keeps `store`
        turn.history.extend(e if isinstance(e, FrozenDict) else FrozenDict(thaw(e)) for e in c.runtime_context)
        turn.history.append(FrozenDict(start))
        notice = getattr(start_transition, "model_notice", None)
        if notice is not None:  # committed with the start (docs/spec-phase4.md §7.1 step 5)
            turn.history.append(FrozenDict(notice))
        status, error, finalize_error = turn.drive(turn.provider_loop)
        if finalize_error is None:  # terminal event, header and operational event all committed
            continuation_failpoint("after_terminal_header_committed")
        summary = _summary(turn, script, cwd, c.safety_snapshot.workspace_identity, status, error, finalize_error)
        return ExecutionResult(c.claim_id, started.start_event_id, summary)
