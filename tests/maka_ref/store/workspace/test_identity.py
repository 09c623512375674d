"""Workspace identity (spec 20 §6; §8 items 70–82; §9 items 27–29, 36).

Real directories under ``tmp_path``, the real ``git`` executable, real processes for the
concurrency scenario. Expected values are the spec's (codes, marker shape, identity prefix).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from maka_ref._store.workspace import identity as ws_module
from maka_ref._store.errors import StoreError
from maka_ref._store.workspace.identity import (
    MARKER_FILE_NAME,
    WorkspaceIdentityError,
    compare_workspace,
    format_workspace_marker,
    parse_workspace_marker,
    read_workspace_identity,
    resolve_workspace_identity,
)

PREFIX = "workspace:v1:"
RULE = ".maka-workspace.json"
REPO_ROOT = Path(__file__).resolve().parents[4]
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git executable not installed")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file semantics")


# ------------------------------------------------------------------ helpers


def _clean_git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return env


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=_clean_git_env(), capture_output=True,
                          text=True, check=True)
    return done.stdout


def porcelain(cwd: Path) -> str:
    return git(cwd, "status", "--porcelain", "--untracked-files=all")


def exclude_path(cwd: Path) -> Path:
    return Path(git(cwd, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude").strip())


def rule_lines(path: Path) -> int:
    return path.read_bytes().split(b"\n").count(RULE.encode())


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(RULE + "."))


def has_git_ancestor(path: Path) -> bool:
    return any((p / ".git").exists() for p in [path, *path.parents])


@pytest.fixture()
def plain_dir(tmp_path: Path) -> Path:
    if has_git_ancestor(tmp_path):
        pytest.skip("tmp_path lies inside a Git work tree; non-Git scenarios need a plain directory")
    d = tmp_path / "plain"
    d.mkdir()
    return d


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    if GIT is None:
        pytest.skip("git executable not installed")
    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q")
    return d


def io_failed(path: Path, **kwargs: object) -> WorkspaceIdentityError:
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(path, **kwargs)  # type: ignore[arg-type]
    assert info.value.code == "workspace_io_failed", info.value
    return info.value


# ------------------------------------------------------------------ §8 items 70–82


def test_item_70_new_workspace_marker_shape(plain_dir: Path) -> None:
    """§8 item 70: marker JSON deep-equals ``{schemaVersion: 1, workspaceId: <identity minus prefix>}``."""
    result = resolve_workspace_identity(plain_dir)
    assert result.identity.startswith(PREFIX)
    assert result.marker_created is True
    assert result.workspace_path == str(plain_dir.resolve())
    marker = plain_dir / MARKER_FILE_NAME
    assert json.loads(marker.read_text()) == {"schemaVersion": 1, "workspaceId": result.identity[len(PREFIX):]}
    # §6.1 writer form: compact, schemaVersion first, trailing newline; new ids are lowercase v4.
    workspace_id = result.identity[len(PREFIX):]
    assert marker.read_bytes() == f'{{"schemaVersion":1,"workspaceId":"{workspace_id}"}}\n'.encode()
    assert workspace_id == workspace_id.lower() and workspace_id[14] == "4"
    assert marker.stat().st_mode & 0o777 == 0o600  # §6.2 step 5: temp file mode 0600, linked
    assert leftovers(plain_dir) == []  # the temporary file is always removed
    again = resolve_workspace_identity(plain_dir)
    assert (again.identity, again.marker_created) == (result.identity, False)


@needs_git
def test_item_71_git_repo_status_clean(repo: Path) -> None:
    """§8 item 71: Git repo → ``git status --porcelain`` empty after resolution."""
    resolve_workspace_identity(repo)
    assert (repo / MARKER_FILE_NAME).exists()
    assert porcelain(repo) == ""
    assert rule_lines(exclude_path(repo)) == 1


@needs_git
def test_item_72_marker_before_git_init(plain_dir: Path) -> None:
    """§8 item 72: marker created before ``git init`` → same identity after init, tree clean."""
    first = resolve_workspace_identity(plain_dir)
    git(plain_dir, "init", "-q")
    second = resolve_workspace_identity(plain_dir)
    assert second.identity == first.identity and second.marker_created is False
    assert porcelain(plain_dir) == ""


@needs_git
def test_item_73_nested_workspace_in_linked_worktree(repo: Path, tmp_path: Path) -> None:
    """§8 item 73: nested workspace inside a linked worktree → linked worktree clean."""
    (repo / "tracked.txt").write_text("x\n")
    git(repo, "add", "tracked.txt")
    git(repo, "commit", "-q", "-m", "init")
    worktree = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(worktree))
    nested = worktree / "packages" / "app"
    nested.mkdir(parents=True)
    result = resolve_workspace_identity(nested)
    assert (nested / MARKER_FILE_NAME).exists() and result.marker_created
    assert porcelain(worktree) == ""
    assert porcelain(repo) == ""
    assert rule_lines(exclude_path(worktree)) == 1


@needs_git
def test_item_74_two_resolutions_one_exclude_line(repo: Path) -> None:
    """§8 item 74: two resolutions → exactly one exclude line."""
    a = resolve_workspace_identity(repo)
    b = resolve_workspace_identity(repo)
    assert a.identity == b.identity
    assert rule_lines(exclude_path(repo)) == 1


_CHILD = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from maka_ref._store.workspace.identity import resolve_workspace_identity
go = sys.argv[3]
deadline = time.monotonic() + 30
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.001)
r = resolve_workspace_identity(sys.argv[2])
print(r.identity, int(r.marker_created))
"""


