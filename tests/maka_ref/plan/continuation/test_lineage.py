"""Lineage walk (spec 20 §3.4, §3.15) through ``walk_lineage`` and the planner.

Scenarios: spec 20 §8 items 43–50 (the anchor's ``runtime-continuation.test.ts`` lineage
cases), §9 items 14 and 25, multi-generation v2 (A→B→C) and "trimmed ancestor suffix never
reappears" (§1.10, §3.15).
"""

from __future__ import annotations

from tests.maka_ref.continuation.support import (
    MemoryWorld,
    ClaimlessWorld,
    header,
    ids,
    model_text,
    terminal,
    thinking,
    user,
    v2_child,
)
from maka_ref._plan.continuation import MAX_LINEAGE_SEGMENTS, LineageError, LineageResult, RuntimeContinuationPlanner, walk_lineage
from maka_ref._plan.continuation.claims import ClaimState

FACTS = dict(
    session_id="session-1",
    current_cwd="/workspace/repo",
    source_workspace_identity="workspace-1",
    current_workspace_identity="workspace-1",
    background_operations_settled=True,
    available_tool_names=["Bash", "Write"],
)


def plan(world, source_run_id):
    return RuntimeContinuationPlanner(world, ids("invocation-x", "run-x", "turn-x", "claim-x")).plan(
        source_run_id=source_run_id, **FACTS)


def v1(n_source, high_water):
    return {"sourceInvocationId": f"invocation-{n_source}", "sourceRunId": f"run-{n_source}",
            "sourceTurnId": f"turn-{n_source}", "sourceRuntimeEventHighWater": high_water}


def chain_world(length, last_points_to=None):
    """run-1 … run-<length>, each run-k (k>1) a v1 continuation of run-(k-1)."""
    world = MemoryWorld()
    for k in range(1, length + 1):
        source = v1(k - 1, 2) if k > 1 else None
        if k == length and last_points_to is not None:
            source = v1(last_points_to, 2)
        world.add(header(k, createdAt=k, continuationSource=source,
                         parentRunId=f"run-{k - 1}" if source else None),
                  [user(f"user-{k}", n=k), terminal(f"terminal-{k}", k)])
    return world


def test_item_43_cycle():
    world = MemoryWorld()
    world.add(header(1, continuationSource=v1(2, 2), parentRunId="run-2"), [user("user-1"), terminal("terminal-1")])
    world.add(header(2, continuationSource=v1(1, 2), parentRunId="run-1"),
              [user("user-2", n=2), terminal("terminal-2", 2)])
    p = plan(world, "run-2")
    assert p.rejection_reasons == ("runtime_lineage_cycle",)
    assert [d.code for d in p.diagnostics] == ["runtime_lineage_cycle"]


def test_item_44_missing_ancestor():
    world = MemoryWorld()
    world.add(header(2, continuationSource=v1(1, 2), parentRunId="run-1"),
              [user("user-2", n=2), terminal("terminal-2", 2)])
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_missing",)


def test_missing_ancestor_when_pinned_high_water_unavailable():
    world = chain_world(2)
    world.headers["run-2"]["continuationSource"] = v1(1, 5)  # run-1 has 2 events
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_missing",)


def test_item_45_depth_exceeded_even_if_65th_missing():
    """§8 item 45, §9 item 25: run-64 points to run-65, which does not exist."""
    world = chain_world(64, last_points_to=None)
    # make run-1 point at a non-existent run-65 (the chain is walked from run-64 down)
    world.headers["run-1"]["continuationSource"] = v1(65, 2)
    world.headers["run-1"]["parentRunId"] = "run-65"
    p = plan(world, "run-64")
    assert p.rejection_reasons == ("runtime_lineage_depth_exceeded",)


def test_64_segments_are_allowed():
    world = chain_world(64)
    result = walk_lineage(world, "session-1", "run-64", world.headers["run-64"], world.read_prefix("session-1", "run-64"))
    assert isinstance(result, LineageResult)
    assert len(result.prefixes) == MAX_LINEAGE_SEGMENTS
    assert [p.identity.run_id for p in result.prefixes][:2] == ["run-1", "run-2"]


def test_cycle_checked_before_depth():
    """§9 item 25: at depth 64 a pointer back into the chain is a cycle, not a depth error."""
    world = chain_world(64)
    world.headers["run-1"]["continuationSource"] = v1(30, 2)
    assert plan(world, "run-64").rejection_reasons == ("runtime_lineage_cycle",)


def test_ancestor_identity_mismatch():
    """§3.4 step 8."""
    world = chain_world(2)
    world.headers["run-2"]["continuationSource"] = {**v1(1, 2), "sourceTurnId": "turn-other"}
    assert plan(world, "run-2").rejection_reasons == ("runtime_identity_mismatch",)


# --- v2 edges ------------------------------------------------------------------------------


def v2_world(**kwargs):
    world = MemoryWorld()
    world.add(header(1), [user("user-1"), terminal("terminal-1")])
    claim, start, hdr = v2_child(world, ["run-1"], 2, [terminal("terminal-2", 2)], **kwargs)
    return world, claim, start, hdr


