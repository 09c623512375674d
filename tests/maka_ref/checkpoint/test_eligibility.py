"""Every eligibility code of spec-phase4 §3.3 / §11.1 on a real repository (scenarios 6–17),
and capture refusing with the same code before anything reaches the user's object database."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from maka_ref._checkpoint import (
    ELIGIBILITY_CODES,
    CheckpointError,
    CheckpointPolicy,
    GitCheckpointCarrier,
)
from tests.maka_ref.checkpoint.support import (
    GIT,
    IDENTITY,
    git,
    init_repo,
    maka_refs,
    needs_git,
    object_count,
    posix_only,
    user_state,
    write,
)

pytestmark = [needs_git, posix_only]

def _committed(tmp_path: Path, name: str = "ws") -> Path:
    ws = init_repo(tmp_path / name)
    write(ws / "f.txt", "base\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    return ws


def _expect(workspace: Path | str, code: str, carrier: GitCheckpointCarrier | None = None, **details: object) -> None:
    """Eligibility answers ``code``; capture refuses with it too, leaving no ref and the user's
    state (when there is a repository) unchanged."""
    carrier = carrier or GitCheckpointCarrier()
    path = Path(workspace)
    answer = carrier.eligibility(str(path))
    assert not answer.eligible and answer.failure is not None
    assert answer.failure.code == code, answer.failure
    for key, value in details.items():
        assert answer.failure.details.get(key) == value
    assert answer.as_json()["code"] == code
    has_repo = Path(path).is_dir() and (Path(path) / ".git").exists()
    before = user_state(Path(path)) if has_repo else None
    with pytest.raises(CheckpointError) as caught:
        carrier.capture(str(path), IDENTITY)
    assert caught.value.code == code and caught.value.ineligible
    if has_repo:
        assert user_state(Path(path)) == before
        assert maka_refs(Path(path)) == []


def test_missing_path_and_a_file(tmp_path: Path) -> None:
    _expect(tmp_path / "absent", "workspace_not_found")
    write(tmp_path / "file", "x")
    _expect(tmp_path / "file", "workspace_not_a_directory")


def test_plain_directory_and_subdirectory_and_bare(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    _expect(plain, "not_a_git_repository")
    ws = _committed(tmp_path)
    (ws / "sub").mkdir()
    _expect(ws / "sub", "workspace_not_worktree_root")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    _expect(bare, "bare_repository")
    _expect(ws / ".git", "bare_repository")


def _conflict(tmp_path: Path) -> Path:
    ws = _committed(tmp_path)
    git(ws, "checkout", "-q", "-b", "other")
    write(ws / "f.txt", "other\n")
    git(ws, "commit", "-q", "-am", "other")
    git(ws, "checkout", "-q", "main")
    write(ws / "f.txt", "main\n")
    git(ws, "commit", "-q", "-am", "main")
    return ws


@pytest.mark.parametrize("operation,start", [
    ("merge", lambda ws: git(ws, "merge", "other", check=False)),
    ("rebase", lambda ws: git(ws, "rebase", "other", check=False)),
    ("cherry_pick", lambda ws: git(ws, "cherry-pick", "other", check=False)),
    ("revert", lambda ws: (write(ws / "f.txt", "third\n"), git(ws, "commit", "-q", "-am", "third"),
                           git(ws, "revert", "--no-edit", "HEAD~1", check=False))),
    ("am", lambda ws: git(ws, "am", input=git(ws, "format-patch", "--stdout", "main..other").encode(),
                          check=False)),
])
def test_operation_in_progress(tmp_path: Path, operation: str, start: Callable[[Path], object]) -> None:
    ws = _conflict(tmp_path)
    start(ws)
    _expect(ws, "repository_operation_in_progress", operation=operation)


def test_submodules_three_ways(tmp_path: Path) -> None:
    ws = _committed(tmp_path, "a")
    write(ws / ".gitmodules", '[submodule "x"]\n\tpath = x\n\turl = ../x\n')
    _expect(ws, "submodules_unsupported", reason="gitmodules")

    ws = _committed(tmp_path, "b")
    head = git(ws, "rev-parse", "HEAD").strip()
    git(ws, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    _expect(ws, "submodules_unsupported", reason="gitlink")

    ws = _committed(tmp_path, "c")
    nested = _committed(ws / "nested-parent", "inner")
    assert nested.parent.name == "nested-parent"
    _expect(ws, "submodules_unsupported", reason="nested_repository")


def test_sparse_checkout(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    write(ws / "keep" / "a.txt", "a\n")
    write(ws / "drop" / "b.txt", "b\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "two dirs")
    git(ws, "sparse-checkout", "set", "keep")
    assert not (ws / "drop").exists()
    _expect(ws, "sparse_checkout_unsupported")


def test_split_index_and_corrupt_index(tmp_path: Path) -> None:
    ws = _committed(tmp_path, "split")
    git(ws, "update-index", "--split-index")
    _expect(ws, "index_unsupported", reason="link")
    ws = _committed(tmp_path, "corrupt")
    index = ws / ".git" / "index"
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF
    index.write_bytes(bytes(data))
    _expect(ws, "index_unsupported", reason="checksum")


def test_non_utf8_path(tmp_path: Path) -> None:
    ws = _committed(tmp_path)
    with open(os.path.join(os.fsencode(ws), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"latin-1 name\n")
    _expect(ws, "path_not_utf8")


def test_conversion_attributes(tmp_path: Path) -> None:
    ws = _committed(tmp_path)
    write(ws / ".gitattributes", "*.png binary\n")
    write(ws / "image.png", b"\x89PNG\r\n")
    assert GitCheckpointCarrier().eligibility(str(ws)).eligible  # binary = -text: no conversion
    write(ws / ".gitattributes", "*.png binary\n*.txt text eol=crlf\n")
    _expect(ws, "conversion_attributes_unsupported", path="f.txt", attribute="text")
    (ws / ".gitattributes").unlink()
    write(ws / ".git" / "info" / "attributes", "*.txt filter=lfs\n")
    _expect(ws, "conversion_attributes_unsupported", path="f.txt", attribute="filter")


def test_limits_refuse_before_hashing(tmp_path: Path) -> None:
    """§2.3: a too-large untracked file is refused before it reaches the object database."""
    ws = _committed(tmp_path)
    write(ws / "small.txt", "12345")
    write(ws / "big.bin", os.urandom(4096))
    objects = object_count(ws)
    _expect(ws, "file_too_large", GitCheckpointCarrier(policy=CheckpointPolicy(max_file_bytes=4095)),
            path="big.bin", observed=4096)
    assert object_count(ws) == objects
    _expect(ws, "too_many_files", GitCheckpointCarrier(policy=CheckpointPolicy(max_files=2)), observed=3)
    _expect(ws, "workspace_too_large", GitCheckpointCarrier(policy=CheckpointPolicy(max_total_bytes=4100)))
    assert object_count(ws) == objects


def _fake_git(directory: Path, body: str) -> str:
    directory.mkdir()
    script = directory / "git"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(directory)


def test_git_missing_or_too_old(tmp_path: Path) -> None:
    ws = _committed(tmp_path)
    _expect(ws, "git_unavailable", GitCheckpointCarrier(git_search_path=str(tmp_path / "no-such-dir")))
    # check 1 comes before check 2: a missing workspace is reported as such even without git
    _expect(tmp_path / "absent", "workspace_not_found", GitCheckpointCarrier(git_search_path=str(tmp_path / "none")))
    old = _fake_git(tmp_path / "old", 'echo "git version 2.20.1"\n')
    _expect(ws, "git_version_unsupported", GitCheckpointCarrier(git_search_path=old), version="2.20.1")


def test_unknown_object_format(tmp_path: Path) -> None:
    """No real Git has a third format: a shim forwards to the real git and reports one."""
    ws = _committed(tmp_path)
    shim = _fake_git(tmp_path / "shim", f"""case "$*" in
  *--show-object-format*) "{GIT}" "$@" | sed 's/^sha1$/sha512/' ;;
  *) exec "{GIT}" "$@" ;;
