"""Real SIGKILLs at the carrier's step names (spec-phase4 §8): a child process runs the
operation, announces the step and blocks; the parent kills its process group, then checks
what the §8 row says must hold — from a fresh process's point of view (the user's git)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from maka_ref._checkpoint import GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    maka_refs,
    needs_git,
    posix_only,
    rich_repo,
    user_state,
)

pytestmark = [needs_git, posix_only]

REPO_ROOT = Path(__file__).resolve().parents[3]

CHILD = textwrap.dedent("""
    import sys, time
    from maka_ref._checkpoint import GitCheckpointCarrier
    op, step, ws = sys.argv[1], sys.argv[2], sys.argv[3]
    def hold(name):
        if name == step:
            print("READY " + name, flush=True)
            time.sleep(300)
    carrier = GitCheckpointCarrier(on_step=hold)
    if op == "capture":
        carrier.capture(ws, sys.argv[4])
    elif op == "restore":
        carrier.restore(ws, sys.argv[4], carrier.policy_hash, sys.argv[5])
    elif op == "collect":
        carrier.collect(ws, sys.argv[4], [], grace_seconds=0)
    print("FINISHED", flush=True)
""")


def _kill_at(tmp_path: Path, *args: str) -> None:
    """Run the child until it announces its step, then SIGKILL its whole process group."""
    scratch = tmp_path / "child-tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, *args], stdout=subprocess.PIPE, env=env,
                             start_new_session=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode()
        assert line.strip() == f"READY {args[1]}", line
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def test_kill_after_objects_written_leaves_no_ref(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    state = user_state(ws)
    _kill_at(tmp_path, "capture", "after_checkpoint_objects_written", str(ws), IDENTITY)
    assert maka_refs(ws) == []
    assert user_state(ws) == state
    assert GitCheckpointCarrier().capture(str(ws), IDENTITY).checkpoint_ref in maka_refs(ws)


def test_kill_between_capture_and_fact_leaves_an_orphan_that_collect_removes(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    state = user_state(ws)
    _kill_at(tmp_path, "capture", "after_checkpoint_ref_created", str(ws), IDENTITY)
    orphans = maka_refs(ws)
    assert len(orphans) == 1 and user_state(ws) == state
    carrier = GitCheckpointCarrier()
    assert carrier.verify(str(ws), orphans[0], carrier.policy_hash).checkpoint_ref == orphans[0]
    assert carrier.collect(str(ws), IDENTITY, []).collected == ()  # younger than the grace period
    assert carrier.collect(str(ws), IDENTITY, [], grace_seconds=0).collected == (orphans[0],)
    assert maka_refs(ws) == [] and user_state(ws) == state


def test_kill_inside_restore_publishes_nothing_and_a_retry_succeeds(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    state = user_state(ws)
    destination = tmp_path / "restored"
    _kill_at(tmp_path, "restore", "after_restore_materialized", str(ws), captured.checkpoint_ref, str(destination))
    assert not destination.exists()
    staging = [name for name in os.listdir(tmp_path) if name.startswith(".restored.maka-restore-")]
    assert len(staging) == 1  # the §8 row: a staging directory anyone may remove
    assert user_state(ws) == state
    carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert (destination / "tool.sh").exists()


def test_kill_after_restore_published_leaves_a_complete_orphan_directory(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    destination = tmp_path / "restored"
    _kill_at(tmp_path, "restore", "after_restore_published", str(ws), captured.checkpoint_ref, str(destination))
    assert sorted(os.listdir(destination)) == sorted(
        [".gitignore", "docs", "link-to-app", "notes", "src", "staged.txt", "stash-me.txt", "tool.sh"])
    with pytest.raises(Exception) as caught:
        carrier.restore(str(ws), captured.checkpoint_ref, captured.policy_hash, str(destination))
    assert getattr(caught.value, "code", None) == "restore_target_exists"


def test_kill_inside_collect_deletes_only_orphans(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    for _ in range(3):
        carrier.capture(str(ws), IDENTITY)
    _kill_at(tmp_path, "collect", "after_checkpoint_ref_deleted", str(ws), IDENTITY)
    remaining = maka_refs(ws)
    assert len(remaining) == 2
    for ref in remaining:
        carrier.verify(str(ws), ref, carrier.policy_hash)