def test_v2_edge_happy_path_and_three_generations():
    world, _, _, _ = v2_world()
    p = plan(world, "run-2")
    assert p.disposition == "continue", p.to_json()
    # A → B → C: run-3 continues run-2
    world.add(header(0), [])  # noise: an unrelated empty run
    v2_child(world, ["run-1", "run-2"], 3, [terminal("terminal-3", 3)], claimed_at=200)
    p = plan(world, "run-3")
    assert p.disposition == "continue", p.to_json()
    assert [s.identity.run_id for s in p.continuation.boundary.segments] == ["run-1", "run-2", "run-3"]


def test_trimmed_ancestor_suffix_never_reappears():
    """§1.10 / §3.15: A's interrupted thinking+text are trimmed in every later generation."""
    world = MemoryWorld()
    world.add(header(1), [user("user-1"), thinking("thinking-1"), model_text("text-1"), terminal("terminal-1")])
    v2_child(world, ["run-1"], 2, [terminal("terminal-2", 2)])
    p = plan(world, "run-2")
    assert p.disposition == "continue", p.to_json()
    assert [e["id"] for e in p.continuation.runtime_context] == ["user-1", "terminal-1", "start-2", "terminal-2"]


def test_item_46_wrong_source_prefix_digest():
    world, _, _, hdr = v2_world()
    hdr["continuationSource"] = {**hdr["continuationSource"], "sourcePrefixDigest": "sha256:" + "1" * 64}
    # keep the start consistent with the tampered header so only step 9 can fail
    start = world.events["run-2"][0]
    start["actions"]["continuationStart"]["immediateSource"]["prefixDigest"] = "sha256:" + "1" * 64
    assert plan(world, "run-2").rejection_reasons == ("source_prefix_digest_mismatch",)


def test_item_47_forged_start_claim_id():
    world, _, start, _ = v2_world()
    start["actions"]["continuationStart"]["claimId"] = "forged-claim"
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_start_mismatch",)


def test_item_48_v2_start_under_v1_header():
    world, _, _, hdr = v2_world()
    source = hdr["continuationSource"]
    hdr["continuationSource"] = {k: source[k] for k in ("sourceInvocationId", "sourceRunId", "sourceTurnId",
                                                        "sourceRuntimeEventHighWater")}
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_start_mismatch",)


def test_item_49_wrong_provider_replay_digest():
    world, _, start, _ = v2_world()
    start["actions"]["continuationStart"]["providerReplayDigest"] = "sha256:" + "2" * 64
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_replay_mismatch",)


def test_item_50_claim_state_missing():
    world, _, _, _ = v2_world(record_claim=False)
    assert plan(world, "run-2").rejection_reasons == ("runtime_lineage_claim_mismatch",)


def test_v2_edge_without_claim_dependency_or_failing_reader():
    world, _, _, hdr = v2_world()
    claimless = ClaimlessWorld()
    claimless.headers, claimless.events = world.headers, world.events
    assert plan(claimless, "run-2").rejection_reasons == ("continuation_authority_unavailable",)
    result = walk_lineage(world, "session-1", "run-2", hdr, world.read_prefix("session-1", "run-2"),
                          read_claim_state=lambda _d: (_ for _ in ()).throw(RuntimeError("down")))
    assert isinstance(result, LineageError) and result.code == "continuation_authority_unavailable"


def test_v2_edge_claim_mismatches():
    world, claim, start, hdr = v2_world()
    digest = claim["boundaryDigest"]
    good = world.claims[digest]
    reader = lambda _d: state  # noqa: E731
    immediate = world.read_prefix("session-1", "run-2")
    for state in (
        ClaimState(good.claim, "wrong-start-id", good.start_kind),
        ClaimState(good.claim, good.start_event_id, "claim_repair"),
        ClaimState({**good.claim, "claimId": "claim-other"}, good.start_event_id, good.start_kind),
        ClaimState({**good.claim, "targetRunHeader": {**good.claim["targetRunHeader"], "modelId": "m2"}},
                   good.start_event_id, good.start_kind),
        ClaimState({**good.claim, "claimedAt": claim["claimedAt"] + 1}, good.start_event_id, good.start_kind),
    ):
        result = walk_lineage(world, "session-1", "run-2", hdr, immediate, read_claim_state=reader)
        assert isinstance(result, LineageError) and result.code == "runtime_lineage_claim_mismatch", state
    state = good
    assert isinstance(walk_lineage(world, "session-1", "run-2", hdr, immediate, read_claim_state=reader),
                      LineageResult)


def test_repair_start_edge_is_valid_source():
    """§3.15: a run closed by the claim-repair saga is a valid source for the next generation."""
    world = MemoryWorld()
    world.add(header(1), [user("user-1"), terminal("terminal-1")])
    v2_child(world, ["run-1"], 2,
             [terminal("terminal-2", 2, failure_class="continuation_abandoned_before_provider_dispatch", ts=100)],
             provenance="claim_repair")
    world.headers["run-2"]["failureClass"] = "continuation_abandoned_before_provider_dispatch"
    p = plan(world, "run-2")
    assert p.disposition == "continue", p.to_json()


def test_ancestors_pinned_at_recorded_high_water():
    """§9 item 14: the ancestor grew after the continuation; the walk reads it pinned."""
    world, _, _, _ = v2_world()
    # An append to a claimed source is rejected by real stores (§3.10); the pinned read is the point here.
    world.events["run-1"].append(user("late-user"))
    p = plan(world, "run-2")
    assert p.disposition == "continue", p.to_json()
    assert ("run-1", 2) in world.reads
    assert "late-user" not in [e["id"] for e in p.continuation.runtime_context]
