"""The finalize-only reconciler (spec-phase3 §5) on real files, in process.

A crash is simulated by a failpoint action raising a ``BaseException`` the runtime does not
catch, so the run stops exactly there (T1 committed, no T2, no terminal) — the ledger a SIGKILL
leaves (the real-kill end-to-end test is ``test_end_to_end.py``). Expected outcomes, ids and
results are written from the spec, never taken from the code under test.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from maka_ref._cli.main import run as cli_run
from maka_ref._reconcile import ObservedState
from maka_ref._repair import reconcile as reconcile_module
from maka_ref._repair import reconcile_operation, reconcile_workspace, repair_workspace
from maka_ref._repair.runs import repair_run
from maka_ref._runtime import run_turn
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.failpoints import arm, disarm
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import T1, script


class Crash(BaseException):
    """Stops the turn like a kill: nothing after the failpoint runs."""


def crash(name: str) -> None:
    raise Crash(name)


def crashed(ws: Path, steps: list[dict[str, Any]], point: str, hit: int = 1) -> str:
    """Run ``steps`` and stop at the ``hit``-th ``point``; returns the last operation id dispatched."""
    arm(point, crash, hit=hit)
    try:
        with pytest.raises(Crash):
            run_turn(ws, script(T1, [*steps, {"text": "done"}]), seed="reconcile")
    finally:
        disarm()
    with RuntimeStore.open_read_only(ws) as store:
        [op] = store.list_unsettled_operations()
    return op


def write(path: str, content: str) -> dict[str, Any]:
    return {"toolCalls": [{"id": f"w-{path}", "name": "Write", "args": {"path": path, "content": content}}]}


def snapshot(ws: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every workspace entry except the store: type, bytes or link target, mtime."""
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if name.startswith("runtime.sqlite"):
                continue
            st = path.lstat()
            if path.is_symlink():
                out[str(path)] = ("link", os.readlink(path), st.st_mtime_ns)
            elif path.is_file():
                out[str(path)] = ("file", path.read_bytes(), st.st_mtime_ns)
            else:
                out[str(path)] = ("dir", "", st.st_mtime_ns)
    return out


def ledger(ws: Path, op: str) -> tuple[str, list[str]]:
    with RuntimeStore.open_read_only(ws) as store:
        record = store.read_tool_operation(op)
        return record.current_state, [r.state for r in store.read_tool_journal(op)]


def session_events(ws: Path, op: str) -> list[Any]:
    with RuntimeStore.open_read_only(ws) as store:
        call, _ = store.read_tool_t1_events(op)
        return list(store.read_session_events(call["sessionId"]))


def reconcile(ws: Path, op: str) -> Any:
    with RuntimeStore.open(ws) as store:
        return reconcile_operation(store, ws, op, clock=lambda: 10**13)


# --------------------------------------------------------------------------- the table


def test_matches_expected_state_commits_a_completed_bundle_and_never_touches_the_file(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    assert (tmp_path / "notes.txt").read_bytes() == b"after"
    before = snapshot(tmp_path)
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.observation, result.reason_code) == (
        "completed", "matches_expected_state", "reconcile_matches_expected_state")
    assert snapshot(tmp_path) == before  # bytes, links and mtimes: finalize means facts only
    assert ledger(tmp_path, op)[0] == "recovery_completed"
    events = {e["id"]: e for e in session_events(tmp_path, op)}
    response = events[f"{op}_response"]
    assert response["content"]["result"] == {"path": "notes.txt", "bytesWritten": 5}
    assert "isError" not in response["content"]
    decision = events[f"{op}_decision"]["actions"]["toolRecovery"]["payload"]
    assert decision["disposition"] == "completed" and decision["outcomeEventId"] == f"{op}_response"
    assert decision["evidenceEventIds"] == [f"{op}_call", f"{op}_dispatch", f"{op}_reconcile", f"{op}_response"]


def test_matches_prior_state_parks_and_never_redoes(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P3")  # temp durable, rename not done
    assert not (tmp_path / "notes.txt").exists()  # (in process the temp file is cleaned up; a kill leaves it)
    before = snapshot(tmp_path)
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.observation, result.reason_code) == (
        "parked", "matches_prior_state", "reconcile_matches_prior_state")
    assert snapshot(tmp_path) == before  # no redo, the temporary file untouched
    assert ledger(tmp_path, op)[0] == "recovery_parked"


