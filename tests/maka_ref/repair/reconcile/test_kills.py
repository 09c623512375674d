"""Real kills inside the reconciler (spec-phase3 §5.6, §5.7; scenarios 39–44).

Every crash is a SIGKILL of a real ``maka-ref`` process blocked at an armed failpoint, proven
real (-9, no ``finally`` ran, reaped, no descendant). The run is first killed after its Write's
rename (P4), so the reconciler has an unsettled operation with evidence to settle.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import (
    REPO,
    T1,
    clean_env,
    cli,
    kill_and_reap,
    run_until_failpoint,
    script,
    sigkill_and_prove,
    spawn_until_failpoint,
    write_script,
)

POINTS = ("reconcile_after_observation", "reconcile_after_decision", "reconcile_inside_bundle")


def crashed_write(tmp_path: Path) -> tuple[Path, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    child = run_until_failpoint(ws, write_script(tmp_path, script(T1)), "P4")
    kill_and_reap(child)
    with RuntimeStore.open_read_only(ws) as store:
        [op] = store.list_unsettled_operations()
    return ws, op


def state(ws: Path, op: str) -> tuple[str, list[str], list[str], str, int]:
    """(operation state, journal states, the session's event ids, file digest, file mtime)."""
    with RuntimeStore.open_read_only(ws) as store:
        record = store.read_tool_operation(op)
        journal = [r.state for r in store.read_tool_journal(op)]
        call, _ = store.read_tool_t1_events(op)
        ids = [e["id"] for e in store.read_session_events(call["sessionId"])]
    target = ws / "notes.txt"
    return record.current_state, journal, ids, hashlib.sha256(target.read_bytes()).hexdigest(), target.stat().st_mtime_ns


def kill_reconcile_at(ws: Path, marker_dir: Path, point: str) -> None:
    child = spawn_until_failpoint(["reconcile", "--workspace", str(ws)], marker_dir, point, MAKA_REF_FAILPOINT=point)
    sigkill_and_prove(child, marker_dir)


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_inside_the_reconciler_leaves_everything_as_before_and_a_rerun_settles_once(
    tmp_path: Path, point: str
) -> None:
    ws, op = crashed_write(tmp_path)
    before = state(ws, op)
    assert before[:2] == ("prepared", ["prepared"])
    kill_reconcile_at(ws, tmp_path, point)
    assert state(ws, op) == before  # no bundle (inside_bundle: rolled back whole), file identical
    # a second crash during the rerun, at another point, changes nothing either
    other = POINTS[(POINTS.index(point) + 1) % len(POINTS)]
    kill_reconcile_at(ws, tmp_path, other)
    assert state(ws, op) == before
    done = cli("reconcile", "--workspace", str(ws))
    assert done.returncode == 0, done.stderr
    assert [(o["operationId"], o["outcome"]) for o in json.loads(done.stdout)["operations"]] == [(op, "completed")]
    after = state(ws, op)
    assert after[0] == "recovery_completed" and after[3:] == before[3:]  # the file was never touched
    assert after[2] == before[2] + [f"{op}_reconcile", f"{op}_response", f"{op}_decision"]  # exactly one bundle


def test_a_kill_after_the_bundle_committed_reruns_as_already_settled(tmp_path: Path) -> None:
    ws, op = crashed_write(tmp_path)
    assert cli("reconcile", "--workspace", str(ws)).returncode == 0
    settled = state(ws, op)
    again = cli("reconcile", "--workspace", str(ws), "--operation", op)
    assert again.returncode == 0
    assert json.loads(again.stdout)["operations"][0]["code"] == "reconcile_already_settled"
    assert state(ws, op) == settled


def test_two_reconcilers_racing_commit_exactly_one_bundle(tmp_path: Path) -> None:
    ws, op = crashed_write(tmp_path)
    before = state(ws, op)
    procs = [
        subprocess.Popen([sys.executable, "-m", "maka_ref", "reconcile", "--workspace", str(ws), "--operation", op],
                         env=clean_env(), cwd=str(REPO), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out)["operations"][0]["outcome"])
    assert "completed" in outcomes and set(outcomes) <= {"completed", "already_settled"}
    after = state(ws, op)
    assert after[2] == before[2] + [f"{op}_reconcile", f"{op}_response", f"{op}_decision"]
    assert after[3:] == before[3:]


def test_an_outside_write_between_the_crash_and_the_reconcile_parks_diverged(tmp_path: Path) -> None:
    ws, op = crashed_write(tmp_path)
    (ws / "notes.txt").write_bytes(b"the user's own text")
    done = cli("reconcile", "--workspace", str(ws))
    assert done.returncode == 0
    [operation] = json.loads(done.stdout)["operations"]
    assert (operation["outcome"], operation["observation"], operation["reasonCode"]) == (
        "parked", "diverged", "reconcile_diverged")
    assert (ws / "notes.txt").read_bytes() == b"the user's own text"  # never overwritten
