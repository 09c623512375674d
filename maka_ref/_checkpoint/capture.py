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
from maka_ref._checkpoint.index_file import IndexFormatError, index_sizes, parse_index
from maka_ref._checkpoint.policy import CheckpointPolicy, policy_hash
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
    ).encode()


def _post_check(repository: Repository, git: Git, policy: CheckpointPolicy) -> tuple[int, int]:
    """§3.4 step 6 on the private index: returns (file count, total bytes).

    The staged paths are exactly the surveyed ones (``update-index`` was given the list), so
    their text was checked already; what staging alone decides is each entry's mode (a tracked
    file that became a repository in the meantime would be a gitlink) and size (Git measured
    the bytes it hashed)."""
    try:
        with open(git.scratch.index, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return 0, 0  # nothing was ever staged: an empty workspace
    try:
        summary = index_sizes(data, repository.hash_size)
    except IndexFormatError as exc:
        raise CheckpointError("git_failed", f"git wrote an index the carrier cannot read: {exc}",
                              {"subcommand": "update-index", "exitStatus": 0, "stderr": ""}) from None
    sizes = summary.sizes
    odd_modes = summary.modes - ALLOWED_MODES
    need_paths = odd_modes or 0 in sizes or max(sizes, default=0) > policy.max_file_bytes
    entries = parse_index(data, repository.hash_size).entries if need_paths else ()
    if odd_modes:
        entry = next(entry for entry in entries if entry.mode in odd_modes)
        text = path_text(entry.path)
        if entry.mode & 0o170000 == 0o160000:
            raise CheckpointError("submodules_unsupported", f"{text} became a gitlink during capture",
                                  {"reason": "gitlink", "path": text})
        raise CheckpointError("git_failed", f"{text} has mode {entry.mode:o} in the private index",
                              {"subcommand": "update-index", "exitStatus": 0, "stderr": ""})
    if 0 in sizes:  # empty, or smudged by Git's racy-clean rule: measure those
        root = os.fsencode(repository.workspace)
        for i in [i for i, size in enumerate(sizes) if size == 0]:
            try:
                info = os.lstat(os.path.join(root, entries[i].path))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                sizes[i] = info.st_size
    if len(sizes) > policy.max_files:
        raise CheckpointError("too_many_files", f"{len(sizes)} files exceed maxFiles {policy.max_files}",
                              {"limit": policy.max_files, "observed": len(sizes)})
    if max(sizes, default=0) > policy.max_file_bytes:
        check_limits(policy, [(entry.path, size) for entry, size in zip(entries, sizes)])  # names the file
    total = sum(sizes)
    if total > policy.max_total_bytes:
        raise CheckpointError("workspace_too_large", f"{total} bytes exceed maxTotalBytes",
                              {"limit": policy.max_total_bytes, "observed": total})
    return len(sizes), total


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
    # Stage exactly what the survey listed, in one process: ``update-index --add --remove``
    # skips an entry whose stat data still match (Git's own cache, as ``add`` does), re-hashes
    # a changed file, drops a vanished one and adds the untracked ones — ``add -A`` without its
    # second walk of the tree and without a second read and write of the index.
    if seen.excluded_tracked:
        git.run(["update-index", "--force-remove", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"".join(path + b"\0" for path in seen.excluded_tracked))
    paths = seen.tracked + [path for path, _ in seen.untracked]
    if paths:
        git.run(["update-index", "--add", "--remove", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"\0".join(paths) + b"\0")
    writing = git.start(["write-tree"], index=git.scratch.index)  # Git writes the tree while we check
    try:
        file_count, total_bytes = _post_check(repository, git, policy)
    except BaseException:
        writing.abandon()
        raise
    _, tree_out, _ = writing.wait()
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