@needs_git
def test_item_75_eight_concurrent_processes_one_identity(repo: Path, tmp_path: Path) -> None:
    """§8 item 75 / §9 item 28: 8 concurrent resolutions (real processes) → one identity, tree clean."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(REPO_ROOT), str(repo), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_clean_git_env())
        for _ in range(8)
    ]
    time.sleep(0.3)  # let every child import and spin on the start file
    go.write_text("")
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out.split())
    identities = {identity for identity, _ in outputs}
    assert len(identities) == 1
    identity = identities.pop()
    assert identity.startswith(PREFIX)
    assert sum(int(created) for _, created in outputs) == 1  # exactly one process published
    assert json.loads((repo / MARKER_FILE_NAME).read_text())["workspaceId"] == identity[len(PREFIX):]
    assert porcelain(repo) == ""
    assert rule_lines(exclude_path(repo)) == 1
    assert leftovers(repo) == []


@needs_git
@pytest.mark.parametrize("size_kind", ["exactly_1_mib", "append_would_exceed", "over_1_mib"])
def test_item_76_exclude_file_at_limit(repo: Path, size_kind: str) -> None:
    """§8 item 76: exclude file already 1 MiB → ``workspace_io_failed``, exclude unchanged, no marker."""
    path = exclude_path(repo)
    size = {"exactly_1_mib": 1024 * 1024, "append_would_exceed": 1024 * 1024 - 5,
            "over_1_mib": 1024 * 1024 + 1}[size_kind]
    content = (b"# filler\n" * (size // 9 + 1))[:size]
    path.write_bytes(content)
    io_failed(repo)
    assert path.read_bytes() == content
    assert not (repo / MARKER_FILE_NAME).exists()
    assert leftovers(repo) == []


@needs_git
def test_item_77_git_file_to_missing_gitdir(plain_dir: Path) -> None:
    """§8 item 77: ``.git`` file pointing to a missing gitdir → ``workspace_io_failed``, no marker."""
    (plain_dir / ".git").write_text(f"gitdir: {plain_dir / 'missing-gitdir'}\n")
    io_failed(plain_dir)
    assert not (plain_dir / MARKER_FILE_NAME).exists()


def test_item_78_non_git_workspace_with_empty_path(plain_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§8 item 78 / §6.3: non-Git workspace with empty ``PATH`` → resolves (Git never invoked)."""
    monkeypatch.setenv("PATH", "")
    result = resolve_workspace_identity(plain_dir)
    assert (plain_dir / MARKER_FILE_NAME).exists() and result.marker_created