esac
""")
    _expect(ws, "object_format_unsupported", GitCheckpointCarrier(git_search_path=shim), objectFormat="sha512")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give the repo another owner")
def test_repository_of_another_owner(tmp_path: Path) -> None:
    ws = _committed(tmp_path)
    for current, dirs, files in os.walk(ws):
        for name in dirs + files:
            os.lchown(os.path.join(current, name), 4242, 4242)
    os.lchown(ws, 4242, 4242)
    answer = GitCheckpointCarrier().eligibility(str(ws))
    assert answer.failure is not None and answer.failure.code == "repository_ownership_unsafe"


def test_eligible_shapes(tmp_path: Path) -> None:
    """Scenario 17: a linked worktree, an unborn HEAD, an assume-unchanged file."""
    ws = _committed(tmp_path)
    git(ws, "update-index", "--assume-unchanged", "f.txt")
    linked = tmp_path / "linked"
    git(ws, "worktree", "add", "-q", "--detach", str(linked))
    fresh = init_repo(tmp_path / "fresh")
    for path in (ws, linked, fresh):
        assert GitCheckpointCarrier().eligibility(str(path)).eligible


def test_every_eligibility_code_is_expected_by_a_test_of_this_module() -> None:
    """Guard: the closed set of §11.1 and the expectations above name the same codes."""
    source = Path(__file__).read_text()
    assert {code for code in ELIGIBILITY_CODES if f'"{code}"' not in source} == set()
