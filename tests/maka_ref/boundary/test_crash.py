"""Real SIGKILLs at the spec-phase4 §8 points of a capture (objects written, ref created before
the fact, fact committed): orphans are collected, no fact names a missing artifact, and the
user's index and refs are byte-identical (§3.9, §4.1, §4.2, §12 item 37)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from maka_ref._boundary.commands import checkpoint_collect, checkpoint_list
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.boundary.test_resume import FIRST_ONLY, repo
from tests.maka_ref.checkpoint.support import git, maka_refs, user_state, write
from tests.maka_ref.runtime.support import (
    kill_and_reap,
    spawn_until_failpoint,
    write_script,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")


def boundary_refs(ws: Path) -> list[str]:
    store = RuntimeStore.open_read_only(ws)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT json_extract(payload_json, '$.actions.workspaceBoundary') FROM runtime_events "
                "WHERE json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL").fetchall()
    finally:
        store.close()
    return [json.loads(text)["payload"]["boundary"]["checkpointRef"] for (text,) in rows]


def killed_at(tmp_path: Path, point: str) -> tuple[Path, dict[str, Any]]:
    ws = repo(tmp_path)
    write(ws / "staged.txt", "staged\n")
    git(ws, "add", "staged.txt")
    script = write_script(tmp_path, FIRST_ONLY)
    before = user_state(ws)
    child = spawn_until_failpoint(
        ["run", "--workspace", str(ws), "--script", str(script), "--checkpoints"], tmp_path, point,
        MAKA_REF_CHECKPOINT_FAILPOINT=point)
    kill_and_reap(child)
    return ws, before


def assert_user_state_kept(ws: Path, before: dict[str, Any]) -> None:
    after = user_state(ws)
    for key, value in before.items():
        if key != "worktree":  # the run's own files (runtime.sqlite, marker) are expected there
            assert after[key] == value, key


def test_kill_after_objects_written_leaves_no_ref_and_no_fact(tmp_path: Path) -> None:
    ws, before = killed_at(tmp_path, "after_checkpoint_objects_written")
    assert maka_refs(ws) == [] and boundary_refs(ws) == []
    assert_user_state_kept(ws, before)


def test_kill_between_ref_and_fact_leaves_an_orphan_that_is_collected(tmp_path: Path) -> None:
    ws, before = killed_at(tmp_path, "after_checkpoint_ref_created")
    refs = maka_refs(ws)
    assert len(refs) == 1 and boundary_refs(ws) == []
    listed = checkpoint_list(str(ws))
    assert [item["orphan"] for item in listed["checkpoints"]] == [True]
    # Within the grace period the orphan is kept (its fact might still be committing, §3.8).
    assert checkpoint_collect(str(ws)) == {"collected": [], "kept": refs}
    assert checkpoint_collect(str(ws), 0) == {"collected": refs, "kept": []}
    assert maka_refs(ws) == []
    assert_user_state_kept(ws, before)


def test_kill_after_the_fact_keeps_the_live_ref(tmp_path: Path) -> None:
    ws, before = killed_at(tmp_path, "after_workspace_boundary_committed")
    refs = maka_refs(ws)
    assert boundary_refs(ws) == refs and len(refs) == 1
    assert checkpoint_collect(str(ws), 0) == {"collected": [], "kept": refs}
    assert maka_refs(ws) == refs  # no fact names a missing artifact
    assert checkpoint_list(str(ws))["factsWithMissingArtifact"] == []
    assert_user_state_kept(ws, before)


def test_kill_inside_restore_leaves_no_destination_and_a_retry_succeeds(tmp_path: Path) -> None:
    """§8 ``after_restore_materialized``: a staging directory, no destination, the user's
    directory identical; retrying to the same destination succeeds."""
    from maka_ref._boundary.capture import capture_and_commit, default_carrier  # noqa: F401
    from maka_ref._boundary.commands import checkpoint_restore

    ws = repo(tmp_path)
    script = write_script(tmp_path, FIRST_ONLY)
    from maka_ref._boundary.commands import run_with_checkpoints

    run_with_checkpoints(str(ws), script)
    ref = max(maka_refs(ws))
    before = user_state(ws)
    dest = tmp_path / "restored"
    child = spawn_until_failpoint(
        ["checkpoint", "restore", "--workspace", str(ws), ref, str(dest)], tmp_path, "after_restore_materialized",
        MAKA_REF_CHECKPOINT_FAILPOINT="after_restore_materialized")
    kill_and_reap(child)
    assert not dest.exists()
    assert [p.name.startswith(".restored.maka-restore-") for p in tmp_path.iterdir() if p.name.startswith(".restored")] == [True]
    assert user_state(ws) == before
    result = checkpoint_restore(str(ws), ref, str(dest))
    assert result["path"] == str(dest) and (dest / "notes.txt").read_text() == "after"
    assert user_state(ws) == before


def test_kill_after_the_rebaseline_capture_changes_no_epoch(tmp_path: Path) -> None:
    """§8 ``after_rebaseline_captured`` (the carrier's ``after_checkpoint_ref_created`` inside a
    rebaseline): the claim may exist, the new ref is an orphan, no transition fact, epoch unchanged."""
    import io

    from maka_ref._cli.main import run as cli_run

    ws = repo(tmp_path)
    script = write_script(tmp_path, FIRST_ONLY)  # through the CLI: it keeps the script resume replays
    cli_run(["run", "--workspace", str(ws), "--script", str(script), "--checkpoints"],
            stdout=io.StringIO(), stderr=io.StringIO())
    write(ws / "README.md", "edited\n")
    refs_before, facts_before = maka_refs(ws), boundary_refs(ws)
    child = spawn_until_failpoint(
        ["checkpoint", "rebaseline", "--workspace", str(ws)], tmp_path, "after_checkpoint_ref_created", flag=True,
        MAKA_REF_CHECKPOINT_FAILPOINT="after_checkpoint_ref_created")
    kill_and_reap(child)
    new = sorted(set(maka_refs(ws)) - set(refs_before))
    assert len(new) == 1 and boundary_refs(ws) == facts_before
    assert checkpoint_collect(str(ws), 0) == {"collected": new, "kept": sorted(refs_before)}


# ---------------------------------------------------------------- the transitions' §8 points


def parked_session(tmp_path: Path) -> tuple[Path, dict[str, Any], list[str]]:
    """A checkpoint-mode session (run through the CLI, so the script sidecar resume replays
    exists) whose source parks on drift: the user edited README.md. Returns the workspace, its
    user state (runtime files left out) and the boundary facts' refs."""
    import io

    from maka_ref._cli.main import run as cli_run
    from tests.maka_ref.boundary.test_restore import users_state

    ws = repo(tmp_path)
    script = write_script(tmp_path, FIRST_ONLY)
    assert cli_run(["run", "--workspace", str(ws), "--script", str(script), "--checkpoints"],
                   stdout=io.StringIO(), stderr=io.StringIO()) == 1
    write(ws / "README.md", "edited by the user\n")
    return ws, users_state(ws), boundary_refs(ws)


