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
