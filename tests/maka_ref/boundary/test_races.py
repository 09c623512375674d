"""Concurrent captures of one run (spec-phase4 §4.1, §9): every capture publishes its own ref,
exactly one fact commits at H+1, the losers' refs are orphans that ``collect`` deletes, and the
committed fact's artifact is never among them."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from maka_ref._boundary.capture import capture_and_commit, default_carrier
from maka_ref._boundary.commands import checkpoint_collect
from maka_ref._store.errors import StoreError
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.identity import resolve_workspace_identity
from maka_ref.testing import families as fam
from tests.maka_ref.boundary.test_crash import boundary_refs
from tests.maka_ref.boundary.test_resume import repo
from tests.maka_ref.checkpoint.support import maka_refs, user_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")

RUN = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}


def test_four_concurrent_captures_commit_one_fact(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    identity = resolve_workspace_identity(ws).identity
    with RuntimeStore.open(ws) as store:
        store.append(fam.event("user-1", role="user", author="user", content={"kind": "text", "text": "go"}))
    before = user_state(ws)
    barrier = threading.Barrier(4)
    results: list[Any] = []
    lock = threading.Lock()

    def worker() -> None:
        store = RuntimeStore.open(ws)
        try:
            barrier.wait()
            outcome: Any = capture_and_commit(store, default_carrier(), str(ws), identity, RUN)
        except StoreError as error:
            outcome = error.code
        finally:
            store.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    committed = [r for r in results if not isinstance(r, str)]
    refused = [r for r in results if isinstance(r, str)]
    assert len(committed) == 1 and committed[0].event_seq == 2
    assert set(refused) <= {"event_identity_conflict", "workspace_boundary_high_water_changed"}, refused
    assert len(refused) == 3
    refs = maka_refs(ws)
    live = boundary_refs(ws)
    assert len(refs) == 4 and len(live) == 1 and live[0] in refs
    collected = checkpoint_collect(str(ws), 0)
    assert sorted(collected["collected"]) == sorted(set(refs) - set(live)) and collected["kept"] == live
    assert maka_refs(ws) == live
    after = user_state(ws)
    for key, value in before.items():
        if key != "worktree":
            assert after[key] == value, key


def test_user_commits_racing_captures_and_fact_commits(tmp_path: Path) -> None:
    """A user committing in a loop while the runtime captures and commits boundary facts
    (§3.9, §9): every user command succeeds; between two user commands the user's index and refs
    are byte-identical (hashed after one command and again before the next); no user lock file
    is left; every committed fact's artifact verifies."""
    import hashlib
    import subprocess

    from maka_ref._boundary.commands import checkpoint_verify
    from tests.maka_ref.checkpoint.support import git_dir, user_env, write

    ws = repo(tmp_path)
    identity = resolve_workspace_identity(ws).identity
    gdir = git_dir(ws)

    def snapshot() -> tuple[str, str]:
        index = hashlib.sha256((gdir / "index").read_bytes()).hexdigest()
        refs = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)"], cwd=ws, env=user_env(),
                              capture_output=True, text=True, check=True).stdout
        return index, "\n".join(line for line in refs.splitlines() if not line.startswith("refs/maka/"))

    mismatches: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def user() -> None:
        last = snapshot()
        for n in range(12):
            if snapshot() != last:
                mismatches.append(n)
            write(ws / f"user-{n}.txt", f"{n}\n")
            for args in (["add", f"user-{n}.txt"], ["commit", "-q", "-m", f"user {n}"]):
                done = subprocess.run(["git", *args], cwd=ws, env=user_env(), capture_output=True, text=True,
                                      check=False)
                if done.returncode != 0:
                    failures.append(done.stderr)
            last = snapshot()
        stop.set()

    committed: list[Any] = []
    thread = threading.Thread(target=user)
    thread.start()
    n = 0
    with RuntimeStore.open(ws) as store:
        while not stop.is_set() and n < 40:
            run = {"sessionId": "race", "invocationId": f"inv-{n}", "runId": f"run-{n}", "turnId": f"turn-{n}"}
            store.append({"id": f"user-event-{n}", **run, "ts": 1, "partial": False, "role": "user",
                          "author": "user", "content": {"kind": "text", "text": "go"}})
            committed.append(capture_and_commit(store, default_carrier(), str(ws), identity, run))
            n += 1
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert failures == [] and mismatches == []
    assert len(committed) >= 2, "too few captures overlapped the user's commits"
    assert not list(gdir.glob("*.lock")) and not list((gdir / "refs").rglob("*.lock"))
    for ref in boundary_refs(ws):
        assert checkpoint_verify(str(ws), ref)["checkpointRef"] == ref
