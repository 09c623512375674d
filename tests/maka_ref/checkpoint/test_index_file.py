"""The index-file parser against indexes the real ``git`` writes (spec-phase4 §3.3 checks
11–13, §3.4 steps 3 and 6). Expected paths, modes and flags come from ``git ls-files``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maka_ref._checkpoint.index_file import IndexFormatError, parse_index
from tests.maka_ref.checkpoint.support import (
    git,
    init_repo,
    needs_git,
    posix_only,
    write,
)

pytestmark = [needs_git, posix_only]


def _repo(tmp_path: Path, object_format: str = "sha1") -> Path:
    ws = init_repo(tmp_path / "r", object_format=object_format)
    for i in range(30):
        write(ws / f"dir{i % 3}" / f"file-{i:02}.txt", f"content {i}\n" * (i + 1))
    write(ws / "exe.sh", "#!/bin/sh\n", mode=0o755)
    os.symlink("exe.sh", ws / "link")
    git(ws, "add", "-A")
    return ws


def _listing(ws: Path) -> list[tuple[bytes, int]]:
    out = git(ws, "ls-files", "-s", "-z")
    rows = []
    for record in out.split("\0")[:-1]:
        meta, path = record.split("\t", 1)
        rows.append((path.encode(), int(meta.split()[0], 8)))
    return rows


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("object_format,hash_size", [("sha1", 20), ("sha256", 32)])
def test_paths_and_modes_equal_git_ls_files(tmp_path: Path, version: int, object_format: str, hash_size: int) -> None:
    ws = _repo(tmp_path, object_format)
    if version == 3:  # Git writes version 3 only when an entry uses an extended flag
        write(ws / "intent.txt", "later\n")
        git(ws, "add", "-N", "intent.txt")
    git(ws, "update-index", "--index-version", str(version))
    parsed = parse_index((ws / ".git" / "index").read_bytes(), hash_size)
    assert parsed.version == version
    assert [(e.path, e.mode) for e in parsed.entries] == _listing(ws)
    sizes = {e.path: e.size for e in parsed.entries}
    assert sizes[b"exe.sh"] == len("#!/bin/sh\n") and sizes[b"link"] == len("exe.sh")


def test_flags_are_read(tmp_path: Path) -> None:
    """Assume-unchanged (base flag), skip-worktree and intent-to-add (extended flags, v3)."""
    ws = _repo(tmp_path)
    git(ws, "update-index", "--assume-unchanged", "exe.sh")
    git(ws, "update-index", "--skip-worktree", "link")
    write(ws / "later.txt", "x")
    git(ws, "add", "-N", "later.txt")
    parsed = parse_index((ws / ".git" / "index").read_bytes(), 20)
    flags = {e.path: (e.assume_valid, e.skip_worktree, e.intent_to_add) for e in parsed.entries}
    assert flags[b"exe.sh"] == (True, False, False)
    assert flags[b"link"] == (False, True, False)
    assert flags[b"later.txt"] == (False, False, True)
    assert flags[b"dir0/file-00.txt"] == (False, False, False)


def test_unmerged_stages_are_read(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "m")
    write(ws / "f.txt", "base\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    git(ws, "checkout", "-q", "-b", "other")
    write(ws / "f.txt", "other\n")
    git(ws, "commit", "-q", "-am", "other")
    git(ws, "checkout", "-q", "main")
    write(ws / "f.txt", "main\n")
    git(ws, "commit", "-q", "-am", "main")
    git(ws, "merge", "other", check=False)
    parsed = parse_index((ws / ".git" / "index").read_bytes(), 20)
    assert sorted(e.stage for e in parsed.entries if e.path == b"f.txt") == [1, 2, 3]


def test_split_index_shows_its_required_extension(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    git(ws, "update-index", "--split-index")
    parsed = parse_index((ws / ".git" / "index").read_bytes(), 20)
    assert b"link" in parsed.extensions


def test_checksum_mismatch_is_refused_and_skip_hash_accepted(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    data = bytearray((ws / ".git" / "index").read_bytes())
    data[40] ^= 0xFF  # a byte of the first entry's stat data
    with pytest.raises(IndexFormatError) as caught:
        parse_index(bytes(data), 20)
    assert caught.value.reason == "checksum"
    zeroed = bytes(data[:-20]) + bytes(20)  # index.skipHash: an all-zero trailer is not checked
    assert len(parse_index(zeroed, 20).entries) == 32


@pytest.mark.parametrize("data,reason", [
    (b"", "truncated"), (b"XXXX" + bytes(28), "signature"),
    (b"DIRC\x00\x00\x00\x05\x00\x00\x00\x00" + bytes(20), "version"),
])
def test_malformed_headers(data: bytes, reason: str) -> None:
    with pytest.raises(IndexFormatError) as caught:
        parse_index(data, 20)
    assert caught.value.reason == reason
