"""The ``pause`` fault (issue 6 item 3): a second writer races a *stopped* first one.

Trial (``docs/crashlab-faults.md`` §1):

1. process A arms the trial's live point with ``faults.arm {action: "stop"}`` (protocol §4.4)
   and runs a scripted turn (Write, then Append, then text); at the point it announces
   ``{"failpoint": id}`` and SIGSTOPs itself — at P3 that is *inside* the Write, after its
   effect-log line, with the effect half done;
2. process B — while A is alive but frozen — runs ``runtime.repair`` then ``runtime.resume``
   (repair is *startup* repair: it cannot tell a frozen writer from a dead one, so it seals
   the run with a recovered terminal);
3. the harness SIGCONTs A and waits for its ``runtime.run_turn`` reply (with a deadline);
4. process C (fresh) reads everything back.

Checks: ``point_reached``, ``stopped_at_point`` (the trial's preconditions),
``single_continuation``, ``no_double_run``, ``late_writer_rejected``,
``projection_consistent``. Evidence under ``ctx.evidence["pause"]``: the replies' codes, the
late reply, timings.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Mapping

from crashlab._lab.faults._shared import (
    FaultNotApplicable,
    LIVE_POINTS,
    RUN_TIMEOUT,
    StepFailed,
    await_late_reply,
    consistent_projection,
    continuations_of,
    double_starts,
    effect_lines,
    expect_ok,
    ops_of,
    reply_code,
    require,
    run_by_id,
    script,
    unreached,
    terminal_count,
    unanswered_operations,
    wait_stopped,
)

__all__ = ["REQUIRED_CAPABILITIES", "run"]

REQUIRED_CAPABILITIES: tuple[str, ...] = ("store", "runtime.loop", "runtime.repair", "runtime.continuation", "faults")
DEFAULT_POINT = "P3"


def run(ctx: Any) -> None:
    """Run one pause trial; every verdict goes through ``ctx.record``."""
    point = ctx.spec.point if ctx.spec.point in LIVE_POINTS else None
    if point is None:
        raise FaultNotApplicable(f"the pause fault stops a live run_turn: point {ctx.spec.point!r} is not one of "
                                 f"{', '.join(LIVE_POINTS)}")
    try:
        _trial(ctx, point)
    except StepFailed as exc:
        ctx.record(exc.check, False, exc.detail)


def _call(client: Any, op: str, params: Mapping[str, Any], timeout: float = RUN_TIMEOUT) -> Any:
    return client.call(op, params, timeout=timeout)


def _trial(ctx: Any, point: str) -> None:
    options = ctx.spec.options
    workspace = os.path.realpath(ctx.workspace)
    ws = {"workspace": workspace}
    ev: dict[str, Any] = ctx.evidence.setdefault("pause", {"point": point})
    timings: dict[str, float] = ev.setdefault("timings", {})
    start = time.monotonic()

    def mark(name: str) -> None:
        timings[name] = round(time.monotonic() - start, 4)

    # ---------------------------------------------------------------- A: stop inside the tool
    a = ctx.spawn()
    require(a, REQUIRED_CAPABILITIES, "pause")
    if point not in tuple(a.handshake.failpoints or ()):
        unreached(ctx, f"unreached: {point} is not listed in the handshake (protocol §4.4 "
                   "makes P0–P9 part of the crash contract of an implementation claiming faults)")
        return
    armed = _call(a, "faults.arm", {"failpoint": point, "hit": int(options.get("hit", 1)), "action": "stop"})
    if not armed.ok:
        if reply_code(armed) == "fault_action_unsupported":
            raise FaultNotApplicable(f"faults.arm action stop unsupported here: {(armed.error or {}).get('message')}")
        ctx.record("stopped_at_point", False, f"faults.arm with action stop answered {reply_code(armed)!r} "
                   "(protocol §4.4: the optional action param, values block and stop)")
        return
    got = a.call_until_failpoint("runtime.run_turn", {**ws, "script": script(ctx.spec.protocol, ctx.spec.seed)},
                                 failpoint=point, timeout=RUN_TIMEOUT)
    mark("announced")
    if not isinstance(got, str):
        unreached(ctx, f"unreached: runtime.run_turn answered ({'ok' if got.ok else got.code}) "
                   f"without announcing {point}")
        return
    ctx.record("point_reached", True, f"{point} announced")
    status = wait_stopped(a.pid, float(options.get("stop_timeout", 5.0)))
    mark("stopped")
    if status != "stopped":
        ctx.record("stopped_at_point", False, f"A announced {point} but did not stop itself (process status "
                   f"{status!r}); with action stop it must SIGSTOP itself and carry on after SIGCONT (protocol §4.4)")
        return
    ctx.record("stopped_at_point", True, f"A (pid {a.pid}) stopped at {point}")
    ev["pidA"] = a.pid
    effects_paused, _ = effect_lines(workspace)

    # ---------------------------------------------------------------- B: repair + resume
    b = ctx.spawn()
    ev["pidB"] = b.pid
    paused = expect_ok(_call(b, "store.project", ws), "projection_consistent", "store.project while A is stopped")
    sources = [r for r in paused.get("runs", ()) if not (r.get("header") or {}).get("continuationSource")]
    if len(sources) != 1:
        raise StepFailed("single_continuation", f"expected A's run alone in the workspace while A is stopped, found "
                         f"{[r.get('runId') for r in paused.get('runs', ())]}")
    source_id = str(sources[0]["runId"])
    ev["sourceRunId"] = source_id
    repair = _call(b, "runtime.repair", ws)
    mark("repaired")
    ev["repair"] = repair.result if repair.ok else {"error": repair.error}
    expect_ok(repair, "repair", "runtime.repair (while A is stopped)")
    resume = _call(b, "runtime.resume", ws)
    mark("resumed")
    continued_target = None
    if resume.ok:
        ev["resume"] = {k: resume.result.get(k) for k in ("parked", "rejectionReasons", "targetRunId", "status")}
        if resume.result.get("parked") is False:
            continued_target = resume.result.get("targetRunId")
    else:
        ev["resume"] = {"error": resume.error}
    _call(b, "store.close", ws)
    sealed = expect_ok(_call(b, "store.project", ws), "projection_consistent", "store.project after B")
    _call(b, "store.close", ws)
    b.close()
    effects_sealed, _ = effect_lines(workspace)

    # ---------------------------------------------------------------- SIGCONT A
    os.kill(a.pid, signal.SIGCONT)
    late = await_late_reply(a, float(options.get("late_timeout", 20.0)))
    mark("late_reply")
    a.kill()
    ev["lateReply"] = _summarise_late(late)

    # ---------------------------------------------------------------- C: read back
    c = ctx.spawn()
    final, problems = consistent_projection(c, workspace)
    mark("projected")
    effects_final, effect_problems = effect_lines(workspace)
    ev["effectLog"] = effects_final
    ev["codes"] = sorted(set(_codes(ev.get("resume"))) | set(_codes(ev["lateReply"])))

    ctx.record("projection_consistent", not problems and final is not None,
               "; ".join(problems) if problems else "a fresh process projects twice identically; ledger files "
               "unchanged by reading; resolutions match maka_ref")
    final = final or {}
    _check_single_continuation(ctx, final, source_id, resume, continued_target)
    _check_no_double_run(ctx, effects_final, effect_problems, effects_paused, a.pid, sealed, source_id)
    _check_late_writer(ctx, late, paused, sealed, final, effects_sealed, effects_final, a.pid, source_id)


# --------------------------------------------------------------------------- checks


def _check_single_continuation(ctx: Any, final: Mapping[str, Any], source_id: str, resume: Any,
                               continued_target: Any) -> None:
    conts = continuations_of(final, source_id)
    ids = [r.get("runId") for r in conts]
    if len(conts) > 1:
        ctx.record("single_continuation", False, f"{len(conts)} runs continue source run {source_id}: {ids} "
                   "(spec 20 §3.10: the durable claim is unique per source boundary)")
    elif continued_target is not None and ids != [continued_target]:
        ctx.record("single_continuation", False, f"B's runtime.resume reported target {continued_target} but the "
                   f"store holds continuations {ids}")
    elif continued_target is None and conts:
        outcome = "parked" if resume.ok else f"failed {reply_code(resume)!r}"
        ctx.record("single_continuation", False, f"B's runtime.resume {outcome}, yet run {ids[0]} continues "
                   f"{source_id}")
    else:
        ctx.record("single_continuation", True, f"{len(conts)} continuation of {source_id}"
                   + (f" ({ids[0]})" if ids else ""))


def _check_no_double_run(ctx: Any, effects: list[dict[str, Any]], effect_problems: list[str],
                         effects_paused: list[dict[str, Any]], pid_a: int, sealed: Mapping[str, Any],
                         source_id: str) -> None:
    problems = list(effect_problems)
    twice = double_starts(effects)
    if twice:
        problems.append(f"operations started more than once: {twice}")
    # A tool call (tool + args) started by two processes ran twice even under two operation ids.
    by_call: dict[tuple[str, str], set[int]] = {}
    for line in effects:
        by_call.setdefault((str(line["tool"]), str(line["argsHash"])), set()).add(int(line["pid"]))
    for (tool, args), pids in sorted(by_call.items()):
        if len(pids) > 1:
            problems.append(f"{tool} {args[:19]}… started by processes {sorted(pids)}")
    # The operations A started (before it stopped or after SIGCONT): never started by anyone else.
    a_ops = {str(l["operationId"]) for l in effects if int(l["pid"]) == pid_a}
    states = ops_of(run_by_id(sealed, source_id))
    for line in effects:
        if str(line["operationId"]) in a_ops and int(line["pid"]) != pid_a:
            state = states.get(str(line["operationId"]), "?")
            problems.append(f"operation {line['operationId']} (state {state} when B ran) re-run by pid {line['pid']}")
    open_ops = unanswered_operations(run_by_id(sealed, source_id))
    indeterminate = sorted(op for op in a_ops if op in open_ops)
    detail = "; ".join(problems) if problems else (
        f"{len(effects)} effect starts, none twice; A's operations {sorted(a_ops)} "
        f"(indeterminate when B ran: {indeterminate}) started only by A")
    ctx.record("no_double_run", not problems, detail)


def _check_late_writer(ctx: Any, late: Mapping[str, Any], paused: Mapping[str, Any], sealed: Mapping[str, Any],
                       final: Mapping[str, Any], effects_sealed: list[dict[str, Any]],
                       effects_final: list[dict[str, Any]], pid_a: int, source_id: str) -> None:
    problems: list[str] = []
    kind = late.get("kind")
    if kind == "timeout":
        problems.append("A never answered its runtime.run_turn after SIGCONT (it must carry on, not block: "
                        "protocol §4.4 action stop)")
    elif kind == "violation":
        problems.append(f"A's late output is not a valid response: {late.get('detail')}")
    b_wrote = _strip(sealed) != _strip(paused)
    new_a = [l for l in effects_final[len(effects_sealed):] if int(l["pid"]) == pid_a]
    # An operation whose T1 was durable when B sealed the run is indeterminate in the ledger
    # ("may have started"): A finishing or starting *its* effect is what that fact admits, and
    # nobody else may run it (no_double_run). A new operation needs a new T1, which a sealed
    # run must refuse, so its effect must never start.
    prepared = unanswered_operations(run_by_id(sealed, source_id))
    late_indeterminate = sorted({str(l["operationId"]) for l in new_a if str(l["operationId"]) in prepared})
    new_a = [l for l in new_a if str(l["operationId"]) not in prepared]
    if b_wrote:
        if new_a:
            problems.append(f"A started side effects without a T1 durable before B sealed the run: "
                            f"{[(l['tool'], l['operationId']) for l in new_a]}")
        diff = _diff(sealed, final)
        if diff:
            problems.append("A changed the store after B sealed the run: " + "; ".join(diff))
    n_terminal = terminal_count(run_by_id(final, source_id) or {})
    if n_terminal > 1:
        problems.append(f"source run {source_id} has {n_terminal} terminal events")
    codes = sorted(set(_codes(late)))
    how = {"reply": "answered", "exited": "exited (fails closed)"}.get(str(kind), str(kind))
    if problems:
        ctx.record("late_writer_rejected", False, "; ".join(problems) + f" (A {how}; codes {codes})")
    elif b_wrote:
        also = (f"; A carried on the effect of its indeterminate operation(s) {late_indeterminate} (T1 durable "
                "before B sealed the run, never re-run by anyone)") if late_indeterminate else ""
        ctx.record("late_writer_rejected", True, f"A {how} after SIGCONT with codes {codes}; the store is exactly "
                   f"as B left it{also}")
    else:
        ctx.record("late_writer_rejected", True, f"B wrote nothing while A was stopped; A {how} alone "
                   f"(codes {codes})")


# --------------------------------------------------------------------------- helpers


#: Header fields a fenced late writer may still touch: spec 20 §4.1 tolerates a failed header
#: commit after a live run "recorded as a trace-write failure", and §5.3 lists both fields as
#: mutable. Upstream does exactly that (agent-run.ts:1790-1800) after its write is refused with
#: ``run_sealed``; status, completedAt, failureClass and the events must not change.
LATE_WRITER_NOTES = frozenset({"traceWriteError", "updatedAt"})


def _strip(projection: Mapping[str, Any]) -> Any:
    return [dict(r) for r in projection.get("runs", ())]


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed between two projections, run by run (short, for a check's detail)."""
    out = []
    old = {r.get("runId"): r for r in before.get("runs", ())}
    new = {r.get("runId"): r for r in after.get("runs", ())}
    for rid in sorted(set(new) - set(old)):
        out.append(f"new run {rid}")
    for rid in sorted(set(old) - set(new)):
        out.append(f"run {rid} vanished")
    for rid in sorted(set(old) & set(new)):
        o, n = old[rid], new[rid]
        o_ids = [e.get("id") for e in o.get("events") or ()]
        n_ids = [e.get("id") for e in n.get("events") or ()]
        if o_ids != n_ids:
            added = [i for i in n_ids if i not in o_ids]
            out.append(f"run {rid} events {len(o_ids)} -> {len(n_ids)} (new {added[:4]})")
        elif o.get("events") != n.get("events"):
            out.append(f"run {rid}: event bodies changed")
        if o.get("header") != n.get("header"):
            keys = sorted(k for k in set(o.get("header") or {}) | set(n.get("header") or {})
                          if (o.get("header") or {}).get(k) != (n.get("header") or {}).get(k)
                          and k not in LATE_WRITER_NOTES)
            if keys:
                out.append(f"run {rid} header changed ({', '.join(keys)})")
        for key in ("toolOperations", "toolJournalEvents"):
            if o.get(key) != n.get(key):
                out.append(f"run {rid} {key} changed")
    if before.get("unsettledOperations") != after.get("unsettledOperations"):
        out.append("unsettledOperations changed")
    return out


def _codes(value: Any, depth: int = 0) -> list[str]:
    """Every ``code`` string (and park reason) inside a reply, for the evidence."""
    if depth > 6:
        return []
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "code" and isinstance(item, str):
                out.append(item)
            elif key == "rejectionReasons" and isinstance(item, list):
                out.extend(str(x) for x in item)
            else:
                out.extend(_codes(item, depth + 1))
    elif isinstance(value, list):
        for item in value:
            out.extend(_codes(item, depth + 1))
    return out


def _summarise_late(late: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(late)
    result = out.get("result")
    if isinstance(result, Mapping):
        out["result"] = {k: result.get(k) for k in ("status", "runId", "error", "finalizeError", "eventIds")
                         if k in result}
        out["result"]["toolCalls"] = [
            {k: c.get(k) for k in ("toolName", "status", "operationId")} for c in result.get("toolCalls") or ()
        ]
    return out
