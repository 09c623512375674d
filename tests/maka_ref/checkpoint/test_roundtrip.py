"""Capture → verify → compare → restore on real repositories, with the user's state checked
byte-identical around every operation (spec-phase4 §2.2, §3.4–§3.9; scenarios 17–21, 27).

Expected trees and blobs come from the user's ``git`` (``hash-object``, ``ls-tree``), never
from the carrier."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from maka_ref._checkpoint import DEFAULT_POLICY_HASH, GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    git,
    init_repo,
    maka_refs,
    needs_git,
    posix_only,
    rich_repo,
    user_state,
    worktree_files,
    write,
)

pytestmark = [needs_git, posix_only]

#: What the checkpoint of ``rich_repo`` must hold (§2.2): path → (mode, content or link target).
EXPECTED = {
    ".gitignore": ("100644", b"*.log\nbuild/\n"),
    "docs/readme.md": ("100644", b"# readme\n"),
    "link-to-app": ("120000", b"src/app.py"),
    "notes/untracked.txt": ("100644", b"untracked\n"),
    "src/app.py": ("100644", b"print('v2, uncommitted')\n"),
    "staged.txt": ("100644", b"staged but not committed\n"),
    "stash-me.txt": ("100644", b"base\n"),
    "tool.sh": ("100755", b"#!/bin/sh\necho hi\n"),
}


def _tree(ws: Path, tree: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for record in git(ws, "ls-tree", "-r", "-z", tree).split("\0")[:-1]:
        meta, path = record.split("\t", 1)
        mode, _, oid = meta.split()
        rows[path] = (mode, oid)
    return rows


def _blob(ws: Path, data: bytes) -> str:
    return git(ws, "hash-object", "--stdin", input=data).strip()


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_round_trip_and_the_user_state_is_untouched_by_every_operation(tmp_path: Path, object_format: str) -> None:
    ws = rich_repo(tmp_path, object_format=object_format)
    head = git(ws, "rev-parse", "HEAD").strip()
    carrier = GitCheckpointCarrier()
    state = user_state(ws)

    assert carrier.eligibility(str(ws)).eligible
    assert user_state(ws) == state

    captured = carrier.capture(str(ws), IDENTITY)
    assert user_state(ws) == state
    assert maka_refs(ws) == [captured.checkpoint_ref]
    assert captured.checkpoint_ref.startswith("refs/maka/checkpoints/123e4567-e89b-42d3-a456-426614174000/")
    assert captured.policy_hash == DEFAULT_POLICY_HASH and captured.base_commit_oid == head
    tree = _tree(ws, captured.tree_oid)
    assert tree == {path: (mode, _blob(ws, data)) for path, (mode, data) in EXPECTED.items()}
    assert captured.file_count == len(EXPECTED)
    assert captured.total_bytes == sum(len(data) for _, data in EXPECTED.values())

    verified = carrier.verify(str(ws), captured.checkpoint_ref, captured.policy_hash)
    assert user_state(ws) == state
    assert (verified.commit_oid, verified.tree_oid) == (captured.commit_oid, captured.tree_oid)
    assert verified.workspace_identity == IDENTITY and verified.base_commit_oid == head

    drift = carrier.compare(str(ws), captured.checkpoint_ref, captured.policy_hash)
    assert user_state(ws) == state
    assert drift.clean and not drift.changes

    destination = tmp_path / "restored"
    restored = carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert user_state(ws) == state
    assert restored.path == str(destination)
    files = worktree_files(destination)
    assert set(files) == set(EXPECTED)
    for path, (mode, data) in EXPECTED.items():
        kind, perms, content = files[path]
        if mode == "120000":
            assert (kind, content.encode()) == ("link", data)
        else:
            assert kind == "file" and content == hashlib.sha256(data).hexdigest()
            assert bool(perms & 0o100) == (mode == "100755")
    assert not (destination / ".git").exists() and not (destination / ".maka-workspace.json").exists()

    assert [item.checkpoint_ref for item in carrier.list(str(ws))] == [captured.checkpoint_ref]
    assert user_state(ws) == state
    carrier.collect(str(ws), IDENTITY, [captured.checkpoint_ref], grace_seconds=0)
    assert user_state(ws) == state
    assert maka_refs(ws) == [captured.checkpoint_ref]


def test_commit_object_is_the_section_3_4_layout(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    raw = git(ws, "cat-file", "commit", captured.commit_oid)
    assert raw == (
        f"tree {captured.tree_oid}\n"
        "author Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
        "committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
        "\nmaka checkpoint v1\n\n"
        f"Maka-Checkpoint-Policy: {DEFAULT_POLICY_HASH}\n"
        f"Maka-Workspace-Identity: {IDENTITY}\n"
        f"Maka-Base-Commit: {git(ws, 'rev-parse', 'HEAD').strip()}\n"
    )


def test_same_state_gives_the_same_commit_under_two_refs(tmp_path: Path) -> None:
    """§3.4 step 8: reproducible objects; §3.4 step 9: refs never overwrite each other."""
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    first, second = carrier.capture(str(ws), IDENTITY), carrier.capture(str(ws), IDENTITY)
    assert first.checkpoint_ref != second.checkpoint_ref
    assert first.commit_oid == second.commit_oid


def test_name_collision_is_refused_without_overwriting(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    pinned = GitCheckpointCarrier(clock_ms=lambda: 1767225600000, token=lambda: "ab" * 16)
    first = pinned.capture(str(ws), IDENTITY)
    write(ws / "notes" / "untracked.txt", "changed\n")
    with pytest.raises(Exception) as caught:
        pinned.capture(str(ws), IDENTITY)
    assert getattr(caught.value, "code", None) == "checkpoint_ref_exists"
    assert git(ws, "rev-parse", first.checkpoint_ref).strip() == first.commit_oid


def test_assume_unchanged_edit_is_captured_and_the_flag_stays_on_the_users_index(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    git(ws, "update-index", "--assume-unchanged", "docs/readme.md")
    write(ws / "docs" / "readme.md", "# edited while assumed unchanged\n")
    state = user_state(ws)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    assert user_state(ws) == state
    assert _tree(ws, captured.tree_oid)["docs/readme.md"][1] == _blob(ws, b"# edited while assumed unchanged\n")
    assert git(ws, "ls-files", "-v", "docs/readme.md").startswith("h ")  # still flagged for the user


def test_tracked_runtime_file_is_excluded_and_force_added_ignored_file_is_tracked(tmp_path: Path) -> None:
    """§2.1: excludedPaths win over tracking; ignore rules do not apply to tracked files."""
    ws = rich_repo(tmp_path)
    git(ws, "add", "-f", "runtime.sqlite", "debug.log")
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    tree = _tree(ws, captured.tree_oid)
    assert "runtime.sqlite" not in tree
    assert tree["debug.log"][1] == _blob(ws, b"ignored\n")


def test_unborn_head_and_empty_workspace(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "fresh")
    carrier = GitCheckpointCarrier()
    empty = carrier.capture(str(ws), IDENTITY)
    assert empty.base_commit_oid is None and empty.file_count == 0
    assert empty.tree_oid == git(ws, "hash-object", "-t", "tree", "--stdin", input=b"").strip()
    assert "Maka-Base-Commit: none\n" in git(ws, "cat-file", "commit", empty.commit_oid)
    write(ws / "first.txt", "first\n")
    state = user_state(ws)
    captured = carrier.capture(str(ws), IDENTITY)
    assert user_state(ws) == state and state["index"] is None  # the user still has no index
    assert _tree(ws, captured.tree_oid) == {"first.txt": ("100644", _blob(ws, b"first\n"))}
    carrier.verify(str(ws), captured.checkpoint_ref, captured.policy_hash)


def test_linked_worktree_captures_its_own_files_into_shared_refs(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    linked = tmp_path / "linked"
    git(ws, "worktree", "add", "-q", "--detach", str(linked))
    write(linked / "only-here.txt", "linked\n")
    state_main, state_linked = user_state(ws), user_state(linked)
    captured = GitCheckpointCarrier().capture(str(linked), IDENTITY)
    assert user_state(ws) == state_main and user_state(linked) == state_linked
    tree = _tree(ws, captured.tree_oid)
    assert "only-here.txt" in tree and "notes/untracked.txt" not in tree
    assert maka_refs(ws) == [captured.checkpoint_ref]  # refs are shared with the main worktree


def test_compare_reports_each_drift_kind_and_writes_no_object(tmp_path: Path) -> None:
    """§3.7 / scenario 27."""
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    write(ws / "src" / "app.py", "print('drifted')\n")  # modified
    write(ws / "new-file.txt", "new\n")  # added
    (ws / "staged.txt").unlink()  # deleted
    os.chmod(ws / "docs" / "readme.md", 0o755)  # mode_changed
    (ws / "notes" / "untracked.txt").unlink()
    os.symlink("docs/readme.md", ws / "notes" / "untracked.txt")  # type_changed
    write(ws / "more.log", "still ignored\n")  # ignored: not drift
    write(ws / "runtime.sqlite", b"store changed")  # excluded: not drift
    objects = sorted(p.name for p in (ws / ".git" / "objects").rglob("*") if p.is_file())
    state = user_state(ws)
    drift = carrier.compare(str(ws), captured.checkpoint_ref, captured.policy_hash)
    assert user_state(ws) == state
    assert sorted(p.name for p in (ws / ".git" / "objects").rglob("*") if p.is_file()) == objects
    assert not drift.clean
    assert [(c.path, c.kind) for c in drift.changes] == [
        ("docs/readme.md", "mode_changed"),
        ("new-file.txt", "added"),
        ("notes/untracked.txt", "type_changed"),
        ("src/app.py", "modified"),
        ("staged.txt", "deleted"),
    ]
    assert drift.counts == {"modified": 1, "added": 1, "deleted": 1, "type_changed": 1, "mode_changed": 1}
