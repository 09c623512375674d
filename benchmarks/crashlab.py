"""``python -m benchmarks.crashlab``: crash cycles per second per core (issue 6, *Performance*).

In one run, so every figure sees the same machine and load:

* **bare**: spawn a bare ``python -c pass`` (new session, three pipes, as the client does)
  and reap it; and spawn a bare ``python -c <sleep>`` and SIGKILL + reap it. The floor of any
  plain spawn.
* **prefork spawn**: ``ProtocolClient.start`` of the reference adapter from a warm zygote,
  ``hello``, SIGKILL, reap — the cost of one pre-forked process, handshake included.
* **12 trials** (the upstream harness's P0–P11, prefix mode, ``kill`` fault; each one: spawn,
  drive, kill, reopen in a fresh process, project twice, check, repair, resume, effect log),
  run by ``crashlab.run_trial`` on one worker, **plain** spawn and **prefork**, in alternating
  rounds (``--rounds``, medians reported). Wall time per 12 trials and crash cycles per
  second; and the CPU time per cycle (harness + every implementation process, the zygote's
  reaped children included), whose inverse is cycles per second per *core* even on a loaded
  machine. The target: 12 trials in under 1.5 s on one core (upstream: ≈ 7 s).
* **tmpfs**: ``--tmpfs`` adds prefork and plain rounds with the trials' workspaces on
  ``/dev/shm``, where ``fsync`` costs nothing: the difference is the storage latency of the
  implementation's durable writes, which no spawner can remove.
* **phases**: one extra prefork round with the client's calls timed — where a cycle's time
  goes (each protocol operation's round trip, the spawns, kills, closes).
* **full sweep**: every point, every mode, every fault, one trial each (``crashlab sweep``
  with no filter) on ``--workers`` (default 2) workers with prefork; ``--plain-sweep`` also
  runs it with plain spawns. ``--no-sweep`` skips it.
* **where a trial's time goes** (issue 18 item 3): every trial of the rounds above, split by
  its own recorded timeline (``crashlab._lab.timeline.phase_breakdown``) into spawn, prefix
  write, kill, reopen, project, repair + resume, oracle, harness, close + reap; median ms per
  trial per round kind. The sweep's HTML report shows the same split per trial.

* **power loss** (issue 15; ``--powerloss-rounds``, 0 skips it; ``--powerloss-only`` runs only
  this): a ``powerloss`` trial against a ``kill`` trial at the same point, alternating, at
  P0, P5 and inside_t1 (prefix) and P3, P11 (live) — medians per point and the ratio of their
  sums (target ≤ 2×) — and the FUSE layer's pass-through overhead on the reference's T1+T2
  (pairs of ``store.commit_tool_prepared`` + ``store.commit_tool_outcome`` through the adapter,
  on a plain directory and on the mount, alternating rounds). "not run: <reason>" without FUSE.

``--profile`` prints a cProfile of one prefork round of the 12 trials (the harness side).
Results: ``docs/performance.md`` ("Crash lab (issue 6)").
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import platform
import pstats
import resource
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

from crashlab import ProtocolClient, TrialSpec, default_specs, reference_command, run_sweep, run_trial
from crashlab._client import _client as client_module
from crashlab._client._zygote import client as _zygote
from crashlab._lab.timeline import PHASES, phase_breakdown

POINTS = [f"P{i}" for i in range(12)]


def _cpu_self_children() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _cpu_zygotes() -> float:
    """CPU of the live zygotes and of their reaped children (not yet in RUSAGE_CHILDREN)."""
    import psutil

    total = 0.0
    for pid in _zygote.zygote_pids():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _cpu() -> float:
    return _cpu_self_children() + _cpu_zygotes()


def bare(reps: int) -> dict[str, float]:
    def once(code: str, kill: bool) -> float:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        if kill:
            proc.stdout.read(1)  # it is up (the interpreter started and ran the code)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
        return time.perf_counter() - started

    exit_times = [once("pass", False) for _ in range(reps)]
    kill_times = [once("import sys, time; sys.stdout.write('u'); sys.stdout.flush(); time.sleep(60)", True)
                  for _ in range(reps)]
    return {"passMs": statistics.median(exit_times) * 1000, "killMs": statistics.median(kill_times) * 1000}


def prefork_spawn(reps: int) -> dict[str, float]:
    command = list(reference_command())
    ProtocolClient.start(command, prefork=True).close()  # the zygote is up and warm
    times, plain = [], []
    for _ in range(reps):
        for prefork, into in ((True, times), (False, plain)):
            started = time.perf_counter()
            client = ProtocolClient.start(command, prefork=prefork)
            client.kill()
            client.close()
            into.append(time.perf_counter() - started)
    return {"preforkMs": statistics.median(times) * 1000, "plainMs": statistics.median(plain) * 1000}


#: Per round label, the phase breakdown (ms per phase, from each trial's own timeline, issue 18
#: item 3) of every trial run by :func:`twelve`.
TRIAL_PHASES: dict[str, list[dict[str, float]]] = collections.defaultdict(list)


def twelve(prefork: bool, tmpdir: str | None = None, label: str = "") -> tuple[float, float, list[str]]:
    """One round: the 12 trials; (wall s, CPU s, outcomes that did not pass). Each trial's
    phase breakdown is kept in :data:`TRIAL_PHASES` under ``label``."""
    import tempfile

    saved = tempfile.tempdir
    tempfile.tempdir = tmpdir if tmpdir is not None else saved
    try:
        cpu0, wall0 = _cpu(), time.perf_counter()
        bad = []
        for point in POINTS:
            result = run_trial(TrialSpec(point, "prefix", "kill"), prefork=prefork)
            if label:
                TRIAL_PHASES[label].append(phase_breakdown((result.evidence or {}).get("timeline") or []))
            if result.outcome != "passed":
                bad.append(f"{point}: {result.outcome} {result.message[:200]}")
        return time.perf_counter() - wall0, _cpu() - cpu0, bad
    finally:
        tempfile.tempdir = saved


def phases() -> dict[str, dict[str, float]]:
    """One prefork round with the client's operations timed (ms per trial, count per trial)."""
    spent: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()
    cls = client_module.ProtocolClient
    originals = {name: cls.__dict__[name] for name in ("call", "kill", "close", "start")}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = f"{name} {args[1]}" if name == "call" else name
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - started
                count[key] += 1
        return wrapper

    cls.call = timed("call", originals["call"])  # type: ignore[method-assign]
    cls.kill = timed("kill", originals["kill"])  # type: ignore[method-assign]
    cls.close = timed("close", originals["close"])  # type: ignore[method-assign]
    cls.start = classmethod(timed("start", originals["start"].__func__))  # type: ignore[method-assign]
    try:
        wall, _cpu_s, _bad = twelve(True)
    finally:
        for name, fn in originals.items():
            setattr(cls, name, fn)
    n = len(POINTS)
    rows = {k: {"msPerTrial": v * 1000 / n, "perTrial": count[k] / n} for k, v in spent.items()}
    rows["(trial total)"] = {"msPerTrial": wall * 1000 / n, "perTrial": 1.0}
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["msPerTrial"]))


