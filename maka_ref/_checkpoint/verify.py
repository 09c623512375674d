"""Verify a checkpoint artifact: the ref, the commit's exact layout, every object's id
recomputed from its bytes, and the tree against the policy (spec-phase4 §3.5).

Why recompute object ids ourselves instead of ``git fsck``: ``fsck`` checks every object of the
repository (the user's whole history, and problems that are not ours), while a checkpoint's
integrity is exactly "every object reachable from this parentless commit exists and hashes to
its name". Git lists the objects (``rev-list --objects`` parses every tree on the way) and
hands their bytes over (``cat-file --batch``); this module hashes ``<type> <size>\\0<bytes>``
and parses the trees, so a flipped byte in a loose object or a missing blob cannot pass.

Verify writes nothing anywhere (no object, no ref, no index).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import IO, Final, cast

from maka_ref._checkpoint.capture import ALLOWED_MODES, COMMIT_TITLE
from maka_ref._checkpoint.failure import CheckpointError
from maka_ref._checkpoint.git import AUTHOR_DATE, AUTHOR_EMAIL, AUTHOR_NAME, Git
from maka_ref._checkpoint.policy import CheckpointPolicy, is_excluded, policy_hash
from maka_ref._checkpoint.refs import IDENTITY_PREFIX, parse_ref
from maka_ref._checkpoint.repository import Repository

__all__ = ["TreeEntry", "VerifiedCheckpoint", "parse_tree", "verify_checkpoint"]

_TREE_MODE: Final = 0o40000
_CHUNK: Final = 1 << 20
_IDENTITY_LINE: Final = f"{AUTHOR_NAME} <{AUTHOR_EMAIL}> {AUTHOR_DATE}"


@dataclass(frozen=True, slots=True)
class TreeEntry:
    path: bytes
    mode: int
    oid: str
    size: int


@dataclass(frozen=True, slots=True)
class VerifiedCheckpoint:
    checkpoint_ref: str
    commit_oid: str
    tree_oid: str
    workspace_identity: str
    base_commit_oid: str | None
    #: Every file and link of the tree, sorted by path bytes.
    entries: tuple[TreeEntry, ...]

    @property
    def file_count(self) -> int:
        return len(self.entries)

    @property
    def total_bytes(self) -> int:
        return sum(entry.size for entry in self.entries)


def _corrupt(reason: str, message: str, **details: str) -> CheckpointError:
    return CheckpointError("checkpoint_corrupt", message, {"reason": reason, **details})


def parse_tree(content: bytes, hash_size: int) -> list[tuple[int, bytes, str]]:
    """A raw tree object's ``(mode, name, oid)`` entries; malformed → ``ValueError``."""
    entries = []
    pos = 0
    while pos < len(content):
        space = content.index(b" ", pos)
        nul = content.index(b"\0", space)
        mode = int(content[pos:space], 8)
        name = content[space + 1:nul]
        oid_bytes = content[nul + 1:nul + 1 + hash_size]
        if len(oid_bytes) != hash_size or not name or b"/" in name:
            raise ValueError("malformed tree entry")
        entries.append((mode, name, oid_bytes.hex()))
        pos = nul + 1 + hash_size
    return entries


