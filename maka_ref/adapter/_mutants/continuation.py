"""Phase 1 continuation mutants (spec 20 §3: planning, gates, claim, revalidation, execution)."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from typing import Any

from maka_ref.adapter._mutants._patch import replace, wrap, wrap_method
from maka_ref.adapter._mutants._registry import mutant


@mutant("continuation-duplicate-user-message", layer="continuation", spec="20 §3.14", family="RECOVERY-RESUME-001..005",
        keyword="RECOVERY-RESUME-003 or RECOVERY-RESUME-004")
def apply_duplicate_user_message() -> None:
    """The continuation run re-appends the source's user message (as a new user event)
    before calling the provider.

    Spec 20 §3.14: a continuation starts with its continuation-start and never duplicates the
    user message; the provider already sees it in the replayed context. Killed by
    RECOVERY-RESUME-001..005 ("no duplicate user message").
    """
    ev = importlib.import_module("maka_ref._runtime.events")
    run_turn_mod = importlib.import_module("maka_ref._runtime.run_turn")

    def factory(original: Any) -> Any:
        def provider_loop(self: Any) -> None:
            last = self.history[-1] if self.history else None
            actions = last.get("actions") if hasattr(last, "get") else None
            if hasattr(actions, "get") and actions.get("continuationStart") is not None:
                user = ev.user_event(self.ids, self.clock(), self.script.user_message, self.script.protocol)
                self.store.append(user)  # the mutation: a second user message
                self.history.append(user)
            original(self)
        return provider_loop

    wrap_method(run_turn_mod._Turn, "provider_loop", factory)


@mutant("continuation-indeterminate-tool-rerun", layer="continuation", spec="20 §3.3 step 4; 20 §1.10",
        family="RECOVERY-RESUME-006..008", keyword="RECOVERY-RESUME-006 or RECOVERY-RESUME-008")
def apply_indeterminate_tool_rerun() -> None:
    """The continuation planner treats an indeterminate tool operation as not dispatched, so
    a resume continues past it and the model re-issues (re-runs) the tool.

    Spec 20 §3.3 step 4 / §1.10: an unsettled (indeterminate or parked) operation in the
    source segment parks the resume (``runtime_ledger_unreadable``). Only the continuation's
    segment check is mutated. Killed by RECOVERY-RESUME-006/008 (P2/P4 kills park).
    """
    module = importlib.import_module("maka_ref._plan.prefix.replay")
    original = module.resolve_recovery

    def resolve_recovery(events: Any) -> Any:
        resolution = original(events)
        decisions = tuple(
            dataclasses.replace(d, status="definitely_not_dispatched", reason="new_protocol_before_dispatch")
            if d.status == "indeterminate" else d
            for d in resolution.decisions
        )
        return dataclasses.replace(resolution, decisions=decisions, requires_reconciliation=False)

    module.resolve_recovery = resolve_recovery


@mutant("continuation-workspace-identity-ignored", layer="continuation", spec="20 §3.3 gate i; 20 §3.8",
        family="MUTANT-GAP-CONT-001", keyword="MUTANT-GAP-CONT-001")
def apply_workspace_identity_ignored() -> None:
    """The continuation gates ignore a workspace-identity mismatch between the source run's
    header and the workspace being resumed.

    Spec 20 §3.3 gate (i): differing identities reject with ``workspace_identity_mismatch``;
    continuing would replay one workspace's run into another. Killed by MUTANT-GAP-CONT-001.
    """

    def factory(original: Any) -> Any:
        def build_safe_boundary_continuation_plan(events: Any, **kwargs: Any) -> Any:
            kwargs["source_workspace_identity"] = kwargs.get("current_workspace_identity")
            return original(events, **kwargs)
        return build_safe_boundary_continuation_plan

    wrap("maka_ref._plan.continuation.gates", "build_safe_boundary_continuation_plan", factory)


@mutant("continuation-claim-not-unique", layer="continuation", spec="20 §3.10; 30 §2.6; 30 §7.3 C4",
        family="RECOVERY-RESUME-011", keyword="RECOVERY-RESUME-011")
def apply_claim_not_unique() -> None:
    """The durable continuation claim is not unique: the claims table has no uniqueness on the
    boundary or the source position, the claim writer does not look for an existing or
    conflicting claim, and execution does not re-check for a run already continuing the
    boundary — so two concurrent resumes that both planned can both win.

    Spec 20 §3.10 / spec 30 §2.6: exactly one continuation per boundary, decided by the
    atomic claim. Killed by RECOVERY-RESUME-011 (two concurrent resumes).
    """
    from maka_ref._store.engine import schema

    for version, statements in list(schema.MIGRATIONS.items()):
        if any("runtime_continuation_claims (" in s for s in statements):
            schema.MIGRATIONS[version] = tuple(
                s.replace("boundary_digest TEXT NOT NULL UNIQUE", "boundary_digest TEXT NOT NULL")
                .replace("  UNIQUE (source_session_id, source_run_id, source_event_high_water, source_prefix_digest),\n", "")
                for s in statements
            )

    def _existing_or_conflict(conn: Any, claim: Any) -> Any:
        return None

    replace("maka_ref._store.writers.continuation", "_existing_or_conflict", _existing_or_conflict)
    from maka_ref._store.agent_runs.store import AgentRunStore

    def factory(original: Any) -> Any:
        def list_session_runs(self: Any, session_id: str) -> Any:
            runs = original(self, session_id)
            if sys._getframe(1).f_code.co_name == "execute_continuation":
                return [r for r in runs if not r.get("continuationSource")]
            return runs
        return list_session_runs

    wrap_method(AgentRunStore, "list_session_runs", factory)


@mutant("continuation-revalidation-skipped", layer="continuation", spec="20 §3.9", family="MUTANT-GAP-CONT-002",
        keyword="MUTANT-GAP-CONT-002")
def apply_revalidation_skipped() -> None:
    """Execution skips the §3.9 revalidation: the source and the safety facts are not re-read
    between planning and the provider call (nor at the activation barrier after the claim).

    Spec 20 §3.9: a change of the world between plan and execution (source ledger, terminal,
    workspace identity, tool catalog) fails the continuation with a stable code before any
    provider call. Killed by MUTANT-GAP-CONT-002 (the workspace identity changes while the
    resuming process is stopped after its claim).
    """
    def revalidate_source(world: Any, c: Any) -> None:
        return None

    def revalidate_safety(world: Any, c: Any) -> Any:
        return None

    replace("maka_ref._continuation.revalidate", "revalidate_source", revalidate_source)
    replace("maka_ref._continuation.revalidate", "revalidate_safety", revalidate_safety)


@mutant("continuation-start-without-t1-marker", layer="continuation", spec="20 §3.12; 10 §3; 10 §6.2 step 1",
        family="RECOVERY-RESUME-012", keyword="RECOVERY-RESUME-012")
def apply_start_without_t1_marker() -> None:
    """A continuation of a T1 source run starts without the T1 protocol marker: its
    continuation-start event lacks ``actions.runtimeProtocol`` although the runner keeps
    writing T1 dispatch facts.

    Spec 20 §3.12: a live start carries ``runtimeProtocol`` iff the executing runner declares
    the T1 protocol; spec 10 §6.2 step 1 reads a run as new-protocol only from its first
    event's marker. Without it the continuation's tool calls lose T1 protection: a crash after
    a call but before its dispatch resolves ``indeterminate`` (legacy) instead of
    ``definitely_not_dispatched``. Killed by RECOVERY-RESUME-012.
    """
    module = importlib.import_module("maka_ref._continuation.execute")
    original = module._start_event

    def _start_event(c: Any, ts: int, t1: bool) -> Any:
        return original(c, ts, False)  # the mutation: the marker is never written

    module._start_event = _start_event
