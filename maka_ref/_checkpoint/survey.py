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

One ``ls-files --stage -v --cached --others`` call answers every question about the seed and
the untracked files at once (tag: skip-worktree ``S``, assume-unchanged lowercase, untracked
``?``; mode: gitlinks; paths): Git walks the tree once and parses its own index in C. The
carrier reads the index bytes itself only for what Git would not report clearly — a bad
checksum, and (when a shared index exists) a split index.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import Git
from maka_ref._checkpoint.index_file import IndexFormatError, check_header, parse_index
from maka_ref._checkpoint.policy import (
    CheckpointPolicy,
    exclusion_matcher,
    first_components,
)
from maka_ref._checkpoint.repository import Repository

__all__ = [
    "CONVERSION_ATTRIBUTES",
    "Survey",
    "check_index_bytes",
    "check_limits",
    "check_utf8",
    "copy_user_index",
    "path_text",
    "survey",
]

#: Attributes whose being set makes Git store other bytes than the file's (§2.1 ``attributes``).
CONVERSION_ATTRIBUTES: Final = ("filter", "text", "eol", "crlf", "ident", "working-tree-encoding")
_O_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class Survey:
    """What the capture will start from: the seed's tracked paths (excluded paths dropped),
    the non-ignored untracked files with their ``lstat`` sizes, and the tracked paths of
    ``excludedPaths`` the capture must drop from its private index."""

    seeded: bool
    tracked: list[bytes]
    untracked: list[tuple[bytes, int]]
    excluded_tracked: list[bytes]


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


def check_utf8(paths: list[bytes]) -> None:
    """§3.3 check 15 over many paths at once (an ASCII separator can never complete a
    multi-byte sequence, so the joined bytes decode iff every path does)."""
    try:
        b"\0".join(paths).decode("utf-8")
    except UnicodeDecodeError:
        for path in paths:
            path_text(path)


def check_index_bytes(repository: Repository, data: bytes) -> None:
    """§3.3 check 11 on the copied index: header and checksum always (cheap); the entries and
    extensions only when the Git directory holds a shared index (a split index cannot be
    copied alone; ``link`` and ``sdir`` are the required extensions Git refuses to ignore)."""
    try:
        check_header(data, repository.hash_size)
        if not any(name.startswith("sharedindex.") for name in os.listdir(repository.git_dir)):
            return
        parsed = parse_index(data, repository.hash_size)
    except IndexFormatError as exc:
        raise CheckpointError("index_unsupported", f"the index cannot be used: {exc}", {"reason": exc.reason}) from None
    required = [sig for sig in parsed.extensions if not (0x41 <= sig[0] <= 0x5A)]
    if required:
        reason = required[0].decode("ascii", "replace")
        raise CheckpointError("index_unsupported", f"the index needs extension {reason!r} (split or sparse index)",
                              {"reason": reason})


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


def _cached_path(record: bytes) -> bytes:
    """The path of a ``<tag> <mode> <oid> <stage>\\t<path>`` record."""
    return record[record.index(b"\t") + 1:]


