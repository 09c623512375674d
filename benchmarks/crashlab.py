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
from crashlab._client import _zygote

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


def twelve(prefork: bool, tmpdir: str | None = None) -> tuple[float, float, list[str]]:
    """One round: the 12 trials; (wall s, CPU s, outcomes that did not pass)."""
    import tempfile

    saved = tempfile.tempdir
    tempfile.tempdir = tmpdir if tmpdir is not None else saved
    try:
        cpu0, wall0 = _cpu(), time.perf_counter()
        bad = []
        for point in POINTS:
            result = run_trial(TrialSpec(point, "prefix", "kill"), prefork=prefork)
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
    args = p.parse_args(argv)
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
            wall, cpu, bad = twelve(label.startswith("prefork"), shm if label.endswith("tmpfs") else None)
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
    out["loadavgEnd"] = os.getloadavg()
    print(f"load average: start {out['loadavgStart'][0]:.2f}, end {out['loadavgEnd'][0]:.2f}")
    _zygote.shutdown_zygotes()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0 if not failures and all(not s["failures"] for s in out.get("sweep", [])) else 1


if __name__ == "__main__":
    sys.exit(main())
