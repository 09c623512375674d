"""Safe-boundary gates ``build_safe_boundary_continuation_plan`` (spec 20 §3.6, §3.7).

Scenarios: spec 20 §8 items 9–25 (the anchor's pure Phase 1 gate tests in
``runtime-resume.test.ts``), with the default facts of §8: cwd ``/workspace/repo``, identity
``workspace-1`` on both sides, settled, tools ``[Bash, Write]``, new ids
invocation-2/run-2/turn-2. Also §9 items 8, 10, 11, 12, 13 and the §3.7 envelope invariants
(§8 item 36, pure part).
"""

from __future__ import annotations

import copy

import pytest

from tests.maka_ref.continuation.support import (
    call,
    legacy_start,
    model_text,
    permission_request,
    prefix,
    result,
    terminal,
    thinking,
    user,
    ev,
)
from maka_ref._plan.continuation import (
    ContinuationIdentity,
    RuntimeContinuation,
    SafetySnapshot,
    build_safe_boundary_continuation_plan,
    continuation_envelope_problem,
    normalize_cwd,
)
from maka_ref._plan.phase0.plan import build_resume_plan
from maka_ref._plan.prefix.replay import build_composite_replay_plan

DEFAULTS = dict(
    ledger_readable=True,
    terminal_repair_succeeded=True,
    source_cwd="/workspace/repo",
    current_cwd="/workspace/repo",
    source_workspace_identity="workspace-1",
    current_workspace_identity="workspace-1",
    background_operations_settled=True,
    available_tool_names=["Bash", "Write"],
    continuation_identity={"invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"},
)


def plan(events, **overrides):
    return build_safe_boundary_continuation_plan(events, **{**DEFAULTS, **overrides})


def ids_of(events):
    return [e["id"] for e in events]


def codes(p):
    return [d.code for d in p.diagnostics]


# --- §8 item 9 / §3.15: legacy v1 lineage through the composite replay --------------------


def test_item_9_legacy_lineage_runtime_context():
    root = [user("root-user"), thinking("root-thinking"), model_text("root-text"), terminal("root-terminal")]
    child = [legacy_start("continuation-start", 2), call("child-call", n=2), result("child-result", n=2),
             terminal("child-terminal", 2)]
    replay = build_composite_replay_plan([prefix(root), prefix(child)])
    p = plan(prefix(child).events, continuation_replay_plan=replay,
             continuation_identity={"invocationId": "invocation-3", "runId": "run-3", "turnId": "turn-3"})
    assert p.disposition == "continue"
    c = p.continuation
    assert ids_of(c.runtime_context) == [
        "root-user", "root-terminal", "continuation-start", "child-call", "child-result", "child-terminal"]
    assert ids_of(c.source_runtime_context) == ["continuation-start", "child-call", "child-result", "child-terminal"]
    assert c.to_json()["sourceRunId"] == "run-2"
    assert c.to_json()["sourceRuntimeEventHighWater"] == 4


# --- §8 items 10, 11: Phase 0 blocks a not-dispatched call, the composite trims it ---------


def test_item_10_phase0_not_dispatched_blocks():
    events = [user("user-1", t1=True), call("call-1")]
    p0 = build_resume_plan(events)
    assert p0.disposition == "blocked"
    assert [op.status for op in p0.operations] == ["not_dispatched"]
    assert p0.requires_verification is False
    assert [d.code for d in p0.diagnostics] == ["tool_not_dispatched"]
    assert p0.rejection_reasons == ("dangling_tool_state",)
    # the legacy gate path prepends exactly that
    p = plan(events)
    assert p.disposition == "park"
    assert p.rejection_reasons[0] == "dangling_tool_state"


def test_item_11_composite_continues_over_trimmed_call():
    events = [user("user-1", t1=True), call("call-1"), terminal("terminal-1")]
    replay = build_composite_replay_plan([prefix(events)])
    p = plan(prefix(events).events, continuation_replay_plan=replay)
    assert p.disposition == "continue", p.to_json()
    assert ids_of(p.continuation.runtime_context) == ["user-1", "terminal-1"]


