"""Phase 1 continuation, execution side (spec 20 §3.1–§3.2, §3.8–§3.14, §7; issue 4 items 6–7).

In-process tests drive ``maka_ref._continuation`` over real stores in a temp workspace: a
source turn whose script ends after its Write (the provider is asked for a step that does not
exist → the run ends ``failed/script_exhausted``, terminal event and header committed), then a
resume with the full two-step script. The end-to-end tests use real processes and SIGKILL.
Expected values come from the spec (§3.11 header, §3.12 start, §7 lifecycle), not from the code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._cli.main import run as cli_run
from maka_ref._continuation import (
    LifecycleLog,
    RuntimeContinuationRevalidationError,
    StoreWorld,
    execute_continuation,
    read_lifecycle_log,
    resume_session,
)
from maka_ref._plan.continuation import plan_authoritative, plan_latest
from maka_ref._runtime import ScriptedProvider, load_script, run_turn
from maka_ref._runtime.tools import TOOLS
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import T1, effect_lines, script, write_script

REPO = Path(__file__).resolve().parents[3]
WRITE = {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "after"}}]}
FULL = script(T1, [WRITE, {"text": "done"}])
FIRST_ONLY = script(T1, [WRITE])
CATALOG = sorted(TOOLS)


def crashed_source(ws: Path, session_id: str | None = None, seed: str | None = None) -> Any:
    """A failed source run whose last committed tool call is settled (safe boundary)."""
    summary = run_turn(ws, FIRST_ONLY, session_id=session_id, seed=seed)
    assert summary.status == "failed" and summary.error["code"] == "script_exhausted"
    return summary


def open_world(ws: Path, **kwargs: Any) -> tuple[StoreWorld, RuntimeStore, AgentRunStore]:
    store, runs = RuntimeStore.open(ws), AgentRunStore.open(ws)
    return StoreWorld(Path(os.path.realpath(ws)), store, runs, **kwargs), store, runs


def target_rows(ws: Path, session_id: str, source_run_id: str) -> list[dict[str, Any]]:
    with AgentRunStore.open(ws) as runs:
        return [dict(h) for h in runs.list_session_runs(session_id) if h["runId"] != source_run_id]


# ------------------------------------------------------------------ flag, planning (§3.1, §3.2)


def test_flag_off_parks_without_touching_the_store(tmp_path: Path) -> None:  # §8 item 93
    log = LifecycleLog(tmp_path / "life.jsonl")
    outcome = resume_session(tmp_path, flag=False, lifecycle_log=log)
    assert outcome.parked and outcome.rejection_reasons == ("resume_feature_disabled",)
    assert log.events == [{"type": "plan_parked", "sessionId": "", "sourceRunId": "", "rejectionReasons": ["resume_feature_disabled"]}]
    assert not (tmp_path / "runtime.sqlite").exists()


def test_flag_defaults_to_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crashed_source(tmp_path)
    monkeypatch.delenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", raising=False)
    assert resume_session(tmp_path).rejection_reasons == ("resume_feature_disabled",)
    monkeypatch.setenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", "true")  # only "1" enables
    assert resume_session(tmp_path).rejection_reasons == ("resume_feature_disabled",)
    monkeypatch.setenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", "1")
    assert not resume_session(tmp_path, script=FULL).parked


def test_no_store_parks_candidate_missing(tmp_path: Path) -> None:
    outcome = resume_session(tmp_path, flag=True, lifecycle_log=LifecycleLog(tmp_path / "l"))
    assert outcome.rejection_reasons == ("resume_candidate_missing",)
    assert not (tmp_path / "runtime.sqlite").exists()


def test_authoritative_plan_uses_inspector_facts(tmp_path: Path) -> None:  # §8 item 91
    source = crashed_source(tmp_path)
    world, store, runs = open_world(tmp_path, tool_catalog=lambda: ["Write", "Read", "Write", "Edit", "Append"])
    try:
        plan = plan_authoritative(world, iter(["i", "r", "t", "c"]), source.session_id, source.run_id, feature_enabled=True)
    finally:
        store.close(), runs.close()
    assert plan.disposition == "continue", plan.to_json()
    snapshot = plan.continuation.safety_snapshot.to_json()
    assert snapshot == {
        "workspaceIdentity": source.workspace_identity,
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Append", "Edit", "Read", "Write"],
    }


def test_inspector_failure_parks(tmp_path: Path) -> None:  # §8 item 92
    source = crashed_source(tmp_path)

    def broken(_path: str) -> str:
        raise OSError("disk gone")

    world, store, runs = open_world(tmp_path, resolve_identity=broken)
    try:
        plan = plan_authoritative(world, iter("irtc"), source.session_id, source.run_id, feature_enabled=True)
    finally:
        store.close(), runs.close()
    assert plan.rejection_reasons == ("safety_observation_unavailable",)


def test_newer_of_two_candidates_is_planned(tmp_path: Path) -> None:  # §8 item 94
    first = crashed_source(tmp_path, seed="a1")
    second = crashed_source(tmp_path, session_id=first.session_id, seed="b2")
    world, store, runs = open_world(tmp_path)
    try:
        plan = plan_latest(world, iter("irtc"), first.session_id, feature_enabled=True)
    finally:
        store.close(), runs.close()
    assert plan.disposition == "continue", plan.to_json()
    assert plan.continuation.source_run_id == second.run_id


# ------------------------------------------------------------------ execution (§3.9–§3.14, §7)


def test_execute_after_workspace_move(tmp_path: Path) -> None:  # §8 item 95
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    source = crashed_source(old)
    with RuntimeStore.open(old) as store:
        source_events = [dict(e) for e in store.read_run_events(source.session_id, source.run_id)]
    os.rename(old, new)
    log = LifecycleLog(tmp_path / "life.jsonl")
    provider = ScriptedProvider(load_script(FULL), record=True)
    outcome = resume_session(new, flag=True, lifecycle_log=log, script=FULL, provider=provider)
    assert not outcome.parked and outcome.summary.status == "completed"
    assert outcome.plan.rejection_reasons == ()
    assert [d.code for d in outcome.plan.diagnostics] == ["workspace_location_changed"]
    assert (new / "notes.txt").read_text() == "after"
    target = outcome.summary.run_id
    with AgentRunStore.open(new) as runs, RuntimeStore.open(new) as store:
        header = dict(runs.read_run(source.session_id, target))
        events = [dict(e) for e in store.read_run_events(source.session_id, target)]
        assert [dict(e) for e in store.read_run_events(source.session_id, source.run_id)] == source_events
        claims = store.list_claims(source.session_id)
    assert header["cwd"] == os.path.realpath(new)
    assert header["parentRunId"] == source.run_id and header["parentTurnId"] == source.turn_id
    assert header["toolMode"] == "direct" and header["status"] == "completed"
    assert header["workspaceIdentity"] == source.workspace_identity
    cs = header["continuationSource"]
    assert cs["protocol"] == "continuation_source_v2" and cs["sourceRunId"] == source.run_id
    assert cs["sourceRuntimeEventHighWater"] == len(source_events)
    assert len(claims) == 1 and claims[0].claim_id == cs["claimId"] and claims[0].start_kind == "runtime_admission"
    start = events[0]
    assert start["actions"]["continuationStart"]["protocol"] == "continuation_start_v2"
    assert start["actions"]["continuationStart"]["provenance"] == "runtime_admission"
    assert start["actions"]["runtimeProtocol"] == {"toolBoundary": T1}
    assert "refs" not in start and "content" not in start and "status" not in start
    assert all(e["role"] != "user" for e in events)
    assert [e["role"] for e in events] == ["system", "model", "system"]  # start, text, terminal
    # provider: called once, history = source context + start, no user message beyond the source's one
    assert len(provider.calls) == 1
    history = provider.calls[0]
    assert [e["role"] for e in history].count("user") == 1 and history[-1]["id"] == start["id"]
    assert [e["type"] for e in log.events] == ["plan_approved", "execution_started", "execution_completed"]


def test_replan_after_completed_continuation(tmp_path: Path) -> None:  # §8 item 96 (first part)
    crashed_source(tmp_path)
    first = resume_session(tmp_path, flag=True, script=FULL)
    assert not first.parked
    again = resume_session(tmp_path, flag=True, script=FULL)
    assert again.rejection_reasons == ("continuation_already_exists",)
    assert again.plan.diagnostics[0].detail["continuationRunId"] == first.summary.run_id
    assert [e["type"] for e in read_lifecycle_log(tmp_path)][-1] == "plan_parked"


def _two_plans(ws: Path, source: Any) -> tuple[Any, Any, StoreWorld, RuntimeStore, AgentRunStore]:
    world, store, runs = open_world(ws)
    p1 = plan_authoritative(world, iter(["invocation_x1", "run_x1", "turn_x1", "claim_x1"]), source.session_id, source.run_id, feature_enabled=True)
    p2 = plan_authoritative(world, iter(["invocation_x2", "run_x2", "turn_x2", "claim_x2"]), source.session_id, source.run_id, feature_enabled=True)
    assert p1.disposition == p2.disposition == "continue"
    return p1, p2, world, store, runs


def test_stale_second_plan_is_rejected(tmp_path: Path) -> None:  # §8 item 98
    source = crashed_source(tmp_path)
    p1, p2, world, store, runs = _two_plans(tmp_path, source)
    loaded = load_script(FULL)
    try:
        first = ScriptedProvider(loaded, record=True)
        execute_continuation(world, p1.continuation, loaded, "x1", provider=first)
        second = ScriptedProvider(loaded, record=True)
        with pytest.raises(RuntimeContinuationRevalidationError) as info:
            execute_continuation(world, p2.continuation, loaded, "x2", provider=second)
        assert info.value.code == "continuation_claim_conflict"
        assert "already claimed" in info.value.message
        assert len(first.calls) == 1 and second.calls == []
        assert [h["runId"] for h in runs.list_session_runs(source.session_id)] == [source.run_id, "run_x1"]
    finally:
        store.close(), runs.close()


def test_claim_failure_is_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # §8 item 100
    source = crashed_source(tmp_path)
    p1, _p2, world, store, runs = _two_plans(tmp_path, source)
    loaded = load_script(FULL)

    def refuse(_claim: Any) -> Any:
        raise OSError("claim store unavailable")

    monkeypatch.setattr(store, "claim_continuation", refuse)
    provider = ScriptedProvider(loaded, record=True)
    try:
        with pytest.raises(OSError):
            execute_continuation(world, p1.continuation, loaded, "x1", provider=provider)
        assert provider.calls == []
        assert [h["runId"] for h in runs.list_session_runs(source.session_id)] == [source.run_id]
        assert store.read_run_events(source.session_id, "run_x1") == []
    finally:
        store.close(), runs.close()


def _resume_with_change(ws: Path, change: Any, **kwargs: Any) -> tuple[RuntimeContinuationRevalidationError, ScriptedProvider, LifecycleLog]:
    log = LifecycleLog(ws / "life.jsonl")
    provider = ScriptedProvider(load_script(FULL), record=True)
    with pytest.raises(RuntimeContinuationRevalidationError) as info:
        resume_session(ws, flag=True, lifecycle_log=log, script=FULL, provider=provider, before_execute=change, **kwargs)
    return info.value, provider, log


def test_source_header_completed_after_planning(tmp_path: Path) -> None:  # §8 item 101
    source = crashed_source(tmp_path)

    def complete(world: StoreWorld, _plan: Any) -> None:
        world.runs.update_run(source.session_id, source.run_id, {"status": "completed", "failureClass": None, "failureMessage": None})

    error, provider, log = _resume_with_change(tmp_path, complete)
    assert error.code == "source_terminal_changed" and "terminal" in error.message
    assert provider.calls == []
    assert target_rows(tmp_path, source.session_id, source.run_id) == []
    assert log.events[-1]["errorClass"] == "source_terminal_changed"


def test_identity_change_after_planning(tmp_path: Path) -> None:  # §8 item 102
    source = crashed_source(tmp_path)
    current = {"identity": source.workspace_identity}

    def swap(_world: StoreWorld, _plan: Any) -> None:
        current["identity"] = "workspace:v1:00000000-0000-4000-8000-000000000000"

    error, provider, log = _resume_with_change(tmp_path, swap, resolve_identity=lambda _p: current["identity"])
    assert error.code == "workspace_identity_changed"
    assert provider.calls == []
    assert log.events[-1] == {
        "type": "execution_failed",
        "sessionId": source.session_id,
        "sourceRunId": source.run_id,
        "targetRunId": log.events[0]["targetRunId"],
        "errorClass": "workspace_identity_changed",
    }
    assert [e["type"] for e in log.events] == ["plan_approved", "execution_started", "execution_failed"]
    assert target_rows(tmp_path, source.session_id, source.run_id) == []


@pytest.mark.parametrize(
    "changed",
    [CATALOG + ["Bash"], [n for n in CATALOG if n != "Read"], [n for n in CATALOG if n != "Read"] + ["Grep"]],
    ids=["added", "removed", "replaced"],
)
def test_tool_catalog_change_after_planning(tmp_path: Path, changed: list[str]) -> None:  # §8 item 103
    crashed_source(tmp_path)
    catalog = {"names": CATALOG}

    def change(_world: StoreWorld, _plan: Any) -> None:
        catalog["names"] = changed

    error, provider, _log = _resume_with_change(tmp_path, change, tool_catalog=lambda: catalog["names"])
    assert error.code == "tool_catalog_changed"
    assert provider.calls == []


def test_failing_lifecycle_writer_changes_nothing(tmp_path: Path) -> None:  # §7 best effort
    crashed_source(tmp_path)

    def broken(_event: Any) -> None:
        raise RuntimeError("sink down")

    outcome = resume_session(tmp_path, flag=True, lifecycle_log=broken, script=FULL)
    assert not outcome.parked and outcome.summary.status == "completed"


def test_lifecycle_log_never_carries_user_data(tmp_path: Path) -> None:  # §7 canary
    canary = "CANARY-7f3c9e21-do-not-leak"
    steps = [
        {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": f"{canary}.txt", "content": canary}}]},
        {"toolCalls": [{"id": "call-2", "name": "Read", "args": {"path": f"{canary}.txt"}}]},
    ]
    first = script(T1, steps, user=f"please {canary}")
    full = script(T1, steps + [{"text": f"read {canary}"}], user=f"please {canary}")
    summary = run_turn(tmp_path, first)
    assert summary.status == "failed"
    assert canary in json.dumps([o.to_json() for o in summary.tool_calls])  # the tool result carries it
    outcome = resume_session(tmp_path, flag=True, script=full)
    assert not outcome.parked and outcome.summary.final_text == f"read {canary}"
    assert resume_session(tmp_path, flag=True, script=full).parked  # a plan_parked event too
    text = (tmp_path / ".maka" / "lifecycle.jsonl").read_text()
    assert [e["type"] for e in read_lifecycle_log(tmp_path)] == [
        "plan_approved", "execution_started", "execution_completed", "plan_parked",
    ]
    assert canary not in text and "please" not in text and "notes" not in text


def test_cli_resume_flag_off_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", raising=False)
    assert cli_run(["resume", "--workspace", str(tmp_path)]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["parked"] is True and document["rejectionReasons"] == ["resume_feature_disabled"]


def test_cli_resume_error_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    crashed_source(tmp_path)  # no sidecar: run_turn was called directly, not through `run`
    monkeypatch.setenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", "1")
    assert cli_run(["resume", "--workspace", str(tmp_path)]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "script_unreadable"


# ------------------------------------------------------------------ real processes, SIGKILL


def _cli(ws: Path, *args: str, flag: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("MAKA_REF_FAILPOINT", None)
    env.pop("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", None)
    if flag:
        env["MAKA_RUNTIME_SAFE_BOUNDARY_RESUME"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "maka_ref", *args, "--workspace", str(ws)],
        env=env, cwd=str(REPO), capture_output=True, text=True, timeout=120,
    )


def _crash_repair_inspect(tmp_path: Path, point: str) -> Path:
    from tests.maka_ref.runtime.support import kill_and_reap, run_until_failpoint

    ws = tmp_path / "ws"
    ws.mkdir()
    script_path = write_script(tmp_path, FULL)
    child = run_until_failpoint(ws, script_path, point)
    kill_and_reap(child)  # asserts returncode == -SIGKILL
    assert child.returncode == -9
    repaired = _cli(ws, "repair")
    assert repaired.returncode == 0, repaired.stderr
    first, second = _cli(ws, "inspect"), _cli(ws, "inspect")
    assert first.returncode == 0 and first.stdout == second.stdout
    return ws


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
def test_e2e_kill_at_p7_then_resume_completes(tmp_path: Path) -> None:
    ws = _crash_repair_inspect(tmp_path, "P7")
    resumed = _cli(ws, "resume", flag=True)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    outcome = json.loads(resumed.stdout)
    assert outcome["parked"] is False and outcome["status"] == "completed"
    assert outcome["run"]["finalText"] == "done" and outcome["run"]["toolCalls"] == []
    assert (ws / "notes.txt").read_text() == "after"
    writes = [line for line in effect_lines(ws) if line.get("tool") == "Write"]
    assert len(writes) == 1
    with RuntimeStore.open_read_only(ws) as store:
        claims = store.list_claims(outcome["sessionId"])
    assert len(claims) == 1 and claims[0].claim.target.run_id == outcome["targetRunId"]
    again = _cli(ws, "resume", flag=True)
    assert again.returncode == 3 and json.loads(again.stdout)["rejectionReasons"] == ["continuation_already_exists"]
    assert [e["type"] for e in read_lifecycle_log(ws)] == [
        "plan_approved", "execution_started", "execution_completed", "plan_parked",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
def test_e2e_kill_at_p3_parks(tmp_path: Path) -> None:
    ws = _crash_repair_inspect(tmp_path, "P3")
    resumed = _cli(ws, "resume", flag=True)
    assert resumed.returncode == 3, (resumed.stdout, resumed.stderr)
    outcome = json.loads(resumed.stdout)
    assert outcome["parked"] is True
    assert outcome["rejectionReasons"] == EXPECTED_P3_REASONS
    assert not (ws / "notes.txt").exists()
    assert len([line for line in effect_lines(ws) if line.get("tool") == "Write"]) == 1
    with RuntimeStore.open_read_only(ws) as store:
        assert store.list_claims(outcome["sessionId"]) == []


#: An indeterminate Write (T1 committed, effect started, no T2) leaves the operation unsettled:
#: the composite replay is blocked ``tool_recovery_unsettled`` → ``runtime_ledger_unreadable``
#: (§3.3 step 4).
EXPECTED_P3_REASONS = ["runtime_ledger_unreadable"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
def test_e2e_two_concurrent_resumes_make_one_continuation(tmp_path: Path) -> None:  # issue 4 item 8, §8 item 99
    ws = _crash_repair_inspect(tmp_path, "P7")
    env = dict(os.environ, PYTHONPATH=str(REPO), MAKA_RUNTIME_SAFE_BOUNDARY_RESUME="1")
    env.pop("MAKA_REF_FAILPOINT", None)
    argv = [sys.executable, "-m", "maka_ref", "resume", "--workspace", str(ws)]
    children = [
        subprocess.Popen(argv, env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(child.wait(timeout=120), *child.communicate()) for child in children]
    codes = sorted(code for code, _out, _err in results)
    assert codes[0] == 0 and codes[1] in (2, 3), results
    loser = json.loads(next(out for code, out, _err in results if code != 0))
    allowed = {
        "continuation_already_exists", "continuation_claim_conflict", "target_run_conflict",
        "continuation_started_indeterminate", "continuation_claim_repair_required", "source_identity_changed",
        "source_replay_changed", "runtime_ledger_unreadable",
    }
    reasons = loser.get("rejectionReasons") or [loser["error"]["code"]]
    assert set(reasons) <= allowed, loser
    winner = json.loads(next(out for code, out, _err in results if code == 0))
    with RuntimeStore.open_read_only(ws) as store:
        assert len(store.list_claims(winner["sessionId"])) == 1
    with AgentRunStore.open_read_only(ws) as runs:
        assert len(runs.list_session_runs(winner["sessionId"])) == 2
    assert len([line for line in effect_lines(ws) if line.get("tool") == "Write"]) == 1
    assert (ws / "notes.txt").read_text() == "after"


def test_catalog_change_inside_activation_barrier(tmp_path: Path) -> None:  # §8 item 104
    source = crashed_source(tmp_path)
    calls = {"n": 0}

    def catalog() -> list[str]:  # 1: planning, 2: revalidation, 3: the activation barrier
        calls["n"] += 1
        return CATALOG if calls["n"] < 3 else CATALOG + ["Bash"]

    provider = ScriptedProvider(load_script(FULL), record=True)
    with pytest.raises(RuntimeContinuationRevalidationError) as info:
        resume_session(tmp_path, flag=True, script=FULL, provider=provider, tool_catalog=catalog)
    assert info.value.code == "tool_catalog_changed" and calls["n"] == 3
    assert provider.calls == []
    assert target_rows(tmp_path, source.session_id, source.run_id) == []  # target run not created
    with RuntimeStore.open(tmp_path) as store:
        assert len(store.list_claims(source.session_id)) == 1  # the claim stays durable (§4.5 saga)


def test_no_safety_inspector_at_execution(tmp_path: Path) -> None:  # §8 item 105
    source = crashed_source(tmp_path)
    p1, _p2, world, store, runs = _two_plans(tmp_path, source)
    world.inspect = None  # type: ignore[assignment, method-assign]
    provider = ScriptedProvider(load_script(FULL), record=True)
    try:
        with pytest.raises(Exception, match="safety inspector"):
            execute_continuation(world, p1.continuation, load_script(FULL), "x1", provider=provider)
        assert provider.calls == []
        assert store.list_claims(source.session_id) == []
    finally:
        store.close(), runs.close()


def test_broken_envelope_is_refused_before_anything(tmp_path: Path) -> None:  # §8 item 36 (execution side)
    import dataclasses

    source = crashed_source(tmp_path)
    p1, _p2, world, store, runs = _two_plans(tmp_path, source)
    broken = dataclasses.replace(p1.continuation, source_runtime_event_high_water=0)
    try:
        with pytest.raises(Exception, match="high-water") as info:
            execute_continuation(world, broken, load_script(FULL), "x1")
        assert info.value.code == "continuation_envelope_invalid"
        assert store.list_claims(source.session_id) == []
    finally:
        store.close(), runs.close()


def test_resume_on_a_missing_workspace_is_an_error_and_creates_nothing(tmp_path) -> None:
    """Issue 4 item 7: errors exit 2 with a stable code; a bad path is never created
    (before this check, the lifecycle log's directory was created under the missing path)."""
    import io
    import json as _json

    from maka_ref._cli.main import run as cli_run

    missing = tmp_path / "missing" / "ws"
    out, err = io.StringIO(), io.StringIO()
    code = cli_run(["resume", "--workspace", str(missing)], stdout=out, stderr=err)
    assert code == 2
    assert _json.loads(out.getvalue())["error"]["code"] == "workspace_not_found"
    assert not (tmp_path / "missing").exists()
