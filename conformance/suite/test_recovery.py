"""Recovery clauses: startup repair (``runtime.repair``, spec 20 §4) and Phase 1 safe-boundary
resume (``runtime.resume``, spec 20 §3) after a real SIGKILL in the live loop.

Every clause starts from a workspace crashed by :func:`test_runtime_crash.crash_turn` (a
dedicated process armed at a live point, killed for real) with the script "Write
``notes.txt``, Append to it, say done"; repair and resume then run in the worker's shared
process, which never touched the workspace before.

Spec choices (see ``docs/clauses-runtime.md``):

* a crashed run's header is still ``running``, and ``plan_latest`` only takes ``failed`` /
  ``cancelled`` runs (spec 20 §3.2 step 3), so every resume clause repairs first, as the
  desktop host does ("auto-continuation only after interrupted-run repair", §3.1);
* safe boundaries = the points whose prefix has no unsettled tool and whose composite replay
  is not blocked (§1.10, §3.3 step 4): P0, P5–P8 (at P8 the committed final text is an
  interrupted assistant suffix and is trimmed, §1.10 step 5); P9 leaves a run that repair
  finishes as ``completed`` from its terminal fact (§4.6 case A), which is no resume
  candidate (§3.2 step 3 → ``resume_candidate_missing``);
* a dispatched, unsettled tool (P2–P4) blocks the composite replay with
  ``tool_recovery_unsettled``, which the planner maps to the single reason
  ``runtime_ledger_unreadable`` (§3.3 step 4).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.test_runtime_crash import (
    FIRST,
    MORE,
    PROTOCOLS,
    RUN_TIMEOUT,
    call_on,
    crash_script,
    crash_turn,
    effect_lines,
    expect_no_double_start,
    label,
    project,
    read_file,
    release,
    source_run,
    workspace_dir,
)

TERMINAL_RUN_STATUS = {"completed": "completed", "failed": "failed", "aborted": "cancelled", "cancelled": "cancelled"}


def _crashed(maka: Any, tmp_path: Path, point: str, short: str) -> tuple[str, dict[str, Any]]:
    workspace = workspace_dir(tmp_path)
    crash_turn(maka, workspace, crash_script(PROTOCOLS[short]), point)
    try:
        return workspace, source_run(project(maka, workspace))
    finally:
        release(maka, workspace)


def _repair(maka: Any, workspace: str) -> dict[str, Any]:
    return dict(expect_ok(maka.call("runtime.repair", {"workspace": workspace}, timeout=RUN_TIMEOUT), "runtime.repair"))


def _resume(maka: Any, workspace: str) -> Any:
    return maka.call("runtime.resume", {"workspace": workspace}, timeout=RUN_TIMEOUT)


def _projection(maka: Any, workspace: str) -> dict[str, Any]:
    try:
        return project(maka, workspace)
    finally:
        release(maka, workspace)


def _check_terminal_consistent(run: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """Spec 20 §4.1–§4.3: exactly one terminal event, last; header terminal and matching it."""
    events = run["events"]
    found = [label(e) for e in events]
    if found.count("terminal") != 1 or found[-1] != "terminal":
        raise ClauseMismatch(f"{where}: the run must end with exactly one terminal event, found {found}",
                             evidence={"eventIds": [e.get("id") for e in events]})
    terminal = events[-1]
    header = run.get("header") or {}
    want = TERMINAL_RUN_STATUS.get(str(terminal.get("status")))
    if header.get("status") != want:
        raise ClauseMismatch(f"{where}: the header status {header.get('status')!r} does not match the terminal event's "
                             f"{terminal.get('status')!r} (spec 20 §4.3)", evidence={"header": header, "terminal": terminal})
    if want == "failed":
        delta = (terminal.get("actions") or {}).get("stateDelta") or {}
        content = terminal.get("content") or {}
        derived = next((v for v in (delta.get("failureClass"), delta.get("errorClass"), delta.get("reason"),
                                    delta.get("code"), content.get("reason"), content.get("code"))
                        if isinstance(v, str) and v), header.get("failureClass"))
        if header.get("failureClass") != derived:
            raise ClauseMismatch(f"{where}: header failureClass {header.get('failureClass')!r} differs from the terminal "
                                 f"fact's {derived!r} (spec 20 §4.3)", evidence={"header": header, "terminal": terminal})
    # Spec 20 §4.1 step 3 sets ``completedAt = ts`` without saying whose ts: the reference takes
    # the terminal event's, upstream's repair the time of the repair (session-manager.ts:5829,
    # terminal-run-commit.ts:143). What holds either way: the end is not before its fact.
    completed_at, terminal_ts = header.get("completedAt"), terminal.get("ts")
    if "completedAt" in header and not (isinstance(completed_at, (int, float)) and not isinstance(completed_at, bool)
                                        and isinstance(terminal_ts, (int, float)) and completed_at >= terminal_ts):
        raise ClauseMismatch(f"{where}: header completedAt {completed_at!r} is before the terminal event's ts "
                             f"{terminal_ts!r} (spec 20 §4.1 step 3)", evidence={"header": header})
    return terminal


# --------------------------------------------------------------------------- repair

_REPAIR_CASES = [
    ("RECOVERY-REPAIR-001", "P3", "t1", "an indeterminate tool (implementation in progress)"),
    ("RECOVERY-REPAIR-002", "P7", "t1", "a settled tool, no terminal (case C)"),
    ("RECOVERY-REPAIR-003", "P8", "legacy", "the final text committed, no terminal (case C)"),
    ("RECOVERY-REPAIR-004", "P9", "t1", "a terminal event and a lagging header (case A)"),
]


def _repair_params() -> list[Any]:
    return [pytest.param(point, short, id=f"{point}-{short}",
                         marks=clause(cid, spec="20 §4.1; 20 §4.3; 20 §4.6; 20 §4.8", capability="runtime.repair",
                                      needs=("faults", "runtime.loop", "store"),
                                      title=f"repair after a SIGKILL at {point} ({PROTOCOLS[short]}), {what}: "
                                            "consistent terminal header, idempotent, no tool re-run"))
            for cid, point, short, what in _REPAIR_CASES]


@pytest.mark.parametrize(("point", "short"), _repair_params())
def test_repair_after_crash(maka: Any, tmp_path: Path, point: str, short: str) -> None:
    workspace, crashed = _crashed(maka, tmp_path, point, short)
    effects = effect_lines(workspace)
    content = read_file(workspace, "notes.txt")
    crashed_terminals = [e["id"] for e in crashed["events"] if label(e) == "terminal"]
    first = _repair(maka, workspace)
    repaired_runs = [(r.get("sessionId"), r.get("runId")) for r in first.get("repairs", [])]
    if (crashed["sessionId"], crashed["runId"]) not in repaired_runs:
        raise ClauseMismatch(f"runtime.repair did not report the run interrupted at {point}", evidence={"repair": first})
    after_first = _projection(maka, workspace)
    run = source_run(after_first, crashed["runId"])
    terminal = _check_terminal_consistent(run, f"after repairing a kill at {point}")
    if crashed_terminals and crashed_terminals != [terminal["id"]]:
        raise ClauseMismatch("repair appended a second terminal instead of finishing the header from the existing one "
                             "(spec 20 §4.6 case A)", evidence={"before": crashed_terminals, "after": terminal["id"]})
    if crashed_terminals:
        expect_equal("completed", run["header"].get("status"), what="header after repairing a run whose completed terminal was durable")
    else:
        expect_equal("failed", run["header"].get("status"), what="header after repairing a run without terminal (case C)")
    prefix = [e["id"] for e in crashed["events"]]
    expect_equal(prefix, [e["id"] for e in run["events"]][:len(prefix)],
                 what="the committed prefix after repair (repair only appends)")
    second = _repair(maka, workspace)
    expect_equal([], second.get("repairs"), what="the repairs of a second runtime.repair (idempotent)")
    expect_equal(after_first, _projection(maka, workspace), what="the projection after a second runtime.repair")
    expect_equal(effects, effect_lines(workspace), what="the effect log across repairs (repair never runs a tool)")
    expect_equal(content, read_file(workspace, "notes.txt"), what="notes.txt across repairs")


# --------------------------------------------------------------------------- resume: continue

_CONTINUE_CASES = [
    ("RECOVERY-RESUME-001", "P0", "t1"),
    ("RECOVERY-RESUME-002", "P5", "t1"),
    ("RECOVERY-RESUME-003", "P6", "legacy"),
    ("RECOVERY-RESUME-004", "P7", "t1"),
    ("RECOVERY-RESUME-005", "P8", "t1"),
]


def _continue_params() -> list[Any]:
    return [pytest.param(point, short, id=f"{point}-{short}",
                         marks=clause(cid, spec="20 §3.2–§3.6; 20 §1.10; 20 §3.14", capability="runtime.continuation",
                                      needs=("runtime.repair", "faults", "runtime.loop", "store"),
                                      title=f"resume after a SIGKILL at {point} ({PROTOCOLS[short]}) continues: right file, "
                                            "no tool re-run, no duplicate user message"))
            for cid, point, short in _CONTINUE_CASES]


def _continuations(projection: Mapping[str, Any], source_run_id: str) -> list[dict[str, Any]]:
    return [r for r in projection.get("runs", [])
            if ((r.get("header") or {}).get("continuationSource") or {}).get("sourceRunId") == source_run_id]


def _check_continued(maka: Any, workspace: str, source: Mapping[str, Any], result: Mapping[str, Any], where: str) -> dict[str, Any]:
    if result.get("parked") is not False:
        raise ClauseMismatch(f"{where}: runtime.resume parked at a safe boundary: {result.get('rejectionReasons')}",
                             evidence={"resume": dict(result)})
    if result.get("status") != "completed":
        raise ClauseMismatch(f"{where}: the continuation ended {result.get('status')!r}", evidence={"resume": dict(result)})
    projection = _projection(maka, workspace)
    continuations = _continuations(projection, source["runId"])
    if len(continuations) != 1:
        raise ClauseMismatch(f"{where}: expected exactly one continuation run of {source['runId']}, found {len(continuations)}",
                             evidence={"runs": [r.get("runId") for r in projection.get("runs", [])]})
    target = continuations[0]
    if result.get("targetRunId") != target["runId"]:
        raise ClauseMismatch(f"{where}: targetRunId {result.get('targetRunId')!r} is not the continuation run {target['runId']!r}")
    found = [label(e) for e in target["events"] or []]
    if "user" in found:
        raise ClauseMismatch(f"{where}: the continuation appended a user message (spec 20 §3.14: no duplicate user message)",
                             evidence={"labels": found})
    if found[:1] != ["start"]:
        raise ClauseMismatch(f"{where}: the continuation's first event is not its continuation-start (spec 20 §3.14)",
                             evidence={"labels": found})
    _check_terminal_consistent(target, f"{where}: the continuation run")
    repaired = source_run(projection, source["runId"])
    users = [e for r in (repaired, target) for e in r["events"] if label(e) == "user"]
    expect_equal(1, len(users), what=f"{where}: user messages across the source and its continuation")
    expect_equal(FIRST + MORE, read_file(workspace, "notes.txt"), what=f"{where}: notes.txt after the continuation")
    lines = effect_lines(workspace)
    expect_no_double_start(lines, where)
    tools = sorted(line["tool"] for line in lines)
    expect_equal(["Append", "Write"], tools, what=f"{where}: tools started across the crash and the continuation")
    return projection


@pytest.mark.parametrize(("point", "short"), _continue_params())
def test_resume_continues_from_safe_boundary(maka: Any, tmp_path: Path, point: str, short: str) -> None:
    workspace, crashed = _crashed(maka, tmp_path, point, short)
    _repair(maka, workspace)
    before = source_run(_projection(maka, workspace), crashed["runId"])
    result = expect_ok(_resume(maka, workspace), "runtime.resume")
    projection = _check_continued(maka, workspace, crashed, result, f"resume after {point}")
    expect_equal(before["events"], source_run(projection, crashed["runId"])["events"],
                 what="the source run's events after resume (source ledgers are never mutated, spec 20 §3.14)")


# --------------------------------------------------------------------------- resume: park

_PARK_CASES = [
    ("RECOVERY-RESUME-006", "P2", "t1", ["runtime_ledger_unreadable"]),
    ("RECOVERY-RESUME-007", "P3", "legacy", ["runtime_ledger_unreadable"]),
    ("RECOVERY-RESUME-008", "P4", "t1", ["runtime_ledger_unreadable"]),
    ("RECOVERY-RESUME-009", "P9", "t1", ["resume_candidate_missing"]),
]


def _park_params() -> list[Any]:
    return [pytest.param(point, short, reasons, id=f"{point}-{short}",
                         marks=clause(cid, spec="20 §3.3 step 4; 20 §1.10; 20 §3.2", capability="runtime.continuation",
                                      needs=("runtime.repair", "faults", "runtime.loop", "store"),
                                      title=f"resume after a SIGKILL at {point} ({PROTOCOLS[short]}) parks with {reasons[0]} "
                                            "and changes nothing"))
            for cid, point, short, reasons in _PARK_CASES]


@pytest.mark.parametrize(("point", "short", "reasons"), _park_params())
def test_resume_parks_at_unsafe_boundary(maka: Any, tmp_path: Path, point: str, short: str, reasons: list[str]) -> None:
    workspace, crashed = _crashed(maka, tmp_path, point, short)
    _repair(maka, workspace)
    before = _projection(maka, workspace)
    effects, content = effect_lines(workspace), read_file(workspace, "notes.txt")
    result = expect_ok(_resume(maka, workspace), "runtime.resume")
    if result.get("parked") is not True:
        raise ClauseMismatch(f"runtime.resume continued after a kill at {point}; spec 20 §3.3 requires a park",
                             evidence={"resume": dict(result)})
    expect_equal(reasons, result.get("rejectionReasons"), what=f"rejection reasons after a kill at {point}")
    expect_equal(before, _projection(maka, workspace), what="the projection after a parked resume (a park writes nothing)")
    expect_equal(effects, effect_lines(workspace), what="the effect log after a parked resume")
    expect_equal(content, read_file(workspace, "notes.txt"), what="notes.txt after a parked resume")


# --------------------------------------------------------------------------- resume: once only


@clause("RECOVERY-RESUME-010", spec="20 §3.3 steps 7–8; 20 §3.5; 20 §3.10", capability="runtime.continuation",
        needs=("runtime.repair", "faults", "runtime.loop", "store"),
        title="a second resume of the same boundary parks (continuation_already_exists) and creates nothing")
def test_second_resume_parks(maka: Any, tmp_path: Path) -> None:
    workspace, crashed = _crashed(maka, tmp_path, "P6", "t1")
    _repair(maka, workspace)
    first = expect_ok(_resume(maka, workspace), "runtime.resume")
    projection = _check_continued(maka, workspace, crashed, first, "the first resume")
    effects = effect_lines(workspace)
    reply = _resume(maka, workspace)
    if reply.ok and reply.result.get("parked") is not True:
        raise ClauseMismatch("a second resume of an already continued boundary continued again", evidence={"resume": reply.result})
    if reply.ok and "continuation_already_exists" not in reply.result.get("rejectionReasons", []):
        raise ClauseMismatch("a second resume parked, but not with continuation_already_exists (spec 20 §3.5 step 8)",
                             evidence={"resume": reply.result})
    if not reply.ok and reply.code != "continuation_already_exists":
        raise ClauseMismatch(f"a second resume failed with {reply.code!r} instead of parking", evidence={"error": reply.error})
    expect_equal(projection, _projection(maka, workspace), what="the projection after a second resume")
    expect_equal(effects, effect_lines(workspace), what="the effect log after a second resume")


@clause("RECOVERY-RESUME-011", spec="20 §3.10; 30 §7.3 C4", capability="runtime.continuation",
        needs=("runtime.repair", "faults", "runtime.loop", "store"),
        title="two concurrent resumes in two processes create exactly one continuation")
def test_concurrent_resumes(maka: Any, tmp_path: Path) -> None:
    """Two processes resume the same crashed run at once; exactly one may continue.

    A race only shows a missing claim when both resumes plan before either commits, which a
    loaded machine may never schedule; a correct implementation gives exactly one continuation
    every time, so the race is run in ``RACE_ROUNDS`` fresh workspaces and every round must
    hold. (Without the rounds the mutant ``continuation-claim-not-unique`` survived on a machine
    at load 14.)"""
    for round_no in range(RACE_ROUNDS):
        root = tmp_path / f"round-{round_no}"
        root.mkdir()
        _race_two_resumes(maka, root, round_no)


RACE_ROUNDS = 3


def _race_two_resumes(maka: Any, tmp_path: Path, round_no: int) -> None:
    workspace, crashed = _crashed(maka, tmp_path, "P7", "t1")
    _repair(maka, workspace)
    replies: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}
    with maka.fresh() as one, maka.fresh() as two:
        barrier = threading.Barrier(2)

        def go(n: int, client: Any) -> None:
            try:
                barrier.wait(10)
                replies[n] = call_on(client, "runtime.resume", {"workspace": workspace}, timeout=RUN_TIMEOUT)
            except BaseException as exc:  # re-raised below in the clause's thread
                errors[n] = exc

        threads = [threading.Thread(target=go, args=(n, c)) for n, c in ((1, one), (2, two))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(RUN_TIMEOUT + 15)
    if errors:
        raise next(iter(errors.values()))
    continued = [r for r in replies.values() if r.ok and r.result.get("parked") is False]
    if len(continued) != 1:
        raise ClauseMismatch(f"round {round_no + 1} of {RACE_ROUNDS}: {len(continued)} of two concurrent resumes "
                             "continued; exactly one may",
                             evidence={"replies": [{"ok": r.ok, "result": r.result, "error": r.error} for r in replies.values()]})
    _check_continued(maka, workspace, crashed, continued[0].result, "concurrent resumes")


# --------------------------------------------------------------------------- resume: the source's protocol

T1_MARKER = {"toolBoundary": "t1_after_preflight_v1"}  # spec 10 §3


@clause("RECOVERY-RESUME-012", spec="20 §3.12; 10 §3; 10 §6.2 step 1; 30 §6.5", capability="runtime.continuation",
        needs=("runtime.repair", "faults", "runtime.loop", "store"),
        title="a continuation of a T1 run starts with the T1 marker on its continuation-start and dispatches through "
              "T1; a legacy run's continuation has neither")
def test_continuation_keeps_the_source_protocol(maka: Any, tmp_path: Path) -> None:
    """Spec 20 §3.12: a live continuation-start carries ``actions.runtimeProtocol`` iff the
    executing runner declares the T1 protocol; spec 10 §6.2 step 1 reads a run as new-protocol
    only from its first event's marker. Without it the continuation's tool calls lose T1
    protection: a crash after a call but before its dispatch resolves ``indeterminate`` (legacy)
    instead of ``definitely_not_dispatched``. Kills ``continuation-start-without-t1-marker``.

    After a SIGKILL at P6 of a T1 run, repair and resume: the continuation runs the remaining
    Append through T1 (a dispatch for every call, spec 30 §6.5), so its continuation-start must
    carry the marker. After P6 of a legacy run, the continuation has neither marker nor
    dispatch."""
    for short in ("t1", "legacy"):
        base = tmp_path / short
        base.mkdir()
        workspace, crashed = _crashed(maka, base, "P6", short)
        _repair(maka, workspace)
        where = f"resume after a kill at P6 ({PROTOCOLS[short]})"
        result = expect_ok(_resume(maka, workspace), "runtime.resume")
        projection = _check_continued(maka, workspace, crashed, result, where)
        events = _continuations(projection, crashed["runId"])[0]["events"]
        start = events[0]
        marker = (start.get("actions") or {}).get("runtimeProtocol")
        calls = [e["id"] for e in events if label(e) == "call"]
        dispatches = [e["id"] for e in events if label(e) == "dispatch"]
        if short == "t1":
            if marker != T1_MARKER:
                raise ClauseMismatch(
                    f"{where}: the continuation-start of a T1 run does not carry actions.runtimeProtocol = {T1_MARKER} "
                    "(spec 20 §3.12): the continuation's ledger reads as legacy, so its tool calls lose T1 protection "
                    "(spec 10 §6.2 step 1: a call without dispatch would be indeterminate, not definitely_not_dispatched)",
                    evidence={"start": start})
            if not calls or len(dispatches) != len(calls):
                raise ClauseMismatch(f"{where}: the continuation of a T1 run did not run its tool calls through T1 "
                                     "(one dispatch per call, spec 30 §6.5)",
                                     evidence={"labels": [label(e) for e in events]})
        elif marker is not None or dispatches:
            raise ClauseMismatch(f"{where}: the continuation of a legacy run carries the T1 marker or dispatch facts "
                                 "(spec 20 §3.12: the marker iff the runner declares the T1 protocol)",
                                 evidence={"start": start, "labels": [label(e) for e in events]})
