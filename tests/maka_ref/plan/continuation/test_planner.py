"""``RuntimeContinuationPlanner.plan`` and the host wrappers (spec 20 §3.2, §3.3).

Scenarios: spec 20 §8 items 9 (through the planner, v1 edge), 35, 37–42 (the anchor's
``runtime-continuation.test.ts``), the pure parts of items 91–94 and 96 (session-manager
tests: flag, inspector, candidates, existing claims), §9 items 9, 15, 19, 30, 31, §10 item 9.
Every store is the in-memory world of ``continuation_support``.
"""

from __future__ import annotations

from tests.maka_ref.continuation.support import (
    DEFAULT_IDS,
    ClaimlessWorld,
    MemoryWorld,
    call,
    header,
    ids,
    legacy_start,
    model_text,
    prefix,
    result,
    terminal,
    thinking,
    user,
    v2_child,
)
from maka_ref._plan.continuation import RuntimeContinuationPlanner, plan_authoritative, plan_latest
from maka_ref._plan.prefix.digests import is_digest
from maka_ref._plan.prefix.replay import build_composite_replay_plan

FACTS = dict(
    session_id="session-1",
    current_cwd="/workspace/repo",
    source_workspace_identity="workspace-1",
    current_workspace_identity="workspace-1",
    background_operations_settled=True,
    available_tool_names=["Bash", "Write"],
)


def run_plan(world, source_run_id="run-1", id_values=DEFAULT_IDS, **overrides):
    return RuntimeContinuationPlanner(world, ids(*id_values)).plan(source_run_id=source_run_id,
                                                                   **{**FACTS, **overrides})


def world_with(events, **hdr):
    world = MemoryWorld()
    world.add(header(1, **hdr), events)
    return world


def ids_of(events):
    return [e["id"] for e in events]


def test_item_35_exact_composite_continuation():
    events = [user("user-1"), terminal("terminal-1")]
    p = run_plan(world_with(events))
    assert p.disposition == "continue", p.to_json()
    c = p.continuation.to_json()
    replay = build_composite_replay_plan([prefix(events)])
    assert c == {
        "sessionId": "session-1",
        "invocationId": "invocation-2",
        "runId": "run-2",
        "turnId": "turn-2",
        "sourceInvocationId": "invocation-1",
        "sourceRunId": "run-1",
        "sourceTurnId": "turn-1",
        "sourceRuntimeEventHighWater": 2,
        "runtimeContext": [dict(e) for e in prefix(events).events],
        "claimId": "claim-2",
        "boundary": replay.boundary.to_json(),
        "providerReplayDigest": replay.provider_replay_digest,
        "providerProjectionVersion": 1,
        "safetySnapshot": {"workspaceIdentity": "workspace-1", "backgroundOperationsSettled": True,
                           "availableToolNames": ["Bash", "Write"]},
    }
    assert len(c["boundary"]["segments"]) == 1
    assert is_digest(c["providerReplayDigest"]) and is_digest(c["boundary"]["manifestDigest"])


def test_ids_drawn_in_order_invocation_run_turn_claim():
    drawn = []
    counter = iter(range(10))

    def new_id():
        value = f"id-{next(counter)}"
        drawn.append(value)
        return value

    p = RuntimeContinuationPlanner(world_with([user("user-1"), terminal("terminal-1")]), new_id).plan(
        source_run_id="run-1", **FACTS)
    c = p.continuation
    assert (c.invocation_id, c.run_id, c.turn_id, c.claim_id) == ("id-0", "id-1", "id-2", "id-3")
    assert drawn == ["id-0", "id-1", "id-2", "id-3"]


def test_early_parks_draw_no_ids():
    drawn = []
    p = RuntimeContinuationPlanner(MemoryWorld(), lambda: drawn.append(1) or "x").plan(source_run_id="run-1", **FACTS)
    assert p.rejection_reasons == ("source_run_unreadable",) and drawn == []
    assert [d.code for d in p.diagnostics] == ["source_run_unreadable"]


def test_item_37_prefix_read_throws():
    world = world_with([user("user-1"), terminal("terminal-1")])
    world.prefix_override["run-1"] = OSError("disk")
    p = run_plan(world)
    assert p.rejection_reasons == ("runtime_ledger_unreadable",)
    assert [d.code for d in p.diagnostics] == ["runtime_ledger_unreadable"]
    world = world_with([])  # an empty immediate prefix cannot be read
    assert run_plan(world).rejection_reasons == ("runtime_ledger_unreadable",)


def test_item_38_running_source():
    p = run_plan(world_with([user("user-1"), terminal("terminal-1")], status="running", failureClass=None))
    assert p.rejection_reasons == ("terminal_repair_failed",)


