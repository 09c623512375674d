"""Races (spec-phase4 §9; scenarios 29–31): the user's own commits and checkouts running while
captures run (threads, and a second process), and captures racing each other. The user's
commands must all succeed and leave their state consistent; every checkpoint must verify.

Expected trees come from a plain ``git add -A && git write-tree`` on a copy of the files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from maka_ref._checkpoint import CaptureResult, GitCheckpointCarrier
from tests.maka_ref.checkpoint.support import (
    IDENTITY,
    git,
    git_dir,
    init_repo,
    maka_refs,
    needs_git,
    plain_tree_of,
    posix_only,
    write,
)

pytestmark = [needs_git, posix_only]

REPO_ROOT = Path(__file__).resolve().parents[3]


def _tree_blobs(ws: Path, treeish: str) -> dict[str, str]:
    rows = {}
    for record in git(ws, "ls-tree", "-r", "-z", treeish).split("\0")[:-1]:
        meta, path = record.split("\t", 1)
        rows[path] = meta.split()[2]
    return rows


def _assert_user_consistent(ws: Path) -> None:
    """The user's repository after the race: clean, index equal to HEAD, no lock left."""
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    git(ws, "diff-index", "--cached", "--quiet", "HEAD")
    gdir = git_dir(ws)
    assert list(gdir.glob("*.lock")) == [] and list((gdir / "refs").rglob("*.lock")) == []
    git(ws, "fsck", "--no-dangling", "--no-progress")


def test_user_commits_racing_captures_in_a_thread(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    write(ws / "base.txt", "base\n")
    git(ws, "add", "base.txt")
    git(ws, "commit", "-q", "-m", "base")
    for i in range(20):
        write(ws / "files" / f"f{i:02}.txt", f"final content {i}\n" * 50)
    expected_tree = plain_tree_of(ws, tmp_path)  # the worktree never changes during the race

    carrier = GitCheckpointCarrier()
    captures: list[CaptureResult] = []
    errors: list[Exception] = []
    done = threading.Event()

    def capture_loop() -> None:
        try:
            while not done.is_set() or len(captures) < 3:
                captures.append(carrier.capture(str(ws), IDENTITY))
        except Exception as exc:  # noqa: BLE001 - the main thread asserts on it
            errors.append(exc)

    worker = threading.Thread(target=capture_loop)
    worker.start()
    try:
        for i in range(20):
            git(ws, "add", f"files/f{i:02}.txt")  # check=True: every user command succeeds
            git(ws, "commit", "-q", "-m", f"commit {i}")
    finally:
        done.set()
        worker.join()
    assert errors == []
    assert len(captures) >= 3
    assert {capture.tree_oid for capture in captures} == {expected_tree}
    for capture in captures:
        carrier.verify(str(ws), capture.checkpoint_ref, capture.policy_hash)
    assert git(ws, "rev-parse", "HEAD^{tree}").strip() == expected_tree
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "21"
    assert git(ws, "for-each-ref", "--format=%(refname)", "refs/heads/").split() == ["refs/heads/main"]
    _assert_user_consistent(ws)


CAPTURE_PROCESS = textwrap.dedent("""
    import sys
    from maka_ref._checkpoint import GitCheckpointCarrier
    carrier = GitCheckpointCarrier()
    for _ in range(int(sys.argv[3])):
        print(carrier.capture(sys.argv[1], sys.argv[2]).checkpoint_ref, flush=True)
""")


def test_user_checkouts_racing_captures_in_another_process(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    for i in range(30):
        write(ws / f"f{i:02}.txt", f"branch main {i}\n" * 40)
    write(ws / "only-main.txt", "main only\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "main")
    git(ws, "checkout", "-q", "-b", "other")
    for i in range(30):
        write(ws / f"f{i:02}.txt", f"branch other {i}\n" * 40)
    (ws / "only-main.txt").unlink()
    write(ws / "only-other.txt", "other only\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "other")
    versions: dict[str, set[str]] = {}
    for branch in ("main", "other"):
        for path, oid in _tree_blobs(ws, branch).items():
            versions.setdefault(path, set()).add(oid)
    empty_blob = git(ws, "hash-object", "--stdin", input=b"").strip()

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CAPTURE_PROCESS, str(ws), IDENTITY, "6"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        for round_ in range(12):
            git(ws, "checkout", "-q", "main" if round_ % 2 == 0 else "other")
    finally:
        out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err.decode()
    refs = out.decode().split()
    assert len(refs) == 6 and sorted(refs) == sorted(maka_refs(ws))
    carrier = GitCheckpointCarrier()
    for ref in refs:
        verified = carrier.verify(str(ws), ref, carrier.policy_hash)
        for entry in verified.entries:
            path = entry.path.decode()
            # each path holds some version it had during the capture (§9): one branch's blob,
            # or empty when caught between a checkout's create and write
            assert path in versions and entry.oid in versions[path] | {empty_blob}, path
    assert git(ws, "symbolic-ref", "HEAD").strip() == "refs/heads/other"
    _assert_user_consistent(ws)


def test_concurrent_captures_in_threads_and_processes(tmp_path: Path) -> None:
    ws = init_repo(tmp_path / "ws")
    for i in range(50):
        write(ws / "d" / f"{i}.txt", f"{i}\n" * 20)
    git(ws, "add", "d/0.txt")
    git(ws, "commit", "-q", "-m", "base")
    expected_tree = plain_tree_of(ws, tmp_path)
    carrier = GitCheckpointCarrier()
    barrier = threading.Barrier(4)
    results: list[CaptureResult] = []
    errors: list[Exception] = []

    def one() -> None:
        try:
            barrier.wait()
            results.append(carrier.capture(str(ws), IDENTITY))
        except Exception as exc:  # noqa: BLE001 - the main thread asserts on it
            errors.append(exc)

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", CAPTURE_PROCESS, str(ws), IDENTITY, "2"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(2)]
    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outputs = [child.communicate(timeout=300) for child in children]
    assert errors == [] and all(child.returncode == 0 for child in children), [e for _, e in outputs]
    refs = [r.checkpoint_ref for r in results] + [ref for out, _ in outputs for ref in out.decode().split()]
    assert len(set(refs)) == 8 and sorted(refs) == sorted(maka_refs(ws))
    assert {r.tree_oid for r in results} == {expected_tree}
    assert len({r.commit_oid for r in results}) == 1  # same files, identity and HEAD: one commit
    for ref in refs:
        assert carrier.verify(str(ws), ref, carrier.policy_hash).tree_oid == expected_tree