# --- §8 item 12: the exact legacy continuation -------------------------------------------


def test_item_12_exact_legacy_continuation():
    events = [user("user-1"), call("call-1"), result("result-1")]
    p = plan(events, available_tool_names=["Bash"])
    assert p.disposition == "continue"
    assert p.rejection_reasons == () and p.diagnostics == ()
    assert p.to_json() == {
        "disposition": "continue",
        "rejectionReasons": [],
        "diagnostics": [],
        "continuation": {
            "sessionId": "session-1",
            "invocationId": "invocation-2",
            "runId": "run-2",
            "turnId": "turn-2",
            "sourceInvocationId": "invocation-1",
            "sourceRunId": "run-1",
            "sourceTurnId": "turn-1",
            "sourceRuntimeEventHighWater": 3,
            "runtimeContext": events,
            "safetySnapshot": {
                "workspaceIdentity": "workspace-1",
                "backgroundOperationsSettled": True,
                "availableToolNames": ["Bash"],
            },
        },
    }


# --- §8 items 13–15: permissions ----------------------------------------------------------


def test_item_13_pending_permission_parks():
    p = plan([user("user-1"), permission_request("perm-event-1", "request-1")])
    assert p.disposition == "park"
    assert p.rejection_reasons == ("pending_permission",)
    assert p.continuation is None
    assert p.diagnostics[0].to_json()["eventId"] == "perm-event-1"
    assert p.diagnostics[0].detail == {"requestId": "request-1"}


def test_item_14_answer_accepted_clears():
    events = [user("user-1"), permission_request("perm-event-1", "request-1"),
              ev("accepted-1", "system", content=None, actions={"permissionAnswerAccepted": {"requestId": "request-1"}})]
    assert "pending_permission" not in codes(plan(events))


def test_item_15_closure_accepted_continues_with_all_events():
    events = [user("user-1"), permission_request("perm-event-1", "request-1"),
              ev("closed-1", "system", content=None,
                 actions={"permissionClosureAccepted": {"requestId": "request-1", "reason": "timed_out"}})]
    p = plan(events)
    assert p.disposition == "continue", p.to_json()
    assert ids_of(p.continuation.runtime_context) == ["user-1", "perm-event-1", "closed-1"]


def test_permission_decision_clears_and_one_diagnostic_per_pending_request():
    events = [user("user-1"), permission_request("p1", "r1"), permission_request("p2", "r2"),
              ev("d1", "system", content=None, actions={"permissionDecision": {"requestId": "r1"}}),
              permission_request("p3", "r3")]
    p = plan(events)
    assert p.rejection_reasons == ("pending_permission",)
    assert [(d.code, d.event_id, dict(d.detail)) for d in p.diagnostics] == [
        ("pending_permission", "p2", {"requestId": "r2"}), ("pending_permission", "p3", {"requestId": "r3"})]


# --- §8 items 16–19: workspace, background, catalog ----------------------------------------


def test_item_16_workspace_identity_mismatch():
    p = plan([user("user-1")], current_workspace_identity="workspace-2")
    assert p.rejection_reasons == ("workspace_identity_mismatch",)
    assert p.diagnostics[0].detail == {"sourceWorkspaceIdentity": "workspace-1",
                                       "currentWorkspaceIdentity": "workspace-2"}


def test_item_17_cwd_change_is_diagnostic_only():
    """§8 item 17, §9 item 8, §6.4, §10 item 2."""
    p = plan([user("user-1")], current_cwd="/fresh-sandbox/repo")
    assert p.disposition == "continue"
    assert [d.to_json()["code"] for d in p.diagnostics] == ["workspace_location_changed"]
    assert p.diagnostics[0].to_json()["detail"] == {"sourceCwd": "/workspace/repo", "currentCwd": "/fresh-sandbox/repo"}