def sweep(workers: int, prefork: bool) -> dict[str, Any]:
    specs = default_specs()
    report = run_sweep(specs, workers=workers, prefork=prefork)
    slow = sorted(report.results, key=lambda r: -r.duration_s)[:5]
    return {"trials": len(specs), "workers": workers, "prefork": prefork, "wallS": round(report.duration_s, 2),
            "counts": {k: v for k, v in report.counts().items() if v},
            "failures": [f"{r.spec.trial_id}: {r.outcome}: {r.message[:300]}" for r in report.results
                         if r.outcome not in ("passed", "not_claimed")],
            "slowest": [f"{r.spec.trial_id} {r.duration_s:.2f} s" for r in slow]}


# --------------------------------------------------------------------------- power loss (issue 15)

#: Cells of the power-loss comparison: prefix and live, before, inside and after the tool.
POWERLOSS_CELLS = [("P0", "prefix"), ("P5", "prefix"), ("inside_t1", "prefix"), ("P3", "live"), ("P11", "live")]


def powerloss_vs_kill(rounds: int) -> dict[str, Any]:
    """A ``powerloss`` trial against a ``kill`` trial at the same point, alternating in one run
    (prefork): medians per cell, and the ratio of their sums (issue 15 target: at most 2×)."""
    from crashlab._lab.powerloss.mount import unavailable

    reason = unavailable()
    if reason:
        return {"notRun": reason}
    for point, mode in POWERLOSS_CELLS:  # warm-up: zygotes up, lazily imported modules learned
        for fault in ("kill", "powerloss"):
            run_trial(TrialSpec(point, mode, fault))
    wall: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    cpu: dict[str, list[float]] = collections.defaultdict(list)
    bad: list[str] = []
    for n in range(rounds):
        for point, mode in POWERLOSS_CELLS:
            for fault in (("kill", "powerloss") if n % 2 == 0 else ("powerloss", "kill")):
                cpu0, wall0 = _cpu(), time.perf_counter()
                result = run_trial(TrialSpec(point, mode, fault))
                wall[(point, mode, fault)].append(time.perf_counter() - wall0)
                cpu[fault].append(_cpu() - cpu0)
                if result.outcome != "passed":
                    bad.append(f"{point} {mode} {fault}: {result.outcome} {result.message[:200]}")
    cells = []
    for point, mode in POWERLOSS_CELLS:
        kill = statistics.median(wall[(point, mode, "kill")])
        power = statistics.median(wall[(point, mode, "powerloss")])
        cells.append({"point": point, "mode": mode, "killMs": round(kill * 1000, 1),
                      "powerlossMs": round(power * 1000, 1), "ratio": round(power / kill, 2)})
    total_kill = sum(c["killMs"] for c in cells)
    total_power = sum(c["powerlossMs"] for c in cells)
    return {"rounds": rounds, "cells": cells, "ratio": round(total_power / total_kill, 2),
            "cpuRatio": round(statistics.median(cpu["powerloss"]) / statistics.median(cpu["kill"]), 2),
            "failures": bad}


