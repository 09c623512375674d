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