def test_item_18_background_operation_pending():
    p = plan([user("user-1")], background_operations_settled=False)
    assert p.rejection_reasons == ("background_operation_pending",)


def test_item_19_tool_catalog_mismatch():
    events = [user("user-1"), call("call-1", name="Fetch"), result("result-1", name="Fetch")]
    p = plan(events)
    assert p.rejection_reasons == ("tool_catalog_mismatch",)
    assert p.diagnostics[0].to_json()["detail"] == {"unavailableToolNames": ["Fetch"]}


def test_catalog_superset_allowed_and_names_sorted_unique():
    """§9 item 13 (planning allows extra tools); §3.7 snapshot names sorted unique (cf. §8 item 32)."""
    events = [user("user-1"), call("call-1", name="Write"), result("result-1", name="Write")]
    p = plan(events, available_tool_names=["Write", "Read", "Read", "Bash"])
    assert p.disposition == "continue"
    assert p.continuation.to_json()["safetySnapshot"]["availableToolNames"] == ["Bash", "Read", "Write"]
    events = [user("user-1"), call("c1", "t1", name="Zed"), result("r1", "t1", name="Zed"),
              call("c2", "t2", name="Fetch"), result("r2", "t2", name="Fetch"),
              call("c3", "t3", name="Zed"), result("r3", "t3", name="Zed")]
    assert plan(events).diagnostics[0].detail == {"unavailableToolNames": ["Fetch", "Zed"]}


# --- §8 items 20–24 -----------------------------------------------------------------------


def test_item_20_ledger_unreadable_and_terminal_repair_failed():
    assert plan([user("user-1")], ledger_readable=False).rejection_reasons == ("runtime_ledger_unreadable",)
    assert plan([user("user-1")], terminal_repair_succeeded=False).rejection_reasons == ("terminal_repair_failed",)


def test_item_21_empty_identity_mismatch_identity_reused():
    p = plan([])
    assert p.disposition == "park" and p.rejection_reasons == ("runtime_ledger_empty",)
    other_run = ev("other-1", "model", n=1, runId="run-9", content={"kind": "text", "text": "x"})
    p = plan([user("user-1"), other_run])
    assert p.rejection_reasons == ("dangling_tool_state", "runtime_identity_mismatch")
    p = plan([user("user-1")], continuation_identity={"invocationId": "invocation-1", "runId": "run-1",
                                                      "turnId": "turn-1"})
    assert p.rejection_reasons == ("continuation_identity_reused",)
    # any single reused id is enough
    p = plan([user("user-1")], continuation_identity=ContinuationIdentity("invocation-2", "run-2", "turn-1"))
    assert p.rejection_reasons == ("continuation_identity_reused",)


def test_item_22_committed_model_text_boundary_unsupported():
    p = plan([user("user-1"), model_text("model-1")])
    assert p.rejection_reasons == ("provider_resume_boundary_unsupported",)
    assert p.diagnostics[0].detail == {"lastRole": "model"}


def test_item_23_no_user_head_unsupported():
    p = plan([legacy_start("continuation-start", 1), call("call-1"), result("result-1")])
    assert p.rejection_reasons == ("provider_resume_head_unsupported",)
    assert p.diagnostics[0].code == "provider_resume_head_unsupported"
    assert p.diagnostics[0].detail == {"firstRole": "model"}


def test_item_24_checkpoint_rules():
    events = [user("user-1")]
    p = plan(events, workspace_checkpoint={"restored": True, "runtimeEventHighWater": 1})
    assert p.rejection_reasons == ("workspace_ref_missing",)
    p = plan(events, workspace_checkpoint={"ref": "ref-1", "restored": False, "runtimeEventHighWater": 1})
    assert p.rejection_reasons == ("checkpoint_restore_failed",)
    assert p.diagnostics[0].detail == {"workspaceRef": "ref-1"}
    p = plan(events, workspace_checkpoint={"ref": "ref-1", "restored": True, "runtimeEventHighWater": 2})
    assert p.rejection_reasons == ("runtime_offset_mismatch",)
    p = plan(events, workspace_checkpoint={"ref": "ref-1", "restored": True, "runtimeEventHighWater": 1})
    assert p.disposition == "continue"
    assert p.continuation.to_json()["safetySnapshot"]["workspaceCheckpoint"] == {"ref": "ref-1",
                                                                                "runtimeEventHighWater": 1}


