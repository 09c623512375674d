"""Isolated restore: a verified checkpoint materialized into a NEW directory, never the user's
(spec-phase4 §3.6).

Why every step:

* the destination must not exist and must lie outside the workspace and its Git directory —
  a restore that wrote into the user's directory would be exactly the "overwrite the user's
  current directory" spec 00 forbids;
* the artifact is verified first (a restore of a corrupt or foreign-policy artifact creates
  nothing);
* files are written by Git (``checkout-index`` from a private index) into a *staging*
  directory next to the destination, then checked **independently of Git's checkout** —
  every path, byte, executable bit and link target against the tree — because checkout applies
  attributes (a ``$GIT_DIR/info/attributes`` rule added after the capture would convert bytes);
* one ``rename`` publishes the directory, so nobody ever sees a half-restored destination.

The result is a plain directory without ``.git`` and without ``.maka-workspace.json``: the
runtime resolves a **new** identity for it (spec 20 §6.2) and commits the transition fact.
Step names: ``after_restore_materialized``, ``after_restore_published``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git
from maka_ref._checkpoint.repository import Repository
from maka_ref._checkpoint.verify import TreeEntry, VerifiedCheckpoint

__all__ = ["RestoreResult", "blob_oid", "check_destination", "materialize", "verify_materialized"]

_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class RestoreResult:
    path: str
    commit_oid: str
    tree_oid: str
    file_count: int


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_destination(repository: Repository, destination: str) -> str:
    """§3.6 step 1; returns the destination with its parent ``realpath``-ed."""
    if not isinstance(destination, str) or not destination or not os.path.isabs(destination) or "\0" in destination:
        raise CheckpointError("restore_target_invalid", "the restore destination must be an absolute path")
    if any(part in (".", "..") for part in destination.split(os.sep)):
        raise CheckpointError("restore_target_invalid", "the restore destination may not hold '.' or '..'")
    parent, name = os.path.split(destination.rstrip(os.sep))
    if not name:
        raise CheckpointError("restore_target_invalid", "the restore destination must name a directory to create")
    if not os.path.isdir(parent):
        raise CheckpointError("restore_target_invalid", "the parent of the restore destination is not a directory",
                              {"parent": parent})
    target = os.path.join(os.path.realpath(parent), name)
    if os.path.lexists(target):
        raise CheckpointError("restore_target_exists", f"{target} already exists", {"destination": target})
    for root in (repository.workspace, repository.git_dir, repository.common_dir):
        if _inside(target, root):
            raise CheckpointError("restore_target_inside_workspace",
                                  "a restore never writes into the workspace or its Git directory",
                                  {"destination": target})
    return target


def blob_oid(data: bytes, hash_name: str) -> str:
    """The Git blob id of ``data``."""
    return hashlib.new(hash_name, f"blob {len(data)}\0".encode("ascii") + data).hexdigest()


def _file_oid(path: bytes, size: int, hash_name: str) -> str:
    hasher = hashlib.new(hash_name, f"blob {size}\0".encode("ascii"))
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def verify_materialized(root: str, entries: tuple[TreeEntry, ...], hash_name: str) -> str | None:
    """None when ``root`` holds exactly ``entries`` (bytes, executable bits, link targets);
    else the first difference, for people."""
    expected = {entry.path: entry for entry in entries}
    needed_dirs = {b""}
    for path in expected:
        parts = path.split(b"/")[:-1]
        for i in range(1, len(parts) + 1):
            needed_dirs.add(b"/".join(parts[:i]))
    base = os.fsencode(root)
    seen = 0
    for current, dirs, files in os.walk(base, followlinks=False):
        relative_dir = os.path.relpath(current, base)
        prefix = b"" if relative_dir == b"." else relative_dir + b"/"
        if prefix.rstrip(b"/") not in needed_dirs:
            return f"unexpected directory {prefix!r}"
        names = list(files)
        for name in list(dirs):
            if os.path.islink(os.path.join(current, name)):
                names.append(name)  # a link to a directory is a link entry, never walked
                dirs.remove(name)
        for name in names:
            relative = prefix + name
            entry = expected.get(relative)
            if entry is None:
                return f"unexpected file {relative!r}"
            info = os.lstat(os.path.join(current, name))
            if entry.mode == 0o120000:
                if not stat.S_ISLNK(info.st_mode):
                    return f"{relative!r} is not a link"
                target = os.readlink(os.path.join(current, name))
                if blob_oid(target, hash_name) != entry.oid:
                    return f"link {relative!r} has another target"
            else:
                if not stat.S_ISREG(info.st_mode):
                    return f"{relative!r} is not a regular file"
                if bool(info.st_mode & stat.S_IXUSR) != (entry.mode == 0o100755):
                    return f"{relative!r} has another executable bit"
                if info.st_size != entry.size or _file_oid(os.path.join(current, name), info.st_size,
                                                           hash_name) != entry.oid:
                    return f"{relative!r} has other bytes"
            seen += 1
    if seen != len(expected):
        return f"{len(expected) - seen} entries are missing"
    return None


def materialize(
    repository: Repository,
    git: Git,
    verified: VerifiedCheckpoint,
    destination: str,
    *,
    on_step: Callable[[str], None] | None = None,
) -> RestoreResult:
    """Steps 3–5 of §3.6 for an already verified checkpoint and a checked destination."""
    parent, name = os.path.split(destination)
    staging = os.path.join(parent, f".{name}.maka-restore-{secrets.token_hex(16)}")
    try:
        os.mkdir(staging)
    except OSError as exc:
        raise CheckpointError("restore_failed", f"cannot create {staging}: {exc.strerror}") from None
    published = False
    try:
        git.run(["read-tree", verified.tree_oid], index=git.scratch.index)
        git.run(["checkout-index", "--all", "--force"], index=git.scratch.index, work_tree=staging)
        problem = verify_materialized(staging, verified.entries, repository.object_format)
        if problem is not None:
            raise CheckpointError("restore_verification_failed", f"the restored files differ from the checkpoint: "
                                  f"{problem}", {"checkpointRef": verified.checkpoint_ref})
        if on_step is not None:
            on_step("after_restore_materialized")
        if os.path.lexists(destination):
            raise CheckpointError("restore_target_exists", f"{destination} appeared during the restore",
                                  {"destination": destination})
        try:
            os.rename(staging, destination)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise CheckpointError("restore_target_exists", f"{destination} appeared during the restore",
                                      {"destination": destination}) from None
            raise CheckpointError("restore_failed", f"cannot publish {destination}: {exc.strerror}") from None
        published = True
        if on_step is not None:
            on_step("after_restore_published")
    except OSError as exc:
        raise CheckpointError("restore_failed", f"restore failed: {exc.strerror}") from None
    finally:
        if not published:
            shutil.rmtree(staging, ignore_errors=True)
    return RestoreResult(destination, verified.commit_oid, verified.tree_oid, verified.file_count)

