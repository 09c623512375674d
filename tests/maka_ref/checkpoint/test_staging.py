"""Staging edge cases (spec-phase4 §2.2, §3.4 step 5): the capture stages exactly the
surveyed paths with ``update-index``, which must give the same tree as the user's own
``git add -A`` would — checked against a plain ``git add -A && git write-tree`` on a copy of
the files (computed by Git alone)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from maka_ref._checkpoint import GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    git,
    init_repo,
    needs_git,
    plain_tree_of,
    posix_only,
    user_state,
    write,
)

pytestmark = [needs_git, posix_only]


def _base(tmp_path: Path) -> Path:
    ws = init_repo(tmp_path / "ws")
    write(ws / "a" / "file.txt", "a file\n")
    write(ws / "b.txt", "b\n")
    write(ws / "c" / "d.txt", "d\n")
    write(ws / "e.txt", "e\n")
    write(ws / "x.sh", "#!/bin/sh\n", mode=0o755)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    return ws


def _same_as_plain(ws: Path, tmp_path: Path) -> None:
    state = user_state(ws)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    assert user_state(ws) == state
    assert captured.tree_oid == plain_tree_of(ws, tmp_path)


def test_file_replaced_by_a_directory_and_directory_by_a_file(tmp_path: Path) -> None:
    ws = _base(tmp_path)
    (ws / "b.txt").unlink()
    write(ws / "b.txt" / "inside.txt", "now a directory\n")
    shutil.rmtree(ws / "c")
    write(ws / "c", "now a file\n")
    _same_as_plain(ws, tmp_path)


def test_type_and_mode_changes(tmp_path: Path) -> None:
    ws = _base(tmp_path)
    (ws / "e.txt").unlink()
    os.symlink("a/file.txt", ws / "e.txt")
    os.chmod(ws / "x.sh", 0o644)
    os.chmod(ws / "b.txt", 0o755)
    _same_as_plain(ws, tmp_path)


def test_unmerged_entries_without_an_operation_in_progress(tmp_path: Path) -> None:
    """A conflicted ``stash pop`` leaves stages 1-3 and no MERGE_HEAD: the worktree bytes
    (conflict markers included) are captured."""
    ws = _base(tmp_path)
    write(ws / "b.txt", "stashed\n")
    git(ws, "stash", "-q")
    write(ws / "b.txt", "committed meanwhile\n")
    git(ws, "commit", "-q", "-am", "meanwhile")
    git(ws, "stash", "pop", check=False)
    assert "<<<<<<<" in (ws / "b.txt").read_text()
    assert git(ws, "ls-files", "-u")
    _same_as_plain(ws, tmp_path)


def test_intent_to_add_and_staged_then_deleted(tmp_path: Path) -> None:
    ws = _base(tmp_path)
    write(ws / "later.txt", "intent\n")
    git(ws, "add", "-N", "later.txt")
    write(ws / "staged-gone.txt", "staged\n")
    git(ws, "add", "staged-gone.txt")
    (ws / "staged-gone.txt").unlink()
    write(ws / "a" / "file.txt", "changed after staging\n")
    _same_as_plain(ws, tmp_path)


@pytest.mark.parametrize("name", ["tab\tname.txt", "new\nline.txt", "space .txt", "ünïcode.txt", "-dash.txt"])
def test_unusual_untracked_names(tmp_path: Path, name: str) -> None:
    ws = _base(tmp_path)
    write(ws / "sub" / name, "odd name\n")
    _same_as_plain(ws, tmp_path)