def test_item_25_partial_model_text_continues():
    events = [user("user-1"), model_text("model-partial", partial=True)]
    p = plan(events)
    assert p.disposition == "continue", p.to_json()
    assert p.continuation.source_runtime_event_high_water == 2
    assert ids_of(p.continuation.runtime_context) == ["user-1"]


# --- §9 items 10–12 -----------------------------------------------------------------------


def test_checkpoint_high_water_overrides_expected():
    """§9 item 12."""
    events = [user("user-1")]
    p = plan(events, expected_runtime_event_high_water=5,
             workspace_checkpoint={"ref": "r", "restored": True, "runtimeEventHighWater": 1})
    assert p.disposition == "continue"
    p = plan(events, expected_runtime_event_high_water=1,
             workspace_checkpoint={"ref": "r", "restored": True, "runtimeEventHighWater": 5})
    assert p.rejection_reasons == ("runtime_offset_mismatch",)


def test_composite_high_water_gate_b():
    events = [user("user-1"), result_free := terminal("terminal-1")]
    replay = build_composite_replay_plan([prefix(events)])
    p = plan(prefix(events).events, continuation_replay_plan=replay, expected_runtime_event_high_water=1)
    assert p.rejection_reasons == ("runtime_offset_mismatch",)
    assert p.diagnostics[0].detail == {"expected": 1, "actual": 2}
    assert plan(prefix(events).events, continuation_replay_plan=replay,
                expected_runtime_event_high_water=2).disposition == "continue"
    assert result_free["id"] == "terminal-1"


def test_head_tail_gates_skipped_on_identity_mismatch():
    """§9 item 10: only runtime_identity_mismatch among (d), (m), (n)."""
    other = ev("other-1", "model", runId="run-9", content={"kind": "text", "text": "x"})
    p = plan([model_text("model-1"), other])
    assert "provider_resume_head_unsupported" not in p.rejection_reasons
    assert "provider_resume_boundary_unsupported" not in p.rejection_reasons
    assert "runtime_identity_mismatch" in p.rejection_reasons


def test_all_reasons_accumulate_in_fixed_order():
    """§9 item 11: Phase 0 first, then a→n, whole lists compared."""
    events = [user("user-1"), permission_request("p1", "r1"), call("call-1", name="Fetch"),
              result("result-1", name="Fetch"), model_text("model-1")]
    p = plan(
        events,
        ledger_readable=False,
        terminal_repair_succeeded=False,
        current_workspace_identity="workspace-2",
        current_cwd="/elsewhere",
        background_operations_settled=False,
        workspace_checkpoint={"ref": "r", "restored": False, "runtimeEventHighWater": 9},
        continuation_identity={"invocationId": "invocation-1", "runId": "x", "turnId": "y"},
    )
    assert p.rejection_reasons == (
        "runtime_offset_mismatch",  # Phase 0 (checkpoint high-water 9 ≠ 5 events)
        "pending_permission",
        "continuation_identity_reused",
        "runtime_ledger_unreadable",
        "terminal_repair_failed",
        "workspace_identity_mismatch",
        "background_operation_pending",
        "checkpoint_restore_failed",
        "tool_catalog_mismatch",
        "provider_resume_boundary_unsupported",
    )
    assert codes(p) == [
        "runtime_offset_mismatch", "pending_permission", "continuation_identity_reused",
        "runtime_ledger_unreadable", "terminal_repair_failed", "workspace_location_changed",
        "workspace_identity_mismatch", "background_operation_pending", "checkpoint_restore_failed",
        "tool_catalog_mismatch", "provider_resume_boundary_unsupported"]


