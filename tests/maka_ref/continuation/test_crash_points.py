"""The continuation crash matrix of spec 20 §4.9 / spec 30 §6.4 as real SIGKILLs (issue 4).

Source: a live run (T1, one Write then a text step) SIGKILLed at ``P7`` and repaired — a
``failed`` run whose last tool call is settled, i.e. a safe boundary. Then ``maka-ref resume``
(flag on) runs with ``MAKA_RUNTIME_CONTINUATION_FAILPOINT=<point>``; the child prints
``READY:<point>`` (stdout) and ``MAKA_FAILPOINT <point>`` (stderr), blocks, and is SIGKILLed
(the kill is proved real). With new store instances the test checks the durable state, the
re-plan of the source boundary before repair, what ``maka-ref repair`` does, the re-plan after
it, and what a following ``resume`` does — the rows of the §4.9 table (docs/failpoints.md §4).

The invariant under test: the terminal event commits before the terminal header, and a
started continuation whose provider call may have happened is never silently finalised.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._continuation import crashpoints
from maka_ref._events.predicates import is_terminal_event
from maka_ref._repair import repair_workspace
from maka_ref._repair.claim_saga import ABANDONED, continuation_repair_id
from maka_ref._runtime.livepoints import CONTINUATION_FAILPOINTS
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.failpoints import FailpointTriggered
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import (
    CONTINUATION_FAILPOINT_ENV,
    WRITE_ARGS,
    cli,
    crash_source_at,
    effect_starts_by_operation,
    plan_source,
    sigkill_and_prove,
    spawn_until_failpoint,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")

ORDER = (
    "after_continuation_claim_committed",
    "after_run_created",
    "after_continuation_start_committed",
    "after_terminal_event_committed",
    "after_terminal_header_committed",
)

#: point → (target header status after the kill (None = no header), target event kinds,
#:          re-plan before repair, header status after repair, event kinds after repair,
#:          re-plan after repair)
MATRIX: dict[str, tuple[Any, ...]] = {
    "after_continuation_claim_committed": (
        None, [], "continuation_claim_repair_required", "failed", ["repair_start", "terminal"], "continuation_already_exists",
    ),
    "after_run_created": (
        "created", [], "continuation_claim_repair_required", "failed", ["repair_start", "terminal"], "continuation_already_exists",
    ),
    "after_continuation_start_committed": (
        "created", ["live_start"], "continuation_started_indeterminate",
        "created", ["live_start"], "continuation_started_indeterminate",
    ),
    "after_terminal_event_committed": (
        "running", ["live_start", "text", "terminal"], "continuation_claim_repair_required",
        "completed", ["live_start", "text", "terminal"], "continuation_already_exists",
    ),
    "after_terminal_header_committed": (
        "completed", ["live_start", "text", "terminal"], "continuation_already_exists",
        "completed", ["live_start", "text", "terminal"], "continuation_already_exists",
    ),
}


def _kind(event: Any) -> str:
    start = (event.get("actions") or {}).get("continuationStart")
    if start is not None:
        assert start["protocol"] == "continuation_start_v2"
        return {"runtime_admission": "live_start", "claim_repair": "repair_start"}[start["provenance"]]
    if is_terminal_event(event):
        return "terminal"
    if event.get("role") == "model" and (event.get("content") or {}).get("kind") == "text":
        return "text"
    return "other"


def _target(ws: Path, session_id: str, run_id: str) -> tuple[dict[str, Any] | None, list[Any], list[str]]:
    with AgentRunStore.open_read_only(ws) as runs:
        headers = {h["runId"]: dict(h) for h in runs.list_session_runs(session_id)}
        op_types = [e["type"] for e in runs.read_events(session_id, run_id)] if run_id in headers else []
    with RuntimeStore.open_read_only(ws) as store:
        events = list(store.read_run_events(session_id, run_id))
    return headers.get(run_id), events, op_types


def test_catalogue_names_and_order() -> None:
    assert tuple(CONTINUATION_FAILPOINTS) == ORDER


def test_unknown_names_are_a_loud_configuration_error() -> None:
    with pytest.raises(ValueError):
        crashpoints._arm_from_environment("after_nothing")
    with pytest.raises(ValueError):
        crashpoints._arm_from_environment("after_run_created:explode")
    assert crashpoints.armed() is None


@pytest.mark.parametrize("point", ORDER)
def test_sigkill_at_continuation_crash_point(tmp_path: Path, point: str) -> None:
    ws, session_id, source_run_id = crash_source_at(tmp_path, "P7")
    assert json.loads(cli("repair", "--workspace", str(ws)).stdout)["recoveredSessions"] == [session_id]
    (header_after_kill, kinds_after_kill, replan_before, header_after_repair, kinds_after_repair,
     replan_after) = MATRIX[point]

    child = spawn_until_failpoint(
        ["resume", "--workspace", str(ws)], tmp_path, point, flag=True, **{CONTINUATION_FAILPOINT_ENV: point}
    )
    stdout = sigkill_and_prove(child, tmp_path)
    assert stdout == f"READY:{point}\n".encode()  # spec 30 §6.1: the READY line, nothing else

    # durable state after the kill
    with RuntimeStore.open_read_only(ws) as store:
        [record] = store.list_claims(session_id)
    claim = record.claim.to_json()
    target_id = claim["target"]["runId"]
    header, events, op_types = _target(ws, session_id, target_id)
    assert (header["status"] if header else None) == header_after_kill
    if header is not None:
        assert header["continuationSource"]["sourceRunId"] == source_run_id
    assert [_kind(e) for e in events] == kinds_after_kill
    assert sum(map(is_terminal_event, events)) <= 1
    if events:
        assert record.start_event_id == events[0]["id"] and record.start_kind == "runtime_admission"
    if header is not None and header["status"] != "completed":
        assert "run_completed" not in op_types  # the header never runs ahead of the fact

    # re-plan of the source boundary before repair: always a park
    before = plan_source(ws, session_id, source_run_id)
    assert before.disposition == "park" and before.rejection_reasons == (replan_before,)

    # startup repair, then a second pass that writes nothing
    repaired = cli("repair", "--workspace", str(ws))
    assert repaired.returncode == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    if point in ("after_continuation_claim_committed", "after_run_created"):
        [entry] = report["repairs"]
        assert (entry["runId"], entry["action"], entry["failureClass"]) == (target_id, "continuation_claim_abandoned", ABANDONED)
    elif point == "after_continuation_start_committed":  # §9 item 17: never auto-terminated
        assert report["repairs"] == []
        assert [(s["runId"], s["reason"]) for s in report["skipped"]] == [(target_id, "continuation_started_indeterminate")]
    elif point == "after_terminal_event_committed":  # header repaired from the existing event
        [entry] = report["repairs"]
        assert (entry["runId"], entry["action"], entry["headerStatus"]) == (target_id, "header_from_terminal_fact", "completed")
    else:
        assert report["repairs"] == [] and report["skipped"] == []
    again = repair_workspace(ws).to_json()
    assert again["repairs"] == [] and again["recoveredSessions"] == [] and again["skipped"] == report["skipped"]

    header, events_after, _ = _target(ws, session_id, target_id)
    assert header is not None and header["status"] == header_after_repair
    assert [_kind(e) for e in events_after] == kinds_after_repair
    assert sum(map(is_terminal_event, events_after)) == (0 if header_after_repair == "created" else 1)
    if kinds_after_repair[0] == "repair_start":
        assert [e["id"] for e in events_after] == [
            continuation_repair_id("start", record.claim_id), continuation_repair_id("terminal", record.claim_id),
        ]
        assert header["failureClass"] == ABANDONED
    else:
        assert events_after == events  # repair never rewrites or adds to a live continuation's ledger
    after = plan_source(ws, session_id, source_run_id)
    assert after.disposition == "park" and after.rejection_reasons == (replan_after,)

    # what a following resume does
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    outcome = json.loads(resumed.stdout)
    if kinds_after_repair[0] == "repair_start":  # the abandoned target is continued (§8 item 89)
        assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
        assert outcome["sourceRunId"] == target_id and outcome["status"] == "completed"
    else:  # the newest failed run is still the source: it parks with the re-plan's reason
        assert resumed.returncode == 3, (resumed.stdout, resumed.stderr)
        assert outcome["sourceRunId"] == source_run_id and outcome["rejectionReasons"] == [replan_after]
    with RuntimeStore.open_read_only(ws) as store:
        claims = store.list_claims(session_id)
    assert len({c.claim.boundary_digest for c in claims}) == len(claims)  # one claim per boundary
    assert list(effect_starts_by_operation(ws).values()) == [1]  # the source's Write, once
    assert (ws / "notes.txt").read_text(encoding="utf-8") == WRITE_ARGS["content"]


def test_in_process_raise_at_start_committed_leaves_the_target_created(tmp_path: Path) -> None:
    """``arm(..., "raise")`` works in-process too: the executor stops right after the start."""
    from maka_ref._continuation import resume_session

    ws, session_id, source_run_id = crash_source_at(tmp_path, "P7")
    repair_workspace(ws)
    with crashpoints.arm("after_continuation_start_committed", "raise"):
        with pytest.raises(FailpointTriggered):
            resume_session(ws, flag=True, lifecycle_log=lambda event: None)
    assert crashpoints.armed() is None
    with RuntimeStore.open_read_only(ws) as store:
        [record] = store.list_claims(session_id)
    header, events, _ = _target(ws, session_id, record.claim.target.run_id)
    assert header is not None and header["status"] == "created"
    assert [_kind(e) for e in events] == ["live_start"]