def _parse_commit(raw: bytes, ref: str, expected_hash: str) -> tuple[str, str, str | None]:
    """The §3.4 step 8 layout → (tree oid, workspace identity, base commit)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _corrupt("commit_malformed", "the checkpoint commit is not UTF-8") from None
    match = re.fullmatch(
        r"tree ([0-9a-f]{40}|[0-9a-f]{64})\n"
        rf"author {re.escape(_IDENTITY_LINE)}\n"
        rf"committer {re.escape(_IDENTITY_LINE)}\n"
        rf"\n{re.escape(COMMIT_TITLE)}\n\n"
        r"Maka-Checkpoint-Policy: (sha256:[0-9a-f]{64})\n"
        r"Maka-Workspace-Identity: (workspace:v1:[0-9A-Za-z-]+)\n"
        r"Maka-Base-Commit: (none|[0-9a-f]{40}|[0-9a-f]{64})\n",
        text,
    )
    if match is None:
        raise _corrupt("commit_malformed", "the checkpoint commit does not have the checkpoint layout")
    tree_oid, found_hash, identity, base = match.groups()
    parsed = parse_ref(ref)
    if parsed is None or identity[len(IDENTITY_PREFIX):] != parsed.uuid:
        raise _corrupt("commit_malformed", "the commit's workspace identity does not match its ref")
    if found_hash != expected_hash:
        raise CheckpointError("checkpoint_policy_mismatch", "the checkpoint was captured under another policy",
                              {"expected": expected_hash, "found": found_hash})
    return tree_oid, identity, (None if base == "none" else base)


class _ObjectReader:
    """Consumes ``cat-file --batch`` output, recomputing each object's id."""

    def __init__(self, hash_name: str, hash_size: int, expected: list[str]) -> None:
        self.hash_name = hash_name
        self.hash_size = hash_size
        self.expected = expected
        self.types: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self.trees: dict[str, list[tuple[int, bytes, str]]] = {}
        self.commit_raw = b""

    def __call__(self, stream: object) -> None:
        out = cast(IO[bytes], stream)
        for oid in self.expected:
            header = out.readline()
            fields = header.rstrip(b"\n").split(b" ")
            if len(fields) == 2 and fields[1] == b"missing":
                raise _corrupt("object_missing", f"object {oid} is missing", oid=oid)
            if len(fields) != 3 or fields[0].decode("ascii", "replace") != oid:
                raise _corrupt("object_missing", f"object {oid} could not be read", oid=oid)
            kind, size = fields[1].decode("ascii"), int(fields[2])
            hasher = hashlib.new(self.hash_name, f"{kind} {size}\0".encode("ascii"))
            keep = kind in ("tree", "commit")
            kept: list[bytes] = []
            remaining = size
            while remaining:
                chunk = out.read(min(remaining, _CHUNK))
                if not chunk:
                    raise _corrupt("object_missing", f"object {oid} ended early", oid=oid)
                hasher.update(chunk)
                if keep:
                    kept.append(chunk)
                remaining -= len(chunk)
            out.read(1)  # the newline after the content
            if hasher.hexdigest() != oid:
                raise _corrupt("object_hash_mismatch", f"object {oid} does not hash to its name", oid=oid)
            self.types[oid], self.sizes[oid] = kind, size
            if kind == "tree":
                try:
                    self.trees[oid] = parse_tree(b"".join(kept), self.hash_size)
                except ValueError:
                    raise _corrupt("object_hash_mismatch", f"tree {oid} is malformed", oid=oid) from None
            elif kind == "commit":
                self.commit_raw = b"".join(kept)


def _walk(reader: _ObjectReader, tree_oid: str) -> list[TreeEntry]:
    entries: list[TreeEntry] = []
    stack: list[tuple[bytes, str]] = [(b"", tree_oid)]
    while stack:
        prefix, oid = stack.pop()
        if oid not in reader.trees:
            raise _corrupt("object_missing", f"tree {oid} is not reachable from the commit", oid=oid)
        for mode, name, child in reader.trees[oid]:
            path = prefix + name
            if mode == _TREE_MODE:
                stack.append((path + b"/", child))
            else:
                entries.append(TreeEntry(path, mode, child, reader.sizes.get(child, -1)))
    entries.sort(key=lambda entry: entry.path)
    return entries