def lineage_facts(ws: Path) -> list[tuple[str, int, dict[str, Any]]]:
    """``(run, seq, fact)`` of every boundary fact, in commit order."""
    from tests.maka_ref.boundary.test_rebaseline import facts

    return facts(ws)


def resume_none(ws: Path, tmp_path: Path) -> Any:
    from maka_ref._boundary.commands import resume_with_intent
    from maka_ref._continuation.lifecycle import LifecycleLog

    return resume_with_intent(str(ws), intent="none", flag=True,
                              lifecycle_log=LifecycleLog(tmp_path / "life-after.jsonl"))[0]


def assert_started_indeterminate_with_new_boundary(ws: Path, tmp_path: Path, kind: str) -> dict[str, Any]:
    """§8 ``after_workspace_transition_committed``: the start and the transition fact are
    durable together (epoch 2 at seq 2 of the target), the provider was never called (the
    target holds those two events, plus a rebaseline's notice), and the source parks
    ``continuation_started_indeterminate`` (spec 20 §3.5 step 10); in the target's lineage the
    new boundary is current and the old one superseded (§6.1)."""
    from maka_ref._boundary.lineage import boundary_facts, current_boundary, lineage_runs

    rows = lineage_facts(ws)
    target_run, seq, fact = rows[-1]
    assert (seq, fact["kind"]) == (2, kind)
    boundary = fact["payload"]["boundary"]
    assert boundary["workspaceEpoch"] == 2 and boundary["immutableRuntimeHighWater"] == 1
    store = RuntimeStore.open_read_only(ws)
    try:
        with store.read() as conn:
            session_id = conn.execute("SELECT session_id FROM runtime_events WHERE run_id = ?",
                                      (target_run,)).fetchone()[0]
        events = store.read_run_events(session_id, target_run)
        assert "continuationStart" in events[0]["actions"]
        # the provider was never called: after the start and the fact only the rebaseline's
        # notice (§7.1 step 5, same transaction) — no model event
        assert [e.get("role") for e in events[2:]] == (["system"] if kind.endswith("rebaselined") else [])
        assert all("content" not in e or e["role"] == "system" for e in events)
        runs = lineage_runs(lambda run_id: store.read_run_events(session_id, run_id), target_run)
        facts = [f for run_id in runs for f in boundary_facts(run_id, store.read_run_events(session_id, run_id))]
    finally:
        store.close()
    current = current_boundary(facts)
    assert current is not None and current.run_id == target_run and dict(current.boundary) == boundary
    assert max(int(f.boundary["workspaceEpoch"]) for f in facts if f is not current) == 1  # superseded
    outcome = resume_none(ws, tmp_path)
    assert outcome.parked and outcome.rejection_reasons == ("continuation_started_indeterminate",)
    return fact["payload"]