def test_a_torn_append_is_diverged(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(b"one\n")
    op = crashed(tmp_path, [{"toolCalls": [{"id": "a", "name": "Append", "args": {"path": "log.txt", "content": "two\n"}}]}], "P3")
    assert (tmp_path / "log.txt").read_bytes() == b"one\ntw"
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.observation, result.reason_code) == ("parked", "diverged", "reconcile_diverged")
    assert (tmp_path / "log.txt").read_bytes() == b"one\ntw"


@pytest.mark.parametrize("change", ["outside_write", "deleted", "symlink", "directory", "hardlink", "fifo"])
def test_an_outside_change_after_the_crash_is_diverged_and_survives(tmp_path: Path, change: str) -> None:
    (tmp_path / "notes.txt").write_bytes(b"before")
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    target = tmp_path / "notes.txt"
    if change == "outside_write":
        target.write_bytes(b"the user's bytes")
    elif change == "deleted":
        target.unlink()
    elif change == "symlink":
        (tmp_path / "copy.txt").write_bytes(b"after")
        target.unlink()
        target.symlink_to("copy.txt")
    elif change == "directory":
        target.unlink()
        target.mkdir()
    elif change == "hardlink":
        os.link(target, tmp_path / "second")
    else:
        target.unlink()
        os.mkfifo(target)
    before = snapshot(tmp_path)
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.observation, result.reason_code) == ("parked", "diverged", "reconcile_diverged")
    assert snapshot(tmp_path) == before


def test_a_parent_replaced_by_a_symlink_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    op = crashed(tmp_path, [write("d/notes.txt", "after")], "P4")
    (tmp_path / "d").rename(tmp_path / "elsewhere")
    (tmp_path / "d").symlink_to("elsewhere")  # the expected bytes are behind the link
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.observation, result.reason_code) == ("parked", "unreadable", "reconcile_unreadable")
    assert result.observed.to_json() == {"type": "unreadable", "reason": "ancestor_not_directory"}


def test_a_transient_observer_failure_commits_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    monkeypatch.setattr(reconcile_module, "observe_evidence",
                        lambda *a, **k: ObservedState.unreadable("resource_exhausted"))
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.code) == ("skipped", "reconcile_observer_unavailable")
    assert ledger(tmp_path, op) == ("prepared", ["prepared"])


# --------------------------------------------------------------------------- the stops


def test_an_operation_without_evidence_keeps_parking(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("new/dir/notes.txt", "after")], "P4")  # no evidence (choice: new dirs)
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.code) == ("skipped", "reconcile_no_evidence")
    assert ledger(tmp_path, op) == ("prepared", ["prepared"])


def test_damaged_evidence_is_reported_and_nothing_is_committed(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    import sqlite3

    with sqlite3.connect(tmp_path / "runtime.sqlite") as conn:
        conn.execute("UPDATE runtime_tool_evidence SET evidence_json = 'not json'")
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.code, result.detail) == ("skipped", "reconcile_evidence_invalid", "evidence_not_json")
    assert ledger(tmp_path, op) == ("prepared", ["prepared"])


def test_another_workspace_identity_is_a_mismatch(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    marker = tmp_path / ".maka-workspace.json"
    value = json.loads(marker.read_text())
    value["workspaceId"] = "00000000-0000-4000-8000-000000000000"
    marker.write_text(json.dumps(value))
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.code) == ("skipped", "reconcile_workspace_mismatch")
    assert ledger(tmp_path, op) == ("prepared", ["prepared"])


