"""Trials inside the Phase 3 reconciler (spec-phase3 §5.6, §5.7; scenarios 39–44 of §7).

The catalogue's ``reconciler`` group (``reconcile_after_observation``,
``reconcile_after_decision``, ``reconcile_inside_bundle``) is driven over the wire against any
implementation that claims ``runtime.reconcile`` (protocol §4.3.1) and ``faults``. Why a driver
of its own: the other trials crash a *tool* and judge the tool loop's committed prefix; here
the tool crash is only the setup, and what is judged is what a crashed *reconciler* may leave
(nothing, or one whole bundle) and that it never touched the file.

``kill`` (one trial per point; each setup of the catalogue's ``setups`` in its own
sub-workspace of the trial's workspace):

1. setup: ``runtime.run_turn`` armed at the setup's point (``P4``: the Write renamed into place,
   no T2 — the file is in its ``expectedAfter`` state; ``P2``: the Edit's T1 committed, the
   tool not started — the file is in its ``before`` state) and SIGKILLed there;
2. ``runtime.reconcile`` of that operation armed at the trial's point, SIGKILLed there (proved
   real); a fresh process checks that the run's events, tool operations and journal are as the
   setup left them (spec-phase3 §5.6: no bundle at any of the three points; never a partial
   one), the target byte-, inode-, mode- and mtime-identical, the effect log unchanged;
3. a second crash during the retry, at the next reconciler point, and the same checks (§5.6:
   "a second crash during the rerun changes nothing of this"). The retry is
   ``runtime.repair {"reconcile": true}`` when the implementation claims ``runtime.repair``
   (the points are reachable by both operations, spec-phase3 §6), so a repair that sealed the
   run before reconciling it (§5.5: reconcile → terminal event → terminal header) shows as a
   terminal fact committed before the kill;
4. setup ``outside`` only: the target is rewritten from outside now (scenario 44);
5. a clean ``runtime.reconcile`` settles the operation exactly once with the setup's outcome,
   observation and reason (completed / ``matches_expected_state``; parked /
   ``matches_prior_state``; parked / ``diverged``, the outside bytes surviving); a second one
   commits nothing (``already_settled``); a projection is stable, reading never writes, and
   every run's resolution equals ``maka_ref``'s on its events;
6. ``runtime.repair`` twice (the second writes nothing), ``runtime.resume``: past a completed
   operation the run continues; a parked one keeps the run parked (spec-phase3 §5.4: a prior
   state or an outside change is for a human or a new model call, never a redo); the effect
   log shows the tool started at most once over the whole story.

``race`` (one trial per point; the ``expected`` setup): reconciler A is armed at the point with
``action: "stop"`` (protocol §4.4) and stops itself there; reconciler B reconciles the same
operation to its end; then A is continued, and its commit meets an operation settled meanwhile.
At ``reconcile_inside_bundle`` (``insideTransaction`` in the catalogue) A stops inside its
bundle transaction, so B waits for the store's write lock (or fails with a stable code): A is
continued after a short grace and wins.
Checks (§5.7): exactly one bundle; one reconciler reports committing it and the other commits
nothing and says ``already_settled`` (or answers ``ok: false`` with a stable code); the target
untouched; no tool start.

``pause`` (``reconcile_after_decision`` only; scenario 45): the Write's process A is armed at
``P4`` with ``action: "stop"`` and stops itself there — the file renamed, T2 not committed,
the process alive; reconciler B is SIGKILLed at the trial's point (the usual checks), C settles
the operation (completed), then A is continued and its late T2 must be refused: still one
bundle and one outcome, the target untouched, the Write started once, and A's answer a normal
response or a stable code (it fails closed). One point is enough: the late writer's story does
not depend on where the reconciler was killed, and the default sweep stays small.

Every verdict goes through ``ctx.record``; evidence under ``ctx.evidence["reconciler"]``.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crashlab._lab.drive import DriveError, Unreached, _until, ok
from crashlab._lab.faults._shared import (
    FaultNotApplicable,
    await_late_reply,
    consistent_projection,
    effect_lines,
    reply_code,
    wait_stopped,
)
from crashlab._lab.oracles import label

__all__ = ["run_reconciler"]

T1 = "t1_after_preflight_v1"
TARGET = "notes.txt"
#: What the target holds before an Edit setup, and what the Edit changes in it.
BEFORE, OLD, NEW = "port = 8080\n", "8080", "9090"
#: What the Write setup writes.
WRITTEN = "port = 8080\nhost = localhost\n"
#: What an outside writer puts in the target between the crash and the reconcile (scenario 44).
OUTSIDE = b"port = 9999  # changed by hand after the crash\n"
#: A stable code: snake_case (protocol §7's error values).
_CODE = re.compile(r"^[a-z][a-z0-9_]*$")
#: How long B may wait on A stopped inside its bundle transaction (the catalogue's
#: ``insideTransaction``) before A is continued: B is then blocked on the store's write lock.
_RACE_GRACE_S = 0.5


def run_reconciler(ctx: Any, point: Any) -> tuple[str, str]:
    """Run the trial ``ctx.spec`` at ``point``; returns the engine's ``(outcome hint, message)``."""
    info = point.mode_info(ctx.spec.mode)
    try:
        if ctx.spec.fault == "kill":
            for setup in info["setups"]:
                _kill_trial(ctx, point, info, setup)
        elif ctx.spec.fault == "race":
            _race_trial(ctx, point, info["setups"][0])
        elif ctx.spec.fault == "pause":
            _pause_trial(ctx, point, info["setups"][0])
        else:
            return "error", f"the reconciler's trials have no {ctx.spec.fault!r} fault"
    except FaultNotApplicable as exc:
        return "not_claimed", exc.message
    return ("unreached", str(ctx.evidence["unreached"])) if ctx.evidence.get("unreached") else ("", "")