def test_kill_after_the_rebaseline_transition_committed(tmp_path: Path) -> None:
    from tests.maka_ref.boundary.test_restore import users_state

    ws, before, _ = parked_session(tmp_path)
    child = spawn_until_failpoint(
        ["resume", "--workspace", str(ws), "--rebaseline"], tmp_path, "after_workspace_transition_committed",
        flag=True, MAKA_REF_CHECKPOINT_FAILPOINT="after_workspace_transition_committed")
    kill_and_reap(child)
    payload = assert_started_indeterminate_with_new_boundary(ws, tmp_path, "maka.workspace.rebaselined")
    assert payload["affectedPaths"] == ["README.md"]
    assert payload["boundary"]["checkpointRef"] in maka_refs(ws)  # no fact names a missing artifact
    assert users_state(ws) == before


def test_kill_after_the_restore_transition_committed(tmp_path: Path) -> None:
    from tests.maka_ref.boundary.test_restore import users_state

    ws, before, refs = parked_session(tmp_path)
    dest = tmp_path / "restored"
    child = spawn_until_failpoint(
        ["resume", "--workspace", str(ws), "--restore-into", str(dest)], tmp_path,
        "after_workspace_transition_committed", flag=True,
        MAKA_REF_CHECKPOINT_FAILPOINT="after_workspace_transition_committed")
    kill_and_reap(child)
    payload = assert_started_indeterminate_with_new_boundary(ws, tmp_path, "maka.workspace.restored")
    marker = json.loads((dest / ".maka-workspace.json").read_text())
    assert payload["boundary"]["workspaceIdentity"] == "workspace:v1:" + marker["workspaceId"]
    assert payload["boundary"]["checkpointRef"] == payload["from"]["checkpointRef"] == refs[-1]
    assert (dest / "README.md").read_text() == "hello\n" and (dest / "notes.txt").read_text() == "after"
    assert users_state(ws) == before


def test_kill_after_the_restore_was_published(tmp_path: Path) -> None:
    """§8 ``after_restore_published``: a complete destination and no fact naming it (the start's
    transaction never committed); the lineage still parks — first on the claim-only state
    (spec 20 §3.5), and once startup repair abandoned the claim, on the abandoned target's
    unauthorized identity; a retry needs a new destination (``restore_target_exists``), and one
    restores from the old current boundary (the abandoned target's lineage)."""
    from maka_ref._boundary.commands import CommandError, resume_with_intent
    from maka_ref._continuation.lifecycle import LifecycleLog
    from maka_ref._repair import repair_workspace
    from tests.maka_ref.boundary.test_restore import users_state

    ws, before, refs = parked_session(tmp_path)
    facts_before = lineage_facts(ws)
    dest = tmp_path / "restored"
    child = spawn_until_failpoint(
        ["resume", "--workspace", str(ws), "--restore-into", str(dest)], tmp_path, "after_restore_published",
        flag=True, MAKA_REF_CHECKPOINT_FAILPOINT="after_restore_published")
    kill_and_reap(child)
    assert (dest / "README.md").read_text() == "hello\n" and (dest / "notes.txt").read_text() == "after"
    assert not (dest / ".maka-workspace.json").exists()  # killed before the identity was resolved
    assert lineage_facts(ws) == facts_before and boundary_refs(ws) == refs  # no fact names the destination
    assert users_state(ws) == before
    first = resume_none(ws, tmp_path)
    assert first.parked and first.rejection_reasons == ("continuation_claim_repair_required",)
    repair_workspace(ws)  # abandons the claim (spec 20 §4.5): the never-started target ends `failed`
    second = resume_none(ws, tmp_path)
    # a plain resume now plans from the abandoned target (spec 20 §8 item 89), whose header names
    # the destination's identity, which no fact authorized: it parks
    assert second.parked and second.rejection_reasons == ("workspace_identity_mismatch",)
    with pytest.raises(CommandError) as caught:
        resume_with_intent(str(ws), intent="restore", destination=str(dest), flag=True,
                           lifecycle_log=LifecycleLog(tmp_path / "life-retry.jsonl"))
    assert caught.value.code == "restore_target_exists"
    outcome, fact = resume_with_intent(str(ws), intent="restore", destination=str(tmp_path / "again"), flag=True,
                                       lifecycle_log=LifecycleLog(tmp_path / "life-again.jsonl"))
    assert not outcome.parked and fact is not None and fact["from"]["checkpointRef"] == refs[-1]
    assert users_state(ws) == before