def test_a_sealed_run_is_never_reconciled(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    with RuntimeStore.open(tmp_path) as store, AgentRunStore.open(tmp_path) as runs:
        call, _ = store.read_tool_t1_events(op)
        [header] = runs.list_session_runs(call["sessionId"])
        repair_run(store, runs, header, strict=False, claim_owned=False)  # seals without reconciling
    result = reconcile(tmp_path, op)
    assert (result.outcome, result.code) == ("skipped", "reconcile_run_sealed")


def test_a_second_reconcile_finds_the_operation_settled(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    assert reconcile(tmp_path, op).outcome == "completed"
    again = reconcile(tmp_path, op)
    assert (again.outcome, again.code) == ("already_settled", "reconcile_already_settled")
    assert reconcile_workspace(tmp_path) == []  # nothing unsettled is left
    ids = [e["id"] for e in session_events(tmp_path, op)]
    assert ids.count(f"{op}_decision") == 1


def test_a_racing_reconciler_that_lost_answers_already_settled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec-phase3 §5.7: the other reconciler commits between this one's decision and its bundle."""
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    real = reconcile_module.failpoint
    rivals: list[str] = []

    def rival_first(name: str) -> None:  # the rival reconciler commits at this one's decision point
        if name == "reconcile_after_decision" and not rivals:
            rivals.append(name)
            assert reconcile(tmp_path, op).outcome == "completed"
        real(name)

    monkeypatch.setattr(reconcile_module, "failpoint", rival_first)
    with RuntimeStore.open(tmp_path) as store:
        loser = reconcile_operation(store, tmp_path, op, clock=lambda: 10**13 + 1)
    assert rivals and (loser.outcome, loser.code) == ("already_settled", "reconcile_already_settled")
    ids = [e["id"] for e in session_events(tmp_path, op)]
    assert ids.count(f"{op}_reconcile") == 1 and ids.count(f"{op}_decision") == 1


# --------------------------------------------------------------------------- repair and CLI


def test_repair_reconciles_before_it_seals_the_run(tmp_path: Path) -> None:
    op = crashed(tmp_path, [write("notes.txt", "after")], "P4")
    report = repair_workspace(tmp_path).to_json()
    assert [(r["operationId"], r["outcome"]) for r in report["reconciled"]] == [(op, "completed")]
    assert report["repairs"][0]["action"] == "failed_terminal_appended"
    ids = [e["id"] for e in session_events(tmp_path, op)]
    terminal = report["repairs"][0]["terminalEventId"]
    assert ids.index(f"{op}_decision") < ids.index(terminal)  # bundle first, terminal second (§5.5)


def test_repair_of_a_run_without_unsettled_operations_reports_as_before(tmp_path: Path) -> None:
    crashed(tmp_path, [write("new/x.txt", "a")], "P4")  # unsettled, no evidence
    report = repair_workspace(tmp_path).to_json()
    assert [r["code"] for r in report["reconciled"]] == ["reconcile_no_evidence"]
    other = tmp_path / "other"
    other.mkdir()
    run_turn(other, script(T1, [write("a.txt", "a"), {"text": "done"}]), seed="other")
    assert "reconciled" not in repair_workspace(other).to_json()


def cli(*args: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = cli_run(list(args), stdout=out, stderr=io.StringIO())
    return code, json.loads(out.getvalue())


def test_cli_reconcile_exit_codes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    op = crashed(ws, [write("notes.txt", "after")], "P4")
    code, doc = cli("reconcile", "--workspace", str(ws))
    assert code == 0 and [(o["operationId"], o["outcome"]) for o in doc["operations"]] == [(op, "completed")]
    code, doc = cli("reconcile", "--workspace", str(ws))
    assert (code, doc) == (0, {"operations": []})
    code, doc = cli("reconcile", "--workspace", str(ws), "--operation", op)
    assert code == 0 and doc["operations"][0]["code"] == "reconcile_already_settled"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("reconcile", "--workspace", str(empty)) == (0, {"operations": []})
    assert sorted(os.listdir(empty)) == []  # nothing created
    code, doc = cli("reconcile", "--workspace", str(tmp_path / "missing"))
    assert code == 2 and doc["error"]["code"]


def test_cli_reconcile_exits_3_when_an_operation_stays_unsettled(tmp_path: Path) -> None:
    crashed(tmp_path, [write("new/x.txt", "a")], "P4")
    code, doc = cli("reconcile", "--workspace", str(tmp_path))
    assert code == 3 and [o["code"] for o in doc["operations"]] == ["reconcile_no_evidence"]
