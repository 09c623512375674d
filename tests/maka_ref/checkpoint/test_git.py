"""The hermetic git profile (spec-phase4 §3.2): no user program runs, nothing from the
caller's environment or the user's global configuration leaks in, a hung git is killed with
its whole process group, and failures are codes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from maka_ref._checkpoint import CheckpointError, GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    GIT,
    IDENTITY,
    git,
    git_dir,
    maka_refs,
    needs_git,
    posix_only,
    rich_repo,
    user_state,
    write,
)

pytestmark = [needs_git, posix_only]

HOOKS = ("post-index-change", "reference-transaction", "pre-commit", "post-checkout", "post-commit")


def _spy(path: Path, marker: Path) -> None:
    write(path, f"#!/bin/sh\necho \"$0 $*\" >> {marker}\n", mode=0o755)


def test_no_user_hook_fsmonitor_or_hooks_path_program_runs(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    marker = tmp_path / "ran.txt"
    for name in HOOKS:
        _spy(git_dir(ws) / "hooks" / name, marker)
    _spy(tmp_path / "fsmonitor.sh", marker)
    git(ws, "config", "core.fsmonitor", str(tmp_path / "fsmonitor.sh"))
    other_hooks = tmp_path / "other-hooks"
    for name in HOOKS:
        _spy(other_hooks / name, marker)
    git(ws, "config", "core.hooksPath", str(other_hooks))
    assert not marker.exists()
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    carrier.verify(str(ws), captured.checkpoint_ref, captured.policy_hash)
    carrier.compare(str(ws), captured.checkpoint_ref, captured.policy_hash)
    carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(tmp_path / "restored"))
    carrier.collect(str(ws), IDENTITY, [], grace_seconds=0)
    assert not marker.exists(), marker.read_text()
    git(ws, "update-ref", "refs/heads/probe", "HEAD")  # the spies do run for the user's own git
    assert "reference-transaction" in marker.read_text()


def test_callers_environment_and_global_config_do_not_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A global excludes file ignoring ``*.txt``, a global pre-commit hook path, and GIT_DIR /
    GIT_INDEX_FILE / GIT_WORK_TREE pointing elsewhere change nothing."""
    ws = rich_repo(tmp_path)
    home = tmp_path / "home"
    write(home / "global-ignore", "*.txt\n*.md\n")
    write(home / ".gitconfig", f"[core]\n\texcludesFile = {home / 'global-ignore'}\n[user]\n\tname = Global\n")
    decoy = tmp_path / "decoy"
    git(tmp_path, "init", "-q", str(decoy))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "decoy-index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.excludesFile'='/dev/null'")
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    monkeypatch.undo()
    paths = git(ws, "ls-tree", "-r", "--name-only", captured.tree_oid).split()
    assert "notes/untracked.txt" in paths and "docs/readme.md" in paths
    assert not (tmp_path / "decoy-index").exists()
    assert git(decoy, "for-each-ref") == ""


def _fake_git(directory: Path, body: str) -> str:
    write(directory / "git", "#!/bin/sh\n" + body, mode=0o755)
    return str(directory)


def test_a_hung_git_is_killed_with_its_children(tmp_path: Path) -> None:
    """§3.2 item 1: the timeout kills the process group (a child git started is not leaked)."""
    ws = rich_repo(tmp_path)
    tag = f"31{os.getpid() % 1000:03d}7"
    hung = _fake_git(tmp_path / "hung", f"""case "$1" in
  version) echo "git version 2.39.0" ;;
  *) sleep {tag} & sleep {tag} ;;
esac
""")
    state = user_state(ws)
    started = time.monotonic()
    with pytest.raises(CheckpointError) as caught:
        GitCheckpointCarrier(git_search_path=hung, timeout=1.0).capture(str(ws), IDENTITY)
    assert caught.value.code == "git_timeout" and caught.value.details["timeoutSeconds"] == 1
    assert time.monotonic() - started < 30
    time.sleep(0.2)
    survivors = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] and tag in " ".join(p.info["cmdline"])]
    assert survivors == []
    assert user_state(ws) == state


def test_a_failing_git_command_is_a_code_and_leaves_no_ref(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    broken = _fake_git(tmp_path / "broken", f"""for arg in "$@"; do
  if [ "$arg" = write-tree ]; then echo "fatal: disk on fire" >&2; exit 3; fi
done
exec "{GIT}" "$@"
""")
    state = user_state(ws)
    with pytest.raises(CheckpointError) as caught:
        GitCheckpointCarrier(git_search_path=broken).capture(str(ws), IDENTITY)
    error = caught.value
    assert error.code == "git_failed" and not error.ineligible
    assert (error.details["subcommand"], error.details["exitStatus"]) == ("write-tree", 3)
    assert "disk on fire" in str(error.details["stderr"])
    assert error.as_json()["code"] == "git_failed"
    assert maka_refs(ws) == [] and user_state(ws) == state


def test_scratch_directories_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = rich_repo(tmp_path)
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    carrier.verify(str(ws), captured.checkpoint_ref, captured.policy_hash)
    with pytest.raises(CheckpointError):
        carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(ws / "inside"))
    assert list(scratch.iterdir()) == []