@needs_git
def test_item_79_git_workspace_with_empty_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§8 item 79 / §9 item 29: Git workspace with empty ``PATH`` → fails, no marker."""
    monkeypatch.setenv("PATH", "")
    io_failed(repo)
    assert not (repo / MARKER_FILE_NAME).exists()
    # the explicit env parameter behaves the same
    monkeypatch.undo()
    io_failed(repo, env={"PATH": ""})
    assert not (repo / MARKER_FILE_NAME).exists()


def _resolve_as_unprivileged_user(path: Path) -> str:
    """Fork, drop to uid/gid 65534, resolve; return the error code (or "ok")."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read_end)
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                resolve_workspace_identity(path)
                outcome = "ok"
            except WorkspaceIdentityError as exc:
                outcome = exc.code
        except BaseException as exc:  # noqa: BLE001
            outcome = f"setup:{type(exc).__name__}"
        os.write(write_end, outcome.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        outcome = reader.read().decode()
    os.waitpid(pid, 0)
    return outcome


@posix_only
def test_item_80_read_only_directory(plain_dir: Path) -> None:
    """§8 item 80: read-only (0555) unmarked directory → ``workspace_io_failed``, no marker.

    As root, permission bits do not stop writes, so the resolution runs in a forked child that
    drops to uid/gid 65534 (nobody) inside a world-traversable temporary directory.
    """
    if os.geteuid() != 0:
        plain_dir.chmod(0o555)
        try:
            io_failed(plain_dir)
            assert not (plain_dir / MARKER_FILE_NAME).exists()
        finally:
            plain_dir.chmod(0o755)
        return
    base = Path(tempfile.mkdtemp(prefix="maka-ro-"))
    try:
        base.chmod(0o755)
        workspace = base / "ws"
        workspace.mkdir()
        workspace.chmod(0o555)
        if has_git_ancestor(workspace):
            pytest.skip("temporary directory lies inside a Git work tree")
        outcome = _resolve_as_unprivileged_user(workspace)
        if outcome.startswith("setup:"):
            pytest.skip(f"cannot drop privileges in this environment ({outcome})")
        assert outcome == "workspace_io_failed"
        assert not (workspace / MARKER_FILE_NAME).exists()
        assert leftovers(workspace) == []
    finally:
        (base / "ws").chmod(0o755) if (base / "ws").exists() else None
        shutil.rmtree(base, ignore_errors=True)


def test_item_81_tar_round_trip(plain_dir: Path, tmp_path: Path) -> None:
    """§8 item 81: tar round-trip → same identity, marker bytes unchanged, prefix ``workspace:v1:``."""
    (plain_dir / "notes.txt").write_text("content\n")
    original = resolve_workspace_identity(plain_dir)
    marker_bytes = (plain_dir / MARKER_FILE_NAME).read_bytes()
    archive = tmp_path / "ws.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(plain_dir, arcname="ws")
    restored_root = tmp_path / "restored"
    restored_root.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(restored_root, filter="tar")
    restored = restored_root / "ws"
    assert (restored / MARKER_FILE_NAME).read_bytes() == marker_bytes
    again = resolve_workspace_identity(restored)
    assert again.identity == original.identity and again.identity.startswith(PREFIX)
    assert again.marker_created is False
    assert (restored / MARKER_FILE_NAME).read_bytes() == marker_bytes


@needs_git
def test_item_82_marker_copied_then_git_init(plain_dir: Path, tmp_path: Path) -> None:
    """§8 item 82: marker copied into a new directory then ``git init`` → same identity, tree clean."""
    original = resolve_workspace_identity(plain_dir)
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    shutil.copy2(plain_dir / MARKER_FILE_NAME, copy_dir / MARKER_FILE_NAME)
    git(copy_dir, "init", "-q")
    again = resolve_workspace_identity(copy_dir)
    assert again.identity == original.identity
    assert porcelain(copy_dir) == ""


# ------------------------------------------------------------------ §6.1 marker format, §9 item 27


def test_uppercase_and_other_versions_accepted_verbatim(plain_dir: Path) -> None:
    """§9 item 27: versions 1–8, either case; the identity keeps the marker's text verbatim."""
    workspace_id = "123E4567-E89B-12D3-A456-426614174000"
    (plain_dir / MARKER_FILE_NAME).write_text(
        json.dumps({"workspaceId": workspace_id, "schemaVersion": 1}, indent=2)  # any formatting/order
    )
    result = resolve_workspace_identity(plain_dir)
    assert result.identity == PREFIX + workspace_id and result.marker_created is False


@pytest.mark.parametrize(
    "content",
    [
        b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-02d3-a456-426614174000"}',  # version 0
        b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-92d3-a456-426614174000"}',  # version 9
        b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-42d3-c456-426614174000"}',  # variant c
        b'{"schemaVersion":1,"workspaceId":"123e4567e89b42d3a456426614174000"}',
        b'{"schemaVersion":2,"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}',
        b'{"schemaVersion":true,"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}',
        b'{"schemaVersion":"1","workspaceId":"123e4567-e89b-42d3-a456-426614174000"}',
        b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-42d3-a456-426614174000","x":1}',
        b'{"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}',
        b'[1]',
        b'not json',
        b'',
        b'\xff\xfe',
    ],
)
def test_invalid_marker_contents(plain_dir: Path, content: bytes) -> None:
    """§6.1 / §6.2 step 3: invalid JSON or wrong shape → ``invalid_workspace_marker`` (never rebound)."""
    (plain_dir / MARKER_FILE_NAME).write_bytes(content)
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "invalid_workspace_marker"
    assert (plain_dir / MARKER_FILE_NAME).read_bytes() == content


def test_marker_size_limit(plain_dir: Path) -> None:
    """§6.1: max size 4096 bytes (4096 accepted, 4097 rejected)."""
    body = b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}'
    marker = plain_dir / MARKER_FILE_NAME
    marker.write_bytes(body + b" " * (4096 - len(body)))
    assert resolve_workspace_identity(plain_dir).identity.endswith("426614174000")
    marker.write_bytes(body + b" " * (4097 - len(body)))
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "invalid_workspace_marker"


