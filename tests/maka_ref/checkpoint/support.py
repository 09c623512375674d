"""Builders for the checkpoint tests: real repositories in tmp dirs, the user's own ``git``
(a plain environment with a fixed identity), and a snapshot of everything spec-phase4 §3.9
says a carrier must leave byte-identical.

Expected values in the tests come from the user's ``git`` or from ``hashlib`` — never from
the carrier under test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from maka_ref._checkpoint import GitCheckpointCarrier

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="the git program is not installed")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and symlinks")

IDENTITY = "workspace:v1:123e4567-e89b-42d3-a456-426614174000"
OTHER_IDENTITY = "workspace:v1:9b2f3c1d-0a4e-4b6f-8c7d-112233445566"


def user_env() -> dict[str, str]:
    """The user's environment for their own git commands: nothing inherited from GIT_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="User", GIT_AUTHOR_EMAIL="user@example.invalid",
               GIT_COMMITTER_NAME="User", GIT_COMMITTER_EMAIL="user@example.invalid", GIT_OPTIONAL_LOCKS="0")
    return env


def git(cwd: Path | str, *args: str, input: bytes | None = None, check: bool = True) -> str:
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=user_env(), input=input, capture_output=True,
                          check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", "surrogateescape")


def init_repo(path: Path, *, object_format: str = "sha1") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main", f"--object-format={object_format}")
    return path


def write(path: Path, text: str | bytes, *, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    if mode is not None:
        os.chmod(path, mode)
    return path


def rich_repo(tmp_path: Path, *, object_format: str = "sha1") -> Path:
    """A repository with every kind of file spec-phase4 §2.1 names, a commit, a stash, and
    uncommitted work: tracked-modified, tracked-deleted, staged-new, untracked, ignored,
    executable, a symlink, the runtime's own files."""
    ws = init_repo(tmp_path / "ws", object_format=object_format)
    write(ws / ".gitignore", "*.log\nbuild/\n")
    write(ws / "src" / "app.py", "print('v1')\n")
    write(ws / "docs" / "readme.md", "# readme\n")
    write(ws / "gone.txt", "to be deleted\n")
    write(ws / "stash-me.txt", "base\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    write(ws / "stash-me.txt", "stashed change\n")
    git(ws, "stash", "push", "-q", "-m", "user stash")
    write(ws / "src" / "app.py", "print('v2, uncommitted')\n")  # tracked, modified
    (ws / "gone.txt").unlink()  # tracked, deleted
    write(ws / "staged.txt", "staged but not committed\n")
    git(ws, "add", "staged.txt")
    write(ws / "notes" / "untracked.txt", "untracked\n")
    write(ws / "debug.log", "ignored\n")
    write(ws / "build" / "out.bin", b"\x00\x01ignored dir")
    write(ws / "tool.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    os.symlink("src/app.py", ws / "link-to-app")
    write(ws / "runtime.sqlite", b"SQLite format 3\x00 runtime store")
    write(ws / ".maka-workspace.json", '{"schemaVersion":1,"workspaceId":"123e4567-e89b-42d3-a456-426614174000"}\n')
    write(ws / ".maka" / "scripts" / "s.json", "{}")
    return ws


def _file_state(path: Path) -> tuple[str, int, str]:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return ("link", 0, os.readlink(path))
    return ("file", stat.S_IMODE(info.st_mode), hashlib.sha256(path.read_bytes()).hexdigest())


def worktree_files(ws: Path) -> dict[str, tuple[str, int, str]]:
    """Every file and link of the worktree (``.git`` aside): path → (kind, mode, content)."""
    found: dict[str, tuple[str, int, str]] = {}
    for current, dirs, files in os.walk(ws, followlinks=False):
        if Path(current) == ws and ".git" in dirs:
            dirs.remove(".git")
        for name in files + [d for d in dirs if os.path.islink(os.path.join(current, d))]:
            full = Path(current) / name
            found[str(full.relative_to(ws))] = _file_state(full)
    return found


def git_dir(ws: Path) -> Path:
    return Path(git(ws, "rev-parse", "--absolute-git-dir").strip())


def user_state(ws: Path) -> dict[str, Any]:
    """What spec-phase4 §3.9 requires byte-identical: the index (bytes, inode, mtime), refs
    outside refs/maka/, HEAD, the stash and its reflog, the config, every worktree file, and
    the absence of the user's lock files."""
    gdir = git_dir(ws)
    common = Path(git(ws, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    index = gdir / "index"
    index_state: Any = None
    if index.exists():
        info = os.stat(index)
        index_state = (hashlib.sha256(index.read_bytes()).hexdigest(), info.st_ino, info.st_mtime_ns)
    refs = [line for line in git(ws, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith("refs/maka/")]
    stash_log = common / "logs" / "refs" / "stash"
    return {
        "index": index_state,
        "refs": refs,
        "head": (gdir / "HEAD").read_bytes(),
        "stash": git(ws, "stash", "list"),
        "stash_log": stash_log.read_bytes() if stash_log.exists() else None,
        "config": (common / "config").read_bytes(),
        "worktree": worktree_files(ws),
        "locks": sorted(str(p) for p in list(gdir.glob("*.lock")) + list(common.glob("*.lock"))),
    }


def maka_refs(ws: Path) -> list[str]:
    return git(ws, "for-each-ref", "--format=%(refname)", "refs/maka/").split()


def object_count(ws: Path) -> int:
    """Loose plus packed objects of the repository (``git count-objects -v``)."""
    fields = dict(line.split(": ") for line in git(ws, "count-objects", "-v").splitlines())
    return int(fields["count"]) + int(fields["in-pack"])


def plain_tree_of(directory: Path, tmp: Path) -> str:
    """The tree a plain ``git add -A && git write-tree`` gives for a copy of ``directory``'s
    files (its ``.git`` left out) — the expected value of a capture, computed by Git alone."""
    copy = tmp / "plain-copy"
    shutil.copytree(directory, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    return git(copy, "write-tree").strip()


def carrier(**kwargs: Any) -> GitCheckpointCarrier:
    return GitCheckpointCarrier(**kwargs)
