"""A read-only parser of Git's index file, versions 2–4 (spec-phase4 §3.3 checks 11–13, §3.4
steps 3 and 6).

Why parse it ourselves: capture seeds its private index with a byte copy of the user's index
(its stat cache is what makes capture as cheap as the user's own ``git add -A``), and before
Git touches that copy the carrier must know whether it can be used at all — a split or sparse
index (required extensions ``link``/``sdir``) cannot be copied alone, a skip-worktree entry
means files are missing from the worktree on purpose, a gitlink is a submodule, and an
assume-unchanged entry would make ``git add`` skip real edits. After ``git add`` the same
parser reads the private index for the post-check (modes, sizes, paths) without another
process. Format: Git's ``Documentation/gitformat-index.txt``; only what those checks need is
decoded.

Pure: bytes in, values out.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Final

__all__ = ["IndexEntry", "IndexFile", "IndexFormatError", "parse_index"]

_HEADER: Final = struct.Struct(">4sII")
_STAT: Final = struct.Struct(">10I")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
_ASSUME_VALID: Final = 0x8000
_EXTENDED: Final = 0x4000
_SKIP_WORKTREE: Final = 0x4000
_INTENT_TO_ADD: Final = 0x2000
_NAME_MASK: Final = 0x0FFF


class IndexFormatError(ValueError):
    """The bytes are not an index the carrier can use; ``reason`` is stable."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class IndexEntry:
    path: bytes
    mode: int
    #: ``st_size`` truncated to 32 bits, as Git stores it (0 for a "smudged" racy entry).
    size: int
    stage: int
    assume_valid: bool
    skip_worktree: bool
    intent_to_add: bool


@dataclass(frozen=True, slots=True)
class IndexFile:
    version: int
    entries: tuple[IndexEntry, ...]
    #: Signatures of the extensions present, in file order.
    extensions: tuple[bytes, ...]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Git's offset varint (``varint.c``): 7 bits per byte, +1 per continuation."""
    if pos >= len(data):
        raise IndexFormatError("truncated", "index ends inside a path prefix length")
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        if pos >= len(data):
            raise IndexFormatError("truncated", "index ends inside a path prefix length")
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def parse_index(data: bytes, hash_size: int) -> IndexFile:
    """Parse ``data`` (a whole index file) for a repository whose object ids have
    ``hash_size`` bytes (20 for SHA-1, 32 for SHA-256). Checks the trailing checksum (an
    all-zero trailer — Git's ``index.skipHash`` — is accepted)."""
    if hash_size not in (20, 32):
        raise ValueError("hash_size is 20 or 32")
    if len(data) < _HEADER.size + hash_size:
        raise IndexFormatError("truncated", "index is shorter than its header and checksum")
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC":
        raise IndexFormatError("signature", "index does not start with DIRC")
    if version not in (2, 3, 4):
        raise IndexFormatError("version", f"index version {version} is not 2, 3 or 4")
    body_end = len(data) - hash_size
    trailer = data[body_end:]
    if trailer != bytes(hash_size):
        digest = (hashlib.sha1 if hash_size == 20 else hashlib.sha256)(data[:body_end]).digest()
        if digest != trailer:
            raise IndexFormatError("checksum", "index checksum does not match its content")
    fixed = _STAT.size + hash_size + 2
    pos = _HEADER.size
    previous = b""
    entries: list[IndexEntry] = []
    for _ in range(count):
        if pos + fixed > body_end:
            raise IndexFormatError("truncated", "index ends inside an entry")
        stat = _STAT.unpack_from(data, pos)
        (flags,) = struct.unpack_from(">H", data, pos + _STAT.size + hash_size)
        cursor = pos + fixed
        extended = 0
        if flags & _EXTENDED:
            if version < 3:
                raise IndexFormatError("flags", "extended flags in a version 2 index")
            (extended,) = struct.unpack_from(">H", data, cursor)
            cursor += 2
        if version == 4:
            strip, cursor = _varint(data, cursor)
            end = data.find(b"\0", cursor, body_end)
            if end < 0 or strip > len(previous):
                raise IndexFormatError("truncated", "index path is not terminated")
            path = previous[: len(previous) - strip] + data[cursor:end]
            pos = end + 1
        else:
            end = data.find(b"\0", cursor, body_end)
            if end < 0:
                raise IndexFormatError("truncated", "index path is not terminated")
            path = data[cursor:end]
            length = flags & _NAME_MASK
            if length != _NAME_MASK and length != len(path):
                raise IndexFormatError("truncated", "index path length disagrees with its flags")
            pos += (fixed + (2 if flags & _EXTENDED else 0) + len(path) + 8) & ~7
        previous = path
        entries.append(IndexEntry(
            path=path,
            mode=stat[6],
            size=stat[9],
            stage=(flags >> 12) & 0x3,
            assume_valid=bool(flags & _ASSUME_VALID),
            skip_worktree=bool(extended & _SKIP_WORKTREE),
            intent_to_add=bool(extended & _INTENT_TO_ADD),
        ))
    extensions: list[bytes] = []
    while pos < body_end:
        if pos + 8 > body_end:
            raise IndexFormatError("truncated", "index ends inside an extension header")
        signature = data[pos:pos + 4]
        (size,) = struct.unpack_from(">I", data, pos + 4)
        pos += 8 + size
        if pos > body_end:
            raise IndexFormatError("truncated", "index extension overruns the file")
        extensions.append(signature)
    return IndexFile(version, tuple(entries), tuple(extensions))