@posix_only
def test_symlink_marker_rejected(plain_dir: Path, tmp_path: Path) -> None:
    """§6.2 step 3: a symlinked marker → ``invalid_workspace_marker`` (even to a valid marker)."""
    target = tmp_path / "elsewhere.json"
    target.write_bytes(format_workspace_marker("123e4567-e89b-42d3-a456-426614174000"))
    (plain_dir / MARKER_FILE_NAME).symlink_to(target)
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "invalid_workspace_marker"


@posix_only
def test_fifo_marker_rejected_without_blocking(plain_dir: Path) -> None:
    """§6.2 step 3: a FIFO marker → ``invalid_workspace_marker`` (non-blocking open)."""
    os.mkfifo(plain_dir / MARKER_FILE_NAME)
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "invalid_workspace_marker"


def test_directory_marker_rejected(plain_dir: Path) -> None:
    (plain_dir / MARKER_FILE_NAME).mkdir()
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "invalid_workspace_marker"


def test_marker_codec_helpers() -> None:
    """§6.1 writer example and reader tolerance."""
    example = b'{"schemaVersion":1,"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}\n'
    assert format_workspace_marker("123e4567-e89b-42d3-a456-426614174000") == example
    assert parse_workspace_marker(example) == "123e4567-e89b-42d3-a456-426614174000"
    assert parse_workspace_marker(b' {\n "workspaceId" : "123e4567-e89b-42d3-a456-426614174000",'
                                  b' "schemaVersion": 1.0 }') == "123e4567-e89b-42d3-a456-426614174000"


# ------------------------------------------------------------------ §6.2 steps 1–2, 5, other paths


def test_missing_path_is_workspace_not_found(tmp_path: Path) -> None:
    """§6.2 step 1: ENOENT / ENOTDIR → ``workspace_not_found``."""
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "absent", tmp_path / "file" / "below"):
        with pytest.raises(WorkspaceIdentityError) as info:
            resolve_workspace_identity(path)
        assert info.value.code == "workspace_not_found"


def test_file_is_invalid_workspace(tmp_path: Path) -> None:
    """§6.2 step 2: not a directory → ``invalid_workspace``."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(tmp_path / "file")
    assert info.value.code == "invalid_workspace"
    assert isinstance(info.value, StoreError)


@posix_only
def test_symlinked_path_resolves_to_canonical_root(plain_dir: Path, tmp_path: Path) -> None:
    """§6.2 step 1: realpath; the marker goes to the canonical root; trailing separators removed."""
    link = tmp_path / "link"
    link.symlink_to(plain_dir)
    result = resolve_workspace_identity(str(link) + "/")
    assert result.workspace_path == str(plain_dir.resolve())
    assert (plain_dir / MARKER_FILE_NAME).exists()


def test_moved_workspace_keeps_identity(plain_dir: Path, tmp_path: Path) -> None:
    """§6.1: a moved workspace keeps its identity (never re-bound because of path or inode)."""
    before = resolve_workspace_identity(plain_dir)
    moved = tmp_path / "moved"
    plain_dir.rename(moved)
    after = resolve_workspace_identity(moved)
    assert after.identity == before.identity and after.workspace_path == str(moved.resolve())


@needs_git
def test_git_environment_overrides_are_removed(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§6.3: ``GIT_DIR``/``GIT_WORK_TREE``/``GIT_INDEX_FILE``/``GIT_COMMON_DIR`` are removed."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    resolve_workspace_identity(repo)
    monkeypatch.undo()
    assert rule_lines(exclude_path(repo)) == 1
    assert rule_lines(exclude_path(other)) == 0
    assert porcelain(repo) == ""


@needs_git
def test_exclude_without_trailing_newline_gets_a_separator(repo: Path) -> None:
    """§6.3: append the line, adding a newline separator if needed."""
    path = exclude_path(repo)
    path.write_bytes(b"*.log")
    resolve_workspace_identity(repo)
    assert path.read_bytes() == b"*.log\n.maka-workspace.json\n"


@needs_git
def test_marked_workspace_still_gets_the_exclude_rule(repo: Path) -> None:
    """§6.2 step 4: marker present → ensure the Git ignore rule, return the identity."""
    (repo / MARKER_FILE_NAME).write_bytes(format_workspace_marker("123e4567-e89b-42d3-a456-426614174000"))
    assert resolve_workspace_identity(repo).identity == PREFIX + "123e4567-e89b-42d3-a456-426614174000"
    assert porcelain(repo) == ""


def test_directory_replaced_during_creation_is_identity_changed(
    plain_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§6.2 step 5 / §9 item 36: the directory's (device, inode) changed → ``workspace_identity_changed``."""
    real_fsync = os.fsync
    swapped = []

    def fsync_then_swap(fd: int) -> None:
        real_fsync(fd)
        if not swapped:  # first fsync = the temporary marker; swap the directory afterwards
            swapped.append(True)
            plain_dir.rename(tmp_path / "old")
            plain_dir.mkdir()

    monkeypatch.setattr(ws_module.os, "fsync", fsync_then_swap)
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(plain_dir)
    assert info.value.code == "workspace_identity_changed"
    assert not (plain_dir / MARKER_FILE_NAME).exists()
    assert not (tmp_path / "old" / MARKER_FILE_NAME).exists()
    if os.name == "posix":  # the temp file is removed from the directory it was created in
        assert leftovers(tmp_path / "old") == []