def test_item_39_header_completed_terminal_failed():
    p = run_plan(world_with([user("user-1"), terminal("terminal-1")], status="completed", failureClass=None))
    assert p.rejection_reasons == ("terminal_repair_failed",)


def test_item_40_model_text_after_terminal():
    p = run_plan(world_with([user("user-1"), terminal("terminal-1"), model_text("late-1")]))
    assert p.rejection_reasons == ("terminal_repair_failed",)


def test_item_41_empty_model_text_before_failed_terminal():
    p = run_plan(world_with([user("user-1"), model_text("empty-1", text=""), terminal("terminal-1")]))
    assert p.disposition == "continue", p.to_json()


def test_item_42_prefix_of_another_run():
    world = world_with([user("user-1"), terminal("terminal-1")])
    world.prefix_override["run-1"] = prefix([user("other-user", n=9), terminal("other-terminal", 9)])
    assert run_plan(world).rejection_reasons == ("runtime_identity_mismatch",)


def test_item_9_v1_edge_through_planner():
    """§8 item 9 / §3.15 via the planner: ancestor pinned at the v1 high-water."""
    world = MemoryWorld()
    root = [user("root-user"), thinking("root-thinking"), model_text("root-text"), terminal("root-terminal")]
    world.add(header(1), root)
    child = [legacy_start("continuation-start", 2), call("child-call", n=2), result("child-result", n=2),
             terminal("child-terminal", 2)]
    world.add(header(2, parentRunId="run-1", parentTurnId="turn-1", createdAt=5,
                     continuationSource={"sourceInvocationId": "invocation-1", "sourceRunId": "run-1",
                                         "sourceTurnId": "turn-1", "sourceRuntimeEventHighWater": 4}), child)
    p = run_plan(world, "run-2", ("invocation-3", "run-3", "turn-3", "claim-3"))
    assert p.disposition == "continue", p.to_json()
    assert ids_of(p.continuation.runtime_context) == [
        "root-user", "root-terminal", "continuation-start", "child-call", "child-result", "child-terminal"]
    assert ids_of(p.continuation.source_runtime_context) == [
        "continuation-start", "child-call", "child-result", "child-terminal"]
    assert ("run-1", 4) in world.reads  # ancestor pinned (§9 item 14)
    assert ("run-2", None) in world.reads  # immediate at its latest head


def test_segment_block_reasons_map_to_planner_reasons():
    """§3.3 step 4, §9 item 9: unsettled/corrupt tool state → runtime_ledger_unreadable."""
    p = run_plan(world_with([user("user-1"), call("call-1"), terminal("terminal-1")]))  # legacy: indeterminate
    assert p.rejection_reasons == ("runtime_ledger_unreadable",)
    assert "tool_recovery_unsettled" in p.diagnostics[0].message and "segment 0" in p.diagnostics[0].message
    orphan = result("orphan-1", call_id="nope")
    p = run_plan(world_with([user("user-1"), orphan, terminal("terminal-1")]))
    assert p.rejection_reasons == ("runtime_ledger_unreadable",)
    assert "tool_recovery_corruption" in p.diagnostics[0].message
    gap = [user("user-1", t1=True), call("call-1", name="Read"), model_text("model-1"), terminal("terminal-1")]
    assert run_plan(world_with(gap)).rejection_reasons == ("provider_replay_non_suffix_gap",)


def test_boundary_invalid_fails_closed():
    """§10 item 9: two lineage segments sharing a turnId park runtime_ledger_unreadable."""
    world = MemoryWorld()
    world.add(header(1), [user("root-user"), terminal("root-terminal")])
    child = [user("child-user", n=2, turnId="turn-1"), terminal("child-terminal", 2, turnId="turn-1")]
    world.add(header(2, turnId="turn-1", parentRunId="run-1", createdAt=5,
                     continuationSource={"sourceInvocationId": "invocation-1", "sourceRunId": "run-1",
                                         "sourceTurnId": "turn-1", "sourceRuntimeEventHighWater": 2}), child)
    p = run_plan(world, "run-2", ("invocation-3", "run-3", "turn-3", "claim-3"))
    assert p.disposition == "park" and p.rejection_reasons == ("runtime_ledger_unreadable",)


# --- existing claims (§3.3 steps 5–8; §8 item 96 pure part; §9 items 15, 18–20) -----------


def _claimed_world(status="failed", child_events=None, **kwargs):
    world = MemoryWorld()
    world.add(header(1), [user("user-1"), terminal("terminal-1")])
    claim, start, hdr = v2_child(world, ["run-1"], 2,
                                 child_events if child_events is not None else [terminal("terminal-2", 2)],
                                 status=status, **kwargs)
    return world, claim, hdr


