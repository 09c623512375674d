"""Capture: the workspace's files into a parentless commit under a Maka-owned ref, through a
private index (spec-phase4 §3.4).

Why this shape:

* **private index** (``GIT_INDEX_FILE`` in the scratch directory, seeded by the survey): the
  user's index, branch, ``HEAD``, stash and worktree are never written; the only writes are
  objects in the shared object database and the new ref;
* **parentless commit, fixed identity and date**: the same files, policy, identity and base
  give the same commit oid everywhere, and verification reads only the checkpoint's own
  objects, never the user's history (the base commit is a trailer);
* **create-only ref update** (zero old value): two captures can never overwrite each other,
  and an existing name is a clear ``checkpoint_ref_exists``;
* **post-check of the written index**: the survey looked before ``git add``; files can change
  in between, so what is actually in the private index is checked again (modes, paths,
  limits) before any tree or ref exists.

Step names for crash tests (``on_step``): ``after_checkpoint_objects_written`` (tree and commit
written, no ref) and ``after_checkpoint_ref_created`` (ref published; the caller's fact is not
committed yet — the orphan window of §4.1).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git
from maka_ref._checkpoint.index_file import IndexFormatError, parse_index
from maka_ref._checkpoint.policy import CheckpointPolicy, is_excluded, policy_hash
from maka_ref._checkpoint.repository import Repository
from maka_ref._checkpoint.survey import check_limits, path_text, survey

__all__ = ["ALLOWED_MODES", "COMMIT_TITLE", "CaptureResult", "capture_checkpoint", "commit_message"]

COMMIT_TITLE: Final = "maka checkpoint v1"
#: Regular, executable, symbolic link (§2.1): everything a checkpoint may hold.
ALLOWED_MODES: Final = frozenset({0o100644, 0o100755, 0o120000})


@dataclass(frozen=True, slots=True)
class CaptureResult:
    checkpoint_ref: str
    commit_oid: str
    tree_oid: str
    policy_hash: str
    base_commit_oid: str | None
    file_count: int
    total_bytes: int
    #: True when the private index started from a copy of the user's index (else empty).
    seeded_from_user_index: bool


def commit_message(policy_hash_value: str, workspace_identity: str, base_commit_oid: str | None) -> bytes:
    """The §3.4 step 8 message, byte for byte."""
    return (
        f"{COMMIT_TITLE}\n\nMaka-Checkpoint-Policy: {policy_hash_value}\n"
        f"Maka-Workspace-Identity: {workspace_identity}\nMaka-Base-Commit: {base_commit_oid or 'none'}\n"
    ).encode("utf-8")


def _post_check(repository: Repository, git: Git, policy: CheckpointPolicy) -> tuple[int, int]:
    """§3.4 step 6 on the private index: returns (file count, total bytes)."""
    try:
        with open(git.scratch.index, "rb") as handle:
            parsed = parse_index(handle.read(), repository.hash_size)
    except FileNotFoundError:
        return 0, 0  # nothing was ever added: an empty workspace
    except IndexFormatError as exc:
        raise CheckpointError("git_failed", f"git wrote an index the carrier cannot read: {exc}",
                              {"subcommand": "add", "exitStatus": 0, "stderr": ""}) from None
    root = os.fsencode(repository.workspace)
    sized: list[tuple[bytes, int]] = []
    for entry in parsed.entries:
        text = path_text(entry.path)
        if entry.mode not in ALLOWED_MODES:
            if entry.mode & 0o170000 == 0o160000:
                raise CheckpointError("submodules_unsupported", f"{text} became a gitlink during capture",
                                      {"reason": "gitlink", "path": text})
            raise CheckpointError("git_failed", f"{text} has mode {entry.mode:o} in the private index",
                                  {"subcommand": "add", "exitStatus": 0, "stderr": ""})
        if is_excluded(text, policy):
            raise CheckpointError("git_failed", f"{text} is excluded yet was added",
                                  {"subcommand": "add", "exitStatus": 0, "stderr": ""})
        size = entry.size
        if size == 0:  # empty, or smudged by Git's racy-clean rule: measure it
            try:
                info = os.lstat(os.path.join(root, entry.path))
                if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                    size = info.st_size
            except OSError:
                pass
        sized.append((entry.path, size))
    check_limits(policy, sized)
    return len(sized), sum(size for _, size in sized)


def capture_checkpoint(
    repository: Repository,
    git: Git,
    policy: CheckpointPolicy,
    *,
    workspace_identity: str,
    checkpoint_ref: str,
    on_step: Callable[[str], None] | None = None,
) -> CaptureResult:
    """Steps 3–9 of §3.4 (the caller located the repository, checked its steady state, and
    chose ``checkpoint_ref``)."""
    seen = survey(repository, git, policy)
    git.run(["add", "-A"], index=git.scratch.index)
    if seen.excluded_tracked:
        git.run(["update-index", "--force-remove", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"".join(path + b"\0" for path in seen.excluded_tracked))
    file_count, total_bytes = _post_check(repository, git, policy)
    _, tree_out, _ = git.run(["write-tree"], index=git.scratch.index)
    tree_oid = tree_out.decode("ascii").strip()
    hash_value = policy_hash(policy)
    message = commit_message(hash_value, workspace_identity, repository.head)
    _, commit_out, _ = git.run(["commit-tree", "--no-gpg-sign", "-F", "-", tree_oid], stdin=message)
    commit_oid = commit_out.decode("ascii").strip()
    if on_step is not None:
        on_step("after_checkpoint_objects_written")
    status, _, err = git.run(["update-ref", "--no-deref", checkpoint_ref, commit_oid, repository.zero_oid],
                             ok=(0, 1, 128))
    if status != 0:
        listed = git.run(["for-each-ref", "--format=%(refname)", checkpoint_ref])[1]
        if listed.strip():
            raise CheckpointError("checkpoint_ref_exists", f"{checkpoint_ref} already exists",
                                  {"checkpointRef": checkpoint_ref})
        raise git.failure(["update-ref"], status, err)
    if on_step is not None:
        on_step("after_checkpoint_ref_created")
    return CaptureResult(checkpoint_ref, commit_oid, tree_oid, hash_value, repository.head, file_count,
                         total_bytes, seen.seeded)
