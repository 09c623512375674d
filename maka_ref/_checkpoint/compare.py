"""Compare the workspace with a checkpoint: the drift observation resume needs (spec-phase4
§3.7, §6.2 (h)).

Why it never hashes into the object database: resume's checks are reads, and reading never
writes. So compare does not ``git add``; it loads the checkpoint tree into a private index
(merged over a copy of the user's index, ``read-tree -m``, so unchanged files keep their stat
data and are not re-read), refreshes it (``update-index --refresh`` compares file bytes with
the blobs without storing anything), and reads the differences with ``diff-files`` (changed,
deleted, type or mode changed) and ``ls-files --others`` (added — under the same ignore rules
and exclusions as capture, so an ignored build output is never "drift").

It is an observation: ``clean: False`` is not an error, and the carrier decides nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git
from maka_ref._checkpoint.index_file import IndexFormatError, parse_index
from maka_ref._checkpoint.repository import Repository
from maka_ref._checkpoint.restore import _file_oid
from maka_ref._checkpoint.survey import copy_user_index
from maka_ref._checkpoint.verify import VerifiedCheckpoint

__all__ = ["DRIFT_KINDS", "MAX_CHANGES", "Change", "Drift", "compare_workspace"]

#: spec-phase4 §3.7 / §11.3, closed.
DRIFT_KINDS: Final = ("modified", "added", "deleted", "type_changed", "mode_changed")
MAX_CHANGES: Final = 1000


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    kind: str


@dataclass(frozen=True, slots=True)
class Drift:
    clean: bool
    counts: dict[str, int]
    changes: tuple[Change, ...]
    truncated: bool

    def as_json(self) -> dict[str, object]:
        return {
            "clean": self.clean,
            "counts": dict(self.counts),
            "changes": [{"path": change.path, "kind": change.kind} for change in self.changes],
            "truncated": self.truncated,
        }


def _usable_seed(repository: Repository, git: Git) -> bool:
    """Copy the user's index as a stat cache when it has nothing that would hide a change."""
    try:
        data = copy_user_index(repository, git.scratch.index)
    except CheckpointError:
        return False
    if data is None:
        return False
    try:
        parsed = parse_index(data, repository.hash_size)
    except IndexFormatError:
        return False
    if any(not (0x41 <= sig[0] <= 0x5A) for sig in parsed.extensions):
        return False
    if any(entry.skip_worktree or entry.stage for entry in parsed.entries):
        return False
    flagged = [entry.path for entry in parsed.entries if entry.assume_valid]
    if flagged:
        git.run(["update-index", "--no-assume-unchanged", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"".join(path + b"\0" for path in flagged))
    return True


def _load_tree(repository: Repository, git: Git, tree_oid: str) -> None:
    if _usable_seed(repository, git):
        status, _, _ = git.run(["read-tree", "-m", "-i", tree_oid], index=git.scratch.index, ok=(0, 128))
        if status == 0:
            return
    if os.path.lexists(git.scratch.index):
        os.unlink(git.scratch.index)
    git.run(["read-tree", tree_oid], index=git.scratch.index)


def compare_workspace(repository: Repository, git: Git, verified: VerifiedCheckpoint) -> Drift:
    """The differences between the workspace's capture set and ``verified``'s tree."""
    _load_tree(repository, git, verified.tree_oid)
    git.run(["update-index", "-q", "--refresh"], index=git.scratch.index, ok=(0, 1))
    _, raw, _ = git.run(["diff-files", "-z", "--raw", "--no-renames"], index=git.scratch.index)
    changes: list[tuple[bytes, str]] = []
    fields = raw.split(b"\0")
    root = os.fsencode(repository.workspace)
    for i in range(0, len(fields) - 1, 2):
        meta, path = fields[i], fields[i + 1]
        src_mode, dst_mode, src_oid, _dst_oid, status = meta.lstrip(b":").split(b" ")
        if status == b"D":
            kind = "deleted"
        elif status == b"T":
            kind = "type_changed"
        elif src_mode != dst_mode and {src_mode, dst_mode} == {b"100644", b"100755"}:
            entry_oid = src_oid.decode("ascii")
            full = os.path.join(root, path)
            same = _file_oid(full, os.lstat(full).st_size, repository.object_format) == entry_oid
            kind = "mode_changed" if same else "modified"
        else:
            kind = "modified"
        changes.append((path, kind))
    _, others, _ = git.run(["ls-files", "-z", "--others", "--exclude-standard"], index=git.scratch.index)
    changes.extend((path, "added") for path in others.split(b"\0")[:-1])
    changes.sort(key=lambda item: item[0])
    counts = {kind: 0 for kind in DRIFT_KINDS}
    for _, kind in changes:
        counts[kind] += 1
    shown = tuple(Change(path.decode("utf-8", "backslashreplace"), kind) for path, kind in changes[:MAX_CHANGES])
    return Drift(not changes, counts, shown, len(changes) > MAX_CHANGES)
