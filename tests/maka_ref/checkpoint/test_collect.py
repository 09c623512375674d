"""Listing and orphan collection (spec-phase4 §3.8, §4.1; scenario 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    OTHER_IDENTITY,
    git,
    maka_refs,
    needs_git,
    posix_only,
    rich_repo,
)

pytestmark = [needs_git, posix_only]

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms
UUID = IDENTITY.split(":")[-1]


def _at(ms: int, token: str) -> GitCheckpointCarrier:
    return GitCheckpointCarrier(clock_ms=lambda: ms, token=lambda: token * 32)


def test_only_old_orphans_of_the_given_identity_are_collected(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    live = _at(NOW - 3_600_000, "a").capture(str(ws), IDENTITY).checkpoint_ref
    old_orphan = _at(NOW - 3_600_000, "b").capture(str(ws), IDENTITY).checkpoint_ref
    young_orphan = _at(NOW - 60_000, "c").capture(str(ws), IDENTITY).checkpoint_ref
    other_workspace = _at(NOW - 3_600_000, "d").capture(str(ws), OTHER_IDENTITY).checkpoint_ref
    malformed = f"refs/maka/checkpoints/{UUID}/not-a-checkpoint-id"
    git(ws, "update-ref", malformed, git(ws, "rev-parse", "HEAD").strip())

    listed = GitCheckpointCarrier().list(str(ws), IDENTITY)
    assert [item.checkpoint_ref for item in listed] == sorted([live, old_orphan, young_orphan, malformed])
    assert {item.checkpoint_ref: item.malformed for item in listed}[malformed] is True
    assert {item.checkpoint_ref: item.created_at_ms for item in listed}[live] == NOW - 3_600_000
    assert len(GitCheckpointCarrier().list(str(ws))) == 5

    result = GitCheckpointCarrier().collect(str(ws), IDENTITY, [live], grace_seconds=600, now_ms=NOW)
    assert result.collected == (old_orphan,)
    assert set(result.kept) == {live, young_orphan, malformed}
    assert sorted(maka_refs(ws)) == sorted([live, young_orphan, other_workspace, malformed])


def test_a_ref_that_moves_during_collection_is_kept(tmp_path: Path) -> None:
    """Compare-and-swap: collection deletes a ref only at the value it listed."""
    ws = rich_repo(tmp_path)
    first = _at(NOW - 3_600_000, "1").capture(str(ws), IDENTITY).checkpoint_ref
    second = _at(NOW - 3_600_000, "2").capture(str(ws), IDENTITY).checkpoint_ref
    head = git(ws, "rev-parse", "HEAD").strip()

    def move_the_next(step: str) -> None:
        assert step == "after_checkpoint_ref_deleted"
        git(ws, "update-ref", second, head)  # someone re-points it between list and delete

    result = GitCheckpointCarrier(on_step=move_the_next).collect(str(ws), IDENTITY, [], grace_seconds=0, now_ms=NOW)
    assert result.collected == (first,) and result.kept == (second,)
    assert git(ws, "rev-parse", second).strip() == head


def test_bad_identity_is_refused(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    for identity in ("workspace:v1:not-a-uuid", "123e4567-e89b-42d3-a456-426614174000", "workspace:v2:" + UUID):
        with pytest.raises(CheckpointError) as caught:
            GitCheckpointCarrier().collect(str(ws), identity, [])
        assert caught.value.code == "invalid_workspace_identity"
        with pytest.raises(CheckpointError):
            GitCheckpointCarrier().capture(str(ws), identity)
    assert maka_refs(ws) == []
