"""Seed the private index and look at what a capture would take — before anything is hashed
(spec-phase4 §3.3 checks 11–17, §3.4 steps 3–4).

Why a step of its own: eligibility and capture must agree exactly on what is refused, and the
refusals must come *before* ``git add`` copies a 5 GB untracked file into the user's object
database. So both run this survey; eligibility then throws the scratch away, capture goes on to
``add``.

The seed is a byte copy of the user's index, never the user's index itself: opened read-only
without following links, never locked, given the original's modification time to the
nanosecond (Git's racy-clean rule compares entry times with the index file's own time), and
with assume-unchanged flags cleared in the copy (``git add`` would skip those files' edits).
Why not ``read-tree HEAD`` (issue 17's suggestion): the index *is* Git's meaning of "tracked"
(``HEAD`` misses staged files), and its stat cache is what keeps capture near the cost of the
user's own ``git add -A`` (docs/performance.md, "Checkpoint capture").
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git
from maka_ref._checkpoint.index_file import IndexEntry, IndexFormatError, parse_index
from maka_ref._checkpoint.policy import CheckpointPolicy, is_excluded
from maka_ref._checkpoint.repository import Repository

__all__ = ["CONVERSION_ATTRIBUTES", "GITLINK", "Survey", "check_limits", "copy_user_index", "path_text", "survey"]

GITLINK: Final = 0o160000
_TYPE_MASK: Final = 0o170000
#: Attributes whose being set makes Git store other bytes than the file's (§2.1 ``attributes``).
CONVERSION_ATTRIBUTES: Final = ("filter", "text", "eol", "crlf", "ident", "working-tree-encoding")
_O_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class Survey:
    """What the capture will start from. ``tracked`` are the seed's entries (excluded paths
    dropped); ``untracked`` the non-ignored untracked files with their ``lstat`` sizes."""

    seeded: bool
    tracked: tuple[IndexEntry, ...]
    untracked: tuple[tuple[bytes, int], ...]
    #: Tracked paths of ``excludedPaths`` the capture must remove from its private index.
    excluded_tracked: tuple[bytes, ...]


def copy_user_index(repository: Repository, destination: str) -> bytes | None:
    """Copy ``<git dir>/index`` to ``destination`` with its mtime; the copied bytes, or None
    when the user has no index. Never writes, locks or follows the user's file."""
    source = os.path.join(repository.git_dir, "index")
    try:
        fd = os.open(source, _O_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        if exc.errno == errno.ELOOP:
            raise CheckpointError("index_unsupported", "the index is a symbolic link", {"reason": "not_regular"}) from None
        raise CheckpointError("index_unsupported", f"the index cannot be read: {exc.strerror}",
                              {"reason": "unreadable"}) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointError("index_unsupported", "the index is not a regular file", {"reason": "not_regular"})
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    with open(destination, "wb") as handle:
        handle.write(data)
    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))
    return data


def path_text(path: bytes) -> str:
    try:
        return path.decode("utf-8")
    except UnicodeDecodeError:
        shown = path.decode("utf-8", "backslashreplace")
        raise CheckpointError("path_not_utf8", f"path {shown!r} is not UTF-8", {"path": shown}) from None


