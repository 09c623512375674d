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
from typing import Final, NamedTuple

__all__ = ["IndexEntry", "IndexFile", "IndexFormatError", "IndexSizes", "check_header", "index_sizes", "parse_index"]

_HEADER: Final = struct.Struct(">4sII")
_STAT_SIZE: Final = 40  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size: ten 32-bit fields
_MODE_SIZE: Final = struct.Struct(">I8xI")  # mode (offset 24) and size (offset 36)
_FLAGS: Final = struct.Struct(">H")
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


class IndexEntry(NamedTuple):
    """One entry: the path, mode and size Git stores, and its raw flag words (a named tuple
    built with ``tuple.__new__``: ten thousand of them are built per capture)."""

    path: bytes
    mode: int
    #: ``st_size`` truncated to 32 bits, as Git stores it (0 for a "smudged" racy entry).
    size: int
    flags: int
    extended_flags: int

    @property
    def stage(self) -> int:
        return (self.flags >> 12) & 0x3

    @property
    def assume_valid(self) -> bool:
        return bool(self.flags & _ASSUME_VALID)

    @property
    def skip_worktree(self) -> bool:
        return bool(self.extended_flags & _SKIP_WORKTREE)

    @property
    def intent_to_add(self) -> bool:
        return bool(self.extended_flags & _INTENT_TO_ADD)


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


def check_header(data: bytes, hash_size: int) -> tuple[int, int]:
    """Signature, version and the trailing checksum (an all-zero trailer — Git's
    ``index.skipHash`` — is accepted); returns ``(version, entry count)``."""
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
    return version, count


def parse_index(data: bytes, hash_size: int) -> IndexFile:
    """Parse ``data`` (a whole index file) for a repository whose object ids have
    ``hash_size`` bytes (20 for SHA-1, 32 for SHA-256). Checks the trailing checksum (an
    all-zero trailer — Git's ``index.skipHash`` — is accepted)."""
    version, count = check_header(data, hash_size)
    body_end = len(data) - hash_size
    fixed = _STAT_SIZE + hash_size + 2
    flags_at = _STAT_SIZE + hash_size
    unpack_mode_size, unpack_flags, find = _MODE_SIZE.unpack_from, _FLAGS.unpack_from, data.find
    pos = _HEADER.size
    previous = b""
    entries: list[IndexEntry] = []
    append, new = entries.append, tuple.__new__
    for _ in range(count):
        if pos + fixed > body_end:
            raise IndexFormatError("truncated", "index ends inside an entry")
        mode, size = unpack_mode_size(data, pos + 24)
        (flags,) = unpack_flags(data, pos + flags_at)
        cursor = pos + fixed
        extended = 0
        if flags & _EXTENDED:
            if version < 3:
                raise IndexFormatError("flags", "extended flags in a version 2 index")
            (extended,) = unpack_flags(data, cursor)
            cursor += 2
        if version == 4:
            strip, cursor = _varint(data, cursor)
            end = find(b"\0", cursor, body_end)
            if end < 0 or strip > len(previous):
                raise IndexFormatError("truncated", "index path is not terminated")
            path = previous[: len(previous) - strip] + data[cursor:end]
            pos = end + 1
            previous = path
        else:
            length = flags & _NAME_MASK
            end = cursor + length if length != _NAME_MASK else find(b"\0", cursor, body_end)
            if end < 0 or end >= body_end or data[end] != 0:
                raise IndexFormatError("truncated", "index path is not terminated where its flags say")
            path = data[cursor:end]
            pos += (end - pos + 8) & ~7
        append(new(IndexEntry, (path, mode, size, flags, extended)))  # no Python-level __new__
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


@dataclass(frozen=True, slots=True)
class IndexSizes:
    """What the capture's post-check needs: every entry's size and the set of modes."""

    sizes: list[int]
    modes: set[int]


def index_sizes(data: bytes, hash_size: int) -> IndexSizes:
    """:func:`parse_index` reduced to sizes and the set of modes — the same walk over the
    entries with nothing built per entry but an integer, because the post-check of every
    capture runs it on ten thousand entries (spec-phase4 §3.4 step 6). A caller that needs a
    path (to name an offending entry) parses again with :func:`parse_index`."""
    version, count = check_header(data, hash_size)
    if version == 4:  # prefix-compressed paths: the general parser walks them
        entries = parse_index(data, hash_size).entries
        return IndexSizes([e.size for e in entries], {e.mode for e in entries})
    body_end = len(data) - hash_size
    fixed = _STAT_SIZE + hash_size + 2
    flags_at = _STAT_SIZE + hash_size
    unpack_mode_size, unpack_flags, find = _MODE_SIZE.unpack_from, _FLAGS.unpack_from, data.find
    sizes: list[int] = []
    modes: set[int] = set()
    add_size, add_mode = sizes.append, modes.add
    pos = _HEADER.size
    for _ in range(count):
        if pos + fixed > body_end:
            raise IndexFormatError("truncated", "index ends inside an entry")
        mode, size = unpack_mode_size(data, pos + 24)
        (flags,) = unpack_flags(data, pos + flags_at)
        length = flags & _NAME_MASK
        cursor = pos + fixed + (2 if flags & _EXTENDED else 0)
        end = cursor + length if length != _NAME_MASK else find(b"\0", cursor, body_end)
        if end < 0 or end >= body_end or data[end] != 0:
            raise IndexFormatError("truncated", "index path is not terminated where its flags say")
        add_size(size)
        add_mode(mode)
        pos += (end - pos + 8) & ~7
    return IndexSizes(sizes, modes)
