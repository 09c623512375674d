"""Real SIGKILL at the two failpoints outside the tool loop (spec 20 §2, §4.5, §4.8; issue 4
item 8): ``P10`` (recovery-decision commit) in ``maka-ref repair`` and ``P11``
(continuation-run creation) in ``maka-ref resume``.

Each child is a real ``python -m maka_ref`` process (inside a ``try/finally`` wrapper whose
marker proves the kill was real), armed with ``MAKA_REF_FAILPOINT``, SIGKILLed once it announced
the point; everything afterwards runs in fresh processes or with new store instances.

* P10 sits between repair's terminal RuntimeEvent commit and the terminal header (§4.1, §4.8):
  a kill leaves the terminal fact and a non-terminal header; the next repair finishes the header
  from that same event (no second terminal), and a further repair changes nothing.
* P11 sits after the claimed target header (``created``) and ``run_created``, before the
  continuation-start: a kill leaves a claim no provider call stands on. ``resume`` before repair
  parks ``continuation_claim_repair_required``; repair abandons the claim
  (``continuation_abandoned_before_provider_dispatch``, §4.5); the source boundary then plans
  ``continuation_already_exists`` — it never gets a second continuation. ``resume`` continues
  the *abandoned target* instead (a next generation, spec 20 §8 item 89: "planning from that
  target run → continue"), and the Write is never run again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._repair import repair_workspace
from maka_ref._repair.claim_saga import ABANDONED, continuation_repair_id
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import (
    FINALLY_MARKER,
    WRITE_ARGS,
    cli,
    crash_source_at,
    effect_starts_by_operation,
    labels,
    plan_source,
    run_with_finally_marker,
    sigkill_and_prove,
    spawn_until_failpoint,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")

NOTHING = {"repairs": [], "skipped": [], "recoveredSessions": []}


def _events(ws: Path, session_id: str, run_id: str) -> list[Any]:
    with RuntimeStore.open_read_only(ws) as store:
        return list(store.read_run_events(session_id, run_id))


def _header(ws: Path, session_id: str, run_id: str) -> dict[str, Any]:
    with AgentRunStore.open_read_only(ws) as runs:
        return dict(runs.read_run(session_id, run_id))


def _op_types(ws: Path, session_id: str, run_id: str) -> list[str]:
    with AgentRunStore.open_read_only(ws) as runs:
        return [e["type"] for e in runs.read_events(session_id, run_id)]


def _repair(ws: Path) -> dict[str, Any]:
    done = cli("repair", "--workspace", str(ws))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_converged(ws: Path) -> None:
    """A further repair (fresh process) writes nothing and inspect sees no change."""
    before = cli("inspect", "--workspace", str(ws)).stdout
    assert _repair(ws) == NOTHING
    assert repair_workspace(ws).to_json() == NOTHING
    assert cli("inspect", "--workspace", str(ws)).stdout == before


def _kill_repair_at_p10(ws: Path, marker_dir: Path) -> None:
    child = spawn_until_failpoint(["repair", "--workspace", str(ws)], marker_dir, "P10", MAKA_REF_FAILPOINT="P10")
    sigkill_and_prove(child, marker_dir)


def _kill_resume_at_p11(ws: Path, marker_dir: Path) -> None:
    child = spawn_until_failpoint(
        ["resume", "--workspace", str(ws)], marker_dir, "P11", flag=True, MAKA_REF_FAILPOINT="P11"
    )
    sigkill_and_prove(child, marker_dir)


def _only_target(ws: Path, session_id: str, source_run_id: str) -> dict[str, Any]:
    with AgentRunStore.open_read_only(ws) as runs:
        [target] = [dict(h) for h in runs.list_session_runs(session_id) if h["runId"] != source_run_id]
    return target


def test_the_finally_marker_is_written_on_a_normal_exit(tmp_path: Path) -> None:
    """Control for every kill proof here: the wrapper's ``finally`` does run on a normal exit."""
    (tmp_path / "ws").mkdir()
    done = run_with_finally_marker(["repair", "--workspace", str(tmp_path / "ws")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / FINALLY_MARKER).read_text() == "child-finally-ran"


def test_sigkill_at_p10_in_generic_repair_then_repair_converges(tmp_path: Path) -> None:
    ws, session_id, run_id = crash_source_at(tmp_path, "P7")
    prefix = _events(ws, session_id, run_id)
    assert labels(prefix) == ["user", "call", "dispatch", "response"]

    _kill_repair_at_p10(ws, tmp_path)
    # terminal fact durable, header not: exactly §4.8's window
    events = _events(ws, session_id, run_id)
    assert events[:-1] == prefix and labels(events[-1:]) == ["terminal"]
    terminal = events[-1]
    assert terminal["id"].startswith("agent-run-repair-terminal-") and terminal["status"] == "failed"
    assert _header(ws, session_id, run_id)["status"] == "running"
    assert "run_failed" not in _op_types(ws, session_id, run_id)

    # the second repair finishes the header from that same event (§4.6 case A), no second terminal
    report = _repair(ws)
    [entry] = report["repairs"]
    assert (entry["runId"], entry["action"], entry["terminalEventId"]) == (run_id, "header_from_terminal_fact", terminal["id"])
    assert _events(ws, session_id, run_id) == events
    header = _header(ws, session_id, run_id)
    assert (header["status"], header["failureClass"]) == ("failed", "app_restarted")
    assert header["completedAt"] == header["updatedAt"] == terminal["ts"]
    assert _op_types(ws, session_id, run_id).count("run_failed") == 1
    _assert_converged(ws)

    # the repaired run is a usable source: resume continues from the settled Write
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json.loads(resumed.stdout)["status"] == "completed"
    assert list(effect_starts_by_operation(ws).values()) == [1]


def test_sigkill_at_p10_in_the_claim_saga_then_repair_converges(tmp_path: Path) -> None:
    ws, session_id, source_run_id = crash_source_at(tmp_path, "P7")
    assert _repair(ws)["recoveredSessions"] == [session_id]
    _kill_resume_at_p11(ws, tmp_path)
    with RuntimeStore.open_read_only(ws) as store:
        [record] = store.list_claims(session_id)
    claim_id = record.claim_id
    target_id = record.claim.target.run_id

    _kill_repair_at_p10(ws, tmp_path)  # the saga's terminal is durable, the header is not
    events = _events(ws, session_id, target_id)
    assert [e["id"] for e in events] == [continuation_repair_id("start", claim_id), continuation_repair_id("terminal", claim_id)]
    assert events[0]["actions"]["continuationStart"]["provenance"] == "claim_repair"
    assert _header(ws, session_id, target_id)["status"] == "created"
    assert "run_failed" not in _op_types(ws, session_id, target_id)

    report = _repair(ws)
    [entry] = report["repairs"]
    assert (entry["runId"], entry["action"], entry["headerStatus"]) == (target_id, "continuation_claim_abandoned", "failed")
    assert _events(ws, session_id, target_id) == events  # no second start, no second terminal
    header = _header(ws, session_id, target_id)
    assert (header["status"], header["failureClass"]) == ("failed", ABANDONED)
    assert _op_types(ws, session_id, target_id).count("run_failed") == 1
    _assert_converged(ws)


def test_sigkill_at_p11_then_resume_never_continues_the_boundary_twice(tmp_path: Path) -> None:
    ws, session_id, source_run_id = crash_source_at(tmp_path, "P7")
    assert _repair(ws)["recoveredSessions"] == [session_id]
    _kill_resume_at_p11(ws, tmp_path)

    # durable state: the claim, the target header exactly as claimed (`created`), no events
    with RuntimeStore.open_read_only(ws) as store:
        [record] = store.list_claims(session_id)
    target = _only_target(ws, session_id, source_run_id)
    assert target == record.claim.to_json()["targetRunHeader"] and target["status"] == "created"
    assert _events(ws, session_id, target["runId"]) == []
    assert _op_types(ws, session_id, target["runId"]) == ["run_created"]

    # resume before repair: parks, writes nothing
    parked = cli("resume", "--workspace", str(ws), flag=True)
    assert parked.returncode == 3, (parked.stdout, parked.stderr)
    assert json.loads(parked.stdout)["rejectionReasons"] == ["continuation_claim_repair_required"]
    with RuntimeStore.open_read_only(ws) as store:
        assert [r.claim_id for r in store.list_claims(session_id)] == [record.claim_id]
    assert _only_target(ws, session_id, source_run_id) == target

    # repair abandons the claim (§4.5), then converges
    [entry] = _repair(ws)["repairs"]
    assert (entry["runId"], entry["action"]) == (target["runId"], "continuation_claim_abandoned")
    _assert_converged(ws)
    assert plan_source(ws, session_id, source_run_id).rejection_reasons == ("continuation_already_exists",)

    # resume now continues the abandoned target (next generation, spec 20 §8 item 89) — the
    # source boundary itself never gets a second continuation, and the Write never runs again
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    outcome = json.loads(resumed.stdout)
    assert outcome["sourceRunId"] == target["runId"] and outcome["status"] == "completed"
    assert outcome["run"]["toolCalls"] == [] and outcome["run"]["finalText"] == "done"
    with RuntimeStore.open_read_only(ws) as store:
        claims = store.list_claims(session_id)
    assert len(claims) == 2
    assert len({c.claim.boundary_digest for c in claims}) == 2  # one claim per boundary
    assert plan_source(ws, session_id, source_run_id).rejection_reasons == ("continuation_already_exists",)
    again = cli("resume", "--workspace", str(ws), flag=True)
    assert again.returncode == 3 and json.loads(again.stdout)["rejectionReasons"] == ["continuation_already_exists"]
    assert list(effect_starts_by_operation(ws).values()) == [1]
    assert (ws / "notes.txt").read_text(encoding="utf-8") == WRITE_ARGS["content"]
