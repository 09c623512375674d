"""Capture points and the resume gate on real Git repositories (spec-phase4 §5.1, §6.2, §12
items 32–36).

The source turn writes ``notes.txt`` and then asks the provider for a step the script does not
have, so it ends ``failed`` at a safe boundary (the Phase 1 fixture of
``tests/maka_ref/continuation``); resume then continues with the full script.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from maka_ref._boundary.commands import make_workspace_gate, run_with_checkpoints
from maka_ref._continuation import resume_session
from maka_ref._continuation.lifecycle import LifecycleLog
from maka_ref._runtime import run_turn
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.checkpoint.support import (
    git,
    init_repo,
    maka_refs,
    user_state,
    write,
)
from tests.maka_ref.runtime.support import T1, script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")

WRITE = {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "after"}}]}
FULL = script(T1, [WRITE, {"text": "done"}])
FIRST_ONLY = script(T1, [WRITE])


def repo(tmp_path: Path) -> Path:
    ws = init_repo(tmp_path / "ws")
    write(ws / "README.md", "hello\n")
    git(ws, "add", "README.md")
    git(ws, "commit", "-q", "-m", "initial")
    return ws


def boundary_rows(ws: Path) -> list[tuple[str, int, Any]]:
    store = RuntimeStore.open_read_only(ws)
    try:
        with store.read() as conn:
            return conn.execute(
                "SELECT run_id, event_seq, json_extract(payload_json, '$.actions.workspaceBoundary.kind') "
                "FROM runtime_events WHERE json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL "
                "ORDER BY run_id, event_seq").fetchall()
    finally:
        store.close()


def crashed(ws: Path, steps: dict[str, Any] = FIRST_ONLY) -> tuple[Any, dict[str, Any]]:
    summary, report = run_with_checkpoints(str(ws), steps)
    assert summary.status == "failed" and summary.error["code"] == "script_exhausted"
    return summary, report


def resume(ws: Path, tmp_path: Path) -> Any:
    return resume_session(ws, flag=True, script=FULL, lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"),
                          workspace_gate=make_workspace_gate())


def test_b0_and_b1_are_committed_and_the_users_state_is_untouched(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    write(ws / "staged.txt", "staged\n")
    git(ws, "add", "staged.txt")
    before = user_state(ws)
    _, report = crashed(ws)
    assert report["captureFailures"] == []
    # B0 after the user message (seq 1 → fact at 2); B1 after the Write step (call, dispatch,
    # response at 3..5 → fact at 6), before the provider is asked again.
    assert [(seq, kind) for _, seq, kind in boundary_rows(ws)] == [
        (2, "maka.workspace.boundary_captured"), (6, "maka.workspace.boundary_captured")]
    assert len(maka_refs(ws)) == 2
    after = user_state(ws)
    # The tool's own write and the runtime's files are the only worktree changes; the index
    # (bytes, inode, mtime), refs outside refs/maka/, HEAD, stash, config and locks are identical.
    for key, value in before.items():
        if key != "worktree":
            assert after[key] == value, key


def test_untouched_workspace_resumes(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    outcome = resume(ws, tmp_path)
    assert not outcome.parked, outcome.to_json()
    assert outcome.summary is not None and outcome.summary.status == "completed"


def test_user_edit_parks_with_content_drift(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    write(ws / "README.md", "edited by the user\n")
    outcome = resume(ws, tmp_path)
    assert outcome.parked and outcome.rejection_reasons == ("workspace_content_drift",)
    detail = outcome.plan.diagnostics[0].detail
    assert detail["check"] == "h"
    assert detail["changes"] == [{"path": "README.md", "kind": "modified"}]
    assert (ws / "README.md").read_text() == "edited by the user\n"  # parking changes nothing


def test_missing_artifact_fails_closed(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    for ref in maka_refs(ws):
        git(ws, "update-ref", "-d", ref)
    outcome = resume(ws, tmp_path)
    assert outcome.parked and outcome.rejection_reasons == ("workspace_checkpoint_missing",)


def test_failed_capture_after_a_mutation_leaves_the_suffix_uncovered(tmp_path: Path) -> None:
    """The Write makes the workspace ineligible (a .gitmodules file): B1 commits nothing, so the
    Write is after the last boundary and resume parks as stale (§5.1, §5.2, §12 item 34)."""
    ws = repo(tmp_path)
    gitmodules = {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": ".gitmodules", "content": "x"}}]}
    _, report = crashed(ws, script(T1, [gitmodules]))
    assert [f["code"] for f in report["captureFailures"]] == ["submodules_unsupported"]
    assert [seq for _, seq, _ in boundary_rows(ws)] == [2]
    outcome = resume(ws, tmp_path)
    assert outcome.parked and outcome.rejection_reasons == ("workspace_boundary_stale",)
    assert outcome.plan.diagnostics[0].detail["eventId"].endswith("_call")


def test_identity_change_parks(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    (ws / ".maka-workspace.json").unlink()  # the directory is "replaced": a new marker, a new identity
    outcome = resume(ws, tmp_path)
    assert outcome.parked and outcome.rejection_reasons[0] in ("workspace_identity_mismatch",)


def test_non_git_workspace_falls_back_and_resumes_as_today(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    _, report = crashed(ws)
    assert [f["code"] for f in report["captureFailures"]] == ["not_a_git_repository"] * 2
    assert boundary_rows(ws) == []
    outcome = resume(ws, tmp_path)
    assert not outcome.parked and outcome.summary is not None and outcome.summary.status == "completed"


def test_sessions_without_checkpoints_are_not_gated(tmp_path: Path) -> None:
    """A run made without --checkpoints in a Git repository resumes exactly as before."""
    ws = repo(tmp_path)
    run_turn(ws, FIRST_ONLY)
    write(ws / "README.md", "edited\n")
    outcome = resume(ws, tmp_path)
    assert not outcome.parked


def test_the_planner_gets_the_workspace_checkpoint_input(tmp_path: Path) -> None:
    """§6.2 / §12 item 32 / spec 20 §3.8: when every check passes the inspector gives the planner
    ``workspaceCheckpoint = {ref: the current boundary's ref, restored: true,
    runtimeEventHighWater: Hs}``; the plan's safety snapshot carries ``{ref, Hs}``."""
    from maka_ref._boundary.commands import resume_with_intent

    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    with RuntimeStore.open_read_only(ws) as store:
        high_water = len(store.read_run_events(summary.session_id, summary.run_id))
    outcome, _ = resume_with_intent(str(ws), intent="none", flag=True, script=FULL,
                                    lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    assert not outcome.parked, outcome.to_json()
    snapshot = outcome.plan.continuation.safety_snapshot.to_json()
    assert snapshot["workspaceCheckpoint"] == {"ref": max(maka_refs(ws)), "runtimeEventHighWater": high_water}


def test_execution_revalidation_refuses_a_change_before_the_claim(tmp_path: Path) -> None:
    """§6.2 last paragraph / spec 20 §3.9 step 7: execution revalidation asks the inspector's
    checkpoint observation again — (g)/(h) re-run — before the claim; a file edited after
    planning refuses with ``workspace_checkpoint_changed`` and nothing is claimed."""
    from maka_ref._boundary.commands import resume_with_intent
    from maka_ref._errors import MakaRefError
    from maka_ref._store.agent_runs.store import AgentRunStore

    ws = repo(tmp_path)
    summary, _ = crashed(ws)

    def edit(_world: Any, _plan: Any) -> None:
        write(ws / "README.md", "edited between the checks and the claim\n")

    with pytest.raises(MakaRefError) as caught:
        resume_with_intent(str(ws), intent="none", flag=True, script=FULL, before_execute=edit,
                           lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    assert caught.value.code == "workspace_checkpoint_changed"
    with AgentRunStore.open_read_only(ws) as runs:
        assert [r["runId"] for r in runs.list_session_runs(summary.session_id)] == [summary.run_id]
    with RuntimeStore.open_read_only(ws) as store:
        assert store.list_claims(summary.session_id) == []


def test_execution_revalidation_refuses_a_change_after_the_checks(tmp_path: Path) -> None:
    """§6.2 last paragraph: (g)/(h) re-run inside the continuation-start's transaction too; a file
    edited after the target run was created (P11, after every earlier check) stops the
    continuation before any provider call."""
    from maka_ref._boundary.commands import resume_with_intent
    from maka_ref._errors import MakaRefError
    from maka_ref._store.agent_runs.store import AgentRunStore

    ws = repo(tmp_path)
    summary, _ = crashed(ws)

    from maka_ref._store.engine.failpoints import arm, disarm

    def edit(_name: str) -> None:
        write(ws / "README.md", "edited between the checks and the start\n")

    arm("P11", edit)  # after the activation barrier and the target's creation, before the start
    try:
        with pytest.raises(MakaRefError) as caught:
            resume_with_intent(str(ws), intent="none", flag=True, script=FULL,
                               lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    finally:
        disarm()
    assert caught.value.code == "workspace_checkpoint_changed"
    with AgentRunStore.open_read_only(ws) as runs:
        targets = [r for r in runs.list_session_runs(summary.session_id) if r["runId"] != summary.run_id]
    assert [t["status"] for t in targets] == ["created"]  # no start committed, provider never called
    with RuntimeStore.open_read_only(ws) as store:
        assert store.read_run_events(summary.session_id, targets[0]["runId"]) == []


def test_continuation_captures_after_its_own_mutation(tmp_path: Path) -> None:
    """B1 inside the continuation run: the continued script makes a second Write, so a boundary
    follows it in the target run (start 1, call/dispatch/response 2–4, fact 5), in the same
    epoch; a continuation that only writes text captures nothing; a session without
    checkpoints gets none."""
    from maka_ref._boundary.commands import resume_with_intent

    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    outcome, _ = resume_with_intent(str(ws), intent="none", flag=True, script=FULL,
                                    lifecycle_log=LifecycleLog(tmp_path / "life1.jsonl"))
    assert not outcome.parked and outcome.summary.status == "completed"
    assert [row for row in boundary_rows(ws) if row[0] != summary.run_id] == []

    ws2 = repo(tmp_path / "second")
    summary2, _ = crashed(ws2)
    second = {"toolCalls": [{"id": "call-2", "name": "Write", "args": {"path": "more.txt", "content": "x"}}]}
    three = script(T1, [WRITE, second, {"text": "done"}])
    outcome2, _ = resume_with_intent(str(ws2), intent="none", flag=True, script=three,
                                     lifecycle_log=LifecycleLog(tmp_path / "life2.jsonl"))
    assert not outcome2.parked and outcome2.summary.status == "completed"
    target = [row for row in boundary_rows(ws2) if row[0] != summary2.run_id]
    assert [(seq, kind) for _, seq, kind in target] == [(5, "maka.workspace.boundary_captured")]
    plain = repo(tmp_path / "plain")
    run_turn(plain, FIRST_ONLY)
    outcome3, _ = resume_with_intent(str(plain), intent="none", flag=True, script=FULL,
                                     lifecycle_log=LifecycleLog(tmp_path / "life3.jsonl"))
    assert not outcome3.parked and boundary_rows(plain) == []


def test_a_read_after_the_boundary_keeps_it_covering(tmp_path: Path) -> None:
    """§5.2 (2): ``Read`` is the host's read-only tool (the catalog's exact name), so a step
    that only reads needs no capture and does not make the boundary stale."""
    ws = repo(tmp_path)
    read = {"toolCalls": [{"id": "call-1", "name": "Read", "args": {"path": "README.md"}}]}
    crashed(ws, script(T1, [read]))
    assert [seq for _, seq, _ in boundary_rows(ws)] == [2]  # B0 only: no B1 after a read
    outcome = resume_session(ws, flag=True, script=script(T1, [read, {"text": "done"}]),
                             lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"), workspace_gate=make_workspace_gate())
    assert not outcome.parked, outcome.to_json()
