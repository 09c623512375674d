"""Verify fails closed on every kind of bad artifact (spec-phase4 §3.5, §4.2; scenarios
22–24). The corruptions are made with the user's ``git`` and ``zlib``, never with the carrier."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pytest

from maka_ref._checkpoint import (
    DEFAULT_POLICY_HASH,
    CheckpointError,
    CheckpointPolicy,
    GitCheckpointCarrier,
    policy_hash,
)
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    OTHER_IDENTITY,
    git,
    needs_git,
    posix_only,
    rich_repo,
    user_env,
    user_state,
)

pytestmark = [needs_git, posix_only]
UUID = IDENTITY.split(":")[-1]
REF = f"refs/maka/checkpoints/{UUID}/1767225600000-{'c' * 32}"


def _code(call: object, *args: object) -> CheckpointError:
    with pytest.raises(CheckpointError) as caught:
        call(*args)  # type: ignore[operator]
    return caught.value


def _loose(ws: Path, oid: str) -> Path:
    path = ws / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.exists(), "the test needs a loose object"
    path.chmod(0o644)
    return path


def _checkpoint_commit(ws: Path, tree: str, policy_hash_value: str, identity: str = IDENTITY) -> str:
    """A commit in the exact §3.4 layout, built with the user's git (for policy violations)."""
    message = (f"maka checkpoint v1\n\nMaka-Checkpoint-Policy: {policy_hash_value}\n"
               f"Maka-Workspace-Identity: {identity}\nMaka-Base-Commit: none\n")
    env_date = "946684800 +0000"
    env = {**user_env(), "GIT_AUTHOR_NAME": "Maka Checkpoint", "GIT_AUTHOR_EMAIL": "checkpoint@maka.invalid",
           "GIT_COMMITTER_NAME": "Maka Checkpoint", "GIT_COMMITTER_EMAIL": "checkpoint@maka.invalid",
           "GIT_AUTHOR_DATE": env_date, "GIT_COMMITTER_DATE": env_date}
    done = subprocess.run(["git", "commit-tree", "-F", "-", tree], cwd=ws, env=env, input=message.encode(),
                          capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_missing_artifact_fails_closed_for_verify_compare_and_restore(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    captured = carrier.capture(str(ws), IDENTITY)
    git(ws, "update-ref", "-d", captured.checkpoint_ref)
    for call, extra in ((carrier.verify, ()), (carrier.compare, ()), (carrier.restore, (str(tmp_path / "r"),))):
        error = _code(call, str(ws), captured.checkpoint_ref, captured.policy_hash, *extra)
        assert error.code == "checkpoint_artifact_missing"
    # §3.5 order: the artifact is looked for before any policy is compared
    other = policy_hash(CheckpointPolicy(max_files=7))
    assert _code(carrier.verify, str(ws), captured.checkpoint_ref, other).code == "checkpoint_artifact_missing"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("ref", ["refs/heads/main", f"refs/maka/checkpoints/{UUID}/123-abc", "", "HEAD"])
def test_invalid_ref_text(tmp_path: Path, ref: str) -> None:
    ws = rich_repo(tmp_path)
    assert _code(GitCheckpointCarrier().verify, str(ws), ref, DEFAULT_POLICY_HASH).code == "invalid_checkpoint_ref"


def test_ref_to_a_tree_or_to_a_user_commit(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    carrier = GitCheckpointCarrier()
    git(ws, "update-ref", REF, git(ws, "rev-parse", "HEAD^{tree}").strip())
    error = _code(carrier.verify, str(ws), REF, DEFAULT_POLICY_HASH)
    assert (error.code, error.details["reason"]) == ("checkpoint_corrupt", "not_a_commit")
    git(ws, "update-ref", REF, git(ws, "rev-parse", "HEAD").strip())
    error = _code(carrier.verify, str(ws), REF, DEFAULT_POLICY_HASH)
    assert (error.code, error.details["reason"]) == ("checkpoint_corrupt", "commit_malformed")


def test_commit_of_another_identity_under_this_ref(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), OTHER_IDENTITY)
    git(ws, "update-ref", REF, captured.commit_oid)
    error = _code(GitCheckpointCarrier().verify, str(ws), REF, DEFAULT_POLICY_HASH)
    assert (error.code, error.details["reason"]) == ("checkpoint_corrupt", "commit_malformed")


def test_policy_mismatch(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    other = CheckpointPolicy(max_files=5000)
    error = _code(GitCheckpointCarrier().verify, str(ws), captured.checkpoint_ref, policy_hash(other))
    assert error.code == "checkpoint_policy_mismatch"
    error = _code(GitCheckpointCarrier(policy=other).verify, str(ws), captured.checkpoint_ref, policy_hash(other))
    assert error.code == "checkpoint_policy_mismatch" and error.details["found"] == DEFAULT_POLICY_HASH


def test_deleted_blob(tmp_path: Path) -> None:
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    oid = git(ws, "rev-parse", f"{captured.commit_oid}:notes/untracked.txt").strip()
    _loose(ws, oid).unlink()
    state = user_state(ws)
    error = _code(GitCheckpointCarrier().verify, str(ws), captured.checkpoint_ref, captured.policy_hash)
    assert (error.code, error.details["reason"]) == ("checkpoint_corrupt", "object_missing")
    assert user_state(ws) == state


@pytest.mark.parametrize("target", ["blob", "tree"])
def test_object_rewritten_with_other_valid_bytes(tmp_path: Path, target: str) -> None:
    """A loose object replaced by a well-formed object of other content: Git reads it without
    complaint; only recomputing the id catches it."""
    ws = rich_repo(tmp_path)
    captured = GitCheckpointCarrier().capture(str(ws), IDENTITY)
    spec = "notes/untracked.txt" if target == "blob" else "notes"
    oid = git(ws, "rev-parse", f"{captured.commit_oid}:{spec}").strip()
    original = zlib.decompress(_loose(ws, oid).read_bytes())
    header, _, body = original.partition(b"\0")
    forged = body.replace(b"untracked", b"UNTRACKED") if target == "blob" else body[:-1] + bytes([body[-1] ^ 1])
    assert forged != body
    _loose(ws, oid).write_bytes(zlib.compress(header.split(b" ")[0] + b" %d\0" % len(forged) + forged))
    error = _code(GitCheckpointCarrier().verify, str(ws), captured.checkpoint_ref, captured.policy_hash)
    assert error.code == "checkpoint_corrupt"
    assert error.details["reason"] in ("object_hash_mismatch", "object_missing")
    if target == "blob":
        assert error.details["reason"] == "object_hash_mismatch" and error.details["oid"] == oid


def test_tree_that_breaks_the_policy(tmp_path: Path) -> None:
    """§2.3: verify recomputes limits and exclusions from the stored tree (an artifact made by
    a buggy or racing capture is refused)."""
    ws = rich_repo(tmp_path)
    blob = git(ws, "hash-object", "-w", "--stdin", input=b"x" * 100).strip()
    head = git(ws, "rev-parse", "HEAD").strip()
    carrier = GitCheckpointCarrier()
    cases = {
        "excluded_path": f"100644 blob {blob}\truntime.sqlite\n",
        "mode": f"160000 commit {head}\tvendor\n",
    }
    for reason, listing in cases.items():
        tree = git(ws, "mktree", input=listing.encode()).strip()
        git(ws, "update-ref", REF, _checkpoint_commit(ws, tree, DEFAULT_POLICY_HASH))
        error = _code(carrier.verify, str(ws), REF, DEFAULT_POLICY_HASH)
        assert (error.code, error.details["reason"]) == ("checkpoint_policy_violation", reason)
    small = CheckpointPolicy(max_file_bytes=99)
    tree = git(ws, "mktree", input=f"100644 blob {blob}\tbig.txt\n".encode()).strip()
    git(ws, "update-ref", REF, _checkpoint_commit(ws, tree, policy_hash(small)))
    error = _code(GitCheckpointCarrier(policy=small).verify, str(ws), REF, policy_hash(small))
    assert (error.code, error.details["reason"], error.details["path"]) == (
        "checkpoint_policy_violation", "file_too_large", "big.txt")