def test_item_96_completed_continuation_already_exists():
    world, claim, _ = _claimed_world()
    p = run_plan(world, id_values=("invocation-3", "run-3", "turn-3", "claim-3"))
    assert p.rejection_reasons == ("continuation_already_exists",)
    assert p.diagnostics[0].detail == {"continuationClaimId": "claim-2", "continuationRunId": "run-2"}


def test_item_96_tampered_target_header_needs_repair():
    world, _, hdr = _claimed_world()
    hdr["modelId"] = "tampered"
    assert run_plan(world).rejection_reasons == ("continuation_claim_repair_required",)


def test_item_96_tampered_terminal_class_needs_repair():
    world, _, hdr = _claimed_world()
    hdr["failureClass"] = "other_class"
    assert run_plan(world).rejection_reasons == ("continuation_claim_repair_required",)


def test_item_96_output_after_target_terminal_needs_repair():
    world, _, _ = _claimed_world(child_events=[terminal("terminal-2", 2), model_text("late-2", 2)])
    assert run_plan(world).rejection_reasons == ("continuation_claim_repair_required",)


def test_started_without_terminal_is_indeterminate():
    """§3.5 step 10, §9 item 17."""
    world, _, _ = _claimed_world(status="running", child_events=[])
    p = run_plan(world)
    assert p.rejection_reasons == ("continuation_started_indeterminate",)


def test_claim_only_state_needs_repair():
    """§9 item 15: a claim without a target run parks continuation_claim_repair_required."""
    world, _, _ = _claimed_world()
    del world.headers["run-2"], world.events["run-2"]
    assert run_plan(world).rejection_reasons == ("continuation_claim_repair_required",)


def test_claim_not_authenticating_replay_needs_repair():
    """§3.3 step 6, §9 item 19."""
    world, claim, _ = _claimed_world()
    claim["providerReplayDigest"] = "sha256:" + "0" * 64
    p = run_plan(world)
    assert p.rejection_reasons == ("continuation_claim_repair_required",)
    assert p.diagnostics[0].detail == {"continuationClaimId": "claim-2", "continuationRunId": "run-2"}


def test_claim_reader_raises_authority_unavailable():
    world = world_with([user("user-1"), terminal("terminal-1")])

    def boom(_digest):
        raise RuntimeError("authority down")

    world.read_claim_state = boom  # type: ignore[method-assign]
    assert run_plan(world).rejection_reasons == ("continuation_authority_unavailable",)


def test_legacy_header_scan_already_exists():
    """§3.3 step 8 (no claim dependency)."""
    world = ClaimlessWorld()
    world.add(header(1), [user("user-1"), terminal("terminal-1")])
    world.add(header(2, parentRunId="run-1", createdAt=5,
                     continuationSource={"sourceInvocationId": "invocation-1", "sourceRunId": "run-1",
                                         "sourceTurnId": "turn-1", "sourceRuntimeEventHighWater": 2}),
              [user("user-2", n=2), terminal("terminal-2", 2)])
    p = run_plan(world, id_values=("invocation-3", "run-3", "turn-3", "claim-3"))
    assert p.rejection_reasons == ("continuation_already_exists",)
    assert p.diagnostics[0].detail == {"continuationRunId": "run-2"}


def test_repaired_target_is_next_source():
    """§3.15 / §9 item 15: the (failed, inline, newest) target is what plan_latest picks next."""
    world, _, _ = _claimed_world()
    world.headers["run-2"]["createdAt"] = 100
    p = plan_latest(world, ids("invocation-3", "run-3", "turn-3", "claim-3"), "session-1", feature_enabled=True)
    assert p.disposition == "continue", p.to_json()
    c = p.continuation
    assert c.source_run_id == "run-2" and len(c.boundary.segments) == 2
    assert ids_of(c.runtime_context) == ["user-1", "terminal-1", "start-2", "terminal-2"]


# --- host wrappers (§3.2; §8 items 91–94 pure parts; §9 items 30, 31) ---------------------


def test_item_93_flag_off():
    world = world_with([user("user-1"), terminal("terminal-1")])
    for p in (plan_latest(world, ids(), "session-1", feature_enabled=False),
              plan_authoritative(world, ids(), "session-1", "run-1", feature_enabled=False)):
        assert p.rejection_reasons == ("resume_feature_disabled",)
        assert [d.code for d in p.diagnostics] == ["resume_feature_disabled"]


def test_item_91_inspector_facts_flow_into_snapshot():
    world = world_with([user("user-1"), terminal("terminal-1")])
    world.observation = {"workspaceIdentity": "workspace-1", "backgroundOperationsSettled": True,
                         "availableToolNames": ["Write", "Read", "Read"], "workspacePath": "/workspace/repo"}
    p = plan_authoritative(world, ids(*DEFAULT_IDS), "session-1", "run-1", feature_enabled=True)
    assert p.disposition == "continue"
    assert p.continuation.to_json()["safetySnapshot"] == {
        "workspaceIdentity": "workspace-1", "backgroundOperationsSettled": True, "availableToolNames": ["Read", "Write"]}


