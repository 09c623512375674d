"""The ``race`` fault (issue 6 item 3): N processes resume the same source boundary at once.

Trial (``docs/crashlab-faults.md`` §2):

1. prepare a crashed source run: process A arms the trial's point (default ``P7``: the Write
   settled, the next provider step not started — a safe boundary), runs the scripted turn,
   is SIGKILLed at the announcement; process B runs ``runtime.repair`` (the recovered
   terminal makes the run a resume candidate);
2. N racers (``ctx.spec.options["racers"]``, default 4) are started and handshaken, then one
   thread per racer sends ``runtime.resume`` after a common barrier (plus a seeded jitter of
   at most ``jitter_ms``, default 2 ms);
3. process C (fresh) reads everything back.

Checks: ``point_reached`` (preparation), ``single_continuation``, ``loser_codes``,
``no_double_run``, ``projection_consistent``. Evidence under ``ctx.evidence["race"]``: each
racer's pid, outcome, code or park reasons and duration.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any, Mapping

from crashlab._lab.faults._shared import (
    FaultNotApplicable,
    CLAIM_STATE_CODES,
    LIVE_POINTS,
    REVALIDATION_CODES,
    RUN_TIMEOUT,
    StepFailed,
    consistent_projection,
    continuations_of,
    double_starts,
    effect_lines,
    expect_ok,
    ops_of,
    require,
    run_by_id,
    script,
    unreached,
)

__all__ = ["LOSER_CODES", "REQUIRED_CAPABILITIES", "SAFE_POINTS", "run"]

REQUIRED_CAPABILITIES: tuple[str, ...] = ("store", "runtime.loop", "runtime.repair", "runtime.continuation", "faults")
#: Points whose kill + repair leaves a boundary spec 20 lets a continuation resume (§5.3 of
#: ``docs/failpoints.md``: P0 ``before_function_call``; P5–P8 ``after_function_response``).
#: At the others resume must park (P1–P4: dangling tool state; P9: no failed run), so the
#: race then checks that *no* racer continued.
SAFE_POINTS: tuple[str, ...] = ("P0", "P5", "P6", "P7", "P8")
DEFAULT_POINT = "P7"
#: What a loser may answer: a §3.9 revalidation error, or a park whose reasons all say the
#: boundary is already claimed (§3.3 steps 6–8, §3.5).
LOSER_CODES: frozenset[str] = REVALIDATION_CODES | CLAIM_STATE_CODES


def run(ctx: Any) -> None:
    """Run one race trial; every verdict goes through ``ctx.record``."""
    point = ctx.spec.point if ctx.spec.point in LIVE_POINTS else DEFAULT_POINT
    try:
        _trial(ctx, point)
    except StepFailed as exc:
        ctx.record(exc.check, False, exc.detail)


def _trial(ctx: Any, point: str) -> None:
    options = ctx.spec.options
    racers_n = int(options.get("racers", 4))
    if racers_n < 2:
        raise FaultNotApplicable(f"a race needs at least 2 racers, got {racers_n}")
    workspace = os.path.realpath(ctx.workspace)
    ws = {"workspace": workspace}
    ev: dict[str, Any] = ctx.evidence.setdefault("race", {"point": point, "racers": racers_n})
    timings: dict[str, float] = ev.setdefault("timings", {})
    start = time.monotonic()

    # ---------------------------------------------------------------- prepare the source
    a = ctx.spawn()
    require(a, REQUIRED_CAPABILITIES, "race")
    expect_ok(a.call("faults.arm", {"failpoint": point}), "point_reached", f"faults.arm {point}")
    got = a.call_until_failpoint("runtime.run_turn", {**ws, "script": script(ctx.spec.protocol, ctx.spec.seed)},
                                 failpoint=point, timeout=RUN_TIMEOUT)
    if not isinstance(got, str):
        unreached(ctx, f"unreached: runtime.run_turn answered without announcing {point}")
        return
    proof = a.kill()
    ctx.record("point_reached", True, f"{point} announced; killed (returncode {proof.returncode})")
    b = ctx.spawn()
    repair = expect_ok(b.call("runtime.repair", ws, timeout=RUN_TIMEOUT), "repair", "runtime.repair")
    ev["repair"] = repair
    prepared = expect_ok(b.call("store.project", ws), "projection_consistent", "store.project after repair")
    b.call("store.close", ws)
    b.close()
    sources = [r for r in prepared.get("runs", ()) if not (r.get("header") or {}).get("continuationSource")]
    if len(sources) != 1:
        raise StepFailed("single_continuation", f"expected one source run after repair, found "
                         f"{[r.get('runId') for r in prepared.get('runs', ())]}")
    source = sources[0]
    source_id = str(source["runId"])
    high_water = len(source.get("events") or ())
    ev.update(sourceRunId=source_id, sourceHighWater=high_water)
    effects_prepared, _ = effect_lines(workspace)
    timings["prepared"] = round(time.monotonic() - start, 4)

    # ---------------------------------------------------------------- the race
    racers = [ctx.spawn() for _ in range(racers_n)]
    timings["racersReady"] = round(time.monotonic() - start, 4)
    rng = random.Random(f"race-{ctx.spec.seed}-{ctx.spec.repetition}")
    jitter_ms = float(options.get("jitter_ms", 2.0))
    delays = [rng.uniform(0.0, jitter_ms) / 1000.0 for _ in racers]
    barrier = threading.Barrier(racers_n)
    outcomes: list[dict[str, Any]] = [{} for _ in racers]

    def race(i: int) -> None:
        out = outcomes[i]
        out["pid"] = racers[i].pid
        try:
            barrier.wait(timeout=30.0)
            time.sleep(delays[i])
            t = time.monotonic()
            reply = racers[i].call("runtime.resume", ws, timeout=RUN_TIMEOUT)
            out["durationS"] = round(time.monotonic() - t, 4)
            out["ok"] = reply.ok
            if reply.ok:
                out["parked"] = reply.result.get("parked")
                out["rejectionReasons"] = list(reply.result.get("rejectionReasons") or ())
                out["targetRunId"] = reply.result.get("targetRunId")
                out["status"] = reply.result.get("status")
            else:
                out["code"] = (reply.error or {}).get("code")
                out["message"] = str((reply.error or {}).get("message"))[:300]
        except Exception as exc:  # noqa: BLE001 - a ProtocolFailure is the racer's outcome
            out["ok"] = False
            out["failure"] = f"{getattr(exc, 'verdict', type(exc).__name__)}: {getattr(exc, 'message', exc)}"

    threads = [threading.Thread(target=race, args=(i,), name=f"racer-{i}") for i in range(racers_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(RUN_TIMEOUT + 35.0)
    timings["raced"] = round(time.monotonic() - start, 4)
    for racer in racers:
        racer.close()
    ev["outcomes"] = outcomes

    # ---------------------------------------------------------------- read back
    c = ctx.spawn()
    final, problems = consistent_projection(c, workspace)
    timings["projected"] = round(time.monotonic() - start, 4)
    effects, effect_problems = effect_lines(workspace)
    ev["effectLog"] = effects
    ev["codes"] = sorted({o.get("code") for o in outcomes if o.get("code")}
                         | {r for o in outcomes for r in o.get("rejectionReasons") or ()})
    ctx.record("projection_consistent", not problems and final is not None,
               "; ".join(problems) if problems else "a fresh process projects twice identically; ledger files "
               "unchanged by reading; resolutions match maka_ref")
    final = final or {}

    winners = [o for o in outcomes if o.get("ok") and o.get("parked") is False]
    conts = continuations_of(final, source_id)
    _check_single(ctx, point, source_id, high_water, conts, winners)
    _check_losers(ctx, outcomes, winners)
    _check_effects(ctx, effects, effect_problems, effects_prepared, outcomes, winners, prepared, source_id)


def _describe(o: Mapping[str, Any]) -> str:
    if "failure" in o:
        return f"pid {o.get('pid')}: {o['failure']}"
    if not o.get("ok"):
        return f"pid {o.get('pid')}: error {o.get('code')!r}"
    if o.get("parked"):
        return f"pid {o.get('pid')}: parked {o.get('rejectionReasons')}"
    return f"pid {o.get('pid')}: continued {o.get('targetRunId')} ({o.get('status')})"


def _check_single(ctx: Any, point: str, source_id: str, high_water: int, conts: list[Mapping[str, Any]],
                  winners: list[Mapping[str, Any]]) -> None:
    ids = sorted(str(r.get("runId")) for r in conts)
    at_boundary = [r for r in conts
                   if ((r.get("header") or {}).get("continuationSource") or {}).get("sourceRuntimeEventHighWater")
                   == high_water]
    targets = sorted(str(o.get("targetRunId")) for o in winners)
    if len(conts) > 1:
        ok, detail = False, (f"{len(conts)} runs continue source {source_id} (boundary high-water {high_water}): {ids}; "
                             f"{len(winners)} racers reported a continuation {targets} (spec 20 §3.10: the durable "
                             "claim is unique per boundary)")
    elif len(winners) > 1:
        ok, detail = False, f"{len(winners)} racers reported continuing {source_id}: {targets}; store holds {ids}"
    elif winners and ids != targets:
        ok, detail = False, f"the winner reported target {targets} but the store holds continuations {ids}"
    elif not winners and conts:
        ok, detail = False, f"no racer reported a continuation, yet {ids} continue {source_id}"
    elif conts and not at_boundary:
        ok, detail = False, f"continuation {ids} does not name the source's high-water {high_water}"
    elif not winners and point in SAFE_POINTS:
        ok, detail = False, (f"no racer continued the safe boundary of {source_id} (killed at {point}); "
                             "a resume that must succeed alone must still succeed once under a race")
    else:
        ok, detail = True, (f"exactly one continuation {ids[0]} of {source_id}" if ids
                            else f"no continuation: every racer parked at {point}, as the boundary requires")
    ctx.record("single_continuation", ok, detail)


def _check_losers(ctx: Any, outcomes: list[Mapping[str, Any]], winners: list[Mapping[str, Any]]) -> None:
    if not winners:  # nobody continued: every racer parked with the same reasons (one source, one answer)
        answers = {(o.get("ok"), o.get("parked"), tuple(o.get("rejectionReasons") or ()), o.get("code"))
                   for o in outcomes}
        bad = [_describe(o) for o in outcomes if "failure" in o or not o.get("ok") or not o.get("parked")]
        if bad or len(answers) > 1:
            ctx.record("loser_codes", False, "with no winner every racer must park alike: "
                       + "; ".join(_describe(o) for o in outcomes))
        else:
            ctx.record("loser_codes", True, f"all {len(outcomes)} racers parked {outcomes[0].get('rejectionReasons')}")
        return
    bad = []
    for o in outcomes:
        if o in winners:
            continue
        if "failure" in o:
            bad.append(_describe(o))
        elif not o.get("ok"):
            if o.get("code") not in LOSER_CODES:
                bad.append(_describe(o))
        elif o.get("parked"):
            reasons = set(o.get("rejectionReasons") or ())
            if not reasons or not reasons <= LOSER_CODES:
                bad.append(_describe(o))
    losers = len(outcomes) - len(winners)
    if bad:
        ctx.record("loser_codes", False, f"losers must get continuation_already_exists, a §3.9 revalidation code "
                   f"or a claim-state park (spec 20 §3.3, §3.5, §3.9); got: {'; '.join(bad)}")
    else:
        codes = sorted({o.get("code") or ",".join(o.get("rejectionReasons") or ()) for o in outcomes
                        if o not in winners})
        ctx.record("loser_codes", True, f"{losers} losers refused with {codes}")


def _check_effects(ctx: Any, effects: list[dict[str, Any]], effect_problems: list[str],
                   effects_prepared: list[dict[str, Any]], outcomes: list[Mapping[str, Any]],
                   winners: list[Mapping[str, Any]], prepared: Mapping[str, Any], source_id: str) -> None:
    problems = list(effect_problems)
    twice = double_starts(effects)
    if twice:
        problems.append(f"operations started more than once: {twice}")
    racer_pids = {int(o["pid"]) for o in outcomes if "pid" in o}
    new = effects[len(effects_prepared):] if effects[:len(effects_prepared)] == effects_prepared else effects
    starters = sorted({int(l["pid"]) for l in new if int(l["pid"]) in racer_pids})
    if len(starters) > 1:
        problems.append(f"{len(starters)} racers started side effects (pids {starters}): the continuation ran "
                        "more than once")
    winner_pids = {int(o["pid"]) for o in winners}
    if starters and not set(starters) <= winner_pids:
        problems.append(f"racer(s) {sorted(set(starters) - winner_pids)} started side effects but did not win")
    source_ops = set(ops_of(run_by_id(prepared, source_id)))
    rerun = sorted({str(l["operationId"]) for l in new if str(l["operationId"]) in source_ops})
    if rerun:
        problems.append(f"the source's operations {rerun} were started again by a racer")
    source_calls = {(str(l["tool"]), str(l["argsHash"])) for l in effects_prepared}
    again = sorted({f"{l['tool']} (pid {l['pid']})" for l in new
                    if (str(l["tool"]), str(l["argsHash"])) in source_calls})
    if again:
        problems.append(f"a tool call the source had already started ran again under a new operation: {again}")
    detail = "; ".join(problems) if problems else (
        f"{len(new)} effect starts during the race, all by the winner; none twice")
    ctx.record("no_double_run", not problems, detail)
