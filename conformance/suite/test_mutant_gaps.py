"""Clauses added because a mutant of the self-test survived the rest of the suite (issue 7).

``maka-conformance selftest`` certifies every mutant of ``maka_ref/adapter/_mutants``; a
mutant that no clause kills is a promise of the contract nobody checks. Each clause here
closes one such gap (``docs/selftest.md``), with a stable id ``MUTANT-GAP-<LAYER>-NNN`` and
the spec section it checks; the mutant it was written for is named in its docstring.

* ``MUTANT-GAP-CRASH-001``: a torn last row of a legacy JSONL run is corruption, never a
  shorter healthy prefix (``store.project`` of a legacy tree; spec 30 §5.2 rule 6, 20 §1.8).
* ``MUTANT-GAP-CRASH-002``: an accepted run (header durable) killed before its first event is
  sealed by repair, never silently dropped (spec 20 §4.6 case C).
* ``MUTANT-GAP-RUNTIME-001``: a stale writer whose T1 is refused (its run was sealed while it
  was stopped at P0) never starts the tool (spec 30 §6.5).
* ``MUTANT-GAP-CONT-001``: a resume in a workspace whose identity differs from the source
  run's parks with ``workspace_identity_mismatch`` (spec 20 §3.3 gate i).
* ``MUTANT-GAP-CONT-002``: a workspace identity that changes between a resume's claim and its
  provider call fails the continuation with ``workspace_identity_changed`` (spec 20 §3.9).

The legacy-JSONL clause is *not applicable* (skipped, shown as not run) when the
implementation does not read the optional legacy profile; the workspace-identity clauses
need the reference's marker file ``.maka-workspace.json`` (adapter guide §6) and are skipped
without it.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite._store_support import user_event
from conformance.suite.test_runtime_crash import (
    RUN_TIMEOUT,
    call_on,
    crash_script,
    crash_turn,
    effect_lines,
    label,
    project,
    release,
    source_run,
    workspace_dir,
)

MARKER = ".maka-workspace.json"

# =============================================================================================
# Crash behaviour
# =============================================================================================

_LEGACY_ID = {"sessionId": "legacy-session", "invocationId": "legacy-invocation", "runId": "legacy-run",
              "turnId": "legacy-turn"}


def _legacy_file(ws: str) -> Path:
    path = Path(ws) / "sessions" / _LEGACY_ID["sessionId"] / "runs" / _LEGACY_ID["runId"] / "runtime-events.jsonl"
    path.parent.mkdir(parents=True)
    return path


@clause("MUTANT-GAP-CRASH-001", spec="30 §5.2 rule 6; 20 §1.8; protocol §4.2.1", capability="store",
        title="a torn last row of a legacy JSONL run is corruption: not healthy, events null, never a shorter prefix")
def test_legacy_jsonl_torn_tail(maka: Any, tmp_path: Path) -> None:
    """Kills ``crash-jsonl-torn-tail-accepted``. A legacy tree (spec 30 §5.1) holding one run
    of two events projects as ``storage: jsonl`` with both events; after a crash mid-append
    leaves an unterminated prefix of a third row, the projection must report the store not
    healthy and the run's events ``null`` (spec 20 §1.8: a torn row is corruption, never a
    shorter prefix) — and reading creates no database (spec 30 §10 item 33)."""
    ws = os.path.realpath(tmp_path / "legacy")
    os.mkdir(ws)
    path = _legacy_file(ws)
    rows = [user_event("legacy-user-1", 1, "first", _LEGACY_ID), user_event("legacy-user-2", 2, "second", _LEGACY_ID)]
    path.write_bytes(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in rows))
    healthy = expect_ok(maka.call("store.project", {"workspace": ws}), "store.project")
    if healthy.get("storage") != "jsonl":
        pytest.skip(f"not applicable: the implementation does not read the optional legacy JSONL profile "
                    f"(storage {healthy.get('storage')!r})")
    runs = healthy.get("runs") or []
    if len(runs) != 1 or [e.get("id") for e in runs[0].get("events") or []] != ["legacy-user-1", "legacy-user-2"]:
        raise ClauseMismatch("the healthy legacy run does not project with its two events",
                             evidence={"projection": healthy})
    third = json.dumps(user_event("legacy-user-3", 3, "third", _LEGACY_ID), separators=(",", ":")).encode()
    with open(path, "ab") as fh:
        fh.write(third[: len(third) // 2])  # a crash mid-append: an unterminated JSON prefix
    torn = expect_ok(maka.call("store.project", {"workspace": ws}), "store.project")
    status = (torn.get("health") or {}).get("status")
    if status == "healthy":
        raise ClauseMismatch("a legacy run with a torn last row projects as healthy (spec 20 §1.8: corruption, never "
                             "a shorter prefix)", evidence={"projection": torn})
    for run in torn.get("runs") or []:
        if run.get("events") is not None:
            raise ClauseMismatch("the torn legacy run's events were read as facts (protocol §4.2.1: null when the "
                                 "rows cannot be read)", evidence={"run": run})
    if os.path.exists(os.path.join(ws, "runtime.sqlite")):
        raise ClauseMismatch("projecting a legacy-only workspace created runtime.sqlite (spec 30 §10 item 33)")


def _running_header(ws: str, session_id: str) -> dict[str, Any]:
    return {"runId": "accepted-run", "sessionId": session_id, "turnId": "accepted-turn",
            "invocationId": "accepted-invocation", "status": "running", "backendKind": "fake",
            "llmConnectionSlug": "scripted", "modelId": "scripted-provider", "cwd": ws, "permissionMode": "bypass",
            "workspaceIdentity": "workspace:v1:" + str(uuid.uuid4()), "toolMode": "direct",
            "createdAt": 1_700_000_000_000, "updatedAt": 1_700_000_000_000}


@clause("MUTANT-GAP-CRASH-002", spec="20 §4.6 case C; 20 §4.1", capability="runtime.repair", needs=("store", "runtime.loop"),
        title="an accepted run killed before its first event is sealed failed by repair, never silently dropped")
def test_accepted_run_without_events_is_sealed(maka: Any, tmp_path: Path) -> None:
    """Kills ``crash-before-first-event-drops-run``. A run whose header was committed
    (``running``) but which crashed before its first RuntimeEvent is an interrupted run:
    ``runtime.repair`` reports it and seals it (one terminal event, the header ``failed``),
    exactly like a run interrupted later (spec 20 §4.6 case C).

    Repair visits the runs *of a session* (spec 20 §4.4), so the accepted run belongs to a
    session the implementation knows: a completed turn creates it first (upstream lists the
    sessions of its session store, session-manager.ts:1437; a header in a session it never saw
    is no run of any session)."""
    ws = workspace_dir(tmp_path)
    first = expect_ok(maka.call("runtime.run_turn", {"workspace": ws, "script": {
        "userMessage": "say hello", "protocol": "t1_after_preflight_v1", "steps": [{"text": "hello"}]}},
        timeout=RUN_TIMEOUT), "runtime.run_turn")
    release(maka, ws)
    header = _running_header(ws, str(first.get("sessionId")))
    reply = maka.call("store.create_run", {"workspace": ws, "header": header})
    if not reply.ok:
        pytest.skip(f"not applicable: store.create_run refused the reference header shape ({reply.code})")
    release(maka, ws)
    repaired = expect_ok(maka.call("runtime.repair", {"workspace": ws}, timeout=RUN_TIMEOUT), "runtime.repair")
    named = [r for r in repaired.get("repairs") or [] if r.get("runId") == header["runId"]]
    if len(named) != 1:
        raise ClauseMismatch("runtime.repair did not report the accepted run that crashed before its first event "
                             "(spec 20 §4.6 case C: it must be sealed, not dropped)", evidence={"repair": dict(repaired)})
    try:
        projection = project(maka, ws)
    finally:
        release(maka, ws)
    run = source_run(projection, header["runId"])
    found = [label(e) for e in run["events"]]
    if found.count("terminal") != 1:
        raise ClauseMismatch(f"the repaired run must hold exactly one terminal event, found {found}", evidence={"run": run})
    expect_equal("failed", (run.get("header") or {}).get("status"), what="the repaired run's header status")


# =============================================================================================
# Live runtime: a stale writer whose T1 is refused
# =============================================================================================


@clause("MUTANT-GAP-RUNTIME-001", spec="30 §6.5; 30 §2.3; 30 §2.1 step 4; 20 §2 P0; protocol §4.4", capability="faults",
        needs=("runtime.loop", "store", "runtime.repair"),
        title="pause at P0 (live): a stale writer whose run was sealed meanwhile never starts its tool (T1 refused)")
def test_stale_writer_t1_refused(maka: Any, tmp_path: Path) -> None:
    """Kills ``runtime-tool-runs-when-t1-fails``. Process A runs the crash script and stops
    itself at P0 (``faults.arm`` action ``stop``: preflight done, T1 not yet); process B runs
    ``runtime.repair``, which seals A's run (startup repair cannot tell a frozen writer from a
    dead one); after SIGCONT, A's T1 must be refused (the run is sealed, spec 30 §2.1 step 4)
    and the implementation must run zero times (spec 30 §6.5): no effect-log line, no file.
    A must still answer its ``runtime.run_turn`` (protocol §4.4), and not with ``completed``."""
    from crashlab._lab.faults._shared import await_late_reply, wait_stopped

    ws = workspace_dir(tmp_path)
    with maka.fresh() as client:
        if "P0" not in tuple(client.handshake.failpoints or ()):
            raise ClauseMismatch("unreached: P0 is not listed in the handshake (protocol §4.4)")
        armed = call_on(client, "faults.arm", {"failpoint": "P0", "action": "stop"})
        if not armed.ok:
            pytest.skip(f"not applicable: faults.arm action stop answered {armed.code}")
        got = client.call_until_failpoint("runtime.run_turn", {"workspace": ws, "script": crash_script("t1_after_preflight_v1")},
                                          failpoint="P0", timeout=RUN_TIMEOUT)
        if not isinstance(got, str):
            raise ClauseMismatch("unreached: runtime.run_turn answered without announcing P0",
                                 evidence={"ok": got.ok, "result": got.result, "error": got.error})
        if wait_stopped(client.pid, 5.0) != "stopped":
            raise ClauseMismatch("the implementation announced P0 but did not stop itself (protocol §4.4)")
        try:
            with maka.fresh() as other:
                expect_ok(call_on(other, "runtime.repair", {"workspace": ws}, timeout=RUN_TIMEOUT), "runtime.repair")
        finally:
            os.kill(client.pid, signal.SIGCONT)
        late: Mapping[str, Any] = await_late_reply(client, RUN_TIMEOUT)
        client.kill()
    lines = effect_lines(ws)
    if lines:
        raise ClauseMismatch("the stale writer started its tool although its run was sealed before T1 (spec 30 §6.5: "
                             "T1 failed → the implementation runs zero times)", evidence={"effectLog": lines, "late": dict(late)})
    if os.path.exists(os.path.join(ws, "notes.txt")):
        raise ClauseMismatch("the stale writer's Write changed the workspace although T1 was refused")
    if late.get("kind") == "reply" and late.get("ok") and (late.get("result") or {}).get("status") == "completed":
        raise ClauseMismatch("the stale writer's turn completed although its run was sealed",
                             evidence={"late": dict(late)})


# =============================================================================================
# Continuation: workspace identity at planning and at execution
# =============================================================================================


def _swap_marker(ws: str) -> None:
    """Give the workspace another identity: rewrite the marker's id (adapter guide §6)."""
    path = Path(ws) / MARKER
    data = json.loads(path.read_text(encoding="utf-8"))
    data["workspaceId"] = str(uuid.uuid4())
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def _crashed_and_repaired(maka: Any, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    ws = workspace_dir(tmp_path)
    crash_turn(maka, ws, crash_script("t1_after_preflight_v1"), "P7")
    try:
        crashed = source_run(project(maka, ws))
    finally:
        release(maka, ws)
    expect_ok(maka.call("runtime.repair", {"workspace": ws}, timeout=RUN_TIMEOUT), "runtime.repair")
    if not (Path(ws) / MARKER).is_file():
        pytest.skip(f"not applicable: the implementation keeps no {MARKER} workspace marker")
    return ws, crashed


def _snapshot(maka: Any, ws: str) -> tuple[Any, Any]:
    try:
        projection = project(maka, ws)
    finally:
        release(maka, ws)
    return projection, effect_lines(ws)


@clause("MUTANT-GAP-CONT-001", spec="20 §3.3 gate i; 20 §3.8", capability="runtime.continuation",
        needs=("runtime.repair", "faults", "runtime.loop", "store"),
        title="a resume in a workspace whose identity differs from the source run's parks (workspace_identity_mismatch)")
def test_resume_parks_on_foreign_workspace(maka: Any, tmp_path: Path) -> None:
    """Kills ``continuation-workspace-identity-ignored``. After a kill at P7 (a safe boundary)
    and repair, the workspace is given another identity; ``runtime.resume`` must park with
    ``workspace_identity_mismatch`` and change nothing (projection, effect log)."""
    ws, _ = _crashed_and_repaired(maka, tmp_path)
    _swap_marker(ws)
    before = _snapshot(maka, ws)
    reply = maka.call("runtime.resume", {"workspace": ws}, timeout=RUN_TIMEOUT)
    result = expect_ok(reply, "runtime.resume")
    if result.get("parked") is not True:
        raise ClauseMismatch("runtime.resume continued a run of another workspace identity (spec 20 §3.3 gate i)",
                             evidence={"resume": dict(result)})
    if "workspace_identity_mismatch" not in (result.get("rejectionReasons") or []):
        raise ClauseMismatch("the park does not name workspace_identity_mismatch", evidence={"resume": dict(result)})
    expect_equal(before, _snapshot(maka, ws), what="the projection and effect log after a parked resume")


@clause("MUTANT-GAP-CONT-002", spec="20 §3.9 steps 7 and 12; protocol §4.3; protocol §4.4", capability="runtime.continuation",
        needs=("runtime.repair", "faults", "runtime.loop", "store"),
        title="a workspace identity that changes after the claim fails the continuation (workspace_identity_changed) "
              "before any tool runs")
def test_revalidation_after_claim(maka: Any, tmp_path: Path) -> None:
    """Kills ``continuation-revalidation-skipped``. A resume is stopped (``faults.arm`` action
    ``stop``) at ``after_continuation_claim_committed``; while it is stopped the workspace gets
    another identity; after SIGCONT the activation barrier's revalidation (spec 20 §3.9 step 12)
    must refuse with ``workspace_identity_changed`` (protocol §4.3: a revalidation failure is
    ``ok: false`` with its code) and no tool may start."""
    ws, _ = _crashed_and_repaired(maka, tmp_path)
    effects = effect_lines(ws)
    point = "after_continuation_claim_committed"
    with maka.fresh() as client:
        if point not in tuple(client.handshake.failpoints or ()):
            pytest.skip(f"not applicable: {point} is not listed in the handshake")
        armed = call_on(client, "faults.arm", {"failpoint": point, "action": "stop"})
        if not armed.ok:
            pytest.skip(f"not applicable: faults.arm action stop answered {armed.code}")
        got = client.call_until_failpoint("runtime.resume", {"workspace": ws}, failpoint=point, timeout=RUN_TIMEOUT)
        if not isinstance(got, str):
            raise ClauseMismatch(f"unreached: runtime.resume answered without announcing {point}",
                                 evidence={"ok": got.ok, "result": got.result, "error": got.error})
        from crashlab._lab.faults._shared import await_late_reply, wait_stopped

        if wait_stopped(client.pid, 5.0) != "stopped":
            raise ClauseMismatch(f"the implementation announced {point} but did not stop itself (protocol §4.4)")
        _swap_marker(ws)
        os.kill(client.pid, signal.SIGCONT)
        late: Mapping[str, Any] = await_late_reply(client, RUN_TIMEOUT)
        client.kill()
    if late.get("kind") != "reply":
        raise ClauseMismatch(f"no answer to runtime.resume after SIGCONT: {late}", evidence={"late": dict(late)})
    if late.get("ok"):
        raise ClauseMismatch("the continuation went on although the workspace identity changed after its claim "
                             "(spec 20 §3.9 step 12 revalidation)", evidence={"late": dict(late)})
    expect_equal("workspace_identity_changed", (late.get("error") or {}).get("code"),
                 what="the code of the failed continuation")
    expect_equal(effects, effect_lines(ws), what="the effect log after the refused continuation")