def test_item_92_inspector_throws():
    world = world_with([user("user-1"), terminal("terminal-1")])
    world.observation = None
    p = plan_authoritative(world, ids(*DEFAULT_IDS), "session-1", "run-1", feature_enabled=True)
    assert p.rejection_reasons == ("safety_observation_unavailable",)


def test_authoritative_early_parks():
    world = world_with([user("user-1"), terminal("terminal-1")], workspaceIdentity=None)
    p = plan_authoritative(world, ids(*DEFAULT_IDS), "session-1", "run-1", feature_enabled=True)
    assert p.rejection_reasons == ("workspace_identity_missing",)  # §9 item 30
    p = plan_authoritative(world, ids(*DEFAULT_IDS), "session-1", "run-9", feature_enabled=True)
    assert p.rejection_reasons == ("source_run_unreadable",)
    no_inspector = type("NoInspector", (ClaimlessWorld,), {"inspect": None})()
    p = plan_authoritative(no_inspector, ids(*DEFAULT_IDS), "session-1", "run-1", feature_enabled=True)
    assert p.rejection_reasons == ("safety_observation_unavailable",)
    world = world_with([user("user-1"), terminal("terminal-1")])
    world.session_cwd = "/moved/repo"
    p = plan_authoritative(world, ids(*DEFAULT_IDS), "session-1", "run-1", feature_enabled=True)
    assert p.disposition == "continue"
    assert [d.code for d in p.diagnostics] == ["workspace_location_changed"]


def test_item_94_newest_failed_candidate():
    world = MemoryWorld()
    world.add(header(1, createdAt=1), [user("user-1"), terminal("terminal-1")])
    world.add(header("b", createdAt=2), [user("user-b", n="b"), terminal("terminal-b", "b")])
    p = plan_latest(world, ids(*DEFAULT_IDS), "session-1", feature_enabled=True)
    assert p.disposition == "continue"
    assert p.continuation.source_run_id == "run-b"


def test_candidate_discovery_only_inline_failed_or_cancelled():
    """§9 item 31, §5.4."""
    world = MemoryWorld()
    world.add(header(1, status="completed", failureClass=None, createdAt=9), [user("user-1"), terminal("t1", 1, "completed")])
    world.add(header(3, parentRunId="run-1", agentId="agent-1", createdAt=8), [user("user-3", n=3), terminal("t3", 3)])
    world.add(header(4, status="running", failureClass=None, createdAt=7), [user("user-4", n=4)])
    p = plan_latest(world, ids(*DEFAULT_IDS), "session-1", feature_enabled=True)
    assert p.rejection_reasons == ("resume_candidate_missing",)
    world.add(header(5, status="cancelled", createdAt=1),
              [user("user-5", n=5), terminal("t5", 5, "aborted")])
    p = plan_latest(world, ids("invocation-6", "run-6", "turn-6", "claim-6"), "session-1", feature_enabled=True)
    assert p.disposition == "continue", p.to_json()
    assert p.continuation.source_run_id == "run-5"
    # ties on createdAt break on runId descending
    world2 = MemoryWorld()
    world2.add(header("a", createdAt=1), [user("ua", n="a"), terminal("ta", "a")])
    world2.add(header("b", createdAt=1), [user("ub", n="b"), terminal("tb", "b")])
    p = plan_latest(world2, ids(*DEFAULT_IDS), "session-1", feature_enabled=True)
    assert p.continuation.source_run_id == "run-b"


def test_continuation_history_has_no_synthesized_user_event_and_sources_untouched():
    """§3.14 (pure part): runtimeContext is exactly the committed events; no user text added;
    planning never mutates the source ledger (cf. §8 items 33, 95)."""
    import copy

    events = [user("original-user"), terminal("terminal-1")]
    world = world_with(events)
    before = copy.deepcopy(world.events)
    p = run_plan(world)
    context = p.continuation.runtime_context
    assert [e["id"] for e in context] == ["original-user", "terminal-1"]
    assert [e for e in context if e.get("role") == "user"] == [prefix(events).events[0]]
    assert world.events == before


def test_never_raises_on_odd_worlds():
    class Odd(MemoryWorld):
        def read_prefix(self, session_id, run_id, up_to_event_seq=None):
            return {"not": "a prefix"}

    world = Odd()
    world.add(header(1), [user("user-1")])
    assert run_plan(world).rejection_reasons == ("runtime_ledger_unreadable",)