def _check_policy(entries: list[TreeEntry], policy: CheckpointPolicy) -> None:
    def violation(reason: str, message: str, path: str | None = None) -> CheckpointError:
        details: dict[str, str | int | bool] = {"reason": reason}
        if path is not None:
            details["path"] = path
        return CheckpointError("checkpoint_policy_violation", message, details)

    total = 0
    for entry in entries:
        try:
            text = entry.path.decode("utf-8")
        except UnicodeDecodeError:
            raise violation("path_not_utf8", "a path is not UTF-8",
                            entry.path.decode("utf-8", "backslashreplace")) from None
        if entry.mode not in ALLOWED_MODES:
            raise violation("mode", f"{text} has mode {entry.mode:o}", text)
        if is_excluded(text, policy):
            raise violation("excluded_path", f"{text} is excluded by the policy", text)
        if entry.size > policy.max_file_bytes:
            raise violation("file_too_large", f"{text} is over maxFileBytes", text)
        total += entry.size
    if len(entries) > policy.max_files:
        raise violation("too_many_files", "the tree holds more than maxFiles entries")
    if total > policy.max_total_bytes:
        raise violation("workspace_too_large", "the tree holds more than maxTotalBytes")


def verify_checkpoint(
    repository: Repository,
    git: Git,
    policy: CheckpointPolicy,
    *,
    checkpoint_ref: str,
    expected_policy_hash: str,
) -> VerifiedCheckpoint:
    """Steps 1–5 of §3.5. ``expected_policy_hash`` must also be the hash of ``policy`` (the
    carrier can only check a tree against a policy it holds)."""
    if parse_ref(checkpoint_ref) is None:
        raise CheckpointError("invalid_checkpoint_ref", f"{checkpoint_ref!r} is not a checkpoint ref")
    _, out, _ = git.run(["for-each-ref", "--format=%(refname)%00%(objectname)%00%(objecttype)", checkpoint_ref])
    found = [line.split("\0") for line in out.decode("utf-8", "replace").splitlines()]
    exact = [fields for fields in found if fields[0] == checkpoint_ref]
    if not exact:
        raise CheckpointError("checkpoint_artifact_missing", f"{checkpoint_ref} does not exist",
                              {"checkpointRef": checkpoint_ref})
    _, commit_oid, kind = exact[0]
    if kind != "commit":
        raise _corrupt("not_a_commit", f"{checkpoint_ref} names a {kind}, not a commit")
    status, raw_commit, err = git.run(["cat-file", "commit", commit_oid], ok=(0, 1, 128))
    if status != 0:
        raise _corrupt("object_missing", "the checkpoint commit cannot be read",
                       stderr=err.decode("utf-8", "replace")[-300:].strip())
    tree_oid, identity, base = _parse_commit(raw_commit, checkpoint_ref, expected_policy_hash)
    own_hash = policy_hash(policy)
    if expected_policy_hash != own_hash:  # the tree can only be checked against a policy held here
        raise CheckpointError("checkpoint_policy_mismatch", "the carrier does not hold the expected policy",
                              {"expected": str(expected_policy_hash), "found": own_hash})
    status, listing, err = git.run(["rev-list", "--objects", "--no-object-names", commit_oid], ok=(0, 1, 128))
    if status != 0:
        raise _corrupt("object_missing", "an object of the checkpoint cannot be read",
                       stderr=err.decode("utf-8", "replace")[-300:].strip())
    oids = listing.decode("ascii").split()
    if not oids or oids[0] != commit_oid:
        raise _corrupt("object_missing", "the checkpoint commit is not listed first")
    reader = _ObjectReader(repository.object_format, repository.hash_size, oids)
    try:
        git.stream(["cat-file", "--batch"], (oid.encode("ascii") + b"\n" for oid in oids), reader)
    except CheckpointError as exc:
        if exc.code != "git_failed":
            raise
        raise _corrupt("object_missing", "an object of the checkpoint cannot be read",
                       stderr=str(exc.details.get("stderr", ""))) from None
    if reader.commit_raw != raw_commit:
        raise _corrupt("object_hash_mismatch", "the commit read twice gave different bytes")
    entries = _walk(reader, tree_oid)
    _check_policy(entries, policy)  # before the blob check: a gitlink is a policy violation
    for entry in entries:
        if reader.types.get(entry.oid) != "blob":
            raise _corrupt("object_missing", f"{entry.path!r} does not name a blob", oid=entry.oid)
    return VerifiedCheckpoint(checkpoint_ref, commit_oid, tree_oid, identity, base, tuple(entries))