def survey(repository: Repository, git: Git, policy: CheckpointPolicy) -> Survey:
    """Seed ``git.scratch.index`` and apply §3.3 checks 11–17 in order (the scratch index is
    left seeded for the capture).

    Every question about ten thousand records is first asked with a C-level scan of Git's
    output (records are NUL-separated and a path never holds a NUL, so ``b"\\0S "`` can only
    be a record starting with the skip-worktree tag); per-record Python runs only when a scan
    says a rare case is present."""
    data = copy_user_index(repository, git.scratch.index)
    if data is not None:
        check_index_bytes(repository, data)  # check 11
    status, out, err = git.run(["ls-files", "-z", "--stage", "-v", "--cached", "--others", "--exclude-standard"],
                               index=git.scratch.index, ok=(0, 128))
    if status != 0:
        if b"index" in err:  # the checksum was fine, yet Git refuses the copy
            raise CheckpointError("index_unsupported", "git cannot read the index", {"reason": "git_rejected"})
        raise git.failure(["ls-files"], status, err)
    framed = b"\0" + out  # every record now starts right after a NUL
    records = out.split(b"\0")[:-1]
    if b" 160000 " in out:  # check 12
        for record in records:
            if not record.startswith(b"? ") and record[2:9] == b"160000 ":
                raise CheckpointError("submodules_unsupported", "the index holds a gitlink (a submodule)",
                                      {"reason": "gitlink",
                                       "path": _cached_path(record).decode("utf-8", "backslashreplace")})
    if b"\0S " in framed or b"\0s " in framed:  # check 13
        record = next(r for r in records if r.startswith((b"S ", b"s ")))
        raise CheckpointError("sparse_checkout_unsupported", "the index has skip-worktree entries (sparse checkout)",
                              {"path": _cached_path(record).decode("utf-8", "backslashreplace")})
    untracked_paths = [r[2:] for r in records if r[0] == 0x3F] if b"\0? " in framed else []  # "? <path>"
    for path in untracked_paths:  # check 14
        if path.endswith(b"/"):
            raise CheckpointError("submodules_unsupported", "an untracked directory is a nested Git repository",
                                  {"reason": "nested_repository", "path": path.decode("utf-8", "backslashreplace")})
    try:  # check 15: the whole listing decodes iff every path does (the rest is ASCII)
        out.decode("utf-8")
    except UnicodeDecodeError:
        check_utf8([r[2:] if r.startswith(b"? ") else _cached_path(r) for r in records])
    # "<tag> <6-digit mode> <hex oid> <stage>\t<path>": the path starts at a fixed offset
    start = 2 + 6 + 1 + 2 * repository.hash_size + 1 + 1 + 1
    tracked = [r[start:] for r in records if r[0] != 0x3F] if untracked_paths else [r[start:] for r in records]
    if b"\0M " in framed or b"\0m " in framed:  # unmerged paths are listed once per stage
        tracked = list(dict.fromkeys(tracked))
    excluded: list[bytes] = []
    if any(b"\t" + first in out for first in first_components(policy)):
        matcher = exclusion_matcher(policy)
        excluded = [path for path in tracked if matcher(path)]
        tracked = [path for path in tracked if not matcher(path)]
    untracked: list[tuple[bytes, int]] = []
    root = os.fsencode(repository.workspace)
    for path in untracked_paths:
        try:
            info = os.lstat(os.path.join(root, path))
        except FileNotFoundError:
            continue  # vanished since Git listed it: nothing to capture
        if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            untracked.append((path, info.st_size))
    if (b"\t.gitattributes\0" in out or b"/.gitattributes\0" in out or b"\0? .gitattributes\0" in framed
            or os.path.lexists(os.path.join(repository.common_dir, "info", "attributes"))):
        _check_attributes(repository, git, tracked + [path for path, _ in untracked])  # check 16
    # check 17: tracked sizes are checked after staging (§3.4 step 6), once Git has measured them
    check_limits(policy, untracked, extra_count=len(tracked))
    if any(b"\0" + tag + b" " in framed for tag in (b"h", b"m", b"c", b"r", b"k")):  # assume-unchanged
        flagged = list(dict.fromkeys(_cached_path(r) for r in records if 0x61 <= r[0] <= 0x7A and r[0:2] != b"? "))
        git.run(["update-index", "--no-assume-unchanged", "-z", "--stdin"], index=git.scratch.index,
                stdin=b"".join(path + b"\0" for path in flagged))
    return Survey(data is not None, tracked, untracked, excluded)


def check_limits(policy: CheckpointPolicy, sized: list[tuple[bytes, int]], *, extra_count: int = 0) -> None:
    """§3.3 check 17 over ``(path, size)`` pairs (one per captured path), plus ``extra_count``
    paths whose size is not known yet (they count toward ``maxFiles`` only)."""
    count = len(sized) + extra_count
    if count > policy.max_files:
        raise CheckpointError("too_many_files", f"{count} files exceed maxFiles {policy.max_files}",
                              {"limit": policy.max_files, "observed": count})
    if not sized:
        return
    sizes = [size for _, size in sized]
    if max(sizes) > policy.max_file_bytes:
        path, size = next(item for item in sized if item[1] > policy.max_file_bytes)
        shown = path.decode("utf-8", "replace")
        raise CheckpointError("file_too_large", f"{shown} has {size} bytes, over maxFileBytes",
                              {"path": shown, "limit": policy.max_file_bytes, "observed": size})
    total = sum(sizes)
    if total > policy.max_total_bytes:
        raise CheckpointError("workspace_too_large", f"{total} bytes exceed maxTotalBytes",
                              {"limit": policy.max_total_bytes, "observed": total})