def _seed(repository: Repository, git: Git) -> tuple[bool, tuple[IndexEntry, ...]]:
    data = copy_user_index(repository, git.scratch.index)
    if data is None:
        return False, ()
    try:
        parsed = parse_index(data, repository.hash_size)
    except IndexFormatError as exc:
        raise CheckpointError("index_unsupported", f"the index cannot be used: {exc}", {"reason": exc.reason}) from None
    required = [sig for sig in parsed.extensions if not (0x41 <= sig[0] <= 0x5A)]
    if required:
        reason = required[0].decode("ascii", "replace")
        raise CheckpointError("index_unsupported", f"the index needs extension {reason!r} (split or sparse index)",
                              {"reason": reason})
    for entry in parsed.entries:
        if entry.mode & _TYPE_MASK == GITLINK:
            raise CheckpointError("submodules_unsupported", "the index holds a gitlink (a submodule)",
                                  {"reason": "gitlink", "path": entry.path.decode("utf-8", "backslashreplace")})
        if entry.skip_worktree:
            raise CheckpointError("sparse_checkout_unsupported", "the index has skip-worktree entries (sparse checkout)",
                                  {"path": entry.path.decode("utf-8", "backslashreplace")})
    flagged = [entry.path for entry in parsed.entries if entry.assume_valid]
    if flagged:
        git.run(["update-index", "--no-assume-unchanged", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"".join(path + b"\0" for path in flagged))
    return True, parsed.entries


def _check_attributes(repository: Repository, git: Git, paths: list[bytes]) -> None:
    has_file = any(path == b".gitattributes" or path.endswith(b"/.gitattributes") for path in paths)
    if not has_file and not os.path.lexists(os.path.join(repository.common_dir, "info", "attributes")):
        return
    _, out, _ = git.run(["check-attr", "-z", "--stdin", *CONVERSION_ATTRIBUTES], index=git.scratch.index,
                        stdin=b"".join(path + b"\0" for path in paths))
    fields = out.split(b"\0")
    for i in range(0, len(fields) - 2, 3):
        path, attribute, value = fields[i], fields[i + 1], fields[i + 2]
        if value not in (b"unspecified", b"unset"):
            raise CheckpointError(
                "conversion_attributes_unsupported",
                f"attribute {attribute.decode()} is set on {path.decode('utf-8', 'replace')}",
                {"path": path.decode("utf-8", "replace"), "attribute": attribute.decode("ascii", "replace")},
            )


def survey(repository: Repository, git: Git, policy: CheckpointPolicy) -> Survey:
    """Seed ``git.scratch.index`` and apply §3.3 checks 11–17 in order (the scratch index is
    left seeded for the capture)."""
    seeded, entries = _seed(repository, git)  # checks 11-13
    _, out, _ = git.run(["ls-files", "-z", "--others", "--exclude-standard"], index=git.scratch.index)
    listed = out.split(b"\0")[:-1]
    for path in listed:  # check 14
        if path.endswith(b"/"):
            raise CheckpointError("submodules_unsupported", "an untracked directory is a nested Git repository",
                                  {"reason": "nested_repository", "path": path.decode("utf-8", "backslashreplace")})
    tracked: list[IndexEntry] = []
    excluded: list[bytes] = []
    for entry in entries:  # check 15 (tracked), and the policy's excluded paths
        if is_excluded(path_text(entry.path), policy):
            excluded.append(entry.path)
        else:
            tracked.append(entry)
    untracked: list[tuple[bytes, int]] = []
    root = os.fsencode(repository.workspace)
    for path in listed:
        path_text(path)  # check 15 (untracked)
        try:
            info = os.lstat(os.path.join(root, path))
        except FileNotFoundError:
            continue  # vanished since Git listed it: nothing to capture
        if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            untracked.append((path, info.st_size))
    unique_tracked = {entry.path: entry for entry in tracked}
    _check_attributes(repository, git, list(unique_tracked) + [path for path, _ in untracked])  # check 16
    check_limits(policy, [(e.path, e.size) for e in unique_tracked.values()] + untracked)  # check 17
    return Survey(seeded, tuple(tracked), tuple(untracked), tuple(excluded))


def check_limits(policy: CheckpointPolicy, sized: list[tuple[bytes, int]]) -> None:
    """§3.3 check 17 over ``(path, size)`` pairs (one per captured path)."""
    if len(sized) > policy.max_files:
        raise CheckpointError("too_many_files", f"{len(sized)} files exceed maxFiles {policy.max_files}",
                              {"limit": policy.max_files, "observed": len(sized)})
    total = 0
    for path, size in sized:
        if size > policy.max_file_bytes:
            shown = path.decode("utf-8", "replace")
            raise CheckpointError("file_too_large", f"{shown} has {size} bytes, over maxFileBytes",
                                  {"path": shown, "limit": policy.max_file_bytes, "observed": size})
        total += size
    if total > policy.max_total_bytes:
        raise CheckpointError("workspace_too_large", f"{total} bytes exceed maxTotalBytes",
                              {"limit": policy.max_total_bytes, "observed": total})