def _tool_pair(ws: str, i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """T1 and T2 params of the i-th Read of one run (the spec 30 §6.2 fixture, renumbered)."""
    from crashlab._lab.drive import fixture_params

    base = fixture_params(ws)
    op, pc = f"operation-{i}", f"provider-call-{i}"
    refs = {"operationId": op, "toolCallId": pc}

    def event(e: dict[str, Any], eid: str, ts: int) -> dict[str, Any]:
        return {**e, "id": eid, "ts": ts, "refs": dict(refs)}

    call = event(base["t1"]["callEvent"], f"call-event-{i}", 2 * i + 1)
    call["content"] = {**call["content"], "id": pc}
    dispatch = event(base["t1"]["dispatchEvent"], f"dispatch-event-{i}", 2 * i + 1)
    dispatch["actions"] = {"toolDispatch": {**dispatch["actions"]["toolDispatch"], "operationId": op,
                                            "providerToolCallId": pc}}
    response = event(base["t2"]["responseEvent"], f"response-event-{i}", 2 * i + 2)
    response["content"] = {**response["content"], "id": pc}
    t1 = {**base["t1"], "operationId": op, "journalEventId": f"{op}_prepared", "callEvent": call,
          "dispatchEvent": dispatch, "providerToolCallId": pc, "committedAt": 2 * i + 1}
    t2 = {**base["t2"], "operationId": op, "journalEventId": f"{op}_outcome", "responseEvent": response,
          "committedAt": 2 * i + 2}
    return t1, t2


def _t1t2_round(n: int, fuse: bool) -> list[float]:
    """``n`` T1+T2 pairs through the reference adapter on a plain directory or on the mount;
    the latency of each pair (s)."""
    import shutil
    import tempfile
    from pathlib import Path

    from crashlab._lab.drive import IDENT, header
    from crashlab._lab.powerloss.mount import PowerLossMount

    root = Path(tempfile.mkdtemp(prefix="powerloss-bench-"))
    ws = root / "ws"
    ws.mkdir()
    mount = PowerLossMount.mount(ws, root / "state") if fuse else None
    client = ProtocolClient.start(list(reference_command()), prefork=True)
    try:
        text = str(ws)
        for op, params in (("store.open", {"workspace": text}),
                           ("store.create_run", {"workspace": text, "header": header(IDENT, text)})):
            reply = client.call(op, params)
            assert reply.ok, (op, reply.error)
        times = []
        for i in range(1, n + 1):
            t1, t2 = _tool_pair(text, i)
            started = time.perf_counter()
            for op, params in (("store.commit_tool_prepared", t1), ("store.commit_tool_outcome", t2)):
                reply = client.call(op, params)
                assert reply.ok and reply.result.get("created") is True, (op, reply.error)
            times.append(time.perf_counter() - started)
        return times
    finally:
        client.close()
        if mount is not None:
            mount.close()
        shutil.rmtree(root, ignore_errors=True)


def t1t2_overhead(n: int, rounds: int) -> dict[str, Any]:
    """The FUSE layer's pass-through overhead on the reference's T1+T2 (each pair: two SQLite
    transactions in WAL mode with synchronous=FULL, through the adapter), alternating rounds."""
    from crashlab._lab.powerloss.mount import unavailable

    reason = unavailable()
    if reason:
        return {"notRun": reason}
    pairs: dict[str, list[float]] = {"plain": [], "fuse": []}
    _t1t2_round(3, False)
    _t1t2_round(3, True)
    for r in range(rounds):
        for fuse in ((False, True) if r % 2 == 0 else (True, False)):
            pairs["fuse" if fuse else "plain"] += _t1t2_round(n, fuse)
    plain, fuse_ms = statistics.median(pairs["plain"]) * 1000, statistics.median(pairs["fuse"]) * 1000
    return {"pairs": n * rounds, "plainMs": round(plain, 2), "fuseMs": round(fuse_ms, 2),
            "overheadMs": round(fuse_ms - plain, 2), "ratio": round(fuse_ms / plain, 2)}


def _print_powerloss(out: dict[str, Any]) -> None:
    pl = out["powerloss"]
    if "notRun" in pl:
        print(f"power loss vs kill: not run: {pl['notRun']}")
    else:
        print(f"power loss vs kill, median of {pl['rounds']} alternating rounds (prefork):")
        for c in pl["cells"]:
            print(f"  {c['point']:<10} {c['mode']:<7} kill {c['killMs']:7.1f} ms  powerloss {c['powerlossMs']:7.1f} ms"
                  f"  x{c['ratio']:.2f}")
        print(f"  ratio of the sums: x{pl['ratio']:.2f} wall, x{pl['cpuRatio']:.2f} CPU per trial (target <= 2)")
        for f in pl["failures"]:
            print(f"  FAILED {f}")
    tt = out["t1t2"]
    if "notRun" in tt:
        print(f"FUSE pass-through on T1+T2: not run: {tt['notRun']}")
    else:
        print(f"FUSE pass-through on the reference's T1+T2 ({tt['pairs']} pairs): plain {tt['plainMs']:.2f} ms, "
              f"on the mount {tt['fuseMs']:.2f} ms per pair (+{tt['overheadMs']:.2f} ms, x{tt['ratio']:.2f})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.crashlab", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating plain/prefork rounds of the 12 trials")
    p.add_argument("--bare-reps", type=int, default=20)
    p.add_argument("--workers", type=int, default=2, help="workers of the full sweep")
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--plain-sweep", action="store_true", help="also run the full sweep with plain spawns")
    p.add_argument("--profile", action="store_true", help="cProfile one prefork round of the 12 trials")
    p.add_argument("--tmpfs", action="store_true", help="also run rounds with the workspaces on /dev/shm")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--powerloss-rounds", type=int, default=5,
                   help="alternating kill/powerloss rounds at the same points (issue 15; 0: skip)")
    p.add_argument("--t1t2-pairs", type=int, default=40, help="T1+T2 pairs per round of the FUSE overhead")
    p.add_argument("--powerloss-only", action="store_true", help="only the power-loss figures (issue 15)")
    args = p.parse_args(argv)
    if args.powerloss_only:
        out = {"python": platform.python_version(), "platform": sys.platform, "cpus": os.cpu_count(),
               "loadavgStart": os.getloadavg()}
        out["powerloss"] = powerloss_vs_kill(max(1, args.powerloss_rounds))
        out["t1t2"] = t1t2_overhead(args.t1t2_pairs, max(2, args.powerloss_rounds // 2))
        out["loadavgEnd"] = os.getloadavg()
        _print_powerloss(out)
        print(f"load average: start {out['loadavgStart'][0]:.2f}, end {out['loadavgEnd'][0]:.2f}")
        _zygote.shutdown_zygotes()
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(out, fh, indent=1)
        return 0 if not out["powerloss"].get("failures") else 1
    out: dict[str, Any] = {"python": platform.python_version(), "platform": sys.platform, "cpus": os.cpu_count(),
                           "loadavgStart": os.getloadavg()}
    out["bare"] = bare(args.bare_reps)
    print(f"bare python -c pass: spawn+exit {out['bare']['passMs']:.1f} ms, spawn+SIGKILL+reap "
          f"{out['bare']['killMs']:.1f} ms (median of {args.bare_reps})", flush=True)
    out["adapterSpawn"] = prefork_spawn(max(5, args.bare_reps // 2))
    print(f"reference adapter start+hello+kill: plain {out['adapterSpawn']['plainMs']:.1f} ms, prefork "
          f"{out['adapterSpawn']['preforkMs']:.1f} ms", flush=True)
    twelve(True)  # warm-up: the zygote starts and learns the lazily imported modules
    rounds: dict[str, list[tuple[float, float]]] = {"plain": [], "prefork": []}
    labels = ["plain", "prefork"]
    shm = None
    if args.tmpfs and os.path.isdir("/dev/shm"):
        import tempfile

        shm = tempfile.mkdtemp(prefix="crashlab-bench-", dir="/dev/shm")
        labels += ["plain tmpfs", "prefork tmpfs"]
        rounds.update({"plain tmpfs": [], "prefork tmpfs": []})
    failures: list[str] = []
    for n in range(args.rounds):
        for label in (labels if n % 2 == 0 else labels[::-1]):
            wall, cpu, bad = twelve(label.startswith("prefork"), shm if label.endswith("tmpfs") else None, label)
            failures += bad
            rounds[label].append((wall, cpu))
            print(f"round {n + 1} {label:<13}: 12 trials {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    out["twelve"] = {}
    for label, values in rounds.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        out["twelve"][label] = {"wallS": round(wall, 3), "cpuS": round(cpu, 3), "cyclesPerS": round(12 / wall, 2),
                                "cyclesPerCpuS": round(12 / cpu, 2), "rounds": values}
        print(f"{label:<13} median: 12 trials in {wall:.2f} s ({12 / wall:.1f} cycles/s on one worker), "
              f"{cpu:.2f} CPU-s ({12 / cpu:.1f} cycles/s per core)", flush=True)
    out["twelveFailures"] = failures
    out["trialPhases"] = {}
    print("where a trial's time goes (from each trial's timeline; median ms per trial over every round):")
    print(f"  {'phase':<16}" + "".join(f"{label:>15}" for label in TRIAL_PHASES))
    for phase in PHASES:
        cells = {label: statistics.median(row[phase] for row in rows) for label, rows in TRIAL_PHASES.items()}
        out["trialPhases"][phase] = cells
        print(f"  {phase:<16}" + "".join(f"{ms:>12.1f} ms" for ms in cells.values()))
    if shm is not None:
        import shutil

        shutil.rmtree(shm, ignore_errors=True)
    out["phases"] = phases()
    print("where a prefork cycle's time goes (ms per trial, calls per trial):")
    for key, row in out["phases"].items():
        print(f"  {key:<32} {row['msPerTrial']:7.1f} ms  x{row['perTrial']:.1f}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        twelve(True)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    if not args.no_sweep:
        out["sweep"] = [sweep(args.workers, True)]
        if args.plain_sweep:
            out["sweep"].append(sweep(args.workers, False))
        for s in out["sweep"]:
            print(f"full sweep ({'prefork' if s['prefork'] else 'plain'}): {s['trials']} trials on {s['workers']} "
                  f"workers in {s['wallS']:.1f} s: {s['counts']}", flush=True)
            for f in s["failures"]:
                print(f"  FAILED {f}")
    if args.powerloss_rounds > 0:
        out["powerloss"] = powerloss_vs_kill(args.powerloss_rounds)
        out["t1t2"] = t1t2_overhead(args.t1t2_pairs, max(2, args.powerloss_rounds // 2))
        _print_powerloss(out)
        failures += out["powerloss"].get("failures", [])
    out["loadavgEnd"] = os.getloadavg()
    print(f"load average: start {out['loadavgStart'][0]:.2f}, end {out['loadavgEnd'][0]:.2f}")
    _zygote.shutdown_zygotes()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0 if not failures and all(not s["failures"] for s in out.get("sweep", [])) else 1


if __name__ == "__main__":
    sys.exit(main())