def test_composite_mode_skips_phase0():
    """§3.6: no Phase 0 in composite mode — the trimmed not-dispatched call is not re-flagged."""
    events = [user("user-1", t1=True), call("call-1", name="Write"), terminal("terminal-1")]
    replay = build_composite_replay_plan([prefix(events)])
    p = plan(prefix(events).events, continuation_replay_plan=replay)
    assert p.disposition == "continue"
    assert "dangling_tool_state" not in p.rejection_reasons and "tool_not_dispatched" not in codes(p)


def test_composite_empty_model_text_before_terminal_is_fine():
    """§3.6 last paragraph: composite roles use provider items (cf. §8 item 41)."""
    events = [user("user-1"), model_text("model-empty", text=""), terminal("terminal-1")]
    replay = build_composite_replay_plan([prefix(events)])
    assert plan(prefix(events).events, continuation_replay_plan=replay).disposition == "continue"


def test_inputs_are_not_mutated():
    events = [user("user-1"), call("call-1"), result("result-1")]
    snapshot = copy.deepcopy(events)
    plan(events)
    assert events == snapshot


def test_cwd_normalization():
    """§3.6 (h) normalization; pinned to ``_store.workspace.normalize_cwd``."""
    from maka_ref._store.workspace.identity import normalize_cwd as store_normalize

    for raw, expected in [("/a/b/", "/a/b"), ("C:\\Users\\X\\", "c:/users/x"), ("/A/B", "/A/B"),
                          ("relative\\dir", "relative/dir")]:
        assert normalize_cwd(raw) == expected == store_normalize(raw)
    assert plan([user("user-1")], source_cwd="C:\\Repo\\", current_cwd="c:/repo").diagnostics == ()


def test_legacy_prior_context_is_source_runtime_context():
    prior = [user("root-user", n=0)]
    events = [legacy_start("start-1", 1), call("call-1"), result("result-1")]
    p = plan(events, prior_runtime_context=prior)
    assert p.disposition == "continue", p.to_json()
    assert ids_of(p.continuation.runtime_context) == ["root-user", "start-1", "call-1", "result-1"]
    assert ids_of(p.continuation.source_runtime_context) == ["start-1", "call-1", "result-1"]


def test_claim_id_present_when_allocated():
    p = plan([user("user-1")], continuation_claim_id="claim-2")
    assert p.continuation.to_json()["claimId"] == "claim-2"


# --- §3.7 envelope invariants (§8 item 36, pure part) -------------------------------------


def _continuation(**overrides):
    base = dict(session_id="session-1", invocation_id="invocation-2", run_id="run-2", turn_id="turn-2",
                source_invocation_id="invocation-1", source_run_id="run-1", source_turn_id="turn-1",
                source_runtime_event_high_water=1, runtime_context=(user("user-1"),),
                safety_snapshot=SafetySnapshot("workspace-1", ("Bash",)))
    base.update(overrides)
    return RuntimeContinuation(**base)


def test_item_36_envelope_high_water_below_context():
    assert continuation_envelope_problem(_continuation()) is None
    problem = continuation_envelope_problem(_continuation(source_runtime_event_high_water=0))
    assert problem is not None and "high-water" in problem


@pytest.mark.parametrize(
    "overrides",
    [
        {"runtime_context": ()},
        {"source_runtime_context": (user("user-1", n=7),), "runtime_context": (user("user-1", n=7),)},
        {"source_runtime_context": (user("user-1"),), "runtime_context": (user("user-1"), user("user-2"))},
        {"run_id": "run-1"},
    ],
)
def test_envelope_other_invariants(overrides):
    assert continuation_envelope_problem(_continuation(**overrides)) is not None


def test_gates_never_raise_on_odd_events():
    p = plan([None, 5, "x", {"id": 3}])
    assert p.disposition == "park"
    assert "dangling_tool_state" in p.rejection_reasons
