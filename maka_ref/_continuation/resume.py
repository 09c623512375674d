"""``resume_session``: plan authoritatively, then execute a ``continue`` plan (spec 20 §3.1–§3.2).

Flow:

1. flag off (``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME`` ≠ ``"1"``) → park ``resume_feature_disabled``
   without opening any store;
2. no ``runtime.sqlite`` / no runs → park ``resume_candidate_missing`` (nothing is created);
   a store that lost history the effect log proves (a deleted WAL) → ``store_behind_effect_log``
   (:mod:`.effect_guard`), before anything is planned;
3. candidate: with ``session_id``, ``plan_latest`` of that session; without, the newest
   session-inline ``failed``/``cancelled`` run of the whole workspace (same ordering), then
   ``plan_authoritative`` on its session;
4. exactly one lifecycle event per plan (``plan_approved`` / ``plan_parked``);
5. ``continue`` → ``execution_started``, :func:`.execute.execute_continuation`, then
   ``execution_completed`` (target run ``completed``) or ``execution_failed`` (an exception —
   re-raised — or a target run that ended ``failed``; ``errorClass`` = the code).

Fresh ids come from one per-continuation seed: ``invocation_<seed>``, ``run_<seed>``,
``turn_<seed>``, ``claim_<seed>`` (the planner draws them in that order), so the live loop's
derived event ids (``maka_ref._runtime.ids``) work unchanged for the target run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_ref._plan.continuation import (
    RuntimeContinuation,
    SafeBoundaryContinuationPlan,
    plan_authoritative,
    plan_latest,
    select_resume_candidate,
)
from maka_ref._plan.continuation.shapes import park
from maka_ref._runtime.ids import new_seed
from maka_ref._runtime.provider import Script, ScriptedProvider, load_script
from maka_ref._runtime.run_turn import RunSummary
from maka_ref._runtime.tool_runtime import Clock
from maka_ref._runtime.tools import Tool
from maka_ref._store.agent_runs.store import DB_FILE_NAME, AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.directory import check_workspace_dir

from . import lifecycle as lc
from .effect_guard import check_store_covers_effect_log
from .execute import execute_continuation
from .sidecar import read_script_sidecar
from .world import StoreWorld, default_tool_catalog

__all__ = ["FLAG_ENV_VAR", "ResumeOutcome", "resume_session"]

FLAG_ENV_VAR = "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME"


@dataclass(frozen=True, slots=True)
class ResumeOutcome:
    """A parked plan, or a continuation that ran to a terminal state."""

    session_id: str
    source_run_id: str
    plan: SafeBoundaryContinuationPlan
    summary: RunSummary | None = None
    claim_id: str | None = None

    @property
    def parked(self) -> bool:
        return self.plan.disposition == "park"

    @property
    def rejection_reasons(self) -> tuple[str, ...]:
        return self.plan.rejection_reasons

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"parked": self.parked, "sessionId": self.session_id, "sourceRunId": self.source_run_id}
        if self.parked:
            out["rejectionReasons"] = list(self.plan.rejection_reasons)
            out["diagnostics"] = [d.to_json() for d in self.plan.diagnostics]
            return out
        assert self.summary is not None
        out["targetRunId"] = self.summary.run_id
        out["claimId"] = self.claim_id
        out["status"] = self.summary.status
        out["run"] = self.summary.to_json()
        return out


def _seeded_ids(seed: str) -> Iterable[str]:
    return iter((f"invocation_{seed}", f"run_{seed}", f"turn_{seed}", f"claim_{seed}"))


def _plan(world: StoreWorld, seed: str, session_id: str | None) -> tuple[str, str, SafeBoundaryContinuationPlan]:
    ids = _seeded_ids(seed)
    if session_id is not None:
        plan = plan_latest(world, ids, session_id, feature_enabled=True)
        source = plan.continuation.source_run_id if plan.continuation is not None else ""
        if not source:
            candidate = select_resume_candidate(world.list_session_runs(session_id))
            source = str(candidate["runId"]) if candidate is not None else ""
        return session_id, source, plan
    runs = [run for sid in world.list_session_ids() for run in world.list_session_runs(sid)]
    candidate = select_resume_candidate(runs)
    if candidate is None:
        return "", "", park("resume_candidate_missing", "the workspace has no failed or cancelled run to resume")
    sid, rid = str(candidate["sessionId"]), str(candidate["runId"])
    return sid, rid, plan_authoritative(world, ids, sid, rid, feature_enabled=True)


def resume_session(
    root: str | os.PathLike[str],
    session_id: str | None = None,
    *,
    flag: bool | None = None,
    lifecycle_log: lc.LifecycleSink | None = None,
    script: Script | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    seed: str | None = None,
    clock: Clock | None = None,
    provider: ScriptedProvider | None = None,
    tools: Mapping[str, Tool] | None = None,
    resolve_identity: Callable[[str], str] | None = None,
    tool_catalog: Callable[[], Iterable[str]] = default_tool_catalog,
    before_execute: Callable[[StoreWorld, SafeBoundaryContinuationPlan], None] | None = None,
    workspace_gate: Callable[[StoreWorld, str, str], SafeBoundaryContinuationPlan | None] | None = None,
    start_transition: Callable[[Any, Mapping[str, Any]], None] | None = None,
    authorize_transition: Callable[[StoreWorld, RuntimeContinuation], RuntimeContinuation] | None = None,
    workspace_checkpoint: Callable[[StoreWorld, str], Mapping[str, Any] | None] | None = None,
) -> ResumeOutcome:
    """Resume the newest failed/cancelled run of the workspace ``root`` (module docstring).

    ``flag`` defaults to ``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME == "1"``; ``lifecycle_log``
    defaults to ``<root>/.maka/lifecycle.jsonl``; ``script`` defaults to the source run's
    sidecar (:mod:`.sidecar`). ``before_execute`` is a test seam called between planning and
    execution (to change the world after planning, §8 items 101–103).
    ``workspace_gate(world, session_id, source_run_id)`` is the Phase 4 boundary check
    (docs/spec-phase4.md §6.2, ``maka_ref._boundary.gate``): a park plan it returns replaces an
    approved plan (one ``plan_parked`` event, nothing executed); ``None`` lets it run.
    ``start_transition`` is handed to the executor (a rebaseline's fact joins the start's
    transaction, docs/spec-phase4.md §7.1 step 4). ``authorize_transition(world, continuation)``
    runs once the gate passed, before ``plan_approved``: an isolated restore (docs/spec-phase4.md
    §7.2) returns the continuation with the destination's identity in its safety snapshot and
    points ``world`` at the destination, so the claim names where the continuation will run.
    ``workspace_checkpoint(world, session_id)`` is the inspector's checkpoint observation (spec
    20 §3.8; docs/spec-phase4.md §6.2): the planner's ``workspaceCheckpoint`` input, asked again
    by execution revalidation (§3.9 step 7), where any difference is ``workspace_checkpoint_changed``.
    Raises ``MakaRefError`` subclasses on execution errors (revalidation codes of §3.9).
    """
    if flag is None:
        flag = os.environ.get(FLAG_ENV_VAR) == "1"
    check_workspace_dir(root)  # a missing or non-directory workspace is an error, not a park
    workspace = Path(os.path.realpath(os.fspath(root)))
    sink = lifecycle_log if lifecycle_log is not None else lc.LifecycleLog.for_workspace(workspace)
    if not flag:
        plan = park("resume_feature_disabled", "safe-boundary resume is disabled")
        lc.emit(sink, lc.plan_parked(session_id or "", "", plan.rejection_reasons))
        return ResumeOutcome(session_id or "", "", plan)
    if not os.path.lexists(workspace / DB_FILE_NAME):  # a link or a non-file there is refused by the open
        plan = park("resume_candidate_missing", f"workspace {workspace} has no runtime store")
        lc.emit(sink, lc.plan_parked(session_id or "", "", plan.rejection_reasons))
        return ResumeOutcome(session_id or "", "", plan)
    seed = seed if seed is not None else new_seed()
    store = RuntimeStore.open(workspace)
    try:
        runs = AgentRunStore.open(workspace)
        try:
            with store.read() as conn:  # a store rolled back behind its effect log is never resumed
                check_store_covers_effect_log(workspace, conn)
            world = StoreWorld(workspace, store, runs, resolve_identity=resolve_identity, tool_catalog=tool_catalog,
                               workspace_checkpoint=workspace_checkpoint)
            sid, source_run_id, plan = _plan(world, seed, session_id)
            if plan.disposition == "park" or plan.continuation is None:
                lc.emit(sink, lc.plan_parked(sid, source_run_id, plan.rejection_reasons))
                return ResumeOutcome(sid, source_run_id, plan)
            c = plan.continuation
            if workspace_gate is not None:
                gated = workspace_gate(world, c.session_id, c.source_run_id)
                if gated is not None:
                    lc.emit(sink, lc.plan_parked(c.session_id, c.source_run_id, gated.rejection_reasons))
                    return ResumeOutcome(c.session_id, c.source_run_id, gated)
            if authorize_transition is not None:
                c = authorize_transition(world, c)
            lc.emit(sink, lc.plan_approved(c.session_id, c.source_run_id, c.run_id))
            if before_execute is not None:
                before_execute(world, plan)
            lc.emit(sink, lc.execution_started(c.session_id, c.source_run_id, c.run_id))
            try:
                loaded = load_script(script) if script is not None else read_script_sidecar(workspace, c.source_run_id)
                result = execute_continuation(world, c, loaded, seed, clock=clock, provider=provider, tools=tools,
                                              start_transition=start_transition)
            except BaseException as exc:
                lc.emit(sink, lc.execution_failed(c.session_id, c.source_run_id, c.run_id, lc.error_class(exc)))
                raise
            summary = result.summary
            if summary.status == "completed":
                lc.emit(sink, lc.execution_completed(c.session_id, c.source_run_id, c.run_id))
            else:
                code = (summary.error or {}).get("code") or "unknown"
                lc.emit(sink, lc.execution_failed(c.session_id, c.source_run_id, c.run_id, code))
            return ResumeOutcome(c.session_id, c.source_run_id, plan, summary, result.claim_id)
        finally:
            runs.close()
    finally:
        store.close()
