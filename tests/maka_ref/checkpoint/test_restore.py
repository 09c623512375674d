"""Isolated restore: never into the workspace, always verified, all or nothing (spec-phase4
§3.6, §8 rows ``after_restore_*``; scenarios 25–26)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    git_dir,
    needs_git,
    posix_only,
    rich_repo,
    user_state,
    worktree_files,
    write,
)

pytestmark = [needs_git, posix_only]


def _leftovers(parent: Path) -> list[str]:
    return sorted(name for name in os.listdir(parent) if ".maka-restore-" in name)


def test_targets_inside_the_workspace_or_existing_are_refused(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    existing = tmp_path / "existing"
    existing.mkdir()
    cases = {
        str(ws): "restore_target_exists",
        str(ws / "new-subdir"): "restore_target_inside_workspace",
        str(ws / "src" / "deeper"): "restore_target_inside_workspace",
        str(git_dir(ws) / "restored"): "restore_target_inside_workspace",
        str(existing): "restore_target_exists",
        "relative/dir": "restore_target_invalid",
        str(tmp_path / "no-parent" / "dest"): "restore_target_invalid",
        str(tmp_path / "via-link" / ".." / "x" / ".."): "restore_target_invalid",
    }
    os.symlink(ws, tmp_path / "ws-link")
    cases[str(tmp_path / "ws-link" / "through-a-link")] = "restore_target_inside_workspace"
    state = user_state(ws)
    for destination, code in cases.items():
        with pytest.raises(CheckpointError) as caught:
            carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, destination)
        assert caught.value.code == code, destination
    assert user_state(ws) == state
    assert not (ws / "new-subdir").exists() and not (ws / "through-a-link").exists()
    assert list(existing.iterdir()) == []
    assert _leftovers(tmp_path) == [] and _leftovers(ws) == []


def test_attributes_added_after_capture_make_restore_fail_verified(tmp_path: Path) -> None:
    """Scenario 26: checkout would convert LF to CRLF; the independent check refuses."""
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    write(git_dir(ws) / "info" / "attributes", "*.md text eol=crlf\n")
    destination = tmp_path / "restored"
    with pytest.raises(CheckpointError) as caught:
        carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert caught.value.code == "restore_verification_failed"
    assert not destination.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("step", ["after_restore_materialized", "after_restore_published"])
def test_failure_at_a_step_leaves_all_or_nothing(tmp_path: Path, step: str) -> None:
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)

    def stop(name: str) -> None:
        if name == step:
            raise RuntimeError(f"stopped at {name}")

    destination = tmp_path / "restored"
    with pytest.raises(RuntimeError):
        GitCheckpointCarrier(on_step=stop).restore(str(ws), captured.checkpoint_ref, captured.policy_hash,
                                                   str(destination))
    assert _leftovers(tmp_path) == []
    if step == "after_restore_materialized":
        assert not destination.exists()
        GitCheckpointCarrier().restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert "tool.sh" in worktree_files(destination)
    with pytest.raises(CheckpointError) as caught:
        GitCheckpointCarrier().restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert caught.value.code == "restore_target_exists"
