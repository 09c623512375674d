"""Which repository a workspace is, and whether its state allows a capture (spec-phase4 §3.3
checks 1 and 4–10).

Why separate from the survey of files: verify, compare, restore, list and collect need only to
*locate* the repository (a restore must work in the middle of the user's merge), while capture
and eligibility also need the worktree to be in a steady state (no merge, rebase, cherry-pick,
revert or sequencer in progress, no submodules). :func:`locate_repository` answers the first,
:func:`check_steady_state` the second. After :func:`locate_repository` the :class:`Git` object
carries explicit ``--git-dir``/``--work-tree`` values, so no later call rediscovers a different
repository if the user moves directories around mid-operation.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git

__all__ = [
    "HASH_SIZES",
    "IN_PROGRESS_MARKERS",
    "Repository",
    "check_steady_state",
    "check_workspace_path",
    "locate_repository",
]

#: Object format → raw object id length.
HASH_SIZES: Final = {"sha1": 20, "sha256": 32}

#: Files or directories of a worktree's Git directory that mean "an operation is in progress"
#: (§3.3 check 9), in the order they are checked, with ``details.operation``.
IN_PROGRESS_MARKERS: Final = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("CHERRY_PICK_HEAD", "cherry_pick"),
    ("REVERT_HEAD", "revert"),
    ("sequencer", "sequencer"),
)


@dataclass(frozen=True, slots=True)
class Repository:
    """A located repository: every path absolute and ``realpath``-ed."""

    workspace: str
    #: This worktree's own Git directory (its index, HEAD and in-progress markers).
    git_dir: str
    #: The directory shared by all worktrees (objects, refs, ``info/``).
    common_dir: str
    object_format: str
    head: str | None

    @property
    def hash_size(self) -> int:
        return HASH_SIZES[self.object_format]

    @property
    def zero_oid(self) -> str:
        return "0" * (2 * self.hash_size)


def _lines(out: bytes) -> list[str]:
    return out.decode("utf-8", "surrogateescape").splitlines()


def check_workspace_path(workspace: str) -> None:
    """Check 1 of §3.3 (before ``git`` is even looked for)."""
    try:
        info = os.stat(workspace)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise CheckpointError("workspace_not_found", f"workspace {workspace} does not exist") from None
        raise CheckpointError("workspace_not_found", f"workspace {workspace} cannot be read: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise CheckpointError("workspace_not_a_directory", f"workspace {workspace} is not a directory")


def locate_repository(workspace: str, git: Git) -> Repository:
    """Checks 1 and 4–8 of §3.3; on success ``git`` is bound to the repository."""
    check_workspace_path(workspace)
    real = os.path.realpath(os.path.abspath(workspace))
    git.cwd, git.git_dir, git.work_tree = real, None, None
    # One call: ``--show-toplevel`` fails (128) in a bare repository or a Git directory after
    # the first five answers are printed; ``--verify -q HEAD^{commit}`` fails (1) on an unborn
    # HEAD after the first six.
    args = ["rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--absolute-git-dir", "--git-common-dir",
            "--show-object-format", "--show-toplevel", "--verify", "-q", "HEAD^{commit}"]
    status, out, err = git.run(args, ok=(0, 1, 128))
    lines = _lines(out)
    if len(lines) >= 2 and "true" in lines[:2]:
        raise CheckpointError("bare_repository", "the workspace is a bare repository or a Git directory")
    if status == 128 or len(lines) not in (6, 7) or (status == 1) != (len(lines) == 6):
        if status != 0:
            raise git.failure(args, status, err)
        raise CheckpointError("git_failed", "git rev-parse gave an unexpected answer",
                              {"subcommand": "rev-parse", "exitStatus": status, "stderr": ""})
    _, _, git_dir, common_dir, object_format, top = lines[:6]
    head = lines[6] if len(lines) == 7 else None
    toplevel = os.path.realpath(top)
    if toplevel != real:
        raise CheckpointError("workspace_not_worktree_root", "the workspace is not the top level of its Git worktree",
                              {"toplevel": toplevel})
    if object_format not in HASH_SIZES:
        raise CheckpointError("object_format_unsupported", f"object format {object_format!r} is not sha1 or sha256",
                              {"objectFormat": object_format})
    git_dir_real = os.path.realpath(git_dir)
    common_real = os.path.realpath(os.path.join(real, common_dir))
    git.git_dir, git.work_tree = git_dir_real, real
    return Repository(real, git_dir_real, common_real, object_format, head)


def check_steady_state(repository: Repository) -> None:
    """Checks 9–10 of §3.3: no operation in progress, no ``.gitmodules``."""
    for name, operation in IN_PROGRESS_MARKERS:
        if os.path.lexists(os.path.join(repository.git_dir, name)):
            if name == "rebase-apply" and os.path.lexists(os.path.join(repository.git_dir, name, "applying")):
                operation = "am"
            raise CheckpointError("repository_operation_in_progress", f"a {operation} is in progress in this worktree",
                                  {"operation": operation})
    if os.path.lexists(os.path.join(repository.workspace, ".gitmodules")):
        raise CheckpointError("submodules_unsupported", "the workspace declares submodules (.gitmodules)",
                              {"reason": "gitmodules"})
