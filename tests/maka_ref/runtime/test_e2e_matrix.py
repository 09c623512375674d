"""End-to-end crash matrix: every live failpoint P0–P9 × both protocols, through real processes
(issue 4 item 8; spec 20 §2, §3, §4; spec 30 §6.1, §6.3).

One case = one fresh workspace and five kinds of fresh ``python -m maka_ref`` processes:

1. ``run`` (script: one ``Write`` of ``notes.txt``, then a text step) armed at the point with
   ``MAKA_REF_FAILPOINT``; SIGKILL once it announced the point; the kill is proved real (return
   code ``-SIGKILL``, the wrapper's ``finally`` marker absent, no process left);
2. the committed prefix read back with a **new** read-only store: it is the one
   ``docs/failpoints.md`` §5.2 allows for the point and protocol, its catalogue name is the
   point's ``committedPrefix`` (``maka_ref.FAILPOINTS``), the resolver's decision is §5.2's,
   and the Phase 0 plan is spec 20 §2's "required decision" for that committed prefix;
3. ``repair``: one repair for the run (case C, or case A when the terminal event survived),
   the ledger grows by at most that terminal, and a second repair (in-process) writes nothing;
4. ``inspect`` twice: byte-identical output, and the ``runtime.sqlite*`` files byte-identical
   before and after;
5. ``resume`` (flag on): a safe boundary continues (exit 0, the continuation completes), an
   unsafe one parks with the documented code (exit 3); a second resume (in-process) never
   makes a second continuation.

Across all of it the effect log ``.maka-effects.jsonl`` never shows one operationId started
twice, and ``notes.txt`` holds the written content whenever a run (source or continuation)
completed. Expected values are written from the docs and specs, not computed by the runtime.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref import FAILPOINTS, build_resume_plan, resolve_recovery
from maka_ref._continuation import resume_session
from maka_ref._repair import repair_workspace
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import (
    LEGACY,
    T1,
    WRITE_ARGS,
    WRITE_HASH,
    cli,
    db_file_digests,
    effect_lines,
    effect_starts_by_operation,
    labels,
    only_run,
    script,
    sigkill_and_prove,
    spawn_until_failpoint,
    spec_operation_id,
    write_script,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")

POINTS = ("P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9")

#: docs/failpoints.md §5.2, T1 column (legacy: the same without ``dispatch``).
_T1_PREFIX: dict[str, list[str]] = {
    "P0": ["user"],
    "P1": ["user", "call", "dispatch"],
    "P2": ["user", "call", "dispatch"],
    "P3": ["user", "call", "dispatch"],
    "P4": ["user", "call", "dispatch"],
    "P5": ["user", "call", "dispatch", "response"],
    "P6": ["user", "call", "dispatch", "response"],
    "P7": ["user", "call", "dispatch", "response"],
    "P8": ["user", "call", "dispatch", "response", "text"],
    "P9": ["user", "call", "dispatch", "response", "text", "terminal"],
}


def allowed_prefix(point: str, protocol: str) -> list[str]:
    prefix = _T1_PREFIX[point]
    return prefix if protocol == T1 else [x for x in prefix if x != "dispatch"]


def committed_prefix_name(prefix_labels: list[str]) -> str:
    """The catalogue name of a prefix (spec 20 §2: the catalogue ignores the T1/T2 journal)."""
    if "terminal" in prefix_labels:
        return "after_terminal_event"
    if "response" in prefix_labels:
        return "after_function_response"
    if "call" in prefix_labels:
        return "after_function_call"
    return "before_function_call"


#: Spec 20 §2 "Required decisions": committedPrefix → (disposition, op statuses, reasons).
_REQUIRED = {
    "before_function_call": ("safe_replay", [], []),
    "after_function_call": ("blocked", ["indeterminate"], ["dangling_tool_state"]),
    "after_function_response": ("safe_replay", ["succeeded"], []),
    "after_terminal_event": ("safe_replay", ["succeeded"], []),
}

#: Points whose committed prefix is a safe boundary (after repair): resume continues.
_CONTINUES = {"P0", "P5", "P6", "P7", "P8"}
#: Points whose Write is indeterminate: resume parks with this reason (spec 20 §3.3 step 4,
#: ``tool_recovery_unsettled`` → ``runtime_ledger_unreadable``; docs/choices/continuation-execution.md).
_PARKS_UNSETTLED = {"P1", "P2", "P3", "P4"}
#: P9: the terminal event survived, repair completes the header → no failed/cancelled candidate.
_PARK_REASON = {**{p: ["runtime_ledger_unreadable"] for p in _PARKS_UNSETTLED}, "P9": ["resume_candidate_missing"]}

EXIT_OK, EXIT_PARKED = 0, 3


def _expected_decision(point: str, protocol: str) -> list[tuple[str, str]]:
    prefix = allowed_prefix(point, protocol)
    if "call" not in prefix:
        return []
    if "response" in prefix:
        return [("completed", "matching_response")]
    return [("indeterminate", "dispatch_without_response" if protocol == T1 else "legacy_dispatch_unknown")]


def _read(ws: Path, session_id: str, run_id: str) -> list[Any]:
    with RuntimeStore.open_read_only(ws) as store:  # a new store instance on the reopened file
        return list(store.read_run_events(session_id, run_id))


def _json(completed: Any) -> dict[str, Any]:
    assert completed.stdout, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.parametrize("protocol", [T1, LEGACY])
@pytest.mark.parametrize("point", POINTS)
def test_kill_repair_inspect_resume(tmp_path: Path, point: str, protocol: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script_path = write_script(tmp_path, script(protocol))

    # 1. kill the live run at the point
    child = spawn_until_failpoint(
        ["run", "--workspace", str(ws), "--script", str(script_path)], tmp_path, point, MAKA_REF_FAILPOINT=point
    )
    sigkill_and_prove(child, tmp_path)
    session_id, run_id, header = only_run(ws)
    assert header["status"] == "running"
    invocation_id = run_id.replace("run_", "invocation_", 1)
    source_op = spec_operation_id(invocation_id, "call-1")
    reconciled = protocol == T1 and point in _PARKS_UNSETTLED
    # after repair: the safe boundaries, and P4 of T1 (its Write reconciled as completed)
    continues = point in _CONTINUES or (reconciled and point == "P4")

    # 2. committed prefix, catalogue name, resolver decision, Phase 0 plan
    events = _read(ws, session_id, run_id)
    prefix = labels(events)
    assert prefix == allowed_prefix(point, protocol)
    catalogue = {fp.id: fp.committed_prefix for fp in FAILPOINTS}
    name = committed_prefix_name(prefix)
    assert name == catalogue[point]
    resolution = resolve_recovery(events)
    assert resolution.issues == () and not resolution.has_corruption
    assert [(d.status, d.reason) for d in resolution.decisions] == _expected_decision(point, protocol)
    plans = [build_resume_plan(events).to_json(), build_resume_plan(events).to_json()]
    assert plans[0] == plans[1]  # deterministic (spec 30 §6.3 step 6)
    plan = plans[0]
    disposition, statuses, reasons = _REQUIRED[name]
    assert (plan["disposition"], [op["status"] for op in plan["operations"]], plan["rejectionReasons"]) == (
        disposition, statuses, reasons,
    )
    # §1.7: the unresolved call is never replayed; content-less facts (the dispatch marker)
    # stay; no suffix trimming (P8's final text stays). The reference ledger's [user] /
    # [user, call, response] plus our dispatch and text events.
    replay = [labels([e])[0] for e in plan["replayRuntimeEvents"]]
    assert replay == [x for x in prefix if not (x == "call" and name == "after_function_call")]
    assert _read(ws, session_id, run_id) == events  # planning did not touch the ledger

    # 3. repair, then repair again
    repaired = cli("repair", "--workspace", str(ws))
    assert repaired.returncode == 0, repaired.stderr
    report = _json(repaired)
    assert report["skipped"] == [] and report["recoveredSessions"] == [session_id]
    [entry] = report["repairs"]
    assert entry["runId"] == run_id
    after_repair = _read(ws, session_id, run_id)
    if point == "P9":  # §4.6 case A: the header from the surviving terminal event
        assert (entry["action"], entry["headerStatus"]) == ("header_from_terminal_fact", "completed")
        assert after_repair == events
    else:  # §4.6 case C: a recovered failed terminal appended, never a second one
        assert (entry["action"], entry["headerStatus"]) == ("failed_terminal_appended", "failed")
        # Phase 3 (spec-phase3 §5.5): a T1 Write dispatched with file evidence and left unsettled
        # is reconciled before the run is sealed — P1–P3 leave the file in its prior state
        # (parked), P4 in the expected one (completed) — the bundle first, the terminal second.
        bundle = [] if not reconciled else [
            f"{source_op}_reconcile", *([f"{source_op}_response"] if point == "P4" else []), f"{source_op}_decision"
        ]
        assert [e["id"] for e in after_repair[len(events):-1]] == bundle
        assert [r["operationId"] for r in report.get("reconciled", [])] == ([source_op] if reconciled else [])
        assert after_repair[:len(events)] == events and labels(after_repair[-1:]) == ["terminal"]
    # the second pass in-process (library entry of the same command): it writes nothing
    assert repair_workspace(ws).to_json() == {"repairs": [], "skipped": [], "recoveredSessions": []}
    assert _read(ws, session_id, run_id) == after_repair

    # 4. inspect twice: read-only and deterministic
    before = db_file_digests(ws)
    first, second = cli("inspect", "--workspace", str(ws)), cli("inspect", "--workspace", str(ws))
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert first.stdout == second.stdout
    assert db_file_digests(ws) == before
    document = _json(first)
    [run_doc] = document["runs"]
    assert labels(run_doc["events"]) == labels(after_repair)

    # 5. resume (flag on), twice
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    outcome = _json(resumed)
    continuation_op = None
    if continues:
        assert resumed.returncode == EXIT_OK, (resumed.stdout, resumed.stderr)
        assert outcome["parked"] is False and outcome["sourceRunId"] == run_id
        assert outcome["status"] == "completed" and outcome["run"]["finalText"] == "done"
        target = outcome["run"]
        # P0: the Write never started in the source, so the continuation runs it (its own
        # operation id); after P5–P8 the settled Write is replayed, never run again.
        assert len(target["toolCalls"]) == (1 if point == "P0" else 0)
        if point == "P0":
            continuation_op = spec_operation_id(target["invocationId"], "call-1")
    else:
        assert resumed.returncode == EXIT_PARKED, (resumed.stdout, resumed.stderr)
        assert outcome["parked"] is True and outcome["rejectionReasons"] == _PARK_REASON[point]
    with RuntimeStore.open_read_only(ws) as store:
        claims = store.list_claims(session_id)
    assert len(claims) == (1 if continues else 0)

    # a second resume (in-process, the library entry of the same command) never continues again
    second_resume = resume_session(ws, flag=True, lifecycle_log=lambda event: None)
    expected_again = ["continuation_already_exists"] if continues else _PARK_REASON[point]
    assert second_resume.parked and list(second_resume.rejection_reasons) == expected_again
    with RuntimeStore.open_read_only(ws) as store:
        assert len(store.list_claims(session_id)) == len(claims)
    with AgentRunStore.open_read_only(ws) as runs:
        assert len(runs.list_session_runs(session_id)) == 1 + len(claims)

    # effect log: never one operation started twice; the file is right whenever a run completed
    starts = effect_starts_by_operation(ws)
    assert all(count == 1 for count in starts.values()), starts
    expected_ops = {source_op} if point not in ("P0", "P1", "P2") else set()
    if continuation_op is not None:
        expected_ops.add(continuation_op)
    assert set(starts) == expected_ops
    assert all(line["tool"] == "Write" and line["argsHash"] == WRITE_HASH for line in effect_lines(ws))
    target_file = ws / "notes.txt"
    completed = continues or point == "P9"
    if completed or point == "P4":  # P4: the effect finished, only T2 was lost
        assert target_file.read_text(encoding="utf-8") == WRITE_ARGS["content"]
    else:
        assert not target_file.exists()