# --------------------------------------------------------------------------- the setup


def _script(setup: Mapping[str, Any]) -> dict[str, Any]:
    if setup["tool"] == "Edit":
        call = {"id": "call-edit", "name": "Edit", "args": {"path": TARGET, "old": OLD, "new": NEW}}
    else:
        call = {"id": "call-write", "name": "Write", "args": {"path": TARGET, "content": WRITTEN}}
    return {"userMessage": "set the port", "protocol": T1, "steps": [{"toolCalls": [call]}, {"text": "done"}]}


def _crashed_tool(ctx: Any, ws: Path, setup: Mapping[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """Kill ``runtime.run_turn`` at the setup's point: the operation it left unsettled, the
    fresh process that read it back (it serves the rest of the trial) and what it read."""
    ws.mkdir()
    if setup["tool"] == "Edit":
        (ws / TARGET).write_text(BEFORE, encoding="utf-8")
    driven = _until(ctx, ctx.spawn(), "runtime.run_turn", {"workspace": str(ws), "script": _script(setup)},
                    setup["crash"], 1)
    ctx.evidence.setdefault("reconciler", {}).setdefault("setupPids", []).append(driven.pid)
    reader = ctx.spawn()
    snap = _snapshot(reader, ws)
    ops = [op for op, state in snap["states"].items() if state == "prepared"]
    if len(ops) != 1:
        raise DriveError(f"after a kill of runtime.run_turn at {setup['crash']} the store holds "
                         f"{len(ops)} prepared operations (expected the one {setup['tool']}): {snap['states']}")
    return ops[0], reader, snap


# --------------------------------------------------------------------------- what a fresh process sees


def _file_state(ws: Path) -> dict[str, Any] | None:
    """The target as a finalize-only reconciler must leave it (no link followed)."""
    path = ws / TARGET
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    state: dict[str, Any] = {"mode": info.st_mode, "ino": info.st_ino, "mtimeNs": info.st_mtime_ns,
                             "size": info.st_size}
    if path.is_file() and not path.is_symlink():
        state["bytes"] = path.read_bytes().decode("utf-8", errors="replace")
    return state


def _snapshot(client: Any, ws: Path) -> dict[str, Any]:
    """The crashed run as a fresh process projects it, the target and the effect log."""
    params = {"workspace": str(ws)}
    projection = ok(client.call("store.project", params), "store.project")
    ok(client.call("store.close", params), "store.close")
    runs = [r for r in projection.get("runs") or () if not (r.get("header") or {}).get("continuationSource")]
    run = runs[0] if len(runs) == 1 else {}
    effects, problems = effect_lines(ws)
    return {
        "events": list(run.get("events") or ()),
        "operations": list(run.get("toolOperations") or ()),
        "journal": run.get("toolJournalEvents"),
        "states": {str(o.get("operationId")): str(o.get("currentState")) for o in run.get("toolOperations") or ()},
        "health": (projection.get("health") or {}).get("status"),
        "file": _file_state(ws),
        "effects": effects,
        "effectProblems": problems,
    }


def _bundle_of(events: Sequence[Mapping[str, Any]], op: str) -> dict[str, int]:
    """How many reconcile, response and decision events name ``op`` (the T2 response included)."""
    counts = {"reconcile": 0, "response": 0, "decision": 0}
    for event in events:
        if (event.get("refs") or {}).get("operationId") == op and label(event) in counts:
            counts[label(event)] += 1
    return counts


def _bundle_problem(counts: Mapping[str, int], disposition: str | None) -> str | None:
    """``None`` for no bundle or exactly one whole one (spec-phase3 §5.2); else what is wrong."""
    if not any(counts.values()):
        return None
    want = {"reconcile": 1, "decision": 1, "response": 1 if disposition == "completed" else 0}
    if dict(counts) == want:
        return None
    return f"bundle facts {dict(counts)}: a partial or repeated bundle (a whole one is {want})"


def _decision(events: Sequence[Mapping[str, Any]], op: str) -> str | None:
    for event in events:
        if (event.get("refs") or {}).get("operationId") == op and label(event) == "decision":
            payload = ((event.get("actions") or {}).get("toolRecovery") or {}).get("payload") or {}
            return payload.get("disposition")
    return None


def _starts(snap: Mapping[str, Any], op: str) -> list[int]:
    return [int(line["pid"]) for line in snap["effects"] if str(line.get("operationId")) == op]


# --------------------------------------------------------------------------- kill


def _next_point(point_id: str, order: Sequence[str]) -> str:
    return order[(order.index(point_id) + 1) % len(order)] if point_id in order else order[0]


def _kill_trial(ctx: Any, point: Any, info: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
    tag = f"[{setup['id']}: {setup['tool']} killed at {setup['crash']}]"
    ws = Path(ctx.workspace) / setup["id"]
    op, reader, before = _crashed_tool(ctx, ws, setup)
    evidence = ctx.evidence.setdefault("reconciler", {}).setdefault(setup["id"], {"operationId": op})
    started = len(_starts(before, op))
    ctx.record("setup_effects", started == setup["effects"], f"{tag} the effect log holds {started} start(s) of "
               f"the operation after the tool's kill; the setup point requires {setup['effects']}")
    kills = [point.failpoint, _next_point(point.id, info["order"])]
    # the retry is a startup repair that reconciles before it seals (spec-phase3 §5.5), when claimed
    via_repair = "runtime.repair" in set(ctx.handshake.capabilities)
    for n, at in enumerate(kills):
        if n == 0 or not via_repair:
            what, request = "kill", ("runtime.reconcile", {"workspace": str(ws), "operationId": op})
        else:
            what, request = "second kill, during a retry by runtime.repair with reconcile", (
                "runtime.repair", {"workspace": str(ws), "reconcile": True})
        if n == 1 and not via_repair:
            what = "second kill, during the retry"
        driven = _until(ctx, ctx.spawn(), request[0], request[1], at, 1)
        evidence.setdefault("killedPids", []).append(driven.pid)
        after = _snapshot(reader, ws)
        _judge_crash(ctx, f"{tag} after the {what} at {at}", before, after, op)
    if setup.get("outsideWrite"):
        (ws / TARGET).write_bytes(OUTSIDE)
        before = _snapshot(reader, ws)
    _settle(ctx, reader, ws, op, setup, before, tag, evidence)


def _judge_crash(ctx: Any, where: str, before: Mapping[str, Any], after: Mapping[str, Any], op: str) -> None:
    """spec-phase3 §5.6: a crash inside the reconciler leaves the ledger and the file as before."""
    counts = _bundle_of(after["events"], op)
    partial = _bundle_problem(counts, _decision(after["events"], op))
    ctx.record("bundle_whole", partial is None and after["health"] == "healthy",
               f"{where}: {partial or 'no partial bundle'}; store health {after['health']}")
    same = (after["events"], after["operations"], after["journal"]) == (before["events"], before["operations"],
                                                                       before["journal"])
    ctx.record("nothing_committed", same, f"{where}: " + (
        "the run's events, tool operations and journal are exactly as before the reconcile" if same else
        f"the ledger changed: bundle facts {counts}, state {before['states'].get(op)} -> {after['states'].get(op)} "
        "(spec-phase3 §5.6: no bundle at any reconciler point, the bundle transaction rolls back whole)"))
    _target_check(ctx, where, before["file"], after["file"])
    _effects_check(ctx, where, before, after, op)


def _target_check(ctx: Any, where: str, want: Any, got: Any) -> None:
    good = want == got
    ctx.record("target_untouched", good, f"{where}: " + (
        f"{TARGET} byte-, inode-, mode- and mtime-identical" if good else
        f"{TARGET} changed: {want} -> {got} (spec-phase3 §5.1: the reconciler never writes, renames, deletes or "
        "re-modes the target)"))


def _effects_check(ctx: Any, where: str, before: Mapping[str, Any], after: Mapping[str, Any], op: str) -> None:
    starts = _starts(after, op)
    problems = list(after["effectProblems"])
    if len(starts) > 1:
        problems.append(f"the tool of {op} started {len(starts)} times (pids {starts})")
    if after["effects"][:len(before["effects"])] != before["effects"]:
        problems.append("the effect log was rewritten (it is append-only)")
    new = after["effects"][len(before["effects"]):]
    if new:
        problems.append(f"{len(new)} new tool start(s): {[(line.get('tool'), line.get('pid')) for line in new]}")
    ctx.record("effect_log", not problems, f"{where}: " + ("; ".join(problems) if problems else
               f"the tool started {len(starts)} time(s), no new start"))


def _settle(ctx: Any, client: Any, ws: Path, op: str, setup: Mapping[str, Any], before: Mapping[str, Any],
            tag: str, evidence: dict[str, Any]) -> None:
    """A clean reconcile settles once; a second settles nothing; repair and resume go on."""
    params = {"workspace": str(ws), "operationId": op}
    timeout = min(60.0, ctx.remaining())
    want = setup["settles"]
    reply = client.call("runtime.reconcile", params, timeout=timeout)
    items = list((reply.result or {}).get("operations") or ()) if reply.ok else []
    evidence["settle"] = items if reply.ok else {"error": reply.error}
    item = items[0] if len(items) == 1 and isinstance(items[0], Mapping) else {}
    got = {k: item.get(k) for k in want}
    settled = _snapshot(client, ws)
    counts = _bundle_of(settled["events"], op)
    disposition = _decision(settled["events"], op)
    problems = []
    if not reply.ok:
        problems.append(f"runtime.reconcile answered ok:false {reply_code(reply)!r}")
    elif got != dict(want) or item.get("operationId") != op:
        problems.append(f"the item is {item or items}, required {dict(want)} for {op}")
    expected_counts = {"reconcile": 1, "decision": 1, "response": 1 if want["outcome"] == "completed" else 0}
    if counts != expected_counts or disposition != want["outcome"]:
        problems.append(f"the store holds bundle facts {counts} with disposition {disposition!r}, required one "
                        f"{want['outcome']} bundle {expected_counts}")
    ctx.record("settled_once", not problems, f"{tag} " + ("; ".join(problems) if problems else
               f"one {want['outcome']} bundle ({want['reasonCode']})"))
    _target_check(ctx, f"{tag} after the settling reconcile", before["file"], settled["file"])
    if setup.get("outsideWrite") and (settled["file"] or {}).get("bytes") != OUTSIDE.decode():
        ctx.record("outside_write_survives", False, f"{tag} the outside bytes were overwritten: {settled['file']}")
    elif setup.get("outsideWrite"):
        ctx.record("outside_write_survives", True, f"{tag} the outside bytes survive")
    again = client.call("runtime.reconcile", params, timeout=timeout)
    after_again = _snapshot(client, ws)
    again_items = list((again.result or {}).get("operations") or ()) if again.ok else []
    quiet = after_again["events"] == settled["events"] and after_again["operations"] == settled["operations"]
    said = [i.get("outcome") for i in again_items if isinstance(i, Mapping)]
    good = quiet and again.ok and not ({"completed", "parked"} & set(said))
    ctx.record("reconcile_idempotent", good, f"{tag} a second runtime.reconcile " + (
        f"committed nothing ({said or 'no item'})" if good else
        f"answered {said if again.ok else reply_code(again)!r} and the store {'did not change' if quiet else 'changed'}"))
    _, problems = consistent_projection(client, str(ws))  # reading never writes; maka_ref agrees
    ctx.record("projection_consistent", not problems, f"{tag} " + ("; ".join(problems) if problems else
               "two projections identical, ledger files unchanged by reading, resolutions equal maka_ref's"))
    _repair_and_resume(ctx, client, ws, op, setup, before, tag)


def _repair_and_resume(ctx: Any, client: Any, ws: Path, op: str, setup: Mapping[str, Any], before: Mapping[str, Any],
                       tag: str) -> None:
    caps = set(ctx.handshake.capabilities)
    params = {"workspace": str(ws)}
    timeout = min(60.0, ctx.remaining())
    if "runtime.repair" in caps:
        ok(client.call("runtime.repair", params, timeout=timeout), "runtime.repair")
        repaired = _snapshot(client, ws)
        two = ok(client.call("runtime.repair", params, timeout=timeout), "runtime.repair")
        again = _snapshot(client, ws)
        good = not two.get("repairs") and again["events"] == repaired["events"]
        ctx.record("repair_idempotent", good, f"{tag} " + ("a second repair wrote nothing" if good else
                                                          f"a second repair wrote: {two.get('repairs')}"))
    if "runtime.repair" in caps and "runtime.continuation" in caps:
        reply = client.call("runtime.resume", params, timeout=timeout)
        want = setup["resume"]
        parked = reply.result.get("parked") if reply.ok else None
        good = reply.ok and parked is want["parked"]
        ctx.record("resume_outcome", good, f"{tag} runtime.resume " + (
            f"parked={parked}" + (" (continued past the settled operation)" if parked is False else "")
            if reply.ok else f"answered ok:false {reply_code(reply)!r}") + ("" if good else f", required parked={want['parked']}"))
    final = _snapshot(client, ws)
    _effects_check(ctx, f"{tag} over the whole story", before, final, op)
    _target_check(ctx, f"{tag} after repair and resume", before["file"], final["file"])


# --------------------------------------------------------------------------- pause


def _stop_at(ctx: Any, client: Any, failpoint: str, op: str, params: Mapping[str, Any], what: str) -> bool:
    """Arm ``failpoint`` with ``action: "stop"``, send ``op`` until it is announced, and wait
    for the process to stop itself (protocol §4.4); records ``stopped_at_point``."""
    if failpoint not in tuple(client.handshake.failpoints or ()):
        raise DriveError(f"failpoint {failpoint} is not listed in the handshake (protocol §3, §4.4: every "
                         "catalogue point of a claimed capability must be armable)")
    armed = client.call("faults.arm", {"failpoint": failpoint, "hit": 1, "action": "stop"})
    if not armed.ok:
        if reply_code(armed) == "fault_action_unsupported":
            raise FaultNotApplicable(f"faults.arm action stop unsupported: {(armed.error or {}).get('message')}")
        raise DriveError(f"faults.arm with action stop answered {reply_code(armed)!r} (protocol §4.4)")
    got = client.call_until_failpoint(op, dict(params), failpoint=failpoint, timeout=ctx.remaining())
    if not isinstance(got, str):
        raise Unreached(f"unreached: {op} answered without announcing {failpoint}",
                        reply={"ok": got.ok, "result": got.result, "error": got.error})
    status = wait_stopped(client.pid, 5.0)
    ctx.record("stopped_at_point", status == "stopped", f"{what} (pid {client.pid}) at {failpoint}: process "
               f"status {status!r} (protocol §4.4 action stop: it stops itself)")
    return status == "stopped"


def _pause_trial(ctx: Any, point: Any, setup: Mapping[str, Any]) -> None:
    tag = f"[{setup['id']}: {setup['tool']} stopped at {setup['crash']}]"
    ws = Path(ctx.workspace) / setup["id"]
    ws.mkdir()
    evidence: dict[str, Any] = ctx.evidence.setdefault("reconciler", {}).setdefault("pause", {})
    a = ctx.spawn()
    if not _stop_at(ctx, a, setup["crash"], "runtime.run_turn", {"workspace": str(ws), "script": _script(setup)},
                    "the tool's process A"):
        return
    evidence["pidA"] = a.pid
    reader = ctx.spawn()
    before = _snapshot(reader, ws)
    ops = [op for op, state in before["states"].items() if state == "prepared"]
    if len(ops) != 1:
        raise DriveError(f"with A stopped at {setup['crash']} the store holds {len(ops)} prepared operations "
                         f"(expected the one {setup['tool']}): {before['states']}")
    op = ops[0]
    evidence["operationId"] = op
    driven = _until(ctx, ctx.spawn(), "runtime.reconcile", {"workspace": str(ws), "operationId": op},
                    point.failpoint, point.hit)
    evidence["killedPid"] = driven.pid
    _judge_crash(ctx, f"{tag} after the reconciler's kill at {point.failpoint}", before, _snapshot(reader, ws), op)
    reply = reader.call("runtime.reconcile", {"workspace": str(ws), "operationId": op}, timeout=ctx.remaining())
    items = list((reply.result or {}).get("operations") or ()) if reply.ok else []
    outcome = items[0].get("outcome") if len(items) == 1 and isinstance(items[0], Mapping) else None
    settled = _snapshot(reader, ws)
    ctx.record("settled_once", outcome == setup["settles"]["outcome"], f"{tag} runtime.reconcile while A is stopped "
               f"answered {items if reply.ok else reply_code(reply)!r}, required {setup['settles']['outcome']}")
    os.kill(a.pid, signal.SIGCONT)
    late = await_late_reply(a, min(30.0, ctx.remaining()))
    a.kill()
    evidence["lateReply"] = {k: late.get(k) for k in ("kind", "ok")} | {
        "status": (late.get("result") or {}).get("status"), "error": (late.get("result") or {}).get("error")
        or late.get("error")}
    after = _snapshot(reader, ws)
    counts = _bundle_of(after["events"], op)
    problems = []
    if counts != {"reconcile": 1, "response": 1, "decision": 1}:
        problems.append(f"bundle and outcome facts {counts} after A's late T2 (required one completed bundle and no "
                        "second outcome: the late T2 is refused, spec-phase3 §7 scenario 45)")
    if after["states"].get(op) != settled["states"].get(op):
        problems.append(f"A moved the operation from {settled['states'].get(op)} to {after['states'].get(op)}")
    answer = _answer(late) if late.get("kind") == "reply" and not late.get("ok") else None
    if late.get("kind") in ("timeout", "violation") or (answer is not None and answer["claim"] == "bad"):
        problems.append(f"A's late answer is not a normal response or a stable code: {evidence['lateReply']}")
    ctx.record("late_writer_rejected", not problems, f"{tag} " + ("; ".join(problems) if problems else
               f"A answered {evidence['lateReply']}; the store holds the one bundle C committed"))
    _target_check(ctx, f"{tag} after A was continued", settled["file"], after["file"])
    _effects_check(ctx, f"{tag} after A was continued", before, after, op)


# --------------------------------------------------------------------------- race


def _race_trial(ctx: Any, point: Any, setup: Mapping[str, Any]) -> None:
    ws = Path(ctx.workspace) / setup["id"]
    op, reader, before = _crashed_tool(ctx, ws, setup)
    evidence: dict[str, Any] = ctx.evidence.setdefault("reconciler", {}).setdefault("race", {"operationId": op})
    params = {"workspace": str(ws), "operationId": op}
    a = ctx.spawn()
    if not _stop_at(ctx, a, point.failpoint, "runtime.reconcile", params, "reconciler A"):
        return
    evidence["pidA"] = a.pid
    b = ctx.spawn()
    evidence["pidB"] = b.pid
    b_reply: list[Any] = []
    thread = threading.Thread(target=lambda: b_reply.append(_safe_call(b, params, ctx.remaining())), daemon=True)
    thread.start()
    # Outside the bundle transaction B runs to its end first, so A's commit meets a settled
    # operation (§5.7's refusal path, deterministic); inside it A holds the write lock, B waits.
    thread.join(_RACE_GRACE_S if point.raw.get("insideTransaction") else min(60.0, ctx.remaining()))
    evidence["bWaitedOnA"] = thread.is_alive()
    os.kill(a.pid, signal.SIGCONT)
    late = await_late_reply(a, min(30.0, ctx.remaining()))
    a.kill()
    thread.join(min(60.0, ctx.remaining()))
    if thread.is_alive():
        b.kill()
        thread.join(5.0)
    answers = {"A": _answer(late), "B": _answer(b_reply[0] if b_reply else {"kind": "timeout"})}
    evidence["answers"] = answers
    after = _snapshot(reader, ws)
    counts = _bundle_of(after["events"], op)
    disposition = _decision(after["events"], op)
    one = counts == {"reconcile": 1, "response": 1, "decision": 1} and disposition == "completed"
    ctx.record("one_bundle", one, f"bundle facts {counts} with disposition {disposition!r}" + (
        "" if one else ", required exactly one completed bundle (spec-phase3 §5.7: the store admits exactly one)"))
    committed = [who for who, ans in answers.items() if ans["claim"] in ("completed", "parked")]
    problems = []
    if len(committed) != 1:
        problems.append(f"{len(committed)} reconcilers report committing a bundle ({committed}), required exactly one")
    for who, ans in answers.items():
        if who not in committed and ans["claim"] not in ("already_settled", "code"):
            problems.append(f"{who} answered {ans} (the loser commits nothing and says already_settled or a "
                            "stable code)")
    ctx.record("loser_commits_nothing", not problems, "; ".join(problems) or
               f"winner {committed[0]}, the other answered {next(a for w, a in answers.items() if w not in committed)}")
    _target_check(ctx, "after the race", before["file"], after["file"])
    _effects_check(ctx, "after the race", before, after, op)


def _safe_call(client: Any, params: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    try:
        reply = client.call("runtime.reconcile", params, timeout=min(60.0, timeout))
    except Exception as exc:  # noqa: BLE001 - a dead or misbehaving racer is judged, not raised
        return {"kind": "violation", "detail": f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"}
    out: dict[str, Any] = {"kind": "reply", "ok": reply.ok}
    out["result" if reply.ok else "error"] = reply.result if reply.ok else reply.error
    return out


def _answer(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a racer claims: ``completed`` / ``parked`` (it committed), ``already_settled``,
    ``code`` (ok:false with a stable code, or a ``skipped`` item with one), or ``bad``."""
    if raw.get("kind") != "reply":
        return {"claim": "bad", "detail": raw}
    if not raw.get("ok"):
        code = (raw.get("error") or {}).get("code")
        return {"claim": "code" if isinstance(code, str) and _CODE.match(code) else "bad", "code": code}
    items = (raw.get("result") or {}).get("operations") or []
    if len(items) != 1 or not isinstance(items[0], Mapping):
        return {"claim": "bad", "items": items}
    outcome, code = items[0].get("outcome"), items[0].get("code")
    if outcome in ("completed", "parked", "already_settled"):
        return {"claim": outcome, "code": code}
    if outcome == "skipped" and isinstance(code, str) and _CODE.match(code):
        return {"claim": "code", "code": code}
    return {"claim": "bad", "item": dict(items[0])}
