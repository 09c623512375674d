"""The isolated restore transition on real repositories (spec-phase4 §6.3, §7.2, §7.3; §12 items
34, 35).

The session's store stays in the original workspace (docs/spec-phase4.md §14, "store/cwd
split"); the continuation works in the destination. "The user's state" is spec-phase4 §3.9's:
index (bytes, inode, mtime), refs outside ``refs/maka/``, HEAD, stash, config, locks, and every
worktree file except the runtime's own (``runtime.sqlite*``, ``.maka/``, ``.maka-effects.jsonl``
— the files §2.5 excludes from every checkpoint).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from maka_ref._boundary.commands import CommandError, resume_with_intent
from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from maka_ref._continuation.lifecycle import LifecycleLog
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.boundary.test_rebaseline import facts
from tests.maka_ref.boundary.test_resume import FIRST_ONLY, WRITE, crashed, repo
from tests.maka_ref.checkpoint.support import maka_refs, user_state, write
from tests.maka_ref.runtime.support import T1, script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")

#: The continuation writes ``more.txt`` and ends with text: the tool's effect shows where it ran.
SECOND = {"toolCalls": [{"id": "call-2", "name": "Write", "args": {"path": "more.txt", "content": "continued"}}]}
THREE = script(T1, [WRITE, SECOND, {"text": "done"}])
#: The runtime's own files in the original workspace (store, WAL, effect log, lifecycle, sidecars).
RUNTIME_FILES = ("runtime.sqlite", ".maka/", ".maka-effects.jsonl")


def users_state(ws: Path) -> dict[str, Any]:
    """§3.9's user state with the runtime's own files left out of the worktree listing."""
    state = user_state(ws)
    state["worktree"] = {path: value for path, value in state["worktree"].items()
                         if not path.startswith(RUNTIME_FILES)}
    return state


def restore(ws: Path, tmp_path: Path, dest: Path, steps: Any = THREE, **kwargs: Any) -> tuple[Any, Any]:
    return resume_with_intent(str(ws), intent="restore", destination=str(dest), flag=True, script=steps,
                              lifecycle_log=LifecycleLog(tmp_path / "life-restore.jsonl"), **kwargs)


def header(ws: Path, session_id: str, run_id: str) -> Any:
    with AgentRunStore.open_read_only(ws) as runs:
        return runs.read_run(session_id, run_id)


def test_drift_then_restore_continues_in_the_destination(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    write(ws / "README.md", "edited by the user\n")
    before = users_state(ws)
    refs_before = maka_refs(ws)
    dest = tmp_path / "restored"
    outcome, fact = restore(ws, tmp_path, dest)
    assert not outcome.parked, outcome.to_json()
    assert outcome.summary.status == "completed"
    # the destination holds the boundary's tree (README before the edit, the source's Write),
    # the continuation's own Write, and a new marker — no store, no .git
    assert (dest / "README.md").read_text() == "hello\n"
    assert (dest / "notes.txt").read_text() == "after"
    assert (dest / "more.txt").read_text() == "continued"
    assert not (dest / ".git").exists() and not (dest / "runtime.sqlite").exists()
    marker = json.loads((dest / ".maka-workspace.json").read_text())
    new_identity = "workspace:v1:" + marker["workspaceId"]
    # the user's directory: not one byte of the user's state changed, and the continuation's
    # Write did not land there
    assert users_state(ws) == before and not (ws / "more.txt").exists()
    assert maka_refs(ws) == refs_before  # a restore captures nothing in the user's repository
    # the fact: seq 2 of the target, epoch + 1, high-water 1, the same ref and policy, `from` = the old boundary
    old = [f for run, _, f in facts(ws) if run == summary.run_id][-1]["payload"]["boundary"]
    target = [(run, seq, f) for run, seq, f in facts(ws) if run != summary.run_id]
    assert [(seq, f["kind"]) for _, seq, f in target] == [(2, "maka.workspace.restored")]
    payload = target[0][2]["payload"]
    assert payload == fact and payload["from"] == old
    boundary = payload["boundary"]
    assert boundary["workspaceIdentity"] == new_identity != old["workspaceIdentity"]
    assert boundary["workspaceEpoch"] == old["workspaceEpoch"] + 1 == 2
    assert boundary["immutableRuntimeHighWater"] == 1
    assert (boundary["checkpointRef"], boundary["checkpointPolicyHash"]) == (old["checkpointRef"], old["checkpointPolicyHash"])
    with RuntimeStore.open_read_only(ws) as store:
        start = store.read_run_events(summary.session_id, target[0][0])[0]
        assert "continuationStart" in start["actions"]
        assert boundary["immutableRuntimeDigest"] == store.read_immutable_prefix(
            summary.session_id, target[0][0], 1).prefix_digest
    # the target header records where it ran and under which identity
    target_header = header(ws, summary.session_id, target[0][0])
    assert target_header["cwd"] == str(dest) and target_header["workspaceIdentity"] == new_identity
    # the continuation's B1 capture in the destination is refused (a plain directory, §7.2 last paragraph)
    assert outcome.summary.workspace == str(dest)


def test_a_later_resume_of_the_restored_lineage_looks_only_at_the_destination(tmp_path: Path) -> None:
    """The continuation fails again (script exhausted after its own Write); resuming the
    session again reads its directory from the store (the restored run's ``cwd``): the gate
    checks the destination — a plain directory, so (f) parks ``workspace_checkpoint_ineligible``
    with ``not_a_git_repository`` (the stated single-operation limit of §7.2)."""
    ws = repo(tmp_path)
    crashed(ws)
    write(ws / "README.md", "edited by the user\n")
    dest = tmp_path / "restored"
    outcome, _ = restore(ws, tmp_path, dest, script(T1, [WRITE, {"toolCalls": [
        {"id": "call-2", "name": "Read", "args": {"path": "notes.txt"}}]}]))
    assert outcome.summary.status == "failed"
    before = users_state(ws)
    again, _ = resume_with_intent(str(ws), intent="none", flag=True, script=THREE,
                                  lifecycle_log=LifecycleLog(tmp_path / "life-again.jsonl"))
    assert again.parked and again.rejection_reasons == ("workspace_checkpoint_ineligible",)
    assert again.plan.diagnostics[0].detail["code"] == "not_a_git_repository"
    assert users_state(ws) == before


def test_restore_refused_when_a_mutation_is_not_covered(tmp_path: Path) -> None:
    """§6.3: (d) failed → ``workspace_restore_not_covering``; nothing claimed, no destination."""

    class FailsSecondCapture(GitCheckpointCarrier):
        calls = 0

        def capture(self, workspace: str, workspace_identity: str) -> Any:
            FailsSecondCapture.calls += 1
            if FailsSecondCapture.calls == 2:
                raise CheckpointError("git_timeout", "simulated: the B1 capture timed out")
            return super().capture(workspace, workspace_identity)

    from maka_ref._boundary.commands import run_with_checkpoints

    ws = repo(tmp_path)
    summary, report = run_with_checkpoints(str(ws), FIRST_ONLY, carrier=FailsSecondCapture())
    assert [f["code"] for f in report["captureFailures"]] == ["git_timeout"]
    before, rows = users_state(ws), facts(ws)
    dest = tmp_path / "restored"
    outcome, fact = restore(ws, tmp_path, dest)
    assert outcome.parked and outcome.rejection_reasons == ("workspace_restore_not_covering",)
    assert fact is None and not dest.exists() and facts(ws) == rows and users_state(ws) == before
    with AgentRunStore.open_read_only(ws) as runs:
        assert [r["runId"] for r in runs.list_session_runs(summary.session_id)] == [summary.run_id]


@pytest.mark.parametrize("case", ["exists", "relative", "inside"])
def test_a_bad_destination_is_refused_before_anything_is_claimed(tmp_path: Path, case: str) -> None:
    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    dest = {"exists": tmp_path / "taken", "relative": Path("relative/dir"), "inside": ws / "sub"}[case]
    if case == "exists":
        dest.mkdir()
    before, rows = users_state(ws), facts(ws)
    with pytest.raises(CommandError) as caught:
        restore(ws, tmp_path, dest)
    assert caught.value.code == {"exists": "restore_target_exists", "relative": "restore_target_invalid",
                                 "inside": "restore_target_inside_workspace"}[case]
    assert facts(ws) == rows and users_state(ws) == before
    with AgentRunStore.open_read_only(ws) as runs:
        assert [r["runId"] for r in runs.list_session_runs(summary.session_id)] == [summary.run_id]


def test_restore_needs_a_checkpoint_session(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    from maka_ref._runtime import run_turn

    run_turn(ws, FIRST_ONLY)  # a Git workspace, but run without --checkpoints
    outcome, fact = restore(ws, tmp_path, tmp_path / "restored")
    assert outcome.parked and outcome.rejection_reasons == ("workspace_checkpoint_unavailable",)
    assert fact is None and not (tmp_path / "restored").exists()


def test_restore_refused_when_the_artifact_is_gone(tmp_path: Path) -> None:
    """§4.2 / §6.3: (g) fails → the verify code's park, no destination."""
    from tests.maka_ref.checkpoint.support import git

    ws = repo(tmp_path)
    crashed(ws)
    for ref in maka_refs(ws):
        git(ws, "update-ref", "-d", ref)
    outcome, fact = restore(ws, tmp_path, tmp_path / "restored")
    assert outcome.parked and outcome.rejection_reasons == ("workspace_checkpoint_missing",)
    assert fact is None and not (tmp_path / "restored").exists()


def test_cli_resume_restore_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``maka-ref resume --restore-into DEST``: exit 0 and the fact under ``workspaceTransition``;
    with ``--rebaseline`` too, a usage error (exit 2); an existing DEST, exit 2
    ``restore_target_exists``."""
    import io

    from maka_ref._cli.main import run as cli_run
    from tests.maka_ref.runtime.support import write_script

    ws = repo(tmp_path)
    script_path = write_script(tmp_path, FIRST_ONLY)
    assert cli_run(["run", "--workspace", str(ws), "--script", str(script_path), "--checkpoints"],
                   stdout=io.StringIO(), stderr=io.StringIO()) == 1
    write(ws / "README.md", "edited\n")
    before = users_state(ws)
    monkeypatch.setenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", "1")
    dest = tmp_path / "d"

    def cli(*extra: str) -> tuple[int, Any]:
        out = io.StringIO()
        code = cli_run(["resume", "--workspace", str(ws), *extra], stdout=out, stderr=io.StringIO())
        return code, json.loads(out.getvalue())

    code, document = cli("--restore-into", str(dest), "--rebaseline")
    assert code == 2 and document["error"]["code"] == "usage" and not dest.exists()
    (tmp_path / "taken").mkdir()
    code, document = cli("--restore-into", str(tmp_path / "taken"))
    assert code == 2 and document["error"]["code"] == "restore_target_exists"
    code, document = cli("--restore-into", str(dest))
    assert code == 0 and not document["parked"]
    assert document["workspaceTransition"]["protocol"] == "workspace_restored_v1"
    assert document["run"]["workspace"] == str(dest) and (dest / "notes.txt").read_text() == "after"
    assert users_state(ws) == before


def test_restore_allowed_when_the_directory_was_replaced(tmp_path: Path) -> None:
    """§6.3, §12 item 35: the marker is gone (a new identity): a plain resume parks
    ``workspace_identity_mismatch``, an isolated restore goes ahead — the continuation never
    runs in the replaced directory, and its fact's ``from`` is the old boundary."""
    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    old_identity = header(ws, summary.session_id, summary.run_id)["workspaceIdentity"]
    (ws / ".maka-workspace.json").unlink()
    parked, _ = resume_with_intent(str(ws), intent="none", flag=True, script=THREE,
                                   lifecycle_log=LifecycleLog(tmp_path / "life-none.jsonl"))
    assert parked.parked and parked.rejection_reasons == ("workspace_identity_mismatch",)
    before = users_state(ws)
    dest = tmp_path / "restored"
    outcome, fact = restore(ws, tmp_path, dest)
    assert not outcome.parked and outcome.summary.status == "completed", outcome.to_json()
    assert fact["from"]["workspaceIdentity"] == old_identity != fact["boundary"]["workspaceIdentity"]
    assert (dest / "more.txt").read_text() == "continued" and users_state(ws) == before