def test_link_failure_is_io_failed_and_temp_removed(plain_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§6.2 steps 5–6: any other failure → ``workspace_io_failed`` wrapping the cause; temp always removed."""

    def refuse(*_: object, **__: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(ws_module.os, "link", refuse)
    error = io_failed(plain_dir)
    assert isinstance(error.__cause__, PermissionError)
    assert not (plain_dir / MARKER_FILE_NAME).exists()
    assert leftovers(plain_dir) == []


# ------------------------------------------------------------------ read-only resolution


@needs_git
def test_read_workspace_identity_never_creates(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Brief: ``read_workspace_identity`` never creates a marker and never runs Git."""
    before = exclude_path(repo).read_bytes()
    monkeypatch.setenv("PATH", "")  # Git would fail if it were invoked
    assert read_workspace_identity(repo) is None
    with pytest.raises(WorkspaceIdentityError) as info:
        read_workspace_identity(repo, require=True)
    assert info.value.code == "workspace_unmarked"
    assert not (repo / MARKER_FILE_NAME).exists()
    monkeypatch.undo()
    assert exclude_path(repo).read_bytes() == before
    created = resolve_workspace_identity(repo)
    read = read_workspace_identity(repo)
    assert read is not None and read.identity == created.identity and read.marker_created is False


# ------------------------------------------------------------------ §6.4 gate vs diagnostic


def test_identity_mismatch_is_a_gate() -> None:
    """§6.4 / §3.6 (i): identities differ → ``workspace_identity_mismatch``."""
    gates, diagnostics = compare_workspace("workspace:v1:a", "workspace:v1:b", "/w", "/w")
    assert gates == ("workspace_identity_mismatch",) and diagnostics == ()


def test_missing_recorded_identity_is_a_gate() -> None:
    """§6.4 / §3.2 step 4: no recorded identity → ``workspace_identity_missing``."""
    assert compare_workspace(None, "workspace:v1:a", "/w", "/w")[0] == ("workspace_identity_missing",)


def test_execution_stage_uses_identity_changed() -> None:
    """§6.4: execution compares current vs plan snapshot → ``workspace_identity_changed``."""
    assert compare_workspace("workspace:v1:a", "workspace:v1:b", None, None, stage="execution")[0] == (
        "workspace_identity_changed",
    )


def test_path_difference_is_only_a_diagnostic() -> None:
    """§6.4 / §9 item 8 / §8 item 17: cwd differences never gate; one ``workspace_location_changed``."""
    gates, diagnostics = compare_workspace("workspace:v1:a", "workspace:v1:a", "/workspace/repo", "/fresh-sandbox/repo")
    assert gates == ()
    assert diagnostics == (
        {"code": "workspace_location_changed",
         "detail": {"sourceCwd": "/workspace/repo", "currentCwd": "/fresh-sandbox/repo"}},
    )


@pytest.mark.parametrize(
    ("a", "b"), [("/w/repo/", "/w/repo"), ("C:\\Repo\\", "c:/repo"), ("D:/X", "d:/x/")]
)
def test_normalized_equal_paths_produce_no_diagnostic(a: str, b: str) -> None:
    """§3.6 (h): ``\\`` → ``/``, trailing ``/`` stripped, drive-letter paths lower-cased."""
    assert compare_workspace("workspace:v1:a", "workspace:v1:a", a, b) == ((), ())
